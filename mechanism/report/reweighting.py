"""Reweighting files: the long summary table, per-comparison tables, figures and the findings in words."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from mechanism.errors import InputError
from mechanism.report._section import Section
from mechanism.report._write import write_figures, write_json, write_table, write_tables, write_text


def rounds_labels(runs: pl.DataFrame, *, cap: int = 5) -> np.ndarray:
    """A structural baseline stratum per trajectory: its number of search rounds, ``cap`` meaning cap or more."""
    rounds = np.minimum(runs["n_rounds"].to_numpy(), cap)
    return np.array([f"{r}+ rounds" if r == cap else f"{r} round{'s' if r != 1 else ''}" for r in rounds])


def write_reweighting(runs: pl.DataFrame, labels: Any, out: str | Path, *, base: str,
                      treated: Sequence[str] | None = None, ci: float = 0.95, n_boot: int = 1000,
                      n_permutations: int = 1000, random_state: int = 0,
                      coordinates: np.ndarray | None = None, figures: bool = True,
                      label_source: str | None = None, title: str | None = None,
                      names: dict[Any, str] | None = None, caption: bool = False,
                      colors: Mapping[str, str] | None = None) -> Section:
    """Write the reweighting tables and figures of every treated arm against ``base``.

    Writes ``reweighting_summary.csv`` (one long table), per treated arm a folder
    ``<treated>_vs_<base>/`` with ``strategies.csv``, ``query_sequences.csv``,
    ``neighbours.csv`` (with coordinates) and ``reweighting.json``, and the figures
    ``share_success`` and ``decomposition`` (PNG and PDF). ``names`` gives display names
    of strategy ids in the figures; ``title`` is drawn only with ``caption=True``.

    Returns
    -------
    Section
        ``results`` holds the :class:`~mechanism.compare.Reweighting` of every treated arm.
    """
    from mechanism.compare import reweighting
    from mechanism.plots.reweighting import plot_decomposition, plot_share_success
    from mechanism.names import pair_folders

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    arms = runs["arm"].unique(maintain_order=True).to_list()
    if base not in arms:
        raise InputError(f"`--base` arm {base!r} is not in the input (arms: {sorted(arms)})", field="base")
    others = list(dict.fromkeys(treated)) if treated else [a for a in arms if a != base]
    # Arm names are untrusted and sanitised into folder names: two arms that sanitise alike
    # would silently overwrite each other's tables.
    named = pair_folders(others, base)  # distinct arms, distinct folders (a hash where names clash)
    folders = [named[a] for a in others]
    if len(set(folders)) < len(folders):
        raise InputError(f"arms {sorted(set(others))} give clashing output folder names "
                         f"after sanitising; rename an arm", field="treated")
    results = [reweighting(runs, labels, base=base, treated=arm, ci=ci, n_boot=n_boot,
                           random_state=random_state, n_permutations=n_permutations, coordinates=coordinates)
               for arm in others]
    section = Section(results=list(results))
    write_table(section, pl.concat([rw.to_frame() for rw in results]), out / "reweighting_summary.csv")
    lines = [f"Reweighting against `{base}`"
             + (f" (strata: {label_source})" if label_source else "")
             + (f"; {int(round(ci * 100))}% bootstrap intervals over questions ({n_boot} replicates)"
                if ci is not None and n_boot > 0 else "; no bootstrap intervals")
             + f", {n_permutations} permutations"]
    for rw, name in zip(results, folders):
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        write_tables(section, folder, [(table_name, getattr(rw, table_name))
                                       for table_name in ("strategies", "query_sequences", "neighbours")])
        write_json(section, folder / "reweighting.json", rw.to_dict())
        lines.append(describe_reweighting(rw))
    if figures and results:
        shown = title if caption else None
        write_figures(section, out, [
            ("share_success", plot_share_success(results, title=shown, names=names, colors=colors, caption=caption)),
            ("decomposition", plot_decomposition(results, title=shown, names=names, colors=colors, caption=caption))])
    section.text = "\n".join(lines)
    write_text(section, out / "summary.txt", section.text)
    return section


def reweighting_verdict(rw: Any) -> str:
    """One sentence: the accuracy change split into composition and within (:meth:`Reweighting.verdict`)."""
    return rw.verdict()


def describe_reweighting(rw: Any) -> str:
    """A few plain lines stating one comparison's numbers (:meth:`Reweighting.lines`)."""
    return "\n".join(rw.lines(indent="  "))
