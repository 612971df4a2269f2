"""Policies: mixtures over named strategies, plus the skills that act on what was retrieved.

Strategies (``STRATEGIES``) and where they apply:

========================  =====================================================================
``no_search``             answer at once from a parametric guess (0 rounds); any question.
``whole_question``        search the question text; with probability ``reformulate`` search it
                          once more reworded with synonyms (1-2 rounds); any question.
``bridge``                search entity A for its link, read the linked entity B from the
                          observation, search B's attribute (2 rounds). Bridge questions; on a
                          comparison question it runs as ``parallel_compare``.
``parallel_compare``      look up each of the two compared entities (2 rounds). Comparison
                          questions; on a bridge question it runs as ``bridge`` (the only lookup
                          chain a bridge question has).
``verify``                search the question, take a candidate from the result, search again
                          with the candidate (or the entity it names) to check it; a third
                          search when the check did not confirm (2-3 rounds); any question.
``reformulate_loop``      2-4 searches circling the question (as asked, plain, as keywords;
                          often verbatim repeats), never adding words from results or
                          synonyms; any question.
========================  =====================================================================

The truth table records both the planned strategy and the one executed after that remapping.

Strategies differ in how often they retrieve the answer (that follows from what they search
for) and, planted here, in how often they use it: an episode whose retrieved paragraphs hold
the answer answers correctly with probability
``Policy.integration * STRATEGY_INTEGRATION[strategy] * question.ease``. A verification step
confirms the candidate, a bridge chain reads the answer off the page it asked for, while a
loop that keeps re-asking the question mixes up what its many results say.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from mechanism.errors import MechanismError

QUERY_STYLES = ("natural", "terse")
STRATEGIES = ("no_search", "whole_question", "bridge", "parallel_compare", "verify", "reformulate_loop")

#: How well each strategy uses retrieved evidence, relative to the policy's ``integration``
#: skill (the simulator's known truth for integration analyses; ``no_search`` never has evidence).
STRATEGY_INTEGRATION = {"no_search": 1.0, "whole_question": 0.7, "bridge": 1.0, "parallel_compare": 0.95,
                        "verify": 1.0, "reformulate_loop": 0.4}

# planned strategy -> executed strategy, per question category (identity where absent)
REMAP = {
    "comparison": {"bridge": "parallel_compare"},
    "bridge": {"parallel_compare": "bridge"},
}


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
        correctly, before the strategy's factor; otherwise it answers with a wrong value it
        saw (or a plausible wrong one).
    strategy_integration
        Strategy -> factor in [0, 1] on ``integration`` (default :data:`STRATEGY_INTEGRATION`;
        strategies left out keep theirs).
    wording
        Share of the phrasing templates (queries and thoughts) the policy uses, in (0, 1];
        a low value gives repetitive, low-diversity wording (SFT-like).
    reformulate
        ``whole_question``: probability of a second, reworded search.
    loop_rounds
        ``reformulate_loop``: inclusive range of the number of searches.
    recheck
        ``verify``: probability of a third search when the check did not confirm.
    query_style
        ``"natural"`` (questions and phrases, the base model's style) or ``"terse"``
        (``entity: attribute`` lookups, a style the base model never uses: an SFT teacher's
        habits, which put the arm's queries outside the base distribution).
    """

    name: str
    mixture: Mapping[str, float]
    integration: float = 0.85
    wording: float = 1.0
    reformulate: float = 0.5
    loop_rounds: tuple[int, int] = (2, 4)
    recheck: float = 0.6
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
        for attr in ("integration", "reformulate", "recheck"):
            value = getattr(self, attr)
            if not 0.0 <= value <= 1.0:
                raise MechanismError(f"policy `{self.name}`: `{attr}` must lie in [0, 1], got {value}")
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
        if not 1 <= lo <= hi:
            raise MechanismError(f"policy `{self.name}`: `loop_rounds` must be (lo, hi) with 1 <= lo <= hi")
        total = sum(weights)
        object.__setattr__(self, "probabilities", tuple(w / total for w in weights))

    def integration_factors(self) -> dict[str, float]:
        """Each strategy's factor on ``integration``: the defaults with this policy's overrides."""
        return {**STRATEGY_INTEGRATION, **(self.strategy_integration or {})}

    def integration_of(self, strategy: str) -> float:
        """Probability that ``strategy`` uses evidence it holds (before the question's ``ease``)."""
        return self.integration * float(self.integration_factors()[strategy])

    def shares(self, category: str | None = None) -> dict[str, float]:
        """Strategy shares as planned (``category=None``) or as executed on that category."""
        out = {s: 0.0 for s in STRATEGIES}
        remap = REMAP.get(category, {}) if category is not None else {}
        for s, p in zip(STRATEGIES, self.probabilities):
            out[remap.get(s, s)] += p
        return out

    def to_dict(self) -> dict:
        """JSON-ready parameters."""
        d = asdict(self)
        d.pop("probabilities", None)
        d["mixture"] = {s: p for s, p in zip(STRATEGIES, self.probabilities)}
        d["loop_rounds"] = list(self.loop_rounds)
        factors = self.integration_factors()
        d["strategy_integration"] = {s: float(factors[s]) for s in STRATEGIES}
        return d


def default_policies() -> dict[str, Policy]:
    """The built-in arms.

    - ``base``: a broad mixture over every strategy.
    - ``rl``: the same strategies, reweighted toward those that succeed in this world
      (bridge, parallel lookups, verification) and away from guessing and rephrasing loops;
      the same integration skill per strategy, so the default difference is pure
      reweighting, and a move toward the strategies that use what they retrieve
      (:data:`STRATEGY_INTEGRATION`).
    - ``sft``: collapsed onto whole-question search and bridge decomposition, with
      low-diversity wording in a query style of its own (``query_style="terse"``).
    """
    return {
        "base": Policy("base", {"no_search": 0.12, "whole_question": 0.24, "bridge": 0.16,
                                "parallel_compare": 0.12, "verify": 0.12, "reformulate_loop": 0.24}),
        "rl": Policy("rl", {"no_search": 0.03, "whole_question": 0.12, "bridge": 0.28,
                            "parallel_compare": 0.22, "verify": 0.25, "reformulate_loop": 0.10}),
        "sft": Policy("sft", {"whole_question": 0.7, "bridge": 0.3}, wording=0.2, reformulate=0.3,
                      query_style="terse"),
    }
