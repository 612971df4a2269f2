"""Trajectories as sets of move tokens (:func:`mechanism.analysis.segmentation.move_tokens`).

Every token present counts 1, absent 0: no weight is set by hand, and every kind of move and
every tool can separate two strategies. Euclidean distance between two trajectories is then
the square root of the number of tokens one has and the other lacks. Counts are left out on
purpose: repeating a search three times instead of twice is the same strategy; repeating it
at all is not (a ``repeat`` token). Content never enters: tokens name tools, relations,
sources and scopes, never a value.
"""
from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mechanism.analysis.segmentation import PARALLEL_MARK, TASK_MARK, TaskCalls
from mechanism.core.errors import MechanismError

if TYPE_CHECKING:
    from scipy.sparse import spmatrix

# At most this many tokens get a column of their own (the most frequent over trajectories);
# rarer ones count together in the last column. Bounds the memory of the joined space
# (20,000 distinct rows x 1,000 columns of float32 is 80 MB) on data whose move sequences are
# nearly all distinct.
MAX_VOCABULARY = 512


def fit_vocabulary(tokens: Sequence[str], *, max_size: int = MAX_VOCABULARY,
                   ignore: frozenset[str] = frozenset()) -> list[str]:
    """The tokens that get a column: the ``max_size`` most frequent over the fitted
    trajectories (``tokens`` holds each trajectory's, space-separated), ties by name, sorted;
    those in ``ignore`` (:func:`task_tokens`) never.

    Examples
    --------
    >>> fit_vocabulary(["a b", "a c", "a b"], max_size=2)
    ['a', 'b']
    """
    freq: Counter[str] = Counter()
    for row, n in Counter(tokens).items():
        for t in set(row.split()):
            # a declared kind is a block of its own, not a move; a token the question decides is the task's
            if not t.startswith(GROUP_TOKEN) and t not in ignore:
                freq[t] += n
    ranked = sorted(freq, key=lambda t: (-freq[t], t))[:max_size]
    return sorted(ranked)


def token_matrix(tokens: Sequence[str], vocabulary: Sequence[str], ignore: frozenset[str] = frozenset()
                 ) -> np.ndarray:
    """Presence of each vocabulary token in each trajectory (``len(tokens) x len(vocabulary)``).

    Tokens outside the vocabulary (a tool never seen at fit, or too rare to get a column)
    are counted in one extra column, ``sqrt(number of them)``: each adds 1 to the
    trajectory's squared norm, so a new checkpoint's unknown moves push it away from every
    fitted strategy rather than vanishing. Tokens in ``ignore`` (the question's,
    :func:`task_tokens`) count nowhere.
    """
    index = {t: i for i, t in enumerate(vocabulary)}
    out = np.zeros((len(tokens), len(vocabulary) + 1), dtype=np.float64)
    for r, row in enumerate(tokens):
        unseen = 0
        for t in set(row.split()):
            i = index.get(t)
            if i is None:
                unseen += t not in ignore
            else:
                out[r, i] = 1.0
        out[r, -1] = np.sqrt(unseen)
    return out


def distinct_pairs(renderings: Sequence[str], tokens: Sequence[str]
                   ) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
    """The distinct (rendering, move tokens) pairs of a rendered table.

    Returns
    -------
    first
        The first row of each pair, in order of first appearance.
    inverse
        Each row's pair.
    texts
        The distinct renderings, in order of first appearance (the order an embedder that
        deduplicates would see them in).
    text_of_pair
        Each pair's index into ``texts``.
    """
    text_index: dict[str, int] = {}
    codes = np.fromiter((text_index.setdefault(r, len(text_index)) for r in renderings),
                        dtype=np.int64, count=len(renderings))
    if not len(codes):
        return (np.zeros(0, np.int64), np.zeros(0, np.int64), [], np.zeros(0, np.int64))
    token_index: dict[str, int] = {}
    tcodes = np.fromiter((token_index.setdefault(t, len(token_index)) for t in tokens),
                         dtype=np.int64, count=len(renderings))
    keyed = np.column_stack([codes, tcodes])
    _, first, inverse = np.unique(keyed, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    order = np.argsort(first, kind="stable")  # pairs in order of first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return first[order], rank[inverse], list(text_index), codes[first[order]]


def join(tokens: Sequence[str], emb: np.ndarray, vocabulary: Sequence[str], *, structure_weight: float,
         embedding_weight: float, n_groups: int = 0, ignore: frozenset[str] = frozenset()) -> np.ndarray:
    """The joined space of some rows: token presence columns times ``structure_weight`` (the
    tokens in ``ignore`` left out) beside the embedding times ``embedding_weight`` and, with
    ``n_groups``, the :func:`group_block`.

    Elementwise in each row, so joining each distinct pair once gives exactly the rows joining
    every trajectory would; rounded to 5 decimals so that one rendering embedded in different
    batches still collapses to one row.
    """
    groups = group_block(tokens, n_groups)
    if n_groups:
        tokens = [" ".join(t for t in row.split() if not t.startswith(GROUP_TOKEN)) for row in tokens]
    left = token_matrix(tokens, vocabulary, ignore) * structure_weight
    right = emb.astype(np.float64) * embedding_weight
    return np.round(np.hstack([left, right, groups]), 5).astype(np.float32)


#: Rank the move-token columns are reduced to (``StrategySpace(token_rank=...)``). Chosen leaving one
#: world out over the thirty planted worlds at seeds 0-5 (benchmarks/RESULTS.md): 25 in all 30 folds,
#: against 20, 30 and every column (sum of mean ARIs 24.067, against 23.995, 24.015 and 23.918); paired
#: by world and seed, +0.149 a seed over every column, 95 % interval [+0.022, +0.277]. It lifts the
#: todo coder over its floor (0.590 -> 0.670, TF-IDF 0.608): noise steps at fixed rates, 512 tokens.
TOKEN_RANK = 25


def token_basis(block: np.ndarray, counts: np.ndarray, rank: int | None) -> tuple[np.ndarray, np.ndarray] | None:
    """The mean and the first ``rank`` principal axes of the move-token columns (``block``: one
    row per distinct joined row, ``counts`` its trajectories), or ``None`` where ``rank`` is
    ``None`` or keeps every axis.

    A step taken at a fixed rate whatever the strategy (a todo-list update, a ``git status``)
    is a token column independent of every other: its variance spreads over axes of its own,
    while the steps a strategy is made of vary together and fill the first axes. Distances
    read on the first axes alone (:func:`project_tokens`) count the strategy's steps and
    hardly the noise, with no weight set by hand. On worlds with a few dozen tokens the first
    ``rank`` axes hold every axis and nothing changes.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> strategy = np.repeat([[1, 1, 0, 0], [0, 0, 1, 1]], 50, axis=0)
    >>> noise = (rng.random((100, 6)) < 0.3).astype(float)
    >>> mean, axes = token_basis(np.hstack([strategy, noise]), np.ones(100), rank=1)
    >>> axes.shape, bool(np.abs(axes[0, :4]).min() > np.abs(axes[0, 4:]).max())
    ((1, 10), True)
    >>> token_basis(np.eye(3), np.ones(3), rank=3) is None
    True
    """
    n, v = block.shape
    if rank is None or rank >= min(n, v):
        return None
    w = np.asarray(counts, dtype=np.float64)
    x = block.astype(np.float64)
    mean = w @ x / w.sum()
    # rows weighted by their trajectories: the axes of the table as fitted, not of its distinct rows
    _, _, axes = np.linalg.svd((x - mean) * np.sqrt(w)[:, None], full_matrices=False)
    # an axis's sign is the SVD's choice: fixed so that its largest entry is positive (same axes, any machine)
    axes = axes[:rank] * np.sign(axes[np.arange(rank), np.abs(axes[:rank]).argmax(axis=1)])[:, None]
    return mean, axes


def project_tokens(rows: np.ndarray, n_tokens: int, basis: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
    """Joined rows with their first ``n_tokens`` columns (the vocabulary's) replaced by their
    projection on ``basis`` (:func:`token_basis`), in the columns' own units; the other columns
    (unseen tokens, embedding, declared kind) as they were. Rounded as :func:`join` rounds."""
    if basis is None or not len(rows):
        return rows
    mean, axes = basis
    out = rows.astype(np.float64)
    centred = out[:, :n_tokens] - mean
    out[:, :n_tokens] = (centred @ axes.T) @ axes + mean
    return np.round(out, 5).astype(np.float32)


# `by=`: each trajectory's declared task kind rides in its tokens as `G:<index>` (so that one
# rendering under two kinds is two rows) and becomes a one-hot block this far apart: beyond any
# distance of the rest of the joined space, so no cut, merge or assignment crosses kinds.
GROUP_TOKEN = "G:"
GROUP_WEIGHT = 1e3


def group_block(tokens: Sequence[str], n_groups: int) -> np.ndarray:
    """The one-hot block of each row's declared kind (``G:<index>`` in its tokens; a kind the
    space never saw, ``G:?``, gets no column: far from every fitted row), times
    :data:`GROUP_WEIGHT`; ``n_groups`` columns (none without ``by=``).

    Examples
    --------
    >>> group_block(["a G:1", "b G:0", "c G:?"], 2).tolist()
    [[0.0, 1000.0], [1000.0, 0.0], [0.0, 0.0]]
    """
    out = np.zeros((len(tokens), n_groups))
    if n_groups:
        for r, row in enumerate(tokens):
            for t in row.split():
                code = t[len(GROUP_TOKEN):]
                if t.startswith(GROUP_TOKEN) and code.isdigit() and int(code) < n_groups:
                    out[r, int(code)] = GROUP_WEIGHT
    return out


def tool_plan(tools: str | None) -> str:
    """The tools a trajectory calls, in order, each run of one tool read as the tool once
    (``tool``) or more than once (``tool+``): what :class:`~mechanism.StrategySpace` keeps
    strategies apart by under ``plans="apart"``.

    Runs are read this way because how often a tool is called in a row is execution (one
    more scroll, a third rewording), while calling it once or again is not (one query, or a
    second that uses the first's result).

    Examples
    --------
    >>> tool_plan("list_tables > describe_table > describe_table > run_sql")
    'list_tables > describe_table+ > run_sql'
    >>> tool_plan("search > search > search"), tool_plan(None)
    ('search+', '')
    """
    out: list[str] = []
    for tool in (tools or "").split(" > "):
        if not tool:
            continue
        if out and out[-1].rstrip("+") == tool:
            out[-1] = tool + "+"
        else:
            out.append(tool)
    return " > ".join(out)


# A tool belongs to the task when the question explains at least this share of whether a
# tool-calling trajectory calls it. Measured on the fifteen worlds (seed 0): the tools a kind
# of task fixes (book, cancel_reservation, create_event, write_range, create_chart) lie at
# 0.6-1.0, the tools an episode's strategy picks at 0.25 or less; only where the request picks
# among fourteen APIs (toolbench) do they spread over 0.1-0.8.
TASK_SHARE = 0.5


def task_tools(tools: Sequence[str | None], questions: np.ndarray, *, share: float = TASK_SHARE) -> frozenset[str]:
    """The tools the question decides: those whose presence in a tool-calling trajectory its
    question explains, by the adjusted between-question share of variance (epsilon squared,
    ``1 - MS_within / MS_total``) at least ``share``.

    The adjustment removes what chance alone gives with few trajectories per question; with one
    per question (nothing within a question to compare with) no tool is the task's, and a tool
    every tool user calls tells nothing either. Neither arms nor outcomes enter.

    Parameters
    ----------
    tools
        Each trajectory's tools, ``" > "``-joined (``None`` or ``""``: no tool called).
    questions
        Each trajectory's question code.

    Examples
    --------
    >>> q = np.repeat(np.arange(4), 4)
    >>> acts = ["look > book" if i % 2 else "book" for i in range(8)] + ["look > cancel", "cancel"] * 4
    >>> sorted(task_tools(acts, q))
    ['book', 'cancel']
    """
    return _question_decided(((x for x in (tl or "").split(" > ") if x) for tl in tools), questions, share)


def _question_decided(items: Iterable[Iterable[str]], questions: np.ndarray, share: float) -> frozenset[str]:
    """:func:`task_tools`'s test on the items each row holds (tools, path segments, move
    tokens; rows holding none left out)."""
    # each (row, item) pair once, items coded as met: linear in the pairs, 16 bytes a pair
    index: dict[str, int] = {}
    traj, codes = array("q"), array("q")
    for i, row in enumerate(items):
        for t in dict.fromkeys(row):
            traj.append(i)
            codes.append(index.setdefault(t, len(index)))
    traj_a = np.frombuffer(traj, dtype=np.int64) if traj else np.zeros(0, np.int64)
    users = np.unique(traj_a)
    n = len(users)
    if n < 2:
        return frozenset()
    q_of = np.full(len(questions), -1, dtype=np.int64)
    q_of[users] = np.unique(np.asarray(questions)[users], return_inverse=True)[1].ravel()
    n_q = int(q_of[users].max()) + 1
    if n <= n_q:
        return frozenset()
    item_names = list(index)
    item = np.frombuffer(codes, dtype=np.int64)
    q = q_of[traj_a]
    size_q = np.bincount(q_of[users], minlength=n_q).astype(np.float64)
    # for a 0/1 presence: SS_total = c - c^2 / n and SS_within = sum over questions of
    # c_q - c_q^2 / n_q, with c (c_q) the rows (of question q) that hold the item
    c = np.bincount(item, minlength=len(item_names)).astype(np.float64)
    cell, c_q = np.unique(item * n_q + q, return_counts=True)
    between = np.bincount(cell // n_q, weights=c_q.astype(np.float64) ** 2 / size_q[cell % n_q],
                          minlength=len(item_names))
    sst, ssw = c - c ** 2 / n, c - between
    keep = sst > 1e-12  # an item every row holding any holds says nothing of the task
    share_of = np.ones_like(sst)
    share_of[keep] = 1 - (ssw[keep] / (n - n_q)) / (sst[keep] / (n - 1))
    return frozenset(str(t) for t, k, v in zip(item_names, keep, share_of) if k and v >= share)


# The move reading's test needs questions asked several times: below this many questions, no
# call is read as the task's, nor with one episode a question (nothing within a question to
# compare with), nor with fewer than TASK_MIN_WITHIN episodes beyond a question's first. The
# chance share is the test's noise: tools drawn whatever the question pass the 0.5 share in
# 4-6 % of tables of 10 questions asked twice, about 1 % at 20-30 and never in 400 at 60 (one
# tool at rates 0.1-0.5, two episodes a question); 30 is what ten questions asked four times
# give, the least the test ran on before. With one episode a question and arm (120 questions,
# two arms), reading the task lifted the planted worlds' mean ARI 0.799 -> 0.840 (REST 0.39 ->
# 0.77, API-calling 0.20 -> 0.45, travel 0.62 -> 0.77; benchmarks/RESULTS.md).
TASK_MIN_QUESTIONS = 10
TASK_MIN_WITHIN = 30
# Where more than this share of the pairs of one question's episodes are the same episode, the
# table reads as each policy's habit on each question (greedy decoding, arms that mostly agree),
# not as draws: a strategy the policy keeps on a question would pass for the question's doing.
# Measured: 0.0-0.43 on the nineteen planted worlds at one and four samples a question and arm
# (60 questions, seed 0), 0.37 on the FireAct agents; two greedy arms that agree on a question's
# strategy half the time give about 0.6 and, tested, lost 0.08 ARI (1.0 -> 0.92), at 80 % about
# 0.84 and collapsed to one strategy (0.59 -> 0.0).
TASK_MAX_REPEATS = 0.5
# Where a question's episodes repeat one another more than this beyond chance
# (question_agreement), the table is read the same way: greedy arms that keep a question's
# strategy but take an optional step each at its own rate repeat one another less than half the
# time, and the test then read every strategy as the question's. Measured (benchmarks/
# bench_strategies_greedy.py, a toy of five strategies and two kinds of task, 120 questions,
# seeds 0-2): arms agreeing 70-90 % with an optional first step at 0.3 or 0.5 give 0.32-0.57
# and ARI 0.0-0.34 with the repeats guard alone, 1.0 with this one; at 50-60 % they give
# 0.24-0.37, of which this catches about half (ARI 0.05-0.29 -> 0.43-0.74). Draws stay under it:
# the nineteen planted worlds at most 0.17 (30-120 questions, one to four episodes a question
# and arm), the FireAct agents 0.16, a table whose kind of task decides every step but an
# optional look (taken at 0.4) 0.27. No threshold tells every habit from every task: draws
# whose kind of task fixes the rest agree p_s (1 - p_t) / (1 - p_t p_s), with p_s the chance
# that two episodes of one question repeat one another (at most 0.5 here, or the repeats guard
# holds) and p_t the chance that two questions ask the same kind of task.
TASK_MAX_AGREEMENT = 0.3


def task_calls(tools: Sequence[str | None], questions: np.ndarray, *, table: dict[str, float] | None = None
               ) -> TaskCalls:
    """The calls the task decides (:func:`task_tools`) and whether the move reading leaves them
    out: yes when calling any of them at all is the question's doing by the same test (a
    ``type`` step that a text message needs and an alarm does not), else they are renamed
    (every episode searches and acts; the request says which search, which act).

    Parameters
    ----------
    tools
        Each trajectory's tools, ``" > "``-joined, as :func:`mechanism.analysis.segmentation.render`
        writes them.
    questions
        Each trajectory's question code.
    table
        :func:`task_table` of ``tools`` and ``questions``, where the caller has it already (the
        fit keeps it as fitted state); computed here otherwise.

    Examples
    --------
    >>> q = np.repeat(np.arange(12), 4)
    >>> acts = ["look > book" if i % 2 else "book" for i in range(24)] + ["look > cancel", "cancel"] * 12
    >>> task_calls(acts, q).to_dict()
    {'tools': ['book', 'cancel'], 'drop': False}
    >>> typed = [("look > " if i % 2 else "") + ("open > type > send" if i < 24 else "open > send") for i in range(48)]
    >>> task_calls(typed, q).to_dict()
    {'tools': ['type'], 'drop': True}
    """
    if untested_reasons(task_table(tools, questions) if table is None else table):
        return TaskCalls()
    task = task_tools(tools, questions)
    called = {t for tl in tools if tl for t in tl.split(" > ")}
    if not task or called <= task:  # every call the task's: nothing would be left to tell strategies by
        return TaskCalls()
    # each tool-calling trajectory as one of two marks: calls one of the task's tools, or not
    marks = [("task" if task & set(tl.split(" > ")) else "other") if tl else "" for tl in tools]
    return TaskCalls(task, drop="task" in task_tools(marks, questions))


def task_testable(rows: Sequence[str | None], questions: np.ndarray, *, agreement: bool = True) -> bool:
    """Whether the table asks enough questions, often enough, for the task test: at least
    :data:`TASK_MIN_QUESTIONS`, twice each on average, with :data:`TASK_MIN_WITHIN` episodes
    beyond each question's first (the test's within-question degrees of freedom), and whether
    its episodes of a question are draws: at most :data:`TASK_MAX_REPEATS` of their pairs the
    same ``rows`` (each episode's tools, paths or tokens, as the test reads them), and, with
    ``agreement``, no more alike than :data:`TASK_MAX_AGREEMENT` beyond chance
    (:func:`question_agreement`). :func:`untested_reasons` says which fails.

    Examples
    --------
    >>> q = np.repeat(np.arange(40), 2)
    >>> task_testable(["look > act", "act"] * 40, q), task_testable(["look > act"] * 80, q)
    (True, False)
    """
    return not untested_reasons(task_table(rows, questions), agreement=agreement)


def task_table(rows: Sequence[str | None], questions: np.ndarray) -> dict[str, float]:
    """The figures :func:`task_testable` decides on: the questions, the trajectories, the share
    of a question's pairs that are the same row (:func:`repeated_share`) and how much more often
    than pairs of two questions (:func:`question_agreement`).

    Examples
    --------
    >>> task_table(["a", "a", "b", "c"], np.array([0, 0, 1, 1]))
    {'questions': 2, 'trajectories': 4, 'repeats': 0.5, 'agreement': 0.5}
    """
    counts = _pair_counts(rows, questions)  # counted once for both shares
    return {"questions": len(np.unique(np.asarray(questions))), "trajectories": len(rows),
            "repeats": _repeats(*counts), "agreement": _agreement(*counts)}


def untested_reasons(table: dict[str, float], *, agreement: bool = True) -> list[str]:
    """Why the task test does not run on a table of these figures (:func:`task_table`), one
    clause each: its size, then :func:`habit_reasons`; none where it runs.

    Examples
    --------
    >>> for clause in untested_reasons({"questions": 10, "trajectories": 10, "repeats": 0.0, "agreement": 0.0}):
    ...     print(clause)
    one episode a question on average, where it needs two
    0 episodes beyond each question's first, where it needs 30
    """
    n_q, n = int(table["questions"]), int(table["trajectories"])
    per = "one episode" if n == n_q else f"{n / max(n_q, 1):.1f} episodes"
    checks = [
        (n_q < TASK_MIN_QUESTIONS, f"{n_q} questions, where it needs {TASK_MIN_QUESTIONS}"),
        (n < 2 * n_q, f"{per} a question on average, where it needs two"),
        (n - n_q < TASK_MIN_WITHIN,
         f"{n - n_q} episodes beyond each question's first, where it needs {TASK_MIN_WITHIN}"),
    ]
    return [clause for failed, clause in checks if failed] + habit_reasons(table, agreement=agreement)


def habit_reasons(table: dict[str, float], *, agreement: bool = True) -> list[str]:
    """Why a question's episodes read as one policy's habit on it, not as draws, from the
    figures of :func:`task_table` (with ``agreement``, :func:`question_agreement` counts too);
    none where they are draws.

    Examples
    --------
    >>> table = {"questions": 40, "trajectories": 80, "repeats": 0.6, "agreement": 0.2}
    >>> [clause.split(",")[0] for clause in habit_reasons(table)]
    ["0.60 of the pairs of a question's episodes call the same tools in the same order"]
    """
    habit = "one policy's habit on each question, as greedy decoding gives"
    checks = [
        (table["repeats"] > TASK_MAX_REPEATS,
         f"{table['repeats']:.2f} of the pairs of a question's episodes call the same tools in the same order, more "
         f"than {TASK_MAX_REPEATS} ({habit})"),
        (agreement and table["agreement"] > TASK_MAX_AGREEMENT,
         f"a question's episodes repeat one another {table['agreement']:.2f} more than episodes of two questions, "
         f"beyond chance, more than {TASK_MAX_AGREEMENT} ({habit})"),
    ]
    return [clause for failed, clause in checks if failed]


def episodes_are_draws(rows: Sequence[str | None], questions: np.ndarray) -> bool:
    """Whether a question's episodes read as draws rather than each policy's habit on it: at
    most :data:`TASK_MAX_REPEATS` of their pairs the same row (:func:`repeated_share`) and no
    more alike than :data:`TASK_MAX_AGREEMENT` beyond chance (:func:`question_agreement`).

    Examples
    --------
    >>> q = np.repeat(np.arange(20), 2)
    >>> episodes_are_draws(["look > search", "search"] * 20, q), episodes_are_draws(["search"] * 40, q)
    (True, False)
    """
    return not habit_reasons(task_table(rows, questions))


def repeated_share(rows: Sequence[str | None], questions: np.ndarray) -> float:
    """The share of the pairs of episodes of one question that are the same row (``None`` and
    ``""`` alike); 0 where no question is asked twice.

    Examples
    --------
    >>> repeated_share(["a", "a", "a", "b", "c", None], np.array([0, 0, 0, 1, 1, 2]))
    0.75
    """
    return _repeats(*_pair_counts(rows, questions))


def _repeats(same_in: int, pairs_in: int, same_all: int, pairs_all: int) -> float:
    return same_in / pairs_in if pairs_in else 0.0


def _pair_counts(rows: Sequence[str | None], questions: np.ndarray) -> tuple[int, int, int, int]:
    """Ordered pairs of episodes: of one question that are the same row, of one question, of
    the whole table that are the same row, and of the whole table (counted, never listed)."""
    qs = np.asarray(questions).tolist()
    keys = [r or "" for r in rows]
    pairs_in = sum(k * (k - 1) for k in Counter(qs).values())
    same_in = sum(k * (k - 1) for k in Counter(zip(qs, keys)).values())
    return same_in, pairs_in, sum(k * (k - 1) for k in Counter(keys).values()), len(keys) * (len(keys) - 1)


def question_agreement(rows: Sequence[str | None], questions: np.ndarray) -> float:
    """How much more often two episodes of one question are the same row than two episodes of
    different questions: :func:`repeated_share` corrected for chance as Cohen's kappa is,
    ``(within - between) / (1 - between)``, with ``between`` the share of the pairs of
    different questions that are the same row (``None`` and ``""`` alike).

    Draws answer a question independently: about 0 where the strategy is drawn whatever the
    question, a little more where the question fixes some steps. A policy that keeps its
    strategy on a question repeats itself more than chance even where optional steps make most
    of its episodes differ. 0 where no question is asked twice, where one question holds every
    row or where every pair is the same row (nothing to tell). Exact, and linear in the rows.

    Examples
    --------
    >>> q = np.repeat(np.arange(20), 2)
    >>> kept = ["search > buy", "search > buy", "list > buy", "list > buy"] * 10
    >>> round(question_agreement(kept, q), 2)
    1.0
    >>> drawn = ["search > buy", "list > buy"] * 20
    >>> round(question_agreement(drawn, q), 2)
    -1.0
    """
    return _agreement(*_pair_counts(rows, questions))


def _agreement(same_in: int, pairs_in: int, same_all: int, pairs_all: int) -> float:
    pairs_out = pairs_all - pairs_in
    if not pairs_in or not pairs_out:
        return 0.0
    between = (same_all - same_in) / pairs_out
    return 0.0 if between >= 1 else float((same_in / pairs_in - between) / (1 - between))


def task_segments(paths: Sequence[str | None], questions: np.ndarray) -> frozenset[str]:
    """The path segments of generic request tools' calls that the question decides: the test
    of :func:`task_tools` on the segments each trajectory's requests name, under the same
    conditions as :func:`task_calls`.

    An agent acting through ``http_request(method, url)`` names the resource in the URL, so
    which resource a request names (``invoices`` for a refund question, ``tickets`` for a
    support one) is the question's, while how it gets there (a search, the collection, a
    record and its sub-resource) is the strategy's. The segments found here are read as one
    mark in the request's verb (:func:`mechanism.core.actions.request_segments`).

    Parameters
    ----------
    paths
        Each trajectory's request path segments, ``" > "``-joined
        (:func:`mechanism.analysis.segmentation.request_paths`).
    questions
        Each trajectory's question code.

    Examples
    --------
    >>> q = np.repeat(np.arange(12), 4)
    >>> paths = ["api > search > invoices" if i % 2 else "api > invoices" for i in range(24)]
    >>> paths += ["api > search > tickets" if i % 2 else "api > tickets" for i in range(24)]
    >>> sorted(task_segments(paths, q))
    ['invoices', 'tickets']
    """
    # a request's path names the resource and little of how it got there, so a question's paths
    # are alike by the question's doing: a habit is read on the tools, once these are one mark
    if not task_testable(paths, questions, agreement=False):
        return frozenset()
    return task_tools(paths, questions)


def task_tokens(tokens: Sequence[str], questions: np.ndarray) -> frozenset[str]:
    """The move tokens the question decides: :func:`task_tools`'s test (adjusted
    between-question share of variance at least :data:`TASK_SHARE`) on the tokens each
    trajectory holds, under the same conditions as :func:`task_calls` (a declared kind's mark
    never enters).

    A token is a tool, a move, a bigram of moves or where a call's values came from. Which of
    them an episode holds is partly its strategy's (a look first, a check after each step) and
    partly its question's: the task kind's step (``clean`` before ``put``), the room that has
    drawers to open, the resource a request names. Tokens the question decides explain which
    question an episode answered, and strategies are drawn whatever the question, so these
    tokens only move episodes of one strategy apart; the distances leave them out
    (:func:`token_matrix`).

    Examples
    --------
    >>> q = np.repeat(np.arange(12), 4)
    >>> rows = [("T:look " if i % 2 else "") + ("T:clean" if q[i] % 2 else "T:heat") for i in range(48)]
    >>> sorted(task_tokens(rows, q))
    ['T:clean', 'T:heat']
    """
    if not task_testable(tokens, questions):
        return frozenset()
    return _question_decided(((t for t in row.split() if not t.startswith(GROUP_TOKEN)) for row in tokens),
                             questions, TASK_SHARE)


def task_plan(plan: str, task: frozenset[str]) -> str:
    """A :func:`tool_plan` with each run of the task's tools (:func:`task_tools`) read as one
    mark, ``(task)+`` where a tool of the run is called again: the plan the cut keeps apart.

    Examples
    --------
    >>> task_plan("get_user > search_hotels+ > book", frozenset({"search_hotels", "book"}))
    'get_user > (task)+'
    >>> task_plan("search&+ > answer_check", frozenset({"search"}))  # a batch of the task's tool too
    '(task)+ > answer_check'
    """
    out: list[str] = []
    for tool in (plan or "").split(" > "):
        if not tool:
            continue
        if tool.rstrip("+").removesuffix(PARALLEL_MARK) in task:
            again = tool.endswith("+")
            if out and out[-1].rstrip("+") == TASK_MARK:
                out[-1] = TASK_MARK + ("+" if again or out[-1].endswith("+") else "")
            else:
                out.append(TASK_MARK + ("+" if again else ""))
        else:
            out.append(tool)
    return " > ".join(out)


def plan_codes(plans: Sequence[str]) -> np.ndarray:
    """Integer code of each row's plan (equal plans, equal codes, in sorted order of plans);
    -1 for the empty plan (no tool called), which the clustering keeps farthest from the rest.

    Examples
    --------
    >>> plan_codes(["b", "", "a", "b"]).tolist()
    [1, -1, 0, 1]
    """
    arr = np.asarray(list(plans), dtype=object).astype(str)
    codes = np.unique(arr, return_inverse=True)[1].ravel().astype(np.int64)
    if (arr == "").any():
        codes = np.where(arr == "", -1, codes - 1)  # "" sorts first: the others start at 0
    return codes


def plan_profiles(plans: Sequence[str]) -> spmatrix:
    """TF-IDF profile of each plan (:func:`task_plan`): its tools, a run called again
    (``tool+``) counted twice, as unigrams and consecutive pairs, weighted by inverse document
    frequency over the plans given and scaled to unit length (scikit-learn's
    ``TfidfVectorizer``), as a sparse matrix (rows x n-grams); the empty plan (no tool called)
    is a token of its own.

    What a strategy too small to stand alone uses to choose among the strategies of other plans
    (:func:`mechanism.analysis._strategies.clustering.agglomerative`): the rare tools it shares
    with one of them count, a tool that most plans call (an optional first look, a final
    status post) hardly does.

    Examples
    --------
    >>> x = plan_profiles(["list_alerts > restart", "restart", "list_alerts > post_status", ""]).toarray()
    >>> x.shape, bool(np.allclose((x ** 2).sum(axis=1), 1))
    ((4, 6), True)
    >>> bool(x[0] @ x[1] > x[0] @ x[2])  # restart is rarer than list_alerts
    True
    """
    from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: PLC0415 - scikit-learn: about a second to import, only in the steps that use it

    docs = []
    for plan in plans:
        tools = ["_".join(t.split()) for t in (plan or "").split(" > ") if t.strip()]  # one token a tool
        docs.append(" ".join(f"{t[:-1]} {t[:-1]}" if t.endswith("+") else t for t in tools) or NO_PLAN)
    vectorizer = TfidfVectorizer(token_pattern=r"[^ ]+", ngram_range=(1, 2), lowercase=False)
    return vectorizer.fit_transform(docs).tocsr()


# The token of a plan that calls no tool: a control character, which no tool name is read with
NO_PLAN = "\x00no_tool"


@dataclass(frozen=True)
class FitRows:
    """What a fit clusters: the distinct rows of the joined space and what the clustering,
    its bootstrap and its family test read about them (kept only for the duration of a fit).

    ``features, counts, renderings, moves`` are the distinct rows, their trajectory counts,
    first renderings and move sequences; ``questions`` and ``row_of`` give each fitted
    trajectory's question (integer code) and distinct row, what the bootstrap over questions
    resamples; ``steps`` and ``arm_counts`` each distinct row's attempt sequence and arm counts,
    what the family test reads; ``tool_plans`` each distinct row's :func:`tool_plan` (a batch of
    one tool's calls sent in one message read as a tool of its own, ``tool&``:
    :func:`mechanism.analysis.segmentation.batched_tools`), ``task``
    the tools the question decides (:func:`task_tools`) and ``plans`` the plans the cut keeps
    apart (:func:`task_plan`), what the task test reads; ``draws`` whether a question's
    trajectories are draws (at most :data:`TASK_MAX_REPEATS` of their pairs the same tools, and
    no more alike than :data:`TASK_MAX_AGREEMENT` beyond chance), where
    alone strategies that never share a question can be one on two kinds of task.
    ``presence`` (rows x vocabulary, sparse: :func:`presence_matrix`) says which move tokens
    each distinct row's first trajectory holds, and ``blocks`` the line no strategy crosses (a
    declared kind, calling tools or not): what the mixture refinement reads
    (:mod:`mechanism.analysis._strategies.mixture`).
    """

    features: np.ndarray
    counts: np.ndarray
    renderings: list[str]
    moves: list[str]
    questions: np.ndarray
    row_of: np.ndarray
    steps: list[tuple[str, ...]]
    arm_counts: np.ndarray
    plans: list[str]
    tool_plans: list[str]
    task: frozenset[str]
    presence: spmatrix
    blocks: np.ndarray
    draws: bool = True


def presence_matrix(tokens: Sequence[str], vocabulary: Sequence[str]) -> spmatrix:
    """Which ``vocabulary`` tokens each row of ``tokens`` (space-separated) holds: a sparse 0/1
    matrix (rows x vocabulary, CSR); tokens outside the vocabulary are left out.

    Examples
    --------
    >>> presence_matrix(["T:a T:b T:a", "T:c"], ["T:a", "T:b"]).toarray().tolist()
    [[1, 1], [0, 0]]
    """
    from scipy.sparse import csr_matrix  # noqa: PLC0415 - scipy: loaded by the steps that use it, not at import

    index = {t: i for i, t in enumerate(vocabulary)}
    indptr, cols = array("q", [0]), array("q")
    for row in tokens:
        cols.extend(sorted({i for i in map(index.get, row.split()) if i is not None}))
        indptr.append(len(cols))
    data = np.ones(len(cols), dtype=np.int8)
    return csr_matrix((data, np.frombuffer(cols, np.int64) if cols else np.zeros(0, np.int64),
                       np.frombuffer(indptr, np.int64)), shape=(len(tokens), len(vocabulary)))


def distinct_rows(pair_rows: np.ndarray, pair_of_row: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct joined rows, as ``np.unique`` over every trajectory's row would give them
    (same rows, same sorted order), from the few distinct pairs instead of 20,000 rows; each
    trajectory's distinct row; and the first trajectory holding each."""
    uniq, pair_inverse = np.unique(pair_rows, axis=0, return_inverse=True)
    inverse = pair_inverse.ravel()[pair_of_row]
    first = np.full(len(uniq), len(inverse))
    np.minimum.at(first, inverse, np.arange(len(inverse)))
    return uniq, inverse, first


def embed_join(traj: object, embedder: object, vocabulary: Sequence[str], *, dim: int,
               structure_weight: float, embedding_weight: float, n_groups: int = 0,
               ignore: frozenset[str] = frozenset()) -> tuple[np.ndarray, np.ndarray]:
    """Joined rows of a rendered table's distinct (rendering, move tokens) pairs, each distinct
    rendering embedded once, and each row's pair (row ``i`` is ``pairs[inverse[i]]``); ``dim``
    is the embedding dimension the space was fitted with (-1: any, at fit)."""
    first, inverse, texts, text_of_pair = distinct_pairs(traj["rendering"].to_list(), traj["tokens"].to_list())
    emb = embedder.embed(texts) if texts else np.zeros((0, max(dim, 0)), np.float32)
    if emb.ndim != 2 or (dim >= 0 and emb.shape[1] != dim):
        raise MechanismError(f"embedder `{embedder.model_id}` gives {emb.shape[-1]} dimensions, "
                             f"the space was fitted with {dim}")
    return join(traj[first]["tokens"].to_list(), emb[text_of_pair], vocabulary, structure_weight=structure_weight,
                embedding_weight=embedding_weight, n_groups=n_groups, ignore=ignore), inverse
