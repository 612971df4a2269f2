"""The move grammar: every tool call of any agent described by what all formats have (tool
name, arguments, observation, order), with the question's content masked.

A strategy is how an agent uses its tools, not what it asks about (docs/methods.md):
raw transcripts cluster by entity names. So a call is described by

tool
    its normalised name, never truncated in what a person reads;
sources
    where its argument values came from, for every value whatever its shape (words, ids
    such as ``mia_li_3668``, codes such as ``#W4830391``, e-mails, numbers, lower-case
    names, multi-word phrases as their atoms): ``user`` (the question or user turn),
    ``call`` (an earlier call's arguments), ``result`` (first met in an earlier
    observation: information carried over) or ``new``; matched through sets of atoms, so
    linear in the text;
relation
    to earlier calls (:data:`RELATIONS`): ``first`` use of the tool, exact ``repeat`` of
    the previous call, ``return`` to an earlier call after others (read, change, read
    again), ``revise`` (same tool, most of an earlier call's values kept), ``switch`` (a
    value an earlier call of another tool used: the same object under another tool),
    ``new`` (same tool, another object);
scope
    how much of the question the call covers (``whole``, ``most``, ``part``, ``none``);
failed, after_error
    whether its observation reports an error, and whether it follows a failed call (a
    retry).

Failures and retries (``retries=``): by default (``"merge"``) a failed call and the calls of
the same tool that follow it until one goes through are one *attempt* of that move, read as
the move the last of them made, and a failed call nobody retried is read as the move it
attempted. How often an agent fails and retries is execution, not strategy: it is kept per call (``failed``,
``retried``) and per trajectory (``n_failed``,
``n_retries``) and reported per strategy and arm, never in the move tokens or the rendering
that define strategies. One thing about failing does enter them: an episode that answers
right after a failed call nobody retried ends otherwise (``E:answer_after_failure``): the
agent gave up on a call that never went through. Another: a call answered by an HTTP error (a
4xx or 5xx status line, an error body, a browser's error page such as a guessed URL's 404) that
the agent moves on from to another call, not retries, stays a move of its own marked failed
(``goto!``, named ``goto (failed) -> click``): its request reached nothing, and what the agent
does instead is its way around. A failing check or a traceback stays unmarked: it is the
environment's report on the work, met inside every strategy (marking it: terminal world 0.96 ->
0.77, benchmarks/RESULTS.md, 2026-12-05). ``retries="keep"`` keeps every call a move of its own,
failure (``!``) and retry (``after error``) marked, for studies of recovery behaviour.

Every other call is a move of its own, a second look included: opening three files one after
another, reading a second of the e-mails a search listed. How many objects an agent takes in
can be the strategy itself (read many files before editing, read every sheet of a workbook),
and the tool plan reads a tool called again as such (``tool+``,
:func:`~mechanism.analysis._strategies.features.tool_plan`). Looks were once folded into the
attempt before them (as execution); measured on the planted worlds, that hid strategies that
differ by how much they read (benchmarks/RESULTS.md, 2026-12-05).

Calls of a retrieval tool (named like a search) are also read as search moves
(:data:`SEARCH_MOVES`: ``first_lookup``, ``bridge_lookup``, ``verification``,
``reformulation``, ``parallel_lookup``, ``new_lookup``, ``repeat``), derived from the same
grammar. The episode ends in ``answer`` or ``no_answer``: nothing that depends on the
outcome (whether the answer was retrieved or right) is recorded, since a strategy defined
by its outcome would fold within-strategy success into composition (mechanism.analysis.compare).

A trajectory is rendered as its masked moves, e.g. ``1. get_order_details first: user,
part of question | 2. cancel_pending_order switch: user+new, part of question | answer``,
and summarised by its move tokens (:func:`move_tokens`), what strategies are made of.
"""
from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl

# the failure reading, the reading of generic tools and the pattern engine are part of what a
# segmentation says: their source goes into segmenter_id
from mechanism.core import actions as actions_module
from mechanism.core import failures as failures_module
from mechanism.core import patterns as patterns_module
from mechanism.core.actions import (
    AGENT_FIELDS,
    DISPATCHED,
    HANDOFF_FIELD,
    MARK_FIELDS,
    NESTED_FIELD,
    RETRIEVAL_TOOL,
    WRITTEN,
    ActionField,
    check_action_field,
    detect_action_tools,
    dispatched_call,
    mend_typos,
    read_action,
    read_agent_call,
    read_nested,
    request_segments,
    tool_name,
)
from mechanism.core.cachefile import (
    check_parquet_depth,
    code_id,
    digest,
    discard,
    read_checked,
    write_checked,
)
from mechanism.core.errors import InputError
from mechanism.core.failures import compile_error_pattern, failure_kind, is_failure, silent_tool
from mechanism.core.schema import PARALLEL, USER_TURNS_JOIN, validate

RELATIONS = ("first", "repeat", "return", "revise", "switch", "new")
SOURCES = ("user", "call", "result", "new")
SCOPES = ("whole", "most", "part", "none")
# Readings of a retrieval tool's calls (a tool named like a search whose call is one text):
# the search-specific names of the same grammar.
SEARCH_MOVES = ("first_lookup", "repeat", "reformulation", "bridge_lookup", "verification",
                "parallel_lookup", "new_lookup")
FINAL_MOVES = ("answer", "no_answer")
MOVES = RELATIONS + SEARCH_MOVES + FINAL_MOVES
RETRIES = ("merge", "keep")
Retries = Literal["merge", "keep"]

# Descriptive columns per trajectory. None is an outcome (whether the answer was retrieved or
# right): a strategy defined by its outcome would fold within-strategy success into
# composition (mechanism.analysis.compare).
DESCRIPTIVE_COLUMNS = (
    "n_rounds", "n_tools", "n_failed", "n_retries", *(f"n_{r}" for r in RELATIONS),
    "share_user", "share_result", "share_call", "share_new", "first_call_coverage",
)

# Scope of a call relative to the question (or first user turn): all of its content atoms
# ("whole"), at least this share ("most"), fewer ("part"), none.
MOST_QUESTION_COVERAGE = 0.5
# Rendering bounds: untrusted fields can be arbitrarily long; these keep memory and the
# embedder's input bounded.
MAX_STEPS_RENDERED = 16
MAX_FIELD_CHARS = 20_000

# An atom is a value's unit of identity whatever its shape: a word, a number, an id such as
# `mia_li_3668`, a code such as `#W4830391`, an e-mail, a date. Matching atoms through sets is
# linear in the text; a multi-word value (a phrase, a lower-case name) is its atoms.
_ATOM = re.compile(r"[#@\w][\w.@#+'/-]*\w|\w", re.UNICODE)
# A line break or tab written as its escape inside a value quoted in a written-out call
# (`edit a.py "x = 1\\ny = 2"`) separates words as the break itself would (only there: elsewhere
# a backslash and a letter may be a path's or LaTeX's, `\\theta`)
_ESCAPED_SPACE = re.compile(r"\\[ntr]")
# A number written in groups with one separator (`921-602-6976`, `921 602 6976`, an area code
# in parentheses, a country code after `+`) is its groups (an area code is a value too) and its
# digits run together, as a form or an API takes the number (`9216026976`); after a country
# code, with and without it. Groups glued to letters are a code's (`NW2352 2025-01-26` is a
# flight and a date), and a date and the time after it (`2026-03-13 16:30`) are no one number.
# Dropping the groups instead cost the support world 0.535 -> 0.468 (seeds 0-2).
_DIGIT_RUN = re.compile(r"(?<![\w.+])(?:\+?\d+([ .-])\d+(?:\1\d+)*"
                        r"|(?:\+\d+ ?)?\(\d+\) ?\d+(?:([ .-])\d+(?:\2\d+)*)?)(?!\w)")
_DIGIT_GROUP = re.compile(r"\d+")
_MAY_GROUP = re.compile(r"\d[ .)-]\d|\d\) \d")
_GROUPED = (7, 19)  # the digits a grouped number may have (a card number's longest is 19)
_MAX_GROUPS, _MAX_GROUP_DIGITS = 6, 4
_RETRIEVAL = RETRIEVAL_TOOL
_LITERALS = frozenset({"true", "false", "null"})  # JSON's, written out in a generic tool's command
@functools.lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    # Imported on first use: scikit-learn costs ~0.3 s to import, and a fit whose
    # segmentations all come from the cache never tokenizes anything.
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS  # noqa: PLC0415 - scikit-learn: about a second to import, only in the steps that use it

    # and JSON's literals: a flag's value written out (`archival_memory_search allergic true`) names nothing
    return frozenset(ENGLISH_STOP_WORDS) | _LITERALS


def atoms(text: str | None) -> list[str]:
    """Lower-case content atoms of ``text`` (stop words dropped), in order, each kept once; a
    number written in groups is its groups and its digits run together (:func:`_run_together`).

    Examples
    --------
    >>> atoms("Where was the director of Jaws born?")
    ['director', 'jaws', 'born']
    >>> atoms('{"user_id": "mia_li_3668", "order": "#W4830391", "email": "mia.li@x.com"}')
    ['user_id', 'mia_li_3668', 'order', '#w4830391', 'email', 'mia.li@x.com']
    >>> atoms("Dial +1 (921) 602-6976.")
    ['dial', '1', '921', '602-6976', '19216026976', '9216026976']
    """
    if not text:
        return []
    stop = _stop_words()
    seen: dict[str, None] = {}
    text = text[:MAX_FIELD_CHARS].lower()
    if _MAY_GROUP.search(text):  # a quick look first: most texts hold no number in groups
        text = _DIGIT_RUN.sub(_run_together, text)
    for atom in _ATOM.findall(text):
        if atom not in stop and atom not in seen:
            seen[atom] = None
    return list(seen)


def _run_together(run: re.Match[str]) -> str:
    """A number written in groups followed by its digits run together (after a country code,
    with and without it); any other run of digits (a decimal, a version, a long number) as it is.

    Examples
    --------
    >>> _DIGIT_RUN.sub(_run_together, "call +1 921 602 6976 or (921) 602-6976; 10.5 GB, NW2352 2025-01-26")
    'call +1 921 602 6976 19216026976 9216026976 or (921) 602-6976 9216026976; 10.5 GB, NW2352 2025-01-26 20250126'
    >>> _DIGIT_RUN.sub(_run_together, "on 2026-03-13 16:30")
    'on 2026-03-13 20260313 16:30'
    """
    text = run.group()
    groups = _DIGIT_GROUP.findall(text)
    if len(groups) > _MAX_GROUPS or any(len(g) > _MAX_GROUP_DIGITS for g in groups):
        return text
    forms = [groups, groups[1:]] if text.startswith("+") and len(groups) > 2 else [groups]
    joined = ["".join(f) for f in forms if _GROUPED[0] <= sum(map(len, f)) <= _GROUPED[1]]
    return " ".join([text, *joined]) if joined else text


content_tokens = atoms  # an alias, for callers that import atoms under this name


def check_retries(retries: Any) -> None:
    """A one-line error naming ``retries`` when it is not one of :data:`RETRIES`."""
    if retries not in RETRIES:
        raise InputError(f"`retries` must be 'merge' or 'keep', got {str(retries)[:40]!r}", field="retries")


def is_error(observation: str | None, error_pattern: str | re.Pattern[str] | None = None) -> bool:
    """Whether a tool's result reports a failed call (:func:`mechanism.core.failures.is_failure`:
    Wikipedia ReAct's "Could not find", tool errors, error objects, missing ids and files,
    code that could not run), or matches ``error_pattern``.

    Examples
    --------
    >>> is_error("Error: user not found"), is_error('{"error": "bad id"}'), is_error("Paris")
    (True, True, False)
    >>> is_error("No Results"), is_error("BUSY", error_pattern="^busy")
    (True, True)
    """
    return is_failure(observation, compile_error_pattern(error_pattern))


def _leaves(value: Any, out: list[str], depth: int = 0) -> None:
    if depth > 8 or len(out) > 256:
        return
    if isinstance(value, dict):
        for v in value.values():
            _leaves(v, out, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _leaves(v, out, depth + 1)
    elif value is not None and not isinstance(value, bool):
        out.append(str(value))


def argument_values(arguments: str | None, query: str | None) -> list[str]:
    """The values a call passed: the leaves of its JSON arguments (keys dropped), else its
    main text argument.

    Examples
    --------
    >>> argument_values('{"order_id": "#W1", "items": ["a b", 3]}', "#W1")
    ['#W1', 'a b', '3']
    """
    if arguments:
        text = arguments[:MAX_FIELD_CHARS]
        if text.lstrip().startswith(("{", "[")):
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            if isinstance(parsed, (dict, list)):
                out: list[str] = []
                _leaves(parsed, out)
                return out
    if query is not None:
        return [query]
    return [arguments] if arguments else []


@dataclass
class _Step:
    move: str
    tool: str
    relation: str
    sources: str
    scope: str
    failed: bool
    after_error: bool
    retried: bool  # a failed call that the next call, of the same tool, retries
    n_atoms: int
    share_user: float
    share_result: float
    share_call: float
    share_new: float
    question_coverage: float
    masked: str
    token: str
    merged: bool = False  # retried, and read as one attempt with its retry (retries="merge")
    marked: bool = False  # the failure is part of the move (retries="keep")
    marked_retry: bool = False  # so is following a failed call
    query_keys: tuple[str, ...] = ()  # a request's query parameter names (mechanism.core.actions)
    parallel: bool = False  # issued in the same message as the call before it (the schema's `parallel`)


#: The mark the tools the question decides are read as in a plan (:func:`plan_steps`).
TASK_MARK = "(task)"
#: The name a task's calls are read under, numbered by first call (``task_call_1``, ...).
TASK_TOOL = "task_call"
#: What joins the members of a group of interchangeable tools in the name they are read under
#: (``sed_i_or_python_inline_or_perl_i``).
ALIKE_JOIN = "_or_"


@dataclass(frozen=True)
class TaskCalls:
    """The tools whose calls the task decides, not the strategy (which tool a request needs:
    ``search_hotels`` or ``search_flights``), and what the move reading does with them:
    ``drop`` leaves them out (whether one is called at all is the task's doing), else each is
    read as :data:`TASK_TOOL` numbered by the order the episode first called it, so the shape
    stays (one tool called again or another) and which tool it was goes.
    :func:`mechanism.analysis._strategies.features.task_calls` finds them.

    ``by_place``: every call, whatever its tool, is read by its place (:data:`TASK_TOOL`
    numbered by the order the episode first called its tool), each call kept: the reading of
    an agent whose requests pick among many tools, so that which tools an episode called is the
    question's and only the shape (one call, a chain, the same tool on several items, a
    cross-check with another) is the strategy's (:mod:`mechanism.analysis._strategies.places`
    decides when).

    ``alike``: groups of tools the agent uses interchangeably, whatever its strategy (an edit
    made with ``sed -i``, a Python heredoc or ``perl -pi``), each group read as one tool named
    by its members joined by :data:`ALIKE_JOIN`, most called first
    (:mod:`mechanism.analysis._strategies.alike` finds them).

    ``segments``: the path segments of a generic request tool's calls that the task decides
    (``invoices`` or ``tickets``: which resource a request names), each read as one mark in the
    request's verb (:func:`mechanism.core.actions.request_segments`,
    :func:`mechanism.analysis._strategies.features.task_segments`).

    ``optional``: tools the agent calls or not whatever its strategy (a look at the account
    before any of them), each with the plans (:func:`plan_steps`, ``" > "``-joined, the task's
    ``tools`` as one mark) met both with it and without it: a trajectory whose plan without the
    tool is one of them has its calls of it left out, any other keeps them (a strategy made of
    the tool, or that needs it); none under ``by_place``
    (:func:`mechanism.analysis._strategies.alike.optional_steps` finds them)."""

    tools: frozenset[str] = frozenset()
    drop: bool = False
    by_place: bool = False
    alike: tuple[tuple[str, ...], ...] = ()
    segments: frozenset[str] = frozenset()
    optional: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.tools) or self.by_place or bool(self.alike) or bool(self.segments) or bool(self.optional)

    @functools.cached_property
    def optional_plans(self) -> dict[str, frozenset[str]]:
        """Each tool in ``optional`` -> the plans without it where its calls are left out (built
        once: every trajectory's reading looks them up)."""
        return {t: frozenset(plans) for t, plans in self.optional}

    def alike_names(self) -> dict[str, str]:
        """Each tool of a group in ``alike`` -> the name its group is read under.

        >>> TaskCalls(alike=(("sed_i", "perl_i"),)).alike_names()
        {'sed_i': 'sed_i_or_perl_i', 'perl_i': 'sed_i_or_perl_i'}
        """
        return {t: ALIKE_JOIN.join(group) for group in self.alike for t in group}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (saved with a strategy space)."""
        return {"tools": sorted(self.tools), "drop": self.drop, **({"by_place": True} if self.by_place else {}),
                **({"alike": [list(g) for g in self.alike]} if self.alike else {}),
                **({"segments": sorted(self.segments)} if self.segments else {}),
                **({"optional": {t: list(plans) for t, plans in self.optional}} if self.optional else {})}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> TaskCalls:
        """The inverse of :meth:`to_dict` (``None``: none)."""
        if not data:
            return cls()
        return cls(frozenset(str(t) for t in data.get("tools", ())), bool(data.get("drop", False)),
                   bool(data.get("by_place", False)), tuple(tuple(str(t) for t in g) for g in data.get("alike", ())),
                   frozenset(str(s) for s in data.get("segments", ())),
                   tuple(sorted((str(t), tuple(sorted(map(str, plans))))
                                for t, plans in dict(data.get("optional") or {}).items())))


NO_TASK_CALLS = TaskCalls()


class _Memo:
    """Atoms of the texts met in one segmentation pass, each computed once.

    A table repeats its texts heavily (one question for every sample of it, one retrieved
    passage for many queries), and tokenising is most of the work. The memo lives for one
    call, so memory stays bounded by the table being segmented.
    """

    def __init__(self) -> None:
        self._atoms: dict[str | None, frozenset[str]] = {}
        self._tools: dict[str | None, str] = {}

    def atoms(self, text: str | None) -> frozenset[str]:
        hit = self._atoms.get(text)
        if hit is None:
            hit = self._atoms[text] = frozenset(atoms(text))
        return hit

    def tool(self, tool: str | None) -> str:
        hit = self._tools.get(tool)
        if hit is None:
            hit = self._tools[tool] = tool_name(tool)
        return hit


def _scope(coverage: float, n_user: int) -> str:
    if n_user == 0:
        return "none"
    if coverage >= 1.0:
        return "whole"
    return "most" if coverage >= MOST_QUESTION_COVERAGE else "part"


# A call revises an earlier call of its tool when at least this share of the smaller call's
# atoms is shared (a reworded query, the same object with other options); sharing less (one
# attribute word between two compared entities) is a call on another object.
REVISION_KEEP = 0.5


def _keeps(tset: set[str], earlier: Sequence[frozenset[str]]) -> bool:
    return any(p and tset and len(tset & p) >= REVISION_KEEP * min(len(tset), len(p)) for p in earlier)


def _search_move(relation: str, sources: set[str]) -> str:
    """The search reading of a retrieval tool's call, from the same grammar."""
    if relation == "first":
        return "first_lookup"
    if relation in ("repeat", "return"):
        return "repeat"
    if "result" in sources:
        # Carrying a value from a result: with nothing new, checking what was found
        # (the value and words already used); otherwise a bridge to a new lookup.
        return "verification" if "new" not in sources and "call" in sources else "bridge_lookup"
    if relation == "revise":
        return "reformulation"
    return "parallel_lookup" if "user" in sources else "new_lookup"


def _failed(step: Mapping[str, Any], error_pattern: re.Pattern[str] | None) -> bool:
    # the default reading, or the read's own verdict (`failed`, written when `mx.read` had an `error_pattern`)
    # a generic tool's call is judged as that tool's, or as the verb it runs where that one succeeds
    # silently (`act(command="sed -i ...")`: an edit in place prints nothing, as it would through `bash`)
    via, verb = step.get("via"), step.get("tool")
    tool = verb if via and silent_tool(verb) else via or verb
    return is_failure(step.get("observation"), error_pattern, tool=tool) or step.get("failed") is True


USER_TURN = "ask_user"
#: Where a step keeps the number of the message that issued it (:func:`_batched`).
_BATCH = "_batch"
#: What ends a move of the ``moves`` sequence issued in the same message as the move before it.
PARALLEL_MARK = "&"


def _batched(steps: list[dict]) -> list[dict]:
    """``steps`` each with the number of the message it was issued in (``_batch``): a step marked
    ``parallel`` shares the number of the one before it. Read before any step is left out or
    added, so a call whose batch lost its first call still reads as issued with the rest.

    >>> [s["_batch"] for s in _batched([{"tool": "a"}, {"tool": "b", "parallel": True}, {"tool": "c"}])]
    [0, 0, 1]
    """
    out, batch = [], -1
    for st in steps:
        batch += 0 if st.get(PARALLEL) is True and batch >= 0 else 1
        out.append({**st, _BATCH: batch})
    return out


def with_user_turns(steps: Sequence[dict]) -> list[dict]:
    """``steps`` with a move :data:`USER_TURN` for each turn the user spoke before a call (the
    step's ``user`` text, its messages joined by :data:`~mechanism.core.schema.USER_TURNS_JOIN`,
    moved onto them): where an agent asks the user and waits for the reply, that turn is a move
    of its plan like a call (asking the customer to restart the phone before any lookup, or after
    a failed fix), not only where the user's words came from. An agent that asks through a tool
    of that name reads the same.

    >>> [s["tool"] for s in with_user_turns([{"tool": "get_customer", "user": "It is 4155550134."}])]
    ['ask_user', 'get_customer']
    >>> [s["tool"] for s in with_user_turns([{"tool": "get_line", "user": "Airplane mode is off.\\n\\nNo bars."}])]
    ['ask_user', 'ask_user', 'get_line']
    """
    out: list[dict] = []
    for st in steps:
        said = st.get("user")
        if said:
            for turn in [t for t in said.split(USER_TURNS_JOIN) if t.strip()] or [said]:
                out.append({"tool": USER_TURN, "arguments": None, "query": None, "observation": None, "thought": None,
                            "user": turn})
            st = {**st, "user": None}
        out.append(st)
    return out


def _segment_one(question: str | None, answer: str | None, steps: Sequence[dict] | None,
                 memo: _Memo | None = None, error_pattern: re.Pattern[str] | None = None,
                 retries: str = "merge", actions: Mapping[str, str] | None = None,
                 ignore: frozenset[str] = frozenset(), task: TaskCalls = NO_TASK_CALLS,
                 ) -> tuple[list[_Step], _Step, dict[str, float], str]:
    """Moves (every call), final move, descriptive features and rendering of one trajectory;
    the calls of a generic tool in ``actions`` are read as their verb (:mod:`mechanism.core.actions`),
    the calls of the tools (or verbs) in ``ignore`` are left out, and the task's calls ``task``
    are left out or renamed (:class:`TaskCalls`)."""
    memo = memo or _Memo()
    merge = retries == "merge"
    asked = memo.atoms(question)  # the question's atoms: what `scope` measures against
    user: frozenset[str] | set[str] = asked  # every atom the user has said so far
    result_atoms: set[str] = set()
    # the results of the calls of one message, seen only once the message's calls were all made:
    # a call issued with another cannot carry what that one returns
    unseen: set[str] = set()
    in_batch: int | None = None
    carried: dict[int, int] = {}  # a retry -> the message of the failed call it is the attempt of
    last_sent: int | None = None  # the message of the last attempt
    call_atoms: set[str] = set()
    by_tool: dict[str, set[str]] = {}
    same_tool: dict[str, list[frozenset[str]]] = {}
    calls_seen: set[tuple[str, tuple[str, ...]]] = set()
    prev_call: tuple[str, tuple[str, ...]] | None = None
    prev_failed = False
    moves: list[_Step] = []
    steps = [st or {} for st in (steps or ())]  # a null step is a call with nothing recorded
    if any(st.get(PARALLEL) for st in steps):  # the message each call was issued in, before any is left out
        steps = _batched(steps)
    if any(st.get("user") for st in steps):
        steps = with_user_turns(steps)
    raw = [memo.tool(st.get("tool")) for st in steps]
    if actions:
        written = steps
        steps = [read_action(st, actions[name], task.segments) if name in actions and actions[name] not in MARK_FIELDS
                 else st for st, name in zip(steps, raw)]
        # a dispatcher's call read as the call it runs, whose tool may be generic in turn
        steps = [read_action(st, actions[inner], task.segments)
                 if st.get(DISPATCHED) and (inner := memo.tool(st.get("tool"))) in actions
                 and actions[inner] not in MARK_FIELDS else st for st in steps]
        if NESTED_FIELD in actions.values():
            # a generic tool's verb that runs a command line (a typed tool re-logged through it)
            steps = [read_nested(w, actions[r], st) if actions.get(memo.tool(st.get("tool"))) == NESTED_FIELD
                     and actions.get(r) not in (None, *MARK_FIELDS) else st for w, st, r in zip(written, steps, raw)]
    if actions and HANDOFF_FIELD in actions.values():
        # a handoff to another agent, or an agent consulted as a tool (the table's, in `actions`):
        # a typed tool's call, or a generic tool's verb once read above
        named = [memo.tool(st.get("tool")) for st in steps]
        steps = [read_agent_call(st, name, actions[name]) if actions.get(name) in AGENT_FIELDS else st
                 for st, name in zip(steps, named)]
    # each call's failure read once: the typo mending and the moves both need it
    failed_of = [_failed(st, error_pattern) for st in steps]
    if actions:
        steps = mend_typos(steps, raw, [f and name in actions for f, name in zip(failed_of, raw)])
    if ignore:
        kept = [i for i, st in enumerate(steps) if memo.tool(st.get("tool")) not in ignore]
        steps, failed_of = [steps[i] for i in kept], [failed_of[i] for i in kept]
    tools_of = [memo.tool(st.get("tool")) for st in steps]
    if task.alike:  # tools used interchangeably read as one, each call keeping its own name
        read_as = task.alike_names()
        steps = [{**st, "_named": t} if t in read_as else st for st, t in zip(steps, tools_of)]
        tools_of = [read_as.get(t, t) for t in tools_of]
    if task.optional:  # steps taken whatever the strategy, where the plan without them is met too
        together = [i > 0 and st.get(_BATCH) is not None and steps[i - 1].get(_BATCH) == st.get(_BATCH)
                    for i, st in enumerate(steps)]
        kept = optional_kept(task.optional_plans, batched_names(tools_of, together), task.tools)
        steps, failed_of, tools_of = [steps[i] for i in kept], [failed_of[i] for i in kept], [tools_of[i] for i in kept]
    if task:
        steps, failed_of, tools_of = _task_read(task, steps, failed_of, tools_of)
    for i, step in enumerate(steps):
        batch = step.get(_BATCH)
        if batch != in_batch:
            result_atoms |= unseen
            unseen, in_batch = set(), batch
        said = step.get("user")
        if said:  # a later user turn (an id, a code, a name typed in reply): the user's too
            user = set(user) | memo.atoms(said)
        tool = tools_of[i]
        values = argument_values(step.get("arguments"), step.get("query"))
        if step.get(WRITTEN):  # its quoted values' escaped breaks are breaks
            values = [_ESCAPED_SPACE.sub(" ", v) if "\\" in v else v for v in values]
        vatoms: dict[str, None] = {}
        for v in values:
            for a in memo.atoms(v):
                vatoms[a] = None
        toks = list(vatoms)
        counts = dict.fromkeys(SOURCES, 0)
        for a in toks:
            # The user turn first, then reuse of an earlier call's value, then a value first
            # met in a result (information carried over), else new.
            if a in user:
                counts["user"] += 1
            elif a in call_atoms:
                counts["call"] += 1
            elif a in result_atoms:
                counts["result"] += 1
            else:
                counts["new"] += 1
        tset = set(toks)
        # a call whose values were written out, quoted, is its words in any order, as a typed call
        # is its values (a flag's literal no word: a typed call's booleans are no values)
        key = (tool, tuple(sorted(w for v in values for w in v.lower().split() if w not in _LITERALS)
                           if step.get(WRITTEN)
                           else sorted(" ".join(v.split()).lower() for v in values)))
        if key in calls_seen:
            relation = "repeat" if key == prev_call else "return"
        elif tool in by_tool and _keeps(tset, same_tool.get(tool, ())):
            relation = "revise"
        elif any(tset & atoms_ for other, atoms_ in by_tool.items() if other != tool):
            # the same object an earlier call of another tool named (read, then change it)
            relation = "switch"
        elif tool not in by_tool:
            relation = "first"
        else:
            relation = "new"
        observation = step.get("observation")
        failed = failed_of[i]
        # merged: a failed call the next call of the same tool retries is that call's attempt,
        # so it leaves the grammar's state as it found it (the retry is read as if first tried)
        # (a turn the user answers in between, the agent asking for a corrected id, is no other call)
        # (nor is a call issued in the same message: a retry comes after the failure was read)
        after = next((j for j in range(i + 1, len(steps)) if tools_of[j] != USER_TURN
                      and (batch is None or steps[j].get(_BATCH) != batch)), len(steps)) if failed else 0
        if failed and batch is not None and after < len(steps):  # its retry: the same tool's call in that message
            after = next((j for j in range(after, len(steps)) if steps[j].get(_BATCH) == steps[after].get(_BATCH)
                          and tools_of[j] == tool), after)
        retried = failed and after < len(steps) and tools_of[after] == tool
        merged = merge and retried
        sent = carried.get(i, batch)  # the message an attempt counts as sent in
        if merged and sent is not None:
            # the retry is this call's attempt, read as if it had gone through the first time:
            # sent in this call's message, though it went out alone after it
            carried[after] = sent
        n = len(toks)
        sources = {s for s in SOURCES if counts[s]}
        coverage = len(tset & asked) / len(asked) if asked else 0.0
        scope = _scope(coverage, counts["user"])
        retrieval = bool(_RETRIEVAL.search(step.get("_named") or tool)) and len(values) <= 1
        move = _search_move(relation, sources) if retrieval else relation
        src = "+".join(s for s in SOURCES if s in sources) or "nothing"
        # under merge, a call answered by an HTTP error (a guessed URL that is a 404 page) that the
        # agent moves on from, not retries, stays a move of its own, marked: what it does instead
        # is its way around. Only HTTP errors: a failing check or a traceback is the environment's
        # report on the work, met inside every strategy (marking those too: terminal 0.96 -> 0.77)
        stands = failed and not retried and i + 1 < len(steps) and failure_kind(observation) == "http"
        shown_failed, shown_after = (failed, prev_failed) if not merge else (stands, False)
        flag = "!" if shown_failed else ""
        token = f"{tool}{flag}/{relation}/{src}/{scope}" + ("/after_error" if shown_after else "")
        masked = (f"{tool} {move}" + (" failed" if shown_failed else "") + (" after error" if shown_after else "")
                  + f": {src}" + (f", {scope} of question" if scope != "none" else ""))
        moves.append(_Step(
            move=move, tool=tool, relation=relation, sources=src, scope=scope, failed=failed,
            after_error=prev_failed, retried=retried, n_atoms=n,
            share_user=counts["user"] / n if n else 0.0, share_result=counts["result"] / n if n else 0.0,
            share_call=counts["call"] / n if n else 0.0, share_new=counts["new"] / n if n else 0.0,
            question_coverage=coverage, masked=masked, token=token, merged=merged,
            marked=shown_failed, marked_retry=shown_after, query_keys=tuple(step.get("_query_keys") or ()),
            parallel=sent is not None and sent == last_sent))
        if not merged:
            last_sent = sent
        if tool != USER_TURN:  # the user's answer does not put right the call that failed
            prev_failed = failed
        if merged:
            continue
        calls_seen.add(key)
        prev_call = key
        by_tool.setdefault(tool, set()).update(tset)
        same_tool.setdefault(tool, []).append(frozenset(tset))
        call_atoms |= tset
        (result_atoms if batch is None else unseen).update(memo.atoms(observation))
    final_move = "no_answer" if answer is None else "answer"
    final = _Step(move=final_move, tool="answer", relation=final_move, sources="", scope="none", failed=False,
                  after_error=prev_failed, retried=False, n_atoms=0, share_user=0.0, share_result=0.0, share_call=0.0,
                  share_new=0.0, question_coverage=0.0, masked=final_move.replace("_", " "), token=final_move)
    feats: dict[str, float] = {"n_tools": float(len(by_tool)), "n_failed": float(sum(m.failed for m in moves)),
                               "n_retries": float(sum(m.retried for m in moves))}
    shown = attempts(moves)  # what defines the strategy: one entry per attempt of a move
    for r in RELATIONS:
        feats[f"n_{r}"] = float(sum(m.relation == r for m in shown))
    for key in ("share_user", "share_result", "share_call", "share_new"):
        vals = [getattr(m, key) for m in shown if m.n_atoms]
        feats[key] = sum(vals) / len(vals) if vals else 0.0
    feats["first_call_coverage"] = moves[0].question_coverage if moves else 0.0
    parts = [f"{i + 1}. {m.masked}" for i, m in enumerate(shown[:MAX_STEPS_RENDERED])]
    if len(shown) > MAX_STEPS_RENDERED:
        parts.append(f"... {len(shown) - MAX_STEPS_RENDERED} more calls")
    parts.append(final.masked)
    rendering = " | ".join(parts)
    return moves, final, feats, rendering


def plan_steps(tools: Sequence[str], task: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The steps of a trajectory's plan: each run of a tool once (again or not: how often is
    execution), failure marks off, the tools in ``task`` as one mark (``(task)``).

    >>> plan_steps(["grep", "grep", "sed", "sed_i!", "sed_i", "pytest"], frozenset({"pytest"}))
    ('grep', 'sed', 'sed_i', '(task)')
    """
    out: list[str] = []
    for tool in tools:
        tool = tool.rstrip("!")
        step = TASK_MARK if tool in task else tool
        if step and (not out or out[-1] != step):
            out.append(step)
    return tuple(out)


def batched_names(tools: Sequence[str], together: Sequence[bool]) -> list[str]:
    """``tools`` with each call sent in one message with another call of the same tool named
    ``tool&`` (``together[i]``: call ``i`` was sent in the message of call ``i - 1``): a batch of
    one tool's calls is a plan step of its own, neither the single call some plans add nor a
    chain of calls sent one after another.

    >>> batched_names(["search", "search", "search", "open"], [False, True, False, True])
    ['search&', 'search&', 'search', 'open']
    """
    same = [i > 0 and together[i] and tools[i - 1].rstrip("!") == t.rstrip("!") for i, t in enumerate(tools)]
    return [t + PARALLEL_MARK if same[i] or (i + 1 < len(tools) and same[i + 1]) else t for i, t in enumerate(tools)]


def batched_tools(tools: str | None, moves: str | None) -> str | None:
    """A ``" > "``-joined tools string read as :func:`batched_names`, the calls issued with the one
    before them read from the ``moves`` string's marks (:data:`PARALLEL_MARK`).

    >>> batched_tools("search > search > open", "first > new& > first > answer")
    'search& > search& > open'
    """
    if not tools or not moves or PARALLEL_MARK not in moves:
        return tools
    names = tools.split(" > ")
    marks = [m.endswith(PARALLEL_MARK) for m in moves.split(" > ")][:len(names)]
    return " > ".join(batched_names(names, marks + [False] * (len(names) - len(marks))))


def optional_kept(optional: Mapping[str, frozenset[str]], tools: Sequence[str],
                  task: frozenset[str] = frozenset()) -> list[int]:
    """The calls of one trajectory's ``tools`` kept under :class:`TaskCalls` ``optional``
    (:meth:`TaskCalls.optional_plans`): a tool's calls are left out where they are one step of
    the plan (one run) and the plan without it (``task``'s tools as one mark) is one it was met
    both with and without.

    >>> optional_kept({"me": frozenset({"search > get"})}, ["me", "search", "get"])
    [1, 2]
    >>> optional_kept({"me": frozenset({"search > get"})}, ["me", "list", "get"])
    [0, 1, 2]
    >>> optional_kept({"me": frozenset({"search > get"})}, ["me", "search", "me", "get"])  # a way of working
    [0, 1, 2, 3]
    """
    plan = plan_steps(tools, task)
    drop = {t for t, plans in optional.items()
            if plan.count(t) == 1 and " > ".join(plan_steps([x for x in plan if x != t], task)) in plans}
    # tools each met without the others, all of the plan: kept, so the episode still calls one
    return [i for i, t in enumerate(tools) if t not in drop] or list(range(len(tools)))


def _task_read(task: TaskCalls, steps: list[dict], failed_of: list[bool], tools_of: list[str]
               ) -> tuple[list[dict], list[bool], list[str]]:
    """The calls of one trajectory read as :class:`TaskCalls` says.

    Left out (``drop``): the first is kept when all are the task's, so the episode still calls a
    tool. Renamed: in a run of consecutive task calls only those of the run's first tool stay
    (search then book, or cancel alone: how many calls the request takes is the task's, calling
    one again is the strategy's), each named by the order the episode first called it. Read by
    place (``by_place``): every call kept, each renamed so. A renamed call keeps its own name
    under ``_named``, which says whether it is a retrieval.
    """
    if task.by_place:
        places: dict[str, str] = {}
        names = [places.setdefault(t, f"{TASK_TOOL}_{len(places) + 1}") for t in tools_of]
        return [{**st, "_named": t} for st, t in zip(steps, tools_of)], failed_of, names
    if task.drop:
        kept = [i for i, t in enumerate(tools_of) if t not in task.tools] or list(range(min(1, len(steps))))
    else:
        kept, run = [], None
        for i, t in enumerate(tools_of):
            if t not in task.tools:
                run = None
            elif run is None:
                run = t
            elif t != run:
                continue
            kept.append(i)
    order: dict[str, str] = {}
    names = [order.setdefault(tools_of[i], f"{TASK_TOOL}_{len(order) + 1}") if tools_of[i] in task.tools
             else tools_of[i] for i in kept]
    out = [{**steps[i], "_named": tools_of[i]} if tools_of[i] in task.tools else steps[i] for i in kept]
    return out, [failed_of[i] for i in kept], names


def attempts(moves: Sequence[_Step]) -> list[_Step]:
    """The moves that define a strategy: every call but the failed ones their retry replaces
    (none under ``retries="keep"``)."""
    return [m for m in moves if not m.merged]


def move_tokens(moves: Sequence[_Step], final: _Step) -> list[str]:
    """The units a strategy is made of.

    For every attempt of a move (:func:`attempts`), at three grains: the tool (``!`` when the call
    failed, under ``retries="keep"``); the tool with its
    relation to earlier calls; and the full move: where its carried values came from (the user
    turn, an earlier call, a result; new words alone count only when nothing was carried, since
    rewording is not a change of plan), whether it covers the whole question or part of it, and
    whether it follows a failed call; for a request read through a generic tool, each of its query
    parameter names (``K:get_api_orders?page``: how it asks, which the verb leaves out so that a
    plan stays the resources' order). Plus each consecutive pair of (tool, relation) moves, so
    order counts, and how the episode ended (``answer_after_failure`` where its last call failed
    and nobody retried it, under ``retries="merge"``: the agent gave up on that call). A call sent
    in the same message as the attempt before it (parallel calls, the schema's ``parallel``) adds
    ``P:`` with its tool and relation, and its pair reads ``&`` for ``>``. A different tool or
    relation thus differs at every grain, a different provenance at one.

    Examples
    --------
    >>> from mechanism.core.schema import from_records, make_step
    >>> runs = from_records([{"arm": "a", "question_id": "q", "sample_id": 0, "question": "Cancel #W1",
    ...     "gold": [], "answer": "done", "correct": True, "n_rounds": 1, "steps": [
    ...     make_step(tool="cancel_order", arguments='{"order_id": "#W1"}', observation="Error: locked")]}])
    >>> render(runs, retries="keep")["tokens"][0].split()  # doctest: +NORMALIZE_WHITESPACE
    ['T:cancel_order!', 'R:cancel_order!/first', 'M:cancel_order!/first/user/partial',
     'B:start>cancel_order!/first', 'B:cancel_order!/first>answer', 'E:answer']
    >>> render(runs)["tokens"][0].split()  # doctest: +NORMALIZE_WHITESPACE
    ['T:cancel_order', 'R:cancel_order/first', 'M:cancel_order/first/user/partial',
     'B:start>cancel_order/first', 'B:cancel_order/first>answer_after_failure', 'E:answer_after_failure']
    """
    out: list[str] = []
    prev = "start"
    for m in attempts(moves):
        tool = m.tool + ("!" if m.marked else "")
        mid = f"{tool}/{m.relation}"
        carried = [s for s in m.sources.split("+") if s not in ("new", "")] or [m.sources or "nothing"]
        scope = m.scope if m.scope in ("whole", "none") else "partial"
        fine = f"M:{mid}/{'+'.join(carried)}/{scope}" + ("/after_error" if m.after_error and m.marked_retry else "")
        # a call issued with the one before it (parallel calls): the pair reads `&`, and the move
        # says so at its own grain (`P:`), as a fan-out of searches differs from a chain of them
        pair = f"B:{prev}&{mid}" if m.parallel else f"B:{prev}>{mid}"
        out += [f"T:{tool}", f"R:{mid}", fine, pair, *(f"K:{tool}?{k}" for k in m.query_keys),
                *([f"P:{mid}"] if m.parallel else [])]
        prev = mid
    # a last call that failed and was never retried did not go through: the merged attempt reads
    # it as made, so the ending says the agent gave up on it (retries="keep" marks it already)
    gave_up = bool(moves) and final.after_error and not moves[-1].marked
    end = f"{final.move}_after_failure" if gave_up else final.move
    out += [f"B:{prev}>{end}", f"E:{end}" if moves else f"E:no_calls_{final.move}"]
    return list(dict.fromkeys(out))


_MOVE_SCHEMA = {
    "arm": pl.String, "question_id": pl.String, "sample_id": pl.Int64, "step": pl.Int64,
    "tool": pl.String, "move": pl.String, "relation": pl.String, "sources": pl.String, "scope": pl.String,
    "failed": pl.Boolean, "after_error": pl.Boolean, "retried": pl.Boolean, "n_atoms": pl.Int64,
    "share_user": pl.Float64,
    "share_result": pl.Float64, "share_call": pl.Float64, "share_new": pl.Float64,
    "question_coverage": pl.Float64, "masked": pl.String, "token": pl.String,
}


_SEGMENT_COLUMNS = ("rendering", "moves", "tools", "tokens", *(c for c in DESCRIPTIVE_COLUMNS if c != "n_rounds"))
_STRING_COLUMNS = ("rendering", "moves", "tools", "tokens")
# What a row's segmentation reads: the question, the answer and every step. Not `gold` (the
# segmentation never looks at it, and keying on it would only split identical episodes) nor
# the arm or ids (the same episode in two arms is segmented alike).
_KEY_COLUMNS = ("question", "answer", "steps")
_REQUIRED = ("arm", "question_id", "sample_id", "question", "answer", "n_rounds", "steps")



def row_keys(runs: pl.DataFrame) -> pl.Series:
    """Content key of each row: BLAKE2b-128 (hex) of its question, answer and steps.

    The serialisation is polars' JSON encoding of the row's fields, which tells a null
    from an empty string and keeps every step field, so two rows share a key only when
    their segmentation inputs are identical.
    """
    encoded = runs.select(pl.struct(*_KEY_COLUMNS).struct.json_encode())["question"].to_list()
    return pl.Series("key", [hashlib.blake2b(t.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
                             for t in encoded], dtype=pl.String)


def _segment_distinct(runs: pl.DataFrame, keys: pl.Series, *, with_moves: bool,
                      error_pattern: re.Pattern[str] | None = None, retries: str = "merge",
                      actions: Mapping[str, str] | None = None, ignore: frozenset[str] = frozenset(),
                      task: TaskCalls = NO_TASK_CALLS) -> tuple[pl.DataFrame, list[list[_Step]] | None]:
    """Segment each distinct row of ``runs`` once.

    Returns one row per distinct key (``key`` and :data:`_SEGMENT_COLUMNS`, in order of first
    appearance) and, when ``with_moves``, each distinct row's moves (final answer last).
    """
    first = keys.is_first_distinct().to_numpy()
    idx = np.flatnonzero(first)
    sub = runs[idx] if len(idx) < runs.height else runs
    memo = _Memo()
    feats: dict[str, list[float]] = {name: [] for name in _SEGMENT_COLUMNS[len(_STRING_COLUMNS):]}
    renderings: list[str] = []
    sequences: list[str] = []
    tools: list[str] = []
    tokens: list[str] = []
    all_moves: list[list[_Step]] | None = [] if with_moves else None
    for question, answer, steps in zip(sub["question"].to_list(), sub["answer"].to_list(),
                                       sub["steps"].to_list()):
        moves, final, f, rendering = _segment_one(question, answer, steps, memo, error_pattern, retries, actions,
                                                  ignore, task)
        for name, values in feats.items():
            values.append(f[name])
        renderings.append(rendering)
        shown = attempts(moves)
        # a move issued in the same message as the one before ends in `&` (names say so)
        sequences.append(" > ".join([m.move + (PARALLEL_MARK if m.parallel else "") for m in shown] + [final.move]))
        tools.append(" > ".join(m.tool + ("!" if m.marked else "") for m in shown))
        tokens.append(" ".join(move_tokens(moves, final)))
        if all_moves is not None:
            all_moves.append([*moves, final])
    table = pl.DataFrame({"key": keys.gather(idx), "rendering": renderings, "moves": sequences,
                          "tools": tools, "tokens": tokens, **feats},
                         schema={"key": pl.String, **dict.fromkeys(_STRING_COLUMNS, pl.String),
                                 **dict.fromkeys(feats, pl.Float64)})
    return table, all_moves


def _trajectories(runs: pl.DataFrame, keys: pl.Series, table: pl.DataFrame) -> pl.DataFrame:
    """Per-row output of :func:`render` from per-key segmentations."""
    traj = (runs.select("arm", "question_id", "sample_id").with_columns(keys)
            .join(table, on="key", how="left", maintain_order="left"))
    return traj.with_columns(runs["n_rounds"].cast(pl.Float64).alias("n_rounds")).select(
        "arm", "question_id", "sample_id", *_STRING_COLUMNS, *DESCRIPTIVE_COLUMNS)


def action_tools(runs: pl.DataFrame, action_field: ActionField = "auto", *, keys: pl.Series | None = None
                 ) -> dict[str, str]:
    """The generic tools of ``runs`` and the field each is read through: detected with
    ``"auto"`` (:func:`mechanism.core.actions.detect_action_tools`), as given with a mapping
    ``{tool: field}`` (``"*"``: the whole text argument), none with ``None``; ``keys``: the
    table's :func:`row_keys` when already computed.

    Examples
    --------
    >>> from mechanism.core.schema import from_records, make_step
    >>> runs = from_records([{"arm": "a", "question_id": f"q{i}", "sample_id": 0, "question": f"Open box {i}",
    ...     "gold": [], "answer": "ok", "correct": True, "n_rounds": 2, "steps": [
    ...     make_step(tool="act", arguments='{"command": "go north"}'),
    ...     make_step(tool="act", arguments='{"command": "open box"}')]} for i in range(3)])
    >>> action_tools(runs), action_tools(runs, None), action_tools(runs, {"act": "command"})
    ({'act': 'command'}, {}, {'act': 'command'})
    """
    check_action_field(action_field)
    if action_field is None:
        return {}
    if action_field != "auto":
        return {tool_name(k): v for k, v in action_field.items()}
    # each distinct trajectory once: a table repeats its episodes, and what decides is which
    # verbs recur across questions, not how often one episode was sampled
    distinct = runs.filter((row_keys(runs) if keys is None else keys).is_first_distinct())
    return detect_action_tools(distinct["steps"].to_list(), distinct["question_id"].to_list())


def request_paths(runs: pl.DataFrame, actions: Mapping[str, str]) -> list[str]:
    """Each row's request path segments (:func:`mechanism.core.actions.request_segments`) in
    the order first named, ``" > "``-joined (``""`` where it makes no request through the
    generic tools ``actions``): what :func:`mechanism.analysis._strategies.features.task_segments`
    tests. Linear in the calls."""
    out = []
    for steps in runs["steps"].to_list():
        segments: dict[str, None] = {}
        for step in steps or ():
            step = dispatched_call(step, actions)  # a dispatcher's call: the request it runs
            field = actions.get(tool_name(step.get("tool"))) if step else None
            if field is not None:
                segments.update(dict.fromkeys(request_segments(step, field)))
        out.append(" > ".join(segments))
    return out


def ignored_tools(ignore_tools: Sequence[str] | None) -> frozenset[str]:
    """The normalised names of ``ignore_tools`` (a list of tool names or verbs; ``None``: none),
    or a one-line error naming ``ignore_tools``.

    Examples
    --------
    >>> sorted(ignored_tools(["Think", "screenshot"]))
    ['screenshot', 'think']
    """
    if ignore_tools is None:
        return frozenset()
    if isinstance(ignore_tools, str) or not all(isinstance(t, str) and t for t in ignore_tools):
        raise InputError(f"`ignore_tools` must be a list of tool names, got {str(ignore_tools)[:60]!r}",
                         field="ignore_tools")
    return frozenset(tool_name(t) for t in ignore_tools)


def segment_all(runs: pl.DataFrame, *, error_pattern: str | re.Pattern[str] | None = None,
                retries: Retries = "merge", action_field: ActionField = "auto",
                ignore_tools: Sequence[str] | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Moves (one row per tool call plus the final answer) and per-trajectory renderings.

    Identical rows (same question, answer and steps, see :func:`row_keys`) are segmented
    once.

    Parameters
    ----------
    runs
        A canonical trajectory table (needs ``arm``, ``question_id``, ``sample_id``,
        ``question``, ``answer``, ``n_rounds``, ``steps``).
    error_pattern
        A regular expression (case-insensitive) naming your environment's failure
        messages; an observation it matches is a failed call, besides the default reading
        (:func:`mechanism.core.failures.is_failure`).
    retries
        ``"merge"`` (default): a failed call and its retry are one attempt of a move;
        ``"keep"``: every call is a move, failures and retries marked (module docstring).
    action_field
        How calls of a generic tool (``bash(command=...)``, ``computer(action=...)``,
        ``act(command=...)``) are read: ``"auto"`` detects such tools and reads each call as
        its verb plus object (:func:`action_tools`), a mapping ``{tool: field}`` names them,
        ``None`` reads every call by its tool name.
    ignore_tools
        Tools (or, of a generic tool, verbs) whose calls are left out: bookkeeping calls
        (``think``, ``inventory``, ``screenshot``) that are no part of a strategy.

    Returns
    -------
    moves, trajectories
        See :func:`segment` and :func:`render`.
    """
    validate(runs, source="runs", required=_REQUIRED)
    check_retries(retries)
    keys = row_keys(runs)
    table, distinct_moves = _segment_distinct(runs, keys, with_moves=True,
                                              error_pattern=compile_error_pattern(error_pattern), retries=retries,
                                              actions=action_tools(runs, action_field, keys=keys),
                                              ignore=ignored_tools(ignore_tools))
    assert distinct_moves is not None
    # Moves of each distinct row, laid out once, then gathered for every row in table order.
    lengths = np.array([len(m) for m in distinct_moves], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    flat = [m for moves in distinct_moves for m in moves]
    position = {k: i for i, k in enumerate(table["key"].to_list())}
    inverse = np.array([position[k] for k in keys.to_list()], dtype=np.int64)
    row_len = lengths[inverse]
    total = int(row_len.sum())
    within = np.arange(total) - np.repeat(np.cumsum(row_len) - row_len, row_len)
    gather = np.repeat(offsets[inverse], row_len) + within
    names = tuple(_MOVE_SCHEMA)[4:]
    distinct = pl.DataFrame({name: [getattr(m, name) for m in flat] for name in names},
                            schema={name: _MOVE_SCHEMA[name] for name in names})
    row = np.repeat(np.arange(runs.height), row_len)
    ids = runs.select("arm", "question_id", "sample_id")[row]
    moves_df = pl.concat([ids, pl.DataFrame({"step": within}, schema={"step": pl.Int64}), distinct[gather]],
                         how="horizontal").select(list(_MOVE_SCHEMA))
    return moves_df, _trajectories(runs, keys, table)


def segment(runs: pl.DataFrame, *, error_pattern: str | re.Pattern[str] | None = None,
            retries: Retries = "merge", action_field: ActionField = "auto",
            ignore_tools: Sequence[str] | None = None) -> pl.DataFrame:
    """One row per move: every tool call, then the final answer.

    Columns: ``arm, question_id, sample_id, step`` (0-based; the final answer is the last),
    ``tool`` (normalised, full), ``move`` (the relation, or its search reading for a retrieval
    tool; one of :data:`MOVES`), ``relation`` (:data:`RELATIONS`), ``sources`` (where the
    call's values came from: ``user``, ``call``, ``result``, ``new``, joined by ``+``),
    ``scope`` (how much of the question the call covers), ``failed`` (error observation),
    ``after_error`` (the previous call failed: a retry), ``retried`` (a failed call that the
    next call, of the same tool, retries: under ``retries="merge"`` both are one attempt, read
    as the retry's move), ``n_atoms`` (values' atoms), the
    shares of atoms by source, ``question_coverage``, ``masked`` (the move, no content) and
    ``token`` (its unit in the strategy representation).

    Where a value's atoms came from: ``user`` when the question or any user turn before the
    call (the step's ``user`` field and those of earlier steps) held it. ``failed`` reads the
    observation by :func:`mechanism.core.failures.is_failure`, plus ``error_pattern`` when given
    (a regular expression, case-insensitive, for your environment's own failure messages).

    Examples
    --------
    >>> from mechanism.core.schema import from_records, make_step
    >>> runs = from_records([{"arm": "a", "question_id": "q", "sample_id": 0,
    ...     "question": "Where was the director of Jaws born?", "gold": ["Cincinnati"],
    ...     "answer": "Cincinnati", "correct": True, "n_rounds": 2, "steps": [
    ...     make_step(tool="search", query="director of Jaws",
    ...               observation="Jaws was directed by Steven Spielberg."),
    ...     make_step(tool="search", query="Steven Spielberg birthplace",
    ...               observation="Spielberg was born in Cincinnati, Ohio.")]}])
    >>> segment(runs)["move"].to_list()
    ['first_lookup', 'bridge_lookup', 'answer']
    """
    return segment_all(runs, error_pattern=error_pattern, retries=retries, action_field=action_field,
                       ignore_tools=ignore_tools)[0]


def render(runs: pl.DataFrame, *, cache_dir: str | os.PathLike | None = None,
           error_pattern: str | re.Pattern[str] | None = None, retries: Retries = "merge",
           action_field: ActionField = "auto", ignore_tools: Sequence[str] | None = None,
           task_calls: TaskCalls = NO_TASK_CALLS) -> pl.DataFrame:
    """One row per trajectory: its masked rendering, move sequence and structural features.

    Columns: ``arm, question_id, sample_id``, ``rendering`` (text for the embedder, no
    content), ``moves`` (e.g. ``"first_lookup > bridge_lookup > answer"``), ``tools``
    (the tool sequence, ``!`` marking failed calls), ``tokens`` (:func:`move_tokens`, space
    separated: what strategies are made of) and the :data:`DESCRIPTIVE_COLUMNS`.

    Parameters
    ----------
    runs
        A canonical trajectory table.
    cache_dir
        Folder of the segmentation cache (:class:`SegmentCache`); ``None`` keeps nothing.
        Each distinct row (:func:`row_keys`) is segmented once, and with a cache only the
        rows it does not yet hold.
    error_pattern
        Your environment's failure messages, as for :func:`segment` (cached apart from the
        default reading's results).
    retries
        ``"merge"`` (default) or ``"keep"``, as for :func:`segment_all` (cached apart).
    action_field
        ``"auto"``, a mapping ``{tool: field}`` or ``None``, as for :func:`segment_all`
        (cached apart).
    ignore_tools
        Tools or verbs left out, as for :func:`segment_all` (cached apart).
    task_calls
        The calls the task decides, left out or renamed (:class:`TaskCalls`; cached apart).
    """
    validate(runs, source="runs", required=_REQUIRED)
    check_retries(retries)
    keys = row_keys(runs)
    pattern = compile_error_pattern(error_pattern)
    actions, ignore = action_tools(runs, action_field, keys=keys), ignored_tools(ignore_tools)
    if cache_dir is None:
        return _trajectories(runs, keys, _segment_distinct(runs, keys, with_moves=False, error_pattern=pattern,
                                                           retries=retries, actions=actions, ignore=ignore,
                                                           task=task_calls)[0])
    cache = SegmentCache(cache_dir, error_pattern=pattern, retries=retries, actions=actions, ignore=ignore,
                         task=task_calls)
    wanted = keys.unique(maintain_order=True)
    found = cache.load(wanted)
    missing = ~keys.is_in(found["key"].implode())
    if missing.any():
        rows = runs.filter(missing)
        computed = _segment_distinct(rows, keys.filter(missing), with_moves=False, error_pattern=pattern,
                                     retries=retries, actions=actions, ignore=ignore, task=task_calls)[0]
        cache.store(computed)
        found = pl.concat([found, computed])
    return _trajectories(runs, keys, found)


class SegmentCache:
    """Per-trajectory segmentations on disk, keyed by :func:`row_keys` and by this module's code.

    Layout: ``folder/<segmenter id>/<shard>.parquet`` plus a ``.json`` sidecar per shard
    (:mod:`mechanism.core.cachefile`: atomic writes, digests checked on read, a corrupt shard is
    deleted and its rows segmented again). The segmenter id is a digest of this source file,
    so editing the segmentation never serves results of the old code. Parquet and JSON only.

    Parameters
    ----------
    folder
        Cache root.
    error_pattern
        The user's failure pattern the segmentations were made with (part of the key).
    retries
        How failed calls and their retries were read (part of the key).
    actions, ignore, task
        The generic tools read as verbs, ``{tool: field}``, the tools left out and the task's
        calls (part of the key).
    """

    FORMAT = 3

    def __init__(self, folder: str | os.PathLike, *, error_pattern: re.Pattern[str] | None = None,
                 retries: str = "merge", actions: Mapping[str, str] | None = None,
                 ignore: frozenset[str] = frozenset(), task: TaskCalls = NO_TASK_CALLS) -> None:
        name = segmenter_id() + ("" if retries == "merge" else f"-{retries}")
        if error_pattern is not None:
            spec = f"{error_pattern.flags}:{error_pattern.pattern}".encode("utf-8", "surrogatepass")
            name += "-" + hashlib.blake2b(spec, digest_size=8).hexdigest()
        if actions or ignore or task:
            spec = json.dumps([sorted((actions or {}).items()), sorted(ignore)] + ([task.to_dict()] if task else [])
                              ).encode("utf-8", "surrogatepass")
            name += "-a" + hashlib.blake2b(spec, digest_size=8).hexdigest()
        self.root = Path(folder) / name
        self.rebuilt: list[str] = []  # shards found corrupt and removed, for reports and tests

    def load(self, keys: pl.Series) -> pl.DataFrame:
        """Cached segmentations of ``keys`` (``key`` and the segment columns; misses absent)."""
        frames = []
        if self.root.is_dir():
            wanted = keys.implode()
            for path in sorted(self.root.glob("*.parquet")):
                data = read_checked(path, {"format": self.FORMAT})
                if data is None:
                    if not path.exists():  # it was corrupt and is gone now
                        self.rebuilt.append(path.stem)
                    continue
                try:
                    check_parquet_depth(data, name=path.name, max_depth=4)  # a crafted schema must not crash polars
                    shard = pl.read_parquet(io.BytesIO(data))
                    shard = shard.select(self._schema().keys()).cast(self._schema())
                except Exception:  # noqa: BLE001 - any unreadable shard is rebuilt, whatever polars raises
                    discard(path)
                    self.rebuilt.append(path.stem)
                    continue
                frames.append(shard.filter(pl.col("key").is_in(wanted)))
        if not frames:
            return pl.DataFrame(schema=self._schema())
        return pl.concat(frames).unique("key", keep="first", maintain_order=True)

    def store(self, table: pl.DataFrame) -> None:
        """Write one shard of segmentations (``key`` plus the segment columns)."""
        if table.height == 0:
            return
        buf = io.BytesIO()
        table.select(self._schema().keys()).write_parquet(buf, statistics=False)
        data = buf.getvalue()
        write_checked(self.root / f"{digest(data)[:24]}.parquet", data,
                      {"format": self.FORMAT, "rows": table.height})

    @staticmethod
    def _schema() -> dict[str, pl.DataType]:
        return {"key": pl.String, **dict.fromkeys(_STRING_COLUMNS, pl.String),
                **dict.fromkeys(_SEGMENT_COLUMNS[len(_STRING_COLUMNS):], pl.Float64)}


@functools.lru_cache(maxsize=1)
def segmenter_id() -> str:
    """Digest of this module's source and of :mod:`mechanism.core.failures`, :mod:`mechanism.core.actions`
    and :mod:`mechanism.core.patterns`: cached segmentations are valid only for the code that made them."""
    return code_id([Path(__file__), Path(failures_module.__file__), Path(actions_module.__file__),
                    Path(patterns_module.__file__)])
