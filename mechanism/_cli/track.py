"""``mechanism track``: a training run's checkpoints, in order, against the base checkpoint."""
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
    read_inputs,
    terminal_safe,
)

HELP = ("follow a series of checkpoints: strategy shares with intervals, PASS@(k,T), the composition/within "
        "split and JS divergence against the base checkpoint, and their figures over training")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser)
    add_output_argument(parser)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--space", type=Path, metavar="SPACE",
                        help="folder of a saved StrategySpace (default: fit one on --base plus --fit-on)")
    source.add_argument("--labels", type=Path, metavar="LABELS",
                        help="table of arm, question_id, sample_id and a strategy column instead of a space")
    parser.add_argument("--label-column", default="strategy", help="strategy column of --labels (default: strategy)")
    parser.add_argument("--order", nargs="+", default=None, metavar="CHECKPOINT",
                        help="checkpoints in training order (default: --step, else natural sort of the names)")
    parser.add_argument("--step", default=None, metavar="COLUMN", help="numeric column holding each checkpoint's step")
    parser.add_argument("--base", default=None, help="reference checkpoint (default: the first)")
    parser.add_argument("--step-label", default=None, metavar="LABEL",
                        help='x-axis label of the figures, e.g. "trial" (default: training step)')
    parser.add_argument("--fit-on", default=None, metavar="CHECKPOINT",
                        help="with no --space: the checkpoint fitted together with --base (default: the last)")
    parser.add_argument("--embedder", default=None, help="embedding model of a space fitted here")
    parser.add_argument("--k", nargs="+", type=int, default=None, help="k grid (default: 1 and the largest power of 2)")
    parser.add_argument("--t", nargs="+", type=int, default=[0, 1, 2, 3, 5], help="round budgets T (default 0 1 2 3 5)")
    add_shared_argument(parser)
    add_bootstrap_arguments(parser)
    add_embedding_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from mechanism.analysis.checkpoints import track  # noqa: PLC0415 - loaded when the command runs: `mechanism --help` stays light
    from mechanism.analysis.labels import read_labels  # noqa: PLC0415 - loaded when the command runs: `mechanism --help` stays light
    from mechanism.report.track import write_track  # noqa: PLC0415 - loaded when the command runs: `mechanism --help` stays light

    runs = read_inputs(args)
    check_shared_questions(args, runs, what="track")
    labels = read_labels(runs, args.labels, column=args.label_column) if args.labels is not None else None
    result = track(runs, space=args.space, labels=labels, order=args.order, step=args.step, base=args.base,
                   fit_on=args.fit_on, k=args.k, t=args.t, ci=args.ci, n_boot=args.n_boot, random_state=args.seed,
                   embedder=args.embedder, cache_dir=args.cache_dir, progress=progress_flag(args))
    with atomic_output(args.out) as out:
        section = write_track(result, out, figures=not args.no_figures, step_label=args.step_label)
    print(terminal_safe(section.text))
    print(f"wrote {len(section.written)} files to {args.out}")
    return 0
