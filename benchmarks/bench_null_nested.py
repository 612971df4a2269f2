"""False-positive rate of every split part's interval under the identical-policies,
unequal-design null of ``tests/compare/test_nulls.py`` (issue 21).

For every data set of ``identical`` (40 questions, base 2-10 and treated 4-16 samples, 5
strategies, a fifth of the golds yes/no) the script runs ``integration`` and ``reweighting``
(``n_boot=300``, as the test runs them) and counts, per part of the split, how often its 95 %
interval excludes 0 (the truth is 0 for every part): the interval the module ships
(``resample._split_interval``: ``estimate +- t_{Q-1} sqrt(Q/(Q-1))`` bootstrap sd), against the
percentile interval of the same replicates (the rule before). The Monte Carlo standard error of
each rate, ``sqrt(r (1 - r) / n)``, is given with it; "every part" pools the parts (they are
correlated, so its standard error is a lower bound).

Run: ``python benchmarks/bench_null_nested.py --seeds 1000 1400`` (``--seeds 0 30`` for the
test's own data sets); prints a Markdown table and writes ``benchmarks/results/bench_null_nested.json``.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import mechanism.information as mi
from mechanism.compare import reweighting
from mechanism.resample import percentile_interval

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "compare"))
import harness  # noqa: E402
from test_nulls import identical  # noqa: E402  (the test's own generator)

NESTED = ("total", "composition", "within", "within_retrieval", "within_integration", "within_parametric",
          "within_not_retrievable")
REWEIGHTING = ("total", "composition_total", "within_total")


def _excludes(lo: float, hi: float) -> bool:
    return bool(lo > 1e-12 or hi < -1e-12)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", nargs=2, type=int, default=(1000, 1400))
    ap.add_argument("--n-boot", type=int, default=300)
    ap.add_argument("--strata", default="question", choices=("question", "pooled"))
    args = ap.parse_args()
    seeds = range(*args.seeds)
    start = time.perf_counter()
    parts = [f"nested {p}" for p in NESTED] + [f"reweighting {p}" for p in REWEIGHTING]
    hits = {rule: dict.fromkeys(parts, 0) for rule in ("shipped", "percentile")}
    captured: list[np.ndarray] = []
    split = mi.question_strata_split

    def spy(n, c, w):  # the replicates integration() computes, for their percentile interval
        out = split(n, c, w)
        captured.append(out)
        return out

    mi.question_strata_split = spy
    try:
        for seed in seeds:
            captured.clear()
            runs, labels = identical(seed)
            ig = mi.integration(runs, base="base", treated="rl", labels=labels, n_boot=args.n_boot,
                                random_state=seed, strata=args.strata)
            shift = {r["quantity"]: r for r in ig.shift.iter_rows(named=True)}
            reps = captured[1] if args.strata == "question" else None  # [0] is the point, [1] the replicates
            for p in NESTED:
                hits["shipped"][f"nested {p}"] += _excludes(shift[p]["ci_low"], shift[p]["ci_high"])
                if reps is not None and p in reps:
                    hits["percentile"][f"nested {p}"] += _excludes(*percentile_interval(reps[p], 0.95))
            rw = reweighting(runs, labels, base="base", treated="rl", n_boot=args.n_boot, n_permutations=0,
                             random_state=seed, strata=args.strata)
            for p, attr in zip(REWEIGHTING, ("total_ci", "composition_ci", "within_ci")):
                hits["shipped"][f"reweighting {p}"] += _excludes(*getattr(rw, attr))
                hits["percentile"][f"reweighting {p}"] += _excludes(*percentile_interval(rw.replicates[p], 0.95))
    finally:
        mi.question_strata_split = split
    n = len(seeds)
    rows = []
    for part in parts + ["every part"]:
        row = {"part": part}
        for rule in ("shipped", "percentile"):
            k = sum(hits[rule].values()) if part == "every part" else hits[rule][part]
            m = n * len(parts) if part == "every part" else n
            r = k / m
            row[f"{rule} excludes 0"] = k
            row[f"{rule} rate"] = round(r, 4)
            row[f"{rule} MC se"] = round(float(np.sqrt(r * (1 - r) / m)), 4)
        rows.append(row)
    if args.strata != "question":  # the spy sees the nested parts' replicates on question strata only
        for row in rows:
            if row["part"].startswith("nested") or row["part"] == "every part":
                row["percentile excludes 0"] = row["percentile rate"] = row["percentile MC se"] = "-"
    notes = (f"{n} data sets of tests/compare/test_nulls.py's `identical` (seeds {seeds.start}-{seeds.stop - 1}), "
             f"strata={args.strata}, n_boot={args.n_boot}, nominal level 0.05; shipped = resample._split_interval, "
             f"percentile = the same replicates' percentile interval. {time.perf_counter() - start:.0f} s.")
    harness.report(__file__, rows, title="Split parts under the identical-policies, unequal-design null",
                   notes=notes, params=vars(args))


if __name__ == "__main__":
    main()
