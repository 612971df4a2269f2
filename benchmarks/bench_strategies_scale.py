"""Benchmark: StrategySpace.fit on 20,000 trajectories whose renderings are mostly distinct.

Real transcripts rarely repeat a whole rendering (139 distinct of 200 on tau-bench's airline
runs, 128 of 297 on Reflexion), so the embedder sees most of them. This benchmark generates
a tool-use world with that property: 30 tools, 1-12 calls per episode, JSON arguments whose
values come from the user turn, earlier results, earlier calls or nowhere, 10 % failed calls.
It then times one cold fit (no cache) in this process, split into

- segmentation: :func:`mechanism.segmentation.render` (the move grammar);
- model load: building the sentence-transformers model;
- forward passes: time inside ``SentenceTransformer.encode`` (tokenising and the model);
- rest: everything else in ``fit`` (joining, clustering, bootstrap stability, describing).

Run: ``python benchmarks/bench_strategies_scale.py [--n 20000] [--embedder NAME]``.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

TOOLS = [f"{verb}_{noun}" for verb in ("get", "update", "cancel", "search", "list", "book")
         for noun in ("order", "reservation", "user_details", "flight", "payment")]


def varied_world(n: int, seed: int = 0):
    """``n`` canonical trajectories with mostly distinct move sequences."""
    from mechanism.schema import from_records, make_step

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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--embedder", default=None)
    args = ap.parse_args()
    import mechanism.embed as embed_module
    import mechanism.strategy_space as space_module
    from bench_strategies import instrument
    from harness import report

    runs = varied_world(args.n)
    timings = instrument(space_module, embed_module)
    space = space_module.StrategySpace(embedder=args.embedder, progress=False)
    t = time.perf_counter()
    space.fit(runs)
    total = time.perf_counter() - t
    distinct = len(set(space.train_renderings_))
    rest = total - timings["segment"] - timings["forward"] - timings["load"]
    report(__file__, [{"trajectories": runs.height, "distinct renderings": distinct, "fit s": round(total, 1),
                       "segmentation s": round(timings["segment"], 1), "model load s": round(timings["load"], 1),
                       "forward passes s": round(timings["forward"], 1), "rest s": round(rest, 1),
                       "rest share": f"{rest / total:.0%}", "strategies": space.n_strategies_}],
           title="Fit time at scale, renderings mostly distinct", params=vars(args))

if __name__ == "__main__":
    main()
