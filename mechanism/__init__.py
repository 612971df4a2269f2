"""mechanism: what did reinforcement learning do to an LLM agent?

Read trajectories into one canonical table, then score, segment, embed, cluster, compare
and plot. See ``../shared/DESIGN.md`` for the contract.
"""
from mechanism.errors import InputError, MechanismError, ReadReport, SkippedRecord
from mechanism.schema import REQUIRED_COLUMNS, STEP_FIELDS, make_step, validate
from mechanism.plots.style import paper_style

__version__ = "0.1.0"

__all__ = [
    "InputError", "MechanismError", "ReadReport", "SkippedRecord",
    "REQUIRED_COLUMNS", "STEP_FIELDS", "make_step", "validate", "paper_style",
]
