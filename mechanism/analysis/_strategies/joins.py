"""Strategies joined pair by pair (a union-find), each joined set under the label of its
heaviest member, and what the pair tests compare of each strategy: its typical member (the
family, task and ending tests)."""
from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

import numpy as np

K = TypeVar("K", bound=Hashable)


def typical(labels: np.ndarray, counts: np.ndarray, keys: Sequence[K]) -> tuple[dict[int, K], dict[int, float]]:
    """Each strategy's typical key (the one its rows' counts weigh most, ties by the smallest)
    and its weight, in one pass over the rows (``keys``: one per row, e.g. its tool plan;
    outliers, -1, left out).

    Examples
    --------
    >>> typical(np.array([0, 0, 0, 1, -1]), np.array([2, 3, 3, 1, 9]), ["a", "b", "a", "c", "d"])
    ({0: 'a', 1: 'c'}, {0: 8.0, 1: 1.0})
    """
    by_key: dict[tuple[int, K], float] = {}
    for c, key, n in zip(np.asarray(labels).tolist(), keys, np.asarray(counts, dtype=np.float64).tolist()):
        if c != -1:
            by_key[(c, key)] = by_key.get((c, key), 0.0) + n
    weight: dict[int, float] = {}
    best: dict[int, tuple[float, K]] = {}
    for (c, key), n in by_key.items():
        weight[c] = weight.get(c, 0.0) + n
        if c not in best or (-n, key) < (-best[c][0], best[c][1]):
            best[c] = (n, key)
    return {c: key for c, (_, key) in sorted(best.items())}, dict(sorted(weight.items()))


class Joins:
    """Sets of strategies, joined pair by pair.

    Examples
    --------
    >>> j = Joins({0: 5.0, 1: 3.0, 2: 9.0})
    >>> j.join(0, 1), j.join(1, 0), j.join(1, 2)
    (True, False, True)
    >>> j.labels(np.array([0, 1, 2, -1])).tolist()
    [2, 2, 2, -1]
    """

    def __init__(self, weight: Mapping[int, float]) -> None:
        self._root = {c: c for c in weight}
        self._weight = dict(weight)

    def find(self, c: int) -> int:
        """The label of ``c``'s set."""
        root = self._root
        while root[c] != c:
            root[c] = root[root[c]]
            c = root[c]
        return c

    def join(self, a: int, b: int) -> bool:
        """Join the sets of ``a`` and ``b`` under the heavier one's label (ties: the smaller
        label); ``False`` where they are one set already."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        w = self._weight
        big, small = (ra, rb) if (w[ra], -ra) >= (w[rb], -rb) else (rb, ra)
        self._root[small] = big
        w[big] += w[small]
        return True

    def labels(self, labels: np.ndarray) -> np.ndarray:
        """Each label replaced by its set's (-1, an outlier, kept)."""
        return np.array([self.find(c) if c != -1 else -1 for c in np.asarray(labels).tolist()], dtype=np.int64)
