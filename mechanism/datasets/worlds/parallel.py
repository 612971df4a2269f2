"""A deep-research world whose agent can issue PARALLEL tool calls (OpenAI parallel function calling).

A user asks a research assistant a multi-part factual question about made-up entities: a
comparison ("Which of the three cities Brakmont, Tuvel and Shoumar has the largest
population, and by how much does it exceed the next largest?"), an aggregate over several
entities ("What was the combined worldwide box office of A, B and C, the three films Y directed
in the 1990s?") or a multi-hop question ("Who founded the company that makes the X, where were
they born, and how old were they when they founded it?"): :data:`KINDS`. Every question splits
into two to four sub-questions, one per entity or hop. The agent has four typed tools, in
OpenAI ``tool_calls`` format (:data:`TOOLS`): ``web_search(query)`` (a numbered list of
results: title, url, snippet), ``open_page(url)`` (the page's text), ``calculator(expression)``
(a number) and ``lookup_entity(name)`` (a knowledge-base card, JSON).

An assistant message may hold SEVERAL tool calls (a *parallel batch*: ``tool_calls`` is a list
of two to four calls, and each gets its own ``role: tool`` message with the matching
``tool_call_id``, all after that assistant message and before the next one); the assistant
sometimes writes a batch in another order than the sub-questions (:data:`_P_REORDER`), and the
results of a batch are sometimes logged in the order they completed (:data:`_P_SHUFFLED`). How
the calls are grouped into messages is part of what defines a strategy: ``fan_out`` and
``sequential`` make the same searches, ``fan_out_read`` and ``search_read_chain`` the same
searches and page reads, in one or two messages against one message per call. The final
assistant message, without tool calls, ends with ``Answer: ...`` (or ``Final answer: ...``).

Seven planted strategies (k: the question's sub-questions, 2-4; calls before failures and
optional steps, and assistant messages with tool calls):

=====================  ========================================================================
``from_memory``        no tool at all: the answer from what the model remembers (0 calls)
``fan_out``            one parallel batch of ``web_search``, one query per sub-question, then
                       the answer (k calls in 1 message)
``sequential``         the same ``web_search`` per sub-question, one call per message, each
                       query after the first possibly informed by the previous result (k
                       calls in k messages)
``fan_out_read``       a parallel batch of ``web_search`` (one per sub-question), then a
                       parallel batch of ``open_page`` on the top result of two to k of them
                       (k + 2 to 2k calls in 2 messages)
``broad_then_read``    one broad ``web_search`` for the whole question, ``open_page`` of the
                       overview page it finds (a list, a filmography, a company history), and
                       optionally (:data:`_P_READ_MORE`) one entity's page (2-3 calls, one per
                       message)
``search_read_chain``  for each sub-question in turn, ``web_search`` then ``open_page`` of its
                       top result, one call per message (2k calls in 2k messages)
``draft_verify``       a draft answer written from memory, then a parallel batch of
                       ``lookup_entity`` on every entity it names, and optionally
                       (:data:`_P_FOLLOW_UP`) one ``web_search`` for a figure the cards
                       disagree on (k to k + 1 calls in 1-2 messages)
=====================  ========================================================================

Call counts overlap (0, 2-4, 2-4, 4-8, 2-3, 4-8, 2-5 before failures and optional steps), and
so do the numbers of messages (0, 1, 2-4, 2, 2-3, 4-8, 1-2).

Failures are execution, not strategy: every tool call fails with probability :data:`_P_FAIL`
and is followed by the corrected or repeated call of the same tool in the NEXT assistant
message; a failed call of a parallel batch is retried alone (the failed calls of one batch
together), the calls of the batch that worked are not made again. Failures are ``HTTP 429 Too
Many Requests`` and ``503 Service Unavailable`` texts, a JSON ``{"error": "rate_limited"}``
or a page fetch that timed out (:data:`_P_TRANSIENT` of failures, repeated with the same
arguments); an empty query or one with an unbalanced quote or a bare ``site:`` operator; a
mistyped url (``Error: HTTP 404 Not Found``) or a page that refuses the fetch (``HTTP 403
Forbidden``, read again through the web archive); an expression with thousands separators or
a trailing ``=``; a mistyped entity name (``{"error": "entity_not_found", ...}``).

Optional steps, at fixed rates whatever the arm, the question and the strategy, inside every
strategy that calls a tool (each its own message): a first clarifying call before the work
(:data:`_P_CLARIFY`: a ``web_search`` for the question's main entity's disambiguation, or
``lookup_entity`` of it), a final ``open_page`` to confirm one figure on a page already found
(:data:`_P_CONFIRM`), and a final ``calculator`` check of the arithmetic (:data:`_P_CALC`), the
last two in either order. Queries, entities, numbers, urls, pages and the assistant's words (a
short text before calls, sometimes empty) vary inside every strategy; every strategy is used
on every kind of question (the strategy is drawn independently of it).

The ``rl`` arm differs from ``base`` only in its mixture (it fans out and reads more); success
is drawn at the strategy's rate (random within it, independent of the question), and shows in
the final answer: the gold answer, or a wrong one.

The truth carries, beside ``strategy``, ``kind`` (of question), ``n_subs`` (sub-questions),
``n_calls`` (tool calls, failed ones included), ``n_messages`` (assistant messages with tool
calls), ``n_parallel`` (of them, messages with two calls or more), ``n_failures`` (failed
calls) and ``correct``.

Written from scratch as a held-out world, without reference to how trajectories are segmented
or clustered.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import polars as pl

from mechanism.core.options import RandomState, as_generator
from mechanism.datasets.worlds._base import World, name, pick, planted_world

STRATEGIES = ("from_memory", "fan_out", "sequential", "fan_out_read", "broad_then_read", "search_read_chain",
              "draft_verify")
KINDS = ("compare", "aggregate", "multihop")
TOOLS = ("web_search", "open_page", "calculator", "lookup_entity")
ARMS = {
    "base": {"from_memory": 0.15, "fan_out": 0.12, "sequential": 0.25, "fan_out_read": 0.08,
             "broad_then_read": 0.18, "search_read_chain": 0.12, "draft_verify": 0.10},
    "rl": {"from_memory": 0.05, "fan_out": 0.25, "sequential": 0.10, "fan_out_read": 0.25,
           "broad_then_read": 0.08, "search_read_chain": 0.12, "draft_verify": 0.15},
}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"from_memory": 0.25, "fan_out": 0.6, "sequential": 0.7, "fan_out_read": 0.8, "broad_then_read": 0.45,
            "search_read_chain": 0.8, "draft_verify": 0.65}
#: the chance that a tool call fails (it is followed by the corrected or repeated call of the same tool)
_P_FAIL = 0.1
#: the share of failures that are transient (429, 503, a timeout), repeated with the same arguments
_P_TRANSIENT = 0.35
#: optional steps, at fixed rates whatever the arm, the question and the strategy (tool-using ones)
_P_CLARIFY = 0.15  # a first clarifying web_search (disambiguation) or lookup_entity of the main entity
_P_CONFIRM = 0.15  # a final open_page to confirm one figure
_P_CALC = 0.3  # a final calculator check of the arithmetic
#: how the assistant writes and the tools log a parallel batch
_P_REORDER = 0.3  # the batch's calls written in another order than the sub-questions
_P_SHUFFLED = 0.15  # the batch's results logged in the order they completed
_P_SAY = 0.7  # a short text before the calls (else none)
#: steps inside a strategy (part of it whichever way they go)
_P_READ_MORE = 0.5  # broad_then_read: one entity's page after the overview
_P_FOLLOW_UP = 0.5  # draft_verify: one web_search for a figure the cards disagree on

_FAIL_429 = "HTTP 429 Too Many Requests: rate limit exceeded, retry after 2 seconds"
_FAIL_503 = "503 Service Unavailable: upstream timeout, please retry"
#: the clarifying searches (the main entity's disambiguation), the optional first step
_CLARIFY_QUERIES = ("{e} disambiguation", "{e} (disambiguation)", "which {e} is meant", "{e} disambiguation page")

# -- the questions --------------------------------------------------------------------------------
#: comparison families: plural, attribute, unit, value range, knowledge-base type and key, source site
_COMPARE = {
    "city": ("cities", "population", "people", (40_000, 3_500_000), "city", "population",
             "Which of the {n} cities {list} has the largest population, and by how much does it exceed the next "
             "largest?"),
    "mountain": ("mountains", "height", "m", (1_200, 8_400), "mountain", "elevation_m",
                 "Of the mountains {list}, which is the tallest, and by how many metres is it taller than the "
                 "runner-up?"),
    "river": ("rivers", "length", "km", (150, 4_200), "river", "length_km",
              "Which is the longest of the {n} rivers {list}, and how much longer is it than the second longest?"),
    "lake": ("lakes", "surface area", "km²", (20, 9_000), "lake", "area_km2",
             "Among the lakes {list}, which has the largest surface area, and by how much does it exceed the next "
             "one?"),
}
#: aggregate families: item word, creator word, collection page, metric, knowledge-base key
_AGGREGATE = {
    "films": ("film", "director", "filmography", "worldwide box office", "box_office_usd_million",
              "What was the combined worldwide box office of {list}, the {n} films {creator} directed in the "
              "1990s?"),
    "albums": ("album", "band", "discography", "weeks on the national albums chart", "chart_weeks",
               "How many weeks in total did {list}, the {n} studio albums {creator} released in the 2000s, spend "
               "on the national albums chart?"),
    "novels": ("novel", "author", "bibliography", "page count", "pages",
               "How many pages do {list}, the {n} novels {creator} published in the 1980s, have altogether?"),
}
_PRODUCTS = ("espresso machine", "e-bike", "drone", "robot vacuum", "electric kettle", "hearing aid", "smartwatch",
             "3D printer")
_COMPANY_ENDS = ("Industries", "Labs", "Works", "Systems", "& Co.", "Technologies", "GmbH", "Group")
_GENRES = ("drama", "thriller", "comedy", "science-fiction", "war", "crime")
_REGIONS = ("Norvia", "Keland", "Ostria", "Valdora", "Meris", "Tarvia")
_SITES = ("https://en.wikipedia.org/wiki/", "https://www.britannica.com/topic/", "https://www.worldatlas.com/",
          "https://www.encyclopedia.com/")
_LIST_SITE = "https://en.wikipedia.org/wiki/"


def _digits(rng: np.random.Generator, n: int) -> str:
    return "".join(str(int(d)) for d in rng.integers(0, 10, size=n))


def _slug(text: str) -> str:
    return text.replace(" ", "_").replace("&", "and").replace(".", "")


def _fmt(value: float, unit: str) -> str:
    """A value with its unit as the answers write it."""
    if unit == "$m":
        return f"${value:,.1f} million"
    return f"{int(value):,} {unit}"


def _title(rng: np.random.Generator) -> str:
    return pick(rng, ("The {a} {b}", "{a} of {b}", "{a}", "The Last {a}", "Return to {a}")).format(
        a=name(rng), b=name(rng))


def _page(title: str, url: str, claim: str, fluff: tuple[str, ...]) -> dict:
    """One page: its search hit (title, url, snippet) and its text."""
    return {"title": title, "url": url, "snippet": claim,
            "text": f"{title}\n\n{claim} {fluff[0]}\n\n{' '.join(fluff[1:])}"}


def _fluff(rng: np.random.Generator, subject: str) -> tuple[str, ...]:
    lines = (f"{subject} is mentioned in several regional histories.", f"See also: list of places named {subject}.",
             f"The earliest records of {subject} date from the {int(rng.integers(12, 19))}th century.",
             "This article needs additional citations for verification.",
             f"Figures are from the {int(rng.integers(2015, 2025))} edition of the national statistics yearbook.",
             f"{subject} has been the subject of a documentary.", "External links are listed at the end of the page.")
    idx = rng.permutation(len(lines))[:3]
    return tuple(lines[int(i)] for i in idx)


def _distinct_names(rng: np.random.Generator, n: int, make: Any) -> list[str]:
    out: list[str] = []
    while len(out) < n:
        candidate = make(rng)
        if candidate not in out:
            out.append(candidate)
    return out


def _an(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


def _listed(names: list[str]) -> str:
    return ", ".join(names[:-1]) + f" and {names[-1]}"


def _compare_task(rng: np.random.Generator, k: int) -> dict:
    family = pick(rng, tuple(_COMPARE))
    plural, attr, unit, (lo, hi), kb_type, key, question = _COMPARE[family]
    shape = {"city": "{}", "mountain": pick(rng, ("Mount {}", "{} Peak")), "river": "{} River", "lake": "Lake {}"}
    ents = _distinct_names(rng, k, lambda r: shape[family].format(name(r)))
    values: list[int] = []
    while len(values) < k:
        v = int(rng.integers(lo, hi))
        if all(abs(v - w) > 5 for w in values):
            values.append(v)
    order = sorted(range(k), key=lambda i: -values[i])
    top, second = order[0], order[1]
    diff = values[top] - values[second]
    country = pick(rng, _REGIONS)
    site = pick(rng, _SITES)
    subs = []
    for e, v in zip(ents, values):
        claim = pick(rng, (f"{e} has a {attr} of {_fmt(v, unit)}.",
                           f"The {attr} of {e} is {_fmt(v, unit)} according to the latest survey.",
                           f"{e} is a {kb_type} in {country} with a {attr} of {_fmt(v, unit)}."))
        subs.append({"entity": e, "value": v, "card": {"name": e, "type": kb_type, key: v, "country": country},
                     "page": _page(f"{e} - {pick(rng, ('Wikipedia', 'Overview', 'Facts and figures'))}",
                                   site + _slug(e), claim, _fluff(rng, e)),
                     "cold": ("{e} " + attr, "{e} " + attr + " latest figure", "what is the " + attr + " of {e}",
                              "{e} " + kb_type + " " + attr),
                     "warm": ("{e} " + attr + " compared with {prev}", "is {e} bigger than {prev}",
                              "{e} " + attr + " vs {prev}", "{e} " + attr)})
    listing = "\n".join(f"- {e}: {_fmt(v, unit)}" for e, v in sorted(zip(ents, values), key=lambda x: -x[1]))
    title = f"List of {plural} in {country} by {attr}"
    overview = _page(title, _LIST_SITE + _slug(title), f"This list ranks the {plural} of the region by {attr}.",
                     (f"Ranked list:\n{listing}", "Values are rounded.", "See also: geography of the region."))
    gold = f"{ents[top]}, by {_fmt(diff, unit)}"
    wrong = [f"{ents[second]}, by {_fmt(diff, unit)}",
             f"{ents[top]}, by {_fmt(diff + int(rng.integers(1, 9)) * 10 ** int(rng.integers(0, 3)), unit)}"]
    calc = pick(rng, (f"{values[top]} - {values[second]}", f"{values[top]}-{values[second]}"))
    return {"kind": "compare", "text": question.format(n=("two", "three", "four")[k - 2], list=_listed(ents)),
            "main": ents[0], "subs": subs, "overview": overview, "gold": gold, "wrong": wrong, "calc": calc,
            "calc_value": str(diff), "fact": f"{ents[top]} leads with {_fmt(values[top], unit)}",
            "broad": (f"{attr} of {' vs '.join(ents)}", f"largest {plural} {' '.join(ents)} {attr}",
                      f"{plural} by {attr} {country}")}


def _aggregate_task(rng: np.random.Generator, k: int) -> dict:
    family = pick(rng, tuple(_AGGREGATE))
    item, creator_word, collection, metric, key, question = _AGGREGATE[family]
    creator = (f"{name(rng)} {name(rng)}" if family != "albums"
               else pick(rng, ("The {}s", "{} Collective", "{}")).format(name(rng)))
    titles = _distinct_names(rng, k, _title)
    decade = {"films": 1990, "albums": 2000, "novels": 1980}[family]
    years = [decade + int(y) for y in rng.integers(0, 10, size=k)]
    if family == "films":
        tenths = [int(v) for v in rng.integers(50, 4800, size=k)]  # $ million, one decimal
        values: list[float] = [v / 10 for v in tenths]
        total: float = sum(tenths) / 10
        unit = "$m"
    else:
        lo, hi = (1, 120) if family == "albums" else (180, 900)
        values = [int(v) for v in rng.integers(lo, hi, size=k)]
        total = sum(values)
        unit = "weeks" if family == "albums" else "pages"
    site = pick(rng, _SITES)
    subs = []
    for tt, y, v in zip(titles, years, values):
        claim = {"films": f"{tt} is a {y} film directed by {creator}; it grossed {_fmt(v, unit)} worldwide.",
                 "albums": f"{tt} ({y}) is a studio album by {creator}. It spent {_fmt(v, unit)} on the chart.",
                 "novels": f"{tt} is a {y} novel by {creator} ({_fmt(v, unit)}, first edition)."}[family]
        subs.append({"entity": tt, "value": v,
                     "card": {"name": tt, "type": item, creator_word: creator, "year": y, key: v},
                     "page": _page(f"{tt} ({y} {item})", site + _slug(f"{tt} ({y} {item})"), claim, _fluff(rng, tt)),
                     "cold": ("{e} " + metric, "{e} (" + str(y) + " " + item + ") " + metric,
                              "{e} " + creator + " " + metric, "how much {e} " + metric),
                     "warm": ("{e} " + metric, "{prev} and {e} " + metric, "{e} " + metric + ", also by " + creator,
                              "{e} " + creator + " " + item + " " + metric)})
    listing = "\n".join(f"- {tt} ({y}): {_fmt(v, unit)}" for tt, y, v in zip(titles, years, values))
    title = f"{creator} {collection}"
    overview = _page(title, _LIST_SITE + _slug(title), f"The {collection} of {creator}, with {metric}.",
                     (f"{item.capitalize()}s:\n{listing}", f"Figures for {metric} from trade sources.",
                      "Later work is listed separately."))
    gold = _fmt(total, unit)
    smallest = min(values)
    slip = (int(rng.integers(1, 9)) / 10) if unit == "$m" else int(rng.integers(1, 9))
    wrong = [_fmt(total - smallest, unit), _fmt(total + slip, unit)]
    sep = pick(rng, (" + ", "+"))
    calc = sep.join(str(v) for v in values)
    return {"kind": "aggregate", "text": question.format(n=("two", "three", "four")[k - 2], list=_listed(titles),
                                                         creator=creator),
            "main": creator, "main_card": {"name": creator, "type": "band" if family == "albums" else "person",
                                           "notable_works": titles},
            "subs": subs, "overview": overview, "gold": gold, "wrong": wrong, "calc": calc,
            "calc_value": f"{total:.1f}" if unit == "$m" else str(total),
            "fact": f"the {k} {item}s add up to {gold}",
            "broad": (f"{creator} {item}s {decade}s {metric}", f"{creator} {collection} {metric} total",
                      f"{_listed(titles)} {metric}")}


def _person(rng: np.random.Generator) -> str:
    return f"{name(rng)} {name(rng)}"


def _multihop_task(rng: np.random.Generator, k: int) -> dict:
    site = pick(rng, _SITES)
    place = name(rng)
    if k == 3:  # product -> maker -> founder -> birth
        category = pick(rng, _PRODUCTS)
        product = f"{name(rng)} {pick(rng, ('X', 'K', 'Pro ', 'Aero ', 'S'))}{int(rng.integers(2, 90))}"
        company = f"{name(rng)} {pick(rng, _COMPANY_ENDS)}"
        founder, ceo = _distinct_names(rng, 2, _person)
        year = int(rng.integers(1950, 2012))
        birth = year - int(rng.integers(22, 58))
        age = year - birth
        text = (f"Who founded the company that makes the {product} {category}, where was that person born, and how "
                "old were they when they founded it?")
        gold = f"{founder}, born in {place}, aged {age}"
        wrong = [f"{ceo}, born in {place}, aged {age}", f"{founder}, born in {place}, aged {age + pick(rng, (-1, 1))}"]
        subs = [
            {"entity": product, "card": {"name": product, "type": "product", "category": category,
                                         "manufacturer": company},
             "page": _page(f"{product} - {company}", site + _slug(product),
                           f"The {product} is {_an(category)} made by {company}.", _fluff(rng, product)),
             "cold": ("who makes the {e}", "{e} manufacturer", "{e} " + category + " made by which company"),
             "warm": ("who makes the {e}", "{e} manufacturer", "{e} " + category + " brand")},
            {"entity": company, "card": {"name": company, "type": "company", "founded": year, "founders": [founder],
                                         "ceo": ceo},
             "page": _page(f"{company} - company history", site + _slug(company),
                           f"{company} was founded in {year} by {founder}; its chief executive is {ceo}.",
                           _fluff(rng, company)),
             "cold": (f"{product} manufacturer founder", f"who founded the company behind the {product}",
                      f"{product} maker founded by"),
             "warm": ("{e} founder", "who founded {e}", "{e} founded year founder")},
            {"entity": founder, "card": {"name": founder, "type": "person", "born": birth, "birthplace": place,
                                         "known_for": company},
             "page": _page(f"{founder} - biography", site + _slug(founder),
                           f"{founder} (born {birth} in {place}) is an engineer and the founder of {company}.",
                           _fluff(rng, founder)),
             "cold": (f"{product} company founder birthplace", f"founder of {product} maker born",
                      f"{product} manufacturer founder biography"),
             "warm": ("{e} born", "{e} biography birthplace", "where was {e} born")}]
        domain = _slug(company).lower().replace("_", "")
        overview = _page(f"About {company}: our history", f"https://www.{domain}.com/about/history",
                         f"{company} (maker of the {product}) was founded in {year} by {founder}.",
                         (f"{founder} was born in {birth} in {place}.", f"Its chief executive is {ceo}.",
                          "The company is privately held."))
        broad = (f"{product} maker founder age at founding", f"who founded the maker of {product} and where born",
                 f"{product} {category} company founder")
        main, fact = product, f"{company} was founded in {year} by {founder}, born {birth}"
    else:  # a work -> its maker -> birth
        film = bool(rng.random() < 0.5)
        work = _title(rng)
        maker = _person(rng)
        other = _person(rng)
        while other == maker:
            other = _person(rng)
        year = int(rng.integers(1960, 2020))
        birth = year - int(rng.integers(24, 70))
        age = year - birth
        what, role, verb = ("film", "director", "directed") if film else ("novel", "author", "wrote")
        text = (f"Who directed the film {work}, and how old was the director when it came out?" if film else
                f"Who wrote the novel {work}, and how old was the author when it was published?")
        gold = f"{maker}, aged {age}"
        wrong = [f"{other}, aged {age}", f"{maker}, aged {age + pick(rng, (-1, 1, 2))}"]
        genre = pick(rng, _GENRES)
        credit = "produced by" if film else "translated by"
        subs = [
            {"entity": work, "card": {"name": work, "type": what, "year": year, role: maker, "genre": genre},
             "page": _page(f"{work} ({year} {what})", site + _slug(f"{work} ({year} {what})"),
                           f"{work} is a {year} {genre} {what} {'directed' if film else 'written'} by {maker}, "
                           f"{credit} {other}.", _fluff(rng, work)),
             "cold": ("who " + verb + " {e}", "{e} " + what + " " + role, "{e} " + what + " release " + role),
             "warm": ("who " + verb + " {e}", "{e} " + what + " " + role, "{e} (" + what + ")")},
            {"entity": maker, "card": {"name": maker, "type": "person", "born": birth, "birthplace": place,
                                       "occupation": role},
             "page": _page(f"{maker} - biography", site + _slug(maker),
                           f"{maker} (born {birth} in {place}) is a {role}.", _fluff(rng, maker)),
             "cold": (f"{work} {role} date of birth", f"how old is the {role} of {work}", f"{work} {role} born"),
             "warm": ("{e} born", "{e} date of birth", "{e} " + role + " biography")}]
        overview = _page(f"{work} ({year}) - full credits and background",
                         (f"https://www.filmreference.com/title/{_digits(rng, 7)}" if film
                          else f"https://www.bookreference.com/book/{_digits(rng, 7)}"),
                         f"{work} is a {year} {what} by {maker}.",
                         (f"{maker} was born in {birth} in {place}.", f"It was {credit} {other}.",
                          f"The {what} was well received."))
        broad = (f"{work} {role} age", f"{work} {year} {what} {role} born", f"who {verb} {work} how old")
        main, fact = work, f"{work} came out in {year}; {maker} was born in {birth}"
    for s in subs:
        s["value"] = None
    return {"kind": "multihop", "text": text, "main": main, "subs": subs, "overview": overview, "gold": gold,
            "wrong": wrong, "calc": pick(rng, (f"{year} - {birth}", f"{year}-{birth}")), "calc_value": str(age),
            "fact": fact, "broad": broad}


def _task(rng: np.random.Generator, kind: str) -> dict:
    k = int(rng.integers(2, 4)) if kind == "multihop" else int(rng.integers(2, 5))
    t = {"compare": _compare_task, "aggregate": _aggregate_task, "multihop": _multihop_task}[kind](rng, k)
    t["wrong"] = [w for w in t["wrong"] if w != t["gold"]]
    return t


# -- the tools' answers -----------------------------------------------------------------------------
_DISTRACTORS = (
    ("{e} - latest news", "https://news.{site}.com/topic/{slug}", "Latest headlines and updates about {e}."),
    ("{e} (disambiguation)", "https://en.wikipedia.org/wiki/{slug}_(disambiguation)", "{e} may refer to several "
                                                                                       "places, people or works."),
    ("10 things you didn't know about {e}", "https://www.{site}.com/{slug}-facts", "Did you know? A quick list of "
                                                                                  "curiosities about {e}."),
    ("Discussion: {e}", "https://www.reddit.com/r/{sub}/comments/{id}/", "Anyone know more about {e}? ..."),
    ("{e} | Quiz", "https://www.{site}.com/quiz/{slug}", "Test your knowledge about {e}."),
    ("{e} - images", "https://images.{site}.com/search?q={slug}", "Photos and pictures of {e}."),
)


def _results(rng: np.random.Generator, hits: list[dict], subject: str) -> str:
    """A numbered result list: the relevant ``hits`` near the top among unrelated ones."""
    n_other = int(rng.integers(2, 5))
    others = []
    for i in rng.permutation(len(_DISTRACTORS))[:n_other]:
        title, url, snippet = _DISTRACTORS[int(i)]
        fill = {"e": subject, "slug": _slug(subject).lower(), "site": pick(rng, ("daily", "herald", "trivia", "mag")),
                "sub": pick(rng, ("AskHistorians", "geography", "movies", "books", "todayilearned")),
                "id": _digits(rng, 6)}
        others.append({"title": title.format(**fill), "url": url.format(**fill), "snippet": snippet.format(**fill)})
    out = list(others)
    for h in hits:  # each relevant hit at position 1-3 among the others
        out.insert(min(len(out), int(rng.choice([0, 1, 2], p=[0.6, 0.3, 0.1]))), h)
    return "\n".join(f"{i}. {r['title']}\n   {r['url']}\n   {r['snippet']}" for i, r in enumerate(out, 1))


def _mistype(rng: np.random.Generator, text: str, start: int = 0) -> str:
    """``text`` with two neighbouring different characters swapped after ``start``, or its last one dropped."""
    spots = [i for i in range(start, len(text) - 1) if text[i] != text[i + 1] and text[i].isalnum()
             and text[i + 1].isalnum()]
    if spots and rng.random() < 0.7:
        i = spots[int(rng.integers(len(spots)))]
        return text[:i] + text[i + 1] + text[i] + text[i + 2:]
    return text[:-1]


def _broken(rng: np.random.Generator, tool: str, args: dict) -> tuple[dict, str, dict]:
    """A failed call: (its arguments, the error it gets, the arguments of the call that follows)."""
    if rng.random() < _P_TRANSIENT:
        err = {"web_search": (_FAIL_429, _FAIL_503),
               "open_page": (f"Error: timed out after 30 s fetching {args.get('url')}", _FAIL_503),
               "calculator": (_FAIL_503,),
               "lookup_entity": (json.dumps({"error": "rate_limited", "retry_after": 2}), _FAIL_429)}[tool]
        return dict(args), pick(rng, err), dict(args)
    if tool == "web_search":
        q = args["query"]
        how = pick(rng, ("empty", "quote", "site"))
        if how == "empty":
            return {"query": ""}, json.dumps({"error": "query must be a non-empty string"}), dict(args)
        if how == "quote":
            return {"query": f'"{q}'}, "Error: unbalanced quotation marks in query", dict(args)
        return {"query": f"{q} site:"}, "Error: invalid search operator 'site:' (missing domain)", dict(args)
    if tool == "open_page":
        url = args["url"]
        if rng.random() < 0.5:
            bad = _mistype(rng, url, start=url.index("/", 8) + 1)
            return {"url": bad}, f"Error: HTTP 404 Not Found ({bad})", dict(args)
        return dict(args), f"Error: HTTP 403 Forbidden ({url})", {"url": "https://web.archive.org/web/2024/" + url}
    if tool == "calculator":
        expr = args["expression"]
        if any(len(p) > 3 for p in expr.replace("-", " ").replace("+", " ").split()) and rng.random() < 0.6:
            bad = " ".join(f"{int(float(p)):,}" if p.isdigit() else p for p in expr.split(" "))
            if bad == expr:
                bad = expr + " ="
        else:
            bad = expr + " ="
        err = (f"Error: invalid syntax in expression '{bad}'" if "," in bad
               else f"Error: unexpected end of expression '{bad}'")
        return {"expression": bad}, err, dict(args)
    bad = _mistype(rng, args["name"], start=1)
    return {"name": bad}, json.dumps({"error": "entity_not_found", "message": f"No entity named '{bad}'",
                                      "suggestions": [args["name"]]}), dict(args)


# -- one episode --------------------------------------------------------------------------------------
def _call_id(rng: np.random.Generator) -> str:
    return "call_" + "".join(pick(rng, tuple("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"))
                             for _ in range(12))


_RETRY_SAYS = ("Retrying the call that failed.", "One call failed; trying it again.", "Let me redo that one.",
               "That request errored, retrying.", "Fixing the failed call.")


class _Session:
    """One transcript in OpenAI chat format: assistant messages with one or several tool calls,
    a result per call, failed calls retried in the next message."""

    def __init__(self, rng: np.random.Generator, task: dict) -> None:
        self.rng, self.t = rng, task
        self.messages: list[dict] = [
            {"role": "system", "content": pick(rng, (
                "You are a research assistant. Answer the user's question with the tools web_search, open_page, "
                "calculator and lookup_entity. You may call several tools at once.",
                "You are a deep-research agent. Search the web, read pages and check numbers before answering. "
                "Independent lookups can be issued in parallel.",
                "You answer factual questions. Use tools when needed and end with 'Answer: ...'.",
                "Research assistant. Tools: web_search(query), open_page(url), calculator(expression), "
                "lookup_entity(name). Parallel tool calls are allowed."))},
            {"role": "user", "content": task["text"]}]
        self.n_calls = self.n_messages = self.n_parallel = self.failures = 0
        self.sources: list[str] = []  # the urls of relevant pages shown so far (for the confirming read)

    def _message(self, calls: list[tuple[str, dict, str]], said: str | None) -> None:
        rng = self.rng
        ids = [_call_id(rng) for _ in calls]
        self.messages.append({"role": "assistant", "content": said, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}
            for cid, (tool, args, _) in zip(ids, calls)]})
        order = list(range(len(calls)))
        if len(calls) > 1 and rng.random() < _P_SHUFFLED:  # results logged as they completed
            order = [int(i) for i in rng.permutation(len(calls))]
        for i in order:
            tool, _, result = calls[i]
            self.messages.append({"role": "tool", "tool_call_id": ids[i], "name": tool, "content": result})
        self.n_calls += len(calls)
        self.n_messages += 1
        self.n_parallel += len(calls) > 1

    def batch(self, calls: list[tuple[str, dict, str]], says: tuple[str, ...], *, always: bool = False) -> None:
        """One assistant message with ``calls`` (several: a parallel batch) and, with
        :data:`_P_SAY` (``always``: every time), one of ``says``; each call fails with
        :data:`_P_FAIL`, and the failed ones are made again, corrected or repeated, together in
        the next message."""
        rng = self.rng
        said = pick(rng, says) if always or rng.random() < _P_SAY else None
        sent, again = [], []
        for tool, args, result in calls:
            if rng.random() < _P_FAIL:
                first, err, retry = _broken(rng, tool, args)
                sent.append((tool, first, err))
                if retry != args:  # read through the archive: the same text
                    result = result.replace(args["url"], retry["url"], 1) if tool == "open_page" else result
                again.append((tool, retry, result))
                self.failures += 1
            else:
                sent.append((tool, args, result))
        self._message(sent, said)
        if again:
            self._message(again, pick(rng, _RETRY_SAYS) if rng.random() < 0.6 else None)

    def parallel(self, calls: list[tuple[str, dict, str]], says: tuple[str, ...], *, always: bool = False) -> None:
        """A parallel batch, sometimes written in another order than the sub-questions."""
        if self.rng.random() < _P_REORDER:
            perm = [int(i) for i in self.rng.permutation(len(calls))]
            if perm == list(range(len(calls))):
                perm = perm[1:] + perm[:1]
            calls = [calls[i] for i in perm]
        self.batch(calls, says, always=always)

    def say(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})


def _search(s: _Session, query: str, hits: list[dict], subject: str) -> tuple[str, dict, str]:
    s.sources.extend(h["url"] for h in hits)
    return "web_search", {"query": query}, _results(s.rng, hits, subject)


def _sub_search(s: _Session, sub: dict, warm: bool, prev: dict | None) -> tuple[str, dict, str]:
    templates = sub["warm"] if warm else sub["cold"]
    if warm and prev is not None and prev["value"] is not None and s.rng.random() < 0.5:
        query = pick(s.rng, tuple(q for q in templates if "{prev}" in q) or templates)
    else:
        query = pick(s.rng, tuple(q for q in templates if "{prev}" not in q))
    return _search(s, query.format(e=sub["entity"], prev=prev["entity"] if prev else ""), [sub["page"]],
                   sub["entity"])


def _open(s: _Session, page: dict) -> tuple[str, dict, str]:
    return "open_page", {"url": page["url"]}, f"URL: {page['url']}\n\n{page['text']}"


def _lookup(s: _Session, entity: str, card: dict, source: str) -> tuple[str, dict, str]:
    s.sources.append(source)
    return "lookup_entity", {"name": entity}, json.dumps({**card, "source": source})


def _fan_says(k: int) -> tuple[str, ...]:
    n = ("two", "three", "four")[k - 2]
    return (f"I'll search the {n} parts of the question at once.", f"Running {n} searches in parallel.",
            "These lookups are independent, so I'll run them together.",
            f"Let me look up {'both' if k == 2 else 'all ' + n} at the same time.",
            f"Splitting the question into {n} searches.")


_FIRST_SAYS = ("Let me start with the first part.", "Searching for this one first.", "One step at a time; first:",
               "Looking this up.")
_NEXT_SAYS = ("Next, the following part.", "Now the next one.", "That gives me this piece; continuing.",
              "Looking this up.", "Good. Now:")
_READ_SAYS = ("Let me read the most relevant pages.", "Opening the top results to get exact figures.",
              "I'll open these pages together.", "Reading the sources in parallel.")
_OPEN_SAYS = ("Opening the top result.", "Let me read this page.", "This result looks right; opening it.",
              "Reading the page for the exact figure.")
_BROAD_SAYS = ("One broad search should cover this.", "Let me search for the whole question first.",
               "Starting with a general search.", "A single search may find an overview.")


def _draft(rng: np.random.Generator, t: dict) -> str:
    if t["kind"] == "multihop":
        ents = " -> ".join(sub["entity"] for sub in t["subs"])
        body = pick(rng, (f"From memory the chain is {ents}.", f"I believe it goes {ents}.",
                          f"My recollection: {ents}."))
    else:
        guesses = ", ".join(f"{sub['entity']} ~{sub['value'] * float(rng.uniform(0.85, 1.15)):,.0f}"
                            for sub in t["subs"])
        body = pick(rng, (f"Draft from memory: {guesses}.", f"My first guess: {guesses}.",
                          f"Roughly, as I recall: {guesses}."))
    return body + " " + pick(rng, ("Let me verify each against the knowledge base.", "Checking every entity now.",
                                   "Verifying these before answering.", "I'll confirm each figure."))


def _clarify(s: _Session) -> None:
    rng, t = s.rng, s.t
    main = t["main"]
    if rng.random() < 0.5:
        hit = dict(t["subs"][0]["page"]) if main == t["subs"][0]["entity"] else dict(t["overview"])
        s.batch([_search(s, pick(rng, _CLARIFY_QUERIES).format(e=main), [hit], main)],
                ("First, let me make sure which entity is meant.", f"'{main}' could be ambiguous; checking.",
                 "Quick disambiguation first."))
    else:
        sub = t["subs"][0]
        own = main == sub["entity"]  # the main entity is the first sub-question's, or the creator of them all
        s.batch([_lookup(s, main, sub["card"] if own else t["main_card"],
                         sub["page"]["url"] if own else t["overview"]["url"])],
                (f"Let me check the knowledge base for {main} first.", "First, a quick entity lookup.",
                 f"Which {main} is this? Checking."))


def _final(rng: np.random.Generator, t: dict, strategy: str, correct: bool) -> str:
    ans = t["gold"] if correct else pick(rng, tuple(t["wrong"]))
    if strategy == "from_memory":
        text = pick(rng, ("From memory, without looking anything up.", "I'm answering from what I recall.",
                          "Based on my general knowledge (no sources checked).", "As far as I remember:"))
    elif correct:
        text = pick(rng, (f"According to the sources I found, {t['fact']}.", f"Putting the figures together: "
                          f"{t['fact']}.", f"The pages and cards agree: {t['fact']}.", "The results are consistent."))
    else:
        text = pick(rng, ("Going by the results above.", "The figures point this way.", "Here is what I get.",
                          "The results are consistent."))
    tag = pick(rng, ("Answer:", "Answer:", "Final answer:"))
    return f"{text}\n\n{tag} {ans}"


def _episode(rng: np.random.Generator, strategy: str, t: dict, correct: bool) -> _Session:
    s = _Session(rng, t)
    subs, k = t["subs"], len(t["subs"])
    if strategy == "from_memory":
        s.say(_final(rng, t, strategy, correct))
        return s
    if rng.random() < _P_CLARIFY:
        _clarify(s)
    if strategy == "fan_out":
        s.parallel([_sub_search(s, sub, False, None) for sub in subs], _fan_says(k))
    elif strategy == "sequential":
        for i, sub in enumerate(subs):
            s.batch([_sub_search(s, sub, i > 0, subs[i - 1] if i else None)], _NEXT_SAYS if i else _FIRST_SAYS)
    elif strategy == "fan_out_read":
        s.parallel([_sub_search(s, sub, False, None) for sub in subs], _fan_says(k))
        m = int(rng.integers(2, k + 1))
        chosen = sorted(int(i) for i in rng.choice(k, size=m, replace=False))
        s.parallel([_open(s, subs[i]["page"]) for i in chosen], _READ_SAYS)
    elif strategy == "broad_then_read":
        shown = sorted(int(i) for i in rng.choice(k, size=int(rng.integers(1, 3)), replace=False))
        hits = [t["overview"], *(subs[i]["page"] for i in shown)]
        s.batch([_search(s, pick(rng, t["broad"]), hits, t["main"])], _BROAD_SAYS)
        s.batch([_open(s, t["overview"])], _OPEN_SAYS)
        if rng.random() < _P_READ_MORE:
            s.batch([_open(s, subs[shown[int(rng.integers(len(shown)))]]["page"])], _OPEN_SAYS)
    elif strategy == "search_read_chain":
        for i, sub in enumerate(subs):
            s.batch([_sub_search(s, sub, i > 0, subs[i - 1] if i else None)], _NEXT_SAYS if i else _FIRST_SAYS)
            s.batch([_open(s, sub["page"])], _OPEN_SAYS)
    elif strategy == "draft_verify":
        draft = _draft(rng, t)
        s.parallel([_lookup(s, sub["entity"], sub["card"], sub["page"]["url"]) for sub in subs], (draft,),
                   always=True)
        if rng.random() < _P_FOLLOW_UP:
            sub = subs[int(rng.integers(k))]
            s.batch([_sub_search(s, sub, True, None)], (f"The card for {sub['entity']} differs from my draft; "
                                                         "searching to settle it.", "One figure disagrees; "
                                                         "double-checking with a search.", "Cross-checking one card."))
    else:  # pragma: no cover - STRATEGIES is closed
        raise ValueError(strategy)
    # optional steps, at fixed rates whatever the arm, the question and the strategy
    tail = []
    if rng.random() < _P_CONFIRM:
        tail.append("confirm")
    if rng.random() < _P_CALC:
        tail.append("calc")
    if len(tail) == 2 and rng.random() < 0.5:
        tail.reverse()
    for step in tail:
        if step == "confirm":
            url = pick(rng, s.sources)
            page = next(p for p in [t["overview"], *(sub["page"] for sub in subs)] if p["url"] == url)
            s.batch([_open(s, page)], ("Let me confirm the key figure on the source page.", "Double-checking the "
                                       "page before answering.", "One last look at the source."))
        else:
            s.batch([("calculator", {"expression": t["calc"]}, t["calc_value"])],
                    ("Checking the arithmetic.", "Let me verify the calculation.", "Quick calculator check."))
    s.say(_final(rng, t, strategy, correct))
    return s


def parallel(*, n_questions: int = 60, n_samples: int = 4, arms: dict[str, dict[str, float]] | None = None,
             random_state: RandomState = 0) -> World:
    """Generate the deep-research world with parallel tool calls (OpenAI ``tool_calls`` records).

    Parameters
    ----------
    n_questions, n_samples
        Questions (their kinds in turn, :data:`KINDS`), and episodes per question and arm.
    arms
        Arm name -> strategy mixture (default: :data:`ARMS`, ``base`` and ``rl``, which differ
        only in it).
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.

    Returns
    -------
    World
        Records in format ``openai`` (``gold``: the question's answer; ``correct``: whether the
        final answer is it); truth ``arm, question_id, sample_id, strategy, kind, n_subs``
        (sub-questions), ``n_calls`` (tool calls, failed ones included), ``n_messages``
        (assistant messages with tool calls), ``n_parallel`` (of them, with two calls or more),
        ``n_failures`` and ``correct``.

    Examples
    --------
    >>> w = parallel(n_questions=3, n_samples=2)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"]))
    ('openai', 12, ['base', 'rl'])
    >>> w.runs["n_rounds"].to_list() == w.truth["n_calls"].to_list()
    True
    >>> rec = w.records[0]
    >>> sum(len(m.get("tool_calls") or []) for m in rec["messages"]) == w.truth["n_calls"][0]
    True
    """
    rng = as_generator(random_state)
    arms = arms or ARMS
    tasks = [(f"parallel-{i:04d}", _task(rng, KINDS[i % len(KINDS)])) for i in range(n_questions)]

    def episode(rng: np.random.Generator, arm: str, qid: str, sample: int, strategy: str, t: dict
                ) -> tuple[dict, tuple]:
        correct = bool(rng.random() < _SUCCESS[strategy])
        s = _episode(rng, strategy, t, correct)
        return ({"arm": arm, "question_id": qid, "sample_id": sample, "gold": [t["gold"]], "correct": correct,
                 "messages": s.messages},
                (t["kind"], len(t["subs"]), s.n_calls, s.n_messages, s.n_parallel, s.failures, correct))

    return planted_world("parallel", "openai", rng, tasks, arms, n_samples, episode, _SUCCESS,
                         truth_schema={"kind": pl.String, "n_subs": pl.Int64, "n_calls": pl.Int64,
                                       "n_messages": pl.Int64, "n_parallel": pl.Int64, "n_failures": pl.Int64,
                                       "correct": pl.Boolean})
