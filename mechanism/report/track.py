"""Checkpoint-series files: per-checkpoint tables with intervals and the figures over training."""
from __future__ import annotations

from pathlib import Path

import polars as pl

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


def write_track(result, out: str | Path, *, figures: bool = True, caption: bool = False,
                step_label: str | None = None) -> Section:
    """Write a :class:`~mechanism.analysis.checkpoints.Track`'s tables and figures to ``out``.

    Tables: ``shares.csv`` (per checkpoint and strategy, with intervals), ``passkt.csv``,
    ``split.csv``, ``divergence.csv``, ``accuracy.csv``, ``track.json``, ``track.tex`` (booktabs
    LaTeX) and ``summary.txt``.
    Figures (PNG and PDF): ``shares_over_training``, ``share_panels``, ``split_over_training``,
    ``passkt_over_training`` and ``divergence_over_training``.

    ``step_label`` names the figures' x axis (e.g. ``"trial"``; default ``training step``, or
    ``checkpoint`` when the series is ordered by name); the series' notes (shared questions
    among them) open the summary and are drawn under every figure.

    Returns
    -------
    Section
    """
    from mechanism.plots.track import (  # noqa: PLC0415 - matplotlib: only when a figure is drawn
        plot_track_divergence,
        plot_track_passkt,
        plot_track_share_panels,
        plot_track_shares,
        plot_track_split,
    )

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    section = Section(results=[result])
    shares = result.shares
    if "name" in shares.columns and "strategy" in shares.columns:  # outliers carry one label everywhere

        shares = shares.with_columns(pl.when(pl.col("strategy") == -1).then(pl.lit("outliers"))
                                     .otherwise(pl.col("name")).alias("name"))
    write_tables(section, out, [("shares", shares), ("passkt", result.passkt), ("split", result.split),
                                ("divergence", result.divergence), ("accuracy", result.accuracy)])
    write_json(section, out / "track.json", result.to_dict(), default=float)
    if figures:
        opts = {"caption": caption, "step_label": step_label}
        made = {"shares_over_training": plot_track_shares(result.shares, **opts),
                "share_panels": plot_track_share_panels(result.shares, **opts),
                "split_over_training": plot_track_split(result.split, base=result.base, **opts),
                "passkt_over_training": plot_track_passkt(result.passkt, **opts),
                "divergence_over_training": plot_track_divergence(result.divergence, base=result.base, **opts)}
        warning = shared_question_warning(result)
        if warning:
            for fig in made.values():  # the warning travels with every figure, not only the summary
                fig.text(0.01, -0.02, warning, fontsize=7, ha="left", va="top", wrap=True)
        write_figures(section, out, made.items())
    write_text(section, out / "track.tex", result.to_latex())
    warning = shared_question_warning(result)
    section.text = (f"warning: {warning}\n" if warning else "") + str(result.summary())
    write_text(section, out / "summary.txt", section.text)
    return section


def shared_question_warning(result) -> str | None:
    """The series' note about questions not shared by every checkpoint, if it has one."""
    for note in getattr(result, "notes", []):
        if "shared" in note or "common" in note:
            return note
    return None
