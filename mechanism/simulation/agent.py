"""One simulated episode: a strategy acting in the world through the retriever.

An episode searches (each search is one round), reads what its results say, and answers:
from the retrieved paragraphs when they hold the answer and the strategy integrates them
(probability ``Policy.integration_of(strategy) * question.ease``), else with a wrong value
it read or a guess. Rounds beyond ``t_cap`` are not taken: the episode answers at the cap
from what it has.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

import numpy as np

from mechanism.schema import make_step
from mechanism.simulation.policies import REMAP, Policy
from mechanism.simulation.retriever import ParagraphRetriever
from mechanism.simulation.world import BRIDGE_SPECS, Paragraph, Question

# Query templates: {e} is an entity name. The first template of each list is the one a
# low-``wording`` policy uses most.
LINK_QUERIES = {
    "director": ("{e} director", "who directed {e}", "{e} film directed by", "director of {e}", "{e} film"),
    "founder": ("{e} founder", "who founded {e}", "{e} founded by", "founder of {e}", "{e} company"),
    "author": ("{e} author", "who wrote {e}", "{e} novel written by", "author of {e}", "{e} novel"),
    "label": ("{e} record label", "which label released {e}", "{e} album released by", "label of {e}", "{e} album"),
}
ATTR_QUERIES = {
    "birthplace": ("{e} birthplace", "where was {e} born", "{e} place of birth", "{e} born in which city", "{e} hometown"),
    "birth_year": ("{e} birth year", "when was {e} born", "{e} year of birth", "{e} born", "{e} date of birth"),
    "nationality": ("{e} nationality", "what nationality is {e}", "{e} citizenship", "{e} country of origin", "{e} biography"),
    "headquarters": ("{e} headquarters", "where is {e} headquartered", "{e} head office location", "{e} based in which city", "{e} location"),
    "founded": ("{e} founded", "when was {e} founded", "{e} founding year", "{e} year established", "{e} history"),
}
# the "terse" style: lookups as "entity: attribute", never produced by the natural style
TERSE_LINK = ("{e}: {link}", "{e}: {link} name")
TERSE_ATTR = ("{e}: {attr}", "{e}: {attr} (fact)")
CHECK_QUERIES = ("{e} {c}", "is {c} correct for {e}", "{e} {c} confirm", "{c} {e}")
ATTR_WORDS = {"birthplace": "birthplace", "birth_year": "birth year", "nationality": "nationality",
              "headquarters": "headquarters", "founded": "founding year"}
SYNONYMS = (  # reformulations swap these words, which changes what BM25 matches
    (r"\bbirthplace\b", ("place of birth", "hometown", "born")),
    (r"\bdirector\b", ("filmmaker", "person who directed", "film director")),
    (r"\bfounder\b", ("person who founded", "founding businessperson", "creator")),
    (r"\bauthor\b", ("novelist", "writer", "person who wrote")),
    (r"\bwriter\b", ("author", "novelist")),
    (r"\bnationality\b", ("citizenship", "country", "nation")),
    (r"\bfounded\b", ("established", "started", "created")),
    (r"\bfirst\b", ("earlier", "sooner")),
    (r"\bolder\b", ("earlier", "founded first")),
    (r"\bborn\b", ("birth", "native")),
    (r"\bheadquartered\b", ("based", "located")),
    (r"\blabel\b", ("record company", "record label")),
)
_QWORDS = re.compile(r"\b(what|which|who|where|when|in|is|was|the|of|a|an|are|or|and|do|does|did|holds?)\b", re.I)
_PUNCT = re.compile(r"[?,:!.]")

GENERIC_THOUGHTS = ("Let me search for this.", "I need more information before answering.",
                    "I should look this up.", "Let me check the sources.",
                    "I'll search to find the relevant facts.")
THOUGHTS = {
    "whole": ("I'll search for the question directly.", "Let me search the question as asked.",
              "Searching the full question should surface the right passage."),
    "rephrase": ("The results don't settle it; let me rephrase the query.",
                 "That wasn't helpful. Trying different wording.", "Let me try another phrasing.",
                 "Not quite. I'll reword the search."),
    "link": ("First I need the {link} of {e}.", "This takes two steps; start with {e}.",
             "I need to find out who the {link} of {e} is."),
    "hop": ("The {link} is {b}. Now I need the {attr} of {b}.", "{b} is the {link}; next, look up {b}.",
            "Found {b}. Searching for the {attr} of {b}."),
    "first": ("I need the {attr} of both {x} and {y}. Starting with {x}.", "Let me look up {x} first.",
              "Compare the two: first {x}."),
    "second": ("Now the other one: {y}.", "Next, {y}.", "I have {x}; now {y}."),
    "check": ("The results suggest {c}. Let me verify that.", "Candidate answer: {c}. I'll double-check.",
              "I should confirm {c} with another search."),
    "answer": ("Based on the search results, the answer is {a}.", "The retrieved passages indicate {a}.",
               "So the answer is {a}.", "Putting it together: {a}."),
    "recall": ("I think I know this without searching: {a}.", "From memory, the answer is {a}.",
               "I'm fairly confident it is {a}.", "No search needed; {a}."),
}


class CapReached(Exception):
    """Raised when an episode would search beyond its ``t_cap``."""


@dataclass
class Outcome:
    """What one episode did and how it ended (the simulator's ground truth)."""

    strategy: str
    steps: list[dict]
    answer: str
    truncated: bool
    evidence: bool  # the retrieved paragraphs held what the answer needs
    integrated: bool  # evidence was there and was used to answer correctly
    final_thought: str


class Episode:
    """The state of one episode: its rounds, what it has seen, its random stream."""

    def __init__(self, q: Question, retriever: ParagraphRetriever, policy: Policy,
                 rng: np.random.Generator, t_cap: int) -> None:
        self.q, self.retriever, self.policy, self.rng, self.t_cap = q, retriever, policy, rng, t_cap
        self.steps: list[dict] = []
        self.seen: list[int] = []

    # -- wording -------------------------------------------------------------------------
    def pick(self, options):
        """A template, drawn from the share of ``options`` the policy's wording allows."""
        n = max(1, math.ceil(self.policy.wording * len(options) - 1e-9))
        return options[int(self.rng.integers(n))] if n > 1 else options[0]

    def thought(self, key: str, **kw) -> str:
        if self.policy.wording >= 0.5 and self.rng.random() < 0.3:
            return self.pick(GENERIC_THOUGHTS)  # shared wording, so thoughts don't name strategies
        return self.pick(THOUGHTS[key]).format(**kw)

    def link_query(self, e: str) -> str:
        if self.policy.query_style == "terse":
            return self.pick(TERSE_LINK).format(e=e, link=self.q.link)
        return self.pick(LINK_QUERIES[self.q.link]).format(e=e)

    def attr_query(self, e: str, *, skip_first: bool = False) -> str:
        if self.policy.query_style == "terse":
            return self.pick(TERSE_ATTR).format(e=e, attr=ATTR_WORDS[self.q.attr])
        return self.pick(ATTR_QUERIES[self.q.attr][int(skip_first):]).format(e=e)

    def first_query(self, levels: int = 2) -> str:
        """The first search of a question-level strategy."""
        if self.policy.query_style == "terse":
            return self._terse_question()
        return self.rephrase(int(self.rng.integers(levels)) if self.policy.wording >= 0.5 else 0)

    def _terse_question(self) -> str:
        q = self.q
        parts = [q.entities[0]] if q.category == "bridge" else list(q.entities)
        parts += [f"{q.link} {ATTR_WORDS[q.attr]}"] if q.link else [ATTR_WORDS[q.attr]]
        return " ; ".join(parts)

    def rephrase(self, level: int) -> str:
        """The question reworded: 0 as asked, 1 plain, 2 keywords, 3 synonyms, 4 keywords+synonyms."""
        text = self.q.text
        if level == 0:
            return text
        text = _PUNCT.sub("", text)
        if level in (3, 4):
            subs = [(pat, opts) for pat, opts in SYNONYMS if re.search(pat, text, re.I)]
            for pat, opts in subs:
                text = re.sub(pat, self.pick(opts), text, count=1, flags=re.I)
        if level in (2, 4):
            text = " ".join(_QWORDS.sub(" ", text).split())
        return text.lower() if level != 3 else text

    # -- acting --------------------------------------------------------------------------
    def search(self, query: str, thought: str) -> Paragraph | None:
        if len(self.steps) >= self.t_cap:
            raise CapReached
        hits = self.retriever.search(query)
        obs = "\n".join(self.q.paragraphs[i].render() for i in hits) if hits else "No results found."
        self.steps.append(make_step(thought=thought, tool="search",
                                    arguments=json.dumps({"query": query}), query=query, observation=obs))
        self.seen.extend(hits)
        return self.q.paragraphs[hits[0]] if hits else None

    def linked(self, par: Paragraph | None) -> str | None:
        """The B entity a bridge agent reads off a result: A-like pages name it, B-like pages are it."""
        if par is None:
            return None
        spec = BRIDGE_SPECS[self.q.relation]
        if self.q.link in par.facts:
            return par.facts[self.q.link]
        if par.kind == spec["b_kind"]:
            return par.subject
        return None


def _whole(ep: Episode) -> None:
    ep.search(ep.first_query(), ep.thought("whole"))
    if ep.rng.random() < ep.policy.reformulate:  # one rewording with synonyms
        ep.search(ep.rephrase(int(ep.rng.integers(3, 5))), ep.thought("rephrase"))


def _loop(ep: Episode) -> None:
    lo, hi = ep.policy.loop_rounds
    n = int(ep.rng.integers(lo, hi + 1))
    ep.search(ep.first_query(), ep.thought("whole"))
    # a loop circles the question: as asked, plain or as keywords, often verbatim again;
    # it never brings in new words (which whole_question's one rewording does)
    for level in ep.rng.integers(0, 3, size=n - 1):
        ep.search(ep.rephrase(int(level)), ep.thought("rephrase"))


def _bridge(ep: Episode) -> None:
    q = ep.q
    a = q.entities[0]
    par = ep.search(ep.link_query(a), ep.thought("link", link=q.link, e=a))
    b = ep.linked(par)
    if b is None:  # nothing to follow: fall back to the question, reworded
        ep.search(ep.rephrase(int(ep.rng.integers(2, 5))), ep.thought("rephrase"))
        return
    ep.search(ep.attr_query(b), ep.thought("hop", link=q.link, b=b, attr=ATTR_WORDS[q.attr]))


def _parallel(ep: Episode) -> None:
    x, y = ep.q.entities if ep.rng.random() < 0.5 else ep.q.entities[::-1]
    attr = ATTR_WORDS[ep.q.attr]
    ep.search(ep.attr_query(x), ep.thought("first", attr=attr, x=x, y=y))
    ep.search(ep.attr_query(y), ep.thought("second", x=x, y=y))


def _verify(ep: Episode) -> None:
    q = ep.q
    par = ep.search(ep.first_query(3), ep.thought("whole"))
    if q.category == "bridge":
        b = ep.linked(par)
        cand = par.facts.get(q.attr) if par is not None and b == par.subject else None
        if cand is not None:
            query = ep.pick(CHECK_QUERIES).format(e=b, c=cand)
            thought = ep.thought("check", c=cand)
        elif b is not None:
            query = ep.attr_query(b)
            thought = ep.thought("check", c=b)
        else:
            query = ep.link_query(q.entities[0])
            thought = ep.thought("rephrase")
        got = ep.search(query, thought)
        confirmed = got is not None and b is not None and got.subject == b
        if not confirmed and ep.rng.random() < ep.policy.recheck:
            b2 = ep.linked(got) or b
            if b2 is not None:
                ep.search(ep.attr_query(b2, skip_first=True),
                          ep.thought("hop", link=q.link, b=b2, attr=ATTR_WORDS[q.attr]))
            else:
                ep.search(ep.rephrase(int(ep.rng.integers(2, 5))), ep.thought("rephrase"))
        return
    x, y = q.entities
    seen = {par.subject} if par is not None else set()
    cand = par.subject if par is not None else x
    todo = [e for e in (x, y) if e not in seen]
    for e in todo[:1]:
        ep.search(ep.attr_query(e), ep.thought("check", c=cand))
    if len(todo) > 1 and ep.rng.random() < ep.policy.recheck:
        ep.search(ep.attr_query(todo[1]), ep.thought("second", x=todo[0], y=todo[1]))


RUNNERS = {"whole_question": _whole, "reformulate_loop": _loop, "bridge": _bridge,
           "parallel_compare": _parallel, "verify": _verify, "no_search": lambda ep: None}


def _answer(ep: Episode, strategy: str) -> tuple[str, bool, bool]:
    """(answer, evidence held the answer, integrated) from what the episode saw."""
    q, rng = ep.q, ep.rng
    seen = set(ep.seen)
    pars = q.paragraphs
    gold = q.gold[0]
    if q.category == "bridge":
        a_doc, b_doc = q.gold_docs
        # B's page answers only if the agent can tell it is B: A's page names B, or B's page names A
        evidence = b_doc in seen and (a_doc in seen or q.entities[0] in pars[b_doc].text)
        read = sorted({pars[i].facts[q.attr] for i in seen if q.attr in pars[i].facts} - {gold})
    else:
        evidence = set(q.gold_docs) <= seen
        read = []
    if evidence:
        if rng.random() < ep.policy.integration_of(strategy) * q.ease:
            return gold, True, True
        if q.category == "bridge":  # misread: a wrong value from the pages it saw
            wrong = read or q.wrong_pool
            return wrong[int(rng.integers(len(wrong)))], True, False
        # a comparison not worked out falls back on the prior; a lucky guess is not integration
        return (gold if rng.random() < q.familiarity else q.wrong_pool[0]), True, False
    if q.category == "bridge":
        # no usable evidence: a value read off a wrong page (misattribution) if any, else a
        # parametric guess, right with the question's familiarity
        values = sorted({pars[i].facts[q.attr] for i in seen if q.attr in pars[i].facts} - {gold})
        if values and rng.random() < 0.5:
            return values[int(rng.integers(len(values)))], False, False
    if rng.random() < q.familiarity:
        return gold, False, False
    return q.wrong_pool[int(rng.integers(len(q.wrong_pool)))], False, False


def run_episode(q: Question, retriever: ParagraphRetriever, policy: Policy, planned: str,
                rng: np.random.Generator, t_cap: int) -> Outcome:
    """Run one episode of ``planned`` (remapped to the question's category) under ``t_cap``."""
    strategy = REMAP.get(q.category, {}).get(planned, planned)
    ep = Episode(q, retriever, policy, rng, t_cap)
    truncated = False
    try:
        RUNNERS[strategy](ep)
    except CapReached:
        truncated = True
    answer, evidence, integrated = _answer(ep, strategy)
    key = "recall" if not ep.steps else "answer"
    final = ep.thought(key, a=answer)
    return Outcome(strategy, ep.steps, answer, truncated, evidence, integrated, final)
