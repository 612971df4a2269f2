"""The spreadsheet-agent world (:func:`mechanism.datasets.worlds.sheet`): ATIF v1.4 documents read back
one row per trajectory, tool-call counts as planted, reproducible, arms that differ only in their
mixture, failures inside every tool-using strategy, every strategy on every kind of task."""
from __future__ import annotations

import json

import polars as pl
import pytest
from world_checks import assert_arms_differ_only_in_mixture

import mechanism as mx
from mechanism.datasets import worlds
from mechanism.datasets.worlds import sheet
from mechanism.datasets.worlds.sheet import _P_CHECK, _P_LIST, ARMS, KINDS, STRATEGIES


@pytest.fixture(scope="module")
def world():
    return sheet(n_questions=40, n_samples=4, random_state=3)


@pytest.fixture(scope="module")
def runs(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("sheet")), format="atif")


def test_is_a_planted_world(world):
    assert isinstance(world, worlds.PlantedWorld)
    assert world.format == "atif" and "sheet" in worlds.__all__
    assert set(world.truth["strategy"]) == set(STRATEGIES)
    assert {"strategy", "n_calls", "n_failures", "kind", "correct"} <= set(world.truth.columns)


def test_reads_back_one_row_per_trajectory(world, runs):
    assert runs.height == world.truth.height == len(world.records)
    assert not runs.select("arm", "question_id", "sample_id").is_duplicated().any()
    assert set(runs["arm"]) == set(ARMS)
    labels = world.labels_for(runs)
    assert all(label is not None for label in labels)
    joined = world.join_truth(runs)
    assert joined["strategy"].null_count() == 0
    calls = runs.select(pl.col("steps").list.len().alias("calls"), "n_rounds")
    assert calls["calls"].to_list() == joined["n_calls"].to_list()
    assert calls["n_rounds"].to_list() == joined["n_calls"].to_list()
    # the success label read from `extra.correct` is the truth's
    assert runs["correct"].to_list() == joined["correct"].to_list()


def test_same_random_state_same_records():
    a, b = sheet(n_questions=8, n_samples=2, random_state=11), sheet(n_questions=8, n_samples=2, random_state=11)
    assert json.dumps(a.records) == json.dumps(b.records)
    assert a.truth.equals(b.truth)
    c = sheet(n_questions=8, n_samples=2, random_state=12)
    assert json.dumps(a.records) != json.dumps(c.records)


def test_arms_differ_only_in_mixture():
    t = pl.concat([sheet(n_questions=60, n_samples=5, random_state=s).truth for s in range(4)])
    assert_arms_differ_only_in_mixture(t, ARMS, tool_free="from_prompt")


def test_failures_in_every_tool_using_strategy_and_none_without_tools(world):
    t = pl.concat([world.truth, sheet(n_questions=40, n_samples=4, random_state=4).truth])
    fails = dict(t.group_by("strategy").agg(pl.col("n_failures").sum()).iter_rows())
    for s in STRATEGIES:
        if s == "from_prompt":
            assert fails[s] == 0
        else:
            assert fails[s] > 0, s
    assert t.filter(pl.col("strategy") == "from_prompt")["n_calls"].sum() == 0
    assert (t.filter(pl.col("strategy") != "from_prompt")["n_calls"] > 0).all()


def test_every_failure_is_followed_by_the_same_tool(world):
    for rec in world.records:
        agent = [st for st in rec["steps"] if st.get("tool_calls")]
        for st, nxt in zip(agent, agent[1:] + [None]):
            if st["observation"]["results"][0]["content"].startswith("Error:"):
                assert nxt is not None
                assert nxt["tool_calls"][0]["function_name"] == st["tool_calls"][0]["function_name"]


def test_every_strategy_on_every_kind_and_call_counts_overlap():
    t = sheet(n_questions=80, n_samples=4, random_state=5).truth
    pairs = set(t.select("strategy", "kind").unique().iter_rows())
    assert pairs == {(s, k) for s in STRATEGIES for k in KINDS}
    ranges = {s: (lo, hi) for s, lo, hi in t.group_by("strategy").agg(
        pl.col("n_calls").min().alias("lo"), pl.col("n_calls").max().alias("hi")).iter_rows()}
    tool_users = [s for s in STRATEGIES if s != "from_prompt"]
    for s in tool_users:  # each tool-using strategy's call counts overlap another's
        lo, hi = ranges[s]
        assert any(ranges[o][0] <= hi and lo <= ranges[o][1] for o in tool_users if o != s), (s, ranges)


def test_optional_steps_at_fixed_rates():
    """The first call is list_sheets at about _P_LIST outside read_all (always there), and the
    last call before the answer is a read_range about _P_CHECK more often than without it."""
    w = sheet(n_questions=80, n_samples=5, random_state=6)
    first = {}
    for rec, strategy in zip(w.records, w.truth["strategy"].to_list()):
        calls = [st["tool_calls"][0]["function_name"] for st in rec["steps"] if st.get("tool_calls")]
        if calls:
            first.setdefault(strategy, []).append(calls[0] == "list_sheets")
    assert all(first["read_all"])
    others = [x for s, xs in first.items() if s != "read_all" for x in xs]
    # a failed list_sheets still opens with list_sheets: the rate is _P_LIST
    assert abs(sum(others) / len(others) - _P_LIST) < 0.05
    assert 0 < _P_CHECK < 1


def test_finishing_step_follows_the_kind_of_task():
    w = sheet(n_questions=40, n_samples=4, random_state=7)
    finish = {"column": "write_range", "fix": "set_formula", "chart": "create_chart"}
    for rec, strategy, kind in zip(w.records, w.truth["strategy"].to_list(), w.truth["kind"].to_list()):
        tools = [st["tool_calls"][0]["function_name"] for st in rec["steps"] if st.get("tool_calls")]
        if strategy in ("from_prompt", "macro"):
            continue
        if kind in finish:
            assert finish[kind] in tools, (strategy, kind, tools)
        else:
            assert "write_range" not in tools and "create_chart" not in tools
