"""mechanism: what did reinforcement learning do to an LLM agent?

Read trajectories into one canonical table, then score, segment, embed, cluster, compare
and plot. The flow is read -> score -> segment -> embed -> cluster -> compare -> plot; each
stage is its own module and they meet only through the canonical table
(:mod:`mechanism.schema`).

>>> import mechanism as mx
>>> sim = mx.simulate(n_questions=3, n_samples=2, arms=("base", "rl"), seed=0, progress=False)
>>> sorted(sim.runs["arm"].unique())
['base', 'rl']
"""
from mechanism import plots
from mechanism.boundary import Boundary, boundary
from mechanism.errors import InputError, MechanismError, ReadReport, SkippedRecord
from mechanism.integration import Integration, integration
from mechanism.passkt import pass_at_kt, pass_at_kt_per_problem
from mechanism.plots.style import paper_style
from mechanism.readers import FORMATS, detect_format, read
from mechanism.schema import REQUIRED_COLUMNS, STEP_FIELDS, make_step, validate
from mechanism.scoring import contains_answer, cover_match, exact_match, f1_score, normalize_answer
from mechanism.reweighting import Reweighting, compare_arms, js_divergence, kitagawa_split, reweighting
from mechanism.segment import render, segment
from mechanism.simulate import STRATEGIES, Policy, Simulation, default_policies, simulate
from mechanism.strategy_space import StrategySpace

__version__ = "0.1.0"

__all__ = [
    # errors and the canonical table
    "InputError", "MechanismError", "ReadReport", "SkippedRecord",
    "REQUIRED_COLUMNS", "STEP_FIELDS", "make_step", "validate",
    # read and score
    "read", "detect_format", "FORMATS",
    "normalize_answer", "exact_match", "f1_score", "cover_match", "contains_answer",
    # the built-in default
    "simulate", "Simulation", "Policy", "default_policies", "STRATEGIES",
    # pass@(k,T) and the capability boundary
    "pass_at_kt", "pass_at_kt_per_problem", "boundary", "Boundary",
    # strategies
    "segment", "render", "StrategySpace",
    # reweighting and information integration
    "reweighting", "Reweighting", "compare_arms", "kitagawa_split", "js_divergence",
    "integration", "Integration",
    # plot
    "plots", "paper_style",
]
