"""The floor and ceiling of benchmarks/bench_strategies_floor.py on tiny worlds whose answer is
known: what each baseline can and cannot see, and a ceiling that separates separable moves."""
from __future__ import annotations

import json

import numpy as np
import pytest

from mechanism.core.schema import from_records, make_step


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_strategies_floor")


def _call(tool: str, value: str):
    return make_step(tool=tool, arguments=json.dumps({"id": value}), observation=f"{tool} result for {value}")


def _world(plans: dict[str, list[str]], n_questions: int = 10, n_samples: int = 2):
    """Every question answered by every plan ``n_samples`` times: (runs, planted labels)."""
    records, truth = [], []
    for q in range(n_questions):
        for name, tools in plans.items():
            for _ in range(n_samples):
                records.append({"arm": "a", "question_id": f"q{q}", "sample_id": len(records),
                                "question": f"Look up item {q}", "gold": ["x"], "answer": "x", "correct": True,
                                "n_rounds": len(tools), "steps": [_call(t, f"item{q}") for t in tools]})
                truth.append(name)
    return from_records(records), np.array(truth)


def test_tool_order_separates_tfidf_bigrams_not_rounds(bench):
    # the same two tools, in the opposite order: unigrams and call counts are equal
    runs, truth = _world({"lookup_first": ["lookup", "update"], "update_first": ["update", "lookup"]})
    assert bench.baseline_rounds(runs, truth, seed=0) == pytest.approx(0.0)
    assert bench.baseline_tfidf(runs, truth, seed=0) == pytest.approx(1.0)
    ceiling = bench.ceiling_supervised(runs, truth, seed=0)
    assert ceiling.ari == pytest.approx(1.0)
    assert ceiling.accuracy == pytest.approx(1.0)


def test_call_count_separates_rounds(bench):
    runs, truth = _world({"one": ["search"], "three": ["search", "search", "search"]})
    assert bench.baseline_rounds(runs, truth, seed=0) == pytest.approx(1.0)


def test_tool_names_are_whole_tokens(bench):
    # names that a default token pattern would split into shared pieces ("get", "user")
    runs, truth = _world({"a": ["get_user.v2", "get-user"], "b": ["get-user", "get_user.v2"]})
    assert bench.tool_documents(runs)[0] == "get_user.v2 get-user"
    assert bench.baseline_tfidf(runs, truth, seed=0) == pytest.approx(1.0)


def test_indistinguishable_plans_keep_the_ceiling_at_chance(bench):
    # two planted labels over identical trajectories: nothing can tell them apart
    runs, _ = _world({"a": ["search", "open"], "b": ["search", "open"]})
    truth = np.array(["a", "b"] * (runs.height // 2))
    ceiling = bench.ceiling_supervised(runs, truth, seed=0)
    assert ceiling.ari < 0.1
    assert ceiling.accuracy <= 0.6


def test_verdict(bench):
    assert bench.verdict(0.5, floor=0.6, ceiling=1.0) == "below floor"
    assert bench.verdict(0.9, floor=0.6, ceiling=1.0) == "meets bar"
    assert bench.verdict(0.7, floor=0.6, ceiling=0.74) == "meets bar"
    assert bench.verdict(0.7, floor=0.6, ceiling=0.95) == "ok"


def test_seeds_below_floor_compare_each_seed_with_its_own_better_baseline(bench):
    # each seed against its own better baseline: the means (0.60 against 0.40) hide the second seed
    cells = [{"rounds": 0.10, "tfidf": 0.50, "default": 0.70},   # above TF-IDF
             {"rounds": 0.65, "tfidf": 0.20, "default": 0.60},   # under rounds, above TF-IDF
             {"rounds": 0.30, "tfidf": 0.50, "default": 0.50}]   # equal: not below
    assert bench.below_at(cells) == 1
    assert bench.below_at(cells[:1] + cells[2:]) == 0


def test_composition_error_is_the_split_under_the_found_labels_minus_the_planted(bench):
    # two plans, rl moving mass from the one that fails to the one that succeeds: all of
    # rl's gain is composition under the planted labels
    records, truth = [], []
    for q in range(12):
        for arm, mix in (("base", ("a", "a", "a", "b")), ("rl", ("a", "b", "b", "b"))):
            for s, plan in enumerate(mix):
                records.append({"arm": arm, "question_id": f"q{q}", "sample_id": s, "question": f"Look up item {q}",
                                "gold": ["x"], "answer": "x" if plan == "b" else "y", "correct": plan == "b",
                                "n_rounds": 1, "steps": [_call(plan, f"item{q}")]})
                truth.append(plan)
    runs, truth = from_records(records), np.array(truth)
    assert bench.composition(runs, truth) == pytest.approx(0.5)
    assert bench.composition_error(runs, truth, truth) == pytest.approx(0.0)
    # one label for all: nothing is composition, so the whole planted split is the error
    assert bench.composition_error(runs, truth, np.zeros(len(truth), dtype=int)) == pytest.approx(-0.5)
    assert bench.composition_error(runs.with_columns(arm=runs["arm"] + "_x"), truth, truth) is None


def test_the_ceiling_does_not_hold_out_a_kind_of_question_whose_period_is_the_folds(bench):
    # question q of kind q % 5 has its kind's tools, and a strategy checks before it finishes or
    # not. Folds dealt out in question order held out one kind each, its tools never seen in
    # training: accuracy at chance (0.5) where it is 1.0 with every kind in training
    records, truth = [], []
    for q in range(40):
        for first in ("check", "finish"):
            for _ in range(2):
                tools = [f"check_{q % 5}", f"finish_{q % 5}"] if first == "check" else [f"finish_{q % 5}"]
                records.append({"arm": "a", "question_id": f"q{q:02d}", "sample_id": len(records),
                                "question": f"Look up item {q}", "gold": ["x"], "answer": "x", "correct": True,
                                "n_rounds": 2, "steps": [_call(t, f"item{q}") for t in tools]})
                truth.append(first)
    ceiling = bench.ceiling_supervised(from_records(records), np.array(truth), seed=0)
    assert ceiling.accuracy == pytest.approx(1.0)
