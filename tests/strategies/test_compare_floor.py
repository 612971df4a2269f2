"""benchmarks/compare_floor.py: a change told from the worlds' draw by paired cells, checked
against a hand-computed t interval and on records whose answer is planted."""
from __future__ import annotations

import math

import numpy as np
import pytest


@pytest.fixture(scope="module")
def compare(load_benchmark):
    return load_benchmark("compare_floor")


def _record(values: dict[tuple[str, int], float]) -> dict:
    return {"per_seed": [{"world": w, "seed": s, "default": v, "composition_error": -v / 10}
                         for (w, s), v in values.items()]}


def _draw(draw: int = 0, worlds: int = 30, seeds: int = 6) -> dict[tuple[str, int], float]:
    """Each world's ARI at each seed: one level per world (the same for every ``draw``) plus a
    draw of 0.05 per cell."""
    level = np.random.default_rng(0).uniform(0.3, 0.95, worlds)
    rng = np.random.default_rng(100 + draw)
    return {(f"w{i}", s): float(np.clip(level[i] + rng.normal(0, 0.05), 0, 1))
            for i in range(worlds) for s in range(seeds)}


def _interval(row: dict) -> tuple[float, float]:
    low, high = row["95% interval"].strip("[]").split(", ")
    return float(low), float(high)


def test_interval_is_students_t_by_hand(compare):
    # mean 0.1, sd 0.1 over 4 seeds: t(0.975, 3) = 3.182446305
    mean, low, high = compare.paired_interval([0.0, 0.1, 0.1, 0.2])
    sd = math.sqrt((0.01 + 0 + 0 + 0.01) / 3)
    assert mean == pytest.approx(0.1)
    assert (high - low) / 2 == pytest.approx(3.182446305 * sd / 2)
    assert all(math.isnan(x) for x in compare.paired_interval([0.3])[1:])


def test_identical_records_and_a_redrawn_world_are_within_the_draw(compare):
    before = _draw(0)
    same = compare.compare(_record(before), _record(before))
    assert same[-1]["after - before"] == 0 and same[-1]["verdict"] == "within the draw"
    # another draw of the same worlds: no change of method, only the draw
    for draw in (1, 2, 3):
        redrawn = compare.compare(_record(before), _record(_draw(draw)))
        low, high = _interval(redrawn[-1])
        assert low < 0 < high and redrawn[-1]["verdict"] == "within the draw"


def test_a_planted_gain_is_found_and_its_size_read_back(compare):
    before = _draw(0)
    rng = np.random.default_rng(5)
    # +0.02 on every cell beside a per-cell draw of 0.05 that the pairing does not cancel
    after = {k: v + 0.02 + float(rng.normal(0, 0.05)) for k, v in before.items()}
    rows = compare.compare(_record(before), _record(after))
    assert rows[-1]["verdict"] == "gain"
    low, high = _interval(rows[-1])
    assert low < 30 * 0.02 < high
    lower = compare.compare(_record(after), _record(before))
    assert lower[-1]["verdict"] == "loss"


def test_unshared_worlds_are_left_out_and_named(compare):
    before = _draw(0, worlds=3, seeds=2)
    after = {k: v for k, v in before.items() if k != ("w2", 1)}
    rows = compare.compare(_record(before), _record(after))
    assert [r["world"] for r in rows[:-1]] == ["w0", "w1"]
    assert rows[-1]["world"] == "sum over 2 worlds (left out: w2)"
    with pytest.raises(ValueError, match="not a floor record"):
        compare.compare({"rows": []}, _record(before))


def test_composition_error_is_compared_by_its_size(compare):
    rows = compare.compare(_record({("a", 0): 0.5, ("a", 1): 0.5}), _record({("a", 0): 0.3, ("a", 1): 0.3}),
                           key="composition_error")
    assert rows[0]["before"] == 0.05 and rows[0]["after"] == 0.03
