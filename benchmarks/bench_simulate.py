"""Benchmark: how long the simulator takes, at the demo size and at paper scale.

The reference is the straightforward use of ``bm25s`` for every search: tokenize the query
with ``bm25s.tokenize`` and call ``BM25.retrieve`` (no cache, its own tokenizer), swapped in
for :class:`mechanism.datasets.simulation.retriever.ParagraphRetriever` inside the same simulate() run.
Everything else (world, policies, table building) is shared, so the ratio is the retriever's.

Run: ``python benchmarks/bench_simulate.py [--repeat N] [--skip-reference]``; prints a
Markdown table.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from unittest import mock

import bm25s
import numpy as np
from harness import report

import mechanism.datasets.simulation.run as sim_run
from mechanism.datasets.simulation import simulate


class ReferenceRetriever:
    """Per-search ``bm25s.tokenize`` + ``BM25.retrieve``, no cache (the usual way to call bm25s)."""

    def __init__(self, texts: list[str], *, top_k: int = 1) -> None:
        self.top_k = top_k
        self.n_docs = len(texts)
        self._bm25 = bm25s.BM25()
        self._bm25.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)

    def search(self, query: str) -> tuple[int, ...]:
        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        # a query with no indexed word: bm25s would score zeros; keep the shape simple
        if not any(tokens.ids[0]):
            return ()
        docs, scores = self._bm25.retrieve(tokens, k=self.top_k, show_progress=False, n_threads=1)
        return tuple(int(d) for d, s in zip(docs[0], scores[0]) if s > 0)


def _time(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell; the best is reported")
    parser.add_argument("--skip-reference", action="store_true")
    args = parser.parse_args()

    sizes = [("demo", 40, 16, 5), ("paper", 100, 64, 5), ("paper, T=3", 100, 64, 3), ("2x paper", 200, 64, 5)]
    rows = []
    for label, nq, ns, cap in sizes:
        kw = dict(n_questions=nq, n_samples=ns, t_cap=cap, random_state=0, progress=False)
        t_sim, sim = _time(lambda kw=kw: simulate(**kw), args.repeat)
        with tempfile.TemporaryDirectory() as tmp:
            t_write, _ = _time(lambda sim=sim, tmp=tmp: sim.write(tmp), args.repeat)
        n_search = int(sim.runs["n_rounds"].sum())
        ref = ratio = "-"
        if not args.skip_reference and label in ("demo", "paper"):
            with mock.patch.object(sim_run, "ParagraphRetriever", ReferenceRetriever):
                t_ref, _ = _time(lambda kw=kw: simulate(**kw), args.repeat)
            ref, ratio = f"{t_ref:.2f}", f"{t_ref / t_sim:.1f}x"
        rows.append((label, f"3 x {nq} x {ns}", cap, sim.runs.height, n_search, f"{t_sim:.2f}",
                     f"{t_write:.2f}", ref, ratio))

    head = ("size", "arms x questions x samples", "t_cap", "trajectories", "searches", "simulate s",
            "write s", "reference s (uncached bm25s.retrieve)", "reference / ours")
    report(__file__, [dict(zip(head, r)) for r in rows], title="simulate() speed",
           notes=f"numpy {np.__version__}, bm25s {bm25s.__version__}; best of {args.repeat} for every cell.",
           params=vars(args))

if __name__ == "__main__":
    main()
