"""How far strategies track a property of the question (its category, the task itself):
the strategy x category table and Cramér's V with a bootstrap interval over questions.

Cramér's V is bias-corrected (Bergsma 2013): the plain V of a table with many columns (one
per task, say) is far above 0 even when strategies are drawn independently of the question;
the corrected V is about 0 then, and 1 when the category determines the strategy.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from mechanism.core.errors import InputError
from mechanism.core.resample import percentile_interval, question_bootstrap_weights, resolve_seed, stream


def cramers_v(table: np.ndarray, *, corrected: bool = True) -> float:
    """Cramér's V of a contingency table (rows and columns without any count are left out).

    Examples
    --------
    >>> round(cramers_v(np.array([[10, 0], [0, 10]]), corrected=False), 6)
    1.0
    >>> round(cramers_v(np.array([[5, 5], [5, 5]])), 6)
    0.0
    """
    t = np.asarray(table, dtype=np.float64)
    t = t[t.sum(axis=1) > 0][:, t.sum(axis=0) > 0]
    n = float(t.sum())
    r, k = t.shape if t.ndim == 2 else (0, 0)
    if n <= 1 or r < 2 or k < 2:
        return float("nan")
    expected = np.outer(t.sum(axis=1), t.sum(axis=0)) / n
    phi2 = float(((t - expected) ** 2 / expected).sum()) / n
    if not corrected:
        return float(np.sqrt(phi2 / (min(r, k) - 1)))
    phi2 = max(0.0, phi2 - (k - 1) * (r - 1) / (n - 1))
    rc, kc = r - (r - 1) ** 2 / (n - 1), k - (k - 1) ** 2 / (n - 1)
    denom = min(kc - 1, rc - 1)
    return float(np.sqrt(phi2 / denom)) if denom > 0 else float("nan")


def strategy_association(labels: np.ndarray, values: np.ndarray, questions: np.ndarray, *, column: str,
                         n_boot: int = 200, level: float = 0.95, random_state: int = 0) -> pl.DataFrame:
    """The strategy x ``column`` table, with Cramér's V and its interval on every row.

    Returns
    -------
    polars.DataFrame
        ``strategy, <column>, n, share`` (of the strategy's trajectories with that value),
        ``cramers_v``, ``ci_low``, ``ci_high`` (percentile bootstrap over questions: a
        question's trajectories are drawn together).
    """
    labels = np.asarray(labels)
    s_ids, s_inv = np.unique(labels, return_inverse=True)
    v_ids, v_inv = np.unique(np.asarray(values).astype(str), return_inverse=True)
    q_ids, q_inv = np.unique(np.asarray(questions).astype(str), return_inverse=True)
    cells = s_inv.ravel() * len(v_ids) + v_inv.ravel()
    per_q = np.zeros((len(q_ids), len(s_ids) * len(v_ids)))
    np.add.at(per_q, (q_inv.ravel(), cells), 1.0)
    table = per_q.sum(axis=0).reshape(len(s_ids), len(v_ids))
    v = cramers_v(table)
    draws = question_bootstrap_weights(len(q_ids), n_boot, stream(resolve_seed(random_state), "strategy-association"))
    # A value that belongs to one question (the task itself): a question drawn twice is two
    # tasks in the resample, two columns, not one column of doubled counts (which would make
    # strategies look tied to the task).
    owners = np.zeros((len(q_ids), len(v_ids)), dtype=bool)
    owners[q_inv.ravel(), v_inv.ravel()] = True
    if (owners.sum(axis=0) == 1).all():
        by_q = np.zeros((len(q_ids), len(s_ids)))
        np.add.at(by_q, (q_inv.ravel(), s_inv.ravel()), 1.0)
        reps = np.array([cramers_v(np.repeat(by_q, d.astype(np.int64), axis=0).T) for d in draws])
    else:
        reps = np.array([cramers_v(t.reshape(len(s_ids), len(v_ids))) for t in draws @ per_q])
    lo, hi = percentile_interval(reps, level)
    rows = []
    for i, s in enumerate(s_ids.tolist()):
        total = table[i].sum()
        for j, val in enumerate(v_ids.tolist()):
            if table[i, j] > 0:
                rows.append((int(s), val, int(table[i, j]), float(table[i, j] / total)))
    out = pl.DataFrame(rows, schema={"strategy": pl.Int64, column: pl.String, "n": pl.Int64, "share": pl.Float64},
                       orient="row")
    return out.with_columns(pl.lit(v, dtype=pl.Float64).alias("cramers_v"),
                            pl.lit(float(lo), dtype=pl.Float64).alias("ci_low"),
                            pl.lit(float(hi), dtype=pl.Float64).alias("ci_high"))


def association_of(transform: object, runs: pl.DataFrame, *, by: str, n_boot: int, level: float,
                   random_state: int) -> pl.DataFrame:
    """:meth:`StrategySpace.association`: ``runs`` labelled by ``transform(runs)`` crossed with
    their column ``by``."""
    if by not in runs.columns:
        raise InputError(f"runs have no column `{by}` to cross strategies with", source="runs", field=by)
    return strategy_association(transform(runs), runs[by].cast(pl.String).fill_null("(none)").to_numpy(),
                                runs["question_id"].cast(pl.String).to_numpy(), column=by, n_boot=n_boot,
                                level=level, random_state=random_state)
