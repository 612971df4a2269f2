"""A quantitative research agent world: numeric questions answered with web search, a paper
database, a calculator and Python, written as ReAct text transcripts.

The user asks a numeric question: a growth rate ("What is the compound annual growth rate of
Tharnel's wind capacity between 2010 and 2020?"), a count ("How many papers on soil
microbiomes did the Brenlou Institute publish from 2019 to 2021?") or a unit conversion
("Loumar's reservoir holds 3.4 million acre-feet; how many cubic metres is that?"). The agent
writes ``Thought N:`` / ``Action N: Tool[argument]`` / ``Observation N:`` lines (one string per
record, field ``trajectory``, as :mod:`mechanism.readers.react` reads them) and ends with
``Finish[answer]``. Tools: ``Search[query]`` (web snippets), ``Lookup[term]`` (within the page
the last search opened), ``Calculate[expression]``, ``Python[code]`` (one line) and
``Paper[query]`` (a paper database). Failures are observations that say the call did not work
(a misspelt query that finds nothing, a term not on the page, a syntax error, a traceback, a
rate limit); the agent fixes the call and makes it again with the same tool.

Seven planted strategies; call counts overlap (0, 2, 3-5, 2-3, 2-3, 3-4, 3-4 calls with the
optional steps and repeats, each failure adding one):

===================  ======================================================================
``memory``           answer from memory, no tool
``search_compute``   one search, then one calculation over the numbers in the snippet
``search_lookup``    search for the entity's page, look up 1-3 terms within it (a varying
                     number of repeats), then one calculation
``paper_first``      query the paper database (optionally a second, refined query), then a
                     calculation over the figures the papers report
``python_fetch``     fetch the numbers with 1-2 searches (one per figure, or both at once),
                     then compute the answer in Python
``double_check``     one search, compute with the calculator, then compute the same answer
                     a second way in Python (optionally a lookup on the page first)
``chain``            a first search finds the entity that holds the figures (the agency, the
                     operator, the lab), a second search uses the found name, optionally a
                     lookup within that page, then a calculation
===================  ======================================================================

Each task kind (growth, count, conversion) is met by every strategy, drawn independently of
the task. Failures (a call that fails, followed by a corrected call of the same tool, at
:data:`_P_FAIL` per call) occur inside every strategy that calls a tool; they are execution, not
strategy. The optional steps (the refined paper query, :data:`_P_REFINE`; the lookup on the
chained page, :data:`_P_CHAIN_LOOKUP`; the lookup before double-checking,
:data:`_P_CHECK_LOOKUP`) happen at fixed rates whatever the arm and the task. Queries,
expressions, code and the agent's thoughts vary inside every strategy. The ``rl`` arm differs
from ``base`` only in its mixture; success depends only on the strategy (random within it).

Written from scratch as a held-out world, without reference to how trajectories are segmented
or clustered.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from mechanism.datasets.worlds._base import World, name, pick, planted_world, word, world_generator

STRATEGIES = ("memory", "search_compute", "search_lookup", "paper_first", "python_fetch", "double_check", "chain")
KINDS = ("growth", "count", "conversion")
ARMS = {
    "base": {"memory": 0.15, "search_compute": 0.25, "search_lookup": 0.15, "paper_first": 0.12,
             "python_fetch": 0.13, "double_check": 0.08, "chain": 0.12},
    "rl": {"memory": 0.04, "search_compute": 0.1, "search_lookup": 0.16, "paper_first": 0.12,
           "python_fetch": 0.2, "double_check": 0.24, "chain": 0.14},
}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"memory": 0.15, "search_compute": 0.55, "search_lookup": 0.65, "paper_first": 0.6,
            "python_fetch": 0.7, "double_check": 0.8, "chain": 0.6}
#: the chance that a call which can fail does; a failure is followed by the corrected call
_P_FAIL = 0.15
#: optional steps, at fixed rates whatever the arm and the task
_P_REFINE = 0.35        # paper_first: a second, refined paper query
_P_CHAIN_LOOKUP = 0.4   # chain: a lookup within the page the second search opened
_P_CHECK_LOOKUP = 0.3   # double_check: a lookup on the page before computing

_TOPICS = ("soil microbiomes", "protein folding", "coral bleaching", "battery anodes", "graph neural networks",
           "malaria vaccines", "river sediment", "quantum dots", "urban heat islands", "sea ice")
_SERIES = ("wind capacity (MW)", "rice exports (tonnes)", "broadband subscribers", "tourist arrivals",
           "solar output (GWh)", "hospital beds", "rail freight (tonne-km)")
_UNITS = (  # (from, to, factor)
    ("acre-feet", "cubic metres", 1233.48), ("short tons", "tonnes", 0.907185), ("miles", "kilometres", 1.609344),
    ("gigajoules", "megawatt-hours", 0.277778), ("barrels", "litres", 158.987))
_ORGS = ("Institute", "University", "Agency", "Observatory", "Laboratory", "Authority")
_FAILS = {  # the observation of a failed call
    "search": ("Could not find {arg}. Similar: []", "Error: search backend timed out, try again"),
    "lookup": ("No results for '{arg}'.", "Error: lookup service unavailable, retry"),
    "calculate": ("Error: invalid syntax in expression", "Error: unbalanced parentheses"),
    "python": ("Traceback (most recent call last):\n  File \"<cell>\", line 1\nNameError: name 'vals' is not defined",
               "Traceback (most recent call last):\n  File \"<cell>\", line 1\nSyntaxError: invalid syntax"),
    "paper": ("Error: rate limit exceeded (429), retry later", "Error: malformed query: unbalanced quotes"),
}
#: the first words of every failed call's observation
FAILED = ("Could not find", "Error:", "No results for", "Traceback")
_TOOL = {"search": "Search", "lookup": "Lookup", "calculate": "Calculate", "python": "Python", "paper": "Paper"}
_RETRY = ("That did not work; let me fix the call.", "The call failed. Trying again, corrected.",
          "Something was wrong with that; retrying.", "Let me correct that and retry.")


def _fmt(x: float) -> str:
    return f"{x:,.2f}" if abs(x) < 1e6 else f"{x:,.0f}"


def _task(rng: np.random.Generator, kind: str) -> dict:
    """One question: its kind, wording, the figures it needs and the gold answer."""
    entity = name(rng)
    org = f"{name(rng)} {pick(rng, _ORGS)}"
    holder = f"{name(rng)} {pick(rng, ('Statistics', 'Energy Board', 'Registry', 'Council'))}"
    t: dict = {"kind": kind, "entity": entity, "org": org, "holder": holder}
    if kind == "growth":
        y1 = int(pick(rng, (2005, 2008, 2010, 2012)))
        y2 = y1 + int(pick(rng, (8, 10, 12)))
        v1 = float(rng.uniform(100, 50_000))
        rate = float(rng.uniform(0.01, 0.2))
        v2 = v1 * (1 + rate) ** (y2 - y1)
        series = pick(rng, _SERIES)
        t.update(series=series, y1=y1, y2=y2, values=[round(v1, 1), round(v2, 1)], terms=[str(y1), str(y2)],
                 gold=f"{rate * 100:.1f}%")
        t["text"] = pick(rng, ("What is the compound annual growth rate of {entity}'s {series} between {y1} and {y2}?",
                               "By how much per year (compounded) did {series} in {entity} grow from {y1} to {y2}?",
                               "Give the CAGR of {entity} {series}, {y1}-{y2}.")).format(**t)
    elif kind == "count":
        y1 = int(pick(rng, (2015, 2017, 2019)))
        years = list(range(y1, y1 + int(pick(rng, (2, 3)))))
        counts = [int(rng.integers(3, 120)) for _ in years]
        topic = pick(rng, _TOPICS)
        t.update(topic=topic, y1=years[0], y2=years[-1], values=counts, terms=[str(y) for y in years],
                 gold=str(sum(counts)))
        t["text"] = pick(rng, ("How many papers on {topic} did the {org} publish between {y1} and {y2}?",
                               "Count the {org}'s publications on {topic} from {y1} to {y2}.",
                               "What number of {topic} papers came out of the {org} in {y1}-{y2}?")).format(**t)
    else:
        src, dst, factor = _UNITS[int(rng.integers(len(_UNITS)))]
        v = float(rng.uniform(1.5, 900))
        what = pick(rng, ("annual output", "reported total", "capacity", "yearly volume"))
        t.update(src=src, dst=dst, factor=factor, what=what, values=[round(v, 2)], terms=[what, src],
                 gold=_fmt(round(v, 2) * factor))
        t["text"] = pick(rng, ("{entity}'s {what} is reported in {src}; what is it in {dst}?",
                               "Convert the {what} of {entity} from {src} to {dst}.",
                               "How many {dst} is the {what} of {entity} (given in {src})?")).format(**t)
    return t


def _expression(rng: np.random.Generator, t: dict) -> str:
    """A calculator expression for the task, written one of several ways."""
    v = t["values"]
    if t["kind"] == "growth":
        n = t["y2"] - t["y1"]
        return pick(rng, (f"({v[1]}/{v[0]})**(1/{n}) - 1", f"pow({v[1]} / {v[0]}, 1/{n}) - 1",
                          f"exp(ln({v[1]}/{v[0]})/{n}) - 1"))
    if t["kind"] == "count":
        return pick(rng, (" + ".join(map(str, v)), "+".join(map(str, v)), f"sum({', '.join(map(str, v))})"))
    return pick(rng, (f"{v[0]} * {t['factor']}", f"{t['factor']}*{v[0]}", f"{t['factor']} * {v[0]}"))


def _code(rng: np.random.Generator, t: dict) -> str:
    """One line of Python computing the task's answer from the fetched figures."""
    v = t["values"]
    var = pick(rng, ("vals", "xs", "figs", "data"))
    if t["kind"] == "growth":
        n = t["y2"] - t["y1"]
        return pick(rng, (f"{var} = {v}; print(({var}[1] / {var}[0]) ** (1 / {n}) - 1)",
                          f"import math; {var} = {v}; print(math.exp(math.log({var}[1] / {var}[0]) / {n}) - 1)",
                          f"a, b = {v[0]}, {v[1]}; print(round((b / a) ** (1 / {n}) - 1, 4))"))
    if t["kind"] == "count":
        return pick(rng, (f"{var} = {v}; print(sum({var}))",
                          f"{var} = {v}; total = sum(x for x in {var}); print(total)",
                          f"import numpy as np; print(int(np.sum({v})))"))
    return pick(rng, (f"{var} = {v[0]}; factor = {t['factor']}; print({var} * factor)",
                      f"print(round({v[0]} * {t['factor']}, 2))",
                      f"conv = {{'{t['src']}': {t['factor']}}}; print({v[0]} * conv['{t['src']}'])"))


def _result(t: dict) -> str:
    v = t["values"]
    if t["kind"] == "growth":
        return f"{(v[1] / v[0]) ** (1 / (t['y2'] - t['y1'])) - 1:.4f}"
    if t["kind"] == "count":
        return str(sum(v))
    return f"{v[0] * t['factor']:.2f}"


def _snippet(rng: np.random.Generator, t: dict, only: int | None = None) -> str:
    """Web snippets that state the task's figures (``only``: the one figure of that index)."""
    idx = range(len(t["values"])) if only is None else [only]
    src = pick(rng, ("statista.example", "data.gov.example", "en.wikipedia.example", "annual-report.example"))
    parts = []
    for i in idx:
        if t["kind"] == "growth":
            parts.append(f"In {t['terms'][i]}, {t['entity']} {t['series']} stood at {t['values'][i]:,}.")
        elif t["kind"] == "count":
            parts.append(f"{t['values'][i]} papers on {t['topic']} in {t['terms'][i]}.")
        else:
            parts.append(f"{t['entity']} {t['what']}: {t['values'][i]} {t['src']}.")
    return f"[{src}] " + " ".join(parts) + pick(rng, ("", " (source: national statistics)", " ... more results"))


def _query(rng: np.random.Generator, t: dict, about: str | None = None) -> str:
    about = about or (t["org"] if t["kind"] == "count" else t["entity"])
    topic = {"growth": t.get("series"), "count": f"{t.get('topic')} papers", "conversion": t.get("what")}[t["kind"]]
    return pick(rng, (f"{about} {topic}", f"{topic} {about}", f"{about} {topic} {t.get('y1', '')}".strip(),
                      f"\"{about}\" {topic} statistics"))


def _misspell(rng: np.random.Generator, text: str) -> str:
    if len(text) < 4:
        return text + "x"
    i = int(rng.integers(1, len(text) - 2))
    return text[:i] + text[i + 1] + text[i] + text[i + 2:]


class _Transcript:
    """One ReAct transcript: numbered Thought / Action / Observation lines; failures retried."""

    def __init__(self, rng: np.random.Generator, t: dict) -> None:
        self.rng, self.t = rng, t
        self.lines = [f"Question: {t['text']}"]
        self.n = 0
        self.failures = 0

    @property
    def calls(self) -> int:
        return self.n

    def _round(self, thought: str, tool: str, arg: str, obs: str) -> None:
        self.n += 1
        self.lines += [f"Thought {self.n}: {thought}", f"Action {self.n}: {_TOOL[tool]}[{arg}]",
                       f"Observation {self.n}: {obs}"]

    def act(self, tool: str, thought: str, arg: str, obs: str, broken: str | None = None) -> None:
        """The call; first, where it fails (at :data:`_P_FAIL`), a broken version of it,
        answered with a failure, and the retry's thought."""
        if self.rng.random() < _P_FAIL:
            bad = broken if broken is not None else _misspell(self.rng, arg)
            self._round(thought, tool, bad, pick(self.rng, _FAILS[tool]).format(arg=bad))
            self.failures += 1
            thought = pick(self.rng, _RETRY)
        self._round(thought, tool, arg, obs)

    def finish(self, thought: str, answer: str) -> str:
        k = self.n + 1
        self.lines += [f"Thought {k}: {thought}", f"Action {k}: Finish[{answer}]"]
        return "\n".join(self.lines)


_SAY = {
    "search": ("I need the figures; let me search.", "Search the web for {about}.",
               "Let me find the numbers for {about}.",
               "First, what does the web say about {about}?"),
    "lookup": ("Look for '{term}' on this page.", "The page should mention {term}.", "Let me find {term} here."),
    "calculate": ("Now compute it.", "I have the numbers, so calculate.", "Let me work out the answer.",
                  "Plug the figures into the formula."),
    "python": ("I will compute this in Python.", "Let me run the numbers in Python.", "A line of Python does it.",
               "Compute it with code to be safe."),
    "paper": ("The paper database should know this.", "Let me query the paper database.",
              "Check the literature for {about}."),
    "finish": ("So the answer is {a}.", "That gives {a}.", "The answer: {a}.", "I am confident it is {a}.",
               "Done; {a}."),
}


def _say(rng: np.random.Generator, what: str, **kw: str) -> str:
    return pick(rng, _SAY[what]).format(**kw)


def _search(s: _Transcript, about: str | None = None, only: int | None = None, obs: str | None = None) -> None:
    rng, t = s.rng, s.t
    q = _query(rng, t, about)
    s.act("search", _say(rng, "search", about=about or t["entity"]), q, obs or _snippet(rng, t, only))


def _lookup(s: _Transcript, term: str) -> None:
    rng, t = s.rng, s.t
    i = min(t["terms"].index(term), len(t["values"]) - 1) if term in t["terms"] else 0
    found = _snippet(rng, t, only=i).split("] ", 1)[1]
    s.act("lookup", _say(rng, "lookup", term=term), term, f"(Result 1 / {int(rng.integers(1, 4))}) {found}")


def _calculate(s: _Transcript) -> None:
    rng, t = s.rng, s.t
    expr = _expression(rng, t)
    s.act("calculate", _say(rng, "calculate"), expr, _result(t), broken=expr.replace(")", "", 1) + " +")


def _python(s: _Transcript, thought: str | None = None) -> None:
    rng, t = s.rng, s.t
    code = _code(rng, t)
    s.act("python", thought or _say(rng, "python"), code, _result(t), broken=code.split(";", 1)[-1].strip())


def _paper(s: _Transcript, refined: bool = False) -> None:
    rng, t = s.rng, s.t
    about = t["org"] if t["kind"] == "count" else t["entity"]
    topic = {"growth": t.get("series"), "count": t.get("topic"), "conversion": t.get("what")}[t["kind"]]
    if refined:
        q = pick(rng, (f"{about} {topic} {t.get('y1', '')} {t.get('y2', '')}".strip(), f"author:\"{about}\" {topic}",
                       f"{topic} {about} review"))
    else:
        q = pick(rng, (f"{about} {topic}", f"{topic} {about}", f"\"{topic}\" {about}"))
    hits = int(rng.integers(2, 40))
    obs = (f"{hits} papers. Top: \"{word(rng).capitalize()} {pick(rng, ('of', 'in', 'and'))} {topic}\" "
           f"({pick(rng, ('2016', '2019', '2021', '2023'))}). " + _snippet(rng, t).split("] ", 1)[1])
    s.act("paper", _say(rng, "paper", about=about), q, obs, broken=q.replace("\"", "", 1) + " \"")


def _wrong(rng: np.random.Generator, t: dict) -> str:
    """A plausible wrong answer of the task's shape (never the gold)."""
    while (answer := _wrong_once(rng, t)) == t["gold"]:
        pass
    return answer


def _wrong_once(rng: np.random.Generator, t: dict) -> str:
    if t["kind"] == "growth":
        return f"{float(rng.uniform(0.5, 25)):.1f}%"
    if t["kind"] == "count":
        return str(int(t["gold"]) + int(pick(rng, (-12, -5, -1, 1, 3, 9, 20))))
    return _fmt(t["values"][0] * t["factor"] * float(pick(rng, (0.5, 0.9, 1.1, 2.0, 10.0))))


def _episode(rng: np.random.Generator, strategy: str, t: dict, correct: bool) -> tuple[str, int, int]:
    """(transcript, tool calls, failed calls) of one episode."""
    s = _Transcript(rng, t)
    if strategy == "search_compute":
        _search(s)
        _calculate(s)
    elif strategy == "search_lookup":
        page = t["org"] if t["kind"] == "count" else t["entity"]
        s.act("search", _say(rng, "search", about=page), pick(rng, (page, f"{page} (page)", f"{page} overview")),
              f"{page} is a {pick(rng, ('regional', 'national', 'private', 'public'))} "
              f"{pick(rng, ('body', 'entity', 'organisation'))} founded in {int(rng.integers(1890, 2000))}. "
              f"The page has sections on history, figures and reports.")
        k = int(rng.integers(1, 4))  # 1-3 lookups: one term per figure, or a few at once
        terms = list(t["terms"])
        rng.shuffle(terms)
        for term in (terms + [pick(rng, ("figures", "table", "statistics"))] * 2)[:k]:
            _lookup(s, term)
        _calculate(s)
    elif strategy == "paper_first":
        _paper(s)
        if rng.random() < _P_REFINE:  # the optional step: a second, refined query
            _paper(s, refined=True)
        _calculate(s)
    elif strategy == "python_fetch":
        if len(t["values"]) > 1 and rng.random() < 0.5:  # one search per figure
            _search(s, only=0)
            _search(s, only=1)
        else:
            _search(s)
        _python(s)
    elif strategy == "double_check":
        _search(s)
        if rng.random() < _P_CHECK_LOOKUP:  # the optional step: confirm a figure on the page
            _lookup(s, pick(rng, t["terms"]))
        _calculate(s)
        _python(s, pick(rng, ("Let me double-check that another way, in Python.", "Verify with code.",
                              "Cross-check the calculator with Python.", "A second computation, to be sure.")))
    elif strategy == "chain":
        first = pick(rng, (f"who publishes {t['kind']} figures for {t['entity']}",
                           f"{t['entity']} statistics source", f"which body reports {t['entity']} data"))
        s.act("search", pick(rng, ("First find who holds the figures.", "Which source keeps these numbers?",
                                   "I need the right source before the figures.")), first,
              f"Figures for {t['entity']} are published by the {t['holder']} in its yearly bulletin.")
        _search(s, about=t["holder"])
        if rng.random() < _P_CHAIN_LOOKUP:  # the optional step: a lookup within the holder's page
            _lookup(s, pick(rng, t["terms"]))
        _calculate(s)
    answer = t["gold"] if correct else _wrong(rng, t)
    if strategy == "memory":
        thought = pick(rng, ("I remember roughly what this is.", "From what I know, without looking it up:",
                             "I recall the figure.", "No need to search; I think I know this."))
        text = s.finish(thought + " " + pick(rng, ("It is {a}.", "About {a}.", "It should be {a}.")).format(a=answer),
                        answer)
    else:
        text = s.finish(_say(rng, "finish", a=answer), answer)
    return text, s.calls, s.failures


def research(*, n_questions: int = 60, n_samples: int = 4, arms: dict[str, dict[str, float]] | None = None,
             random_state: int | np.random.Generator | None = 0) -> World:
    """Generate the quantitative-research world (ReAct text records).

    Parameters
    ----------
    n_questions, n_samples
        Questions (tasks, a third of each kind in expectation), and episodes per question and
        arm.
    arms
        Arm name -> strategy mixture (default: ``base`` and ``rl``, which differ only in it).
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.

    Returns
    -------
    World
        Records in format ``react`` (a ``trajectory`` string each, with ``question_id``,
        ``arm``, ``sample_id``, ``gold`` and ``correct``) and the planted truth (``strategy``,
        ``n_calls``: tool calls made, failed ones included, ``n_failures``, ``kind``).

    Examples
    --------
    >>> w = research(n_questions=2, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"]))
    ('react', 4, ['base', 'rl'])
    >>> w.runs["n_rounds"].to_list() == w.join_truth()["n_calls"].to_list()
    True
    """
    rng = world_generator(random_state)
    arms = arms or ARMS
    tasks = []
    for i in range(n_questions):
        kind = pick(rng, KINDS)
        tasks.append((f"research-{i:04d}", _task(rng, kind)))

    def episode(rng: np.random.Generator, arm: str, qid: str, sample: int, strategy: str, t: dict
                ) -> tuple[dict, tuple]:
        correct = bool(rng.random() < _SUCCESS[strategy])
        text, n_calls, n_failures = _episode(rng, strategy, t, correct)
        return ({"question_id": qid, "arm": arm, "sample_id": sample, "question": t["text"], "gold": [t["gold"]],
                 "correct": correct, "trajectory": text, "meta": {"kind": t["kind"]}}, (n_calls, n_failures, t["kind"]))

    return planted_world("research", "react", rng, tasks, arms, n_samples, episode, _SUCCESS,
                         truth_schema={"n_calls": pl.Int64, "n_failures": pl.Int64, "kind": pl.String})
