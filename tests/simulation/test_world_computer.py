"""The computer-use world (mechanism.datasets.worlds.computer): ATIF documents with ONE `computer` tool
whose `action` names the action, read back with `mechanism.read` as a user's files are, the
truth it carries, and the planted design (actions without effect answered by one fixed text
and made again, corrected; optional steps at fixed rates; arms differing only in their
mixture). Strategy discovery is not evaluated here."""
from __future__ import annotations

import re

import numpy as np
import polars as pl
import pytest
from world_checks import assert_arms_differ_only_in_mixture

import mechanism as mx
from mechanism.datasets import worlds
from mechanism.datasets.worlds import computer
from mechanism.datasets.worlds.computer import (
    _P_FAIL,
    _P_FINAL_SHOT,
    _P_FIRST_SHOT,
    _P_SCROLL,
    _P_SELECT_ALL,
    _SUCCESS,
    ARMS,
    KINDS,
    NOTHING,
    STRATEGIES,
)

ACTIONS = {"screenshot", "left_click", "mouse_move", "type", "key", "scroll", "wait"}
# each strategy's actions once the failed ones are left out, one letter an action: S screenshot,
# C left_click, M mouse_move, T type, R key Return, E key Escape, A key ctrl+a, K another key,
# L scroll, Z wait
PLANTED = {"keyboard_shortcuts": r"S?KA?TRS?", "menu_navigation": r"SCL?CCA?TCS?", "search_commands": r"SCTRCA?TCS?",
           "explore_menus": r"S(CE){1,2}CL?CCA?TCS?", "hover_toolbar": r"SM{1,3}CCA?TCS?",
           "verify_each": r"SCS(LS)?CSCA?TSCS", "blind_wait": r"CZL?CZCA?TRZ"}
MENU_STRATEGIES = ("menu_navigation", "explore_menus", "verify_each", "blind_wait")
FINAL_SHOT = ("keyboard_shortcuts", "menu_navigation", "search_commands", "explore_menus", "hover_toolbar")


@pytest.fixture(scope="module")
def world():
    return computer(n_questions=30, random_state=0)


@pytest.fixture(scope="module")
def read(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("computer")), format="atif", report=True)


@pytest.fixture(scope="module")
def big():
    """A larger sample for the rates (both arms, pooled over two seeds)."""
    return [computer(n_questions=200, n_samples=6, random_state=seed) for seed in (1, 2)]


def _calls(record):
    """(arguments, result text, whether the result holds an image) of every computer call."""
    out = []
    for st in record["steps"]:
        for call in st.get("tool_calls") or []:
            assert call["function_name"] == "computer"
            content = st["observation"]["results"][0]["content"]
            if isinstance(content, list):
                text = "\n".join(p["text"] for p in content if p["type"] == "text")
                out.append((call["arguments"], text, any(p["type"] == "image" for p in content)))
            else:
                out.append((call["arguments"], content, False))
    return out


def _ok(record):
    return [c for c in _calls(record) if c[1] != NOTHING]


def _letter(args) -> str:
    action = args["action"]
    if action == "key":
        return {"Return": "R", "Escape": "E", "ctrl+a": "A"}.get(args["text"], "K")
    return {"screenshot": "S", "left_click": "C", "mouse_move": "M", "type": "T", "scroll": "L", "wait": "Z"}[action]


def _rows(big):
    return [(row, rec) for w in big for row, rec in zip(w.truth.iter_rows(named=True), w.records)]


def test_is_a_planted_world(world):
    assert isinstance(world, worlds.PlantedWorld)
    assert world.format == "atif" and world.name == "computer"
    assert "computer" in worlds.__all__ and "computer" in worlds.WORLDS
    assert set(world.truth["strategy"]) == set(STRATEGIES)
    assert world.truth.columns == ["arm", "question_id", "sample_id", "strategy", "kind", "n_calls", "n_failures",
                                   "n_screenshots", "correct"]


def test_reads_back_one_row_per_trajectory_with_one_tool(world, read):
    runs, report = read
    assert report.skipped == [] and runs.height == len(world.records) == world.truth.height
    assert not any(label is None for label in world.labels_for(runs))
    t = world.join_truth(runs)
    assert runs["n_rounds"].to_list() == t["n_calls"].to_list()
    assert {s["tool"] for steps in runs["steps"].to_list() for s in steps} == {"computer"}
    got = runs.join(world.truth, on=["arm", "question_id", "sample_id"])
    assert got["correct"].to_list() == got["correct_right"].to_list()
    # the screenshot's text part is what the reader keeps
    obs = [s["observation"] for steps in runs["steps"].to_list() for s in steps]
    assert any(o.startswith("Window: ") for o in obs) and NOTHING in obs


def test_truth_counts_match_the_records(big):
    for row, rec in _rows(big):
        calls = _calls(rec)
        assert len(calls) == row["n_calls"]
        assert sum(text == NOTHING for _, text, _ in calls) == row["n_failures"]
        assert sum(a["action"] == "screenshot" for a, _, _ in calls) == row["n_screenshots"]
        assert {a["action"] for a, _, _ in calls} <= ACTIONS
        for args, _text, image in calls:
            assert image == (args["action"] == "screenshot")
            assert list(args)[0] == "action"


def test_nothing_happened_is_one_fixed_text_followed_by_the_action_corrected(big):
    after = set()
    for row, rec in _rows(big):
        calls = _calls(rec)
        for i, (args, text, _) in enumerate(calls):
            if text != NOTHING:
                assert "no visible change" not in text
                continue
            after.add(args["action"])
            nxt = calls[i + 1]
            assert nxt[1] != NOTHING and nxt[0]["action"] == args["action"], (row["strategy"], args, nxt)
            if args["action"] == "left_click":
                assert nxt[0]["coordinate"] != args["coordinate"]
            elif args["text"] not in ("Return", "Escape", "ctrl+a"):
                assert nxt[0]["text"] != args["text"]  # the shortcut the application binds
    assert after == {"left_click", "key"}


def test_failures_at_the_planted_rate(big):
    """Per click or key press (the actions that can fail), alike between strategies and arms."""
    rows = []
    for row, rec in _rows(big):
        calls = _calls(rec)
        failable = sum(a["action"] in ("left_click", "key") for a, _, _ in calls) - row["n_failures"]
        rows.append((row["strategy"], row["arm"], row["n_failures"], failable))
    d = pl.DataFrame(rows, schema=["strategy", "arm", "failed", "failable"], orient="row")
    for by in ("strategy", "arm"):
        for _, failed, failable in d.group_by(by).agg(pl.col("failed").sum(), pl.col("failable").sum()).iter_rows():
            assert abs(failed / failable - _P_FAIL) < 0.03, (by, failed / failable)


def test_planted_action_sequences(big):
    for row, rec in _rows(big):
        letters = "".join(_letter(a) for a, _, _ in _ok(rec))
        assert re.fullmatch(PLANTED[row["strategy"]], letters), (row["strategy"], letters)


def test_clicks_land_on_what_an_earlier_result_showed(big):
    """Coordinates come from the screen: every successful click but the menu's first (the menu
    bar is known from a screenshot, or from memory when blind) is within a few pixels of a
    point an earlier result listed."""
    for row, rec in _rows(big)[:2000]:
        ok, seen = _ok(rec), []
        for i, (args, text, _) in enumerate(ok):
            if args["action"] == "left_click" and (seen or row["strategy"] != "blind_wait"):
                x, y = args["coordinate"]
                assert any(abs(x - a) <= 3 and abs(y - b) <= 3 for a, b in seen), (row["strategy"], args, i)
            seen += [(int(a), int(b)) for a, b in re.findall(r"\((\d+), (\d+)\)", text)]


def test_optional_steps_at_fixed_rates(big):
    rows = []
    for row, rec in _rows(big):
        letters = "".join(_letter(a) for a, _, _ in _ok(rec))
        rows.append((row["strategy"], row["arm"], "A" in letters, "L" in letters,
                     letters.endswith("S") and letters[:-1].endswith(("C", "R")), letters.startswith("S")))
    d = pl.DataFrame(rows, schema=["strategy", "arm", "select", "scroll", "final", "first"], orient="row")
    checks = (("select", STRATEGIES, _P_SELECT_ALL), ("scroll", MENU_STRATEGIES, _P_SCROLL),
              ("final", FINAL_SHOT, _P_FINAL_SHOT), ("first", ("keyboard_shortcuts",), _P_FIRST_SHOT))
    for col, strategies, p in checks:
        sub = d.filter(pl.col("strategy").is_in(list(strategies)))
        assert abs(sub[col].mean() - p) < 0.03, (col, sub[col].mean())
        for by in ("arm", "strategy"):
            for _, rate in sub.group_by(by).agg(pl.col(col).mean()).iter_rows():
                assert abs(rate - p) < 0.08, (col, by, rate)


def test_every_strategy_in_every_application(big):
    t = pl.concat([w.truth for w in big])
    assert t.group_by("strategy", "kind").len().height == len(STRATEGIES) * len(KINDS)


def test_arms_differ_only_in_mixture(big):
    t = pl.concat([w.truth for w in big])
    shares = {arm: {s: float(np.mean([w.planted["shares"][arm][s] for w in big])) for s in STRATEGIES}
              for arm in ARMS}
    assert_arms_differ_only_in_mixture(t, shares, tool_free="")
    for (s, arm), sub in t.group_by("strategy", "arm"):
        assert abs(sub["correct"].mean() - _SUCCESS[s]) < 0.12, (s, arm)  # success: the strategy's alone


def test_values_and_wording_vary_inside_strategies(big):
    for s in STRATEGIES:
        typed, words = set(), set()
        for row, rec in _rows(big):
            if row["strategy"] == s:
                typed.update(a["text"] for a, _, _ in _calls(rec) if a["action"] == "type")
                words.add(" | ".join(st["message"] for st in rec["steps"] if st["source"] == "agent"))
        assert len(typed) > 50 and len(words) > 50, s


def test_random_state(tmp_path):
    a, b, c = (computer(n_questions=6, random_state=3), computer(n_questions=6, random_state=3),
               computer(n_questions=6, random_state=4))
    assert a.records == b.records and a.truth.equals(b.truth)
    assert a.records != c.records
    assert a.write(tmp_path / "a").read_bytes() == b.write(tmp_path / "b").read_bytes()
