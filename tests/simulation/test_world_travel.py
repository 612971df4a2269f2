"""The travel-booking world (mechanism.datasets.worlds.travel): OpenAI records read back with
`mechanism.read` as a user's files are, the truth it carries, and the planted design (failures
inside every tool-using strategy, optional steps at fixed rates, every strategy on every kind of
task, arms differing only in their mixture). Strategy discovery is not evaluated here."""
from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from world_checks import assert_arms_differ_only_in_mixture, openai_calls

import mechanism as mx
from mechanism.datasets import worlds
from mechanism.datasets.worlds import travel
from mechanism.datasets.worlds.travel import _P_FAIL, _P_LOOKUP_FIRST, _P_PROFILE_FIRST, ARMS, KINDS, STRATEGIES

TOOLS = {"get_user", "get_reservation", "search_flights", "search_hotels", "book", "change_reservation",
         "cancel_reservation"}
TOOL_USING = [s for s in STRATEGIES if s != "no_tools"]


@pytest.fixture(scope="module")
def world():
    return travel(n_questions=40, random_state=0)


@pytest.fixture(scope="module")
def runs(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("travel")), format="openai")


@pytest.fixture(scope="module")
def big():
    """A larger sample for the rates (both arms, pooled over two seeds)."""
    return [travel(n_questions=150, random_state=seed) for seed in (1, 2)]


def _calls(record):
    return openai_calls(record, parse_arguments=False)


def _ok(record):
    return [tool for tool, _, obs in _calls(record) if not obs.startswith("Error:")]


def _table(big):
    return pl.concat([w.truth.with_columns(correct=pl.Series([r["correct"] for r in w.records])) for w in big])


def test_is_a_planted_world(world):
    assert isinstance(world, worlds.PlantedWorld)
    assert world.format == "openai" and world.name == "travel"
    assert "travel" in worlds.__all__ and "travel" in worlds.WORLDS
    assert set(world.truth["strategy"]) == set(STRATEGIES)


def test_read_back_one_row_per_trajectory(world, runs):
    assert runs.height == len(world.records) == 2 * 40 * 4
    assert sorted(set(runs["arm"])) == ["base", "rl"]
    assert not any(label is None for label in world.labels_for(runs))
    joined = world.join_truth(runs)
    assert joined["n_calls"].null_count() == 0
    # the reader's rounds are the generator's tool calls, failed ones included
    assert runs["n_rounds"].to_list() == joined["n_calls"].to_list()
    assert [len(_calls(r)) for r in world.records] == world.truth["n_calls"].to_list()
    by_key = {(r["arm"], r["question_id"], r["sample_id"]): r["correct"] for r in world.records}
    for arm, qid, sample, correct in runs.select("arm", "question_id", "sample_id", "correct").iter_rows():
        assert by_key[(arm, qid, sample)] == correct


def test_records_use_the_seven_tools_and_end_in_an_answer(world):
    used = set()
    for rec in world.records:
        last = rec["messages"][-1]
        assert last["role"] == "assistant" and not last.get("tool_calls") and last["content"]
        used |= {tool for tool, _, _ in _calls(rec)}
        # the user message names the user id and the reservation id
        assert "_" in rec["messages"][1]["content"]
    assert used == TOOLS


def test_same_seed_same_records_other_seed_other():
    a, b, c = (travel(n_questions=5, random_state=s) for s in (3, 3, 4))
    assert json.dumps(a.records) == json.dumps(b.records)
    assert a.truth.equals(b.truth)
    assert json.dumps(a.records) != json.dumps(c.records)


def test_every_failure_is_followed_by_the_same_tool(big):
    for w in big:
        for rec, n_failures in zip(w.records, w.truth["n_failures"].to_list()):
            calls = _calls(rec)
            failed = [i for i, (_, _, obs) in enumerate(calls) if obs.startswith("Error:")]
            assert len(failed) == n_failures
            for i in failed:
                assert i + 1 < len(calls) and calls[i + 1][0] == calls[i][0]
                assert not calls[i + 1][2].startswith("Error:")
                assert calls[i + 1][1] != calls[i][1]  # corrected arguments


def test_every_tool_using_strategy_has_failures(big):
    t = _table(big).group_by("strategy").agg(pl.col("n_failures").sum(), pl.col("n_calls").sum())
    rates = {s: (f, c) for s, f, c in t.iter_rows()}
    assert rates["no_tools"] == (0, 0)
    for s in TOOL_USING:
        failures, calls = rates[s]
        assert abs(failures / (calls - failures) - _P_FAIL) < 0.05, (s, failures, calls)


def test_every_strategy_on_every_kind_of_task(big):
    t = _table(big)
    pairs = set(t.select("strategy", "kind").unique().iter_rows())
    assert pairs == {(s, k) for s in STRATEGIES for k in KINDS}
    # the strategy is drawn independently of the kind: shares alike across kinds
    for arm in ARMS:
        sub = t.filter(pl.col("arm") == arm)
        overall = dict(sub["strategy"].value_counts(normalize=True).iter_rows())
        for k in KINDS:
            got = dict(sub.filter(pl.col("kind") == k)["strategy"].value_counts(normalize=True).iter_rows())
            for s in STRATEGIES:
                assert abs(got.get(s, 0.0) - overall[s]) < 0.1, (arm, k, s)


def test_arms_differ_only_in_their_mixture(big):
    assert_arms_differ_only_in_mixture(_table(big), ARMS, tool_free="no_tools")


def test_call_counts_overlap_and_repeat_inside_strategies(big):
    t = _table(big)
    ranges = {s: (lo, hi) for s, lo, hi in t.group_by("strategy").agg(pl.col("n_calls").min().alias("lo"),
                                                                      pl.col("n_calls").max().alias("hi")).iter_rows()}
    assert ranges["no_tools"] == (0, 0)
    for s in TOOL_USING:
        lo, hi = ranges[s]
        assert hi > lo, s
        assert any(ranges[o][0] <= hi and lo <= ranges[o][1] for o in TOOL_USING if o != s), s
    searches, trips = set(), set()
    for w in big:
        for rec, s in zip(w.records, w.truth["strategy"].to_list()):
            ok = _ok(rec)
            if s == "broad_search":
                searches.add(ok.count("search_flights") + ok.count("search_hotels"))
            if s == "survey_trips":
                trips.add(ok.count("get_reservation"))
    assert searches == {2, 3, 4} and trips == {2, 3}


def test_optional_steps_at_fixed_rates_whatever_the_arm(big):
    lookup = {"base": [], "rl": []}
    profile = {"base": [], "rl": []}
    for w in big:
        for rec, s in zip(w.records, w.truth["strategy"].to_list()):
            ok = _ok(rec)
            if s == "broad_search":
                lookup[rec["arm"]].append(ok[0] == "get_reservation")
            if s == "verify_after":
                profile[rec["arm"]].append(ok[0] == "get_user")
    for arm in ("base", "rl"):
        assert abs(np.mean(lookup[arm]) - _P_LOOKUP_FIRST) < 0.1, (arm, np.mean(lookup[arm]))
        assert abs(np.mean(profile[arm]) - _P_PROFILE_FIRST) < 0.1, (arm, np.mean(profile[arm]))


def test_words_and_arguments_vary_inside_every_strategy(big):
    w = big[0]
    for s in STRATEGIES:
        recs = [r for r, t in zip(w.records, w.truth["strategy"].to_list()) if t == s]
        said = {m["content"] for r in recs for m in r["messages"][2:] if m["role"] == "assistant" and m["content"]}
        assert len(said) > 5, s
        if s != "no_tools":
            assert len({args for r in recs for _, args, _ in _calls(r)}) > 20, s
