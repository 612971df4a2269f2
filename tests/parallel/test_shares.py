"""One shares implementation (mechanism.analysis.shares): the table that parallel, the plots and the
report use, and the arrays behind a checkpoint series' shares, checked against brute force."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import mechanism as mx
import mechanism.analysis.checkpoints as checkpoints
import mechanism.analysis.parallel as parallel
from mechanism.analysis.shares import strategy_shares, weighted_shares
from mechanism.core.errors import InputError
from mechanism.core.resample import percentile_interval, question_bootstrap_weights, stream
from mechanism.core.results import SHARED_COLUMNS, Result


def test_every_caller_uses_the_one_implementation():
    assert mx.strategy_shares is parallel.strategy_shares is strategy_shares
    assert checkpoints.weighted_shares is weighted_shares


def _table(seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = 90
    return pl.DataFrame({"arm": rng.choice(["base", "rl"], n),
                         "question_id": rng.choice([f"q{i}" for i in range(12)], n),
                         "strategy": rng.integers(-1, 4, n)})


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shares_and_intervals_match_a_loop_over_questions(seed):
    t = _table(seed)
    out = strategy_shares(t, ci=0.9, n_boot=300, random_state=seed)
    strategies = sorted(t["strategy"].unique().to_list())
    for arm in ("base", "rl"):
        part = t.filter(pl.col("arm") == arm)
        qids = sorted(part["question_id"].unique().to_list())
        # each question's fraction of its trajectories per strategy, by counting
        frac = np.array([[sum(1 for q2, s2 in zip(part["question_id"], part["strategy"]) if q2 == q and s2 == s)
                          / sum(1 for q2 in part["question_id"] if q2 == q) for s in strategies] for q in qids])
        point = frac.mean(axis=0)
        draws = question_bootstrap_weights(len(qids), 300, stream(seed, f"shares:{arm}"))
        reps = np.array([sum(draws[b, i] * frac[i] for i in range(len(qids))) / draws[b].sum() for b in range(300)])
        lo, hi = percentile_interval(reps, 0.9)
        got = out.filter(pl.col("arm") == arm).sort("strategy")
        assert got["strategy"].to_list() == strategies
        np.testing.assert_allclose(got["share"].to_numpy(), point, rtol=0, atol=1e-12)
        np.testing.assert_allclose(got["ci_low"].to_numpy(), lo, rtol=0, atol=1e-12)
        np.testing.assert_allclose(got["ci_high"].to_numpy(), hi, rtol=0, atol=1e-12)
        assert got["n"].to_list() == [int((part["strategy"] == s).sum()) for s in strategies]
    # same input, same output; the lazy frame reads the same
    assert out.equals(strategy_shares(t.lazy(), ci=0.9, n_boot=300, random_state=seed))


def test_weighted_shares_leave_out_questions_without_trajectories():
    q = np.array([0, 0, 2, 2, 2])  # question 1 has none here (another arm's question)
    s = np.array([0, 1, 1, 1, 1])
    np.testing.assert_allclose(weighted_shares(q, s, 3, 2), [0.25, 0.75])
    w = np.array([[1, 0, 2], [0, 3, 0]])  # the second replicate drew only the absent question
    reps = weighted_shares(q, s, 3, 2, weights=w)
    np.testing.assert_allclose(reps[0], [(0.5 + 0) / 3, (0.5 + 2) / 3])
    assert np.isnan(reps[1]).all()


def test_bad_input_is_a_one_line_error_naming_the_parameter():
    with pytest.raises(InputError) as info:
        strategy_shares({"arm": ["a"]})
    assert info.value.field == "assigned"
    with pytest.raises(InputError) as info:
        strategy_shares(_table(0), ci=95)
    assert info.value.field == "ci"


def test_the_shares_table_is_a_dataframe_and_a_result_of_the_protocol():
    t = _table(0)
    out = strategy_shares(t, ci=0.9, n_boot=100, random_state=0)
    assert isinstance(out, pl.DataFrame) and isinstance(out, Result)
    assert out.columns == ["arm", "strategy", "n", "share", "ci_low", "ci_high"]
    assert repr(out) == repr(pl.DataFrame(out))  # prints as the table it is
    frame = out.to_frame()
    assert frame.columns == ["arm", "strategy", "n", *SHARED_COLUMNS]
    assert frame["quantity"].unique().to_list() == ["share"]
    assert frame.select("arm", "strategy", "n", share="estimate", ci_low="ci_low", ci_high="ci_high").equals(
        pl.DataFrame(out))
    tables = out.tables()
    assert list(tables) == ["estimates", "shares"] and tables["shares"].equals(out)
    assert out.to_dict(as_series=False) == pl.DataFrame(out).to_dict(as_series=False)
    assert out.verdict().startswith("largest share per arm: base strategy ") and "[" in out.verdict()
    # without intervals the wide table keeps NaN (as written to CSV); the long one spells "none" as null
    bare = strategy_shares(t, ci=None)
    assert bare["ci_low"].is_nan().all() and bare.to_frame()["ci_low"].null_count() == bare.height
    assert "[" not in bare.verdict()
