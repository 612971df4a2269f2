"""The held-out web-navigation world (mechanism.datasets.worlds.browser): it reads back as written, with
the planted tool calls, joins its truth, is reproducible, and its arms differ only in their
mixture. Strategy discovery is not evaluated here."""
from __future__ import annotations

import json
from collections import Counter

import numpy as np
import polars as pl
import pytest

import mechanism as mx
from mechanism.datasets import worlds
from mechanism.datasets.worlds import browser
from mechanism.datasets.worlds.browser import ARMS, STRATEGIES

TOOLS = {"goto", "click", "type", "scroll", "read_page", "go_back"}


@pytest.fixture(scope="module")
def world():
    return browser(n_questions=60, n_samples=4, random_state=0)


@pytest.fixture(scope="module")
def runs(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("browser")), format="openai")


def _calls(record):
    return [c["function"] for m in record["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]


def test_is_a_planted_world(world):
    assert isinstance(world, worlds.PlantedWorld)
    assert world.format == "openai" and "browser" in worlds.__all__
    assert set(world.truth["strategy"]) == set(STRATEGIES)


def test_reads_back_one_row_per_trajectory_with_the_planted_calls(world, runs):
    assert runs.height == len(world.records) == world.truth.height == 2 * 60 * 4
    truth = world.join_truth(runs)
    assert truth["n_calls"].null_count() == 0
    assert runs["n_rounds"].to_list() == truth["n_calls"].to_list()
    by_key = {(r["arm"], r["question_id"], r["sample_id"]): r for r in world.records}
    for row in runs.head(60).iter_rows(named=True):
        rec = by_key[(row["arm"], row["question_id"], row["sample_id"])]
        assert [s["tool"] for s in row["steps"]] == [c["name"] for c in _calls(rec)]
        assert row["answer"] == rec["messages"][-1]["content"]
    assert {s["tool"] for steps in runs["steps"].to_list() for s in steps} == TOOLS


def test_labels_have_no_nulls(world, runs):
    labels = world.labels_for(runs)
    assert len(labels) == runs.height and not any(x is None for x in labels)
    assert set(labels) == set(STRATEGIES)


def test_same_state_same_records_other_state_other_records():
    a, b = browser(n_questions=5, random_state=3), browser(n_questions=5, random_state=3)
    assert json.dumps(a.records) == json.dumps(b.records) and a.truth.equals(b.truth)
    c = browser(n_questions=5, random_state=4)
    assert json.dumps(a.records) != json.dumps(c.records)


def test_memory_calls_nothing_and_every_other_strategy_has_failures(world):
    t = world.truth
    assert (t.filter(pl.col("strategy") == "memory")["n_calls"] == 0).all()
    for s in STRATEGIES:
        if s != "memory":
            sub = t.filter(pl.col("strategy") == s)
            assert sub["n_failures"].sum() > 0 and (sub["n_calls"] > 0).all(), s
    # a failure is an Error: observation followed by a call of the same tool
    for rec in world.records:
        calls, msgs = _calls(rec), [m for m in rec["messages"] if m["role"] == "tool"]
        for j, m in enumerate(msgs):
            if m["content"].startswith("Error:"):
                assert calls[j + 1]["name"] == calls[j]["name"]


def test_failures_counted_are_the_error_observations(world):
    n = [sum(m["role"] == "tool" and m["content"].startswith("Error:") for m in r["messages"]) for r in world.records]
    assert n == world.truth["n_failures"].to_list()


def test_call_counts_overlap_and_vary_within_strategies(world):
    t = world.truth
    ranges = {s: (sub["n_calls"].min(), sub["n_calls"].max())
              for (s,), sub in t.filter(pl.col("strategy") != "memory").group_by("strategy")}
    for s, (lo, hi) in ranges.items():
        assert hi - lo >= 3, (s, lo, hi)
        others = [r for o, r in ranges.items() if o != s]
        assert all(lo <= ohi and olo <= hi for olo, ohi in others), s


def test_arguments_and_words_vary_within_strategies(world):
    t = world.truth
    for s in STRATEGIES:
        idx = [i for i, x in enumerate(t["strategy"].to_list()) if x == s]
        args = {c["arguments"] for i in idx for c in _calls(world.records[i])}
        said = {m["content"] for i in idx for m in world.records[i]["messages"] if m["role"] == "assistant"}
        assert len(said) > 10, s
        if s != "memory":
            assert len(args) > 20, s


def test_arms_differ_only_in_mixture():
    w = browser(n_questions=150, n_samples=4, random_state=1)
    t = w.truth.with_columns(correct=pl.Series([r["correct"] for r in w.records]))
    assert w.planted["split"]["rl"]["all"]["pure_reweighting"]
    shares = t.group_by("arm", "strategy").len()
    for arm, mix in ARMS.items():
        n = t.filter(pl.col("arm") == arm).height
        for s, p in mix.items():
            got = shares.filter((pl.col("arm") == arm) & (pl.col("strategy") == s))["len"].sum() / n
            assert abs(got - p / sum(mix.values())) < 0.05, (arm, s, got)
    pooled = {arm: sub["n_failures"].sum() / sub["n_calls"].sum() for (arm,), sub in t.group_by("arm")}
    # pooled over strategies the rates differ only by the mixture of failable calls; within one
    # strategy they are alike
    assert abs(pooled["base"] - pooled["rl"]) < 0.03, pooled
    for s in STRATEGIES:
        if s == "memory":
            continue
        rate = {}
        calls = {}
        for arm in ARMS:
            sub = t.filter((pl.col("arm") == arm) & (pl.col("strategy") == s))
            rate[arm] = sub["n_failures"].sum() / sub["n_calls"].sum()
            calls[arm] = sub["n_calls"].mean()
        assert abs(rate["base"] - rate["rl"]) < 0.06, (s, rate)
        assert abs(calls["base"] - calls["rl"]) < 1.0, (s, calls)


def test_tool_mix_within_a_strategy_is_alike_between_arms():
    w = browser(n_questions=150, n_samples=4, random_state=2)
    arms, strategies = w.truth["arm"].to_list(), w.truth["strategy"].to_list()
    for s in ("site_search", "filter_sort", "direct_url"):
        mix = {arm: Counter() for arm in ARMS}
        for rec, arm, st in zip(w.records, arms, strategies):
            if st == s:
                mix[arm].update(c["name"] for c in _calls(rec))
        share = {arm: np.array([m[x] / sum(m.values()) for x in sorted(TOOLS)]) for arm, m in mix.items()}
        assert np.abs(share["base"] - share["rl"]).max() < 0.06, (s, share)
