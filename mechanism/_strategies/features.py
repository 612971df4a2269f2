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


# At most this many tokens get a column of their own (the most frequent over trajectories);
# rarer ones count together in the last column. Bounds the memory of the joined space
# (20,000 distinct rows x 1,000 columns of float32 is 80 MB) on data whose move sequences are
# nearly all distinct.
MAX_VOCABULARY = 512


def fit_vocabulary(tokens: Sequence[str], *, max_size: int = MAX_VOCABULARY) -> list[str]:
    """The tokens that get a column: the ``max_size`` most frequent over the fitted
    trajectories (``tokens`` holds each trajectory's, space-separated), ties by name, sorted.

    Examples
    --------
    >>> fit_vocabulary(["a b", "a c", "a b"], max_size=2)
    ['a', 'b']
    """
    from collections import Counter

    freq: Counter[str] = Counter()
    for row, n in Counter(tokens).items():
        for t in set(row.split()):
            freq[t] += n
    ranked = sorted(freq, key=lambda t: (-freq[t], t))[:max_size]
    return sorted(ranked)


def token_matrix(tokens: Sequence[str], vocabulary: Sequence[str]) -> np.ndarray:
    """Presence of each vocabulary token in each trajectory (``len(tokens) x len(vocabulary)``).

    Tokens outside the vocabulary (a tool never seen at fit, or too rare to get a column)
    are counted in one extra column, ``sqrt(number of them)``: each adds 1 to the
    trajectory's squared norm, so a new checkpoint's unknown moves push it away from every
    fitted strategy rather than vanishing.
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
