"""Every statistic under two nulls: identical policies run under an unequal design (base 2-10,
treated 4-16 samples per question), and strategies moved between easy and hard questions when
success depends on the question only. Nothing may be significant much beyond its level; the
numbers each test allows are a little above the level so that fixed seeds do not make them
fragile, and far below what separate per-row intervals give (0.47-0.51 of data sets showing
some row, benchmarks/RESULTS.md)."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from mechanism.analysis.compare import reweighting
from mechanism.analysis.information import integration
from mechanism.core.schema import from_records, make_step


def identical(seed: int, n_q: int = 40, n_s: int = 5) -> tuple[pl.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    mix = rng.dirichlet(np.full(n_s, 2.0))
    rate = rng.uniform(0.2, 0.8, n_s)
    records, labels = [], []
    for arm, lo, hi in (("base", 2, 11), ("rl", 4, 17)):
        for q in range(n_q):
            ease = rng.normal(0, 0.5)
            for j in range(int(rng.integers(lo, hi))):
                s = int(rng.choice(n_s, p=mix))
                ok = rng.random() < 1 / (1 + np.exp(-(np.log(rate[s] / (1 - rate[s])) + ease)))
                ret = rng.random() < 0.5
                records.append({"arm": arm, "question_id": f"q{q:03d}", "sample_id": j, "question": "?",
                                "gold": ["no"] if q % 5 == 0 else ["Paris"], "answer": "x", "correct": bool(ok),
                                "n_rounds": 1,
                                "steps": [make_step(query="q", observation="Paris" if ret else "none")]})
                labels.append(s)
    return from_records(records), np.array(labels)


def easy_hard(seed: int, n_q: int = 50) -> tuple[pl.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95, n_q)
    records, labels = [], []
    for arm in ("base", "rl"):
        for q in range(n_q):
            mix = [1 / 3] * 3 if arm == "base" or p[q] <= 0.5 else [0.8, 0.1, 0.1]
            for j in range(8):
                labels.append(int(rng.choice(3, p=mix)))
                ret = rng.random() < p[q]
                records.append({"arm": arm, "question_id": f"q{q:03d}", "sample_id": j, "question": "?",
                                "gold": ["Paris"], "answer": "x", "correct": bool(rng.random() < p[q]),
                                "n_rounds": 1,
                                "steps": [make_step(query="q", observation="Paris" if ret else "none")]})
    return from_records(records), np.array(labels)


def _excludes_zero(low, high) -> bool:
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    ok = np.isfinite(low) & np.isfinite(high)
    return bool(((low[ok] > 1e-12) | (high[ok] < -1e-12)).any())


def _tally(world) -> dict[str, int]:
    counts: dict[str, int] = {}
    for seed in range(30):
        runs, labels = world(seed)
        rw = reweighting(runs, labels, base="base", treated="rl", n_boot=300, n_permutations=200, random_state=seed)
        ig = integration(runs, base="base", treated="rl", labels=labels, n_boot=300, random_state=seed)
        found = {name: _excludes_zero(*getattr(rw, f"{name}_ci")) for name in ("total", "composition", "within")}
        found["js"] = rw.permutation_p < 0.05
        t = rw.strategies
        found["strategy rows"] = any(_excludes_zero(t[f"{c}_ci_low"], t[f"{c}_ci_high"])
                                     for c in ("composition", "within"))
        found["strategy rows, within"] = _excludes_zero(t["within_ci_low"], t["within_ci_high"])
        for row in ig.split.iter_rows(named=True):
            found[f"split {row['part']}"] = _excludes_zero(row["ci_low"], row["ci_high"])
        nested = ["composition", "within", "within_retrieval", "within_integration", "within_parametric"]
        for row in ig.shift.filter(pl.col("quantity").is_in(nested)).iter_rows(named=True):
            found[f"nested {row['quantity']}"] = _excludes_zero(row["ci_low"], row["ci_high"])
        s = ig.strategy_shift
        found["strategy_shift"] = any(_excludes_zero(s[f"{c}_ci_low"], s[f"{c}_ci_high"]) for c in (
            "share_change", "composition", "within", "within_retrieval", "within_integration", "within_parametric"))
        found["strategy_shift, within parts"] = any(_excludes_zero(s[f"{c}_ci_low"], s[f"{c}_ci_high"]) for c in (
            "within", "within_retrieval", "within_integration"))
        for name, hit in found.items():
            counts[name] = counts.get(name, 0) + int(hit)
    return counts


#: Every split part's interval is ``resample.split_interval`` (t_{Q-1} on the plug-in bootstrap
#: sd, inflated by sqrt(Q/(Q-1))): over 400 fresh data sets of ``identical`` the parts miss 0 at
#: 0.051 together (the percentile interval, used before, at 0.066; within_parametric 0.058 against
#: 0.080), benchmarks/bench_null_nested.py. No part is exempt from the bound below.
#: In the easy/hard world the strategy mix *does* change (on easy questions): JS, shares and
#: each strategy's composition are truly non-zero there; only the totals and within parts are null.
NOT_NULL_WHEN_MOVED = {"js", "strategy rows", "strategy_shift"}


@pytest.mark.slow
@pytest.mark.parametrize("world", [identical, easy_hard], ids=["identical policies, unequal design",
                                                                "strategies moved between easy and hard"])
def test_nothing_is_significant_beyond_its_level(world):
    counts = _tally(world)
    null = {k: v for k, v in counts.items() if not (world is easy_hard and k in NOT_NULL_WHEN_MOVED)}
    # 30 data sets at 5 %: 1.5 expected; 6 or more would happen 0.5 % of the time at the level
    # itself. Families of rows (strategy rows, strategy_shift) are held to the same count.
    assert len(null) >= 13 and "nested within_parametric" in null
    assert max(null.values()) <= 5, null
    if world is easy_hard:  # the strategy mix did move: the permutation test sees it
        assert counts["js"] >= 25
