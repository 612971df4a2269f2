"""Nearest-base-neighbour statistics on distinct points with counts equal the brute-force
search over every row (the search that grew with the square of the rows)."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import mechanism.analysis.neighbours as neighbours
from mechanism.analysis.compare import reweighting


def _runs(n_q: int, n: int) -> pl.DataFrame:
    arm = ["base"] * (n_q * n) + ["rl"] * (n_q * n)
    qid = [f"q{i // n:03d}" for i in range(n_q * n)] * 2
    return pl.DataFrame({"arm": arm, "question_id": qid, "correct": [bool(i % 3) for i in range(2 * n_q * n)]})


def _brute(coords: np.ndarray, is_t: np.ndarray, q: np.ndarray, n_q: int) -> dict[str, float]:
    """Every row against every base row: the definition, written out."""
    base, treat = coords[~is_t], coords[is_t]
    d_bb = np.sqrt(((base[:, None, :] - base[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(d_bb, np.inf)  # the nearest *other* base row (a duplicate is at 0)
    d_base = d_bb.min(axis=1)
    d_treat = np.sqrt(((treat[:, None, :] - base[None, :, :]) ** 2).sum(-1)).min(axis=1)
    threshold = np.quantile(d_base, 0.95)
    return {"nn_distance_base_to_base": d_base.mean(), "nn_distance_treated_to_base": d_treat.mean(),
            "nn_distance_ratio": d_treat.mean() / d_base.mean(), "far_share": (d_treat > threshold).mean(),
            "far_threshold_base_q95": threshold}


def _coords(rng: np.random.Generator, n_rows: int) -> np.ndarray:
    # mostly repeated points (as strategy space is), some held once, one shifted cluster
    palette = rng.normal(size=(25, 6))
    coords = palette[rng.integers(0, 25, n_rows)]
    lone = rng.random(n_rows) < 0.2
    coords[lone] = rng.normal(size=(lone.sum(), 6)) * 2.0
    return coords


# slow: numba compiles pynndescent
@pytest.mark.parametrize("exact_limit", [None, pytest.param(5, marks=pytest.mark.slow)])
def test_neighbour_statistics_equal_brute_force_over_rows(monkeypatch, exact_limit):
    if exact_limit is not None:  # force the approximate (pynndescent) search on a small input
        monkeypatch.setattr(neighbours, "EXACT_LIMIT", exact_limit)
    # (threshold and far share are compared on the exact search only)
    rng = np.random.default_rng(3)
    n_q, n = 30, 8
    runs = _runs(n_q, n)
    coords = _coords(rng, runs.height)
    coords[runs.height // 2:][:40] += 7.0  # some treated rows far from every base row
    rw = reweighting(runs, np.zeros(runs.height, int), base="base", treated="rl", n_boot=50,
                     n_permutations=0, coordinates=coords)
    got = dict(zip(rw.neighbours["quantity"], rw.neighbours["estimate"]))
    is_t = (runs["arm"] == "rl").to_numpy()
    q = np.array([int(s[1:]) for s in runs["question_id"]])
    want = _brute(coords, is_t, q, n_q)
    tol = 1e-9 if exact_limit is None else 0.03  # the approximate search may miss a nearest point
    for name, value in want.items():
        if exact_limit is not None and name in ("far_share", "far_threshold_base_q95"):
            continue
        assert got[name] == pytest.approx(value, rel=tol, abs=tol), name


def test_duplicated_base_points_are_at_distance_zero_and_signed_zero_is_one_point():
    runs = _runs(2, 2)
    coords = np.array([[0.0, 1.0], [-0.0, 1.0], [3.0, 0.0], [4.0, 0.0],   # base: a pair, two singles
                       [0.0, 1.0], [3.0, 0.5], [10.0, 0.0], [4.0, 0.0]])  # treated
    rw = reweighting(runs, np.zeros(8, int), base="base", treated="rl", ci=None, n_permutations=0,
                     coordinates=coords)
    got = dict(zip(rw.neighbours["quantity"], rw.neighbours["estimate"]))
    assert got["nn_distance_base_to_base"] == pytest.approx((0 + 0 + 1 + 1) / 4)
    assert got["nn_distance_treated_to_base"] == pytest.approx((0 + 0.5 + 6 + 0) / 4)


def test_treated_row_on_a_base_point_is_not_far_when_the_threshold_is_zero():
    # every base point repeats, so the base 95th percentile is exactly 0; a treated row on a
    # base point must be at exactly 0 (not at the ~1e-8 a dot-product distance leaves)
    runs = _runs(2, 2)
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=50), rng.normal(size=50)
    coords = np.array([a, a, b, b, a, b, b, b + 1.0])
    rw = reweighting(runs, np.zeros(8, int), base="base", treated="rl", ci=None, n_permutations=0,
                     coordinates=coords)
    got = dict(zip(rw.neighbours["quantity"], rw.neighbours["estimate"]))
    assert got["far_threshold_base_q95"] == 0.0
    assert got["far_share"] == 0.25
