"""A software-engineering agent fixing GitHub issues in Python repositories with mini-swe-agent (SWE-bench-like).

The agent works in a checkout of the repository at ``/testbed`` and its only action is ONE bash
command a turn. The records are mini-swe-agent trajectories (``trajectory_format:
"mini-swe-agent-1"``, format ``swe``): ``instance_id`` (``<org>__<repo>-<number>``, the question),
``arm``, ``sample_id``, ``correct`` (whether the patch resolved the issue), ``info``
(``exit_status`` ``Submitted`` or ``LimitsExceeded``, ``submission`` the ``git diff`` text or
null, ``model_stats``, ``mini_version``, ``config.model.model_name``) and ``messages``: the
system prompt, the task (``<pr_description>`` holding the issue text, then the fixed
``<instructions>``), then turns. Each assistant turn is ``THOUGHT: ...`` and one fenced
```` ```bash ```` command; the harness answers with a user message ``<returncode>N</returncode>``
and the ``<output>`` (an output of 10000 characters or more comes as ``<warning>``,
``<output_head>``, ``<elided_chars>``, ``<output_tail>``: a ``cat`` of a long module, a verbose
run of a big test file). The last command ``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git
add -A && git diff --cached`` submits: the harness's last message is the diff, which is also
``info.submission``. Every issue is one bug in one function of one module (an off-by-one loop,
``None`` not handled, a missing option key, a division by zero on an empty input, an ``int``
concatenated to a ``str``, a number with a thousands separator, a slice one short; :data:`BUGS`),
with an existing test that fails on it.

Seven planted strategies (commands without failures and optional steps; a *window* is a
``sed -n 'a,bp'`` / ``nl -ba f | sed -n 'a,bp'`` / ``awk`` / ``head | tail`` view of at most
about 40 lines, a *read* a ``cat`` / ``nl -ba`` of a whole file or of a chunk of 120 lines or
more):

=======================  ===================================================================
``reproduce_first``      writes a reproduction script from the issue's example and runs it
                         (one heredoc command, or the write and the run apart), a window at
                         the line the traceback names (the faulty line, for a wrong result),
                         the edit, the script again; then edge cases (the script rewritten
                         with a regular input too, and run: 0 to 4 times, :data:`_P_MORE`),
                         optionally the module's test file (:data:`_P_TESTS_AFTER`) and the
                         script removed (:data:`_P_CLEANUP`, when it lies in the repository)
``grep_to_edit``         ``grep -rn`` / ``git grep`` / ``find`` for the function, then 0 to 4
                         narrower ``grep -n`` in the module, a window at the definition, 0 to
                         4 windows elsewhere (the caller, the test, ``__init__``, another
                         function), the edit; nothing is run
``follow_failing_test``  runs the module's existing test file first (one test fails), a window
                         at the failing test, a window at the line its traceback names, 0 to 4
                         windows elsewhere, the edit, the failing test alone again; optionally
                         the whole file again (:data:`_P_RERUN_FILE`)
``read_whole_files``     reads two to six whole files or long chunks (the module, its test
                         file, the package ``__init__``, a module that calls the function, the
                         README; a long module in chunks or whole) before the edit; nothing
                         is run
``git_history``          ``git log`` of the module, ``git show`` / ``git log -p`` of the commit
                         that brought the bug, 0 to 4 other commits shown, optionally ``git
                         blame -L`` (:data:`_P_BLAME`), the edit, optionally a test run
                         (:data:`_P_GIT_TEST`)
``test_first``           optionally a look at the top of the test file (:data:`_P_PEEK_TESTS`),
                         writes a new regression test (appended to the test file or a new
                         file), runs it (it fails), a window at the line the traceback names,
                         0 to 4 windows elsewhere, the edit, the new test again (it passes);
                         optionally the whole test file (:data:`_P_RERUN_FILE`)
``blind_patch``          the edit straight from the issue, no exploration and no test;
                         optionally a second edit of the function's docstring
                         (:data:`_P_SECOND_EDIT`)
=======================  ===================================================================

Each "0 to 4" is a repeatable step that comes once more at :data:`_P_MORE`, then again at the
same rate. Commands per episode run from 1 to about 15 with the failures and optional steps,
overlapping between strategies.

Execution details vary inside every strategy and are drawn independently of it: the repository,
paths, modules, functions, the bug, line ranges, the file sizes (:data:`_P_BIG`), the way an edit
is made (``sed -i 's/old/new/'``, optionally followed by ``sed -n 'Np'``; a ``python - <<'EOF'``
heredoc that rewrites the file; ``cat <<'EOF' > module.py`` with the whole new file, for a short
module), the way a window is printed, the test runner's spelling (``python -m pytest``,
``pytest -q``, ``-x``, ``-k``, ``::test``, ``-v``: :data:`_P_VERBOSE`), the reproduction script
(its name, inside the repository or in ``/tmp``, its style), a ``cd /testbed && `` before every
command (:data:`_P_CD`), and the thought's wording.

Optional steps, at fixed rates whatever the arm and the strategy: an orientation command first
(``ls``, ``ls -la``, ``pwd`` or ``cd /testbed && ls``; :data:`_P_ORIENT`), and a look at the
change before submitting (``git diff``, ``git diff --stat``, ``git status``, or ``git status &&
git diff``; :data:`_P_REVIEW`); plus each strategy's own optional step named above.

Failures are execution, not strategy: every command fails with probability :data:`_P_FAIL` and
is followed at once by the corrected command: a typo'd program (``grpe`` -> ``bash: grpe:
command not found``, returncode 127) or git subcommand (``git: 'lgo' is not a git command``), a
wrong path (``No such file or directory``, returncode 1 or 2; ``fatal: no such path`` for ``git
blame``), a wrong ``cd /testbd`` before the command, a reproduction script with a
``SyntaxError``, a ``NameError`` or a ``ModuleNotFoundError``, a ``python`` edit heredoc with a
``NameError`` or a ``FileNotFoundError``, a ``sed`` expression error (``unterminated `s'
command``, ``missing command``), ``python -m pytets`` (``No module named``), a commit id that
does not exist (``fatal: bad object``); or, with probability :data:`_P_TIMEOUT`, the command
times out (an editor, ``python -i``, a search of ``/``, a test run of the whole package, a
pickaxe search of the whole history, ``rm -i``, ``git add -p``) and the harness kills it, then
the intended command follows. A test run with a failing test or a reproduction showing the bug
(returncode 1) is not a failure (every search finds something). At small fixed rates whatever
the strategy: a turn refused by the harness for its format (:data:`_P_REFUSE`, before any
command, the submitting one included: the assistant writes two fenced commands or none, the
harness answers ``Please always provide EXACTLY ONE action in triple backticks, found N
actions.`` and the assistant tries again), and an episode stopped by the step limit
(:data:`_P_LIMIT`: cut after a command's result at a step boundary in its second half, no
submission, ``exit_status`` ``LimitsExceeded``, ``correct`` false).

Success: a submitted patch resolves the issue at the strategy's rate (:data:`_RESOLVE`), random
within it (an unresolved patch holds a plausible wrong line, :data:`_P_WRONG_FIX`, or the right
line that fails elsewhere), so the success of a strategy is :data:`_SUCCESS` (``_RESOLVE`` times
``1 - _P_LIMIT``); the outcome never tells strategies apart. The ``rl`` arm differs from ``base``
only in its mixture (:data:`ARMS`).

The truth carries, beside ``strategy``, ``n_calls`` (commands the harness ran and answered,
failed and timed-out ones included; not the refused turns and not the submitting command),
``n_failures`` (planted failures and timeouts), ``n_refused`` (refused turns), ``submitted`` and
``correct``.

Written from scratch as a held-out world, without reference to how trajectories are segmented or
clustered.
"""
from __future__ import annotations

import ast
import difflib
import hashlib
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from mechanism.core.options import RandomState
from mechanism.datasets.worlds._base import World, pick, planted_world, word, world_generator

STRATEGIES = ("reproduce_first", "grep_to_edit", "follow_failing_test", "read_whole_files", "git_history",
              "test_first", "blind_patch")
ARMS = {
    "base": {"reproduce_first": 0.12, "grep_to_edit": 0.22, "follow_failing_test": 0.12, "read_whole_files": 0.18,
             "git_history": 0.08, "test_first": 0.06, "blind_patch": 0.22},
    "rl": {"reproduce_first": 0.26, "grep_to_edit": 0.14, "follow_failing_test": 0.18, "read_whole_files": 0.08,
           "git_history": 0.06, "test_first": 0.20, "blind_patch": 0.08},
}
#: the chance that an episode is stopped by the step limit (no submission), whatever the strategy
_P_LIMIT = 0.06
#: the chance that a submitted patch resolves the issue (random within the strategy)
_RESOLVE = {"reproduce_first": 0.62, "grep_to_edit": 0.45, "follow_failing_test": 0.56, "read_whole_files": 0.42,
            "git_history": 0.5, "test_first": 0.66, "blind_patch": 0.22}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {s: p * (1 - _P_LIMIT) for s, p in _RESOLVE.items()}
#: failures, per command: a planted failure (then the corrected command), or a timeout (then the intended one)
_P_FAIL = 0.10
_P_TIMEOUT = 0.025
#: a turn refused for its format (two fenced commands or none), before a command or the submission
_P_REFUSE = 0.04
#: optional steps, at fixed rates whatever the arm and the strategy
_P_ORIENT = 0.35  # ls / ls -la / pwd / cd /testbed && ls first
_P_REVIEW = 0.4  # git diff / git status before submitting
#: each strategy's own optional step
_P_TESTS_AFTER = 0.4  # reproduce_first: the test file after the fix
_P_CLEANUP = 0.5  # reproduce_first: rm the script (when it lies in the repository)
_P_MORE = 0.5  # a strategy's repeatable step once more (then again at this rate, at most four more)
_P_RERUN_FILE = 0.4  # follow_failing_test, test_first: the whole test file at the end
_P_BLAME = 0.6  # git_history: git blame -L
_P_GIT_TEST = 0.3  # git_history: a test run after the edit
_P_PEEK_TESTS = 0.5  # test_first: the top of the test file before writing the test
_P_SECOND_EDIT = 0.3  # blind_patch: the docstring edited too
#: execution details, drawn independently of the strategy
_P_CD = 0.3  # every command after "cd /testbed && "
_P_SPLIT_SCRIPT = 0.4  # the reproduction script written, then run, in two commands
_P_BIG = 0.3  # a task's module is long (a whole-file read is elided by the harness)
_P_BIG_SUITE = 0.3  # a task's test file collects many items (a verbose run is elided)
_P_VERBOSE = 0.25  # a test run with -v
_P_WRONG_FIX = 0.5  # an unresolved patch holds a wrong line (else the right one, failing elsewhere)

#: the bugs: the function's body (the faulty line at ``at``, the exception raised at ``raise_at``),
#: the fix and two plausible wrong edits, the error, the issue's input and the expected value
BUGS: dict[str, dict[str, Any]] = {
    "index": {"body": ("total = 0", "for i in range(len({v}) + 1):", "    total += {v}[i]", "return total"),
              "at": 1, "raise_at": 2, "fix": "for i in range(len({v})):",
              "wrong": ("for i in range(1, len({v}) + 1):", "for i in range(len({v}) - 1):"),
              "error": "IndexError: list index out of range", "arg": "[1, 2, 3]", "expected": "6",
              "normal": "[4, 5]", "normal_out": "9",
              "case": ("a non-empty list", "any list at all", "a plain list of numbers")},
    "none": {"body": ("if {v} is not None and not isinstance({v}, str):", "    {v} = str({v})",
                      "return {v}.strip().lower()"),
             "at": 2, "raise_at": 2, "fix": 'return ({v} or "").strip().lower()',
             "wrong": ("return str({v}).strip().lower()", "return {v}.strip().lower() if {v} else None"),
             "error": "AttributeError: 'NoneType' object has no attribute 'strip'", "arg": "None",
             "expected": '""', "normal": '"  MiXed "', "normal_out": "mixed",
              "case": ("`None`", "a missing value", "None instead of a string")},
    "key": {"body": ("options = options or {}", 'return options["{key}"]'),
            "at": 1, "raise_at": 1, "fix": 'return options.get("{key}", {default})',
            "wrong": ('return options.get("{key}")', 'return options.get("{key}".upper(), {default})'),
            "error": "KeyError: '{key}'", "arg": "[]", "expected": "{default}",
            "normal": '[], {"{key}": 5}', "normal_out": "5",
              "case": ("no options", "the default options", "options=None")},
    "zero": {"body": ("total = sum({v})", "return total / len({v})"),
             "at": 1, "raise_at": 1, "fix": "return total / len({v}) if {v} else 0.0",
             "wrong": ("return total // len({v})", "return total / (len({v}) or 0)"),
             "error": "ZeroDivisionError: division by zero", "arg": "[]", "expected": "0.0",
             "normal": "[2, 4]", "normal_out": "3.0",
              "case": ("an empty list", "no values", "an empty sequence")},
    "concat": {"body": ('label = "{prefix}" + {v}', "return label"),
               "at": 0, "raise_at": 0, "fix": 'label = "{prefix}" + str({v})',
               "wrong": ('label = "{prefix}" + {v} + ""', 'label = "{prefix}".join({v})'),
               "error": 'TypeError: can only concatenate str (not "int") to str', "arg": "7",
               "expected": '"{prefix}7"', "normal": '"42"', "normal_out": "{prefix}42",
              "case": ("an integer", "an int id", "a number")},
    "parse": {"body": ("value = int({v})", "return value"),
              "at": 0, "raise_at": 0, "fix": 'value = int({v}.replace(",", ""))',
              "wrong": ("value = int(float({v}))", "value = int({v}.strip())"),
              "error": "ValueError: invalid literal for int() with base 10: '1,000'", "arg": '"1,000"',
              "expected": "1000", "normal": '"42"', "normal_out": "42",
              "case": ("a number with a thousands separator", "'1,000'", "a comma in the number")},
    "slice": {"body": ('limit = (options or {}).get("limit", 3)', "return list({v})[: limit - 1]"),
              "at": 1, "raise_at": None, "fix": "return list({v})[:limit]",
              "wrong": ("return list({v})[1:limit]", "return list({v})[: limit + 1]"),
              "error": None, "arg": "[1, 2, 3, 4]", "expected": "[1, 2, 3]", "actual": "[1, 2]",
              "normal": "[1]", "normal_out": "[1]",
              "case": ("the default limit", "more items than the limit", "a list longer than the limit")},
}
#: (org, repo, package root, subpackages, test file layout, issue numbers)
REPOS = (
    ("astropy", "astropy", "astropy", ("io/fits", "units", "table", "modeling", "utils"),
     "{pkgdir}/tests/test_{mod}.py", (12000, 14999)),
    ("sympy", "sympy", "sympy", ("core", "simplify", "printing", "sets", "matrices"),
     "{pkgdir}/tests/test_{mod}.py", (18000, 24999)),
    ("pytest-dev", "pytest", "src/_pytest", ("", "config", "mark", "assertion"), "testing/test_{mod}.py",
     (5000, 11999)),
    ("scikit-learn", "scikit-learn", "sklearn", ("utils", "preprocessing", "metrics", "linear_model"),
     "{pkgdir}/tests/test_{mod}.py", (10000, 26999)),
    ("sphinx-doc", "sphinx", "sphinx", ("util", "domains", "ext/autodoc", "writers", "builders"),
     "tests/test_{mod}.py", (7000, 11999)),
    ("matplotlib", "matplotlib", "lib/matplotlib", ("", "axes", "backends", "tri"),
     "lib/matplotlib/tests/test_{mod}.py", (20000, 26999)),
    ("psf", "requests", "requests", ("",), "tests/test_{mod}.py", (1000, 6999)),
    ("pylint-dev", "pylint", "pylint", ("checkers", "config", "reporters", "utils"), "tests/test_{mod}.py",
     (4000, 8999)),
    ("pydata", "xarray", "xarray", ("core", "backends", "coding", "plot"), "xarray/tests/test_{mod}.py",
     (3000, 7999)),
    ("mwaskom", "seaborn", "seaborn", ("", "_core", "_stats"), "tests/test_{mod}.py", (2000, 3499)),
    ("pallets", "flask", "src/flask", ("", "json", "sansio"), "tests/test_{mod}.py", (4000, 5999)),
)
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"
SYSTEM = (
    "You are a helpful assistant that can interact with a computer.\n\n"
    "Your response must contain exactly ONE bash code block with ONE command (or commands connected with && or ||).\n"
    "Include a THOUGHT section before your command where you explain your reasoning process.\n"
    "Format your response as shown in <format_example>.\n\n<format_example>\n"
    "Your reasoning and analysis here. Explain why you want to perform the action.\n\n"
    "```bash\nyour_command_here\n```\n</format_example>\n\n"
    "Failure to follow these rules will cause your response to be rejected.")
INSTRUCTIONS = (
    "<instructions>\n# Task Instructions\n\n## Overview\n\n"
    "You're a software engineer interacting continuously with a computer by submitting commands.\n"
    "You'll be helping implement necessary changes to meet requirements in the PR description.\n"
    "Your task is specifically to make changes to non-test files in the current directory in order to fix the "
    "issue described in the PR description in a way that is general and consistent with the codebase.\n\n"
    "IMPORTANT: This is an interactive process where you will think and issue ONE command, see its result, "
    "then think and issue your next command.\n\nFor each response:\n\n"
    "1. Include a THOUGHT section explaining your reasoning and what you're trying to accomplish\n"
    "2. Provide exactly ONE bash command to execute\n\n## Important Boundaries\n\n"
    "- MODIFY: Regular source code files in /testbed (this is the working directory for all your subsequent "
    "commands)\n- DO NOT MODIFY: Tests, configuration files (pyproject.toml, setup.cfg, etc.)\n\n"
    "## Recommended Workflow\n\n1. Analyze the codebase by finding and reading relevant files\n"
    "2. Create a script to reproduce the issue\n3. Edit the source code to resolve the issue\n"
    "4. Verify your fix works by running your script again\n5. Test edge cases to ensure your fix is robust\n\n"
    "## Command Execution Rules\n\nYou are operating in an environment where\n\n1. You write a single command\n"
    "2. The system executes that command in a subshell\n3. You see the result\n4. You write your next command\n\n"
    "Each response should include:\n\n1. A **THOUGHT** section where you explain your reasoning and plan\n"
    "2. A single bash code block with your command\n\nFormat your responses like this:\n\n<format_example>\n"
    "THOUGHT: Here I explain my reasoning process, analysis of the current situation,\n"
    "and what I'm trying to accomplish with the command below.\n\n```bash\nyour_command_here\n```\n"
    "</format_example>\n\nCommands must be specified in a single bash code block:\n\n```bash\nyour_command_here\n"
    "```\n\n**CRITICAL REQUIREMENTS:**\n\n- Your response SHOULD include a THOUGHT section explaining your "
    "reasoning\n- Your response MUST include EXACTLY ONE bash code block\n- This bash block MUST contain EXACTLY "
    "ONE command (or a set of commands connected with && or ||)\n- If you include zero or multiple bash blocks, "
    "or no command at all, YOUR RESPONSE WILL FAIL\n- Do NOT try to run multiple independent commands in separate "
    "blocks in one response\n- Directory or environment variable changes are not persistent. Every action is "
    "executed in a new subshell.\n- However, you can prefix any action with `MY_ENV_VAR=MY_VALUE cd /path/to/"
    "working/dir && ...` or write/load environment variables from files\n\n## Submission\n\n"
    "When you've completed your work (reading, editing, testing), and cannot make further progress\n"
    "issue exactly the following command:\n\n```bash\n" + SUBMIT + "\n```\n\n"
    "This command will submit your work.\nYou cannot continue working (reading, editing, testing) in any way on "
    "this task after submitting.\n</instructions>")
FORMAT_ERROR = (
    "Please always provide EXACTLY ONE action in triple backticks, found {n} actions.\n\n"
    "Please format your action in triple backticks as shown in <response_example>.\n\n<response_example>\n"
    "Here are some thoughts about why you want to perform the action.\n\n```bash\n<action>\n```\n"
    "</response_example>\n\nIf you have completed your assignment, please consult the first message about how to\n"
    "submit your solution (you will not be able to continue working on this task after that).")
TIMEOUT = ("The last command <command>{command}</command> timed out and has been killed.\n"
           "The output of the command was:\n <output>\n\n</output>\n"
           "Please try another command and make sure to avoid those requiring interactive input.")
_WARNING = ("<warning>\nThe output of your last command was too long.\n"
            "Please try a different command that produces less output.\n</warning>")
#: an output this long or longer is shown as its head and tail
LONG_OUTPUT = 10000
_MODELS = ("hosted_vllm/qwen2.5-coder-32b-swe-{arm}", "openai/swe-policy-14b-{arm}")

_VERBS = ("parse", "load", "format", "merge", "resolve", "normalize", "render", "collect", "split", "encode",
          "convert", "build", "clean", "summarize")
_NOUNS = ("rows", "config", "header", "record", "token", "label", "entry", "schema", "payload", "units", "column",
          "node", "frame", "series")
_TYPOS = {"grep": ("grpe", "gerp"), "sed": ("sde", "esd"), "cat": ("cta", "act"), "nl": ("nll", "lnl"),
          "python": ("pyhton", "pytohn"), "python3": ("pyhton3",), "pytest": ("pytset", "pyetst"),
          "git": ("gti", "gi"), "ls": ("sl", "lls"), "find": ("fnid", "fidn"), "awk": ("akw",),
          "tail": ("tial",), "head": ("haed",), "rm": ("mr",), "pwd": ("pdw",), "echo": ("ecoh",)}
_GIT_TYPOS = {"log": "lgo", "show": "shwo", "blame": "blaem", "diff": "dfif", "status": "stauts", "grep": "gerp"}
_AUTHORS = ("Marten van Kerkwijk", "Thomas Robitaille", "Aaron Meurer", "Bruno Oliveira", "Olivier Grisel",
            "Takeshi KOMIYA", "Elliott Sales de Andrade", "Pierre Sassoulas", "Deepak Cherian", "David Lord")
_HISTORY = ("Refactor {func} for readability", "Simplify {func}", "Speed up {func}", "Clean up {mod} helpers",
            "Drop Python 3.7 support", "Fix typos in {mod} docstrings", "Add type hints to {mod}",
            "Use f-strings in {mod}", "Deprecate the old {noun} API", "Merge pull request from {user}/{branch}")


def _fill(text: str, **values: Any) -> str:
    """``text`` with each ``{key}`` replaced (other braces left alone, unlike ``str.format``)."""
    for key, value in values.items():
        text = text.replace("{" + key + "}", str(value))
    return text


# -- the tasks ------------------------------------------------------------------------------------
def _filler(rng: np.random.Generator, used: set[str]) -> list[str]:
    """A helper function of the module (never named like another one)."""
    while (fname := f"_{word(rng)}_{pick(rng, _NOUNS)}") in used:
        pass
    used.add(fname)
    arg, kw = pick(rng, ("value", "item", "text", "key", "obj")), pick(rng, ("default", "fallback", "missing"))
    step = pick(rng, (f"{arg} = {arg}.copy() if hasattr({arg}, 'copy') else {arg}",
                      f"if isinstance({arg}, (list, tuple)):\n    return type({arg})(x for x in {arg})",
                      f"{arg} = str({arg}).strip()", f"for part in str({arg}).split(','):\n    {kw} = part"))
    doc = pick(rng, ("Return a normalised copy.", "Internal helper.", f"Return ``{arg}`` or ``{kw}``.",
                     "Small utility kept for backwards compatibility."))
    return [f"def {fname}({arg}, {kw}=None):", f'    """{doc}"""', f"    if {arg} is None:", f"        return {kw}",
            *(f"    {x}" for x in step.split("\n")), f"    return {arg}", "", ""]


def _module(rng: np.random.Generator, t: dict, bug: dict, fill: dict, big: bool) -> None:
    """The module's lines, with the function and its faulty line's numbers."""
    used: set[str] = set()
    lines = [f'"""{pick(rng, ("Utilities for", "Helpers to handle", "Functions that deal with"))} '
             f'{t["mod"].replace("_", " ")}."""', "", pick(rng, ("import os", "import re", "import warnings")),
             pick(rng, ("from collections import OrderedDict", "import functools", "import itertools")), "", ""]
    n_before, n_after = (int(rng.integers(25, 45)), int(rng.integers(20, 35))) if big else \
        (int(rng.integers(1, 7)), int(rng.integers(1, 5)))
    for _ in range(n_before):
        lines += _filler(rng, used)
    t["def_line"] = len(lines) + 1
    t["doc"] = pick(rng, ("Return the combined value.", f"Convert ``{t['v']}`` for display.",
                          f"Compute the {pick(rng, _NOUNS)} of ``{t['v']}``."))
    body = [_fill(x, **fill) for x in bug["body"]]
    lines += [f"def {t['func']}({t['v']}, options=None):", f'    """{t["doc"]}"""', *(f"    {x}" for x in body),
              "", ""]
    for _ in range(n_after):
        lines += _filler(rng, used)
    t["line"] = t["def_line"] + 2 + bug["at"]
    t["raise_line"] = t["def_line"] + 2 + (bug["raise_at"] if bug["raise_at"] is not None else bug["at"])
    t["raise_text"] = lines[t["raise_line"] - 1].strip()
    t["files"][t["src"]] = lines[:-2] if lines[-2:] == ["", ""] else lines


def _tests(rng: np.random.Generator, t: dict) -> None:
    """The module's test file, and the items a run of it collects (one fails on the bug)."""
    lines = ["import pytest", "", f"from {t['modpath']} import {t['func']}", "", ""]
    items: list[str] = []
    big = rng.random() < _P_BIG_SUITE
    names = [f"test_{t['func']}_basic", *(f"test_{word(rng)}_{pick(rng, _NOUNS)}" for _ in range(int(rng.integers(
        3, 8))))]
    failing = f"test_{t['func']}_{pick(rng, ('empty', 'none', 'regression', 'edge_case', 'default'))}"
    spot = int(rng.integers(1, len(names) + 1))
    names = list(dict.fromkeys([*names[:spot], failing, *names[spot:]]))
    for test in names:
        if test == failing:
            lines += [f"def {test}():", f"    assert {t['func']}({t['arg']}) == {t['expected']}", "", ""]
            t["test_def"], t["test_line"] = len(lines) - 3, len(lines) - 2
            items.append(test)
            continue
        k = int(rng.integers(15, 45)) if big else int(rng.integers(1, 5))
        if k > 1:
            lines.append(f'@pytest.mark.parametrize("case", range({k}))')
            items += [f"{test}[{i}]" for i in range(k)]
        else:
            items.append(test)
        lines += [f"def {test}({'case' if k > 1 else ''}):", f"    assert {t['func']} is not None", "", ""]
    t["files"][t["test_path"]] = lines[:-2]
    t.update(test_name=failing, items=items)


def _history(rng: np.random.Generator, t: dict) -> None:
    """The module's commits (newest first); one of them brought the faulty line."""
    n = int(rng.integers(4, 9))
    shas = ["".join("0123456789abcdef"[int(i)] for i in rng.integers(0, 16, size=40)) for _ in range(n)]
    days = sorted((f"20{int(rng.integers(19, 24))}-{int(rng.integers(1, 13)):02d}-{int(rng.integers(1, 29)):02d}"
                   for _ in range(n)), reverse=True)
    commits = []
    for sha, day in zip(shas, days):
        msg = _fill(pick(rng, _HISTORY[3:]), func=t["func"], mod=t["mod"], noun=pick(rng, _NOUNS),
                    user=word(rng), branch=f"{pick(rng, ('fix', 'feat', 'maint'))}-{word(rng)}")
        commits.append({"sha": sha, "author": pick(rng, _AUTHORS), "day": day, "msg": msg})
    culprit = int(rng.integers(0, min(3, n)))
    commits[culprit]["msg"] = _fill(pick(rng, _HISTORY[:3]), func=t["func"], mod=t["mod"])
    t.update(history=commits, culprit=commits[culprit])


def _others(rng: np.random.Generator, t: dict) -> None:
    """The package ``__init__`` and a module that calls the function; the repository's top level."""
    pkgdir, rel = t["pkgdir"], t["modpath"].rsplit(".", 1)[-1]
    t["init"] = f"{pkgdir}/__init__.py"
    t["files"][t["init"]] = [f'"""{pick(rng, ("The", "Public API of the"))} {t["modpath"].rsplit(".", 1)[0]} '
                             'package."""', "", f"from .{rel} import {t['func']}", "",
                             f'__all__ = ["{t["func"]}"]']
    t["caller"] = f"{pkgdir}/{pick(rng, ('api', 'core', 'pipeline', 'io', 'cli'))}.py"
    t["files"][t["caller"]] = [f"from .{rel} import {t['func']}", "", "",
                               f"class {word(rng).capitalize()}Reader:", "    def __init__(self, options=None):",
                               "        self.options = options or {}", "",
                               f"    def read(self, {t['v']}):",
                               f"        return {t['func']}({t['v']}, self.options)"]
    t["files"]["README.rst"] = [t["repo"], "=" * len(t["repo"]), "",
                                f"{pick(rng, ('A Python library for', 'Tools for', 'The package for'))} "
                                f"{pick(rng, _NOUNS)} {pick(rng, ('handling', 'processing', 'analysis'))}.", "",
                                "Installation", "------------", "", "    pip install -e .", "", "Testing", "-------",
                                "", "    python -m pytest"]
    top = t["src"].split("/")[0]
    extra = ("setup.py", "setup.cfg", "pyproject.toml", "tox.ini", "LICENSE", "CHANGES.rst", "doc",
             "examples", "conftest.py")
    t["top"] = sorted({top, t["test_path"].split("/")[0], "README.rst",
                       *(extra[int(i)] for i in rng.choice(len(extra), size=int(rng.integers(5, 9)), replace=False))})
    t["dirs"] = {top, t["test_path"].split("/")[0], "doc", "examples"}


_TITLES = {
    "error": ("`{func}` raises {errname} for {case}", "{errname} in {modpath}.{func} with {case}",
              "{func}() fails on {case}", "Calling {func} with {case} crashes"),
    "slice": ("`{func}` drops one item with {case}", "{func}() returns one element too few",
              "{modpath}.{func} truncates its result with {case}"),
}
_INTROS = ("I ran into this while upgrading to {pkg} {version}.", "Minimal example below.",
           "This used to work in an older release, I think.", "Found while writing a downstream test suite.",
           "Not sure whether this is intended, but it looks like a bug to me.", "")


def _issue(rng: np.random.Generator, t: dict) -> str:
    """The issue's text: a title, the example, what happens and what was expected."""
    values = dict(func=t["func"], errname=(t["error"] or "").split(":")[0], case=t["case"], modpath=t["modpath"],
                  pkg=t["repo"], version=t["version"])
    title = _fill(pick(rng, _TITLES["error" if t["error"] else "slice"]), **values)
    example = f"```python\n>>> from {t['modpath']} import {t['func']}\n>>> {t['func']}({t['arg']})\n"
    if t["error"]:
        example += (f"Traceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\n"
                    f"  File \"/usr/lib/python3/site-packages/{t['src'].removeprefix('src/').removeprefix('lib/')}\""
                    f", line {t['raise_line']}, in {t['func']}\n    {t['raise_text']}\n{t['error']}\n```")
    else:
        example += f"{t['actual']}\n```"
    expected = pick(rng, ("**Expected**: `{e}`", "I would expect `{e}` here.", "Expected result: `{e}`"))
    intro = _fill(pick(rng, _INTROS), **values)
    heading = pick(rng, ("", "### Description\n\n", "#### Bug report\n\n"))
    return (f"{title}\n\n{heading}{intro + chr(10) * 2 if intro else ''}{example}\n\n"
            f"{_fill(expected, e=t['expected'])}\n\n"
            f"{pick(rng, ('Versions', 'Environment', 'System'))}: {t['repo']} {t['version']}, Python {t['py']}")


def _task(rng: np.random.Generator, repo: tuple) -> dict:
    org, name_, root, subs, test_layout, numbers = repo
    sub = pick(rng, subs)
    pkgdir = f"{root}/{sub}" if sub else root
    mod = pick(rng, (f"{pick(rng, _NOUNS)}{pick(rng, ('', 's', '_utils', '_io', '_base'))}", word(rng)))
    src = f"{pkgdir}/{mod}.py"
    modpath = src.removeprefix("src/").removeprefix("lib/").removesuffix(".py").replace("/", ".")
    bug_kind = pick(rng, tuple(BUGS))
    bug = BUGS[bug_kind]
    fill = {"v": pick(rng, ("items", "values", "rows", "data", "value", word(rng))),
            "key": pick(rng, ("timeout", "encoding", "delimiter", "precision", word(rng))),
            "default": pick(rng, ("0", '""', "30", "[]")), "prefix": pick(rng, ("id-", "#", "item_", "key:"))}
    t: dict[str, Any] = {
        "org": org, "repo": name_, "number": int(rng.integers(*numbers)), "root": root, "pkgdir": pkgdir, "mod": mod,
        "src": src, "modpath": modpath, "func": f"{pick(rng, _VERBS)}_{pick(rng, _NOUNS)}", "v": fill["v"],
        "bug": bug_kind, "buggy": _fill(bug["body"][bug["at"]], **fill).strip(), "fix": _fill(bug["fix"], **fill),
        "wrong": tuple(_fill(w, **fill) for w in bug["wrong"]),
        "error": _fill(bug["error"], **fill) if bug["error"] else None, "arg": bug["arg"],
        "expected": _fill(bug["expected"], **fill), "actual": bug.get("actual"), "case": pick(rng, bug["case"]),
        "normal": _fill(bug["normal"], **fill), "normal_out": _fill(bug["normal_out"], **fill),
        "test_path": _fill(test_layout, pkgdir=pkgdir, mod=mod), "files": {},
        "version": f"{int(rng.integers(1, 8))}.{int(rng.integers(0, 15))}.{int(rng.integers(0, 5))}",
        "py": f"3.{int(rng.integers(8, 12))}.{int(rng.integers(1, 20))}",
        "pytest": f"{int(rng.integers(7, 9))}.{int(rng.integers(0, 5))}.{int(rng.integers(0, 4))}",
        "cfg": pick(rng, ("setup.cfg", "pyproject.toml", "tox.ini", "pytest.ini"))}
    _module(rng, t, bug, fill, bool(rng.random() < _P_BIG))
    _tests(rng, t)
    _history(rng, t)
    _others(rng, t)
    t["instance_id"] = f"{org}__{name_}-{t['number']}"
    t["issue"] = _issue(rng, t)
    t["text"] = (f"<pr_description>\nConsider the following PR description:\n{t['issue']}\n</pr_description>\n\n"
                 f"{INSTRUCTIONS}")
    return t


# -- what commands print --------------------------------------------------------------------------
def _blob(lines: list[str]) -> str:
    data = ("\n".join(lines) + "\n").encode()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()[:7]


def _hunks(old: list[str], new: list[str], path: str, created: bool) -> list[str]:
    """Unified hunks as git writes them, each header with its function context."""
    out = []
    for line in list(difflib.unified_diff(old, new, lineterm="", n=3))[2:]:
        m = re.match(r"@@ -(\d+)", line)
        if m and not created:
            start = int(m.group(1))
            context = next((x for x in reversed(old[:max(start - 1, 0)]) if re.match(r"[A-Za-z_$]", x)), "")
            line = f"{line} {context[:80]}".rstrip()
        out.append(line)
    return out


def _diff(orig: dict[str, list[str]], files: dict[str, list[str]], *, staged: bool) -> str:
    """``git diff`` (tracked files) or, ``staged``, ``git diff --cached`` after ``git add -A`` (new files too)."""
    parts = []
    for path in sorted(set(files) | set(orig)):
        if path.startswith("/") or files.get(path) == orig.get(path) or path not in files:
            continue
        created = path not in orig
        if created and not staged:
            continue
        old, new = orig.get(path, []), files[path]
        head = [f"diff --git a/{path} b/{path}"]
        if created:
            head += ["new file mode 100644", f"index 0000000..{_blob(new)}", "--- /dev/null", f"+++ b/{path}"]
        else:
            head += [f"index {_blob(old)}..{_blob(new)} 100644", f"--- a/{path}", f"+++ b/{path}"]
        parts.append("\n".join(head + _hunks(old, new, path, created)) + "\n")
    return "".join(parts)


def _status(orig: dict[str, list[str]], files: dict[str, list[str]]) -> str:
    changed = [p for p in sorted(orig) if files.get(p) != orig[p]]
    new = [p for p in sorted(files) if p not in orig and not p.startswith("/")]
    out = ["On branch main"]
    if changed:
        out += ["Changes not staged for commit:", '  (use "git add <file>..." to update what will be committed)',
                '  (use "git restore <file>..." to discard changes in working directory)',
                *(f"\tmodified:   {p}" for p in changed), ""]
    if new:
        out += ["Untracked files:", '  (use "git add <file>..." to include in what will be committed)',
                *(f"\t{p}" for p in new), ""]
    out.append('no changes added to commit (use "git add" and/or "git commit -a")' if changed or new
               else "nothing to commit, working tree clean")
    return "\n".join(out)


def _stat(orig: dict[str, list[str]], files: dict[str, list[str]]) -> str:
    rows, plus, minus = [], 0, 0
    for path in sorted(p for p in orig if files.get(p) != orig[p]):
        d = list(difflib.unified_diff(orig[path], files[path], lineterm="", n=0))[2:]
        a, r = sum(x.startswith("+") for x in d), sum(x.startswith("-") for x in d)
        plus, minus = plus + a, minus + r
        rows.append(f" {path} | {a + r} {'+' * a}{'-' * r}")
    n = len(rows)
    return "\n".join([*rows, f" {n} file{'s' * (n != 1)} changed, {plus} insertion{'s' * (plus != 1)}(+), "
                              f"{minus} deletion{'s' * (minus != 1)}(-)"])


def _numbered(lines: list[str], a: int) -> str:
    return "\n".join(f"{i:6d}\t{x}" for i, x in enumerate(lines, start=a))


def _grep(files: dict[str, list[str]], pattern: str, paths: list[str], prefix: str = "", *,
          with_name: bool = True) -> str:
    hits = []
    for path in paths:
        for i, line in enumerate(files[path], start=1):
            if pattern in line:
                hits.append(f"{prefix}{path}:{i}:{line}" if with_name else f"{i}:{line}")
    return "\n".join(hits)


def _value(literal: str) -> Any:
    return ast.literal_eval(literal)


def _pytest(rng: np.random.Generator, t: dict, path: str, items: list[str], failing: str | None, *,
            verbose: bool, quiet: bool, deselected: int, where: tuple[int, str]) -> str:
    """A pytest session over ``items`` of ``path`` (``failing``: the one that fails on the bug, at
    ``where``: the line of its assert and the assert)."""
    n = len(items)
    secs = f"{float(rng.uniform(0.05, 3.5)):.2f}s"
    summary = (f"1 failed, {n - 1} passed" if n > 1 else "1 failed") if failing else f"{n} passed"
    summary += f", {deselected} deselected in {secs}" if deselected else f" in {secs}"
    out = []
    if not quiet:
        out += ["=" * 29 + " test session starts " + "=" * 30,
                f"platform linux -- Python {t['py']}, pytest-{t['pytest']}, pluggy-1.5.0"
                + (" -- /opt/miniconda3/envs/testbed/bin/python" if verbose else ""),
                *(["cachedir: .pytest_cache"] if verbose else []), "rootdir: /testbed", f"configfile: {t['cfg']}",
                f"collected {n + deselected} item{'s' * (n + deselected != 1)}"
                + (f" / {deselected} deselected / {n} selected"
                                                       if deselected else ""), ""]
    if verbose:
        out += [f"{path}::{x} {'FAILED' if x == failing else 'PASSED'}".ljust(73) + f" [{100 * (i + 1) // n:3d}%]"
                for i, x in enumerate(items)]
    else:
        dots = "".join("F" if x == failing else "." for x in items)
        out += [(dots if quiet else f"{path} {dots}").ljust(73) + " [100%]"]
    if failing:
        out += ["", "=" * 35 + " FAILURES " + "=" * 35, f"{'_' * 20} {failing} {'_' * 20}", "",
                f"    def {failing}():", f">       {where[1]}"]
        if t["error"]:
            out += ["", f"{path}:{where[0]}: ", "_ " * 40, "",
                    f"{t['src']}:{t['raise_line']}: in {t['func']}", f"    {t['raise_text']}", f"E   {t['error']}"]
            reason = t["error"]
        else:
            out += [f"E       assert {t['actual']} == {t['expected']}", f"E        +  where {t['actual']} = "
                    f"{t['func']}({t['arg']})", "", f"{path}:{where[0]}: AssertionError"]
            reason = f"assert {t['actual']} == {t['expected']}"
        out += ["=" * 28 + " short test summary info " + "=" * 27, f"FAILED {path}::{failing} - {reason}"]
    out.append(summary if quiet else f"{'=' * 25} {summary} {'=' * 25}")
    return "\n".join(out)


def _observation(rc: int, output: str) -> str:
    """The harness's reply to a command (its head and tail only when it is long)."""
    if len(output) < LONG_OUTPUT:
        return f"<returncode>{rc}</returncode>\n<output>\n{output}\n</output>"
    return (f"<returncode>{rc}</returncode>\n{_WARNING}<output_head>\n{output[:5000]}\n</output_head>\n"
            f"<elided_chars>\n{len(output) - LONG_OUTPUT} characters elided\n</elided_chars>\n"
            f"<output_tail>\n{output[-5000:]}\n</output_tail>")


# -- failures -------------------------------------------------------------------------------------
def _misspell(rng: np.random.Generator, w: str) -> str:
    if w in _TYPOS:
        return pick(rng, _TYPOS[w])
    i = int(rng.integers(0, max(len(w) - 1, 1)))
    out = w[:i] + w[i + 1:i + 2] + w[i:i + 1] + w[i + 2:]
    return out if out != w else w + w[-1]


def _typo(rng: np.random.Generator, cmd: str) -> tuple[str, str, str, int]:
    """The command with its program (the one whose status the shell returns) or git subcommand misspelt."""
    lines = cmd.split("\n")
    if len(lines) > 1 and lines[-1] not in ("EOF", "PY"):  # a heredoc, then the command that runs
        head, target = "\n".join(lines[:-1]) + "\n", lines[-1]
    elif cmd.startswith("cd ") and " && " in lines[0]:
        i = cmd.index(" && ") + 4
        head, target = cmd[:i], cmd[i:]
    elif len(lines) == 1 and " | " in cmd:
        i = cmd.rindex(" | ") + 3
        head, target = cmd[:i], cmd[i:]
    else:
        head, target = "", cmd
    prog, sep, rest = target.partition(" ")
    if prog == "git" and rest and rng.random() < 0.5:
        sub, sep2, tail = rest.partition(" ")
        bad = _GIT_TYPOS.get(sub, sub + "s")
        return ("git", f"{head}git {bad}{sep2}{tail}",
                f"git: '{bad}' is not a git command. See 'git --help'.\n\nThe most similar command is\n\t{sub}", 1)
    bad = _misspell(rng, prog)
    return "typo", f"{head}{bad}{sep}{rest}", f"bash: {bad}: command not found", 127


def _bad_folder(path: str) -> str:
    """``path`` in a folder that does not exist (where a redirection cannot write)."""
    head, _, tail = path.rpartition("/")
    return f"{head}s/{tail}" if head else f"scripts/{tail}"


def _bad_path(rng: np.random.Generator, path: str) -> str:
    head, _, tail = path.rpartition("/")
    options = [f"{head}s/{tail}" if head else f"src/{tail}", path.replace(".py", "s.py"),
               tail if head else f"lib/{path}", path.replace("_", "", 1) if "_" in path else f"{path}x"]
    return pick(rng, tuple(o for o in options if o != path))


# -- the agent ------------------------------------------------------------------------------------
_SAY = {
    "orient": ("Let me start by looking at the repository structure.", "First, where am I and what is here?",
               "Let me get oriented in /testbed before anything else.", "I'll take a quick look at the working tree."),
    "script": ("I'll write a small script reproducing the example from the PR description and run it.",
               "Before touching the code, let me reproduce the bug with a minimal script.",
               "Let me confirm the reported behaviour of `{func}` with a reproduction script.",
               "First I want to see the failure myself, so I'll turn the issue's example into a script."),
    "script_write": ("Let me write a reproduction script based on the issue.",
                     "I'll create a script that calls `{func}` the way the issue does.",
                     "Writing a minimal reproducer first."),
    "script_run": ("Now let me run the reproduction script.", "Running the script to see the error.",
                   "Let me execute it."),
    "script_after": ("Let me rerun the reproduction script to confirm the fix.",
                     "Now the script should print `{expected}`. Let me check.",
                     "Verifying the fix with the reproduction script."),
    "search": ("Let me find where `{func}` is defined.", "I'll search the code base for `{func}`.",
               "I need the implementation of `{func}`; a search should find it quickly.",
               "Where does `{func}` live? Let me search for it."),
    "narrow": ("Let me narrow it down to the relevant lines of {src}.", "Now the occurrences inside {src}.",
               "Let me list the matching lines in the module itself."),
    "window": ("Let me look at the code around line {line} of {path}.", "Let me view the definition in {path}.",
               "Let me print the relevant lines of {path}.", "Let me see the implementation near line {line}."),
    "window_tb": ("The traceback points to {path}:{line}. Let me view that region.",
                  "Let me look at the line the error comes from, {path}:{line}, with some context.",
                  "The failure is raised near line {line} of {path}; let me print those lines.",
                  "Let me see the code around line {line} of {path}."),
    "test_window": ("Let me read the failing test `{test_name}` to see what it expects.",
                    "What exactly does `{test_name}` check? Let me look at it.",
                    "Let me view the failing test in {path}."),
    "peek": ("Let me look at how the existing tests in {path} are written.",
             "I'll check the style of the test module first.", "Let me see the top of the test file."),
    "read": ("Let me read {path} to understand the module before changing anything.",
             "I'll read {path} first.", "Let me go through {path}.", "I want the full picture of {path}."),
    "edit": ("The problem is the line `{buggy}`. I'll change it to handle this input.",
             "I'll fix `{func}` so that it no longer fails on {case}.",
             "Now I know what to change. Let me patch {src}.", "Let me apply a minimal fix in {src}."),
    "edit_doc": ("Let me also update the docstring of `{func}` to mention this case.",
                 "I'll document the behaviour in the docstring too."),
    "tests_first": ("Let me run the existing tests for this module first to see what fails.",
                    "I'll start from the test suite: which tests in {path} fail?",
                    "Let me run {path} to see the current failures."),
    "tests_one": ("Let me run the failing test again.", "Now `{test_name}` should pass. Checking.",
                  "Re-running the test that failed."),
    "tests_file": ("Let me run the whole test file to make sure nothing else broke.",
                   "Let me run the module's tests to check for regressions.", "Running all the tests in {path}."),
    "tests_new": ("Let me run the new test; it should fail before the fix.",
                  "The new test must fail now. Let me confirm.", "Running the regression test I just wrote."),
    "tests_new_after": ("Now the regression test should pass.", "Let me run the new test again after the fix.",
                        "Checking the regression test."),
    "write_test": ("I'll add a regression test for this issue before fixing it.",
                   "Let me write a test that captures the reported behaviour first.",
                   "Test first: a new test for `{func}` with {case}."),
    "git_log": ("Let me check the recent history of {src}; this may be a regression.",
                "This sounds like it used to work. Let me look at the git log of the module.",
                "Let me see which commits touched {src} recently."),
    "git_show": ("Let me see what commit {sha} changed.", "The commit `{msg}` looks suspicious. Let me inspect it.",
                 "Let me look at the diff of that commit.", "Commit {sha} may be related; let me check it."),
    "elsewhere": ("Let me also look at {path} around line {line}.", "How is it used? Let me check {path}.",
                  "Let me look at one more place, {path}:{line}.", "I want a bit more context from {path}."),
    "edge": ("Let me also check that a regular input still works.",
             "Let me try the reported input and a normal one to make sure the fix is general.",
             "A quick edge-case check with the script.", "Let me extend the script with another case."),
    "blame": ("Let me check which commit last touched these lines.", "git blame on the function should tell me more.",
              "Let me blame the lines around {line}."),
    "cleanup": ("Let me remove the reproduction script now that the fix is verified.",
                "Cleaning up the temporary script.", "The script is no longer needed; removing it."),
    "review": ("Let me review my changes before submitting.", "Checking the diff once more.",
               "Let me look at what I changed.", "Final check of the working tree."),
    "submit": ("The fix is in place. Submitting.", "I'm confident in the change; let me submit it.",
               "Everything looks good. Submitting the patch.", "Done. Submitting my changes."),
}
_AND = ("", "", "", "That will make the next step clearer.", "I want to be careful here.", "One step at a time.",
        "Keeping it simple.")
_RETRY = {
    "typo": ("I mistyped the command. Running it again.", "Typo in the program name; fixing it.",
             "Oops, command not found. Let me correct the typo."),
    "git": ("Wrong git subcommand. Let me fix it.", "Typo in the git command; retrying."),
    "module": ("Typo in the module name; running pytest again.", "It is pytest, not pytets. Again."),
    "path": ("Wrong path. Let me use the correct one.", "That file does not exist there; fixing the path.",
             "The path was wrong. Retrying with the right one."),
    "script": ("The script itself has a mistake. Let me fix it and run it again.",
               "My script is broken; rewriting it.", "Let me correct the script."),
    "sed": ("The sed expression was malformed. Let me fix it.", "Sed syntax error; retrying with a correct "
            "expression."),
    "timeout": ("That command hung. Let me use a non-interactive alternative.",
                "It timed out; I need a command that does not wait for input or scan everything.",
                "That took too long. Let me run something narrower."),
}


class _Agent:
    """One mini-swe-agent episode: steps (a command, with its planted failure or timeout and its
    refused turn), the files as they change, and the messages rendered from the steps."""

    def __init__(self, rng: np.random.Generator, task: dict, fix: str) -> None:
        self.rng, self.t, self.fix = rng, task, fix
        self.cd = bool(rng.random() < _P_CD)
        self.orig = task["files"]
        self.files = {p: list(x) for p, x in task["files"].items()}
        self.steps: list[list[tuple]] = []
        self.script: str | None = None
        self.style = 0
        self.new_test: tuple[str, str, int, str] | None = None

    def prefixed(self, cmd: str) -> str:
        return cmd if not self.cd or cmd.startswith("cd ") else f"cd /testbed && {cmd}"

    def say(self, key: str, **extra: Any) -> str:
        t = self.t
        values = {"func": t["func"], "src": t["src"], "line": t["line"], "buggy": t["buggy"], "case": t["case"],
                  "test_name": t["test_name"], "expected": t["expected"], "path": t["src"], **extra}
        first = _fill(pick(self.rng, _SAY[key]), **values)
        more = pick(self.rng, _AND)
        return f"{first} {more}" if more and key != "submit" else first

    def refused(self, thought: str, cmd: str) -> tuple:
        """A turn the harness refuses: two fenced commands, or none."""
        rng = self.rng
        if rng.random() < 0.5:
            other = pick(rng, ("git diff", "ls", f'grep -n "{self.t["func"]}" {self.t["src"]}', "python -m pytest -q"))
            then = pick(rng, ("After that I will run:", "Then:", "And next:"))
            return "refused", f"THOUGHT: {thought}\n\n```bash\n{cmd}\n```\n\n{then}\n\n```bash\n{other}\n```", 2
        first = cmd.split("\n", 1)[0]
        return ("refused", f"THOUGHT: {thought} {pick(rng, ('I will run `{c}` next.', 'Next step: `{c}`.', ''))}"
                .replace("{c}", first).rstrip(), 0)

    def run(self, key: str, cmd: str, output: str, rc: int = 0, *, faults: tuple = (), slow: str | None = None,
            **extra: Any) -> None:
        """The command; at :data:`_P_FAIL` first a failed version (a typo, or one of ``faults``:
        ``(kind, command, output, returncode)``), at :data:`_P_TIMEOUT` first ``slow``, timed out."""
        rng = self.rng
        thought = self.say(key, **extra)
        turns: list[tuple] = []
        if rng.random() < _P_REFUSE:
            turns.append(self.refused(thought, self.prefixed(cmd)))
        u = rng.random()
        if u < _P_FAIL:
            forms = [_typo(rng, cmd), *faults]
            if self.cd and not cmd.startswith("cd "):
                where = pick(rng, ("/testbd", "/tesbed", "/testbed/testbed"))
                forms.append(("path", f"cd {where} && {cmd}", f"bash: cd: {where}: No such file or directory", 1))
            kind, bad, bad_out, bad_rc = forms[int(rng.integers(len(forms)))]
            turns.append(("cmd", thought, self.prefixed(bad), bad_rc, bad_out, True))
            thought = pick(rng, _RETRY[kind])
        elif u < _P_FAIL + _P_TIMEOUT:
            turns.append(("timeout", thought, self.prefixed(slow or f"vim {self.t['src']}")))
            thought = pick(rng, _RETRY["timeout"])
        turns.append(("cmd", thought, self.prefixed(cmd), rc, output, False))
        self.steps.append(turns)

    # -- looking around -------------------------------------------------------------------------
    def orient(self) -> None:
        cmd = pick(self.rng, ("ls", "ls -la", "pwd", "cd /testbed && ls"))
        if cmd == "pwd":
            out = "/testbed"
        elif cmd == "ls -la":
            out = "\n".join([f"total {int(self.rng.integers(80, 400))}", "drwxr-xr-x 1 root root 4096 Jan  8 10:12 .",
                             "drwxr-xr-x 1 root root 4096 Jan  8 10:11 ..",
                             "drwxr-xr-x 8 root root 4096 Jan  8 10:12 .git",
                             *(f"{'drwxr-xr-x' if x in self.t['dirs'] else '-rw-r--r--'} 1 root root "
                               f"{4096 if x in self.t['dirs'] else int(self.rng.integers(300, 9000)):5d} "
                               f"Jan  8 10:12 {x}" for x in self.t["top"])])
        else:
            out = "\n".join(self.t["top"])
        self.run("orient", cmd, out, slow="ls -R /")

    def search(self, narrow: bool = False) -> None:
        t, rng, files = self.t, self.rng, self.files
        func, root, src = t["func"], t["root"], t["src"]
        under = [p for p in sorted(files) if p.startswith(root + "/")]
        if narrow:
            pattern = pick(rng, (func, t["v"], "options"))
            cmd = f'grep -n "{pattern}" {src}'
            bad = _bad_path(rng, src)
            self.run("narrow", cmd, _grep(files, pattern, [src], with_name=False),
                     faults=(("path", cmd.replace(src, bad), f"grep: {bad}: No such file or directory", 2),),
                     slow=f'grep -rn "{pattern}" /')
            return
        form = int(rng.integers(5))
        if form == 0:
            cmd, out = f'grep -rn "def {func}" {root}', _grep(files, f"def {func}", under)
        elif form == 1:
            cmd, out = f'grep -rn "{func}" --include="*.py" .', _grep(files, func, sorted(files), "./")
        elif form == 2:
            cmd, out = f'grep -rn "{func}(" {root} | head -20', _grep(files, f"{func}(", under)
        elif form == 3:
            cmd, out = f'git grep -n "def {func}"', _grep(files, f"def {func}", sorted(files))
        else:
            cmd, out = f'find . -name "{t["mod"]}.py" -not -path "./.git/*"', f"./{src}"
        faults: tuple = ()
        if form == 0:
            faults = (("path", f'grep -rn "def {func}" {root}s', f"grep: {root}s: No such file or directory", 2),)
        elif form == 4:
            faults = (("path", cmd.replace("find .", f"find ./{root}s"), f"find: './{root}s': No such file or "
                       "directory", 1),)
        slow = {0: f'grep -rn "def {func}" /', 1: f'grep -rn "{func}" --include="*.py" /',
                2: f'grep -rn "{func}(" / | head -20', 3: f'git grep -n "def {func}" $(git rev-list --all)',
                4: f'find / -name "{t["mod"]}.py"'}[form]
        self.run("search", cmd, out, faults=faults, slow=slow)

    def window(self, path: str, center: int, key: str = "window") -> None:
        """At most about 40 lines of ``path`` around ``center``."""
        rng = self.rng
        key = "window" if key == "window_tb" and not self.t["error"] else key  # a wrong result names no line
        lines = self.files[path]
        a = max(1, center - int(pick(rng, (3, 5, 8, 10, 15))))
        b = min(len(lines), center + int(pick(rng, (5, 8, 10, 15, 20))))
        if key == "peek":
            a, b = 1, min(len(lines), int(pick(rng, (20, 30, 40))))
        raw, numbered = "\n".join(lines[a - 1:b]), _numbered(lines[a - 1:b], a)
        bad = _bad_path(rng, path)
        form = int(rng.integers(6))
        expr_fault = ("sed", "", f"sed: -e expression #1, char {len(f'{a},{b}')}: missing command", 1)
        if form in (0, 1):
            cmd = f"sed -n '{a},{b}p' {path}" if form == 0 else f"sed -n {a},{b}p {path}"
            faults = ((expr_fault[0], f"sed -n '{a},{b}' {path}", *expr_fault[2:]),
                      ("path", cmd.replace(path, bad), f"sed: can't read {bad}: No such file or directory", 2))
            out = raw
        elif form in (2, 3):
            cmd = f"{'nl -ba' if form == 2 else 'cat -n'} {path} | sed -n '{a},{b}p'"
            faults = ((expr_fault[0], cmd.replace(f"'{a},{b}p'", f"'{a},{b}'"), *expr_fault[2:]),)
            out = numbered
        elif form == 4:
            cmd = f"awk 'NR>={a} && NR<={b}' {path}"
            faults = (("path", cmd.replace(path, bad), f"awk: fatal: cannot open file `{bad}' for reading: "
                       "No such file or directory", 2),)
            out = raw
        else:
            cmd, faults, out = f"head -n {b} {path} | tail -n {b - a + 1}", (), raw
        if key == "peek" and form != 5:
            cmd, out = f"head -n {b} {path}", raw
            faults = (("path", cmd.replace(path, bad), f"head: cannot open '{bad}' for reading: No such file or "
                       "directory", 1),)
        slow = pick(rng, (f"vim +{a} {path}", f"vi {path}", f"nano {path}"))
        self.run(key, cmd, out, faults=faults, slow=slow, path=path, line=center)

    def elsewhere(self) -> None:
        """A window somewhere else: the caller, the test, the package ``__init__``, another function."""
        t, rng = self.t, self.rng
        helpers = [i for i, x in enumerate(self.files[t["src"]], start=1) if x.startswith("def _")]
        path, line = pick(rng, ((t["caller"], 9), (t["test_path"], t["test_line"]), (t["init"], 3),
                                (t["src"], pick(rng, helpers) if helpers else 1)))
        self.window(path, line, key="elsewhere")

    def read(self, path: str, chunk: tuple[int, int] | None = None) -> None:
        """A whole file, or a long chunk of it."""
        rng = self.rng
        lines = self.files[path]
        bad = _bad_path(rng, path)
        if chunk is None:
            form = pick(rng, ("cat", "cat -n", "nl -ba"))
            cmd = f"{form} {path}"
            out = "\n".join(lines) if form == "cat" else _numbered(lines, 1)
            prog = form.split()[0]
            faults: tuple = (("path", cmd.replace(path, bad), f"{prog}: {bad}: No such file or directory", 1),)
        else:
            a, b = chunk
            form = pick(rng, ("nl", "sed", "cat"))
            if form == "sed":
                cmd, out = f"sed -n '{a},{b}p' {path}", "\n".join(lines[a - 1:b])
                faults = (("path", cmd.replace(path, bad), f"sed: can't read {bad}: No such file or directory", 2),)
            else:
                cmd = f"{'nl -ba' if form == 'nl' else 'cat -n'} {path} | sed -n '{a},{b}p'"
                out = _numbered(lines[a - 1:b], a)
                faults = (("sed", cmd.replace(f"'{a},{b}p'", f"'{a},{b}'"),
                           f"sed: -e expression #1, char {len(f'{a},{b}')}: missing command", 1),)
        self.run("read", cmd, out, faults=faults, slow=pick(rng, (f"vim {path}", f"vi {path}", f"nano {path}")),
                 path=path)

    # -- changing the code ----------------------------------------------------------------------
    def edit(self, old: str, new: str, line: int, key: str = "edit") -> None:
        """Replace ``old`` with ``new`` on ``line`` of the module: ``sed -i``, a python heredoc, or
        (a short module) ``cat <<'EOF' >`` the whole file."""
        rng, src = self.rng, self.t["src"]
        before = self.files[src]
        after = list(before)
        after[line - 1] = after[line - 1].replace(old, new, 1)
        bad = _bad_path(rng, src)
        how = int(rng.integers(3 if len(before) < 150 else 2))
        if how == 0:
            s_old, s_new = _sed_pattern(old), _sed_replacement(new)
            where = pick(rng, ("", f"{line}"))
            expr = f"{where}s/{s_old}/{s_new}/"
            show = rng.random() < 0.4
            cmd = f"sed -i '{expr}' {src}" + (f" && sed -n '{line}p' {src}" if show else "")
            out = after[line - 1] if show else ""
            faults = (("sed", cmd.replace(f"'{expr}'", f"'{expr[:-1]}'"),
                       f"sed: -e expression #1, char {len(expr) - 1}: unterminated `s' command", 1),
                      ("path", cmd.replace(f" {src}", f" {bad}", 1), f"sed: can't read {bad}: No such file or "
                       "directory", 2))
        elif how == 1:
            cmd, out, faults = _python_edit(rng, src, bad, old, new)
        else:
            cmd = f"cat <<'EOF' > {src}\n" + "\n".join(after) + "\nEOF"
            out = ""
            nowhere = _bad_folder(src)
            faults = (("path", cmd.replace(f"> {src}", f"> {nowhere}", 1),
                       f"bash: {nowhere}: No such file or directory", 1),)
        self.run(key, cmd, out, faults=faults, slow=pick(rng, (f"vim {src}", f"nano {src}", f"vi +{line} {src}")))
        self.files[src] = after

    def edit_fix(self) -> None:
        self.edit(self.t["buggy"], self.fix, self.t["line"])

    def edit_doc(self) -> None:
        t = self.t
        doc = f'"""{t["doc"]}"""'
        case = t["case"].replace("`", "").replace("'", "")
        new = f'"""{t["doc"][:-1]} ({pick(self.rng, ("handles", "accepts", "supports"))} {case})."""'
        self.edit(doc, new, t["def_line"] + 1, key="edit_doc")

    # -- running things -------------------------------------------------------------------------
    def write_script(self) -> None:
        """The reproduction script, written and run in one heredoc command or apart."""
        rng, t = self.rng, self.t
        path = pick(rng, ("reproduce.py", "repro.py", "reproduce_issue.py", "/tmp/repro.py", "/tmp/reproduce.py"))
        self.script = path
        self.style = int(rng.integers(3))
        body = _script(t, self.style)
        out, rc = _script_output(t, self.style, path, fixed=False)
        write = f"cat <<'EOF' > {path}\n" + "\n".join(body) + "\nEOF"
        if not path.startswith("/"):
            self.files[path] = body
        if rng.random() < _P_SPLIT_SCRIPT:
            bad_dir = _bad_folder(path)
            self.run("script_write", write, "", faults=(("path", write.replace(f"> {path}", f"> {bad_dir}", 1),
                                                         f"bash: {bad_dir}: No such file or directory", 1),),
                     slow=f"vim {path}")
            self.run_script("script_run", out, rc)
            return
        faults = tuple(("script", f"cat <<'EOF' > {path}\n" + "\n".join(b) + f"\nEOF\npython {path}", o, 1)
                       for b, o in _broken_scripts(t, body, path))
        self.run("script", f"{write}\npython {path}", out, rc, faults=faults, slow=f"{write}\npython -i {path}")

    def run_script(self, key: str, out: str, rc: int) -> None:
        path = self.script
        bad = _bad_path(self.rng, path)
        full = path if path.startswith("/") else f"/testbed/{bad}"
        self.run(key, f"python {path}", out, rc, slow=f"python -i {path}",
                 faults=(("path", f"python {bad}", f"python: can't open file '{full}': [Errno 2] No such file or "
                          "directory", 2),))

    def rerun_script(self) -> None:
        out, rc = _script_output(self.t, self.style, self.script, fixed=True)
        self.run_script("script_after", out, rc)

    def edge_case(self) -> None:
        """The script rewritten with the reported input and a regular one, and run."""
        t, path = self.t, self.script
        body = [f"from {t['modpath']} import {t['func']}", "", f"print({t['func']}({t['arg']}))",
                f"print({t['func']}({t['normal']}))"]
        out = f"{_value(t['expected'])}\n{t['normal_out']}"
        if self.rng.random() < 0.5:  # asserts rather than prints
            body = [*body[:2], f"assert {t['func']}({t['arg']}) == {t['expected']}",
                    f"assert {t['func']}({t['normal']}) is not None", f'print("{pick(self.rng, ("all good", "OK"))}")']
            out = body[-1][7:-2]
        write = f"cat <<'EOF' > {path}\n" + "\n".join(body) + "\nEOF"
        if not path.startswith("/"):
            self.files[path] = body
        faults = tuple(("script", f"cat <<'EOF' > {path}\n" + "\n".join(b) + f"\nEOF\npython {path}", o, 1)
                       for b, o in _broken_scripts(t, body, path))
        self.run("edge", f"{write}\npython {path}", out, faults=faults,
                 slow=f"{write}\npython -i {path}")

    def cleanup(self) -> None:
        path = self.script
        cmd = pick(self.rng, (f"rm {path}", f"rm -f {path}"))
        bad = _bad_path(self.rng, path)
        self.run("cleanup", cmd, "", slow=f"rm -i {path}",
                 faults=(("path", f"rm {bad}", f"rm: cannot remove '{bad}': No such file or directory", 1),))
        self.files.pop(path, None)

    def tests(self, target: str, key: str) -> None:
        """A pytest run of the test file (``file``), the failing test (``one``) or the new test (``new``)."""
        rng, t = self.rng, self.t
        fixed = self.files[t["src"]][t["line"] - 1].strip() != t["buggy"]
        where = (t["test_line"], f"assert {t['func']}({t['arg']}) == {t['expected']}")
        if target == "new":
            path, name_, *where = self.new_test
        else:
            path, name_ = t["test_path"], t["test_name"]
        items = [self.new_test[1]] if target == "new" and path != t["test_path"] else \
            list(t["items"]) + ([self.new_test[1]] if self.new_test and self.new_test[0] == path else [])
        selected, deselected, sel = items, 0, path
        if target != "file":
            selected = [name_]
            if rng.random() < 0.3:
                sel, deselected = f"{path} -k {name_}", len(items) - 1
            else:
                sel = f"{path}::{name_}"
        verbose = bool(rng.random() < _P_VERBOSE)
        spelling = pick(rng, ("python -m pytest {sel}", "pytest {sel}", "python -m pytest {sel} -x",
                              "python -m pytest -q {sel}", "pytest -q {sel}", "pytest {sel} -x -q",
                              "python -m pytest -p no:cacheprovider -q {sel}"))
        if verbose:
            spelling = spelling.replace(" -q", "") + " -v"
        cmd = spelling.replace("{sel}", sel)
        failing = None if fixed else name_ if target != "file" else t["test_name"]
        out = _pytest(rng, t, path, selected, failing, verbose=verbose, quiet=" -q" in cmd, deselected=deselected,
                      where=tuple(where))
        faults = (("module", cmd.replace("-m pytest", "-m pytets", 1), "/usr/bin/python: No module named pytets", 1),) \
            if cmd.startswith("python -m pytest") else ()
        self.run(key, cmd, out, 0 if failing is None else 1, faults=faults,
                 slow=pick(rng, (f"python -m pytest {t['root']}", "pytest", f"pytest {t['root']} -q")),
                 path=path, test_name=name_)

    def write_test(self) -> None:
        """A new regression test: appended to the module's test file, or a file of its own."""
        rng, t = self.rng, self.t
        name_ = pick(rng, (f"test_{t['func']}_issue_{t['number']}", f"test_{t['func']}_regression_{word(rng)}",
                           f"test_{t['func']}_{t['bug']}_input"))
        test = [f"def {name_}():"]
        if rng.random() < 0.5:
            test += [f"    result = {t['func']}({t['arg']})", f"    assert result == {t['expected']}"]
        else:
            test += [f"    assert {t['func']}({t['arg']}) == {t['expected']}"]
        if rng.random() < 0.5:  # appended to the module's test file
            path, op = t["test_path"], ">>"
            cmd = f"cat <<'EOF' >> {path}\n\n\n" + "\n".join(test) + "\nEOF"
            self.files[path] = [*self.files[path], "", "", *test]
        else:
            folder = t["test_path"].rpartition("/")[0]
            path, op = f"{folder}/test_{pick(rng, ('issue', 'regression', 'bug'))}_{t['number']}.py", ">"
            lines = [f"from {t['modpath']} import {t['func']}", "", "", *test]
            cmd = f"cat <<'EOF' > {path}\n" + "\n".join(lines) + "\nEOF"
            self.files[path] = lines
        nowhere = _bad_folder(path)
        self.new_test = (path, name_, len(self.files[path]), test[-1].strip())
        self.run("write_test", cmd, "", slow=f"vim {path}",
                 faults=(("path", cmd.replace(f"{op} {path}", f"{op} {nowhere}", 1),
                          f"bash: {nowhere}: No such file or directory", 1),))

    # -- history --------------------------------------------------------------------------------
    def git_log(self) -> None:
        rng, t = self.rng, self.t
        n = len(t["history"])
        form = int(rng.integers(3))
        if form == 0:
            cmd = f"git log --oneline -n {n + int(rng.integers(0, 10))} -- {t['src']}"
            out = "\n".join(f"{c['sha'][:7]} {c['msg']}" for c in t["history"])
        elif form == 1:
            cmd = f"git log --format='%h %ad %an: %s' --date=short -{n + 5} {t['src']}"
            out = "\n".join(f"{c['sha'][:7]} {c['day']} {c['author']}: {c['msg']}" for c in t["history"])
        else:
            cmd = f"git log -n {n} --stat -- {t['src']}"
            out = "\n\n".join(f"commit {c['sha']}\nAuthor: {c['author']} <{c['author'].split()[0].lower()}"
                              f"@users.noreply.github.com>\nDate:   {c['day']}\n\n    {c['msg']}\n\n {t['src']} | "
                              f"{int(rng.integers(1, 40))} +++--" for c in t["history"])
        self.run("git_log", cmd, out, slow=f'git log -p -S "{t["func"]}"')

    def git_show(self, other: bool = False) -> None:
        """A commit of the module's history: the one that brought the bug, or (``other``) another."""
        rng, t = self.rng, self.t
        old = list(self.orig[t["src"]])
        if other:  # an unrelated change: an import swapped
            c = pick(rng, [x for x in t["history"] if x is not t["culprit"]])
            old[2] = "import sys" if old[2] != "import sys" else "import os"
        else:
            c = t["culprit"]
            old[t["line"] - 1] = old[t["line"] - 1].replace(t["buggy"], t["fix"])
        sha = c["sha"][:7]
        cmd = pick(rng, (f"git show {sha}", f"git show {sha} -- {t['src']}", f"git log -p -1 {sha} -- {t['src']}"))
        hunks = "\n".join(_hunks(old, self.orig[t["src"]], t["src"], False))
        out = (f"commit {c['sha']}\nAuthor: {c['author']} <{c['author'].split()[0].lower()}@users.noreply"
               f".github.com>\nDate:   {c['day']}\n\n    {c['msg']}\n\ndiff --git a/{t['src']} b/{t['src']}\n"
               f"index {_blob(old)}..{_blob(self.orig[t['src']])} 100644\n--- a/{t['src']}\n+++ b/{t['src']}\n{hunks}")
        bad = f"{int(rng.integers(16 ** 7)):07x}"
        self.run("git_show", cmd, out, faults=(("path", cmd.replace(sha, bad), f"fatal: bad object {bad}", 128),),
                 slow=f'git log --all -p -S "{t["buggy"]}"', sha=sha, msg=c["msg"])

    def blame(self) -> None:
        rng, t = self.rng, self.t
        lines = self.files[t["src"]]
        a, b = t["def_line"], min(len(lines), t["line"] + int(rng.integers(2, 8)))
        cmd = pick(rng, (f"git blame -L {a},{b} {t['src']}", f"git blame -L {a},+{b - a + 1} -- {t['src']}"))
        older = [c for c in t["history"] if c is not t["culprit"]] or t["history"]
        rows = []
        for i in range(a, b + 1):
            c = t["culprit"] if i == t["line"] else older[(i * 7) % len(older)]
            rows.append(f"{c['sha'][:8]} ({c['author'][:18]:<18} {c['day']} 10:{i % 60:02d}:00 +0000 {i:4d}) "
                        f"{lines[i - 1]}")
        bad = _bad_path(rng, t["src"])
        self.run("blame", cmd, "\n".join(rows), slow=f'git log -p -S "{t["buggy"]}"',
                 faults=(("path", cmd.replace(t["src"], bad), f"fatal: no such path '{bad}' in HEAD", 128),))

    def review(self) -> None:
        cmd = pick(self.rng, ("git diff", "git status", "git diff --stat", "git status && git diff"))
        if cmd == "git diff":
            out = _diff(self.orig, self.files, staged=False)
        elif cmd == "git status":
            out = _status(self.orig, self.files)
        elif cmd == "git diff --stat":
            out = _stat(self.orig, self.files)
        else:
            out = _status(self.orig, self.files) + "\n" + _diff(self.orig, self.files, staged=False)
        self.run("review", cmd, out.rstrip("\n"), slow="git add -p")

    # -- the messages ---------------------------------------------------------------------------
    def render(self, n_steps: int, submit: bool) -> tuple[list[dict], dict]:
        """The chat of the first ``n_steps`` steps (and the submission) and its counts."""
        msgs = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": self.t["text"]}]
        counts = {"n_calls": 0, "n_failures": 0, "n_refused": 0}
        steps = list(self.steps[:n_steps])
        if submit:
            steps.append([("submit", self.say("submit"), SUBMIT)])
            if self.rng.random() < _P_REFUSE:
                steps[-1].insert(0, self.refused(steps[-1][0][1], SUBMIT))
        diff = _diff(self.orig, self.files, staged=True)
        for turn in (x for step in steps for x in step):
            kind = turn[0]
            if kind == "refused":
                msgs += [{"role": "assistant", "content": turn[1]},
                         {"role": "user", "content": FORMAT_ERROR.replace("{n}", str(turn[2]))}]
                counts["n_refused"] += 1
                continue
            msgs.append({"role": "assistant", "content": f"THOUGHT: {turn[1]}\n\n```bash\n{turn[2]}\n```"})
            if kind == "submit":
                msgs.append({"role": "user", "content": diff})
            elif kind == "timeout":
                msgs.append({"role": "user", "content": TIMEOUT.replace("{command}", turn[2])})
                counts["n_calls"] += 1
                counts["n_failures"] += 1
            else:
                msgs.append({"role": "user", "content": _observation(turn[3], turn[4])})
                counts["n_calls"] += 1
                counts["n_failures"] += int(turn[5])
        return msgs, dict(counts, diff=diff)


def _sed_pattern(text: str) -> str:
    return "".join("\\" + ch if ch in "/[].*^$\\" else ch for ch in text)


def _sed_replacement(text: str) -> str:
    return "".join("\\" + ch if ch in "/&\\" else ch for ch in text)


def _python_edit(rng: np.random.Generator, src: str, bad: str, old: str, new: str) -> tuple[str, str, tuple]:
    """A ``python - <<'EOF'`` heredoc that rewrites the module, and its failures."""
    end = pick(rng, ("EOF", "PY"))
    imp = pick(rng, ("from pathlib import Path", "import pathlib"))
    path_ = "Path" if imp.startswith("from") else "pathlib.Path"
    said = pick(rng, ('print("patched")', "print('done')", ""))
    body = [imp, f"p = {path_}({src!r})", "s = p.read_text()", f"old = {old!r}", f"new = {new!r}",
            "assert old in s, 'pattern not found'", "p.write_text(s.replace(old, new, 1))", *([said] if said else [])]
    cmd = f"python - <<'{end}'\n" + "\n".join(body) + f"\n{end}"
    out = said.split("(")[1].strip("\"')") if said else ""
    missing = "\n".join(body[1:])
    name_error = (f"Traceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\n"
                  f"NameError: name '{path_.split('.')[0]}' is not defined")
    not_found = (f"Traceback (most recent call last):\n  File \"<stdin>\", line 3, in <module>\n"
                 f"  File \"/opt/miniconda3/envs/testbed/lib/python3.9/pathlib.py\", line 1266, in read_text\n"
                 f"    with self.open(mode='r', encoding=encoding, errors=errors) as f:\n"
                 f"FileNotFoundError: [Errno 2] No such file or directory: '{bad}'")
    faults = (("script", f"python - <<'{end}'\n{missing}\n{end}", name_error, 1),
              ("path", cmd.replace(repr(src), repr(bad), 1), not_found, 1))
    return cmd, out, faults


def _script(t: dict, style: int) -> list[str]:
    call = f"{t['func']}({t['arg']})"
    if style == 0:
        return [f"from {t['modpath']} import {t['func']}", "", f"print({call})"]
    if style == 1:
        return [f"from {t['modpath']} import {t['func']}", "", f"result = {call}", 'print("result:", result)',
                f"assert result == {t['expected']}, result", 'print("OK")']
    mod, _, leaf = t["modpath"].rpartition(".")
    return [f"from {mod} import {leaf}", "", f"print(repr({leaf}.{call}))"]


def _script_output(t: dict, style: int, path: str, *, fixed: bool) -> tuple[str, int]:
    """What the reproduction script prints (and its returncode) before or after the fix."""
    full = path if path.startswith("/") else f"/testbed/{path}"
    if fixed or not t["error"]:
        value = _value(t["expected"]) if fixed else _value(t["actual"])
        if style == 0:
            return str(value), 0
        if style == 2:
            return repr(value), 0
        if fixed:
            return f"result: {value}\nOK", 0
        return (f"result: {value}\nTraceback (most recent call last):\n  File \"{full}\", line 5, in <module>\n"
                f"    assert result == {t['expected']}, result\nAssertionError: {value}"), 1
    text = _script(t, style)[2]  # the call, line 3 of every style
    return (f"Traceback (most recent call last):\n  File \"{full}\", line 3, in <module>\n    {text}\n"
            f"  File \"/testbed/{t['src']}\", line {t['raise_line']}, in {t['func']}\n    {t['raise_text']}\n"
            f"{t['error']}"), 1


def _broken_scripts(t: dict, body: list[str], path: str) -> list[tuple[list[str], str]]:
    """The script with a mistake of its own, and what running it prints: a SyntaxError, a
    NameError (the import left out), a ModuleNotFoundError (the module misspelt)."""
    full = path if path.startswith("/") else f"/testbed/{path}"
    last = body[2]
    cut = last.rindex(")")
    unclosed = last[:cut] + last[cut + 1:]  # the first parenthesis left open
    syntax = (f"  File \"{full}\", line 3\n    {unclosed}\n{' ' * (4 + unclosed.index('('))}^\n"
              "SyntaxError: '(' was never closed")
    used = body[0].split(" import ")[1]
    name_error = (f"Traceback (most recent call last):\n  File \"{full}\", line 2, in <module>\n    {last}\n"
                  f"NameError: name '{used}' is not defined")
    module = body[0].split()[1]
    missing = f"from {module}s import {used}"
    module_error = (f"Traceback (most recent call last):\n  File \"{full}\", line 1, in <module>\n    {missing}\n"
                    f"ModuleNotFoundError: No module named '{module}s'")
    return [([*body[:2], unclosed, *body[3:]], syntax), (body[1:], name_error), ([missing, *body[1:]], module_error)]


# -- the strategies -------------------------------------------------------------------------------
def _more(rng: np.random.Generator) -> int:
    """How many times a strategy's repeatable step comes again (0 to 4, each at :data:`_P_MORE`)."""
    n = 0
    while n < 4 and rng.random() < _P_MORE:
        n += 1
    return n


def _reproduce_first(a: _Agent) -> None:
    t = a.t
    a.write_script()
    a.window(t["src"], t["raise_line"], key="window_tb")
    a.edit_fix()
    a.rerun_script()
    for _ in range(_more(a.rng)):
        a.edge_case()
    if a.rng.random() < _P_TESTS_AFTER:
        a.tests("file", "tests_file")
    if a.rng.random() < _P_CLEANUP and not a.script.startswith("/"):
        a.cleanup()


def _grep_to_edit(a: _Agent) -> None:
    a.search()
    for _ in range(_more(a.rng)):
        a.search(narrow=True)
    a.window(a.t["src"], a.t["def_line"])
    for _ in range(_more(a.rng)):
        a.elsewhere()
    a.edit_fix()


def _follow_failing_test(a: _Agent) -> None:
    t = a.t
    a.tests("file", "tests_first")
    a.window(t["test_path"], t["test_line"], key="test_window")
    a.window(t["src"], t["raise_line"], key="window_tb")
    for _ in range(_more(a.rng)):
        a.elsewhere()
    a.edit_fix()
    a.tests("one", "tests_one")
    if a.rng.random() < _P_RERUN_FILE:
        a.tests("file", "tests_file")


def _read_whole_files(a: _Agent) -> None:
    """Two to five reads: the module (whole, or in chunks of 120 lines or more up to past the
    faulty line when it is long) and, in a random order, other files whole."""
    rng, t = a.rng, a.t
    n = 2 + _more(rng)
    size = len(a.files[t["src"]])
    if size > 250 and rng.random() < 0.6:
        step = int(pick(rng, (150, 200, 250)))
        chunks: list[tuple[int, int] | None] = [(i + 1, min(i + step, size)) for i in range(0, size, step)]
        if chunks[-1][1] - chunks[-1][0] < 120:  # a short tail goes with the chunk before it
            chunks[-2:] = [(chunks[-2][0], size)]
        need = next(k for k, c in enumerate(chunks) if c[1] >= t["line"]) + 1
        src_reads = chunks[:max(need, 1)][:n]
        if src_reads[-1][1] < t["line"]:  # too few reads to reach the faulty line in chunks: the last runs on
            src_reads[-1] = (src_reads[-1][0], size)
    else:
        src_reads = [None]
    others = [t["test_path"], t["init"], t["caller"], "README.rst"]
    others = [others[int(i)] for i in rng.permutation(len(others))][:max(n - len(src_reads), 0)]
    before = int(rng.integers(0, len(others) + 1))
    for path in others[:before]:
        a.read(path)
    for chunk in src_reads:
        a.read(t["src"], chunk)
    for path in others[before:]:
        a.read(path)
    a.edit_fix()


def _git_history(a: _Agent) -> None:
    a.git_log()
    a.git_show()
    for _ in range(_more(a.rng)):
        a.git_show(other=True)
    if a.rng.random() < _P_BLAME:
        a.blame()
    a.edit_fix()
    if a.rng.random() < _P_GIT_TEST:
        a.tests(pick(a.rng, ("one", "file")), "tests_one")


def _test_first(a: _Agent) -> None:
    t = a.t
    if a.rng.random() < _P_PEEK_TESTS:
        a.window(t["test_path"], 1, key="peek")
    a.write_test()
    a.tests("new", "tests_new")
    a.window(t["src"], t["raise_line"], key="window_tb")
    for _ in range(_more(a.rng)):
        a.elsewhere()
    a.edit_fix()
    a.tests("new", "tests_new_after")
    if a.rng.random() < _P_RERUN_FILE:
        a.tests("file", "tests_file")


def _blind_patch(a: _Agent) -> None:
    a.edit_fix()
    if a.rng.random() < _P_SECOND_EDIT:
        a.edit_doc()


_STRATEGY: dict[str, Callable[[_Agent], None]] = {
    "reproduce_first": _reproduce_first, "grep_to_edit": _grep_to_edit, "follow_failing_test": _follow_failing_test,
    "read_whole_files": _read_whole_files, "git_history": _git_history, "test_first": _test_first,
    "blind_patch": _blind_patch}


def _episode(rng: np.random.Generator, arm: str, strategy: str, t: dict, sample: int) -> tuple[dict, tuple]:
    limit = bool(rng.random() < _P_LIMIT)
    resolved = bool(rng.random() < _RESOLVE[strategy])
    fix = t["fix"] if resolved or rng.random() >= _P_WRONG_FIX else pick(rng, t["wrong"])
    a = _Agent(rng, t, fix)
    if rng.random() < _P_ORIENT:
        a.orient()
    _STRATEGY[strategy](a)
    if rng.random() < _P_REVIEW:
        a.review()
    n = len(a.steps)
    kept = int(rng.integers((n + 1) // 2, n + 1)) if limit else n
    messages, counts = a.render(max(kept, 1), submit=not limit)
    correct = resolved and not limit
    calls = sum(m["role"] == "assistant" for m in messages)
    info = {"exit_status": "LimitsExceeded" if limit else "Submitted", "submission": None if limit else counts["diff"],
            "model_stats": {"instance_cost": round(calls * float(rng.uniform(0.003, 0.011)), 4), "api_calls": calls},
            "mini_version": "1.9.1", "config": {"model": {"model_name": _fill(pick(rng, _MODELS), arm=arm)}}}
    record = {"trajectory_format": "mini-swe-agent-1", "instance_id": t["instance_id"], "arm": arm,
              "sample_id": sample, "correct": correct, "info": info, "messages": messages}
    return record, (counts["n_calls"], counts["n_failures"], counts["n_refused"], not limit, correct)


def swebash(n_questions: int = 60, n_samples: int = 4, random_state: RandomState = 0, *,
            arms: dict[str, dict[str, float]] | None = None) -> World:
    """Generate the mini-swe-agent world: GitHub issues fixed with one bash command a turn.

    Parameters
    ----------
    n_questions, n_samples
        Issues (each an ``instance_id`` of its own, the repositories in turn, :data:`REPOS`), and
        episodes per issue and arm.
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.
    arms
        Arm name -> strategy mixture (default: :data:`ARMS`, ``base`` and ``rl``, which differ
        only in it).

    Returns
    -------
    World
        Records in format ``swe`` (mini-swe-agent trajectories; the answer: ``info.submission``,
        the diff; ``correct`` whether it resolved the issue); truth ``arm, question_id,
        sample_id, strategy, n_calls`` (commands run and answered, failed and timed-out ones
        included, not refused turns nor the submitting command), ``n_failures``, ``n_refused``,
        ``submitted`` and ``correct``.

    Examples
    --------
    >>> w = swebash(n_questions=2, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"]))
    ('swe', 4, ['base', 'rl'])
    >>> w.records[0]["trajectory_format"], w.records[0]["messages"][0]["role"]
    ('mini-swe-agent-1', 'system')
    """
    rng = world_generator(random_state)
    arms = arms or ARMS
    tasks, seen = [], set()
    for i in range(n_questions):
        while (t := _task(rng, REPOS[i % len(REPOS)]))["instance_id"] in seen:
            pass  # every issue its own instance id
        seen.add(t["instance_id"])
        tasks.append((t["instance_id"], t))

    def episode(rng: np.random.Generator, arm: str, qid: str, sample: int, strategy: str, t: dict
                ) -> tuple[dict, tuple]:
        return _episode(rng, arm, strategy, t, sample)

    return planted_world("swebash", "swe", rng, tasks, arms, n_samples, episode, _SUCCESS,
                         truth_schema={"n_calls": pl.Int64, "n_failures": pl.Int64, "n_refused": pl.Int64,
                                       "submitted": pl.Boolean, "correct": pl.Boolean})
