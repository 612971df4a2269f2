"""`StrategySpace(by=...)`: strategies found within the task kinds a benchmark declares."""
from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

import mechanism as mx
from mechanism.core.errors import InputError
from mechanism.core.schema import from_records, make_step

FAST = "hashing-64"


def _runs(kinds=("math", "code"), n_questions=8):
    """Two plans used on two kinds of task: look-then-answer and look-twice-then-answer."""
    records = []
    for kind in kinds:
        for q in range(n_questions):
            for sample in range(4):
                calls = ["lookup"] if sample % 2 else ["lookup", "verify"]
                records.append({"arm": "base" if sample < 2 else "rl", "question_id": f"{kind}-{q}",
                                "sample_id": sample, "question": f"Solve task {q} of {kind}", "gold": [],
                                "answer": "x", "correct": True, "n_rounds": len(calls), "category": kind,
                                "steps": [make_step(tool=c, arguments=json.dumps({"q": f"task {q}"}),
                                                    observation="ok") for c in calls]})
    return from_records(records)


def _fit(runs, **kw):
    return mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False, **kw).fit(runs)


def test_strategies_never_cross_a_declared_kind():
    runs = _runs()
    pooled = _fit(runs)
    assert pooled.n_strategies_ == 2  # the same two plans on both kinds
    within = _fit(runs, by="category")
    assert within.kinds_ == ["code", "math"] and within.n_strategies_ == 4
    table = pl.DataFrame({"kind": runs["category"], "strategy": within.labels_})
    assert (table.group_by("strategy").agg(pl.col("kind").n_unique())["kind"] == 1).all()
    # within each kind, the same split as the pooled fit
    for kind in ("code", "math"):
        mask = (runs["category"] == kind).to_numpy()
        assert len(set(zip(within.labels_[mask], pooled.labels_[mask]))) == 2


def test_a_saved_space_assigns_within_kinds_and_calls_an_unseen_kind_an_outlier(tmp_path):
    runs = _runs()
    space = _fit(runs, by="category")
    loaded = mx.StrategySpace.load(space.save(tmp_path / "space"))
    assert loaded.by == "category" and loaded.kinds_ == ["code", "math"]
    assert (loaded.transform(runs) == space.labels_).all()
    other = _runs(kinds=("poetry",), n_questions=2)
    assert (loaded.transform(other) == -1).all()
    with pytest.raises(InputError, match="`category`"):
        loaded.transform(runs.drop("category"))


def test_by_names_a_column_of_the_runs():
    runs = _runs()
    with pytest.raises(InputError, match="`by`"):
        _fit(runs, by="task_type")
    with pytest.raises(InputError, match="`by`"):
        _fit(runs, by=3)
    assert np.array_equal(_fit(runs, by=None).labels_, _fit(runs).labels_)
