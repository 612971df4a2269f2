"""Information integration: figures and tables for the built-in simulated default and for the
FireAct HotpotQA agents.

Writes ``figures/integration/simulated/`` and ``figures/integration/fireact/`` (per-arm rates,
the retrieval / integration / parametric split, per-trajectory flags, the 2x2 grid and split
figures, ``summary.txt``). On simulated data the planted strategies are the labels (per-strategy
rates, the shift toward strategies that use what they retrieve, the nested split and its
figure), and the retrieval flag is checked against the simulator's own ``retrieved_gold`` truth.

Run: ``python analyses/integration.py [--out figures/integration] [--n-boot 1000]``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from _common import analysis_parser, run_both

from mechanism.analysis.compare import labels_from_table
from mechanism.analysis.information import retrieval_flags
from mechanism.datasets.simulation import simulate
from mechanism.readers import read
from mechanism.report import write_integration as write_outputs


def simulated(out: Path, *, n_boot: int, seed: int) -> str:
    """base / rl / sft from the simulator (100 questions x 64 samples)."""
    sim = simulate(n_questions=100, n_samples=64, random_state=seed, progress=None)
    # the planted strategies as labels: the shift toward strategies that use what they retrieve
    _, text = write_outputs(sim.runs, out, arms=["base", "rl", "sft"], base="base", n_boot=n_boot,
                            random_state=seed, title="Simulated default, planted strategies",
                            labels=labels_from_table(sim.runs, sim.truth))
    truth = labels_from_table(sim.runs, sim.truth, column="retrieved_gold").astype(bool)
    agree = float(np.mean(retrieval_flags(sim.runs) == truth))
    check = f"  check: retrieval flag agrees with the simulator's truth on {100 * agree:.2f}% of trajectories"
    (out / "summary.txt").write_text(text + "\n" + check + "\n", encoding="utf-8")
    return text + "\n" + check


def fireact(out: Path, path: Path, *, n_boot: int, seed: int) -> str:
    """The three FireAct agents, split against Llama-2-7B."""
    runs = read(path / "trajs", format="fireact")
    arms = [a for a in ("llama-2-7b", "llama-2-13b", "gpt-3.5-turbo") if a in runs["arm"].to_list()]
    arms += sorted(set(runs["arm"].to_list()) - set(arms))
    _, text = write_outputs(runs, out, arms=arms, base=arms[0], n_boot=n_boot, random_state=seed,
                            title="FireAct HotpotQA agents")
    return text


def main() -> None:
    args = analysis_parser(__doc__, "integration").parse_args()
    run_both(args.fireact,
             lambda: simulated(args.out / "simulated", n_boot=args.n_boot, seed=args.seed),
             lambda: fireact(args.out / "fireact", args.fireact, n_boot=args.n_boot, seed=args.seed))


if __name__ == "__main__":
    main()
