"""The one parameter table of :class:`~mechanism.analysis.strategy_space.StrategySpace`, built
from the plain choices and bounds of :mod:`mechanism.analysis.strategy_params`.

:data:`CONSTRAINTS` is the estimator's ``_parameter_constraints``, written in scikit-learn's own
constraint types (:class:`~sklearn.utils._param_validation.Interval`, ``StrOptions``, types,
``None``), so scikit-learn's ``_validate_params`` and ``_fit_context`` read it. Every place that
checks a parameter reads it: ``fit`` (through ``_fit_context``), ``set_params``, loading a saved
space (:mod:`mechanism.analysis._strategies.persist`, fields ``params.<name>``) and the command line
(through :mod:`mechanism.analysis.strategy_params`). :func:`check` turns a broken constraint into the toolkit's one-line
:class:`~mechanism.core.errors.InputError` naming the field, where scikit-learn would print a
paragraph.

>>> check({"min_share": 0.5, "method": "kmeans"})
>>> check({"min_share": 1.0})
Traceback (most recent call last):
...
mechanism.core.errors.InputError: `min_share` must lie in [0, 1) (a number); got 1.0
"""
from __future__ import annotations

import os
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval, Options, StrOptions, make_constraint

from mechanism.analysis.segmentation import check_action_field, ignored_tools
from mechanism.analysis.strategy_params import (  # noqa: F401 - the Literals: named here for the estimator
    BOUNDS,
    CHOICES,
    K_MAX,
    PATTERN_MAX,
    Bounds,
    ClusterOn,
    Families,
    Level,
    Linkage,
    Method,
    Plans,
    Refine,
    TaskCallsMode,
)
from mechanism.core.errors import InputError, MechanismError
from mechanism.core.failures import compile_error_pattern
from mechanism.core.options import check_seed


class Rule(Options):
    """A constraint scikit-learn reads, for a value no type or interval states: ``test(field,
    value)`` raises the one-line :class:`InputError` (an ``Options`` subclass, because
    scikit-learn's ``make_constraint`` accepts those as they are)."""

    def __init__(self, test: Callable[[str, Any], Any], text: str) -> None:
        super().__init__(object, set())
        self.test, self.text = test, text

    def is_satisfied_by(self, val: Any) -> bool:
        try:
            self.test("value", val)
        except (MechanismError, TypeError, ValueError):
            return False
        return True

    def __str__(self) -> str:
        return self.text


def _choices(name: str) -> StrOptions:
    # the keys of a dict: a set that keeps the declared order, so errors and the CLI list the
    # choices as declared
    return StrOptions(dict.fromkeys(CHOICES[name]).keys())


def _bounds(name: str) -> Interval:
    b = BOUNDS[name]
    return Interval(Integral if b.integer else Real, b.low, b.high, closed=b.closed)


def _k_range(name: str, value: Any) -> None:
    try:
        ok = len(value) == 2 and all(isinstance(v, Integral) and not isinstance(v, (bool, np.bool_))
                                     and 1 <= v <= K_MAX for v in value)
    except TypeError:
        ok = False
    if not ok:
        raise InputError(f"`{name}` must be two integers in [1, {K_MAX}] (smallest, largest); "
                         f"got {str(value)[:40]!r}", field=name)


def _pattern(name: str, value: Any) -> None:
    if isinstance(value, str) and not 0 < len(value) <= PATTERN_MAX:
        raise InputError(f"`{name}` must be a regular expression of at most {PATTERN_MAX} characters", field=name)
    try:
        compile_error_pattern(value)  # its one-line error names `error_pattern`
    except MechanismError:
        raise
    except (TypeError, ValueError, AttributeError):
        shown = str(value)[:40]
        raise InputError(f"`{name}` must be a regular expression or None; got {shown!r}", field=name) from None


def _column(name: str, value: Any) -> None:
    if not (isinstance(value, str) and 0 < len(value) <= 200):
        raise InputError(f"`{name}` must be a column name or None; got {str(value)[:40]!r}", field=name)


#: name -> scikit-learn constraints (any one satisfied); ``embedder`` is checked where it is made
#: (:func:`mechanism.analysis.embed.make_embedder`: a name, a path or an object).
CONSTRAINTS: dict[str, Any] = {
    "embedder": "no_validation",
    "embedding_weight": [_bounds("embedding_weight")], "structure_weight": [_bounds("structure_weight")],
    "token_rank": [_bounds("token_rank"), None],
    "method": [_choices("method")], "resolution": [_bounds("resolution")], "linkage": [_choices("linkage")],
    "min_share": [_bounds("min_share")], "min_share_tested": [_bounds("min_share_tested")],
    "k_range": [Rule(_k_range, f"two integers in [1, {K_MAX}]")],
    "min_cluster_size": [_bounds("min_cluster_size"), None], "cluster_on": [_choices("cluster_on")],
    "n_components": [_bounds("n_components")], "n_neighbors": [_bounds("n_neighbors")],
    "min_dist": [_bounds("min_dist")], "max_umap_points": [_bounds("max_umap_points")],
    "n_bootstrap": [_bounds("n_bootstrap")],
    "random_state": [_bounds("random_state"), np.random.Generator, None],
    "retries": [_choices("retries")], "families": [_choices("families")], "plans": [_choices("plans")],
    "task_calls": [_choices("task_calls")], "refine": [_choices("refine")],
    "error_pattern": [Rule(_pattern, "a regular expression"), None],
    "action_field": [Rule(lambda name, value: check_action_field(value), "'auto', {tool: field} or None")],
    "ignore_tools": [Rule(lambda name, value: ignored_tools(value), "a list of tool names or None")],
    "by": [Rule(_column, "a column name"), None],
    "cache_dir": [str, os.PathLike, None], "progress": ["boolean", None],
}

#: The parameters that define a fitted space: saved with it (``params`` in ``space.json``) and
#: keying its fit cache; the others say where it runs (embedder, cache, progress) or are saved
#: apart (``action_tools``, ``ignore_tools``, ``by``).
MODEL_PARAMS = ("embedding_weight", "structure_weight", "token_rank", "method", "resolution", "linkage", "min_share",
                "min_share_tested", "k_range",
                "min_cluster_size", "cluster_on", "n_components", "n_neighbors", "min_dist", "max_umap_points",
                "n_bootstrap", "random_state", "retries", "error_pattern", "families", "plans", "task_calls",
                "refine")


def _interval(c: Interval) -> str:
    return str(Bounds(c.type is Integral, c.left, c.right, c.closed))


def _words(c: Any) -> str:
    if c is None:
        return "None"
    if c is np.random.Generator:
        return "a numpy Generator"
    if c == "boolean":
        return "True or False"
    if isinstance(c, type):
        return f"a {c.__name__}"
    return str(c)


def _satisfied(rules: list[Any], value: Any) -> bool:
    if isinstance(value, (bool, np.bool_)) and "boolean" not in rules:  # a bool is no number here
        return False
    return any(make_constraint(rule).is_satisfied_by(value) for rule in rules)


def check_one(field: str, rules: Any, value: Any) -> None:
    """A one-line :class:`InputError` naming ``field`` when ``value`` meets none of ``rules``."""
    if rules == "no_validation" or _satisfied(rules, value):
        return
    for rule in rules:
        if isinstance(rule, Rule):  # its own message says what the value must be
            rule.test(field, value)
    if np.random.Generator in rules:  # a seed: the message every `random_state` gives
        check_seed(value, field=field)
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    head, rest = rules[0], [_words(r) for r in rules[1:]]
    if isinstance(head, Interval):
        kind = "an integer" if head.type is Integral else "a number"
        also = f", or be {' or '.join(rest)}" if rest else ""
        raise InputError(f"`{field}` must lie in {_interval(head)} ({kind}){also}; got {shown}", field=field)
    if isinstance(head, StrOptions):
        allowed = ", ".join(repr(o) for o in head.options)
        raise InputError(f"`{field}` must be one of {allowed}; got {shown}", field=field)
    raise InputError(f"`{field}` must be {' or '.join(_words(r) for r in rules)}; got {shown}", field=field)


def check(params: dict[str, Any], *, prefix: str = "") -> None:
    """Check each of ``params`` against :data:`CONSTRAINTS`: a one-line :class:`InputError`
    naming the first that breaks its constraint (as ``<prefix><name>``)."""
    for name, value in params.items():
        if name in CONSTRAINTS:
            check_one(prefix + name, CONSTRAINTS[name], value)


def model_params(params: dict[str, Any], seed: int) -> dict[str, Any]:
    """The parameters that define a fitted space (:data:`MODEL_PARAMS`), with the seed the fit
    used as ``random_state``."""
    out = {k: params[k] for k in MODEL_PARAMS}
    out["k_range"] = list(out["k_range"])
    out["random_state"] = int(seed)
    return out
