"""The library never imports the command line: only mechanism/cli.py and mechanism/commands/
may import ``mechanism.commands`` (DESIGN.md section 3)."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module name imported by ``path`` (absolute, including ``importlib.import_module`` of a literal)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
              and node.args and isinstance(node.args[0], (ast.Constant, ast.JoinedStr))):
            arg = node.args[0]
            text = arg.value if isinstance(arg, ast.Constant) else "".join(
                v.value for v in arg.values if isinstance(v, ast.Constant))
            found.append((node.lineno, str(text)))
    return found


def _allowed(path: Path) -> bool:
    rel = path.relative_to(ROOT).as_posix()
    return rel == "mechanism/cli.py" or rel.startswith("mechanism/commands/")


def test_nothing_outside_the_cli_imports_mechanism_commands():
    offenders = []
    for folder in ("mechanism", "analyses", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if _allowed(path):
                continue
            for line, name in _imports(path):
                if name == "mechanism.commands" or name.startswith("mechanism.commands."):
                    offenders.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not offenders, "\n".join(offenders)


def test_the_checker_sees_every_form_of_import(tmp_path):
    """The check above must be able to fail: each import form is found."""
    sample = tmp_path / "probe.py"
    sample.write_text("import mechanism.commands.passkt\nfrom mechanism.commands import read\n"
                      "from mechanism.commands.read import summary\nimport importlib\n"
                      "importlib.import_module('mechanism.commands.demo')\n", encoding="utf-8")
    names = [n for _, n in _imports(sample)]
    assert {"mechanism.commands.passkt", "mechanism.commands", "mechanism.commands.read",
            "mechanism.commands.demo"} <= set(names)


def test_importing_the_library_loads_no_command_module():
    code = ("import sys, mechanism, mechanism.report, mechanism.demo, mechanism.checkpoints; "
            "import mechanism.report.study, mechanism.report.track; "
            "print(sorted(m for m in sys.modules if m.startswith('mechanism.commands')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == "[]", out.stdout


def test_import_mechanism_prints_nothing():
    out = subprocess.run([sys.executable, "-c", "import mechanism"], capture_output=True, text=True, check=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.stdout == "" and out.stderr == ""
