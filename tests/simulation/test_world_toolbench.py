"""The ToolBench-style API-calling world (mechanism.datasets.worlds.toolbench): OpenAI records read back
with `mechanism.read` as a user's files are, the truth it carries, and the planted design
(execution failures inside every tool-using strategy but give_up, each followed by the same
tool; optional steps at fixed rates; every strategy on every kind of request, fan-out tilted
towards comparisons; arms differing only in their mixture). Strategy discovery is not
evaluated here."""
from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from world_checks import assert_arms_differ_only_in_mixture, openai_calls

import mechanism as mx
from mechanism.datasets import worlds
from mechanism.datasets.worlds import toolbench
from mechanism.datasets.worlds.toolbench import (
    _P_FAIL,
    _P_FINAL_UTILITY,
    _P_REPEAT,
    ARMS,
    KIND_TILT,
    KINDS,
    STRATEGIES,
    TOOLS,
    _mixture,
)

TOOL_USING = [s for s in STRATEGIES if s != "memory"]
RETRYING = [s for s in TOOL_USING if s != "give_up"]
UTILITY = {"unit_convert", "translate"}
TRANSIENT = ("429", "401")


@pytest.fixture(scope="module")
def world():
    return toolbench(n_questions=30, random_state=0)


@pytest.fixture(scope="module")
def runs(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("toolbench")), format="openai")


@pytest.fixture(scope="module")
def big():
    """A larger sample for the rates (both arms, pooled over two seeds)."""
    return [toolbench(n_questions=210, n_samples=6, random_state=seed) for seed in (1, 2)]


def _calls(record):
    return openai_calls(record)


def _ok(record):
    return [(tool, args, obs) for tool, args, obs in _calls(record) if not obs.startswith("Error:")]


def _planned(record):
    """The successful calls less the optional steps: an identical repeat, a final utility."""
    out = []
    for call in _ok(record):
        if out and out[-1][:2] == call[:2]:
            continue  # the optional repeat "to be sure"
        out.append(call)
    if out and out[-1][0] in UTILITY:
        out = out[:-1]
    return out


def _rows(big):
    return [(row, rec) for w in big for row, rec in zip(w.truth.iter_rows(named=True), w.records)]


def test_is_a_planted_world(world):
    assert isinstance(world, worlds.PlantedWorld)
    assert world.format == "openai" and world.name == "toolbench"
    assert "toolbench" in worlds.__all__ and "toolbench" in worlds.WORLDS
    assert set(world.truth["strategy"]) == set(STRATEGIES)
    assert world.truth.columns == ["arm", "question_id", "sample_id", "strategy", "kind", "family", "n_calls",
                                   "n_failures", "correct"]


def test_reads_back_one_row_per_trajectory(world, runs):
    assert runs.height == len(world.records) == world.truth.height
    assert not any(label is None for label in world.labels_for(runs))
    t = world.join_truth(runs)
    assert runs["n_rounds"].to_list() == t["n_calls"].to_list()
    assert [len(s) for s in runs["steps"].to_list()] == t["n_calls"].to_list()
    got = runs.join(world.truth, on=["arm", "question_id", "sample_id"])
    assert got["correct"].to_list() == got["correct_right"].to_list()


def test_truth_counts_match_the_records(big):
    for row, rec in _rows(big):
        calls = _calls(rec)
        assert len(calls) == row["n_calls"]
        assert sum(obs.startswith("Error:") for _, _, obs in calls) == row["n_failures"]
        assert {tool for tool, _, _ in calls} <= set(TOOLS)
        assert (row["n_calls"] == 0) == (row["strategy"] == "memory")


def test_failures_are_followed_by_the_same_tool(big):
    for row, rec in _rows(big):
        calls = _calls(rec)
        if row["strategy"] == "give_up":
            assert 1 <= len(calls) <= 2 and all(obs.startswith("Error:") for _, _, obs in calls)
            assert len({tool for tool, _, _ in calls}) == 1
            continue
        for i, (tool, args, obs) in enumerate(calls):
            if obs.startswith("Error:"):
                assert i + 1 < len(calls) and calls[i + 1][0] == tool, (row, calls)
                assert not calls[i + 1][2].startswith("Error:")
                transient = any(code in obs for code in TRANSIENT)
                assert (calls[i + 1][1] == args) == transient  # corrected, or (a transient one) made again


def test_every_tool_using_strategy_has_failures_at_the_planted_rate(big):
    t = pl.concat([w.truth for w in big])
    for s in RETRYING:
        sub = t.filter(pl.col("strategy") == s)
        assert sub["n_failures"].sum() > 0, s
        rate = sub["n_failures"].sum() / (sub["n_calls"].sum() - sub["n_failures"].sum())  # per first attempt
        assert abs(rate - _P_FAIL) < 0.04, (s, rate)
    give_up = t.filter(pl.col("strategy") == "give_up")
    assert (give_up["n_failures"] == give_up["n_calls"]).all()
    assert t.filter(pl.col("strategy") == "memory")["n_calls"].sum() == 0


def test_planted_tool_sequences(big):
    for row, rec in _rows(big):
        ok, strategy, kind = _planned(rec), row["strategy"], row["kind"]
        tools = [tool for tool, _, _ in ok]
        if strategy in ("memory", "give_up"):
            assert ok == []
        elif strategy == "one_call":
            assert len(ok) == 1
        elif strategy == "chain":
            assert len(ok) == (2 if kind == "single" else 4), (kind, tools)
            for (_, _, first), (_, args, _) in zip(ok[::2], ok[1::2]):  # the output feeds the next call
                assert any(str(v) in first for v in args.values()), (first, args)
        elif strategy == "fan_out":
            fanned = tools[1:] if kind == "chain" else tools
            assert len(set(fanned)) == 1 and 2 <= len(fanned) <= 4, (kind, tools)
            assert len({json.dumps(a, sort_keys=True) for _, a, _ in ok}) == len(ok)
        elif strategy == "over_call":
            assert 4 <= len(ok) <= 6 and len(set(tools)) == len(tools), tools
        elif strategy == "verify":
            assert len(ok) >= 2 and tools[-1] != tools[-2], tools
            n = len(ok) - 1
            assert (n == 1) if kind == "single" else (n == 2 if kind == "chain" else 2 <= n <= 4), (kind, tools)


def test_optional_steps_at_fixed_rates(big):
    """A final utility call and the repeat "to be sure", alike between arms, kinds and strategies."""
    rows = []
    for row, rec in _rows(big):
        if row["strategy"] not in RETRYING:
            continue
        ok = [(tool, json.dumps(args, sort_keys=True)) for tool, args, _ in _ok(rec)]
        repeats = sum(a == b for a, b in zip(ok, ok[1:]))
        rows.append((row["strategy"], row["kind"], row["arm"], ok[-1][0] in UTILITY, repeats, len(ok) - repeats))
    d = pl.DataFrame(rows, schema=["strategy", "kind", "arm", "last", "repeats", "first_ok"], orient="row")
    assert abs(d["last"].mean() - _P_FINAL_UTILITY) < 0.03
    assert abs(d["repeats"].sum() / d["first_ok"].sum() - _P_REPEAT) < 0.015
    for by in ("arm", "kind", "strategy"):
        for _, last, repeats, first in d.group_by(by).agg(pl.col("last").mean(), pl.col("repeats").sum(),
                                                          pl.col("first_ok").sum()).iter_rows():
            assert abs(last - _P_FINAL_UTILITY) < 0.07, (by, last)
            assert abs(repeats / first - _P_REPEAT) < 0.035, (by, repeats / first)


def test_every_strategy_on_every_kind_with_the_planted_tilt(big):
    t = pl.concat([w.truth for w in big])
    counts = t.group_by("strategy", "kind").len()
    assert counts.height == len(STRATEGIES) * len(KINDS)
    share = {(s, k): n for s, k, n in counts.iter_rows()}
    per_kind = dict(t.group_by("kind").len().iter_rows())
    for k, tilt in KIND_TILT.items():
        for s in tilt:
            others = [share[(s, o)] / per_kind[o] for o in KINDS if o != k]
            assert share[(s, k)] / per_kind[k] > 1.3 * float(np.mean(others)), (s, k)
    for (arm, kind), sub in t.group_by("arm", "kind"):
        expected = _mixture(ARMS[arm], kind)
        got = dict(sub["strategy"].value_counts(normalize=True).iter_rows())
        for s in STRATEGIES:
            assert abs(got.get(s, 0.0) - expected[s]) < 0.06, (arm, kind, s, got)


def test_arms_differ_only_in_mixture(big):
    """give_up's calls all fail (the strategy, not execution): left out of the pooled rates, and
    the shares checked on what remains."""
    t = pl.concat([w.truth for w in big]).filter(pl.col("strategy") != "give_up")
    shares = {arm: {s: float(np.mean([w.planted["shares"][arm][s] for w in big])) for s in STRATEGIES
                    if s != "give_up"} for arm in ARMS}
    assert_arms_differ_only_in_mixture(t, shares, tool_free="memory")
    full = pl.concat([w.truth for w in big])
    for arm in ARMS:
        got = full.filter((pl.col("arm") == arm) & (pl.col("strategy") == "give_up")).height / full.filter(
            pl.col("arm") == arm).height
        assert abs(got - float(np.mean([w.planted["shares"][arm]["give_up"] for w in big]))) < 0.03


def test_wording_and_arguments_vary_inside_strategies(big):
    for s in STRATEGIES:
        args, words = set(), set()
        for row, rec in _rows(big):
            if row["strategy"] == s:
                args.update(json.dumps(a, sort_keys=True) for _, a, _ in _calls(rec))
                words.add(" | ".join(m["content"] for m in rec["messages"] if m["role"] == "assistant"))
        assert len(words) > 20, s
        assert s == "memory" or len(args) > 20, s


def test_the_request_decides_the_apis(big):
    """The same kind of request with another family of API: other tools called (one_call's one)."""
    first = {}
    for row, rec in _rows(big):
        if row["strategy"] == "one_call":
            first.setdefault(row["family"], set()).add(_planned(rec)[0][0])
    assert len(set().union(*first.values())) >= 7
    assert first["weather"] == {"weather_current"} and first["stocks"] == {"stock_quote"}


def test_random_state():
    a, b, c = (toolbench(n_questions=6, random_state=3), toolbench(n_questions=6, random_state=3),
               toolbench(n_questions=6, random_state=4))
    assert a.records == b.records and a.truth.equals(b.truth)
    assert a.records != c.records
