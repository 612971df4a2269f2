"""A coding agent that keeps a todo list and delegates to sub-agents (Claude Code / Codex CLI-like).

A coding agent fixes one issue in a small Python repository per episode ("The CSV export drops
the last row ...; fix it and add a test."), logged as ONE OpenAI chat transcript: a system
prompt, the user's issue, assistant messages that each carry one call in ``tool_calls``
answered by a ``role: tool`` message with the matching ``tool_call_id``, and a last assistant
message without tool calls that sums up the change (or says the agent could not fix it).

The typed tools (:data:`TOOLS`), named as Claude Code names them, with results shaped like the
real ones: ``Read(file_path, offset?, limit?)`` (line-numbered file text, or ``File does not
exist.``), ``Grep(pattern, path?, glob?)`` (``path:line:match`` lines), ``Glob(pattern)`` (paths),
``Edit(file_path, old_string, new_string)`` (``The file ... has been updated.``, or ``String to
replace not found in file.``), ``Write(file_path, content)``, ``Bash(command, description?)``
(pytest, ``git status`` / ``git diff``, mypy; a non-zero exit shows as ``Exit code N`` on the
first line), ``TodoWrite(todos=[{content, status, ...}])`` (the agent's own todo list,
rewritten whole each time; pure bookkeeping, always answered ``Todos have been modified
successfully.``) and ``Task(description, prompt, subagent_type)`` (a sub-agent searches or
reviews; the result is its final report, its own calls are not logged).

The issue's kind (:data:`KINDS`: an off-by-one, a wrong default, a missing None check, a slow
loop, a typo in a config key) decides the file, the function, the faulty lines and the fix;
kinds are drawn at random per question. Seven planted strategies (core calls, before the
bookkeeping, the noise, the optional steps and the failures below):

=====================  ==========================================================================
``read_edit_test``     find the file (``Grep`` or ``Glob``, both with :data:`_P_SECOND_LOCATE`),
                       ``Read`` it, ``Edit`` the fix, run its tests with ``Bash`` (4-5 calls)
``test_first``         run the module's failing test first (``Bash``, red), optionally ``Grep``
                       (:data:`_P_TF_GREP`), ``Read``, ``Edit``, re-run green (4-5 calls)
``delegate_search``    a ``Task`` sub-agent finds where the bug is and reports file and line;
                       ``Read``, ``Edit``, ``Bash`` tests (4 calls)
``plan_heavy``         a ``TodoWrite`` plan first (3 items, or 4 with a regression-test item:
                       :data:`_P_PLAN_TEST`), then item by item (``Grep``; ``Read`` + ``Edit``;
                       ``Read`` + ``Edit`` of the test file; ``Bash``), a ``TodoWrite`` after each
                       item marking it completed and the next in_progress (8 or 11 calls)
``write_test_first``   optionally ``Grep`` (:data:`_P_WTF_LOCATE`), ``Write`` a new test file
                       reproducing the bug, run it red, ``Read``, ``Edit``, run it green (5-6)
``broad_explore``      5-8 ``Grep`` / ``Glob`` / ``Read`` calls across the repository (README,
                       pyproject, the CLI, tests, the module) before the first ``Edit``, then
                       ``Bash`` tests (7-10 calls)
``review_subagent``    ``Grep``, ``Read``, ``Edit``, ``Bash`` tests, then a ``Task`` sub-agent
                       reviews the diff, a last ``Edit`` on its advice, and optionally the tests
                       again (:data:`_P_REVIEW_RETEST`) (6-7 calls)
=====================  ==========================================================================

Bookkeeping and noise, at fixed rates whatever the arm, the kind and the strategy. A *step*
is a core call or an optional step (the suite run below); a *gap* is the point between two
consecutive steps. Outside ``plan_heavy`` (whose TodoWrites define it and are never added to)
a ``TodoWrite`` of the agent's generic three-item list (its statuses following the progress)
comes first with :data:`_P_TODO_FIRST`, and in each gap with :data:`_P_TODO_GAP`. In every
strategy a ``Bash`` ``git status`` / ``git diff`` comes in each gap with :data:`_P_GIT`. Noise
never comes between a failed call and its correction, nor after the last step.

Optional steps: an extra ``Read`` of a neighbouring module right after the first ``Read`` of
the module to fix (:data:`_P_NEIGHBOUR`); a final full test-suite run (``pytest -q``,
sometimes with mypy) after the last core step (:data:`_P_FULL_SUITE`).

Execution failures (not strategy): an ``Edit`` whose ``old_string`` is not in the file
(:data:`_P_EDIT_FAIL`; answered ``String to replace not found in file.``), followed at once by
a ``Read`` of the same file (:data:`_P_REREAD`) and the corrected ``Edit``, or by the corrected
``Edit`` alone; a pytest ``Bash`` command that fails to run (:data:`_P_BASH_FAIL`: a wrong
test path, ``ERROR: file or directory not found``; a test file run with ``python``, a
``Traceback (most recent call last)`` ending in ``ModuleNotFoundError``; an unknown option,
``error: unrecognized arguments``), rerun corrected at once; a ``Read`` of a path that does not
exist (:data:`_P_READ_MISSING`, ``File does not exist.``), followed at once by the right path.
A red test run by design (``test_first``, ``write_test_first``) is not a failure. Wording, paths,
package names, test names, ids and the order of the arguments vary inside every strategy.

The arms ``base`` and ``rl`` differ only in their mixture (:data:`ARMS`); whether the episode is
correct is drawn at the strategy's rate (:data:`_SUCCESS`), random within it. An incorrect
episode either ends with its tests still red and a final message saying the agent could not fix
it (:data:`_P_RED_END`), or with a plausible fix that the hidden check rejects.

The truth carries, beside ``strategy``, ``kind``, ``n_calls`` (tool calls, TodoWrite, Task and
failed calls included), ``n_failures`` (failed calls), ``n_todo`` (TodoWrite calls), ``n_task``
(Task calls) and ``correct``.

Written from scratch as a held-out world, without reference to how trajectories are segmented
or clustered.
"""
from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from mechanism.core.options import RandomState, as_generator
from mechanism.datasets.worlds._base import World, pick, planted_world, word

STRATEGIES = ("read_edit_test", "test_first", "delegate_search", "plan_heavy", "write_test_first", "broad_explore",
              "review_subagent")
KINDS = ("off_by_one", "wrong_default", "missing_none_check", "slow_loop", "config_key_typo")
TOOLS = ("Read", "Grep", "Glob", "Edit", "Write", "Bash", "TodoWrite", "Task")
ARMS = {
    "base": {"read_edit_test": 0.22, "test_first": 0.12, "delegate_search": 0.10, "plan_heavy": 0.10,
             "write_test_first": 0.08, "broad_explore": 0.26, "review_subagent": 0.12},
    "rl": {"read_edit_test": 0.14, "test_first": 0.18, "delegate_search": 0.16, "plan_heavy": 0.16,
           "write_test_first": 0.14, "broad_explore": 0.08, "review_subagent": 0.14},
}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"read_edit_test": 0.6, "test_first": 0.72, "delegate_search": 0.65, "plan_heavy": 0.75,
            "write_test_first": 0.82, "broad_explore": 0.5, "review_subagent": 0.8}
#: bookkeeping and noise, whatever the arm, the kind and the strategy
_P_TODO_FIRST = 0.3  # a TodoWrite as the first call (not in plan_heavy)
_P_TODO_GAP = 0.15  # a TodoWrite in each gap between two steps (not in plan_heavy)
_P_GIT = 0.1  # a Bash git status / git diff in each gap (every strategy)
#: optional steps
_P_NEIGHBOUR = 0.25  # a Read of a neighbouring module right after the first Read of the module to fix
_P_FULL_SUITE = 0.3  # a full test-suite run after the last core step
#: execution failures, each followed at once by the corrected call
_P_EDIT_FAIL = 0.15  # an Edit whose old_string is not in the file
_P_REREAD = 0.5  # ... then a Read of the file before the corrected Edit
_P_BASH_FAIL = 0.1  # a pytest command that fails to run (wrong path, python instead of pytest, bad option)
_P_READ_MISSING = 0.08  # a Read of a path that does not exist
#: the look of the transcript
_P_SAY = 0.5  # an assistant message with a tool call also has text
_P_DESCRIPTION = 0.6  # a Bash call carries a description
_P_RED_END = 0.5  # an incorrect episode ends with its tests still red (else a wrong fix that passes)
_P_REPORTED = 0.5  # the issue names the failing test
#: steps inside a strategy (part of it whichever way they go)
_P_SECOND_LOCATE = 0.35  # read_edit_test: both Glob and Grep to find the file
_P_TF_GREP = 0.4  # test_first: a Grep between the red run and the Read
_P_PLAN_TEST = 0.6  # plan_heavy: a fourth item, a regression test added to the test file
_P_WTF_LOCATE = 0.5  # write_test_first: a Grep before writing the test
_P_REVIEW_RETEST = 0.5  # review_subagent: the tests again after the reviewer's Edit

_TODO_OK = "Todos have been modified successfully."
_EDIT_MISS = "String to replace not found in file."
_NO_FILE = "File does not exist."


def _sc(module: str, func: str, imports: tuple[str, ...], code: tuple[str, ...], n_old: int, new: str,
        issues: tuple[str, ...], test: str, check: tuple[str, ...], error: str, pattern: str, why: str,
        fix: str, comment: str, **extra: str) -> dict[str, Any]:
    """A scenario: the faulty function (``code``, its lines ``1..n_old`` after the def the old
    text), the fix, the issue's wordings, the regression test and what it prints when red."""
    return {"module": module, "func": func, "imports": imports, "code": code, "old": "\n".join(code[1:1 + n_old]),
            "new": new, "issues": issues, "test": test, "check": check, "error": error, "pattern": pattern,
            "why": why, "fix": fix, "comment": comment, "test_args": extra.get("test_args", ""),
            "test_imports": extra.get("test_imports", "")}


_SCENARIOS: dict[str, tuple[dict[str, Any], ...]] = {
    "off_by_one": (
        _sc("export", "write_rows", ("import csv", "from pathlib import Path"),
            ("def write_rows(rows, path):", "    lines = []", "    for i in range(len(rows) - 1):",
             "        lines.append(\",\".join(rows[i]))", "    Path(path).write_text(\"\\n\".join(lines))"), 2,
            "    lines = []\n    for i in range(len(rows)):",
            ("The CSV export drops the last row when the file has no trailing newline; fix it and add a test.",
             "`{func}` in {module}.py loses the final row of every export. Please fix it.",
             "Exports are missing their last line (two users reported it). Can you fix `{func}`?"),
            "test_write_rows_keeps_last_row",
            ("    out = tmp_path / \"out.csv\"", "    write_rows([[\"a\"], [\"b\"], [\"c\"]], out)",
             "    assert len(out.read_text().splitlines()) == 3"), "assert 2 == 3", r"range\(len\(rows",
            "the loop stopped one row early (`range(len(rows) - 1)`)", "it now writes every row",
            "write every row, the last one included", test_args="tmp_path"),
        _sc("paginate", "page", (), ("def page(items, number, size=10):", "    start = (number - 1) * size",
                                     "    return items[start:start + size - 1]"), 2,
            "    start = (number - 1) * size\n    return items[start:start + size]",
            ("Pagination shows 9 results per page instead of 10. Fix `{func}` in {module}.py.",
             "Every page the API returns is one item short; looks like an off-by-one in `{func}`.",
             "Page size is wrong: asking for 10 gives 9. Please fix and add a test."),
            "test_page_is_full", ("    assert len(page(list(range(25)), 1)) == 10",), "assert 9 == 10",
            r"start \+ size", "the slice ended one element early (`start + size - 1`)",
            "the slice now ends at `start + size`", "the slice end is exclusive"),
    ),
    "wrong_default": (
        _sc("client", "fetch", ("import requests",),
            ("def fetch(url, timeout=0, retries=2):", "    session = _session(retries)",
             "    return session.get(url, timeout=timeout or None)"), 0, "", (
                "`{func}()` times out immediately unless a timeout is passed; the default should be 30 seconds.",
                "Calls through `{module}.{func}` fail with ReadTimeout right away. The default timeout looks wrong.",
                "Please make `{func}` default to a 30 s timeout (it is 0 now) and add a test."),
            "test_fetch_default_timeout",
            ("    assert inspect.signature(fetch).parameters[\"timeout\"].default == 30",),
            "assert 0 == 30", r"def fetch", "the default timeout was 0", "the default is now 30 seconds",
            "30 s matches the documented default", test_imports="import inspect"),
        _sc("report", "render_table", (),
            ("def render_table(rows, sep=\";\", header=True):", "    body = [sep.join(map(str, r)) for r in rows]",
             "    return \"\\n\".join(body)"), 0, "",
            ("The report uses semicolons by default; it should be comma-separated as the docs say.",
             "`{func}` in {module}.py has the wrong default separator. Fix it and add a test.",
             "Reports open as one column in spreadsheets: `{func}` defaults to ';' instead of ','."),
            "test_render_table_default_sep", ("    assert render_table([[\"a\", \"b\"]], header=False) == \"a,b\"",),
            "AssertionError: assert 'a;b' == 'a,b'", r"sep=", "the default separator was ';'",
            "the default separator is now ','", "comma-separated, as documented"),
    ),
    "missing_none_check": (
        _sc("users", "display_name", (),
            ("def display_name(user):", "    return user.nickname.strip().title()"), 1,
            "    name = user.nickname or user.email.split(\"@\")[0]\n    return name.strip().title()",
            ("`{func}` crashes with AttributeError: 'NoneType' object has no attribute 'strip' for users without "
             "a nickname.", "The profile page 500s for accounts with no nickname (traceback ends in `{func}`).",
             "Fix `{func}` in {module}.py so users without a nickname fall back to their email name."),
            "test_display_name_without_nickname",
            ("    user = User(email=\"ada@example.com\", nickname=None)", "    assert display_name(user) == \"Ada\""),
            "AttributeError: 'NoneType' object has no attribute 'strip'", r"nickname",
            "`user.nickname` can be None", "it falls back to the email name",
            "nickname is optional", test_imports="from types import SimpleNamespace as User"),
        _sc("prices", "parse_price", ("from decimal import Decimal",),
            ("def parse_price(text):", "    cleaned = text.replace(\",\", \"\").strip()",
             "    return Decimal(cleaned)"), 1,
            "    if text is None:\n        return None\n    cleaned = text.replace(\",\", \"\").strip()",
            ("Importing a sheet with empty price cells fails: `{func}` raises AttributeError on None.",
             "`{module}.{func}(None)` should return None instead of crashing. Please fix and add a test.",
             "Empty prices break the import (AttributeError: 'NoneType' object has no attribute 'replace')."),
            "test_parse_price_none", ("    assert parse_price(None) is None",),
            "AttributeError: 'NoneType' object has no attribute 'replace'", r"\.replace\(",
            "an empty cell arrives as None", "None now passes through as None", "empty cells arrive as None"),
    ),
    "slow_loop": (
        _sc("dedupe", "unique_ids", (),
            ("def unique_ids(ids):", "    seen = []", "    out = []", "    for x in ids:", "        if x not in seen:",
             "            seen.append(x)", "            out.append(x)", "    return out"), 5,
            "    seen = set()\n    out = []\n    for x in ids:\n        if x not in seen:\n            seen.add(x)",
            ("`{func}` takes minutes on 200k ids; it should be linear. Keep the output order.",
             "Deduplication is quadratic (membership test on a list in `{func}`). Please fix.",
             "The nightly job times out in `{module}.{func}`; make it fast and add a test."),
            "test_unique_ids_is_fast",
            ("    ids = list(range(50_000)) * 2", "    start = time.perf_counter()",
             "    assert unique_ids(ids) == list(range(50_000))", "    assert time.perf_counter() - start < 1.0"),
            "assert 14.83 < 1.0", r"not in seen", "membership was tested on a list",
            "it now tracks seen ids in a set", "a set keeps this linear", test_imports="import time"),
        _sc("stats", "running_total", (),
            ("def running_total(values):", "    totals = []", "    for i in range(len(values)):",
             "        totals.append(sum(values[: i + 1]))", "    return totals"), 3,
            "    totals, acc = [], 0\n    for v in values:\n        acc += v\n        totals.append(acc)",
            ("The dashboard hangs on large accounts: `{func}` is quadratic.",
             "`{module}.{func}` re-sums the prefix on every step; make it linear.",
             "Please speed up `{func}` (it takes 9 s on 100k values) and add a test."),
            "test_running_total_is_fast",
            ("    values = [1] * 100_000", "    start = time.perf_counter()",
             "    assert running_total(values)[-1] == 100_000", "    assert time.perf_counter() - start < 0.5"),
            "assert 9.51 < 0.5", r"sum\(values", "every step re-summed the whole prefix",
            "it keeps a running sum", "one pass with a running sum", test_imports="import time"),
    ),
    "config_key_typo": (
        _sc("settings", "database_url", (), ("def database_url(cfg):", "    return cfg[\"databse_url\"]"), 1,
            "    return cfg[\"database_url\"]",
            ("The app crashes on start with KeyError: 'databse_url' although config.toml sets database_url.",
             "`{func}` reads the wrong config key. Please fix it.",
             "Startup fails: KeyError 'databse_url' in {module}.py. Fix and add a test."),
            "test_database_url_key", ("    assert database_url({\"database_url\": \"sqlite://\"}) == \"sqlite://\"",),
            "KeyError: 'databse_url'", r"databse", "the key was misspelt `databse_url`",
            "it reads `database_url`", "the key in config.toml is database_url"),
        _sc("logs", "setup_logging", ("import logging",),
            ("def setup_logging(conf):", "    level = conf.get(\"log_levle\", \"INFO\")",
             "    logging.basicConfig(level=level)", "    return level"), 1,
            "    level = conf.get(\"log_level\", \"INFO\")",
            ("Setting `log_level = \"DEBUG\"` in the config has no effect; logs stay at INFO.",
             "`{func}` ignores the log_level setting. Please fix it.",
             "DEBUG logging can't be turned on from the config (see {module}.py). Fix and add a test."),
            "test_setup_logging_reads_level", ("    assert setup_logging({\"log_level\": \"DEBUG\"}) == \"DEBUG\"",),
            "AssertionError: assert 'INFO' == 'DEBUG'", r"log_lev", "the key was misspelt `log_levle`",
            "it reads `log_level`", "the config key is log_level"),
    ),
}
_FILLERS = (("def _clean(value):", "    return str(value).strip()"),
            ("def _chunks(seq, n):", "    for i in range(0, len(seq), n):", "        yield seq[i:i + n]"),
            ("def _as_bool(text):", "    return str(text).lower() in {\"1\", \"true\", \"yes\"}"),
            ("DEFAULT_ENCODING = \"utf-8\"",), ("MAX_ITEMS = 10_000",),
            ("def _first(items, default=None):", "    return next(iter(items), default)"),
            ("class _Missing:", "    def __repr__(self):", "        return \"<missing>\""))
_PACKAGES = ("tally", "ledgerly", "csvtool", "shelf", "harbor", "pipework", "quill", "orbit")
_SIBLINGS = ("utils", "models", "io", "constants", "types", "errors")
_DOCS = ("Helpers for {module}.", "The {module} module.", "{Module} utilities used by the CLI and the API.")


def _fill(text: str, t: dict[str, Any]) -> str:
    for key in ("func", "module", "pkg", "test", "rel", "test_rel"):
        text = text.replace("{" + key + "}", str(t.get(key, "")))
    return text


def _module_text(rng: np.random.Generator, t: dict[str, Any], sc: dict[str, Any]) -> str:
    order = rng.permutation(len(_FILLERS))
    before, after = int(rng.integers(1, 3)), int(rng.integers(0, 2))
    doc = pick(rng, _DOCS).replace("{module}", sc["module"]).replace("{Module}", sc["module"].capitalize())
    lines = [f'"""{doc}"""', "from __future__ import annotations", ""]
    lines += [*sc["imports"], "", ""] if sc["imports"] else [""]
    for i in order[:before]:
        lines += [*_FILLERS[i], "", ""]
    lines += list(sc["code"])
    for i in order[before:before + after]:
        lines += ["", "", *_FILLERS[i]]
    return "\n".join(lines) + "\n"


def _test_text(rng: np.random.Generator, t: dict[str, Any], n: int) -> str:
    suffixes = rng.permutation(("basic", "empty", "types", "roundtrip", "unicode", "large", "defaults", "order"))
    lines = [f"from {t['pkg']}.{t['module']} import {t['func']}"]
    for s in suffixes[:n]:
        lines += ["", "", f"def test_{t['func']}_{s}():", f"    result = {t['func']}(*SAMPLES[\"{s}\"])",
                  f"    assert result == EXPECTED[\"{s}\"]"]
    return "\n".join(lines) + "\n"


def _regression_text(t: dict[str, Any]) -> str:
    sc = t["sc"]
    head = [x for x in (sc["test_imports"], f"from {t['pkg']}.{t['module']} import {t['func']}") if x]
    return "\n".join([*head, "", "", f"def {sc['test']}({sc['test_args']}):", *sc["check"]]) + "\n"


def _task(rng: np.random.Generator, kind: str) -> dict[str, Any]:
    """One issue in one repository: its files, paths, the faulty lines and the issue's text."""
    sc = _SCENARIOS[kind][int(rng.integers(len(_SCENARIOS[kind])))]
    pkg = pick(rng, _PACKAGES) if rng.random() < 0.5 else word(rng)
    user = word(rng, 1)
    repo = pick(rng, (pkg, f"{pkg}-py", f"{pkg}-service", f"py{pkg}"))
    root = pick(rng, (f"/home/{user}/src/{repo}", f"/Users/{user}/code/{repo}", f"/workspace/{repo}",
                      f"/home/{user}/{repo}"))
    base = f"src/{pkg}" if rng.random() < 0.6 else pkg
    t: dict[str, Any] = {"kind": kind, "sc": sc, "pkg": pkg, "root": root, "module": sc["module"], "func": sc["func"],
                         "rel": f"{base}/{sc['module']}.py", "test_rel": f"tests/test_{sc['module']}.py",
                         "branch": pick(rng, ("main", "main", "master", f"fix/{sc['module']}-{word(rng, 1)}")),
                         "n_tests": int(rng.integers(3, 9)), "issue_no": int(rng.integers(100, 4000))}
    sib = [s for s in _SIBLINGS if s != sc["module"]]
    t["neighbour"] = f"{base}/{pick(rng, tuple(sib))}.py"
    t["regress_rel"] = pick(rng, (f"tests/test_{sc['module']}_regression.py", f"tests/test_issue_{t['issue_no']}.py",
                                  f"tests/regression/test_{sc['func']}.py"))
    t["new"] = sc["new"] or sc["code"][0].replace(*_DEFAULT_FIX[sc["func"]])
    t["old"] = sc["old"] or sc["code"][0]
    files = {t["rel"]: _module_text(rng, t, sc), t["test_rel"]: _test_text(rng, t, t["n_tests"] - 1),
             t["neighbour"]: "\n".join(["\"\"\"Shared helpers.\"\"\"", "", "", *_FILLERS[int(rng.integers(3))],
                                        "", "", *_FILLERS[3 + int(rng.integers(4))]]) + "\n",
             f"{base}/cli.py": "\n".join([
                 "import argparse", "", f"from {pkg}.{sc['module']} import {sc['func']}", "", "",
                 "def main(argv=None):", "    args = argparse.ArgumentParser().parse_args(argv)",
                 f"    return {sc['func']}(*vars(args).values())"]) + "\n",
             "README.md": f"# {repo}\n\n{pkg.capitalize()}: small tools for tabular data.\n\n## Development\n\n"
                          "    pip install -e .[dev]\n    pytest\n",
             "pyproject.toml": f"[project]\nname = \"{repo}\"\nversion = \"0.{int(rng.integers(1, 9))}.0\"\n\n"
                               "[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n"}
    others = [str(x) for x in rng.choice([x for x in sib if x != "__init__"], size=int(rng.integers(2, 4)),
                                         replace=False)]
    t["suite"] = [(f"tests/test_{x}.py", int(rng.integers(2, 12))) for x in others]
    for rel, n in t["suite"]:
        files[rel] = "\n\n\n".join(f"def test_{rel[11:-3]}_{i}():\n    assert CASES[{i}]" for i in range(n)) + "\n"
    t["files"] = files
    t["line"] = files[t["rel"]].splitlines().index(t["old"].split("\n")[0]) + 1
    text = _fill(pick(rng, sc["issues"]), t)
    if rng.random() < _P_REPORTED:
        text += pick(rng, (f" `{t['test_rel']}::{sc['test']}` fails on {t['branch']}.",
                           f" CI shows {sc['test']} failing ({sc['error']}).",
                           f" The failing test is {sc['test']} in {t['test_rel']}."))
    t["text"] = text + pick(rng, ("", "", " Run the tests before you finish.", f" (issue #{t['issue_no']})"))
    return t


_DEFAULT_FIX = {"fetch": ("timeout=0", "timeout=30"), "render_table": ("sep=\";\"", "sep=\",\"")}


# -- results --------------------------------------------------------------------------------------------
def _numbered(text: str, start: int = 1, limit: int | None = None) -> str:
    lines = text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")
    chosen = lines[start - 1:(start - 1 + limit) if limit else None]
    return "\n".join(f"{i:>6}\t{x}" for i, x in enumerate(chosen, start=start))


def _pytest_out(rng: np.random.Generator, t: dict[str, Any], cmd: str, files: list[tuple[str, int]],
                failing: str | None) -> tuple[str, int]:
    """pytest's output for ``files`` (path, tests), the test file ``failing`` failing on the
    scenario's test; and the exit code."""
    sc, secs = t["sc"], f"{float(rng.uniform(0.05, 2.5)):.2f}"
    total = sum(n for _, n in files)
    summary = f"1 failed, {total - 1} passed in {secs}s" if failing else f"{total} passed in {secs}s"
    if total - 1 == 0 and failing:
        summary = f"1 failed in {secs}s"
    fail = []
    if failing:
        fail = ["", "=" * 35 + " FAILURES " + "=" * 35, f"{'_' * 20} {sc['test']} {'_' * 20}", "",
                f"    def {sc['test']}({sc['test_args']}):", *(f"    {x}" for x in sc["check"][:-1]),
                f">   {sc['check'][-1]}",
                f"E       {sc['error']}", "", f"{failing}:{4 + len(sc['check'])}: "
                f"{sc['error'].split(':')[0] if ':' in sc['error'] else 'AssertionError'}",
                "=" * 27 + " short test summary info " + "=" * 28,
                f"FAILED {failing}::{sc['test']} - {sc['error']}"]
    dots = [(p, "." * (n - 1) + "F" if p == failing else "." * n) for p, n in files]
    if "-q" in cmd.split():
        out = "\n".join([" ".join(d for _, d in dots) + " " * 20 + "[100%]", *fail, summary])
    else:
        out = "\n".join(["=" * 29 + " test session starts " + "=" * 30,
                         f"platform linux -- Python 3.11.{int(rng.integers(4, 10))}, pytest-8.{int(rng.integers(0, 4))}"
                         ".1, pluggy-1.5.0", f"rootdir: {t['root']}", "configfile: pyproject.toml",
                         f"collected {total} item{'s' * (total != 1)}", "", *(f"{p} {d}" for p, d in dots), *fail,
                         f"{'=' * 20} {summary} {'=' * 20}"])
    code = 1 if failing else 0
    return (f"Exit code {code}\n{out}" if code else out), code


def _broken_bash(rng: np.random.Generator, t: dict[str, Any], cmd: str, target: str | None) -> tuple[str, str]:
    """A pytest command that fails to run, and what it prints."""
    form = int(rng.integers(3))
    if form == 0:
        bad = cmd.replace("tests/", "test/", 1) if target else cmd.replace("pytest", "pytest tests/unit", 1)
        missing = target.replace("tests/", "test/", 1) if target else "tests/unit"
        return bad, (f"Exit code 4\nERROR: file or directory not found: {missing.split('::')[0]}\n\n"
                     f"{'=' * 28} no tests ran in 0.01s {'=' * 28}")
    if form == 1:
        path = (target or t["test_rel"]).split("::")[0]
        return f"python {path}", ("Exit code 1\nTraceback (most recent call last):\n"
                                  f"  File \"{t['root']}/{path}\", line 1, in <module>\n"
                                  f"    from {t['pkg']}.{t['module']} import {t['func']}\n"
                                  f"ModuleNotFoundError: No module named '{t['pkg']}'")
    opt = pick(rng, ("--failfast", "--no-capture", "-k=", "--verbose=2"))
    return f"{cmd} {opt}", ("Exit code 4\nERROR: usage: pytest [options] [file_or_dir] [file_or_dir] [...]\n"
                            f"pytest: error: unrecognized arguments: {opt}\n  inifile: {t['root']}/pyproject.toml\n"
                            f"  rootdir: {t['root']}")


def _broken_old(rng: np.random.Generator, old: str) -> str:
    """``old`` as the agent misremembers it: indentation lost, tabs, or a character off."""
    form = int(rng.integers(3))
    if form == 0 and "\n" in old:  # a single line stripped of its indentation would still be found
        return "\n".join(x.lstrip() for x in old.split("\n"))
    if form == 1 and old.startswith("    "):
        return old.replace("    ", "\t")
    i = int(rng.integers(4, max(5, len(old) - 1)))
    return old[:i] + old[i + 1:] if old[i] != old[i - 1] else old[:i] + "_" + old[i:]


def _grep_out(t: dict[str, Any], files: dict[str, str], pattern: str, glob: str | None) -> str:
    rx = re.compile(pattern)
    hits = [f"{t['root']}/{p}:{i}:{x}" for p, text in files.items()
            if glob is None or fnmatch.fnmatch(p.rsplit("/", 1)[-1], glob)
            for i, x in enumerate(text.splitlines(), start=1) if rx.search(x)]
    return "\n".join(hits) if hits else "No matches found"


def _glob_out(t: dict[str, Any], files: dict[str, str], pattern: str) -> str:
    hits = sorted(f"{t['root']}/{p}" for p in files if fnmatch.fnmatch(p, pattern))
    return "\n".join(hits) if hits else "No files found"


_B62 = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def _wrong_path(rng: np.random.Generator, rel: str) -> str:
    """A path next to ``rel`` that does not exist."""
    if rng.random() < 0.5:
        return rel.removeprefix("src/") if rel.startswith("src/") else f"src/{rel}"
    stem, dot, ext = rel.rpartition(".")
    return f"{stem}s{dot}{ext}" if not stem.endswith("s") else f"{stem[:-1]}{dot}{ext}"


def _pytest_cmd(rng: np.random.Generator, target: str | None, test: str | None) -> tuple[str, str | None]:
    """A pytest command for the test file ``target`` (None: the whole suite), and its path argument."""
    if target is None:
        return pick(rng, ("pytest -q", "python -m pytest", "pytest", "pytest -q && python -m mypy src")), None
    spec = f"{target}::{test}" if test and rng.random() < 0.4 else target
    return pick(rng, (f"pytest {spec} -x", f"python -m pytest {spec} -q", f"pytest -q {spec}", f"uv run pytest {spec}",
                      f"pytest {spec} -x -q")), spec


def _diff(rel: str, old: str, new: str, line: int) -> str:
    a, b = old.split("\n"), new.split("\n")
    return "\n".join([f"diff --git a/{rel} b/{rel}", f"--- a/{rel}", f"+++ b/{rel}",
                      f"@@ -{line},{len(a)} +{line},{len(b)} @@", *(f"-{x}" for x in a), *(f"+{x}" for x in b)])


class _Session:
    """One episode in OpenAI chat format: the calls (a failure corrected at once), the
    bookkeeping and noise in the gaps between steps, and the files as the agent changes them."""

    def __init__(self, rng: np.random.Generator, t: dict[str, Any], strategy: str, correct: bool) -> None:
        self.rng, self.t = rng, t
        self.plan = strategy == "plan_heavy"
        self.red_end = not correct and bool(rng.random() < _P_RED_END)
        self.files = dict(t["files"])
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": _system(rng, t)},
                                               {"role": "user", "content": t["text"]}]
        self.n_calls = self.failures = self.n_todo = self.n_task = self.steps = self.phase = 0
        f = t["func"]
        self.items = [pick(rng, ((f"Find where {f} goes wrong", f"Finding where {f} goes wrong"),
                                 (f"Locate {f} and understand the bug", f"Locating {f}"))),
                      pick(rng, ((f"Fix {f}", f"Fixing {f}"), (f"Fix the bug in {t['module']}.py", "Fixing the bug"))),
                      pick(rng, (("Run the tests", "Running the tests"),
                                 ("Verify with pytest", "Verifying with pytest")))]
        self.todo_style = pick(rng, ("activeForm", "id"))
        self.neighbour = bool(rng.random() < _P_NEIGHBOUR)
        self.read_target = False
        self.diffs: list[tuple[str, str, str, int]] = []
        self.added_test: str | None = None

    def _turn(self, tool: str, args: dict[str, Any], result: str, said: str | None) -> None:
        self.n_calls += 1
        self.n_todo += tool == "TodoWrite"
        self.n_task += tool == "Task"
        cid = "toolu_01" + "".join(_B62[int(i)] for i in self.rng.integers(0, 62, size=22))
        keys = list(args)
        ordered = {keys[int(i)]: args[keys[int(i)]] for i in self.rng.permutation(len(keys))}
        self.messages.append({"role": "assistant", "content": said, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": tool, "arguments": json.dumps(ordered)}}]})
        self.messages.append({"role": "tool", "tool_call_id": cid, "name": tool, "content": result})

    def said(self, says: tuple[str, ...]) -> str | None:
        return pick(self.rng, says) if says and self.rng.random() < _P_SAY else None

    def call(self, tool: str, args: dict[str, Any], result: str, says: tuple[str, ...] = ()) -> None:
        """A call that cannot fail (Grep, Glob, Write, TodoWrite, Task)."""
        self._turn(tool, args, result, self.said(says))

    def begin(self) -> None:
        """A new step: the noise in the gap before it, or a first TodoWrite before the first."""
        rng = self.rng
        if self.steps == 0:
            if not self.plan and rng.random() < _P_TODO_FIRST:
                self.todo(self.phase, True)
        else:
            noise: list[Callable[[], None]] = []
            if not self.plan and rng.random() < _P_TODO_GAP:
                noise.append(lambda: self.todo(self.phase, True))
            if rng.random() < _P_GIT:
                noise.append(self.git)
            if len(noise) == 2 and rng.random() < 0.5:
                noise.reverse()
            for step in noise:
                step()
        self.steps += 1

    def todo(self, done: int, active: bool) -> None:
        """``TodoWrite`` of the whole list: items before ``done`` completed, item ``done``
        in progress when ``active``, the rest pending."""
        todos = []
        for i, (content, form) in enumerate(self.items):
            status = "completed" if i < done else "in_progress" if i == done and active else "pending"
            todos.append({"content": content, "status": status, "activeForm": form} if self.todo_style == "activeForm"
                         else {"content": content, "status": status, "priority": "high" if i < 2 else "medium",
                               "id": str(i + 1)})
        self.call("TodoWrite", {"todos": todos}, _TODO_OK, ("Let me track this with a todo list.",
                                                            "Updating the todo list.", "Marking progress."))

    def bash(self, command: str, output: str, said: str | None, describe: tuple[str, ...]) -> None:
        args = {"command": command}
        if self.rng.random() < _P_DESCRIPTION:
            args["description"] = pick(self.rng, describe)
        self._turn("Bash", args, output, said)

    def git(self) -> None:
        rng, t = self.rng, self.t
        created = [p for p in self.files if p not in t["files"]]
        changed = sorted({d[0] for d in self.diffs})
        if self.diffs and rng.random() < 0.5:
            cmd = pick(rng, ("git diff", "git diff --stat"))
            if cmd == "git diff":
                out = "\n".join(_diff(*d) for d in self.diffs)
            else:
                plus, minus = (sum(d[i].count("\n") + 1 for d in self.diffs) for i in (2, 1))
                out = "\n".join([*(f" {p} | {plus + minus} {'+' * plus}{'-' * minus}" for p in changed),
                                 f" {len(changed)} file{'s' * (len(changed) > 1)} changed, {plus} insertions(+), "
                                 f"{minus} deletions(-)"])
        else:
            cmd = pick(rng, ("git status", "git status -s"))
            if cmd == "git status -s":
                out = "\n".join([*(f" M {p}" for p in changed), *(f"?? {p}" for p in created)]) or "(no output)"
            else:
                out = f"On branch {t['branch']}\n"
                if changed:
                    out += "Changes not staged for commit:\n" + "".join(f"\tmodified:   {p}\n" for p in changed)
                if created:
                    out += "Untracked files:\n" + "".join(f"\t{p}\n" for p in created)
                if not changed and not created:
                    out += "nothing to commit, working tree clean"
        what = ("Show the diff", "Diff of the working tree") if "diff" in cmd else ("Show working tree status",
                                                                                  "Check git status")
        self.bash(cmd, out.rstrip("\n"), self.said(("Let me check the working tree.", "Quick look at git.")),
                  (*what, "Check git state"))

    def read(self, rel: str, *, says: tuple[str, ...] = (), fail: bool = True, window: bool = False) -> None:
        """``Read`` (first, where it fails, a path that does not exist); the optional Read of a
        neighbouring module right after the first Read of the module to fix."""
        rng, t = self.rng, self.t
        said = self.said(says)
        if fail and rng.random() < _P_READ_MISSING:
            self._turn("Read", {"file_path": f"{t['root']}/{_wrong_path(rng, rel)}"}, _NO_FILE, said)
            self.failures += 1
            said = None
        args: dict[str, Any] = {"file_path": f"{t['root']}/{rel}"}
        start, limit = 1, None
        if window and rel == t["rel"] and rng.random() < 0.5:
            start, limit = max(1, t["line"] - 10), 40
            args.update(offset=start, limit=limit)
        self._turn("Read", args, _numbered(self.files[rel], start, limit), said)
        if rel == t["rel"] and not self.read_target:
            self.read_target = True
            if self.neighbour:
                self.read(t["neighbour"], says=("Let me also look at the module next to it.",
                                                f"Checking {t['neighbour'].rsplit('/', 1)[-1]} too."))

    def edit(self, rel: str, old: str, new: str, says: tuple[str, ...] = ()) -> None:
        """``Edit`` (first, where it fails, an ``old_string`` not in the file, then optionally a
        Read of the file)."""
        rng, t = self.rng, self.t
        path, said = f"{t['root']}/{rel}", self.said(says)
        if rng.random() < _P_EDIT_FAIL:
            bad = _broken_old(rng, old)
            self._turn("Edit", {"file_path": path, "old_string": bad, "new_string": new},
                       f"{_EDIT_MISS}\nString: {bad}", said)
            self.failures += 1
            said = self.said(("The text didn't match; let me re-read the file.", "Let me fix the match.")
                             ) if rng.random() < 0.5 else None
            if rng.random() < _P_REREAD:
                self.read(rel, fail=False, window=True)
        line = self.files[rel][:self.files[rel].index(old)].count("\n") + 1
        self.files[rel] = self.files[rel].replace(old, new, 1)
        result = f"The file {path} has been updated."
        if rng.random() < 0.5:
            result += (" Here's the result of running `cat -n` on a snippet of the edited file:\n"
                       + _numbered(self.files[rel], max(1, line - 2), new.count("\n") + 5))
        self._turn("Edit", {"file_path": path, "old_string": old, "new_string": new}, result, said)
        self.diffs.append((rel, old, new, line))

    def pytest(self, target: str | None, files: list[tuple[str, int]], red: bool, says: tuple[str, ...],
               test: str | None = None) -> None:
        """A pytest run of the test file ``target`` (None: the suite), red when ``red`` (the
        first file failing on the scenario's test); first, where it fails, a broken command."""
        rng, t = self.rng, self.t
        cmd, spec = _pytest_cmd(rng, target, test)
        if spec and "::" in spec:
            files = [(target, 1)]
        said = self.said(says)
        describe = (f"Run {target or 'the test suite'}", "Run the tests", f"Run pytest on {t['module']}")
        if rng.random() < _P_BASH_FAIL:
            bad, err = _broken_bash(rng, t, cmd, spec)
            self.bash(bad, err, said, describe)
            self.failures += 1
            said = self.said(("Wrong invocation; retrying.", "Let me run it properly.")) if rng.random() < 0.5 else None
        out, code = _pytest_out(rng, t, cmd, files, files[0][0] if red else None)
        if "mypy" in cmd and code == 0:
            out += f"\nSuccess: no issues found in {int(rng.integers(8, 40))} source files"
        self.bash(cmd, out, said, describe)


def _system(rng: np.random.Generator, t: dict[str, Any]) -> str:
    env = (f"<env>\nWorking directory: {t['root']}\nIs directory a git repo: Yes\nPlatform: "
           f"{pick(rng, ('linux', 'darwin'))}\nToday's date: 2025-{int(rng.integers(1, 13)):02d}-"
           f"{int(rng.integers(1, 29)):02d}\n</env>")
    return pick(rng, (
        "You are an interactive CLI agent that helps users with software engineering tasks. Use the tools "
        f"available to you to read, search and edit code and run commands.\n\n{env}",
        "You are a coding agent working in the user's repository. Use TodoWrite to plan and track multi-step "
        f"work, and Task to delegate searches or reviews to a sub-agent.\n\n{env}",
        f"You are a careful software engineer operating in a terminal.\n{env}\nCurrent branch: {t['branch']}"))


# -- steps ----------------------------------------------------------------------------------------------
def _src_dir(t: dict[str, Any]) -> str:
    return t["rel"].rsplit("/", 1)[0].split("/")[0]


def _find(s: _Session, how: str | None = None) -> str:
    """One step: ``Grep`` for the function (or the faulty text), or ``Glob`` for the module."""
    rng, t = s.rng, s.t
    how = how or pick(rng, ("grep", "glob"))
    s.begin()
    says = (f"Let me find where {t['func']} is defined.", "Searching the codebase.", f"Looking for {t['module']}.py.")
    if how == "grep":
        args: dict[str, Any] = {"pattern": pick(rng, (f"def {t['func']}", t["func"], t["sc"]["pattern"]))}
        files = s.files
        if rng.random() < 0.4:
            args["path"] = f"{t['root']}/{_src_dir(t)}"
            files = {p: x for p, x in files.items() if p.startswith(_src_dir(t) + "/")}
        if rng.random() < 0.3:
            args["glob"] = "*.py"
        s.call("Grep", args, _grep_out(t, files, args["pattern"], args.get("glob")), says)
    else:
        pattern = pick(rng, (f"**/{t['module']}.py", f"**/*{t['module']}*.py", f"**/{t['module']}*"))
        s.call("Glob", {"pattern": pattern}, _glob_out(t, s.files, pattern), says)
    return how


def _read_target(s: _Session) -> None:
    s.begin()
    s.read(s.t["rel"], says=(f"Reading {s.t['rel']}.", "Let me look at the implementation.",
                             f"Let me read `{s.t['func']}`."), window=True)


def _fix(s: _Session) -> None:
    t = s.t
    s.phase = max(s.phase, 1)
    s.begin()
    s.edit(t["rel"], t["old"], t["new"], (f"The problem is clear: {t['sc']['why']}. Fixing it.",
                                          "Now the fix.", f"Editing `{t['func']}`."))


def _run(s: _Session, rel: str, n: int, *, red: bool, test: str | None = None) -> None:
    """One step: the tests of ``rel`` (a run meant green turns red at the end of an episode that
    fails with its tests red)."""
    if not red:
        s.phase = 2
    s.begin()
    says = (("Let me run the failing test first to see it fail.", "Reproducing with the test first.")
            if red else ("Now let me run the tests.", "Running the tests to confirm.", "Let me verify."))
    s.pytest(rel, [(rel, n)], red or s.red_end, says, test)


def _green(s: _Session) -> None:
    t = s.t
    if s.added_test == t["regress_rel"]:
        _run(s, t["regress_rel"], 1, red=False, test=t["sc"]["test"])
    else:
        _run(s, t["test_rel"], t["n_tests"], red=False)


def _search_report(rng: np.random.Generator, t: dict[str, Any]) -> str:
    sc, first = t["sc"], t["old"].split("\n")[0].strip()
    cli = t["rel"].rsplit("/", 1)[0] + "/cli.py"
    return pick(rng, (
        f"Found it. `{t['func']}` is defined in {t['root']}/{t['rel']}. The problem is at line {t['line']}: "
        f"`{first}`; {sc['why']}. It is called from {cli} (`main`) and covered by {t['test_rel']}, which has no "
        "test for this case.",
        f"## Summary\n\n- Location: {t['rel']}:{t['line']} in `{t['func']}`\n- Cause: {sc['why']}\n"
        f"- Callers: {cli}\n- Tests: {t['test_rel']} ({t['n_tests'] - 1} tests, none for this case)",
        f"The bug is in `{t['func']}` ({t['rel']}, line {t['line']}): {sc['why']}. Suggested fix: {sc['fix']}."))


def _review_report(rng: np.random.Generator, t: dict[str, Any]) -> str:
    sc = t["sc"]
    return pick(rng, (
        f"Reviewed the diff to {t['rel']}. The change is correct: {sc['fix']}. One suggestion: add a short comment "
        f"above it ({sc['comment']}) so the old behaviour doesn't come back.",
        f"LGTM overall. {sc['fix'].capitalize()}, and the tests cover it. Nit: a one-line comment explaining why "
        f"({sc['comment']}) would help the next reader.",
        f"**Verdict:** approve with a nit.\n\n- Correctness: {sc['fix']}.\n- Suggestion: document the intent in a "
        f"comment: \"{sc['comment']}\"."))


def _explore(s: _Session) -> None:
    """5-8 searches and reads across the repository, the function found and its module read among them."""
    rng, t = s.rng, s.t
    src = _src_dir(t)

    def glob(pattern: str) -> Callable[[], None]:
        return lambda: (s.begin(), s.call("Glob", {"pattern": pattern}, _glob_out(t, s.files, pattern),
                                          ("Let me get an overview of the repo.", "Listing files.")))

    def grep(pattern: str) -> Callable[[], None]:
        return lambda: (s.begin(), s.call("Grep", {"pattern": pattern, "path": t["root"]},
                                          _grep_out(t, s.files, pattern, None), ("Searching.", "Grepping.")))

    def read(rel: str) -> Callable[[], None]:
        return lambda: (s.begin(), s.read(rel, says=(f"Reading {rel}.", "Let me look at this file.")))

    extras = [glob("**/*.py"), glob("tests/**/*.py"), glob(f"{src}/**"), read("README.md"), read("pyproject.toml"),
              read(t["rel"].rsplit("/", 1)[0] + "/cli.py"), read(t["test_rel"]), grep("TODO|FIXME"),
              grep(f"import {t['func']}"), grep(t["sc"]["pattern"])]
    n = int(rng.integers(5, 9))
    seq = [extras[int(i)] for i in rng.choice(len(extras), size=n - 2, replace=False)]
    at = int(rng.integers(0, len(seq) + 1))
    seq.insert(at, lambda: _find(s, "grep"))
    seq.insert(int(rng.integers(at + 1, len(seq) + 1)), lambda: _read_target(s))
    for step in seq:
        step()


# -- strategies -----------------------------------------------------------------------------------------
def _read_edit_test(s: _Session) -> None:
    first = _find(s)
    if s.rng.random() < _P_SECOND_LOCATE:
        _find(s, "glob" if first == "grep" else "grep")
    _read_target(s)
    _fix(s)
    _green(s)


def _test_first(s: _Session) -> None:
    t = s.t
    _run(s, t["test_rel"], t["n_tests"], red=True, test=t["sc"]["test"])
    if s.rng.random() < _P_TF_GREP:
        _find(s, "grep")
    _read_target(s)
    _fix(s)
    _run(s, t["test_rel"], t["n_tests"], red=False, test=t["sc"]["test"])


def _delegate_search(s: _Session) -> None:
    rng, t = s.rng, s.t
    s.begin()
    s.call("Task", {"description": pick(rng, (f"Find {t['func']} bug", "Locate the bug", f"Search {t['module']} code")),
                    "prompt": f"In the repository at {t['root']}, find where this happens: {t['text']} Report the "
                              "file, the function and the line, and which tests cover it. Do not edit anything.",
                    "subagent_type": pick(rng, ("Explore", "general-purpose"))},
           _search_report(rng, t), ("I'll have a sub-agent find where this happens.", "Delegating the search."))
    _read_target(s)
    _fix(s)
    _green(s)


def _plan_heavy(s: _Session) -> None:
    rng, t = s.rng, s.t
    f, sc = t["func"], t["sc"]
    items = [pick(rng, ((f"Locate {f} and confirm the bug", f"Locating {f}"), (f"Find {f}", f"Finding {f}"))),
             pick(rng, ((f"Fix {f}: {sc['fix']}", f"Fixing {f}"), (f"Fix the bug in {t['module']}.py", "Fixing"))),
             (f"Add a regression test {sc['test']}", "Adding a regression test"),
             pick(rng, (("Run the tests", "Running the tests"), ("Run pytest and check", "Running pytest")))]
    if rng.random() >= _P_PLAN_TEST:
        del items[2]
    s.items = items
    s.begin()
    s.todo(0, True)
    _find(s)
    s.begin()
    s.todo(1, True)
    _read_target(s)
    _fix(s)
    s.begin()
    s.todo(2, True)
    if len(items) == 4:
        s.begin()
        s.read(t["test_rel"], says=("Now the regression test.", f"Let me look at {t['test_rel']}."))
        last = s.files[t["test_rel"]].rstrip("\n").rsplit("\n", 1)[-1]
        test = "\n".join([f"def {sc['test']}({sc['test_args']}):", *sc["check"]])
        s.begin()
        s.edit(t["test_rel"], last, f"{last}\n\n\n{test}", ("Adding the regression test.",))
        s.added_test = t["test_rel"]
        s.begin()
        s.todo(3, True)
    _green(s)
    s.begin()
    s.todo(len(items), False)


def _write_test_first(s: _Session) -> None:
    t = s.t
    if s.rng.random() < _P_WTF_LOCATE:
        _find(s, "grep")
    s.begin()
    s.call("Write", {"file_path": f"{t['root']}/{t['regress_rel']}", "content": _regression_text(t)},
           f"File created successfully at: {t['root']}/{t['regress_rel']}",
           ("I'll write a test that reproduces the bug first.", "First, a failing test."))
    s.files[t["regress_rel"]] = _regression_text(t)
    s.added_test = t["regress_rel"]
    _run(s, t["regress_rel"], 1, red=True, test=t["sc"]["test"])
    _read_target(s)
    _fix(s)
    _green(s)


def _broad_explore(s: _Session) -> None:
    _explore(s)
    _fix(s)
    _green(s)


def _review_subagent(s: _Session) -> None:
    rng, t = s.rng, s.t
    _find(s, "grep")
    _read_target(s)
    _fix(s)
    _green(s)
    s.begin()
    s.call("Task", {"description": pick(rng, ("Review the fix", f"Review {t['func']} change", "Code review")),
                    "prompt": f"Review the uncommitted changes (git diff) in {t['root']}: the fix to `{t['func']}` "
                              f"in {t['rel']} for this issue: {t['text']} Check correctness, edge cases and style; "
                              "reply with concrete suggestions.",
                    "subagent_type": pick(rng, ("code-reviewer", "general-purpose"))},
           _review_report(rng, t), ("Let me get a second pair of eyes on the diff.", "Asking a reviewer sub-agent."))
    indent = t["new"][:len(t["new"]) - len(t["new"].lstrip())]
    s.begin()
    s.edit(t["rel"], t["new"], f"{indent}# {t['sc']['comment']}\n{t['new']}", ("Adding the comment it suggested.",))
    if rng.random() < _P_REVIEW_RETEST:
        _green(s)


_STRATEGY: dict[str, Callable[[_Session], None]] = {
    "read_edit_test": _read_edit_test, "test_first": _test_first, "delegate_search": _delegate_search,
    "plan_heavy": _plan_heavy, "write_test_first": _write_test_first, "broad_explore": _broad_explore,
    "review_subagent": _review_subagent}


def _final(s: _Session) -> str:
    rng, t = s.rng, s.t
    sc = t["sc"]
    if s.red_end:
        return pick(rng, (
            f"I wasn't able to fix this. After changing `{t['func']}` in {t['rel']}, `{sc['test']}` still fails "
            f"with `{sc['error']}`. I've left the change in place; it needs a closer look.",
            f"Not fixed: the tests are still red ({sc['error']}). My change to {t['rel']} did not address the "
            "cause; I'd suggest reverting it with `git checkout` before trying again."))
    note = f" Added `{sc['test']}` in {s.added_test}." if s.added_test else ""
    return pick(rng, (
        f"Fixed `{t['func']}` in {t['rel']}: {sc['why']}; {sc['fix']}.{note} The tests pass.",
        f"Done. The bug was in `{t['func']}` ({t['rel']}:{t['line']}): {sc['why']}, so {sc['fix']}.{note}",
        f"Summary of the change:\n- {t['rel']}: {sc['fix']} ({sc['why']})\n"
        + (f"- {s.added_test}: new test `{sc['test']}`\n" if s.added_test else "") + "- tests: passing"))


def _episode(rng: np.random.Generator, strategy: str, t: dict[str, Any], correct: bool) -> _Session:
    s = _Session(rng, t, strategy, correct)
    _STRATEGY[strategy](s)
    if rng.random() < _P_FULL_SUITE:  # optional, whatever the arm, the kind and the strategy
        s.begin()
        files = [(t["test_rel"], t["n_tests"]), *t["suite"]]
        if s.added_test == t["regress_rel"]:
            files = [(t["regress_rel"], 1), *files]
        s.pytest(None, files, s.red_end, ("Let me run the whole suite.", "Full test run to be safe."))
    s.messages.append({"role": "assistant", "content": _final(s)})
    return s


def todo(n_questions: int = 60, n_samples: int = 4, random_state: RandomState = 0, *,
         arms: dict[str, dict[str, float]] | None = None) -> World:
    """Generate the coding-agent world with a todo list and sub-agents (OpenAI ``tool_calls`` records).

    Parameters
    ----------
    n_questions, n_samples
        Issues (their kinds drawn at random, :data:`KINDS`), and episodes per issue and arm.
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.
    arms
        Arm name -> strategy mixture (default: :data:`ARMS`, ``base`` and ``rl``, which differ
        only in it).

    Returns
    -------
    World
        Records in format ``openai``; truth ``arm, question_id, sample_id, strategy, kind,
        n_calls`` (tool calls, TodoWrite, Task and failed ones included), ``n_failures``,
        ``n_todo`` (TodoWrite calls), ``n_task`` (Task calls) and ``correct``.

    Examples
    --------
    >>> w = todo(n_questions=2, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"]))
    ('openai', 4, ['base', 'rl'])
    >>> w.records[0]["messages"][-1]["role"], "tool_calls" in w.records[0]["messages"][-1]
    ('assistant', False)
    """
    rng = as_generator(random_state)
    arms = arms or ARMS
    tasks = [(f"todo-{i:04d}", _task(rng, KINDS[int(rng.integers(len(KINDS)))])) for i in range(n_questions)]

    def episode(rng: np.random.Generator, arm: str, qid: str, sample: int, strategy: str, t: dict[str, Any]
                ) -> tuple[dict[str, Any], tuple]:
        correct = bool(rng.random() < _SUCCESS[strategy])
        s = _episode(rng, strategy, t, correct)
        return ({"arm": arm, "question_id": qid, "sample_id": sample, "gold": [], "correct": correct,
                 "messages": s.messages},
                (t["kind"], s.n_calls, s.failures, s.n_todo, s.n_task, correct))

    return planted_world("todo", "openai", rng, tasks, arms, n_samples, episode, _SUCCESS,
                         truth_schema={"kind": pl.String, "n_calls": pl.Int64, "n_failures": pl.Int64,
                                       "n_todo": pl.Int64, "n_task": pl.Int64, "correct": pl.Boolean})
