"""The declared parameters of :class:`~mechanism.analysis.strategy_space.StrategySpace`: each one's
constraint (as scikit-learn's ``_parameter_constraints``), checked in one place, the fixed
choices as ``Literal`` types (:func:`mechanism.core.options.check_choice`), and the seed a fit uses.
"""
from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from mechanism.core.errors import InputError
from mechanism.core.options import check_choice
from mechanism.analysis.segmentation import Retries, check_action_field, ignored_tools

Method = Literal["agglomerative", "kmeans", "hdbscan"]
Linkage = Literal["average", "complete", "single"]
ClusterOn = Literal["features", "umap"]
Families = Literal["merge", "keep"]
Plans = Literal["apart", "mixed"]


def _number(low: float, high: float = float("inf"), *, integer: bool = False, open_low: bool = False,
            open_high: bool = False, optional: bool = False) -> Callable[[str, Any], None]:
    kind = numbers.Integral if integer else numbers.Real

    def check(name: str, value: Any) -> None:
        if value is None and optional:
            return
        ok = isinstance(value, kind) and not isinstance(value, (bool, np.bool_)) and np.isfinite(float(value))
        if ok:
            v = float(value)
            ok = (v > low if open_low else v >= low) and (v < high if open_high else v <= high)
        if not ok:
            what = "an integer" if integer else "a number"
            lo, hi = ("(" if open_low else "[") + f"{low:g}", f"{high:g}" + (")" if open_high else "]")
            raise InputError(f"`{name}` must be {what} in {lo}, {hi}{' or None' if optional else ''}; "
                             f"got {str(value)[:40]!r}", field=name)
    return check


def _choice(option: Any) -> Callable[[str, Any], None]:
    return lambda name, value: check_choice(value, option, field=name)


def _k_range(name: str, value: Any) -> None:
    try:
        lo, hi = value
        ok = all(isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= 1 for v in (lo, hi))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise InputError(f"`{name}` must be two positive integers (smallest, largest); got {str(value)[:40]!r}",
                         field=name)


def _pattern(name: str, value: Any) -> None:
    if value is not None:
        from mechanism.core.failures import compile_error_pattern

        compile_error_pattern(value)


def _column(name: str, value: Any) -> None:
    if value is not None and not (isinstance(value, str) and 0 < len(value) <= 200):
        raise InputError(f"`{name}` must be a column name or None; got {str(value)[:40]!r}", field=name)


def _random_state(name: str, value: Any) -> None:
    if value is None or isinstance(value, np.random.Generator):
        return
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not 0 <= int(value) < 2**32:
        raise InputError(f"`{name}` must be an integer in [0, 2**32), a numpy Generator or None; "
                         f"got {str(value)[:40]!r}", field=name)


# name -> check(name, value); parameters not listed (embedder, cache_dir, progress) are checked
# where they are used.
CONSTRAINTS: dict[str, Callable[[str, Any], None]] = {
    "embedding_weight": _number(0, 1e6), "structure_weight": _number(0, 1e6), "method": _choice(Method),
    "resolution": _number(0, 1e6, open_low=True), "linkage": _choice(Linkage),
    "min_share": _number(0, 1, open_high=True), "k_range": _k_range,
    "min_cluster_size": _number(1, 2**31, integer=True, optional=True), "cluster_on": _choice(ClusterOn),
    "n_components": _number(1, 100, integer=True), "n_neighbors": _number(1, 2**31, integer=True),
    "min_dist": _number(0, 1e6), "max_umap_points": _number(1, 2**40, integer=True),
    "outlier_factor": _number(0, 1e6), "n_bootstrap": _number(0, 10**6, integer=True),
    "random_state": _random_state, "retries": _choice(Retries), "families": _choice(Families),
    "plans": _choice(Plans),
    "error_pattern": _pattern, "action_field": lambda name, value: check_action_field(value),
    "ignore_tools": lambda name, value: ignored_tools(value), "by": _column,
}


def check(params: dict[str, Any]) -> None:
    """A one-line :class:`~mechanism.core.errors.InputError` naming the first parameter that breaks
    its constraint."""
    for name, rule in CONSTRAINTS.items():
        rule(name, params[name])


def resolve_seed(random_state: Any) -> int:
    """The integer seed of a fit: an int as it is (so an int keeps its exact results), a
    Generator's next draw, or fresh entropy for ``None``."""
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return int(random_state)
    return int(np.random.default_rng(random_state).integers(2**32))


def model_params(params: dict[str, Any], seed: int) -> dict[str, Any]:
    """The parameters that define a fitted space (saved with it and keying its cache), with the
    seed the fit used as ``random_state``."""
    keys = ("embedding_weight", "structure_weight", "method", "resolution", "linkage", "min_share", "k_range",
            "min_cluster_size", "cluster_on", "n_components", "n_neighbors", "min_dist", "max_umap_points",
            "outlier_factor", "n_bootstrap", "random_state", "retries", "error_pattern", "families", "plans")
    out = {k: params[k] for k in keys}
    out["k_range"] = list(out["k_range"])
    out["random_state"] = int(seed)
    return out
