"""Did the treated arm reweight the base arm's strategies, or do something new?

Works from a canonical trajectory table plus one strategy label per row (``-1`` = outlier,
kept as its own stratum so that no trajectory is dropped from the accounting).

Conventions (stated once, used everywhere below):

- **Questions (the design rule).** A comparison uses the questions both arms answered; the
  number left out is reported in ``notes``. Real runs are unbalanced (different samples per
  question and arm, records skipped unevenly), so every quantity compared between arms
  weighs questions equally within an arm: each trajectory counts ``1 / n_a(q)``, the samples
  of its arm ``a`` on its question ``q`` (:func:`mechanism.core.resample.question_weighted`).
  Shares and accuracy are then means over questions of per-question shares and accuracies;
  a strategy's success rate is the ratio of its question-weighted successes to its
  question-weighted trajectories. Identical policies sampled in different proportions then
  give the same shares and a split of zero. ``weighting="trajectory"`` pools trajectories
  instead (ratio of raw sums; ``to_frame()`` says so in its ``weighting`` column); the two agree
  when every question has the same number of samples in an arm. A note says whenever the
  arms' samples per question differ.
- **Intervals.** Bootstrap over questions: questions are resampled with replacement and keep
  all their samples, in both arms together (the arms stay paired). The split's parts (total,
  composition, within) have one interval rule, ``estimate +- t_{Q-1} sqrt(Q/(Q-1))`` bootstrap
  standard deviations over Q questions (``resample.split_interval``): the percentile interval
  missed 0 at 0.066 instead of 0.05 under identical policies at 40 questions, this one at
  0.051 (``benchmarks/bench_null_nested.py``). Other quantities keep percentile intervals.
  One integer seed is drawn from ``random_state`` once (an int, a Generator or None), and
  every stage derives its stream from it, so all intervals come from the same resamples.
- **Power and multiplicity.** ``detectable`` is the smallest true effect the design detects
  with probability 0.8 at the interval's level, ``0.71 x`` the interval's width at 95 %
  (:func:`mechanism.core.resample.detectable_effect`): an interval that contains 0 is not
  evidence of no effect smaller than that. Per-strategy rows are read together, so their
  intervals are simultaneous bands (max-|t| bootstrap,
  :func:`mechanism.core.resample.simultaneous_band`): each of the share and success columns holds
  together over the strategies at ``ci`` (``ci_level``), and composition and within hold
  together as one family. ``compare_arms`` widens them further over the treated arms.
- **JS divergence.** The plug-in divergence of estimated shares is above 0 even for
  identical policies. ``js_divergence`` subtracts its mean under the within-question
  permutation null (what identical policies give with this design); it can be slightly
  negative. Its interval is the wider of the bias-shifted bootstrap interval and the
  interval from inverting the permutation null, so it contains 0 with probability at least
  ``ci`` when the policies are identical. ``js_divergence_plugin`` keeps the plug-in value.
- **Kitagawa split, on question x strategy strata (the default).** A strategy's success
  depends on the questions it is used on, so pooling a strategy's success over the
  questions an arm used it on lets "within" absorb *which* questions it was used on
  (Simpson's paradox: moving a strategy from hard to easy questions is not better
  execution). The split is therefore made over strata ``(q, s)``:
  ``total = acc_t - acc_b = composition + within`` with
  ``composition = sum_{q,s} (p_t(q,s) - p_b(q,s)) (r_t(q,s) + r_b(q,s)) / 2`` and
  ``within = sum_{q,s} (r_t(q,s) - r_b(q,s)) (p_t(q,s) + p_b(q,s)) / 2``, where
  ``p_a(q,s)`` is arm a's (question-weighted) share of its trajectories in question q and
  strategy s, and ``r_a(q,s)`` its success rate there. **Composition** is then the change
  in *which strategy is used on each question*, valued at the success that strategy has on
  that question; **within** is the change in success of the same strategy on the same
  question (execution). When success depends on the question only, both are 0 whatever
  the arms' mixes of questions and strategies. A strategy's row sums its strata over
  questions. ``strata="pooled"`` gives the textbook form over strategies alone
  (``r_a(s)`` pooled over questions), labelled in the ``strata`` column: it is kept for
  comparison with published numbers and mixes execution with question mix.
- **Strata an arm never used.** A stratum ``(q, s)`` with no trajectory of one arm is valued at
  *that arm's own* modelled success there (:func:`cell_rates`: additive question and strategy
  effects on the logit scale, fitted per arm, :func:`additive_logit`), never at the other arm's:
  borrowing the other arm's rate valued a cell only the treated arm used at the treated arm's
  execution, so an execution change leaked into composition. The identity still holds exactly
  (a modelled rate meets a zero share in its own arm). Beside the estimate the split reports
  assumption-free bounds, each such cell at 0 and at 1 (``composition_bounds``,
  ``within_bounds``), and each arm's share of mass in such cells (``one_arm_mass``). With
  ``strata="pooled"`` a strategy one arm never used borrows the other arm's rate (the
  textbook form). A stratum neither arm used weighs nothing. The tables show an undefined
  rate as null.
- **Alignment** (``success_alignment``; ``alignment`` is its old name, kept as an alias). Weighted Pearson
  correlation, over the strategies both arms use (outliers
  excluded), of ``log(p_t(s) / p_b(s))`` with the base success rate ``r_b(s)``, weights
  ``(p_b(s) + p_t(s)) / 2``. Positive: the treated arm moved mass toward the strategies the
  base arm already executed well. Undefined (NaN) with fewer than three such strategies.
- **Reweighting vs replacement.** ``shared_mass``: the treated arm's share of trajectories
  in (non-outlier) strategies the base arm uses at least once. With ``coordinates``:
  each treated trajectory's distance to its nearest base trajectory against each base
  trajectory's distance to its nearest *other* base trajectory; ``far_share`` is the share
  of treated trajectories farther from every base trajectory than 95 % of base trajectories
  are from their nearest other base trajectory. It measures how much treated mass lies
  where the base arm is sparse or absent, and it has no fixed null: under pure reweighting
  (treated trajectories drawn from the base arm's own strategies, only in other
  proportions) it is about 0.05 only when the treated arm keeps the base proportions; mass
  moved toward a compact, dense strategy lowers it toward 0, and mass moved toward a
  spread-out strategy raises it (0.003 to 0.57 were seen for two clusters of different
  spread). Read it against the same statistic for base resampled in the treated arm's
  strategy proportions, or with arms permuted within questions, never against 0.05.
- **Query sequences.** A trajectory's query sequence is its queries, lower-cased and
  white-space-collapsed, in order (no search = the empty sequence). Per arm:
  ``unique_per_problem``, the mean over questions of the number of distinct sequences.
  For the treated arm: ``overlap_with_base``, the share of its trajectories whose sequence
  also occurs among the base arm's sequences *for the same question* (averaged over
  questions under the design rule), and
  ``overlap_distinct``, the same share counted over distinct (question, sequence) pairs.
  Distinct counts grow with the samples per question, so ``unique_at_common_n`` gives the
  expected number of distinct sequences among ``min(n_base(q), n_treated(q))`` samples of
  each question (unbiased, as PASS@k is): compare arms on that one when their samples differ.
  Likewise ``overlap_at_common_n``: the chance that a treated trajectory's sequence is among
  ``min(n_base(q), n_treated(q))`` of the base arm's samples of its question, averaged over
  the treated trajectories of each question and then over questions.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
import polars as pl

from mechanism.analysis._verdicts import comparison_lines, comparison_verdict, reweighting_lines, reweighting_verdict
from mechanism.analysis.arms import OUTLIER, check_counts, check_labels, check_pair, is_outlier
from mechanism.analysis.neighbours import NeighbourSearch, distinct_rows
from mechanism.core.errors import InputError
from mechanism.core.options import RandomState, Weighting, check_choice, check_ci, check_seed, choices
from mechanism.core.progress import progress as bar
from mechanism.core.resample import (
    bonferroni_level,
    detectable_effect,
    percentile_interval,
    question_bootstrap_weights,
    question_weighted,
    resolve_seed,
    simultaneous_band,
    split_interval,
    stream,
)
from mechanism.core.results import Result, by_category
from mechanism.core.schema import KEY_COLUMNS, shared_questions, validate

__all__ = [
    "Reweighting", "reweighting", "Comparison", "compare_arms", "kitagawa_split", "within_question_split",
    "js_divergence",
    "weighted_correlation", "query_sequence_keys", "labels_from_table", "permutation_test", "stream",
    "OUTLIER",
]

_SEP = "\x1f"  # joins the queries of one trajectory; cannot occur in normalised text


# ----------------------------------------------------------------------------- closed forms
def kitagawa_split(n_base: np.ndarray, c_base: np.ndarray, n_treated: np.ndarray,
                   c_treated: np.ndarray) -> dict[str, np.ndarray]:
    """Kitagawa's symmetric split of an accuracy difference over strata.

    Vectorised over leading axes: the last axis indexes strata (strategies).

    Parameters
    ----------
    n_base, c_base, n_treated, c_treated
        Trajectory counts and success counts per stratum, shape ``(..., S)``.

    Returns
    -------
    dict
        ``share_base``, ``share_treated``, ``rate_base``, ``rate_treated`` (NaN where the
        arm has no trajectory in the stratum), ``composition`` and ``within`` per stratum
        (shape ``(..., S)``), and ``accuracy_base``, ``accuracy_treated``, ``total``,
        ``composition_total``, ``within_total`` (shape ``(...)``).

    Examples
    --------
    >>> import numpy as np
    >>> out = kitagawa_split(np.array([5., 5.]), np.array([1., 4.]),
    ...                      np.array([2., 8.]), np.array([0., 7.]))
    >>> round(float(out["composition_total"] + out["within_total"]), 12) == round(float(out["total"]), 12)
    True
    """
    n_b = np.asarray(n_base, dtype=float)
    n_t = np.asarray(n_treated, dtype=float)
    c_b = np.asarray(c_base, dtype=float)
    c_t = np.asarray(c_treated, dtype=float)
    tot_b = n_b.sum(axis=-1, keepdims=True)
    tot_t = n_t.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_b = np.where(tot_b > 0, n_b / np.where(tot_b > 0, tot_b, 1.0), np.nan)
        p_t = np.where(tot_t > 0, n_t / np.where(tot_t > 0, tot_t, 1.0), np.nan)
        r_b = np.where(n_b > 0, c_b / np.where(n_b > 0, n_b, 1.0), np.nan)
        r_t = np.where(n_t > 0, c_t / np.where(n_t > 0, n_t, 1.0), np.nan)
    # absent in one arm: borrow the other arm's rate; absent in both: the stratum weighs nothing
    rb = np.where(n_b > 0, r_b, np.where(n_t > 0, r_t, 0.0))
    rt = np.where(n_t > 0, r_t, np.where(n_b > 0, r_b, 0.0))
    composition = (p_t - p_b) * (rt + rb) / 2.0
    within = (rt - rb) * (p_t + p_b) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        acc_b = c_b.sum(axis=-1) / tot_b[..., 0]
        acc_t = c_t.sum(axis=-1) / tot_t[..., 0]
    return {
        "share_base": p_b, "share_treated": p_t, "rate_base": r_b, "rate_treated": r_t,
        "composition": composition, "within": within,
        "accuracy_base": acc_b, "accuracy_treated": acc_t, "total": acc_t - acc_b,
        "composition_total": composition.sum(axis=-1), "within_total": within.sum(axis=-1),
    }


# ----------------------------------------------------------------------------- empty cells
#: Ridges of the within-arm cell model: normal priors of precision ``QUESTION_RIDGE`` on each
#: question effect and ``CELL_RIDGE`` on each strategy effect (logit scale). Both are weak next to
#: a question's own samples (8 samples carry a precision of about 2), strong enough that a
#: question solved in every sample, or a strategy the arm never used, gets a finite effect (the
#: latter 0: the arm's own success on that question). Question effects are penalised a hundred times
#: less: questions differ far more than strategies do, so where an arm's data cannot tell the two
#: apart (it used one strategy on the easy questions and another on the hard ones) the model
#: reads the difference as the questions', and using a strategy on easier questions stays out of
#: within (the Simpson case of ``tests/compare/test_reweighting_strata.py``).
CELL_RIDGE = 1.0
QUESTION_RIDGE = 0.01


def additive_logit(n: np.ndarray, c: np.ndarray, *, ridge: float = CELL_RIDGE,
                   question_ridge: float = QUESTION_RIDGE, iterations: int = 50) -> np.ndarray:
    """Fitted success probabilities of ``logit p(q, j) = mu + a_q + b_j`` from one arm's tallies.

    The within-arm model that values a question x strategy cell the arm never used: additive
    question and strategy effects on the logit scale, fitted by penalised maximum likelihood
    (binomial, ridge ``question_ridge`` on every ``a_q`` and ``ridge`` on every ``b_j``, none on
    ``mu``) with damped Newton
    steps. The Hessian is solved through the Schur complement of its diagonal question block,
    so each step costs ``O(Q J^2 + J^3)``: no ``(Q + J)^2`` matrix. Deterministic (no seed).

    Parameters
    ----------
    n, c
        ``(Q, J)`` trajectory and success tallies of one arm (raw counts: the ridge is weighed
        against them).
    ridge, question_ridge
        Prior precision of each strategy (column) effect and of each question effect.
    iterations
        Newton steps at most (it stops when the largest step is below ``1e-9``).

    Returns
    -------
    numpy.ndarray
        ``(Q, J)`` fitted probabilities, defined for every cell (used or not).

    Examples
    --------
    >>> n = np.array([[4., 4.], [4., 0.]])                 # question 1 never used strategy 2
    >>> c = np.array([[1., 3.], [2., 0.]])
    >>> p = additive_logit(n, c)
    >>> bool(p[1, 1] > p[1, 0])                             # strategy 2 does better where it is seen
    True
    >>> additive_logit(np.zeros((2, 2)), np.zeros((2, 2))).round(3).tolist()   # no data: 1/2
    [[0.5, 0.5], [0.5, 0.5]]
    """
    n = np.asarray(n, dtype=float)
    c = np.clip(np.asarray(c, dtype=float), 0.0, n)
    q, j = n.shape
    total = n.sum()
    mu = float(np.log((c.sum() + 0.5) / (total - c.sum() + 0.5)))
    a = np.zeros(q)
    b = np.zeros(j)
    ridge0 = 1e-6  # keeps mu finite when the arm never (or always) succeeds
    for _ in range(iterations):
        eta = np.clip(mu + a[:, None] + b[None, :], -30.0, 30.0)
        p = 1.0 / (1.0 + np.exp(-eta))
        resid = c - n * p
        w = n * p * (1.0 - p)
        g_a = resid.sum(axis=1) - question_ridge * a
        g_small = np.concatenate([[resid.sum() - ridge0 * mu], resid.sum(axis=0) - ridge * b])
        h_a = w.sum(axis=1) + question_ridge
        x = np.concatenate([w.sum(axis=1)[:, None], w], axis=1)          # (Q, 1 + J) cross terms
        h_small = np.zeros((j + 1, j + 1))
        h_small[0, 0] = w.sum() + ridge0
        h_small[0, 1:] = h_small[1:, 0] = w.sum(axis=0)
        h_small[1:, 1:] = np.diag(w.sum(axis=0) + ridge)
        schur = h_small - x.T @ (x / h_a[:, None])
        d_small = np.linalg.solve(schur, g_small - x.T @ (g_a / h_a))
        d_a = (g_a - x @ d_small) / h_a
        step = max(float(np.abs(d_small).max(initial=0.0)), float(np.abs(d_a).max(initial=0.0)))
        scale = min(1.0, 5.0 / step) if step > 0 else 1.0   # damped: no overshoot from a flat start
        mu += scale * d_small[0]
        b += scale * d_small[1:]
        a += scale * d_a
        if step < 1e-9:
            break
    eta = np.clip(mu + a[:, None] + b[None, :], -30.0, 30.0)
    return 1.0 / (1.0 + np.exp(-eta))


def cell_rates(counts: np.ndarray, wins: np.ndarray, *, ridge: float = CELL_RIDGE) -> np.ndarray:
    """Each arm's modelled success in every question x strategy cell, from its own data only.

    ``counts``, ``wins``: ``(2, Q, S)`` raw tallies (arm 0 = base). Returns ``(2, Q, S)``:
    :func:`additive_logit` fitted to each arm separately, so a cell one arm never used is valued
    at that arm's execution, never at the other arm's.
    """
    counts = np.asarray(counts, dtype=float)
    wins = np.asarray(wins, dtype=float)
    return np.stack([additive_logit(counts[a], wins[a], ridge=ridge) for a in range(counts.shape[0])])


def js_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen-Shannon divergence in bits between distributions on the last axis.

    Inputs need not be normalised (each is divided by its sum). 0 for identical
    distributions, 1 for disjoint supports.

    Examples
    --------
    >>> float(js_divergence(np.array([1., 0.]), np.array([0., 1.])))
    1.0
    >>> float(js_divergence(np.array([.5, .5]), np.array([.5, .5])))
    0.0
    """
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    p = p / p.sum(axis=-1, keepdims=True)
    q = q / q.sum(axis=-1, keepdims=True)
    m = (p + q) / 2.0

    def _kl(a: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(a > 0, a * np.log2(np.where(a > 0, a, 1.0) / np.where(m > 0, m, 1.0)), 0.0)
        return terms.sum(axis=-1)

    # clip the tiny negative values rounding can leave
    return np.clip(0.5 * _kl(p) + 0.5 * _kl(q), 0.0, 1.0)


def weighted_correlation(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted Pearson correlation along the last axis; entries with ``w == 0`` are ignored.

    NaN where fewer than two entries carry weight or either variable is constant.

    Examples
    --------
    >>> float(weighted_correlation(np.array([1., 2., 3.]), np.array([2., 4., 6.]), np.ones(3)))
    1.0
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    w = np.asarray(w, dtype=float)
    ok = (w > 0) & np.isfinite(x) & np.isfinite(y)
    w = np.where(ok, w, 0.0)
    x = np.where(ok, x, 0.0)
    y = np.where(ok, y, 0.0)
    sw = w.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = (w * x).sum(axis=-1, keepdims=True) / sw
        my = (w * y).sum(axis=-1, keepdims=True) / sw
        dx = np.where(ok, x - mx, 0.0)
        dy = np.where(ok, y - my, 0.0)
        cov = (w * dx * dy).sum(axis=-1)
        vx = (w * dx * dx).sum(axis=-1)
        vy = (w * dy * dy).sum(axis=-1)
        denom = np.sqrt(vx * vy)
        # a constant variable leaves rounding-level variance: treat as undefined, not as +-1
        scale = np.sqrt((w * x * x).sum(axis=-1) * (w * y * y).sum(axis=-1))
        out = np.where((ok.sum(axis=-1) >= 2) & (denom > 1e-12 * np.maximum(scale, 1e-300)),
                       cov / np.where(denom > 0, denom, 1.0), np.nan)
    return np.clip(out, -1.0, 1.0)


# ----------------------------------------------------------------------------- labels
def labels_from_table(runs: pl.DataFrame, table: pl.DataFrame, *, column: str = "strategy",
                      source: str = "labels") -> np.ndarray:
    """Align a label table (``arm, question_id, sample_id, <column>``) to the rows of ``runs``.

    Rows of ``table`` that match no row of ``runs`` are ignored; a key listed twice with the
    same label counts once.

    Raises
    ------
    InputError
        When a key or the label column is missing, a row of ``runs`` has no label, or a key
        has two different labels.
    """
    for name in (*KEY_COLUMNS, column):
        if name not in table.columns:
            raise InputError(f"label table lacks column `{name}`", source=source, field=name)
    dtype = table.schema[column]
    if not (dtype.is_integer() or dtype in (pl.String, pl.Categorical, pl.Boolean)):
        raise InputError(f"label column `{column}` has type {dtype}; expected integers or strings",
                         source=source, field=column)
    keys = list(KEY_COLUMNS)
    # keys compared as text and integers, whatever the file stored them as (a categorical or an
    # integer `arm` would make the join fail on the column types)
    left = runs.select(keys).with_row_index("_row").with_columns(
        pl.col("arm").cast(pl.String), pl.col("question_id").cast(pl.String), pl.col("sample_id").cast(pl.Int64))
    try:
        right = table.select(*keys, column).with_columns(
            pl.col("arm").cast(pl.String), pl.col("question_id").cast(pl.String), pl.col("sample_id").cast(pl.Int64)
        ).unique(maintain_order=True)
    except pl.exceptions.PolarsError:
        raise InputError("label table's `sample_id` is not an integer column", source=source,
                         field="sample_id") from None
    if right.select(keys).is_duplicated().any():  # one trajectory, two different labels: refuse to pick
        row = right.filter(right.select(keys).is_duplicated()).row(0, named=True)
        raise InputError(
            f"trajectory (arm={row['arm']!r}, question_id={row['question_id']!r}, sample_id={row['sample_id']!r}) "
            f"has conflicting labels in column `{column}`", source=source, field=column)
    joined = left.join(right, on=keys, how="left").sort("_row")
    missing = joined[column].is_null()
    if missing.any():
        row = joined.filter(missing).row(0, named=True)
        raise InputError(
            f"no label for trajectory (arm={row['arm']!r}, question_id={row['question_id']!r}, "
            f"sample_id={row['sample_id']!r}) in column `{column}`", source=source, field=column)
    return joined[column].to_numpy()


# ----------------------------------------------------------------------------- queries
def query_sequence_keys(runs: pl.DataFrame) -> pl.Series:
    """One text key per trajectory: its queries, lower-cased and white-space-collapsed, in order.

    Two trajectories share a key when they issued the same queries in the same order; a
    trajectory without tool calls has the empty key.
    """
    normalised = (pl.element().struct.field("query").fill_null("").str.to_lowercase()
                  .str.replace_all(r"\s+", " ").str.strip_chars())
    return runs.select(pl.col("steps").list.eval(normalised).list.join(_SEP).fill_null("")
                       .alias("query_sequence")).to_series()


# ----------------------------------------------------------------------------- result
WEIGHTINGS: tuple[str, ...] = choices(Weighting)
Strata = Literal["question", "pooled"]
STRATA: tuple[str, ...] = choices(Strata)


@dataclass(frozen=True, repr=False)
class Reweighting(Result):
    """Result of :func:`reweighting`. Floats are point estimates; ``*_ci`` are (low, high).

    ``js_divergence`` is the bias-corrected divergence (plug-in minus the mean of the
    within-question permutation null, so about 0 for identical policies and possibly
    slightly negative); ``js_divergence_plugin`` is the plug-in value of the reported shares.
    ``detectable`` holds, for ``total``, ``composition`` and ``within``, the smallest true
    effect the design detects with probability 0.8 at the interval's level
    (:func:`mechanism.core.resample.detectable_effect`). ``weighting`` is ``"question"`` (the
    design rule) or ``"trajectory"`` (pooled, on request). ``strategy_ci`` is the joint level
    of the per-strategy bands (simultaneous, max-|t| bootstrap, over the strategies).
    """

    base: str
    treated: str
    ci: float | None
    n_questions: int
    n_base: int
    n_treated: int
    accuracy_base: float
    accuracy_treated: float
    total: float
    composition: float
    within: float
    total_ci: tuple[float, float]
    composition_ci: tuple[float, float]
    within_ci: tuple[float, float]
    js_divergence: float
    js_divergence_ci: tuple[float, float]
    permutation_p: float
    n_permutations: int
    success_alignment: float
    success_alignment_ci: tuple[float, float]
    shared_mass: float
    shared_mass_ci: tuple[float, float]
    strategies: pl.DataFrame
    query_sequences: pl.DataFrame | None = None
    neighbours: pl.DataFrame | None = None
    notes: tuple[str, ...] = ()
    replicates: dict[str, np.ndarray] = field(default_factory=dict, repr=False, compare=False)
    weighting: Weighting = "question"
    js_divergence_plugin: float = math.nan
    js_null_mean: float = math.nan
    detectable: dict[str, float] = field(default_factory=dict)
    strategy_ci: float | None = None
    strata: Strata = "question"
    by_category: pl.DataFrame | None = None
    composition_bounds: tuple[float, float] = (math.nan, math.nan)
    within_bounds: tuple[float, float] = (math.nan, math.nan)
    bounds_ci: dict[str, tuple[float, float]] = field(default_factory=dict)
    one_arm_mass: dict[str, float] = field(default_factory=dict)

    key_columns: ClassVar[dict[str, pl.DataType]] = {
        "base": pl.String(), "treated": pl.String(), "arm": pl.String(), "weighting": pl.String(),
        "strata": pl.String()}

    @property
    def alignment(self) -> float:
        """Alias of :attr:`success_alignment` (the correlation of the log share ratio with base
        success; :func:`mechanism.integration`'s ``alignment_integration`` is another quantity)."""
        return self.success_alignment

    @property
    def alignment_ci(self) -> tuple[float, float]:
        """Alias of :attr:`success_alignment_ci`."""
        return self.success_alignment_ci

    def _estimates(self) -> pl.DataFrame:
        """One row per headline quantity. ``arm`` names the arm a per-arm quantity describes
        (null for a comparison); ``weighting`` and ``strata`` say how the comparison was made.
        ``detectable`` (for the split's three parts) is the smallest effect the design detects
        with probability 0.8."""
        rows: list[tuple[str | None, str, float, float, float, float]] = []

        def add(name: str, value: float | None, interval: tuple[float, float] | None = None,
                detectable: float | None = None, *, arm: str | None = None) -> None:
            lo, hi = interval if interval is not None else (math.nan, math.nan)
            rows.append((arm, name, _f(value), _f(lo), _f(hi), _f(detectable)))

        acc_b = self.replicates.get("accuracy_base")
        acc_t = self.replicates.get("accuracy_treated")
        add("accuracy", self.accuracy_base, self._interval(acc_b), arm=self.base)
        add("accuracy", self.accuracy_treated, self._interval(acc_t), arm=self.treated)
        add("total", self.total, self.total_ci, self.detectable.get("total"))
        add("composition", self.composition, self.composition_ci, self.detectable.get("composition"))
        add("within", self.within, self.within_ci, self.detectable.get("within"))
        add("js_divergence_bits", self.js_divergence, self.js_divergence_ci)
        add("js_divergence_plugin_bits", self.js_divergence_plugin)
        add("js_divergence_null_mean_bits", self.js_null_mean)
        add("permutation_p", self.permutation_p)
        add("success_alignment", self.success_alignment, self.success_alignment_ci)
        for name, pair in (("composition", self.composition_bounds), ("within", self.within_bounds)):
            if np.isfinite(pair[0]):  # assumption-free bounds: every one-arm cell at 0 and at 1
                add(f"{name}_bound_low", pair[0], self.bounds_ci.get(f"{name}_low"))
                add(f"{name}_bound_high", pair[1], self.bounds_ci.get(f"{name}_high"))
        for arm, mass in self.one_arm_mass.items():
            add("one_arm_mass", mass, arm=arm)
        add("shared_mass", self.shared_mass, self.shared_mass_ci)
        if self.query_sequences is not None:
            for row in self.query_sequences.iter_rows(named=True):
                add("unique_query_sequences", row["unique_per_problem"],
                    (row["unique_per_problem_ci_low"], row["unique_per_problem_ci_high"]), arm=row["arm"])
            for row in self.query_sequences.iter_rows(named=True):
                add("unique_query_sequences_at_common_n", row["unique_at_common_n"],
                    (row["unique_at_common_n_ci_low"], row["unique_at_common_n_ci_high"]), arm=row["arm"])
            for row in self.query_sequences.iter_rows(named=True):
                if row["arm"] == self.treated:
                    add("query_overlap_with_base", row["overlap_with_base"],
                        (row["overlap_with_base_ci_low"], row["overlap_with_base_ci_high"]), arm=row["arm"])
                    add("query_overlap_distinct", row["overlap_distinct"],
                        (row["overlap_distinct_ci_low"], row["overlap_distinct_ci_high"]), arm=row["arm"])
                    add("query_overlap_with_base_at_common_n", row["overlap_at_common_n"],
                        (row["overlap_at_common_n_ci_low"], row["overlap_at_common_n_ci_high"]), arm=row["arm"])
        if self.neighbours is not None:
            for row in self.neighbours.iter_rows(named=True):
                add(row["quantity"], row["estimate"], (row["ci_low"], row["ci_high"]))
        frame = pl.DataFrame(rows, schema={"arm": pl.String, "quantity": pl.String, "estimate": pl.Float64,
                                           "ci_low": pl.Float64, "ci_high": pl.Float64, "detectable": pl.Float64},
                             orient="row")
        return frame.with_columns(base=pl.lit(self.base), treated=pl.lit(self.treated),
                                  weighting=pl.lit(self.weighting), strata=pl.lit(self.strata))

    def _interval(self, reps: np.ndarray | None) -> tuple[float, float] | None:
        if reps is None or self.ci is None:
            return None
        lo, hi = percentile_interval(reps, self.ci)
        return float(lo), float(hi)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict: scalars, intervals as lists, tables as lists of rows."""
        out: dict[str, Any] = {}
        for name in ("base", "treated", "ci", "weighting", "n_questions", "n_base", "n_treated", "accuracy_base",
                     "accuracy_treated", "total", "composition", "within", "js_divergence",
                     "js_divergence_plugin", "js_null_mean", "permutation_p", "n_permutations", "success_alignment",
                     "shared_mass", "strategy_ci", "strata"):
            value = getattr(self, name)
            out[name] = _json_float(value) if isinstance(value, float) else value
        for name in ("total_ci", "composition_ci", "within_ci", "js_divergence_ci", "success_alignment_ci",
                     "shared_mass_ci", "composition_bounds", "within_bounds"):
            out[name] = [_json_float(v) for v in getattr(self, name)]
        out["alignment"], out["alignment_ci"] = out["success_alignment"], out["success_alignment_ci"]  # old name
        out["bounds_ci"] = {k: [_json_float(v) for v in pair] for k, pair in self.bounds_ci.items()}
        out["one_arm_mass"] = {k: _json_float(v) for k, v in self.one_arm_mass.items()}
        out["detectable"] = {k: _json_float(v) for k, v in self.detectable.items()}
        for name in ("strategies", "query_sequences", "neighbours"):
            table = getattr(self, name)
            out[name] = None if table is None else [
                {k: _json_float(v) if isinstance(v, float) else v for k, v in row.items()}
                for row in table.iter_rows(named=True)]
        out["notes"] = list(self.notes)
        return out

    # -- the result protocol (mechanism.core.results): summary(), tables(), a one-line repr
    def tables(self) -> dict[str, pl.DataFrame]:
        """Every table by a file-friendly name."""
        out = {"estimates": self.to_frame(), "strategies": self.strategies}
        if self.by_category is not None:
            out["by_category"] = self.by_category
        out.update({n: t for n, t in (("query_sequences", self.query_sequences),
                                      ("neighbours", self.neighbours)) if t is not None})
        return out

    def _summary_title(self) -> str:
        return f"Reweighting: {self.treated} vs {self.base}"

    def _summary_lines(self) -> list[str]:
        return [line.strip() for line in self.lines()[1:]]

    def lines(self, *, indent: str = "") -> list[str]:
        """The findings in words, one statement per line (the first names the comparison)."""
        return reweighting_lines(self, indent=indent)

    def verdict(self) -> str:
        """One line: the accuracy change split into composition and within, with intervals."""
        return reweighting_verdict(self)

    def _headline(self) -> str:
        return (f"{self.treated} vs {self.base}, total {self.total:+.3f} = composition {self.composition:+.3f}"
                f" + within {self.within:+.3f}")


def _f(value: Any) -> float:
    return math.nan if value is None else float(value)


def _json_float(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


# ----------------------------------------------------------------------------- main entry
def reweighting(runs: pl.DataFrame, labels: Any, *, base: str, treated: str, ci: float | None = 0.95,
                n_boot: int = 1000, random_state: RandomState = 0,
                n_permutations: int = 1000, coordinates: np.ndarray | None = None,
                progress: bool | None = False, weighting: Weighting = "question",
                strata: Strata = "question", by: str | None = None,
                allow_few_shared: bool = False) -> Reweighting:
    """Split the treated arm's accuracy gain into strategy reweighting and execution.

    Parameters
    ----------
    runs
        Canonical trajectory table (needs ``arm``, ``question_id``, ``correct``; ``steps``
        for the query-sequence statistics).
    labels
        One strategy label per row of ``runs`` (integers or strings); ``-1`` marks an
        outlier, which is kept as its own stratum in the split and left out of alignment
        and shared mass.
    base, treated
        The arms compared.
    ci
        Confidence level of the bootstrap intervals; ``None`` skips the bootstrap.
        Per-strategy intervals are simultaneous bands over the strategies (max-|t| bootstrap).
    n_boot
        Bootstrap replicates (resampling questions, both arms together).
    random_state
        Seed (int, ``numpy.random.Generator`` or None) of the bootstrap and the permutation
        test; turned into one integer once (:func:`mechanism.core.resample.resolve_seed`), so every
        interval of the result comes from the same question resamples.
    n_permutations
        Permutations of arm labels within questions for the test of equal strategy
        distributions (statistic: Jensen-Shannon divergence); they also give the null the
        JS divergence is bias-corrected against. 0 skips both.
    coordinates
        Optional ``(n_rows, d)`` positions of the rows in strategy space (e.g.
        ``StrategySpace.coordinates(runs)``); adds nearest-base-neighbour distances.
    progress
        Show a progress bar for the permutation test.
    weighting
        ``"question"`` (default, the design rule): every question weighs the same within an
        arm, each trajectory counting ``1 / (samples of its arm on its question)``.
        ``"trajectory"``: pool trajectories (questions with more samples weigh more); the
        ``to_frame()``'s ``weighting`` column says which was used.
    strata
        ``"question"`` (default): the Kitagawa split over question x strategy strata, so
        that using a strategy on easier questions is composition, not execution (see the
        module's Conventions). ``"pooled"``: over strategies alone, success pooled over
        questions; ``to_frame()``'s ``strata`` column says which was used.
    by
        A task-type column (e.g. ``"category"``): the result also holds each category's
        summary beside the pooled one (``by_category``, key column ``category``), same seed.
    allow_few_shared
        Compare arms that share fewer than half of their questions; by default that is refused
        (:func:`mechanism.core.schema.refuse_few_shared`, an :class:`~mechanism.core.errors.InputError`
        naming ``question_key=``).

    Returns
    -------
    Reweighting

    Examples
    --------
    >>> import polars as pl
    >>> runs = pl.DataFrame({"arm": ["base"] * 4 + ["rl"] * 4, "question_id": ["q1", "q1", "q2", "q2"] * 2,
    ...                      "correct": [True, False, False, False, True, True, False, True]})
    >>> rw = reweighting(runs, ["a", "b", "b", "b", "a", "a", "b", "a"], base="base", treated="rl",
    ...                  n_boot=50, n_permutations=0)
    >>> rw.total, round(rw.composition + rw.within, 12)
    (0.5, 0.5)
    """
    validate(runs, required=("arm", "question_id", "correct"))
    values = check_labels(runs, labels)
    check_choice(weighting, Weighting, field="weighting")
    check_choice(strata, Strata, field="strata")
    ci = check_ci(ci)
    check_seed(random_state)  # one-line error for anything but a seed; the draws come from one seed
    check_pair(runs["arm"].unique().to_list(), base, [treated])
    check_counts(n_boot=n_boot, n_permutations=n_permutations)
    coordinates = _check_coordinates(runs, coordinates)
    seed = resolve_seed(random_state)  # one seed for every stage: paired intervals
    opts = dict(base=base, treated=treated, ci=ci, n_boot=n_boot, random_state=seed,
                n_permutations=n_permutations, progress=progress, weighting=weighting, strata=strata,
                allow_few_shared=allow_few_shared)
    if by is not None:
        return _reweighting_by_category(runs, values, coordinates, by, opts)
    # after the task-type split: its pooled call checks the pooled runs once, each category its own
    shared_questions(runs, [base, treated], what="reweighting", allow_few=allow_few_shared)
    pair = _pair_rows(runs, values, base, treated)
    notes = [*pair.notes, *design_notes(pair.counts.sum(axis=-1), base, treated, weighting)]
    point, reps, weights = _split_replicates(pair, weighting, strata, ci, n_boot, seed, notes)
    strategies_table = _strategies_with_bands(pair, point, reps, ci, notes)
    js, js_ci, perm_p, null = _js_and_permutations(pair, point, reps, ci, n_permutations, seed, progress, weighting,
                                                   notes)
    query_table, neighbours = _sequences_and_neighbours(pair, coordinates, ci, n_boot, seed, weighting, weights,
                                                        notes)
    notes.extend(small_sample_notes(pair.n_q, pair.counts.sum(axis=-1)))
    interval = functools.partial(_interval, point, reps, level=ci, n_q=pair.n_q)
    total_ci, comp_ci, within_ci = interval("total"), interval("composition_total"), interval("within_total")
    detectable = {}
    if ci is not None:
        detectable = {name: float(detectable_effect(*iv, ci)) for name, iv in
                      (("total", total_ci), ("composition", comp_ci), ("within", within_ci))}
    return Reweighting(
        base=base, treated=treated, ci=ci, n_questions=pair.n_q,
        n_base=int((~pair.is_t).sum()), n_treated=int(pair.is_t.sum()),
        accuracy_base=float(point["accuracy_base"]), accuracy_treated=float(point["accuracy_treated"]),
        total=float(point["total"]), composition=float(point["composition_total"]),
        within=float(point["within_total"]),
        total_ci=total_ci, composition_ci=comp_ci, within_ci=within_ci,
        js_divergence=js, js_divergence_ci=js_ci,
        permutation_p=float(perm_p), n_permutations=int(n_permutations),
        success_alignment=float(point["alignment"]), success_alignment_ci=interval("alignment"),
        shared_mass=float(point["shared_mass"]), shared_mass_ci=interval("shared_mass"),
        strategies=strategies_table, query_sequences=query_table, neighbours=neighbours,
        notes=tuple(notes), replicates=reps, weighting=weighting, js_divergence_plugin=float(point["js"]),
        js_null_mean=float(null.mean()) if null.size else math.nan, detectable=detectable,
        strategy_ci=ci, strata=strata, **_bounds(point, reps, ci, pair.n_q, base, treated),
    )


# ----------------------------------------------------------------------------- reweighting's stages
def _check_coordinates(runs: pl.DataFrame, coordinates: np.ndarray | None) -> np.ndarray | None:
    if coordinates is None:
        return None
    coordinates = np.asarray(coordinates, dtype=float)
    if coordinates.ndim != 2 or coordinates.shape[0] != runs.height:
        raise InputError(f"`coordinates` must have shape (n_rows={runs.height}, d), "
                         f"got {coordinates.shape}", field="coordinates")
    return coordinates


def _reweighting_by_category(runs: pl.DataFrame, values: np.ndarray, coordinates: np.ndarray | None, by: str,
                             opts: dict[str, Any]) -> Reweighting:
    """The pooled result with each category's long table beside it (same seed)."""
    pooled = reweighting(runs, values, coordinates=coordinates, **opts)
    table, extra = by_category(runs, by, pooled, lambda mask: reweighting(
        runs.filter(pl.Series(mask)), values[mask],
        coordinates=None if coordinates is None else coordinates[mask], **opts))
    return dataclasses.replace(pooled, by_category=table, notes=pooled.notes + tuple(extra))


@dataclass(frozen=True)
class _Pair:
    """The rows of one base/treated pair on the questions both answered, as indices and tallies."""

    base: str
    treated: str
    frame: pl.DataFrame        # the pair's rows of runs
    rows: np.ndarray           # their positions in runs
    strategies: np.ndarray     # the distinct labels
    label_idx: np.ndarray      # per row: index into strategies
    q_idx: np.ndarray          # per row: index of its question
    is_t: np.ndarray           # per row: treated or base
    counts: np.ndarray         # (2, Q, S) trajectories per arm, question, strategy (arm 0 = base)
    wins: np.ndarray           # (2, Q, S) successes
    notes: tuple[str, ...]     # the questions left out

    @property
    def n_q(self) -> int:
        return int(self.counts.shape[1])

    @property
    def outlier(self) -> np.ndarray:
        return np.array([is_outlier(s) for s in self.strategies], dtype=bool)


def _pair_rows(runs: pl.DataFrame, values: np.ndarray, base: str, treated: str) -> _Pair:
    """The pair's rows on its shared questions and their per (arm, question, strategy) tallies:
    every statistic of the comparison is a function of these."""
    notes: list[str] = []
    in_pair = (runs["arm"] == base) | (runs["arm"] == treated)
    pair = runs.with_columns(pl.Series("_row", np.arange(runs.height))).filter(in_pair)
    qb = set(pair.filter(pl.col("arm") == base)["question_id"].to_list())
    qt = set(pair.filter(pl.col("arm") == treated)["question_id"].to_list())
    common = sorted(qb & qt)
    if not common:
        raise InputError(f"arms {base!r} and {treated!r} share no `question_id`", field="question_id")
    if len(common) < len(qb | qt):
        notes.append(f"{len(qb | qt) - len(common)} question(s) answered by only one arm were left out "
                     f"({len(qb - qt)} base-only, {len(qt - qb)} treated-only)")
    pair = pair.filter(pl.col("question_id").is_in(common))
    rows = pair["_row"].to_numpy()
    strategies, label_idx = np.unique(values[rows], return_inverse=True)
    q_index = {q: i for i, q in enumerate(common)}
    q_idx = np.fromiter((q_index[q] for q in pair["question_id"].to_list()), dtype=np.int64, count=pair.height)
    is_t = (pair["arm"] == treated).to_numpy()
    correct = pair["correct"].to_numpy().astype(float)
    counts = np.zeros((2, len(common), len(strategies)))
    wins = np.zeros((2, len(common), len(strategies)))
    np.add.at(counts, (is_t.astype(int), q_idx, label_idx), 1.0)
    np.add.at(wins, (is_t.astype(int), q_idx, label_idx), correct)
    return _Pair(base=base, treated=treated, frame=pair, rows=rows, strategies=strategies, label_idx=label_idx,
                 q_idx=q_idx, is_t=is_t, counts=counts, wins=wins, notes=tuple(notes))


def _split_replicates(pair: _Pair, weighting: Weighting, strata: Strata, ci: float | None, n_boot: int,
                      seed: int | None, notes: list[str]
                      ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray | None]:
    """The share statistics and the split, at the point and in every bootstrap replicate.

    Returns the point values, the replicates (empty without a bootstrap) and the question draws
    ``(n_boot, Q)``, drawn once: the split, the query sequences and the neighbours share them.
    """
    wn, wc = weighted_tallies(pair.counts, pair.wins, weighting)
    point = _statistics(wn.sum(axis=1)[None], wc.sum(axis=1)[None], pair.outlier)
    point = {k: v[0] for k, v in point.items()}
    reps: dict[str, np.ndarray] = {}
    weights = None
    if ci is not None and n_boot > 0:
        weights = question_bootstrap_weights(pair.n_q, n_boot, stream(seed, "bootstrap")).astype(float)
        reps = _statistics(np.einsum("bq,aqs->bas", weights, wn), np.einsum("bq,aqs->bas", weights, wc),
                           pair.outlier)
    if strata == "pooled":
        notes.append("composition and within pool each strategy's success over questions "
                     "(strata='pooled'): within then also holds the change in which questions each strategy "
                     "is used on")
        return point, reps, weights
    rates = cell_rates(pair.counts, pair.wins)  # the within-arm model of the cells one arm never used
    point.update({k: v[0] for k, v in within_question_split(wn, wc, np.ones((1, pair.n_q)), rates=rates).items()})
    if reps:
        reps.update(within_question_split(wn, wc, weights, rates=rates))
    notes.append("composition and within are computed on question x strategy strata: a strategy used on "
                 "easier questions counts as composition, not execution")
    notes.append(one_arm_note(float(point["one_arm_mass_base"]), float(point["one_arm_mass_treated"]),
                              pair.base, pair.treated, (float(point["composition_low_total"]),
                                              float(point["composition_high_total"]))))
    return point, reps, weights


def _interval(point: dict[str, np.ndarray], reps: dict[str, np.ndarray], name: str, *, level: float | None,
              n_q: int) -> tuple[float, float]:
    """The interval of one statistic: the split's parts by the small-sample rule
    (``resample.split_interval``), every other one by percentiles; NaN without replicates."""
    if not reps:
        return math.nan, math.nan
    if name in SPLIT_PARTS:
        lo, hi = split_interval(point[name], reps[name], level, n_q)
    else:
        lo, hi = percentile_interval(reps[name], level)
    return float(lo), float(hi)


def _strategies_with_bands(pair: _Pair, point: dict[str, np.ndarray], reps: dict[str, np.ndarray],
                           ci: float | None, notes: list[str]) -> pl.DataFrame:
    """The per-strategy table; its rows hold together at ``ci`` (simultaneous bands, not separate
    intervals)."""
    bands = strategy_bands(point, reps, ci, families=STRATEGY_FAMILIES, n_questions=pair.n_q)
    table = _strategy_table(pair.strategies, pair.counts, point, lambda name: bands[name], ci)
    n_used = int(((pair.counts[0].sum(axis=0) > 0) | (pair.counts[1].sum(axis=0) > 0)).sum())
    if reps and n_used > 1:
        notes.append(f"per-strategy intervals are simultaneous bands (max-|t| bootstrap) at {ci:g} over the "
                     f"{n_used} strategies: each of share_base, share_treated, success_base and success_treated "
                     "holds together over the strategies, and composition and within hold together as one family")
    return table


def _js_and_permutations(pair: _Pair, point: dict[str, np.ndarray], reps: dict[str, np.ndarray],
                         ci: float | None, n_permutations: int, seed: int | None, progress: bool | None,
                         weighting: Weighting, notes: list[str]
                         ) -> tuple[float, tuple[float, float], float, np.ndarray]:
    """The bias-corrected JS divergence, its interval, the permutation p-value and the null."""
    perm_p, null = math.nan, np.empty(0)
    if n_permutations > 0:
        observed, null = _permutation_null(pair.q_idx, pair.label_idx, pair.is_t, n_permutations=n_permutations,
                                           random_state=seed, progress=progress, weighting=weighting)
        perm_p = _permutation_p(observed, null)
    js, js_ci = _js_calibrated(float(point["js"]), reps.get("js"), null, ci)
    if null.size == 0:
        notes.append("JS divergence not bias-corrected (no permutations): the plug-in value is above 0 "
                     "even for identical policies")
    return js, js_ci, perm_p, null


def _sequences_and_neighbours(pair: _Pair, coordinates: np.ndarray | None, ci: float | None, n_boot: int,
                              seed: int | None, weighting: Weighting, weights: np.ndarray | None,
                              notes: list[str]) -> tuple[pl.DataFrame | None, pl.DataFrame | None]:
    """The query-sequence table (with ``steps``) and the nearest-neighbour distances (with
    ``coordinates``), on the split's question draws."""
    query_table = None
    if "steps" in pair.frame.columns:
        query_table = _query_sequences(pair.frame, pair.base, pair.treated, pair.q_idx, pair.n_q, ci, n_boot, seed,
                                       weighting, weights=weights)
    else:
        notes.append("no `steps` column: query-sequence statistics skipped")
    neighbours = None
    if coordinates is not None:
        neighbours = _neighbour_distances(coordinates[pair.rows], pair.is_t, pair.q_idx, pair.n_q, ci, n_boot,
                                          seed, weights=weights)
    return query_table, neighbours


def _bounds(point: dict[str, np.ndarray], reps: dict[str, np.ndarray], ci: float | None, n_q: int, base: str,
            treated: str) -> dict[str, Any]:
    """The assumption-free bounds of the split (question x strategy strata only), each with its
    own interval by the split's rule (the outer ends hold the bounds' range), and the one-arm mass."""
    if "composition_low_total" not in point:
        return {}
    bounds: dict[str, Any] = {
        "composition_bounds": (float(point["composition_low_total"]), float(point["composition_high_total"])),
        "within_bounds": (float(point["within_low_total"]), float(point["within_high_total"])),
        "one_arm_mass": {base: float(point["one_arm_mass_base"]), treated: float(point["one_arm_mass_treated"])}}
    if reps:
        bounds["bounds_ci"] = {f"{part}_{end}": tuple(float(v) for v in split_interval(
            point[f"{part}_{end}_total"], reps[f"{part}_{end}_total"], ci, n_q))
            for part in ("composition", "within") for end in ("low", "high")}
    return bounds


#: The split's parts: their intervals follow one small-sample rule (``resample.split_interval``).
SPLIT_PARTS = frozenset({"total", "composition_total", "within_total"})
#: Families of per-strategy rows meant to be read together: each gets one simultaneous band.
STRATEGY_FAMILIES: tuple[tuple[str, ...], ...] = (("share_base",), ("share_treated",), ("rate_base",),
                                                  ("rate_treated",), ("composition", "within"))


def strategy_bands(point: dict[str, np.ndarray], reps: dict[str, np.ndarray], ci: float | None,
                   families: Sequence[Sequence[str]], *, n_questions: int | None = None
                   ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Simultaneous (max-|t| bootstrap) bands for each family of per-strategy arrays.

    ``point[name]`` is ``(S,)``, ``reps[name]`` ``(B, S)``; the members of a family (several
    names) share one critical value (:func:`mechanism.core.resample.simultaneous_band`, calibrated
    for ``n_questions`` resampled questions). Without replicates every band is NaN.
    """
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for family in families:
        est = np.stack([np.asarray(point[name], dtype=float) for name in family])
        if not reps or ci is None:
            for name in family:
                out[name] = (np.full(est.shape[1], np.nan), np.full(est.shape[1], np.nan))
            continue
        rep = np.stack([np.asarray(reps[name], dtype=float) for name in family], axis=1)  # (B, F, S)
        low, high, _ = simultaneous_band(est, rep, ci, n_questions=n_questions)
        for i, name in enumerate(family):
            out[name] = (low[i], high[i])
    return out


def within_question_split(wn: np.ndarray, wc: np.ndarray, weights: np.ndarray, *,
                          rates: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Kitagawa's split over question x strategy strata, for every row of question ``weights``.

    Parameters
    ----------
    wn, wc
        ``(2, Q, S)`` weighted trajectory and success tallies (arm 0 = base), as
        :func:`weighted_tallies` gives them.
    weights
        ``(B, Q)`` how often each question is drawn (ones for the point estimate).
    rates
        ``(2, Q, S)`` each arm's modelled success per cell (:func:`cell_rates`), used where the
        arm has no trajectory in a cell the other arm used. ``None``: fitted here from ``wn``,
        ``wc`` (right for raw counts; callers with question-weighted tallies pass the rates of
        the raw counts, since the model's ridge is weighed against counts).

    Returns
    -------
    dict
        ``composition`` and ``within`` per strategy ``(B, S)`` (each the sum of its strata
        over questions) and their totals ``(B,)``; the assumption-free bounds
        ``composition_low_total`` / ``composition_high_total`` and ``within_low_total`` /
        ``within_high_total`` (every one-arm cell valued at 0 and at 1); and
        ``one_arm_mass_base`` / ``one_arm_mass_treated``, each arm's share of its
        trajectories in cells the other arm never used.

    Notes
    -----
    A stratum's success rate does not change when its question is drawn again, only its
    share does: ``p_a(q,s) = w_q wn_a(q,s) / sum_q' w_q' wn_a(q')``. So every replicate is
    a matrix product with per-stratum terms computed once, never a ``(B, Q, S)`` array.
    A cell one arm never used is valued at that arm's modelled rate there (fitted once, on
    the whole data; a replicate keeps each question's fitted values as it keeps its observed
    rates). The bounds need no model: composition is linear in each unobserved rate.

    Examples
    --------
    >>> wn = np.array([[[.5, .5], [.5, .5]], [[1., 0.], [0., 1.]]])   # base mixes, rl separates
    >>> wc = np.array([[[.45, .45], [.05, .05]], [[.9, 0.], [0., .1]]])  # success by question only
    >>> out = within_question_split(wn, wc, np.ones((1, 2)))
    >>> [round(float(out[k][0]), 2) + 0.0 for k in ("composition_total", "within_total")]
    [0.0, 0.0]
    >>> bool(out["composition_low_total"][0] <= out["composition_total"][0] <= out["composition_high_total"][0])
    True
    """
    n_b, n_t = np.asarray(wn[0], dtype=float), np.asarray(wn[1], dtype=float)
    if rates is None:
        rates = cell_rates(wn, wc)
    with np.errstate(invalid="ignore", divide="ignore"):
        r_b = np.where(n_b > 0, wc[0] / np.where(n_b > 0, n_b, 1.0), np.nan)
        r_t = np.where(n_t > 0, wc[1] / np.where(n_t > 0, n_t, 1.0), np.nan)
    only_b = (n_b > 0) & (n_t == 0)   # treated never used the cell: its rate is modelled
    only_t = (n_t > 0) & (n_b == 0)
    rb = np.where(n_b > 0, r_b, np.where(only_t, rates[0], 0.0))
    rt = np.where(n_t > 0, r_t, np.where(only_b, rates[1], 0.0))
    w = np.asarray(weights, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        tot_b = (w @ n_b.sum(axis=1))[:, None]
        tot_t = (w @ n_t.sum(axis=1))[:, None]

        def comp(rt_: np.ndarray, rb_: np.ndarray) -> np.ndarray:
            mean_rate = (rt_ + rb_) / 2.0
            return (w @ (n_t * mean_rate)) / tot_t - (w @ (n_b * mean_rate)) / tot_b

        composition = comp(rt, rb)
        within = ((w @ (n_t * (rt - rb))) / tot_t + (w @ (n_b * (rt - rb))) / tot_b) / 2.0
        # Manski: composition falls as an unobserved treated rate rises, and rises with an
        # unobserved base rate; within is total minus composition
        low = comp(np.where(only_b, 1.0, rt), np.where(only_t, 0.0, rb)).sum(axis=-1)
        high = comp(np.where(only_b, 0.0, rt), np.where(only_t, 1.0, rb)).sum(axis=-1)
        total = composition.sum(axis=-1) + within.sum(axis=-1)
        mass_b = (w @ (n_b * only_b)).sum(axis=-1) / tot_b[:, 0]
        mass_t = (w @ (n_t * only_t)).sum(axis=-1) / tot_t[:, 0]
    return {"composition": composition, "within": within,
            "composition_total": composition.sum(axis=-1), "within_total": within.sum(axis=-1),
            "composition_low_total": low, "composition_high_total": high,
            "within_low_total": total - high, "within_high_total": total - low,
            "one_arm_mass_base": mass_b, "one_arm_mass_treated": mass_t}


def weighted_tallies(counts: np.ndarray, wins: np.ndarray,
                     weighting: Weighting = "question") -> tuple[np.ndarray, np.ndarray]:
    """Per (arm, question, strategy) trajectory and success tallies as the split uses them.

    ``"question"``: each (arm, question) divided by its samples
    (:func:`mechanism.core.resample.question_weighted`), so sums over questions are sums of
    per-question shares; ``"trajectory"``: the raw counts.
    """
    if weighting == "trajectory":
        return np.asarray(counts, dtype=float), np.asarray(wins, dtype=float)
    return question_weighted(counts, wins)


def design_notes(per_question: np.ndarray, base: str, treated: str, weighting: Weighting) -> list[str]:
    """Notes on an unbalanced design from samples per (arm, question), shape ``(2, Q)``."""
    n_b, n_t = per_question[0], per_question[1]
    if np.array_equal(n_b, n_t) and n_b.min() == n_b.max():
        return []
    spread = (f"{base!r} {int(n_b.min())}-{int(n_b.max())}, {treated!r} {int(n_t.min())}-{int(n_t.max())} "
              "samples per question")
    if weighting == "question":
        return [f"sample counts per question differ ({spread}): every question weighs the same within "
                "each arm (each trajectory counts 1 / samples of its arm on its question)"]
    varies = n_b.min() != n_b.max() or n_t.min() != n_t.max()
    return [f"trajectory-pooled (weighting='trajectory') with unequal sample counts ({spread}): "
            + ("questions sampled more often weigh more, so differences can come from the design, not the "
               "policies; the default weighting='question' removes this" if varies else
               "each arm's questions still weigh alike, since its samples per question are constant")]


def _js_calibrated(plugin: float, reps: np.ndarray | None, null: np.ndarray,
                   ci: float | None) -> tuple[float, tuple[float, float]]:
    """Bias-corrected JS divergence and an interval that contains 0 for identical policies.

    The plug-in divergence of estimated shares is positive even when the policies are
    identical. Its mean under the within-question permutation null (what identical policies
    give with this very design) is subtracted. The interval is the wider of two: the
    bootstrap percentile interval of the replicates, shifted by the bootstrap's own bias and
    the null mean (so centred on the corrected estimate), and the interval got by inverting
    the permutation null, ``[plugin - q_hi(null), plugin - q_lo(null)]``, which contains 0
    with probability ``ci`` when the policies are identical.
    """
    if null.size == 0:
        if reps is None or ci is None:
            return plugin, (math.nan, math.nan)
        lo, hi = percentile_interval(reps, ci)
        return plugin, (float(lo), float(hi))
    m0 = float(null.mean())
    est = plugin - m0
    if ci is None:
        return est, (math.nan, math.nan)
    n_lo, n_hi = percentile_interval(null, ci)
    lo, hi = plugin - float(n_hi), plugin - float(n_lo)
    if reps is not None and np.isfinite(reps).any():
        centre = float(np.nanmean(reps))
        b_lo, b_hi = percentile_interval(reps, ci)
        lo = min(lo, est - (centre - float(b_lo)))
        hi = max(hi, est + (float(b_hi) - centre))
    return est, (lo, hi)


def _statistics(n: np.ndarray, c: np.ndarray, outlier: np.ndarray) -> dict[str, np.ndarray]:
    """All share-based statistics from counts of shape ``(B, 2, S)`` (arm 0 = base)."""
    out = kitagawa_split(n[:, 0], c[:, 0], n[:, 1], c[:, 1])
    out["js"] = js_divergence(n[:, 0], n[:, 1])
    p_b, p_t = out["share_base"], out["share_treated"]
    strategy = ~outlier[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        both = (p_b > 0) & (p_t > 0)
        log_ratio = np.where(both, np.log(np.where(p_t > 0, p_t, 1.0) / np.where(p_b > 0, p_b, 1.0)), np.nan)
    weight = np.where(strategy & (p_b > 0) & (p_t > 0), (p_b + p_t) / 2.0, 0.0)
    # two points always correlate at +-1: alignment needs three strategies both arms use
    enough = (weight > 0).sum(axis=-1) >= 3
    out["alignment"] = np.where(enough, weighted_correlation(log_ratio, out["rate_base"], weight), np.nan)
    out["shared_mass"] = np.where(strategy & (n[:, 0] > 0), p_t, 0.0).sum(axis=-1)
    out["outlier_mass_treated"] = np.where(outlier[None, :], p_t, 0.0).sum(axis=-1)
    return out


def _strategy_table(strategies: np.ndarray, counts: np.ndarray, point: dict[str, np.ndarray],
                    interval: Any, level: float | None) -> pl.DataFrame:
    n_b = counts[0].sum(axis=0)
    n_t = counts[1].sum(axis=0)
    cols: dict[str, Any] = {
        "strategy": strategies.tolist(),
        "n_base": n_b.astype(np.int64), "n_treated": n_t.astype(np.int64),
    }
    for name, key in (("share_base", "share_base"), ("share_treated", "share_treated"),
                      ("success_base", "rate_base"), ("success_treated", "rate_treated"),
                      ("composition", "composition"), ("within", "within")):
        est = np.asarray(point[key], dtype=float)
        lo, hi = interval(key)
        cols[name] = est
        cols[f"{name}_ci_low"] = np.asarray(lo, dtype=float)
        cols[f"{name}_ci_high"] = np.asarray(hi, dtype=float)
        if name in ("composition", "within"):
            cols[f"{name}_detectable"] = (np.asarray(detectable_effect(lo, hi, level), dtype=float)
                                          if level is not None else np.full(est.shape, np.nan))
    # the joint level of the row's bands (simultaneous over the strategies)
    cols["ci_level"] = np.full(len(strategies), np.nan if level is None else level)
    table = pl.DataFrame(cols)
    # undefined success rates are null, not NaN, so they read as missing in CSV and notebooks
    return table.with_columns(pl.col(pl.Float64).fill_nan(None))


# ----------------------------------------------------------------------------- permutation test
def permutation_test(q_idx: np.ndarray, label_idx: np.ndarray, is_treated: np.ndarray, *,
                     n_permutations: int = 1000, random_state: RandomState = 0,
                     progress: bool | None = False, weighting: str = "question") -> float:
    """P-value of equal strategy distributions, permuting arm labels within each question.

    The statistic is the Jensen-Shannon divergence between the arms' strategy shares
    (question-weighted by default, as in :func:`reweighting`); the p-value is
    ``(1 + #{perm >= observed}) / (1 + n_permutations)``.

    Permuting arm labels inside a question hands the base arm's ``n_b(q)`` slots a uniformly
    random subset of that question's rows, so the base arm's strategy counts in the question
    are multivariate hypergeometric. They are drawn that way, for all permutations at once,
    one question at a time: memory ``n_permutations x strategies``, work linear in the
    number of questions, the same distribution as shuffling rows.

    Parameters
    ----------
    q_idx, label_idx
        Integer question and strategy index of each row.
    is_treated
        Boolean arm indicator of each row; the per-question arm counts are kept.
    n_permutations
        Number of permutations.
    random_state
        Seed; the test draws its own stream from it (see :func:`stream`).
    progress
        Show a progress bar over questions.
    weighting
        ``"question"`` or ``"trajectory"``, as in :func:`reweighting`.
    """
    q_idx = np.asarray(q_idx)
    if q_idx.size == 0 or n_permutations < 1:
        return math.nan
    observed, null = _permutation_null(q_idx, label_idx, is_treated, n_permutations=n_permutations,
                                       random_state=random_state, progress=progress, weighting=weighting)
    return _permutation_p(observed, null)


def _permutation_p(observed: float, null: np.ndarray) -> float:
    # a tolerance keeps ties that differ only by rounding counted as ties
    exceed = int((null >= observed - 1e-12).sum())
    return (1.0 + exceed) / (1.0 + null.size)


def _permutation_null(q_idx: np.ndarray, label_idx: np.ndarray, is_treated: np.ndarray, *,
                      n_permutations: int, random_state: int | np.random.Generator | None,
                      progress: bool | None, weighting: str) -> tuple[float, np.ndarray]:
    """Observed JS divergence and its ``n_permutations`` values under within-question permutation."""
    q_idx = np.asarray(q_idx)
    label_idx = np.asarray(label_idx)
    is_treated = np.asarray(is_treated, dtype=bool)
    n_s = int(label_idx.max()) + 1
    n_q = int(q_idx.max()) + 1
    per_q = np.zeros((n_q, n_s), dtype=np.int64)  # rows of each strategy in each question
    np.add.at(per_q, (q_idx, label_idx), 1)
    base_n = np.bincount(q_idx[~is_treated], minlength=n_q)
    treat_n = np.bincount(q_idx[is_treated], minlength=n_q)
    if weighting == "question":
        w_b = np.divide(1.0, base_n, out=np.zeros(n_q), where=base_n > 0)
        w_t = np.divide(1.0, treat_n, out=np.zeros(n_q), where=treat_n > 0)
    else:
        w_b = w_t = np.ones(n_q)
    observed_b = np.zeros((n_q, n_s))
    np.add.at(observed_b, (q_idx[~is_treated], label_idx[~is_treated]), 1.0)
    observed = float(js_divergence(w_b @ observed_b, w_t @ (per_q - observed_b)))
    rng = stream(random_state, "permutation")
    base_w = np.zeros((n_permutations, n_s))
    treat_w = np.zeros((n_permutations, n_s))
    for q in bar(range(n_q), enabled=progress, desc="permutations", total=n_q):
        colors, k = per_q[q], int(base_n[q])
        if k == 0:
            treat_w += w_t[q] * colors[None, :]
            continue
        if k == colors.sum() or np.count_nonzero(colors) == 1:
            draw = np.minimum(colors, k)[None, :]  # nothing to permute in this question
        else:
            draw = rng.multivariate_hypergeometric(colors, k, size=n_permutations)
        base_w += w_b[q] * draw
        treat_w += w_t[q] * (colors[None, :] - draw)
    return observed, js_divergence(base_w, treat_w)


# ----------------------------------------------------------------------------- query sequences
def _query_sequences(pair: pl.DataFrame, base: str, treated: str, q_idx: np.ndarray, n_q: int,
                     ci: float | None, n_boot: int, random_state: int | None,
                     weighting: str = "question", *, weights: np.ndarray | None = None) -> pl.DataFrame:
    """Distinct query sequences per problem and overlap with base, with bootstrap intervals.

    ``weights`` are the caller's bootstrap draw counts ``(n_boot, n_q)`` (:func:`reweighting`
    draws them once for all its stages); without them they are drawn here from
    ``random_state``'s bootstrap stream, which gives the same array.
    """
    keys = query_sequence_keys(pair)
    frame = pl.DataFrame({"arm": pair["arm"], "q": q_idx, "seq": keys})
    base_set = frame.filter(pl.col("arm") == base).select("q", "seq").unique().with_columns(
        pl.lit(True).alias("in_base"))
    frame = frame.join(base_set, on=["q", "seq"], how="left").with_columns(pl.col("in_base").fill_null(False))
    if ci is None or n_boot <= 0:
        weights = None
    elif weights is None:
        weights = question_bootstrap_weights(n_q, n_boot, stream(random_state, "bootstrap")).astype(float)
    common = _distinct_at_common_n(frame, base, treated, n_q)
    rows = []
    for arm in (base, treated):
        sub = frame.filter(pl.col("arm") == arm)
        per_q = sub.group_by("q").agg(
            pl.len().alias("n"), pl.col("seq").n_unique().alias("unique"),
            pl.col("in_base").sum().alias("in_base"),
            pl.col("seq").filter(pl.col("in_base")).n_unique().alias("unique_in_base"))
        n = np.zeros(n_q)
        uniq = np.zeros(n_q)
        inb = np.zeros(n_q)
        uinb = np.zeros(n_q)
        qi = per_q["q"].to_numpy()
        n[qi] = per_q["n"].to_numpy()
        uniq[qi] = per_q["unique"].to_numpy()
        inb[qi] = per_q["in_base"].to_numpy()
        uinb[qi] = per_q["unique_in_base"].to_numpy()
        row: dict[str, Any] = {"arm": arm, "n_questions": n_q,
                               "samples_per_problem": float(n.mean()),
                               "unique_per_problem": float(uniq.mean()),
                               "unique_at_common_n": float(common[arm].mean())}
        is_base = arm == base
        # design rule: the share of a question's trajectories repeating a base sequence,
        # averaged over questions (trajectory weighting: pooled over trajectories)
        share_in = inb / n if weighting == "question" else inb
        denom = np.ones(n_q) if weighting == "question" else n
        row["overlap_with_base"] = None if is_base else float(share_in.sum() / denom.sum())
        row["overlap_distinct"] = None if is_base else float(uinb.sum() / uniq.sum())
        row["overlap_at_common_n"] = None if is_base else float(common["overlap"].mean())
        if weights is not None:
            lo, hi = percentile_interval(weights @ uniq / n_q, ci)
            row["unique_per_problem_ci_low"], row["unique_per_problem_ci_high"] = float(lo), float(hi)
            lo, hi = percentile_interval(weights @ common[arm] / n_q, ci)
            row["unique_at_common_n_ci_low"], row["unique_at_common_n_ci_high"] = float(lo), float(hi)
            if not is_base:
                with np.errstate(invalid="ignore", divide="ignore"):
                    lo, hi = percentile_interval((weights @ share_in) / (weights @ denom), ci)
                    lo2, hi2 = percentile_interval((weights @ uinb) / (weights @ uniq), ci)
                row["overlap_with_base_ci_low"], row["overlap_with_base_ci_high"] = float(lo), float(hi)
                row["overlap_distinct_ci_low"], row["overlap_distinct_ci_high"] = float(lo2), float(hi2)
                lo3, hi3 = percentile_interval(weights @ common["overlap"] / n_q, ci)
                row["overlap_at_common_n_ci_low"], row["overlap_at_common_n_ci_high"] = float(lo3), float(hi3)
        rows.append(row)
    schema = {"arm": pl.String, "n_questions": pl.Int64, "samples_per_problem": pl.Float64,
              "unique_per_problem": pl.Float64, "unique_per_problem_ci_low": pl.Float64,
              "unique_per_problem_ci_high": pl.Float64, "unique_at_common_n": pl.Float64,
              "unique_at_common_n_ci_low": pl.Float64, "unique_at_common_n_ci_high": pl.Float64,
              "overlap_with_base": pl.Float64,
              "overlap_with_base_ci_low": pl.Float64, "overlap_with_base_ci_high": pl.Float64,
              "overlap_distinct": pl.Float64, "overlap_distinct_ci_low": pl.Float64,
              "overlap_distinct_ci_high": pl.Float64, "overlap_at_common_n": pl.Float64,
              "overlap_at_common_n_ci_low": pl.Float64, "overlap_at_common_n_ci_high": pl.Float64}
    return pl.DataFrame([{k: r.get(k) for k in schema} for r in rows], schema=schema, orient="row")


def _distinct_at_common_n(frame: pl.DataFrame, base: str, treated: str, n_q: int) -> dict[str, np.ndarray]:
    """Per arm and question: expected distinct query sequences among ``m(q)`` of its samples.

    Distinct counts grow with the number of samples, so arms are compared at the common
    budget ``m(q) = min(n_base(q), n_treated(q))``: a sequence seen ``a`` times among the
    arm's ``n`` samples appears among m drawn without replacement with probability
    ``1 - C(n - a, m) / C(n, m)`` (the unbiased estimator), and the expected number of
    distinct sequences is the sum of these over the question's sequences.
    """
    from mechanism.analysis.boundaries import solved_probability  # noqa: PLC0415 - boundaries loads scipy.stats: only for distinct-sequence counts

    mult = frame.group_by("arm", "q", "seq").len("a")
    sizes = frame.group_by("arm", "q").len("n")
    budget = sizes.group_by("q").agg(pl.col("n").min().alias("m"))
    mult = mult.join(sizes, on=["arm", "q"]).join(budget, on="q")
    p = solved_probability(mult["n"].to_numpy(), mult["a"].to_numpy(), mult["m"].to_numpy())
    out = {}
    for arm in (base, treated):
        keep = (mult["arm"] == arm).to_numpy()
        out[arm] = np.bincount(mult["q"].to_numpy()[keep], weights=p[keep], minlength=n_q)
    # overlap at the common budget: a treated trajectory's sequence (share a_t / n_t of the
    # question's treated samples) is among m of base's samples with the probability above
    in_base = mult.with_columns(p=pl.Series(p)).filter(pl.col("arm") == base).select("q", "seq", "p")
    treated_share = mult.filter(pl.col("arm") == treated).select("q", "seq", (pl.col("a") / pl.col("n")).alias("w"))
    joined = treated_share.join(in_base, on=["q", "seq"], how="left").with_columns(pl.col("p").fill_null(0.0))
    out["overlap"] = np.bincount(joined["q"].to_numpy(), weights=(joined["w"] * joined["p"]).to_numpy(), minlength=n_q)
    return out


# ----------------------------------------------------------------------------- neighbours
def _neighbour_distances(coords: np.ndarray, is_t: np.ndarray, q_idx: np.ndarray, n_q: int,
                         ci: float | None, n_boot: int, random_state: int | None, *,
                         weights: np.ndarray | None = None) -> pl.DataFrame:
    """Treated-to-nearest-base distances against base-to-nearest-other-base distances.

    ``far_share`` is the share of treated trajectories farther from every base trajectory
    than 95 % of base trajectories are from their nearest other base trajectory: about 0.05
    when the treated arm only reweights base behaviour, near 1 when it replaces it.

    Computed on the distinct points with their counts, which gives every row's distance
    exactly as a search over all rows would: a base point held by two or more base rows is
    at distance 0 from its nearest *other* base row, a base point held once is at the
    distance of its nearest other distinct base point, and a treated row is at the distance
    of its nearest distinct base point. Trajectories repeat heavily in strategy space, so
    the search runs over a few thousand points instead of every row (a brute-force search
    over rows grows with their square). Above ``mechanism.analysis.neighbours.EXACT_LIMIT`` distinct
    base points the search is approximate (pynndescent, seeded by ``random_state``).

    ``weights`` are the caller's bootstrap draw counts ``(n_boot, n_q)`` (:func:`reweighting`
    draws them once for all its stages); without them they are drawn here from
    ``random_state``'s bootstrap stream, which gives the same array.
    """
    base_xy = coords[~is_t]
    treat_xy = coords[is_t]
    if base_xy.shape[0] < 2 or treat_xy.shape[0] < 1:
        raise InputError("nearest-neighbour distances need at least 2 base and 1 treated rows",
                         field="coordinates")
    base_pts, base_inv, base_cnt = distinct_rows(base_xy)
    treat_pts, treat_inv, _ = distinct_rows(treat_xy)
    search = NeighbourSearch(base_pts, random_state)
    d_point = np.zeros(len(base_pts))
    single = base_cnt == 1  # a point held by two base rows is its own nearest other row
    if single.any() and len(base_pts) > 1:
        d_point[single] = search.nearest_other(np.flatnonzero(single))
    d_base = d_point[base_inv]
    d_treat = search.nearest(treat_pts)[treat_inv]
    threshold = float(np.quantile(d_base, 0.95))
    far = (d_treat > threshold).astype(float)
    q_b, q_t = q_idx[~is_t], q_idx[is_t]
    sums = {
        "base_sum": np.bincount(q_b, weights=d_base, minlength=n_q),
        "base_n": np.bincount(q_b, minlength=n_q).astype(float),
        "treat_sum": np.bincount(q_t, weights=d_treat, minlength=n_q),
        "treat_far": np.bincount(q_t, weights=far, minlength=n_q),
        "treat_n": np.bincount(q_t, minlength=n_q).astype(float),
    }

    def stats(w: np.ndarray) -> dict[str, np.ndarray]:
        agg = {k: w @ v for k, v in sums.items()}
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_b = agg["base_sum"] / agg["base_n"]
            mean_t = agg["treat_sum"] / agg["treat_n"]
            return {"nn_distance_base_to_base": mean_b, "nn_distance_treated_to_base": mean_t,
                    "nn_distance_ratio": mean_t / mean_b, "far_share": agg["treat_far"] / agg["treat_n"]}

    point = stats(np.ones((1, n_q)))
    reps = None
    if ci is not None and n_boot > 0:
        if weights is None:
            weights = question_bootstrap_weights(n_q, n_boot, stream(random_state, "bootstrap")).astype(float)
        reps = stats(weights)
    rows = []
    for name, value in point.items():
        lo, hi = (percentile_interval(reps[name], ci) if reps is not None else (math.nan, math.nan))
        rows.append((name, float(value[0]), float(lo), float(hi)))
    rows.append(("far_threshold_base_q95", threshold, math.nan, math.nan))
    return pl.DataFrame(rows, schema={"quantity": pl.String, "estimate": pl.Float64,
                                      "ci_low": pl.Float64, "ci_high": pl.Float64}, orient="row")


# ----------------------------------------------------------------------------- several arms
Adjust = Literal["bonferroni", "none"]


def compare_arms(runs: pl.DataFrame, labels: Any, *, base: str, treated: Sequence[str] | None = None,
                 ci: float | None = 0.95, n_boot: int = 1000,
                 random_state: RandomState = 0,
                 n_permutations: int = 1000, coordinates: np.ndarray | None = None,
                 progress: bool | None = False, weighting: Weighting = "question",
                 strata: Strata = "question",
                 adjust: Adjust = "bonferroni") -> Comparison:
    """:func:`reweighting` of every arm in ``treated`` against ``base``, as one result.

    Parameters
    ----------
    treated
        Arms to compare with ``base`` (default: every other arm, in order of appearance).
    weighting
        As in :func:`reweighting`. The other options are those of :func:`reweighting`; one
        seed is resolved once, so every arm is compared on the same question resamples.
    strata
        As in :func:`reweighting`.
    adjust
        ``"bonferroni"`` (default): with m treated arms each comparison's intervals are at
        level ``1 - (1 - ci) / m``, so that the m comparisons hold together at ``ci`` (a
        reader scanning several checkpoints for the one that "moved" is making m
        comparisons); ``"none"``: each at ``ci``.

    Returns
    -------
    Comparison
        Its ``to_frame()`` is one long table: the rows of each :meth:`Reweighting.to_frame`, with
        ``ci_level``, the level each interval was made at, among the key columns; each
        :class:`Reweighting` is in ``reweightings``.
    """
    validate(runs, required=("arm",))
    others = treated
    if others is None:
        others = [a for a in runs["arm"].unique(maintain_order=True).to_list() if a != base]
    check_choice(adjust, Adjust, field="adjust")
    seed = resolve_seed(random_state)
    others = list(others)
    level = bonferroni_level(ci, len(others)) if adjust == "bonferroni" else ci
    results = tuple(reweighting(runs, labels, base=base, treated=arm, ci=level, n_boot=n_boot,
                                random_state=seed, n_permutations=n_permutations, coordinates=coordinates,
                                progress=progress, weighting=weighting, strata=strata) for arm in others)
    if not results:
        raise InputError(f"no arm to compare with {base!r}", field="treated")
    return Comparison(base=base, treated=tuple(others), ci=ci, ci_level=level, adjust=adjust, reweightings=results)


@dataclass(frozen=True, repr=False)
class Comparison(Result):
    """Result of :func:`compare_arms`: one :class:`Reweighting` per treated arm against ``base``.

    ``ci`` is the level asked for the family of comparisons; ``ci_level`` the level each
    comparison's intervals were made at (``1 - (1 - ci) / m`` over m treated arms with
    ``adjust="bonferroni"``, ``ci`` itself with ``adjust="none"``).
    """

    base: str
    treated: tuple[str, ...]
    ci: float | None
    ci_level: float | None
    adjust: Adjust
    reweightings: tuple[Reweighting, ...]

    key_columns: ClassVar[dict[str, pl.DataType]] = {**Reweighting.key_columns, "ci_level": pl.Float64()}

    def _estimates(self) -> pl.DataFrame:
        """The rows of every :meth:`Reweighting.to_frame`, with the level they were made at."""
        return pl.concat([rw.to_frame() for rw in self.reweightings]).with_columns(
            pl.lit(self.ci_level, dtype=pl.Float64).alias("ci_level"))

    def tables(self) -> dict[str, pl.DataFrame]:
        """Every table by a file-friendly name: the long table and each comparison's strategies."""
        strategies = pl.concat([rw.strategies.select(pl.lit(rw.base).alias("base"), pl.lit(rw.treated).alias("treated"),
                                                     pl.all()) for rw in self.reweightings], how="diagonal_relaxed")
        return {"estimates": self.to_frame(), "strategies": strategies}

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict: the levels and each comparison's :meth:`Reweighting.to_dict`."""
        return {"base": self.base, "treated": list(self.treated), "ci": self.ci, "ci_level": self.ci_level,
                "adjust": self.adjust, "comparisons": [rw.to_dict() for rw in self.reweightings]}

    def verdict(self) -> str:
        """One line: each treated arm's accuracy change split into composition and within."""
        return comparison_verdict(self)

    def _summary_title(self) -> str:
        return f"Comparison: {', '.join(self.treated)} vs {self.base}"

    def _summary_lines(self) -> list[str]:
        return comparison_lines(self)

    def _headline(self) -> str:
        level = "" if self.ci_level is None else f", intervals at {self.ci_level:g}"
        return f"{len(self.treated)} arm{'s' if len(self.treated) != 1 else ''} against {self.base}{level}"


def reweightings(runs: pl.DataFrame, labels: Any, *, base: str, others: Iterable[str],
                 **options: Any) -> list[Reweighting]:
    """The :class:`Reweighting` of each arm in ``others`` against ``base`` (for figures)."""
    return [reweighting(runs, labels, base=base, treated=arm, **options) for arm in others]


def one_arm_note(mass_base: float, mass_treated: float, base: str, treated: str,
                 composition_bounds: tuple[float, float], *, what: str = "composition") -> str:
    """The note on cells one arm never used: how much of each arm's mass sits there, how they
    were valued, and the assumption-free range of ``what``."""
    if mass_base <= 0 and mass_treated <= 0:
        return "every question x strategy cell either arm used was used by both: no cell needed a model"
    lo, hi = composition_bounds
    return (f"{100 * mass_base:.1f}% of {base}'s and {100 * mass_treated:.1f}% of {treated}'s mass lie in question x "
            f"strategy cells the other arm never used; each such cell is valued at its own arm's modelled success "
            f"(additive question and strategy effects on the logit scale, fitted per arm), never at the other arm's; "
            f"valuing every such cell at 0 or 1 instead bounds {what} to [{lo:+.3f}, {hi:+.3f}]")


#: Below this many questions a comparison's notes say its sample is small (docs/methods.md,
#: "Few problems").
SMALL_QUESTIONS = 30


def small_sample_notes(n_questions: int, per_question: np.ndarray | None = None) -> list[str]:
    """Notes for a comparison on fewer than :data:`SMALL_QUESTIONS` questions, or with one
    sample per question in an arm (``per_question``: samples per (arm, question), ``(A, Q)``).

    >>> small_sample_notes(5, np.ones((2, 5)))[0][:41]
    'small sample: 5 questions (fewer than 30)'
    >>> small_sample_notes(40, np.ones((2, 40)))[0][:90]
    'one sample per question in every arm: each question x strategy cell holds at most one traj'
    """
    notes = []
    if n_questions < SMALL_QUESTIONS:
        notes.append(f"small sample: {n_questions} questions (fewer than {SMALL_QUESTIONS}): intervals over "
                     "questions are approximate and a bootstrap over so few questions can under-cover")
    if per_question is not None:
        per = np.asarray(per_question, dtype=float)
        ones = [int(i) for i in range(per.shape[0]) if per[i][per[i] > 0].size and per[i][per[i] > 0].max() <= 1]
        if ones and len(ones) == per.shape[0] and per.shape[0] > 1:
            # the whole design is one trajectory per arm and question: say what the split then measures
            notes.append("one sample per question in every arm: each question x strategy cell holds at most one "
                         "trajectory, so the composition/within split reduces to same-vs-different label (a "
                         "question whose trajectories in the two arms share a strategy adds only within-strategy "
                         "change, one whose strategies differ adds composition) and per-question PASS@k is 0/1 "
                         "(k = 1 only); within-strategy execution rests on the cell model and the bounds are wide")
        elif ones:
            notes.append("one sample per question in one arm: each question x strategy cell holds at most one "
                         "trajectory, so within-strategy execution rests on the cell model and the bounds are wide")
    return notes
