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
