"""Cutting the tree of distinct trajectories into strategies, by two stated criteria.

1. Average-linkage agglomerative clustering cut at ``resolution``: two groups join while the
   mean distance between their members is below it. Distances count move tokens one
   trajectory has and the other lacks (:mod:`mechanism._strategies.features`), so
   ``resolution=2`` joins groups that differ on average by fewer than four tokens - less
   than one new kind of call (which differs in four: tool, relation, move, order) - and
   keeps apart groups that differ by a whole kind of move.
2. A strategy holds at least ``min_share`` of the trajectories: a smaller group is a
   variant, and joins the strategy whose members are nearest on average (count-weighted).
   Rare renderings cannot then each claim a strategy of their own.
"""
from __future__ import annotations

import numpy as np


def merge_small(space: np.ndarray, labels: np.ndarray, counts: np.ndarray, min_share: float) -> np.ndarray:
    """Join every group under ``min_share`` of the total count to its nearest group, smallest
    first, until none is left under it (or one group remains)."""
    labels = labels.copy()
    w = counts.astype(np.float64)
    total = w.sum()
    if min_share <= 0:
        return labels
    while True:
        ids, inv = np.unique(labels, return_inverse=True)
        size = np.bincount(inv, weights=w)
        if len(ids) < 2 or size.min() >= min_share * total:
            return labels
        # smallest group first; ties by id so the result is deterministic
        small = ids[np.lexsort((ids, size))[0]]
        members = np.flatnonzero(labels == small)
        dist = np.sqrt(np.maximum(
            (space[members] ** 2).sum(1)[:, None] + (space ** 2).sum(1)[None, :]
            - 2.0 * space[members] @ space.T, 0.0))
        # count-weighted mean distance from the small group to each other group
        to_row = (w[members] @ dist) / w[members].sum()
        others = ids[ids != small]
        mean = np.array([np.average(to_row[labels == c], weights=w[labels == c]) for c in others])
        labels[members] = others[int(np.argmin(mean))]
