"""The coding-agent world with a todo list and sub-agents (mechanism.datasets.worlds.todo): OpenAI
records read back with `mechanism.read` as a user's files are, the truth it carries, and the
planted design (every tool call answered by its own tool message, each strategy's shape, TodoWrite
bookkeeping and git noise in the gaps between steps at fixed rates whatever the strategy, optional
steps at fixed rates, execution failures followed by the corrected call, red test runs by design
that are not failures, arms differing only in their mixture, success set by the strategy alone).
Strategy discovery is not evaluated here."""
from __future__ import annotations

import json
import re

import numpy as np
import polars as pl
import pytest
from world_checks import (
    assert_arms_differ_only_in_mixture,
    assert_reads_back,
    assert_success_follows_the_strategy,
    openai_calls,
)

import mechanism as mx
from mechanism.datasets import worlds
from mechanism.datasets.worlds.todo import (
    _EDIT_MISS,
    _NO_FILE,
    _P_BASH_FAIL,
    _P_EDIT_FAIL,
    _P_FULL_SUITE,
    _P_GIT,
    _P_NEIGHBOUR,
    _P_PLAN_TEST,
    _P_READ_MISSING,
    _P_RED_END,
    _P_REREAD,
    _P_TODO_FIRST,
    _P_TODO_GAP,
    _SIBLINGS,
    _SUCCESS,
    _TODO_OK,
    ARMS,
    KINDS,
    STRATEGIES,
    TOOLS,
    todo,
)

# the markers of a pytest command that failed to run (a red run by design has none of them)
BASH_FAILED = ("ERROR: file or directory not found", "Traceback (most recent call last)",
               "error: unrecognized arguments")
SUITE = ("pytest -q", "python -m pytest", "pytest", "pytest -q && python -m mypy src")
# the shape of each strategy: its steps, the noise, the failures and the optional steps left out
# (read: the module to fix; look: any other file; fix: the first Edit of the module; edit: a later
# one; edit_test: an Edit of a test file; test: a pytest run of one test file; todo: a TodoWrite
# of plan_heavy)
SHAPES = {
    "read_edit_test": r"(grep|glob)( (grep|glob))? read fix test",
    "test_first": r"test( grep)? read fix test",
    "delegate_search": r"task read fix test",
    "plan_heavy": r"todo (grep|glob) todo read fix todo( look edit_test todo)? test todo",
    "write_test_first": r"(grep )?write test read fix test",
    "broad_explore": r"((grep|glob|look) )*read( (grep|glob|look))* fix test",
    "review_subagent": r"grep read fix test task edit( test)?",
}
STEPS = {"grep", "glob", "read", "look", "fix", "edit", "edit_test", "test", "todo", "write", "task", "suite"}
NOISE = {"noise_todo", "git"}


@pytest.fixture(scope="module")
def world():
    return todo()  # the default size: 60 issues, 4 samples, two arms


@pytest.fixture(scope="module")
def read(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("todo")), format="openai", report=True)


@pytest.fixture(scope="module")
def big():
    """A larger sample for the rates (both arms, pooled over two seeds)."""
    return [todo(n_questions=150, random_state=seed) for seed in (1, 2)]


@pytest.fixture(scope="module")
def alone():
    """Each strategy alone in both arms, for the rates of the noise and optional steps inside it."""
    return {s: todo(n_questions=50, random_state=11 + i, arms={"base": {s: 1.0}, "rl": {s: 1.0}})
            for i, s in enumerate(STRATEGIES)}


def _rows(ws):
    return [(row, rec) for w in ws for row, rec in zip(w.truth.iter_rows(named=True), w.records)]


def _failed(tool: str, obs: str) -> bool:
    if tool == "Edit":
        return obs.startswith(_EDIT_MISS)
    if tool == "Read":
        return obs == _NO_FILE
    return tool == "Bash" and any(m in obs for m in BASH_FAILED)


def _label(tool, args, obs, i, calls, labels, target, plan):
    """The role of one call in its episode (see SHAPES, STEPS and NOISE)."""
    if _failed(tool, obs):
        return "failed"
    if tool == "Read" and i and calls[i - 1][0] == "Edit" and labels[i - 1] == "failed":
        return "recovery"
    if tool == "TodoWrite":
        return "todo" if plan else "first_todo" if i == 0 else "noise_todo"
    if tool == "Bash":
        cmd = args["command"]
        return "git" if cmd.startswith("git ") else "suite" if cmd in SUITE else "test"
    if tool == "Read":
        path = args["file_path"]
        stem = path.rsplit("/", 1)[-1].removesuffix(".py")
        if stem in _SIBLINGS and "/tests/" not in path:
            return "neighbour"
        return "read" if path == target else "look"
    if tool == "Edit":
        if "/tests/" in args["file_path"]:
            return "edit_test"
        return "fix" if "fix" not in labels else "edit"
    return tool.lower()


def _labelled(record, strategy):
    """(tool, args, obs, label) of every call of an episode."""
    calls = openai_calls(record)
    target = next(a["file_path"] for tool, a, obs in calls
                  if tool == "Edit" and not _failed(tool, obs) and "/tests/" not in a["file_path"])
    labels = []
    for i, (tool, args, obs) in enumerate(calls):
        labels.append(_label(tool, args, obs, i, calls, labels, target, strategy == "plan_heavy"))
    return [(*c, lab) for c, lab in zip(calls, labels)]


def test_is_a_planted_world(world):
    assert isinstance(world, worlds.PlantedWorld)
    assert world.format == "openai" and world.name == "todo"
    assert world.truth.columns == ["arm", "question_id", "sample_id", "strategy", "kind", "n_calls", "n_failures",
                                   "n_todo", "n_task", "correct"]
    assert world.truth.height == len(world.records) == 2 * 60 * 4
    assert set(world.truth["arm"]) == set(ARMS)
    assert set(world.truth["strategy"]) == set(STRATEGIES) and set(world.truth["kind"]) == set(KINDS)
    questions = {rec["question_id"]: rec["messages"][1]["content"] for rec in world.records}
    assert len(questions) == 60
    assert world.planted["shares"]["rl"] == pytest.approx(ARMS["rl"])
    assert world.planted["success"] == pytest.approx(_SUCCESS)
    # the kinds are drawn at random, not in turn
    kinds = world.truth.unique("question_id", maintain_order=True)["kind"].to_list()
    assert kinds != [KINDS[i % len(KINDS)] for i in range(60)]


def test_reads_back(world, read):
    assert_reads_back(world, read, TOOLS)


def test_transcripts_are_well_formed(big):
    for _, rec in _rows(big):
        msgs = rec["messages"]
        assert [m["role"] for m in msgs[:2]] == ["system", "user"]
        last = msgs[-1]
        assert last["role"] == "assistant" and not last.get("tool_calls") and last["content"]
        ids = set()
        for i, m in enumerate(msgs[2:-1], start=2):
            if m["role"] != "assistant":
                assert m["role"] == "tool" and msgs[i - 1]["role"] == "assistant"
                continue
            (c,) = m["tool_calls"]  # one call a message, answered at once by the matching id
            res = msgs[i + 1]
            assert res["role"] == "tool" and res["tool_call_id"] == c["id"] and c["id"] not in ids
            ids.add(c["id"])
            tool, args = c["function"]["name"], json.loads(c["function"]["arguments"])
            assert res["name"] == tool and tool in TOOLS and res["content"]
            if tool == "TodoWrite":  # pure bookkeeping: the whole list, always the same answer
                assert res["content"] == _TODO_OK and list(args) == ["todos"]
                statuses = [x["status"] for x in args["todos"]]
                assert set(statuses) <= {"pending", "in_progress", "completed"} and statuses.count("in_progress") <= 1
                assert statuses == sorted(statuses, key=("completed", "in_progress", "pending").index)
            if tool == "Task":
                assert set(args) == {"description", "prompt", "subagent_type"}
            if tool in ("Read", "Edit", "Write"):
                assert args["file_path"].startswith("/")


def test_counts_match_the_records_and_failures_are_corrected(big):
    forms = {}
    for row, rec in _rows(big):
        calls = _labelled(rec, row["strategy"])
        assert len(calls) == row["n_calls"] and sum(c[3] == "failed" for c in calls) == row["n_failures"]
        assert sum(c[0] == "TodoWrite" for c in calls) == row["n_todo"]
        assert sum(c[0] == "Task" for c in calls) == row["n_task"]
        for i, (tool, args, obs, label) in enumerate(calls):
            if label != "failed":
                continue
            nxt = calls[i + 1]
            assert nxt[3] not in ("failed", *NOISE), (tool, nxt)  # nothing comes between
            if tool == "Edit":  # a Read of the file then the corrected Edit, or the corrected Edit at once
                fix = calls[i + 2] if nxt[0] == "Read" else nxt
                if nxt[0] == "Read":
                    assert nxt[3] == "recovery" and nxt[1]["file_path"] == args["file_path"]
                assert fix[0] == "Edit" and fix[3] != "failed" and fix[1]["file_path"] == args["file_path"]
                assert fix[1]["new_string"] == args["new_string"] and fix[1]["old_string"] != args["old_string"]
                key = "edit_reread" if nxt[0] == "Read" else "edit"
                forms[key] = forms.get(key, 0) + 1
            elif tool == "Read":  # the right path at once
                assert nxt[0] == "Read" and nxt[1]["file_path"] != args["file_path"]
                forms["read"] = forms.get("read", 0) + 1
            else:  # a command that failed to run, rerun corrected at once
                assert tool == "Bash" and obs.startswith("Exit code ") and not obs.startswith("Exit code 0")
                assert nxt[0] == "Bash" and nxt[1]["command"] != args["command"]
                form = next(m for m in BASH_FAILED if m in obs)
                forms[form] = forms.get(form, 0) + 1
    assert {"edit", "edit_reread", "read", *BASH_FAILED} <= set(forms), forms


def test_each_strategy_has_its_shape(big):
    counts = {s: set() for s in STRATEGIES}
    for row, rec in _rows(big):
        s = row["strategy"]
        calls = _labelled(rec, s)
        labels = [c[3] for c in calls]
        core = [lab for lab in labels if lab in STEPS - {"suite"}]
        assert re.fullmatch(SHAPES[s], " ".join(core)), (s, core)
        counts[s].add(len(core))
        assert "suite" not in labels or [lab for lab in labels if lab in STEPS][-1] == "suite"
        tests = [c for c in calls if c[3] == "test"]
        if s in ("test_first", "write_test_first"):  # red by design: exit 1, a FAILED test, not a failure
            assert tests[0][2].startswith("Exit code 1\n") and "FAILED " in tests[0][2]
        if s == "broad_explore":
            assert 5 <= labels.index("fix") - sum(lab in ("failed", "recovery", "neighbour", *NOISE, "first_todo")
                                                  for lab in labels[:labels.index("fix")]) <= 8
        if s in ("delegate_search", "review_subagent"):
            assert row["n_task"] == 1
        else:
            assert row["n_task"] == 0
    assert counts == {"read_edit_test": {4, 5}, "test_first": {4, 5}, "delegate_search": {4}, "plan_heavy": {8, 11},
                      "write_test_first": {5, 6}, "broad_explore": {7, 8, 9, 10}, "review_subagent": {6, 7}}, counts
    # call counts overlap between strategies once the noise, the optional steps and the failures are in
    t = pl.concat([w.truth for w in big])
    spans = {s: (sub["n_calls"].quantile(0.1), sub["n_calls"].quantile(0.9)) for (s,), sub in t.group_by("strategy")}
    for s, (lo, hi) in spans.items():
        overlapping = [o for o, (lo2, hi2) in spans.items() if o != s and lo2 <= hi and lo <= hi2]
        assert len(overlapping) >= 3, (s, spans)


def test_the_end_follows_the_outcome(big):
    rows = []
    for row, rec in _rows(big):
        calls = _labelled(rec, row["strategy"])
        last = [c for c in calls if c[3] in ("test", "suite")][-1][2]
        red = last.startswith("Exit code 1\n") and "FAILED " in last
        assert not (red and row["correct"])  # a correct episode ends green
        rows.append((row["correct"], red))
    wrong = [red for correct, red in rows if not correct]
    assert abs(np.mean(wrong) - _P_RED_END) < 4 * np.sqrt(_P_RED_END * (1 - _P_RED_END) / len(wrong))


def test_every_strategy_on_every_kind(big):
    t = pl.concat([w.truth for w in big])
    assert set(t.select("strategy", "kind").unique().iter_rows()) == {(s, k) for s in STRATEGIES for k in KINDS}


def test_failures_at_the_planted_rates_in_every_strategy(alone):
    for s, w in alone.items():
        tried = {"Edit": [], "Read": [], "Bash": []}
        reread = []
        for _, rec in _rows([w]):
            calls = _labelled(rec, s)
            for i, (tool, _args, _obs, label) in enumerate(calls):
                # first attempts: a corrected call is not one, nor a recovery Read, nor git
                if (i and calls[i - 1][3] == "failed" and calls[i - 1][0] == tool) or label in ("recovery", "git"):
                    continue
                if tool == "Edit" and i > 1 and calls[i - 1][3] == "recovery":
                    continue
                if tool in tried:
                    tried[tool].append(label == "failed")
                if label == "failed" and tool == "Edit":
                    reread.append(calls[i + 1][3] == "recovery")
        for tool, p in (("Edit", _P_EDIT_FAIL), ("Read", _P_READ_MISSING), ("Bash", _P_BASH_FAIL)):
            n = len(tried[tool])
            assert abs(np.mean(tried[tool]) - p) < 4 * np.sqrt(p * (1 - p) / n), (s, tool, np.mean(tried[tool]))
        assert abs(np.mean(reread) - _P_REREAD) < 4 * np.sqrt(_P_REREAD * (1 - _P_REREAD) / len(reread)), s


def test_arms_differ_only_in_mixture_and_success_follows_the_strategy(big):
    assert ARMS["base"] != ARMS["rl"] and set(ARMS["base"]) == set(ARMS["rl"]) == set(STRATEGIES)
    assert all(p >= 0.05 for mix in ARMS.values() for p in mix.values())
    t = pl.concat([w.truth for w in big])
    assert_arms_differ_only_in_mixture(t, ARMS, tool_free="(none)")
    t = t.with_columns(failed=pl.col("n_failures") > 0)
    assert_success_follows_the_strategy(t, _SUCCESS, by=("arm", "kind", "failed"))
    for (s,), sub in t.group_by("strategy"):
        a, b = (sub.filter(pl.col("arm") == x) for x in ARMS)  # the same bookkeeping in both arms
        assert abs(a["n_todo"].mean() - b["n_todo"].mean()) < 0.4, s


def test_todowrite_and_git_noise_at_their_rates_in_every_strategy(alone):
    rows = []
    for s, w in alone.items():
        for row, rec in _rows([w]):
            calls = _labelled(rec, s)
            labels = [c[3] for c in calls]
            steps = [lab for lab in labels if lab in STEPS]
            gaps = len(steps) - 1
            assert [lab for lab in labels if lab in STEPS or lab in NOISE][-1] in STEPS  # never after the last step
            if s == "plan_heavy":  # the plan's TodoWrites define it: one first, one after each item
                todos = [c[1]["todos"] for c in calls if c[0] == "TodoWrite"]
                n_items = len(todos[0])
                assert labels[0] == "todo" and n_items in (3, 4) and len(todos) == n_items + 1
                for k, items in enumerate(todos):
                    assert [x["status"] for x in items] == (["completed"] * k + ["in_progress"] * (k < n_items)
                                                            + ["pending"] * (n_items - k - 1))
                rows.append((s, row["arm"], False, 0, gaps, labels.count("git"), n_items == 4))
            else:
                assert "todo" not in labels
                todos = [[x["status"] for x in c[1]["todos"]] for c in calls if c[0] == "TodoWrite"]
                done = [st.count("completed") for st in todos]
                assert done == sorted(done)  # the statuses follow the progress
                rows.append((s, row["arm"], labels[0] == "first_todo", labels.count("noise_todo"), gaps,
                             labels.count("git"), False))
    d = pl.DataFrame(rows, schema=["strategy", "arm", "first", "todo", "gaps", "git", "plan_test"], orient="row")
    for (s, arm), sub in d.group_by("strategy", "arm"):
        n_gaps = sub["gaps"].sum()
        git = sub["git"].sum() / n_gaps
        assert abs(git - _P_GIT) < 4 * np.sqrt(_P_GIT * (1 - _P_GIT) / n_gaps), (s, arm, git)
        if s == "plan_heavy":
            p = sub["plan_test"].mean()  # the share of plans with a regression-test item
            assert sub["first"].sum() == sub["todo"].sum() == 0
            assert abs(p - _P_PLAN_TEST) < 4 * np.sqrt(_P_PLAN_TEST * (1 - _P_PLAN_TEST) / sub.height)
            continue
        first, gap = sub["first"].mean(), sub["todo"].sum() / n_gaps
        assert abs(first - _P_TODO_FIRST) < 4 * np.sqrt(_P_TODO_FIRST * (1 - _P_TODO_FIRST) / sub.height), (s, first)
        assert abs(gap - _P_TODO_GAP) < 4 * np.sqrt(_P_TODO_GAP * (1 - _P_TODO_GAP) / n_gaps), (s, arm, gap)
        assert sub["todo"].max() >= 2


def test_optional_steps_at_fixed_rates_in_every_strategy(alone):
    rows = []
    for s, w in alone.items():
        for row, rec in _rows([w]):
            calls = _labelled(rec, s)
            labels = [c[3] for c in calls]
            if "neighbour" in labels:  # right after the first Read of the module to fix (or its failed try)
                i = labels.index("neighbour")
                j = i - 1 - (labels[i - 1] == "failed")
                assert labels[j] == "read" and labels.index("read") == j, (s, labels)
            rows.append((s, row["arm"], row["kind"], labels.count("neighbour"), labels.count("suite")))
    d = pl.DataFrame(rows, schema=["strategy", "arm", "kind", "neighbour", "suite"], orient="row")
    for col, p in (("neighbour", _P_NEIGHBOUR), ("suite", _P_FULL_SUITE)):
        assert d[col].max() == 1
        assert abs(d[col].mean() - p) < 0.03, (col, d[col].mean())
        for by in ("strategy", "arm", "kind"):
            for _, n, rate in d.group_by(by).agg(pl.len(), pl.col(col).mean()).iter_rows():
                assert abs(rate - p) < 4 * np.sqrt(p * (1 - p) / n), (col, by, rate, p)


def test_wording_paths_and_argument_order_vary_inside_strategies(big):
    for s in STRATEGIES:
        said, orders, paths = [], set(), set()
        for row, rec in _rows(big):
            if row["strategy"] == s:
                said.append(rec["messages"][-1]["content"])
                for tool, args, _ in openai_calls(rec, parse_arguments=False):
                    keys = tuple(json.loads(args))
                    if len(keys) > 1:
                        orders.add((tool, keys))
                    if tool == "Edit":
                        paths.add(json.loads(args)["file_path"])
        assert max(said.count(x) for x in set(said)) < 0.05 * len(said), s
        assert len(paths) > 50, s
        multi = {}
        for tool, keys in orders:
            multi.setdefault(tool, set()).add(keys)
        assert len(multi.get("Edit", ())) == 6, s  # every order of Edit's three arguments


def test_random_state(tmp_path):
    a, b, c = (todo(n_questions=6, random_state=3), todo(n_questions=6, random_state=3),
               todo(n_questions=6, random_state=4))
    assert a.records == b.records and a.truth.equals(b.truth)
    assert a.records != c.records
    assert todo(n_questions=6, random_state=np.random.default_rng(3)).records == a.records
    fa, fb = a.write(tmp_path / "a"), b.write(tmp_path / "b")
    assert fa.read_bytes() == fb.read_bytes()
    assert (tmp_path / "a" / "truth.csv").read_bytes() == (tmp_path / "b" / "truth.csv").read_bytes()
    assert a.runs.equals(b.runs)
    assert len(todo(n_questions=3, random_state=None).records) == 2 * 3 * 4
