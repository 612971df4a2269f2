"""The Wilson-type PASS@(k,T) interval below 30 problems: Wilson's score interval on
the problems' effective sample size with t_{P-1}, and its degenerate groups."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy.stats import t as student

from mechanism.analysis.passkt import estimate_pass, wilson_interval


def _runs(per_problem: list[list[bool]]) -> pl.DataFrame:
    rows = [{"arm": "a", "question_id": f"q{q}", "sample_id": s, "correct": ok, "n_rounds": 1}
            for q, samples in enumerate(per_problem) for s, ok in enumerate(samples)]
    return pl.DataFrame(rows)


def test_all_failed_or_all_solved_is_wilson_on_the_problems_not_a_point():
    crit2 = student.ppf(0.975, 5) ** 2
    lo, hi = wilson_interval(estimate_pass(_runs([[False] * 4] * 6), [1], [1], ci=None), 0.95)
    assert (float(lo[0, 0, 0]), float(hi[0, 0, 0])) == pytest.approx((0.0, crit2 / (6 + crit2)))
    lo, hi = wilson_interval(estimate_pass(_runs([[True] * 4] * 6), [1], [1], ci=None), 0.95)
    assert (float(lo[0, 0, 0]), float(hi[0, 0, 0])) == pytest.approx((6 / (6 + crit2), 1.0))


def test_one_problem_gets_the_unit_interval_and_equal_values_a_point():
    lo, hi = wilson_interval(estimate_pass(_runs([[True, False]]), [1], [1], ci=None), 0.95)
    assert (float(lo[0, 0, 0]), float(hi[0, 0, 0])) == (0.0, 1.0)
    lo, hi = wilson_interval(estimate_pass(_runs([[True, False]] * 5), [1], [1], ci=None), 0.95)
    assert (float(lo[0, 0, 0]), float(hi[0, 0, 0])) == pytest.approx((0.5, 0.5))


def test_the_score_interval_solves_its_quadratic_and_stays_inside_zero_one():
    rng = np.random.default_rng(8)
    per = [[bool(v) for v in rng.random(8) < p] for p in (0.05, 0.1, 0.0, 0.3, 0.9, 0.2, 0.15)]
    est = estimate_pass(_runs(per), [1, 2], [1], ci=None)
    lo, hi = wilson_interval(est, 0.9)
    values = est.values.reshape(len(per), -1)
    for j in range(values.shape[1]):
        m, se = values[:, j].mean(), values[:, j].std(ddof=1) / np.sqrt(len(per))
        z2 = student.ppf(0.95, len(per) - 1) ** 2 * se ** 2 / (m * (1 - m))  # z^2 / n_eff
        roots = sorted(np.roots([1 + z2, -(2 * m + z2), m * m]).real)
        assert (lo.reshape(-1)[j], hi.reshape(-1)[j]) == pytest.approx(roots, abs=1e-12)
        assert 0.0 <= roots[0] < m < roots[1] <= 1.0


def test_auto_uses_wilson_at_the_bounds_even_with_many_problems():
    import mechanism as mx

    rng = np.random.default_rng(1)
    per = [[bool(v) for v in rng.random(4) < 0.6] for _ in range(40)]
    per = [s if any(s) else [True] + s[1:] for s in per]  # every problem solved at least once
    got = mx.pass_at_kt(_runs(per), k=[1, 4], t=[1], n_boot=100).sort("k")
    assert got["interval"].to_list() == ["percentile", "wilson"]  # PASS@4 of 4 samples: all 1
    crit2 = student.ppf(0.975, 39) ** 2
    assert (got["ci_low"][1], got["ci_high"][1]) == pytest.approx((40 / (40 + crit2), 1.0))
    plain = mx.pass_at_kt(_runs(per), k=[4], t=[1], n_boot=100, interval="percentile")
    assert (plain["ci_low"].item(), plain["ci_high"].item()) == (1.0, 1.0)  # what auto avoids
