"""The held-out REST-API world (mechanism.datasets.worlds.rest): its shape, reproducibility, planted
mixture, failures, and that it reads back with ``mechanism.read`` with the planted calls. Strategy
discovery is not evaluated here."""
from __future__ import annotations

import json

import polars as pl
import pytest
from world_checks import assert_arms_differ_only_in_mixture, openai_calls

import mechanism as mx
from mechanism.datasets.worlds._base import PlantedWorld
from mechanism.datasets.worlds.rest import _SUCCESS, ARMS, STRATEGIES, rest

TOOLS = {"http_request", "http_get"}


@pytest.fixture(scope="module")
def world():
    return rest(n_questions=60, n_samples=4, random_state=0)


@pytest.fixture(scope="module")
def runs(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("rest")), format=world.format)


def _failed(content: str) -> bool:
    """A failure response: a 4xx/5xx status line, or a 200 whose JSON body reports an error."""
    head, _, body = content.partition("\n\n")
    status = head.splitlines()[0].split()  # "HTTP/1.1 404 Not Found", "HTTP/2 404" or "404 Not Found"
    code = int(status[1] if status[0].startswith("HTTP/") else status[0])
    return code >= 400 or json.loads(body).get("status") == "error"


def test_shape_and_truth_columns():
    w = rest(n_questions=2, n_samples=1)
    assert isinstance(w, PlantedWorld)
    assert w.format == "openai" and len(w.records) == 2 * 2 * 1
    assert sorted(w.truth.columns) == ["arm", "n_calls", "n_failures", "question_id", "sample_id", "strategy"]
    assert set(w.truth["question_id"]) == {"rest-0000", "rest-0001"}
    assert sorted(set(w.truth["arm"])) == ["base", "rl"]


def test_arms_are_valid_mixtures():
    assert set(_SUCCESS) == set(STRATEGIES)
    for mix in ARMS.values():
        assert set(mix) == set(STRATEGIES)
        assert abs(sum(mix.values()) - 1) < 1e-9 and min(mix.values()) >= 0.05
    assert sum(abs(ARMS["base"][s] - ARMS["rl"][s]) >= 0.05 for s in STRATEGIES) >= 4


def test_same_seed_same_records_other_seed_other_records():
    a, b = rest(n_questions=5, random_state=3), rest(n_questions=5, random_state=3)
    assert json.dumps(a.records) == json.dumps(b.records) and a.truth.equals(b.truth)
    c = rest(n_questions=5, random_state=4)
    assert json.dumps(a.records) != json.dumps(c.records)


def test_every_strategy_appears_and_shares_follow_the_arms(world):
    t = world.truth
    assert t.height == len(world.records) == 2 * 60 * 4
    assert set(t["strategy"]) == set(STRATEGIES)
    big = rest(n_questions=150, n_samples=4, random_state=1)
    assert_arms_differ_only_in_mixture(big.truth.with_columns(correct=pl.Series([r["correct"] for r in big.records])),
                                       ARMS, tool_free="no_call")
    assert world.planted["split"]["rl"]["all"]["pure_reweighting"]


def test_reads_back_with_the_planted_calls(world, runs):
    assert runs.height == len(world.records)
    truth = world.join_truth(runs)
    assert truth["n_calls"].null_count() == 0
    assert runs["n_rounds"].to_list() == truth["n_calls"].to_list()
    by_key = {(r["arm"], r["question_id"], r["sample_id"]): r for r in world.records}
    for row in runs.head(80).iter_rows(named=True):
        rec = by_key[(row["arm"], row["question_id"], row["sample_id"])]
        assert [s["tool"] for s in row["steps"]] == [name for name, _, _ in openai_calls(rec)]
    assert {s["tool"] for steps in runs["steps"].to_list() for s in steps} == TOOLS
    assert not any(x is None for x in world.labels_for(runs))


def test_no_call_has_zero_calls_and_every_other_strategy_calls_and_fails(world):
    t = world.truth
    assert (t.filter(pl.col("strategy") == "no_call")["n_calls"] == 0).all()
    for s in STRATEGIES:
        if s != "no_call":
            sub = t.filter(pl.col("strategy") == s)
            assert (sub["n_calls"] > 0).all() and sub["n_failures"].sum() > 0, s
    assert all(len(openai_calls(r)) == n for r, n in zip(world.records, t["n_calls"].to_list()))


def test_failures_are_error_responses_followed_by_the_same_tool(world):
    counted = []
    for rec in world.records:
        calls = openai_calls(rec)
        failed = [_failed(observation) for _, _, observation in calls]
        counted.append(sum(failed))
        for j, f in enumerate(failed):
            if f:
                assert j + 1 < len(calls) and calls[j + 1][0] == calls[j][0]
        assert rec["messages"][-1]["role"] == "assistant" and "tool_calls" not in rec["messages"][-1]
    assert counted == world.truth["n_failures"].to_list()


def test_call_counts_overlap_between_strategies(world):
    ranges = {s: (sub["n_calls"].min(), sub["n_calls"].max())
              for (s,), sub in world.truth.filter(pl.col("strategy") != "no_call").group_by("strategy")}
    for s, (lo, hi) in ranges.items():
        assert hi - lo >= 3, (s, lo, hi)
        assert all(lo <= ohi and olo <= hi for o, (olo, ohi) in ranges.items() if o != s), s
