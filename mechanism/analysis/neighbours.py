"""Nearest-neighbour search over distinct points with counts.

Trajectories repeat heavily in strategy space, so a search over every row does the same
work many times and grows with the square of the rows; these helpers collapse identical
rows first and search the distinct points (exactly up to :data:`EXACT_LIMIT` of them,
with pynndescent beyond).
"""
from __future__ import annotations

import numpy as np

__all__ = ["EXACT_LIMIT", "distinct_rows", "NeighbourSearch"]

EXACT_LIMIT = 50_000  # distinct base points searched exactly (brute force over 50,000 x 400-D: tens of seconds)


def distinct_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct rows of ``x``, each row's index among them, and their counts (exact bytes,
    with -0.0 folded into 0.0)."""
    x = np.ascontiguousarray(np.asarray(x, dtype=np.float64) + 0.0)
    keys = x.view(np.dtype((np.void, x.dtype.itemsize * x.shape[1]))).ravel()
    _, first, inverse, counts = np.unique(keys, return_index=True, return_inverse=True, return_counts=True)
    return x[first], inverse.ravel(), counts


class NeighbourSearch:
    """Nearest distinct base point: exact (brute force) for a few thousand points,
    pynndescent (seeded) beyond ``EXACT_LIMIT``."""

    def __init__(self, points: np.ndarray, random_state: int | None) -> None:
        self.points = points
        self.exact = len(points) <= EXACT_LIMIT
        if self.exact:
            from sklearn.neighbors import NearestNeighbors  # noqa: PLC0415 - scikit-learn: about a second to import, only in the steps that use it

            self.index = NearestNeighbors(n_neighbors=min(2, len(points)), algorithm="brute").fit(points)
        else:
            from pynndescent import NNDescent  # noqa: PLC0415 - pynndescent (numba): seconds to import, only above EXACT_LIMIT points

            seed = 0 if random_state is None else int(random_state)
            self.index = NNDescent(points, n_neighbors=15, random_state=seed, n_jobs=1)

    def _query(self, x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        if self.exact:
            return self.index.kneighbors(x, n_neighbors=k)
        idx, dist = self.index.query(x, k=k, epsilon=0.3)  # wider search: closer to exact
        return dist, idx

    def _exact(self, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        # The search's own distances come from |x|^2 - 2 x.y + |y|^2, which leaves ~1e-8 of
        # rounding where x equals y; recomputed from differences, equal points are at exactly
        # 0, so a treated row on a base point is never "far" from a threshold of 0.
        return np.sqrt(((x - self.points[idx]) ** 2).sum(axis=1))

    def nearest(self, x: np.ndarray) -> np.ndarray:
        """Distance of each row of ``x`` to its nearest point."""
        return self._exact(x, self._query(x, 1)[1][:, 0])

    def nearest_other(self, which: np.ndarray) -> np.ndarray:
        """Distance of each point ``which`` to its nearest *other* point (points are distinct,
        so the other is the first neighbour that is not the point itself)."""
        _, idx = self._query(self.points[which], 2)
        other = np.where(idx[:, 0] == which, idx[:, 1], idx[:, 0])
        return self._exact(self.points[which], other)
