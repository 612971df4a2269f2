"""False-positive rate of every split part's interval under the identical-policies,
unequal-design null of ``tests/compare/test_nulls.py``.

For every data set of ``identical`` (40 questions, base 2-10 and treated 4-16 samples, 5
strategies, a fifth of the golds yes/no) the script runs ``integration`` and ``reweighting``
(``n_boot=300``, as the test runs them) and counts, per part of the split, how often its 95 %
interval excludes 0 (the truth is 0 for every part): the interval the module ships
(``resample.split_interval``: ``estimate +- t_{Q-1} sqrt(Q/(Q-1))`` bootstrap sd), against the
percentile interval of the same replicates (the rule before), and, for the nested parts, two
candidates not chosen (a t interval on the jackknife standard error, and BCa). The Monte Carlo
standard error of
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
from scipy import stats

import mechanism.analysis.information as mi
from mechanism.analysis.compare import reweighting
from mechanism.core.resample import percentile_interval

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "compare"))
import harness
from test_nulls import identical

NESTED = ("total", "composition", "within", "within_retrieval", "within_integration", "within_parametric",
          "within_not_retrievable")
REWEIGHTING = ("total", "composition_total", "within_total")


def _excludes(lo: float, hi: float) -> bool:
    return bool(lo > 1e-12 or hi < -1e-12)


def _other_rules(est: float, reps: np.ndarray, jack: np.ndarray) -> dict[str, tuple[float, float]]:
    """The candidates not chosen, on the same replicates: a t interval on the jackknife standard
    error (leave-one-question-out values), and BCa (bias from the replicates, acceleration from
    the jackknife)."""
    q = jack.size
    centre = jack.mean()
    se = np.sqrt((q - 1) / q * ((jack - centre) ** 2).sum())
    half = stats.t.ppf(0.975, q - 1) * se
    z0 = stats.norm.ppf(np.clip((reps < est).mean() + 0.5 * (reps == est).mean(), 1e-6, 1 - 1e-6))
    d = centre - jack
    accel = (d ** 3).sum() / (6.0 * ((d ** 2).sum()) ** 1.5) if (d ** 2).sum() > 0 else 0.0
    zs = stats.norm.ppf([0.025, 0.975])
    lo, hi = np.nanquantile(reps, stats.norm.cdf(z0 + (z0 + zs) / (1 - accel * (z0 + zs))))
    return {"jackknife t": (est - half, est + half), "BCa": (float(lo), float(hi))}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", nargs=2, type=int, default=(1000, 1400))
    ap.add_argument("--n-boot", type=int, default=300)
    ap.add_argument("--strata", default="question", choices=("question", "pooled"))
    args = ap.parse_args()
    seeds = range(*args.seeds)
    start = time.perf_counter()
    parts = [f"nested {p}" for p in NESTED] + [f"reweighting {p}" for p in REWEIGHTING]
    rules = ("shipped", "percentile", "jackknife t", "BCa")
    hits = {rule: dict.fromkeys(parts, 0) for rule in rules}
    captured: list[tuple] = []
    split = mi.question_strata_split

    def spy(n, c, w):  # the tallies and replicates integration() computes, for the other rules
        out = split(n, c, w)
        captured.append((n, c, out))
        return out

    mi.question_strata_split = spy
    try:
        for seed in seeds:
            captured.clear()
            runs, labels = identical(seed)
            ig = mi.integration(runs, base="base", treated="rl", labels=labels, n_boot=args.n_boot,
                                random_state=seed, strata=args.strata)
            shift = {r["quantity"]: r for r in ig.shift.iter_rows(named=True)}
            reps = captured[1][2] if args.strata == "question" else None  # [0] is the point, [1] the replicates
            if reps is not None:  # leave-one-question-out values, for the jackknife t and BCa's acceleration
                n_t, c_t = captured[0][0], captured[0][1]
                q = n_t.shape[1]
                jack = split(n_t, c_t, (np.ones((q, q)) - np.eye(q)) * q / (q - 1))
            for p in NESTED:
                hits["shipped"][f"nested {p}"] += _excludes(shift[p]["ci_low"], shift[p]["ci_high"])
                if reps is not None and p in reps:
                    hits["percentile"][f"nested {p}"] += _excludes(*percentile_interval(reps[p], 0.95))
                    for rule, iv in _other_rules(shift[p]["estimate"], np.asarray(reps[p], float),
                                                 np.asarray(jack[p], float)).items():
                        hits[rule][f"nested {p}"] += _excludes(*iv)
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
        for rule in rules:
            if rule in ("jackknife t", "BCa") and part.startswith("reweighting"):
                row[f"{rule} rate"] = "-"
                continue
            counted = [p for p in parts if rule in ("shipped", "percentile") or p.startswith("nested")]
            k = sum(hits[rule][p] for p in counted) if part == "every part" else hits[rule][part]
            m = n * len(counted) if part == "every part" else n
            if rule in ("jackknife t", "BCa"):  # their rate only, to keep the table narrow
                row[f"{rule} rate"] = round(k / m, 4)
                continue
            r = k / m
            row[f"{rule} excludes 0"] = k
            row[f"{rule} rate"] = round(r, 4)
            row[f"{rule} MC se"] = round(float(np.sqrt(r * (1 - r) / m)), 4)
        rows.append(row)
    if args.strata != "question":  # the spy sees the nested parts' replicates on question strata only
        for row in rows:
            if row["part"].startswith("nested") or row["part"] == "every part":
                for key in row:
                    if key != "part" and not key.startswith("shipped"):
                        row[key] = "-"
    notes = (f"{n} data sets of tests/compare/test_nulls.py's `identical` (seeds {seeds.start}-{seeds.stop - 1}), "
             f"strata={args.strata}, n_boot={args.n_boot}, nominal level 0.05; shipped = resample.split_interval, "
             f"percentile = the same replicates' percentile interval. {time.perf_counter() - start:.0f} s.")
    harness.report(__file__, rows, title="Split parts under the identical-policies, unequal-design null",
                   notes=notes, params=vars(args))


if __name__ == "__main__":
    main()
