"""The held-out household text-game world (mechanism.datasets.worlds.textgame): it reads back as
written, one round per command, joins its truth, is reproducible, and its arms differ only in their
mixture. Strategy discovery is not evaluated here."""
from __future__ import annotations

import json
import re

import polars as pl
import pytest

import mechanism as mx
from mechanism.datasets.worlds._base import PlantedWorld
from mechanism.datasets.worlds.textgame import _SUCCESS, ARMS, STRATEGIES, textgame

VERBS = {"go", "open", "close", "take", "put", "clean", "heat", "cool", "use", "examine", "look", "inventory"}
NOTHING = "Nothing happens."


@pytest.fixture(scope="module")
def world():
    return textgame(n_questions=60, n_samples=4, random_state=0)


@pytest.fixture(scope="module")
def runs(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("textgame")), format=world.format)


def _commands(record):
    """(command, observation) of every command of a record, in order, the finishing action last."""
    msgs = record["messages"]
    out = []
    for j, m in enumerate(msgs):
        if m["role"] == "assistant":
            seen = msgs[j + 1]["content"].removeprefix("Observation: ") if j + 1 < len(msgs) else None
            out.append((m["content"].split("Action: ", 1)[1], seen))
    return out


def test_shape_of_a_small_world():
    w = textgame(n_questions=2, n_samples=1)
    assert isinstance(w, PlantedWorld)
    assert (w.format, len(w.records), sorted(set(w.truth["arm"]))) == ("react", 4, ["base", "rl"])
    assert sorted(w.truth.columns) == ["arm", "n_calls", "n_failures", "question_id", "sample_id", "strategy"]
    assert set(w.truth["question_id"]) == {"textgame-0000", "textgame-0001"}


def test_one_record_per_arm_question_and_sample(world):
    assert len(world.records) == world.truth.height == 2 * 60 * 4
    keys = {(r["arm"], r["question_id"], r["sample_id"]) for r in world.records}
    assert len(keys) == len(world.records)
    assert set(world.truth["strategy"]) == set(STRATEGIES)


def test_same_state_same_records_other_state_other_records():
    a, b = textgame(n_questions=5, random_state=3), textgame(n_questions=5, random_state=3)
    assert json.dumps(a.records) == json.dumps(b.records) and a.truth.equals(b.truth)
    c = textgame(n_questions=5, random_state=4)
    assert json.dumps(a.records) != json.dumps(c.records)


def test_mixtures_are_explicit_and_shares_near_them(world):
    for arm, mix in ARMS.items():
        assert set(mix) == set(STRATEGIES) and abs(sum(mix.values()) - 1) < 1e-9, arm
        assert min(mix.values()) >= 0.05, arm
    assert sum(abs(ARMS["rl"][s] - ARMS["base"][s]) >= 0.05 for s in STRATEGIES) >= 4
    assert set(_SUCCESS) == set(STRATEGIES)
    assert world.planted["split"]["rl"]["all"]["pure_reweighting"]
    t = world.truth
    for arm, mix in ARMS.items():
        got = dict(t.filter(pl.col("arm") == arm)["strategy"].value_counts(normalize=True).iter_rows())
        for s, p in mix.items():
            assert abs(got.get(s, 0.0) - p) < 0.08, (arm, s, got)


def test_reads_back_one_round_per_command(world, runs):
    assert runs.height == len(world.records)
    truth = world.join_truth(runs)
    assert truth["n_calls"].null_count() == 0
    assert runs["n_rounds"].to_list() == truth["n_calls"].to_list()
    by_key = {(r["arm"], r["question_id"], r["sample_id"]): r for r in world.records}
    for row in runs.head(80).iter_rows(named=True):
        rec = by_key[(row["arm"], row["question_id"], row["sample_id"])]
        commands = _commands(rec)
        assert [s["query"] for s in row["steps"]] == [c for c, _ in commands[:-1]]
        assert [s["observation"] for s in row["steps"]] == [o for _, o in commands[:-1]]
        assert row["answer"] == re.fullmatch(r"finish\[(.*)\]", commands[-1][0]).group(1)
    labels = world.labels_for(runs)
    assert len(labels) == runs.height and set(labels) == set(STRATEGIES)


def test_commands_are_plain_text_from_the_vocabulary(world):
    for rec in world.records:
        *commands, (last, _) = _commands(rec)
        assert last.startswith("finish[")
        for command, _ in commands:
            assert "[" not in command, command
    heads = {c.split()[0] for rec in world.records for c, o in _commands(rec)[:-1] if o != NOTHING}
    assert heads == VERBS


def test_failures_are_nothing_happens_then_a_corrected_command(world):
    t = world.truth
    for rec, n_calls, n_failures in zip(world.records, t["n_calls"], t["n_failures"]):
        commands = _commands(rec)[:-1]
        assert len(commands) == n_calls
        failed = [j for j, (_, o) in enumerate(commands) if o == NOTHING]
        assert len(failed) == n_failures
        for j in failed:  # the corrected command follows at once and works
            assert commands[j + 1][1] != NOTHING and commands[j + 1][0] != commands[j][0]
    for s in STRATEGIES:
        sub = t.filter(pl.col("strategy") == s)
        assert sub["n_failures"].sum() > 0, s
    rate = t["n_failures"].sum() / t["n_calls"].sum()
    assert 0.05 < rate < 0.15, rate


def test_lengths_are_realistic_and_overlap(world):
    t = world.truth
    assert t["n_calls"].min() >= 2 and t["n_calls"].max() <= 32
    ranges = {s: (sub["n_calls"].min(), sub["n_calls"].max()) for (s,), sub in t.group_by("strategy")}
    for s, (lo, hi) in ranges.items():
        assert hi - lo >= 5, (s, lo, hi)
        assert all(lo <= ohi and olo <= hi for o, (olo, ohi) in ranges.items() if o != s), s


def test_optional_steps_and_words_vary_within_strategies(world):
    t = world.truth
    for s in STRATEGIES:
        recs = [r for r, x in zip(world.records, t["strategy"]) if x == s]
        firsts = {_commands(r)[0][0] == "look" for r in recs}
        assert firsts == ({True} if s == "look_first" else {True, False}), s
        said = {m["content"] for r in recs for m in r["messages"] if m["role"] == "assistant"}
        assert len(said) > 30, s


def test_arms_differ_only_in_mixture():
    w = textgame(n_questions=150, n_samples=4, random_state=1)
    t = w.truth.with_columns(correct=pl.Series([r["correct"] for r in w.records]))
    for s in STRATEGIES:
        rows = {arm: sub for (arm,), sub in t.filter(pl.col("strategy") == s).group_by("arm")}
        b, r = rows["base"], rows["rl"]
        assert abs(b["n_calls"].mean() - r["n_calls"].mean()) < 2.0, s
        assert abs(b["n_failures"].sum() / b["n_calls"].sum() - r["n_failures"].sum() / r["n_calls"].sum()) < 0.06, s
        assert abs(b["correct"].mean() - r["correct"].mean()) < 0.2, s
    for arm, mix in ARMS.items():
        got = dict(t.filter(pl.col("arm") == arm)["strategy"].value_counts(normalize=True).iter_rows())
        for s, p in mix.items():
            assert abs(got[s] - p) < 0.05, (arm, s, got)
