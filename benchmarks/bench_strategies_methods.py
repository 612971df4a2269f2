"""Which clustering of behaviour sequences recovers planted strategies: the field's standard
methods beside the default, world by world, and the method a leave-one-world-out choice picks.

For every world of ``bench_strategies_floor.py`` (the simulator and
:data:`mechanism.datasets.worlds.WORLDS`) and seed, the adjusted Rand index against the planted
strategies of:

- ``default``: ``mx.StrategySpace()`` (agglomerative, average linkage, on move tokens joined
  with the sentence embedding, the tree cut at ``resolution``, a tree per tool plan);
- ``default, families``: the same fit read at ``level="family"`` (each strategy joined with
  the ones one step longer, :mod:`mechanism.analysis._strategies.levels`): the evidence for
  which level is shown by default;
- the estimator's other clusterings: ``method="kmeans"`` (k by silhouette), ``method="hdbscan"``
  and ``cluster_on="umap"``;
- **optimal matching** (TraMineR's ``seqdist(method="OM")`` + ``hclust`` + average silhouette
  width, the standard of sequence analysis): edit distances between the tool sequences the
  default reads (retries merged), with constant costs (indel 1, substitution 2) or with
  TraMineR's ``INDELSLOG`` costs (indel ``log(2 / (1 + f))`` for a tool in a share ``f`` of
  trajectories, substitution the sum of the two indels); average linkage; the number of
  strategies (2-12) with the highest average silhouette width;
- **n-gram profiles**: TF-IDF of tool-name unigrams and bigrams, k-means, k (2-12) by cosine
  silhouette (the floor's baseline, without being told the planted k);
- **mixture of Markov chains** (Cadez et al. 2003): first-order chains over tools with start
  and end states, fitted by EM (five seeded starts), the number of components (1-10) by BIC.
  Each chain's transitions are those met in the table (a pseudo-count of
  :data:`MARKOV_PSEUDO_COUNT` on each, none elsewhere), and BIC counts those free parameters
  alone: counting every cell of the tools x tools matrix, as an earlier version did with
  add-one smoothing everywhere, charged hundreds of parameters no trajectory can inform and
  chose one component on 15 of 22 worlds (ARI 0 there).

Then, leaving each world out, the method with the fewest other worlds below the floor (ties
by mean ARI on the others) is chosen and its ARI on the held-out world printed. The floor is
``bench_strategies_floor.py``'s: the better of rounds alone and TF-IDF with k-means at the
planted k.

Run: ``python benchmarks/bench_strategies_methods.py [--seeds 0 1 2] [--worlds a b ...]
[--n 60] [--embedder hashing-256|None]``.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
import numpy as np
import polars as pl
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics import adjusted_rand_score, silhouette_score

import mechanism as mx
from mechanism.analysis.segmentation import render
from mechanism.analysis.strategy_params import Level
from mechanism.analysis.strategy_space import at_level

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness
from bench_strategies_floor import baseline_rounds, baseline_tfidf, load_world, tool_documents, worlds

#: The numbers of strategies the criteria choose among.
K_RANGE = range(2, 13)
#: The numbers of Markov-chain components BIC chooses among.
MARKOV_K = range(1, 11)
#: The pseudo-count on each transition met in the table (a light Dirichlet prior).
MARKOV_PSEUDO_COUNT = 0.1


def tool_sequences(runs: pl.DataFrame) -> list[tuple[str, ...]]:
    """Each trajectory's tools in call order as the default fit reads them (retries merged)."""
    return [tuple(t.split(" > ")) if t else () for t in render(runs)["tools"].to_list()]


@numba.njit(cache=True)
def _om_matrix(codes: np.ndarray, lengths: np.ndarray, indel: np.ndarray, sub: np.ndarray) -> np.ndarray:
    n = len(lengths)
    out = np.zeros((n, n))
    for a in range(n):
        for b in range(a + 1, n):
            la, lb = lengths[a], lengths[b]
            m = np.zeros((la + 1, lb + 1))
            for i in range(1, la + 1):
                m[i, 0] = m[i - 1, 0] + indel[codes[a, i - 1]]
            for j in range(1, lb + 1):
                m[0, j] = m[0, j - 1] + indel[codes[b, j - 1]]
            for i in range(1, la + 1):
                for j in range(1, lb + 1):
                    x, y = codes[a, i - 1], codes[b, j - 1]
                    step = 0.0 if x == y else sub[x, y]
                    m[i, j] = min(m[i - 1, j - 1] + step, m[i - 1, j] + indel[x], m[i, j - 1] + indel[y])
            out[a, b] = out[b, a] = m[la, lb]
    return out


def om_distances(seqs: list[tuple[str, ...]], costs: str) -> tuple[np.ndarray, np.ndarray]:
    """Optimal-matching distances between the distinct sequences of ``seqs`` (``costs``
    ``"constant"`` or ``"indelslog"``) and each trajectory's distinct sequence."""
    distinct: dict[tuple[str, ...], int] = {}
    inverse = np.array([distinct.setdefault(s, len(distinct)) for s in seqs], dtype=np.int64)
    states = {t: i for i, t in enumerate(sorted({t for s in distinct for t in s}))}
    width = max([1, *map(len, distinct)])
    codes = np.zeros((len(distinct), width), dtype=np.int64)
    for r, s in enumerate(distinct):
        codes[r, :len(s)] = [states[t] for t in s]
    lengths = np.array([len(s) for s in distinct], dtype=np.int64)
    share = np.zeros(max(1, len(states)))
    for s in seqs:
        for t in set(s):
            share[states[t]] += 1.0 / len(seqs)
    indel = np.log(2.0 / (1.0 + share)) if costs == "indelslog" else np.ones(len(share))
    return _om_matrix(codes, lengths, indel, indel[:, None] + indel[None, :]), inverse


def best_by_silhouette(partition: Callable[[int], np.ndarray], x: Any, metric: str, n: int) -> np.ndarray:
    """The partition ``partition(k)`` (k in :data:`K_RANGE`) of ``n`` trajectories with the
    highest silhouette of ``x`` under ``metric``; one group when no k gives 2 to n - 1 groups."""
    best, best_score = np.zeros(n, dtype=np.int64), -np.inf
    for k in K_RANGE:
        labels = partition(k)
        if not 2 <= len(set(labels.tolist())) < n:
            continue
        score = silhouette_score(x, labels, metric=metric)
        if score > best_score + 1e-12:
            best, best_score = labels, score
    return best


def om_clusters(runs: pl.DataFrame, costs: str) -> np.ndarray:
    """Average-linkage clusters of the optimal-matching distances, k by average silhouette width."""
    dist, inverse = om_distances(tool_sequences(runs), costs)
    if len(dist) < 3:
        return inverse
    tree = linkage(squareform(dist, checks=False), method="average")
    full = dist[np.ix_(inverse, inverse)]  # every trajectory weighs one, as TraMineR's weights
    return best_by_silhouette(lambda k: fcluster(tree, k, criterion="maxclust")[inverse], full, "precomputed",
                              runs.height)


def ngram_clusters(runs: pl.DataFrame, seed: int) -> np.ndarray:
    """k-means on TF-IDF of tool-name unigrams and bigrams, k by cosine silhouette."""
    docs = tool_documents(runs)
    if not any(docs):
        return np.zeros(runs.height, dtype=np.int64)
    x = TfidfVectorizer(ngram_range=(1, 2), token_pattern=r"[^ ]+", lowercase=False).fit_transform(docs)

    def kmeans(k: int) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(x)

    return best_by_silhouette(kmeans, x, "cosine", runs.height)


def _transition_counts(seqs: list[tuple[str, ...]]) -> np.ndarray:
    states = {t: i + 1 for i, t in enumerate(sorted({t for s in seqs for t in s}))}  # 0: start and end
    n = len(states) + 1
    out = np.zeros((len(seqs), n, n))
    for r, s in enumerate(seqs):
        path = [0, *(states[t] for t in s), 0]
        for a, b in zip(path[:-1], path[1:]):
            out[r, a, b] += 1
    return out


def markov_clusters(runs: pl.DataFrame, seed: int, restarts: int = 5, iterations: int = 200) -> np.ndarray:
    """A mixture of first-order Markov chains over tools (EM over the transitions met in the
    table, :data:`MARKOV_PSEUDO_COUNT` on each), the number of components by BIC with those
    transitions as the free parameters; each trajectory's most probable component."""
    counts = _transition_counts(tool_sequences(runs))
    n, s, _ = counts.shape
    met = counts.sum(axis=0) > 0
    flat = counts.reshape(n, -1)
    # per chain: each state's met next states, less one (they sum to one)
    free_per_chain = int(np.maximum(met.sum(axis=1) - 1, 0).sum())
    rng = np.random.default_rng(seed)
    best_bic, best = np.inf, np.zeros(n, dtype=np.int64)
    for k in MARKOV_K:
        top_ll, top_resp = -np.inf, None
        for _ in range(restarts):
            resp = rng.dirichlet(np.ones(k), size=n)
            ll_old = -np.inf
            for _ in range(iterations):
                weights = resp.mean(axis=0)
                trans = (np.einsum("rk,rab->kab", resp, counts) + MARKOV_PSEUDO_COUNT) * met
                with np.errstate(divide="ignore", invalid="ignore"):
                    log_trans = np.log(trans / trans.sum(axis=2, keepdims=True))
                log_trans = np.where(met, log_trans, 0.0).reshape(k, -1)  # a transition never met is never asked
                joint = flat @ log_trans.T + np.log(weights)
                top = joint.max(axis=1, keepdims=True)
                ll_rows = top[:, 0] + np.log(np.exp(joint - top).sum(axis=1))
                resp = np.exp(joint - ll_rows[:, None])
                ll = float(ll_rows.sum())
                if ll - ll_old < 1e-6 * abs(ll):
                    break
                ll_old = ll
            if ll > top_ll:
                top_ll, top_resp = ll, resp
        bic = -2 * top_ll + (k * free_per_chain + k - 1) * np.log(n)
        if bic < best_bic:
            best_bic, best = bic, top_resp.argmax(axis=1)
    return best


METHODS = ("default", "default, families", "default kmeans", "default hdbscan", "default umap", "OM constant",
           "OM indelslog", "n-gram profile", "Markov mixture")
_ESTIMATOR_OPTIONS = {"default": {}, "default kmeans": {"method": "kmeans"}, "default hdbscan": {"method": "hdbscan"},
                      "default umap": {"cluster_on": "umap"}}


def labels_of(method: str, runs: pl.DataFrame, seed: int, embedder: str | None, cache_dir: str,
              level: Level = "variant") -> np.ndarray:
    """One method's strategies of ``runs`` (the estimator's at ``level``)."""
    if method == "default, families":  # the default's fit (read back from the cache), one level up
        return labels_of("default", runs, seed, embedder, cache_dir, level="family")
    if method in _ESTIMATOR_OPTIONS:
        space = mx.StrategySpace(random_state=seed, n_bootstrap=0, progress=False, embedder=embedder,
                                 cache_dir=cache_dir, **_ESTIMATOR_OPTIONS[method])
        space.fit(runs)
        return at_level(space.labels_, space.describe(), level)  # labels_ = transform(runs)
    if method.startswith("OM "):
        return om_clusters(runs, method.split()[1])
    if method == "n-gram profile":
        return ngram_clusters(runs, seed)
    return markov_clusters(runs, seed)


def choose(table: dict[str, dict[str, float]], floors: dict[str, float], worlds_: list[str]) -> str:
    """The method with the fewest of ``worlds_`` below their floor, ties by mean ARI on them."""
    def key(m: str) -> tuple[int, float]:
        return (sum(table[m][w] < floors[w] - 1e-9 for w in worlds_), -float(np.mean([table[m][w] for w in worlds_])))
    return min(table, key=key)


def add_world_arguments(ap: argparse.ArgumentParser) -> None:
    """The worlds, seeds, questions and embedder of a world-by-world comparison."""
    ap.add_argument("--embedder", default="None", help="embedder of the estimator's fits; None: MiniLM")
    ap.add_argument("--worlds", nargs="*", default=None)
    ap.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2])
    ap.add_argument("--n", type=int, default=60, help="questions per world")


def leave_one_out_rows(table: dict[str, dict[str, float]], floors: dict[str, float], names: list[str]
                       ) -> list[dict[str, Any]]:
    """One row per world (its floor, every candidate's ARI, the candidate the other worlds
    choose by :func:`choose`, its ARI there and whether that is below the floor), then the mean
    row and the count of worlds below the floor per candidate."""
    rows = []
    for world in names:
        chosen = choose(table, floors, [w for w in names if w != world]) if len(names) > 1 else next(iter(table))
        rows.append({"world": world, "floor": round(floors[world], 3),
                     **{m: round(table[m][world], 3) for m in table},
                     "chosen leaving it out": chosen, "its ARI": round(table[chosen][world], 3),
                     "below floor": "yes" if table[chosen][world] < floors[world] - 1e-9 else ""})
    summary = {"world": "mean", "floor": round(float(np.mean(list(floors.values()))), 3),
               **{m: round(float(np.mean(list(table[m].values()))), 3) for m in table},
               "chosen leaving it out": "", "its ARI": round(float(np.mean([r["its ARI"] for r in rows])), 3),
               "below floor": str(sum(r["below floor"] == "yes" for r in rows))}
    below = {"world": "worlds below floor", "floor": "",
             **{m: sum(table[m][w] < floors[w] - 1e-9 for w in names) for m in table},
             "chosen leaving it out": "", "its ARI": "", "below floor": ""}
    return [*rows, summary, below]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_world_arguments(ap)
    args = ap.parse_args(argv)
    embedder = None if args.embedder in (None, "None", "none") else args.embedder
    names = args.worlds or worlds()
    t0 = time.perf_counter()
    table: dict[str, dict[str, float]] = {m: {} for m in METHODS}
    floors: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as cache:  # one embedding cache for the estimator's four fits
        for world in names:
            cells: dict[str, list[float]] = {m: [] for m in (*METHODS, "floor")}
            for seed in args.seeds:
                runs, truth = load_world(world, seed=seed, n=args.n)
                cells["floor"].append(max(baseline_rounds(runs, truth, seed), baseline_tfidf(runs, truth, seed)))
                for m in METHODS:
                    cells[m].append(float(adjusted_rand_score(truth, labels_of(m, runs, seed, embedder, cache))))
            floors[world] = float(np.mean(cells["floor"]))
            for m in METHODS:
                table[m][world] = float(np.mean(cells[m]))
            print(world, {m: round(v[world], 3) for m, v in table.items()}, flush=True)
    wall = time.perf_counter() - t0
    notes = (f"ARI means over seeds {' '.join(map(str, args.seeds))}, {args.n} questions per world; floor: the better "
             f"of rounds alone and TF-IDF + k-means at the planted k (bench_strategies_floor.py). 'chosen leaving it "
             f"out': the method with the fewest other worlds below their floor, ties by mean ARI on them. Wall time "
             f"{wall:.0f} s.")
    harness.report(__file__, leave_one_out_rows(table, floors, names),
                   title=f"Clustering methods for behaviour sequences, world by world, embedder {embedder or 'MiniLM'}",
                   notes=notes, params={**vars(args), "embedder": embedder})


if __name__ == "__main__":
    main()
