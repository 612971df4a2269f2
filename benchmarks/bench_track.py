"""Benchmark: ``mechanism track`` on a 5-checkpoint series (60 questions x 16 samples each), and
``mechanism reweighting --space`` (which used to embed every trajectory twice) against ``--labels``.

Each command runs as a fresh process, as a user runs it: the strategy space is fitted (track)
or loaded (reweighting) with the default MiniLM embedder and no cache, so every embedding is
computed. Wall time and the child's CPU time are reported; the machine has 2 cores.

Run: ``python benchmarks/bench_track.py [--questions 60] [--samples 16]``; prints a Markdown table.
"""
from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import report


def timed(args: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mechanism", *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=60)
    parser.add_argument("--samples", type=int, default=16)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        steps = ["0", "100", "200", "300", "400"]
        subprocess.run([sys.executable, "-m", "mechanism", "simulate", "--training-steps", *steps, "--questions",
                        str(args.questions), "--samples", str(args.samples), "--out", str(tmp / "run"),
                        "--no-progress"], check=True, stdout=subprocess.DEVNULL)
        n = len(steps) * args.questions * args.samples
        wall, cpu = timed(["track", str(tmp / "run" / "searchr1"), "--out", str(tmp / "track"), "--no-progress"])
        figures = sorted(p.name for p in (tmp / "track").glob("*.png"))
        rows.append(("mechanism track (fit space on first + last, 1000 bootstrap replicates)",
                     f"{n:,} trajectories, 5 checkpoints", wall, cpu,
                     f"{len(figures)} figures, shares.csv with intervals"))
        # reweighting on two arms through a saved space vs precomputed labels
        subprocess.run([sys.executable, "-m", "mechanism", "simulate", "--questions", "60", "--samples", "16",
                        "--arms", "base", "rl", "--out", str(tmp / "two"), "--no-progress"], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([sys.executable, "-m", "mechanism", "strategies", "fit", str(tmp / "two" / "searchr1"),
                        "--out", str(tmp / "space"), "--no-progress", "--quiet", "--no-figures"], check=True)
        wall, cpu = timed(["reweighting", str(tmp / "two" / "searchr1"), "--space", str(tmp / "space"),
                           "--base", "base", "--out", str(tmp / "rw_space"), "--no-progress"])
        rows.append(("mechanism reweighting --space", "1,920 trajectories", wall, cpu, "embeds each trajectory once"))
        wall, cpu = timed(["reweighting", str(tmp / "two" / "searchr1"), "--labels",
                           str(tmp / "space" / "labels.parquet"), "--base", "base", "--out", str(tmp / "rw_labels")])
        rows.append(("mechanism reweighting --labels", "1,920 trajectories", wall, cpu, "no embedding"))
    report(__file__, [{"command": name, "size": size, "wall (s)": round(wall, 1), "CPU (s)": round(cpu, 1),
                       "note": note} for name, size, wall, cpu, note in rows],
           title="Checkpoint series and reports", params=vars(args))

if __name__ == "__main__":
    main()
