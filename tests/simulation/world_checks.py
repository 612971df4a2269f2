"""Checks every held-out world's tests make of its truth table: the arms differ only in their
mixture; and how they read the tool calls of an OpenAI record (shared here so that each
world's test states only what is its own)."""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl


def assert_arms_differ_only_in_mixture(t: pl.DataFrame, arms: Mapping[str, Mapping[str, float]], *,
                                       tool_free: str) -> None:
    """On a truth table with ``strategy, arm, n_calls, n_failures, correct`` (several seeds
    pooled): failure rates alike between ``base`` and ``rl`` pooled (0.03) and per tool-using
    strategy (0.08), mean calls (0.8) and success (0.2) alike per strategy, and each arm's
    shares within 0.05 of its planted mixture ``arms``."""
    per = (t.filter(pl.col("strategy") != tool_free)
           .group_by("strategy", "arm").agg(pl.col("n_failures").sum(), pl.col("n_calls").sum(),
                                             pl.col("n_calls").mean().alias("mean_calls"),
                                             pl.col("correct").mean().alias("success")))
    pooled = per.group_by("arm").agg((pl.col("n_failures").sum() / pl.col("n_calls").sum()).alias("rate"))
    rate = dict(pooled.iter_rows())
    assert abs(rate["base"] - rate["rl"]) < 0.03, rate
    for s in sorted(set(per["strategy"].to_list())):
        rows = {arm: row for arm, *row in per.filter(pl.col("strategy") == s)
                .select("arm", "n_failures", "n_calls", "mean_calls", "success").iter_rows()}
        (fb, cb, mb, sb), (fr, cr, mr, sr) = rows["base"], rows["rl"]
        assert abs(fb / cb - fr / cr) < 0.08, (s, rows)
        assert abs(mb - mr) < 0.8, (s, rows)  # the same call counts within the strategy
        assert abs(sb - sr) < 0.2, (s, rows)  # the same success rate within the strategy
    for arm, mixture in arms.items():
        got = dict(t.filter(pl.col("arm") == arm)["strategy"].value_counts(normalize=True).iter_rows())
        total = sum(mixture.values())
        for s, p in mixture.items():
            assert abs(got.get(s, 0.0) - p / total) < 0.05, (arm, s, got)


def openai_calls(record: Mapping[str, Any], *, parse_arguments: bool = True) -> list[tuple[str, Any, str]]:
    """(tool, arguments, observation) of every tool call of an OpenAI ``tool_calls`` record, in
    order; the arguments parsed from their JSON string unless ``parse_arguments`` is false."""
    results = {m["tool_call_id"]: m["content"] for m in record["messages"] if m["role"] == "tool"}
    return [(c["function"]["name"],
             json.loads(c["function"]["arguments"]) if parse_arguments else c["function"]["arguments"],
             results[c["id"]])
            for m in record["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]


def assert_reads_back(world: Any, read: tuple[pl.DataFrame, Any], tools: Sequence[str]) -> None:
    """An OpenAI world read back whole: no record skipped, every row's truth found, its rounds
    the truth's calls, its tools ``tools``, its grade, question (the first user message) and
    answer (the last message) as the record holds them."""
    runs, report = read
    assert report.skipped == [] and runs.height == len(world.records)
    assert not any(label is None for label in world.labels_for(runs))
    t = world.join_truth(runs)
    assert runs["n_rounds"].to_list() == t["n_calls"].to_list()
    assert {s["tool"] for steps in runs["steps"].to_list() for s in steps} == set(tools)
    got = runs.join(world.truth, on=["arm", "question_id", "sample_id"])
    assert got["correct"].to_list() == got["correct_right"].to_list()
    by_key = {(r["arm"], r["question_id"], r["sample_id"]): r for r in world.records}
    for row in runs.iter_rows(named=True):
        rec = by_key[(row["arm"], row["question_id"], row["sample_id"])]
        assert row["question"] == rec["messages"][1]["content"]
        assert row["answer"] == rec["messages"][-1]["content"]


def assert_success_follows_the_strategy(t: pl.DataFrame, success: Mapping[str, float], *, by: Sequence[str]) -> None:
    """Success drawn at each strategy's planted rate ``success`` and moved by nothing else: per
    strategy, the rate within four standard errors of it, and within 4.5 in every group of each
    column of ``by`` (the arm, the kind of task, whether a call failed, ...)."""
    for (s,), sub in t.group_by("strategy"):
        p = success[s]
        assert abs(sub["correct"].mean() - p) < 4 * np.sqrt(p * (1 - p) / sub.height), s
        for column in by:  # nothing but the strategy moves it
            for _, n, rate in sub.group_by(column).agg(pl.len(), pl.col("correct").mean()).iter_rows():
                assert abs(rate - p) < 4.5 * np.sqrt(p * (1 - p) / n), (s, column, rate, n)
