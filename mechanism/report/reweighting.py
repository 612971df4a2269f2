"""Reweighting files: the long summary table, per-comparison tables, figures and the findings in words."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from mechanism.analysis.compare import reweighting
from mechanism.analysis.labels import rounds_labels  # noqa: F401 - public here: mechanism.report.rounds_labels
from mechanism.core.errors import InputError
from mechanism.core.names import pair_folders
from mechanism.core.options import RandomState, check_ci
from mechanism.report._section import Section
from mechanism.report._write import write_figures, write_json, write_table, write_tables, write_text


def analyse_reweighting(runs: pl.DataFrame, labels: Any, *, base: str, treated: Sequence[str] | None = None,
                        ci: float | None = 0.95, n_boot: int = 1000, n_permutations: int = 1000,
                        random_state: RandomState = 0, coordinates: np.ndarray | None = None,
                        allow_few_shared: bool = False) -> list[Any]:
    """The :class:`~mechanism.analysis.compare.Reweighting` of every treated arm against ``base``
    (default: every other arm, in input order), each computed once (``allow_few_shared``: as
    :func:`mechanism.reweighting`)."""
    arms = runs["arm"].unique(maintain_order=True).to_list()
    if base not in arms:
        raise InputError(f"`base` arm {base!r} is not in the input (arms: {sorted(arms)})", field="base")
    others = list(dict.fromkeys(treated)) if treated else [a for a in arms if a != base]
    return [reweighting(runs, labels, base=base, treated=arm, ci=check_ci(ci), n_boot=n_boot,
                        random_state=random_state, n_permutations=n_permutations, coordinates=coordinates,
                        allow_few_shared=allow_few_shared)
            for arm in others]


def write_reweighting(results: Sequence[Any], out: str | Path, *, n_boot: int | None = None,
                      figures: bool = True, label_source: str | None = None, title: str | None = None,
                      names: dict[Any, str] | None = None, caption: bool = False,
                      colors: Mapping[str, str] | None = None) -> Section:
    """Write the reweighting tables and figures of every treated arm against ``base``.

    Writes ``reweighting_summary.csv`` (one long table), per treated arm a folder
    ``<treated>_vs_<base>/`` with ``strategies.csv``, ``query_sequences.csv``,
    ``neighbours.csv`` (with coordinates) and ``reweighting.json``, and the figures
    ``share_success`` and ``decomposition`` (PNG and PDF).

    Parameters
    ----------
    results
        One :class:`~mechanism.analysis.compare.Reweighting` per treated arm, against one base
        (:func:`analyse_reweighting`).
    out
        Output folder (created).
    n_boot
        Bootstrap replicates behind the intervals, stated in the summary's first line.
    figures, title, caption
        Write the figures; ``title`` is drawn only with ``caption=True``.
    label_source
        Where the strata came from, stated in the summary.
    names
        Display names of strategy ids in the figures.
    colors
        Arm -> colour shared by the report's figures.

    Returns
    -------
    Section
        ``results`` holds the :class:`~mechanism.analysis.compare.Reweighting` of every treated arm.
    """
    from mechanism.plots.reweighting import plot_decomposition, plot_share_success  # noqa: PLC0415 - matplotlib: only when a figure is drawn

    results = list(results)
    if not results:
        raise InputError("no treated arm to compare with the base arm", field="treated")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    base, ci = results[0].base, results[0].ci
    if any(rw.base != base for rw in results):
        raise InputError(f"reweighting results against different base arms: "
                         f"{sorted({rw.base for rw in results})}", field="base")
    others = [rw.treated for rw in results]
    # Arm names are untrusted and sanitised into folder names: two arms that sanitise alike
    # would silently overwrite each other's tables.
    named = pair_folders(others, base)  # distinct arms, distinct folders (a hash where names clash)
    folders = [named[a] for a in others]
    if len(set(folders)) < len(folders):
        raise InputError(f"arms {sorted(set(others))} give clashing output folder names "
                         f"after sanitising; rename an arm", field="treated")
    section = Section(results=list(results))
    write_table(section, pl.concat([rw.to_frame() for rw in results]), out / "reweighting_summary.csv")
    n_permutations = results[0].n_permutations
    lines = [f"Reweighting against `{base}`"
             + (f" (strata: {label_source})" if label_source else "")
             + (f"; {int(round(ci * 100))}% bootstrap intervals over questions"
                + (f" ({n_boot} replicates)" if n_boot is not None else "")
                if ci is not None and (n_boot is None or n_boot > 0) else "; no bootstrap intervals")
             + f", {n_permutations} permutations"]
    for rw, name in zip(results, folders):
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        write_tables(section, folder, [(table_name, getattr(rw, table_name))
                                       for table_name in ("strategies", "query_sequences", "neighbours")])
        write_json(section, folder / "reweighting.json", rw.to_dict())
        lines.append(describe_reweighting(rw))
    if figures:
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
