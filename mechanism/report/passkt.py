"""PASS@(k,T) and capability-boundary files: tables, figures and the plain-text findings."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from mechanism.errors import InputError
from mechanism.report._section import Section
from mechanism.report._write import write_figures, write_table, write_tables, write_text


def arm_order(arms: Sequence[str]) -> list[str]:
    """``base``, ``rl``, ``sft`` first (when present), then the others in the given order."""
    known = [a for a in ("base", "rl", "sft") if a in arms]
    return known + [a for a in arms if a not in known]


def write_passkt(
    runs: pl.DataFrame,
    out: str | Path,
    *,
    k: Sequence[int] | None = None,
    t: Sequence[int] = (0, 1, 2, 3, 5),
    base: str | None = None,
    treated: Sequence[str] | None = None,
    ci: float = 0.95,
    n_boot: int = 1000,
    random_state: int = 0,
    t_source: str = "auto",
    figures: bool = True,
    colors: Mapping[str, str] | None = None,
) -> Section:
    """Write the PASS@(k,T) tables and figures of ``runs`` to ``out``.

    Writes ``pass_at_kt.csv``, ``pass_at_kt_per_problem.parquet``, ``pass_hat_k.csv``
    (tau-bench's pass^k on the same grids), ``consistency.csv`` (per task: solved in all,
    none or some trials) with ``consistency_summary.csv``, and the curve and surface figures; with a base arm, for every treated arm ``<treated>_vs_<base>/`` holding the
    boundary tables (CSV), ``summary.txt`` and the gap and boundary figures.

    Parameters
    ----------
    runs
        Canonical table.
    out
        Output folder (created).
    k, t
        Grids (``k`` default: 1, 2, 4, ... up to the smallest n).
    base, treated
        Reference arm of the boundary analysis (default ``"base"`` when present) and the arms
        compared with it (default: every other arm).
    ci, n_boot, random_state, t_source
        As :func:`mechanism.pass_at_kt`.
    figures
        Write figures (PNG and PDF).
    colors
        Arm -> colour, shared by every figure of a report (default: :func:`mechanism.plots.style.arm_colors`).

    Returns
    -------
    Section
        ``results`` holds the :class:`~mechanism.boundaries.Boundary` of every treated arm.
    """
    from mechanism.boundaries import boundary
    from mechanism.passkt import (consistency, default_k, depth_notes, pass_at_kt, pass_at_kt_per_problem,
                                  small_sample_note, within_t_shares)
    from mechanism.plots.passkt import (plot_boundary, plot_gap_over_t, plot_gap_surface, plot_pass_curves,
                                        plot_pass_over_t, plot_pass_surfaces)
    from mechanism.names import pair_folders
    from mechanism.plots.style import arm_colors

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ks = list(k) if k else default_k(runs, t, t_source=t_source)
    arms = sorted(runs["arm"].unique().to_list()) if "arm" in runs.columns else []
    curves = pass_at_kt(runs, k=ks, t=t, ci=ci, n_boot=n_boot, random_state=random_state, t_source=t_source)
    hat = pass_at_kt(runs, k=ks, t=t, ci=ci, n_boot=n_boot, random_state=random_state, t_source=t_source,
                     metric="pass^k")
    small = small_sample_note(curves)
    section = Section()
    write_table(section, curves, out / "pass_at_kt.csv")
    section.frames["pass_at_kt"] = curves
    write_table(section, pass_at_kt_per_problem(runs, k=ks, t=t, t_source=t_source),
                out / "pass_at_kt_per_problem.parquet")
    write_table(section, hat, out / "pass_hat_k.csv")
    reliability = consistency(runs, ci=ci, n_boot=n_boot, random_state=random_state)
    write_table(section, reliability.per_task, out / "consistency.csv")
    write_table(section, reliability.by_arm, out / "consistency_summary.csv")
    order = arm_order(arms)
    colors = dict(colors) if colors is not None else arm_colors(order)
    source = curves["t_source"][0] if curves.height else t_source
    lines = [f"PASS@(k,T) of {len(arms)} arm(s) on k = {ks}, T = {list(t)} "
             f"(T from {source}; {ci * 100:g}% bootstrap intervals over problems)"]
    if source == "truncation":
        lines.append("  T by truncation counts the rounds an episode happened to use, not a budget: an arm "
                     "that searches more loses PASS at small T without losing any ability")
    tmax = max(t)
    for arm in order:
        row1 = curves.filter((pl.col("arm") == arm) & (pl.col("k") == ks[0]) & (pl.col("t") == tmax)).row(0, named=True)
        rowk = curves.filter((pl.col("arm") == arm) & (pl.col("k") == ks[-1]) & (pl.col("t") == tmax)).row(0, named=True)
        text = (f"  {arm}: PASS@({ks[0]},{tmax}) = {row1['pass_at_kt']:.3f} "
                f"[{row1['ci_low']:.3f}, {row1['ci_high']:.3f}]")
        if len(ks) > 1:
            text += (f"; PASS@({ks[-1]},{tmax}) = {rowk['pass_at_kt']:.3f} "
                     f"[{rowk['ci_low']:.3f}, {rowk['ci_high']:.3f}]")
        lines.append(text)
    if source == "truncation":
        shares = within_t_shares(runs, t)
        for arm in order:
            part = shares.filter(pl.col("arm") == arm)
            lines.append(f"  {arm}: episodes with at most T rounds " + ", ".join(
                f"T={tv} {sv:.2f}" for tv, sv in part.select("t", "share_within_t").iter_rows()))
    for arm in order:
        rowk = hat.filter((pl.col("arm") == arm) & (pl.col("k") == ks[-1]) & (pl.col("t") == tmax)).row(0, named=True)
        lines.append(f"  {arm}: pass^{ks[-1]} (all {ks[-1]} of {ks[-1]} succeed within T={tmax}) = "
                     f"{rowk['pass_at_kt']:.3f} [{rowk['ci_low']:.3f}, {rowk['ci_high']:.3f}]")
    lines += [f"  {line}" for line in reliability.summary().lines]
    lines += [f"  note: {note}" for note in depth_notes(runs, t, t_source)]
    lines += [f"  note: {note}" for note in small]
    if figures:
        # with a single k there is no curve over k nor a k x T surface: the curve over T remains
        made = ([("pass_curves", plot_pass_curves(curves, arms=order, colors=colors)),
                 ("pass_surfaces", plot_pass_surfaces(curves, arms=order))] if len(ks) > 1
                else [("pass_over_t", plot_pass_over_t(curves, k=ks[0], arms=order, colors=colors))])
        write_figures(section, out, made)

    if base is None and "base" in arms:
        base = "base"
    if base is not None:
        if base not in arms:
            raise InputError(f"`--base` arm {base!r} is not in the input (arms: {arms})", field="base")
        compared = list(dict.fromkeys(treated)) if treated else [a for a in order if a != base]
        named = pair_folders(compared, base)  # distinct arms, distinct folders (a hash where names clash)
        folders = [named[other] for other in compared]
        for name in folders:
            if folders.count(name) > 1:  # one folder for two arms: the second would overwrite the first
                raise InputError(f"arms {[a for a, f in zip(compared, folders) if f == name]} give the same "
                                 f"output folder {name!r}: rename one (e.g. with `--arm`)", field="arm")
        for other, name in zip(compared, folders):
            result = boundary(runs, base=base, treated=other, t=t, k=ks, ci=ci, n_boot=n_boot,
                              random_state=random_state, t_source=t_source)
            section.results.append(result)
            folder = out / name
            folder.mkdir(parents=True, exist_ok=True)
            write_tables(section, folder, result.tables().items())
            text = str(result.summary())
            write_text(section, folder / "summary.txt", text)
            lines.append(text)
            if figures:
                gap_fig = (plot_gap_surface(result.gap, base=base, treated=other, t_source=result.t_source)
                           if len(ks) > 1 else plot_gap_over_t(result.gap, base=base, treated=other, colors=colors,
                                                               t_source=result.t_source))
                write_figures(section, folder, [("gap_surface" if len(ks) > 1 else "gap_over_t", gap_fig),
                                                ("boundary", plot_boundary(result, colors=colors))],
                              prefix=f"{name}/")
    section.text = "\n".join(lines)
    return section


def boundary_verdict(result) -> str:  # noqa: ANN001 - a Boundary
    """One sentence: gained and lost problems at the deepest T, the permutation test and its verdict
    (:meth:`Boundary.verdict`)."""
    return result.verdict()
