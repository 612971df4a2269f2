"""The tool-integrated math world (mechanism.datasets.worlds.interpreter): OpenAI records with ONE
`python` tool read back with `mechanism.read` as a user's files are, the truth it carries, the
programs printing what the tool says they print, and the planted design (failed programs in
every strategy that calls the tool, each followed by the corrected one; optional steps at fixed
rates; every strategy on every kind of problem; arms differing only in their mixture; success
set by the strategy alone). Strategy discovery is not evaluated here."""
from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re

import numpy as np
import polars as pl
import pytest
from world_checks import assert_arms_differ_only_in_mixture, openai_calls

import mechanism as mx
from mechanism.datasets import worlds
from mechanism.datasets.worlds import interpreter
from mechanism.datasets.worlds.interpreter import (
    _P_EMPTY,
    _P_EXPLORE,
    _P_FAIL,
    _P_RECHECK,
    _SUCCESS,
    ARMS,
    KINDS,
    STRATEGIES,
    TIMEOUT,
)

HAVE_SYMPY = importlib.util.find_spec("sympy") is not None


@pytest.fixture(scope="module")
def world():
    return interpreter()  # the default size: 60 problems, 4 samples, two arms


@pytest.fixture(scope="module")
def read(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("interpreter")), format="openai", report=True)


@pytest.fixture(scope="module")
def big():
    """A larger sample for the rates (both arms, pooled over two seeds)."""
    return [interpreter(n_questions=150, n_samples=5, random_state=seed) for seed in (1, 2)]


def _rows(ws):
    return [(row, rec) for w in ws for row, rec in zip(w.truth.iter_rows(named=True), w.records)]


def _failed(output: str) -> bool:
    return output.startswith(("Traceback (most recent call last):", '  File "<stdin>"')) or output == TIMEOUT


def _calls(record):
    """(code, output, what the assistant said) of every python call."""
    said = [m["content"] for m in record["messages"] if m["role"] == "assistant" and m.get("tool_calls")]
    return [(args["code"], out, s) for (_, args, out), s in zip(openai_calls(record), said)]


def _ok(record):
    return [c for c in _calls(record) if not _failed(c[1])]


def _exec(code: str) -> tuple[str, str | None]:
    """What ``code`` prints, and the last line of its error (None when it ran)."""
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            exec(compile(code, "<stdin>", "exec"), {"__name__": "__main__"})
    except Exception as e:  # noqa: BLE001 - the programs' own errors are what is compared
        return buf.getvalue(), f"{type(e).__name__}: {e.msg if isinstance(e, SyntaxError) else e}"
    return buf.getvalue().rstrip("\n"), None


def test_is_a_planted_world(world):
    assert isinstance(world, worlds.PlantedWorld)
    assert world.format == "openai" and world.name == "interpreter"
    assert "interpreter" in worlds.__all__ and "interpreter" in worlds.WORLDS
    assert world.truth.columns == ["arm", "question_id", "sample_id", "strategy", "kind", "n_calls", "n_failures",
                                   "correct"]
    # every strategy and every kind at the default size, and every strategy on every kind
    assert set(world.truth["strategy"]) == set(STRATEGIES) and set(world.truth["kind"]) == set(KINDS)
    assert world.truth.group_by("strategy", "kind").len().height == len(STRATEGIES) * len(KINDS)
    problems = {rec["question_id"]: rec["messages"][1]["content"] for rec in world.records}
    assert len(problems) == 60 and len(set(problems.values())) == 60


def test_reads_back_one_row_per_trajectory_with_one_tool(world, read):
    runs, report = read
    assert report.skipped == [] and runs.height == len(world.records) == world.truth.height
    assert not any(label is None for label in world.labels_for(runs))
    t = world.join_truth(runs)
    assert runs["n_rounds"].to_list() == t["n_calls"].to_list()
    assert world.runs["n_rounds"].to_list() == world.truth["n_calls"].to_list()
    assert {s["tool"] for steps in runs["steps"].to_list() for s in steps} == {"python"}
    got = runs.join(world.truth, on=["arm", "question_id", "sample_id"])
    assert got["correct"].to_list() == got["correct_right"].to_list()
    assert all(a for a in runs["answer"].to_list())


def test_truth_counts_and_failures_followed_by_a_call(big):
    kinds = {}
    for row, rec in _rows(big):
        calls = _calls(rec)
        assert len(calls) == row["n_calls"]
        assert sum(_failed(out) for _, out, _ in calls) == row["n_failures"]
        for tool, args, _ in openai_calls(rec):
            assert tool == "python" and list(args) == ["code"]
        for i, (code, out, _) in enumerate(calls):
            if _failed(out):
                assert i + 1 < len(calls) and not _failed(calls[i + 1][1]), out  # the corrected program at once
                assert calls[i + 1][0] != code
                kind = "TimeoutError" if out == TIMEOUT else out.splitlines()[-1].split(":")[0]
                kinds[kind] = kinds.get(kind, 0) + 1
        assert rec["messages"][-1]["role"] == "assistant" and not rec["messages"][-1].get("tool_calls")
        assert "\\boxed{" in rec["messages"][-1]["content"]
    assert {"NameError", "SyntaxError", "ModuleNotFoundError", "TypeError", "ZeroDivisionError",
            "TimeoutError"} <= set(kinds), kinds


def test_no_code_alone_calls_no_tool(big):
    t = pl.concat([w.truth for w in big])
    assert (t.filter(pl.col("strategy") == "no_code")["n_calls"] == 0).all()
    assert (t.filter(pl.col("strategy") != "no_code")["n_calls"] >= 1).all()
    # call counts overlap between strategies (no count tells a strategy)
    spans = {s: (sub["n_calls"].min(), sub["n_calls"].max()) for (s,), sub in t.group_by("strategy")}
    assert all(lo <= 2 <= hi for s, (lo, hi) in spans.items() if s not in ("no_code", "stepwise")), spans
    assert spans["stepwise"][0] == 3
    assert sum(lo <= 3 <= hi for lo, hi in spans.values()) >= 5, spans


def test_programs_print_what_the_tool_says(world):
    """Every program without randomness, run here, prints the tool's result, or raises the error
    the traceback ends with (sympy programs where sympy is installed)."""
    checked = 0
    for _, rec in _rows([world]):
        for code, out, _ in _calls(rec):
            if out == TIMEOUT or re.search(r"\brandom\b|numpy", code) or ("sympy" in code and not HAVE_SYMPY):
                compile(code, "<stdin>", "exec") if not _failed(out) else None
                continue
            printed, error = _exec(code)
            if _failed(out):
                assert error == out.splitlines()[-1], (code, out, error)
            else:
                assert error is None and printed == out, (code, out, printed, error)
            checked += 1
    assert checked > 600


def test_every_strategy_has_failures_at_the_planted_rate(big):
    t = pl.concat([w.truth for w in big])
    for s in STRATEGIES[1:]:
        sub = t.filter(pl.col("strategy") == s)
        rate = sub["n_failures"].sum() / (sub["n_calls"].sum() - sub["n_failures"].sum())  # per first attempt
        assert abs(rate - _P_FAIL) < 0.04, (s, rate)


def _numbers(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w.])-?\d+(?![\w.])", text))


def test_planted_programs(big):
    """What each strategy's programs are: sympy, random draws, loops, a check of the answer stated
    first, values typed in from earlier outputs; calculate and verify with few programs."""
    stated = []
    for row, rec in _rows(big):
        s, ok = row["strategy"], _ok(rec)
        codes = "\n".join(code for code, _, _ in ok)
        value = rec["messages"][-1]["content"]
        if s == "symbolic":
            assert "sympy" in codes
        elif s == "simulate":
            assert re.search(r"\brandom\b|np\.random", codes)
        elif s == "brute_force":
            assert re.search(r"^\s*for |\bfor \w+(, \w+)? in ", codes, re.M)
        elif s == "stepwise":
            assert len(ok) >= 3
            typed = [_numbers(code) & _numbers(" ".join(out for _, out, _ in ok[:i]))
                     for i, (code, _, _) in enumerate(ok) if i]
            assert sum(bool(x) for x in typed) >= 1, ok  # a later program types in a printed number
        elif s == "verify":  # the candidate checked in code was stated in words before (unless left empty)
            assert 1 <= len(ok) <= 4
            m = re.search(r"(?:assert |print\().* == (?:\w+\.)?(?:Fraction\((\d+), (\d+)\)|(-?\d+)\b)", codes)
            candidate = f"{m.group(1)}/{m.group(2)}" if m.group(1) else m.group(3)
            said = [text for _, _, text in _calls(rec)]
            stated.append(any(re.search(rf"(?<![\d/]){re.escape(candidate)}(?![\d/])", text) for text in said))
        elif s == "calculate":
            assert 1 <= len(ok) <= 3
        if s != "no_code":
            assert "\\boxed{" in value
    assert 1 - _P_EMPTY - 0.06 < np.mean(stated) < 1 - _P_EMPTY + 0.06, np.mean(stated)


def test_optional_steps_at_fixed_rates(big):
    """In calculate (one program of its own): a first exploring program printing a list of small
    cases, and a last one re-checking the arithmetic, alike between arms and kinds; and empty
    reasoning texts everywhere."""
    only = {"calculate": 1.0}
    rows = []
    for row, rec in _rows([interpreter(n_questions=120, arms={"base": only, "rl": only}, random_state=5)]):
        if row["strategy"] == "calculate":
            ok = _ok(rec)
            explore = "[" in ok[0][1]
            rows.append((row["arm"], row["kind"], explore, len(ok) - explore - 1))
    d = pl.DataFrame(rows, schema=["arm", "kind", "explore", "recheck"], orient="row")
    assert set(d["recheck"]) <= {0, 1}
    assert abs(d["explore"].mean() - _P_EXPLORE) < 0.06 and abs(d["recheck"].mean() - _P_RECHECK) < 0.06
    for by in ("arm", "kind"):
        for _, n, explore, recheck in d.group_by(by).agg(pl.len(), pl.col("explore").mean(),
                                                          pl.col("recheck").mean()).iter_rows():
            for rate, p in ((explore, _P_EXPLORE), (recheck, _P_RECHECK)):
                assert abs(rate - p) < 4 * np.sqrt(p * (1 - p) / n), (by, rate, p)  # four standard errors
    empty = [s == "" for _, rec in _rows(big) for _, _, s in _calls(rec)]
    assert abs(np.mean(empty) - _P_EMPTY) < 0.03


def test_arms_differ_only_in_mixture_and_success_follows_the_strategy(big):
    assert ARMS["base"] != ARMS["rl"] and set(ARMS["base"]) == set(ARMS["rl"]) == set(STRATEGIES)
    assert all(p >= 0.04 for mix in ARMS.values() for p in mix.values())
    t = pl.concat([w.truth for w in big])
    assert_arms_differ_only_in_mixture(t, ARMS, tool_free="no_code")
    for (s,), sub in t.group_by("strategy"):
        assert abs(sub["correct"].mean() - _SUCCESS[s]) < 0.08, s
    # the boxed answer is the gold one exactly when the episode is correct
    for row, rec in _rows(big):
        boxed = re.findall(r"\\boxed\{(-?\d+)\}", rec["messages"][-1]["content"])[-1]
        assert (boxed == rec["gold"][0]) == row["correct"]


def test_wording_and_code_vary_inside_strategies(big):
    """No import line, first line of code or first sentence is common to every episode of a
    strategy."""
    for s in STRATEGIES[1:]:
        firsts, imports, words = [], [], []
        for row, rec in _rows(big):
            if row["strategy"] == s:
                calls = _calls(rec)
                firsts.append(calls[0][0].splitlines()[0])
                imports.append({line for code, _, _ in calls for line in code.splitlines()
                                if line.startswith(("import ", "from "))})
                words.append(calls[0][2])
        assert not set.intersection(*imports), s
        assert max(firsts.count(f) for f in set(firsts)) < 0.5 * len(firsts), s
        assert max(words.count(w) for w in set(words)) < 0.5 * len(words), s


def test_random_state(tmp_path):
    a, b, c = (interpreter(n_questions=6, random_state=3), interpreter(n_questions=6, random_state=3),
               interpreter(n_questions=6, random_state=4))
    assert a.records == b.records and a.truth.equals(b.truth)
    assert a.records != c.records
    assert interpreter(n_questions=6, random_state=np.random.default_rng(3)).records == a.records
    fa, fb = a.write(tmp_path / "a"), b.write(tmp_path / "b")
    assert fa.read_bytes() == fb.read_bytes()
    assert (tmp_path / "a" / "truth.csv").read_bytes() == (tmp_path / "b" / "truth.csv").read_bytes()
    first = json.loads(fa.read_text().splitlines()[0])
    assert [m["role"] for m in first["messages"][:2]] == ["system", "user"]
