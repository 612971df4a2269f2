"""The Kitagawa split on question x strategy strata: success that depends on the question only
is neither composition nor execution, however the arms move strategies between easy and hard
questions (Simpson's paradox in the pooled form)."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from mechanism.analysis.compare import reweighting


def _rows(arm: str, q: str, strategy: str, n: int, wins: int) -> list[dict]:
    return [{"arm": arm, "question_id": q, "sample_id": i, "correct": i < wins, "strategy": strategy}
            for i in range(n)]


def minimal_case() -> tuple[pl.DataFrame, list[str]]:
    """Success 0.9 on the easy question, 0.1 on the two hard ones, for every strategy and arm;
    rl uses b on the hard questions and a on the easy one, base mixes them half and half."""
    rows = []
    for q, rate in (("easy", 0.9), ("hard1", 0.1), ("hard2", 0.1)):
        wins = round(10 * rate)
        rows += _rows("base", q, "a", 10, wins) + _rows("base", q, "b", 10, wins)
        rows += _rows("rl", q, "a" if q == "easy" else "b", 20, 2 * wins)
    frame = pl.DataFrame(rows).with_columns(
        sample_id=pl.int_range(pl.len()).over("arm", "question_id"))
    return frame.drop("strategy"), frame["strategy"].to_list()


def test_minimal_case_is_zero_on_strata_and_simpson_in_the_pooled_form():
    runs, labels = minimal_case()
    rw = reweighting(runs, labels, base="base", treated="rl", n_boot=200, n_permutations=0)
    assert rw.total == pytest.approx(0.0, abs=1e-12)
    assert abs(rw.composition) < 0.02 and abs(rw.within) < 0.02
    assert rw.composition + rw.within == pytest.approx(rw.total, abs=1e-12)
    pooled = reweighting(runs, labels, base="base", treated="rl", n_boot=200, n_permutations=0, strata="pooled")
    # the pooled form reads the question mix as execution: within +0.067, composition -0.067
    assert pooled.within == pytest.approx(0.2 / 3, abs=1e-12)
    assert pooled.composition == pytest.approx(-0.2 / 3, abs=1e-12)
    within = pooled.to_frame().filter(pl.col("quantity") == "within")
    assert within["strata"].to_list() == ["pooled"] and within["estimate"][0] == pytest.approx(pooled.within)
    assert any("pooled" in note for note in pooled.notes)


def smooth_case(seed: int, n_q: int = 60, n: int = 8) -> tuple[pl.DataFrame, np.ndarray]:
    """Success depends on the question only (difficulty uniform); base picks among three
    strategies at random, rl prefers strategy 0 on easy questions and mixes on hard ones."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95, n_q)
    rows, labels = [], []
    for arm in ("base", "rl"):
        for q in range(n_q):
            mix = np.full(3, 1 / 3) if arm == "base" else (
                np.array([0.8, 0.1, 0.1]) if p[q] > 0.5 else np.full(3, 1 / 3))
            for s in range(n):
                labels.append(int(rng.choice(3, p=mix)))
                rows.append({"arm": arm, "question_id": f"q{q}", "sample_id": s, "correct": bool(rng.random() < p[q])})
    return pl.DataFrame(rows), np.array(labels)


def test_strategies_moved_between_easy_and_hard_questions_are_not_execution():
    covered_within = covered_comp = 0
    pooled_within, strata_within = [], []
    for seed in range(10):
        runs, labels = smooth_case(seed)
        rw = reweighting(runs, labels, base="base", treated="rl", n_boot=300, n_permutations=0, random_state=seed)
        covered_within += rw.within_ci[0] <= 0.0 <= rw.within_ci[1]
        covered_comp += rw.composition_ci[0] <= 0.0 <= rw.composition_ci[1]
        strata_within.append(rw.within)
        assert rw.composition + rw.within == pytest.approx(rw.total, abs=1e-12)
        pooled_within.append(reweighting(runs, labels, base="base", treated="rl", ci=None, n_permutations=0,
                                         strata="pooled").within)
    assert covered_within >= 8 and covered_comp >= 8
    # what the strata remove: the pooled form puts the question mix into within (-0.018 on
    # average over these data sets, against 0.005 on strata)
    assert np.mean(pooled_within) < -0.01 and abs(np.mean(strata_within)) < 0.01


def test_question_strata_under_unequal_samples_and_a_stratum_one_arm_never_used():
    # base 2 samples per question, rl 6; rl uses strategy c that base never used on q1
    rows = (_rows("base", "q1", "a", 2, 1) + _rows("base", "q2", "a", 1, 0) + _rows("base", "q2", "b", 1, 1)
            + _rows("rl", "q1", "a", 3, 2) + _rows("rl", "q1", "c", 3, 3) + _rows("rl", "q2", "b", 6, 3))
    frame = pl.DataFrame(rows).with_columns(sample_id=pl.int_range(pl.len()).over("arm", "question_id"))
    rw = reweighting(frame.drop("strategy"), frame["strategy"].to_list(), base="base", treated="rl",
                     n_boot=100, n_permutations=0)
    # by hand, questions weighing 1/2: strata (q1,a) pb .5 rb .5, pt .25 rt 2/3; (q1,c) pt .25 rt 1
    # (base never used c: its own modelled rate); (q2,a) pb .25 rb 0 (rl's modelled rate);
    # (q2,b) pb .25 rb 1, pt .5 rt .5
    from mechanism.analysis.compare import additive_logit

    fit_b = additive_logit(np.array([[2., 0, 0], [1, 1, 0]]), np.array([[1., 0, 0], [0, 1, 0]]))  # a, b, c
    fit_t = additive_logit(np.array([[3., 0, 3], [0, 6, 0]]), np.array([[2., 0, 3], [0, 3, 0]]))
    strata = [(0.5, 0.5, 0.25, 2 / 3), (0.0, fit_b[0, 2], 0.25, 1.0), (0.25, 0.0, 0.0, fit_t[1, 0]),
              (0.25, 1.0, 0.5, 0.5)]
    comp = sum((pt - pb) * (rt + rb) / 2 for pb, rb, pt, rt in strata)
    within = sum((rt - rb) * (pt + pb) / 2 for pb, rb, pt, rt in strata)
    assert rw.composition == pytest.approx(comp, abs=1e-12)
    assert rw.within == pytest.approx(within, abs=1e-12)
    assert rw.total == pytest.approx((0.5 * (2 / 3 + 1) / 2 + 0.5 * 0.5) - (0.5 * 0.5 + 0.5 * 0.5), abs=1e-12)
    c_row = rw.strategies.filter(pl.col("strategy") == "c")["within"].item()
    assert c_row == pytest.approx((1.0 - fit_b[0, 2]) * 0.25 / 2, abs=1e-12)  # rl's c beats base's model of c
