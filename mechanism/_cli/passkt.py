"""``mechanism passkt``: PASS@(k,T) tables, boundary analysis and figures from trajectory files."""
from __future__ import annotations

import argparse
from pathlib import Path

import polars as pl

from mechanism._cli._common import (
    add_bootstrap_arguments,
    add_input_arguments,
    add_output_argument,
    add_shared_argument,
    atomic_output,
    check_shared_questions,
    read_inputs,
    terminal_safe,
)
from mechanism.core.errors import InputError
from mechanism.core.options import TSource, choices

HELP = ("PASS@(k,T) with bootstrap intervals, the capability boundary between two arms "
        "(gained/lost problems, exact test, crossings, saturation) and their figures")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser)
    add_output_argument(parser)
    parser.add_argument("--k", nargs="+", type=int, default=None,
                        help="numbers of samples k (default: 1, 2, 4, ... up to the smallest n)")
    parser.add_argument("--t", nargs="+", type=int, default=[0, 1, 2, 3, 5],
                        help="round budgets T (default: 0 1 2 3 5)")
    parser.add_argument("--t-source", choices=choices(TSource), default="auto",
                        help="count T by the episodes' t_cap or by truncating n_rounds (default: auto)")
    parser.add_argument("--base", default=None,
                        help="reference arm of the boundary analysis (default: 'base' when present)")
    parser.add_argument("--treated", nargs="+", default=None,
                        help="arm(s) compared with --base (default: every other arm)")
    add_bootstrap_arguments(parser)
    add_shared_argument(parser)


def run(args: argparse.Namespace) -> int:
    runs = read_inputs(args)
    check_shared_questions(args, runs, what="boundary")  # the check is here; the library is told it was made
    arms = sorted(runs["arm"].unique().to_list())
    if args.base is not None and args.base not in arms:
        raise InputError(f"`--base` arm {args.base!r} is not in the input (arms: {arms})", field="base")
    with atomic_output(args.out) as out:
        written, summary = write_outputs(runs, out, k=args.k, t=args.t, base=args.base,
                                         treated=args.treated, ci=args.ci, n_boot=args.n_boot,
                                         random_state=args.seed, t_source=args.t_source,
                                         figures=not args.no_figures, allow_few_shared=True)
    print(terminal_safe(summary))
    print(f"wrote {len(written)} files to {args.out}")
    return 0


def write_outputs(runs: pl.DataFrame, out: str | Path, *, figures: bool = True,
                  **options) -> tuple[list[Path], str]:
    """:func:`mechanism.report.passkt.analyse_passkt` then :func:`mechanism.report.write_passkt`,
    as ``(paths written, text)``."""
    from mechanism.report.passkt import analyse_passkt, write_passkt  # noqa: PLC0415 - loaded when the command runs: `mechanism --help` stays light

    section = write_passkt(analyse_passkt(runs, **options), out, figures=figures)
    return section.written, section.text
