"""The three published FireAct HotpotQA files, read in place from ../shared."""
from __future__ import annotations

import functools

import polars as pl
import pytest

from mechanism.readers import detect_format, read
from mechanism.readers.fireact import arm_from_name


@functools.lru_cache(maxsize=1)
def _read_all(folder: str):
    return read(folder, report=True)


@pytest.fixture
def fireact_runs(fireact_dir):
    return _read_all(str(fireact_dir / "trajs"))


def test_counts_match_the_published_rewards(fireact_runs):
    runs, rep = fireact_runs
    assert set(rep.formats.values()) == {"fireact"}
    assert not rep.skipped and rep.rows_in == rep.rows_kept == 1464
    per_arm = {r["arm"]: (r["n"], r["correct"]) for r in
               runs.group_by("arm").agg(n=pl.len(), correct=pl.col("correct").sum()).iter_rows(named=True)}
    assert per_arm == {"gpt-3.5-turbo": (465, 200), "llama-2-13b": (499, 172), "llama-2-7b": (500, 131)}
    # `reward` is exact match of `pred` against the gold answer: no disagreement to report
    assert not any("disagrees" in n for n in rep.notes)


def test_questions_gold_and_categories_filled(fireact_runs, fireact_dir):
    runs, _ = fireact_runs
    assert runs["question"].null_count() == 0 and (runs["question"].str.len_chars() > 10).all()
    assert (runs["gold"].list.len() >= 1).all()
    assert set(runs["category"].unique()) == {"bridge", "comparison"}
    first = runs.filter(pl.col("question_id") == "6238", pl.col("arm") == "llama-2-13b").row(0, named=True)
    assert first["question"] == "Who created the show with Wendy Schaal doing the voice of Francine?"
    assert first["gold"] == ["Seth MacFarlane"] and first["answer"] == "seth macfarlane" and first["correct"]
    # 464 questions answered by all three agents
    both = runs.group_by("question_id").agg(pl.col("arm").n_unique()).filter(pl.col("arm") == 3)
    assert both.height == 464


def test_steps_parsed_with_queries_and_observations(fireact_runs):
    runs, _ = fireact_runs
    steps = runs.select("arm", "steps").explode("steps").filter(pl.col("steps").is_not_null()).unnest("steps")
    assert steps.height == runs["n_rounds"].sum()
    assert steps["query"].null_count() == 0 and (steps["query"].str.len_chars() > 0).all()
    assert steps["observation"].null_count() == 0  # every executed action got its observation
    # the 7B agent sometimes calls a `reflect` action: a tool call like any other
    # and the GPT-3.5 agent once writes `click[...]` then `search[...]` in one turn: the
    # environment ran the first and answered "Unknown tool name: click" (a failed call)
    assert set(steps["tool"].unique()) == {"search", "reflect", "click"}
    click = steps.filter(pl.col("tool") == "click")
    assert click.height == 1 and "Unknown tool name: click" in click["observation"][0]
    row = runs.filter(pl.col("question_id") == "6238", pl.col("arm") == "llama-2-7b").row(0, named=True)
    assert row["n_rounds"] == 1
    assert row["steps"][0]["query"] == "who created the show with Wendy Schaal doing the voice of Francine"
    assert row["steps"][0]["observation"].startswith("It was finally in '05 that Schaal landed")


def test_gpt_answers_a_third_without_searching(fireact_runs):
    runs, _ = fireact_runs
    gpt = runs.filter(pl.col("arm") == "gpt-3.5-turbo")
    zero = gpt.filter(pl.col("n_rounds") == 0)
    assert zero.height == 150  # about a third of 465
    assert zero["steps"].list.len().max() == 0
    llama = runs.filter(pl.col("arm").str.starts_with("llama"))
    assert (llama["n_rounds"] >= 1).all()
    two = gpt.filter(pl.col("question_id") == "3188").row(0, named=True)
    assert [s["query"] for s in two["steps"]][:2] == [
        "Michael Braz libretto Georgia college founded in 1906", "Georgia college founded in 1906 Michael Braz"]


def test_detect_and_arm_names(fireact_dir):
    files = sorted((fireact_dir / "trajs").glob("*.json"))
    assert [detect_format(f) for f in files] == ["fireact"] * 3
    assert [arm_from_name(f) for f in files] == ["gpt-3.5-turbo", "llama-2-13b", "llama-2-7b"]
