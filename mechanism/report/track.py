"""Checkpoint-series files: per-checkpoint tables with intervals and the figures over training."""
from __future__ import annotations

from pathlib import Path

from mechanism.report._section import Section
from mechanism.report._write import write_figures, write_json, write_tables, write_text

#: figure stem -> caption, in page order
TRACK_FIGURES = {
    "shares_over_training": "Strategy shares over training (stacked)",
    "share_panels": "Each strategy's share over training, with bootstrap intervals",
    "split_over_training": "Accuracy change vs the base checkpoint: composition + within, over training",
    "passkt_over_training": "PASS@(k,T) over training",
    "divergence_over_training": "JS divergence of the strategy distribution from the base checkpoint",
}


def write_track(result, out: str | Path, *, figures: bool = True, caption: bool = False) -> Section:  # noqa: ANN001
    """Write a :class:`~mechanism.checkpoints.Track`'s tables and figures to ``out``.

    Tables: ``shares.csv`` (per checkpoint and strategy, with intervals), ``passkt.csv``,
    ``split.csv``, ``divergence.csv``, ``accuracy.csv``, ``track.json``, ``track.tex`` (booktabs
    LaTeX) and ``summary.txt``.
    Figures (PNG and PDF): ``shares_over_training``, ``share_panels``, ``split_over_training``,
    ``passkt_over_training`` and ``divergence_over_training``.

    Returns
    -------
    Section
    """
    from mechanism.plots.track import (plot_track_divergence, plot_track_passkt, plot_track_share_panels,
                                       plot_track_shares, plot_track_split)

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    section = Section(results=[result])
    write_tables(section, out, [("shares", result.shares), ("passkt", result.passkt), ("split", result.split),
                                ("divergence", result.divergence), ("accuracy", result.accuracy)])
    write_json(section, out / "track.json", result.to_dict(), default=float)
    if figures:
        made = {"shares_over_training": plot_track_shares(result.shares, caption=caption),
                "share_panels": plot_track_share_panels(result.shares, caption=caption),
                "split_over_training": plot_track_split(result.split, base=result.base, caption=caption),
                "passkt_over_training": plot_track_passkt(result.passkt, caption=caption),
                "divergence_over_training": plot_track_divergence(result.divergence, base=result.base,
                                                                   caption=caption)}
        write_figures(section, out, made.items())
    write_text(section, out / "track.tex", result.to_latex())
    section.text = str(result.summary())
    write_text(section, out / "summary.txt", section.text)
    return section
