"""Benchmark: how each stage of read -> PASS@(k,T) -> strategies -> reweighting grows with the
input, from 16,000 to 64,000 to 256,000 trajectories (the bar: at most 6x per 4x rows).

Each size is one run of ``bench_scale.py`` (its pipeline in a fresh process, shards simulated
first and not timed), its record written aside (``BENCH_RESULTS_DIR``) and read back here; the
table gives every stage's seconds at each size and the growth from one size to the next.

Run: ``python benchmarks/bench_growth.py [--sizes 16000 64000 256000] [--n-jobs 2]``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from harness import report

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16_000, 64_000, 256_000])
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    stages: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            results = Path(tmp) / f"results-{n}"
            env = {**os.environ, "BENCH_RESULTS_DIR": str(results)}
            subprocess.run([sys.executable, str(HERE / "bench_scale.py"), "--n", str(n), "--n-jobs", str(args.n_jobs),
                            "--data", str(Path(tmp) / f"data-{n}")], check=True, env=env, stdout=subprocess.DEVNULL)
            record = json.loads((results / "bench_scale.json").read_text())
            for row in record["rows"]:
                stages.setdefault(row["stage"].strip("*"), []).append(float(str(row["time (s)"]).strip("*")))
    rows = []
    for stage, seconds in stages.items():
        row: dict[str, object] = {"stage": stage}
        for n, s in zip(args.sizes, seconds):
            row[f"{n:,} (s)"] = round(s, 2)
        for (n0, s0), (n1, s1) in zip(zip(args.sizes, seconds), zip(args.sizes[1:], seconds[1:])):
            row[f"growth {n0 // 1000}k -> {n1 // 1000}k"] = round(s1 / s0, 2) if s0 > 0 else "-"
        rows.append(row)
    worst = max((v for r in rows for k, v in r.items() if k.startswith("growth") and isinstance(v, float)
                 and not str(r["stage"]).startswith("total")), default=float("nan"))
    report(__file__, rows, params=vars(args), title="Growth of each stage with the input (bench_scale pipeline)",
           notes=f"largest growth of a stage per step: {worst:.2f}x (bar: at most 6x per 4x rows; bench_scale rounds "
                 "to 0.1 s, so a stage under a second is mostly its fixed cost and rounding)")


if __name__ == "__main__":
    main()
