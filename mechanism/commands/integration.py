"""``mechanism integration``: did the agent find the answer, and did it use what it found?"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

from mechanism.commands._common import (
    add_bootstrap_arguments, add_input_arguments, add_output_argument, read_inputs, terminal_safe,
)

HELP = ("retrieval, integration and parametric rates per arm, the exact split of accuracy differences "
        "into retrieval and integration parts, and follow-up queries built on observations")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser)
    add_output_argument(parser)
    parser.add_argument("--arms", nargs="+", default=None, help="arms to report, in order (default: all)")
    parser.add_argument("--base", default=None, help="arm the others are split against (default: first arm)")
    parser.add_argument("--logprobs-column", default=None,
                        help="column of base-model token log-probabilities, "
                             "list[struct{segment, logprob}] (adds query vs reasoning perplexity)")
    parser.add_argument("--model-path", type=Path, default=None,
                        help="local folder of the base model (transformers causal LM, fast tokenizer; never "
                             "downloaded): it scores every trajectory for query vs reasoning perplexity")
    add_bootstrap_arguments(parser)


def run(args: argparse.Namespace) -> int:
    runs = read_inputs(args)
    written, summary = write_outputs(runs, args.out, arms=args.arms, base=args.base, ci=args.ci,
                                     n_boot=args.n_boot, random_state=args.seed,
                                     logprobs_column=args.logprobs_column, model_path=args.model_path,
                                     figures=not args.no_figures)
    print(terminal_safe(summary))
    print(f"wrote {len(written)} files to {args.out}")
    return 0


def write_outputs(runs: pl.DataFrame, out: str | Path, **options) -> tuple[list[Path], str]:
    """:func:`mechanism.report.write_integration`, as ``(paths written, text)``."""
    from mechanism.report.integration import write_integration

    return tuple(write_integration(runs, out, **options))


def describe(res) -> str:  # noqa: ANN001 - an Integration result
    """:func:`mechanism.report.describe_integration`."""
    from mechanism.report.integration import describe_integration

    return describe_integration(res)


if __name__ == "__main__":  # pragma: no cover
    from mechanism.cli import main
    sys.exit(main(["integration", *sys.argv[1:]]))
