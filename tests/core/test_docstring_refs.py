"""Docstring references resolve, and nothing cites what a reader cannot open.

Every module of ``mechanism`` is parsed (not only imported: comments count too) and three rules
are checked:

1. every Sphinx role ``:mod:``, ``:func:``, ``:class:``, ``:meth:``, ``:attr:``, ``:data:``,
   ``:exc:`` and ``:obj:`` in a docstring names something that exists, found by import. A ``~``
   prefix and trailing ``()`` are ignored. A name without its module is looked up where Sphinx
   would find it: the enclosing class, the module, the module's package, then ``mechanism``;
   an instance attribute (set in ``__init__`` or ``fit``, or a dataclass field) counts as
   an attribute of its class;
2. no docstring or comment cites ``DESIGN.md`` (the project ships none: the design is
   ``docs/design.md``, the methods ``docs/methods.md``) or an issue number: a reader of the
   code cannot open either, so the text says the reason itself;
3. every ``docs/*.md`` path a docstring or comment names exists.

Each rule is shown able to fail on a small module written by the test.
"""
from __future__ import annotations

import ast
import builtins
import importlib
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "mechanism"

ROLE = re.compile(r":(mod|func|class|meth|attr|data|exc|obj):`~?([^`<>]+?)(?:\(\))?`")
CITES = re.compile(r"(?<![\w/])DESIGN\.md|\b[Ii]ssues?\s+#?\d+")
DOCS_PATH = re.compile(r"\bdocs/[\w./-]+?\.md\b")


@dataclass(frozen=True)
class Finding:
    module: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line}: {self.what}"


def _docstrings(tree: ast.Module) -> Iterator[tuple[str, int, str | None]]:
    """(docstring, line, enclosing class name or None) for the module, its classes and functions."""
    def walk(node: ast.AST, cls: str | None) -> Iterator[tuple[str, int, str | None]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(child, clean=False)
                owner = child.name if isinstance(child, ast.ClassDef) else cls
                if doc:
                    yield doc, child.body[0].lineno, owner
                yield from walk(child, owner)
            else:
                yield from walk(child, cls)
    doc = ast.get_docstring(tree, clean=False)
    if doc:
        yield doc, 1, None
    yield from walk(tree, None)


def _comments(source: str) -> Iterator[tuple[str, int]]:
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.string, tok.start[0]


def _lookup(dotted: str) -> bool:
    """Whether ``dotted`` names a module, or an attribute reached from the longest importable module prefix."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:n]))
        except ImportError:
            continue
        for i, name in enumerate(parts[n:]):
            if hasattr(obj, name):
                obj = getattr(obj, name)
            elif isinstance(obj, type) and i == len(parts[n:]) - 1 and _instance_attribute(obj, name):
                return True
            else:
                return False
        return True
    return hasattr(builtins, dotted)


def _instance_attribute(cls: type, name: str) -> bool:
    """An attribute a class's instances carry without the class having it: annotated, a dataclass
    field, or assigned as ``self.<name>`` in its methods (the fitted ``x_`` of an estimator)."""
    for klass in cls.__mro__:
        if name in getattr(klass, "__annotations__", {}) or name in getattr(klass, "__dataclass_fields__", {}):
            return True
        file = getattr(importlib.import_module(klass.__module__), "__file__", None)
        if not file or not file.endswith(".py"):
            continue
        source = Path(file).read_text(encoding="utf-8")
        if re.search(rf"\bself\.{re.escape(name)}\s*(?::[^=\n]+)?=", source):
            return True
    return False


def _resolves(target: str, module: str, cls: str | None) -> bool:
    target = target.strip()
    package = module.rpartition(".")[0]
    candidates = [f"{module}.{cls}.{target}"] if cls else []
    candidates += [f"{module}.{target}", f"{package}.{target}" if package else target, f"mechanism.{target}", target]
    return any(_lookup(c) for c in candidates)


def check_source(source: str, module: str, *, root: Path = ROOT, resolve: bool = True) -> list[Finding]:
    """Every finding of the three rules in one module's ``source`` (``module``: its dotted name)."""
    tree = ast.parse(source)
    found: list[Finding] = []
    for doc, line, cls in _docstrings(tree):
        def at(match: re.Match[str], doc: str = doc, line: int = line) -> int:  # the match's own line
            return line + doc.count("\n", 0, match.start())

        if resolve:
            for match in ROLE.finditer(doc):
                if not _resolves(match[2], module, cls):
                    found.append(Finding(module, at(match), f"{match[0]} does not resolve"))
        found += [Finding(module, at(m), f"cites {m[0]!r}") for m in CITES.finditer(doc)]
        found += [Finding(module, at(m), f"names {m[0]}, which does not exist") for m in DOCS_PATH.finditer(doc)
                  if not (root / m[0]).is_file()]
    for text, line in _comments(source):
        found += [Finding(module, line, f"comment cites {m[0]!r}") for m in CITES.finditer(text)]
        found += [Finding(module, line, f"comment names {m[0]}, which does not exist")
                  for m in DOCS_PATH.finditer(text) if not (root / m[0]).is_file()]
    return found


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append((".".join(parts), path))
    return out


MODULES = _modules()


@pytest.mark.parametrize("module,path", MODULES, ids=lambda v: str(v))
def test_docstring_references_resolve_and_cite_nothing_unreadable(module, path):
    found = check_source(path.read_text(encoding="utf-8"), module)
    assert not found, "\n".join(map(str, found))


NEGATIVE = '''"""A fake module: see :func:`mechanism.core.schema.validate` and :func:`no_such_function`.

The design is in DESIGN.md section 5; see docs/no-such-page.md.
"""


class Thing:
    """Holds :attr:`size_` once fitted, and :meth:`fit` sets it; :meth:`missing` does not exist."""

    def fit(self):
        self.size_ = 1  # added for issue 12


def fit():
    """Like :meth:`Thing.fit`, see :mod:`~mechanism.core` and docs/design.md."""
'''


def test_the_check_can_fail(tmp_path, monkeypatch):
    module = tmp_path / "fake_refs_module.py"
    module.write_text(NEGATIVE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = [f.what for f in check_source(NEGATIVE, "fake_refs_module")]
    assert found == [
        ":func:`no_such_function` does not resolve",
        "cites 'DESIGN.md'",
        "names docs/no-such-page.md, which does not exist",
        ":meth:`missing` does not resolve",
        "comment cites 'issue 12'",
    ]
