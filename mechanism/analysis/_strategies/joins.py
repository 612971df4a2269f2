"""Strategies joined pair by pair (a union-find), each joined set under the label of its
heaviest member: what the family test builds."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np


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
