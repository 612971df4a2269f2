"""The quantitative-research world (mechanism.datasets.worlds.research): ReAct text records read back with
`mechanism.read` as a user's files are, the truth it carries, and the planted design (failures
inside every tool-using strategy, optional steps at fixed rates, every strategy on every kind of
task, arms differing only in their mixture). Strategy discovery is not evaluated here."""
from __future__ import annotations

import json
import re

import numpy as np
import polars as pl
import pytest
from world_checks import assert_arms_differ_only_in_mixture

import mechanism as mx
from mechanism.datasets import worlds
from mechanism.datasets.worlds import research
from mechanism.datasets.worlds.research import (
    _P_CHAIN_LOOKUP,
    _P_CHECK_LOOKUP,
    _P_FAIL,
    _P_REFINE,
    ARMS,
    FAILED,
    KINDS,
    STRATEGIES,
)

TOOLS = {"search", "lookup", "calculate", "python", "paper"}
_ROUND = re.compile(r"^Action (\d+): (\w+)\[(.*)\]$\nObservation \1: (.*?)(?=^Thought \d+:|\Z)", re.M | re.S)


@pytest.fixture(scope="module")
def world():
    return research(n_questions=40, random_state=0)


@pytest.fixture(scope="module")
def runs(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("research")), format="react")


@pytest.fixture(scope="module")
def big():
    """A larger sample for the rates (both arms, pooled over two seeds)."""
    return [research(n_questions=150, random_state=seed) for seed in (1, 2)]


def _calls(record):
    """(tool, argument, observation) of every tool call of a transcript, in order."""
    return [(tool.lower(), arg, obs.strip()) for _, tool, arg, obs in _ROUND.findall(record["trajectory"])]


def _ok(record):
    return [tool for tool, _, obs in _calls(record) if not obs.startswith(FAILED)]


def test_is_a_planted_world(world):
    assert isinstance(world, worlds.PlantedWorld)
    assert world.format == "react" and world.name == "research"
    assert "research" in worlds.__all__ and "research" in worlds.WORLDS
    assert set(world.truth["strategy"]) == set(STRATEGIES)


def test_read_back_one_row_per_trajectory(world, runs):
    assert runs.height == len(world.records) == 2 * 40 * 4
    assert sorted(set(runs["arm"])) == ["base", "rl"]
    labels = world.labels_for(runs)
    assert not any(label is None for label in labels)
    joined = world.join_truth(runs)
    assert joined["n_calls"].null_count() == 0
    # the reader's rounds are the generator's tool calls, failed ones included
    assert runs["n_rounds"].to_list() == joined["n_calls"].to_list()
    by_key = {(r["arm"], r["question_id"], r["sample_id"]): r for r in world.records}
    for arm, qid, sample, correct, answer, gold in runs.select("arm", "question_id", "sample_id", "correct",
                                                               "answer", "gold").iter_rows():
        rec = by_key[(arm, qid, sample)]
        assert rec["correct"] == correct
        assert list(gold) == rec["gold"]
        assert (answer == rec["gold"][0]) == correct  # the finishing answer is the gold exactly when correct


def test_records_are_react_with_the_five_tools(world, runs):
    used = set()
    for rec in world.records:
        assert rec["trajectory"].startswith("Question: ")
        assert re.search(r"^Action \d+: Finish\[[^\n]+\]\Z", rec["trajectory"], re.M)
        used |= {tool for tool, _, _ in _calls(rec)}
    assert used == TOOLS
    assert set(runs.explode("steps").drop_nulls("steps")["steps"].struct.field("tool")) == TOOLS
    # the generator's count is what this test's own parse finds too
    assert [len(_calls(r)) for r in world.records] == world.truth["n_calls"].to_list()


def test_same_seed_same_records_other_seed_other():
    a, b, c = (research(n_questions=5, random_state=s) for s in (3, 3, 4))
    assert json.dumps(a.records) == json.dumps(b.records)
    assert a.truth.equals(b.truth)
    assert json.dumps(a.records) != json.dumps(c.records)


def test_every_failure_is_followed_by_the_same_tool(big):
    for world in big:
        for rec, n_failures in zip(world.records, world.truth["n_failures"].to_list()):
            calls = _calls(rec)
            assert sum(obs.startswith(FAILED) for _, _, obs in calls) == n_failures
            for i, (tool, _arg, obs) in enumerate(calls):
                if obs.startswith(FAILED):
                    assert i + 1 < len(calls) and calls[i + 1][0] == tool
                    assert not calls[i + 1][2].startswith(FAILED)


def _table(big):
    frames = []
    for world in big:
        frames.append(world.truth.with_columns(correct=pl.Series([r["correct"] for r in world.records])))
    return pl.concat(frames)


def test_every_tool_using_strategy_has_failures(big):
    t = _table(big).group_by("strategy").agg(pl.col("n_failures").sum(), pl.col("n_calls").sum())
    rates = {s: (f, c) for s, f, c in t.iter_rows()}
    assert rates["memory"] == (0, 0)
    for s in set(STRATEGIES) - {"memory"}:
        failures, calls = rates[s]
        # failures per call attempted (each failure adds one call: the retry)
        assert abs(failures / (calls - failures) - _P_FAIL) < 0.05, (s, failures, calls)


def test_every_strategy_on_every_kind_of_task(big):
    t = _table(big)
    for s in STRATEGIES:
        kinds = t.filter(pl.col("strategy") == s)["kind"].value_counts(normalize=True)
        got = dict(kinds.iter_rows())
        assert set(got) == set(KINDS), s
        assert all(abs(p - 1 / 3) < 0.12 for p in got.values()), (s, got)


def test_arms_differ_only_in_their_mixture(big):
    assert_arms_differ_only_in_mixture(_table(big), ARMS, tool_free="memory")


def test_call_counts_overlap_and_repeat_inside_strategies(big):
    t = _table(big)
    ranges = {s: (lo, hi) for s, lo, hi in t.group_by("strategy").agg(pl.col("n_calls").min().alias("lo"),
                                                                      pl.col("n_calls").max().alias("hi")).iter_rows()}
    assert ranges["memory"] == (0, 0)
    tool_using = [s for s in STRATEGIES if s != "memory"]
    for s in tool_using:
        lo, hi = ranges[s]
        assert hi > lo, s
        assert any(ranges[o][0] <= hi and lo <= ranges[o][1] for o in tool_using if o != s), s
    lookups, searches = set(), set()
    for world in big:
        for rec, s in zip(world.records, world.truth["strategy"].to_list()):
            ok = _ok(rec)
            if s == "search_lookup":
                lookups.add(ok.count("lookup"))
            if s == "python_fetch":
                searches.add(ok.count("search"))
    assert lookups == {1, 2, 3} and searches == {1, 2}


def test_optional_steps_at_fixed_rates_whatever_the_arm(big):
    seen = {k: {"base": [], "rl": []} for k in ("refine", "chain", "check")}
    for world in big:
        for rec, s in zip(world.records, world.truth["strategy"].to_list()):
            ok = _ok(rec)
            if s == "paper_first":
                seen["refine"][rec["arm"]].append(ok.count("paper") == 2)
            if s == "chain":
                seen["chain"][rec["arm"]].append("lookup" in ok)
            if s == "double_check":
                seen["check"][rec["arm"]].append("lookup" in ok)
    for key, p in (("refine", _P_REFINE), ("chain", _P_CHAIN_LOOKUP), ("check", _P_CHECK_LOOKUP)):
        for arm in ("base", "rl"):
            assert abs(np.mean(seen[key][arm]) - p) < 0.1, (key, arm, np.mean(seen[key][arm]))


def test_words_and_arguments_vary_inside_every_strategy(big):
    world = big[0]
    for s in STRATEGIES:
        recs = [r for r, t in zip(world.records, world.truth["strategy"].to_list()) if t == s]
        thoughts = {line for r in recs for line in re.findall(r"^Thought \d+: (.*)$", r["trajectory"], re.M)}
        assert len(thoughts) > 5, s
        if s != "memory":
            args = {arg for r in recs for _, arg, _ in _calls(r)}
            assert len(args) > 20, s
