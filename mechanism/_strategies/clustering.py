"""Cutting the tree of distinct trajectories into strategies, by two stated criteria.

1. Average-linkage agglomerative clustering cut at ``resolution``: two groups join while the
   mean distance between their members is below it. Distances count move tokens one
   trajectory has and the other lacks (:mod:`mechanism._strategies.features`), so the
   default ``resolution=1.5`` joins groups that differ on average by two tokens or fewer
   (another provenance of one call, a call's order) and keeps apart groups that differ by a
   whole kind of call (four tokens: tool, relation, move, order). The default was chosen
   once for all planted worlds by leaving one world out (``benchmarks/RESULTS.md``).
2. A strategy holds at least ``min_share`` of the trajectories: a smaller group is a
   variant, and joins the strategy whose members are nearest on average (count-weighted).
   Rare renderings cannot then each claim a strategy of their own.
"""
from __future__ import annotations

import numpy as np


def merge_small(space: np.ndarray, labels: np.ndarray, counts: np.ndarray, min_share: float) -> np.ndarray:
    """Join every group under ``min_share`` of the total count to the group at the least
    count-weighted mean distance, smallest group first, until none is left under it (or one
    group remains).

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
    from scipy.spatial.distance import pdist, squareform

    if len(space) < 2:
        return np.zeros((len(space), len(space)))
    return squareform(pdist(space.astype(np.float64)))


def agglomerative(dist: np.ndarray, counts: np.ndarray, *, resolution: float, linkage: str,
                  min_share: float) -> np.ndarray:
    """Labels of rows from their square distance matrix: the tree cut at ``resolution``
    (groups joined while their linkage distance is below it), then :func:`merge_small`."""
    from scipy.cluster.hierarchy import fcluster
    from scipy.cluster.hierarchy import linkage as tree
    from scipy.spatial.distance import squareform

    m = len(dist)
    if m < 2:
        return np.zeros(m, dtype=np.int64)
    z = tree(squareform(dist, checks=False), method=linkage)
    # strictly below the resolution, as scikit-learn's distance_threshold
    labels = fcluster(z, t=np.nextafter(resolution, 0.0), criterion="distance").astype(np.int64) - 1
    return merge_small_from(dist, labels, counts, min_share)


def merge_small_from(dist: np.ndarray, labels: np.ndarray, counts: np.ndarray, min_share: float) -> np.ndarray:
    """:func:`merge_small` from a square distance matrix."""
    return _merge_small(lambda: dist, labels, counts, min_share)


def _merge_small(pairwise, labels: np.ndarray, counts: np.ndarray, min_share: float) -> np.ndarray:
    """The merge of :func:`merge_small`; ``pairwise()`` gives the distance matrix, asked for
    only when some group is below ``min_share`` (it costs the square of the rows)."""
    labels = np.asarray(labels).copy()
    if min_share <= 0 or len(labels) == 0:
        return labels
    w = counts.astype(np.float64)
    ids, inv = np.unique(labels, return_inverse=True)
    k = len(ids)
    size = np.bincount(inv, weights=w, minlength=k)
    if k < 2 or size.min() >= min_share * w.sum():
        return labels
    # sums[c, d] = sum over members i of c, j of d of w_i w_j |x_i - x_j|
    sums = _group_sums(pairwise() * w[:, None] * w[None, :], inv, k)
    return ids[_merge(sums, size, min_share * w.sum())[inv]]


def _group_sums(matrix: np.ndarray, groups: np.ndarray, k: int) -> np.ndarray:
    """``sums[c, d]``: the sum of ``matrix`` over rows in group c and columns in group d,
    in O(rows x columns) (sorted by group, then reduced in runs)."""
    order = np.argsort(groups, kind="stable")
    starts = np.searchsorted(groups[order], np.arange(k))
    cols = np.add.reduceat(matrix[:, order], starts, axis=1)
    return np.add.reduceat(cols[order], starts, axis=0)


def _merge(sums: np.ndarray, size: np.ndarray, target: float) -> np.ndarray:
    k = len(size)
    alive = np.ones(k, dtype=bool)
    owner = np.arange(k)
    while alive.sum() > 1:
        live = np.flatnonzero(alive)
        small = live[np.lexsort((live, size[live]))[0]]  # smallest, ties by id
        if size[small] >= target:
            break
        others = live[live != small]
        mean = sums[small, others] / (size[small] * size[others])
        into = others[int(np.argmin(mean))]
        sums[into, :] += sums[small, :]
        sums[:, into] += sums[:, small]
        size[into] += size[small]
        alive[small] = False
        owner[owner == small] = into
    return owner
