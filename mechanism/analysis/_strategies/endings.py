"""One strategy whatever its last action: strategies whose typical plans differ only in the
final tool are one when those two tools end other plans of the data too.

An on-call agent that reads the metrics and then acts scales the service when they show
saturation and restarts it otherwise; one that describes the pods does the same after it
sees an OOM-killed pod. The approach (what it looks at, in what order) is the strategy; the
last action is the agent's answer to what it saw. The tree cut keeps ``query_metrics >
scale`` and ``query_metrics > restart`` apart (two tool plans), and so splits every approach
that ends this way in two.

Two strategies are candidates when their typical tool plans (each run of one tool read as
one, :func:`~mechanism.analysis._strategies.features.tool_plan`) are one plan of at least two
tools but for the last: the same non-empty prefix, another final tool. They are joined when
the data show the two final tools taking each other's place after at least
:data:`ENDING_CONTEXTS` different prefixes, each ending held by at least :data:`ENDING_SHARE`
of the trajectories (and two of them): then the pair of tools is a choice the agent makes at
the end of more than one approach, not what tells one approach from another. A pair of
final tools seen after one prefix only is left to the cut: there it may be the only thing
two strategies differ in. Nor are two tools one of which also ends plans right after the other
(held by :data:`ENDING_SHARE` too): the one is a step taken before the other (a look at the
flight status, then a handoff to a human), not its alternative; measured on the multi-agent
world written blind, 0.403 -> 0.413, every other world unchanged. Two prefixes one inserted
step apart (``lookup`` and ``ask_user > lookup``: the customer asked for a code first, or not)
are one approach (:func:`distinct_contexts`): three ways of ending it (answer after a look at
the flight, consult a specialist, hand off to a human) are three strategies, not one choice made
after two approaches; measured with the consulted agents read as one verb, the multi-agent world
0.420 -> 0.515 (0.413 with either change alone), every other world unchanged, typed and through
one ``act`` tool. A plan of one tool has no prefix and is never a candidate (``restart``
straight away is another strategy than ``query_metrics > restart``).

Arms and outcomes never enter, nor does the question (the task test,
:mod:`mechanism.analysis._strategies.tasks`, reads that). Measured on every planted world
(``benchmarks/bench_strategies_floor.py``, seeds 0-2, default embedder): the incident-response
world rises from 0.899 to 1.0 (typed tools and one generic tool alike) and no world changes;
with any ending counted (one trajectory) web navigation falls 0.649 -> 0.625, and with
candidates seen after one prefix joined the customer-service world falls 1.0 -> 0.81 and
research 0.81 -> 0.49 (hashing embedder).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from mechanism.analysis._strategies.families import one_step_apart
from mechanism.analysis._strategies.joins import Joins, typical

#: An ending (a prefix and its final tool) counts where at least this share of the
#: trajectories (and two) end so; measured alike from 2 to 10 of 480 trajectories.
ENDING_SHARE = 0.01
#: Two final tools are interchangeable once they take each other's place after this many
#: different prefixes (2 and 3 measured alike).
ENDING_CONTEXTS = 2


def _tools(plan: str) -> tuple[str, ...]:
    return tuple(t.rstrip("+") for t in plan.split(" > ") if t)


def swapped_endings(plans: Sequence[str], counts: np.ndarray) -> dict[frozenset[str], set[tuple[str, ...]]]:
    """For each pair of final tools: the prefixes after which both end plans held by at least
    :data:`ENDING_SHARE` of the trajectories (and two).

    Examples
    --------
    >>> plans = ["look > a", "look > b", "scan > look > a", "scan > look > b", "a"]
    >>> {tuple(sorted(k)): sorted(v) for k, v in swapped_endings(plans, np.array([5, 5, 5, 5, 50])).items()}
    {('a', 'b'): [('look',), ('scan', 'look')]}
    """
    counts = np.asarray(counts, dtype=np.float64)
    least = max(2.0, ENDING_SHARE * float(counts.sum()))
    ends: dict[tuple[str, ...], dict[str, float]] = {}
    for plan, n in zip(plans, counts):
        tools = _tools(plan)
        if len(tools) >= 2:
            last = ends.setdefault(tools[:-1], {})
            last[tools[-1]] = last.get(tools[-1], 0.0) + float(n)
    # two tools one of which ends plans right after the other are not alternatives at the end:
    # the one is a step taken before the other (an optional look before a handoff)
    chained = {frozenset(prefix[-1:] + (t,)) for prefix, last in ends.items() for t, n in last.items()
               if n >= least and prefix[-1] != t}
    out: dict[frozenset[str], set[tuple[str, ...]]] = {}
    for prefix, last in ends.items():
        held = sorted(t for t, n in last.items() if n >= least)
        for i, a in enumerate(held):
            for b in held[i + 1:]:
                if frozenset((a, b)) not in chained:
                    out.setdefault(frozenset((a, b)), set()).add(prefix)
    return out


def distinct_contexts(prefixes: Iterable[tuple[str, ...]]) -> int:
    """How many different approaches ``prefixes`` are: prefixes one inserted step apart (a
    question to the customer first, or not) are one approach, joined transitively.

    >>> distinct_contexts([("look",), ("ask", "look"), ("scan",)])
    2
    """
    prefixes = sorted(set(prefixes))
    joins = Joins(dict.fromkeys(range(len(prefixes)), 1.0))
    for i, a in enumerate(prefixes):
        for j in range(i + 1, len(prefixes)):
            if one_step_apart(a, prefixes[j]) is not None:
                joins.join(i, j)
    return len({joins.find(i) for i in range(len(prefixes))})


def join_endings(labels: np.ndarray, counts: np.ndarray, plans: Sequence[str]) -> tuple[np.ndarray, list[dict]]:
    """Join strategies that differ only in an interchangeable last tool (module docstring).

    Parameters
    ----------
    labels
        Strategy of each distinct row (-1: outlier, left alone).
    counts
        Trajectories per distinct row.
    plans
        Each distinct row's tool plan (:func:`~mechanism.analysis._strategies.features.tool_plan`).

    Returns
    -------
    labels, joins
        The labels with each joined set under its heaviest member's label, and one record per
        candidate pair: ``kept``/``joined`` (the labels), ``endings`` (the two final tools,
        ``" / "``-joined), ``contexts`` (prefixes after which they take each other's place),
        ``merged``.

    Examples
    --------
    >>> plans = ["look > a", "look > b", "scan > a", "scan > b"]
    >>> join_endings(np.array([0, 1, 2, 2]), np.array([5, 5, 5, 5]), plans)[0].tolist()
    [0, 0, 2, 2]

    After one approach with and without a first step (``ask``), they are not joined:

    >>> join_endings(np.array([0, 1, 2, 2]), np.array([5, 5, 5, 5]), ["look > a", "look > b", "ask > look > a",
    ...              "ask > look > b"])[0].tolist()
    [0, 1, 2, 2]
    >>> join_endings(np.array([0, 1, 2, 3]), np.array([5, 5, 5, 5]), ["look > a", "look > b", "scan > c",
    ...              "scan > d"])[0].tolist()  # each pair seen after one prefix: left apart
    [0, 1, 2, 3]
    """
    labels = np.asarray(labels).copy()
    counts = np.asarray(counts, dtype=np.float64)
    ids = sorted(set(labels.tolist()) - {-1})
    if len(ids) < 2:
        return labels, []
    plan_of, weight = typical(labels, counts, plans)
    tools_of = {c: _tools(plan) for c, plan in plan_of.items()}
    swaps = swapped_endings(plans, counts)
    joins = Joins(weight)
    records = []
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            ta, tb = tools_of[a], tools_of[b]
            if len(ta) < 2 or len(ta) != len(tb) or ta[:-1] != tb[:-1] or ta[-1] == tb[-1]:
                continue
            contexts = distinct_contexts(swaps.get(frozenset((ta[-1], tb[-1])), ()))
            merged = contexts >= ENDING_CONTEXTS
            if merged:
                joins.join(a, b)
            records.append({"kept": a, "joined": b, "endings": " / ".join(sorted((ta[-1], tb[-1]))),
                            "contexts": contexts, "merged": merged})
    return joins.labels(labels), records


def endings(labels: np.ndarray, counts: np.ndarray, rows: Any, index: np.ndarray | None = None
            ) -> tuple[np.ndarray, list[dict]]:
    """:func:`join_endings` of the strategies ``labels`` of the distinct rows ``index`` (all by
    default) of a fit's rows (:class:`~mechanism.analysis._strategies.features.FitRows`) with
    counts ``counts`` (a resample's)."""
    index = np.arange(len(rows.tool_plans)) if index is None else np.asarray(index)
    return join_endings(labels, counts, [rows.tool_plans[i] for i in index])
