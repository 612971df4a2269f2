"""``mechanism simulate``: write a simulated experiment (trajectories + ground truth) to a folder."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

from mechanism._cli._common import atomic_output
from mechanism.core.errors import MechanismError

HELP = ("simulate base/RL/SFT search agents on generated multi-hop questions; write "
        "searchr1/<arm>.jsonl, openai/<arm>.jsonl and, kept apart, truth/truth.parquet and truth/config.json")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, type=Path, help="output folder (created if missing)")
    parser.add_argument("--questions", type=int, default=100, help="number of questions (default 100)")
    parser.add_argument("--samples", type=int, default=64, help="episodes per arm and question (default 64)")
    parser.add_argument("--arms", nargs="+", default=["base", "rl", "sft"],
                        help="arms to simulate, from the built-in policies (default: base rl sft)")
    parser.add_argument("--t-cap", type=int, default=5, help="most search rounds per episode (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument("--training-steps", nargs="+", type=int, default=None, metavar="STEP",
                        help="training-run mode: one checkpoint per step (arms step-<STEP>), moving from the "
                             "base mixture toward RL's; replaces --arms")


def run(args: argparse.Namespace) -> int:

    from mechanism.datasets.simulation import default_policies, simulate, training_run  # noqa: PLC0415 - loaded when the command runs: `mechanism --help` stays light

    if args.seed < 0:  # the flag's own name (the library calls the parameter `random_state`)
        raise MechanismError(f"`seed` must be a non-negative integer, got {args.seed}")
    if args.training_steps is not None:
        sim = training_run(steps=args.training_steps, n_questions=args.questions, n_samples=args.samples,
                           t_cap=args.t_cap, random_state=args.seed, progress=False if args.no_progress else None)
        return _report(sim, args)
    known = default_policies()
    unknown = [a for a in args.arms if a not in known]
    if unknown:
        raise MechanismError(f"unknown arm `{unknown[0]}` in `--arms` (built-in: {', '.join(known)}; "
                             "other arms need a Policy from Python)")
    sim = simulate(n_questions=args.questions, n_samples=args.samples, arms=tuple(args.arms),
                   t_cap=args.t_cap, random_state=args.seed, progress=False if args.no_progress else None)
    return _report(sim, args)


def _report(sim, args: argparse.Namespace) -> int:
    with atomic_output(args.out) as out:
        written = sim.write(out)
    summary = sim.truth.group_by("arm").agg(n=pl.len(), accuracy=pl.col("correct").mean()).sort("arm")
    lines = [f"wrote {len(written)} files to {args.out}"]
    lines += [f"  {row['arm']}: {row['n']} trajectories, accuracy {row['accuracy']:.3f}"
              for row in summary.iter_rows(named=True)]
    print("\n".join(lines), file=sys.stdout)
    return 0
