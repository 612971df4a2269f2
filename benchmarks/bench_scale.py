"""A million trajectories on one machine: read -> PASS@(k,T) -> strategies -> reweighting.

Data: ``--n`` simulated trajectories (two arms, base and rl, ``--samples`` per question),
written as ``--shards`` Search-R1 JSONL shards (each shard its own simulated world, its
question ids prefixed by the shard). Simulation is set-up and is not timed with the pipeline.

Pipeline, in one fresh process with ``--n-jobs`` worker processes:

1. **read**: :func:`mechanism.analysis.parallel.read_shards` with ``out=``: every shard read and
   validated in a worker and written as a parquet part; a lazy frame comes back.
2. **PASS@(k,T)**: :func:`mechanism.pass_at_kt` (with bootstrap intervals) on the columns
   ``arm, question_id, sample_id, correct, n_rounds`` only: the steps are never loaded.
3. **strategies**: a :class:`~mechanism.StrategySpace` (MiniLM) fitted on the trajectories
   of a sample of questions (``--fit-questions`` share; all with ``1.0``), saved, and applied
   to every part by :func:`mechanism.analysis.parallel.assign_shards` in the workers; fit and workers
   share one cache (embeddings, segments), so a rendering is embedded once.
4. **reweighting**: :func:`mechanism.reweighting` (1,000 bootstrap replicates, 1,000
   permutations) on the labels; with ``--neighbours`` also the nearest-base-neighbour
   statistics, for which every row's coordinates are held in memory (3 GB at a million
   rows, so off by default at that size).

Peak memory is reported for the pipeline process (``ru_maxrss``) and for its largest worker
(the worker's own high-water mark, ``VmHWM``, polled; see :class:`WorkerPeak`); the
machine-wide peak is at most the first plus ``--n-jobs`` times the second. The peak of the
sum over the whole process tree at one moment is measured too (sampled every 0.2 s): the
pipeline's own peak and its workers' need not fall at the same time.

``--backend ray`` assigns the shards with :func:`mechanism.analysis.distributed.assign_shards_ray`
on a local Ray cluster of ``--n-jobs`` CPUs (started inside the timed stage), for the figures of
the path that scales past one machine; the notes give the composition, the within-strategy part
and a digest of the labels, the same on both backends.

Run: ``python benchmarks/bench_scale.py --n 1000000 [--n-jobs 2] [--data DIR] [--backend ray]``;
prints a markdown table.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from harness import report


def simulate_shards(data: Path, n: int, samples: int, shards: int) -> None:
    """Search-R1 JSONL shards (the format RL rollouts are dumped in): one simulated world per
    shard, its question ids prefixed by the shard, both arms in one file."""
    import json

    from mechanism.datasets.simulation import simulate

    data.mkdir(parents=True, exist_ok=True)
    questions = max(1, n // shards // (2 * samples))
    for s in range(shards):
        sim = simulate(n_questions=questions, n_samples=samples, arms=("base", "rl"), random_state=1000 + s,
                       progress=False)
        with tempfile.TemporaryDirectory() as tmp:
            sim.write(tmp)
            with open(data / f"shard-{s:03d}.jsonl", "w", encoding="utf-8") as out:
                for arm in ("base", "rl"):
                    with open(Path(tmp) / "searchr1" / f"{arm}.jsonl", encoding="utf-8") as fh:
                        for line in fh:
                            rec = json.loads(line)
                            rec["question_id"] = f"s{s:03d}-{rec['question_id']}"
                            out.write(json.dumps(rec, ensure_ascii=False) + "\n")


class WorkerPeak:
    """Memory of this process and its workers, polled every ``interval`` s: the largest
    ``VmHWM`` any child reached (``kb``) and the largest sum of ``VmRSS`` over this process and
    every descendant at one moment (``tree_kb``).

    Not ``RUSAGE_CHILDREN``: a child's ``ru_maxrss`` starts at its parent's resident size when it
    was started (Linux carries it across fork and exec), so every worker started after the fit
    would read as large as the pipeline process. ``VmHWM`` is the high-water mark of the worker's
    own memory since exec; polling misses only what a worker adds in its last interval. The
    tree's sum is the machine-wide footprint at each poll (pages two processes share are counted
    twice, so it errs high) and misses a peak shorter than ``interval``. Linux only (``None``
    elsewhere).
    """

    def __init__(self, interval: float = 0.2) -> None:
        self.interval = interval
        self.kb: int | None = 0 if Path(f"/proc/{os.getpid()}/task").is_dir() else None
        self.tree_kb: int | None = self.kb
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    @staticmethod
    def _status_kb(pid: str, field: str) -> int:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:  # the process exited between the two reads
            return 0
        for line in status.splitlines():
            if line.startswith(field):
                return int(line.split()[1])
        return 0

    @staticmethod
    def _children(pid: str) -> list[str]:
        out = []
        for children in Path(f"/proc/{pid}/task").glob("*/children"):
            try:
                out += children.read_text().split()
            except OSError:
                continue
        return out

    def _sample(self) -> tuple[int, int]:
        me = str(os.getpid())
        hwm, rss, todo, seen = 0, self._status_kb(me, "VmRSS:"), self._children(me), set()
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            hwm = max(hwm, self._status_kb(pid, "VmHWM:"))
            rss += self._status_kb(pid, "VmRSS:")
            todo += self._children(pid)
        return hwm, rss

    def _poll(self) -> None:
        while not self._stop.wait(self.interval):
            hwm, rss = self._sample()
            self.kb, self.tree_kb = max(self.kb, hwm), max(self.tree_kb, rss)

    def __enter__(self) -> WorkerPeak:
        if self.kb is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


def pipeline(data: Path, work: Path, n_jobs: int, fit_questions: float, neighbours: bool,
             backend: str = "local") -> dict:
    import polars as pl

    from mechanism.analysis.compare import reweighting
    from mechanism.analysis.parallel import RUN_COLUMNS, assign_shards, read_shards
    from mechanism.analysis.passkt import pass_at_kt
    from mechanism.analysis.strategy_space import StrategySpace

    out: dict = {}
    t = time.perf_counter()
    lazy = read_shards(data, format="searchr1", n_jobs=n_jobs, out=work / "parts")
    out["read_s"] = time.perf_counter() - t

    t = time.perf_counter()
    light = lazy.select(RUN_COLUMNS).collect()
    table = pass_at_kt(light, k=[1, 2, 4, 8, 16, 32, 64], t=[0, 1, 2, 3, 5], ci=0.95)
    out["passkt_s"] = time.perf_counter() - t
    out["rows"] = light.height
    out["pass_rows"] = table.height

    t = time.perf_counter()
    sample = lazy
    if fit_questions < 1.0:
        keep = int(round(fit_questions * 1_000_000))
        sample = lazy.filter(pl.col("question_id").hash(seed=7) % 1_000_000 < keep)
    fit_rows = sample.collect()
    # one cache for the fit and the workers: a rendering embedded once is never embedded again
    space = StrategySpace(random_state=0, progress=False, cache_dir=work / "cache").fit(fit_rows)
    out["fit_rows"] = fit_rows.height
    out["n_strategies"] = space.n_strategies_
    del fit_rows
    saved = space.save(work / "space")
    out["fit_s"] = time.perf_counter() - t

    t = time.perf_counter()
    if backend == "ray":  # a local Ray cluster of n_jobs CPUs, started (and timed) here
        import ray

        from mechanism.analysis.distributed import assign_shards_ray

        ray.init(num_cpus=n_jobs, include_dashboard=False, log_to_driver=False)
        labels = assign_shards_ray(saved, work / "parts", format="parts", cache_dir=work / "cache")
        ray.shutdown()
    else:
        labels = assign_shards(saved, work / "parts", format="parts", n_jobs=n_jobs, cache_dir=work / "cache")
    out["assign_s"] = time.perf_counter() - t
    assert labels.select("arm", "question_id", "sample_id").equals(light.select("arm", "question_id", "sample_id"))

    t = time.perf_counter()
    coords = None
    if neighbours:
        coords = space.coordinates(lazy.collect())
    rw = reweighting(light, labels["strategy"].to_numpy(), base="base", treated="rl", coordinates=coords)
    out["reweighting_s"] = time.perf_counter() - t
    out["composition"] = rw.composition
    out["within"] = rw.within
    out["labels_digest"] = hashlib.sha256(labels["strategy"].to_numpy().tobytes()).hexdigest()[:16]
    out["peak_gb_self"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--fit-questions", type=float, default=0.1)
    ap.add_argument("--neighbours", action="store_true")
    ap.add_argument("--data", default=None, help="folder of shards (simulated into it when empty)")
    ap.add_argument("--phase", default="all", choices=["all", "simulate", "pipeline"])
    ap.add_argument("--work", default=None)
    ap.add_argument("--backend", default="local", choices=["local", "ray"],
                    help="assign the shards in local worker processes or on a local Ray cluster of --n-jobs CPUs")
    args = ap.parse_args()

    data = Path(args.data or Path(tempfile.gettempdir()) / f"mechanism-scale-{args.n}")
    if args.phase == "simulate":
        simulate_shards(data, args.n, args.samples, args.shards)
        return
    if args.phase == "pipeline":
        with WorkerPeak() as workers:
            result = pipeline(data, Path(args.work), args.n_jobs, args.fit_questions, args.neighbours, args.backend)
        result["peak_gb_worker"] = None if workers.kb is None else workers.kb / 2**20
        result["peak_gb_tree"] = None if workers.tree_kb is None else workers.tree_kb / 2**20
        print(json.dumps(result))
        return

    me = [sys.executable, __file__, "--n", str(args.n), "--samples", str(args.samples), "--shards",
          str(args.shards), "--data", str(data)]
    if not any(data.glob("*.jsonl")):
        t = time.perf_counter()
        subprocess.run(me + ["--phase", "simulate"], check=True)
        print(f"simulated {args.n:,} trajectories into {args.shards} shards: {time.perf_counter() - t:.0f} s")
    with tempfile.TemporaryDirectory() as work:
        t = time.perf_counter()
        proc = subprocess.run(me + ["--phase", "pipeline", "--work", work, "--n-jobs", str(args.n_jobs),
                                    "--fit-questions", str(args.fit_questions), "--backend", args.backend]
                              + (["--neighbours"] if args.neighbours else []),
                              check=True, capture_output=True, text=True)
        total = time.perf_counter() - t
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    rows = [{"stage": name, "time (s)": round(r[key], 1)}
            for name, key in (("read (parquet parts, lazy frame)", "read_s"), ("PASS@(k,T) with intervals", "passkt_s"),
                              ("strategies: fit on sample + save", "fit_s"),
                              ("strategies: assign every shard", "assign_s"),
                              ("reweighting" + (" + neighbours" if args.neighbours else ""), "reweighting_s"))]
    rows.append({"stage": "**total (fresh process, imports included)**", "time (s)": round(total, 1)})
    if r["peak_gb_worker"] is None:
        memory = f"peak memory: pipeline process {r['peak_gb_self']:.2f} GB (workers not measured: no /proc)"
    else:
        memory = (f"peak memory: pipeline process {r['peak_gb_self']:.2f} GB, largest worker "
                  f"{r['peak_gb_worker']:.2f} GB (bound on the machine-wide peak: "
                  f"{r['peak_gb_self'] + args.n_jobs * r['peak_gb_worker']:.2f} GB); measured machine-wide peak "
                  f"(the process tree's summed resident memory, sampled every 0.2 s): {r['peak_gb_tree']:.2f} GB")
    figures = (f"; composition {r['composition']:.6f}, within {r['within']:.6f}, labels sha256 "
               f"{r['labels_digest']} (the same on every backend)")
    where = "; shards assigned on a local Ray cluster" if args.backend == "ray" else ""
    report(__file__, rows, params=vars(args), notes=memory + figures, part=None if args.backend == "local" else "ray",
           title=f"{r['rows']:,} trajectories, {args.shards} shards, n_jobs={args.n_jobs}{where}; strategies fitted on "
                 f"{r['fit_rows']:,} rows ({r['n_strategies']} found)")

if __name__ == "__main__":
    main()
