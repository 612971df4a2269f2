"""Benchmark: fitting a strategy space on 20,000 simulated trajectories, cold and warm cache,
against the raw-transcript embedding a BERTopic-style pipeline would do.

Each timed run is a fresh Python process (imports and model loading count), reading the
same canonical parquet table:

- ``cold``: empty cache; times segmentation, model loading, the model's forward passes
  (time inside ``SentenceTransformer.encode``), clustering and description.
- ``warm``: the same fit again with the cache the cold run left.
- ``reference``: MiniLM on the raw transcripts (question, queries, observations), as a
  raw-text topic pipeline embeds them, timed on a sample and scaled to all trajectories.

Run: ``python benchmarks/bench_strategies.py [--n 20000] [--reference-sample 300]``.
Prints a markdown table.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

T0 = time.perf_counter()


def _child(phase: str, table: str, cache: str, sample: int) -> None:
    import numpy as np
    import polars as pl

    from mechanism import embed as embed_module
    from mechanism import strategy_space as space_module
    from mechanism.strategy_space import StrategySpace

    timings = {"forward": 0.0, "load": 0.0, "segment": 0.0}
    render = space_module.render

    def timed_render(runs):
        t = time.perf_counter()
        out = render(runs)
        timings["segment"] += time.perf_counter() - t
        return out

    space_module.render = timed_render
    encode, load = embed_module.Embedder._encode, embed_module.Embedder._load

    def timed_encode(self, texts):
        self._load()
        t = time.perf_counter()
        out = encode(self, texts)
        timings["forward"] += time.perf_counter() - t
        return out

    def timed_load(self):
        t = time.perf_counter()
        out = load(self)
        if self._model is not None and timings["load"] == 0.0:
            timings["load"] = time.perf_counter() - t
        return out

    embed_module.Embedder._encode, embed_module.Embedder._load = timed_encode, timed_load
    runs = pl.read_parquet(table)
    if phase == "reference":
        text = [" ".join([q] + [f"{s['query']} {s['observation']}" for s in steps])
                for q, steps in zip(runs["question"].to_list(), runs["steps"].to_list())]
        rng = np.random.default_rng(0)
        pick = [text[i] for i in rng.choice(len(text), size=min(sample, len(text)), replace=False)]
        emb = embed_module.Embedder(progress=False)
        emb._load()
        t = time.perf_counter()
        emb._encode(pick)
        per_text = (time.perf_counter() - t) / len(pick)
        print(json.dumps({"phase": phase, "sample": len(pick), "per_text_s": per_text,
                          "mean_chars": float(np.mean([len(x) for x in pick])),
                          "extrapolated_s": per_text * len(text)}))
        return
    space = StrategySpace(cache_dir=cache, progress=False)
    t = time.perf_counter()
    space.fit(runs)
    fit_s = time.perf_counter() - t
    emb = space._embedder()
    total = time.perf_counter() - T0
    print(json.dumps({"phase": phase, "rows": runs.height, "total_s": total, "fit_s": fit_s,
                      "segment_s": timings["segment"], "forward_s": timings["forward"], "load_s": timings["load"],
                      "n_embedded": emb.n_computed, "n_cached": emb.n_cached,
                      "n_strategies": space.n_strategies_}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="trajectories (approximately)")
    parser.add_argument("--reference-sample", type=int, default=300)
    parser.add_argument("--child", nargs=3, metavar=("PHASE", "TABLE", "CACHE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child, sample=args.reference_sample)
        return
    from mechanism.simulate import simulate

    n_samples = 48
    n_questions = max(1, round(args.n / (3 * n_samples)))
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "runs.parquet"
        cache = Path(tmp) / "cache"
        simulate(n_questions=n_questions, n_samples=n_samples, seed=0, progress=False).runs.write_parquet(table)
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        res = {}
        for phase in ("cold", "warm", "reference"):
            out = subprocess.run([sys.executable, __file__, "--child", phase, str(table), str(cache),
                                  "--reference-sample", str(args.reference_sample)],
                                 capture_output=True, text=True, env=env, check=True)
            res[phase] = json.loads(out.stdout.strip().splitlines()[-1])
    cold, warm, ref = res["cold"], res["warm"], res["reference"]
    rows = cold["rows"]
    overhead = cold["total_s"] - cold["forward_s"]
    print(f"## Strategy space, {rows:,} simulated trajectories, {os.cpu_count()} cores\n")
    print("| run | total s | fit s | segmentation s | model load s | model forward s | texts embedded | cached | strategies |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in (("cold cache", cold), ("warm cache", warm)):
        print(f"| {name} | {r['total_s']:.2f} | {r['fit_s']:.2f} | {r['segment_s']:.2f} | {r['load_s']:.2f} | "
              f"{r['forward_s']:.2f} | {r['n_embedded']:,} | {r['n_cached']:,} | {r['n_strategies']} |")
    print(f"| reference: MiniLM on raw transcripts (BERTopic-style), {ref['sample']} timed, scaled to {rows:,} "
          f"| {ref['extrapolated_s']:.1f} | | | | {ref['extrapolated_s']:.1f} | {rows:,} | | |")
    print()
    print(f"- everything but the model's forward passes: {overhead:.2f} s = {overhead / cold['total_s']:.0%} of the cold total")
    print(f"- warm / cold total: {warm['total_s'] / cold['total_s']:.0%}")
    print(f"- cold total vs the reference's forward passes alone: {ref['extrapolated_s'] / cold['total_s']:.0f}x faster "
          f"({ref['per_text_s'] * 1000:.1f} ms per raw transcript of {ref['mean_chars']:.0f} characters)")


if __name__ == "__main__":
    main()
