"""Reading calls by their place when the question picks the tools.

A strategy is how an agent works, not what it was asked, so strategies drawn per episode are
used on every question alike: the question explains little of which strategy an episode
took. An agent whose requests pick among many tools (fourteen APIs: the weather in one
request, a quote and a rate in the next) breaks that when its calls are read by name: the
strategies found are then the requests' tools, and the question explains them. Its strategy
is the shape of its calls: one call, a chain that feeds one result into the next call, the
same tool on several items, a cross-check with another tool.

So where the question decides some of the tools (:func:`~mechanism.analysis._strategies.features.task_calls`
finds such tools), those tools carry a large part of the calls (:data:`PLACE_CALL_SHARE`) and
the strategies found by name track the question (their adjusted mutual
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

The question's tools must carry a large part of the calls: a question that decides one step
among many (a phone GUI's ``type``, a text game's ``clean`` / ``heat`` / ``put``) leaves the
strategy in the names of the other calls, which a reading by place would erase. Seeds 0-2 at 30
and 60 questions: the API-calling world's task tools carry 0.47-0.61 of its calls; the text
game's 0.15-0.33, the spreadsheet's 0.10-0.23, the REST world's 0.17-0.19 and the phone GUI's
0.11-0.13. Without the share, the phone GUI at 30 questions (seed 2, association by name
0.056) and the text game (seed 0, 0.18) were read by place, and the GUI fell below its floor
(ARI 0.50, TF-IDF 0.73).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mechanism.analysis.segmentation import TaskCalls

#: Strategies read by name whose adjusted mutual information with the question reaches this
#: are read again by place (module docstring).
PLACE_ASSOCIATION = 0.05
#: The reading by place is tried only where the tools the question decides carry at least this
#: share of all calls (module docstring: 0.47-0.61 where the question picks the tools, at most
#: 0.33 elsewhere; any value between makes the same choice).
PLACE_CALL_SHARE = 0.4
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
    try: the question decides none of the tools (``task`` empty), its tools carry under
    :data:`PLACE_CALL_SHARE` of the calls, or the episodes call fewer than two tools in all (by
    place they would read alike).

    Examples
    --------
    >>> read_by_place(TaskCalls(frozenset({"fx_rate"}), drop=True), ["geocode > fx_rate", "news > fx_rate"]).to_dict()
    {'tools': ['fx_rate', 'geocode', 'news'], 'drop': False, 'by_place': True}
    >>> read_by_place(TaskCalls(frozenset({"type"}), drop=True), ["tap > tap > type", "swipe > tap"]) is None
    True
    >>> read_by_place(TaskCalls(), ["geocode > fx_rate"]) is None
    True
    """
    if not task.tools or task.by_place:
        return None
    calls = [t.rstrip("!") for tl in tools if tl for t in tl.split(" > ") if t]
    called = set(calls)
    if len(called) < 2 or sum(c in task.tools for c in calls) < PLACE_CALL_SHARE * len(calls):
        return None
    return TaskCalls(frozenset(called), drop=False, by_place=True, alike=task.alike, segments=task.segments)


def prefer_places(by_name: float, by_place: float) -> bool:
    """Whether the reading by place is kept: it at least halves the association of the
    reading by name (:data:`PLACE_REDUCTION`).

    >>> prefer_places(0.12, 0.04), prefer_places(0.12, 0.08)
    (True, False)
    """
    return by_place <= PLACE_REDUCTION * by_name
