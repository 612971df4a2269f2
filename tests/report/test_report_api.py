"""One API across the library: random_state everywhere (old names warn), `treated` for compared
arms, keyword-only options, and nothing printed unasked (`import mechanism` and the README's
notebook calls)."""
from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import mechanism as mx

ROOT = Path(__file__).resolve().parents[2]


def _notebook_block() -> str:
    text = (ROOT / "README.md").read_text("utf-8")
    section = text[text.index("## In a notebook"):]
    return re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)


@pytest.mark.slow
def test_import_and_the_readme_notebook_calls_print_nothing_unasked(tmp_path):
    """Only what the README asks for (``print(bound.summary())``, ``print(mech.verdict())``) reaches stdout;
    stderr stays empty."""
    sim = mx.simulate(n_questions=6, n_samples=16, arms=("base", "rl"), random_state=0, progress=False)
    (tmp_path / "runs").mkdir()
    for arm in ("base", "rl"):
        sim.runs.filter(sim.runs["arm"] == arm).write_ndjson(tmp_path / "runs" / f"{arm}.jsonl")
    code = _notebook_block() + "\nprint('=== end ===')\n"
    env = {**{k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}, "PYTHONPATH": str(ROOT),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stderr == ""
    printed = out.stdout.split("=== end ===")[0]
    expected = mx.boundary(mx.read([tmp_path / "runs" / "base.jsonl", tmp_path / "runs" / "rl.jsonl"]),
                           base="base", treated="rl").summary()
    summary_text = str(expected).strip()
    assert printed.strip().startswith(summary_text)
    # the README's second print: the one-line integration verdict, nothing else
    rest = printed.strip()[len(summary_text):].strip().splitlines()
    assert len(rest) == 1 and rest[0].startswith("rl")  # "rl moved ..." or "rl's mass ... changed by"


@pytest.mark.parametrize("func", ["track", "training_run", "simulate", "pass_at_kt", "boundary", "reweighting",
                                  "integration", "compare_arms"])
def test_options_are_keyword_only(func):
    params = list(inspect.signature(getattr(mx, func)).parameters.values())
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    # data first (runs, labels), grids of pass_at_kt as in the public contract; the rest by keyword
    assert set(positional) <= {"runs", "labels", "k", "t"}, positional
    assert all(p.name != "seed" or p.default is None for p in params)


def test_report_layer_functions_take_keyword_options():
    from mechanism import report

    for name in ("write_passkt", "write_strategies", "write_reweighting", "write_integration", "write_track",
                 "write_report"):
        params = list(inspect.signature(getattr(report, name)).parameters.values())
        positional = [p.name for p in params if p.kind == p.POSITIONAL_OR_KEYWORD]
        assert len(positional) <= 3 and "random_state" not in positional, (name, positional)


@pytest.mark.parametrize("cls", ["StrategySpace"])
def test_progress_defaults_to_terminal_only(cls):
    from mechanism.analysis.embed import Embedder

    assert inspect.signature(getattr(mx, cls)).parameters["progress"].default is None
    assert inspect.signature(Embedder).parameters["progress"].default is None
