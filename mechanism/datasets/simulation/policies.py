"""Policies: mixtures over named strategies, plus the skills that act on what was retrieved.

Every strategy is a distinct pattern of calls (what is searched, where each query's words come
from, repeats or revisions, how many lookups), so the move grammar
(:mod:`mechanism.analysis.segmentation`) can tell them apart; wording varies inside every one of them
(several phrasings per query, drawn with a favourite first), and never tells them apart.

========================  =====================================================================
``no_search``             answer at once from a parametric guess (0 rounds).
``whole_question``        one search with the whole question, as asked or reworded (1 round).
``repeat``                one whole-question search issued again verbatim (2-4 rounds).
``reformulate_loop``      the whole question searched, then searched again reworded each time:
                          every content word of the question kept, never a word from a result
                          (2-3 rounds).
``bridge``                search entity A with its link word (part of the question), read the
                          linked entity B off the result, search B's attribute (a bridge: the
                          words come from the observation) (2 rounds). Bridge questions; on a
                          comparison question it runs as ``parallel_compare``.
``parallel_compare``      look up each compared entity with the same attribute phrase, both from
                          the question, the second a revision of the first (2 rounds).
                          Comparison questions; on a bridge question it runs as ``bridge``.
``verify``                ``bridge``, then one more search that revises the last lookup with the
                          candidate answer read off its result, to check it (3 rounds). On a
                          comparison question it runs as ``parallel_verify``.
``parallel_verify``       ``parallel_compare``, then a check that returns to the first lookup,
                          verbatim, to read its value again (3 rounds); on a bridge question it
                          runs as ``verify``.
========================  =====================================================================

The truth table records both the planned strategy and the one executed after the remapping.

Success is planted in closed form (:func:`success_probability`, which the episodes draw from):
an episode whose retrieved paragraphs hold the evidence answers correctly with probability
``Policy.integration * factor * question.ease``, else it guesses (right with the question's
``familiarity``). ``factor`` is :data:`STRATEGY_INTEGRATION` (the policy's), times
:data:`HARD_INTEGRATION` on the hard bridge questions: their linked page is easy to misread,
and only a strategy that checks its candidate answers them. Which strategies hold evidence is
fixed by their plan (the world guarantees that every lookup a plan issues retrieves its page):
``bridge`` and ``verify`` on bridge questions, ``parallel_compare`` and ``verify`` on
comparisons, from their second round on; the whole-question strategies only on the bridge
questions whose own words retrieve the answer's page (``Question.direct``).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from mechanism.core.errors import MechanismError

QUERY_STYLES = ("natural", "terse")
STRATEGIES = ("no_search", "whole_question", "repeat", "reformulate_loop", "bridge", "parallel_compare", "verify",
              "parallel_verify")

#: How well each strategy uses retrieved evidence, relative to the policy's ``integration``
#: skill (the simulator's known truth for integration analyses). Whole-question strategies
#: never hold the evidence in this world (one paragraph per search, and a bridge answer is
#: not on the page the question names), so only the lookup strategies' factors act.
STRATEGY_INTEGRATION = {"no_search": 1.0, "whole_question": 0.7, "repeat": 0.5, "reformulate_loop": 0.4,
                        "bridge": 1.0, "parallel_compare": 0.95, "verify": 1.0, "parallel_verify": 1.0}
#: What is left of a strategy's factor on hard bridge questions: a strategy that does not check
#: its candidate misreads the linked page (the study's "subset of strategies whose downstream reasoning yields a
#: correct answer").
HARD_INTEGRATION = {s: (1.0 if s == "verify" else 0.0) for s in STRATEGIES}

# planned strategy -> executed strategy, per question category (identity where absent)
REMAP = {
    "comparison": {"bridge": "parallel_compare", "verify": "parallel_verify"},
    "bridge": {"parallel_compare": "bridge", "parallel_verify": "verify"},
}
# the round from which a strategy's plan holds the evidence, per category (absent: never)
EVIDENCE_FROM = {
    "bridge": {"bridge": 2, "verify": 2},
    "comparison": {"parallel_compare": 2, "parallel_verify": 2},
}
# rounds after which a strategy's check has happened (before it, it integrates as the plan
# it extends)
CHECK_AT = {"verify": 3, "parallel_verify": 3}


@dataclass(frozen=True)
class Policy:
    """One arm's behaviour.

    Parameters
    ----------
    name
        The arm name written to the trajectory files.
    mixture
        Strategy -> probability (normalised; strategies left out have probability 0).
    integration
        Probability that an episode whose retrieved paragraphs hold the answer uses them
        correctly, before the strategy's factor and the question's ``ease``; otherwise it
        guesses (a wrong value it saw, or a plausible one).
    strategy_integration
        Strategy -> factor in [0, 1] on ``integration`` on ordinary questions (default
        :data:`STRATEGY_INTEGRATION`; strategies left out keep theirs).
    wording
        Share of the phrasing templates (queries and thoughts) the policy uses, in (0, 1];
        a low value gives repetitive, low-diversity wording (SFT-like).
    loop_rounds
        ``repeat`` and ``reformulate_loop``: inclusive range of the number of searches
        (``reformulate_loop`` is capped at the question's distinct rewordings).
    query_style
        ``"natural"`` (questions and phrases, the base model's style) or ``"terse"``
        (``entity: attribute`` lookups, a style the base model never uses: an SFT teacher's
        habits, which put the arm's queries outside the base distribution).
    """

    name: str
    mixture: Mapping[str, float]
    integration: float = 0.85
    wording: float = 1.0
    loop_rounds: tuple[int, int] = (2, 4)
    query_style: str = "natural"
    strategy_integration: Mapping[str, float] | None = None
    probabilities: tuple[float, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.mixture) - set(STRATEGIES))
        if unknown:
            raise MechanismError(f"policy `{self.name}`: unknown strategy in `mixture`: {unknown[0]!r} "
                                 f"(known: {', '.join(STRATEGIES)})")
        weights = [float(self.mixture.get(s, 0.0)) for s in STRATEGIES]
        if any(w < 0 for w in weights) or sum(weights) <= 0:
            raise MechanismError(f"policy `{self.name}`: `mixture` needs non-negative weights with a positive sum")
        if not 0.0 <= self.integration <= 1.0:
            raise MechanismError(f"policy `{self.name}`: `integration` must lie in [0, 1], got {self.integration}")
        if not 0.0 < self.wording <= 1.0:
            raise MechanismError(f"policy `{self.name}`: `wording` must lie in (0, 1], got {self.wording}")
        if self.query_style not in QUERY_STYLES:
            raise MechanismError(f"policy `{self.name}`: `query_style` must be one of {QUERY_STYLES}, "
                                 f"got {self.query_style!r}")
        factors = dict(self.strategy_integration or {})
        unknown = sorted(set(factors) - set(STRATEGIES))
        if unknown:
            raise MechanismError(f"policy `{self.name}`: unknown strategy in `strategy_integration`: "
                                 f"{unknown[0]!r} (known: {', '.join(STRATEGIES)})")
        if any(not 0.0 <= float(v) <= 1.0 for v in factors.values()):
            raise MechanismError(f"policy `{self.name}`: `strategy_integration` factors must lie in [0, 1]")
        lo, hi = self.loop_rounds
        if not 2 <= lo <= hi:
            raise MechanismError(f"policy `{self.name}`: `loop_rounds` must be (lo, hi) with 2 <= lo <= hi")
        total = sum(weights)
        object.__setattr__(self, "probabilities", tuple(w / total for w in weights))

    def integration_factors(self) -> dict[str, float]:
        """Each strategy's factor on ``integration``: the defaults with this policy's overrides."""
        return {**STRATEGY_INTEGRATION, **(self.strategy_integration or {})}

    def integration_of(self, strategy: str, *, hard: bool = False) -> float:
        """Probability that ``strategy`` uses evidence it holds (before the question's ``ease``)."""
        factor = float(self.integration_factors()[strategy]) * (HARD_INTEGRATION[strategy] if hard else 1.0)
        return self.integration * factor

    def shares(self, category: str | None = None) -> dict[str, float]:
        """Strategy shares as planned (``category=None``) or as executed on that category."""
        out = dict.fromkeys(STRATEGIES, 0.0)
        remap = REMAP.get(category, {}) if category is not None else {}
        for s, p in zip(STRATEGIES, self.probabilities):
            out[remap.get(s, s)] += p
        return out

    def to_dict(self) -> dict:
        """JSON-ready parameters."""
        d = asdict(self)
        d.pop("probabilities", None)
        d["mixture"] = dict(zip(STRATEGIES, self.probabilities))
        d["loop_rounds"] = list(self.loop_rounds)
        factors = self.integration_factors()
        d["strategy_integration"] = {s: float(factors[s]) for s in STRATEGIES}
        return d


WHOLE = ("whole_question", "repeat", "reformulate_loop")


def plan_evidence(category: str, strategy: str, rounds: int, *, direct: bool = False) -> bool:
    """Whether ``strategy``'s plan holds the evidence after ``rounds`` searches (fixed by the plan;
    ``direct``: the question's own words retrieve the answer's page, so the whole-question
    strategies hold it from their first search)."""
    if direct and strategy in WHOLE:
        return rounds >= 1
    start = EVIDENCE_FROM.get(category, {}).get(strategy)
    return start is not None and rounds >= start


def success_probability(policy: Policy, strategy: str, *, category: str, hard: bool, ease: float,
                        familiarity: float, rounds: int, direct: bool = False) -> tuple[float, float]:
    """(P(correct), P(correct from evidence)) of one episode of ``strategy`` that made ``rounds``
    searches: the closed form the episodes draw from and the planted expectations use.

    Examples
    --------
    >>> p = Policy("p", {"verify": 1.0}, integration=0.8)
    >>> success_probability(p, "verify", category="bridge", hard=True, ease=0.5, familiarity=0.0, rounds=3)
    (0.4, 0.4)
    >>> success_probability(p, "verify", category="bridge", hard=True, ease=0.5, familiarity=0.0, rounds=2)
    (0.0, 0.0)
    """
    if not plan_evidence(category, strategy, rounds, direct=direct):
        return familiarity, 0.0
    # before its check, a strategy integrates as the plan it extends
    acting = strategy if rounds >= CHECK_AT.get(strategy, 0) else REMAP.get(category, {}).get("bridge", "bridge")
    # a whole-question search that finds the answer's page integrates it as any lookup would
    p_int = policy.integration_of(acting, hard=hard) * ease
    return p_int + (1.0 - p_int) * familiarity, p_int


def default_policies() -> dict[str, Policy]:
    """The built-in arms.

    - ``base``: a broad mixture over every strategy; it rarely checks its candidate
      (``verify`` 3 %), the only strategy that answers hard bridge questions.
    - ``rl``: the same strategies, the same integration skill and wording, reweighted toward
      the lookups that hold the evidence and above all toward ``verify``: pure reweighting,
      and a move toward the strategies whose integration succeeds.
    - ``sft``: collapsed onto whole-question search and the bridge chain, with one phrasing
      per query in a style of its own (``query_style="terse"``); it never checks.
    """
    return {
        "base": Policy("base", {"no_search": 0.13, "whole_question": 0.19, "repeat": 0.12,
                                "reformulate_loop": 0.17, "bridge": 0.18, "parallel_compare": 0.18,
                                "verify": 0.03}),
        "rl": Policy("rl", {"no_search": 0.01, "whole_question": 0.05, "repeat": 0.04,
                            "reformulate_loop": 0.10, "bridge": 0.20, "parallel_compare": 0.20,
                            "verify": 0.40}),
        "sft": Policy("sft", {"whole_question": 0.6, "bridge": 0.4}, wording=0.2, query_style="terse"),
    }
