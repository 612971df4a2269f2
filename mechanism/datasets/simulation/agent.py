"""One simulated episode: a strategy acting in the world through the retriever.

An episode searches (each search is one round), reads what its results say, and answers:
correctly with the planted probability :func:`~mechanism.datasets.simulation.policies.success_probability`
(from the retrieved evidence when it holds the answer and the strategy integrates it, else a
guess), otherwise with a wrong value it read or a plausible one. Rounds beyond ``t_cap`` are not
taken: the episode answers at the cap from what it has.

Strategies differ in their moves (:mod:`mechanism.datasets.simulation.policies`); inside each, every
query has several phrasings, drawn with a favourite first (probability proportional to
``1 / rank``, as a model has habits), so wording varies within a strategy and never separates
two of them. Whole-question phrasings keep every content word of the question and add only
words no paragraph contains, so they all retrieve the same paragraph: rewording the question
is a different move from looking up what a result named, not a different retrieval.
"""
from __future__ import annotations

import bisect
import functools
import itertools
import json
import math
import re
from dataclasses import dataclass

import numpy as np

from mechanism.core.schema import make_step
from mechanism.datasets.simulation.policies import REMAP, Policy, plan_evidence, success_probability
from mechanism.datasets.simulation.retriever import ParagraphRetriever
from mechanism.datasets.simulation.world import Paragraph, Question

# Query templates: {e} is an entity name (always in full, so a lookup retrieves its page).
LINK_QUERIES = {
    "director": ("{e} directed by", "who directed {e}", "{e} film directed", "director who directed {e}"),
    "founder": ("{e} founded by", "who founded {e}", "{e} company founded", "founder who founded {e}"),
    "author": ("{e} novel by", "who wrote the novel {e}", "{e} novel author", "novel {e} written by"),
    "label": ("{e} album released by", "which label released the album {e}", "{e} album label",
              "album {e} released on"),
}
# Each names the attribute with a word its page always carries (born, nationality,
# headquartered), so the lookup finds the entity's own page, not one that merely names it.
ATTR_QUERIES = {
    "birthplace": ("where was {e} born", "{e} born in which city", "{e} born", "{e} city born in"),
    "birth_year": ("when was {e} born", "{e} born", "{e} year born", "{e} born in what year"),
    "nationality": ("{e} nationality", "what nationality is {e}", "nationality of {e}", "{e} nationality country"),
    "headquarters": ("where is {e} headquartered", "{e} headquartered", "{e} headquartered in which city",
                     "{e} headquartered city"),
    "founded": ("when was {e} founded", "{e} founded", "{e} year founded", "{e} founded in what year"),
}
# Comparison lookups name the attribute with the same two words for both entities (names are
# two words), so the second lookup reads as a revision of the first: the same phrase, another
# entity from the question.
COMPARE_QUERIES = {
    "birth_year": ("{e} year born", "what year was {e} born", "{e} born in year", "year {e} was born"),
    "founded": ("{e} year founded", "what year was {e} founded", "{e} founded in year", "year {e} was founded"),
    "nationality": ("{e} nationality country", "what country nationality is {e}", "{e} country of nationality",
                    "nationality country of {e}"),
}
# A check revises the last lookup with the candidate read off its result, adding nothing new.
CHECK_QUERIES = ("{e} {c}", "{c} {e}", "{e}, {c}?")
# the "terse" style: lookups as "entity: attribute", never produced by the natural style
TERSE_LINK = ("{e}: {link}", "{e}: {link} (name)")
TERSE_ATTR = ("{e}: {attr}", "{e}: {attr} (fact)")
TERSE_LINK_WORDS = {"director": "directed by", "founder": "founded by", "author": "novel by",
                    "label": "album released by"}
TERSE_CHECK = ("{e}: {c}",)
ATTR_WORDS = {"birthplace": "birthplace", "birth_year": "birth year", "nationality": "nationality",
              "headquarters": "headquarters", "founded": "founding year"}
# the terse style's attribute words, each one its page carries
TERSE_ATTR_WORDS = {"birthplace": "born city", "birth_year": "born year", "nationality": "nationality country",
                    "headquarters": "headquartered", "founded": "founded year"}
# Words no paragraph contains (checked by the world's acceptance test), added to a rewording
FILLERS = ("details", "info", "wiki", "facts")
# Dropped from a keyword rewording: function words that both the retriever and the move grammar
# ignore (in bm25s' and scikit-learn's English stop lists; a test checks), so a rewording keeps
# every content word and every retrieval score. Listed, not imported: scikit-learn costs 1.5 s.
_BOTH_STOP = frozenset({"what", "which", "who", "where", "when", "was", "is", "are", "the", "of", "a", "an",
                        "or", "and", "in", "do", "to", "by", "for", "on", "at", "be"})
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")
_PUNCT = re.compile(r"[?,:!.]")
N_WHOLE_FORMS = 5

GENERIC_THOUGHTS = ("Let me search for this.", "I need more information before answering.",
                    "I should look this up.", "Let me check the sources.",
                    "I'll search to find the relevant facts.")
THOUGHTS = {
    "whole": ("I'll search for the question directly.", "Let me search the question as asked.",
              "Searching the full question should surface the right passage."),
    "again": ("Let me run that search again.", "Searching once more.", "I'll try the same search again."),
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


@functools.cache
def _zipf_cumulative(n: int) -> tuple[float, ...]:
    # cumulative 1 / rank weights: bisecting a uniform draw is ~20x faster than rng.choice(p=)
    return tuple(itertools.accumulate(1.0 / r for r in range(1, n + 1)))


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
    p_correct: float  # the planted probability of a correct answer, given the rounds made


def whole_forms(q: Question, style: str = "natural") -> list[str]:
    """The question reworded, every content word kept: as asked, plain, keywords, keywords with a
    filler word, keywords reversed (``"terse"``: one form of its own, keywords joined by ``/``)."""
    words = [w for w in _WORD.findall(q.text) if w.lower() not in _BOTH_STOP]
    kw = " ".join(words).lower()
    if style == "terse":
        return [" / ".join(words)]
    return [q.text, _PUNCT.sub("", q.text).lower(), kw, f"{kw} {{filler}}", f"{{filler}} {kw}"]


def planned_queries(q: Question) -> dict[str, tuple[set[str], int | None]]:
    """Every query a plan can issue on ``q``, by what it must retrieve: ``{name: (queries,
    paragraph index or None)}``, None meaning "one paragraph, the same for all" (rewordings).
    The simulator refuses a question where a lookup misses its page (see :func:`retrieval_holds`)."""
    out: dict[str, tuple[set[str], int | None]] = {}
    forms = set()
    for style in ("natural", "terse"):
        for f in whole_forms(q, style):
            forms |= {f.format(filler=w) for w in FILLERS} if "{filler}" in f else {f}
    out["whole"] = (forms, None)
    if q.category == "bridge":
        a, b = q.entities
        a_doc, b_doc = q.gold_docs
        out["link"] = ({t.format(e=a, link=TERSE_LINK_WORDS[q.link]) for t in (*LINK_QUERIES[q.link], *TERSE_LINK)},
                       a_doc)
        out["attr"] = ({t.format(e=b, attr=TERSE_ATTR_WORDS[q.attr]) for t in (*ATTR_QUERIES[q.attr], *TERSE_ATTR)},
                       b_doc)
        out["check"] = ({t.format(e=b, c=q.gold[0]) for t in (*CHECK_QUERIES, *TERSE_CHECK)}, b_doc)
    else:
        for e, doc in zip(q.entities, q.gold_docs):
            out[f"lookup {e}"] = ({t.format(e=e, attr=TERSE_ATTR_WORDS[q.attr])
                                   for t in (*COMPARE_QUERIES[q.attr], *TERSE_ATTR)}, doc)
    return out


def retrieval_holds(q: Question, retriever: ParagraphRetriever) -> bool:
    """Whether every lookup a plan can issue on ``q`` retrieves its page, every rewording of the
    question the same paragraph, and no filler word is in any paragraph: what makes each
    strategy's evidence a fixed property of its plan. Sets ``q.direct`` (the rewordings'
    paragraph is the answer's page and the agent can tell: a bridge question whose linked page
    names the first entity)."""
    text = " ".join(p.text.lower() for p in q.paragraphs)
    if any(re.search(rf"\b{w}\b", text) for w in FILLERS):
        return False
    for queries, doc in planned_queries(q).values():
        hits = {retriever.search(x)[:1] for x in queries}
        if doc is None:
            if len(hits) != 1 or not next(iter(hits)):
                return False
        elif hits != {(doc,)}:
            return False
    whole = retriever.search(q.text)[:1]
    q.direct = (q.category == "bridge" and whole == (q.gold_docs[1],)
                and q.entities[0] in q.paragraphs[q.gold_docs[1]].text)
    return True


class Episode:
    """The state of one episode: its rounds, what it has seen, its random stream."""

    def __init__(self, q: Question, retriever: ParagraphRetriever, policy: Policy,
                 rng: np.random.Generator, t_cap: int) -> None:
        self.q, self.retriever, self.policy, self.rng, self.t_cap = q, retriever, policy, rng, t_cap
        self.steps: list[dict] = []
        self.seen: list[int] = []

    # -- wording -------------------------------------------------------------------------
    def pick(self, options):
        """A phrasing from the share of ``options`` the policy's wording allows, the first
        most often (probability proportional to 1 / rank)."""
        n = max(1, math.ceil(self.policy.wording * len(options) - 1e-9))
        if n == 1:
            return options[0]
        cum = _zipf_cumulative(n)
        return options[min(bisect.bisect_right(cum, self.rng.random() * cum[-1]), n - 1)]

    def thought(self, key: str, **kw) -> str:
        if self.policy.wording >= 0.5 and self.rng.random() < 0.3:
            return self.pick(GENERIC_THOUGHTS)  # shared wording, so thoughts don't name strategies
        return self.pick(THOUGHTS[key]).format(**kw)

    def terse(self) -> bool:
        return self.policy.query_style == "terse"

    def link_query(self, e: str) -> str:
        if self.terse():
            return self.pick(TERSE_LINK).format(e=e, link=TERSE_LINK_WORDS[self.q.link])
        return self.pick(LINK_QUERIES[self.q.link]).format(e=e)

    def attr_query(self, e: str) -> str:
        if self.terse():
            return self.pick(TERSE_ATTR).format(e=e, attr=TERSE_ATTR_WORDS[self.q.attr])
        table = ATTR_QUERIES if self.q.category == "bridge" else COMPARE_QUERIES
        return self.pick(table[self.q.attr]).format(e=e)

    def check_query(self, e: str, c: str) -> str:
        return self.pick(TERSE_CHECK if self.terse() else CHECK_QUERIES).format(e=e, c=c)

    def forms(self) -> list[str]:
        """This episode's whole-question phrasings, favourite first (filler word drawn once)."""
        filler = FILLERS[int(self.rng.integers(len(FILLERS)))]
        return [f.format(filler=filler) for f in whole_forms(self.q, self.policy.query_style)]

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

    def rounds(self) -> int:
        lo, hi = self.policy.loop_rounds
        return int(self.rng.integers(lo, hi + 1))


def _whole(ep: Episode) -> None:
    ep.search(ep.pick(ep.forms()), ep.thought("whole"))


def _repeat(ep: Episode) -> None:
    n = ep.rounds()
    query = ep.pick(ep.forms())
    ep.search(query, ep.thought("whole"))
    for _ in range(n - 1):  # verbatim: the same call again
        ep.search(query, ep.thought("again"))


def _loop(ep: Episode) -> None:
    forms = ep.forms()
    n = min(ep.rounds(), len(forms))
    first = forms.index(ep.pick(forms))
    rest = [i for i in ep.rng.permutation(len(forms)).tolist() if i != first]
    # each search rewords the question (all of its words kept), never repeats one, never
    # brings in a word from a result
    ep.search(forms[first], ep.thought("whole"))
    for i in rest[: n - 1]:
        ep.search(forms[i], ep.thought("rephrase"))


def _chain(ep: Episode) -> tuple[str, Paragraph | None]:
    """Look up A's link, then the linked entity's attribute: (B, B's page)."""
    q = ep.q
    a = q.entities[0]
    par = ep.search(ep.link_query(a), ep.thought("link", link=q.link, e=a))
    b = par.facts[q.link]  # the world guarantees the lookup retrieves A's page
    got = ep.search(ep.attr_query(b), ep.thought("hop", link=q.link, b=b, attr=ATTR_WORDS[q.attr]))
    return b, got


def _pair(ep: Episode) -> tuple[str, Paragraph | None]:
    """Look up both compared entities (in random order) with one phrasing: (the second, its page)."""
    x, y = ep.q.entities if ep.rng.random() < 0.5 else ep.q.entities[::-1]
    template = ep.pick(TERSE_ATTR if ep.terse() else COMPARE_QUERIES[ep.q.attr])
    attr = TERSE_ATTR_WORDS[ep.q.attr]
    ep.search(template.format(e=x, attr=attr), ep.thought("first", attr=ATTR_WORDS[ep.q.attr], x=x, y=y))
    return y, ep.search(template.format(e=y, attr=attr), ep.thought("second", x=x, y=y))


def _bridge(ep: Episode) -> None:
    _chain(ep)


def _parallel(ep: Episode) -> None:
    _pair(ep)


def _verify(ep: Episode) -> None:
    if ep.q.category == "bridge":
        e, page = _chain(ep)
        candidate = page.facts[ep.q.attr]
        ep.search(ep.check_query(e, candidate), ep.thought("check", c=candidate))
        return
    # a comparison is checked by going back to the first entity's lookup, verbatim, to read
    # its value again against the second's (a return to an earlier call)
    e, page = _pair(ep)
    first = ep.steps[0]["query"]
    ep.search(first, ep.thought("check", c=page.facts[ep.q.attr]))


RUNNERS = {"whole_question": _whole, "repeat": _repeat, "reformulate_loop": _loop, "bridge": _bridge,
           "parallel_compare": _parallel, "verify": _verify, "parallel_verify": _verify, "no_search": lambda ep: None}


def _evidence(ep: Episode) -> bool:
    q, seen, pars = ep.q, set(ep.seen), ep.q.paragraphs
    if q.category == "bridge":
        a_doc, b_doc = q.gold_docs
        # B's page answers only if the agent can tell it is B: A's page names B, or B's page names A
        return b_doc in seen and (a_doc in seen or q.entities[0] in pars[b_doc].text)
    return set(q.gold_docs) <= seen


def _answer(ep: Episode, strategy: str, u: float) -> tuple[str, bool, bool, float]:
    """(answer, evidence held the answer, integrated, planted P(correct)) from what it saw;
    ``u`` is the episode's uniform draw for its outcome."""
    q, rng = ep.q, ep.rng
    evidence = _evidence(ep)
    p_correct, p_int = success_probability(ep.policy, strategy, category=q.category, hard=q.hard, ease=q.ease,
                                           familiarity=q.familiarity, rounds=len(ep.steps), direct=q.direct)
    gold = q.gold[0]
    if u < p_int:
        return gold, evidence, True, p_correct
    if u < p_correct:  # a guess that happens to be right is not integration
        return gold, evidence, False, p_correct
    # wrong: a value misread off a page it saw, if any, else a plausible wrong one
    read = sorted({ep.q.paragraphs[i].facts[q.attr] for i in ep.seen if q.attr in q.paragraphs[i].facts} - {gold})
    wrong = read if q.category == "bridge" and read else q.wrong_pool
    return wrong[int(rng.integers(len(wrong)))], evidence, False, p_correct


def run_episode(q: Question, retriever: ParagraphRetriever, policy: Policy, planned: str,
                rng: np.random.Generator, t_cap: int) -> Outcome:
    """Run one episode of ``planned`` (remapped to the question's category) under ``t_cap``."""
    strategy = REMAP.get(q.category, {}).get(planned, planned)
    ep = Episode(q, retriever, policy, rng, t_cap)
    # the outcome's draw comes first: an episode's luck does not depend on how many phrasings
    # its policy has or on the draws its moves used
    u = float(rng.random())
    truncated = False
    try:
        RUNNERS[strategy](ep)
    except CapReached:
        truncated = True
    answer, evidence, integrated, p_correct = _answer(ep, strategy, u)
    # the world guarantees that a plan's evidence is what its strategy needs
    if evidence != plan_evidence(q.category, strategy, len(ep.steps), direct=q.direct):  # pragma: no cover
        raise AssertionError(f"{q.question_id}: {strategy} retrieved other evidence than its plan")
    key = "recall" if not ep.steps else "answer"
    final = ep.thought(key, a=answer)
    return Outcome(strategy, ep.steps, answer, truncated, evidence, integrated, final, p_correct)
