"""``mechanism demo``: the whole study on the built-in simulated default."""
from __future__ import annotations

import argparse
from pathlib import Path

from mechanism._cli._common import atomic_output, progress_line
from mechanism.core.errors import InputError

HELP = ("simulate base, RL and SFT agents and run every analysis on them: PASS@(k,T), strategies, "
        "reweighting, information integration; writes figures, tables and a one-page summary")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("demo-out"), help="output folder (default: demo-out)")
    parser.add_argument("--questions", type=int, default=100,
                        help="simulated questions (default 100, as the reference study)")
    parser.add_argument("--samples", type=int, default=64,
                        help="samples per question and arm (default 64, as the reference study)")
    parser.add_argument("--seed", type=int, default=0, help="seed of everything random (default 0)")
    parser.add_argument("--embedder", default=None,
                        help="sentence-transformers model name or path (default: composed, each distinct step "
                             "embedded once by the bundled all-MiniLM-L6-v2)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="embedding and segmentation cache (default: OUT/cache)")


def run(args: argparse.Namespace) -> int:
    from mechanism.demo import run_demo  # noqa: PLC0415 - loaded when the command runs: `mechanism --help` stays light

    if args.questions < 2 or args.samples < 1:
        raise InputError("the demo needs at least 2 questions and 1 sample", field="questions")

    # the cache stays where the user finds it across runs (OUT/cache), outside the atomic output
    cache_dir = args.cache_dir if args.cache_dir is not None else args.out / "cache"
    with atomic_output(args.out) as out:
        result = run_demo(out, n_questions=args.questions, n_samples=args.samples, random_state=args.seed,
                          embedder=args.embedder, progress=False if args.no_progress else None,
                          cache_dir=cache_dir,
                          echo=lambda line: progress_line(args, line))
        text = result.summary_markdown.read_text("utf-8")
    print(text)
    print(f"summary: {args.out / 'summary.md'} and {args.out / 'summary.html'}")
    return 0
