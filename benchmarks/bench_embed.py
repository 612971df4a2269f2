"""Embedding backends side by side: speed on mostly distinct renderings, and strategy recovery.

Backends (same input, no cache, in this process):

- ``minilm``: today's path, all-MiniLM-L6-v2 on every distinct rendering;
- ``composed``: :class:`mechanism.analysis.embed.ComposedEmbedder`, MiniLM on every distinct *step*
  of the renderings, each rendering the unit mean of its steps;
- ``static``: a model2vec static model distilled from the same MiniLM weights (offline, no
  hub download; needs ``pip install model2vec``; distilled once into ``--static-path``),
  skipped when model2vec is missing;
- ``hashing``: the model-free ``hashing-256`` floor.

Table 1 (speed): the distinct renderings of ``--n`` trajectories of the distinct-renderings
world (``bench_scale_world.py``); renderings per second for each backend. On a CPU the
MiniLM path is timed on ``--minilm-sample`` renderings and scaled (marked "scaled"); on a
GPU it runs on all of them.

Table 2 (recovery): adjusted Rand index of ``StrategySpace(embedder=...)`` labels against
the planted strategies, on the built-in simulator (three seeds) and on ``--n-ari``
trajectories of the distinct-renderings world, with each fit's time.

Run standalone (prints both tables with the device named)::

    python benchmarks/bench_embed.py                     # GPU when present, else CPU
    python benchmarks/bench_embed.py --device cpu --n 20000 --minilm-sample 1000
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from harness import report

sys.path.insert(0, str(Path(__file__).resolve().parent))


def device_name(device: str) -> str:
    import torch

    if device in ("auto", "cuda") and torch.cuda.is_available():
        return f"GPU: {torch.cuda.get_device_name(0)}"
    return f"CPU: {os.cpu_count()} cores ({torch.get_num_threads()} torch threads)"


class StaticEmbedder:
    """model2vec static embeddings distilled from the default MiniLM (measured here only)."""

    def __init__(self, path: Path) -> None:
        from model2vec import StaticModel

        if not (path / "config.json").is_file():
            from model2vec.distill import distill

            from mechanism.analysis.embed import default_model_path

            distill(model_name=str(default_model_path()), pca_dims=256).save_pretrained(str(path))
        self.model = StaticModel.from_pretrained(str(path))
        self.model_id = f"model2vec:{path.name}"

    def embed(self, texts):
        x = np.asarray(self.model.encode(list(texts)), dtype=np.float32)
        n = np.linalg.norm(x, axis=1, keepdims=True)
        return np.divide(x, n, out=np.zeros_like(x), where=n > 0)


def backends(args) -> dict:
    from mechanism.analysis.embed import ComposedEmbedder, Embedder, HashingEmbedder

    out = {
        "minilm": lambda: Embedder(device=args.device, progress=False),
        "composed": lambda: ComposedEmbedder(Embedder(device=args.device, progress=False)),
        "hashing": lambda: HashingEmbedder(256),
    }
    try:
        import model2vec  # noqa: F401

        out["static"] = lambda: StaticEmbedder(Path(args.static_path))
    except ImportError:
        print("(model2vec not installed: static backend skipped)")
    return {k: out[k] for k in args.backends.split(",") if k in out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="trajectories of the distinct world for the speed table")
    ap.add_argument("--n-ari", type=int, default=3000, help="trajectories of the distinct world for recovery")
    ap.add_argument("--minilm-sample", type=int, default=None,
                    help="renderings MiniLM is timed on (default: 1,000 on a CPU, all on a GPU)")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--backends", default="minilm,composed,static,hashing")
    ap.add_argument("--static-path", default=str(Path.home() / ".cache" / "mechanism" / "minilm-static-256"))
    ap.add_argument("--skip-ari", action="store_true")
    args = ap.parse_args()
    import torch
    from bench_scale_world import distinct_world
    from sklearn.metrics import adjusted_rand_score

    from mechanism.analysis.segmentation import render
    from mechanism.analysis.strategy_space import StrategySpace
    from mechanism.datasets.simulation import simulate

    on_gpu = args.device in ("auto", "cuda") and torch.cuda.is_available()
    sample = args.minilm_sample or (None if on_gpu else 1000)
    made = backends(args)
    device = device_name(args.device)

    runs, _ = distinct_world(args.n, seed=1)
    texts = render(runs)["rendering"].unique(maintain_order=True).to_list()
    n_steps = len({p for t in texts for p in t.split(" | ")})
    speed = []
    for name, make in made.items():
        emb = make()
        emb.embed(texts[:8])  # load the model outside the clock
        pick = texts if (name != "minilm" or sample is None) else texts[:sample]
        t = time.perf_counter()
        emb.embed(pick)
        dt = time.perf_counter() - t
        rate = len(pick) / dt
        full = f"{len(texts) / rate:.1f}" + (" (scaled)" if len(pick) < len(texts) else "")
        speed.append({"backend": name, "renderings embedded": len(pick), "time (s)": round(dt, 1),
                      "renderings / s": round(rate), "time for all (s)": full})
        del emb
    report(__file__, speed, part="speed", params=vars(args), notes=f"device: {device}",
           title=f"Speed: {len(texts):,} distinct renderings ({n_steps:,} distinct steps) of {runs.height:,} "
                 "trajectories")
    if args.skip_ari:
        return

    worlds = []
    for seed in (0, 11, 23):
        sim = simulate(n_questions=60, n_samples=8, random_state=seed, progress=False)
        truth = sim.runs.select("arm", "question_id", "sample_id").join(
            sim.truth.select("arm", "question_id", "sample_id", "strategy"),
            on=["arm", "question_id", "sample_id"], how="left", maintain_order="left")["strategy"].to_numpy()
        worlds.append((f"simulator seed {seed} ({sim.runs.height:,})", sim.runs, truth))
    druns, dtruth = distinct_world(args.n_ari, seed=2)
    worlds.append((f"distinct world ({druns.height:,})", druns, dtruth))
    table = []
    for label, wruns, truth in worlds:
        cells = {"world": label}
        for name, make in made.items():
            t = time.perf_counter()
            space = StrategySpace(embedder=make(), random_state=0, progress=False).fit(wruns)
            dt = time.perf_counter() - t
            cells[f"{name} ARI"] = round(adjusted_rand_score(truth, space.labels_), 3)
            cells[f"{name} fit (s)"] = round(dt, 1)
        table.append(cells)
    report(__file__, table, part="recovery", params=vars(args), notes=f"device: {device}",
           title="Recovery: adjusted Rand index against the planted strategies")


if __name__ == "__main__":
    main()
