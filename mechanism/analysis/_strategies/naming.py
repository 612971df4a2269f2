"""Strategy names: the steps a strategy's members share, what tells it from a sibling that
would read the same, and the share of members the name describes (its fidelity).

The rule is stated once, in :func:`strategy_names`; :func:`shared_core` and
:func:`step_labels` are its parts.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
import polars as pl

from mechanism.analysis.segmentation import PARALLEL_MARK

# what a relation adds to a tool's name when it is not the tool's first, plain use
_NOTE = {"repeat": "again", "return": "again", "revise": "revised", "switch": None, "new": "another",
         "first": None}
_SEARCH_NOTE = {"bridge_lookup": "bridge", "verification": "check", "reformulation": "reworded",
                "parallel_lookup": "parallel", "new_lookup": "new", "repeat": "repeat"}

# A name states the steps that the members holding at least this share of a strategy's
# trajectories all take, in order (its core); the rest are optional steps of the family.
NAME_COVERAGE = 0.9
# A member is a fail-and-retry loop when at least this many of its failed calls are each
# retried by the next call of the same tool (``n_retries`` of mechanism.analysis.segmentation.render);
# a strategy at least LOOP_SHARE of whose members are loops says so in its name.
LOOP_RETRIES = 2
LOOP_SHARE = 0.5
# A qualifier tells a strategy from its siblings when it holds for this much more of the
# strategy's members than of any sibling's (shares of trajectories).
TELL_GAP = 0.5
LOOP_PHRASE = "fail-and-retry loop"
# Two names tell their strategies apart unless each describes more than this share of the
# other's members; such a pair gets what separates them (rule 5 of strategy_names).
SIBLING_OVERLAP = 0.5
# Tools a strategy alone uses (each by at most this share of any other strategy's trajectories)
# that together cover NAME_COVERAGE of its members are named, as alternatives, when its core
# does not mention them: `sort` or `filter` before reading the top rows. At most this many.
OWN_TOOL_OTHERS = 0.05
OWN_TOOLS_MAX = 3
# How :func:`mechanism.analysis.segmentation.move_tokens` ends an episode that answers right after
# a failed call nobody retried: the agent gave up on it.
GIVE_UP = "answer_after_failure"


def step_labels(moves: Sequence[str], tools: Sequence[str]) -> list[str]:
    """Each call as a name reads it: the tool, with what its move adds (``search (bridge)``,
    ``get_order_details (again)``, ``cancel (failed)`` where failures are kept apart, ``search
    (another, same message)`` where it was issued with the call before it).

    Examples
    --------
    >>> step_labels(["first", "new&", "new"], ["search", "search", "search"])
    ['search', 'search (another, same message)', 'search (another)']
    """
    parts = []
    for move, tool in zip(moves, tools):
        together = move.endswith(PARALLEL_MARK)
        move = move.removesuffix(PARALLEL_MARK)
        notes = [n for n in (_SEARCH_NOTE.get(move) if move in _SEARCH_NOTE else _NOTE.get(move),
                             "same message" if together else None) if n]
        failed = tool.endswith("!")
        label = tool.rstrip("!") + (" (failed)" if failed else "")
        if notes:
            label = label[:-1] + f", {', '.join(notes)})" if failed else label + f" ({', '.join(notes)})"
        parts.append(label)
    return parts


def _runs_of(labels: Sequence[str]) -> tuple[str, ...]:
    """A label sequence with runs of one label as one step (how often is not the plan)."""
    out: list[str] = []
    for lab in labels:
        if not out or out[-1] != lab:
            out.append(lab)
    return tuple(out)


def _contains(seq: tuple[str, ...], core: tuple[str, ...]) -> bool:
    """Whether ``core`` is an ordered subsequence of ``seq``."""
    it = iter(seq)
    return all(any(x == c for x in it) for c in core)


def shared_core(sequences: Sequence[tuple[str, ...]], weights: Sequence[float], *,
                coverage: float = NAME_COVERAGE) -> tuple[tuple[str, ...], float]:
    """The longest step sequence (found greedily) that members holding ``coverage`` of the
    weight contain in order, starting from the heaviest member's, and the weight share
    containing it.

    Examples
    --------
    >>> shared_core([("a", "b", "c"), ("a", "c"), ("a", "b", "c")], [5, 4, 1])
    (('a', 'c'), 1.0)
    """
    w = np.asarray(weights, dtype=np.float64)
    total = float(w.sum())
    if not len(sequences) or total <= 0:
        return (), 0.0
    core = tuple(sequences[int(np.argmax(w))])

    def share(c: tuple[str, ...]) -> float:
        return float(sum(wi for seq, wi in zip(sequences, w) if _contains(seq, c)) / total)

    held = share(core)
    while core and held < coverage - 1e-12:
        # drop the step whose removal keeps the most members (ties: the later step)
        options = [(share(core[:i] + core[i + 1:]), i) for i in range(len(core))]
        held, i = max(options)
        core = core[:i] + core[i + 1:]
    return core, held


# How a relation of the move grammar (mechanism.analysis.segmentation.RELATIONS) reads after its tool.
_RELATION_WORDS = {"first": "first", "new": "on another object", "revise": "reworded", "repeat": "repeated",
                   "return": "again after other calls", "switch": "on an object another tool used"}


# where a call's carried values came from (mechanism.analysis.segmentation.move_tokens), in words
_SOURCE_WORDS = {"user": "the user's words", "call": "an earlier call", "result": "a result",
                 "nothing": "nothing carried"}


def _move_words(move: str) -> str:
    """``tool/relation`` in words: ``search/revise`` -> ``search reworded``."""
    tool, _, relation = move.partition("/")
    if not relation:
        return tool
    words = _RELATION_WORDS.get(relation.removesuffix("!"), relation)
    return f"first {tool}" if words == "first" else f"{tool} {words}"


def _token_phrase(token: str) -> str:
    """A move token (:func:`mechanism.analysis.segmentation.move_tokens`) in words.

    Examples
    --------
    >>> _token_phrase("R:search/new"), _token_phrase("B:search/first>search/revise")
    ('search on another object', 'first search then search reworded')
    >>> _token_phrase("B:start>get_user/first"), _token_phrase("M:search/revise/user/partial")
    ('opens with first get_user', "search reworded of part of the question, from the user's words only")
    >>> _token_phrase("M:search/revise/user+call/whole")
    "search reworded of the whole question, from the user's words and an earlier call"
    >>> _token_phrase("E:answer_after_failure"), _token_phrase("B:search/first>answer_after_failure")
    ('gives up after a failed call', 'first search then gives up')
    >>> _token_phrase("P:search/revise"), _token_phrase("B:search/first&search/revise")
    ('search reworded in the same message as the call before', 'first search with search reworded in one message')
    """
    kind, _, body = token.partition(":")
    if kind == "P":  # a call issued with the one before it (parallel calls)
        return f"{_move_words(body)} in the same message as the call before"
    if kind == "B" and "&" in body:
        a, _, b = body.partition("&")
        return f"{_move_words(a)} with {_move_words(b)} in one message"
    if kind == "E":
        if body == GIVE_UP:
            return "gives up after a failed call"
        return "ends without an answer" if "no_answer" in body else (
            "answers without a call" if body.startswith("no_calls") else "ends with an answer")
    if kind == "B":
        a, _, b = body.partition(">")
        if a == "start":
            return f"opens with {_move_words(b)}"
        then = {"answer": "an answer", "no_answer": "an answer", GIVE_UP: "gives up"}.get(b) or _move_words(b)
        return f"{_move_words(a)} then {then}"
    if kind == "M":
        parts = body.split("/")
        tool, relation, sources, scope = (parts + ["", "", "", ""])[:4]
        tail = " after an error" if body.endswith("/after_error") else ""
        where = {"whole": " of the whole question", "partial": " of part of the question"}.get(scope, "")
        # the token holds the whole set of sources: one alone is the only one
        words = [_SOURCE_WORDS.get(x, x) for x in sources.split("+") if x]
        carried = " and ".join(words) + (" only" if len(words) == 1 and sources != "nothing" else "")
        return f"{_move_words(f'{tool}/{relation}')}{where}, from {carried}{tail}"
    if kind == "R":
        return _move_words(body)
    return body.replace("/", " ")


def _times(tool: str | None, lo: int, hi: int) -> str:
    """A count of one tool's calls, ``x2-4`` (the name's only tool) or ``lookup x2-4``."""
    count = f"x{lo}" if lo == hi else f"x{lo}-{hi}"
    return count if tool is None else f"{tool} {count}"


def _named_tools(name: str) -> set[str]:
    """The tools a core (steps joined by `` -> ``) names."""
    name = name.removeprefix("answer with no call, or ").removeprefix("varied: ")
    return {step.split(" (")[0].strip() for step in name.split(" -> ") if step.strip()}


Member = dict  # seq, n, rounds, tokens, free, counts (tool -> attempts), loop, repeat
Test = Callable[[Member], bool]


def _share(ms: list[Member], test: Test) -> float:
    total = sum(m["n"] for m in ms)
    return sum(m["n"] for m in ms if test(m)) / total if total else 0.0


def _count_range(ms: list[Member], tool: str) -> tuple[int, int]:
    """The 10th to 90th percentile of ``tool``'s attempts over ``ms`` (trajectories weighted)."""
    r = np.repeat([m["counts"].get(tool, 0) for m in ms], [int(m["n"]) for m in ms])
    return int(np.floor(np.quantile(r, 0.1))), int(np.ceil(np.quantile(r, 0.9)))


def tool_shares(members: dict[int, list[Member]]) -> dict[int, dict[str, float]]:
    """Each strategy's share of members (weighted by count) calling each tool, in one pass."""
    out: dict[int, dict[str, float]] = {}
    for c, ms in members.items():
        total, calls = sum(m["n"] for m in ms), Counter()
        for m in ms:
            for t in m["counts"]:
                calls[t] += m["n"]
        out[c] = {t: v / total for t, v in calls.items()} if total else {}
    return out


def own_tools(c: int, members: dict[int, list[Member]], base: str,
              shares: dict[int, dict[str, float]] | None = None) -> list[str]:
    """The tools strategy ``c`` alone uses, to name beside its name ``base``: tools the name does
    not mention, each called by at most :data:`OWN_TOOL_OTHERS` of every other strategy's
    members, the most used first, as few as together cover :data:`NAME_COVERAGE` of ``c``'s
    members (at most :data:`OWN_TOOLS_MAX`); empty where none do. ``shares``: the
    :func:`tool_shares` of ``members``, computed once by a caller that names every strategy.

    Examples
    --------
    >>> m = lambda tools, n=1.0: {"counts": Counter(tools), "n": n}
    >>> members = {0: [m(["sort", "read_range"], 6), m(["filter", "read_range"], 4)],
    ...            1: [m(["read_range"], 9), m(["read_range", "read_range"], 1)]}
    >>> own_tools(0, members, "read_range"), own_tools(1, members, "read_range")
    (['sort', 'filter'], [])
    """
    shares = tool_shares(members) if shares is None else shares
    mine = members[c]
    named = set(re.findall(r"[^\s()]+", base.replace(" -> ", " ")))  # every word of the name, qualifiers too
    candidates = sorted((-share, t) for t, share in shares[c].items() if t not in named and all(
        other.get(t, 0.0) <= OWN_TOOL_OTHERS + 1e-12 for o, other in shares.items() if o != c))
    chosen: list[str] = []
    for _, t in candidates[:OWN_TOOLS_MAX]:
        chosen.append(t)
        if _share(mine, lambda m: any(x in m["counts"] for x in chosen)) >= NAME_COVERAGE - 1e-12:
            return chosen
    return []


def _with_own(own: list[str]) -> tuple[str, Test]:
    """The phrase naming the tools only a strategy uses (:func:`own_tools`) and its test."""
    return f"with {' or '.join(own)}", lambda m: any(t in m["counts"] for t in own)


def _add_qualifiers(found: dict[int, tuple[str, Test, tuple[str, int, int] | None] | None], name: dict[int, str],
                    tests: dict[int, list[Test]], given: dict[str, list[tuple[int, int]]], *,
                    new_only: bool = False) -> set[int]:
    """Each strategy's qualifier of ``found`` (:func:`_qualifier`) added to its name and tests,
    and the count it states to ``given``; a phrase two of them would both add tells neither
    apart (two tokens in one wording) and is added to neither; with ``new_only``, neither is a
    phrase the name already says. Returns the strategies that got one."""
    phrases = Counter(q[0] for q in found.values() if q is not None)
    added: set[int] = set()
    for c, q in found.items():
        if q is None or phrases[q[0]] > 1 or (new_only and f"({q[0]})" in name[c]):
            continue
        name[c] = f"{name[c]} ({q[0]})"
        tests[c].append(q[1])
        if q[2] is not None:
            given.setdefault(q[2][0], []).append(q[2][1:])
        added.add(c)
    return added


def _qualifier(c: int, group: list[int], members: dict[int, list[Member]], base: str,
               given: dict[str, list[tuple[int, int]]], shares: dict[int, dict[str, float]] | None = None,
               ) -> tuple[str, Test, tuple[str, int, int] | None] | None:
    """What tells strategy ``c`` from every other strategy of ``group`` (all named ``base``):
    the qualifier whose test holds for the largest share of ``c``'s members beyond any
    sibling's, at least :data:`TELL_GAP`, among the tools only it uses (:func:`own_tools`), a
    tool only it uses, a tool it lacks (a
    missing step), repeated identical calls and a count of one tool whose range no sibling's
    range meets, nor any range of that tool ``given`` to another name of the space (ties in
    that order); a move token only where none of those does. Returns the phrase, its test and
    the count it states (tool, low, high) if any; None where nothing does."""
    mine, others = members[c], [members[o] for o in group if o != c]
    tools = sorted({t for ms in (mine, *others) for m in ms for t in m["counts"]})
    named = _named_tools(base)
    options: list[tuple[float, int, str, Test, tuple[str, int, int] | None]] = []  # gap, -kind, phrase, test, count

    def offer(kind: int, phrase: str, test: Test, *, lacking: bool = False,
              count: tuple[str, int, int] | None = None) -> None:
        s_c, s_o = _share(mine, test), [_share(ms, test) for ms in others]
        gap = (min(s_o) - s_c) if lacking else (s_c - max(s_o))
        if gap >= TELL_GAP - 1e-12:
            options.append((round(gap, 9), -kind, phrase, (lambda m, t=test: not t(m)) if lacking else test, count))

    own = own_tools(c, members, base, shares)
    if own:  # the tools only it uses, together (one alone is the `with <tool>` below)
        offer(6, *_with_own(own))
    for t in tools:
        def uses(m: dict, t: str = t) -> bool:
            return m["counts"].get(t, 0) > 0

        if _share(mine, uses) >= NAME_COVERAGE - 1e-12:  # a name mentions only what 0.9 of members do
            offer(5, f"with {t}", uses)
        elif _share(mine, uses) <= 1 - NAME_COVERAGE + 1e-12:
            offer(4, f"without {t}", uses, lacking=True)
    offer(3, "repeats a call", lambda m: m["repeat"])
    for t in tools:
        lo, hi = _count_range(mine, t)
        if lo < 1:  # the count would mention a tool some members never call
            continue
        if any(not (hi < olo or ohi < lo) for olo, ohi in [*(_count_range(ms, t) for ms in others),
                                                             *given.get(t, [])]):
            continue  # no two names carry overlapping ranges of one tool
        offer(2, _times(None if named == {t} else t, lo, hi),
              lambda m, t=t, lo=lo, hi=hi: lo <= m["counts"].get(t, 0) <= hi, count=(t, lo, hi))
    for token in sorted({tk for ms in (mine, *others) for m in ms for tk in m["tokens"]}):
        def has(m: dict, tk: str = token) -> bool:
            return tk in m["tokens"]

        offer(1, f"with {_token_phrase(token)}", has)
        offer(1, f"without {_token_phrase(token)}", has, lacking=True)
    if not options:
        return None
    # a move token only where nothing a reader knows by name (tools, counts, repeats) tells them apart
    _, _, phrase, test, count = min(options, key=lambda o: (o[1] == -1, -o[0], o[1], o[2]))
    return phrase, test, count


def _members(frame: pl.DataFrame) -> dict[int, list[Member]]:
    """Each strategy's distinct members (heaviest first) with what a name can say of them."""
    cols = ["strategy", "moves", "tools", "tokens", "n_rounds"]
    extra = [c for c in ("n_retries", "n_repeat") if c in frame.columns]
    order = ["strategy", "n", *cols[1:], *extra]
    groups = (frame.with_columns(*(pl.col(c).fill_null(0).cast(pl.Int64) for c in extra))
              .group_by(*cols, *extra).agg(pl.len().alias("n"))
              .sort(order, descending=[o == "n" for o in order]))
    members: dict[int, list[Member]] = {}
    for row in groups.iter_rows(named=True):
        tools = [t for t in (row["tools"] or "").split(" > ") if t]
        seq = _runs_of(step_labels((row["moves"] or "").split(" > "), tools))
        members.setdefault(int(row["strategy"]), []).append(
            {"seq": seq, "n": float(row["n"]), "rounds": int(row["n_rounds"] or 0),
             "tokens": frozenset((row["tokens"] or "").split()), "free": not tools,
             "counts": Counter(t.rstrip("!") for t in tools),
             "loop": int(row.get("n_retries") or 0) >= LOOP_RETRIES, "repeat": int(row.get("n_repeat") or 0) > 0})
    return members


def overlaps(members: dict[int, list[Member]], tests: dict[int, list[Test]]) -> dict[tuple[int, int], float]:
    """``(c, d) ->`` the share of strategy ``d``'s members (weighted by count) that ``c``'s name
    describes (every test of ``tests[c]`` holds), for every ordered pair of distinct strategies;
    ``(c, c)`` is ``c``'s fidelity."""
    out: dict[tuple[int, int], float] = {}
    for c in members:
        for d, ms in members.items():
            out[c, d] = _share(ms, lambda m, ts=tests[c]: all(t(m) for t in ts))
    return out


def _tell_siblings_apart(name: dict[int, str], tests: dict[int, list[Test]], members: dict[int, list[Member]],
                         given: dict[str, list[tuple[int, int]]], shares: dict[int, dict[str, float]]) -> None:
    """Rule 5 of :func:`strategy_names`: two strategies whose names each describe more than
    :data:`SIBLING_OVERLAP` of the other's members (different names that read alike on the
    members) each get what separates them from the other (:func:`_qualifier` on the pair), the
    most alike pair first, for three rounds; ``name`` and ``tests`` are updated in place."""
    for _ in range(3):
        ov = overlaps(members, tests)
        pairs = sorted(((min(ov[c, d], ov[d, c]), c, d) for c in members for d in members
                        if c < d and min(ov[c, d], ov[d, c]) > SIBLING_OVERLAP + 1e-12), reverse=True)
        touched: set[int] = set()
        for _, c, d in pairs:
            if touched & {c, d}:
                continue  # measured again next round, with the qualifier just added
            found = {x: _qualifier(x, [c, d], members, name[x], given, shares) for x in (c, d)}
            touched |= _add_qualifiers(found, name, tests, given, new_only=True)
        if not touched:
            return


def strategy_names(frame: pl.DataFrame, *, sibling_overlap: bool = False) -> pl.DataFrame:
    """Each strategy's name, built from what its members share, and its fidelity.

    ``frame`` has one row per member: ``strategy``, ``moves`` and ``tools`` (the attempt
    sequences of :func:`mechanism.analysis.segmentation.render`), ``tokens`` and ``n_rounds``, and
    where known ``n_retries`` and ``n_repeat`` (render's counts of failed calls retried by
    the next call of their tool, and of exact repeats of the previous call; absent: 0).

    The rule (stated once, used for every name):

    1. A strategy whose members all answer without a tool call is ``answer without tools``;
       no other name says so.
    2. Otherwise the name is the core: the longest sequence of steps (runs of one step as
       one, :func:`step_labels`) that the members holding at least :data:`NAME_COVERAGE` of
       the strategy contain in order (:func:`shared_core`); steps outside it are the
       family's optional steps. Where no step is that widely shared the name is ``varied:``
       and the most common sequence. A strategy some of whose members answer without a call
       (and others not) is ``answer with no call, or`` and the core of the others.
    3. A strategy at least :data:`LOOP_SHARE` of whose members are fail-and-retry loops (at
       least :data:`LOOP_RETRIES` failed calls, each retried by the next call of its tool)
       says ``(fail-and-retry loop)``: merging a failure with its retries into one attempt
       (``retries="merge"``) must not hide a loop that defines the strategy.
    4. Where strategies would still read the same, each says what tells it from the others
       (:func:`_qualifier`, largest gap first): ``with <tool>`` (a tool at least 0.9 of its
       members call and its siblings far less), ``without <tool>`` (a step its siblings take
       and it lacks), ``repeats a call``, a count of one tool's attempts (10th to 90th
       percentile, ``x2-4`` where the name has that tool alone, else ``lookup x2-4``; offered
       only where neither a sibling's range of that tool nor a count of it that another name
       of the space states meets it, and only for a tool every member in the range calls),
       or, where none of those tells them apart, a move token (``with ...``/``without ...``); a
       phrase two siblings would both add (two tokens in one wording) is added to neither. This
       repeats for names still alike (three rounds), then the most common sequence is stated
       (``mostly ...``). Then tools a strategy alone uses (:func:`own_tools`) that together
       cover :data:`NAME_COVERAGE` of its members and that its name does not mention are named
       as alternatives (``read_range (with sort or filter)``); then rule 5; and, only where
       nothing tells two strategies apart, the strategy id.
    5. Two strategies whose names each describe more than :data:`SIBLING_OVERLAP` of the
       other's members (``search -> search (reworded)`` beside ``search (with first search then
       search reworded)``, both holding searches reworded once) each get what separates them
       from the other, chosen as in 4 (:func:`_tell_siblings_apart`).

    A name *describes* a member when every part of it holds for the member: it has every
    step of the core in order (for rule 1: no call), it is a loop where the name says so,
    and every qualifier holds; ``fidelity`` is the share of the strategy's members the name
    describes.

    Parameters
    ----------
    frame
        One row per member, as above.
    sibling_overlap
        Add the column ``sibling_overlap``: over the other strategies, the largest of the
        smaller of the two shares each name describes of the other's members (at most
        :data:`SIBLING_OVERLAP` where rule 5 told every pair apart).

    Returns
    -------
    polars.DataFrame
        ``strategy, built_name, fidelity`` (and ``sibling_overlap``).
    """
    members = _members(frame)
    # test(member) -> bool for every part of a name, so that fidelity checks exactly what it says
    name: dict[int, str] = {}
    tests: dict[int, list[Test]] = {}
    for c, ms in members.items():
        if all(m["free"] for m in ms):
            name[c], tests[c] = "answer without tools", [lambda m: m["free"]]
            continue
        calling = [m for m in ms if not m["free"]]
        free = sum(m["n"] for m in ms) - sum(m["n"] for m in calling)
        core, _ = shared_core([m["seq"] for m in calling], [m["n"] for m in calling])
        if core:
            name[c] = " -> ".join(core)
            tests[c] = [lambda m, core=core: not m["free"] and _contains(m["seq"], core)]
        else:
            top = calling[0]["seq"]
            name[c] = "varied: " + " -> ".join(top)
            tests[c] = [lambda m, top=top: m["seq"] == top]
        if free > 0:  # some members answer without a call: the name says both
            name[c] = "answer with no call, or " + name[c]
            tests[c] = [lambda m, t=tests[c][0]: m["free"] or t(m)]
        if _share(ms, lambda m: m["loop"]) >= LOOP_SHARE - 1e-12:
            name[c] += f" ({LOOP_PHRASE})"
            tests[c].append(lambda m: m["loop"])

    def clashes() -> list[list[int]]:
        by: dict[str, list[int]] = {}
        for c in sorted(name):
            by.setdefault(name[c], []).append(c)
        return [cs for cs in by.values() if len(cs) > 1]

    given: dict[str, list[tuple[int, int]]] = {}  # the counts names state, per tool
    shares = tool_shares(members)
    for _ in range(3):
        groups = clashes()
        if not groups:
            break
        for cs in groups:
            # one group's qualifiers are chosen together (its siblings' ranges are disjoint)
            found = {c: _qualifier(c, cs, members, name[c], given, shares) for c in cs}
            _add_qualifiers(found, name, tests, given)
    for cs in clashes():  # the most common sequence, where those differ
        tops = {c: members[c][0]["seq"] for c in cs}
        if len(set(tops.values())) == len(cs):
            for c in cs:
                name[c] = f"{name[c]} (mostly {' -> '.join(tops[c]) or 'no call'})"
                tests[c].append(lambda m, top=tops[c]: m["seq"] == top)
    for c in name:
        plain = name[c] != "answer without tools" and not name[c].startswith("varied: ")
        own = own_tools(c, members, name[c], shares) if plain else []
        if own:
            phrase, test = _with_own(own)
            name[c] += f" ({phrase})"
            tests[c].append(test)
    _tell_siblings_apart(name, tests, members, given, shares)
    for cs in clashes():
        for c in cs:
            name[c] = f"{name[c]} [S{c}]"
    ids = sorted(members)
    fidelity = [_share(members[c], lambda m, c=c: all(t(m) for t in tests[c])) for c in ids]
    out = pl.DataFrame({"strategy": ids, "built_name": [name[c] for c in ids], "fidelity": fidelity},
                       schema={"strategy": pl.Int64, "built_name": pl.String, "fidelity": pl.Float64})
    if sibling_overlap:
        ov = overlaps(members, tests)
        out = out.with_columns(pl.Series("sibling_overlap", [
            max((min(ov[c, d], ov[d, c]) for d in ids if d != c), default=0.0) for c in ids], dtype=pl.Float64))
    return out


def loop_share(n_retries: pl.Expr) -> pl.Expr:
    """The share of members that are fail-and-retry loops (:data:`LOOP_RETRIES`), as an
    aggregation over a strategy's ``n_retries``."""
    return (n_retries.fill_null(0) >= LOOP_RETRIES).mean()
