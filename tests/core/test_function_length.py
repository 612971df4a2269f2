"""No public function or method of the package is over 80 lines of code, so an entry point can
be read top to bottom: its docstring, comments and blank lines do not count; a private helper
(``_name``, or anything inside a private class) is not an entry point."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 80


def code_lines(source: str, node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines of ``node``'s body that hold code: its docstring, blank lines and lines holding only
    a comment left out."""
    body = node.body
    first = body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        body = body[1:]
    if not body:
        return 0
    lines = source.splitlines()[body[0].lineno - 1: node.end_lineno]
    return sum(1 for line in lines if line.strip() and not line.strip().startswith("#"))


def long_public_functions(root: Path, limit: int = LIMIT) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")

        def walk(nodes, prefix: str, public: bool, path=path, source=source) -> None:
            for node in nodes:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    if public and not node.name.startswith("_") and (n := code_lines(source, node)) > limit:
                        found.append(f"{path.relative_to(root.parent)}:{node.lineno} {prefix}{node.name} ({n} lines)")
                elif isinstance(node, ast.ClassDef):
                    walk(node.body, f"{prefix}{node.name}.", public and not node.name.startswith("_"))

        walk(ast.parse(source).body, "", True)
    return found


def test_no_public_function_is_over_80_lines_of_code():
    found = long_public_functions(ROOT / "mechanism")
    assert not found, "split these into private helpers:\n" + "\n".join(found)


def test_the_count_leaves_out_docstrings_comments_and_blank_lines(tmp_path):
    body = "\n".join(f"    x{i} = {i}  # a comment" for i in range(81))
    method_body = body.replace("    x", "        x")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(
        f'def long():\n    """Doc.\n\n    more doc\n    """\n\n    # why\n{body}\n\n\n'
        f'def _private():\n{body}\n\n\nclass _Hidden:\n    def method(self):\n{method_body}\n\n\n'
        'def short():\n    """Doc."""\n    return (\n        1\n    )\n')
    assert long_public_functions(tmp_path / "pkg") == ["pkg/m.py:1 long (81 lines)"]
    tree = ast.parse((tmp_path / "pkg" / "m.py").read_text())
    short = next(n for n in tree.body if getattr(n, "name", "") == "short")
    assert code_lines((tmp_path / "pkg" / "m.py").read_text(), short) == 3
