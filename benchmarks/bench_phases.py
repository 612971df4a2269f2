"""Benchmark: where each command's time goes on small inputs, phase by phase.

300 trajectories (the built-in simulator: 50 questions x 2 samples x three arms, Search-R1
files), the commands of ``bench_small.py``, each in a fresh process. In that process the
functions that begin each phase are wrapped in timers before the command runs, and each phase
counts only its own time (a phase inside another is taken out of the outer one):

- **import**: ``import mechanism._cli.main`` (what every command imports before it starts);
- **read**: :func:`mechanism.read`;
- **model load**: loading MiniLM (``Embedder._load``, torch and sentence-transformers imported there);
- **embed**: the model's forward passes (``Embedder._encode``);
- **fit / apply**: :class:`~mechanism.StrategySpace` ``fit``, ``transform``, ``assign`` and
  loading a saved space, without what the phases above took inside them;
- **bootstrap and tests**: question-bootstrap replicates, permutation tests, stability refits;
- **figures: drawing**: every function of :mod:`mechanism.plots` but ``save_figure`` (matplotlib
  imported, the figures built), and **figures: saving**: ``save_figure`` (laid out, rendered
  and written as PNG and PDF); saved in the process (``MECHANISM_FIGURE_WORKERS=0``, where a
  report saves them in worker processes), so their time shows here;
- **page**: :func:`mechanism.report.page.write_page`;
- **other**: the rest of the wall time (checks, tables, CSVs, PASS@(k,T)'s counting, ...).

The wrapping replaces every module's binding of a wrapped function, so a function imported by
name elsewhere is timed too; it costs two clock reads per call of a wrapped function.

Run: ``python benchmarks/bench_phases.py [--repeat 1]``; prints a Markdown table.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from harness import report

ROOT = Path(__file__).resolve().parents[1]
PHASES = ("import", "read", "model load", "embed", "fit / apply", "bootstrap and tests", "figures: drawing",
          "figures: saving", "page", "other")

# Run in the fresh process: wrap the phase functions, then the command; phases as JSON on the last line.
_CHILD = r'''
import importlib, json, sys, time, types
start = time.perf_counter()
import mechanism._cli.main as cli
imported = time.perf_counter() - start

TARGETS = {
    "read": [("mechanism.readers", "read")],
    "model load": [("mechanism.analysis.embed", "Embedder._load")],
    "embed": [("mechanism.analysis.embed", "Embedder._encode")],
    "fit / apply": [("mechanism.analysis.strategy_space", "StrategySpace.fit"),
                    ("mechanism.analysis.strategy_space", "StrategySpace.transform"),
                    ("mechanism.analysis.strategy_space", "StrategySpace.assign"),
                    ("mechanism.analysis.strategy_space", "StrategySpace.load")],
    "bootstrap and tests": [("mechanism.core.resample", "question_bootstrap_weights"),
                            ("mechanism.analysis.compare", "_split_replicates"),
                            ("mechanism.analysis.compare", "_js_and_permutations"),
                            ("mechanism.analysis.compare", "permutation_test"),
                            ("mechanism.analysis.information", "_pair_replicates"),
                            ("mechanism.analysis.boundaries", "permutation_p_value"),
                            ("mechanism.analysis.passkt", "bootstrap_t_interval"),
                            ("mechanism.analysis._strategies.stability", "bootstrap_stability")],
    "page": [("mechanism.report.page", "write_page")],
}
own = {phase: 0.0 for phase in TARGETS}
own["figures: drawing"] = own["figures: saving"] = 0.0
stack = []  # [phase, time of the last switch] of the calls under way

def timed(phase, fn):
    def wrapper(*args, **kwargs):
        now = time.perf_counter()
        if stack:
            outer = stack[-1]
            own[outer[0]] += now - outer[1]
        stack.append([phase, now])
        try:
            return fn(*args, **kwargs)
        finally:
            end = time.perf_counter()
            phase_, since = stack.pop()
            own[phase_] += end - since
            if stack:
                stack[-1][1] = end
    wrapper.__wrapped__ = fn
    wrapper.__name__ = getattr(fn, "__name__", "wrapped")
    wrapper.__qualname__ = getattr(fn, "__qualname__", wrapper.__name__)
    wrapper.__doc__ = getattr(fn, "__doc__", None)
    return wrapper

def rebind(original, wrapper):
    for mod in list(sys.modules.values()):
        if isinstance(mod, types.ModuleType) and (mod.__name__ or "").startswith("mechanism"):
            for name, value in list(vars(mod).items()):
                if value is original:
                    setattr(mod, name, wrapper)

for phase, targets in TARGETS.items():
    for module_name, attr in targets:
        module = importlib.import_module(module_name)
        if "." in attr:
            cls_name, meth = attr.split(".")
            cls = getattr(module, cls_name)
            raw = cls.__dict__[meth]
            if isinstance(raw, classmethod):
                setattr(cls, meth, classmethod(timed(phase, raw.__func__)))
            else:
                setattr(cls, meth, timed(phase, raw))
        else:
            original = getattr(module, attr)
            rebind(original, timed(phase, original))

import mechanism.plots as plots_pkg, pkgutil
for info in pkgutil.walk_packages(plots_pkg.__path__, "mechanism.plots."):
    if info.name.endswith(".background"):
        continue
    module = importlib.import_module(info.name)
    for name, value in list(vars(module).items()):
        if isinstance(value, types.FunctionType) and value.__module__ == info.name and not name.startswith("__"):
            phase = "figures: saving" if name == "save_figure" else "figures: drawing"
            rebind(value, timed(phase, value))

begin = time.perf_counter()
code = cli.main(sys.argv[1:])
wall = time.perf_counter() - begin
own["import"] = imported
own["other"] = wall - sum(v for k, v in own.items() if k != "import")
print(json.dumps({"phases": own, "wall": wall + imported, "code": code}))
'''


def run_phases(argv: list[str], env: dict[str, str]) -> dict:
    proc = subprocess.run([sys.executable, "-c", _CHILD, *argv], cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"mechanism {' '.join(argv)} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs per command (the median of each phase)")
    args = parser.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MPLBACKEND": "Agg",
           "MECHANISM_FIGURE_WORKERS": "0", "PYTHONPATH": str(ROOT)}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env["NUMBA_CACHE_DIR"] = str(tmp / "numba")
        data = tmp / "runs"
        subprocess.run([sys.executable, "-m", "mechanism", "simulate", "--out", str(data), "--questions", "50",
                        "--samples", "2", "--no-progress"], check=True, stdout=subprocess.DEVNULL, env=env)
        runs, space = str(data / "searchr1"), str(tmp / "space")
        # numba's cache filled and a space saved, untimed
        subprocess.run([sys.executable, "-m", "mechanism", "report", runs, "--base", "base", "--out",
                        str(tmp / "prime"), "--no-progress"], check=True, capture_output=True, env=env)
        subprocess.run([sys.executable, "-m", "mechanism", "strategies", "fit", runs, "--out", space, "--no-progress"],
                       check=True, capture_output=True, env=env)
        measured: dict[str, list[dict]] = {}
        for i in range(args.repeat):
            cache = str(tmp / f"cache{i}")
            steps = [("report, cold (empty cache)", ["report", runs, "--base", "base", "--cache-dir", cache]),
                     ("report, warm (same cache)", ["report", runs, "--base", "base", "--cache-dir", cache]),
                     ("passkt", ["passkt", runs]),
                     ("strategies fit", ["strategies", "fit", runs]),
                     ("reweighting --space", ["reweighting", runs, "--base", "base", "--space", space]),
                     ("integration --space", ["integration", runs, "--base", "base", "--space", space])]
            for j, (label, argv) in enumerate(steps):
                out = str(tmp / f"out{i}-{j}")
                measured.setdefault(label, []).append(run_phases([*argv, "--out", out], env))
    for label, results in measured.items():
        row = {"command": label}
        for phase in PHASES:
            row[phase] = round(statistics.median(r["phases"][phase] for r in results), 2)
        row["wall (in process)"] = round(statistics.median(r["wall"] for r in results), 2)
        rows.append(row)
    report(__file__, rows, params=vars(args),
           title="Where each command's time goes: 300 trajectories, three arms, fresh processes (seconds)",
           notes=f"Each phase's own time (a phase inside another taken out of it); figures saved in the process "
                 f"(MECHANISM_FIGURE_WORKERS=0), so a report's wall here is above bench_small's; the interpreter's "
                 f"own start (before `import mechanism`) is not counted; median of {args.repeat}.")


if __name__ == "__main__":
    main()
