"""An environment's fixed answer, found by its repetition: one short text returned verbatim after
many different calls.

Text environments answer an action that did nothing with one fixed line ("Nothing happens.",
"You can't see any such thing.", "I didn't understand that."). The known ones are in the
default failure reading (:mod:`mechanism.core.failures`); any other shows itself in a whole file by
being short, identical, and the answer to many *different* calls, where a real result depends
on what was asked. The read report proposes such a text as an ``error_pattern``, with its
counts; it never counts it as failed on its own, since a fixed acknowledgement ("posted",
"OK", "Time entered") repeats the same way. So a text is proposed only when it reads as
nothing done (a negation, an empty list: "You can't see any such thing.", "The action produced
no visible change.", ``[]``) or follows at least :data:`MIN_TOOLS_PLAIN` different tools
(an acknowledgement belongs to one tool); a text of one line only.

Counting is bounded whatever the input: only texts of at most :data:`MAX_TEXT` characters
are counted, at most :data:`MAX_TEXTS` of them at a time (when full, the less frequent half
is dropped: a text frequent enough to propose survives), and at most :data:`MAX_ACTIONS`
distinct calls and :data:`MAX_TOOLS` tools are kept per text. Each call costs a dictionary
look-up.
"""
from __future__ import annotations

import re
import zlib
from collections import Counter
from dataclasses import dataclass

__all__ = ["RepeatedReplies", "Proposal", "literal_pattern"]

MAX_TEXT = 80  # characters (stripped): a fixed answer is one short line
MAX_TEXTS = 4_096
MAX_ACTIONS = 256
MAX_TOOLS = 16
MIN_ACTIONS = 10  # distinct (tool, arguments) pairs a text must follow
MIN_CALLS = 20
MIN_SHARE = 0.01  # of all calls read
MIN_TOOLS_PLAIN = 3  # tools a text without a negation must follow to be proposed
# what "nothing was done" sounds like, in the words environments use
_NEGATIVE = re.compile(r"\b(?:no|not|nothing|none|never|cannot|can ?not|unable|invalid|unknown|unrecogni[sz]ed|"
                       r"fail\w*|error|wrong|illegal|impossible|empty|nowhere|nobody)\b|n't\b|^\W*$", re.I)
_SPECIAL = re.compile(r"([\\.^$|?*+()\[\]{}])")


def literal_pattern(text: str) -> str:
    """An ``error_pattern`` that matches ``text`` as a whole line (RE2 and ``re`` alike).

    >>> literal_pattern("Nothing happens.")
    '^Nothing happens\\\\.$'
    """
    return "^" + _SPECIAL.sub(r"\\\1", text) + "$"


@dataclass(frozen=True)
class Proposal:
    """A text proposed as an environment's fixed answer."""

    text: str
    calls: int
    actions: int  # distinct (tool, arguments) pairs it followed (at most MAX_ACTIONS counted)
    tools: tuple[str, ...]
    share: float  # of all calls read

    @property
    def pattern(self) -> str:
        return literal_pattern(self.text)


class RepeatedReplies:
    """Bounded counts of short observations and of the distinct calls each one answered.

    Examples
    --------
    >>> r = RepeatedReplies()
    >>> for i in range(30):
    ...     r.add("You can't do that.", "act", f"go to room {i}")
    ...     r.add(f"You are in room {i}.", "act", f"look {i}")
    ...     r.add("Time entered", "act", f"type {i}")  # an acknowledgement: no negation, one tool
    >>> [(p.text, p.calls, p.actions) for p in r.proposals()]
    [("You can't do that.", 30, 30)]
    """

    def __init__(self) -> None:
        self.calls = 0
        self._texts: dict[str, list] = {}  # text -> [count, set of call checksums, Counter of tools]
        self.pruned = False  # whether the less frequent texts were ever dropped

    def add(self, observation: str | None, tool: str, action: str | None) -> None:
        """Count one call's observation (one that the failure reading did not already count)."""
        self.calls += 1
        if observation is None or len(observation) > 4 * MAX_TEXT:
            return
        text = observation.strip()
        if not text or len(text) > MAX_TEXT or "\n" in text:
            return
        entry = self._texts.get(text)
        if entry is None:
            if len(self._texts) >= MAX_TEXTS:
                self._prune()
            entry = self._texts[text] = [0, set(), Counter()]
        entry[0] += 1
        if len(entry[1]) < MAX_ACTIONS:
            # the checksum only tells calls apart within this read; nothing of it is kept or shown.
            # Unlike hash(), it is the same in every process, so parts of a file read in worker
            # processes (mechanism.readers._parts) count distinct calls together
            entry[1].add(zlib.crc32(f"{tool}\x1f{action}".encode("utf-8", "surrogatepass")))
        if tool in entry[2] or len(entry[2]) < MAX_TOOLS:
            entry[2][tool] += 1

    def _prune(self) -> None:
        # the more frequent half stays (ties: the earlier seen); amortised, each call's share of
        # the sorting is O(log MAX_TEXTS)
        self.pruned = True
        ranked = sorted(self._texts.items(), key=lambda kv: -kv[1][0])
        self._texts = dict(ranked[: MAX_TEXTS // 2])

    def tools_by_text(self) -> dict[str, set[str]]:
        """Each counted text and the tools it followed."""
        return {text: set(entry[2]) for text, entry in self._texts.items()}

    def absorb(self, other: RepeatedReplies) -> None:
        """Count ``other``'s calls (made after these) in with these, where neither dropped a text
        or filled a text's tools (checked by the caller, :func:`mechanism.readers._parts.mergeable`)."""
        self.calls += other.calls
        for text, (count, actions, tools) in other._texts.items():
            entry = self._texts.setdefault(text, [0, set(), Counter()])
            entry[0] += count
            for action in actions:  # only how many distinct calls (up to the bound) is ever read
                if len(entry[1]) >= MAX_ACTIONS:
                    break
                entry[1].add(action)
            entry[2].update(tools)

    def proposals(self, *, limit: int = 3) -> list[Proposal]:
        """Texts that answered at least :data:`MIN_ACTIONS` distinct calls and at least
        :data:`MIN_CALLS` calls (and :data:`MIN_SHARE` of all), most frequent first, that read
        as nothing done or follow :data:`MIN_TOOLS_PLAIN` tools (module docstring)."""
        out = []
        for text, (count, actions, tools) in self._texts.items():
            if count < MIN_CALLS or count < MIN_SHARE * self.calls or len(actions) < MIN_ACTIONS:
                continue
            if len(tools) < MIN_TOOLS_PLAIN and _NEGATIVE.search(text) is None:
                continue
            named = tuple(t for t, _ in sorted(tools.items(), key=lambda kv: (-kv[1], kv[0])))
            out.append(Proposal(text, count, len(actions), named, count / max(self.calls, 1)))
        out.sort(key=lambda p: (-p.calls, p.text))
        return out[:limit]
