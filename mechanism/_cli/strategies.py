"""``mechanism strategies fit|apply``: find strategies, save the space, apply it to new runs.

- ``mechanism strategies fit INPUT... --out SPACE`` fits a strategy space, writes it to the
  folder SPACE with ``strategies.csv``, ``labels.parquet``, ``shares.csv`` and the strategy
  figures, and prints the description table.
- ``mechanism strategies apply SPACE INPUT... --out DIR`` assigns new trajectories to the
  saved strategies without refitting, writes the same tables and figures, and prints the table.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

from mechanism._cli._common import (
    add_embedding_arguments,
    add_input_arguments,
    atomic_output,
    progress_flag,
    read_inputs,
    terminal_safe,
)
from mechanism.analysis.strategy_params import bounds, choices
from mechanism.core.errors import InputError

HELP = "find tool-use strategies (fit a strategy space) or assign new runs to saved ones (apply)"


def _input_args(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser)
    add_embedding_arguments(parser)
    parser.add_argument("--no-figures", action="store_true", help="write tables only")
    parser.add_argument("--quiet", action="store_true", help="print nothing")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    fit = sub.add_parser("fit", help="fit a strategy space on trajectories and save it")
    fit.add_argument("--out", required=True, type=Path, help="folder to save the space in")
    fit.add_argument("--seed", type=int, default=0, help="random_state (default 0)")
    fit.add_argument("--embedder", default=None,
                     help="sentence-transformers model name or path, hashing-<n> or composed[:<model>] "
                          "(default composed: each distinct step embedded once by all-MiniLM-L6-v2)")
    fit.add_argument("--method", default="agglomerative", choices=choices("method"))
    fit.add_argument("--resolution", type=float, default=None,
                     help=f"groups join while their mean distance is below this, in {bounds('resolution')} "
                          "(agglomerative; default: StrategySpace's, chosen once for all planted worlds)")
    fit.add_argument("--min-share", type=float, default=None,
                     help=f"smallest share of the trajectories a strategy holds, in {bounds('min_share')} "
                          "(default: StrategySpace's)")
    fit.add_argument("--retries", default="merge", choices=choices("retries"),
                     help="a failed call and its retry: one attempt of a move (merge, default; failure and "
                          "retry rates are reported per strategy) or moves of their own (keep)")
    _input_args(fit)
    apply = sub.add_parser("apply", help="assign trajectories to a saved space's strategies")
    apply.add_argument("space", type=Path, metavar="SPACE", help="folder written by `strategies fit`")
    apply.add_argument("--out", required=True, type=Path, help="folder for labels.parquet, shares.csv and figures")
    _input_args(apply)


def _read(args: argparse.Namespace) -> pl.DataFrame:
    runs = read_inputs(args)
    if runs.height == 0:
        raise InputError("no trajectories in the input", source=", ".join(map(str, args.inputs)))
    return runs


def run(args: argparse.Namespace) -> int:
    from mechanism.analysis.strategy_space import StrategySpace  # noqa: PLC0415 - loaded when the command runs: `mechanism --help` stays light
    from mechanism.report.passkt import arm_order  # noqa: PLC0415 - loaded when the command runs: `mechanism --help` stays light
    from mechanism.report.strategies import analyse_strategies, write_strategies  # noqa: PLC0415 - loaded when the command runs: `mechanism --help` stays light

    progress = progress_flag(args)
    if args.action == "fit":
        runs = _read(args)
        # unset options keep the estimator's own defaults (one place to change them)
        chosen = {k: v for k, v in (("resolution", args.resolution), ("min_share", args.min_share)) if v is not None}
        # the failure reading that read the input also reads the calls the strategies are made of
        space = StrategySpace(embedder=args.embedder, method=args.method, random_state=args.seed,
                              retries=args.retries, error_pattern=args.error_pattern,
                              cache_dir=args.cache_dir, progress=progress, **chosen).fit(runs)
        title = f"strategy space fitted on {', '.join(map(str, args.inputs))}"
    else:
        space = StrategySpace.load(args.space, cache_dir=args.cache_dir, progress=progress)
        runs = _read(args)
        title = f"{runs.height} trajectories assigned to the saved space {args.space} (no refit)"
    arms = arm_order(sorted(runs["arm"].unique().to_list()))
    with atomic_output(args.out) as out:
        if args.action == "fit":
            space.save(out)
        found = analyse_strategies(space, runs, map_xy=not args.no_figures, random_state=getattr(args, "seed", 0))
        section = write_strategies(found, runs, out, arms=arms, title=title, figures=not args.no_figures)
    if not args.quiet:
        print(terminal_safe(section.text))
        n_out = int(section.results[0].assigned["outlier"].sum())
        what = (f"{space.n_strategies_} strategies from {runs.height} trajectories; space saved to {args.out}"
                if args.action == "fit" else
                f"{runs.height} trajectories assigned to {space.n_strategies_} saved strategies ({n_out} outliers, "
                f"{n_out / max(runs.height, 1):.1%}, beyond {space.threshold_:.2f} from their strategy's medoid)")
        print(terminal_safe(f"{what}; wrote {len(section.written)} files to {args.out}"), file=sys.stderr)
    return 0
