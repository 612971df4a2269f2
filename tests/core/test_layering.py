"""Imports go one way, function bodies included.

Every import of every module of ``mechanism`` is read from its source (module level and inside
functions, relative imports resolved, ``importlib.import_module`` of a literal) and four rules
are checked:

1. no import cycle among mechanism's modules;
2. imports go only downward along :data:`LAYERS` (same layer is fine, a lower one is fine);
3. nothing outside report, plots, the command line, the demo and the package root imports
   ``mechanism.report`` or ``mechanism.plots``;
4. no module imports a private name (``_x``, a module or an attribute) from another package:
   a private name belongs to the package that holds it (``p._m`` and ``p.m._x`` both belong to
   ``p``), so ``mechanism.readers._io`` is for ``mechanism.readers.*`` only, and
   ``mechanism.core.scoring._f1`` is not for ``mechanism.readers``.

An import under ``if TYPE_CHECKING:`` counts as well: a type-only cycle still ties two modules
together for whoever reads them. The package root (``mechanism/__init__.py``) is exempt: its
lazy exports name every layer. Each rule is shown able to fail on a small fake package
written by the test.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The layers, bottom first. A module may import its own layer and the layers below it.
# A name is a module or a package (a package covers every module under it); the most
# specific name wins.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core", ("core",)),
    ("read", ("readers",)),
    ("datasets", ("datasets",)),
    ("endpoints", ("endpoints",)),
    ("estimate", ("analysis.passkt", "analysis.boundaries", "analysis.segmentation", "analysis.embed",
                  "analysis.strategy_space", "analysis.strategy_params", "analysis._strategies",
                  "analysis.neighbours")),
    ("compare", ("analysis",)),
    ("plots", ("plots",)),
    ("report", ("report",)),
    ("top", ("_cli", "demo", "__main__")),
)

# May import mechanism.report / mechanism.plots (rule 3).
MAY_IMPORT_REPORT_AND_PLOTS = ("report", "plots", "_cli", "demo", "__main__")


@dataclass(frozen=True)
class Import:
    """One imported dotted name, as written (resolved to absolute) at a line of a module."""

    importer: str   # dotted module name of the importing file
    line: int
    name: str       # absolute dotted name: a module, or module.attribute


def _module_name(path: Path, root: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def _literal(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):  # f"mechanism.{x}": the literal prefix is all we know
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant)).rstrip(".") or None
    return None


def read_imports(root: Path, package: str) -> tuple[dict[str, bool], list[Import]]:
    """Every module of ``package`` under ``root`` and every import it makes.

    Returns
    -------
    modules, imports
        The dotted names of the package's modules (True for a package), and one :class:`Import` per imported name:
        ``import a.b`` gives ``a.b``; ``from a import b, c`` gives ``a``, ``a.b`` and ``a.c``;
        relative imports are resolved against the importer's package.
    """
    modules: dict[str, bool] = {}
    imports: list[Import] = []
    for path in sorted((root / package).rglob("*.py")):
        name, is_package = _module_name(path, root)
        modules[name] = is_package
        here = name if is_package else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imports += [Import(name, node.lineno, alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                if source == "__future__":
                    continue
                imports.append(Import(name, node.lineno, source))
                imports += [Import(name, node.lineno, f"{source}.{alias.name}") for alias in node.names
                            if alias.name != "*"]
            elif (isinstance(node, ast.Call) and node.args
                  and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"):
                text = _literal(node.args[0])
                if text:
                    imports.append(Import(name, node.lineno, text))
    return modules, imports


def _target(name: str, modules: Mapping[str, bool]) -> str | None:
    """The module an imported name lands in: the name itself or its longest module prefix."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        candidate = ".".join(parts[:n])
        if candidate in modules:
            return candidate
    return None


def _layer_of(module: str, package: str, layers: Sequence[tuple[str, Sequence[str]]]) -> int | None:
    rel = module[len(package) + 1:] if module.startswith(package + ".") else ""
    best: tuple[int, int] | None = None  # (length of the matching name, layer index)
    for index, (_, names) in enumerate(layers):
        for entry in names:
            if rel == entry or rel.startswith(entry + "."):
                if best is None or len(entry) > best[0]:
                    best = (len(entry), index)
    return None if best is None else best[1]


def _within(module: str, prefixes: Iterable[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def find_cycles(modules: Mapping[str, bool], imports: Sequence[Import], package: str) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for imp in imports:
        target = _target(imp.name, modules)
        if target and target != imp.importer and imp.importer != package:
            edges[imp.importer].add(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:  # recursion depth is the module count (under a hundred)
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(modules):
        if v not in index:
            visit(v)
    return sorted(groups)


def _is_private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _edge(imp: Import, modules: Mapping[str, bool]) -> str:
    return f"{imp.importer} -> {_target(imp.name, modules)}"


def _private_owner(name: str, modules: Mapping[str, bool]) -> str | None:
    """The package a private name belongs to (None when the name has no private part).

    A private module ``p._m`` belongs to ``p``; a private attribute of a package ``p._x`` to
    ``p``; a private attribute of a plain module ``p.m._x`` to the module's package ``p``.
    """
    parts = name.split(".")
    for n, part in enumerate(parts):
        if _is_private(part):
            prefix = _target(".".join(parts[:n]), modules) if n else None
            if prefix is None:
                return ".".join(parts[:n])
            return prefix if modules[prefix] else prefix.rpartition(".")[0]
    return None


def violations(root: Path, package: str = "mechanism",
               layers: Sequence[tuple[str, Sequence[str]]] = LAYERS,
               may_import_top: Sequence[str] = MAY_IMPORT_REPORT_AND_PLOTS,
               top: Sequence[str] = ("report", "plots")) -> dict[str, set[str]]:
    """The four rules' violations for ``package`` under ``root``, by rule.

    A violation is one line: ``"a <-> b <-> c"`` for a cycle, ``"importer -> imported module"``
    for the layer rules, ``"importer -> private name"`` (up to its private part) for private
    names; no line numbers, so the lines stay stable when code moves (:func:`where` finds them).
    """
    modules, imports = read_imports(root, package)
    found: dict[str, set[str]] = {"cycle": set(), "upward": set(), "report/plots": set(), "private": set()}
    for group in find_cycles(modules, imports, package):
        found["cycle"].add(" <-> ".join(group))
    top_prefixes = [f"{package}.{t}" for t in top]
    allowed_top = [f"{package}.{t}" for t in may_import_top]
    for imp in imports:
        if imp.importer == package:  # the root's lazy exports name every layer
            continue
        target = _target(imp.name, modules)
        if target is None or target == imp.importer:
            continue
        # rule 2: downward only (the root itself, `from mechanism import x`, is not a layer)
        mine, theirs = _layer_of(imp.importer, package, layers), _layer_of(target, package, layers)
        if target != package and (mine is None or theirs is None or theirs > mine):
            found["upward"].add(_edge(imp, modules))
        # rule 3: report and plots only from the top
        if _within(target, top_prefixes) and not _within(imp.importer, allowed_top):
            found["report/plots"].add(_edge(imp, modules))
        # rule 4: a private name only inside the package it belongs to
        owner = _private_owner(imp.name, modules)
        here = imp.importer if modules[imp.importer] else imp.importer.rpartition(".")[0]
        if owner is not None and owner != here:
            parts = imp.name.split(".")
            first = next(n for n, p in enumerate(parts) if _is_private(p))
            private = ".".join(parts[:first + 1])
            if not _within(imp.importer, [private]):  # a private package's own modules use each other
                found["private"].add(f"{imp.importer} -> {private}")
    return found


def where(root: Path, violation: str, package: str = "mechanism") -> list[str]:
    """The source lines behind one ``importer -> imported`` violation (for the failure message)."""
    importer, _, imported = violation.partition(" -> ")
    modules, imports = read_imports(root, package)
    return [f"{i.importer}:{i.line} imports {i.name}" for i in imports
            if i.importer == importer and (_within(i.name, [imported]) or _target(i.name, modules) == imported)]


# --- the package itself ---------------------------------------------------------------------------

def test_mechanism_imports_one_way():
    found = violations(ROOT)
    lines = []
    for rule, vs in found.items():
        for v in sorted(vs):
            at = where(ROOT, v) if rule != "cycle" else []
            lines.append(f"{rule}: {v}" + "".join(f"\n    {w}" for w in at))
    assert not lines, "imports against the layers (see tests/core/test_layering.py):\n" + "\n".join(lines)


def test_every_module_has_a_layer():
    modules, _ = read_imports(ROOT, "mechanism")
    homeless = sorted(m for m in modules if m != "mechanism" and _layer_of(m, "mechanism", LAYERS) is None)
    assert not homeless, f"add these modules to LAYERS in tests/core/test_layering.py: {homeless}"


def test_nothing_outside_the_cli_imports_it():
    """Scripts too: analyses/ and benchmarks/ use the library, never the command line.
    ``python -m mechanism`` (``__main__``) is the command line's one way in."""
    offenders = []
    for folder in ("mechanism", "analyses", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel == "mechanism/__main__.py" or rel.startswith("mechanism/_cli/"):
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                         [node.module or ""] if isinstance(node, ast.ImportFrom) else
                         [_literal(node.args[0]) or ""] if (isinstance(node, ast.Call) and node.args and getattr(
                             node.func, "attr", getattr(node.func, "id", None)) == "import_module") else [])
                offenders += [f"{rel}:{node.lineno} imports {n}" for n in names
                              if n == "mechanism._cli" or n.startswith("mechanism._cli.")]
    assert not offenders, "\n".join(offenders)


def test_importing_the_library_loads_no_command_module():
    code = ("import sys, mechanism, mechanism.report, mechanism.demo, mechanism.analysis.checkpoints; "
            "import mechanism.report.study, mechanism.report.track; "
            "print(sorted(m for m in sys.modules if m.startswith('mechanism._cli')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == "[]", out.stdout


def test_import_mechanism_prints_nothing():
    out = subprocess.run([sys.executable, "-c", "import mechanism"], capture_output=True, text=True, check=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.stdout == "" and out.stderr == ""


# --- each rule can fail: a fake package -----------------------------------------------------------

FAKE_LAYERS = (("core", ("errors",)), ("mid", ("scoring", "readers")), ("top", ("report", "cli")))


def _fake(tmp_path: Path, files: Mapping[str, str]) -> Path:
    for rel, text in {"pkg/__init__.py": "", "pkg/errors.py": "", **files}.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def _fake_violations(root: Path) -> dict[str, set[str]]:
    return violations(root, "pkg", FAKE_LAYERS, may_import_top=("report", "cli"), top=("report",))


def test_a_clean_fake_package_passes(tmp_path):
    root = _fake(tmp_path, {
        "pkg/scoring.py": "from pkg.errors import E\n",
        "pkg/readers/__init__.py": "from ._io import load\nfrom . import fmt\n",
        "pkg/readers/_io.py": "from pkg.scoring import score\n",
        "pkg/readers/fmt.py": "from pkg.readers._io import load\n",
        "pkg/report/__init__.py": "def f():\n    from pkg.readers import fmt\n",
        "pkg/cli.py": "import importlib\nimportlib.import_module('pkg.report')\n",
    })
    assert _fake_violations(root) == {"cycle": set(), "upward": set(), "report/plots": set(), "private": set()}


def test_a_cycle_inside_a_function_is_found(tmp_path):
    root = _fake(tmp_path, {
        "pkg/scoring.py": "def f():\n    from .readers import fmt\n",
        "pkg/readers/__init__.py": "",
        "pkg/readers/fmt.py": "from ..scoring import f\n",
    })
    assert _fake_violations(root)["cycle"] == {"pkg.readers.fmt <-> pkg.scoring"}


def test_a_package_and_its_module_importing_each_other_is_a_cycle(tmp_path):
    root = _fake(tmp_path, {
        "pkg/readers/__init__.py": "from pkg.readers.fmt import read\n",
        "pkg/readers/fmt.py": "def read():\n    from pkg.readers import helper\n",
    })
    assert _fake_violations(root)["cycle"] == {"pkg.readers <-> pkg.readers.fmt"}


def test_an_upward_import_is_found(tmp_path):
    root = _fake(tmp_path, {
        "pkg/errors.py": "def f():\n    import pkg.scoring\n",
        "pkg/scoring.py": "import importlib\nimportlib.import_module('pkg.cli')\n",
        "pkg/cli.py": "",
    })
    assert _fake_violations(root)["upward"] == {"pkg.errors -> pkg.scoring", "pkg.scoring -> pkg.cli"}


def test_a_module_without_a_layer_is_an_upward_import(tmp_path):
    root = _fake(tmp_path, {"pkg/scoring.py": "from pkg import stray\n", "pkg/stray.py": ""})
    assert _fake_violations(root)["upward"] == {"pkg.scoring -> pkg.stray"}


def test_report_imported_from_below_is_found(tmp_path):
    # cli is top but not a reader of report here; scoring is below report
    root = _fake(tmp_path, {
        "pkg/report/__init__.py": "",
        "pkg/report/text.py": "",
        "pkg/scoring.py": "def f():\n    from pkg.report.text import verdict\n",
    })
    found = _fake_violations(root)
    assert found["report/plots"] == {"pkg.scoring -> pkg.report.text"}
    assert "pkg.scoring -> pkg.report.text" in found["upward"]


def test_report_imported_from_its_own_layer_outside_the_allowed_is_found(tmp_path):
    root = _fake(tmp_path, {"pkg/report/__init__.py": "", "pkg/cli.py": "import pkg.report\n"})
    found = violations(root, "pkg", FAKE_LAYERS, may_import_top=("report",), top=("report",))
    assert found["report/plots"] == {"pkg.cli -> pkg.report"} and not found["upward"]


@pytest.mark.parametrize("source, expected", [
    ("from pkg.scoring import _f1\n", "pkg.readers.fmt -> pkg.scoring._f1"),
    ("from pkg.report import _write\n", "pkg.readers.fmt -> pkg.report._write"),
    ("import pkg.report._write.tools\n", "pkg.readers.fmt -> pkg.report._write"),
    ("from ..report._write.tools import save\n", "pkg.readers.fmt -> pkg.report._write"),
    ("import pkg.scoring\nfrom pkg.scoring import __doc__\n", None),  # a dunder is not private
])
def test_a_private_name_from_another_package_is_found(tmp_path, source, expected):
    root = _fake(tmp_path, {
        "pkg/scoring.py": "",
        "pkg/readers/__init__.py": "",
        "pkg/readers/_io.py": "",
        "pkg/readers/fmt.py": "from pkg.readers._io import load\nfrom ._io import _helper\n" + source,
        "pkg/report/__init__.py": "",
        "pkg/report/_write/__init__.py": "",
        "pkg/report/_write/tools.py": "",
    })
    assert _fake_violations(root)["private"] == ({expected} if expected else set())


def test_a_private_package_s_own_modules_may_import_each_other_and_no_one_else_may(tmp_path):
    root = _fake(tmp_path, {
        "pkg/scoring.py": "import pkg._inner.b\n",
        "pkg/readers/__init__.py": "",
        "pkg/readers/fmt.py": "from pkg._inner.a import x\n",
        "pkg/_inner/__init__.py": "",
        "pkg/_inner/a.py": "from pkg._inner.b import y\nfrom . import b\n",
        "pkg/_inner/b.py": "",
    })
    # pkg.scoring sits in the package that owns _inner; the readers package does not
    assert _fake_violations(root)["private"] == {"pkg.readers.fmt -> pkg._inner"}


# --- private names stay in their module -------------------------------------------------------------

def private_attribute_imports(root: Path, package: str) -> list[str]:
    """``importer:line imports module._name`` for every private attribute (not a module) that a
    module imports from another module: a private name belongs to the module that defines it."""
    modules, imports = read_imports(root, package)
    found = []
    for imp in imports:
        source, _, attribute = imp.name.rpartition(".")
        if (_is_private(attribute) and source in modules and imp.name not in modules
                and source != imp.importer):
            found.append(f"{imp.importer}:{imp.line} imports {imp.name}")
    return sorted(set(found))


def test_no_private_name_crosses_modules():
    found = private_attribute_imports(ROOT, "mechanism")
    assert not found, "private names imported from another module:\n" + "\n".join(found)


def test_a_private_name_from_a_sibling_module_is_found(tmp_path):
    root = _fake(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/_io.py": "_helper = 1\nload = 2\n",
        "pkg/fmt.py": "from pkg._io import load\nfrom ._io import _helper\nimport pkg._io\n",
    })
    assert private_attribute_imports(root, "pkg") == ["pkg.fmt:2 imports pkg._io._helper"]
