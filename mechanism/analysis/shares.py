"""Strategy shares with every question weighing equally within an arm.

An arm's share of a strategy is the mean over its questions of each question's fraction of
trajectories in that strategy (:func:`mechanism.core.resample.question_weighted`): a question
sampled eight times weighs what a question sampled once does. Its interval is the percentile
bootstrap over questions. One implementation, used by :func:`mechanism.track` (shares per
checkpoint), :mod:`mechanism.analysis.parallel` (shares of assigned shards), the strategy figures and
the report.

- :func:`weighted_shares`: the arrays (question and strategy codes in, one share vector per
  bootstrap replicate out), for callers that draw their own resamples;
- :func:`strategy_shares`: the table ``arm, strategy, n, share, ci_low, ci_high`` from one
  row per trajectory, as a :class:`ShareTable` (a DataFrame that is also a result).
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np
import polars as pl

from mechanism.core.errors import InputError
from mechanism.core.options import RandomState, check_ci
from mechanism.core.resample import (
    percentile_interval,
    question_bootstrap_weights,
    question_weighted,
    resolve_seed,
    stream,
)
from mechanism.core.results import TableResult

__all__ = ["weighted_shares", "strategy_shares", "ShareTable"]


def weighted_shares(q_idx: np.ndarray, s_idx: np.ndarray, n_questions: int, n_strata: int, *,
                    weights: np.ndarray | None = None) -> np.ndarray:
    """Strategy shares with every question weighing equally: the mean over questions of each
    question's share of its trajectories in each stratum.

    Parameters
    ----------
    q_idx, s_idx
        Per trajectory: its question's code in ``range(n_questions)`` and its stratum's
        (strategy's) code in ``range(n_strata)``.
    n_questions, n_strata
        How many codes there are; a question without trajectories here is left out of the mean.
    weights
        Bootstrap draw counts, shape ``(B, n_questions)``: one share vector per replicate.

    Returns
    -------
    numpy.ndarray
        Shape ``(n_strata,)``, or ``(B, n_strata)`` with ``weights`` (NaN for a replicate that
        drew none of the questions present).

    Examples
    --------
    >>> weighted_shares(np.array([0, 0, 0, 1]), np.array([0, 0, 1, 1]), 2, 2).round(3).tolist()
    [0.333, 0.667]
    """
    counts = np.zeros((n_questions, n_strata))
    np.add.at(counts, (q_idx, s_idx), 1.0)
    (per_q,) = question_weighted(counts)
    present = counts.sum(axis=1) > 0
    if weights is None:
        return per_q[present].mean(axis=0) if present.any() else np.zeros(n_strata)
    w = weights * present[None, :]
    total = w.sum(axis=1, keepdims=True)
    return np.divide(w @ per_q, total, out=np.full((w.shape[0], n_strata), np.nan), where=total > 0)


def strategy_shares(assigned: pl.DataFrame | pl.LazyFrame, *, ci: float | None = 0.95, n_boot: int = 1000,
                    random_state: RandomState = 0) -> ShareTable:
    """Each arm's share of each strategy, questions weighted equally within the arm.

    Parameters
    ----------
    assigned
        ``arm, question_id, strategy`` per trajectory (e.g. :func:`mechanism.analysis.parallel.assign_shards`),
        eager or lazy (only those columns are read).
    ci
        Confidence level of the percentile bootstrap over questions (per arm); ``None``:
        no intervals.
    n_boot, random_state
        Bootstrap replicates and seed: int, numpy Generator or None, turned into one integer
        once; each arm draws from its own ``"shares:ARM"`` stream of it.

    Returns
    -------
    ShareTable
        A ``polars.DataFrame`` ``arm, strategy, n`` (trajectories), ``share``, ``ci_low``,
        ``ci_high`` (NaN without intervals); shares of one arm sum to 1. It is also a result:
        ``to_frame()`` is ``arm, strategy, n, detectable, quantity, estimate, ci_low, ci_high``
        (quantity ``share``).

    Examples
    --------
    >>> t = pl.DataFrame({"arm": ["a"] * 4, "question_id": ["q1", "q1", "q1", "q2"], "strategy": [0, 0, 1, 1]})
    >>> shares = strategy_shares(t, ci=None)
    >>> shares["share"].to_list()   # q1: 2/3, 1/3; q2: 0, 1 -> means over questions
    [0.3333333333333333, 0.6666666666666666]
    >>> shares.verdict()
    'largest share per arm: a strategy 1 0.667'
    """
    if not isinstance(assigned, (pl.DataFrame, pl.LazyFrame)):
        raise InputError("`assigned` must be a polars DataFrame or LazyFrame", field="assigned")
    ci = check_ci(ci)
    seed = resolve_seed(random_state) if ci is not None and n_boot > 0 else 0
    frame = assigned.lazy().select("arm", "question_id", "strategy").collect()
    strategies = np.sort(frame["strategy"].unique().to_numpy())
    out = []
    for arm in sorted(frame["arm"].unique().to_list()):
        part = frame.filter(pl.col("arm") == arm)
        _, q_idx = np.unique(part["question_id"].to_numpy(), return_inverse=True)
        s_idx = np.searchsorted(strategies, part["strategy"].to_numpy())
        n_q = int(q_idx.max()) + 1
        n = np.bincount(s_idx, minlength=len(strategies))
        share = weighted_shares(q_idx, s_idx, n_q, len(strategies))
        lo = hi = np.full(len(strategies), np.nan)
        if ci is not None and n_boot > 0:
            w = question_bootstrap_weights(n_q, n_boot, stream(seed, f"shares:{arm}")).astype(float)
            lo, hi = percentile_interval(weighted_shares(q_idx, s_idx, n_q, len(strategies), weights=w), ci)
        for j, s in enumerate(strategies):
            out.append((arm, int(s), int(n[j]), float(share[j]), float(lo[j]), float(hi[j])))
    return ShareTable(out, schema={"arm": pl.String, "strategy": pl.Int64, "n": pl.Int64, "share": pl.Float64,
                                   "ci_low": pl.Float64, "ci_high": pl.Float64}, orient="row")


class ShareTable(TableResult):
    """What :func:`strategy_shares` returns: the wide table ``arm, strategy, n, share, ci_low,
    ci_high`` (a ``polars.DataFrame``) that is also a :class:`~mechanism.core.results.Result`
    (:class:`~mechanism.core.results.TableResult`): ``to_frame()`` has keys ``arm, strategy``,
    then ``n`` (trajectories), then the shared columns with quantity ``share`` (an interval not
    computed is null there); ``tables()`` holds ``estimates`` and ``shares``.
    """

    key_columns: ClassVar[dict[str, pl.DataType]] = {"arm": pl.String(), "strategy": pl.Int64()}
    extra_columns: ClassVar[dict[str, pl.DataType]] = {"n": pl.Int64()}
    value_column: ClassVar[str] = "share"
    quantity: ClassVar[str] = "share"
    table_name: ClassVar[str] = "shares"

    def _wide(self) -> pl.DataFrame:
        """The shares, NaN intervals (none computed) as nulls, as every result spells them."""
        return pl.DataFrame(self).with_columns(pl.col("ci_low", "ci_high").fill_nan(None))

    def _largest(self) -> list[str]:
        """Each arm's largest strategy share (outliers, strategy -1, left out), with its interval."""
        largest = (self._wide().filter(pl.col("strategy") >= 0)
                   .sort(["share", "strategy"], descending=[True, False])
                   .unique("arm", keep="first", maintain_order=True).sort("arm"))
        parts = []
        for row in largest.iter_rows(named=True):
            text = f"{row['arm']} strategy {row['strategy']} {row['share']:.3f}"
            if row["ci_low"] is not None:
                text += f" [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
            parts.append(text)
        return parts

    def verdict(self) -> str:
        """One line: each arm's largest strategy share, with its interval."""
        if self.height == 0:
            return "strategy shares: no trajectories"
        return "largest share per arm: " + "; ".join(self._largest())

    def _summary_title(self) -> str:
        return "Strategy shares (questions weighted equally within an arm)"

    def _summary_lines(self) -> list[str]:
        """Each arm's largest share, and the notes."""
        return [f"largest share: {part}" for part in self._largest()] + super()._summary_lines()
