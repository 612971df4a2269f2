"""The mobile-phone GUI agent world (mechanism.datasets.worlds.gui): ReAct text records read back with
`mechanism.read` as a user's files are, the truth it carries, and the planted design (failures
inside every tool-using strategy, each followed by the same action; optional steps at fixed
rates; every strategy on every kind of task; arms differing only in their mixture). Strategy
discovery is not evaluated here."""
from __future__ import annotations

import re

import polars as pl
import pytest
from world_checks import assert_arms_differ_only_in_mixture

import mechanism as mx
from mechanism.datasets import worlds
from mechanism.datasets.worlds import gui
from mechanism.datasets.worlds.gui import _P_FAIL, _P_POPUP, _P_VERIFY, ARMS, CAN_FAIL, FAILED, KINDS, STRATEGIES, TOOLS

_ROUND = re.compile(r"^Action (\d+): (\w+)\[(.*)\]\nObservation \1: (.*)$", re.M)


@pytest.fixture(scope="module")
def world():
    return gui(n_questions=40, random_state=0)


@pytest.fixture(scope="module")
def runs(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("gui")), format="react")


@pytest.fixture(scope="module")
def big():
    """A larger sample for the rates (both arms, pooled over two seeds), with each record."""
    return [gui(n_questions=150, random_state=seed) for seed in (1, 2)]


def _calls(record):
    """(action, argument, observation) of every call of a transcript, in order."""
    return [(tool, arg, obs) for _, tool, arg, obs in _ROUND.findall(record["text"])]


def _pooled(ws):
    return pl.concat([w.truth for w in ws])


def test_is_a_planted_world(world):
    assert isinstance(world, worlds.PlantedWorld)
    assert world.format == "react" and world.name == "gui"
    assert "gui" in worlds.__all__ and "gui" in worlds.WORLDS
    assert set(world.truth["strategy"]) == set(STRATEGIES)
    assert {"strategy", "n_calls", "n_failures", "kind", "correct"} <= set(world.truth.columns)


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
    for arm, qid, sample, correct in runs.select("arm", "question_id", "sample_id", "correct").iter_rows():
        assert by_key[(arm, qid, sample)]["correct"] == correct
    assert runs["question"].null_count() == 0


def test_records_are_react_with_the_actions(world):
    used = set()
    for rec, n_calls, n_failures in zip(world.records, world.truth["n_calls"], world.truth["n_failures"]):
        assert rec["text"].startswith("Question: ")
        assert re.search(r"^Action \d+: finish\[[^\n]+\]\Z", rec["text"], re.M)
        calls = _calls(rec)
        assert len(calls) == n_calls
        assert sum(obs.startswith(FAILED) for _, _, obs in calls) == n_failures
        used |= {tool for tool, _, _ in calls}
    assert used == set(TOOLS)


def test_same_random_state_same_records_and_different_differs():
    a, b, c = gui(n_questions=8, random_state=3), gui(n_questions=8, random_state=3), gui(n_questions=8, random_state=4)
    assert a.records == b.records and a.truth.equals(b.truth)
    assert a.records != c.records


def test_every_failure_is_followed_by_the_same_action(big):
    for w in big:
        for rec in w.records:
            calls = _calls(rec)
            for i, (tool, _, obs) in enumerate(calls):
                if obs.startswith(FAILED):
                    assert tool in CAN_FAIL
                    assert i + 1 < len(calls) and calls[i + 1][0] == tool and not calls[i + 1][2].startswith(FAILED)


def test_every_tool_using_strategy_has_failures_at_the_planted_rate(big):
    t = _pooled(big)
    per = t.group_by("strategy").agg(pl.col("n_failures").sum(), pl.col("n_calls").sum())
    rows = {s: (f, c) for s, f, c in per.iter_rows()}
    assert rows["ask_user"] == (0, 0)
    for s in STRATEGIES:
        if s != "ask_user":
            assert rows[s][0] > 0, s
    # per call that can fail, the rate is the planted one
    fails = can = 0
    for w in big:
        for rec in w.records:
            calls = _calls(rec)
            fails += sum(obs.startswith(FAILED) for _, _, obs in calls)
            can += sum(tool in CAN_FAIL for tool, _, _ in calls)
    # each failure adds one call that can fail: the rate is failures over first attempts
    assert abs(fails / (can - fails) - _P_FAIL) < 0.02


def test_arms_differ_only_in_mixture(big):
    assert_arms_differ_only_in_mixture(_pooled(big), ARMS, tool_free="ask_user")


def test_every_strategy_on_every_kind_of_task(big):
    t = _pooled(big)
    assert set(t["kind"]) == set(KINDS)
    counts = t.group_by("strategy", "kind").len()
    assert counts.height == len(STRATEGIES) * len(KINDS)
    # the strategy is drawn independently of the task: its share is alike on every kind
    for s in STRATEGIES:
        shares = []
        for k in KINDS:
            on = t.filter(pl.col("kind") == k)
            shares.append(on.filter(pl.col("strategy") == s).height / on.height)
        assert max(shares) - min(shares) < 0.06, (s, shares)


def test_optional_steps_at_fixed_rates(big):
    """The popup (dismissed with back[]) and the final read_screen[] occur at their planted
    rates in every acting strategy and in both arms."""
    seen = {}
    for w in big:
        for rec, (arm, strategy) in zip(w.records, w.truth.select("arm", "strategy").iter_rows()):
            if strategy == "ask_user":
                continue
            calls = _calls(rec)
            popup = any(tool == "back" for tool, _, _ in calls)
            verify = calls[-1][0] == "read_screen"
            for key in ((arm, strategy), ("all", strategy)):
                n, p, v = seen.get(key, (0, 0, 0))
                seen[key] = (n + 1, p + popup, v + verify)
    for (arm, strategy), (n, p, v) in seen.items():
        tol = 0.06 if arm == "all" else 0.12
        assert abs(p / n - _P_POPUP) < tol, (arm, strategy, p / n)
        assert abs(v / n - _P_VERIFY) < tol, (arm, strategy, v / n)


def test_call_counts_overlap_between_strategies(big):
    t = _pooled(big)
    ranges = {s: (lo, hi) for s, lo, hi in t.group_by("strategy").agg(pl.col("n_calls").min().alias("lo"),
                                                                      pl.col("n_calls").max().alias("hi")).iter_rows()}
    acting = [s for s in STRATEGIES if s != "ask_user"]
    for s in acting:  # every acting strategy shares some call count with another
        lo, hi = ranges[s]
        assert any(max(lo, ranges[o][0]) <= min(hi, ranges[o][1]) for o in acting if o != s), (s, ranges)
    assert ranges["ask_user"] == (0, 0)


def test_words_and_arguments_vary_inside_every_strategy(big):
    w = big[0]
    for s in STRATEGIES:
        recs = [r for r, st in zip(w.records, w.truth["strategy"]) if st == s]
        thoughts = {line.split(": ", 1)[1] for r in recs for line in r["text"].split("\n")
                    if line.startswith("Thought")}
        assert len(thoughts) > 5, s
        if s != "ask_user":
            args = {(tool, arg) for r in recs for tool, arg, _ in _calls(r) if tool == "tap"}
            assert len(args) > 10, s
