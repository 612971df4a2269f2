"""A planted world whose renderings are mostly distinct, for the scale and embedding benchmarks.

The built-in simulator's agent uses one search tool for a few rounds, so 256,000 of its
trajectories collapse to about a hundred distinct renderings and the embedding model hardly
runs. Real agents do not collapse (tau-bench airline: 139 distinct renderings in 200
trajectories): they call many tools, for many rounds, in varied orders. This world plants
six strategies that differ in how tools are used (the grammar's moves and where query words
come from), each drawing its tools from its own pool of a dozen tools and its length from a
wide range, so almost every trajectory has a rendering of its own while its strategy is
known.

Strategies (planted truth ``strategy``):

0. ``direct``: one or two lookups of the whole question, then answer.
1. ``chain``: a part of the question, then 2-8 lookups that each carry a name from the
   previous result (bridges).
2. ``explore``: 3-10 lookups of new words on varied tools (branching).
3. ``retry``: the question reworded again and again (reformulations, repeats), 3-9 calls.
4. ``verify``: part of the question, 1-4 bridges, then a lookup of the candidate answer.
5. ``guess``: no tool call; answer from the question.

Run ``python benchmarks/bench_scale_world.py [--n 100000]`` to print how many renderings
are distinct; with ``--fit`` it also fits a strategy space on them with the composed
embedder (each distinct step embedded once) and compares with today's MiniLM path, whose
forward passes over every distinct rendering are timed on ``--minilm-sample`` of them and
scaled (the rest of the fit is the same work). ``--minilm-full`` runs the MiniLM fit whole.
"""
from __future__ import annotations

import argparse
import random
import time

import numpy as np
import polars as pl
from harness import report

from mechanism.analysis.segmentation import render

TOOLS = ("search", "lookup_user", "get_order", "list_flights", "get_reservation", "calculate", "search_docs",
         "fetch_page", "query_db", "get_weather", "find_product", "check_status", "list_items", "get_policy")
STRATEGY_NAMES = ("direct", "chain", "explore", "retry", "verify", "guess")
_LETTERS = "bcdfghjklmnprstvwz"
_VOWELS = "aeiou"


def _word(rng: random.Random, capital: bool = False) -> str:
    n = rng.randint(2, 3)
    w = "".join(rng.choice(_LETTERS) + rng.choice(_VOWELS) for _ in range(n)) + rng.choice(_LETTERS)
    return w.capitalize() if capital else w


def _episode(rng: random.Random, strategy: int, question_words: list[str],
             pool: list[str]) -> tuple[list[dict], str, bool]:
    """Steps, answer and success of one episode of ``strategy``."""
    steps: list[dict] = []
    answer = _word(rng, capital=True)

    def call(query: list[str], names: int = 2, with_answer: bool = False) -> list[str]:
        found = [_word(rng, capital=True) for _ in range(names)]
        text = f"Result: {' '.join(found)} {_word(rng)}" + (f" {answer}" if with_answer else "")
        steps.append({"thought": "", "tool": rng.choice(pool), "arguments": "{}",
                      "query": " ".join(query), "observation": text})
        return found

    q = question_words
    if strategy == 0:
        for _ in range(rng.randint(1, 2)):
            call(list(q))
    elif strategy == 1:
        names = call(rng.sample(q, 2))
        for _ in range(rng.randint(2, 8)):
            names = call([rng.choice(names)] + ([_word(rng)] if rng.random() < 0.5 else []))
    elif strategy == 2:
        for _ in range(rng.randint(3, 10)):
            call([_word(rng) for _ in range(rng.randint(1, 3))] + ([rng.choice(q)] if rng.random() < 0.3 else []))
    elif strategy == 3:
        query = list(q)
        call(query)
        for _ in range(rng.randint(2, 8)):
            if rng.random() < 0.6:  # swap one word: a reformulation
                query = list(query)
                query[rng.randrange(len(query))] = _word(rng)
            call(query)
    elif strategy == 4:
        names = call(rng.sample(q, 2))
        for _ in range(rng.randint(1, 4)):
            names = call([rng.choice(names)], with_answer=True)
        call([answer, rng.choice(q)])
    rate = (0.7, 0.6, 0.3, 0.4, 0.8, 0.15)[strategy]
    return steps, answer, bool(rng.random() < rate)


def distinct_world(n: int, *, n_questions: int | None = None, seed: int = 0,
                   arms: tuple[str, ...] = ("base", "rl")) -> tuple[pl.DataFrame, np.ndarray]:
    """``n`` trajectories (split over ``arms``) as a canonical table, and each one's planted strategy.

    The arms differ in their strategy mix (the second favours ``chain`` and ``verify``).
    """
    from mechanism.core.schema import from_records

    rng = random.Random(seed)
    n_questions = n_questions or max(1, n // (16 * len(arms)))
    questions = [[_word(rng) for _ in range(6)] for _ in range(n_questions)]
    mixes = [[0.2, 0.2, 0.2, 0.2, 0.1, 0.1], [0.1, 0.3, 0.1, 0.1, 0.35, 0.05]]
    records, truth = [], []
    per_arm = n // len(arms)
    for a, arm in enumerate(arms):
        mix = mixes[min(a, len(mixes) - 1)]
        for i in range(per_arm):
            qi, sample = i % n_questions, i // n_questions
            s = rng.choices(range(6), weights=mix)[0]
            pool = rng.sample(TOOLS, rng.randint(3, 6))
            steps, answer, ok = _episode(rng, s, questions[qi], pool)
            records.append({"arm": arm, "question_id": f"q{qi:06d}", "sample_id": sample,
                            "question": " ".join(questions[qi]) + "?", "gold": [answer if ok else "unknown"],
                            "answer": answer, "correct": ok, "n_rounds": len(steps), "steps": steps})
            truth.append(s)
    return from_records(records), np.asarray(truth)


class _Timed:
    """An embedder that adds up the time spent in ``embed``."""

    def __init__(self, inner) -> None:
        self.inner, self.seconds = inner, 0.0
        self.model_id = inner.model_id

    def embed(self, texts):
        t = time.perf_counter()
        out = self.inner.embed(texts)
        self.seconds += time.perf_counter() - t
        return out


def fit_against_minilm(runs: pl.DataFrame, truth: np.ndarray, sample: int, full: bool, params: dict) -> None:
    import resource

    from sklearn.metrics import adjusted_rand_score

    from mechanism.analysis.embed import ComposedEmbedder, Embedder
    from mechanism.analysis.strategy_space import StrategySpace

    rows = []
    composed = _Timed(ComposedEmbedder(Embedder(progress=False)))
    composed.inner.base.embed(["warm up"])  # load the model outside the clock (both paths load it)
    t = time.perf_counter()
    space = StrategySpace(embedder=composed, random_state=0, progress=False).fit(runs)
    fit_s = time.perf_counter() - t
    rows.append(("composed (each distinct step once)", fit_s, composed.seconds, composed.inner.n_steps,
                 adjusted_rand_score(truth, space.labels_), "measured"))
    minilm = Embedder(progress=False)
    minilm.embed(["warm up"])
    texts = render(runs)["rendering"].unique(maintain_order=True).to_list()
    if full:
        timed = _Timed(minilm)
        t = time.perf_counter()
        whole = StrategySpace(embedder=timed, random_state=0, progress=False).fit(runs)
        rows.append(("MiniLM on every distinct rendering (today)", time.perf_counter() - t, timed.seconds,
                     len(texts), adjusted_rand_score(truth, whole.labels_), "measured"))
    else:
        pick = texts[:sample]
        t = time.perf_counter()
        minilm.embed(pick)
        rate = len(pick) / (time.perf_counter() - t)
        embed_s = len(texts) / rate
        rows.append(("MiniLM on every distinct rendering (today)", fit_s - composed.seconds + embed_s, embed_s,
                     len(texts), float("nan"), f"embedding scaled from {len(pick):,} at {rate:.1f}/s"))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    report(__file__, [{"embedder": name, "fit (s)": round(fit), "of which embedding (s)": round(emb),
                       "texts through the model": n, "ARI vs planted": "nan" if ari != ari else round(ari, 3),
                       "how": how} for name, fit, emb, n, ari, how in rows], part="fit", params=params,
           title=f"fit on {runs.height:,} trajectories ({len(texts):,} distinct renderings), "
                 f"peak memory {peak:.2f} GB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--fit", action="store_true")
    ap.add_argument("--minilm-sample", type=int, default=500)
    ap.add_argument("--minilm-full", action="store_true")
    args = ap.parse_args()

    t = time.perf_counter()
    runs, truth = distinct_world(args.n)
    gen_s = time.perf_counter() - t
    t = time.perf_counter()
    traj = render(runs)
    render_s = time.perf_counter() - t
    steps = {p for r in traj["rendering"].unique().to_list() for p in r.split(" | ")}
    report(__file__, [{"trajectories": runs.height, "distinct renderings": traj["rendering"].n_unique(),
                       "distinct steps": len(steps), "generate (s)": round(gen_s, 1),
                       "render (s)": round(render_s, 1)}],
           part="world", params=vars(args), title=f"{runs.height:,} trajectories with mostly distinct renderings")
    if args.fit:
        del traj
        fit_against_minilm(runs, truth, args.minilm_sample, args.minilm_full, vars(args))


if __name__ == "__main__":
    main()
