"""The software-engineering world (mechanism.datasets.worlds.coder), a held-out planted world: it reads
back as written, its truth joins every row, it is reproducible, its arms differ only in their
mixture, and failures happen inside every strategy that calls a tool."""
from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import polars as pl
import pytest

import mechanism as mx
from mechanism.datasets.worlds import PlantedWorld, coder
from mechanism.datasets.worlds.coder import ARMS, STRATEGIES

TOOLS = {"search_code", "open_file", "edit_file", "run_tests", "run_shell", "submit"}
ERRORS = ("Error: ", "ERROR: file or directory not found", "bash: ")


@pytest.fixture(scope="module")
def world():
    return coder(n_questions=60, random_state=0)


@pytest.fixture(scope="module")
def runs(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("coder")), format="openai")


def _tool_calls(record):
    return [c["function"]["name"] for m in record["messages"] if m["role"] == "assistant"
            for c in m.get("tool_calls") or []]


def test_reads_back_one_row_per_trajectory_with_the_planted_calls(world, runs):
    assert runs.height == len(world.records) == world.truth.height == 2 * 60 * 4
    truth = world.join_truth(runs)
    assert runs["n_rounds"].to_list() == truth["n_calls"].to_list()
    # the truth's counts are the records' own: every tool call, submit the one that is not a round
    by_key = {(r["arm"], r["question_id"], r["sample_id"]): r for r in world.records}
    for row in truth.iter_rows(named=True):
        calls = _tool_calls(by_key[(row["arm"], row["question_id"], row["sample_id"])])
        assert len(calls) == row["n_tool_calls"] and set(calls) <= TOOLS
        assert len([c for c in calls if c != "submit"]) == row["n_calls"]
        assert (row["strategy"] == "give_up") == (not calls)
    assert all(len(steps) == n for steps, n in zip(runs["steps"].to_list(), runs["n_rounds"].to_list()))


def test_every_row_gets_its_truth_and_an_answer(world, runs):
    labels = world.labels_for(runs)
    assert len(labels) == runs.height and not any(x is None for x in labels)
    assert set(labels) == set(STRATEGIES)
    assert runs["answer"].null_count() == 0 and runs["question"].null_count() == 0


def test_is_a_planted_world(world):
    assert isinstance(world, PlantedWorld)
    assert set(world.planted["shares"]) == {"base", "rl"}
    assert world.planted["split"]["rl"]["all"]["within"] == 0.0


def test_same_random_state_same_records_another_other_records():
    a, b, c = (coder(n_questions=8, n_samples=2, random_state=s) for s in (3, 3, 4))
    assert json.dumps(a.records) == json.dumps(b.records) and a.truth.equals(b.truth)
    assert json.dumps(a.records) != json.dumps(c.records)


def test_call_counts_overlap_between_strategies(world):
    ranges = world.truth.group_by("strategy").agg(pl.col("n_calls").min().alias("lo"),
                                                  pl.col("n_calls").max().alias("hi"))
    spans = {r["strategy"]: (r["lo"], r["hi"]) for r in ranges.iter_rows(named=True)}
    tool_using = [s for s in STRATEGIES if s != "give_up"]
    for s in tool_using:  # every tool-using strategy shares a call count with another one
        lo, hi = spans[s]
        assert any(max(lo, spans[o][0]) <= min(hi, spans[o][1]) for o in tool_using if o != s), (s, spans)


def test_every_tool_using_strategy_fails_somewhere(world, runs):
    truth = world.join_truth(runs)
    failed = dict(truth.group_by("strategy").agg(pl.col("n_failed").sum()).iter_rows())
    assert failed["give_up"] == 0
    for s in STRATEGIES:
        if s != "give_up":
            assert failed[s] > 0, s
    # the failures are in the observations the reader kept, each followed by the same tool
    for steps, strategy in zip(runs["steps"].to_list(), truth["strategy"].to_list()):
        for i, step in enumerate(steps):
            if (step["observation"] or "").startswith(ERRORS):
                assert i + 1 < len(steps) and steps[i + 1]["tool"] == step["tool"], (strategy, step)


def _z(k1: int, n1: int, k2: int, n2: int) -> float:
    p = (k1 + k2) / (n1 + n2)
    se = math.sqrt(p * (1 - p) * (1 / n1 + 1 / n2)) if 0 < p < 1 else 1.0
    return (k1 / n1 - k2 / n2) / se


def test_arms_differ_only_in_their_mixture():
    """Pooled over a larger draw: per strategy, the failure rate per call and the share of each
    tool among the calls are alike between arms (two-proportion z within 4); the shares of the
    strategies differ as planted."""
    w = coder(n_questions=150, n_samples=4, random_state=1)
    t = w.truth
    calls = [Counter(_tool_calls(r)) for r in w.records]
    t = t.with_columns(pl.Series("calls", [json.dumps(c) for c in calls]))
    for s in STRATEGIES:
        if s == "give_up":
            continue
        per = {}
        for arm in ("base", "rl"):
            sub = t.filter((pl.col("strategy") == s) & (pl.col("arm") == arm))
            tools = Counter()
            for c in sub["calls"].to_list():
                tools.update(json.loads(c))
            per[arm] = (int(sub["n_failed"].sum()), int(sub["n_calls"].sum()), tools)
        (fb, nb, tb), (fr, nr, tr) = per["base"], per["rl"]
        assert abs(_z(fb, nb, fr, nr)) < 4, (s, per)
        for tool in set(tb) | set(tr):
            assert abs(_z(tb[tool], sum(tb.values()), tr[tool], sum(tr.values()))) < 4, (s, tool)
    shares = t.group_by("arm", "strategy").len()
    for arm, mix in ARMS.items():
        n = shares.filter(pl.col("arm") == arm)["len"].sum()
        for s, p in mix.items():
            got = shares.filter((pl.col("arm") == arm) & (pl.col("strategy") == s))["len"].sum() / n
            assert abs(got - p) < 4 * math.sqrt(p * (1 - p) / n), (arm, s, got, p)


def test_success_depends_on_the_strategy_only():
    w = coder(n_questions=150, n_samples=4, random_state=2)
    correct = np.array([r["correct"] for r in w.records])
    truth = w.truth
    for s in ("reproduce_first", "search_driven"):
        rate = {arm: correct[((truth["strategy"] == s) & (truth["arm"] == arm)).to_numpy()] for arm in ARMS}
        k1, n1, k2, n2 = rate["base"].sum(), rate["base"].size, rate["rl"].sum(), rate["rl"].size
        assert abs(_z(int(k1), int(n1), int(k2), int(n2))) < 4, s


def test_arms_argument_picks_the_strategies():
    w = coder(n_questions=3, n_samples=2, arms={"only": {"git_history": 1.0}}, random_state=5)
    assert set(w.truth["strategy"]) == {"git_history"} and set(w.truth["arm"]) == {"only"}
    commands = [json.loads(c["function"]["arguments"])["command"] for r in w.records for m in r["messages"]
                if m["role"] == "assistant" for c in m.get("tool_calls") or [] if c["function"]["name"] == "run_shell"]
    assert commands and all(c.split()[0] in ("git", "gti", "gi") for c in commands)
