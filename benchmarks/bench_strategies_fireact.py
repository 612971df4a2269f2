"""The default strategy space on real agents: the three FireAct agents on HotpotQA.

Reads ``../shared/data/fireact-hotpotqa/trajs`` (GPT-3.5, Llama-2-13B and Llama-2-7B, fine-tuned
by the FireAct authors, on the same HotpotQA dev questions) with the ``fireact`` reader, fits
``mx.StrategySpace`` with its defaults (``random_state`` as given) and prints one row per
strategy: its name, size, fidelity (the share of members its name describes), and its share of
each agent's trajectories. The notes give what the README quotes: the number of strategies,
the range of fidelity and its size-weighted mean, and how far strategies track the HotpotQA
question type (bias-corrected Cramér's V with the ``category`` column, percentile bootstrap over
questions, :meth:`~mechanism.StrategySpace.association`).

Run: ``python benchmarks/bench_strategies_fireact.py [--data ../shared/data/fireact-hotpotqa]
[--embedder None] [--seed 0]``. The data are not part of the project; without them the script
says so and exits 1.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import mechanism as mx
from mechanism.readers import read

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "fireact-hotpotqa"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA, help="the FireAct folder (its trajs/ is read)")
    ap.add_argument("--embedder", default="None", help="embedder of the fit; None: the default (MiniLM)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if not (args.data / "trajs").is_dir():
        sys.exit(f"{args.data / 'trajs'}: not found (the FireAct trajectories are read from ../shared)")
    runs = read(args.data / "trajs", format="fireact")
    params = {} if args.embedder == "None" else {"embedder": args.embedder}
    start = time.perf_counter()
    space = mx.StrategySpace(random_state=args.seed, progress=False, **params).fit(runs)
    fit_s = time.perf_counter() - start
    described = space.describe()
    arms = runs["arm"].cast(str).to_numpy()
    agents = sorted(set(arms.tolist()))
    rows = []
    for row in described.iter_rows(named=True):
        members = space.labels_ == row["strategy"]
        rows.append({"strategy": f"S{row['strategy']}", "name": row["name"], "size": int(row["size"]),
                     "fidelity": round(float(row["fidelity"]), 3),
                     **{agent: round(float(members[arms == agent].mean()), 3) for agent in agents}})
    fidelity = described["fidelity"].to_numpy()
    size = described["size"].to_numpy()
    v, lo, hi = space.association(runs, by="category").select("cramers_v", "ci_low", "ci_high").row(0)
    notes = (f"{len(runs):,} trajectories, {len(rows)} strategies; fidelity {fidelity.min():.2f}-{fidelity.max():.2f}, "
             f"{np.average(fidelity, weights=size):.2f} weighted by size; Cramér's V with the HotpotQA category "
             f"{v:.2f} (95 % interval {lo:.2f}-{hi:.2f}); fit {fit_s:.0f} s. Columns after fidelity: each agent's "
             "share of its trajectories in the strategy.")
    harness.report(__file__, rows, title="Strategies of the FireAct agents (default fit)", notes=notes,
                   params=vars(args) | {"data": str(args.data)})


if __name__ == "__main__":
    main()
