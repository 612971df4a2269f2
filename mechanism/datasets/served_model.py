"""The served simulator's models in closed form: its reasoner, the reasoner's planted swap-test
truth, and each arm's planted language model (what :func:`mechanism.datasets.serving.serve`
answers with).

The reasoner
------------
A prompt holds a line ``Question: <text>`` (its first occurrence names the question, looked up
among the simulation's questions by its text); everything else in the prompt is the *context*.
Let ``a`` and ``b`` be how many times the texts of the question's two gold paragraphs occur in
the context (``b``: the answer's page on a bridge question, B's). The context holds the
*evidence* by the simulator's own rule: on a bridge question ``b >= 1`` and (``a >= 1`` or B's
page names entity A); on a comparison ``a >= 1`` and ``b >= 1``. The context *shows the check
step* when it reads an answer page twice (a bridge question: ``b >= 2``, as ``verify``'s check
search retrieves B's page again; a comparison: ``max(a, b) >= 2``, as ``parallel_verify``
returns to its first lookup). Arm ``M`` (its :class:`~mechanism.datasets.simulation.Policy`)
then answers correctly with probability

    p_M(q, context) = f_q                                         without the evidence
    p_M(q, context) = i + (1 - i) * f_q,   i = M.integration_of(s, hard=q.hard) * q.ease

with ``f_q`` the question's familiarity and ``s`` the strategy the context shows: ``verify``
(``parallel_verify`` on a comparison) when it shows the check step, else ``bridge``
(``parallel_compare``). So a hard question counts only when the context shows the check step
(:data:`~mechanism.datasets.simulation.policies.HARD_INTEGRATION`), exactly as the simulator's
episodes; the one difference from an episode's own ``p_correct`` is that evidence found by the
whole-question strategies is integrated as a lookup's. The answer depends on the arm's
``integration`` and strategy factors only, never on its mixture: an arm's retrieval lives in
its episodes, its reasoning in this formula.

Otherwise the answer is a wrong one from the question's wrong pool (uniformly).
"""
from __future__ import annotations

import math
import re
import weakref
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import polars as pl

from mechanism.core.errors import InputError
from mechanism.datasets.simulation.policies import Policy, default_policies
from mechanism.datasets.simulation.run import Simulation
from mechanism.datasets.simulation.world import Question

#: the retrieval source of the "no retrieval" control: the question alone
NO_RETRIEVAL = "none"
#: additive smoothing of the planted unigram models
ALPHA = 1.0
TOKEN = re.compile(r"\s*\S+")
_QUESTION_LINE = re.compile(r"^[ \t]*Question:[ \t]*(.*?)[ \t]*$", re.MULTILINE)


# -- the reasoner ----------------------------------------------------------------------------
def gold_counts(q: Question, texts: Iterable[str]) -> tuple[int, int]:
    """How many times each of ``q``'s two gold paragraphs' texts occurs in ``texts``.

    Parameters
    ----------
    q
        The question (its ``gold_docs`` name the two paragraphs, in order).
    texts
        The context's pieces: a prompt's context, or an episode's observations.

    Returns
    -------
    tuple of int
        ``(a, b)``: occurrences of the first and the second gold paragraph's text.
    """
    a_text, b_text = (q.paragraphs[i].text for i in q.gold_docs)
    a = b = 0
    for t in texts:
        if t:
            a += t.count(a_text)
            b += t.count(b_text)
    return a, b


def reasoner_probability(policy: Policy, q: Question, counts: tuple[int, int]) -> float:
    """The served reasoner's probability of a correct answer (``p_M`` of the module docstring).

    Parameters
    ----------
    policy
        The reasoning arm's policy (only its integration skill and strategy factors act).
    q
        The question.
    counts
        The context's gold paragraph counts (:func:`gold_counts`).

    Returns
    -------
    float
        ``p_M(q, context)``.
    """
    a, b = counts
    bridge = q.category == "bridge"
    if bridge:
        evidence = b >= 1 and (a >= 1 or q.entities[0] in q.paragraphs[q.gold_docs[1]].text)
        checked = b >= 2
    else:
        evidence = a >= 1 and b >= 1
        checked = max(a, b) >= 2
    if not evidence:
        return float(q.familiarity)
    if checked:
        strategy = "verify" if bridge else "parallel_verify"
    else:
        strategy = "bridge" if bridge else "parallel_compare"
    p_int = policy.integration_of(strategy, hard=q.hard) * q.ease
    return float(p_int + (1.0 - p_int) * q.familiarity)


def split_prompt(prompt: str) -> tuple[str | None, str]:
    """(the question's text from the first ``Question:`` line, or None; the rest: the context).

    >>> split_prompt("Question: Who?\\nObservation: x\\nAnswer:")
    ('Who?', '\\nObservation: x\\nAnswer:')
    """
    m = _QUESTION_LINE.search(prompt)
    if m is None:
        return None, prompt
    return m.group(1), prompt[:m.start()] + prompt[m.end():]


# -- its planted truth -----------------------------------------------------------------------
def _world(sim: Simulation) -> dict[str, Question]:
    if not sim.world:
        raise InputError("`sim` has no world (make it with mechanism.datasets.simulation.simulate)", field="sim")
    return {q.question_id: q for q in sim.world}


def planted_swap(sim: Simulation, retrieval_from: Sequence[str], reasoners: Sequence[str], *,
                 runs: pl.DataFrame | None = None) -> pl.DataFrame:
    """The served reasoner's exact expected accuracy per (retrieval source, reasoner).

    Question-weighted: the mean over questions of the mean over the retrieval arm's episodes on
    that question of ``p_M(q, context of the episode's steps)`` (the module docstring), the
    context being the episode's observations. Computed from the steps, never from a prompt.

    Parameters
    ----------
    sim
        The simulation the server serves.
    retrieval_from
        Arms whose episodes' retrieval is handed over; ``"none"`` is the control (no context).
    reasoners
        Arms answering (each needs a policy in ``sim.policies``).
    runs
        The episodes to hand over (default ``sim.runs``; e.g. a subset, or steps cut short).

    Returns
    -------
    polars.DataFrame
        ``retrieval_from, reasoner, accuracy, n_questions, n_episodes``.
    """
    world = _world(sim)
    runs = sim.runs if runs is None else runs
    unknown = [m for m in reasoners if m not in sim.policies]
    if unknown:
        raise InputError(f"unknown reasoner `{unknown[0]}` (arms: {', '.join(sim.policies)})", field="reasoners")
    rows = []
    for source in retrieval_from:
        if source == NO_RETRIEVAL:
            per_q = {qid: [(0, 0)] for qid in world}
        else:
            sub = runs.filter(pl.col("arm") == source).select("question_id", "steps")
            if sub.height == 0:
                raise InputError(f"no episodes of arm `{source}` in `runs`", field="retrieval_from")
            per_q: dict[str, list[tuple[int, int]]] = {}
            for qid, steps in sub.iter_rows():
                if qid not in world:
                    raise InputError(f"question `{qid}` of arm `{source}` is not in the simulation's world",
                                     field="runs")
                per_q.setdefault(qid, []).append(gold_counts(world[qid], (s["observation"] for s in steps or ())))
        for m in reasoners:
            policy = sim.policies[m]
            means = [sum(reasoner_probability(policy, world[qid], c) for c in cs) / len(cs)
                     for qid, cs in per_q.items()]
            rows.append({"retrieval_from": source, "reasoner": m, "accuracy": sum(means) / len(means),
                         "n_questions": len(per_q), "n_episodes": sum(len(cs) for cs in per_q.values())})
    return pl.DataFrame(rows, schema={"retrieval_from": pl.String, "reasoner": pl.String, "accuracy": pl.Float64,
                                      "n_questions": pl.Int64, "n_episodes": pl.Int64})


def swap_split(table: pl.DataFrame, base: str, treated: str) -> dict[str, float]:
    """The split a swap table implies for a (base, treated) pair.

    With ``acc(R, M)`` the accuracy of reasoner ``M`` on retrieval from ``R``:
    ``total = acc(T,T) - acc(B,B)``, ``retrieval = acc(T,B) - acc(B,B)``,
    ``reasoning = acc(B,T) - acc(B,B)``, ``interaction = acc(T,T) - acc(T,B) - acc(B,T) + acc(B,B)``
    (they add up to ``total``), and each part's share of ``total`` (NaN when it is 0).

    Parameters
    ----------
    table
        A swap table with ``retrieval_from, reasoner, accuracy`` (e.g. :func:`planted_swap`'s).
    base, treated
        The two arms.

    Returns
    -------
    dict
        ``total, retrieval, reasoning, interaction`` and ``<part>_share`` for the three parts.

    Examples
    --------
    >>> t = pl.DataFrame({"retrieval_from": ["b", "b", "t", "t"], "reasoner": ["b", "t", "b", "t"],
    ...                   "accuracy": [0.2, 0.3, 0.4, 0.6]})
    >>> {k: round(v, 3) for k, v in swap_split(t, "b", "t").items()}["interaction"]
    0.1
    """
    acc = {(r, m): a for r, m, a in table.select("retrieval_from", "reasoner", "accuracy").iter_rows()}
    missing = [k for k in ((base, base), (base, treated), (treated, base), (treated, treated)) if k not in acc]
    if missing:
        raise InputError(f"the table lacks retrieval `{missing[0][0]}` x reasoner `{missing[0][1]}`", field="table")
    bb, bt, tb, tt = acc[base, base], acc[base, treated], acc[treated, base], acc[treated, treated]
    out = {"total": tt - bb, "retrieval": tb - bb, "reasoning": bt - bb, "interaction": tt - tb - bt + bb}
    for part in ("retrieval", "reasoning", "interaction"):
        out[f"{part}_share"] = out[part] / out["total"] if out["total"] != 0 else math.nan
    return out


def swap_policies(kind: Literal["retrieval_only", "reasoning_only", "both"]) -> dict[str, Policy]:
    """Arms ``base`` and ``rl`` of a planted world where one part of the gain is 0.

    ``base`` is the built-in base mixture with integration 0.6 (a base model that often misreads
    what it retrieved). ``retrieval_only``: ``rl`` has the built-in RL mixture and base's
    integration (the reasoning part is exactly 0). ``reasoning_only``: ``rl`` has base's mixture
    and integration 0.95 (the retrieval part is 0 in expectation: both arms draw their episodes
    from one distribution). ``both``: the RL mixture and integration 0.95.

    Parameters
    ----------
    kind
        Which part of the gain the world plants (``"both"``: both).

    Returns
    -------
    dict of str to Policy
        ``{"base": ..., "rl": ...}``, for ``simulate(policies=..., arms=("base", "rl"))``.
    """
    defaults = default_policies()
    base = Policy("base", defaults["base"].mixture, integration=0.6)
    if kind == "retrieval_only":
        rl = Policy("rl", defaults["rl"].mixture, integration=base.integration)
    elif kind == "reasoning_only":
        rl = Policy("rl", base.mixture, integration=0.95)
    elif kind == "both":
        rl = Policy("rl", defaults["rl"].mixture, integration=0.95)
    else:
        raise InputError(f"`kind` must be 'retrieval_only', 'reasoning_only' or 'both', got {kind!r}", field="kind")
    return {"base": base, "rl": rl}


# -- the planted language models -------------------------------------------------------------
class UnigramModel:
    """A smoothed unigram model: ``log p(t) = log((count(t) + alpha) / (total + alpha * (V + 1)))``
    over tokens ``re.finditer(r"\\s*\\S+", text)`` (leading white space kept), one extra class
    for every unseen token; token ids are vocabulary ranks (most frequent first), ``V`` unseen."""

    def __init__(self, texts: Iterable[str], alpha: float = ALPHA) -> None:
        counts: Counter[str] = Counter()
        for text in texts:
            if text:
                counts.update(m.group() for m in TOKEN.finditer(text))
        self.alpha = float(alpha)
        self.counts = counts
        self.total = sum(counts.values())
        self.vocab = sorted(counts, key=lambda t: (-counts[t], t))
        self.ids = {t: i for i, t in enumerate(self.vocab)}
        self._log_norm = math.log(self.total + self.alpha * (len(self.vocab) + 1))

    def logprob(self, token: str) -> float:
        """Natural-log probability of one token (unseen tokens share the extra class)."""
        return math.log(self.counts.get(token, 0) + self.alpha) - self._log_norm

    def token_id(self, token: str) -> int:
        return self.ids.get(token, len(self.vocab))

    def score(self, text: str, *, first: bool = True) -> tuple[tuple[str, ...], tuple[int, ...],
                                                                tuple[float | None, ...]]:
        """(tokens, offsets, log-probabilities) of ``text``; the first token's is None when
        ``first`` (it has no context)."""
        matches = list(TOKEN.finditer(text))
        tokens = tuple(m.group() for m in matches)
        lps: list[float | None] = [self.logprob(t) for t in tokens]
        if first and lps:
            lps[0] = None
        return tokens, tuple(m.start() for m in matches), tuple(lps)


def arm_texts(runs: pl.DataFrame, arm: str) -> Iterable[str]:
    """An arm's trajectory text: each episode's thoughts and queries, then its answer."""
    for steps, answer in runs.filter(pl.col("arm") == arm).select("steps", "answer").iter_rows():
        for s in steps or ():
            yield s["thought"] or ""
            yield s["query"] or ""
        yield answer or ""


_MODELS: dict[int, tuple[weakref.ref, dict[str, UnigramModel]]] = {}


def language_model(sim: Simulation, model: str) -> UnigramModel:
    """The arm's planted unigram model over its own trajectory text (built once per simulation)."""
    if model not in sim.policies:
        raise InputError(f"unknown model `{model}` (arms: {', '.join(sim.policies)})", field="model")
    entry = _MODELS.get(id(sim))
    if entry is None or entry[0]() is not sim:
        entry = (weakref.ref(sim), {})
        _MODELS[id(sim)] = entry
    models = entry[1]
    if model not in models:
        models[model] = UnigramModel(arm_texts(sim.runs, model))
    return models[model]


def planted_logprobs(sim: Simulation, model: str, text: str) -> tuple[tuple[str, ...], tuple[int, ...],
                                                                        tuple[float | None, ...]]:
    """Tokens, character offsets and log-probabilities of ``text`` under arm ``model``'s planted
    language model (:class:`UnigramModel` over the arm's thoughts, queries and answers in
    ``sim.runs``); the first token's log-probability is None.

    Parameters
    ----------
    sim
        The served simulation.
    model
        The arm whose model scores the text.
    text
        The text to score.

    Returns
    -------
    tuple
        ``(tokens, offsets, logprobs)``: the tokens (each with its leading white space, so they
        join to ``text`` less any trailing white space), their character offsets in ``text`` and
        their natural-log probabilities (None for the first).

    Examples
    --------
    >>> from mechanism.datasets.simulation import simulate
    >>> sim = simulate(n_questions=2, n_samples=2, arms=("base",), progress=False)
    >>> tokens, offsets, lps = planted_logprobs(sim, "base", "Let me  search")
    >>> tokens, offsets, lps[0]
    (('Let', ' me', '  search'), (0, 3, 6), None)
    """
    return language_model(sim, model).score(text)


def policies_for(world: Literal["default", "retrieval_only", "reasoning_only", "both"]) -> Mapping[str, Policy] | None:
    """The policies of a named served world (``"default"``: the built-in ones, None)."""
    return None if world == "default" else swap_policies(world)  # type: ignore[arg-type]
