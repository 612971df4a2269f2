"""The design rule in the boundary analysis: solved sets on a common per-problem budget,
verdicts that say what they mean, truncation-based T stated as such, intervals for T* and
crossings from the curves' replicates, one seed policy for int and Generator seeds."""
from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

from mechanism.analysis.boundaries import _saturation_replicates, boundary, saturation_depth, solved_probability
from mechanism.analysis.passkt import depth_notes, within_t_shares


def _runs(p: np.ndarray, n: dict[str, int], seed: int, rounds: dict[str, np.ndarray] | None = None) -> pl.DataFrame:
    """Both arms with the same per-problem success probability ``p``; ``n`` samples per arm."""
    rng = np.random.default_rng(seed)
    frames = []
    for arm, n_arm in n.items():
        q = p.size
        ok = rng.random((q, n_arm)) < p[:, None]
        r = rng.integers(0, 3, size=(q, n_arm)) if rounds is None else rounds[arm](rng, (q, n_arm))
        frames.append(pl.DataFrame({
            "arm": [arm] * (q * n_arm), "question_id": np.repeat([f"q{i:03d}" for i in range(q)], n_arm),
            "sample_id": np.tile(np.arange(n_arm), q), "correct": ok.reshape(-1), "n_rounds": r.reshape(-1)}))
    return pl.concat(frames)


def test_unequal_samples_alone_do_not_make_an_expansion():
    # the case: the same success probability, base 4 samples and treated 16 per problem
    p = np.random.default_rng(0).beta(0.4, 3.0, 150)
    calls = 0
    for seed in range(8):
        runs = _runs(p, {"base": 4, "rl": 16}, seed)
        b = boundary(runs, base="base", treated="rl", t=[2], k=[1, 2, 4], n_boot=100, random_state=seed)
        calls += b.expansion
        row = b.tests.row(0, named=True)
        assert row["budget_min"] == row["budget_max"] == 4
        assert abs(row["gained_expected"] - row["lost_expected"]) < 12
        assert any("common budget" in note for note in b.notes)
        # counting "solved at least once" in all 16 treated samples would call it an expansion
        naive = runs.group_by("arm", "question_id").agg(pl.col("correct").any()).pivot(
            "arm", index="question_id", values="correct")
        naive_gained = int((naive["rl"] & ~naive["base"]).sum())
        naive_lost = int((naive["base"] & ~naive["rl"]).sum())
        assert naive_gained > 2 * naive_lost
    # each data set is called an expansion with probability 0.025 (one side of a 5 % test);
    # two or more of eight would happen 1.7 % of the time (here: one, p = 0.042)
    assert calls <= 1


def test_solved_probability_matches_enumerating_subsets():
    for n, c in [(5, 0), (5, 1), (6, 2), (7, 7), (8, 3)]:
        outcomes = [True] * c + [False] * (n - c)
        for m in range(1, n + 1):
            subsets = list(itertools.combinations(range(n), m))
            brute = np.mean([any(outcomes[i] for i in s) for s in subsets])
            assert solved_probability(np.array([n]), np.array([c]), np.array([m]))[0] == pytest.approx(brute, abs=1e-12)


def test_subsampled_solved_sets_have_the_unbiased_probability():
    # 400 problems with 16 samples and one success each, judged at 4 samples: P = 1/4 each
    runs = pl.concat([
        pl.DataFrame({"arm": "base", "question_id": np.repeat([f"q{i}" for i in range(400)], 4),
                      "sample_id": np.tile(np.arange(4), 400), "correct": False, "n_rounds": 1}),
        pl.DataFrame({"arm": "rl", "question_id": np.repeat([f"q{i}" for i in range(400)], 16),
                      "sample_id": np.tile(np.arange(16), 400), "correct": np.tile(np.arange(16) == 0, 400),
                      "n_rounds": 1}),
    ])
    b = boundary(runs, base="base", treated="rl", t=[1], k=[1], n_boot=20, random_state=4)
    solved = b.problems["treated_solved"].mean()
    assert b.problems["p_solved_treated"].to_list() == pytest.approx([0.25] * 400)
    assert abs(solved - 0.25) < 4 * np.sqrt(0.25 * 0.75 / 400)
    assert b.tests["gained_expected"].item() == pytest.approx(100.0)
    # the judged subset is fixed (a keyed hash of question and sample id): no seed decides it
    again = boundary(runs, base="base", treated="rl", t=[1], k=[1], n_boot=20, random_state=5)
    assert again.problems.equals(b.problems)


def test_truncation_reads_more_searching_as_a_depth_shift_and_says_so():
    # the held-out world: direct answers succeed alike; RL only searches more (direct share 30 % -> 7 %)
    def rounds(direct: float):
        return lambda rng, shape: np.where(rng.random(shape) < direct, 0, rng.integers(1, 4, size=shape))
    p = np.full(120, 0.5)
    runs = _runs(p, {"base": 8, "rl": 8}, 1, rounds={"base": rounds(0.30), "rl": rounds(0.07)})
    b = boundary(runs, base="base", treated="rl", t=[0, 1, 3], k=[1, 2, 4, 8], n_boot=100)
    text = b.summary()
    assert "not a budget" in text and "`t_cap`" in text
    shares = {(r["arm"], r["t"]): r["share_within_t"] for r in b.sets.iter_rows(named=True)}
    assert shares[("base", 0)] == pytest.approx(0.30, abs=0.05) and shares[("rl", 0)] == pytest.approx(0.07, abs=0.03)
    assert shares[("base", 3)] == shares[("rl", 3)] == 1.0
    assert "episodes with at most T rounds, rl: T=0 0." in text
    for verdict in b.tests["verdict"].to_list():
        assert "capab" not in verdict and "expansion" not in verdict and "contraction" not in verdict
    contracted = b.tests.filter(pl.col("contraction"))
    assert contracted.height and all(v.endswith("within T rounds used") for v in contracted["verdict"])
    assert any("uses more rounds" in note for note in b.notes)


def test_within_t_shares_weigh_questions_equally():
    runs = pl.DataFrame({"arm": ["a"] * 5, "question_id": ["q1", "q1", "q1", "q1", "q2"],
                         "n_rounds": [0, 0, 0, 5, 5], "correct": [True] * 5})
    shares = within_t_shares(runs, [0, 5])
    assert shares["share_within_t"].to_list() == pytest.approx([(0.75 + 0.0) / 2, 1.0])


def test_t_beyond_the_largest_cap_is_noted():
    runs = _runs(np.full(30, 0.5), {"base": 4, "rl": 4}, 2).with_columns(t_cap=pl.lit(3, dtype=pl.Int64))
    notes = depth_notes(runs, [0, 1, 3, 5], "auto")
    assert any("T = 5 exceeds the largest round cap" in n for n in notes)
    b = boundary(runs, base="base", treated="rl", t=[1, 3, 5], k=[1, 2], n_boot=50)
    assert any("exceeds the largest round cap in `t_cap` (3)" in n for n in b.notes)
    assert not any("exceeds" in n for n in depth_notes(runs, [0, 1, 3], "auto"))


def test_saturation_replicates_match_the_rule_one_by_one():
    rng = np.random.default_rng(3)
    grid = np.array([0, 1, 2, 3, 5])
    reps = np.cumsum(rng.choice([0.0, 0.005, 0.02, 0.1], size=(300, 2, 5, 3)), axis=2)
    got = _saturation_replicates(reps, grid, 0.01)
    for b, g, k in itertools.product(range(300), range(2), range(3)):
        want = saturation_depth(grid.tolist(), np.diff(reps[b, g, :, k]).tolist(), 0.01)
        assert (np.isinf(got[b, g, k]) if want is None else got[b, g, k] == want)


def test_t_star_and_crossings_carry_intervals():
    rng = np.random.default_rng(8)
    p_b = rng.beta(2.0, 2.0, 150)
    runs = _runs(p_b, {"base": 16}, 1)
    # treated: lower PASS@1 on easy problems, solves the hard ones sometimes -> curves cross
    p_t = np.where(p_b > 0.5, p_b - 0.25, 0.15 + p_b * 0.5)
    treated = _runs(p_t, {"rl": 16}, 2)
    b = boundary(pl.concat([runs, treated]), base="base", treated="rl", t=[0, 1, 2, 3], k=[1, 2, 4, 8, 16],
                 n_boot=300, random_state=0)
    assert b.crossings.height >= 1
    row = b.crossings.row(0, named=True)
    assert row["ci_low"] <= row["k_cross"] <= row["ci_high"] and 0 < row["share_crossing"] <= 1
    sat = b.saturation
    assert {"ci_low", "ci_high", "share_saturated"} <= set(sat.columns)
    known = sat.filter(pl.col("t_star").is_not_null() & pl.col("ci_low").is_not_null())
    assert all(lo <= t <= hi for lo, t, hi in known.select("ci_low", "t_star", "ci_high").iter_rows()
               if hi is not None)
    assert "resamples cross" in b.summary()


@pytest.mark.parametrize("seed", [7, np.random.default_rng(7)])
def test_split_and_curves_share_replicates_for_int_and_generator_seeds(seed):
    runs = _runs(np.random.default_rng(1).beta(1, 2, 80), {"base": 4, "rl": 4}, 5)
    b = boundary(runs, base="base", treated="rl", t=[1, 2], k=[1, 2], n_boot=200, random_state=seed)
    # the PASS@(1,T) difference is the split's total and the gap at k = 1: the same replicates
    # give the same interval, whatever kind of seed was passed
    total = b.split.filter(pl.col("component") == "total").sort("t")
    gap = b.gap.filter(pl.col("k") == 1).sort("t")
    assert total["ci_low"].to_list() == pytest.approx(gap["ci_low"].to_list(), abs=1e-12)
    assert total["ci_high"].to_list() == pytest.approx(gap["ci_high"].to_list(), abs=1e-12)
    assert (total["detectable"] > 0).all()


def test_reweighting_with_a_generator_seed_is_reproducible_and_paired():
    from mechanism.analysis.compare import reweighting
    runs = _runs(np.full(40, 0.5), {"base": 6, "rl": 6}, 3)
    labels = (runs["n_rounds"].to_numpy() > 0).astype(int)
    a = reweighting(runs, labels, base="base", treated="rl", n_boot=100, n_permutations=50,
                    random_state=np.random.default_rng(9))
    b = reweighting(runs, labels, base="base", treated="rl", n_boot=100, n_permutations=50,
                    random_state=np.random.default_rng(9))
    assert a.total_ci == b.total_ci and a.js_divergence_ci == b.js_divergence_ci
    # total = composition + within replicate by replicate: all drawn from one set of resamples
    reps = a.replicates
    assert np.allclose(reps["composition_total"] + reps["within_total"], reps["total"])


@pytest.mark.parametrize("design", ["proportions", "skipping"])
def test_identical_policies_under_uneven_designs_are_not_called_an_expansion(design):
    p = np.random.default_rng(1).beta(0.4, 3.0, 150)
    calls = 0
    for seed in range(6):
        rng = np.random.default_rng(100 + seed)
        runs = _runs(p, {"base": 12, "rl": 12}, seed)
        if design == "proportions":   # samples per question drawn at random per arm (2..12)
            keep_n = {arm: rng.integers(2, 13, size=p.size) for arm in ("base", "rl")}
            limit = np.where(runs["arm"].to_numpy() == "base", keep_n["base"][_q(runs)], keep_n["rl"][_q(runs)])
            runs = runs.filter(pl.Series(runs["sample_id"].to_numpy() < limit))
        else:                         # treated loses 75 % of its records on half the questions
            hit = (runs["arm"].to_numpy() == "rl") & (_q(runs) % 2 == 0)
            keep = ~hit | (rng.random(runs.height) >= 0.75) | (runs["sample_id"].to_numpy() < 2)
            runs = runs.filter(pl.Series(keep))
        b = boundary(runs, base="base", treated="rl", t=[2], k=[1, 2], n_boot=100, random_state=seed)
        calls += b.expansion or bool(b.tests["contraction"].any())
        assert any("common budget" in note for note in b.notes)
        assert (b.problems["budget"] == b.problems.select(pl.min_horizontal("n_base", "n_treated")).to_series()).all()
    assert calls == 0


def _q(runs: pl.DataFrame) -> np.ndarray:
    return runs["question_id"].str.slice(1).cast(pl.Int64).to_numpy()
