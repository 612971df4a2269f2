"""A cheap stand-in reasoner for the tests that call every public statistic (``mx.swap``
needs an endpoint; these tests check the result protocol and the seed rule, not a model)."""
from __future__ import annotations


class StandInReasoner:
    """Answers with the first observation's first word, or nothing."""

    def __init__(self, model: str) -> None:
        self.model = model

    def complete(self, prompts, **_options):
        return [[(p.split("Observation: ", 1)[1].split() or [""])[0] if "Observation: " in p else ""]
                for p in prompts]


def reasoners(*arms: str) -> dict[str, StandInReasoner]:
    """One stand-in per arm."""
    return {arm: StandInReasoner(arm) for arm in arms}
