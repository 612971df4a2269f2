"""Benchmark: the whole test suite, as the README runs it (``python -m pytest -n 2``), timed.

The project's rule is that no test asserts a time; this records how long the suite takes
(target: under 8 minutes on two cores) with the machine's load, and the ten slowest tests.

Run: ``python benchmarks/bench_test_suite.py [--workers 2] [-- extra pytest arguments]``;
prints the table and writes ``benchmarks/results/bench_test_suite.json``.
"""
from __future__ import annotations

import argparse
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import harness

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("pytest_args", nargs="*", help="extra arguments for pytest (after --)")
    args = ap.parse_args()
    command = [sys.executable, "-m", "pytest", "-q", "-n", str(args.workers), "-p", "no:cacheprovider",
               "--durations=10", *args.pytest_args]
    load_before = harness.machine()["load_1min"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    tail = proc.stdout.strip().splitlines()
    counts = next((line for line in reversed(tail) if re.search(r"\d+ (passed|failed)", line)), "")
    found = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|skipped|errors?)", counts)}
    slowest = [line.strip() for line in tail if re.match(r"\s*\d+\.\d+s (call|setup|teardown)", line)][:10]
    rows = [{"workers": args.workers, "passed": found.get("passed", 0), "failed": found.get("failed", 0),
             "skipped": found.get("skipped", 0), "wall s": round(wall, 1), "CPU s": round(cpu, 1),
             "load before": load_before, "load after": harness.machine()["load_1min"], "exit": proc.returncode}]
    failed = [line.split(" - ")[0] for line in tail if line.startswith(("FAILED ", "ERROR "))]
    notes = ("Failed:\n\n" + "\n".join(f"- `{f}`" for f in failed) + "\n\n" if failed else "")
    notes += "Ten slowest:\n\n" + "\n".join(f"- `{s}`" for s in slowest) if slowest else ""
    harness.report(__file__, rows, title="The whole test suite (`python -m pytest -n 2`)", notes=notes,
                   params=vars(args))
    sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
