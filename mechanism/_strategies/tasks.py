"""One strategy on two kinds of task: strategies whose plans differ in one block of tools that
the question decides are one strategy.

An agent that checks the calendar before acting ends with ``create_event`` on a request for a
meeting and with ``send_email`` on a request for a reply: the task picks the last tool, the
approach is the same. Two strategies after the cut are candidates when their typical tool plans
(:func:`~mechanism._strategies.features.tool_plan`) are equal but for :data:`MAX_BLOCK` tool in
the place of another, the rest of the plan shared (an inserted or removed step is an optional
step or another strategy; two plans with nothing alike are two strategies, whatever questions
each is used on). They are joined when the data say
the block is the task's: the two are (nearly) never used on the same question although, used
independently of the question, they would share many. Over the questions, the number holding
both is compared with its distribution under independence (each trajectory of question ``q``
in A with probability ``p_A``, the strategy's share; a Poisson-binomial over questions, exact);
the pair is joined when that count is at most :data:`TASK_RATIO` of its expectation and its
lower tail probability is below :data:`TASK_ALPHA`.

Strategies drawn per episode share questions at the rate independence says, so they are never
joined, whatever their arms (the arms do not enter). Neither does the outcome (DESIGN.md
section 5). A strategy that differs from another in its tools *and* is used on other questions
(a comparison strategy on comparison questions) is joined only when the tools differ in one
block; :meth:`~mechanism.StrategySpace.association` reports how far the remaining strategies
track question type.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

MAX_BLOCK = 1
TASK_RATIO = 0.25
TASK_ALPHA = 1e-3


def block_apart(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The blocks in which two plans differ (``a``'s, ``b``'s), when one block of at most
    :data:`MAX_BLOCK` tools takes the place of another of the same length; else ``None``.

    Examples
    --------
    >>> block_apart(("list_events", "create_event"), ("list_events", "send_email"))
    (('create_event',), ('send_email',))
    >>> block_apart(("goto", "read_page"), ("goto", "read_page", "type", "click")) is None
    True
    >>> block_apart(("a", "b"), ("a", "b")) is None, block_apart(("a",), ("b",)) is None
    (True, True)
    """
    if a == b:
        return None
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    j = 0
    while j < min(len(a), len(b)) - i and a[len(a) - 1 - j] == b[len(b) - 1 - j]:
        j += 1
    x, y = a[i:len(a) - j], b[i:len(b) - j]
    # the rest of the plan must be shared: with nothing else alike, two whole plans that the
    # question separates are two strategies each used on its own questions
    if len(x) != len(y) or len(x) > MAX_BLOCK or len(x) == len(a):
        return None
    return x, y


def shared_questions(in_a: np.ndarray, in_b: np.ndarray, n_q: np.ndarray, p_a: float, p_b: float
                     ) -> tuple[int, float, float]:
    """Questions holding both strategies: observed, expected under independence, and the
    probability of so few or fewer (exact Poisson-binomial lower tail).

    ``in_a``, ``in_b``: whether each question holds a trajectory of each; ``n_q``: trajectories
    per question; ``p_a``, ``p_b``: the strategies' shares of all trajectories.

    Examples
    --------
    >>> n = np.full(40, 8)
    >>> obs, exp, p = shared_questions(np.arange(40) < 20, np.arange(40) >= 20, n, 0.125, 0.125)
    >>> obs, round(exp, 1), p < 1e-6
    (0, 16.5, True)
    """
    n_q = n_q.astype(np.float64)
    both = 1 - (1 - p_a) ** n_q - (1 - p_b) ** n_q + np.clip(1 - p_a - p_b, 0, 1) ** n_q
    both = np.clip(both, 0.0, 1.0)
    observed = int(np.sum(in_a & in_b))
    expected = float(both.sum())
    # P(X <= observed), X a sum of independent Bernoulli(both[q]): the distribution of X kept
    # up to `observed` over the questions
    dist = np.zeros(observed + 1)
    dist[0] = 1.0
    for pq in both:
        dist[1:] = dist[1:] * (1 - pq) + dist[:-1] * pq
        dist[0] *= 1 - pq
    return observed, expected, float(dist.sum())


def merge_task_variants(labels: np.ndarray, counts: np.ndarray, plans: Sequence[str],
                        questions_of_row: Sequence[np.ndarray], n_questions: int, *,
                        alpha: float = TASK_ALPHA, ratio: float = TASK_RATIO) -> tuple[np.ndarray, list[dict]]:
    """Join strategies that are one strategy on two kinds of task (module docstring).

    Parameters
    ----------
    labels, counts, plans
        Strategy (-1: outlier, left alone), trajectory count and tool plan of each distinct row.
    questions_of_row
        For each distinct row, ``(question codes, trajectory counts)`` of its trajectories: two
        integer arrays of equal length.
    n_questions
        Number of question codes.

    Returns
    -------
    labels, merges
        The labels with each joined set under its largest member's label, and one record per
        candidate pair: ``kept``/``joined``, ``blocks`` (the two blocks, ``" > "``-joined),
        ``observed``, ``expected``, ``p``, ``merged``.
    """
    labels = np.asarray(labels).copy()
    ids = sorted(set(labels.tolist()) - {-1})
    if len(ids) < 2:
        return labels, []
    total = float(np.sum(counts))
    n_q = np.zeros(n_questions)
    per: dict[int, np.ndarray] = {c: np.zeros(n_questions) for c in ids}
    typical: dict[int, tuple[str, ...]] = {}
    weight: dict[int, float] = {}
    for c in ids:
        rows = np.flatnonzero(labels == c)
        by_plan: dict[str, float] = {}
        for r in rows:
            q, k = questions_of_row[r]
            np.add.at(per[c], q, k)
            by_plan[plans[r]] = by_plan.get(plans[r], 0.0) + float(counts[r])
        weight[c] = float(counts[rows].sum())
        top = min(by_plan, key=lambda s: (-by_plan[s], s))
        typical[c] = tuple(t for t in top.split(" > ") if t)
    for c in ids:
        n_q += per[c]
    for r in np.flatnonzero(labels == -1):  # outliers hold questions' trajectories too
        q, k = questions_of_row[r]
        np.add.at(n_q, q, k)
    candidates = []
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            blocks = block_apart(typical[a], typical[b]) if typical[a] and typical[b] else None
            if blocks is None:
                continue
            obs, exp, p = shared_questions(per[a] > 0, per[b] > 0, n_q, weight[a] / total, weight[b] / total)
            candidates.append((p, a, b, blocks, obs, exp))
    root = {c: c for c in ids}

    def find(c: int) -> int:
        while root[c] != c:
            root[c] = root[root[c]]
            c = root[c]
        return c

    merges = []
    for p, a, b, blocks, obs, exp in sorted(candidates, key=lambda t: (t[0], t[1], t[2])):
        joined = p < alpha and obs <= ratio * exp and find(a) != find(b)
        if joined:
            ra, rb = find(a), find(b)
            big, small = (ra, rb) if (weight[ra], -ra) >= (weight[rb], -rb) else (rb, ra)
            root[small] = big
            weight[big] += weight[small]
        merges.append({"kept": a, "joined": b, "blocks": [" > ".join(blocks[0]), " > ".join(blocks[1])],
                       "observed": obs, "expected": exp, "p": p, "merged": bool(joined)})
    out = np.array([find(c) if c != -1 else -1 for c in labels.tolist()], dtype=np.int64)
    return out, merges


def row_questions(row_of: np.ndarray, questions: np.ndarray, n_rows: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """For each distinct row: the question codes of its trajectories and how many of them each
    holds (from each trajectory's row and question code).

    Examples
    --------
    >>> [(q.tolist(), k.tolist()) for q, k in row_questions(np.array([0, 0, 1]), np.array([3, 3, 1]), 2)]
    [([3], [2.0]), ([1], [1.0])]
    """
    pairs, k = np.unique(np.column_stack([row_of, questions]), axis=0, return_counts=True)
    out: list[tuple[np.ndarray, np.ndarray]] = []
    starts = np.searchsorted(pairs[:, 0], np.arange(n_rows + 1)) if len(pairs) else np.zeros(n_rows + 1, int)
    for r in range(n_rows):
        lo, hi = starts[r], starts[r + 1]
        out.append((pairs[lo:hi, 1].astype(np.int64), k[lo:hi].astype(np.float64)))
    return out


def task_variants(labels: np.ndarray, counts: np.ndarray, rows: Any, index: np.ndarray | None = None
                  ) -> tuple[np.ndarray, list[dict]]:
    """:func:`merge_task_variants` of the strategies ``labels`` of the distinct rows ``index``
    (all by default) of a fit's rows (:class:`~mechanism._strategies.features.FitRows`) with
    counts ``counts``; a resample's counts scale each row's question counts."""
    index = np.arange(len(rows.plans)) if index is None else np.asarray(index)
    every = row_questions(rows.row_of, rows.questions, len(rows.plans))
    base = rows.counts[index].astype(np.float64)
    scale = np.asarray(counts, dtype=np.float64) / np.maximum(base, 1.0)
    held = [(every[r][0], every[r][1] * s) for r, s in zip(index.tolist(), scale)]
    n_q = int(rows.questions.max()) + 1 if len(rows.questions) else 0
    return merge_task_variants(labels, np.asarray(counts, dtype=np.float64), [rows.plans[r] for r in index],
                               held, n_q)
