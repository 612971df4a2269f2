"""Library errors name the library's parameters, never a command-line flag; the command line
maps a parameter back to the flag it came from (mechanism._cli.cli_message)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from mechanism._cli._common import cli_message
from mechanism._cli.main import build_parser
from mechanism.core.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
FLAG = re.compile(r"(?<![\w-])--[a-z]")
ERRORS = {"InputError", "MechanismError", "OutputError"}


def flag_citing_errors(root: Path) -> list[str]:
    """``path:line`` of every error raised with a ``--flag`` in its text, outside the command line."""
    found = []
    for path in sorted((root / "mechanism").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("mechanism/_cli/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in ERRORS:
                texts = [n.value for arg in node.args for n in ast.walk(arg)
                         if isinstance(n, ast.Constant) and isinstance(n.value, str)]
                if any(FLAG.search(t) for t in texts):
                    found.append(f"{rel}:{node.lineno}")
    return found


def test_no_library_error_cites_a_flag():
    assert not flag_citing_errors(ROOT)


def test_the_check_can_fail(tmp_path):
    (tmp_path / "mechanism").mkdir()
    (tmp_path / "mechanism" / "bad.py").write_text(
        'def f(base):\n    raise InputError(f"`--base` arm {base!r} is not in the input", field="base")\n'
        'def g():\n    raise InputError("fine: a range 1--2 and `base`")\n')
    (tmp_path / "mechanism" / "_cli").mkdir()
    (tmp_path / "mechanism" / "_cli" / "x.py").write_text('raise InputError("give --arm per input")\n')
    assert flag_citing_errors(tmp_path) == ["mechanism/bad.py:2"]


def test_the_command_line_names_the_flag_a_parameter_came_from():
    args = build_parser().parse_args(["passkt", "in.jsonl", "--base", "nope", "--out", "o"])
    option_error = InputError("`base` arm 'nope' is not in the input (arms: ['rl'])", field="base")
    assert cli_message(option_error, args) == "`--base` arm 'nope' is not in the input (arms: ['rl'])"
    # a record's field (a file and a line) is the data's, not an option: left as it is
    record_error = InputError("`base` is not a string", source="in.jsonl", line=3, field="base")
    assert cli_message(record_error, args) == str(record_error)
    # a parameter the user did not give as a flag stays the parameter
    args = build_parser().parse_args(["passkt", "in.jsonl", "--out", "o"])
    assert cli_message(option_error, args) == str(option_error)
