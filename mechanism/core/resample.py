"""Resampling over problems: samples of one question are not independent, so every
bootstrap in the toolkit resamples questions and keeps all their samples."""
from __future__ import annotations

import hashlib
import math
import warnings

import numpy as np

from mechanism.core.options import check_seed


def question_bootstrap_weights(n_questions: int, n_boot: int,
                               random_state: int | np.random.Generator | None = 0) -> np.ndarray:
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


def _small_sample_factor(z: float | np.ndarray, n_questions: int) -> float | np.ndarray:
    """How many plug-in bootstrap standard deviations a normal critical value ``z`` becomes with
    ``n_questions`` resampled questions: ``t_{Q-1}(Phi(z)) sqrt(Q / (Q - 1))``.

    The bootstrap over Q questions estimates a mean's variance with divisor Q (too small by
    ``(Q - 1) / Q``), and a normal or percentile interval ignores that the standard deviation
    is itself estimated from Q questions (the t quantile). With Q = 40 both together make a
    95 % percentile interval miss at 0.07-0.09 instead of 0.05 (benchmarks/RESULTS.md,
    ``bench_null_nested.py``). The same tail probability is kept: ``z = 1.96`` becomes
    ``t_{Q-1, 0.975}``; a simultaneous band's critical value is mapped the same way. Fewer
    than two questions: ``inf``.

    >>> round(float(_small_sample_factor(1.959964, 40)), 4)   # 2.0227 * sqrt(40 / 39)
    2.0485
    """
    from scipy.stats import norm  # noqa: PLC0415 - scipy.stats: about 0.7 s to load, and the core layer stays light
    from scipy.stats import t as student  # noqa: PLC0415 - scipy.stats, as above

    if n_questions < 2:
        return np.full(np.shape(z), np.inf) if np.ndim(z) else math.inf
    return student.ppf(norm.cdf(z), n_questions - 1) * math.sqrt(n_questions / (n_questions - 1.0))


def split_interval(estimate: np.ndarray | float, replicates: np.ndarray, level: float | None, n_questions: int,
                    *, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The interval of every part of a split (total, composition, within and the nested parts,
    in ``compare`` and ``information``): ``estimate +- t_{Q-1, (1+level)/2} sqrt(Q/(Q-1)) sd``,
    ``sd`` the standard deviation of the question-bootstrap ``replicates`` along ``axis`` and Q
    the questions resampled (:func:`_small_sample_factor`).

    Chosen over the percentile interval, which at 40 questions and 300 replicates misses 0 at
    0.068 over every part of the split under identical policies (400 data sets), where this one
    misses at 0.051 (and a t interval on jackknife influence values, the same 0.051; BCa 0.088):
    the parts are near-normal (per-question terms hardly skewed), so the excess was the
    interval's small-sample narrowness and the percentile endpoints' own noise, not skewness.
    Replicates that are NaN (a part undefined in a resample) are left out; no defined replicate
    gives NaN; a part that never varies gets ``[estimate, estimate]``; ``level=None``: NaN.

    >>> reps = np.array([-1.0, 0.0, 1.0, 0.0])
    >>> lo, hi = split_interval(0.0, reps, 0.95, 40)
    >>> round(float(hi), 4)                                  # 2.0485 * sd (0.7071)
    1.4485
    """
    est = np.asarray(estimate, dtype=float)
    if level is None:
        nan = np.full(est.shape, np.nan)
        return nan, nan.copy()
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), got {level}")
    from scipy.stats import norm  # noqa: PLC0415 - scipy.stats: about 0.7 s to load, and the core layer stays light

    with warnings.catch_warnings():  # all-NaN slices are answered with NaN on purpose
        warnings.simplefilter("ignore", RuntimeWarning)
        sd = np.nanstd(np.asarray(replicates, dtype=float), axis=axis)
    with np.errstate(invalid="ignore"):  # inf * 0 (one question, no spread) is no spread
        half = np.where(sd == 0, 0.0, _small_sample_factor(norm.ppf((1.0 + level) / 2.0), n_questions) * sd)
    return est - half, est + half


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


# ----------------------------------------------------------------------------- random streams

def question_mean(question_index: np.ndarray, values: np.ndarray, n_questions: int, *,
                  weights: np.ndarray | None = None,
                  level: float | None = 0.95) -> tuple[float, float | None, float | None, int]:
    """Mean of ``values`` over questions, each question weighing 1 (its samples averaged first),
    with a percentile interval over bootstrap ``weights`` of the questions.

    Parameters
    ----------
    question_index
        Each value's question, in ``[0, n_questions)``.
    values
        One value per trajectory (e.g. 0/1 correctness).
    n_questions
        Questions in the design; those without a value are left out of the mean and of every
        replicate.
    weights
        ``(B, n_questions)`` bootstrap weights (:func:`question_bootstrap_weights`), or ``None``
        for no interval.
    level
        Interval level.

    Returns
    -------
    mean, low, high, questions
        ``low``/``high`` are ``None`` without ``weights``; ``questions`` is how many had a value.

    Examples
    --------
    >>> question_mean(np.array([0, 0, 0, 1]), np.array([1., 1., 1., 0.]), 2, weights=None)
    (0.5, None, None, 2)
    """
    n_per = np.bincount(question_index, minlength=n_questions).astype(float)
    total = np.bincount(question_index, weights=np.asarray(values, dtype=float), minlength=n_questions)
    present = n_per > 0
    rate = np.divide(total, n_per, out=np.zeros(n_questions), where=present)
    mean = float(rate[present].mean()) if present.any() else float("nan")
    low = high = None
    if weights is not None and level is not None:
        w = weights * present[None, :]
        reps = (w @ rate) / np.maximum(w.sum(axis=1), 1)
        low, high = (float(v) for v in percentile_interval(reps, level))
    return mean, low, high, int(present.sum())


def resolve_seed(random_state: int | np.random.Generator | np.random.SeedSequence | None) -> int:
    """One integer seed for a whole analysis, whatever ``random_state`` was given.

    The random-stream policy of the toolkit: an entry point (``reweighting``, ``boundary``,
    ``StrategySpace.fit``, ...) turns its ``random_state`` into one integer here, once, and every
    stage derives its own stream from that integer with :func:`stream`. Stages that resample
    questions then draw the *same* question resamples (their intervals are paired), whether the
    caller passed an int (kept as it is, any size), a ``numpy.random.Generator`` (one integer is
    drawn from it, so the generator advances once per call) or ``None`` (fresh entropy, drawn
    once). Anything else is the one-line error of :func:`mechanism.core.options.check_seed`.

    >>> resolve_seed(2**33) == 2**33
    True
    """
    if isinstance(random_state, np.random.SeedSequence):
        return int(random_state.generate_state(2, np.uint64)[0] >> np.uint64(1))
    random_state = check_seed(random_state)
    if isinstance(random_state, int):
        return random_state
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63 - 1))
    return int(np.random.SeedSequence().generate_state(2, np.uint64)[0] >> np.uint64(1))


def library_seed(seed: int) -> int:
    """The seed handed to a library that takes only ``[0, 2**32)`` (scikit-learn, UMAP): ``seed``
    itself when it fits, else one derived from it by :class:`numpy.random.SeedSequence` (the same
    seed always gives the same one), so a larger seed is never refused.

    >>> library_seed(7), library_seed(2**33) == library_seed(2**33) < 2**32
    (7, True)
    """
    if 0 <= seed < 2**32:
        return int(seed)
    return int(np.random.SeedSequence(seed).generate_state(1, np.uint32)[0])


def stream(random_state: int | np.random.Generator | None, purpose: str) -> np.random.Generator:
    """A generator for one purpose (``"bootstrap"``, ``"permutation"``, ...), derived from the seed.

    The same seed gives the same stream, but each purpose gets its own: data simulated with
    ``default_rng(0)`` and analysed with ``random_state=0`` must not share uniforms, or a
    permutation test would reuse the very draws that made the labels. Two calls with the same
    integer seed and purpose give identical streams, which is what pairs the bootstrap
    intervals of different stages. A ``Generator`` or ``None`` is first turned into one
    integer with :func:`resolve_seed` (entry points do that once and pass the integer on).
    """
    seed = resolve_seed(random_state)
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=purpose_key(purpose)))


def purpose_key(purpose: str) -> tuple[int, ...]:
    """The spawn key of a purpose: a digest of the *whole* string, as four 32-bit words.

    Keying on the first bytes only (as an earlier version did) gave ``"shares:base"`` and
    ``"shares:rl"`` the same stream; a 128-bit digest makes distinct purposes draw distinct
    numbers.

    >>> purpose_key("shares:base") != purpose_key("shares:rl")
    True
    """
    digest = hashlib.blake2b(purpose.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    return tuple(int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4))


# ----------------------------------------------------------------------------- power, multiplicity
def detectable_effect(low: np.ndarray | float, high: np.ndarray | float, level: float | None, *,
                      power: float = 0.8) -> np.ndarray | float:
    """Smallest true effect a design detects with probability ``power``, from an interval's width.

    With a (roughly normal) estimate of standard error ``se = (high - low) / (2 z)``,
    ``z = z_{(1 + level) / 2}``, a two-sided test at ``1 - level`` rejects a true effect
    ``delta`` with probability ``power`` when ``delta = (z + z_power) se``. At level 0.95
    and power 0.8 that is about 0.71 times the interval's width. An effect smaller than this
    can hide inside an interval that contains 0; it is reported so that "contains 0" is not
    read as "no effect".

    Examples
    --------
    >>> round(float(detectable_effect(-0.1, 0.1, 0.95)), 4)
    0.1429
    """
    if level is None:  # no intervals, nothing to read a detectable effect from
        return math.nan if np.ndim(low) == 0 else np.full(np.shape(low), math.nan)
    from scipy.stats import norm  # noqa: PLC0415 - scipy.stats: about 0.7 s to load, and the core layer stays light

    z = norm.ppf((1.0 + level) / 2.0)
    width = np.asarray(high, dtype=float) - np.asarray(low, dtype=float)
    out = (z + norm.ppf(power)) * width / (2.0 * z)
    return float(out) if np.ndim(out) == 0 else out


def bonferroni_level(level: float | None, m: int) -> float | None:
    """Per-comparison confidence level that makes ``m`` intervals hold together at ``level``
    (``None``, no intervals, stays ``None``)."""
    return None if level is None else 1.0 - (1.0 - level) / max(int(m), 1)


def simultaneous_band(estimate: np.ndarray, replicates: np.ndarray, level: float | None, *,
                      n_questions: int | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """Bands that hold together: the max-|t| bootstrap band over a family of estimates.

    Each member ``m`` gets ``estimate_m +- c sd_m``, ``sd_m`` its bootstrap standard deviation
    and ``c`` the ``level`` quantile over replicates of ``max_m |rep_m - estimate_m| / sd_m``:
    all members of the family lie in their bands together in a share ``level`` of the
    resamples, so the family covers jointly at about ``level``, where separate intervals at
    ``level`` would not (and Bonferroni's are wider than needed when members are correlated).
    Members undefined in a replicate (NaN) are left out of that replicate's maximum; a member
    that never varies gets a band of width 0; a member undefined everywhere gets NaN.

    Parameters
    ----------
    estimate
        ``(...)`` point estimates of the family (any shape, flattened together).
    replicates
        ``(B, ...)`` bootstrap replicates of the same quantities.
    level
        Joint confidence level (``None``: NaN bands).
    n_questions
        Questions resampled. Given, ``c`` gets the small-sample calibration of every split
        part's interval (:func:`split_interval`): ``c`` becomes ``t_{Q-1}(Phi(c)) sqrt(Q/(Q-1))``,
        the same tail probability read from a t distribution on plug-in standard deviations.
        Without it, five per-strategy parts at 20 questions showed some row excluding 0 in 0.09
        of null data sets at joint level 0.95 (benchmarks/RESULTS.md).

    Returns
    -------
    low, high, critical
        Bands of the shape of ``estimate`` and the critical value ``c`` (calibrated when
        ``n_questions`` is given).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> reps = rng.normal(size=(4000, 10))
    >>> low, high, c = simultaneous_band(np.zeros(10), reps, 0.95)
    >>> 2.6 < c < 3.0   # about the 0.95 quantile of the largest of ten |N(0, 1)|, not 1.96
    True
    """
    est = np.asarray(estimate, dtype=float)
    reps = np.asarray(replicates, dtype=float).reshape(np.shape(replicates)[0], -1)
    flat = est.reshape(-1)
    nan = np.full(est.shape, np.nan)
    if level is None or reps.shape[0] < 2 or flat.size == 0:
        return nan, nan.copy(), math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sd = np.nanstd(reps, axis=0)
    usable = np.isfinite(flat) & np.isfinite(sd) & (sd > 0)
    if not usable.any():
        low = np.where(np.isfinite(flat) & (sd == 0), flat, np.nan)
        return low.reshape(est.shape), low.copy().reshape(est.shape), math.nan
    t = np.abs(reps[:, usable] - flat[usable]) / sd[usable]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        worst = np.nanmax(t, axis=1)
    worst = worst[np.isfinite(worst)]
    crit = float(np.quantile(worst, level)) if worst.size else math.nan
    if n_questions is not None and math.isfinite(crit):
        crit = float(_small_sample_factor(crit, int(n_questions)))
    with np.errstate(invalid="ignore"):  # an infinite critical value (one question) times a zero sd
        half = np.where(usable, crit * np.where(np.isfinite(sd), sd, 0.0), np.where(sd == 0, 0.0, np.nan))
    low = np.where(np.isfinite(flat), flat - half, np.nan)
    high = np.where(np.isfinite(flat), flat + half, np.nan)
    return low.reshape(est.shape), high.reshape(est.shape), crit
