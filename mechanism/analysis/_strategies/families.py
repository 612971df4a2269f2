"""Families with optional steps: two strategies one optional step apart are one, unless the
data say otherwise.

After the tree cut, every strategy is read as its typical sequence of steps (the most common
attempt sequence of its members, :func:`mechanism.analysis._strategies.description.step_labels`). Two
strategies whose typical sequences differ by exactly one inserted step (an extra look before
acting, a repeated read, an option picked) are candidates for one family. They stay apart
only when the data say the step is a choice of its own: when the share of the variant with
the step differs between arms (a chi-square test of the 2 x arms table of trajectory counts,
``p < FAMILY_ALPHA``), since an arm that takes the step more often than another has learned
something about it. Within one arm (or with no arm information) nothing says so, and the
family is one strategy. The outcome never enters: a family defined by success would fold
execution into composition.

This uses arm labels to decide a split, never to draw a boundary: the merged family's
composition between arms equals the sum of its parts', and a split is kept only where the
parts' shares move apart, so neither choice manufactures composition.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mechanism.analysis._strategies.joins import Joins, typical

FAMILY_ALPHA = 0.01


def one_step_apart(a: tuple[str, ...], b: tuple[str, ...]) -> str | None:
    """The step the longer sequence inserts into the shorter, or ``None``.

    Examples
    --------
    >>> one_step_apart(("search", "click", "buy"), ("search", "click", "select", "buy"))
    'select'
    >>> one_step_apart(("search", "buy"), ("search", "buy")) is None
    True
    """
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    if len(long_) != len(short) + 1:
        return None
    for i in range(len(long_)):
        if long_[:i] + long_[i + 1:] == short:
            return long_[i]
    return None


def arm_test(counts: np.ndarray) -> float:
    """p-value of independence in a 2 x arms table (1.0 where fewer than two arms hold any)."""
    from scipy.stats import chi2_contingency  # noqa: PLC0415 - scipy: loaded by the steps that use it, not at import

    keep = counts.sum(axis=0) > 0
    table = counts[:, keep]
    if table.shape[1] < 2 or (table.sum(axis=1) == 0).any():
        return 1.0
    return float(chi2_contingency(table, correction=True)[1])


def merge_families(labels: np.ndarray, counts: np.ndarray, sequences: Sequence[tuple[str, ...]],
                   arm_counts: np.ndarray, *, alpha: float = FAMILY_ALPHA,
                   ) -> tuple[np.ndarray, list[dict]]:
    """Join strategies one optional step apart whose arms take the step alike.

    Parameters
    ----------
    labels
        Strategy of each distinct row (-1: outlier, left alone).
    counts
        Trajectories per distinct row.
    sequences
        Each distinct row's attempt sequence of steps.
    arm_counts
        ``rows x arms`` trajectories of each distinct row per arm.
    alpha
        Level of the arm test below which the two stay apart.

    Returns
    -------
    labels, merges
        The labels with each family under its largest member's label, and one record per
        candidate pair: ``kept``/``joined`` (the labels), ``step`` (the optional step), ``p``,
        ``merged``.
    """
    labels = np.asarray(labels).copy()
    ids = sorted(set(labels.tolist()) - {-1})
    if len(ids) < 2:
        return labels, []
    typical_of, weight = typical(labels, counts, [tuple(s) for s in sequences])
    by_arm = {c: arm_counts[labels == c].sum(axis=0).astype(np.float64) for c in ids}
    pairs = []
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            step = one_step_apart(typical_of[a], typical_of[b])
            if step is not None:
                pairs.append((-(weight[a] + weight[b]), a, b, step))
    joins = Joins(weight)
    merges = []
    for _, a, b, step in sorted(pairs):
        p = arm_test(np.vstack([by_arm[a], by_arm[b]]))
        joined = p >= alpha and joins.join(a, b)
        merges.append({"kept": a, "joined": b, "step": step, "p": p, "merged": bool(joined)})
    out = joins.labels(labels)
    return out, merges
