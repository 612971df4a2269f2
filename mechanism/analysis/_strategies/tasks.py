"""One strategy on several kinds of task: strategies of one plan, once the tools the question
decides are read as one mark, that are (nearly) never used on the same question are one.

An agent that checks the reservation before acting ends with ``search_flights`` then
``change_reservation`` on a request to move a flight and with ``cancel_reservation`` on a
cancellation: the task picks the last tools, the approach is the same. The tools a question
decides are found from the data (:func:`~mechanism.analysis._strategies.features.task_tools`), and two
strategies after the cut are candidates when their typical plans, each run of those tools read
as one mark (:func:`~mechanism.analysis._strategies.features.task_plan`), are one plan holding the mark;
or one plan of two steps or more, which the cut split on what the question supplies (a table
the question names). A plan of one tool (searches only) is left to the cut: there two
strategies of one tool used on different questions are two strategies. Two plans that differ in
a tool no question decides are never candidates (an inserted step is an optional step or
another strategy).

They are joined when the data say the difference is the task's: the two are (nearly) never
used on the same question although, used independently of the question, they would share
many. Over the questions, the number holding both is compared with its distribution under
independence (each trajectory of question ``q`` in A with probability ``p_A``, the strategy's
share; a Poisson-binomial over questions, exact); the pair is joined when that count is at
most :data:`TASK_RATIO` of its expectation and its lower tail probability is below
:data:`TASK_ALPHA`. The most significant pair is joined first and the joined strategy is tested
again against the rest, so an approach cut over four kinds of task gathers fragment by
fragment, each test reading more trajectories than one fragment holds.

Strategies drawn per episode share questions at the rate independence says, so they are never
joined, whatever their arms (the arms do not enter). Neither does the outcome, which would fold
execution into composition. :meth:`~mechanism.StrategySpace.association` reports how far the remaining
strategies track question type.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mechanism.analysis._strategies.features import TASK_MARK, task_plan
from mechanism.analysis._strategies.joins import typical as typical_of

TASK_RATIO = 0.25
TASK_ALPHA = 1e-3


def _swapped(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The tools each plan calls and the other does not, in order."""
    ta, tb = (list(dict.fromkeys(t.rstrip("+") for t in plan)) for plan in (a, b))
    return [t for t in ta if t not in tb], [t for t in tb if t not in ta]


def shared_questions(observed: int, n_q: np.ndarray, p_a: float, p_b: float, *,
                     ratio: float | None = None, floor: float | None = None) -> tuple[float, float]:
    """For ``observed`` questions holding both strategies: the number expected under
    independence, and the probability of so few or fewer (exact Poisson-binomial lower tail).

    ``n_q``: trajectories per question; ``p_a``, ``p_b``: the strategies' shares of all
    trajectories. With ``ratio``, the tail is computed only where ``observed`` is at most
    ``ratio`` of the expected count (else it is 1.0: the pair cannot be joined), and with
    ``floor`` it stops at the probability of no shared question where that is at least ``floor``
    (a lower bound of the tail: the pair cannot be joined at a level below it). Questions with
    equally many trajectories share one probability, so the tail is a convolution of one
    binomial per distinct count: linear in the questions, however many there are.

    Examples
    --------
    >>> exp, p = shared_questions(0, np.full(40, 8), 0.125, 0.125)
    >>> round(exp, 1), p < 1e-6
    (16.5, True)
    """
    from scipy.stats import binom  # noqa: PLC0415 - scipy: loaded by the steps that use it, not at import

    # sizes are trajectory counts (a resample's weighted counts rounded to whole trajectories)
    sizes, m = np.unique(np.rint(np.asarray(n_q, dtype=np.float64)), return_counts=True)
    both = 1 - (1 - p_a) ** sizes - (1 - p_b) ** sizes + np.clip(1 - p_a - p_b, 0, 1) ** sizes
    both = np.clip(both, 0.0, 1.0)
    observed = int(observed)
    expected = float(np.sum(both * m))
    if ratio is not None and observed > ratio * expected:
        return expected, 1.0
    if floor is not None:
        # P(X <= observed) >= P(X = 0): where that alone is at least `floor`, so is the tail
        with np.errstate(divide="ignore"):
            none = float(np.exp(np.sum(m * np.log1p(-np.minimum(both, 1.0)))))
        if none >= floor:
            return expected, none
    # P(X <= observed), X a sum over the distinct sizes of Binomial(m, both): the pmf kept up to
    # `observed` and convolved size by size
    ks = np.arange(observed + 1)
    dist = np.zeros(observed + 1)
    dist[0] = 1.0
    for mg, pg in zip(m, both):
        dist = np.convolve(dist, binom.pmf(ks, int(mg), pg))[:observed + 1]
    return expected, float(min(1.0, dist.sum()))


def merge_task_variants(labels: np.ndarray, counts: np.ndarray, plans: Sequence[str], traj_row: np.ndarray,
                        traj_question: np.ndarray, n_questions: int, *, traj_weight: np.ndarray | None = None,
                        task: frozenset[str] = frozenset(), alpha: float = TASK_ALPHA, ratio: float = TASK_RATIO,
                        ) -> tuple[np.ndarray, list[dict]]:
    """Join strategies that are one strategy on several kinds of task (module docstring).

    Parameters
    ----------
    labels, counts, plans
        Strategy (-1: outlier, left alone), trajectory count and tool plan of each distinct row.
    traj_row, traj_question, traj_weight
        Each trajectory's distinct row (an index into ``labels``; -1: a row not clustered
        here), question code and weight (default 1).
    n_questions
        Number of question codes.
    task
        The tools the question decides (:func:`~mechanism.analysis._strategies.features.task_tools`).

    Returns
    -------
    labels, merges
        The labels with each joined set under its heavier member's label, and one record per
        join made, in order, then per candidate pair left: ``kept``/``joined``, ``blocks`` (the
        tools each typical plan calls and the other does not, ``" > "``-joined; both empty for
        fragments of one plan), ``observed``, ``expected``, ``p``, ``merged``.

    Examples
    --------
    >>> rows, task = np.arange(8), frozenset({"b", "c"})
    >>> labels = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    >>> merge_task_variants(labels, np.ones(8), ["a > b"] * 4 + ["a > c"] * 4, rows, rows % 4, 4,
    ...                     task=task)[0].tolist()  # on every question both: two strategies
    [0, 0, 0, 0, 1, 1, 1, 1]
    """
    labels = np.asarray(labels).copy()
    traj_row = np.asarray(traj_row)
    weight_t = np.ones(len(traj_row)) if traj_weight is None else np.asarray(traj_weight, dtype=np.float64)
    held = traj_row >= 0
    rows_q, rows_w = np.asarray(traj_question)[held], weight_t[held]
    n_q = np.bincount(rows_q, weights=rows_w, minlength=n_questions)  # outliers hold questions' trajectories too
    counts = np.asarray(counts, dtype=np.float64)
    total = float(np.sum(counts))
    merges: list[dict] = []
    # the pair least likely under independence is joined, and the joined strategy is tested
    # again against the rest: a strategy split over several kinds of task gathers fragment by
    # fragment, each join giving the next test more trajectories than one fragment has
    while True:
        candidates = _candidates(labels, counts, plans, traj_row[held], rows_q, rows_w, n_q, total, task,
                                 alpha=alpha, ratio=ratio)
        joinable = [c for c in candidates if c["p"] < alpha and c["observed"] <= ratio * c["expected"]]
        if not joinable:
            merges.extend({**c, "merged": False} for c in candidates)
            return labels, merges
        best = joinable[0]
        merges.append({**best, "merged": True})
        labels = np.where(labels == best["joined"], best["kept"], labels)


def _candidates(labels: np.ndarray, counts: np.ndarray, plans: Sequence[str], row: np.ndarray, q: np.ndarray,
                w: np.ndarray, n_q: np.ndarray, total: float, task: frozenset[str], *, alpha: float, ratio: float,
                ) -> list[dict]:
    """Every candidate pair of the strategies ``labels``, tested, most significant first
    (:func:`merge_task_variants`'s records, without ``merged``); the kept one is the heavier."""
    from scipy.sparse import coo_matrix  # noqa: PLC0415 - scipy: loaded by the steps that use it, not at import

    ids = sorted(set(labels.tolist()) - {-1})
    if len(ids) < 2:
        return []
    lab = labels[row]
    clustered = lab >= 0
    code = np.searchsorted(np.asarray(ids), lab[clustered])
    presence = coo_matrix((w[clustered], (code, q[clustered])), shape=(len(ids), len(n_q))).tocsr()
    presence.eliminate_zeros()  # a row's questions: the sorted column indices of its nonzeros
    # each strategy's typical plan (its heaviest, ties by name) and weight, in one pass over rows
    plan_of, weight = typical_of(labels, counts, plans)
    typical = {c: tuple(t for t in plan_of[c].split(" > ") if t) for c in ids}
    # candidates: strategies whose typical plans are one plan once the tools the question
    # decides are read as one mark, where that plan holds such a mark or two steps at least (a
    # plan of one tool, searches only, says nothing of the approach the cut did not see)
    groups: dict[str, list[int]] = {}
    for c in ids:
        read = task_plan(plan_of[c], task)
        if TASK_MARK in read or len(typical[c]) >= 2:
            groups.setdefault(read, []).append(c)
    position = {c: i for i, c in enumerate(ids)}
    out = []
    for members in groups.values():
        for k, a in enumerate(members):
            for b in members[k + 1:]:
                if (weight[b], -b) > (weight[a], -a):
                    a, b = b, a
                ra, rb = position[a], position[b]
                obs = len(np.intersect1d(presence.indices[presence.indptr[ra]:presence.indptr[ra + 1]],
                                         presence.indices[presence.indptr[rb]:presence.indptr[rb + 1]],
                                         assume_unique=True))
                exp, p = shared_questions(obs, n_q, weight[a] / total, weight[b] / total, ratio=ratio, floor=alpha)
                blocks = _swapped(typical[a], typical[b])
                out.append({"kept": a, "joined": b, "blocks": [" > ".join(blocks[0]), " > ".join(blocks[1])],
                            "observed": obs, "expected": exp, "p": p})
    return sorted(out, key=lambda c: (c["p"], c["kept"], c["joined"]))


def task_variants(labels: np.ndarray, counts: np.ndarray, rows: Any, index: np.ndarray | None = None
                  ) -> tuple[np.ndarray, list[dict]]:
    """:func:`merge_task_variants` of the strategies ``labels`` of the distinct rows ``index``
    (all by default) of a fit's rows (:class:`~mechanism.analysis._strategies.features.FitRows`) with
    counts ``counts``; a resample's counts weigh each row's trajectories alike. Where a
    question's trajectories are one policy's habit on it rather than draws (``rows.draws``
    false: they repeat one another in most pairs, or well beyond chance), strategies that never
    share a question say nothing of the task, and none is joined."""
    if not rows.draws:
        return np.asarray(labels).copy(), []
    n_rows = len(rows.plans)
    index = np.arange(n_rows) if index is None else np.asarray(index)
    position = np.full(n_rows, -1, dtype=np.int64)
    position[index] = np.arange(len(index))
    traj_row = position[rows.row_of]
    scale = np.asarray(counts, dtype=np.float64) / np.maximum(rows.counts[index].astype(np.float64), 1.0)
    weight = np.where(traj_row >= 0, scale[np.maximum(traj_row, 0)], 0.0)
    n_q = int(rows.questions.max()) + 1 if len(rows.questions) else 0
    return merge_task_variants(labels, np.asarray(counts, dtype=np.float64), [rows.tool_plans[r] for r in index],
                               traj_row, rows.questions, n_q, traj_weight=weight, task=rows.task)
