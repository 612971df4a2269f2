"""The choices and bounds of :class:`~mechanism.analysis.strategy_space.StrategySpace`'s parameters, as plain data.

This module is the light half of the estimator's one parameter table: it imports neither
scikit-learn nor the embedders, so the command line reads it on every ``mechanism --help``.
:mod:`mechanism.analysis._strategies.params` builds scikit-learn's constraints
(``StrOptions``, ``Interval``) from these values, so a flag and the parameter it sets state one
bound.

>>> choices("linkage")
('average', 'complete', 'single')
>>> str(bounds("min_share"))
'[0, 1)'
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mechanism.analysis.segmentation import Retries
from mechanism.core.options import choices as literal_choices

Method = Literal["agglomerative", "kmeans", "hdbscan"]
Linkage = Literal["average", "complete", "single"]
ClusterOn = Literal["features", "umap"]
Families = Literal["merge", "keep"]
Plans = Literal["apart", "mixed"]
Refine = Literal["mixture", "none"]
TaskCallsMode = Literal["auto", "keep"]
Level = Literal["variant", "family"]  # strategies as fitted, or joined into families (_strategies.levels)

K_MAX = 10_000  # the most strategies k-means is asked to try
PATTERN_MAX = 2000  # characters of an `error_pattern`


@dataclass(frozen=True)
class Bounds:
    """An interval a numeric parameter must lie in: ``integer`` says whether it takes only
    integers; ``closed`` which ends belong to it (scikit-learn's ``Interval`` spelling)."""

    integer: bool
    low: float
    high: float | None
    closed: Literal["left", "right", "both", "neither"]

    def __str__(self) -> str:
        high = "inf" if self.high is None else f"{self.high:g}"
        return (("[" if self.closed in ("left", "both") else "(") + f"{self.low:g}, {high}"
                + ("]" if self.closed in ("right", "both") and self.high is not None else ")"))


#: parameter -> the strings it may be, in the order errors and the command line list them
CHOICES: dict[str, tuple[str, ...]] = {
    "method": literal_choices(Method), "linkage": literal_choices(Linkage), "cluster_on": literal_choices(ClusterOn),
    "retries": literal_choices(Retries), "families": literal_choices(Families), "plans": literal_choices(Plans),
    "task_calls": literal_choices(TaskCallsMode), "refine": literal_choices(Refine),
}

_WEIGHT = Bounds(False, 0, 1e6, "both")

#: parameter -> the interval its number must lie in
BOUNDS: dict[str, Bounds] = {
    "embedding_weight": _WEIGHT, "structure_weight": _WEIGHT,
    "resolution": Bounds(False, 0, 1e6, "right"),
    "min_share": Bounds(False, 0, 1, "left"), "min_share_tested": Bounds(False, 0, 1, "left"),
    "min_cluster_size": Bounds(True, 1, 2**31, "both"),
    "token_rank": Bounds(True, 1, 2**31, "both"),
    "n_components": Bounds(True, 1, 100, "both"),
    "n_neighbors": Bounds(True, 1, 2**31, "both"),
    "min_dist": Bounds(False, 0, 1e6, "both"),
    "max_umap_points": Bounds(True, 1, 2**40, "both"),
    "n_bootstrap": Bounds(True, 0, 10**6, "both"),
    # any non-negative int, as numpy's SeedSequence takes (scikit-learn and UMAP get one derived
    # from it: :func:`mechanism.core.resample.library_seed`)
    "random_state": Bounds(True, 0, None, "left"),
}


def choices(name: str) -> tuple[str, ...]:
    """The strings parameter ``name`` may be (a ``KeyError`` for a parameter without choices)."""
    return CHOICES[name]


def bounds(name: str) -> Bounds:
    """The interval parameter ``name`` must lie in (a ``KeyError`` for a parameter without one)."""
    return BOUNDS[name]
