"""Trajectories as sets of move tokens (:func:`mechanism.segmentation.move_tokens`).

Every token present counts 1, absent 0: no weight is set by hand, and every kind of move and
every tool can separate two strategies. Euclidean distance between two trajectories is then
the square root of the number of tokens one has and the other lacks. Counts are left out on
purpose: repeating a search three times instead of twice is the same strategy; repeating it
at all is not (a ``repeat`` token). Content never enters: tokens name tools, relations,
sources and scopes, never a value.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def fit_vocabulary(tokens: Sequence[str]) -> list[str]:
    """Sorted distinct tokens of the fitted trajectories (space-separated per trajectory)."""
    vocab: set[str] = set()
    for row in set(tokens):
        vocab.update(row.split())
    return sorted(vocab)


def token_matrix(tokens: Sequence[str], vocabulary: Sequence[str]) -> np.ndarray:
    """Presence of each vocabulary token in each trajectory (``len(tokens) x len(vocabulary)``).

    Tokens outside the vocabulary (a tool never seen at fit) are counted in one extra
    distance: each unseen token adds 1 to the trajectory's norm through the last column, so a
    new checkpoint's unknown moves push it away from every fitted strategy rather than
    vanishing.
    """
    index = {t: i for i, t in enumerate(vocabulary)}
    out = np.zeros((len(tokens), len(vocabulary) + 1), dtype=np.float64)
    for r, row in enumerate(tokens):
        unseen = 0
        for t in set(row.split()):
            i = index.get(t)
            if i is None:
                unseen += 1
            else:
                out[r, i] = 1.0
        out[r, -1] = np.sqrt(unseen)
    return out
