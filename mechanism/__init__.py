"""mechanism: what did reinforcement learning do to an LLM agent?

Read trajectories into one canonical table, then score, segment, embed, cluster, compare
and plot. The flow is read -> score -> segment -> embed -> cluster -> compare -> plot; each
stage is its own module and they meet only through the canonical table
(:mod:`mechanism.schema`).

>>> import mechanism as mx
>>> sim = mx.simulate(n_questions=3, n_samples=2, arms=("base", "rl"), random_state=0, progress=False)
>>> sorted(sim.runs["arm"].unique())
['base', 'rl']
"""
from __future__ import annotations

import importlib

# Public names, imported on first use (PEP 562): importing everything eagerly costs ~1.5 s
# (matplotlib, scipy.stats), which a script that only fits a strategy space from its cache
# would pay many times over. No module is named like a public function (`simulation`
# defines `simulate`, `compare` defines `reweighting`), so `import mechanism.simulation.run`
# and `mx.simulate` never shadow each other.
_EXPORTS = {
    "InputError": "mechanism.errors", "MechanismError": "mechanism.errors",
    "ReadReport": "mechanism.errors", "SkippedRecord": "mechanism.errors",
    "REQUIRED_COLUMNS": "mechanism.schema", "STEP_FIELDS": "mechanism.schema",
    "make_step": "mechanism.schema", "validate": "mechanism.schema",
    "read": "mechanism.readers", "detect_format": "mechanism.readers", "FORMATS": "mechanism.readers",
    "normalize_answer": "mechanism.scoring", "exact_match": "mechanism.scoring",
    "f1_score": "mechanism.scoring", "contains_answer": "mechanism.scoring",
    "simulate": "mechanism.simulation", "Simulation": "mechanism.simulation", "Policy": "mechanism.simulation",
    "default_policies": "mechanism.simulation", "STRATEGIES": "mechanism.simulation",
    "pass_at_kt": "mechanism.passkt", "pass_at_kt_per_problem": "mechanism.passkt",
    "consistency": "mechanism.passkt", "Consistency": "mechanism.passkt",
    "boundary": "mechanism.boundaries", "Boundary": "mechanism.boundaries",
    "segment": "mechanism.segmentation", "render": "mechanism.segmentation",
    "StrategySpace": "mechanism.strategy_space",
    "reweighting": "mechanism.compare", "Reweighting": "mechanism.compare",
    "compare_arms": "mechanism.compare", "kitagawa_split": "mechanism.compare",
    "js_divergence": "mechanism.compare",
    "integration": "mechanism.information", "Integration": "mechanism.information",
    "integration_verdict": "mechanism.information",
    "paper_style": "mechanism.plots.style",
    "ReadWarning": "mechanism.errors", "extract_answer": "mechanism.readers._answer",
    "track": "mechanism.checkpoints", "Track": "mechanism.checkpoints", "training_run": "mechanism.simulation",
    "Summary": "mechanism.results",
    "read_shards": "mechanism.parallel", "scan_shards": "mechanism.parallel", "render_shards": "mechanism.parallel",
    "assign_shards": "mechanism.parallel", "strategy_shares": "mechanism.shares",
    "ComparisonWarning": "mechanism.errors", "is_failure": "mechanism.failures",
    "shared_questions": "mechanism.schema",
    "reproduce_study": "mechanism.report.reproduction", "Reproduction": "mechanism.report.reproduction",
}


def __getattr__(name: str):
    if name in ("plots", "report", "simulation"):
        value = importlib.import_module(f"mechanism.{name}")
    elif name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    else:
        raise AttributeError(f"module 'mechanism' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__version__ = "0.1.0"

__all__ = [
    # errors and the canonical table
    "InputError", "MechanismError", "ReadReport", "SkippedRecord",
    "REQUIRED_COLUMNS", "STEP_FIELDS", "make_step", "validate",
    # read and score
    "read", "detect_format", "FORMATS",
    "normalize_answer", "exact_match", "f1_score", "contains_answer",
    # the built-in default
    "simulate", "Simulation", "Policy", "default_policies", "STRATEGIES",
    # pass@(k,T) and the capability boundary
    "pass_at_kt", "pass_at_kt_per_problem", "consistency", "Consistency", "boundary", "Boundary",
    # strategies
    "segment", "render", "StrategySpace",
    # reweighting and information integration
    "reweighting", "Reweighting", "compare_arms", "kitagawa_split", "js_divergence",
    "integration", "Integration", "integration_verdict",
    # plot
    "plots", "paper_style",
    # reading real logs (issue 11)
    "ReadWarning", "extract_answer",
    # real agents as they ran (issue 18): failed calls, comparisons on shared questions
    "ComparisonWarning", "is_failure", "shared_questions",
    # checkpoint series, the result protocol and the report layer
    "track", "Track", "training_run", "Summary", "report", "simulation",
    # shards in worker processes (mechanism.parallel)
    "read_shards", "scan_shards", "render_shards", "assign_shards", "strategy_shares",
    # the reference study reproduced on a planted world (issue 20)
    "reproduce_study", "Reproduction",
]
