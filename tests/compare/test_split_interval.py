"""The one interval rule of every split part (``resample.split_interval``) and the bands'
small-sample calibration, against their closed forms."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm
from scipy.stats import t as student

from mechanism.core.resample import simultaneous_band, split_interval


def test_split_interval_is_t_on_the_inflated_bootstrap_sd():
    rng = np.random.default_rng(3)
    reps = rng.normal(0.1, 0.02, size=(500, 3))
    est = np.array([0.1, 0.0, -0.2])
    lo, hi = split_interval(est, reps, 0.9, 12)
    half = student.ppf(0.95, 11) * math.sqrt(12 / 11) * reps.std(axis=0)
    assert lo == pytest.approx(est - half, abs=1e-15) and hi == pytest.approx(est + half, abs=1e-15)
    # wider than the normal interval on the plug-in sd by exactly that factor
    assert (hi - lo) / (2 * norm.ppf(0.95) * reps.std(axis=0)) == pytest.approx(
        [student.ppf(0.95, 11) / norm.ppf(0.95) * math.sqrt(12 / 11)] * 3)


def test_split_interval_edge_cases():
    reps = np.array([[np.nan, 1.0, 2.0], [np.nan, 1.0, 4.0], [np.nan, 1.0, np.nan]])
    lo, hi = split_interval(np.array([0.0, 1.0, 3.0]), reps, 0.95, 40)
    assert np.isnan(lo[0]) and np.isnan(hi[0])  # undefined in every replicate
    assert (lo[1], hi[1]) == (1.0, 1.0)  # never varies
    half = student.ppf(0.975, 39) * math.sqrt(40 / 39) * 1.0  # NaN replicate left out: sd of (2, 4)
    assert (lo[2], hi[2]) == pytest.approx((3.0 - half, 3.0 + half))
    with np.errstate(all="raise"):  # one question: an infinite interval, no warning
        lo1, hi1 = split_interval(0.5, np.array([0.2, 0.8]), 0.95, 1)
        assert (float(lo1), float(hi1)) == (-math.inf, math.inf)
        assert split_interval(0.5, np.array([0.5, 0.5]), 0.95, 1) == (0.5, 0.5)
    assert all(np.isnan(v) for v in split_interval(0.5, np.array([0.2, 0.8]), None, 10))
    with pytest.raises(ValueError, match="confidence level"):
        split_interval(0.5, np.array([0.2, 0.8]), 1.5, 10)


def test_band_calibration_keeps_the_tail_probability_on_a_t_distribution():
    rng = np.random.default_rng(4)
    reps = rng.normal(size=(3000, 5))
    lo, hi, c = simultaneous_band(np.zeros(5), reps, 0.95)
    lo20, hi20, c20 = simultaneous_band(np.zeros(5), reps, 0.95, n_questions=20)
    assert c20 == pytest.approx(student.ppf(norm.cdf(c), 19) * math.sqrt(20 / 19))
    assert hi20 / hi == pytest.approx(np.full(5, c20 / c))
    assert c20 / c > 1.1  # about 11 % wider at 20 questions; the calibration vanishes with Q
    assert simultaneous_band(np.zeros(5), reps, 0.95, n_questions=10**6)[2] == pytest.approx(c, rel=1e-5)
