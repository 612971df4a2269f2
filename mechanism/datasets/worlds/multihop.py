"""A multi-hop search world: "In which city was the founder of <Org> born?"

Facts per question: the organisation ``Org`` was founded by ``Person``; ``Person`` was born
in ``City``. A search for the organisation returns its founder, a search for the person their
birthplace; anything else returns a generic paragraph about one of the words searched.

Six planted strategies, call counts overlapping (1, 2, 3, 2-4, 2-3, 2-3 searches):

==================  ==========================================================================
``single``          one search with the question (as asked or as keywords), then answer
``chain``           search the organisation, carry the founder's name from the result into a
                    search for the founder's birthplace (a bridge), answer
``chain_check``     ``chain``, then one more search with the city and person found, to check
                    the answer before giving it
``repeat``          the same search, verbatim, 2-4 times, then answer
``reword``          2-3 searches, each the whole question reworded (no words from results)
``decompose``       2-3 searches of different parts of the question, issued without reading
                    the results in between (parallel decomposition), then answer
==================  ==========================================================================

Written from scratch, without reference to :mod:`mechanism.analysis.segmentation`; wording, entity
names and success are random, so neither a phrase nor the outcome tells strategies apart.
"""
from __future__ import annotations

import numpy as np

from mechanism.core.options import RandomState
from mechanism.datasets.worlds._base import World, name, pick, planted_world, word, world_generator

STRATEGIES = ("single", "chain", "chain_check", "repeat", "reword", "decompose")
ARMS = {
    "base": {"single": 0.25, "chain": 0.15, "chain_check": 0.05, "repeat": 0.2, "reword": 0.2, "decompose": 0.15},
    "rl": {"single": 0.05, "chain": 0.3, "chain_check": 0.25, "repeat": 0.05, "reword": 0.15, "decompose": 0.2},
}
#: P(correct answer) of each strategy, whatever the arm
_SUCCESS = {"single": 0.4, "chain": 0.7, "chain_check": 0.8, "repeat": 0.3, "reword": 0.45, "decompose": 0.55}
_KINDS = ("Systems", "Labs", "Records", "Foods", "Motors", "Press", "Studios", "Holdings")
# Rewordings keep every content word of the question (city, founder, the organisation, born),
# reordered and with words added; parts of the question (decomposition) keep only some.
_REWORDS = ("{org} founder born city", "city where the founder of {org} was born",
            "founder of {org} born in which city", "which city was {org} founder born in",
            "born city of {org} founder", "{org} founder birth city born")
_PARTS = ("{org} founder", "{org} founded by", "{org} history", "{org} headquarters city",
          "{org} company origin", "who started {org}")
_KEYWORDS = ("{org} founder birth city", "founder {org} born city")


def _paragraph(rng: np.random.Generator, query: str, facts: dict[str, str]) -> str:
    q = query.lower()
    if facts["person"].lower() in q and facts["city"].lower() in q:
        return (f"{facts['person']} grew up in {facts['city']}, "
                f"where {facts['person'].split()[0]} was born in {facts['year']}.")
    if facts["person"].lower() in q:
        return (f"{facts['person']} (born {facts['year']} in {facts['city']}) "
                f"is a {pick(rng, ('businessman', 'engineer', 'designer'))}.")
    if facts["org"].lower() in q and ("found" in q or "started" in q or "creator" in q or "history" in q
                                      or "origin" in q):
        return f"{facts['org']} is a company founded in {facts['fyear']} by {facts['person']}."
    if facts["org"].lower() in q:
        return f"{facts['org']} is a {pick(rng, ('firm', 'company', 'business'))} based in {facts['hq']}."
    return f"{name(rng)} {name(rng)} is a {pick(rng, ('village', 'river', 'painter'))} in {name(rng)}."


def _episode(rng: np.random.Generator, strategy: str, q: dict[str, str]) -> tuple[list[tuple[str, str]], str]:
    """(thought, query) pairs and the final answer of one episode."""
    org, person, city = q["org"], q["person"], q["city"]
    skill = rng.random()
    if strategy == "single":
        query = pick(rng, (q["question"], *[k.format(org=org) for k in _KEYWORDS]))
        calls = [("Let me search for this.", query)]
    elif strategy in ("chain", "chain_check"):
        calls = [("First find who founded it.",
                  pick(rng, ("{org} founder", "{org} founded by", "who founded {org}")).format(org=org)),
                 (f"It was founded by {person}. Now where {person} was born.",
                  pick(rng, ("{p} birthplace", "{p} born", "where was {p} born")).format(p=person))]
        if strategy == "chain_check":
            calls.append((f"So the answer is probably {city}. Let me check that.",
                          pick(rng, ("{p} {c}", "{p} born in {c}", "{c} {p} birth")).format(p=person, c=city)))
    elif strategy == "repeat":
        query = pick(rng, (q["question"], *[k.format(org=org) for k in _KEYWORDS]))
        calls = [("Search again." if i else "Let me search.", query) for i in range(int(rng.integers(2, 5)))]
    elif strategy == "reword":
        forms = rng.permutation(len(_REWORDS))[: int(rng.integers(2, 4))]
        calls = [("Try another wording." if i else "Search the question.", _REWORDS[f].format(org=org))
                 for i, f in enumerate(forms)]
    elif strategy == "decompose":
        parts = rng.permutation(len(_PARTS))[: int(rng.integers(2, 4))]
        calls = [("Look up each part of the question.", _PARTS[p].format(org=org)) for p in parts]
    else:  # pragma: no cover - STRATEGIES is closed
        raise ValueError(strategy)
    # Success is random within every strategy (better for the careful ones): the outcome must
    # not be what tells strategies apart.
    p_right = _SUCCESS[strategy]
    answer = city if skill < p_right else pick(rng, (q["hq"], name(rng)))
    return calls, answer


def multihop(*, n_questions: int = 60, n_samples: int = 4, arms: dict[str, dict[str, float]] | None = None,
             react: bool = False, random_state: RandomState = 0) -> World:
    """Generate the multi-hop search world.

    Parameters
    ----------
    n_questions, n_samples
        Questions, and episodes per question and arm.
    arms
        Arm name -> strategy mixture (default: ``base`` and ``rl``).
    react
        Write ReAct text (``Thought/Action/Observation``) instead of Search-R1 tags.
    random_state
        Seed of every random choice: int, numpy Generator or None
        (:func:`mechanism.core.options.as_generator`).

    Returns
    -------
    World
        Native records (format ``searchr1`` or ``react``) and the planted strategies.
    """
    rng = world_generator(random_state)
    arms = arms or ARMS
    questions = []
    for i in range(n_questions):
        org = f"{name(rng)} {pick(rng, _KINDS)}"
        facts = {"org": org, "person": f"{name(rng)} {name(rng)}",
                 "city": f"{pick(rng, ('Port ', 'San ', 'North ', ''))}{name(rng)}",
                 "hq": name(rng), "year": str(int(rng.integers(1900, 1990))),
                 "fyear": str(int(rng.integers(1950, 2015)))}
        facts["question"] = f"In which city was the founder of {org} born?"
        questions.append((f"mh-{i:04d}", facts))

    def episode(rng: np.random.Generator, arm: str, qid: str, s: int, strategy: str, q: dict) -> tuple[dict, tuple]:
        calls, answer = _episode(rng, strategy, q)
        record = {"arm": arm, "question_id": qid, "sample_id": s, "question": q["question"], "gold": [q["city"]]}
        parts = []
        for n, (thought, query) in enumerate(calls, start=1):
            obs = _paragraph(rng, query, q)
            if react:
                parts += [f"Thought {n}: {thought}", f"Action {n}: Search[{query}]", f"Observation {n}: {obs}"]
            else:
                parts += [f"<think>{thought}</think>", f"<search> {query} </search>",
                          f"<information>Doc 1(Title: \"{word(rng).capitalize()}\") {obs}</information>"]
        if react:
            n = len(calls) + 1
            parts += [f"Thought {n}: I have the answer.", f"Action {n}: Finish[{answer}]"]
            record["trajectory"] = "\n".join(parts)
        else:
            parts += ["<think>I have the answer.</think>", f"<answer> {answer} </answer>"]
            record["response"] = "\n".join(parts)
        return record, ()

    return planted_world("multihop_react" if react else "multihop", "react" if react else "searchr1", rng, questions,
                         arms, n_samples, episode, _SUCCESS)
