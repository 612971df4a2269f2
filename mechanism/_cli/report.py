"""``mechanism report``: the one-page summary (Markdown and HTML) of a user's own runs."""
from __future__ import annotations

import argparse
from pathlib import Path

from mechanism._cli._common import (
    add_bootstrap_arguments,
    add_embedding_arguments,
    add_input_arguments,
    add_output_argument,
    add_shared_argument,
    atomic_output,
    check_shared_questions,
    progress_flag,
    progress_line,
    read_inputs,
    terminal_safe,
)
from mechanism._cli.swap import add_endpoint_arguments, report_sections
from mechanism.core.errors import InputError

HELP = ("every analysis on your runs - PASS@(k,T) and the capability boundary, strategies, reweighting, "
        "information integration - with every figure and a verdict per arm on one page (summary.md, summary.html)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser)
    add_output_argument(parser)
    parser.add_argument("--base", default=None,
                        help="reference arm (default: none, the analyses that make sense for one agent, per arm)")
    parser.add_argument("--arm-names", nargs="+", default=None, metavar="OLD=NEW",
                        help="show arm OLD as NEW in every table, figure and file")
    parser.add_argument("--treated", nargs="+", default=None, help="arm(s) compared with --base (default: all others)")
    parser.add_argument("--space", type=Path, default=None, metavar="SPACE",
                        help="folder of a saved StrategySpace (default: fit one on the runs, saved under OUT/space)")
    parser.add_argument("--embedder", default=None, help="embedding model of a space fitted here")
    parser.add_argument("--k", nargs="+", type=int, default=None, help="k grid (default: 1, 2, 4, ... up to n)")
    parser.add_argument("--t", nargs="+", type=int, default=[0, 1, 2, 3, 5], help="round budgets T (default 0 1 2 3 5)")
    parser.add_argument("--n-permutations", type=int, default=1000, help="permutations of the reweighting test")
    parser.add_argument("--title", default=None, help="page title")
    add_endpoint_arguments(parser, required=False)  # with --endpoint: a swap-test section
    add_bootstrap_arguments(parser)
    add_shared_argument(parser)
    add_embedding_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from mechanism.report.study import write_report  # noqa: PLC0415 - loaded when the command runs: `mechanism --help` stays light

    runs = read_inputs(args)
    check_shared_questions(args, runs, what="report")  # the check is here; the library is told it was made
    with atomic_output(args.out) as out:
        extra_sections, extra_figures = report_sections(args, runs, out)
        report = write_report(runs, out, base=args.base, treated=args.treated, space=args.space, k=args.k,
                              t=args.t, ci=args.ci, n_boot=args.n_boot, n_permutations=args.n_permutations,
                              random_state=args.seed, embedder=args.embedder, cache_dir=args.cache_dir,
                              progress=progress_flag(args), title=args.title,
                              arm_names=parse_arm_names(args.arm_names),
                              figures=not getattr(args, "no_figures", False), allow_few_shared=True,
                              extra_sections=extra_sections, extra_figures=extra_figures,
                              echo=lambda line: progress_line(args, terminal_safe(line)))
        n_figures = len(report.figures())
    for line in report.verdicts:
        print(terminal_safe(line))
    print(terminal_safe(f"summary: {args.out / 'summary.md'} and {args.out / 'summary.html'} ({n_figures} figures)"))
    return 0


def parse_arm_names(pairs: list[str] | None) -> dict[str, str] | None:
    """``["old=new", ...]`` as a mapping; a pair without ``=`` is a one-line input error."""
    if not pairs:
        return None
    out = {}
    for pair in pairs:
        old, sep, new = pair.partition("=")
        if not sep or not old or not new:
            raise InputError(f"`--arm-names` takes OLD=NEW pairs, got {pair!r}", field="arm-names")
        out[old] = new
    return out
