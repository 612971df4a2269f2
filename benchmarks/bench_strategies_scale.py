"""Benchmark: the cold default StrategySpace.fit on 20,000 mostly distinct trajectories, side by
side with MiniLM over their tool calls alone (issue 19's speed bar: at most a third of it).

Real transcripts rarely repeat a whole rendering (139 distinct of 200 on tau-bench's airline
runs, 128 of 297 on Reflexion), so an embedder of whole texts sees most of them. This benchmark
generates a tool-use world with that property: 30 tools, 1-12 calls per episode, JSON arguments
whose values come from the user turn, earlier results, earlier calls or nowhere, 10 % failed
calls. Each arm runs in a fresh Python process reading the same parquet table, with no cache:

- ``default fit``: ``StrategySpace(progress=False).fit(runs)``, the defaults (the composed
  embedder: each distinct step embedded once; bootstrap stability included);
- ``MiniLM over tool calls``: all-MiniLM-L6-v2 over each trajectory's tool calls alone (tool
  names and arguments, one text per trajectory, each distinct text once), the cheapest
  whole-trajectory embedding a user could run instead;
- with ``--whole``, also ``fit, whole renderings``: the fit with ``embedder="all-MiniLM-L6-v2"``
  (one embedding of each whole rendering, the alternative to the composed default).

The machine is shared, so each process's CPU time (``resource.getrusage(RUSAGE_CHILDREN)``, user +
system, all its threads) is reported beside its wall time, and the ratio of each; arms run in
turn ``--repeat`` times and the median is kept.

With ``--reference-sample k`` the reference embeds a random sample of k of the tool-call texts
and its wall and CPU time for the texts are scaled to all of them (model load and imports are
timed once, as they are paid once); the default fit always runs in full.

Run: ``python benchmarks/bench_strategies_scale.py [--n 20000] [--repeat 1] [--whole]
[--reference-sample 0]``.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

TOOLS = [f"{verb}_{noun}" for verb in ("get", "update", "cancel", "search", "list", "book")
         for noun in ("order", "reservation", "user_details", "flight", "payment")]


def varied_world(n: int, seed: int = 0):
    """``n`` canonical trajectories with mostly distinct move sequences."""
    from mechanism.core.schema import from_records, make_step

    rng = np.random.default_rng(seed)
    records = []
    for i in range(n):
        uid = f"user_{i}_{int(rng.integers(1000, 9999))}"
        order = f"#W{int(rng.integers(10**6, 10**7))}"
        question = f"Hi, I am {uid}. Please help with order {order} and my booking."
        pool_obs: list[str] = []
        pool_call: list[str] = []
        steps = []
        for _ in range(int(rng.integers(1, 13))):
            tool = TOOLS[int(rng.integers(len(TOOLS)))]
            args = {}
            for k in range(int(rng.integers(1, 3))):
                src = int(rng.integers(4))
                if src == 0:
                    v = uid if rng.random() < 0.5 else order
                elif src == 1 and pool_obs:
                    v = pool_obs[int(rng.integers(len(pool_obs)))]
                elif src == 2 and pool_call:
                    v = pool_call[int(rng.integers(len(pool_call)))]
                else:
                    v = f"v{int(rng.integers(10**6))}"
                args[f"arg{k}"] = v
                pool_call.append(v)
            new_id = f"id{int(rng.integers(10**8))}"
            pool_obs.append(new_id)
            obs = "Error: not allowed" if rng.random() < 0.1 else json.dumps({"id": new_id, "status": "ok"})
            steps.append(make_step(tool=tool, arguments=json.dumps(args), observation=obs))
        records.append({"arm": "base" if i % 2 else "rl", "question_id": f"q{i // 4}", "sample_id": i % 4,
                        "question": question, "gold": [], "answer": "done", "correct": bool(rng.random() < 0.5),
                        "n_rounds": len(steps), "steps": steps})
    return from_records(records)


def _cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def _child(arm: str, table: str, sample: int) -> None:
    """One timed arm in this (fresh) process; prints a JSON line."""
    import polars as pl
    from bench_strategies import instrument

    import mechanism.analysis.embed as embed_module
    import mechanism.analysis.strategy_space as space_module

    runs = pl.read_parquet(table)
    timings = instrument(space_module, embed_module)
    t = time.perf_counter()
    if arm == "calls":
        texts = [" ; ".join(f"{s['tool']}({s['arguments']})" for s in steps) for steps in runs["steps"].to_list()]
        emb = embed_module.Embedder(embed_module.DEFAULT_MODEL, progress=False)
        emb._load()
        pick = texts
        if 0 < sample < len(texts):  # a random sample, its cost scaled to every text below
            rng = np.random.default_rng(0)
            pick = [texts[i] for i in rng.choice(len(texts), size=sample, replace=False)]
        w, c = time.perf_counter(), _cpu()
        emb.embed(pick)
        scale = len(set(texts)) / len(set(pick))
        out = {"texts_embedded": len(set(texts)), "strategies": "",
               "extra_wall_s": (time.perf_counter() - w) * (scale - 1), "extra_cpu_s": (_cpu() - c) * (scale - 1),
               "timed": len(set(pick))}
    else:
        space = space_module.StrategySpace(embedder=None if arm == "default" else embed_module.DEFAULT_MODEL,
                                           progress=False).fit(runs)
        emb = space._embedder()
        out = {"texts_embedded": getattr(emb, "n_steps", None) or emb.n_computed, "strategies": space.n_strategies_}
    out.update(inside_s=time.perf_counter() - t, forward_s=timings["forward"], load_s=timings["load"])
    print(json.dumps(out))


def _run(arm: str, table: Path, sample: int) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run([sys.executable, __file__, "--child", arm, str(table), "--reference-sample", str(sample)],
                          capture_output=True, text=True, env=env, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    # a sampled reference: the texts not timed cost what the timed ones did, per text
    return {**out, "wall_s": wall + out.pop("extra_wall_s", 0.0), "cpu_s": cpu + out.pop("extra_cpu_s", 0.0)}


ARMS = {"default": "default fit (composed embedder)", "calls": "MiniLM over tool calls alone",
        "whole": "fit, whole renderings (MiniLM)"}


def main() -> None:
    import harness

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=1, help="runs of each arm; medians are reported")
    ap.add_argument("--whole", action="store_true", help="also time the fit over whole renderings")
    ap.add_argument("--reference-sample", type=int, default=0,
                    help="time MiniLM over this many tool-call texts and scale to all (0: all of them)")
    ap.add_argument("--child", nargs=2, metavar=("ARM", "TABLE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(*args.child, sample=args.reference_sample)
        return
    arms = ["default", "calls"] + (["whole"] if args.whole else [])
    results: dict[str, list[dict]] = {a: [] for a in arms}
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "runs.parquet"
        runs = varied_world(args.n)
        runs.write_parquet(table)
        for _ in range(args.repeat):
            for arm in arms:  # in turn, so a change in the machine's load touches every arm
                results[arm].append(_run(arm, table, args.reference_sample))
    med = {a: {k: (statistics.median(r[k] for r in rs) if isinstance(rs[0][k], float) else rs[0][k])
               for k in rs[0]} for a, rs in results.items()}
    ref = med["calls"]
    rows = [{"arm": ARMS[a] + (f" ({m['timed']:,} timed, scaled)" if m.get("timed", m["texts_embedded"])
                               < m["texts_embedded"] else ""),
             "trajectories": runs.height, "texts embedded": m["texts_embedded"],
             "wall s": round(m["wall_s"], 2), "CPU s": round(m["cpu_s"], 2),
             "wall / reference": round(m["wall_s"] / ref["wall_s"], 3),
             "CPU / reference": round(m["cpu_s"] / ref["cpu_s"], 3),
             "model load s": round(m["load_s"], 2), "forward s": round(m["forward_s"], 2),
             "strategies": m["strategies"]} for a, m in med.items()]
    d = med["default"]
    notes = (f"default fit / MiniLM over tool calls: wall {d['wall_s'] / ref['wall_s']:.3f}, "
             f"CPU {d['cpu_s'] / ref['cpu_s']:.3f} (goal: at most 1/3). Wall and CPU of the whole fresh "
             f"process (imports, reading the table, model load, the work); load average "
             f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the end; median of {args.repeat}.")
    harness.report(__file__, rows, title=f"Cold default fit vs MiniLM over tool calls, {runs.height:,} trajectories",
                   notes=notes, params=vars(args))


if __name__ == "__main__":
    main()
