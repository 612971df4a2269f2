"""``mechanism integration``: did the agent find the answer, and did it use what it found?"""
from __future__ import annotations

import argparse
from pathlib import Path

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
from mechanism.core.options import Weighting, choices

HELP = ("retrieval, integration and parametric rates per arm, the exact split of accuracy differences "
        "into retrieval and integration parts, and follow-up queries built on observations; with strategy "
        "labels (--labels/--space) the same per strategy, and whether the treated arm moved toward "
        "strategies that use what they retrieve")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser)
    add_output_argument(parser)
    parser.add_argument("--arms", nargs="+", default=None, help="arms to report, in order (default: all)")
    parser.add_argument("--base", default=None, help="arm the others are split against (default: first arm)")
    parser.add_argument("--treated", nargs="+", default=None,
                        help="arm(s) compared with --base (default: every other arm)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--labels", type=Path, metavar="LABELS",
                        help="parquet/CSV/JSONL table of arm, question_id, sample_id and a strategy column: "
                             "adds rates per strategy, the shift toward strategies that integrate well and "
                             "the nested split")
    source.add_argument("--space", type=Path, metavar="SPACE",
                        help="folder of a saved StrategySpace: its strategies (and names) as the labels")
    parser.add_argument("--label-column", default="strategy", help="strategy column of --labels (default: strategy)")
    parser.add_argument("--weighting", default="question", choices=choices(Weighting),
                        help="questions weigh equally within an arm (default) or pool trajectories")
    parser.add_argument("--logprobs-column", default=None,
                        help="column of base-model token log-probabilities, "
                             "list[struct{segment, logprob}] (adds query vs reasoning perplexity)")
    parser.add_argument("--model-path", type=Path, default=None,
                        help="local folder of the base model (transformers causal LM, fast tokenizer; never "
                             "downloaded): it scores every trajectory for query vs reasoning perplexity")
    add_bootstrap_arguments(parser)
    add_shared_argument(parser)
    add_level_argument(parser)
    add_embedding_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from mechanism.analysis.labels import labels_from_space, read_labels  # noqa: PLC0415 - loaded when the command runs: `mechanism --help` stays light

    runs = read_inputs(args)
    check_shared_questions(args, runs, what="integration")  # the check is here; the library is told it was made
    if args.base is not None or args.treated:  # rates per arm make sense for one agent; a split does not
        require_two_arms(runs, "integration", hint="without --base and --treated it reports one arm's rates")
    labels = names = None
    if args.labels is not None:
        labels = read_labels(runs, args.labels, column=args.label_column)
    elif args.space is not None:
        labels, _, names = labels_from_space(runs, args.space, cache_dir=args.cache_dir,
                                             progress=progress_flag(args), level=args.level)
    with atomic_output(args.out) as out:
        written, summary = write_outputs(runs, out, arms=args.arms, base=args.base, treated=args.treated,
                                         labels=labels, names=names, weighting=args.weighting, ci=args.ci,
                                         n_boot=args.n_boot, random_state=args.seed,
                                         logprobs_column=args.logprobs_column, model_path=args.model_path,
                                         figures=not args.no_figures, allow_few_shared=True)
    print(terminal_safe(summary))
    print(f"wrote {len(written)} files to {args.out}")
    return 0


def write_outputs(runs: pl.DataFrame, out: str | Path, *, figures: bool = True,
                  names: dict | None = None, **options) -> tuple[list[Path], str]:
    """:func:`mechanism.integration` then :func:`mechanism.report.write_integration`, as
    ``(paths written, text)``."""
    from mechanism.analysis.information import integration  # noqa: PLC0415 - loaded when the command runs: `mechanism --help` stays light
    from mechanism.report.integration import write_integration  # noqa: PLC0415 - loaded when the command runs: `mechanism --help` stays light

    section = write_integration(integration(runs, **options), out, names=names, figures=figures)
    return section.written, section.text
