"""How stable the strategies of a fit are: under bootstrap resamples of questions, between
seeds, and across resolutions.

Clusterwise stability (Hennig 2007): refit the clustering on a bootstrap resample of the
questions (all their trajectories), and for every fitted strategy take the best Jaccard
similarity between its members and any strategy of the refit, counting trajectories; the mean
over resamples is the strategy's stability. Values near 1 mean the strategy reappears whatever
questions are drawn; below about 0.6 it is not a stable finding (Hennig's reading).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from mechanism.analysis._strategies.clustering import (
    agglomerative,
    cluster_rows,
    core,
    distances,
    families,
    plan_groups,
    resampled_arms,
)
from mechanism.analysis._strategies.endings import endings
from mechanism.analysis._strategies.features import FitRows, plan_codes, plan_profiles
from mechanism.analysis._strategies.mixture import refine_fit
from mechanism.analysis._strategies.tasks import task_variants
from mechanism.core.errors import MechanismError
from mechanism.core.resample import question_bootstrap_weights, stream

if TYPE_CHECKING:
    from scipy.sparse import spmatrix


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
        its ``"stability"`` stream (:func:`mechanism.core.resample.stream`), so the same seed gives
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


def _trajectory_ari(labels: np.ndarray, other: np.ndarray, counts: np.ndarray) -> float:
    """Adjusted Rand index over trajectories, not distinct rows: each row repeated by its count."""
    from sklearn.metrics import adjusted_rand_score  # noqa: PLC0415 - scikit-learn: about a second to import, only in the steps that use it

    return float(adjusted_rand_score(np.repeat(labels, counts), np.repeat(other, counts)))


def fit_stability(p: Any, rows: FitRows, labels: np.ndarray, core_dist: np.ndarray | None = None,
                  profiles: np.ndarray | spmatrix | None = None) -> tuple[dict[int, float], float]:
    """Per-strategy bootstrap stability over question resamples, and the adjusted Rand index
    between the fit's strategies and a fit with the next seed (made by a clone of ``p``:
    ``p`` never changes); ``profiles``: the rows' plan profiles the fit clustered with
    (:func:`~mechanism.analysis._strategies.features.plan_profiles`; ``None``: none)."""
    from sklearn.base import clone  # noqa: PLC0415 - scikit-learn: about a second to import, only in the steps that use it

    feats, counts = rows.features, rows.counts.astype(np.float64)
    plans = plan_codes(rows.plans)
    tree = p.method == "agglomerative" and p.cluster_on == "features"
    seed = int(p.random_state)
    if tree:
        agreement = 1.0  # no random step: any seed gives these strategies (tests check it)
    else:
        other = clone(p).set_params(random_state=(seed + 1) % 2**32)
        agreement = _trajectory_ari(labels, cluster_rows(other, feats, counts, plans, profiles), rows.counts)
    stab: dict[int, float] = {}
    if p.n_bootstrap > 0 and len(feats) > 1:
        if tree:
            # One distance matrix of the clustered rows serves every resample; the light
            # tail outside it (beyond AGGLOMERATIVE_MAX_ROWS rows) is left out.
            heavy = core(rows.counts)
            dist = distances(feats[heavy].astype(np.float64)) if core_dist is None else core_dist
            keep = np.full(len(feats), -1, dtype=np.int64)
            keep[heavy] = np.arange(len(heavy))
            in_core = keep[rows.row_of] >= 0
            groups = plan_groups(p, plans, heavy)
            core_profiles = None if profiles is None else profiles[heavy]

            def refit(idx: np.ndarray, cnt: np.ndarray) -> np.ndarray:
                cut = agglomerative(dist[np.ix_(idx, idx)], cnt, resolution=p.resolution, linkage=p.linkage,
                                    min_share=p.min_share, groups=None if groups is None else groups[idx],
                                    profiles=None if core_profiles is None else core_profiles[idx],
                                    join=lambda labels: task_variants(labels, cnt, rows, heavy[idx])[0],
                                    min_share_tested=p.min_share_tested, arms=resampled_arms(rows, heavy[idx], cnt))
                joined = task_variants(families(p, cut, cnt, rows, heavy[idx])[0], cnt, rows, heavy[idx])[0]
                return refine_fit(p, endings(joined, cnt, rows, heavy[idx])[0], cnt, rows, heavy[idx])

            stab = bootstrap_stability(refit, len(heavy), labels[heavy], keep[rows.row_of][in_core],
                                       rows.questions[in_core], n_boot=p.n_bootstrap, random_state=seed)
        else:
            stab = bootstrap_stability(lambda idx, cnt: cluster_rows(p, feats[idx], cnt, plans[idx],
                                                                     None if profiles is None else profiles[idx]),
                                       len(feats),
                                       labels, rows.row_of, rows.questions, n_boot=p.n_bootstrap, random_state=seed)
    return stab, agreement


def sweep(space: Any, resolutions: Sequence[float] | None) -> pl.DataFrame:
    """:meth:`StrategySpace.sweep`: the fitted space's distinct rows clustered again by clones
    that differ in ``resolution`` (the space itself never changes)."""
    from sklearn.base import clone  # noqa: PLC0415 - scikit-learn: about a second to import, only in the steps that use it

    if space.method != "agglomerative":
        raise MechanismError("`sweep` needs method='agglomerative' (it varies the cut of its tree)")
    if resolutions is None:
        resolutions = [round(space.resolution * f, 3) for f in (0.5, 0.75, 1.0, 1.25, 1.5)]
    for r in resolutions:
        if not r > 0:
            raise MechanismError(f"`resolutions` must be positive, got {r!r}")
    counts = space.train_counts_.astype(np.float64)
    labels = space.train_labels_
    plans = getattr(space, "train_plans_", None)
    # the fit's profiles: what a strategy alone in its plan joins by (a space saved before plans
    # were read has neither)
    profiles = None if plans is None or space.plans != "apart" else plan_profiles(plans)
    out = []
    for r in resolutions:
        other = clone(space).set_params(resolution=float(r), random_state=space.seed_)
        lab = cluster_rows(other, space.train_features_, counts, None if plans is None else plan_codes(plans),
                           profiles)
        n = len(np.unique(lab))
        ari = _trajectory_ari(labels, lab, space.train_counts_)
        for c in sorted(set(labels.tolist()) - {-1}):
            mine = labels == c
            by = np.bincount(lab[mine], weights=counts[mine])
            best = int(np.argmax(by))
            share = float(by[best] / counts[mine].sum())
            mates = sorted(set(labels[(lab == best)].tolist()) - {c, -1})
            out.append((float(r), n, c, best, share, mates, ari))
    return pl.DataFrame(out, schema={"resolution": pl.Float64, "n_strategies": pl.Int64, "strategy": pl.Int64,
                                     "cluster": pl.Int64, "kept": pl.Float64, "merged_with": pl.List(pl.Int64),
                                     "ari_vs_fit": pl.Float64}, orient="row")
