"""How stable the strategies of a fit are: under bootstrap resamples of questions, between
seeds, and across resolutions.

Clusterwise stability (Hennig 2007): refit the clustering on a bootstrap resample of the
questions (all their trajectories), and for every fitted strategy take the best Jaccard
similarity between its members and any strategy of the refit, counting trajectories; the mean
over resamples is the strategy's stability. Values near 1 mean the strategy reappears whatever
questions are drawn; below about 0.6 it is not a stable finding (Hennig's reading).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mechanism.resample import question_bootstrap_weights, stream


def jaccard_best(labels: np.ndarray, other: np.ndarray, weights: np.ndarray) -> dict[int, float]:
    """For each label of ``labels``: its best count-weighted Jaccard similarity with any label
    of ``other`` (rows with zero weight ignored).

    Examples
    --------
    >>> jaccard_best(np.array([0, 0, 1, 1]), np.array([5, 5, 5, 6]), np.ones(4))
    {0: 0.6666666666666666, 1: 0.5}
    """
    out: dict[int, float] = {}
    keep = weights > 0
    labels, other, weights = labels[keep], other[keep], weights[keep]
    for c in np.unique(labels):
        mine = labels == c
        best = 0.0
        for d in np.unique(other[mine]):
            theirs = other == d
            inter = weights[mine & theirs].sum()
            union = weights[mine | theirs].sum()
            best = max(best, inter / union if union > 0 else 0.0)
        out[int(c)] = float(best)
    return out


def bootstrap_stability(cluster: Callable[[np.ndarray, np.ndarray], np.ndarray], n_rows: int,
                        labels: np.ndarray, row_of: np.ndarray, question_of: np.ndarray, *,
                        n_boot: int, random_state: int | np.random.Generator | None) -> dict[int, float]:
    """Mean best Jaccard of every strategy over ``n_boot`` question resamples.

    Parameters
    ----------
    cluster
        ``cluster(index, counts) -> labels``: the fit's clustering of the distinct rows
        ``index`` weighted by ``counts``.
    n_rows, labels
        Number of the fit's distinct rows, and their strategies.
    row_of, question_of
        For every trajectory: its distinct row and its question (integer codes).
    n_boot
        Question resamples.
    random_state
        Seed (int, ``numpy.random.Generator`` or None: fresh entropy); the resamples come from
        its ``"stability"`` stream (:func:`mechanism.resample.stream`), so the same seed gives
        the same stabilities and they share no draws with the fit's other random steps.
    """
    n_q = int(question_of.max()) + 1 if len(question_of) else 0
    draws = question_bootstrap_weights(n_q, n_boot, stream(random_state, "stability"))
    acc: dict[int, list[float]] = {int(c): [] for c in np.unique(labels) if c >= 0}
    for w in draws:
        counts = np.bincount(row_of, weights=w[question_of], minlength=n_rows)
        present = np.flatnonzero(counts > 0)
        if len(present) == 0:
            continue
        refit = np.full(n_rows, -1, dtype=np.int64)
        refit[present] = cluster(present, counts[present])
        for c, j in jaccard_best(labels, refit, counts).items():
            if c in acc:
                acc[c].append(j)
    return {c: float(np.mean(v)) if v else float("nan") for c, v in acc.items()}
