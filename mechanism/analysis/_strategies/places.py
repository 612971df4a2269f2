"""Reading calls by their place when the question picks the tools.

A strategy is how an agent works, not what it was asked, so strategies drawn per episode are
used on every question alike: the question explains little of which strategy an episode
took. An agent whose requests pick among many tools (fourteen APIs: the weather in one
request, a quote and a rate in the next) breaks that when its calls are read by name: the
strategies found are then the requests' tools, and the question explains them. Its strategy
is the shape of its calls: one call, a chain that feeds one result into the next call, the
same tool on several items, a cross-check with another tool.

So where the question decides some of the tools (:func:`~mechanism.analysis._strategies.features.task_calls`
finds such tools) and the strategies found by name track the question (their adjusted mutual
information with the question, :func:`question_association`, at least
:data:`PLACE_ASSOCIATION`), the fit is made again with every call read by its place
(:class:`~mechanism.analysis.segmentation.TaskCalls` ``by_place``: the first tool an episode
calls is ``task_call_1``, the next new one ``task_call_2``, and so on), and that reading is
kept when it at least halves the association (:data:`PLACE_REDUCTION`). Read by place, the
same tool on two cities is ``task_call_1`` called again: the shape of a fan-out. Neither arms
nor outcomes enter: the choice is made from the questions alone.

Measured on the planted worlds (MiniLM, seeds 0-2, 60 questions; ``benchmarks/RESULTS.md``):
read by name, the API-calling world's strategies have an association of 0.10-0.14 and read by
place 0.03-0.04 (ARI 0.21 -> 0.52, through one generic tool too). Per seed, every other
world's association read by name is at most 0.025, but the simulator's 0.11, whose one search
tool the question does not decide (no task tool, so no second fit), and the spreadsheet's 0.055
at one seed, where the reading by place did not halve it and the names were kept. Any threshold
from 0.03 to 0.10 makes the same choice on every world (below 0.055 the halving test makes it
for the spreadsheet).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mechanism.analysis.segmentation import TaskCalls

#: Strategies read by name whose adjusted mutual information with the question reaches this
#: are read again by place (module docstring).
PLACE_ASSOCIATION = 0.05
#: The reading by place is kept when its association is at most this share of the named one's.
PLACE_REDUCTION = 0.5
# The association is read on at most this many questions (the first in sorted order): the
# chance correction of the mutual information costs time in questions x strategies x their sizes.
MAX_QUESTIONS = 5_000


def question_association(labels: np.ndarray, questions: np.ndarray) -> float:
    """How far the question explains the strategy of each trajectory: the adjusted mutual
    information of the two labellings (scikit-learn's, arithmetic normalisation: 0 on average
    for independent ones whatever their sizes, 1 where each determines the other; a question
    that decides the strategy among fewer strategies than questions scores below 1);
    outliers (-1) left out.

    Examples
    --------
    >>> q = np.repeat(np.arange(20), 4)
    >>> strategies = np.random.default_rng(0).integers(0, 4, q.size)  # drawn per episode
    >>> round(question_association(strategies, q), 2), round(question_association(q % 4, q), 2)
    (-0.0, 0.54)
    """
    from sklearn.metrics import adjusted_mutual_info_score  # noqa: PLC0415 - scikit-learn: loaded by the steps that use it

    labels, questions = np.asarray(labels), np.asarray(questions)
    keep = labels >= 0
    codes = np.unique(questions, return_inverse=True)[1].ravel()
    keep &= codes < MAX_QUESTIONS
    if keep.sum() < 2 or len(np.unique(labels[keep])) < 2:
        return 0.0
    return float(adjusted_mutual_info_score(codes[keep], labels[keep]))


def read_by_place(task: TaskCalls, tools: Sequence[str | None]) -> TaskCalls | None:
    """The reading by place to try after a fit by name, or ``None`` where there is none to
    try: the question decides none of the tools (``task`` empty), or the episodes call fewer
    than two tools in all (by place they would read alike).

    Examples
    --------
    >>> read_by_place(TaskCalls(frozenset({"fx_rate"}), drop=True), ["geocode > fx_rate", "news"]).to_dict()
    {'tools': ['fx_rate', 'geocode', 'news'], 'drop': False, 'by_place': True}
    >>> read_by_place(TaskCalls(), ["geocode > fx_rate"]) is None
    True
    """
    if not task.tools or task.by_place:
        return None
    called = {t.rstrip("!") for tl in tools if tl for t in tl.split(" > ") if t}
    if len(called) < 2:
        return None
    return TaskCalls(frozenset(called), drop=False, by_place=True, alike=task.alike, segments=task.segments)


def prefer_places(by_name: float, by_place: float) -> bool:
    """Whether the reading by place is kept: it at least halves the association of the
    reading by name (:data:`PLACE_REDUCTION`).

    >>> prefer_places(0.12, 0.04), prefer_places(0.12, 0.08)
    (True, False)
    """
    return by_place <= PLACE_REDUCTION * by_name
