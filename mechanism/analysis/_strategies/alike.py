"""Tools an agent uses interchangeably: one choice made whatever the strategy.

A terminal agent edits a file with ``sed -i``, a Python heredoc or ``perl -pi``, at random,
whatever it did to find the bug. Read by name, each edit verb makes another plan, and the cut
splits one strategy three ways by its edit verb as readily as it splits two strategies by how
the bug was found. A strategy is what the agent does whatever else varies; a choice the agent
makes whatever its strategy is a detail of execution.

The data say which choice is which. Two tools A and B fill one slot where some plans (the
tools called, in order, each run read once, the task's calls as one mark: :func:`plan_of`)
differ only by calling A or B there: with the slot masked, they are one *context*. Where A
and B are the strategy's choice (a settings search, or a swipe down to the quick settings,
both before the same taps), the contexts both are met in differ only by what varies inside a
strategy: an optional step, a popup dismissed. Where the choice is made whatever the strategy,
it is met in every strategy's context, and the contexts holding both are as varied as the
plans of the whole table. So A and B are read as one tool (:class:`~mechanism.analysis.segmentation.TaskCalls`
``alike``) when

1. most trajectories calling one of them (not both) are in a context where the other is met
   too (:data:`ALIKE_COVER`),
2. the contexts holding both are nearly as varied as all plans (:data:`ALIKE_CROSSING`: their
   mean distance, tools one has and the other lacks, as a share of the mean distance between
   any two trajectories' plans), and
3. neither the contexts nor the arms take them at different rates (chi-square tests of the
   contexts x {A, B} and arms x {A, B} tables, each ``p >= ALIKE_ALPHA``): a choice rl moved
   is what the toolkit exists to show, and one that follows the rest of the plan belongs to
   the strategy. The contexts' table holds the contexts where only one of the two is met as
   well (at least :data:`MIN_CONTEXT_SIZE` trajectories): a choice made whatever the strategy
   is met beside the other wherever either is, while one that a strategy makes is missing
   from the other strategies' contexts, which a table of the shared contexts alone never sees.

Where whole plans rarely coincide (every slot varying at random: nearly as many plans as
trajectories), the criteria are read on local contexts too, a step's previous and next step,
with two more: the pair sits around many contexts (:data:`LOCAL_MIN_CONTEXTS`) and the question
does not pick between them (:data:`LOCAL_QUESTION_SHARE`; :func:`_local_pairs`).

A step taken or not whatever the strategy (a look at the account before any approach) is the
same choice with the step's absence as the other member: :func:`optional_steps` applies the
three criteria to a tool and nothing, a plan with the tool and the same plan without it being
one context (a plan never met with the tool counting as a context where it is taken at a rate
of 0), and its calls are left out only where the plan without them is met too.

Tools that the question decides (:func:`~mechanism.analysis._strategies.features.task_calls`)
are read by their own rule and never enter. Pairs are joined into groups (a group of three
edit verbs); a group is named by its members, most called first, joined by ``_or_``. The
outcome never enters.

Measured on the planted worlds (seed 0, 60 questions, the plans with the fit's task calls):
the terminal world's three edit verbs have cover 0.70-0.85 and crossing 0.74-0.76; every other
pair that meets the cover has a crossing of at most 0.62 (a way in that defines a strategy,
``search_settings`` against a swipe, 0.50), but the incident-response world's ``restart`` and
``scale`` (0.74; one planted strategy uses either, ARI unchanged at 1.0); the listing verbs
``ls`` / ``find`` / ``tree``, which one strategy alone uses, 0.46-0.56 (reading them as one too
lowered the terminal world, 0.893 -> 0.830). Every world and seed 0-2 finds the same groups
typed and through one generic ``act`` tool (``benchmarks/RESULTS.md``).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from itertools import combinations

import numpy as np

from mechanism.analysis._strategies.families import arm_test
from mechanism.analysis._strategies.features import TASK_MARK, task_tools
from mechanism.analysis.segmentation import plan_steps

#: Share of the trajectories calling one tool of a pair (not both) that lie in a context where
#: the other is met too (module docstring, criterion 1).
ALIKE_COVER = 0.5
#: Mean distance between the contexts holding both tools, as a share of the mean distance
#: between any two trajectories' plans, from which the choice is read as made whatever the
#: strategy (criterion 2).
ALIKE_CROSSING = 0.7
#: Level under which a chi-square test keeps a pair apart (criterion 3). At 0.2 one of the
#: terminal world's three pairs of edit verbs fell under it by chance at one seed (the arms,
#: p = 0.16) and the group came out split; at 0.05 it holds at seeds 0-2.
ALIKE_ALPHA = 0.05
#: Least number of contexts holding both tools, and least trajectories in a context for it to
#: enter the chi-square test of the contexts.
MIN_SHARED_CONTEXTS = 3
MIN_CONTEXT_SIZE = 5
#: Least effective number of local contexts (the inverse Simpson index of the shared mass over the
#: (previous step, next step) pairs holding both tools) for the local reading of the criteria:
#: a choice made whatever the strategy is met around many different steps; one a strategy makes
#: sits in few (two ways of a one-call plan, between the start and the end). Measured at seed 0:
#: the SWE agent's edit, window and search verbs 6.4-23.5; the other pairs the local criteria
#: alone join 1.7-4.1 (the incident world's `restart` / `search_logs`, the memory assistant's
#: searches, the math agent's program kinds, support's ticket or transfer).
LOCAL_MIN_CONTEXTS = 5.0
#: Share of the choice between the two that the question explains (epsilon squared, as the task
#: test reads it) from which it is the question's, not made whatever the strategy: where the
#: request decides the API (``news_search`` or ``weather_forecast``: 0.49-0.83), against -0.7 to
#: 0.15 for the SWE agent's edit and window verbs.
LOCAL_QUESTION_SHARE = 0.3


def plan_of(tools: str | None, task: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The steps of a trajectory's plan as this module reads it
    (:func:`~mechanism.analysis.segmentation.plan_steps` of its ``" > "``-joined tools).

    Examples
    --------
    >>> plan_of("grep > grep > sed > sed_i! > sed_i > pytest", frozenset({"pytest"}))
    ('grep', 'sed', 'sed_i', '(task)')
    """
    return plan_steps([t for t in (tools or "").split(" > ") if t], task)


def _plan_arms(tools: Sequence[str | None], arms: Sequence[str], task: frozenset[str]
               ) -> dict[tuple[str, ...], np.ndarray]:
    """Each plan met (:func:`plan_of`) -> its trajectories' counts by arm (arms in sorted order)."""
    arm_names = sorted(set(map(str, arms)))
    arm_code = {a: i for i, a in enumerate(arm_names)}
    plans: dict[tuple[str, ...], np.ndarray] = {}
    # each distinct (tools, arm) read once: a table repeats its tool sequences heavily
    for (tl, arm), n in Counter(zip(tools, map(str, arms))).items():
        plan = plan_of(tl, task)
        if plan:
            plans.setdefault(plan, np.zeros(len(arm_names)))[arm_code[arm]] += n
    return plans


def _spread(sets: list[frozenset[str]], weights: np.ndarray) -> float:
    """Mean number of tools one of two plans drawn without replacement (by weight) holds and
    the other lacks: twice the sum over tools of p (1 - p), corrected for drawing one twice."""
    total = float(weights.sum())
    sq = float(np.sum(weights ** 2))
    if total <= 0 or total ** 2 <= sq:
        return 0.0
    share: dict[str, float] = defaultdict(float)
    for s, w in zip(sets, weights):
        for t in s:
            share[t] += float(w)
    p = np.asarray(list(share.values())) / total
    return float(2 * np.sum(p * (1 - p)) * total ** 2 / (total ** 2 - sq))


def interchangeable_tools(tools: Sequence[str | None], arms: Sequence[str], task: frozenset[str] = frozenset(),
                          questions: Sequence[str] | None = None) -> tuple[tuple[str, ...], ...]:
    """Groups of tools the agent uses interchangeably (module docstring), each most called
    first; the groups in order of their first member.

    Parameters
    ----------
    tools
        Each trajectory's tools, ``" > "``-joined, as :func:`mechanism.analysis.segmentation.render`
        writes them.
    arms
        Each trajectory's arm.
    task
        The tools the question decides (never grouped here).
    questions
        Each trajectory's question: with them, pairs whose plans rarely coincide are also read
        on local contexts (:func:`_local_pairs`); without, on whole plans alone.

    Examples
    --------
    Three edit verbs used at random after four ways of finding the bug, in both arms alike:

    >>> rng = np.random.default_rng(0)
    >>> finds = ["grep > sed", "ls > cat", "git_log > git_show", "pytest > sed"]
    >>> rows = [f"{finds[i % 4]} > {('sed_i', 'perl_i', 'python_inline')[rng.integers(3)]} > pytest"
    ...         for i in range(400)]
    >>> interchangeable_tools(rows, ["base", "rl"] * 200)
    (('python_inline', 'perl_i', 'sed_i'),)

    Two ways in, each before the same steps: the strategy's choice, not read as one.

    >>> rows = [f"{('search_settings', 'swipe')[i % 2]} > tap > {('tap', 'back > tap')[i % 3 == 0]}"
    ...         for i in range(400)]
    >>> interchangeable_tools(rows, ["base", "rl"] * 200)
    ()
    """
    plans = _plan_arms(tools, arms, task)
    if len(plans) < 2:
        return ()
    keys = list(plans)
    by_arm = np.asarray([plans[k] for k in keys])
    counts = by_arm.sum(axis=1)
    spread_all = _spread([frozenset(k) for k in keys], counts)
    names = sorted({t for k in keys for t in k})
    column = {t: j for j, t in enumerate(names)}
    calls = np.zeros((len(keys), len(names)), dtype=bool)  # plan x tool: whether the plan calls it
    # contexts: a plan with one tool masked, each holding the arm counts of every tool met in
    # its slot; one pass over the plans, so a pair's shared contexts are read off it
    slot: dict[tuple[str, ...], dict[str, np.ndarray]] = defaultdict(dict)
    for i, k in enumerate(keys):
        calls[i, [column[t] for t in k]] = True
        for t in set(k) - task - {TASK_MARK}:
            filled = slot[tuple("_" if x == t else x for x in k)]
            filled[t] = filled.get(t, 0) + by_arm[i]
    shared: dict[tuple[str, str], list[tuple[str, ...]]] = defaultdict(list)
    for ctx, filled in slot.items():
        if len(filled) > 1:
            present = set(ctx)
            for a, b in combinations(sorted(filled), 2):
                if a not in present and b not in present:  # a plan calling both is neither's context
                    shared[a, b].append(ctx)
    def arms_of(a: str, b: str) -> np.ndarray:
        """Trajectories per arm calling ``a`` and not ``b`` (row 0), ``b`` and not ``a`` (row 1), as columns."""
        only_a = calls[:, column[a]] & ~calls[:, column[b]]
        only_b = calls[:, column[b]] & ~calls[:, column[a]]
        return np.stack([by_arm[only_a].sum(axis=0), by_arm[only_b].sum(axis=0)], axis=1)

    # contexts whose slot holds one tool alone, each large enough for the contexts' test
    lone: dict[str, list[tuple[str, ...]]] = defaultdict(list)
    for ctx, filled in slot.items():
        if len(filled) == 1 and next(iter(filled.values())).sum() >= MIN_CONTEXT_SIZE:
            lone[next(iter(filled))].append(ctx)
    alike = []
    for (a, b), contexts in sorted(shared.items()):
        if len(contexts) < MIN_SHARED_CONTEXTS:
            continue
        per_context = np.asarray([[slot[c][a].sum(), slot[c][b].sum()] for c in contexts])
        # the contexts where one of the two is met and the other never: a rate of 0 beside it
        alone = np.asarray([[np.sum(slot[c].get(a, 0)), np.sum(slot[c].get(b, 0))]
                            for c in lone.get(a, []) + lone.get(b, []) if a not in c and b not in c],
                           dtype=np.float64).reshape(-1, 2)
        if _alike(per_context, [frozenset(c) - {"_"} for c in contexts], arms_of(a, b), spread_all, alone=alone):
            alike.append((a, b))
    if questions is not None:
        alike += [(a, b) for a, b in _local_pairs(keys, by_arm, task, tools, questions, set(alike))
                  if arm_test(arms_of(a, b).T) >= ALIKE_ALPHA]
    use = dict(zip(names, counts @ calls))
    ordered = [tuple(sorted(g, key=lambda t: (-use[t], t))) for g in _join(alike)]
    return tuple(sorted(ordered))


def _local_pairs(keys: list[tuple[str, ...]], by_arm: np.ndarray, task: frozenset[str], tools: Sequence[str | None],
                 questions: Sequence[str], joined: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """Pairs that meet the criteria on *local* contexts, a step's previous and next step (``^`` and
    ``$`` at the ends), where whole plans rarely coincide: an agent whose edit verb, window printer
    and test runner all vary at random has nearly as many plans as trajectories, and two tools
    then share few whole contexts (cover 0.24 for ``python_inline`` / ``sed_i`` where every other
    slot varies too). Read per step: cover and crossing as the module's (occurrences, against the
    variety of all local contexts), the contexts' chi-square, at least :data:`LOCAL_MIN_CONTEXTS`
    effective contexts, and the question explaining under :data:`LOCAL_QUESTION_SHARE` of the
    choice (the arms' test is the caller's)."""
    slot: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    every: dict[tuple[str, str], float] = defaultdict(float)
    for k, n in zip(keys, by_arm.sum(axis=1).tolist()):
        for p, t in enumerate(k):
            ctx = (k[p - 1] if p else "^", k[p + 1] if p + 1 < len(k) else "$")
            every[ctx] += n
            if t not in task and t != TASK_MARK:
                slot[ctx][t] = slot[ctx].get(t, 0.0) + n
    spread_all = _spread([frozenset(c) for c in every], np.asarray(list(every.values())))
    occurrences: Counter[str] = Counter()
    shared: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for ctx, filled in slot.items():
        occurrences.update(filled)
        for a, b in combinations(sorted(filled), 2):
            if a not in ctx and b not in ctx and (a, b) not in joined:
                shared[a, b].append(ctx)
    pairs: list[tuple[str, str]] = []
    row_steps: list[set[str]] = []  # each trajectory's plan steps, read once where a pair needs them
    for (a, b), contexts in sorted(shared.items()):
        per_context = np.asarray([[slot[c][a], slot[c][b]] for c in contexts])
        mass = per_context.sum(axis=1) / per_context.sum()
        if (len(contexts) < MIN_SHARED_CONTEXTS or 1.0 / float(np.sum(mass ** 2)) < LOCAL_MIN_CONTEXTS
                or per_context.sum() < ALIKE_COVER * (occurrences[a] + occurrences[b])
                or _spread([frozenset(c) for c in contexts], per_context.min(axis=1)) < ALIKE_CROSSING * spread_all):
            continue
        tested = per_context[per_context.sum(axis=1) >= MIN_CONTEXT_SIZE]
        if arm_test(tested.T) < ALIKE_ALPHA:
            continue
        # the rows calling one of the two, not both: does the question pick which?
        row_steps = row_steps or [set(plan_of(tl, task)) for tl in tools]
        one = [(a if a in steps else b) if (a in steps) != (b in steps) else None for steps in row_steps]
        if not task_tools(one, np.asarray(questions), share=LOCAL_QUESTION_SHARE):
            pairs.append((a, b))
    return pairs


def _alike(per_context: np.ndarray, contexts: list[frozenset[str]], arms_ab: np.ndarray, spread_all: float,
           calling: float | None = None, alone: np.ndarray | None = None) -> bool:
    """Whether a pair meets the module's three criteria, from its shared contexts' counts
    (one row per context: trajectories calling the one, the other), the tools of those
    contexts, and the arm counts of all trajectories calling one of the two and not both (one
    row per arm); ``calling``: the trajectories the cover counts against, where a tool is
    paired with its absence (those calling it), else all in ``arms_ab``; ``alone``: the same
    counts in the contexts where only one of the two is met, which the contexts' test reads
    beside the shared ones (criterion 3)."""
    covered = per_context[:, 0].sum() if calling is not None else per_context.sum()
    if covered < ALIKE_COVER * (arms_ab.sum() if calling is None else calling):
        return False
    if _spread(contexts, per_context.min(axis=1)) < ALIKE_CROSSING * spread_all:
        return False
    tested = per_context if alone is None or not len(alone) else np.vstack([per_context, alone])
    tested = tested[tested.sum(axis=1) >= MIN_CONTEXT_SIZE]
    # the chi-square of independence of a 2 x k table: the two tools against contexts, arms
    return arm_test(tested.T) >= ALIKE_ALPHA and arm_test(arms_ab.T) >= ALIKE_ALPHA


def _join(pairs: list[tuple[str, str]]) -> list[set[str]]:
    """The connected groups of ``pairs``."""
    group: dict[str, set[str]] = {}
    for a, b in pairs:
        ga, gb = group.get(a, {a}), group.get(b, {b})
        if ga is not gb:
            ga |= gb
        for t in ga:
            group[t] = ga
    out, seen = [], set()
    for g in group.values():
        if id(g) not in seen:
            seen.add(id(g))
            out.append(g)
    return out


def optional_steps(tools: Sequence[str | None], arms: Sequence[str], task: frozenset[str] = frozenset(),
                   ) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Tools the agent calls or not whatever its strategy, each with the plans met both with
    and without it (:class:`~mechanism.analysis.segmentation.TaskCalls` ``optional``): the
    module's three criteria with the tool's absence as the other member of the pair (a plan
    with the tool and the same plan without it are one context), the tools the question
    decides (``task``) as one mark and never optional.

    Examples
    --------
    A look at the account before any of four strategies, one time in four in both arms:

    >>> rng = np.random.default_rng(0)
    >>> ways = ["search > get > patch", "list > get > patch", "customers > orders > patch", "batch"]
    >>> rows = [("me > " if rng.random() < 0.25 else "") + ways[i % 4] for i in range(400)]
    >>> [(t, len(plans)) for t, plans in optional_steps(rows, ["base", "rl"] * 200)]
    [('me', 4)]

    A step one strategy alone adds: that strategy's, not read so.

    >>> rows = [("verify > " if i % 4 == 0 and rng.random() < 0.5 else "") + ways[i % 4] for i in range(400)]
    >>> optional_steps(rows, ["base", "rl"] * 200)
    ()
    """
    plans = _plan_arms(tools, arms, task)
    if len(plans) < 2:
        return ()
    keys = list(plans)
    counts = np.asarray([plans[k].sum() for k in keys])
    spread_all = _spread([frozenset(k) for k in keys], counts)
    # a plan calling t, read without it: a context whose other member is that plan itself
    with_t: dict[str, dict[tuple[str, ...], np.ndarray]] = defaultdict(dict)
    for k in keys:
        for t in set(k) - {TASK_MARK}:
            ctx = plan_steps([x for x in k if x != t])
            if ctx:
                with_t[t][ctx] = with_t[t].get(ctx, 0) + plans[k]
    # the plans large enough for the contexts' test, with their trajectories
    sizable = [(k, n) for k, n in zip(keys, counts.tolist()) if n >= MIN_CONTEXT_SIZE]
    optional = []
    for t, filled in sorted(with_t.items()):
        contexts = [c for c in filled if c in plans]
        if len(contexts) < MIN_SHARED_CONTEXTS:
            continue
        per_context = np.asarray([[filled[c].sum(), plans[c].sum()] for c in contexts])
        arms_t = np.stack([sum(filled.values()), sum(plans[c] for c in contexts)], axis=1)
        # the plans never met with it: the step taken at a rate of 0 there
        alone = np.asarray([[0.0, n] for c, n in sizable if t not in c and c not in filled],
                           dtype=np.float64).reshape(-1, 2)
        if _alike(per_context, [frozenset(c) for c in contexts], arms_t, spread_all,
                  calling=sum(float(v.sum()) for v in filled.values()), alone=alone):
            optional.append((t, tuple(sorted(" > ".join(c) for c in contexts))))
    return tuple(optional)
