"""``mechanism passkt``: PASS@(k,T) tables, boundary analysis and figures from trajectory files."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from mechanism.commands._common import (
    add_bootstrap_arguments, add_input_arguments, add_output_argument, read_inputs, terminal_safe,
)

from mechanism.errors import InputError
from mechanism.passkt import default_k, depth_notes, within_t_shares

HELP = ("PASS@(k,T) with bootstrap intervals, the capability boundary between two arms "
        "(gained/lost problems, exact test, crossings, saturation) and their figures")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser)
    add_output_argument(parser)
    parser.add_argument("--k", nargs="+", type=int, default=None,
                        help="numbers of samples k (default: 1, 2, 4, ... up to the smallest n)")
    parser.add_argument("--t", nargs="+", type=int, default=[0, 1, 2, 3, 5],
                        help="round budgets T (default: 0 1 2 3 5)")
    parser.add_argument("--t-source", choices=["auto", "t_cap", "truncation"], default="auto",
                        help="count T by the episodes' t_cap or by truncating n_rounds (default: auto)")
    parser.add_argument("--base", default=None,
                        help="reference arm of the boundary analysis (default: 'base' when present)")
    parser.add_argument("--treated", nargs="+", default=None,
                        help="arm(s) compared with --base (default: every other arm)")
    add_bootstrap_arguments(parser)


def run(args: argparse.Namespace) -> int:
    runs = read_inputs(args)
    written, summary = write_outputs(runs, args.out, k=args.k, t=args.t, base=args.base,
                                     treated=args.treated, ci=args.ci, n_boot=args.n_boot,
                                     random_state=args.seed, t_source=args.t_source,
                                     figures=not args.no_figures)
    print(terminal_safe(summary))
    print(f"wrote {len(written)} files to {args.out}")
    return 0


def write_outputs(
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
) -> tuple[list[Path], str]:
    """Write the PASS@(k,T) tables and figures of ``runs`` to ``out``.

    Writes ``pass_at_kt.csv``, ``pass_at_kt_per_problem.parquet`` and the curve and surface
    figures; with a base arm, for every treated arm ``<treated>_vs_<base>/`` holding the
    boundary tables (CSV), ``summary.txt`` and the gap and boundary figures.

    Returns
    -------
    (paths written, plain-text summary)
    """
    from mechanism.boundaries import boundary
    from mechanism.passkt import pass_at_kt, pass_at_kt_per_problem
    from mechanism.plots.passkt import (plot_boundary, plot_gap_over_t, plot_gap_surface, plot_pass_curves,
                                        plot_pass_over_t, plot_pass_surfaces)
    from mechanism.plots.style import arm_colors, close, safe_filename, save_figure

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ks = list(k) if k else default_k(runs, t, t_source=t_source)
    arms = sorted(runs["arm"].unique().to_list()) if "arm" in runs.columns else []
    curves = pass_at_kt(runs, k=ks, t=t, ci=ci, n_boot=n_boot, random_state=random_state, t_source=t_source)
    written = []
    path = out / "pass_at_kt.csv"
    curves.write_csv(path)
    written.append(path)
    path = out / "pass_at_kt_per_problem.parquet"
    pass_at_kt_per_problem(runs, k=ks, t=t, t_source=t_source).write_parquet(path)
    written.append(path)
    order = _arm_order(arms)
    colors = arm_colors(order)  # one colour per arm across every figure of this report
    lines = [f"PASS@(k,T) of {len(arms)} arm(s) on k = {ks}, T = {list(t)} "
             f"(T from {curves['t_source'][0]}; {ci * 100:g}% bootstrap intervals over problems)"]
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
    if curves["t_source"][0] == "truncation":
        shares = within_t_shares(runs, t)
        for arm in order:
            part = shares.filter(pl.col("arm") == arm)
            lines.append(f"  {arm}: episodes with at most T rounds " + ", ".join(
                f"T={tv} {sv:.2f}" for tv, sv in part.select("t", "share_within_t").iter_rows()))
    lines += [f"  note: {note}" for note in depth_notes(runs, t, t_source)]
    if figures:
        # with a single k there is no curve over k nor a k x T surface: the curve over T remains
        made = ([("pass_curves", plot_pass_curves(curves, arms=order, colors=colors)),
                 ("pass_surfaces", plot_pass_surfaces(curves, arms=order))] if len(ks) > 1
                else [("pass_over_t", plot_pass_over_t(curves, k=ks[0], arms=order, colors=colors))])
        for stem, fig in made:
            written += save_figure(fig, out, stem)
            close(fig)

    if base is None and "base" in arms:
        base = "base"
    if base is not None:
        if base not in arms:
            raise InputError(f"`--base` arm {base!r} is not in the input (arms: {arms})", field="base")
        compared = list(dict.fromkeys(treated)) if treated else [a for a in order if a != base]
        folders = [f"{safe_filename(other)}_vs_{safe_filename(base)}" for other in compared]
        for other, name in zip(compared, folders):
            if folders.count(name) > 1:  # one folder for two arms: the second would overwrite the first
                raise InputError(f"arms {[a for a, f in zip(compared, folders) if f == name]} give the same "
                                 f"output folder {name!r}: rename one (e.g. with `--arm`)", field="arm")
        for other in compared:
            result = boundary(runs, base=base, treated=other, t=t, k=ks, ci=ci, n_boot=n_boot,
                              random_state=random_state, t_source=t_source)
            folder = out / f"{safe_filename(other)}_vs_{safe_filename(base)}"
            folder.mkdir(parents=True, exist_ok=True)
            for name, frame in result.tables().items():
                path = folder / f"{name}.csv"
                frame.write_csv(path)
                written.append(path)
            text = result.summary()
            (folder / "summary.txt").write_text(text + "\n", encoding="utf-8")
            written.append(folder / "summary.txt")
            lines.append(text)
            if figures:
                gap_fig = (plot_gap_surface(result.gap, base=base, treated=other, t_source=result.t_source)
                           if len(ks) > 1 else plot_gap_over_t(result.gap, base=base, treated=other, colors=colors,
                                                               t_source=result.t_source))
                for stem, fig in (("gap_surface" if len(ks) > 1 else "gap_over_t", gap_fig),
                                  ("boundary", plot_boundary(result, colors=colors))):
                    written += save_figure(fig, folder, stem)
                    close(fig)
    return written, "\n".join(lines)


def _arm_order(arms: list[str]) -> list[str]:
    known = [a for a in ("base", "rl", "sft") if a in arms]
    return known + [a for a in arms if a not in known]


if __name__ == "__main__":  # pragma: no cover
    from mechanism.cli import main
    sys.exit(main(["passkt", *sys.argv[1:]]))
