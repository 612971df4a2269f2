"""The duplicate-key check folded into PASS@(k,T)'s group-by: the cheap proof never passes a
table with a repeated key, and pass_at_kt refuses such tables like validate does."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.analysis.passkt import pass_at_kt
from mechanism.core.errors import InputError
from mechanism.core.schema import check_unique_keys


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["q1", "q2", "q10"]), st.integers(0, 3)),
                min_size=2, max_size=14), st.booleans())
def test_check_agrees_with_brute_force_on_any_row_order(keys, with_groups):
    runs = pl.DataFrame(keys, schema=["arm", "question_id", "sample_id"], orient="row")
    n_groups = len({(a, q) for a, q, _ in keys}) if with_groups else None
    has_dup = len(set(keys)) < len(keys)
    if has_dup:
        with pytest.raises(InputError, match="duplicate"):
            check_unique_keys(runs, n_groups=n_groups)
    else:
        check_unique_keys(runs, n_groups=n_groups)


def test_pass_at_kt_refuses_a_repeated_key_in_sorted_and_shuffled_tables():
    rows = [("a", f"q{q}", s, s % 2 == 0, 1) for q in range(3) for s in range(4)]
    rows[5] = ("a", "q1", 0, True, 1)  # q1 sample 1 becomes a second sample 0
    runs = pl.DataFrame(rows, schema=["arm", "question_id", "sample_id", "correct", "n_rounds"], orient="row")
    for table in (runs, runs.sample(fraction=1.0, shuffle=True, seed=1)):
        with pytest.raises(InputError, match=r"duplicate \(arm, question_id, sample_id\) = \('a', 'q1', 0\)"):
            pass_at_kt(table, k=[1], t=[1], ci=None)
    # the same rows without the repeat pass, in any order
    ok = runs.with_columns(sample_id=pl.int_range(pl.len()).over("arm", "question_id"))
    for table in (ok, ok.sample(fraction=1.0, shuffle=True, seed=2)):
        # 4 samples per question, 7 correct
        assert pass_at_kt(table, k=[1], t=[1], ci=None)["pass_at_kt"].item() == pytest.approx(7 / 12)
    # a group split into two blocks with the same sample ids is caught, not proven unique
    split = pl.concat([ok.filter(pl.col("sample_id") < 2), ok.filter(pl.col("sample_id") < 2)])
    with pytest.raises(InputError, match="duplicate"):
        pass_at_kt(split, k=[1], t=[1], ci=None)
    np.testing.assert_equal(pass_at_kt(ok, k=[1], t=[1], ci=None, by=()).height, 1)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["q1", "q2", "q10"]), st.booleans(),
                          st.integers(0, 9)), min_size=1, max_size=30),
       st.lists(st.one_of(st.integers(0, 8), st.just(200_000)), min_size=1, max_size=4, unique=True),
       st.booleans(), st.booleans())
def test_block_counting_equals_the_group_by(rows, depths, shuffle, descending_ids):
    # 200,000 in the grid makes the (block, rounds) histogram too wide: rounds are mapped to
    # depth indices first, the other branch of the counting
    from mechanism.analysis.passkt import _count_blocks, _count_truncation
    runs = pl.DataFrame(rows, schema=["arm", "question_id", "correct", "n_rounds"], orient="row")
    runs = runs.sort("arm", "question_id", maintain_order=True) if not shuffle else runs
    ids = pl.int_range(pl.len()).over("arm", "question_id")
    runs = runs.with_columns(sample_id=-ids if descending_ids else ids)
    ts = np.unique(np.asarray(depths))
    want = _count_truncation(runs, ["arm", "question_id"], ts).with_columns(
        pl.exclude("arm", "question_id").cast(pl.Int64))
    got = _count_blocks(runs, ts)
    key = pl.struct("arm", "question_id")
    contiguous = runs.select(key.rle_id().n_unique() == key.n_unique()).item()
    n_blocks = runs.select(key.rle_id().n_unique()).item()
    increasing = not descending_ids or runs.select(pl.len().over("arm", "question_id").max()).item() == 1
    if got is None:  # refused: split blocks, ids not increasing, or mostly one-row blocks
        assert not contiguous or not increasing or 2 * n_blocks > runs.height
    else:
        assert contiguous and increasing and got.equals(want)
    # whichever way it counts, pass_at_kt gives the group-by's numbers
    table = pass_at_kt(runs, k=[1], t=ts.tolist(), ci=None).sort("arm", "t")
    rates = want.group_by("arm").agg([(pl.col(f"c{i}") / pl.col("n")).mean() for i in range(ts.size)]).sort("arm")
    np.testing.assert_allclose(table["pass_at_kt"].to_numpy(), rates.drop("arm").to_numpy().reshape(-1),
                               rtol=0, atol=1e-12)
