"""Strategy-level information integration: per-strategy rates, the shift toward strategies whose
retrieved information leads to correct answers, the exact nested split, the verdict, the figure
and the CLI. Planted worlds with a known truth; brute-force checks of the weighted estimator."""
from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.analysis.information import (
    LOGPROBS_DTYPE,
    gold_in_observations,
    integration,
    retrievable,
    retrieval_flags,
)
from mechanism.core.errors import InputError
from mechanism.core.schema import from_records, make_step

# (retrieval rate R, integration rate I, parametric rate P) of five planted strategies: 0 and 4
# retrieve and use the answer, 1 retrieves but misuses it, 2 and 3 rarely retrieve
RATES = [(0.9, 0.9, 0.1), (0.8, 0.45, 0.1), (0.3, 0.55, 0.2), (0.1, 0.4, 0.3), (0.6, 0.85, 0.1)]
BASE_MIX = [0.1, 0.3, 0.3, 0.2, 0.1]
RL_MIX = [0.3, 0.1, 0.15, 0.05, 0.4]  # toward the strategies that retrieve and use the answer


def _success(rates=RATES) -> np.ndarray:
    return np.array([r * i + (1 - r) * p for r, i, p in rates])


def _world(rng: np.random.Generator, mixes: dict, *, n_q: int, samples, rates=RATES,
           question_mix=None) -> tuple[pl.DataFrame, np.ndarray]:
    """Trajectories whose strategy, retrieval and correctness follow the planted rates.

    ``samples``: an int, or arm -> function(question index) -> samples. ``question_mix``:
    optional function(question index) -> mixture, overriding the arm's (same in both arms).
    """
    records, labels = [], []
    for arm, mix in mixes.items():
        for q in range(n_q):
            k = samples if isinstance(samples, int) else samples[arm](q)
            p = question_mix(q) if question_mix is not None else mix
            strategy = rng.choice(len(p), size=k, p=p)
            draws = rng.random((k, 2))
            for j, s in enumerate(strategy):
                r, i, par = rates[s]
                ret = draws[j, 0] < r
                ok = draws[j, 1] < (i if ret else par)
                obs = "The capital of France is Paris." if ret else "There is no record of that."
                records.append({"arm": arm, "question_id": f"q{q:04d}", "sample_id": j, "question": "where?",
                                "gold": ["Paris"], "answer": "Paris" if ok else "Lyon", "correct": bool(ok),
                                "n_rounds": 1, "steps": [make_step(query="capital", observation=obs)]})
                labels.append(int(s))
    return from_records(records), np.array(labels)


def _shift(res, arm: str = "rl") -> dict[str, dict]:
    return {r["quantity"]: r for r in res.shift.filter(pl.col("treated") == arm).iter_rows(named=True)}


# ----------------------------------------------------------------------------- exactness
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n_q=st.integers(1, 6), n_s=st.integers(1, 4), weighting=st.sampled_from(
    ["question", "trajectory"]))
def test_nested_split_sums_exactly(seed, n_q, n_s, weighting):
    rng = np.random.default_rng(seed)
    records, labels = [], []
    for arm in ("base", "rl"):
        for q in range(n_q):
            for j in range(int(rng.integers(1, 6))):  # unequal samples per question and arm
                ret = bool(rng.random() < 0.5)
                records.append({"arm": arm, "question_id": f"q{q}", "sample_id": j, "question": "?",
                                "gold": ["Paris"], "answer": "x", "correct": bool(rng.random() < 0.5),
                                "n_rounds": 1, "steps": [make_step(query="q", observation="Paris" if ret else "x")]})
                labels.append(int(rng.integers(-1, n_s)))  # -1: outliers, kept as their own stratum
    res = integration(from_records(records), labels=np.array(labels), n_boot=20, random_state=seed,
                      weighting=weighting)
    q = {k: v["estimate"] for k, v in _shift(res).items()}
    assert abs(q["composition"] + q["within"] - q["total"]) <= 1e-12
    assert abs(q["within_retrieval"] + q["within_integration"] + q["within_parametric"]
               + q["within_not_retrievable"] - q["within"]) <= 1e-12
    acc = {r["arm"]: r["accuracy"] for r in res.per_arm.iter_rows(named=True)}
    assert abs(q["total"] - (acc["rl"] - acc["base"])) <= 1e-12
    table = res.strategy_shift
    for part in ("composition", "within", "within_retrieval", "within_integration", "within_parametric",
                 "within_not_retrievable"):
        assert abs(table[part].sum() - q[part]) <= 1e-12
    # the arm-level split (strategies pooled) has the same total
    split = {r["part"]: r["estimate"] for r in res.split.iter_rows(named=True)}
    assert abs(split["total"] - q["total"]) <= 1e-12


def _brute_force(runs: pl.DataFrame, labels: np.ndarray, base: str, treated: str) -> dict:
    """The weighted estimator written out with dictionaries and loops, independent of the module."""
    ret = retrieval_flags(runs)
    rows = list(zip(runs["arm"].to_list(), runs["question_id"].to_list(), labels.tolist(), ret.tolist(),
                    runs["correct"].to_list()))
    n_aq: dict = {}
    for arm, q, *_ in rows:
        n_aq[arm, q] = n_aq.get((arm, q), 0) + 1
    tally: dict = {}  # (arm, strategy) -> [mass, mass retrieved, correct & retrieved, correct & not]
    for arm, q, s, r, c in rows:
        t = tally.setdefault((arm, s), [0.0, 0.0, 0.0, 0.0])
        w = 1.0 / n_aq[arm, q]
        t[0] += w
        t[1] += w * r
        t[2] += w * (c and r)
        t[3] += w * (c and not r)
    strategies = sorted(set(labels.tolist()))
    out: dict = {"strategies": {}}
    totals = {arm: sum(tally.get((arm, s), [0])[0] for s in strategies) for arm in (base, treated)}
    sums = dict.fromkeys(("composition", "within", "within_retrieval", "within_integration",
                          "within_parametric"), 0.0)
    for s in strategies:
        stats = {}
        for arm in (base, treated):
            m, mr, cr, cn = tally.get((arm, s), [0.0, 0.0, 0.0, 0.0])
            stats[arm] = {"p": m / totals[arm], "R": mr / m if m else None, "I": cr / mr if mr else None,
                          "P": cn / (m - mr) if m - mr else None, "r": (cr + cn) / m if m else None}
        b, t = stats[base], stats[treated]
        if b["r"] is None:  # absent in base: borrow the treated arm's rates
            b = {**t, "p": 0.0}
        if t["r"] is None:
            t = {**b, "p": 0.0}
        for key in ("I", "P"):  # a stratum one arm lacks borrows the other's rate
            if b[key] is None:
                b[key] = t[key] if t[key] is not None else 0.0
            if t[key] is None:
                t[key] = b[key]
        w = (b["p"] + t["p"]) / 2
        part = {"composition": (t["p"] - b["p"]) * (t["r"] + b["r"]) / 2, "within": (t["r"] - b["r"]) * w,
                "within_retrieval": w * (t["R"] - b["R"]) * ((t["I"] + b["I"]) / 2 - (t["P"] + b["P"]) / 2),
                "within_integration": w * (t["I"] - b["I"]) * (t["R"] + b["R"]) / 2,
                "within_parametric": w * (t["P"] - b["P"]) * (2 - t["R"] - b["R"]) / 2}
        for k, v in part.items():
            sums[k] += v
        out["strategies"][s] = {"share_base": stats[base]["p"], "share_treated": stats[treated]["p"],
                                "integration_base": stats[base]["I"], "retrieval_base": stats[base]["R"], **part}
    out.update(sums)
    base_ret = sum(tally.get((base, s), [0, 0])[1] for s in strategies)
    base_cor_ret = sum(tally.get((base, s), [0, 0, 0])[2] for s in strategies)
    out["base_integration_rate"] = base_cor_ret / base_ret
    above = [s for s in strategies if s != -1 and out["strategies"][s]["integration_base"] is not None
             and out["strategies"][s]["integration_base"] > out["base_integration_rate"]]
    out["mass_above_base"] = sum(out["strategies"][s]["share_base"] for s in above)
    out["mass_above_treated"] = sum(out["strategies"][s]["share_treated"] for s in above)
    # weighted correlation of share change with base integration rate, weights (p_b + p_t) / 2
    pts = [(v["share_treated"] - v["share_base"], v["integration_base"], (v["share_base"] + v["share_treated"]) / 2)
           for s, v in out["strategies"].items() if s != -1 and v["integration_base"] is not None]
    w = np.array([p[2] for p in pts])
    x, y = np.array([p[1] for p in pts]), np.array([p[0] for p in pts])
    mx, my = (w * x).sum() / w.sum(), (w * y).sum() / w.sum()
    out["alignment_integration"] = float((w * (x - mx) * (y - my)).sum()
                                         / math.sqrt((w * (x - mx) ** 2).sum() * (w * (y - my) ** 2).sum()))
    return out


def test_weighted_estimator_matches_a_brute_force_computation():
    rng = np.random.default_rng(7)
    samples = {"base": lambda q: 2 + q % 5, "rl": lambda q: 7 - q % 4}  # unequal, differently per arm
    runs, labels = _world(rng, {"base": BASE_MIX, "rl": RL_MIX}, n_q=30, samples=samples)
    labels[::17] = -1  # a few outliers
    # the brute force pools each strategy over questions: the estimator's strata="pooled"
    # (the default, on question x strategy strata, is checked by brute force in test_integration_strata)
    res = integration(runs, base="base", treated="rl", labels=labels, n_boot=50, strata="pooled")
    brute = _brute_force(runs, labels, "base", "rl")
    q = _shift(res)
    for name in ("composition", "within", "within_retrieval", "within_integration", "within_parametric",
                 "base_integration_rate", "mass_above_base", "mass_above_treated", "alignment_integration"):
        assert q[name]["estimate"] == pytest.approx(brute[name], abs=1e-12), name
    for row in res.strategy_shift.iter_rows(named=True):
        b = brute["strategies"][row["strategy"]]
        assert row["share_base"] == pytest.approx(b["share_base"], abs=1e-12)
        assert row["share_change"] == pytest.approx(b["share_treated"] - b["share_base"], abs=1e-12)
        for part in ("composition", "within_retrieval", "within_integration", "within_parametric"):
            assert row[part] == pytest.approx(b[part], abs=1e-12), (row["strategy"], part)
    by = {(r["arm"], r["strategy"]): r for r in res.by_strategy.iter_rows(named=True)}
    for s, b in brute["strategies"].items():
        assert by["base", s]["share"] == pytest.approx(b["share_base"], abs=1e-12)
        if b["integration_base"] is not None:
            assert by["base", s]["integration_rate"] == pytest.approx(b["integration_base"], abs=1e-12)
        assert by["base", s]["retrieval_rate"] == pytest.approx(b["retrieval_base"], abs=1e-12)
        assert by["base", s]["n"] == int(((runs["arm"] == "base").to_numpy() & (labels == s)).sum())
    for row in res.by_strategy.iter_rows(named=True):
        for name in ("share", "retrieval_rate"):
            assert row[f"{name}_ci_low"] <= row[name] + 1e-12 and row[name] <= row[f"{name}_ci_high"] + 1e-12


# ----------------------------------------------------------------------------- planted worlds
@pytest.fixture(scope="module")
def planted():
    rng = np.random.default_rng(11)
    runs, labels = _world(rng, {"base": BASE_MIX, "rl": RL_MIX}, n_q=300, samples=12)
    return runs, labels, integration(runs, base="base", treated="rl", labels=labels, n_boot=400)


def test_planted_move_toward_strategies_that_retrieve_and_use_the_answer(planted):
    _, _, res = planted
    q = _shift(res)
    assert q["alignment_integration"]["ci_low"] > 0
    assert q["alignment_retrieval"]["ci_low"] > 0
    assert q["mass_moved_above"]["ci_low"] > 0
    planted_composition = float(((np.array(RL_MIX) - np.array(BASE_MIX)) * _success()).sum())
    assert planted_composition > 0.1
    assert abs(q["composition"]["estimate"] - planted_composition) <= 0.1 * planted_composition
    assert q["composition"]["ci_low"] <= planted_composition <= q["composition"]["ci_high"]
    # nothing changed within strategies: every within interval holds 0
    for name in ("within", "within_retrieval", "within_integration", "within_parametric"):
        assert q[name]["ci_low"] <= 0 <= q[name]["ci_high"], name
    # the strategies above the base average are the planted good integrators (0 and 4)
    above = res.strategy_shift.filter(pl.col("above_average"))["strategy"].to_list()
    assert sorted(above) == [0, 4]
    # per-strategy rates recover the planted ones
    by = {(r["arm"], r["strategy"]): r for r in res.by_strategy.iter_rows(named=True)}
    for s, (r, _i, _p) in enumerate(RATES):
        row = by["base", s]
        assert row["retrieval_rate_ci_low"] - 0.02 <= r <= row["retrieval_rate_ci_high"] + 0.02
        assert row["share"] == pytest.approx(BASE_MIX[s], abs=0.03)


def test_verdict_states_the_shift_with_its_numbers(planted):
    _, _, res = planted
    line = res.verdict()
    q = _shift(res)
    assert line == res.verdict("rl")
    assert line.startswith(f"rl moved {abs(100 * q['mass_moved_above']['estimate']):.0f} points of mass toward")
    assert f"alignment with base integration {q['alignment_integration']['estimate']:+.2f}" in line
    assert f"explains {q['composition']['estimate']:+.2f}" in line
    assert f"of the {q['total']['estimate']:+.2f}" in line and "\n" not in line
    assert "integration" in line.split("within strategies,")[1]
    with pytest.raises(InputError, match="`treated`"):
        res.verdict("sft")


def test_a_move_away_reads_as_away(planted):
    runs, labels, _ = planted
    flipped = runs.with_columns(pl.col("arm").replace({"base": "rl", "rl": "base"}))
    res = integration(flipped, base="base", treated="rl", labels=labels, n_boot=100)
    q = _shift(res)
    assert q["alignment_integration"]["ci_high"] < 0
    assert " points of mass away from strategies" in res.verdict()


def _all_differences_hold_zero(res) -> list[str]:
    missed = []
    differences = ("alignment_integration", "alignment_retrieval", "mass_moved_above", "total", "composition",
                   "within", "within_retrieval", "within_integration", "within_parametric")
    for name, row in _shift(res).items():
        if name in differences and not row["ci_low"] <= 0 <= row["ci_high"]:
            missed.append(name)
    for row in res.split.iter_rows(named=True):
        if not row["ci_low"] <= 0 <= row["ci_high"]:
            missed.append(f"split {row['part']}")
    return missed


def _unequal_design(seed: int, n_q: int = 120):
    """One policy in both arms; easy questions (even) use strategy 0, hard ones (odd) strategy 3;
    base samples easy questions 12 times and hard ones 4 times, the treated arm the reverse."""
    rng = np.random.default_rng(seed)
    samples = {"base": lambda q: 12 if q % 2 == 0 else 4, "rl": lambda q: 4 if q % 2 == 0 else 12}
    mix = lambda q: [0.85, 0.05, 0.0, 0.05, 0.05] if q % 2 == 0 else [0.05, 0.05, 0.05, 0.8, 0.05]  # noqa: E731
    return _world(rng, {"base": None, "rl": None}, n_q=n_q, samples=samples, question_mix=mix)


def test_identical_policies_under_unequal_samples_per_question_find_nothing():
    runs, labels = _unequal_design(3)
    res = integration(runs, base="base", treated="rl", labels=labels, n_boot=400)
    # the quantity unequal sampling breaks when trajectories are pooled: no mass moved. Over
    # seeds 0-39 of this design |composition| <= 0.018 (sd 0.007) and every |share change| <= 0.044
    # question-weighted, while pooling gives about -0.20 with every upper bound <= -0.16; how
    # often the intervals hold 0 is the job of the null test over many draws below, not of one.
    q = _shift(res)
    assert abs(q["composition"]["estimate"]) < 0.03
    assert res.strategy_shift["share_change"].abs().max() < 0.08
    # the same rows pooled over trajectories report a large, "significant" move: the test can fail
    pooled = integration(runs, base="base", treated="rl", labels=labels, n_boot=400, weighting="trajectory")
    q = _shift(pooled)
    assert q["composition"]["ci_high"] < -0.1
    assert "composition" in _all_differences_hold_zero(pooled)
    assert any("pooled over trajectories" in n for n in pooled.notes)


# Per-strategy columns of strategy_shift checked under the null: each is one family of S
# intervals, Bonferroni-adjusted so that all S hold 0 together in about 95 % of draws.
PER_STRATEGY = ("share_change", "composition", "within", "within_retrieval", "within_integration",
                "within_parametric")


def _null_misses(res) -> tuple[set[str], set[str]]:
    """Which headline intervals (each at 95 %), and which per-strategy families (any of its
    S intervals), miss 0."""
    table = res.strategy_shift
    per_strategy = {name for name in PER_STRATEGY
                    if not ((table[f"{name}_ci_low"] <= 0) & (table[f"{name}_ci_high"] >= 0)).all()}
    return set(_all_differences_hold_zero(res)), per_strategy


def _null_miss_rates(design: str, n_draws: int, first_seed: int = 0,
                     n_boot: int = 1000) -> tuple[dict, dict, float]:
    """Over null draws (seeds ``first_seed ...``): the share of draws in which each headline
    interval, and each per-strategy family, misses 0; and how often the verdict calls the
    within-strategy change indistinguishable from 0."""
    headline = dict.fromkeys(("alignment_integration", "alignment_retrieval", "mass_moved_above", "total",
                              "composition", "within", "within_retrieval", "within_integration",
                              "within_parametric", "split total", "split retrieval", "split integration",
                              "split parametric"), 0)
    per_strategy = dict.fromkeys(PER_STRATEGY, 0)
    undistinguished = 0
    for seed in range(first_seed, first_seed + n_draws):
        if design == "identical mixtures":
            runs, labels = _world(np.random.default_rng(seed), {"base": BASE_MIX, "rl": BASE_MIX}, n_q=100,
                                  samples=6)
        else:
            runs, labels = _unequal_design(seed, n_q=60)
        res = integration(runs, base="base", treated="rl", labels=labels, n_boot=n_boot, random_state=seed)
        assert res.strategy_shift["ci_level"].to_list() == pytest.approx([0.95] * 5)  # simultaneous bands
        h, p = _null_misses(res)
        for name in h:
            headline[name] += 1
        for name in p:
            per_strategy[name] += 1
        undistinguished += "(not distinguishable from 0)" in res.verdict()
    return ({k: v / n_draws for k, v in headline.items()}, {k: v / n_draws for k, v in per_strategy.items()},
            undistinguished / n_draws)


@pytest.mark.slow
@pytest.mark.parametrize("design", ["identical mixtures", "unequal samples"])
def test_null_intervals_miss_zero_at_about_their_level(design):
    """No seed is picked: over 60 null draws (identical policies; equal samples per question, or
    the unequal design above) each per-strategy family (S = 5 rows, simultaneous bands,
    at least as tight as the Bonferroni intervals the figures below were measured with) and each headline
    interval (95 %) misses 0 at about the nominal 5 %.

    Measured over 160 other draws of each design at these sizes (seeds 2000-2159): per-strategy
    families miss 3-10 % of the time (mean 5-7 %; the percentile bootstrap at 99 % slightly
    under-covers small strata), headline intervals 1-9 % (mean 5 %). Unadjusted, the same
    families missed 20-42 % (mean about 26 %). Bounds: every family <= 25 % and the mean of
    the per-strategy families, and of the headline intervals, <= 15 %: a calibrated design
    fails them with probability well under 1 %, unadjusted per-strategy intervals fail the
    mean bound."""
    headline, per_strategy, undistinguished = _null_miss_rates(design, 60)
    assert max(per_strategy.values()) <= 0.25, per_strategy
    assert np.mean(list(per_strategy.values())) <= 0.15, per_strategy
    assert max(headline.values()) <= 0.25, headline
    assert np.mean(list(headline.values())) <= 0.15, headline
    # the verdict calls the within-strategy change indistinguishable from 0 in nearly every draw
    assert undistinguished >= 0.9


def test_per_strategy_rows_carry_simultaneous_bands_from_the_same_replicates():
    from mechanism.analysis.compare import stream
    from mechanism.core.resample import (
        percentile_interval,
        question_bootstrap_weights,
        simultaneous_band,
        split_interval,
    )

    rng = np.random.default_rng(5)
    runs, labels = _world(rng, {"base": BASE_MIX, "rl": RL_MIX}, n_q=40, samples=4)
    labels[(runs["arm"] == "rl").to_numpy() & (labels == 3)] = 2  # base uses 5 strategies, rl 4
    n_boot, seed = 300, 9
    res = integration(runs, base="base", treated="rl", labels=labels, n_boot=n_boot, random_state=seed)
    assert res.by_strategy["ci_level"].to_list() == pytest.approx([0.95] * 10)
    assert res.strategy_shift["ci_level"].to_list() == pytest.approx([0.95] * 5)
    assert any("simultaneous bands" in n for n in res.notes)
    # brute force: per-question strategy fractions (4 samples per question in each arm),
    # replicate shares from the module's bootstrap weights, one max-|t| band over the 10 rows
    weights = question_bootstrap_weights(40, n_boot, stream(seed, "bootstrap")).astype(float)
    q_idx = np.array([int(q[1:]) for q in runs["question_id"].to_list()])
    is_rl = (runs["arm"] == "rl").to_numpy()
    frac = np.zeros((2, 40, 5))
    np.add.at(frac, (is_rl.astype(int), q_idx, labels), 0.25)
    reps = weights @ frac / 40  # (arm, replicate, strategy): every weight row sums to 40
    point = frac.sum(axis=1) / 40
    lo, hi, crit = simultaneous_band(point, np.stack([reps[0], reps[1]], axis=1), 0.95, n_questions=40)
    table = res.by_strategy.sort("arm", "strategy")
    assert table["share_ci_low"].to_numpy() == pytest.approx(lo.reshape(-1), abs=1e-12)
    assert table["share_ci_high"].to_numpy() == pytest.approx(hi.reshape(-1), abs=1e-12)
    assert crit > 2.3  # ten rows read together: wider than 1.96 standard deviations
    # strategy_shift: one critical value for the share change and the nested split's parts
    change = reps[1] - reps[0]
    shift = res.strategy_shift.sort("strategy")
    sd = change.std(axis=0)
    c = (shift["share_change_ci_high"] - shift["share_change"]).to_numpy() / sd
    assert np.allclose(c, c[0]) and c[0] > 2.3
    nominal_lo, nominal_hi = percentile_interval(change, 0.95)
    assert (shift["share_change_ci_high"] - shift["share_change_ci_low"]).sum() > (nominal_hi - nominal_lo).sum()
    # the headline quantities stay at the nominal level: total = accuracy change, its interval
    # every split part's: t_{Q-1} on the replicate accuracy change's sd, inflated by sqrt(Q/(Q-1))
    acc = np.zeros((2, 40))
    np.add.at(acc, (is_rl.astype(int), q_idx), 0.25 * runs["correct"].to_numpy())
    total = (weights @ acc[1] - weights @ acc[0]) / weights.sum(axis=1)
    from scipy.stats import t as student
    half = student.ppf(0.975, 39) * np.sqrt(40 / 39) * total.std()
    point_total = (acc[1] - acc[0]).sum() / 40
    lo, hi = point_total - half, point_total + half
    assert (lo, hi) == pytest.approx(tuple(map(float, split_interval(point_total, total, 0.95, 40))), abs=1e-12)
    q = _shift(res)
    assert (q["total"]["ci_low"], q["total"]["ci_high"]) == pytest.approx((lo, hi), abs=1e-12)
    # one strategy: nothing to adjust, no note; no bootstrap: no level
    one = integration(runs, base="base", treated="rl", labels=np.zeros(runs.height, dtype=int), n_boot=50)
    assert one.strategy_shift["ci_level"].to_list() == [0.95]
    assert not any("simultaneous" in n for n in one.notes)
    none = integration(runs, base="base", treated="rl", labels=labels, ci=None)
    assert none.strategy_shift["ci_level"].null_count() == 5
    assert not any("simultaneous" in n for n in none.notes)
    # too few replicates for the bands' critical value: said so
    few = integration(runs, base="base", treated="rl", labels=labels, n_boot=100)
    assert any("raise `n_boot` to at least 1000" in n for n in few.notes)


# ----------------------------------------------------------------------------- retrieval rule
def test_yes_no_and_one_word_function_answers_are_never_retrieved():
    assert not gold_in_observations(["There is no record of that."], ["no"])
    assert not gold_in_observations(["Yes, they are both French."], ["yes"])
    assert not gold_in_observations(["Chapter 7 begins here."], ["7"])
    # one-token numbers are not identified by finding them ("12" in "12 May 2003")
    assert not gold_in_observations(["He was born in 1987."], ["1987"])
    assert gold_in_observations(["There is no record.", "The capital is Paris."], ["no", "Paris"])
    assert [retrievable(g) for g in ("no", "True", "a", "Paris", "42")] == [False, False, False, True, False]
    records = [{"arm": "base", "question_id": "q1", "sample_id": 0, "question": "Same country?", "gold": ["no"],
                "answer": "no", "correct": True, "n_rounds": 1,
                "steps": [make_step(query="x", observation="There is no record of that.")]}]
    records.append({**records[0], "sample_id": 1, "gold": []})  # only a correctness label
    res = integration(from_records(records), n_boot=10)
    assert res.per_trajectory["retrieved"].to_list() == [False, False]
    assert res.per_trajectory["retrieval_status"].to_list() == ["not_retrievable", "not_retrievable"]
    assert any(n.startswith("1 trajectories (1 question) have only golds text cannot identify") for n in res.notes)
    assert any(n.startswith("1 trajectories (1 question) have no gold answer") for n in res.notes)


# ----------------------------------------------------------------------------- perplexity, api
def test_perplexity_per_strategy_from_a_logprob_column():
    def row(arm, q, sid, lps):
        return {"arm": arm, "question_id": q, "sample_id": sid, "question": "?", "gold": ["Paris"],
                "answer": "x", "correct": True, "n_rounds": 1,
                "steps": [make_step(query="q", observation="Paris")], "lp": lps}
    records = [row("base", "q1", 0, [("query", -1.0), ("reasoning", -2.0)]),
               row("base", "q1", 1, [("query", -3.0)]),
               row("base", "q2", 0, [("query", -0.5), ("reasoning", -1.0)])]
    runs = from_records([{k: v for k, v in r.items() if k != "lp"} for r in records]).with_columns(
        pl.Series("lp", [[{"segment": s, "logprob": v} for s, v in r["lp"]] for r in records], dtype=LOGPROBS_DTYPE))
    res = integration(runs, labels=[0, 1, 0], logprobs_column="lp", n_boot=50)
    ppl = {(r["strategy"], r["segment"]): r for r in res.perplexity_by_strategy.iter_rows(named=True)}
    # strategy 0: q1 sample 0 (weight 1/2) and q2 sample 0 (weight 1)
    assert ppl[0, "query"]["perplexity"] == pytest.approx(math.exp((0.5 * 1.0 + 1.0 * 0.5) / 1.5))
    assert ppl[0, "reasoning"]["perplexity"] == pytest.approx(math.exp((0.5 * 2.0 + 1.0 * 1.0) / 1.5))
    assert ppl[1, "query"]["perplexity"] == pytest.approx(math.exp(3.0))
    assert ppl[0, "query"]["n_tokens"] == 2
    # per arm: tokens weighted by their trajectory's 1 / samples of its question
    arm = {r["segment"]: r for r in res.perplexity.iter_rows(named=True)}
    assert arm["query"]["perplexity"] == pytest.approx(math.exp((0.5 * 1 + 0.5 * 3 + 0.5) / 2.0))


def test_arguments_and_result_protocol(planted):
    runs, labels, res = planted
    assert res.treated == ("rl",) and res.base == "base"
    d = res.to_dict()
    json.dumps(d)
    assert {"by_strategy", "shift", "strategy_shift"} <= set(d)
    frame = res.to_frame()
    assert "alignment_integration" in frame["quantity"].to_list()
    mass = frame.filter(pl.col("quantity") == "mass_above")  # one row per arm, the arm a key
    assert mass["arm"].to_list() == ["base", "rl"] and set(mass["treated"]) == {"rl"}
    plain = integration(runs, n_boot=10)
    assert plain.shift is None and plain.by_strategy is None
    with pytest.raises(InputError, match="`labels`"):
        plain.verdict()
    with pytest.raises(InputError, match="`labels`"):
        integration(runs, labels=labels[:-1], n_boot=10)
    with pytest.raises(InputError, match="`weighting`"):
        integration(runs, weighting="pooled")
    with pytest.raises(InputError, match="`treated`"):
        integration(runs, base="base", treated="base")
    a = integration(runs, base="base", treated="rl", labels=labels, n_boot=30, random_state=4)
    b = integration(runs, arms=["base", "rl"], labels=labels, n_boot=30, random_state=4)
    assert a.shift.equals(b.shift) and a.strategy_shift.equals(b.strategy_shift)
    string_labels = np.array([f"s{v}" for v in labels])
    c = integration(runs, base="base", treated="rl", labels=string_labels, n_boot=30, random_state=4)
    assert c.shift["estimate"].to_list() == pytest.approx(a.shift["estimate"].to_list(), nan_ok=True)


def test_shift_figure_names_strategies(planted, tmp_path):
    import matplotlib

    from mechanism.plots.integration import plot_integration_shift
    from mechanism.plots.style import close, save_figure

    _, _, res = planted
    names = {0: "look up and check", 1: "look up, misread", 2: "reword", 3: "guess", 4: "bridge"}
    fig = plot_integration_shift(res, names=names, title="planted")
    texts = {t.get_text() for ax in fig.axes for t in ax.texts}
    assert {"look up and check", "bridge", "guess"} <= texts
    assert len(fig.axes) == 2
    paths = save_figure(fig, tmp_path, "shift")
    assert all(p.stat().st_size > 10_000 for p in paths)
    close(fig)
    with pytest.raises(InputError, match="labels"):
        plot_integration_shift(integration(planted[0], n_boot=5))
    assert matplotlib.get_backend().lower() == "agg"


def test_cli_with_labels_prints_the_verdict_and_writes_the_figure(planted, tmp_path, capsys):
    from mechanism._cli.main import main

    runs, labels, _ = planted
    runs = runs.filter(pl.col("question_id") < "q0060")
    keep = np.isin(np.arange(planted[0].height), np.flatnonzero((planted[0]["question_id"] < "q0060").to_numpy()))
    path = tmp_path / "runs.parquet"
    runs.write_parquet(path)
    table = runs.select("arm", "question_id", "sample_id").with_columns(pl.Series("strategy", labels[keep]))
    table.write_csv(tmp_path / "labels.csv")
    out = tmp_path / "out"
    code = main(["integration", str(path), "--format", "canonical", "--labels", str(tmp_path / "labels.csv"),
                 "--base", "base", "--treated", "rl", "--out", str(out), "--n-boot", "100"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "verdict: rl moved" in printed
    for name in ("by_strategy.csv", "shift.csv", "strategy_shift.csv", "integration_shift.png",
                 "integration_shift.pdf", "summary.txt"):
        assert (out / name).is_file(), name
    shift = pl.read_csv(out / "shift.csv")
    parts = dict(zip(shift["quantity"], shift["estimate"]))
    assert abs(parts["composition"] + parts["within"] - parts["total"]) < 1e-12
    code = main(["integration", str(path), "--format", "canonical", "--labels", str(tmp_path / "nope.csv"),
                 "--out", str(out)])
    assert code == 2 and "labels file not found" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_with_a_saved_space(tmp_path, capsys):
    from mechanism._cli.main import main
    from mechanism.analysis.strategy_space import StrategySpace
    from mechanism.datasets.simulation import simulate

    sim = simulate(n_questions=12, n_samples=6, arms=("base", "rl"), random_state=2, progress=False)
    space = StrategySpace(embedder="hashing-256", random_state=0, progress=False).fit(sim.runs)
    space.save(tmp_path / "space")
    sim.write(tmp_path / "data")
    code = main(["integration", str(tmp_path / "data" / "searchr1"), "--space", str(tmp_path / "space"),
                 "--base", "base", "--out", str(tmp_path / "out"), "--n-boot", "50"])
    assert code == 0
    # a direction ("rl moved ...") only where the alignment confirms it (the verdict's gate)
    out = capsys.readouterr().out
    assert "verdict: rl moved" in out or "verdict: rl's mass in strategies" in out
    assert (tmp_path / "out" / "integration_shift.png").is_file()


# ----------------------------------------------------------------------------- simulator truth
def test_simulator_plants_strategies_that_differ_in_using_what_they_retrieve():
    from mechanism.datasets.simulation import Policy, simulate
    from mechanism.datasets.simulation.policies import STRATEGY_INTEGRATION

    assert STRATEGY_INTEGRATION["verify"] > STRATEGY_INTEGRATION["whole_question"] > \
        STRATEGY_INTEGRATION["reformulate_loop"]
    from mechanism.datasets.simulation import STRATEGIES

    even = Policy("base", dict.fromkeys(STRATEGIES, 1.0))  # every strategy sampled often enough to compare
    sim = simulate(n_questions=40, n_samples=16, arms=("base",), policies={"base": even}, random_state=4,
                   progress=False)
    t = sim.truth.filter(pl.col("evidence"))
    used = dict(t.group_by("strategy").agg(pl.col("integrated").mean()).iter_rows())
    assert used["verify"] > used["reformulate_loop"] + 0.2
    assert sim.config["policies"]["base"]["strategy_integration"]["reformulate_loop"] == \
        STRATEGY_INTEGRATION["reformulate_loop"]
    # a policy can change one strategy's skill; a bad factor is refused
    never = Policy("never", {"verify": 1.0}, strategy_integration={"verify": 0.0, "parallel_verify": 0.0})
    s = simulate(n_questions=10, n_samples=4, arms=("never",), policies={"never": never}, random_state=1,
                 progress=False)
    assert not s.truth["integrated"].any()
    from mechanism.core.errors import MechanismError
    with pytest.raises(MechanismError, match="strategy_integration"):
        Policy("x", {"verify": 1.0}, strategy_integration={"verify": 2.0})
    with pytest.raises(MechanismError, match="strategy_integration"):
        Policy("x", {"verify": 1.0}, strategy_integration={"teleport": 0.5})


def test_grid_cells_weigh_questions_like_the_rates():
    from mechanism.plots.integration import plot_integration_grid
    from mechanism.plots.style import close

    runs, labels = _unequal_design(8, n_q=20)
    res = integration(runs, base="base", treated="rl", labels=labels, n_boot=20)
    fig = plot_integration_grid(res)
    for ax, row in zip(fig.axes, res.per_arm.iter_rows(named=True)):
        cells = [t.get_text().split("\n")[0] for t in ax.texts]
        r, i = row["retrieval_rate"], row["integration_rate"]
        assert cells[0] == f"{100 * r * i:.1f}%"  # retrieved and correct
        assert cells[1] == f"{100 * r * (1 - i):.1f}%"
    close(fig)
