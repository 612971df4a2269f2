"""The personal-assistant world (mechanism.datasets.worlds.assistant): ATIF documents read back with
`mechanism.read` as a user's files are, the truth it carries, and the planted design (failures
inside every tool-using strategy, optional steps at fixed rates, arms differing only in their
mixture). Strategy discovery is not evaluated here."""
from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from world_checks import assert_arms_differ_only_in_mixture

import mechanism as mx
from mechanism.datasets import worlds
from mechanism.datasets.worlds import assistant
from mechanism.datasets.worlds.assistant import _P_FAIL, _P_RESEARCH, ARMS, STRATEGIES

TOOLS = {"search_email", "read_email", "send_email", "list_events", "create_event", "find_contact"}
_FAILED = ("Error:", "No contact found")


@pytest.fixture(scope="module")
def world():
    return assistant(n_questions=40, random_state=0)


@pytest.fixture(scope="module")
def runs(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("assistant")), format="atif")


@pytest.fixture(scope="module")
def big():
    """A larger sample for the rates (both arms, pooled over two seeds)."""
    return [assistant(n_questions=150, random_state=seed) for seed in (1, 2)]


def _calls(record):
    """(tool, observation) of every tool call of an ATIF record, in order."""
    out = []
    for st in record["steps"]:
        results = {r["source_call_id"]: r["content"] for r in (st.get("observation") or {}).get("results", [])}
        for c in st.get("tool_calls") or []:
            out.append((c["function_name"], results[c["tool_call_id"]]))
    return out


def test_is_a_planted_world(world):
    assert isinstance(world, worlds.PlantedWorld)
    assert world.format == "atif" and world.name == "assistant"
    assert "assistant" in worlds.__all__ and "assistant" in worlds.WORLDS
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
    # the question id, sample id and correctness come from the root `extra`
    by_key = {(r["agent"]["model_name"], r["extra"]["question_id"], r["extra"]["sample_id"]): r["extra"]["correct"]
              for r in world.records}
    for arm, qid, sample, correct in runs.select("arm", "question_id", "sample_id", "correct").iter_rows():
        assert by_key[(arm, qid, sample)] == correct


def test_records_are_atif_with_the_six_tools(world):
    used = set()
    for rec in world.records:
        assert rec["schema_version"] == "ATIF-v1.4"
        assert [st["step_id"] for st in rec["steps"]] == list(range(1, len(rec["steps"]) + 1))
        assert rec["steps"][-1]["source"] == "agent" and not rec["steps"][-1].get("tool_calls")
        used |= {tool for tool, _ in _calls(rec)}
    assert used == TOOLS


def test_same_seed_same_records_other_seed_other():
    a, b, c = (assistant(n_questions=5, random_state=s) for s in (3, 3, 4))
    assert json.dumps(a.records) == json.dumps(b.records)
    assert a.truth.equals(b.truth)
    assert json.dumps(a.records) != json.dumps(c.records)


def test_every_failure_is_followed_by_the_same_tool(big):
    for world in big:
        for rec in world.records:
            calls = _calls(rec)
            for i, (tool, obs) in enumerate(calls):
                if obs.startswith(_FAILED):
                    assert i + 1 < len(calls) and calls[i + 1][0] == tool
                    assert not calls[i + 1][1].startswith(_FAILED)


def _table(big):
    frames = []
    for world in big:
        frames.append(world.truth.with_columns(correct=pl.Series([r["extra"]["correct"] for r in world.records])))
    return pl.concat(frames)


def test_every_tool_using_strategy_has_failures(big):
    t = _table(big).group_by("strategy").agg(pl.col("n_failures").sum(), pl.col("n_calls").sum())
    rates = {s: (f, c) for s, f, c in t.iter_rows()}
    assert rates["no_tools"] == (0, 0)
    for s in set(STRATEGIES) - {"no_tools"}:
        failures, calls = rates[s]
        # failures per call attempted (each failure adds one call: the retry)
        assert abs(failures / (calls - failures) - _P_FAIL) < 0.05, (s, failures, calls)


def test_arms_differ_only_in_their_mixture(big):
    assert_arms_differ_only_in_mixture(_table(big), ARMS, tool_free="no_tools")


def test_call_counts_overlap_and_repeat_inside_strategies(big):
    t = _table(big)
    ranges = {s: (lo, hi) for s, lo, hi in t.group_by("strategy").agg(pl.col("n_calls").min().alias("lo"),
                                                                      pl.col("n_calls").max().alias("hi")).iter_rows()}
    assert ranges["no_tools"] == (0, 0)
    tool_using = [s for s in STRATEGIES if s != "no_tools"]
    for s in tool_using:
        lo, hi = ranges[s]
        assert hi > lo, s  # the count varies inside the strategy
        assert any(ranges[o][0] <= hi and lo <= ranges[o][1] for o in tool_using if o != s), s
    # repeated steps: 1-3 e-mails read, 1-3 days listed
    reads, days = set(), set()
    for world in big:
        strategies = world.truth["strategy"].to_list()
        for rec, s in zip(world.records, strategies):
            ok = [tool for tool, obs in _calls(rec) if not obs.startswith(_FAILED)]
            if s == "thread_first":
                reads.add(ok.count("read_email"))
            if s == "calendar_first" and "create_event" not in ok:
                days.add(ok.count("list_events"))
    assert reads == {1, 2, 3} and days == {1, 2, 3}


def test_optional_steps_at_fixed_rates_whatever_the_arm(big):
    second = {"base": [], "rl": []}
    checked = {"base": [], "rl": []}
    for world in big:
        for rec, s in zip(world.records, world.truth["strategy"].to_list()):
            arm = rec["agent"]["model_name"]
            ok = [tool for tool, obs in _calls(rec) if not obs.startswith(_FAILED)]
            if s == "thread_first":
                second[arm].append(ok.count("search_email") == 2)
            if s in ("direct", "contact_first") and "create_event" in ok:
                checked[arm].append(ok[-1] == "list_events")
    for arm in ("base", "rl"):
        assert abs(np.mean(second[arm]) - _P_RESEARCH) < 0.1, (arm, np.mean(second[arm]))
        assert 0.25 < np.mean(checked[arm]) < 0.55, (arm, np.mean(checked[arm]))


def test_words_and_arguments_vary_inside_every_strategy(big):
    world = big[0]
    for s in STRATEGIES:
        recs = [r for r, t in zip(world.records, world.truth["strategy"].to_list()) if t == s]
        messages = {st["message"] for r in recs for st in r["steps"] if st["source"] == "agent"}
        assert len(messages) > 5, s
        if s != "no_tools":
            args = {json.dumps(c["arguments"]) for r in recs for st in r["steps"] for c in st.get("tool_calls") or []}
            assert len(args) > 20, s
