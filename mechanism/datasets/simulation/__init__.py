"""A simulated multi-hop tool-use world with planted strategies: the toolkit's default data and
its test bed (the truth behind every trajectory is known, and the expected values the analyses
should recover are computed exactly: ``sim.planted``).

>>> from mechanism.datasets.simulation import simulate
>>> sim = simulate(n_questions=2, n_samples=2, arms=("base",), random_state=0, progress=False)
>>> sim.runs.height
4
"""
from mechanism.datasets.simulation.planted import planted_values
from mechanism.datasets.simulation.policies import REMAP, STRATEGIES, Policy, default_policies
from mechanism.datasets.simulation.run import Simulation, simulate, training_run
from mechanism.datasets.simulation.world import Question, make_world

__all__ = ["simulate", "training_run", "Simulation", "Policy", "default_policies", "STRATEGIES", "REMAP",
           "Question", "make_world", "planted_values"]
