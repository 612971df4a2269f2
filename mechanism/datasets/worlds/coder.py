"""A software-engineering agent world: bug reports against a Python repository (SWE-bench-like).

The user files an issue ("`parse_rows` crashes on an empty file", with a traceback that names
the file and the line). The agent has six tools in OpenAI ``tool_calls`` format:
``search_code(pattern)``, ``open_file(path, start_line)``, ``edit_file(path, old, new)``,
``run_tests(path_or_selector)``, ``run_shell(command)`` and ``submit()``; a tool-using episode
ends with ``submit()`` and a short patch summary (the last assistant message, no tool call).
Failures are execution, not strategy: a path that does not exist, an edit whose ``old`` text is
not in the file (``Error: old string not found in file``), a regex that does not compile, a
test selector that matches nothing, a shell typo (``bash: gerp: command not found``), each
followed by a corrected call of the same tool; and a test run after the fix that still fails,
followed by another edit and a run that passes.

Seven planted strategies; call counts overlap (``submit`` not counted; 0, 2-3, 4-6, 4-6, 6-7,
5-7, 5-6 calls without failures, each failure adding one or two):

=====================  ====================================================================
``give_up``            no tool: the fix explained in words (or declined) from the issue alone
``blind_edit``         open the file the traceback names (optionally a second file: the
                       caller), edit it, submit
``reproduce_first``    run the failing test (it fails), open the file (optionally the caller
                       too), edit, run the test again (it passes), optionally the whole
                       suite, submit
``search_driven``      search the code for the symbol, open a hit (optionally a second), edit,
                       run the tests, optionally the whole suite, submit
``regression_test``    open the test file, add a regression test with an edit, run it (it
                       fails), open the source, fix it, run the test (it passes), optionally
                       the whole suite, submit
``explore_shell``      look around the repository with two or three shell commands (ls, find,
                       tree, grep, cat), open the file (optionally the caller), edit, run the
                       tests, submit
``git_history``        read the file's history with git (log, then show / diff of the commit
                       that broke it), open the file, edit, run the tests, optionally the
                       whole suite, submit
=====================  ====================================================================

Failures occur inside every strategy that calls a tool, at one rate per call whatever the arm.
The optional steps (a second file opened before editing; the whole suite run once more at the
end; a third shell command) are taken at fixed rates, independent of the arm, and belong to
their strategy whichever way they go. Paths, function names, patterns, code, commands and the
assistant's words vary inside every strategy. The ``rl`` arm differs from ``base`` only in its
mixture; success depends only on the strategy (random within it).

The truth carries, beside ``strategy``, ``n_calls`` (the tool calls that are rounds: every one
but ``submit``), ``n_tool_calls`` (all of them) and ``n_failed`` (calls that failed).

Written from scratch as a held-out world, without reference to how trajectories are segmented
or clustered.
"""
from __future__ import annotations

import json

import numpy as np
import polars as pl

from mechanism.core.options import RandomState, as_generator
from mechanism.datasets.worlds._base import World, chat_world, name, pick, word

STRATEGIES = ("give_up", "blind_edit", "reproduce_first", "search_driven", "regression_test", "explore_shell",
              "git_history")
ARMS = {
    "base": {"give_up": 0.12, "blind_edit": 0.25, "reproduce_first": 0.12, "search_driven": 0.18,
             "regression_test": 0.05, "explore_shell": 0.18, "git_history": 0.10},
    "rl": {"give_up": 0.03, "blind_edit": 0.08, "reproduce_first": 0.25, "search_driven": 0.20,
           "regression_test": 0.17, "explore_shell": 0.12, "git_history": 0.15},
}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"give_up": 0.05, "blind_edit": 0.35, "reproduce_first": 0.6, "search_driven": 0.55,
            "regression_test": 0.7, "explore_shell": 0.45, "git_history": 0.5}
# the chance that a call which can fail does (the same in every strategy and arm)
_P_FAIL = 0.15
# the optional steps' rates (the same in every strategy and arm)
_P_SECOND_FILE = 0.35
_P_FINAL_SUITE = 0.3
_P_THIRD_SHELL = 0.5

_VERBS = ("parse", "load", "format", "merge", "resolve", "normalize", "render", "collect", "split", "encode")
_NOUNS = ("rows", "config", "header", "path", "record", "token", "label", "entry", "schema", "payload")
_LAYOUTS = ("src/{pkg}/{mod}.py", "{pkg}/{mod}.py", "lib/{pkg}/{mod}.py")
_TEST_LAYOUTS = ("tests/test_{mod}.py", "tests/unit/test_{mod}.py", "{pkg}/tests/test_{mod}.py")

# the bugs: the faulty line, ways to fix it, the error it raises, what triggers it, the test case
_BUGS = {
    "index": {"buggy": "for i in range(len({v}) + 1):", "fixes": ("for i in range(len({v})):",
                                                                   "for i, _ in enumerate({v}):"),
              "error": "IndexError: list index out of range", "trigger": ("the input has a single element",
                                                                          "the list is not empty",
                                                                          "any non-empty list is passed"),
              "case": "last_item"},
    "none": {"buggy": "return {v}.strip().lower()", "fixes": ('return ({v} or "").strip().lower()',
                                                             'return {v}.strip().lower() if {v} else ""'),
             "error": "AttributeError: 'NoneType' object has no attribute 'strip'",
             "trigger": ("the value is missing", "a field is None", "the column is empty"), "case": "none"},
    "key": {"buggy": 'return options["{key}"]',
            "fixes": ('return options.get("{key}", {default})',
                      'return options["{key}"] if "{key}" in options else {default}'),
            "error": "KeyError: '{key}'", "trigger": ("the option `{key}` is not set", "`{key}` is left out",
                                                      "an old config file without `{key}` is loaded"),
            "case": "missing_key"},
    "zero": {"buggy": "return total / len({v})", "fixes": ("return total / len({v}) if {v} else 0.0",
                                                           "return total / max(len({v}), 1)"),
             "error": "ZeroDivisionError: division by zero", "trigger": ("the input is empty", "no rows match",
                                                                         "an empty list is passed"),
             "case": "empty"},
    "concat": {"buggy": 'label = "{prefix}" + {v}', "fixes": ('label = "{prefix}" + str({v})',
                                                             'label = f"{prefix}{{{v}}}"'),
               "error": 'TypeError: can only concatenate str (not "int") to str',
               "trigger": ("the id is an integer", "a numeric value is passed", "the key is a number"),
               "case": "int_label"},
    "parse": {"buggy": "value = int({v})", "fixes": ("value = int({v}.strip())", "value = int(str({v}).strip())"),
              "error": "ValueError: invalid literal for int() with base 10: '{n}\\n'",
              "trigger": ("the line ends with a newline", "the file has Windows line endings",
                          "there is trailing whitespace"), "case": "whitespace"},
}
_SYSTEM = ("You are a software engineer working in a checked-out repository. Fix the issue, then call submit().",
           "You are a coding agent. Use the tools to investigate and fix the reported bug; call submit() when done.",
           "Resolve the GitHub issue below by editing the repository. Submit your patch with submit().")
_ISSUES = (
    "`{func}` crashes when {trigger}.\n\n```\n{tb}\n```\n\nExpected: no exception. Version {ver}.",
    "Bug: {errname} in {pkg}.{mod}.{func}\n\nSince {ver} I get this when {trigger}:\n\n{tb}\n\nCould you have a look?",
    "Hi! Calling `{caller_func}` fails for me when {trigger}. Traceback:\n{tb}\n"
    "The test {test_path}::{test_name} shows the same thing.",
    "{errname} raised by {func}() ({ver})\n\nSteps to reproduce: call {caller_func} when {trigger}.\n\n{tb}",
)
_SAY = {
    "search_code": ("Let me find where {sym} is defined.", "Searching the code for {sym}.",
                    "Where is {sym}?", "I'll grep the codebase for {sym}."),
    "open_file": ("Let me look at {path}.", "Opening {path}.", "Let me read the code around the failing line.",
                  "I'll open {path} to see the context."),
    "edit_file": ("Editing {path}.", "Applying the fix.", "Let me change that line.", "I'll patch {path}."),
    "run_tests": ("Running the tests.", "Let me run {sel}.", "Checking with the test suite.", "Running pytest."),
    "run_shell": ("Let me look around the repository.", "Running a shell command.", "Checking the repo.",
                  "Let me see what is there."),
    "submit": ("Submitting the patch.", "The fix is in; submitting.", "Done, submitting."),
}
_TYPOS = {"grep": ("gerp", "grpe"), "find": ("fnid", "fidn"), "ls": ("sl",), "tree": ("tre",), "cat": ("cta",),
          "git": ("gti", "gi")}


def _call_id(rng: np.random.Generator, n: int) -> str:
    return f"call_{n:02d}{int(rng.integers(16 ** 6)):06x}"


class _Agent:
    """One transcript in OpenAI chat format, with the calls counted (rounds, failures)."""

    def __init__(self, rng: np.random.Generator, task: dict) -> None:
        self.rng, self.task = rng, task
        self.messages: list[dict] = [{"role": "system", "content": pick(rng, _SYSTEM)},
                                     {"role": "user", "content": task["text"]}]
        self.n_calls = self.n_failed = self.n_tool_calls = 0

    def _turn(self, tool: str, args: dict, result: str, *, failed: bool = False, said: str | None = None) -> None:
        self.n_tool_calls += 1
        if tool != "submit":
            self.n_calls += 1
        self.n_failed += int(failed)
        cid = _call_id(self.rng, self.n_tool_calls)
        if said is None:
            said = pick(self.rng, _SAY[tool]).format(sym=self.task["func"], path=args.get("path", "the file"),
                                                     sel=args.get("path_or_selector", "the tests"))
        self.messages.append({"role": "assistant", "content": said, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}]})
        self.messages.append({"role": "tool", "tool_call_id": cid, "name": tool, "content": result})

    def _fails(self) -> bool:
        return bool(self.rng.random() < _P_FAIL)

    def search(self, pattern: str) -> None:
        if self._fails():  # a pattern that does not compile, then the corrected one
            bad = pick(self.rng, (f"def {self.task['func']}(", f"{self.task['func']}(", f"[{self.task['func']}"))
            pos = len(bad)
            self._turn("search_code", {"pattern": bad},
                       f"Error: invalid regex: missing ), unterminated subpattern at position {pos - 1}", failed=True)
        self._turn("search_code", {"pattern": pattern}, _hits(self.rng, self.task))

    def open(self, path: str, line: int) -> None:
        start = max(1, line - int(pick(self.rng, (3, 5, 10, 15))))
        if self._fails():  # a path guessed wrong, then the right one
            t = self.task
            bad = pick(self.rng, (path.replace(t["pkg"], t["pkg"] + "s", 1), path.replace(".py", "s.py"),
                                  path.split("/", 1)[-1] if "/" in path else "x" + path))
            if bad == path:
                bad = "src/" + path
            self._turn("open_file", {"path": bad, "start_line": start}, f"Error: no such file: {bad}", failed=True)
        self._turn("open_file", {"path": path, "start_line": start}, _view(self.rng, self.task, path, start))

    def edit(self, path: str, old: str, new: str) -> None:
        if self._fails():  # the old text misremembered (a name, the spacing), then the exact text
            v = self.task["v"]
            bad = pick(self.rng, (old.replace(v, v + "s", 1), old.replace(" ", "  ", 1), old.replace("(", " (", 1)))
            if bad == old:
                bad = old + " "
            self._turn("edit_file", {"path": path, "old": bad, "new": new},
                       "Error: old string not found in file", failed=True)
        self._turn("edit_file", {"path": path, "old": old, "new": new},
                   pick(self.rng, (f"Edited {path}: 1 occurrence replaced.", f"The file {path} has been updated.",
                                   f"OK: replaced 1 line in {path}.")))

    def tests(self, selector: str, result: str) -> None:
        if self._fails():  # a selector that matches nothing, then the right one
            bad = pick(self.rng, (selector.replace("test_", "tests_", 1), selector + "s", selector.replace("::", ":")))
            if bad == selector:
                bad = selector + "x"
            self._turn("run_tests", {"path_or_selector": bad},
                       f"ERROR: file or directory not found: {bad}\n\n"
                       f"no tests ran in 0.0{int(self.rng.integers(1, 9))}s",
                       failed=True)
        self._turn("run_tests", {"path_or_selector": selector}, result)

    def verify(self, selector: str, path: str, fixed: str, other: str) -> None:
        """The test run after the fix; where it still fails, another edit and a run that passes."""
        if self._fails():
            self._turn("run_tests", {"path_or_selector": selector}, _failing(self.rng, self.task, after_fix=True),
                       failed=True)
            self.edit(path, fixed, other)
        self.tests(selector, _passing(self.rng, 1 if "::" in selector else int(self.rng.integers(3, 40))))

    def shell(self, command: str, result: str) -> None:
        if self._fails():  # a typo in the command's name, then the command
            head = command.split()[0]
            typo = pick(self.rng, _TYPOS.get(head, (head[::-1],)))
            self._turn("run_shell", {"command": typo + command[len(head):]}, f"bash: {typo}: command not found",
                       failed=True)
        self._turn("run_shell", {"command": command}, result)

    def submit(self) -> None:
        self._turn("submit", {}, pick(self.rng, ("Patch submitted.", "Submission received: 1 file changed.",
                                                 "Your changes have been submitted.")))

    def answer(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})


# the lines after the faulty one in the source view
_AFTER = {"index": ("        total += 1", "    return total"), "none": (), "key": (), "zero": (),
          "concat": ("    return label",), "parse": ("    return value + total",)}


def _hits(rng: np.random.Generator, task: dict) -> str:
    lines = [f"{task['src']}:{task['def_line']}:def {task['func']}({task['v']}, options=None):",
             f"{task['caller_path']}:{task['caller_line']}:    result = {task['func']}({task['v']}, options)"]
    if rng.random() < 0.6:
        lines.append(f"{task['test_path']}:{int(rng.integers(5, 60))}:    assert {task['func']}([]) == []")
    order = rng.permutation(len(lines))
    return "\n".join(lines[i] for i in order)


def _view(rng: np.random.Generator, task: dict, path: str, start: int) -> str:
    """A numbered view of the file from ``start`` (the source, the caller or the test file)."""
    if path == task["src"]:
        body = [f"def {task['func']}({task['v']}, options=None):", f'    """{task["doc"]}"""',
                "    options = options or {}", "    total = 0", f"    {task['buggy']}", *_AFTER[task["kind"]]]
        first = task["def_line"]
    elif path == task["caller_path"]:
        body = [f"def {task['caller_func']}(self, {task['v']}):", f"    options = self.{word(rng)}_options()",
                f"    result = {task['func']}({task['v']}, options)", "    return self._wrap(result)"]
        first = task["caller_line"] - 2
    else:
        body = [f"from {task['pkg']}.{task['mod']} import {task['func']}", "", "",
                f"def test_{task['func']}_basic():", f"    assert {task['func']}([1, 2]) is not None"]
        first = 1
    pad = [f"# {word(rng)} {word(rng)}" for _ in range(max(0, first - start))]
    lines = pad + body[max(0, start - first):]
    return "\n".join(f"{start + i:4d}  {text}" for i, text in enumerate(lines[:20]))


def _failing(rng: np.random.Generator, task: dict, *, after_fix: bool = False) -> str:
    err = (f"AssertionError: assert {int(rng.integers(0, 9))} == {int(rng.integers(10, 99))}" if after_fix
           else task["error"])
    return (f"{task['test_path']}::{task['test_name']} FAILED\n\n"
            f"    {task['buggy'] if not after_fix else 'assert ' + task['func'] + '(data) == expected'}\n"
            f"E   {err}\n\nFAILED {task['test_path']}::{task['test_name']} - {err}\n"
            f"1 failed, {int(rng.integers(0, 30))} passed in 0.{int(rng.integers(10, 99))}s")


def _passing(rng: np.random.Generator, n: int) -> str:
    return pick(rng, (f"{n} passed in 0.{int(rng.integers(10, 99))}s",
                      f"============ {n} passed in {int(rng.integers(1, 5))}.{int(rng.integers(10, 99))}s ============",
                      f"collected {n} items\n\n{'.' * min(n, 40)}\n\n{n} passed"))


def _suite(rng: np.random.Generator, task: dict) -> str:
    return pick(rng, ("tests", "tests/", f"{task['pkg']}", "."))


def _listing(rng: np.random.Generator, task: dict) -> tuple[str, str]:
    """A first look at the repository: (command, output)."""
    top = task["src"].split("/")[0]
    cmd = pick(rng, ("ls", "ls -la", f"ls -R {top} | head -40", "find . -name '*.py' | head -50", "tree -L 2",
                     f"find {top} -type f -name '*.py'"))
    files = [task["src"], task["caller_path"], task["test_path"], "setup.cfg", "README.md"]
    return cmd, "\n".join(rng.permutation(files).tolist())


def _grep(rng: np.random.Generator, task: dict) -> tuple[str, str]:
    cmd = pick(rng, (f"grep -rn '{task['func']}' .", f"grep -rn 'def {task['func']}' --include='*.py' .",
                     f"grep -rl {task['func']} {task['src'].split('/')[0]}", f"grep -n '{task['v']}' {task['src']}"))
    hits = _hits(rng, task)
    if " -rl " in cmd:
        hits = "\n".join(dict.fromkeys(h.split(":")[0] for h in hits.splitlines()))
    return cmd, hits


def _peek(rng: np.random.Generator, task: dict) -> tuple[str, str]:
    cmd = pick(rng, (f"cat {task['src']} | head -60", f"sed -n '{task['def_line']},+12p' {task['src']}",
                     f"wc -l {task['src']} {task['caller_path']}", f"cat {task['test_path']}"))
    return cmd, _view(rng, task, task["src"], task["def_line"])


def _git_log(rng: np.random.Generator, task: dict) -> tuple[str, str]:
    cmd = pick(rng, (f"git log --oneline -n 10 -- {task['src']}", f"git log -5 --format='%h %s' {task['src']}",
                     f"git log --oneline -S '{task['buggy'].split('(')[0].strip()}'", f"git blame -L "
                     f"{task['line'] - 2},{task['line'] + 2} {task['src']}"))
    out = "\n".join(f"{sha} {msg}" for sha, msg in task["history"])
    return cmd, out


def _git_show(rng: np.random.Generator, task: dict) -> tuple[str, str]:
    sha = task["history"][0][0]
    cmd = pick(rng, (f"git show {sha}", f"git show {sha} -- {task['src']}", f"git diff {sha}~1 {sha}",
                     f"git diff {sha}^ {sha} -- {task['src']}"))
    out = (f"commit {sha}{''.join(pick(rng, tuple('0123456789abcdef')) for _ in range(33))}\n"
           f"Author: {name(rng)} <{word(rng)}@example.org>\n\n    {task['history'][0][1]}\n\n"
           f"--- a/{task['src']}\n+++ b/{task['src']}\n@@ -{task['line']},1 +{task['line']},1 @@\n"
           f"-    {task['fixes'][0]}\n+    {task['buggy']}")
    return cmd, out


def _summary(rng: np.random.Generator, task: dict, fix: str) -> str:
    return pick(rng, (f"Fixed `{task['func']}` in {task['src']}: the line now reads `{fix}`.",
                      f"The {task['errname']} came from `{task['buggy']}`; I changed it to `{fix}`.",
                      f"Patch: {task['src']} line {task['line']}, `{task['buggy']}` -> `{fix}`.",
                      f"{task['func']} no longer raises {task['errname']} when {task['trigger']}."))


def _give_up(rng: np.random.Generator, task: dict) -> str:
    return pick(rng, (
        f"Without running anything: the bug is in {task['func']} ({task['src']}, line {task['line']}). "
        f"Replace `{task['buggy']}` with `{task['fixes'][0]}` and the {task['errname']} goes away.",
        f"This looks like a classic {task['errname']}: {task['func']} does not handle the case where "
        f"{task['trigger']}. Guarding that line should fix it.",
        f"I can't reproduce this here, but I would change `{task['buggy']}` in {task['src']} so that it copes "
        f"when {task['trigger']}.",
        "I'm not able to fix this with confidence from the report alone; the traceback points at "
        f"{task['src']}, line {task['line']}, which is where I'd start.",
    ))


def _episode(rng: np.random.Generator, strategy: str, task: dict) -> _Agent:
    a = _Agent(rng, task)
    if strategy == "give_up":
        a.answer(_give_up(rng, task))
        return a
    t = task
    fix, other = (t["fixes"][0], t["fixes"][1]) if rng.random() < 0.5 else (t["fixes"][1], t["fixes"][0])
    failing_test = f"{t['test_path']}::{t['test_name']}"
    selector = pick(rng, (failing_test, t["test_path"], f"{t['test_path']} -k {t['test_name']}"))

    def second_file() -> None:  # the optional step: the caller opened before editing
        if rng.random() < _P_SECOND_FILE:
            a.open(t["caller_path"], t["caller_line"])

    def final_suite() -> None:  # the optional step: the whole suite once more at the end
        if rng.random() < _P_FINAL_SUITE:
            a.tests(_suite(rng, t), _passing(rng, int(rng.integers(40, 400))))

    if strategy == "blind_edit":
        a.open(t["src"], t["line"])
        second_file()
        a.edit(t["src"], t["buggy"], fix)
    elif strategy == "reproduce_first":
        a.tests(selector, _failing(rng, t))
        a.open(t["src"], t["line"])
        second_file()
        a.edit(t["src"], t["buggy"], fix)
        a.verify(selector, t["src"], fix, other)
        final_suite()
    elif strategy == "search_driven":
        a.search(pick(rng, (f"def {t['func']}", t["func"], f"def {t['func']}\\(", f"{t['func']}\\(")))
        a.open(t["src"], t["def_line"])
        second_file()
        a.edit(t["src"], t["buggy"], fix)
        a.verify(pick(rng, (t["test_path"], failing_test)), t["src"], fix, other)
        final_suite()
    elif strategy == "regression_test":
        new_test = f"test_{t['func']}_{pick(rng, ('regression', 'issue_' + str(t['issue']), t['case']))}"
        a.open(t["test_path"], 1)
        anchor = f"def test_{t['func']}_basic():"
        body = pick(rng, (f"def {new_test}():\n    assert {t['func']}({t['arg']}) == {t['expected']}\n\n\n",
                          f"def {new_test}():\n    # issue {t['issue']}\n    {t['func']}({t['arg']})\n\n\n"))
        a.edit(t["test_path"], anchor, body + anchor)
        sel = pick(rng, (f"{t['test_path']}::{new_test}", f"{t['test_path']} -k {new_test}"))
        a.tests(sel, _failing(rng, dict(t, test_name=new_test)))
        a.open(t["src"], t["line"])
        a.edit(t["src"], t["buggy"], fix)
        a.verify(sel, t["src"], fix, other)
        final_suite()
    elif strategy == "explore_shell":
        a.shell(*_listing(rng, t))
        a.shell(*_grep(rng, t))
        if rng.random() < _P_THIRD_SHELL:  # the optional step: a third look
            a.shell(*_peek(rng, t))
        a.open(t["src"], t["line"])
        second_file()
        a.edit(t["src"], t["buggy"], fix)
        a.verify(pick(rng, (t["test_path"], failing_test, _suite(rng, t))), t["src"], fix, other)
    elif strategy == "git_history":
        a.shell(*_git_log(rng, t))
        a.shell(*_git_show(rng, t))
        a.open(t["src"], t["line"])
        a.edit(t["src"], t["buggy"], fix)
        a.verify(pick(rng, (t["test_path"], failing_test)), t["src"], fix, other)
        final_suite()
    else:  # pragma: no cover - STRATEGIES is closed
        raise ValueError(strategy)
    a.submit()
    a.answer(_summary(rng, t, fix))
    return a


def _task(rng: np.random.Generator, i: int) -> dict:
    pkg, mod = word(rng), pick(rng, _NOUNS) + pick(rng, ("", "s", "_utils", "_io"))
    func = f"{pick(rng, _VERBS)}_{pick(rng, _NOUNS)}"
    kind = pick(rng, tuple(_BUGS))
    bug = _BUGS[kind]
    fill = {"v": pick(rng, ("items", "values", "rows", "data", word(rng))), "key": pick(rng, ("timeout", "encoding",
                                                                                             "delimiter", word(rng))),
            "default": pick(rng, ("None", "0", '""', "30")), "prefix": pick(rng, ("id-", "#", "item_", "key:")),
            "n": int(rng.integers(1, 999))}
    t = {"pkg": pkg, "mod": mod, "func": func, "kind": kind, "v": fill["v"],
         "src": pick(rng, _LAYOUTS).format(pkg=pkg, mod=mod),
         "test_path": pick(rng, _TEST_LAYOUTS).format(pkg=pkg, mod=mod),
         "caller_func": f"{pick(rng, _VERBS)}_{word(rng)}", "def_line": int(rng.integers(10, 300)),
         "buggy": bug["buggy"].format(**fill), "fixes": tuple(f.format(**fill) for f in bug["fixes"]),
         "error": bug["error"].format(**fill), "trigger": pick(rng, bug["trigger"]).format(**fill),
         "case": bug["case"], "issue": int(rng.integers(100, 9999)),
         "ver": f"{int(rng.integers(0, 4))}.{int(rng.integers(0, 20))}.{int(rng.integers(0, 9))}",
         "doc": pick(rng, ("Return the total.", f"Combine the {pick(rng, _NOUNS)}.", "Helper used by the loader.")),
         "arg": pick(rng, ("[]", "[1]", "None", '{"a": 1}', '" 7\\n"')),
         "expected": pick(rng, ("[]", "0", "None", '""'))}
    t["caller_path"] = t["src"].rsplit("/", 1)[0] + f"/{pick(rng, ('api', 'core', 'cli', 'loader', word(rng)))}.py"
    t["caller_line"] = int(rng.integers(20, 400))
    t["line"] = t["def_line"] + 4
    t["test_name"] = f"test_{func}_{bug['case']}"
    t["errname"] = t["error"].split(":")[0]
    t["history"] = [(f"{int(rng.integers(16 ** 7)):07x}", pick(rng, (f"Simplify {func}", f"Refactor {mod}",
                                                                    f"Speed up {func} loop", f"Clean up {pkg}.{mod}")))
                    for _ in range(int(rng.integers(2, 6)))]
    tb = (f"Traceback (most recent call last):\n  File \"{t['caller_path']}\", line {t['caller_line']}, in "
          f"{t['caller_func']}\n    result = {func}({t['v']}, options)\n  File \"{t['src']}\", line {t['line']}, "
          f"in {func}\n    {t['buggy']}\n{t['error']}")
    t["text"] = pick(rng, _ISSUES).format(tb=tb, **{k: v for k, v in t.items() if isinstance(v, (str, int))})
    return t


def coder(*, n_questions: int = 60, n_samples: int = 4, arms: dict[str, dict[str, float]] | None = None,
          random_state: RandomState = 0) -> World:
    """Generate the software-engineering world (OpenAI ``tool_calls`` records).

    Parameters
    ----------
    n_questions, n_samples
        Issues (tasks), and episodes per issue and arm.
    arms
        Arm name -> strategy mixture (default: ``base`` and ``rl``, which differ only in it).
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.

    Returns
    -------
    World
        Records in format ``openai`` and the planted strategies; the truth also holds each
        trajectory's ``n_calls`` (rounds: tool calls but ``submit``), ``n_tool_calls`` and
        ``n_failed``.

    Examples
    --------
    >>> w = coder(n_questions=2, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"]))
    ('openai', 4, ['base', 'rl'])
    >>> w.runs["n_rounds"].to_list() == w.truth["n_calls"].to_list()
    True
    """
    rng = as_generator(random_state)
    arms = arms or ARMS
    tasks = [(f"coder-{i:04d}", _task(rng, i)) for i in range(n_questions)]

    def episode(rng: np.random.Generator, strategy: str, task: dict) -> tuple[list[dict], tuple]:
        agent = _episode(rng, strategy, task)
        return agent.messages, (agent.n_calls, agent.n_tool_calls, agent.n_failed)

    return chat_world("coder", "openai", rng, tasks, arms, n_samples, episode, _SUCCESS,
                      truth_schema={"n_calls": pl.Int64, "n_tool_calls": pl.Int64, "n_failed": pl.Int64})
