"""Cutting the tree of distinct trajectories into strategies, by two stated criteria.

1. Average-linkage agglomerative clustering cut at ``resolution``: two groups join while the
   mean distance between their members is below it. Distances count move tokens one
   trajectory has and the other lacks (:mod:`mechanism.analysis._strategies.features`), so the
   default ``resolution=1.5`` joins groups that differ on average by two tokens or fewer
   (another provenance of one call, a call's order) and keeps apart groups that differ by a
   whole kind of call (four tokens: tool, relation, move, order). The default was chosen
   once for all planted worlds by leaving one world out (``benchmarks/RESULTS.md``).
   Under ``plans="apart"`` (the default) the tree is cut within each tool plan
   (:func:`~mechanism.analysis._strategies.features.tool_plan`: the tools called, in order, a run of
   one tool read as once or again, a batch of one tool's calls sent in one message a step of
   its own): trajectories that call other tools, or call them in
   another order, are never one strategy by the cut, however close their other tokens and
   wording are.
2. A strategy holds at least ``min_share`` of the trajectories: a smaller group is a
   variant, and joins the strategy whose members are nearest on average (count-weighted),
   the closest such pair first, as the tree itself would join them. Rare renderings cannot
   then each claim a strategy of their own, and the fragments of one strategy spread over
   many small plans gather before any of them is absorbed by a large neighbour. One alone in its plan joins
   a strategy of another plan, the one whose tools are most alike first
   (:func:`~mechanism.analysis._strategies.features.plan_profiles`: a tool that most plans
   call, such as an optional first look, hardly counts), then the nearest. A group under
   ``min_share_tested`` (and at least ``min_share``) joins its nearest the same way unless the
   arms take the two at different rates (a chi-square test of the 2 x arms table,
   ``p < VARIANT_ALPHA``): a fragment of one strategy (one cut on an optional step) shares its
   strategy's mixture across arms, while a small strategy that rl took up or dropped is the
   change the toolkit exists to show. Joining two groups the arms take alike moves no
   composition between them, so the test decides a name, never a finding.

Alternatives: ``method="kmeans"`` (count weighted, k by the highest count-weighted silhouette
over ``k_range``) and ``method="hdbscan"`` (outliers -1). Strategies are then numbered by
descending size, ties broken by their medoid's rendering (:func:`renumber`), and the outlier
threshold of new rows is calibrated on the members' distances to their medoids
(:func:`medoid_threshold`).

Functions that cluster take the estimator's parameters as ``p`` (a fitted or cloned
:class:`~mechanism.analysis.strategy_space.StrategySpace`, read and never changed).
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from mechanism.analysis._strategies.families import arm_test, merge_families
from mechanism.analysis._strategies.reduce import umap_coordinates
from mechanism.core.resample import library_seed

if TYPE_CHECKING:
    from scipy.sparse import spmatrix


#: Level of the arm test under which a group in the tested band (``min_share`` to
#: ``min_share_tested``) stands: weak evidence keeps it apart, since hiding a strategy rl moved
#: costs more than one strategy too many. On the customer-service world at 40 questions the
#: planted ``escalate`` (rl: 20 % -> 5 %), 23 of 320 trajectories, has p = 0.09 against its
#: nearest (benchmarks/RESULTS.md).
VARIANT_ALPHA = 0.2


def merge_small(space: np.ndarray, labels: np.ndarray, counts: np.ndarray, min_share: float) -> np.ndarray:
    """Join groups under ``min_share`` of the total count to the group at the least
    count-weighted mean distance, the closest such pair first (average linkage continued, every
    join holding a group still under the share), until none is left under it (or one group
    remains).

    Closest pair first rather than smallest group first: a small group joins another small one
    of its own strategy before it is taken by the nearest large one. On the planted worlds
    (seeds 0-2, benchmarks/RESULTS.md) it lifts the phone GUI 0.83 -> 0.94 and computer use
    0.88 -> 0.99, where a strategy's optional steps scatter it over many small plans.

    The mean distances between groups are kept as sums and updated on every merge (the
    average-linkage update), so the cost is one distance matrix plus O(groups^2).

    Examples
    --------
    >>> x = np.array([[0.0], [0.1], [5.0], [5.2], [9.0]])
    >>> merge_small(x, np.array([0, 0, 1, 1, 2]), np.array([10, 10, 10, 10, 1]), 0.1).tolist()
    [0, 0, 1, 1, 1]
    """
    return _merge_small(lambda: distances(space), labels, counts, min_share)


def distances(space: np.ndarray) -> np.ndarray:
    """Square matrix of Euclidean distances between rows (float64)."""
    from scipy.spatial.distance import pdist, squareform  # noqa: PLC0415 - scipy: loaded by the steps that use it, not at import

    if len(space) < 2:
        return np.zeros((len(space), len(space)))
    return squareform(pdist(space.astype(np.float64)))


# Beyond any distance of the joined space (at most the square root of its token columns plus
# twice the embedding weight), so that under `groups` a row of another group is always farther.
GROUP_GAP = 1e4
# Added again between a row that calls no tool and one that does: any distance of at least this
# is across that line, which `min_share` never joins over.
SIDE_GAP = 2 * GROUP_GAP
# Across plans, this many times the cosine distance of the plans' TF-IDF tool profiles is added
# to the joined space's distance: a strategy alone in its plan joins the plan whose tools are
# most alike before the nearest in moves and wording. Measured on the planted worlds (seeds 0-2,
# benchmarks/RESULTS.md): with the smallest group joining first, 5 lifted sre 0.70 -> 0.90, gui
# 0.71 -> 0.78, browser 0.48 -> 0.65; unigrams alone left gui under its floor. With the closest
# pair first (merge_small), mean ARI over the 17 worlds at 1, 2, 3, 5, 8: 0.873, 0.889, 0.892,
# 0.886, 0.882; at 1 the analyst and sre fall below their floor, and 3 (browser 0.65 -> 0.73)
# is the choice leaving any one world out.
PROFILE_WEIGHT = 3.0


def agglomerative(dist: np.ndarray, counts: np.ndarray, *, resolution: float, linkage: str,
                  min_share: float, groups: np.ndarray | None = None, profiles: np.ndarray | spmatrix | None = None,
                  join: Callable[[np.ndarray], np.ndarray] | None = None, min_share_tested: float = 0.0,
                  arms: np.ndarray | None = None) -> np.ndarray:
    """Labels of rows from their square distance matrix: the tree cut at ``resolution``
    (groups joined while their linkage distance is below it), then :func:`merge_small`.

    With ``groups`` (an integer code per row, e.g. its tool plan), each group gets a tree of its
    own, so the cut never joins rows of two groups; :func:`merge_small` then counts a row of
    another group :data:`GROUP_GAP` farther away, so that a too-small strategy joins the nearest
    of its own group, and only one alone in its group joins the nearest other; group -1 (no
    tool called, :func:`~mechanism.analysis._strategies.features.plan_codes`) is a further
    :data:`SIDE_GAP` from the rest, which no join crosses: a strategy without tools and one
    that calls them stay apart, however small. With ``profiles`` (unit rows, dense or sparse,
    each row's plan's :func:`~mechanism.analysis._strategies.features.plan_profiles`), a row of another group
    is also :data:`PROFILE_WEIGHT` times the cosine distance of their profiles farther.
    ``join`` maps the cut's labels to joined ones before :func:`merge_small` (the task test,
    :mod:`mechanism.analysis._strategies.tasks`, which must see the strategies before small ones are
    absorbed). With ``arms`` (``rows x arms`` trajectory counts), a group under
    ``min_share_tested`` joins too unless the arms take it and its nearest at different rates
    (module docstring); without them only ``min_share`` applies.

    Examples
    --------
    >>> d = np.array([[0.0, 1.0, 5.0], [1.0, 0.0, 5.0], [5.0, 5.0, 0.0]])
    >>> agglomerative(d, np.ones(3), resolution=1.5, linkage="average", min_share=0).tolist()
    [0, 0, 1]
    >>> agglomerative(d, np.ones(3), resolution=1.5, linkage="average", min_share=0,
    ...               groups=np.array([0, 1, 1])).tolist()
    [0, 1, 2]
    """
    m = len(dist)
    if m < 2:
        return np.zeros(m, dtype=np.int64)
    join = join or (lambda labels: labels)
    if groups is None:
        return merge_small_from(dist, join(_cut(dist, resolution, linkage)), counts, min_share, min_share_tested, arms)
    labels = np.empty(m, dtype=np.int64)
    offset = 0
    for g in np.unique(groups):
        idx = np.flatnonzero(groups == g)
        labels[idx] = _cut(dist[np.ix_(idx, idx)], resolution, linkage) + offset
        offset = int(labels[idx].max()) + 1
    labels = join(labels)
    # the distances across plans are built only when some strategy is under min_share
    return _merge_small(lambda: _apart(dist, groups, profiles), labels, counts, min_share, min_share_tested, arms)


def _apart(dist: np.ndarray, groups: np.ndarray, profiles: np.ndarray | spmatrix | None) -> np.ndarray:
    """``dist`` with the gaps of :func:`agglomerative` added: :data:`GROUP_GAP` (and
    :data:`PROFILE_WEIGHT` times the profiles' cosine distance) between rows of two groups,
    :data:`SIDE_GAP` across calling tools or not."""
    differ = groups[:, None] != groups[None, :]
    apart = np.where(differ, GROUP_GAP, 0.0)
    if profiles is not None:
        # the cosine similarity of unit rows (sparse by sparse: no rows x n-grams dense copy)
        alike = profiles @ profiles.T
        far = np.array(alike.toarray() if hasattr(alike, "toarray") else alike, dtype=np.float64)
        np.subtract(1.0, far, out=far)
        np.clip(far, 0.0, 2.0, out=far)
        far *= PROFILE_WEIGHT
        far[~differ] = 0.0
        apart += far
        del far
    apart += dist
    tool_free = groups < 0
    apart += SIDE_GAP * (tool_free[:, None] != tool_free[None, :])
    return apart


def _cut(dist: np.ndarray, resolution: float, linkage: str) -> np.ndarray:
    """Labels 0.. of the average/complete/single-linkage tree of ``dist`` cut at ``resolution``."""
    from scipy.cluster.hierarchy import fcluster  # noqa: PLC0415 - scipy: loaded by the steps that use it, not at import
    from scipy.cluster.hierarchy import linkage as tree  # noqa: PLC0415 - scipy: loaded by the steps that use it, not at import
    from scipy.spatial.distance import squareform  # noqa: PLC0415 - scipy: loaded by the steps that use it, not at import

    if len(dist) < 2:
        return np.zeros(len(dist), dtype=np.int64)
    z = tree(squareform(dist, checks=False), method=linkage)
    # strictly below the resolution, as scikit-learn's distance_threshold
    return fcluster(z, t=np.nextafter(resolution, 0.0), criterion="distance").astype(np.int64) - 1


def merge_small_from(dist: np.ndarray, labels: np.ndarray, counts: np.ndarray, min_share: float,
                     min_share_tested: float = 0.0, arms: np.ndarray | None = None) -> np.ndarray:
    """:func:`merge_small` from a square distance matrix (with ``arms``, the tested band of
    :func:`agglomerative` too)."""
    return _merge_small(lambda: dist, labels, counts, min_share, min_share_tested, arms)


def _merge_small(pairwise, labels: np.ndarray, counts: np.ndarray, min_share: float, min_share_tested: float = 0.0,
                 arms: np.ndarray | None = None) -> np.ndarray:
    """The merge of :func:`merge_small`, and of the tested band of :func:`agglomerative` where
    ``arms`` are given; ``pairwise()`` gives the distance matrix, asked for only when some
    group is below a share (it costs the square of the rows)."""
    labels = np.asarray(labels).copy()
    tested = max(min_share, min_share_tested) if arms is not None else min_share
    if tested <= 0 or len(labels) == 0:
        return labels
    w = counts.astype(np.float64)
    ids, inv = np.unique(labels, return_inverse=True)
    k = len(ids)
    size = np.bincount(inv, weights=w, minlength=k)
    if k < 2 or size.min() >= tested * w.sum():
        return labels
    # sums[c, d] = sum over members i of c, j of d of w_i w_j |x_i - x_j|
    sums = _group_sums(pairwise() * w[:, None] * w[None, :], inv, k)
    by_arm = None
    if arms is not None:
        by_arm = np.zeros((k, arms.shape[1]))
        np.add.at(by_arm, inv, np.asarray(arms, dtype=np.float64))
    return ids[_merge(sums, size, min_share * w.sum(), tested * w.sum(), by_arm)[inv]]


def _group_sums(matrix: np.ndarray, groups: np.ndarray, k: int) -> np.ndarray:
    """``sums[c, d]``: the sum of ``matrix`` over rows in group c and columns in group d,
    in O(rows x columns) (sorted by group, then reduced in runs)."""
    order = np.argsort(groups, kind="stable")
    starts = np.searchsorted(groups[order], np.arange(k))
    cols = np.add.reduceat(matrix[:, order], starts, axis=1)
    return np.add.reduceat(cols[order], starts, axis=0)


def _merge(sums: np.ndarray, size: np.ndarray, target: float, tested: float = 0.0,
           by_arm: np.ndarray | None = None) -> np.ndarray:
    """Owner of each group once every group under ``target`` has joined its nearest, and every
    group under ``tested`` has too where the arm test (``by_arm``: groups x arms) finds no
    difference with that nearest; ``size`` and ``by_arm`` are updated in place."""
    k = len(size)
    alive = np.ones(k, dtype=bool)
    alone = np.zeros(k, dtype=bool)  # stays: nothing on its side left to join, or the arms say it stands
    owner = np.arange(k)
    bar = max(target, tested)
    # mean[c, d]: the mean distance of groups c and d (inf to itself and to a joined group); each
    # group's nearest is kept and only the rows a join touches are searched again, so that a
    # join costs O(groups) instead of a search of the whole table
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = sums / (size[:, None] * size[None, :])
    np.fill_diagonal(mean, np.inf)
    near = np.argmin(mean, axis=1)
    gap = mean[np.arange(k), near]
    while alive.sum() > 1:
        live = np.flatnonzero(alive & ~alone & (size < bar))
        if not len(live):
            break
        # the closest pair holding a group under the bar (first in row order on ties)
        small = int(live[np.argmin(gap[live])])
        into = int(near[small])
        if gap[small] >= SIDE_GAP:
            # only strategies on the other side of calling tools or not are left: it stays
            # apart, however small (a strategy without tools is never one that calls them)
            alone[small] = True
            continue
        if size[into] < bar and not alone[into] and (size[into], into) < (size[small], small):
            small, into = into, small  # two small groups: the smaller joins the larger
        if size[small] >= target and arm_test(by_arm[[small, into]]) < VARIANT_ALPHA:
            alone[small] = True  # the arms take it at another rate: a strategy, however small
            continue
        if by_arm is not None:
            by_arm[into] += by_arm[small]
        sums[into, :] += sums[small, :]
        sums[:, into] += sums[:, small]
        size[into] += size[small]
        alive[small] = False
        owner[owner == small] = into
        _rejoin(mean, near, gap, sums, size, alive, small, into)
    return owner


def _rejoin(mean: np.ndarray, near: np.ndarray, gap: np.ndarray, sums: np.ndarray, size: np.ndarray,
            alive: np.ndarray, small: int, into: int) -> None:
    """After ``small`` joined ``into``: ``mean`` gets ``into``'s new row and column and loses
    ``small``'s; each group's nearest (``near``, at ``gap``) is searched again where it was one of
    the two, and elsewhere compared with its new distance to ``into``."""
    mean[small, :] = np.inf
    mean[:, small] = np.inf
    mean[into, :] = np.where(alive, sums[into, :] / (size[into] * size), np.inf)
    mean[:, into] = np.where(alive, sums[:, into] / (size * size[into]), np.inf)
    mean[into, into] = np.inf
    stale = np.flatnonzero(alive & ((near == small) | (near == into)))
    stale = np.union1d(stale, [into])
    near[stale] = np.argmin(mean[stale], axis=1)
    gap[stale] = mean[stale, near[stale]]
    rest = np.flatnonzero(alive)
    rest = rest[~np.isin(rest, stale)]
    closer = (mean[rest, into] < gap[rest]) | ((mean[rest, into] == gap[rest]) & (into < near[rest]))
    near[rest[closer]] = into
    gap[rest[closer]] = mean[rest[closer], into]
    gap[small] = np.inf


# Silhouette needs all pairwise distances; above this many distinct rows it is computed on
# a seeded subsample (weights kept), which bounds memory at about 36 MB.
SILHOUETTE_MAX_ROWS = 3000
MEDOID_MAX_ROWS = 3000
AGGLOMERATIVE_MAX_ROWS = 4000
# A new row is an outlier when it lies farther from its strategy's medoid than this share of the
# fitted trajectories lie from theirs (and farther than `resolution`).
OUTLIER_QUANTILE = 0.99


def umap_settings(p: Any, *, seed: int | None = None) -> dict[str, Any]:
    """The UMAP settings of the parameters ``p`` (``seed``, or its ``random_state``, as UMAP's 32-bit seed)."""
    return {"n_neighbors": p.n_neighbors, "min_dist": p.min_dist, "resolution": float(p.resolution),
            "max_points": p.max_umap_points,
            "seed": library_seed(int(p.random_state if seed is None else seed)),
            "cache": None if p.cache_dir is None else Path(p.cache_dir) / "reductions"}


def reduced(p: Any, rows: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The space ``p`` clusters ``rows`` in: their UMAP reduction (``cluster_on="umap"``) or themselves."""
    if p.cluster_on != "umap":
        return rows.astype(np.float64)

    return umap_coordinates(rows, np.asarray(counts, dtype=np.float64), p.n_components, **umap_settings(p))


def cluster(p: Any, space: np.ndarray, counts: np.ndarray, core_dist: np.ndarray | None = None,
            plans: np.ndarray | None = None,
            join: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
            profiles: np.ndarray | spmatrix | None = None,
            arms: np.ndarray | None = None) -> tuple[np.ndarray, dict[int, float] | None]:
    """Strategies of the distinct rows ``space`` weighted by ``counts`` under ``p.method``, and
    the silhouette of every k tried (k-means only, else ``None``); ``plans`` (each row's plan
    code, :func:`~mechanism.analysis._strategies.features.plan_codes`) keeps plans apart in the tree
    when ``p.plans == "apart"``, and ``profiles`` (each row's plan's TF-IDF profile) says which
    other plan a strategy alone in its own joins; ``join(labels, rows)`` joins the cut's
    strategies of the clustered rows ``rows`` before ``min_share`` (:func:`agglomerative`);
    ``arms`` (each row's trajectories per arm) lets the tested band join (:func:`agglomerative`)."""
    m = len(space)
    if m < 2:
        return np.zeros(m, dtype=np.int64), None
    if p.method == "hdbscan":
        return hdbscan(space, counts, min_cluster_size=p.min_cluster_size), None
    if p.method == "kmeans":
        return kmeans(space, counts, k_range=p.k_range, seed=library_seed(int(p.random_state)))
    from sklearn.neighbors import NearestNeighbors  # noqa: PLC0415 - scikit-learn: about a second to import, only in the steps that use it

    # The tree needs all pairwise distances: the heaviest rows are clustered (bounded
    # memory) and the light tail joins the strategy of its nearest clustered row.
    heavy = core(counts)
    lab = agglomerative(distances(space[heavy]) if core_dist is None else core_dist, counts[heavy],
                        resolution=p.resolution, linkage=p.linkage, min_share=p.min_share,
                        groups=plan_groups(p, plans, heavy), profiles=None if profiles is None else profiles[heavy],
                        join=None if join is None else (lambda labels: join(labels, heavy)),
                        min_share_tested=p.min_share_tested, arms=None if arms is None else arms[heavy])
    out = np.empty(m, dtype=np.int64)
    out[heavy] = lab
    rest = np.setdiff1d(np.arange(m), heavy)
    if len(rest):
        idx = NearestNeighbors(n_neighbors=1).fit(space[heavy]).kneighbors(space[rest])[1][:, 0]
        out[rest] = lab[idx]
    return out, None


def cluster_rows(p: Any, rows: np.ndarray, counts: np.ndarray, plans: np.ndarray | None = None,
                 profiles: np.ndarray | spmatrix | None = None) -> np.ndarray:
    """The clustering ``p`` makes of some distinct rows of the joined space, with their plan
    codes and profiles (for resamples, seeds and the resolution sweep; a clone's parameters give
    another fit's)."""
    return cluster(p, reduced(p, rows, counts), np.asarray(counts, dtype=np.float64), plans=plans,
                   profiles=profiles)[0]


def plan_groups(p: Any, plans: np.ndarray | None, index: np.ndarray) -> np.ndarray | None:
    """The plan codes of rows ``index`` that the tree keeps apart, or ``None`` (``p.plans`` is
    ``"mixed"``, or the rows have no plans: a space saved before plans were read)."""
    if plans is None or p.plans != "apart":
        return None
    return np.asarray(plans)[index]


def core(counts: np.ndarray) -> np.ndarray:
    """The (at most ``AGGLOMERATIVE_MAX_ROWS``) heaviest distinct rows, in row order."""
    order = np.lexsort((np.arange(len(counts)), -counts))
    return np.sort(order[:AGGLOMERATIVE_MAX_ROWS])


def kmeans(space: np.ndarray, counts: np.ndarray, *, k_range: Any, seed: int
           ) -> tuple[np.ndarray, dict[int, float]]:
    """k-means (count weighted) with k by the highest count-weighted silhouette over ``k_range``."""
    from sklearn.cluster import KMeans  # noqa: PLC0415 - scikit-learn: about a second to import, only in the steps that use it

    m = len(space)
    lo, hi = k_range
    hi = min(hi, m - 1)
    rng = np.random.default_rng(seed)
    sub = np.arange(m)
    if m > SILHOUETTE_MAX_ROWS:
        sub = np.sort(rng.choice(m, SILHOUETTE_MAX_ROWS, replace=False, p=counts / counts.sum()))
    best, best_score = np.zeros(m, dtype=np.int64), -np.inf
    silhouette: dict[int, float] = {}
    for k in range(max(lo, 2), hi + 1):
        lab = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(space, sample_weight=counts)
        if len(np.unique(lab[sub])) < 2:
            continue
        score = weighted_silhouette(space[sub], lab[sub], counts[sub])
        silhouette[k] = score
        if score > best_score + 1e-9:
            best, best_score = lab.astype(np.int64), score
    return best, silhouette


def hdbscan(space: np.ndarray, counts: np.ndarray, *, min_cluster_size: int | None) -> np.ndarray:
    """HDBSCAN (outliers -1) with ``min_cluster_size`` trajectories (default 1 %, at least 5)."""
    from sklearn.cluster import HDBSCAN  # noqa: PLC0415 - scikit-learn: about a second to import, only in the steps that use it

    total = int(counts.sum())
    mcs = min_cluster_size or max(5, total // 100)
    # HDBSCAN takes no weights, so distinct rows are repeated by count (scaled down to
    # at most 20,000 points, each row at least once).
    scale = min(1.0, 20_000 / total)
    reps = np.maximum(1, np.round(counts * scale)).astype(int)
    expanded = np.repeat(space, reps, axis=0)
    lab = HDBSCAN(min_cluster_size=max(2, int(round(mcs * scale))), copy=True).fit_predict(expanded)
    starts = np.concatenate([[0], np.cumsum(reps)[:-1]])
    return lab[starts].astype(np.int64)


def families(p: Any, raw: np.ndarray, counts: np.ndarray, rows: Any, index: np.ndarray | None = None
             ) -> tuple[np.ndarray, list[dict]]:
    """The cut's strategies with families one optional step apart joined (``p.families``), for
    the distinct rows ``index`` (all by default) of the fit's ``rows`` with counts ``counts``;
    and the merges considered."""
    if p.families != "merge":
        return raw, []

    index = np.arange(len(rows.steps)) if index is None else index
    return merge_families(raw, np.asarray(counts), [rows.steps[i] for i in index], resampled_arms(rows, index, counts))


def resampled_arms(rows: Any, index: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Trajectories per arm of the fit's distinct rows ``index`` at the counts ``counts``: a
    resample's counts scale each row's arm counts (its trajectories' arms)."""
    base = rows.counts[index].astype(np.float64)
    return rows.arm_counts[index] * (np.asarray(counts, dtype=np.float64) / np.maximum(base, 1.0))[:, None]


def renumber(raw: np.ndarray, space: np.ndarray, counts: np.ndarray, renderings: np.ndarray) -> np.ndarray:
    """Strategy ids by descending size, ties broken by the medoid's rendering: same input, same ids."""
    keys = []
    for c in sorted(set(raw.tolist()) - {-1}):
        idx = np.flatnonzero(raw == c)
        med = idx[medoid(space[idx], counts[idx])]
        keys.append((-int(counts[idx].sum()), str(renderings[med]), c))
    order = {c: new for new, (_, _, c) in enumerate(sorted(keys))}
    return np.array([order.get(c, -1) for c in raw.tolist()], dtype=np.int64)


def medoid(points: np.ndarray, weights: np.ndarray) -> int:
    """Index of the row with the least count-weighted distance to the others."""
    if len(points) == 1:
        return 0
    if len(points) > MEDOID_MAX_ROWS:
        centre = np.average(points, axis=0, weights=weights)
        return int(np.argmin(((points - centre) ** 2).sum(axis=1)))
    from sklearn.metrics import pairwise_distances  # noqa: PLC0415 - scikit-learn: about a second to import, only in the steps that use it

    cost = pairwise_distances(points) @ weights.astype(np.float64)
    return int(np.argmin(cost))


def medoid_rows(features: np.ndarray, counts: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Each strategy's medoid (a distinct training row, in the joined space), from the rows and
    counts alone (so a loaded space finds the same ones)."""
    n = int(labels.max()) + 1 if (labels >= 0).any() else 0
    med = np.zeros(n, dtype=np.int64)
    for c in range(n):
        idx = np.flatnonzero(labels == c)
        med[c] = idx[medoid(features[idx].astype(np.float64), counts[idx])]
    return med


def row_distances(x: np.ndarray, features: np.ndarray, index: np.ndarray, block: int = 8192) -> np.ndarray:
    """Euclidean distance (float64) of each row of ``x`` to its row ``index`` of ``features``,
    summed row by row (the same value whatever rows are asked with it), ``block`` rows at a
    time (bounded memory)."""
    out = np.empty(len(x), dtype=np.float64)
    for start in range(0, len(x), block):
        stop = start + block
        diff = x[start:stop].astype(np.float64) - features[index[start:stop]].astype(np.float64)
        out[start:stop] = np.sqrt((diff ** 2).sum(axis=1))
    return out


def medoid_distance(features: np.ndarray, x: np.ndarray, labels: np.ndarray, med: np.ndarray) -> np.ndarray:
    """Distance of each row of ``x`` to the medoid of its strategy ``labels`` (inf for -1)."""
    out = np.full(len(x), np.inf)
    ok = labels >= 0
    if ok.any():
        out[ok] = row_distances(x[ok], features, med[labels[ok]])
    return out


def medoid_threshold(features: np.ndarray, counts: np.ndarray, labels: np.ndarray, med: np.ndarray, *,
                     resolution: float) -> float:
    """The outlier threshold, calibrated on the fit's own distances: the
    :data:`OUTLIER_QUANTILE` quantile (count-weighted) of the members' distances to their
    strategy's medoid, and at least ``resolution`` (a row that close could have joined the
    strategy at fit)."""
    d = medoid_distance(features, features, labels, med)
    ok = np.isfinite(d)
    if not ok.any():
        return float(resolution)
    order = np.argsort(d[ok], kind="stable")
    w = np.cumsum(counts[ok][order].astype(np.float64))
    q = float(d[ok][order][np.searchsorted(w, OUTLIER_QUANTILE * w[-1])])
    return max(float(resolution), q)


def weighted_silhouette(points: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> float:
    """Mean silhouette of ``points`` where row ``i`` stands for ``weights[i]`` identical copies.

    Equal to :func:`sklearn.metrics.silhouette_score` on the expanded data (copies of a point
    are at distance 0 from each other); clusters of one copy score 0, as in scikit-learn.
    """
    from sklearn.metrics import pairwise_distances  # noqa: PLC0415 - scikit-learn: about a second to import, only in the steps that use it

    labels = np.asarray(labels)
    w = np.asarray(weights, dtype=np.float64)
    ids, inv = np.unique(labels, return_inverse=True)
    if len(ids) < 2:
        raise ValueError("silhouette needs at least two clusters")
    dist = pairwise_distances(points, metric="euclidean")
    onehot = np.zeros((len(points), len(ids)))
    onehot[np.arange(len(points)), inv] = 1.0
    sums = dist @ (onehot * w[:, None])  # weighted distance from each row to each cluster
    size = onehot.T @ w
    own = size[inv] - 1.0  # the row's other copies are at distance 0 and count in `a`
    a = np.where(own > 0, sums[np.arange(len(points)), inv] / np.maximum(own, 1e-300), 0.0)
    other = sums / size[None, :]
    other[np.arange(len(points)), inv] = np.inf
    b = other.min(axis=1)
    s = np.where(own > 0, (b - a) / np.maximum(np.maximum(a, b), 1e-300), 0.0)
    return float(np.sum(s * w) / np.sum(w))


def neighbours(features: np.ndarray) -> Any:
    """The nearest-neighbour index of the training rows that new rows are placed by."""
    from sklearn.neighbors import NearestNeighbors  # noqa: PLC0415 - scikit-learn: about a second to import, only in the steps that use it

    return NearestNeighbors(n_neighbors=min(5, len(features))).fit(features)


SEEN = 1e-4  # nearer than this to a training row (rounded to 5 decimals) is that row


def assign_table(traj: Any, x: np.ndarray, dist: np.ndarray, idx: np.ndarray, *, train_labels: np.ndarray,
                 features: np.ndarray, medoids: np.ndarray, threshold: float, rule: str) -> Any:
    """The strategy of new rows (:meth:`StrategySpace.assign`'s table) from their joined rows
    ``x`` and nearest training rows (``dist``, ``idx``): the nearest row's strategy, or -1 (an
    outlier) beyond ``threshold`` from that strategy's medoid (``rule="medoid"``) or, in a space
    saved in the older format that measured from rows (``rule="nearest"``), from the nearest row."""
    d0 = dist[:, 0]
    labels = train_labels[idx[:, 0]] if len(idx) else np.zeros(0, np.int64)
    if rule == "medoid":
        dm = medoid_distance(features, x, labels, medoids)
        # a row seen at fit keeps its fit label (transform reproduces the fit), however far
        # from its medoid: the threshold is for rows the fit never saw
        far = (dm > threshold) & (d0 > SEEN)
    else:
        dm, far = np.full(len(d0), np.nan), d0 > threshold
    return traj.select("arm", "question_id", "sample_id").with_columns(
        pl.Series("strategy", np.where(far, -1, labels), dtype=pl.Int64),
        pl.Series("distance", d0, dtype=pl.Float64), pl.Series("medoid_distance", dm, dtype=pl.Float64),
        pl.Series("outlier", far, dtype=pl.Boolean), traj["rendering"], traj["moves"])
