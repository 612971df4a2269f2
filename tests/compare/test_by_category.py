"""Task type throughout: ``by="category"`` on boundary, reweighting, integration and track
gives each category's results beside the pooled ones, key column ``category``."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import mechanism as mx
from mechanism.core.errors import InputError
from mechanism.core.schema import from_records, make_step


def runs_with_categories(seed: int = 0, n_q: int = 24, n: int = 4,
                         arms: tuple[str, ...] = ("base", "rl")) -> tuple[pl.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    records, labels = [], []
    for arm in arms:
        for q in range(n_q):
            category = "bridge" if q % 2 else "comparison"
            lift = 0.3 if (arm != arms[0] and category == "bridge") else 0.0
            for j in range(n):
                ok = rng.random() < 0.3 + lift
                records.append({"arm": arm, "question_id": f"q{q:02d}", "sample_id": j, "question": "?",
                                "gold": ["Paris"], "answer": "x", "correct": bool(ok),
                                "n_rounds": int(rng.integers(0, 3)),
                                "steps": [make_step(query="q", observation="Paris" if ok else "none")],
                                "category": category})
                labels.append(int(rng.integers(0, 3)))
    frame = from_records(records)
    if "category" not in frame.columns:  # kept in meta by the schema: lift it to a column
        frame = frame.with_columns(pl.Series("category", [r["category"] for r in records]))
    return frame, np.array(labels)


def _check(table: pl.DataFrame, pooled_frame: pl.DataFrame) -> None:
    assert table.columns[0] == "category"
    assert set(table["category"]) == {"all", "bridge", "comparison"}
    assert table.filter(pl.col("category") == "all").drop("category").equals(pooled_frame)


def test_boundary_by_category():
    runs, _ = runs_with_categories()
    b = mx.boundary(runs, base="base", treated="rl", t=[1, 2], k=[1, 2], n_boot=50, n_permutations=500, by="category")
    _check(b.by_category, b.to_frame())
    bridge = mx.boundary(runs.filter(pl.col("category") == "bridge"), base="base", treated="rl", t=[1, 2],
                         k=[1, 2], n_boot=50, n_permutations=500)
    assert b.by_category.filter(pl.col("category") == "bridge").drop("category").equals(bridge.to_frame())
    assert "by_category" in b.tables()


def test_reweighting_by_category_and_its_gain_where_it_was_planted():
    runs, labels = runs_with_categories(n_q=60)
    rw = mx.reweighting(runs, labels, base="base", treated="rl", n_boot=100, n_permutations=0, by="category")
    _check(rw.by_category, rw.to_frame())
    total = {r["category"]: r["estimate"]
             for r in rw.by_category.filter(pl.col("quantity") == "total").iter_rows(named=True)}
    assert total["bridge"] > total["comparison"] + 0.1  # the lift was planted on bridge questions only
    mask = (runs["category"] == "bridge").to_numpy()
    alone = mx.reweighting(runs.filter(pl.Series(mask)), labels[mask], base="base", treated="rl", n_boot=100,
                           n_permutations=0)
    assert total["bridge"] == alone.total
    assert "by_category" in rw.tables()


def test_integration_and_track_by_category():
    runs, labels = runs_with_categories()
    res = mx.integration(runs, base="base", treated="rl", labels=labels, n_boot=50, by="category")
    _check(res.by_category, res.to_frame())
    assert "by_category" in res.tables()
    series, labels3 = runs_with_categories(arms=("step-0", "step-1", "step-2"))
    tr = mx.track(series, labels=labels3, k=[1, 2], t=[1, 2], n_boot=30, by="category")
    _check(tr.by_category, tr.to_frame())
    with pytest.raises(InputError, match="`by` needs `labels`"):
        mx.track(series, by="category")


def test_missing_category_column_and_a_category_one_arm_never_answered():
    runs, labels = runs_with_categories()
    with pytest.raises(InputError, match="no column `topic`"):
        mx.boundary(runs, base="base", treated="rl", t=[1], k=[1], by="topic")
    # rl never answered the "comparison" questions: that category is left out, and said so
    keep = ~((runs["arm"] == "rl") & (runs["category"] == "comparison")).to_numpy()
    rw = mx.reweighting(runs.filter(pl.Series(keep)), labels[keep], base="base", treated="rl", n_boot=30,
                        n_permutations=0, by="category")
    assert set(rw.by_category["category"]) == {"all", "bridge"}
    assert any("category 'comparison'" in n for n in rw.notes)
