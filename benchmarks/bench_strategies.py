"""Benchmark: fitting a strategy space on 20,000 simulated trajectories, cold and warm cache,
against the raw-transcript embedding a BERTopic-style pipeline would do.

Each timed run is a fresh Python process reading the same canonical parquet table, and is
reported two ways side by side:

- *fresh-process total*: wall time of the whole process as the parent sees it (interpreter
  start, imports, reading the table, the fit, interpreter exit);
- *in-process*: the ``StrategySpace.fit`` call alone, after imports, split into
  segmentation (``render``), model loading (importing sentence-transformers and building
  the model), the model's forward passes (time inside ``SentenceTransformer.encode``, which
  includes tokenising the batch), and the rest (caches, joining, clustering, describing).

Phases:

- ``cold``: empty cache (``StrategySpace(cache_dir=...)``, default MiniLM embedder);
- ``warm``: the same fit again in a new process, with the cache the cold run left;
- ``reference``: MiniLM on the raw transcripts (question, queries, observations), as a
  raw-text topic pipeline embeds them, timed on a sample and scaled to all trajectories.

Cold and warm are repeated ``--repeat`` times (each cold run with its own empty cache) and
the median of each quantity is reported; machine noise from other processes is large
next to the warm run.

Run: ``python benchmarks/bench_strategies.py [--n 20000] [--repeat 3] [--reference-sample 300]``.
Prints a markdown table and the issue's two ratios.
"""
from __future__ import annotations

import time

T0 = time.perf_counter()

# ruff: noqa: E402 - the imports below come after the clock, so a timed child process counts them
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def instrument(space_module, embed_module) -> dict[str, float]:
    """Time the strategy fit's parts from outside: ``segment`` (calls of
    ``strategy_space.render``), ``load`` (building the model) and ``forward`` (inside the
    model's ``encode``: tokenising and forward passes). Patches the two modules; returns
    the dict the timings accumulate in."""
    timings = {"forward": 0.0, "load": 0.0, "segment": 0.0}
    render = space_module.render

    def timed_render(runs, **kwargs):
        t = time.perf_counter()
        out = render(runs, **kwargs)
        timings["segment"] += time.perf_counter() - t
        return out

    space_module.render = timed_render
    load = embed_module.Embedder._load

    def timed_load(self):
        fresh = self._model is None
        t = time.perf_counter()
        model = load(self)
        if fresh:
            timings["load"] += time.perf_counter() - t
            encode = model.encode

            def timed_encode(*args, **kwargs):  # the model's own call: tokenise + forward
                t = time.perf_counter()
                out = encode(*args, **kwargs)
                timings["forward"] += time.perf_counter() - t
                return out

            model.encode = timed_encode
        return model

    embed_module.Embedder._load = timed_load
    return timings


def _child(phase: str, table: str, cache: str, sample: int) -> None:
    """One timed run; prints a JSON line of timings."""
    import importlib

    t = time.perf_counter()
    import polars as pl

    embed_module = importlib.import_module("mechanism.analysis.embed")
    space_module = importlib.import_module("mechanism.analysis.strategy_space")
    imports_s = time.perf_counter() - t

    timings = instrument(space_module, embed_module)
    t = time.perf_counter()
    runs = pl.read_parquet(table)
    read_s = time.perf_counter() - t
    if phase == "reference":
        import numpy as np

        text = [" ".join([q] + [f"{s['query']} {s['observation']}" for s in steps])
                for q, steps in zip(runs["question"].to_list(), runs["steps"].to_list())]
        rng = np.random.default_rng(0)
        pick = [text[i] for i in rng.choice(len(text), size=min(sample, len(text)), replace=False)]
        emb = embed_module.Embedder(progress=False)
        emb._load()
        emb._encode(pick)
        per_text = timings["forward"] / len(pick)
        print(json.dumps({"phase": phase, "sample": len(pick), "per_text_s": per_text,
                          "mean_chars": float(np.mean([len(x) for x in pick])),
                          "extrapolated_s": per_text * len(text)}))
        return
    space = space_module.StrategySpace(cache_dir=cache, progress=False)
    t = time.perf_counter()
    space.fit(runs)
    fit_s = time.perf_counter() - t
    emb = space._embedder()
    print(json.dumps({"phase": phase, "rows": runs.height, "child_s": time.perf_counter() - T0,
                      "imports_s": imports_s, "read_s": read_s, "fit_s": fit_s,
                      "segment_s": timings["segment"], "forward_s": timings["forward"], "load_s": timings["load"],
                      "n_embedded": emb.n_computed, "n_cached": emb.n_cached,
                      "n_strategies": space.n_strategies_}))


def _run(phase: str, table: Path, cache: Path, sample: int, env: dict[str, str]) -> dict:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--child", phase, str(table), str(cache),
                          "--reference-sample", str(sample)],
                         capture_output=True, text=True, env=env, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["total_s"] = time.perf_counter() - t  # the whole process, start to exit
    return res


def _median(runs: list[dict]) -> dict:
    out = dict(runs[0])
    for key, value in runs[0].items():
        if isinstance(value, float):
            out[key] = statistics.median(r[key] for r in runs)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="trajectories (approximately)")
    parser.add_argument("--repeat", type=int, default=3, help="cold/warm pairs; medians are reported")
    parser.add_argument("--reference-sample", type=int, default=300, help="0 skips the reference")
    parser.add_argument("--child", nargs=3, metavar=("PHASE", "TABLE", "CACHE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child, sample=args.reference_sample)
        return
    from mechanism.datasets.simulation import simulate

    n_samples = 48
    n_questions = max(1, round(args.n / (3 * n_samples)))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    cold_runs, warm_runs = [], []
    ref = None
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "runs.parquet"
        simulate(n_questions=n_questions, n_samples=n_samples, random_state=0, progress=False).runs.write_parquet(table)
        for i in range(args.repeat):
            cache = Path(tmp) / f"cache{i}"
            cold_runs.append(_run("cold", table, cache, args.reference_sample, env))
            warm_runs.append(_run("warm", table, cache, args.reference_sample, env))
        if args.reference_sample > 0:
            ref = _run("reference", table, Path(tmp) / "unused", args.reference_sample, env)
    cold, warm = _median(cold_runs), _median(warm_runs)
    rows = cold["rows"]
    columns = ("run", "process total s", "imports s", "fit s (in-process)", "segmentation s", "model load s",
               "model forward s", "rest of fit s", "texts embedded", "cached", "strategies")
    table = []
    for name, r in (("cold cache", cold), ("warm cache", warm)):
        rest = r["fit_s"] - r["segment_s"] - r["load_s"] - r["forward_s"]
        table.append(dict(zip(columns, (name, *(round(r[k], 2) for k in ("total_s", "imports_s", "fit_s", "segment_s",
                                                                          "load_s", "forward_s")),
                                        round(rest, 2), r["n_embedded"], r["n_cached"], r["n_strategies"]))))
    if ref is not None:
        table.append({**dict.fromkeys(columns, ""), "run": f"reference: MiniLM on raw transcripts (BERTopic-style), "
                      f"{ref['sample']} timed, scaled to {rows:,}", "model forward s": round(ref["extrapolated_s"], 1),
                      "texts embedded": rows})
    fwd = cold["forward_s"]
    notes = [f"- bar 1 ({label}): everything but the model's forward passes = {total - fwd:.2f} s "
             f"= {(total - fwd) / total:.0%} of {total:.2f} s (bar: at most 30 %)"
             for label, total in (("fresh process", cold["total_s"]), ("fit call alone", cold["fit_s"]))]
    notes.append(f"- bound on bar 1: model loading alone ({cold['load_s']:.2f} s) vs forward passes ({fwd:.2f} s) "
                 f"leaves at least {cold['load_s'] / (cold['load_s'] + fwd):.0%} of the cold run outside the forward "
                 f"passes, for {cold['n_embedded']:,} distinct renderings")
    notes.append(f"- bar 2 (fresh process): warm / cold = {warm['total_s']:.2f} / {cold['total_s']:.2f} s "
                 f"= {warm['total_s'] / cold['total_s']:.1%} (bar: at most 10 %)")
    notes.append(f"- bar 2 (fit call alone): warm / cold = {warm['fit_s']:.3f} / {cold['fit_s']:.2f} s "
                 f"= {warm['fit_s'] / cold['fit_s']:.1%}")
    if ref is not None:
        notes.append(f"- cold process total vs the reference's forward passes alone: "
                     f"{ref['extrapolated_s'] / cold['total_s']:.0f}x faster "
                     f"({ref['per_text_s'] * 1000:.1f} ms per raw transcript of {ref['mean_chars']:.0f} characters)")
    notes.append("\nper run (cold total / warm total, s): "
                 + ", ".join(f"{c['total_s']:.2f}/{w['total_s']:.2f}" for c, w in zip(cold_runs, warm_runs)))
    from harness import report

    report(__file__, table, params=vars(args), notes="\n".join(notes),
           title=f"Strategy space, {rows:,} simulated trajectories (median of {args.repeat} fresh processes per row)")

if __name__ == "__main__":
    main()
