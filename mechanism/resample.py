"""Resampling over problems: samples of one question are not independent, so every
bootstrap in the toolkit resamples questions and keeps all their samples."""
from __future__ import annotations

import warnings

import numpy as np


def question_bootstrap_weights(n_questions: int, n_boot: int, random_state: int | np.random.Generator | None = 0) -> np.ndarray:
    """How often each question is drawn in each bootstrap replicate.

    Parameters
    ----------
    n_questions
        Number of distinct questions Q.
    n_boot
        Number of replicates B.
    random_state
        Seed or generator; the same seed gives the same weights.

    Returns
    -------
    numpy.ndarray
        Integer array of shape ``(B, Q)``; each row sums to Q. A per-question statistic
        ``x`` (shape ``(Q,)``) has replicate means ``weights @ x / Q``.
    """
    rng = np.random.default_rng(random_state)
    if n_questions <= 0:
        return np.zeros((n_boot, 0), dtype=np.int64)
    return rng.multinomial(n_questions, np.full(n_questions, 1.0 / n_questions), size=n_boot)


def percentile_interval(replicates: np.ndarray, level: float, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval of ``replicates`` along ``axis`` at confidence ``level``.

    Replicates where the statistic is undefined (NaN: a rate over an empty stratum in that
    resample) are left out; an all-NaN slice gives a NaN interval, without a warning.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), got {level}")
    alpha = (1.0 - level) / 2.0
    with warnings.catch_warnings():  # local: the all-NaN case is answered with NaN on purpose
        warnings.simplefilter("ignore", RuntimeWarning)
        low = np.nanquantile(replicates, alpha, axis=axis)
        high = np.nanquantile(replicates, 1.0 - alpha, axis=axis)
    return low, high


def question_weighted(counts: np.ndarray, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """Weigh questions equally within an arm: divide per-question tallies by the question's samples.

    Real runs are unbalanced (different samples per question and arm, uneven skips). Pooling
    trajectories lets a question's sample count decide its weight, so two identical policies
    sampled in different proportions look different. Dividing every tally of one (arm,
    question) by that question's number of trajectories in the arm gives each question weight
    1 in every arm: shares and rates built from the result are means over questions.

    Parameters
    ----------
    counts
        Trajectory counts with strata on the last axis, e.g. shape ``(arms, Q, S)``; the
        samples of one (arm, question) are ``counts.sum(axis=-1)``.
    *arrays
        Further tallies of the same shape (successes, retrievals, ...), divided by the same
        per-question totals.

    Returns
    -------
    tuple of numpy.ndarray
        The weighted ``counts`` followed by each weighted array; an (arm, question) with no
        trajectory stays all zero.

    Examples
    --------
    >>> import numpy as np
    >>> n = np.array([[[3., 1.], [0., 4.]]])      # one arm, two questions, two strata
    >>> c = np.array([[[3., 0.], [0., 2.]]])
    >>> wn, wc = question_weighted(n, c)
    >>> wn.tolist(), wc.tolist()
    ([[[0.75, 0.25], [0.0, 1.0]]], [[[0.75, 0.0], [0.0, 0.5]]])
    """
    totals = np.asarray(counts, dtype=float).sum(axis=-1, keepdims=True)
    scale = np.divide(1.0, totals, out=np.zeros_like(totals), where=totals > 0)
    return (np.asarray(counts, dtype=float) * scale,) + tuple(np.asarray(a, dtype=float) * scale for a in arrays)
