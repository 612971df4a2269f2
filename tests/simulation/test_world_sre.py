"""The on-call SRE world (mechanism.datasets.worlds.sre): OpenAI records read back with `mechanism.read`
as a user's files are, the truth it carries, and the planted design (failures inside every
tool-using strategy, each followed by the same tool; optional steps at fixed rates; every
strategy on every kind of incident; arms differing only in their mixture). Strategy discovery
is not evaluated here."""
from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from world_checks import assert_arms_differ_only_in_mixture, openai_calls

import mechanism as mx
from mechanism.datasets import worlds
from mechanism.datasets.worlds import sre
from mechanism.datasets.worlds.sre import (
    _P_ALERTS_FIRST,
    _P_FAIL,
    _P_STATUS_AFTER,
    ARMS,
    KIND_TILT,
    KINDS,
    STRATEGIES,
    _mixture,
)

TOOLS = {"list_alerts", "query_metrics", "search_logs", "get_deploys", "describe_pod", "rollback", "restart",
         "scale", "post_status"}
TOOL_USING = [s for s in STRATEGIES if s != "advise"]


@pytest.fixture(scope="module")
def world():
    return sre(n_questions=40, random_state=0)


@pytest.fixture(scope="module")
def runs(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("sre")), format="openai")


@pytest.fixture(scope="module")
def big():
    """A larger sample for the rates (both arms, pooled over two seeds)."""
    return [sre(n_questions=200, n_samples=6, random_state=seed) for seed in (1, 2)]


def _calls(record):
    return openai_calls(record)


def _ok(record):
    return [tool for tool, _, obs in _calls(record) if not obs.startswith("Error:")]


def _pairs(big):
    return [(strategy, kind, rec) for w in big
            for strategy, kind, rec in zip(w.truth["strategy"], w.truth["kind"], w.records)]


def test_is_a_planted_world(world):
    assert isinstance(world, worlds.PlantedWorld)
    assert world.format == "openai" and world.name == "sre"
    assert "sre" in worlds.__all__ and "sre" in worlds.WORLDS
    assert set(world.truth["strategy"]) == set(STRATEGIES)
    assert world.truth.columns == ["arm", "question_id", "sample_id", "strategy", "kind", "n_calls", "n_failures",
                                   "correct"]


def test_reads_back_one_row_per_trajectory(world, runs):
    assert runs.height == len(world.records) == world.truth.height
    labels = world.labels_for(runs)
    assert not any(label is None for label in labels)
    t = world.join_truth(runs)
    assert runs["n_rounds"].to_list() == t["n_calls"].to_list()
    assert [len(s) for s in runs["steps"].to_list()] == t["n_calls"].to_list()
    got = runs.join(world.truth, on=["arm", "question_id", "sample_id"])
    assert got["correct"].to_list() == got["correct_right"].to_list()


def test_truth_counts_match_the_records(world):
    for rec, n, nf, strategy in zip(world.records, world.truth["n_calls"], world.truth["n_failures"],
                                    world.truth["strategy"]):
        calls = _calls(rec)
        assert len(calls) == n
        assert sum(obs.startswith("Error:") for _, _, obs in calls) == nf
        assert {tool for tool, _, _ in calls} <= TOOLS
        assert (n == 0) == (strategy == "advise")


def test_failures_are_followed_by_the_same_tool(big):
    for strategy, _, rec in _pairs(big):
        calls = _calls(rec)
        for i, (tool, args, obs) in enumerate(calls):
            if obs.startswith("Error:"):
                assert i + 1 < len(calls) and calls[i + 1][0] == tool, (strategy, calls)
                assert not calls[i + 1][2].startswith("Error:")
                transient = any(w in obs for w in ("permission denied", "timeout", "503"))
                assert transient or calls[i + 1][1] != args  # corrected (a transient one: made again)


def test_every_tool_using_strategy_has_failures_at_the_planted_rate(big):
    t = pl.concat([w.truth for w in big])
    for s in TOOL_USING:
        sub = t.filter(pl.col("strategy") == s)
        assert sub["n_failures"].sum() > 0, s
        # failures / first attempts
        rate = sub["n_failures"].sum() / (sub["n_calls"].sum() - sub["n_failures"].sum())
        assert abs(rate - _P_FAIL) < 0.04, (s, rate)
    assert t.filter(pl.col("strategy") == "advise")["n_calls"].sum() == 0


def test_planted_tool_sequences(big):
    for strategy, kind, rec in _pairs(big):
        ok = _ok(rec)
        if ok and ok[0] == "list_alerts" and strategy != "pod_triage":
            ok = ok[1:]  # the optional alerts check
        if ok and ok[-1] == "post_status" and strategy != "escalate":
            ok = ok[:-1]  # the optional status update
        if strategy == "advise":
            assert ok == []
        elif strategy == "restart_blind":
            assert ok == ["restart"]
        elif strategy == "metrics_then_act":
            assert 1 <= ok.count("query_metrics") == len(ok) - 1 <= 3 and ok[-1] in ("scale", "restart")
            if kind == "saturation":
                assert ok[-1] == "scale"
            if kind == "errors":
                assert ok[-1] == "restart"
        elif strategy == "log_dive":
            assert ok == ["search_logs"] * len(ok) and 2 <= len(ok) <= 4
        elif strategy == "deploy_rollback":
            assert ok == ["get_deploys", "rollback"]
        elif strategy == "pod_triage":
            assert ok[0] == "list_alerts" and ok[-1] in ("scale", "restart")
            assert ok[1:-1] == ["describe_pod"] * (len(ok) - 2) and 2 <= len(ok) - 2 <= 4
        elif strategy == "escalate":
            assert ok in (["post_status"], ["post_status", "post_status"])


def test_optional_steps_at_fixed_rates(big):
    """Alerts first and a final status update, alike between arms, kinds and strategies."""
    t = pl.concat([w.truth for w in big])
    rows = []
    for (strategy, kind, rec), arm in zip(_pairs(big), t["arm"]):
        ok = _ok(rec)
        if strategy == "advise":
            continue
        first = strategy != "pod_triage" and ok[0] == "list_alerts"
        last = strategy != "escalate" and ok[-1] == "post_status"
        rows.append((strategy, kind, arm, first, last))
    d = pl.DataFrame(rows, schema=["strategy", "kind", "arm", "first", "last"], orient="row")
    first = d.filter(pl.col("strategy") != "pod_triage")
    last = d.filter(pl.col("strategy") != "escalate")
    assert abs(first["first"].mean() - _P_ALERTS_FIRST) < 0.03
    assert abs(last["last"].mean() - _P_STATUS_AFTER) < 0.03
    for col, sub, p in (("first", first, _P_ALERTS_FIRST), ("last", last, _P_STATUS_AFTER)):
        for by in ("arm", "kind", "strategy"):
            for _, rate in sub.group_by(by).agg(pl.col(col).mean()).iter_rows():
                assert abs(rate - p) < 0.07, (col, by, rate)


def test_every_strategy_on_every_kind_with_the_planted_tilt(big):
    t = pl.concat([w.truth for w in big])
    counts = t.group_by("strategy", "kind").len()
    assert counts.height == len(STRATEGIES) * len(KINDS)
    share = {(s, k): n for s, k, n in counts.iter_rows()}
    per_kind = dict(t.group_by("kind").len().iter_rows())
    for s in STRATEGIES:
        for k in (k for k in KINDS if s in KIND_TILT.get(k, {})):
            others = [share[(s, o)] / per_kind[o] for o in KINDS if o != k]
            assert share[(s, k)] / per_kind[k] > 1.15 * float(np.mean(others)), (s, k)
    for (arm, kind), sub in t.group_by("arm", "kind"):
        expected = _mixture(ARMS[arm], kind)
        got = dict(sub["strategy"].value_counts(normalize=True).iter_rows())
        for s in STRATEGIES:
            assert abs(got.get(s, 0.0) - expected[s]) < 0.06, (arm, kind, s, got)


def test_arms_differ_only_in_mixture(big):
    t = pl.concat([w.truth for w in big])
    shares = {arm: {s: float(np.mean([w.planted["shares"][arm][s] for w in big])) for s in STRATEGIES}
              for arm in ARMS}
    assert_arms_differ_only_in_mixture(t, shares, tool_free="advise")


def test_wording_and_arguments_vary_inside_strategies(big):
    for s in TOOL_USING:
        args, words = set(), set()
        for strategy, _, rec in _pairs(big):
            if strategy == s:
                args.update(json.dumps(a, sort_keys=True) for _, a, _ in _calls(rec))
                words.add(rec["messages"][-1]["content"])
        assert len(args) > 20 and len(words) > 20, s


def test_random_state():
    a, b, c = sre(n_questions=8, random_state=3), sre(n_questions=8, random_state=3), sre(n_questions=8,
                                                                                         random_state=4)
    assert a.records == b.records and a.truth.equals(b.truth)
    assert a.records != c.records
