"""mechanism: what did reinforcement learning do to an LLM agent?

Read trajectories into one canonical table, then score, segment, embed, cluster, compare
and plot. The folders are the layers, bottom first, each importing only those below it:
``core`` (the canonical table :mod:`mechanism.core.schema`, errors, options, resampling,
scoring, the result protocol), ``readers``, ``datasets`` (the simulator and the planted
worlds), ``analysis`` (PASS@(k,T), strategies, comparisons), ``plots``, ``report``, and the
private command line ``_cli``. Every public name is importable from here.

>>> import mechanism as mx
>>> sim = mx.simulate(n_questions=3, n_samples=2, arms=("base", "rl"), random_state=0, progress=False)
>>> sorted(sim.runs["arm"].unique())
['base', 'rl']
"""
from __future__ import annotations

from mechanism.core.lazy import lazy_exports

# Public names, imported on first use (PEP 562): importing everything eagerly costs ~1.5 s
# (matplotlib, scipy.stats), which a script that only fits a strategy space from its cache
# would pay many times over. No module is named like a public function (`simulation`
# defines `simulate`, `compare` defines `reweighting`), so `import mechanism.datasets.simulation.run`
# and `mx.simulate` never shadow each other.
_EXPORTS = {
    "InputError": "mechanism.core.errors", "MechanismError": "mechanism.core.errors",
    "ReadReport": "mechanism.core.errors", "SkippedRecord": "mechanism.core.errors",
    "REQUIRED_COLUMNS": "mechanism.core.schema", "STEP_FIELDS": "mechanism.core.schema",
    "make_step": "mechanism.core.schema", "validate": "mechanism.core.schema",
    "read": "mechanism.readers", "detect_format": "mechanism.readers", "FORMATS": "mechanism.readers",
    "normalize_answer": "mechanism.core.scoring", "exact_match": "mechanism.core.scoring",
    "f1_score": "mechanism.core.scoring", "contains_answer": "mechanism.core.scoring",
    "simulate": "mechanism.datasets.simulation", "Simulation": "mechanism.datasets.simulation",
    "Policy": "mechanism.datasets.simulation",
    "default_policies": "mechanism.datasets.simulation", "STRATEGIES": "mechanism.datasets.simulation",
    "pass_at_kt": "mechanism.analysis.passkt", "pass_at_kt_per_problem": "mechanism.analysis.passkt",
    "consistency": "mechanism.analysis.passkt", "Consistency": "mechanism.analysis.passkt",
    "boundary": "mechanism.analysis.boundaries", "Boundary": "mechanism.analysis.boundaries",
    "segment": "mechanism.analysis.segmentation", "render": "mechanism.analysis.segmentation",
    "StrategySpace": "mechanism.analysis.strategy_space",
    "reweighting": "mechanism.analysis.compare", "Reweighting": "mechanism.analysis.compare",
    "compare_arms": "mechanism.analysis.compare", "Comparison": "mechanism.analysis.compare",
    "kitagawa_split": "mechanism.analysis.compare",
    "js_divergence": "mechanism.analysis.compare",
    "integration": "mechanism.analysis.information", "Integration": "mechanism.analysis.information",
    "paper_style": "mechanism.plots.style",
    "ReadWarning": "mechanism.core.errors", "extract_answer": "mechanism.readers._answer",
    "track": "mechanism.analysis.checkpoints", "Track": "mechanism.analysis.checkpoints",
    "training_run": "mechanism.datasets.simulation",
    "Summary": "mechanism.core.results",
    "read_shards": "mechanism.analysis.parallel", "scan_shards": "mechanism.analysis.parallel",
    "render_shards": "mechanism.analysis.parallel",
    "assign_shards": "mechanism.analysis.parallel", "strategy_shares": "mechanism.analysis.shares",
    "ComparisonWarning": "mechanism.core.errors", "is_failure": "mechanism.core.failures",
    "shared_questions": "mechanism.core.schema",
    "reproduce_study": "mechanism.analysis.reproduction", "Reproduction": "mechanism.analysis.reproduction",
    "swap": "mechanism.analysis.swap", "Swap": "mechanism.analysis.swap",
    "score_logprobs": "mechanism.analysis.base_scoring",
    "EndpointError": "mechanism.endpoints",
}


# Subpackages reachable as attributes (`mx.plots.pass_curves`, `mx.simulation.World`).
_SUBPACKAGES = {"plots": "mechanism.plots", "report": "mechanism.report", "simulation": "mechanism.datasets.simulation",
                "datasets": "mechanism.datasets", "endpoints": "mechanism.endpoints"}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, _SUBPACKAGES)


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
    "reweighting", "Reweighting", "compare_arms", "Comparison", "kitagawa_split", "js_divergence",
    "integration", "Integration",
    # plot
    "plots", "paper_style",
    # reading real logs
    "ReadWarning", "extract_answer",
    # real agents as they ran: failed calls, comparisons on shared questions
    "ComparisonWarning", "is_failure", "shared_questions",
    # checkpoint series, the result protocol and the report layer
    "track", "Track", "training_run", "Summary", "report", "simulation",
    # shards in worker processes (mechanism.analysis.parallel)
    "read_shards", "scan_shards", "render_shards", "assign_shards", "strategy_shares",
    # the reference study reproduced on a planted world
    "reproduce_study", "Reproduction",
    # causal tests through endpoints: the swap test and base-model scoring
    "swap", "Swap", "score_logprobs", "EndpointError",
]
