"""Time of one ``reweighting`` call with every stage on: the split, the query-sequence
statistics (a ``steps`` column) and the nearest-base-neighbour distances (``coordinates``),
and how many question-bootstrap draws it makes.

The stages resample the same questions from one seed, so one draw serves all of them; run the
script on the code before and after a change to compare (``benchmarks/bench_reweighting.py``
has no ``steps`` column and no coordinates, so it times the split's draw only).

Run: ``python benchmarks/bench_reweighting_draws.py [--questions 1000] [--samples 8] [--n-boot 1000]``;
prints a markdown table.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import polars as pl
from harness import report

import mechanism.analysis.compare
from mechanism.analysis.compare import reweighting
from mechanism.core.resample import question_bootstrap_weights, stream
from mechanism.core.schema import from_records, make_step


def make_table(n_questions: int, n_samples: int, seed: int) -> tuple[pl.DataFrame, np.ndarray, np.ndarray]:
    """Two arms; each trajectory 0-3 searches from a vocabulary of 6 queries, 5 strategies,
    2-d coordinates on a grid (trajectories repeat in strategy space)."""
    rng = np.random.default_rng(seed)
    records = []
    for arm, p in (("base", 0.3), ("rl", 0.5)):
        for q in range(n_questions):
            for s in range(n_samples):
                qs = [f"query {int(v)}" for v in rng.integers(0, 6, rng.integers(0, 4))]
                ok = bool(rng.random() < p)
                records.append({"arm": arm, "question_id": f"q{q:06d}", "sample_id": s, "question": "",
                                "gold": ["x"], "answer": "x" if ok else "y", "correct": ok, "n_rounds": len(qs),
                                "steps": [make_step(query=v, observation="") for v in qs]})
    labels = rng.integers(0, 5, len(records))
    coords = np.round(rng.normal(size=(len(records), 2)), 1)
    return from_records(records), labels, coords


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    runs, labels, coords = make_table(args.questions, args.samples, seed=0)

    calls = []
    original = mechanism.analysis.compare.question_bootstrap_weights

    def counted(*a, **k):
        calls.append(1)
        return original(*a, **k)

    mechanism.analysis.compare.question_bootstrap_weights = counted
    times = []
    for _ in range(args.repeat):
        calls.clear()
        t0 = time.perf_counter()
        reweighting(runs, labels, base="base", treated="rl", n_boot=args.n_boot, n_permutations=0,
                    coordinates=coords, random_state=0)
        times.append(time.perf_counter() - t0)
    mechanism.analysis.compare.question_bootstrap_weights = original
    draw = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        question_bootstrap_weights(args.questions, args.n_boot, stream(0, "bootstrap")).astype(float)
        draw.append(time.perf_counter() - t0)

    rows = [{"quantity": "reweighting(..., steps, coordinates) (s)", "value": round(min(times), 3)},
            {"quantity": "question-bootstrap draws per call", "value": len(calls)},
            {"quantity": f"one draw of ({args.n_boot}, {args.questions}) weights (s)", "value": round(min(draw), 3)}]
    report(__file__, rows, title="One question-bootstrap draw per `reweighting` call", params=vars(args),
           notes=f"{runs.height} trajectories ({args.questions} questions x {args.samples} samples x 2 arms), "
                 f"{args.n_boot} bootstrap replicates, no permutations; best of {args.repeat}.")

if __name__ == "__main__":
    main()
