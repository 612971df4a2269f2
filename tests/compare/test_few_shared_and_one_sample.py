"""Comparisons between arms refuse, with one line naming ``question_key=``, arms that share
fewer than half of their questions unless forced; with one sample per arm and question the
notes say what the split then means."""
from __future__ import annotations

import polars as pl
import pytest

import mechanism as mx
from mechanism.core.errors import InputError
from mechanism.core.schema import count_shared, refuse_few_shared


@pytest.fixture(scope="module")
def one_sample():
    """Two arms, 12 questions, one trajectory per arm and question."""
    return mx.simulate(n_questions=12, n_samples=1, random_state=0, progress=False).runs.filter(
        pl.col("arm").is_in(["base", "rl"]))


def _drifted(runs: pl.DataFrame) -> pl.DataFrame:
    """The treated arm's ids changed for all but 3 of 12 questions (text that changed between trials)."""
    keep = sorted(runs["question_id"].unique().to_list())[:3]
    return runs.with_columns(pl.when((pl.col("arm") == "rl") & ~pl.col("question_id").is_in(keep))
                             .then(pl.col("question_id") + "-reflected").otherwise(pl.col("question_id"))
                             .alias("question_id"))


def test_the_check_counts_and_refuses_below_half_only():
    runs = pl.DataFrame({"arm": ["a"] * 4 + ["b"] * 4, "question_id": ["1", "2", "3", "4", "1", "2", "5", "6"]})
    assert count_shared(runs, ["a", "b"]) == (2, 6)
    with pytest.raises(InputError, match=r"^track: arms 'a', 'b' share 2 of 6 questions \(below half\).*"
                                         r"`question_key=`.*`--allow-few-shared`"):
        refuse_few_shared(2, 6, ["a", "b"], what="track", force="--allow-few-shared")
    refuse_few_shared(3, 6, ["a", "b"])  # half is enough


@pytest.mark.parametrize("name", ["reweighting", "integration", "boundary"])
def test_each_comparison_refuses_few_shared_questions_unless_forced(one_sample, name):
    runs = _drifted(one_sample)
    labels = runs["n_rounds"].clip(0, 2).to_numpy()
    calls = {"reweighting": lambda **kw: mx.reweighting(runs, labels, base="base", treated="rl", n_boot=5,
                                                        n_permutations=0, **kw),
             "integration": lambda **kw: mx.integration(runs, base="base", treated="rl", n_boot=5, **kw),
             "boundary": lambda **kw: mx.boundary(runs, base="base", treated="rl", k=[1], t=[1], n_boot=5, **kw)}
    with pytest.raises(InputError, match=rf"^{name}: arms 'base', 'rl' share 3 of 21 questions \(below half\)") as e:
        calls[name]()
    assert "question_key=" in str(e.value) and "allow_few_shared=True" in str(e.value) and "\n" not in str(e.value)
    with pytest.warns(mx.ComparisonWarning, match="share 3 of 21 questions"):
        calls[name](allow_few_shared=True)


def test_one_sample_per_arm_says_what_the_split_means(one_sample):
    labels = one_sample["n_rounds"].clip(0, 2).to_numpy()
    rw = mx.reweighting(one_sample, labels, base="base", treated="rl", n_boot=5, n_permutations=0)
    integ = mx.integration(one_sample, base="base", treated="rl", labels=labels, n_boot=5)
    for notes in (list(rw.notes), list(integ.notes)):
        (note,) = [n for n in notes if "one sample per question" in n]
        assert "every arm" in note and "same-vs-different label" in note and "PASS@k is 0/1" in note
    # one arm with several samples per question: the narrower note, no claim about the whole design
    two = pl.concat([one_sample, one_sample.filter(pl.col("arm") == "rl").with_columns(pl.lit(1).alias("sample_id"))],
                    how="diagonal_relaxed")
    rw2 = mx.reweighting(two, two["n_rounds"].clip(0, 2).to_numpy(), base="base", treated="rl", n_boot=5,
                         n_permutations=0)
    (note,) = [n for n in rw2.notes if "one sample per question" in n]
    assert note.startswith("one sample per question in one arm") and "same-vs-different" not in note
