"""Reweighting: the exact Kitagawa split, its intervals, JS divergence, the permutation test."""
from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import jensenshannon

from mechanism.analysis.compare import (
    compare_arms,
    js_divergence,
    kitagawa_split,
    labels_from_table,
    permutation_test,
    query_sequence_keys,
    reweighting,
    weighted_correlation,
)
from mechanism.core.errors import InputError
from mechanism.core.schema import from_records, make_step


def _table(arms: list[str], qids: list[str], correct: list[bool],
           queries: list[list[str]] | None = None) -> pl.DataFrame:
    """Canonical table from parallel lists (sample ids numbered within arm and question)."""
    seen: dict[tuple[str, str], int] = {}
    records = []
    for i, (arm, q, c) in enumerate(zip(arms, qids, correct)):
        sid = seen.get((arm, q), 0)
        seen[(arm, q)] = sid + 1
        qs = queries[i] if queries is not None else []
        records.append({"arm": arm, "question_id": q, "sample_id": sid, "question": f"question {q}",
                        "gold": ["x"], "answer": "x" if c else "y", "correct": bool(c),
                        "n_rounds": len(qs), "steps": [make_step(query=s, observation="obs") for s in qs]})
    return from_records(records)


def _simulate(shares: dict[str, list[float]], rates: dict[str, list[float]], *, n_questions: int,
              n_samples: int, seed: int) -> tuple[pl.DataFrame, np.ndarray]:
    """Arms with given strategy shares and per-strategy success rates, plus a per-question
    difficulty shared by both arms (so questions matter, as in real data)."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0.0, 0.1, n_questions)
    arms, qids, correct, labels = [], [], [], []
    for arm in shares:
        p = np.asarray(shares[arm])
        r = np.asarray(rates[arm])
        for q in range(n_questions):
            s = rng.choice(len(p), size=n_samples, p=p)
            ok = rng.random(n_samples) < np.clip(r[s] + difficulty[q], 0.0, 1.0)
            arms += [arm] * n_samples
            qids += [f"q{q:04d}"] * n_samples
            correct += ok.tolist()
            labels += s.tolist()
    return _table(arms, qids, correct), np.asarray(labels)


# ------------------------------------------------------------------ the identity, exactly
@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["base", "rl"]), st.integers(0, 4), st.integers(-1, 4), st.booleans()),
                min_size=2, max_size=60))
def test_composition_plus_within_equals_total_on_random_tables(rows):
    arms = [r[0] for r in rows]
    qids = [f"q{r[1]}" for r in rows]
    # both arms present and sharing at least one question
    arms[0], arms[1] = "base", "rl"
    qids[0] = qids[1] = "q0"
    runs = _table(arms, qids, [r[3] for r in rows])
    rw = reweighting(runs, [r[2] for r in rows], base="base", treated="rl", n_boot=20, n_permutations=0,
                     allow_few_shared=True)  # the identity holds on any overlap
    assert abs(rw.composition + rw.within - rw.total) <= 1e-12
    strat = rw.strategies
    assert abs(strat["composition"].sum() - rw.composition) <= 1e-12
    assert abs(strat["within"].sum() - rw.within) <= 1e-12
    # the identity holds in every bootstrap replicate too
    reps = rw.replicates
    assert np.nanmax(np.abs(reps["composition_total"] + reps["within_total"] - reps["total"])) <= 1e-12


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6).flatmap(lambda s: st.tuples(
    *[st.lists(st.integers(0, 9), min_size=s, max_size=s) for _ in range(4)])))
def test_kitagawa_identity_on_arbitrary_counts(arrays):
    n_b, c_b, n_t, c_t = (np.asarray(a, dtype=float) for a in arrays)
    c_b, c_t = np.minimum(c_b, n_b), np.minimum(c_t, n_t)
    if n_b.sum() == 0 or n_t.sum() == 0:
        n_b[0] += 1
        n_t[-1] += 1
    out = kitagawa_split(n_b, c_b, n_t, c_t)
    assert abs(out["composition_total"] + out["within_total"] - out["total"]) <= 1e-12
    assert abs(out["total"] - (c_t.sum() / n_t.sum() - c_b.sum() / n_b.sum())) <= 1e-12
    # a strategy used by one arm only has no within part
    one_sided = (n_b == 0) ^ (n_t == 0)
    assert np.all(out["within"][one_sided] == 0.0)


def test_split_matches_a_hand_computation():
    # base: a 3 (2 right), b 1 (0 right); rl: a 1 (1 right), b 2 (1 right), c 1 (1 right; base never uses c)
    arms = ["base"] * 4 + ["rl"] * 4
    qids = ["q1", "q1", "q2", "q2", "q1", "q1", "q2", "q2"]
    labels = ["a", "a", "a", "b", "a", "b", "b", "c"]
    correct = [True, True, False, False, True, True, False, True]
    rw = reweighting(_table(arms, qids, correct), labels, base="base", treated="rl", n_boot=50, n_permutations=0,
                     strata="pooled")
    frame = rw.to_frame()
    assert frame["strata"].unique().to_list() == ["pooled"]  # labelled: a column, not a name suffix
    assert not frame["quantity"].str.contains("pooled").any()
    p_b = {"a": 3 / 4, "b": 1 / 4, "c": 0.0}
    p_t = {"a": 1 / 4, "b": 2 / 4, "c": 1 / 4}
    r_b = {"a": 2 / 3, "b": 0.0, "c": 1.0}  # c borrows rl's rate
    r_t = {"a": 1.0, "b": 0.5, "c": 1.0}
    comp = {s: (p_t[s] - p_b[s]) * (r_t[s] + r_b[s]) / 2 for s in "abc"}
    within = {s: (r_t[s] - r_b[s]) * (p_t[s] + p_b[s]) / 2 for s in "abc"}
    assert rw.total == pytest.approx(3 / 4 - 2 / 4, abs=1e-15)
    assert rw.composition == pytest.approx(sum(comp.values()), abs=1e-15)
    assert rw.within == pytest.approx(sum(within.values()), abs=1e-15)
    table = rw.strategies.sort("strategy")
    assert table["strategy"].to_list() == ["a", "b", "c"]
    assert table["composition"].to_list() == pytest.approx([comp[s] for s in "abc"], abs=1e-15)
    assert table["within"].to_list() == pytest.approx([within[s] for s in "abc"], abs=1e-15)
    assert table["success_base"].to_list()[:2] == pytest.approx([2 / 3, 0.0])
    assert table["success_base"].to_list()[2] is None  # undefined, shown as missing
    assert table["within"].to_list()[2] == 0.0
    assert rw.shared_mass == pytest.approx(3 / 4)
    assert rw.n_questions == 2 and rw.n_base == 4 and rw.n_treated == 4


def test_within_question_split_matches_a_hand_computation_over_question_strategy_strata():
    # the data of the test above, split over (question, strategy) strata: in q1 rl swaps one
    # a (right) for a b (right, where base never used b); in q2 one of base's wrong answers
    # becomes c (right; base never used c there), and rl never used a on q2. A cell one arm
    # never used is valued at that arm's own modelled rate (additive logit, fitted per arm),
    # never at the other arm's.
    from mechanism.analysis.compare import additive_logit

    arms = ["base"] * 4 + ["rl"] * 4
    qids = ["q1", "q1", "q2", "q2", "q1", "q1", "q2", "q2"]
    labels = ["a", "a", "a", "b", "a", "b", "b", "c"]
    correct = [True, True, False, False, True, True, False, True]
    rw = reweighting(_table(arms, qids, correct), labels, base="base", treated="rl", n_boot=50, n_permutations=0)
    assert rw.strata == "question"
    fit_b = additive_logit(np.array([[2., 0, 0], [1, 1, 0]]), np.array([[2., 0, 0], [0, 0, 0]]))
    fit_t = additive_logit(np.array([[1., 1, 0], [0, 1, 1]]), np.array([[1., 1, 0], [0, 0, 1]]))
    assert fit_b[0, 1] < 1.0 and fit_t[1, 0] > 0.0  # its own arm's values, not the other arm's 1 and 0
    strata = {  # (q, s): (p_b, r_b, p_t, r_t), shares of all trajectories with questions weighing 1/2
        ("q1", "a"): (0.5, 1.0, 0.25, 1.0), ("q1", "b"): (0.0, fit_b[0, 1], 0.25, 1.0),
        ("q2", "a"): (0.25, 0.0, 0.0, fit_t[1, 0]), ("q2", "b"): (0.25, 0.0, 0.25, 0.0),
        ("q2", "c"): (0.0, fit_b[1, 2], 0.25, 1.0)}
    comp = {k: (pt - pb) * (rt + rb) / 2 for k, (pb, rb, pt, rt) in strata.items()}
    within = {k: (rt - rb) * (pt + pb) / 2 for k, (pb, rb, pt, rt) in strata.items()}
    assert rw.composition == pytest.approx(sum(comp.values()), abs=1e-12)
    assert rw.within == pytest.approx(sum(within.values()), abs=1e-12)
    assert rw.composition + rw.within == pytest.approx(0.25, abs=1e-12)
    table = rw.strategies.sort("strategy")
    assert table["composition"].to_list() == pytest.approx(
        [sum(v for (q, st), v in comp.items() if st == s) for s in "abc"], abs=1e-12)
    # Manski: each one-arm cell at 0 and at 1; rl's empty cell lowers composition as its value rises
    low = {**strata, ("q1", "b"): (0.0, 0.0, 0.25, 1.0), ("q2", "c"): (0.0, 0.0, 0.25, 1.0),
           ("q2", "a"): (0.25, 0.0, 0.0, 1.0)}
    high = {**strata, ("q1", "b"): (0.0, 1.0, 0.25, 1.0), ("q2", "c"): (0.0, 1.0, 0.25, 1.0),
            ("q2", "a"): (0.25, 0.0, 0.0, 0.0)}
    bound = [sum((pt - pb) * (rt + rb) / 2 for pb, rb, pt, rt in cells.values()) for cells in (low, high)]
    assert rw.composition_bounds == pytest.approx(tuple(bound), abs=1e-12)
    assert rw.within_bounds == pytest.approx((0.25 - bound[1], 0.25 - bound[0]), abs=1e-12)
    assert bound[0] <= rw.composition <= bound[1]
    # base: q1 b and q2 c are rl-only; rl: q2 a is base-only (a quarter of each arm's mass)
    assert rw.one_arm_mass == pytest.approx({"base": 0.25, "rl": 0.5})


# ------------------------------------------------------------------ simulated arms
def test_pure_reweighting_is_all_composition():
    rates = [0.2, 0.5, 0.8]
    runs, labels = _simulate({"base": [0.5, 0.3, 0.2], "rl": [0.2, 0.3, 0.5]},
                             {"base": rates, "rl": rates}, n_questions=200, n_samples=8, seed=0)
    rw = reweighting(runs, labels, base="base", treated="rl", n_boot=400, n_permutations=200)
    expected_gain = (0.2 * 0.2 + 0.3 * 0.5 + 0.5 * 0.8) - (0.5 * 0.2 + 0.3 * 0.5 + 0.2 * 0.8)
    assert rw.within_ci[0] <= 0.0 <= rw.within_ci[1]
    assert rw.composition_ci[0] > 0.0
    assert rw.composition_ci[0] <= expected_gain <= rw.composition_ci[1]
    assert abs(rw.composition - rw.total) < 0.03
    assert rw.permutation_p < 0.01
    assert rw.alignment > 0.9  # share moved toward the strategies base executes best
    assert rw.shared_mass == pytest.approx(1.0)


def test_within_interval_covers_zero_at_about_its_level_under_pure_reweighting():
    rates = [0.2, 0.5, 0.8]
    covered = detected = 0
    n_seeds = 30
    for seed in range(n_seeds):
        runs, labels = _simulate({"base": [0.5, 0.3, 0.2], "rl": [0.2, 0.3, 0.5]},
                                 {"base": rates, "rl": rates}, n_questions=100, n_samples=6, seed=100 + seed)
        rw = reweighting(runs, labels, base="base", treated="rl", ci=0.95, n_boot=200, n_permutations=0,
                         random_state=seed)
        covered += rw.within_ci[0] <= 0.0 <= rw.within_ci[1]
        detected += rw.composition_ci[0] > 0.0
    assert covered / n_seeds >= 0.8  # nominal 0.95; P(coverage < 0.8) under 0.95 is about 1 %
    assert detected == n_seeds


def test_planted_within_strategy_change_is_detected():
    shares = [0.4, 0.4, 0.2]
    runs, labels = _simulate({"base": shares, "rl": shares},
                             {"base": [0.2, 0.4, 0.6], "rl": [0.2, 0.65, 0.6]},
                             n_questions=200, n_samples=8, seed=2)
    rw = reweighting(runs, labels, base="base", treated="rl", n_boot=400, n_permutations=0)
    assert rw.within_ci[0] > 0.0
    assert rw.composition_ci[0] <= 0.0 <= rw.composition_ci[1]
    row = rw.strategies.filter(pl.col("strategy") == 1).row(0, named=True)
    assert row["within_ci_low"] > 0.0
    assert row["within"] == pytest.approx(0.25 * 0.4, abs=0.05)


def test_permutation_test_holds_its_level_on_noise_only_arms():
    rejections = 0
    n_seeds = 40
    for seed in range(n_seeds):
        rng = np.random.default_rng(seed)
        n_q, n = 30, 6
        # questions differ in which strategies they invite; arms do not differ at all
        probs = rng.dirichlet(np.ones(4), size=n_q)
        q_idx = np.repeat(np.arange(n_q), 2 * n)
        treated = np.tile(np.r_[np.zeros(n, bool), np.ones(n, bool)], n_q)
        labels = np.concatenate([rng.choice(4, size=2 * n, p=probs[q]) for q in range(n_q)])
        p = permutation_test(q_idx, labels, treated, n_permutations=200, random_state=1000 + seed)
        rejections += p <= 0.05
    assert rejections / n_seeds <= 0.125  # expected 0.05; P(>= 6 of 40) is about 1.4 %


def test_permutation_test_has_power_and_its_p_value_is_bounded():
    rng = np.random.default_rng(0)
    n_q, n = 30, 6
    q_idx = np.repeat(np.arange(n_q), 2 * n)
    treated = np.tile(np.r_[np.zeros(n, bool), np.ones(n, bool)], n_q)
    labels = np.where(treated, rng.choice(3, size=treated.size, p=[0.2, 0.3, 0.5]),
                      rng.choice(3, size=treated.size, p=[0.5, 0.3, 0.2]))
    # same seed as the data on purpose: the test must draw its own stream, not the data's uniforms
    p = permutation_test(q_idx, labels, treated, n_permutations=200, random_state=0)
    assert p == pytest.approx(1 / 201)
    # identical arms within every question: every permutation ties, p = 1
    same = np.repeat(np.arange(n_q) % 3, 2 * n)
    assert permutation_test(q_idx, same, treated, n_permutations=50, random_state=0) == 1.0
    # same seed, same p-value
    p1 = permutation_test(q_idx, labels, treated, n_permutations=60, random_state=3)
    p2 = permutation_test(q_idx, labels, treated, n_permutations=60, random_state=3)
    assert p1 == p2


@pytest.mark.parametrize("weighting", ["question", "trajectory"])
def test_permutation_p_value_matches_exhaustive_enumeration(weighting):
    import itertools

    # three questions; every way of choosing each question's base rows is equally likely
    q_idx = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2])
    labels = np.array([0, 1, 1, 2, 0, 0, 2, 2, 1, 1, 0, 2])
    treated = np.array([0, 0, 1, 1, 0, 0, 0, 1, 1, 0, 1, 1], dtype=bool)
    groups = [np.flatnonzero(q_idx == q) for q in range(3)]
    sizes = [int((~treated[g]).sum()) for g in groups]

    n_b = np.array(sizes, dtype=float)
    n_t = np.array([g.size for g in groups]) - n_b

    def stat(base_rows: np.ndarray) -> float:
        if weighting == "trajectory":
            base = np.bincount(labels[base_rows], minlength=3).astype(float)
            return float(js_divergence(base, np.bincount(labels, minlength=3) - base))
        # question-weighted: each row weighs 1 / (its arm's rows in its question)
        is_base = np.isin(np.arange(labels.size), base_rows)
        w = np.where(is_base, 1 / n_b[q_idx], 1 / n_t[q_idx])
        base = np.bincount(labels[is_base], weights=w[is_base], minlength=3)
        other = np.bincount(labels[~is_base], weights=w[~is_base], minlength=3)
        return float(js_divergence(base, other))

    observed = stat(np.flatnonzero(~treated))
    values = [stat(np.concatenate(choice)) for choice in itertools.product(
        *[[np.array(c) for c in itertools.combinations(g, k)] for g, k in zip(groups, sizes)])]
    exact = float(np.mean(np.asarray(values) >= observed - 1e-12))
    p = permutation_test(q_idx, labels, treated, n_permutations=20000, random_state=0, weighting=weighting)
    assert abs(p - exact) < 0.015  # Monte Carlo error sd about 0.0035


def test_permutation_keeps_rows_inside_their_question():
    # each question holds one strategy only: no within-question permutation can change anything,
    # even though the arms' pooled distributions differ (arm 'rl' answers other questions more often)
    q_idx = np.array([0, 0, 0, 1, 1, 1, 1])
    treated = np.array([False, True, True, False, True, True, True])
    labels = np.array([0, 0, 0, 1, 1, 1, 1])
    assert permutation_test(q_idx, labels, treated, n_permutations=100, random_state=0) == 1.0


# ------------------------------------------------------------------ closed forms
def test_js_divergence_closed_forms():
    assert js_divergence(np.array([1.0, 0.0]), np.array([0.0, 1.0])) == pytest.approx(1.0)
    h = lambda x: -sum(v * math.log2(v) for v in x if v > 0)  # noqa: E731
    # JS = H(M) - (H(P) + H(Q)) / 2
    assert js_divergence(np.array([0.5, 0.5]), np.array([1.0, 0.0])) == pytest.approx(h([0.75, 0.25]) - 0.5)
    rng = np.random.default_rng(0)
    for _ in range(20):
        p, q = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
        assert js_divergence(p, q) == pytest.approx(jensenshannon(p, q, base=2) ** 2, abs=1e-12)
    assert js_divergence(np.array([3.0, 1.0]), np.array([6.0, 2.0])) == pytest.approx(0.0, abs=1e-15)


def test_reported_js_divergence_is_that_of_the_reported_shares():
    runs, labels = _simulate({"base": [0.6, 0.4], "rl": [0.3, 0.7]}, {"base": [0.3, 0.6], "rl": [0.3, 0.6]},
                             n_questions=40, n_samples=5, seed=4)
    rw = reweighting(runs, labels, base="base", treated="rl", n_boot=100, n_permutations=0)
    t = rw.strategies
    expected = jensenshannon(t["share_base"].to_numpy(), t["share_treated"].to_numpy(), base=2) ** 2
    assert rw.js_divergence == pytest.approx(expected, abs=1e-12)
    assert rw.js_divergence_ci[0] <= rw.js_divergence <= rw.js_divergence_ci[1]


def test_weighted_correlation_matches_numpy():
    rng = np.random.default_rng(1)
    x, y, w = rng.normal(size=12), rng.normal(size=12), rng.random(12)
    cov = np.cov(x, y, aweights=w)
    assert weighted_correlation(x, y, w) == pytest.approx(cov[0, 1] / math.sqrt(cov[0, 0] * cov[1, 1]))
    assert math.isnan(float(weighted_correlation(x[:1], y[:1], w[:1])))
    assert math.isnan(float(weighted_correlation(x, np.ones(12), w)))
    # zero weights drop entries
    w2 = w.copy()
    w2[:4] = 0
    assert weighted_correlation(x, y, w2) == pytest.approx(float(weighted_correlation(x[4:], y[4:], w[4:])))


def test_alignment_sign_follows_where_share_moves():
    rates = [0.1, 0.4, 0.7, 0.9]
    toward_good = {"base": [0.4, 0.3, 0.2, 0.1], "rl": [0.1, 0.2, 0.3, 0.4]}
    toward_bad = {"base": [0.1, 0.2, 0.3, 0.4], "rl": [0.4, 0.3, 0.2, 0.1]}
    for shares, sign in ((toward_good, 1), (toward_bad, -1)):
        runs, labels = _simulate(shares, {"base": rates, "rl": rates}, n_questions=100, n_samples=8, seed=5)
        rw = reweighting(runs, labels, base="base", treated="rl", n_boot=200, n_permutations=0)
        assert sign * rw.alignment > 0.8
        assert sign * rw.alignment_ci[0] > 0 if sign > 0 else rw.alignment_ci[1] < 0


def test_alignment_is_undefined_with_fewer_than_three_shared_strategies():
    runs, labels = _simulate({"base": [0.6, 0.4], "rl": [0.3, 0.7]}, {"base": [0.3, 0.6], "rl": [0.3, 0.6]},
                             n_questions=30, n_samples=4, seed=11)
    rw = reweighting(runs, labels, base="base", treated="rl", n_boot=50, n_permutations=0)
    assert math.isnan(rw.alignment) and math.isnan(rw.alignment_ci[0])
    assert abs(rw.composition + rw.within - rw.total) <= 1e-12


# ------------------------------------------------------------------ outliers, absent strategies
def test_outliers_stay_in_the_split_but_not_in_shared_mass():
    arms = ["base"] * 4 + ["rl"] * 4
    qids = ["q1"] * 8
    labels = [0, 0, 1, -1, 0, 2, -1, -1]
    correct = [True, False, True, False, True, True, False, True]
    rw = reweighting(_table(arms, qids, correct), labels, base="base", treated="rl", n_boot=30, n_permutations=0)
    assert rw.strategies["strategy"].to_list() == [-1, 0, 1, 2]
    assert abs(rw.composition + rw.within - rw.total) <= 1e-12
    assert rw.shared_mass == pytest.approx(1 / 4)  # only strategy 0 is shared; strategy 2 is new
    assert rw.strategies["n_base"].sum() == 4 and rw.strategies["n_treated"].sum() == 4


def test_questions_answered_by_one_arm_are_left_out_and_said_so():
    arms = ["base", "base", "rl", "rl", "rl"]
    qids = ["q1", "q2", "q1", "q1", "q3"]
    rw = reweighting(_table(arms, qids, [True, False, True, False, True]), [0, 0, 0, 1, 1],
                     base="base", treated="rl", n_boot=10, n_permutations=0, allow_few_shared=True)
    assert rw.n_questions == 1 and rw.n_base == 1 and rw.n_treated == 2
    assert rw.notes and "2 question(s)" in rw.notes[0]


# ------------------------------------------------------------------ determinism
def test_same_seed_same_output_and_other_seed_other_intervals():
    runs, labels = _simulate({"base": [0.5, 0.5], "rl": [0.3, 0.7]}, {"base": [0.3, 0.6], "rl": [0.3, 0.7]},
                             n_questions=50, n_samples=4, seed=6)
    a = reweighting(runs, labels, base="base", treated="rl", n_boot=200, n_permutations=100, random_state=7)
    b = reweighting(runs, labels, base="base", treated="rl", n_boot=200, n_permutations=100, random_state=7)
    c = reweighting(runs, labels, base="base", treated="rl", n_boot=200, n_permutations=100, random_state=8)
    assert a.summary().equals(b.summary())
    assert a.strategies.equals(b.strategies)
    assert a.total == c.total and a.composition_ci != c.composition_ci
    json.dumps(a.to_dict())  # JSON-ready
    no_ci = reweighting(runs, labels, base="base", treated="rl", ci=None, n_permutations=0)
    assert no_ci.total == a.total and math.isnan(no_ci.total_ci[0])


# ------------------------------------------------------------------ queries and neighbours
def test_unique_query_sequences_and_overlap_with_base():
    arms = ["base"] * 3 + ["rl"] * 3 + ["base"] * 2 + ["rl"] * 2
    qids = ["q1"] * 6 + ["q2"] * 4
    queries = [["A b", "c"], ["a  B", "c"], ["x"],  # base q1: 2 distinct (case/space folded)
               ["a b", "c"], ["z"], ["z"],          # rl q1: 2 distinct, 1 of 3 trajectories in base
               [], ["y"],                           # base q2: 2 distinct (no search counts)
               [], []]                              # rl q2: 1 distinct, both in base
    runs = _table(arms, qids, [True] * 10, queries)
    keys = query_sequence_keys(runs)
    assert keys[0] == keys[1] == keys[3] and keys[0] != keys[2] and keys[6] == ""
    rw = reweighting(runs, np.zeros(10, dtype=int), base="base", treated="rl", n_boot=50, n_permutations=0)
    table = {r["arm"]: r for r in rw.query_sequences.iter_rows(named=True)}
    assert table["base"]["unique_per_problem"] == pytest.approx((2 + 2) / 2)
    assert table["rl"]["unique_per_problem"] == pytest.approx((2 + 1) / 2)
    # design rule: mean over questions of the share repeating a base sequence (1/3 and 2/2)
    assert table["rl"]["overlap_with_base"] == pytest.approx((1 / 3 + 2 / 2) / 2)
    assert table["rl"]["overlap_distinct"] == pytest.approx((1 + 1) / 3)
    assert table["base"]["overlap_with_base"] is None
    q = rw.to_frame().filter(pl.col("quantity") == "query_overlap_with_base")
    assert q["estimate"][0] == pytest.approx(2 / 3) and q["arm"][0] == "rl"
    per_arm = rw.to_frame().filter(pl.col("quantity") == "unique_query_sequences")
    assert dict(per_arm.select("arm", "estimate").iter_rows()) == pytest.approx({"base": 2.0, "rl": 1.5})
    pooled = reweighting(runs, np.zeros(10, dtype=int), base="base", treated="rl", n_boot=50, n_permutations=0,
                         weighting="trajectory")
    q = pooled.to_frame().filter((pl.col("quantity") == "query_overlap_with_base")
                                 & (pl.col("weighting") == "trajectory"))
    assert q["estimate"][0] == pytest.approx((1 + 2) / 5)


def test_nearest_base_neighbour_distances_separate_reweighting_from_replacement():
    rng = np.random.default_rng(0)
    n_q, n = 40, 5
    base_xy = rng.normal(size=(n_q * n, 2))
    arms = ["base"] * (n_q * n) + ["rl"] * (n_q * n)
    qids = [f"q{i // n}" for i in range(n_q * n)] * 2
    runs = _table(arms, qids, [True] * (2 * n_q * n))
    labels = np.zeros(2 * n_q * n, dtype=int)
    same = np.vstack([base_xy, rng.normal(size=(n_q * n, 2))])
    moved = np.vstack([base_xy, rng.normal(size=(n_q * n, 2)) + 10.0])
    near = reweighting(runs, labels, base="base", treated="rl", n_boot=100, n_permutations=0, coordinates=same)
    far = reweighting(runs, labels, base="base", treated="rl", n_boot=100, n_permutations=0, coordinates=moved)
    get = lambda rw, name: rw.neighbours.filter(pl.col("quantity") == name).row(0, named=True)  # noqa: E731
    assert get(near, "far_share")["estimate"] < 0.15
    assert get(far, "far_share")["estimate"] == 1.0
    assert get(near, "nn_distance_ratio")["ci_low"] < 2.0 < get(far, "nn_distance_ratio")["ci_low"]
    with pytest.raises(InputError, match="coordinates"):
        reweighting(runs, labels, base="base", treated="rl", coordinates=same[:5])


# ------------------------------------------------------------------ inputs
def test_bad_inputs_raise_one_line_errors():
    runs = _table(["base", "rl"], ["q1", "q1"], [True, False])
    with pytest.raises(InputError, match="`labels`"):
        reweighting(runs, [0], base="base", treated="rl")
    with pytest.raises(InputError, match="`labels`"):
        reweighting(runs, [0.5, 1.0], base="base", treated="rl")
    with pytest.raises(InputError, match="`treated`"):
        reweighting(runs, [0, 1], base="base", treated="sft")
    with pytest.raises(InputError, match="question_id"):
        reweighting(_table(["base", "rl"], ["q1", "q2"], [True, False]), [0, 1], base="base", treated="rl")
    with pytest.raises(InputError, match="correct"):
        reweighting(runs.drop("correct"), [0, 1], base="base", treated="rl")


def test_labels_from_a_table_are_aligned_by_key():
    runs = _table(["base", "base", "rl"], ["q1", "q2", "q1"], [True, False, True])
    table = pl.DataFrame({"arm": ["rl", "base", "base"], "question_id": ["q1", "q2", "q1"],
                          "sample_id": [0, 0, 0], "strategy": [7, 5, 3]})
    assert labels_from_table(runs, table).tolist() == [3, 5, 7]
    with pytest.raises(InputError, match="no label"):
        labels_from_table(runs, table.head(2))
    with pytest.raises(InputError, match="`strategy`"):
        labels_from_table(runs, table.drop("strategy"))
    # a repeated row is harmless; a trajectory with two different labels is refused, not resolved silently
    assert labels_from_table(runs, pl.concat([table, table.head(1)])).tolist() == [3, 5, 7]
    clash = pl.concat([table, table.head(1).with_columns(pl.lit(9, dtype=pl.Int64).alias("strategy"))])
    with pytest.raises(InputError, match="conflicting labels"):
        labels_from_table(runs, clash)
    # a malformed label table is an InputError, not whatever polars or numpy raise
    with pytest.raises(InputError, match="`sample_id`"):
        labels_from_table(runs, table.with_columns(pl.col("sample_id").cast(pl.String) + "x"))
    with pytest.raises(InputError, match="type List"):
        labels_from_table(runs, table.with_columns(pl.col("strategy").cast(pl.String).str.split("")))
    with pytest.raises(InputError, match="nested"):
        reweighting(runs, pl.Series([[1], [2], [3]]), base="base", treated="rl")


def test_negative_resampling_counts_are_refused():
    runs = _table(["base", "rl"], ["q1", "q1"], [True, False])
    with pytest.raises(InputError, match="n_permutations"):
        reweighting(runs, [0, 1], base="base", treated="rl", n_permutations=-3)
    with pytest.raises(InputError, match="n_boot"):
        reweighting(runs, [0, 1], base="base", treated="rl", n_boot=-1)


def test_compare_arms_returns_one_long_table():
    rates = [0.2, 0.7]
    runs, labels = _simulate({"base": [0.5, 0.5], "rl": [0.2, 0.8], "sft": [0.5, 0.5]},
                             {"base": rates, "rl": rates, "sft": rates}, n_questions=30, n_samples=4, seed=9)
    result = compare_arms(runs, labels, base="base", n_boot=50, n_permutations=50)
    table = result.to_frame()
    assert table["treated"].unique().sort().to_list() == ["rl", "sft"]
    assert table.columns[:6] == ["base", "treated", "arm", "weighting", "strata", "ci_level"]
    assert table.columns[-4:] == ["quantity", "estimate", "ci_low", "ci_high"] and "detectable" in table.columns
    assert [rw.treated for rw in result.reweightings] == ["rl", "sft"] and result.tables()["estimates"].equals(table)
    assert result.verdict().startswith("rl vs base") and "\n" not in repr(result)
    one = reweighting(runs, labels, base="base", treated="sft", n_boot=50, n_permutations=50)
    got = table.filter((pl.col("treated") == "sft") & (pl.col("quantity") == "total"))["estimate"][0]
    assert got == one.total
    # two treated arms: each comparison at 1 - 0.05 / 2, so the two hold together at 0.95
    assert table["ci_level"].unique().to_list() == [0.975]
    adjusted = reweighting(runs, labels, base="base", treated="sft", ci=0.975, n_boot=50, n_permutations=50)
    row = table.filter((pl.col("treated") == "sft") & (pl.col("quantity") == "total")).row(0, named=True)
    assert (row["ci_low"], row["ci_high"]) == adjusted.total_ci
    assert adjusted.total_ci[1] - adjusted.total_ci[0] >= one.total_ci[1] - one.total_ci[0]
    plain = compare_arms(runs, labels, base="base", n_boot=50, n_permutations=0, adjust="none").to_frame()
    assert plain["ci_level"].unique().to_list() == [0.95]


def test_cli_outputs_keep_arms_that_sanitise_alike_apart(tmp_path):
    """Arm names become folder names; two arms whose names sanitise alike get distinct hashed folders."""
    from mechanism._cli.reweighting import write_outputs

    runs = _table(["base", "base", "rl/a", "rl/a", "rl_a", "rl_a"], ["q1", "q2"] * 3,
                  [True, False, True, True, False, True])
    write_outputs(runs, [0, 1, 0, 1, 0, 1], tmp_path, base="base", n_boot=10, n_permutations=0,
                  figures=False)
    folders = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert len(folders) == 2 and all(f.startswith("rl_a-") and f.endswith("_vs_base") for f in folders)
    assert sorted(pl.read_csv(tmp_path / "reweighting_summary.csv")["treated"].unique().to_list()) == ["rl/a", "rl_a"]
