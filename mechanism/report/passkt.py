"""PASS@(k,T) and capability-boundary files: tables, figures and the plain-text findings."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from mechanism.analysis.boundaries import boundary
from mechanism.analysis.passkt import (
    TRUNCATED,
    consistency,
    default_k,
    depth_notes,
    message_rounds,
    pass_at_kt,
    pass_at_kt_per_problem,
    small_sample_note,
    within_t_shares,
)
from mechanism.core.errors import InputError
from mechanism.core.names import pair_folders
from mechanism.core.options import RandomState, TSource, check_choice, check_ci
from mechanism.report._section import Section
from mechanism.report._write import write_figures, write_table, write_tables, write_text

#: where the round budget T of an episode comes from (as :func:`mechanism.pass_at_kt`)


def arm_order(arms: Sequence[str]) -> list[str]:
    """``base``, ``rl``, ``sft`` first (when present), then the others in the given order."""
    known = [a for a in ("base", "rl", "sft") if a in arms]
    return known + [a for a in arms if a not in known]


@dataclass
class PassKT:
    """The PASS@(k,T) section's results, computed once (:func:`analyse_passkt`) and only
    formatted by :func:`write_passkt`.

    ``curves`` and ``pass_hat`` are :func:`mechanism.pass_at_kt` (pass@k and pass^k) on the
    grids ``k`` x ``t``, ``per_problem`` its per-problem table, ``consistency`` the per-task
    :class:`~mechanism.analysis.passkt.Consistency`, ``within_t`` the share of episodes within each T
    (truncation only), ``boundaries`` one :class:`~mechanism.analysis.boundaries.Boundary` per treated
    arm against ``base``, ``notes`` what the estimator says about the depths and small samples.
    """

    curves: pl.DataFrame
    pass_hat: pl.DataFrame
    per_problem: pl.DataFrame
    consistency: Any
    k: list[int]
    t: list[int]
    arms: list[str]
    ci: float | None
    t_source: str
    within_t: pl.DataFrame | None = None
    boundaries: list[Any] = field(default_factory=list)
    base: str | None = None
    notes: list[str] = field(default_factory=list)


def analyse_passkt(runs: pl.DataFrame, *, k: Sequence[int] | None = None, t: Sequence[int] = (0, 1, 2, 3, 5),
                   base: str | None = None, treated: Sequence[str] | None = None, ci: float | None = 0.95,
                   n_boot: int = 1000, random_state: RandomState = 0, t_source: TSource = "auto",
                   hat_k: Sequence[int] = (), allow_few_shared: bool = False) -> PassKT:
    """Every analysis the PASS@(k,T) section shows, each computed once.

    Parameters
    ----------
    runs
        Canonical table.
    k, t
        Grids (``k`` default: 1, 2, 4, ... up to the smallest n).
    base, treated
        Reference arm of the boundary analysis (default ``"base"`` when present; ``None`` and no
        arm called base: no boundary) and the arms compared with it (default: every other arm).
    ci, n_boot, random_state, t_source
        As :func:`mechanism.pass_at_kt`.
    hat_k
        More k for pass^k only (the report's reliability table takes its own grid at the deepest T).
    allow_few_shared
        As :func:`mechanism.boundary`.

    Returns
    -------
    PassKT
    """
    ci = check_ci(ci)
    check_choice(t_source, TSource, field="t_source")
    ks = list(k) if k else default_k(runs, t, t_source=t_source)
    arms = sorted(runs["arm"].unique().to_list()) if "arm" in runs.columns else []
    opts = {"ci": ci, "n_boot": n_boot, "random_state": random_state, "t_source": t_source}
    curves = pass_at_kt(runs, k=ks, t=t, **opts)
    hat = pass_at_kt(runs, k=sorted(set(ks) | set(hat_k)), t=t, metric="pass^k", **opts)
    source = curves["t_source"][0] if curves.height else t_source
    result = PassKT(curves=curves, pass_hat=hat, per_problem=pass_at_kt_per_problem(runs, k=ks, t=t, t_source=t_source),
                    consistency=consistency(runs, ci=ci, n_boot=n_boot, random_state=random_state),
                    k=ks, t=list(t), arms=arms, ci=ci, t_source=source,
                    within_t=(within_t_shares(message_rounds(runs) if source == "messages" else runs, t)
                              if source in TRUNCATED else None),
                    notes=[*depth_notes(runs, t, t_source), *small_sample_note(curves)])
    if base is None and "base" in arms:
        base = "base"
    if base is not None:
        if base not in arms:
            raise InputError(f"`base` arm {base!r} is not in the input (arms: {arms})", field="base")
        compared = list(dict.fromkeys(treated)) if treated else [a for a in arm_order(arms) if a != base]
        result.base = base
        result.boundaries = [boundary(runs, base=base, treated=other, t=t, k=ks, allow_few_shared=allow_few_shared,
                                      **opts) for other in compared]
    return result


def write_passkt(result: PassKT, out: str | Path, *, figures: bool = True,
                 colors: Mapping[str, str] | None = None) -> Section:
    """Write the PASS@(k,T) tables and figures of ``result`` to ``out``.

    Writes ``pass_at_kt.csv``, ``pass_at_kt_per_problem.parquet``, ``pass_hat_k.csv``
    (tau-bench's pass^k on the same grids), ``consistency.csv`` (per task: solved in all,
    none or some trials) with ``consistency_summary.csv``, and the curve and surface figures;
    with a base arm, for every treated arm ``<treated>_vs_<base>/`` holding the
    boundary tables (CSV), ``summary.txt`` and the gap and boundary figures.

    Parameters
    ----------
    result
        :func:`analyse_passkt` of the runs.
    out
        Output folder (created).
    figures
        Write figures (PNG and PDF).
    colors
        Arm -> colour, shared by every figure of a report (default: :func:`mechanism.plots.style.arm_colors`).

    Returns
    -------
    Section
        ``results`` holds the :class:`~mechanism.analysis.boundaries.Boundary` of every treated arm.
    """
    from mechanism.plots.passkt import (  # noqa: PLC0415 - matplotlib: only when a figure is drawn
        plot_pass_curves,
        plot_pass_over_t,
        plot_pass_surfaces,
    )
    from mechanism.plots.style import arm_colors  # noqa: PLC0415 - matplotlib: only when a figure is drawn

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ks, arms = result.k, result.arms
    curves = result.curves
    hat = result.pass_hat.filter(pl.col("k").is_in(ks))
    section = Section()
    write_table(section, curves, out / "pass_at_kt.csv")
    section.frames["pass_at_kt"] = curves
    write_table(section, result.per_problem, out / "pass_at_kt_per_problem.parquet")
    write_table(section, hat, out / "pass_hat_k.csv")
    reliability = result.consistency
    write_table(section, reliability.per_task, out / "consistency.csv")
    write_table(section, reliability.by_arm, out / "consistency_summary.csv")
    order = arm_order(arms)
    colors = dict(colors) if colors is not None else arm_colors(order)
    lines = _summary_lines(result, order, hat)
    if figures:
        # with a single k there is no curve over k nor a k x T surface: the curve over T remains
        made = ([("pass_curves", plot_pass_curves(curves, arms=order, colors=colors)),
                 ("pass_surfaces", plot_pass_surfaces(curves, arms=order))] if len(ks) > 1
                else [("pass_over_t", plot_pass_over_t(curves, k=ks[0], arms=order, colors=colors))])
        write_figures(section, out, made)
    lines += _write_boundaries(section, result, out, colors=colors, figures=figures)
    section.text = "\n".join(lines)
    return section


def _summary_lines(result: PassKT, order: list[str], hat: pl.DataFrame) -> list[str]:
    """The findings as text: PASS at the deepest T per arm, episodes within each T, pass^k and
    the per-task consistency."""
    ks, t, ci, curves = result.k, result.t, result.ci, result.curves
    source = result.t_source
    level = "no intervals" if ci is None else f"{ci * 100:g}% bootstrap intervals over problems"
    lines = [f"PASS@(k,T) of {len(result.arms)} arm(s) on k = {ks}, T = {list(t)} (T from {source}; {level})"]
    if source in TRUNCATED:
        lines.append("  T by truncation counts the rounds an episode happened to use, not a budget: an arm "
                     "that searches more loses PASS at small T without losing any ability")
    tmax = max(t)

    def at(table: pl.DataFrame, arm: str, k: int) -> str:
        row = table.filter((pl.col("arm") == arm) & (pl.col("k") == k) & (pl.col("t") == tmax)).row(0, named=True)
        return f"{row['pass_at_kt']:.3f}" + ("" if row.get("ci_low") is None
                                             else f" [{row['ci_low']:.3f}, {row['ci_high']:.3f}]")

    for arm in order:
        text = f"  {arm}: PASS@({ks[0]},{tmax}) = {at(curves, arm, ks[0])}"
        if len(ks) > 1:
            text += f"; PASS@({ks[-1]},{tmax}) = {at(curves, arm, ks[-1])}"
        lines.append(text)
    if result.within_t is not None:
        for arm in order:
            part = result.within_t.filter(pl.col("arm") == arm)
            lines.append(f"  {arm}: episodes with at most T rounds " + ", ".join(
                f"T={tv} {sv:.2f}" for tv, sv in part.select("t", "share_within_t").iter_rows()))
    for arm in order:
        lines.append(f"  {arm}: pass^{ks[-1]} (all {ks[-1]} of {ks[-1]} succeed within T={tmax}) = "
                     f"{at(hat, arm, ks[-1])}")
    lines += [f"  {line}" for line in result.consistency.summary().lines]
    lines += [f"  note: {note}" for note in result.notes]
    return lines


def _write_boundaries(section: Section, result: PassKT, out: Path, *, colors: dict[str, str],
                      figures: bool) -> list[str]:
    """Each treated arm's boundary tables, summary and figures in ``<treated>_vs_<base>/``; returns
    the summaries."""
    from mechanism.plots.passkt import (  # noqa: PLC0415 - matplotlib: only when a figure is drawn
        plot_boundary,
        plot_gap_over_t,
        plot_gap_surface,
    )

    ks, base = result.k, result.base
    compared = [b.treated for b in result.boundaries]
    # distinct arms, distinct folders (a hash where names clash)
    named = pair_folders(compared, base) if compared else {}
    folders = [named[other] for other in compared]
    for name in folders:
        if folders.count(name) > 1:  # one folder for two arms: the second would overwrite the first
            raise InputError(f"arms {[a for a, f in zip(compared, folders) if f == name]} give the same "
                             f"output folder {name!r}: rename one (`arm` when reading)", field="arm")
    lines = []
    for res, other, name in zip(result.boundaries, compared, folders):
        section.results.append(res)
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        write_tables(section, folder, [(_BOUNDARY_FILES.get(n, n), table) for n, table in res.tables().items()
                                       if n != "estimates"])
        text = str(res.summary())
        write_text(section, folder / "summary.txt", text)
        lines.append(text)
        if figures:
            gap_fig = (plot_gap_surface(res.gap, base=base, treated=other, t_source=res.t_source)
                       if len(ks) > 1 else plot_gap_over_t(res.gap, base=base, treated=other, colors=colors,
                                                           t_source=res.t_source))
            write_figures(section, folder, [("gap_surface" if len(ks) > 1 else "gap_over_t", gap_fig),
                                            ("boundary", plot_boundary(res, colors=colors))],
                          prefix=f"{name}/")
    return lines


#: File stems of the boundary tables whose names in ``Boundary.tables()`` drop the result's prefix.
_BOUNDARY_FILES = {"problems": "boundary_problems", "sets": "boundary_sets", "tests": "boundary_tests",
                   "split": "boundary_split", "curves": "pass_curves", "by_category": "boundary_by_category"}


def boundary_verdict(result) -> str:
    """One sentence: gained and lost problems at the deepest T, the permutation test and its verdict
    (:meth:`Boundary.verdict`)."""
    return result.verdict()
