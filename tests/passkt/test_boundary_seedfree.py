"""The boundary test does not move with the seed, the solved sets are nested in T and the
PASS@(1,T) split adds up on the same episodes as its total, with unequal samples per arm."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from mechanism.analysis.boundaries import boundary, permutation_p_value, solved_probability


def unequal(seed: int = 0, n_q: int = 100, n_base: int = 4, n_treated: int = 32) -> pl.DataFrame:
    """The issue's data set: 100 questions, base 4 and treated 32 samples, treated a little better."""
    rng = np.random.default_rng(seed)
    p = rng.beta(0.4, 2.0, n_q)
    frames = []
    for arm, n, lift in (("base", n_base, 0.0), ("rl", n_treated, 0.05)):
        ok = rng.random((n_q, n)) < np.clip(p + lift, 0, 1)[:, None]
        frames.append(pl.DataFrame({"arm": arm, "question_id": np.repeat([f"q{i:03d}" for i in range(n_q)], n),
                                    "sample_id": np.tile(np.arange(n), n_q), "correct": ok.reshape(-1),
                                    "n_rounds": rng.integers(0, 4, n_q * n)}))
    return pl.concat(frames)


def test_p_values_over_seeds_zero_to_four_agree_within_monte_carlo_error():
    runs = unequal()
    results = [boundary(runs, base="base", treated="rl", t=[1, 3], k=[1, 2, 4], n_boot=50, random_state=s)
               for s in range(5)]
    p = np.array([r.tests.sort("t")["p_value"].to_numpy() for r in results])  # (seeds, T)
    assert (p.max(axis=0) - p.min(axis=0)).max() <= 0.02
    # everything but the p-values is the same whatever the seed: the judged subsample has no seed
    for r in results[1:]:
        assert r.problems.equals(results[0].problems)
        assert r.tests.drop("p_value", "p_holm", "expansion", "contraction", "verdict").equals(
            results[0].tests.drop("p_value", "p_holm", "expansion", "contraction", "verdict"))


def test_solved_sets_are_nested_in_t_and_the_split_adds_up_with_unequal_samples():
    runs = unequal(seed=3, n_q=60, n_base=3, n_treated=10)
    b = boundary(runs, base="base", treated="rl", t=[0, 1, 2, 3], k=[1, 2], n_boot=50)
    wide = b.problems.sort("question_id", "t")
    for arm in ("base_solved", "treated_solved"):
        per_q = wide.group_by("question_id", maintain_order=True).agg(pl.col(arm))[arm].to_list()
        assert all(all(a <= b for a, b in zip(s, s[1:])) for s in per_q)  # once solved, solved at larger T
        judged = wide.group_by("question_id", maintain_order=True).agg(
            pl.col("c_base_judged" if arm == "base_solved" else "c_treated_judged"))
        assert all(all(a <= b for a, b in zip(s, s[1:])) for s in judged.to_series(1).to_list())
    assert (wide["c_base_judged"] <= wide["budget"]).all() and (wide["c_treated_judged"] <= wide["budget"]).all()
    for tv in (0, 1, 2, 3):
        split = {r["component"]: r["value"] for r in b.split.filter(pl.col("t") == tv).iter_rows(named=True)}
        assert split["total"] == pytest.approx(split["efficiency"] + split["expansion"] - split["loss"], abs=1e-12)
        part = wide.filter(pl.col("t") == tv)
        judged_total = ((part["c_treated_judged"] - part["c_base_judged"]) / part["budget"]).mean()
        assert split["total"] == pytest.approx(judged_total, abs=1e-12)


def test_the_issues_one_question_case_adds_up():
    # base 1 success in 4, rl 0 in 2: the split's total and parts come from the same 2 + 2 episodes
    runs = pl.DataFrame({"arm": ["base"] * 4 + ["rl"] * 2, "question_id": ["q"] * 6,
                         "sample_id": [0, 1, 2, 3, 0, 1], "correct": [True, False, False, False, False, False],
                         "n_rounds": [1] * 6})
    b = boundary(runs, base="base", treated="rl", t=[1], k=[1], n_boot=20)
    split = {r["component"]: r["value"] for r in b.split.iter_rows(named=True)}
    assert split["total"] == pytest.approx(split["efficiency"] + split["expansion"] - split["loss"], abs=1e-15)
    row = b.problems.row(0, named=True)
    assert row["budget"] == 2 and split["total"] == -row["c_base_judged"] / 2


def test_permutation_p_value_matches_the_exact_null_distribution():
    # three questions small enough to enumerate the within-question permutation null exactly
    from itertools import product

    from scipy.stats import hypergeom
    n_b, c_b, n_t, c_t = np.array([2, 3, 2]), np.array([0, 1, 2]), np.array([4, 3, 5]), np.array([3, 2, 2])
    m = np.minimum(n_b, n_t)
    observed = (solved_probability(n_t, c_t, m) - solved_probability(n_b, c_b, m)).sum()
    cc, nn = c_b + c_t, n_b + n_t
    supports = [range(max(0, cc[q] - n_t[q]), min(n_b[q], cc[q]) + 1) for q in range(3)]
    ge = le = 0.0
    for xs in product(*supports):
        x = np.array(xs)
        prob = np.prod([hypergeom.pmf(x[q], nn[q], cc[q], n_b[q]) for q in range(3)])
        stat = (solved_probability(n_t, cc - x, m) - solved_probability(n_b, x, m)).sum()
        ge += prob * (stat >= observed - 1e-12)
        le += prob * (stat <= observed + 1e-12)
    exact = min(1.0, 2 * min(ge, le))
    got = permutation_p_value(n_b, c_b, n_t, c_t, m, 200_000, np.random.default_rng(1))
    assert got == pytest.approx(exact, abs=0.006)
