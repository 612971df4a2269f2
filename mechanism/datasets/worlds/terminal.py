"""A terminal agent world: one ``bash`` tool in a checked-out Python repository (Terminal-Bench-like).

The task is a bug report in ``/app``: either a failing test ("``tests/test_rows.py::test_parse_rows_empty``
fails") or a command that crashes ("``python scripts/build_report.py data/sales.csv`` raises
``ZeroDivisionError``"). The agent has ONE tool, ``bash(command)``, in OpenAI ``tool_calls``
format; the program is the verb (``ls``, ``find``, ``cat``, ``grep -rn``, ``sed -n``,
``sed -i``, ``python3 - <<'EOF'``, ``perl -pi``, ``python -m pytest``, ``git log``,
``git show``, ``git diff``, ``pip install``). Every observation is the command's output, with
``[exit code: N]`` appended when the command exits non-zero. An episode ends with a short
summary (the last assistant message, no tool call).

Seven planted strategies (calls without failures and optional steps; a *check* is the test
run for a failing test, the command for a crashing one):

=====================  ====================================================================
``explore_then_edit``  list the repository (``ls`` / ``find`` / ``tree``; optionally a second
                       listing), ``cat`` the source file found there, edit it, check
``grep_localise``      ``grep -rn`` the function (optionally a second, narrower ``grep -n``),
                       print the lines around the hit with ``sed -n`` (the line number taken
                       from grep's output), edit, check
``reproduce_first``    the check first (it fails with a traceback), ``sed -n`` around the line
                       the traceback names, edit, the check again (it passes), optionally the
                       whole test suite
``blind_retry``        edit at once from the report, check (it still fails), edit again,
                       check, ... (two or three edits in all; only the last one fixes it);
                       nothing is read first
``read_many``          ``cat`` (or ``head``) three to five files one after the other (the
                       source, its caller, the test, the package's ``__init__``, the README),
                       edit, check
``git_history``        ``git log`` of the file, ``git show`` / ``git diff`` of the commit that
                       broke it, edit, check
``setup_first``        ``pip install -r requirements.txt`` (optionally ``python --version``),
                       ``pip install -e .``, the check (it fails), ``cat`` the source, edit,
                       the check again
=====================  ====================================================================

Every edit is made with ``sed -i`` (then the changed line printed), a ``python3`` heredoc
that rewrites the file, or ``perl -pi -e`` (then ``grep -n`` of the new line), whatever the
strategy. Checks are ``python -m pytest``, ``pytest`` or ``python3 -m pytest`` on a
selector, or the crashing command itself.

Failures are execution, not strategy: any command may fail (:data:`_P_FAIL` each) with a typo
in the program's name (``bash: gerp: command not found``, exit 127) or a fault of its own (a
path that does not exist, ``cat: src/pkgs/rows.py: No such file or directory``; a ``sed``
expression left unterminated; a test file that does not exist; a requirements file misnamed;
an unknown git revision), and is followed by the corrected command (same program). The
optional steps happen at fixed rates whatever the arm: a final ``git diff`` to review the
change in every strategy (:data:`_P_REVIEW`), and the strategy's own optional step named
above. Paths, functions, bugs, commands, outputs and the assistant's words vary inside every
strategy. The ``rl`` arm differs from ``base`` only in its mixture; success is drawn at the
strategy's rate (random within it).

The truth carries, beside ``strategy``, ``kind`` (``test`` or ``script``), ``n_calls`` (bash
calls), ``n_failures`` (commands that failed and were retried) and ``correct``.

Written from scratch as a held-out world, without reference to how trajectories are segmented
or clustered.
"""
from __future__ import annotations

import json

import numpy as np
import polars as pl

from mechanism.core.options import RandomState, as_generator
from mechanism.datasets.worlds._base import World, name, pick, planted_world, word

STRATEGIES = ("explore_then_edit", "grep_localise", "reproduce_first", "blind_retry", "read_many", "git_history",
              "setup_first")
KINDS = ("test", "script")
ARMS = {
    "base": {"explore_then_edit": 0.22, "grep_localise": 0.15, "reproduce_first": 0.12, "blind_retry": 0.2,
             "read_many": 0.12, "git_history": 0.08, "setup_first": 0.11},
    "rl": {"explore_then_edit": 0.1, "grep_localise": 0.24, "reproduce_first": 0.24, "blind_retry": 0.06,
           "read_many": 0.1, "git_history": 0.14, "setup_first": 0.12},
}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"explore_then_edit": 0.45, "grep_localise": 0.6, "reproduce_first": 0.7, "blind_retry": 0.3,
            "read_many": 0.5, "git_history": 0.55, "setup_first": 0.5}
#: the chance that a command fails (the same for every command, strategy and arm)
_P_FAIL = 0.12
#: the optional steps' rates (the same in every arm)
_P_REVIEW = 0.3  # a final `git diff`, in every strategy
_P_SECOND_LISTING = 0.5  # explore_then_edit
_P_NARROW_GREP = 0.4  # grep_localise
_P_SUITE = 0.35  # reproduce_first
_P_MORE_FILES = 0.5  # read_many: a fourth file, and then a fifth at the same rate
_P_VERSION = 0.5  # setup_first
_P_THIRD_EDIT = 0.4  # blind_retry: three edits rather than two

_VERBS = ("parse", "load", "format", "merge", "resolve", "normalize", "render", "collect", "split", "encode")
_NOUNS = ("rows", "config", "header", "record", "token", "label", "entry", "schema", "payload", "report")
_LAYOUTS = ("src/{pkg}/{mod}.py", "{pkg}/{mod}.py", "lib/{pkg}/{mod}.py")
_TEST_LAYOUTS = ("tests/test_{mod}.py", "tests/unit/test_{mod}.py")
_PIP = ("numpy", "pandas", "click", "pyyaml", "requests", "rich", "attrs", "python-dateutil", "tabulate")

# the bugs: the faulty line, its fix, two plausible edits that do not fix it, the error raised
_BUGS = {
    "index": {"buggy": "for i in range(len({v}) + 1):", "fix": "for i in range(len({v})):",
              "wrong": ("for i in range(1, len({v}) + 1):", "for i in range(len({v}) + 0):"),
              "error": "IndexError: list index out of range", "body": ("        total += {v}[i]",)},
    "none": {"buggy": "return {v}.strip().lower()", "fix": 'return ({v} or "").strip().lower()',
             "wrong": ("return str({v}).strip().lower()", "return {v}.strip().lower() or None"),
             "error": "AttributeError: 'NoneType' object has no attribute 'strip'", "body": ()},
    "key": {"buggy": 'return options["{key}"]', "fix": 'return options.get("{key}", {default})',
            "wrong": ('return options["{key}".upper()]', 'return options.get("{key}")["value"]'),
            "error": "KeyError: '{key}'", "body": ()},
    "zero": {"buggy": "return total / len({v})", "fix": "return total / len({v}) if {v} else 0.0",
             "wrong": ("return total // len({v})", "return total / (len({v}) - 0)"),
             "error": "ZeroDivisionError: division by zero", "body": ()},
    "concat": {"buggy": 'label = "{prefix}" + {v}', "fix": 'label = "{prefix}" + str({v})',
               "wrong": ('label = "{prefix}" + {v} + ""', 'label = "{prefix}".join({v})'),
               "error": 'TypeError: can only concatenate str (not "int") to str', "body": ("    return label",)},
    "parse": {"buggy": "value = int({v})", "fix": "value = int({v}.strip())",
              "wrong": ("value = int({v}, 10)", "value = int({v}.lstrip())"),
              "error": "ValueError: invalid literal for int() with base 10: '{n}\\n'",
              "body": ("    return value",)},
}
_SYSTEM = ("You are an autonomous agent in a Linux container. The repository is checked out in /app. "
           "Use the bash tool to run commands. When the task is done, reply with a short summary.",
           "You have shell access through the `bash` tool (working directory /app). Solve the task below; "
           "finish with a summary of what you changed.",
           "Terminal task. Run shell commands with bash(command=...) in /app until the task is solved, "
           "then describe the fix.")
_TASK_TEST = ("The test `{test_path}::{test_name}` fails. Fix the code (not the test) so that it passes.",
              "CI is red: `{test_name}` in {test_path} fails with {errname}. Make it pass without editing tests.",
              "Please fix the bug in `{func}` that makes {test_path}::{test_name} fail.")
_TASK_SCRIPT = ("Running `{script_cmd}` crashes with {errname}. Fix the library so that the command works.",
                "`{script_cmd}` fails:\n\n```\n{errline}\n```\n\nMake it run to completion.",
                "The report job is broken: `{script_cmd}` raises {errname}. Please fix it.")
_SAY = {
    "list": ("Let me look at the repository layout.", "First, what is in /app?", "Listing the files.",
             "Let me get an overview of the project."),
    "grep": ("Let me find where `{func}` is defined.", "Searching for {func}.", "grep for the function.",
             "Where is {func}?"),
    "window": ("Let me print the lines around it.", "Showing the code near line {line}.",
               "Let me read that part of the file.", "Looking at the function."),
    "cat": ("Let me read {path}.", "Reading {path}.", "Opening {path}.", "Let me see {path}."),
    "edit": ("Applying the fix.", "Let me patch that line.", "Editing {path}.", "I'll change the faulty line."),
    "retry_edit": ("Still failing; another change.", "That did not fix it. Trying something else.",
                   "Let me adjust the edit.", "Not yet; changing the line again."),
    "check": ("Let me check.", "Running it now.", "Verifying.", "Let me run it again."),
    "reproduce": ("Let me reproduce the failure first.", "First, run it to see the error.",
                  "Reproducing the problem.", "Let me see the failure."),
    "git": ("Let me look at the history of {path}.", "Checking recent commits.", "What changed recently?",
            "Let me see the git log."),
    "show": ("Let me see what that commit changed.", "Showing the commit.", "Let me look at the diff.",
             "What did it change?"),
    "pip": ("Let me set up the environment first.", "Installing the requirements.",
            "Making sure the dependencies are installed.", "Setting up."),
    "review": ("Let me review the change.", "Checking the diff.", "Reviewing what I changed.",
               "Final look at the diff."),
    "suite": ("Let me run the whole suite too.", "Running all the tests.", "Full test run to be safe.",
              "Checking nothing else broke."),
    "retry": ("Typo; again.", "Let me fix that command.", "Oops, retrying.", "Wrong path; trying again.",
              "Let me correct that."),
}
_TYPOS = {"pip3": ("pi3", "ipp3"), "ls": ("sl", "l"), "find": ("fnid", "fidn"), "tree": ("tre",), "cat": ("cta", "ca"),
          "head": ("haed",),
          "grep": ("gerp", "grpe"), "sed": ("sde", "esd"), "perl": ("pelr",), "python": ("pyhton", "pytohn"),
          "python3": ("pyhton3", "pthon3"), "pytest": ("pytset", "pyest"), "git": ("gti", "gi"), "pip": ("ipp", "pi")}


def _call_id(rng: np.random.Generator, n: int) -> str:
    return f"call_{n:02d}{int(rng.integers(16 ** 8)):08x}"


def _out(text: str, rc: int = 0) -> str:
    """What the harness shows: the output, and the exit code when it is not zero."""
    return text if rc == 0 else f"{text}\n[exit code: {rc}]" if text else f"[exit code: {rc}]"


class _Shell:
    """One transcript in OpenAI chat format: bash calls, counted, with failures retried."""

    def __init__(self, rng: np.random.Generator, task: dict) -> None:
        self.rng, self.task = rng, task
        self.messages: list[dict] = [{"role": "system", "content": pick(rng, _SYSTEM)},
                                     {"role": "user", "content": task["text"]}]
        self.n_calls = self.n_failures = 0

    def _say(self, key: str, **extra: object) -> str:
        t = self.task
        fill = {"func": t["func"], "line": t["line"], "path": t["src"], **extra}
        return pick(self.rng, _SAY[key]).format(**fill)

    def _call(self, said: str, command: str, output: str) -> None:
        self.n_calls += 1
        cid = _call_id(self.rng, self.n_calls)
        self.messages.append({"role": "assistant", "content": said, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": "bash",
                                                         "arguments": json.dumps({"command": command})}}]})
        self.messages.append({"role": "tool", "tool_call_id": cid, "name": "bash", "content": output})

    def run(self, key: str, command: str, output: str, rc: int = 0, *, fault: tuple[str, str, int] | None = None,
            **extra: object) -> None:
        """The command; where it fails (:data:`_P_FAIL`), first a broken version of it (a typo in
        the program's name, or ``fault``: the command's own failure, as ``(command, output,
        exit code)``), then the command itself."""
        said = self._say(key, **extra)
        if self.rng.random() < _P_FAIL:
            self.n_failures += 1
            if fault is None or self.rng.random() < 0.5:
                program = command.split()[0]
                typo = pick(self.rng, _TYPOS.get(program, (program[::-1],)))
                self._call(said, typo + command[len(program):], _out(f"bash: {typo}: command not found", 127))
            else:
                bad, bad_out, bad_rc = fault
                self._call(said, bad, _out(bad_out, bad_rc))
            said = self._say("retry")
        self._call(said, command, _out(output, rc))

    def answer(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})

    # the commands ------------------------------------------------------------------------------

    def listing(self, second: bool = False) -> None:
        t, rng = self.task, self.rng
        top = t["src"].split("/")[0]
        if not second:
            cmd = pick(rng, ("ls", "ls -la", "ls -F", "find . -name '*.py' -not -path './.git/*'", "tree -L 2"))
        else:
            cmd = pick(rng, (f"ls {t['pkg_dir']}", f"ls -la {t['pkg_dir']}", f"find {top} -name '*.py'",
                             f"tree {top}"))
        if cmd.startswith("find"):
            files = [p for p in t["files"] if p.endswith(".py") and (not second or p.startswith(top))]
            out = "\n".join("./" + p if not second else p for p in rng.permutation(files).tolist())
        elif cmd.startswith("tree"):
            out = _tree(t, top if second else ".")
        elif second:
            out = _ls(rng, [p.rsplit("/", 1)[-1] for p in t["files"] if p.rsplit("/", 1)[0] == t["pkg_dir"]],
                      cmd.startswith("ls -la"))
        else:
            out = _ls(rng, sorted({p.split("/")[0] for p in t["files"]}), cmd == "ls -la", cmd == "ls -F")
        fault = None
        if second:
            where = cmd.split()[-1] if cmd.startswith(("ls", "tree")) else cmd.split()[1]
            bad = where + "s"
            program = cmd.split()[0]
            message = {"ls": f"ls: cannot access '{bad}': No such file or directory",
                       "find": f"find: '{bad}': No such file or directory",
                       "tree": f"{bad}  [error opening dir]\n\n0 directories, 0 files"}[program]
            fault = (cmd.replace(f" {where}", f" {bad}", 1), message, 2 if program != "find" else 1)
        self.run("list", cmd, out, fault=fault)

    def cat(self, path: str, *, head: bool = False) -> None:
        rng = self.rng
        lines = self.task["contents"][path]
        if head:
            n = int(pick(rng, (40, 60, 80)))
            cmd, out = f"head -n {n} {path}", "\n".join(lines[:n])
        elif rng.random() < 0.35:
            cmd, out = f"cat -n {path}", "\n".join(f"{i + 1:6d}\t{line}" for i, line in enumerate(lines))
        else:
            cmd, out = f"cat {path}", "\n".join(lines)
        bad = _misspell_path(rng, path)
        prog = cmd.split()[0]
        self.run("cat", cmd, out, fault=(cmd.replace(path, bad), f"{prog}: {bad}: No such file or directory", 1),
                 path=path)

    def grep(self, narrow: bool = False) -> None:
        t, rng = self.task, self.rng
        if narrow:
            cmd = pick(rng, (f"grep -n '{t['v']}' {t['src']}", f"grep -n 'def {t['func']}' {t['src']}"))
            if "def " in cmd:
                out = f"{t['def_line']}:def {t['func']}({t['v']}, options=None):"
            else:
                out = "\n".join(f"{i + 1}:{line}" for i, line in enumerate(t["contents"][t["src"]])
                                if t["v"] in line)
            missing = _misspell_path(rng, t["src"])
            bad = (cmd.replace(t["src"], missing), f"grep: {missing}: No such file or directory", 2)
        else:
            top = t["src"].split("/")[0]
            cmd = pick(rng, (f"grep -rn 'def {t['func']}' .", f"grep -rn '{t['func']}' --include='*.py' .",
                             f"grep -rn {t['func']} {top}", f"grep -rn '{t['func']}(' ."))
            prefix = "./" if cmd.endswith(" .") else ""
            hits = [f"{prefix}{t['src']}:{t['def_line']}:def {t['func']}({t['v']}, options=None):"]
            if "def " not in cmd:
                hits += [f"{prefix}{t['caller']}:{t['caller_line']}:        result = {t['func']}({t['v']}, options)",
                         f"{prefix}{t['test_path']}:1:from {t['pkg']}.{t['mod']} import {t['func']}"]
            out = "\n".join(hits[i] for i in rng.permutation(len(hits)))
            missing = "./" + top + "s" if cmd.endswith(" .") else top + "s"
            bad = (cmd[:-1] + missing if cmd.endswith(" .") else cmd + "s",
                   f"grep: {missing}: No such file or directory", 2)
        self.run("grep", cmd, out, fault=bad)

    def window(self, line: int) -> None:
        """``sed -n`` around ``line`` of the source (the line number read from an earlier output)."""
        t, rng = self.task, self.rng
        before, after = int(pick(rng, (3, 5, 8, 10))), int(pick(rng, (5, 8, 10, 15)))
        a, b = max(1, line - before), line + after
        lines = t["contents"][t["src"]]
        cmd = pick(rng, (f"sed -n '{a},{b}p' {t['src']}", f"sed -n {a},{b}p {t['src']}"))
        bad = _misspell_path(rng, t["src"])
        self.run("window", cmd, "\n".join(lines[a - 1:b]),
                 fault=(cmd.replace(t["src"], bad), f"sed: can't read {bad}: No such file or directory", 2))

    def edit(self, old: str, new: str, *, retry: bool = False) -> None:
        t, rng = self.task, self.rng
        path, line = t["src"], t["line"]
        how = float(rng.random())
        if how < 0.55:
            cmd = f"sed -i 's/{_sed_escape(old)}/{_sed_escape(new)}/' {path} && sed -n '{line}p' {path}"
            out = f"    {new}"
            char = len(f"s/{_sed_escape(old)}/{_sed_escape(new)}")
            fault = (f"sed -i 's/{_sed_escape(old)}/{_sed_escape(new)}' {path} && sed -n '{line}p' {path}",
                     f"sed: -e expression #1, char {char}: unterminated `s' command", 1)
        elif how < 0.85:
            cmd = (f"python3 - <<'EOF'\nimport pathlib\np = pathlib.Path({path!r})\ns = p.read_text()\n"
                   f"assert {old!r} in s\np.write_text(s.replace({old!r}, {new!r}, 1))\nprint('patched', p)\nEOF")
            out = f"patched {path}"
            fault = (cmd.replace("import pathlib\n", "", 1),
                     "Traceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\n"
                     "NameError: name 'pathlib' is not defined", 1)
        else:
            cmd = (f"perl -pi -e 's/\\Q{old.replace('/', chr(92) + '/')}\\E/{new.replace('/', chr(92) + '/')}/' "
                   f"{path} && grep -nF {json.dumps(new)} {path}")
            out = f"{line}:    {new}"
            bad = _misspell_path(rng, path)
            fault = (cmd.replace(f" {path} &&", f" {bad} &&"),
                     f"Can't open {bad}: No such file or directory.", 2)
        self.run("retry_edit" if retry else "edit", cmd, out, fault=fault, path=path)

    def check(self, key: str, outcome: str, *, current: str | None = None) -> None:
        """The test run (``outcome``: ``fail``, ``wrong`` (fails after an edit that did not fix
        it: ``current`` is the line as that edit left it) or ``pass``) for a failing test, the
        command for a crashing one."""
        t, rng = self.task, self.rng
        if t["kind"] == "script":
            cmd = t["script_cmd"]
            out, rc = (_script_ok(rng, t), 0) if outcome == "pass" else (_traceback(t, current), 1)
            bad = _misspell_path(rng, t["data"])
            fault = (cmd.replace(t["data"], bad),
                     f"Traceback (most recent call last):\n  File \"/app/{t['script']}\", line 9, in <module>\n"
                     f"    with open(sys.argv[1]) as fh:\nFileNotFoundError: [Errno 2] No such file or directory: "
                     f"'{bad}'", 1)
        else:
            sel = t["selector"]
            runner = pick(rng, ("python -m pytest", "pytest", "python3 -m pytest"))
            flags = pick(rng, ("", " -q", " -x", " -x -q"))
            cmd = f"{runner} {sel}{flags}"
            out, rc = (_pytest_ok(rng, t, sel), 0) if outcome == "pass" else (_pytest_fail(rng, t, current), 1)
            bad = sel.replace("test_", "tests_", 1)
            fault = (f"{runner} {bad}{flags}", f"ERROR: file or directory not found: {bad.split('::')[0]}\n\n"
                     f"no tests ran in 0.0{int(rng.integers(1, 9))}s", 4)
        self.run(key, cmd, out, rc, fault=fault)

    def suite(self) -> None:
        t, rng = self.task, self.rng
        runner = pick(rng, ("python -m pytest", "pytest", "python3 -m pytest"))
        cmd = f"{runner} {pick(rng, ('', ' tests', ' -q', ' tests -q'))}".replace("  ", " ").strip()
        n = t["n_tests"] + int(rng.integers(20, 200))
        out = _session(rng, n, f"{n} passed in {int(rng.integers(1, 9))}.{int(rng.integers(10, 99))}s",
                       dots=True)
        self.run("suite", cmd, out, fault=(cmd + " --cov", "ERROR: usage: pytest [options] [file_or_dir] "
                                           "[file_or_dir] [...]\npytest: error: unrecognized arguments: --cov", 4))

    def git_log(self) -> None:
        t, rng = self.task, self.rng
        n = int(pick(rng, (5, 10, 20)))
        cmd = pick(rng, (f"git log --oneline -n {n} -- {t['src']}", f"git log --oneline -{n} {t['src']}",
                         f"git log -n {n} --format='%h %an %s' -- {t['src']}"))
        with_author = "%an" in cmd
        out = "\n".join(f"{sha} {who + ' ' if with_author else ''}{msg}" for sha, who, msg in t["history"][:n])
        if "--oneline" in cmd:
            fault = (cmd.replace("--oneline", "--onelin"), "fatal: unrecognized argument: --onelin", 128)
        else:
            fault = (cmd.replace("--format", "--formt"), "fatal: unrecognized argument: --formt=%h %an %s", 128)
        self.run("git", cmd, out, fault=fault, path=t["src"])

    def git_show(self) -> None:
        t, rng = self.task, self.rng
        sha = t["history"][0][0]
        cmd = pick(rng, (f"git show {sha}", f"git show {sha} -- {t['src']}", f"git diff {sha}~1 {sha}",
                         f"git diff {sha}^ {sha} -- {t['src']}"))
        head = (f"commit {sha}{''.join(pick(rng, tuple('0123456789abcdef')) for _ in range(33))}\n"
                f"Author: {t['history'][0][1]} <{t['history'][0][1].lower()}@example.org>\n\n    "
                f"{t['history'][0][2]}\n\n") if cmd.startswith("git show") else ""
        out = (f"{head}diff --git a/{t['src']} b/{t['src']}\n--- a/{t['src']}\n+++ b/{t['src']}\n"
               f"@@ -{t['line'] - 2},5 +{t['line'] - 2},5 @@ def {t['func']}({t['v']}, options=None):\n"
               f"-    {t['fix']}\n+    {t['buggy']}")
        bad = sha[:-1] + pick(rng, tuple("0123456789abcdef".replace(sha[-1], "")))
        self.run("show", cmd, out, fault=(cmd.replace(sha, bad, 1),
                                          f"fatal: ambiguous argument '{bad}': unknown revision or path not in "
                                          "the working tree.", 128))

    def review(self) -> None:
        t, rng = self.task, self.rng
        cmd = pick(rng, ("git diff", f"git diff {t['src']}", "git diff --stat", "git status --short && git diff"))
        diff = (f"diff --git a/{t['src']} b/{t['src']}\nindex {int(rng.integers(16 ** 7)):07x}.."
                f"{int(rng.integers(16 ** 7)):07x} 100644\n--- a/{t['src']}\n+++ b/{t['src']}\n"
                f"@@ -{t['line'] - 2},5 +{t['line'] - 2},5 @@ def {t['func']}({t['v']}, options=None):\n"
                f"-    {t['buggy']}\n+    {t['fix']}")
        if cmd == "git diff --stat":
            out = f" {t['src']} | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)"
        elif cmd.startswith("git status"):
            out = f" M {t['src']}\n{diff}"
        else:
            out = diff
        self.run("review", cmd, out, fault=("git diff HEAD~0..", "fatal: ambiguous argument 'HEAD~0..': unknown "
                                            "revision or path not in the working tree.", 128))

    def pip_requirements(self) -> None:
        t, rng = self.task, self.rng
        cmd = pick(rng, ("pip install -r requirements.txt", "python -m pip install -r requirements.txt",
                         "pip3 install -r requirements.txt"))
        lines = []
        for i, p in enumerate(t["requirements"]):
            if rng.random() < 0.6:
                lines.append(f"Requirement already satisfied: {p} in /usr/local/lib/python3.11/site-packages "
                             f"(from -r requirements.txt (line {i + 1}))")
            else:
                lines.append(f"Collecting {p} (from -r requirements.txt (line {i + 1}))\n  Downloading "
                             f"{p.replace('-', '_')}-{int(rng.integers(0, 9))}.{int(rng.integers(0, 30))}."
                             f"{int(rng.integers(0, 9))}-py3-none-any.whl ({int(rng.integers(20, 900))} kB)")
        installed = [p for p, line in zip(t["requirements"], lines) if line.startswith("Collecting")]
        if installed:
            lines.append("Installing collected packages: " + ", ".join(installed))
            lines.append("Successfully installed " + " ".join(installed))
        self.run("pip", cmd, "\n".join(lines),
                 fault=(cmd.replace("requirements.txt", "requirement.txt"),
                        "ERROR: Could not open requirements file: [Errno 2] No such file or directory: "
                        "'requirement.txt'", 1))

    def pip_editable(self) -> None:
        t, rng = self.task, self.rng
        cmd = pick(rng, ("pip install -e .", "pip3 install -e .", "python -m pip install -e ."))
        version = f"0.{int(rng.integers(1, 20))}.{int(rng.integers(0, 9))}"
        out = (f"Obtaining file:///app\n  Installing build dependencies ... done\n  Checking if build backend "
               f"supports build_editable ... done\nBuilding wheels for collected packages: {t['pkg']}\n"
               f"Successfully built {t['pkg']}\nInstalling collected packages: {t['pkg']}\n"
               f"Successfully installed {t['pkg']}-{version}")
        self.run("pip", cmd, out, fault=(cmd.replace("-e .", "-e ./app"),
                                         "ERROR: ./app is not a valid editable requirement. It should either be a "
                                         "path to a local project or a VCS URL.", 1))

    def version(self) -> None:
        self.run("pip", pick(self.rng, ("python --version", "python3 --version")),
                 f"Python 3.11.{int(self.rng.integers(2, 10))}")


def _ls(rng: np.random.Generator, entries: list[str], long: bool = False, classify: bool = False) -> str:
    if long:
        rows = ["total " + str(int(rng.integers(20, 80))), "drwxr-xr-x 1 root root 4096 Jan  8 10:12 .",
                "drwxr-xr-x 1 root root 4096 Jan  8 10:11 ..", "drwxr-xr-x 8 root root 4096 Jan  8 10:12 .git"]
        for e in entries:
            is_dir = "." not in e
            rows.append(f"{'d' if is_dir else '-'}rw{'x' if is_dir else '-'}r-{'x' if is_dir else '-'}r-"
                        f"{'x' if is_dir else '-'} 1 root root {4096 if is_dir else int(rng.integers(80, 9000)):5d} "
                        f"Jan  8 10:12 {e}")
        return "\n".join(rows)
    if classify:
        entries = [e + "/" if "." not in e else e for e in entries]
    return "  ".join(entries)


def _tree(task: dict, root: str) -> str:
    files = [p for p in task["files"] if root == "." or p.startswith(root + "/")]
    lines = [root]
    for p in sorted(files):
        rel = p if root == "." else p[len(root) + 1:]
        depth = rel.count("/")
        lines.append("    " * depth + "|-- " + rel.rsplit("/", 1)[-1])
    dirs = len({p.rsplit("/", 1)[0] for p in files if "/" in p})
    lines.append(f"\n{dirs} directories, {len(files)} files")
    return "\n".join(lines)


def _misspell_path(rng: np.random.Generator, path: str) -> str:
    head, _, tail = path.rpartition("/")
    options = [f"{head}s/{tail}" if head else "src/" + tail, path.replace(".py", "s.py").replace(".csv", "s.csv"),
               tail if head else "app/" + path]
    return pick(rng, tuple(o for o in options if o != path) or ("x" + path,))


def _sed_escape(text: str) -> str:
    out = []
    for ch in text:
        out.append("\\" + ch if ch in "/[].*^$\\&" else ch)
    return "".join(out)


def _session(rng: np.random.Generator, n: int, summary: str, *, dots: bool) -> str:
    head = (f"============================= test session starts ==============================\n"
            f"platform linux -- Python 3.11.{int(rng.integers(2, 10))}, pytest-{int(rng.integers(7, 9))}."
            f"{int(rng.integers(0, 5))}.{int(rng.integers(0, 4))}, pluggy-1.5.0\nrootdir: /app\n"
            f"collected {n} items\n\n")
    body = ("." * min(n, 60) + "\n\n") if dots else ""
    return f"{head}{body}{'=' * 20} {summary} {'=' * 20}"


def _pytest_ok(rng: np.random.Generator, task: dict, selector: str) -> str:
    n = 1 if "::" in selector else task["n_tests"]
    return _session(rng, n, f"{n} passed in 0.{int(rng.integers(10, 99))}s", dots=True)


def _pytest_fail(rng: np.random.Generator, task: dict, current: str | None) -> str:
    """A failing test run: the original error, or after an edit that did not fix it
    (``current``: the line it left) that error or a wrong result."""
    t = task
    err = (f"AssertionError: assert {int(rng.integers(0, 9))} == {int(rng.integers(10, 99))}" if current and
           rng.random() < 0.5 else t["error"])
    n = t["n_tests"]
    return (_session(rng, n, "", dots=False).rsplit("\n", 1)[0] + "\n" +
            f"{t['test_path']} {'.' * (n - 1)}F{' ' * 10}[100%]\n\n"
            f"=================================== FAILURES ===================================\n"
            f"____________________________ {t['test_name']} ____________________________\n\n"
            f"    def {t['test_name']}():\n>       assert {t['func']}({t['arg']}) == {t['expected']}\n\n"
            f"{t['test_path']}:{t['test_line']}: \n"
            f"{t['src']}:{t['line']}: in {t['func']}\n    {current or t['buggy']}\nE   {err}\n"
            f"=========================== short test summary info ============================\n"
            f"FAILED {t['test_path']}::{t['test_name']} - {err}\n"
            f"========================= 1 failed, {n - 1} passed in 0.{int(rng.integers(10, 99))}s "
            "=========================")


def _traceback(task: dict, current: str | None) -> str:
    """The crashing command's traceback, through the faulty line or (``current``) the line an
    edit that did not fix it left."""
    t = task
    err = t["error"]
    return (f"Traceback (most recent call last):\n  File \"/app/{t['script']}\", line 14, in <module>\n"
            f"    main(sys.argv[1])\n  File \"/app/{t['script']}\", line 10, in main\n"
            f"    rows = {t['func']}(load(path))\n  File \"/app/{t['src']}\", line {t['line']}, in {t['func']}\n"
            f"    {current or t['buggy']}\n{err}")


def _script_ok(rng: np.random.Generator, task: dict) -> str:
    n = int(rng.integers(3, 500))
    return pick(rng, (f"Wrote {n} rows to out/{task['mod']}.csv", f"{task['func']}: {n} records processed\nDone.",
                      f"Report written: out/report_{word(rng)}.txt ({n} lines)"))


def _summary(rng: np.random.Generator, task: dict) -> str:
    t = task
    return pick(rng, (f"Fixed `{t['func']}` in {t['src']}: `{t['buggy']}` is now `{t['fix']}`.",
                      f"The {t['errname']} came from line {t['line']} of {t['src']}; I changed it to `{t['fix']}`.",
                      f"Done. {t['src']} line {t['line']} now reads `{t['fix']}`, and "
                      f"{'the test passes' if t['kind'] == 'test' else 'the command runs'}.",
                      f"{t['func']} no longer raises {t['errname']}."))


def _episode(rng: np.random.Generator, strategy: str, task: dict) -> _Shell:
    sh = _Shell(rng, task)
    t = task
    if strategy == "explore_then_edit":
        sh.listing()
        if rng.random() < _P_SECOND_LISTING:
            sh.listing(second=True)
        sh.cat(t["src"])
        sh.edit(t["buggy"], t["fix"])
        sh.check("check", "pass")
    elif strategy == "grep_localise":
        sh.grep()
        if rng.random() < _P_NARROW_GREP:
            sh.grep(narrow=True)
        sh.window(t["def_line"])
        sh.edit(t["buggy"], t["fix"])
        sh.check("check", "pass")
    elif strategy == "reproduce_first":
        sh.check("reproduce", "fail")
        sh.window(t["line"])
        sh.edit(t["buggy"], t["fix"])
        sh.check("check", "pass")
        if rng.random() < _P_SUITE:
            sh.suite()
    elif strategy == "blind_retry":
        wrong = list(t["wrong"]) if rng.random() < 0.5 else list(t["wrong"])[::-1]
        edits = wrong[:2] if rng.random() < _P_THIRD_EDIT else wrong[:1]
        old = t["buggy"]
        for i, new in enumerate(edits):
            sh.edit(old, new, retry=i > 0)
            sh.check("check", "wrong", current=new)
            old = new
        sh.edit(old, t["fix"], retry=True)
        sh.check("check", "pass")
    elif strategy == "read_many":
        others = [p for p in (t["caller"], t["test_path"], t["init"], "README.md") if p in t["contents"]]
        order = [t["src"], *(others[i] for i in rng.permutation(len(others)))]
        n = 3 + int(rng.random() < _P_MORE_FILES)
        n += int(n == 4 and rng.random() < _P_MORE_FILES)
        chosen = order[:n]
        for path in (chosen[i] for i in rng.permutation(len(chosen))):
            sh.cat(path, head=bool(rng.random() < 0.25))
        sh.edit(t["buggy"], t["fix"])
        sh.check("check", "pass")
    elif strategy == "git_history":
        sh.git_log()
        sh.git_show()
        sh.edit(t["buggy"], t["fix"])
        sh.check("check", "pass")
    elif strategy == "setup_first":
        sh.pip_requirements()
        if rng.random() < _P_VERSION:
            sh.version()
        sh.pip_editable()
        sh.check("reproduce", "fail")
        sh.cat(t["src"])
        sh.edit(t["buggy"], t["fix"])
        sh.check("check", "pass")
    else:  # pragma: no cover - STRATEGIES is closed
        raise ValueError(strategy)
    if rng.random() < _P_REVIEW:
        sh.review()
    sh.answer(_summary(rng, t))
    return sh


def _filler(rng: np.random.Generator) -> list[str]:
    fname = f"_{word(rng)}_{pick(rng, _NOUNS)}"
    arg = pick(rng, ("value", "item", "text", "key"))
    return [f"def {fname}({arg}):", f'    """{pick(rng, ("Helper.", "Internal.", "Return a copy."))}"""',
            f"    return {pick(rng, (f'{arg}', f'str({arg})', f'list({arg})', f'{arg} or None'))}", "", ""]


def _task(rng: np.random.Generator) -> dict:
    pkg = word(rng)
    mod = pick(rng, _NOUNS) + pick(rng, ("", "s", "_utils", "_io"))
    func = f"{pick(rng, _VERBS)}_{pick(rng, _NOUNS)}"
    kind = pick(rng, KINDS)
    bug_kind = pick(rng, tuple(_BUGS))
    bug = _BUGS[bug_kind]
    fill = {"v": pick(rng, ("items", "values", "rows", "data", word(rng))),
            "key": pick(rng, ("timeout", "encoding", "delimiter", word(rng))),
            "default": pick(rng, ("None", "0", '""', "30")), "prefix": pick(rng, ("id-", "#", "item_", "key:")),
            "n": int(rng.integers(1, 999))}
    src = pick(rng, _LAYOUTS).format(pkg=pkg, mod=mod)
    pkg_dir = src.rsplit("/", 1)[0]
    t: dict = {"pkg": pkg, "mod": mod, "func": func, "kind": kind, "v": fill["v"], "src": src, "pkg_dir": pkg_dir,
               "buggy": bug["buggy"].format(**fill), "fix": bug["fix"].format(**fill),
               "wrong": tuple(w.format(**fill) for w in bug["wrong"]), "error": bug["error"].format(**fill),
               "test_path": pick(rng, _TEST_LAYOUTS).format(mod=mod), "init": f"{pkg_dir}/__init__.py",
               "caller": f"{pkg_dir}/{pick(rng, ('cli', 'api', 'core', 'pipeline'))}.py",
               "arg": pick(rng, ("[]", "[1]", "None", '" 7\\n"')), "expected": pick(rng, ("[]", "0", "None", '""')),
               "n_tests": int(rng.integers(3, 25))}
    t["errname"] = t["error"].split(":")[0]
    t["test_name"] = f"test_{func}_{pick(rng, ('empty', 'none', 'regression', 'edge_case', 'single'))}"
    # the source file: helpers, then the faulty function
    lines = [f'"""{pick(rng, ("Utilities for", "Helpers to", "Code that handles"))} {mod.replace("_", " ")}."""',
             "from __future__ import annotations", "", pick(rng, ("import os", "import re", "import json")), "", ""]
    for _ in range(int(rng.integers(1, 6))):
        lines += _filler(rng)
    t["def_line"] = len(lines) + 1
    lines += [f"def {func}({t['v']}, options=None):", f'    """{pick(rng, ("Return the total.", "Combine them."))}"""',
              "    options = options or {}", "    total = 0", f"    {t['buggy']}",
              *(b.format(**fill) for b in bug["body"]), "", ""]
    lines += _filler(rng)
    t["line"] = t["def_line"] + 4
    caller = [f"from {pkg}.{mod} import {func}", "", "", f"class {name(rng)}Runner:",
              f"    def run(self, {t['v']}):", "        options = self.options()",
              f"        result = {func}({t['v']}, options)", "        return result"]
    t["caller_line"] = 7
    test = [f"from {pkg}.{mod} import {func}", "", "", f"def test_{func}_basic():",
            f"    assert {func}([1, 2]) is not None", "", "", f"def {t['test_name']}():",
            f"    assert {func}({t['arg']}) == {t['expected']}"]
    t["test_line"] = 9
    init = [f'"""The {pkg} package."""', f"from {pkg}.{mod} import {func}", "",
            f'__version__ = "0.{int(rng.integers(1, 20))}.{int(rng.integers(0, 9))}"']
    readme = [f"# {pkg}", "", f"{pick(rng, ('Tools', 'A library', 'Utilities'))} for {pick(rng, _NOUNS)} files.", "",
              "## Development", "", "    pip install -e .", "    python -m pytest"]
    t["requirements"] = sorted({pick(rng, _PIP) for _ in range(int(rng.integers(2, 5)))})
    t["script"] = f"scripts/{pick(rng, ('build', 'make', 'export', 'run'))}_{pick(rng, _NOUNS)}.py"
    t["data"] = f"data/{word(rng)}.csv"
    t["script_cmd"] = f"python {t['script']} {t['data']}"
    t["contents"] = {src: lines, t["caller"]: caller, t["test_path"]: test, t["init"]: init, "README.md": readme}
    t["files"] = [src, t["caller"], t["init"], t["test_path"], "README.md", "pyproject.toml", "requirements.txt",
                  t["script"], t["data"]]
    t["selector"] = pick(rng, (f"{t['test_path']}::{t['test_name']}", t["test_path"],
                               f"{t['test_path']} -k {t['test_name']}"))
    t["history"] = [(f"{int(rng.integers(16 ** 7)):07x}", name(rng),
                     pick(rng, (f"Simplify {func}", f"Refactor {mod}", f"Speed up {func}", f"Clean up {pkg}.{mod}")))
                    for _ in range(int(rng.integers(3, 8)))]
    errline = t["error"]
    text = pick(rng, _TASK_TEST if kind == "test" else _TASK_SCRIPT)
    t["text"] = text.format(errline=errline, **{k: v for k, v in t.items() if isinstance(v, (str, int))})
    return t


def terminal(*, n_questions: int = 60, n_samples: int = 4, arms: dict[str, dict[str, float]] | None = None,
             random_state: RandomState = 0) -> World:
    """Generate the terminal-agent world (one ``bash`` tool; OpenAI ``tool_calls`` records).

    Parameters
    ----------
    n_questions, n_samples
        Tasks (bug reports), and episodes per task and arm.
    arms
        Arm name -> strategy mixture (default: ``base`` and ``rl``, which differ only in it).
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.

    Returns
    -------
    World
        Records in format ``openai``; truth ``arm, question_id, sample_id, strategy, kind,
        n_calls, n_failures, correct``.

    Examples
    --------
    >>> w = terminal(n_questions=2, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"]))
    ('openai', 4, ['base', 'rl'])
    >>> w.runs["n_rounds"].to_list() == w.truth["n_calls"].to_list()
    True
    """
    rng = as_generator(random_state)
    arms = arms or ARMS
    tasks = [(f"terminal-{i:04d}", _task(rng)) for i in range(n_questions)]

    def episode(rng: np.random.Generator, arm: str, qid: str, sample: int, strategy: str, task: dict
                ) -> tuple[dict, tuple]:
        sh = _episode(rng, strategy, task)
        correct = bool(rng.random() < _SUCCESS[strategy])
        return ({"arm": arm, "question_id": qid, "sample_id": sample, "gold": [], "correct": correct,
                 "messages": sh.messages}, (task["kind"], sh.n_calls, sh.n_failures, correct))

    return planted_world("terminal", "openai", rng, tasks, arms, n_samples, episode, _SUCCESS,
                         truth_schema={"kind": pl.String, "n_calls": pl.Int64, "n_failures": pl.Int64,
                                       "correct": pl.Boolean})
