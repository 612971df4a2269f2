"""The CodeAct agent world (mechanism.datasets.worlds.codeact): smolagents code actions read back
with `mechanism.read` as a user's files are (one round per program, the programs' code kept), the
truth it carries, and the planted design: the programs parse and, run again against the question's
tools, print what the observations show and make the calls the truth counts; each strategy groups
its tool calls into programs its own way (one per program, a loop of one tool, a chain per
warehouse, everything at once, none, a probe first, a draft and a verification); failures are
followed by the corrected program; optional steps at fixed rates; arms differ only in their
mixture; success set by the strategy alone. Strategy discovery is not evaluated here."""
from __future__ import annotations

import ast
import json
import re

import numpy as np
import polars as pl
import pytest
from world_checks import assert_arms_differ_only_in_mixture, assert_success_follows_the_strategy

import mechanism as mx
from mechanism.core.options import as_generator
from mechanism.datasets import worlds
from mechanism.datasets.worlds import codeact
from mechanism.datasets.worlds.codeact import (
    _MISTAKES,
    _P_CHECK,
    _P_DOCS,
    _P_ESTIMATE,
    _P_FAIL,
    _P_TIMEOUT,
    _SUCCESS,
    ARMS,
    KINDS,
    STRATEGIES,
    TOOLS,
    _Env,
    _gold,
    _observation,
    _program_text,
    _tasks,
)

TOOL_USING = [s for s in STRATEGIES if s != "no_tools"]
LOOPS = (ast.For, ast.ListComp, ast.DictComp, ast.SetComp, ast.GeneratorExp)
ANSWER = {"soonest": r"W\d, \d+ days, \d+\.\d\d EUR", "cheapest": r"W\d, \d+\.\d\d EUR", "value": r"\d+\.\d\d [A-Z]{3}"}
BARE_FINAL = re.compile(r"final_answer\(.*\)")


@pytest.fixture(scope="module")
def world():
    return codeact()  # the default size: 60 questions, 4 samples, two arms


@pytest.fixture(scope="module")
def read(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("codeact")), format="react", report=True)


@pytest.fixture(scope="module")
def big():
    """A larger sample for the rates (both arms, pooled over two seeds), with each record's
    question and its programs run again."""
    return _replayed([(codeact(n_questions=150, random_state=seed), seed, 150) for seed in (1, 2)])


@pytest.fixture(scope="module")
def alone():
    """Each strategy alone in both arms, for the rates of the optional steps inside it."""
    return _replayed([(codeact(n_questions=45, arms={"base": {s: 1.0}, "rl": {s: 1.0}}, random_state=7 + i), 7 + i, 45)
                      for i, s in enumerate(STRATEGIES)])


def _programs(record):
    """(thought, program, observation) of every code action of a record, in order."""
    msgs = record["messages"]
    out = []
    for i, m in enumerate(msgs):
        if m["role"] == "assistant":
            thought = m["content"].split("\n", 1)[0].removeprefix("Thought: ")
            assert m["content"].endswith("```<end_code>") and msgs[i + 1]["role"] == "user"
            out.append((thought, _program_text(m["content"]), msgs[i + 1]["content"]))
    return out


def _replay(record, task):
    """Every program of ``record`` run again, in order, in a fresh interpreter of ``task``'s tools
    (the timeouts the observations report replayed): one dict per program, its observation checked."""
    env = _Env(task)
    out = []
    for thought, code, obs in _programs(record):
        timeout = re.search(r"Error: (\w+) timed out after", obs)
        run = env.run(code, timeout=timeout.group(1) if timeout else None)
        assert _observation(run, "Code execution failed at line" in obs) == obs, (code, obs)
        out.append({"thought": thought, "code": code, "obs": obs, "calls": run.calls, "failed": run.error is not None,
                    "error": run.error, "final": run.final, "bare": bool(BARE_FINAL.fullmatch(code)),
                    "timeout": timeout is not None})
    return out


def _replayed(items):
    """(truth row, record, task, replayed programs) of every record of the worlds ``items`` gives:
    (world, seed, n_questions)."""
    rows = []
    for w, seed, n in items:
        tasks = dict(_tasks(as_generator(seed), n))
        for row, rec in zip(w.truth.iter_rows(named=True), w.records):
            task = tasks[row["question_id"]]
            rows.append((row, rec, task, _replay(rec, task)))
    return rows


def _tool_calls(code):
    """(tool call nodes, how many of them sit inside a loop or a comprehension) of a program."""
    tree = ast.parse(code)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id in TOOLS]
    looped = {id(c) for loop in ast.walk(tree) if isinstance(loop, LOOPS) for c in ast.walk(loop)}
    return calls, sum(id(c) in looped for c in calls)


def _is_docs(p):
    return not p["calls"] and re.search(r"\.(description|inputs)\b", p["code"]) is not None


def test_is_a_planted_world(world):
    assert isinstance(world, worlds.PlantedWorld)
    assert world.format == "react" and world.name == "codeact"
    assert "codeact" in worlds.__all__ and "codeact" in worlds.WORLDS and worlds.codeact is codeact
    assert world.truth.columns == ["arm", "question_id", "sample_id", "strategy", "kind", "n_actions", "n_tool_calls",
                                   "n_failures", "correct"]
    assert world.truth.height == len(world.records) == 2 * 60 * 4
    assert set(world.truth["strategy"]) == set(STRATEGIES) and set(world.truth["kind"]) == set(KINDS)
    questions = {rec["question_id"]: rec["messages"][1]["content"] for rec in world.records}
    assert len(questions) == 60 and len(set(questions.values())) == 60
    assert all(q.startswith("New task:\n") for q in questions.values())
    assert world.planted["shares"]["rl"] == pytest.approx(ARMS["rl"])
    assert set(world.planted["success"]) == set(STRATEGIES)


def test_reads_back_one_round_per_program(world, read):
    runs, report = read
    assert report.skipped == [] and runs.height == len(world.records)
    assert not any(label is None for label in world.labels_for(runs))
    t = world.join_truth(runs)
    assert runs["n_rounds"].to_list() == t["n_actions"].to_list()
    assert world.runs["n_rounds"].to_list() == world.truth["n_actions"].to_list()
    got = runs.join(world.truth, on=["arm", "question_id", "sample_id"])
    assert got["correct"].to_list() == got["correct_right"].to_list()
    by_key = {(r["arm"], r["question_id"], r["sample_id"]): r for r in world.records}
    for row in runs.iter_rows(named=True):
        rec = by_key[(row["arm"], row["question_id"], row["sample_id"])]
        assert row["question"] == rec["messages"][1]["content"] and row["gold"] == rec["gold"]
        # every program but a bare final_answer(...) is a round of the interpreter, its code kept
        want = []
        for _, code, _ in _programs(rec):
            final = re.search(r"^final_answer\(", code, re.M)
            before = code[:final.start()].strip() if final else code
            if before:
                want.append(before)
        assert [s["tool"] for s in row["steps"]] == ["python_interpreter"] * len(want)
        assert [json.loads(s["arguments"])["code"] for s in row["steps"]] == want
        last = _programs(rec)[-1][1]
        literal = re.fullmatch(r"final_answer\((['\"])(.*)\1\)", last)
        if literal:
            assert row["answer"] == literal.group(2)


def test_the_programs_run_as_logged(big):
    """Run again, every program prints what its observation shows; the truth's counts are the
    runs' counts; the answer is the gold exactly when the episode is correct."""
    for row, rec, task, progs in big:
        for p in progs:
            ast.parse(p["code"])  # every program is Python
        assert sum(not p["bare"] for p in progs) == row["n_actions"]
        assert sum(len(p["calls"]) for p in progs) == row["n_tool_calls"]
        assert sum(p["failed"] for p in progs) == row["n_failures"]
        assert not any(p["bare"] and p["failed"] for p in progs)
        last = progs[-1]
        assert last["final"] is not None and not last["failed"]
        assert last["obs"].endswith(f"Last output from code snippet:\n{last['final']}")
        assert all(p["final"] is None for p in progs[:-1] if not p["failed"])  # one answer, at the end
        assert rec["gold"] == [task["gold"]] and re.fullmatch(ANSWER[row["kind"]], last["final"])
        assert (last["final"] == task["gold"]) == row["correct"]
        assert row["kind"] == task["kind"] and rec["messages"][1]["content"] == "New task:\n" + task["text"]


def test_failures_are_followed_by_the_corrected_program(big):
    forms = {}
    for _, _, _, progs in big:
        for i, p in enumerate(progs):
            if not p["failed"]:
                continue
            fix = progs[i + 1]
            assert not fix["failed"]  # fixed at the first retry
            assert (fix["code"] == p["code"]) == p["timeout"], (p["code"], fix["code"])
            if not p["timeout"]:  # one spot changed: the same number of lines, one of them different
                a, b = p["code"].split("\n"), fix["code"].split("\n")
                assert len(a) == len(b) and sum(x != y for x, y in zip(a, b)) == 1
            err = p["error"]
            form = ("timeout" if p["timeout"] else re.sub(r"\s*('|W\d).*", "", err[1]) if err[0] == "tool" else err[0])
            forms[form] = forms.get(form, 0) + 1
            assert ("Traceback" in p["obs"] or "Code execution failed at line" in p["obs"]) == (err[0] != "tool")
    assert {"NameError", "KeyError", "TypeError", "timeout", "warehouse", "unknown sku", "no route from",
            "units must be a positive integer, got"} <= set(forms), forms
    assert abs(forms["timeout"] / sum(forms.values()) - _P_TIMEOUT) < 0.06, forms


def test_failures_at_the_planted_rate_in_every_strategy(big):
    t = pl.DataFrame([row for row, *_ in big])
    for s in STRATEGIES:
        sub = t.filter(pl.col("strategy") == s)
        rate = sub["n_failures"].sum() / (sub["n_actions"].sum() - sub["n_failures"].sum())  # per first attempt
        assert abs(rate - _P_FAIL) < 0.05, (s, rate)


def test_each_strategy_groups_its_calls_its_own_way(big):
    for row, _, task, progs in big:
        s, kind = row["strategy"], row["kind"]
        k, country = len(task["whs"]), task["country"] is not None
        m = sum(task["stock"][w] >= task.get("units", 0) for w in task["whs"])
        done = [p for p in progs if not p["failed"]]
        tooled = [p for p in done if p["calls"]]
        shape = [(len(p["calls"]), *_tool_calls(p["code"])[::-1]) for p in tooled]  # (calls run, looped, written)
        assert all(p["final"] is None for p in done if p["calls"]) or s in ("one_shot", "explore_first"), s
        if s == "no_tools":
            assert row["n_tool_calls"] == 0 and len(done) <= 3
        elif s == "stepwise":  # one call per program, none in a loop; every lookup its own program
            assert all(n == 1 and looped == 0 for n, looped, _ in shape), shape
            lookups = country + (k + m if kind != "value" else k + 2) + (kind == "cheapest")
            assert len(tooled) == lookups, (kind, k, m, len(tooled))
        elif s == "loop":  # one tool per program; the per-warehouse tools called in a loop
            assert all(len(set(p["calls"])) == 1 for p in tooled)
            stock = [p for p in tooled if p["calls"][0] == "check_stock"]
            assert len(stock) == 1 and len(stock[0]["calls"]) == k and _tool_calls(stock[0]["code"])[1] == 1
            if kind != "value":
                quotes = [p for p in tooled if p["calls"][0] == "quote_shipping"]
                assert len(quotes) == 1 and len(quotes[0]["calls"]) == m and _tool_calls(quotes[0]["code"])[1] == 1
            assert len(tooled) == country + {"soonest": 2, "cheapest": 3, "value": 3}[kind]
        elif s == "chain":  # a program per warehouse chaining different tools, nothing in a loop
            assert len(tooled) == k and all(p["calls"].count("check_stock") == 1 for p in tooled)
            assert all(looped == 0 for _, looped, _ in shape)
            assert all(len(set(p["calls"])) >= 2 for p in tooled if "quote_shipping" in p["calls"]
                       or "convert_currency" in p["calls"])
            assert sum(len(set(p["calls"])) >= 2 for p in tooled) >= (m if kind != "value" else k)
            assert all(c == "check_stock" for p in tooled[1:] for c in p["calls"][:1])
        elif s == "one_shot":  # one program: every lookup in loops, and the answer
            assert len(tooled) == 1 and tooled[0] is done[-1] and tooled[0]["final"] is not None
            assert shape[0][1] >= 1 and len(set(tooled[0]["calls"])) >= 2
        elif s == "explore_first":  # one probing call printed with its type, then the rest at once
            assert len(tooled) == 2 and len(tooled[0]["calls"]) == 1 and "print(type(" in tooled[0]["code"]
            assert tooled[1] is done[-1] and tooled[1]["final"] is not None and shape[1][1] >= 1
        elif s == "verify":  # a draft doing every lookup, then fresh calls for the pick, then the answer
            assert len(tooled) == 2 and tooled[0]["final"] is None and shape[0][1] >= 1
            assert "candidate" in tooled[0]["obs"] and len(tooled[1]["calls"]) == 2 and shape[1][1] == 0
            assert set(tooled[1]["calls"]) == ({"get_price", "convert_currency"} if kind == "value"
                                               else {"check_stock", "quote_shipping"})


def test_counts_overlap_between_strategies(big):
    t = pl.DataFrame([row for row, *_ in big])
    spans = {s: (sub["n_actions"].min(), sub["n_actions"].max()) for (s,), sub in t.group_by("strategy")}
    for s in TOOL_USING:  # every strategy shares action counts with at least three others
        lo, hi = spans[s]
        assert sum(max(lo, o[0]) <= min(hi, o[1]) for x, o in spans.items() if x != s) >= 3, spans
    assert all(lo <= 3 <= hi for s, (lo, hi) in spans.items() if s not in ("stepwise", "no_tools")), spans
    calls = {s: set(sub["n_tool_calls"]) for (s,), sub in t.group_by("strategy")}
    assert len(set.intersection(*(calls[s] for s in TOOL_USING))) >= 3, calls


def test_arms_differ_only_in_mixture_and_success_follows_the_strategy(big):
    assert ARMS["base"] != ARMS["rl"] and set(ARMS["base"]) == set(ARMS["rl"]) == set(STRATEGIES)
    assert all(p >= 0.05 for mix in ARMS.values() for p in mix.values())
    t = pl.DataFrame([{**row, "country": task["country"] is not None} for row, _, task, _ in big])
    assert_arms_differ_only_in_mixture(t.with_columns(n_calls=pl.col("n_actions")), ARMS, tool_free="no_tools")
    t = t.with_columns(failed=pl.col("n_failures") > 0)
    assert_success_follows_the_strategy(t, _SUCCESS, by=("arm", "kind", "failed", "country"))
    for (s,), sub in t.group_by("strategy"):
        # a wrong answer is a slip in the arithmetic or the pick: the calls stay as they are
        means = dict(sub.group_by("correct").agg(pl.col("n_tool_calls").mean()).iter_rows())
        if s != "no_tools":
            assert abs(means[True] - means[False]) < 1.0, (s, means)


def test_wrong_answers_come_from_slips(big):
    for row, _, task, progs in big:
        if row["correct"] or row["strategy"] == "no_tools":
            continue
        answer, slips = progs[-1]["final"], [_gold(task, m) for m in _MISTAKES[task["kind"]]]
        if task["kind"] == "value":  # summed per warehouse, a slip may move the last cent
            amount = float(answer.split()[0])
            assert min(abs(amount - float(x.split()[0])) for x in slips) < 0.05, (answer, slips)
        else:
            assert answer in slips, (answer, slips)


def test_optional_steps_at_fixed_rates_in_every_strategy(alone):
    rows = []
    for row, _, _, progs in alone:
        done = [p for p in progs if not p["failed"]]
        docs = _is_docs(done[0])
        assert not any(_is_docs(p) for p in done[1:])
        plain = [p for p in done[docs:] if not p["calls"] and not p["bare"] and p["final"] is None]
        rows.append((row["strategy"], row["arm"], row["kind"], docs, len(plain)))
    d = pl.DataFrame(rows, schema=["strategy", "arm", "kind", "docs", "plain"], orient="row")
    assert abs(d["docs"].mean() - _P_DOCS) < 0.03
    for by in ("strategy", "arm", "kind"):
        for _, n, rate in d.group_by(by).agg(pl.len(), pl.col("docs").mean()).iter_rows():
            assert abs(rate - _P_DOCS) < 4 * np.sqrt(_P_DOCS * (1 - _P_DOCS) / n), (by, rate)
    # a program printing the computed answer before the final one, in the strategies that answer
    # in a program of their own; the only other plain-Python program is no_tools' estimate
    for (s,), sub in d.group_by("strategy"):
        want = {"one_shot": 0.0, "explore_first": 0.0, "no_tools": _P_ESTIMATE}.get(s, _P_CHECK)
        assert sub["plain"].max() <= 1
        assert abs(sub["plain"].mean() - want) < 4 * np.sqrt(max(want * (1 - want), 1e-9) / sub.height), (s, want)


def test_wording_and_code_style_vary_inside_strategies(big):
    for s in STRATEGIES:
        thoughts, names, fstrings, formats, keywords, positional = [], set(), 0, 0, 0, 0
        for row, _, _, progs in big:
            if row["strategy"] != s:
                continue
            thoughts.append(progs[-1]["thought"])
            for p in progs:
                tree = ast.parse(p["code"])
                names |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                fstrings += any(isinstance(n, ast.JoinedStr) for n in ast.walk(tree))
                formats += ".format(" in p["code"]
                for c in _tool_calls(p["code"])[0]:
                    keywords += bool(c.keywords)
                    positional += bool(c.args)
        assert max(thoughts.count(x) for x in set(thoughts)) < 0.5 * len(thoughts), s
        if s != "no_tools":
            assert len(names) >= 10 and fstrings and formats and keywords and positional, (s, names)


def test_random_state(tmp_path):
    a, b, c = (codeact(n_questions=6, random_state=3), codeact(n_questions=6, random_state=3),
               codeact(n_questions=6, random_state=4))
    assert a.records == b.records and a.truth.equals(b.truth)
    assert a.records != c.records
    assert codeact(n_questions=6, random_state=np.random.default_rng(3)).records == a.records
    fa, fb = a.write(tmp_path / "a"), b.write(tmp_path / "b")
    assert fa.read_bytes() == fb.read_bytes()
    assert (tmp_path / "a" / "truth.csv").read_bytes() == (tmp_path / "b" / "truth.csv").read_bytes()
    assert len(codeact(n_questions=3, random_state=None).records) == 2 * 3 * 4


def test_whatever_the_process_holds_in_builtins(monkeypatch):
    # a value the programs leave bound to a tool is copied without the interpreter behind it:
    # an object that cannot be copied in `builtins` (some imports leave one) changes nothing
    import builtins

    before = codeact(n_questions=6, random_state=2).records
    monkeypatch.setattr(builtins, "_a_capsule", np.random.default_rng(0).bit_generator.capsule, raising=False)
    assert codeact(n_questions=6, random_state=2).records == before
