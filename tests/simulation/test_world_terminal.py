"""The terminal-agent world (mechanism.datasets.worlds.terminal): OpenAI records with ONE `bash` tool read
back with `mechanism.read` as a user's files are, the truth it carries, and the planted design
(failed commands inside every strategy, each followed by the corrected command; optional
steps at fixed rates; every strategy on both kinds of task; arms differing only in their
mixture). Strategy discovery is not evaluated here."""
from __future__ import annotations

import json
import re

import numpy as np
import polars as pl
import pytest
from world_checks import assert_arms_differ_only_in_mixture, openai_calls

import mechanism as mx
from mechanism.datasets import worlds
from mechanism.datasets.worlds import terminal
from mechanism.datasets.worlds.terminal import _P_FAIL, _P_REVIEW, _SAY, _SUCCESS, ARMS, KINDS, STRATEGIES

RETRY = set(_SAY["retry"])
# each strategy's commands once the failed ones are left out, one letter a command:
# l listing, c cat/head, g grep, w sed -n window, e edit, k check, u whole suite, h git log,
# s git show/diff of a commit, r review (git diff/status), p pip, v python --version
PLANTED = {"explore_then_edit": r"ll?cekr?", "grep_localise": r"gg?wekr?", "reproduce_first": r"kwek(u)?r?",
           "blind_retry": r"ekek(ek)?r?", "read_many": r"c{3,5}ekr?", "git_history": r"hsekr?",
           "setup_first": r"pv?pkcekr?"}


@pytest.fixture(scope="module")
def world():
    return terminal(n_questions=30, random_state=0)


@pytest.fixture(scope="module")
def read(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("terminal")), format="openai", report=True)


@pytest.fixture(scope="module")
def big():
    """A larger sample for the rates (both arms, pooled over two seeds)."""
    return [terminal(n_questions=200, n_samples=6, random_state=seed) for seed in (1, 2)]


def _calls(record):
    """(command, observation, what the assistant said) of every bash call."""
    said = [m["content"] for m in record["messages"] if m["role"] == "assistant" and m.get("tool_calls")]
    return [(args["command"], obs, s) for (tool, args, obs), s in zip(openai_calls(record), said)]


def _ok(record):
    """The commands that were not failures: a failure is the call before a retry."""
    calls = _calls(record)
    return [c for i, c in enumerate(calls) if not (i + 1 < len(calls) and calls[i + 1][2] in RETRY)]


def _letter(command: str, task_script: str) -> str:
    program = command.split()[0]
    if program in ("ls", "find", "tree"):
        return "l"
    if program in ("cat", "head"):
        return "c"
    if program == "grep":
        return "g"
    if program == "sed":
        return "e" if command.startswith("sed -i") else "w"
    if program == "perl" or command.startswith("python3 - <<"):
        return "e"
    if "--version" in command:
        return "v"
    if "pip" in command.split()[:3] or program in ("pip", "pip3"):
        return "p"
    if program == "git":
        if re.match(r"git log", command):
            return "h"
        return "s" if re.search(r"\b[0-9a-f]{7}\b", command) else "r"
    if "pytest" in command:
        return "k" if "test_" in command else "u"
    assert command.startswith("python " + task_script), command
    return "k"


def _rows(big):
    return [(row, rec) for w in big for row, rec in zip(w.truth.iter_rows(named=True), w.records)]


def _script(rec):
    m = re.search(r"`python (scripts/\S+)", rec["messages"][1]["content"])
    return m.group(1) if m else "scripts/"


def test_is_a_planted_world(world):
    assert isinstance(world, worlds.PlantedWorld)
    assert world.format == "openai" and world.name == "terminal"
    assert "terminal" in worlds.__all__ and "terminal" in worlds.WORLDS
    assert set(world.truth["strategy"]) == set(STRATEGIES)
    assert world.truth.columns == ["arm", "question_id", "sample_id", "strategy", "kind", "n_calls", "n_failures",
                                   "correct"]


def test_reads_back_one_row_per_trajectory_with_one_tool(world, read):
    runs, report = read
    assert report.skipped == [] and runs.height == len(world.records) == world.truth.height
    assert not any(label is None for label in world.labels_for(runs))
    t = world.join_truth(runs)
    assert runs["n_rounds"].to_list() == t["n_calls"].to_list()
    assert {s["tool"] for steps in runs["steps"].to_list() for s in steps} == {"bash"}
    got = runs.join(world.truth, on=["arm", "question_id", "sample_id"])
    assert got["correct"].to_list() == got["correct_right"].to_list()
    assert all(a for a in runs["answer"].to_list())


def test_truth_counts_match_the_records(big):
    for row, rec in _rows(big):
        calls = _calls(rec)
        assert len(calls) == row["n_calls"]
        assert sum(said in RETRY for _, _, said in calls) == row["n_failures"]
        for tool, args, _ in openai_calls(rec):
            assert tool == "bash" and list(args) == ["command"]


def test_failures_show_in_observations_and_are_followed_by_the_corrected_command(big):
    kinds = {"not found": 0, "no such file": 0, "other": 0}
    for row, rec in _rows(big):
        calls = _calls(rec)
        for i, (cmd, obs, said) in enumerate(calls):
            if said not in RETRY:
                continue
            bad_cmd, bad_obs, _ = calls[i - 1]
            assert re.search(r"\[exit code: \d+\]$", bad_obs), bad_obs
            assert "[exit code:" not in obs or row["strategy"] in ("reproduce_first", "setup_first", "blind_retry")
            assert bad_cmd != cmd
            if f"bash: {bad_cmd.split()[0]}: command not found" in bad_obs:
                kinds["not found"] += 1
                assert bad_obs.startswith(f"bash: {bad_cmd.split()[0]}: command not found")
                assert bad_cmd.split()[0] != cmd.split()[0] and bad_cmd.split()[1:] == cmd.split()[1:]
            else:
                assert bad_cmd.split()[0] == cmd.split()[0], (bad_cmd, cmd)  # the same program, corrected
                kinds["no such file" if "No such file or directory" in bad_obs else "other"] += 1
    assert min(kinds.values()) > 50, kinds


def test_the_reader_sees_failed_commands(read):
    runs, report = read
    obs = [s["observation"] for steps in runs["steps"].to_list() for s in steps]
    assert any("command not found" in o for o in obs) and any("No such file or directory" in o for o in obs)
    assert any("failed calls by tool" in n and "`bash`" in n for n in report.notes)


def test_every_strategy_has_failures_at_the_planted_rate(big):
    t = pl.concat([w.truth for w in big])
    for s in STRATEGIES:
        sub = t.filter(pl.col("strategy") == s)
        rate = sub["n_failures"].sum() / (sub["n_calls"].sum() - sub["n_failures"].sum())  # per first attempt
        assert abs(rate - _P_FAIL) < 0.03, (s, rate)


def test_planted_command_sequences(big):
    for row, rec in _rows(big):
        letters = "".join(_letter(cmd, _script(rec)) for cmd, _, _ in _ok(rec))
        assert re.fullmatch(PLANTED[row["strategy"]], letters), (row["strategy"], letters)


def test_argument_values_come_from_earlier_output(big):
    """grep_localise prints the lines from the number grep gave; reproduce_first from the
    traceback's line: where each strategy takes its line number from is planted."""
    for row, rec in _rows(big):
        if row["strategy"] not in ("grep_localise", "reproduce_first"):
            continue
        ok = _ok(rec)
        i = next(i for i, (cmd, _, _) in enumerate(ok) if cmd.startswith("sed -n"))
        start, end = map(int, re.search(r"(\d+),(\d+)p", ok[i][0]).groups())
        earlier = "\n".join(obs for _, obs, _ in ok[:i])
        source = ":(\\d+):def " if row["strategy"] == "grep_localise" else r"(?:line |py:)(\d+)(?:, in|: in)"
        numbers = [int(n) for n in re.findall(source, earlier)]
        assert any(start <= n <= end for n in numbers), (row["strategy"], ok[i][0], numbers)


def test_optional_steps_at_fixed_rates(big):
    """The final review, alike between arms, kinds and strategies; each strategy's own step."""
    rows = []
    for row, rec in _rows(big):
        letters = "".join(_letter(cmd, _script(rec)) for cmd, _, _ in _ok(rec))
        rows.append((row["strategy"], row["kind"], row["arm"], letters.endswith("r"), letters))
    d = pl.DataFrame(rows, schema=["strategy", "kind", "arm", "review", "letters"], orient="row")
    assert abs(d["review"].mean() - _P_REVIEW) < 0.03
    for by in ("arm", "kind", "strategy"):
        for _, rate in d.group_by(by).agg(pl.col("review").mean()).iter_rows():
            assert abs(rate - _P_REVIEW) < 0.07, (by, rate)
    own = {"explore_then_edit": (r"^ll", 0.5), "grep_localise": (r"^gg", 0.4), "reproduce_first": (r"u", 0.35),
           "setup_first": (r"v", 0.5), "blind_retry": (r"^ekekek", 0.4), "read_many": (r"^c{4}", 0.5)}
    for s, (pattern, p) in own.items():
        sub = d.filter(pl.col("strategy") == s)
        for arm in ARMS:
            share = np.mean([bool(re.search(pattern, x)) for x in sub.filter(pl.col("arm") == arm)["letters"]])
            assert abs(share - p) < 0.1, (s, arm, share)


def test_every_strategy_on_both_kinds(big):
    t = pl.concat([w.truth for w in big])
    assert t.group_by("strategy", "kind").len().height == len(STRATEGIES) * len(KINDS)


def test_arms_differ_only_in_mixture(big):
    t = pl.concat([w.truth for w in big])
    shares = {arm: {s: float(np.mean([w.planted["shares"][arm][s] for w in big])) for s in STRATEGIES}
              for arm in ARMS}
    assert_arms_differ_only_in_mixture(t, shares, tool_free="")
    for (s, arm), sub in t.group_by("strategy", "arm"):
        assert abs(sub["correct"].mean() - _SUCCESS[s]) < 0.12, (s, arm)  # success: the strategy's alone


def test_wording_and_commands_vary_inside_strategies(big):
    for s in STRATEGIES:
        commands, words = set(), set()
        for row, rec in _rows(big):
            if row["strategy"] == s:
                commands.update(cmd for cmd, _, _ in _calls(rec))
                words.add(rec["messages"][-1]["content"])
        assert len(commands) > 50 and len(words) > 50, s


def test_random_state(tmp_path):
    a, b, c = (terminal(n_questions=6, random_state=3), terminal(n_questions=6, random_state=3),
               terminal(n_questions=6, random_state=4))
    assert a.records == b.records and a.truth.equals(b.truth)
    assert a.records != c.records
    fa, fb = a.write(tmp_path / "a"), b.write(tmp_path / "b")
    assert fa.read_bytes() == fb.read_bytes()
    assert (tmp_path / "a" / "truth.csv").read_bytes() == (tmp_path / "b" / "truth.csv").read_bytes()
    assert json.loads(fa.read_text().splitlines()[0])["messages"][0]["role"] == "system"
