"""``mechanism reweighting``: did the treated arm reweight the base arm's strategies?"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import polars as pl

from mechanism._cli._common import (
    add_bootstrap_arguments,
    add_embedding_arguments,
    add_input_arguments,
    add_level_argument,
    add_output_argument,
    add_shared_argument,
    atomic_output,
    check_shared_questions,
    progress_flag,
    read_inputs,
    require_two_arms,
    terminal_safe,
)

HELP = ("split accuracy differences into strategy reweighting (composition) and execution (within), "
        "with shares, JS divergence, a permutation test, alignment and query overlap")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser)
    add_output_argument(parser)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--labels", type=Path, metavar="LABELS",
                        help="parquet/CSV/JSONL table of arm, question_id, sample_id and a strategy column "
                             "(e.g. a simulation's truth/truth.parquet)")
    source.add_argument("--space", type=Path, metavar="SPACE",
                        help="folder of a saved StrategySpace: assign every trajectory to its strategies")
    source.add_argument("--by-rounds", action="store_true",
                        help="strata = number of search rounds (0, 1, ..., 5+): a structural baseline")
    parser.add_argument("--label-column", default="strategy", help="strategy column of --labels (default: strategy)")
    parser.add_argument("--base", required=True, help="reference arm")
    parser.add_argument("--treated", nargs="+", default=None,
                        help="arm(s) compared with --base (default: every other arm)")
    add_bootstrap_arguments(parser)
    add_shared_argument(parser)
    add_level_argument(parser)
    parser.add_argument("--n-permutations", type=int, default=1000,
                        help="permutations of the within-question test (default 1000; 0 skips it)")
    add_embedding_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from mechanism.analysis.labels import labels_from_space, read_labels, rounds_labels  # noqa: PLC0415 - loaded when the command runs: `mechanism --help` stays light

    runs = read_inputs(args)
    check_shared_questions(args, runs, what="reweighting")  # the check is here; the library is told it was made
    require_two_arms(runs, "reweighting")
    coordinates = names = None
    if args.labels is not None:
        labels = read_labels(runs, args.labels, column=args.label_column)
        source = f"labels from {args.labels} (column `{args.label_column}`)"
    elif args.space is not None:
        labels, coordinates, names = labels_from_space(runs, args.space, cache_dir=args.cache_dir,
                                                       progress=progress_flag(args), level=args.level)
        source = (f"strategies of the saved space {args.space}" if args.level == "variant"
                  else f"families of the strategies of the saved space {args.space}")
    else:
        labels = rounds_labels(runs)
        source = "number of search rounds (0..5+)"
    with atomic_output(args.out) as out:
        written, summary = write_outputs(runs, labels, out, base=args.base, treated=args.treated,
                                         ci=args.ci, n_boot=args.n_boot, n_permutations=args.n_permutations,
                                         random_state=args.seed, coordinates=coordinates,
                                         figures=not args.no_figures, label_source=source, names=names,
                                         allow_few_shared=True)
    print(terminal_safe(summary))
    print(f"wrote {len(written)} files to {args.out}")
    return 0


def write_outputs(runs: pl.DataFrame, labels: Any, out: str | Path, *, figures: bool = True,
                  label_source: str | None = None, names: dict[Any, str] | None = None,
                  **options) -> tuple[list[Path], str]:
    """:func:`mechanism.report.reweighting.analyse_reweighting` then
    :func:`mechanism.report.write_reweighting`, as ``(paths written, text)``."""
    from mechanism.report.reweighting import analyse_reweighting, write_reweighting  # noqa: PLC0415 - loaded when the command runs: `mechanism --help` stays light

    results = analyse_reweighting(runs, labels, **options)
    section = write_reweighting(results, out, n_boot=options.get("n_boot", 1000), figures=figures,
                                label_source=label_source, names=names)
    return section.written, section.text

