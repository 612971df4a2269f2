"""The planted expected values of a simulation, computed exactly from its policies and world.

What the analyses of :mod:`mechanism` should recover from the trajectories, each in closed form
(no sampling): a question's per-episode success probability under an arm is
``sum_s share(s) * sum_r P(rounds = r | s) * success_probability(s, r)``
(:func:`mechanism.datasets.simulation.policies.success_probability`), so

- ``pass_at_kt``: expected PASS@(k,T), ``mean_q 1 - (1 - p_q(T))^k`` with ``p_q(T)`` counting
  the episodes correct within T rounds (the truncation reading every T below ``t_cap`` gets),
  per arm and category (``"all"`` pools the categories, questions weighing equally);
- ``boundary``: per pair of arms, the expected number of problems solved at least once in
  ``n_samples`` by the treated arm and not the base (``gained``) and the reverse (``lost``);
- ``split``: per pair, the Kitagawa split of the accuracy change at ``t_cap`` on question x
  strategy strata, questions weighing equally (the toolkit's design rule): ``composition``
  ``= mean_q sum_s (p_t - p_b)(r_t + r_b) / 2`` and ``within`` ``= mean_q sum_s (r_t - r_b)(p_t + p_b) / 2``,
  with ``p`` the executed strategy shares and ``r`` the strategies' success on the question;
  ``within`` is exactly 0 when the arms differ only in their mixture (pure reweighting).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mechanism.datasets.simulation.policies import STRATEGIES, Policy, success_probability
from mechanism.datasets.simulation.world import Question

CATEGORIES = ("bridge", "comparison")
DEFAULT_T = (0, 1, 2, 3, 5)


def rounds_distribution(policy: Policy, strategy: str, t_cap: int) -> dict[int, float]:
    """P(rounds made) of one episode of an executed ``strategy`` under ``t_cap``."""
    lo, hi = policy.loop_rounds
    n_forms = 1 if policy.query_style == "terse" else 5  # agent.whole_forms: the rewordings a loop can use
    planned: dict[int, float] = {
        "no_search": {0: 1.0}, "whole_question": {1: 1.0}, "bridge": {2: 1.0}, "parallel_compare": {2: 1.0},
        "verify": {3: 1.0}, "parallel_verify": {3: 1.0}}.get(strategy, {})
    if strategy in ("repeat", "reformulate_loop"):
        cap = n_forms if strategy == "reformulate_loop" else hi
        for r in range(lo, hi + 1):
            planned[min(r, cap)] = planned.get(min(r, cap), 0.0) + 1.0 / (hi - lo + 1)
    out: dict[int, float] = {}
    for r, p in planned.items():
        out[min(r, t_cap)] = out.get(min(r, t_cap), 0.0) + p
    return out


def success_by_strategy(q: Question, policy: Policy, t_cap: int, t: int) -> np.ndarray:
    """Per executed strategy (in :data:`STRATEGIES` order): P(correct within ``t`` rounds)."""
    out = np.zeros(len(STRATEGIES))
    for i, s in enumerate(STRATEGIES):
        for r, pr in rounds_distribution(policy, s, t_cap).items():
            if r <= t:
                out[i] += pr * success_probability(policy, s, category=q.category, hard=q.hard, ease=q.ease,
                                                   familiarity=q.familiarity, rounds=r,
                                                   direct=q.direct)[0]
    return out


def _shares(policy: Policy, category: str) -> np.ndarray:
    sh = policy.shares(category)
    return np.array([sh[s] for s in STRATEGIES])


def planted_values(world: Sequence[Question], policies: Mapping[str, Policy], *, n_samples: int, t_cap: int,
                   t: Sequence[int] = DEFAULT_T, base: str = "base") -> dict[str, Any]:
    """The planted expected values (JSON-ready); see the module docstring.

    Examples
    --------
    >>> import numpy as np
    >>> from mechanism.datasets.simulation import default_policies, make_world
    >>> world = make_world(4, np.random.default_rng(0))
    >>> v = planted_values(world, default_policies(), n_samples=8, t_cap=5)
    >>> v["split"]["rl"]["all"]["within"]
    0.0
    """
    ts = sorted({x for x in t if x <= t_cap} | {t_cap})
    ks = sorted({1, n_samples} | {2 ** i for i in range(int(np.log2(max(n_samples, 1))) + 1)})
    cats = {c: [i for i, q in enumerate(world) if q.category == c] for c in CATEGORIES}
    cats = {"all": list(range(len(world))), **{c: v for c, v in cats.items() if v}}
    # success[arm][T]: questions x strategies; shares[arm]: questions x strategies
    success = {a: {tt: np.array([success_by_strategy(q, p, t_cap, tt) for q in world]).reshape(len(world), -1)
                   for tt in ts} for a, p in policies.items()}
    shares = {a: np.array([_shares(p, q.category) for q in world]).reshape(len(world), -1)
              for a, p in policies.items()}
    per_q = {a: {tt: (shares[a] * success[a][tt]).sum(axis=1) for tt in ts} for a in policies}
    pass_rows = []
    for a in policies:
        for c, idx in cats.items():
            for tt in ts:
                p = per_q[a][tt][idx]
                for k in ks:
                    pass_rows.append({"arm": a, "category": c, "k": k, "t": tt,
                                      "pass_at_kt": float(np.mean(1.0 - (1.0 - p) ** k))})
    out: dict[str, Any] = {"t_cap": t_cap, "n_samples": n_samples, "pass_at_kt": pass_rows,
                           "boundary": {}, "split": {}, "accuracy": {}}
    for a in policies:
        out["accuracy"][a] = {c: float(per_q[a][t_cap][idx].mean()) for c, idx in cats.items()}
    if base in policies:
        solved_b = 1.0 - (1.0 - per_q[base][t_cap]) ** n_samples
        for a in policies:
            if a == base:
                continue
            solved_t = 1.0 - (1.0 - per_q[a][t_cap]) ** n_samples
            pure = policies[a].integration == policies[base].integration and \
                policies[a].integration_factors() == policies[base].integration_factors() and \
                policies[a].wording == policies[base].wording and \
                policies[a].query_style == policies[base].query_style \
                and policies[a].loop_rounds == policies[base].loop_rounds
            out["boundary"][a] = {c: {"gained": float((solved_t * (1 - solved_b))[idx].sum()),
                                      "lost": float((solved_b * (1 - solved_t))[idx].sum()),
                                      "solved_base": float(solved_b[idx].sum()),
                                      "solved_treated": float(solved_t[idx].sum()), "n_questions": len(idx)}
                                  for c, idx in cats.items()}
            pb, pt = shares[base], shares[a]
            rb, rt = success[base][t_cap], success[a][t_cap]
            comp = ((pt - pb) * (rt + rb) / 2).sum(axis=1)
            within = ((rt - rb) * (pt + pb) / 2).sum(axis=1)
            out["split"][a] = {c: {"total": float((comp + within)[idx].mean()),
                                   "composition": float(comp[idx].mean()),
                                   "within": 0.0 if pure else float(within[idx].mean()),
                                   "pure_reweighting": bool(pure)} for c, idx in cats.items()}
    return out
