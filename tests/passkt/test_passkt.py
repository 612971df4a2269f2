"""PASS@(k,T): checked against brute force over all k-subsets, human-eval's formula and the
closed form at k = n; monotone in k and T; t_cap mode; k > n errors; seeded intervals."""
from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.analysis.passkt import pass_at_kt, pass_at_kt_per_problem, ratio_table
from mechanism.core.errors import InputError


def make_runs(outcomes: dict[str, list[list[tuple[bool, int]]]], t_cap: list[int] | None = None) -> pl.DataFrame:
    """outcomes[arm][problem] = [(correct, n_rounds), ...]."""
    rows = []
    for arm, problems in outcomes.items():
        for p, samples in enumerate(problems):
            for s, (ok, rounds) in enumerate(samples):
                rows.append({"arm": arm, "question_id": f"q{p}", "sample_id": s,
                             "correct": ok, "n_rounds": rounds})
    frame = pl.DataFrame(rows, schema={"arm": pl.String, "question_id": pl.String, "sample_id": pl.Int64,
                                       "correct": pl.Boolean, "n_rounds": pl.Int64})
    if t_cap is not None:
        frame = frame.with_columns(pl.Series("t_cap", t_cap, dtype=pl.Int64))
    return frame


def random_runs(rng: np.random.Generator, n_problems: int, n: int, arms=("base", "rl")) -> pl.DataFrame:
    outcomes = {}
    for arm in arms:
        rate = rng.random(n_problems) * (rng.random(n_problems) < 0.8)
        outcomes[arm] = [[(bool(rng.random() < rate[p]), int(rng.integers(0, 6))) for _ in range(n)]
                         for p in range(n_problems)]
    return make_runs(outcomes)


def brute_force(samples: list[tuple[bool, int]], k: int, t: int) -> float:
    """Share of all k-subsets holding at least one success within t rounds."""
    hits = [ok and rounds <= t for ok, rounds in samples]
    subsets = list(itertools.combinations(range(len(hits)), k))
    return sum(any(hits[i] for i in sub) for sub in subsets) / len(subsets)


def human_eval(n: int, c: int, k: int) -> float:
    if n - c < k:
        return 1.0
    return 1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1))


def test_equals_brute_force_over_all_k_subsets():
    rng = np.random.default_rng(1)
    n, ks, ts = 9, [1, 2, 3, 5, 9], [0, 1, 2, 5]
    runs = random_runs(rng, 12, n)
    got = pass_at_kt(runs, k=ks, t=ts, ci=None)
    assert got.height == 2 * len(ks) * len(ts)
    for row in got.iter_rows(named=True):
        arm_runs = runs.filter(pl.col("arm") == row["arm"]).sort("question_id", "sample_id")
        per_problem = [brute_force(list(zip(g["correct"], g["n_rounds"])), row["k"], row["t"])
                       for _, g in arm_runs.group_by("question_id", maintain_order=True)]
        assert abs(row["pass_at_kt"] - np.mean(per_problem)) < 1e-12


def test_per_problem_equals_human_eval_on_random_data():
    rng = np.random.default_rng(2)
    n = 200
    runs = random_runs(rng, 40, n, arms=("a",))
    table = pass_at_kt_per_problem(runs, k=[1, 2, 4, 8, 16, 32, 64, 128, 200], t=[0, 2, 5])
    want = np.array([human_eval(r["n"], r["c"], r["k"]) for r in table.iter_rows(named=True)])
    assert np.abs(table["pass_at_kt"].to_numpy() - want).max() < 1e-12
    assert set(table["n"].unique()) == {n}
    assert table.columns == ["arm", "question_id", "n", "t", "c", "k", "pass_at_kt", "t_source", "metric"]


def test_ratio_table_matches_exact_binomials():
    from math import comb
    for n in (1, 5, 17, 64):
        ks = np.arange(1, n + 1)
        table = ratio_table(n, ks)
        exact = np.array([[comb(n - c, k) / comb(n, k) for k in ks] for c in range(n + 1)])
        assert np.abs(table - exact).max() < 1e-14


def test_pass_at_n_is_share_of_problems_solved_within_t():
    rng = np.random.default_rng(3)
    n = 16
    runs = random_runs(rng, 30, n)
    got = pass_at_kt(runs, k=[n], t=[0, 1, 3, 5], ci=None)
    solved = (runs.group_by("arm", "question_id")
              .agg(*[(pl.col("correct") & (pl.col("n_rounds") <= t)).any().alias(str(t)) for t in (0, 1, 3, 5)])
              .group_by("arm").agg(*[pl.col(str(t)).mean() for t in (0, 1, 3, 5)]))
    for row in got.iter_rows(named=True):
        want = solved.filter(pl.col("arm") == row["arm"])[str(row["t"])].item()
        assert row["pass_at_kt"] == pytest.approx(want, abs=1e-12)


def test_known_small_example_and_column_order():
    runs = make_runs({"a": [[(True, 1), (False, 2)], [(False, 0), (False, 3)]]})
    got = pass_at_kt(runs, k=[1, 2], t=[0, 1], ci=0.9, n_boot=200)
    assert got.columns == ["arm", "k", "t", "pass_at_kt", "ci_low", "ci_high", "interval", "n_problems",
                           "t_source", "metric"]
    assert got["pass_at_kt"].to_list() == [0.0, 0.25, 0.0, 0.5]
    assert got["t_source"].unique().to_list() == ["truncation"]
    assert got["n_problems"].unique().to_list() == [2]


def test_ci_none_needs_only_the_four_columns():
    runs = pl.DataFrame({"arm": ["a", "a"], "question_id": ["q", "q"], "correct": [True, False],
                         "n_rounds": [0, 0]})
    got = pass_at_kt(runs, k=[1], t=[0], ci=None)
    assert got.columns == ["arm", "k", "t", "pass_at_kt", "n_problems", "t_source", "metric"]
    assert got["pass_at_kt"].item() == 0.5


def test_k_larger_than_n_is_an_error_naming_the_problem():
    runs = make_runs({"a": [[(True, 0)] * 4, [(False, 0)] * 2, [(True, 1)] * 4]})
    with pytest.raises(InputError, match=r"k = 4 .* 2 samples .*question_id 'q1'"):
        pass_at_kt(runs, k=[1, 4], t=[0], ci=None)
    # k up to the smallest n is fine
    assert pass_at_kt(runs, k=[1, 2], t=[0], ci=None).height == 2


@pytest.mark.parametrize("bad", [dict(k=[]), dict(k=[0]), dict(t=[-1]), dict(k=[1.5]), dict(ci=1.5),
                                 dict(t_source="cap"), dict(k=[10**20]), dict(t=[10**20])])
def test_bad_arguments_are_input_errors(bad):
    runs = make_runs({"a": [[(True, 0)] * 2]})
    with pytest.raises(InputError):
        pass_at_kt(runs, **{"k": [1], "t": [0], **bad})


def test_null_round_count_is_an_error_not_a_failure():
    runs = make_runs({"a": [[(True, 0)] * 2]}).with_columns(pl.Series("n_rounds", [0, None], dtype=pl.Int64))
    with pytest.raises(InputError, match="null value in column `n_rounds`"):
        pass_at_kt(runs, k=[1], t=[0], ci=None)


def test_missing_column_is_named():
    runs = make_runs({"a": [[(True, 0)] * 2]}).drop("n_rounds")
    with pytest.raises(InputError, match="`n_rounds`"):
        pass_at_kt(runs, k=[1], t=[0])


def test_t_cap_mode_counts_episodes_run_under_each_cap():
    # q0: under cap 0 one of two succeeds; under cap 2 both succeed (one with 2 rounds).
    samples = [(False, 0), (True, 0), (True, 2), (True, 1), (False, 0), (False, 0), (False, 2), (True, 2)]
    caps = [0, 0, 2, 2, 0, 0, 2, 2]
    runs = make_runs({"a": [samples[:4], samples[4:]]}, t_cap=caps)
    got = pass_at_kt(runs, k=[1, 2], t=[0, 2], ci=None)
    assert got["t_source"].unique().to_list() == ["t_cap"]
    values = {(r["k"], r["t"]): r["pass_at_kt"] for r in got.iter_rows(named=True)}
    assert values[(1, 0)] == pytest.approx((0.5 + 0.0) / 2)
    assert values[(1, 2)] == pytest.approx((1.0 + 0.5) / 2)
    assert values[(2, 2)] == pytest.approx((1.0 + 1.0) / 2)
    # truncation ignores the cap when asked
    trunc = pass_at_kt(runs, k=[1], t=[0], ci=None, t_source="truncation")
    assert trunc["t_source"].item() == "truncation"
    assert trunc["pass_at_kt"].item() == pytest.approx((1 / 4 + 0) / 2)


def test_single_cap_for_all_episodes_means_truncation():
    runs = make_runs({"a": [[(True, 2), (False, 1)]]}, t_cap=[5, 5])
    got = pass_at_kt(runs, k=[1], t=[0, 2], ci=None)
    assert got["t_source"].unique().to_list() == ["truncation"]
    assert got["pass_at_kt"].to_list() == [0.0, 0.5]


def test_t_cap_mode_missing_depth_is_an_error():
    runs = make_runs({"a": [[(True, 0), (False, 1)]]}, t_cap=[0, 1])
    with pytest.raises(InputError, match="`t_cap` == 3"):
        pass_at_kt(runs, k=[1], t=[0, 3], ci=None)


def test_bootstrap_interval_covers_estimate_and_is_seeded():
    rng = np.random.default_rng(4)
    runs = random_runs(rng, 50, 8)
    a = pass_at_kt(runs, k=[1, 4, 8], t=[0, 5], ci=0.95, n_boot=300, random_state=7)
    b = pass_at_kt(runs, k=[1, 4, 8], t=[0, 5], ci=0.95, n_boot=300, random_state=7)
    c = pass_at_kt(runs, k=[1, 4, 8], t=[0, 5], ci=0.95, n_boot=300, random_state=8)
    assert a.equals(b)
    assert not a.equals(c)
    assert (a["ci_low"] <= a["pass_at_kt"]).all() and (a["pass_at_kt"] <= a["ci_high"]).all()
    assert (a["ci_high"] - a["ci_low"] > 0).all()
    # the point estimate does not depend on the bootstrap
    assert a["pass_at_kt"].equals(pass_at_kt(runs, k=[1, 4, 8], t=[0, 5], ci=None)["pass_at_kt"])


def test_bootstrap_matches_explicit_resampling_of_questions():
    from mechanism.core.resample import question_bootstrap_weights, stream
    rng = np.random.default_rng(5)
    runs = random_runs(rng, 20, 6, arms=("a",))
    got = pass_at_kt(runs, k=[2], t=[5], ci=0.8, n_boot=50, random_state=3, interval="percentile")
    per = pass_at_kt_per_problem(runs, k=[2], t=[5]).sort("question_id")["pass_at_kt"].to_numpy()
    weights = question_bootstrap_weights(20, 50, stream(3, "bootstrap"))  # the toolkit's stream policy
    reps = [np.repeat(per, w).mean() for w in weights]
    assert got["ci_low"].item() == pytest.approx(np.quantile(reps, 0.1), abs=1e-12)
    assert got["ci_high"].item() == pytest.approx(np.quantile(reps, 0.9), abs=1e-12)


def test_same_input_in_any_row_order_gives_same_output():
    rng = np.random.default_rng(6)
    runs = random_runs(rng, 15, 5)
    a = pass_at_kt(runs, k=[1, 5], t=[0, 3], n_boot=100)
    b = pass_at_kt(runs.sample(fraction=1.0, shuffle=True, seed=1), k=[1, 5], t=[0, 3], n_boot=100)
    assert a.equals(b)


def test_grouping_by_category():
    runs = make_runs({"a": [[(True, 0), (False, 0)], [(True, 0), (True, 0)]]}).with_columns(
        category=pl.when(pl.col("question_id") == "q0").then(pl.lit("bridge")).otherwise(pl.lit("comparison")))
    got = pass_at_kt(runs, k=[1], t=[0], ci=None, by=("arm", "category"))
    assert got.select("category", "pass_at_kt").rows() == [("bridge", 0.5), ("comparison", 1.0)]


@st.composite
def outcome_tables(draw):
    n = draw(st.integers(1, 7))
    n_problems = draw(st.integers(1, 5))
    problems = [[(draw(st.booleans()), draw(st.integers(0, 4))) for _ in range(n)] for _ in range(n_problems)]
    return n, make_runs({"a": problems})


@settings(max_examples=60, deadline=None)
@given(outcome_tables())
def test_monotone_in_k_and_t_and_bounded(data):
    n, runs = data
    ks = list(range(1, n + 1))
    ts = [0, 1, 2, 3, 4]
    got = pass_at_kt(runs, k=ks, t=ts, ci=None)
    grid = got.sort("k", "t")["pass_at_kt"].to_numpy().reshape(len(ks), len(ts))
    assert (grid >= -1e-15).all() and (grid <= 1 + 1e-15).all()
    assert (np.diff(grid, axis=0) >= -1e-12).all()  # more samples never hurt
    assert (np.diff(grid, axis=1) >= -1e-12).all()  # a larger budget never hurts


@settings(max_examples=60, deadline=None)
@given(outcome_tables(), st.integers(1, 7), st.integers(0, 4))
def test_property_equals_brute_force(data, k, t):
    n, runs = data
    k = min(k, n)
    got = pass_at_kt(runs, k=[k], t=[t], ci=None)["pass_at_kt"].item()
    per = [brute_force(list(zip(g["correct"], g["n_rounds"])), k, t)
           for _, g in runs.sort("question_id", "sample_id").group_by("question_id", maintain_order=True)]
    assert abs(got - np.mean(per)) < 1e-12
