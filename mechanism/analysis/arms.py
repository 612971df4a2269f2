"""The checks every comparison makes on its inputs, written once: labels, arms and pairs.

:func:`~mechanism.analysis.compare.reweighting`, :func:`~mechanism.analysis.compare.compare_arms` and
:func:`~mechanism.analysis.information.integration` all take one strategy label per row and name
the arms they compare as ``base`` and ``treated``; they check both here, so that a bad input
reads the same whichever analysis it was given to.

>>> import polars as pl
>>> runs = pl.DataFrame({"arm": ["base", "rl"]})
>>> check_labels(runs, [0.0, 1.0]).tolist()
[0, 1]
>>> check_pair(["base", "rl"], "base", ["rl"])
>>> check_pair(["base", "rl"], "base", ["base"])
Traceback (most recent call last):
...
mechanism.core.errors.InputError: `base` and `treated` must be different arms
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import polars as pl

from mechanism.core.errors import InputError

__all__ = ["OUTLIER", "check_labels", "is_outlier", "check_arm", "check_pair", "check_counts"]

#: The label of a trajectory no strategy holds; it is kept as its own stratum.
OUTLIER = -1


def check_labels(runs: pl.DataFrame, labels: Any) -> np.ndarray:
    """``labels`` as one integer or string label per row of ``runs``.

    Floats that hold whole numbers become integers and booleans become 0/1; anything else
    (a wrong length, NaN, a null, a nested value) is refused with an error naming ``labels``.
    """
    values = labels.to_numpy() if isinstance(labels, pl.Series) else np.asarray(labels)
    if values.ndim != 1 or values.shape[0] != runs.height:
        raise InputError(f"`labels` must hold one label per row of `runs` ({runs.height}), "
                         f"got shape {values.shape}", field="labels")
    if values.dtype.kind in "fc":
        if not np.all(np.isfinite(values)) or not np.all(values == np.round(values)):
            raise InputError("`labels` must be integers or strings (found a non-integer float or NaN)",
                             field="labels")
        values = values.astype(np.int64)
    elif values.dtype.kind == "O":
        if any(v is None for v in values):
            raise InputError("`labels` holds a null label", field="labels")
        if not all(isinstance(v, (str, int, np.integer)) for v in values):
            raise InputError("`labels` must be integers or strings (found a nested or other value)",
                             field="labels")
        values = values.astype(str)
    elif values.dtype.kind == "b":
        values = values.astype(np.int64)
    return values


def is_outlier(value: Any) -> bool:
    """Whether a strategy label is :data:`OUTLIER` (a string label never is)."""
    return isinstance(value, (int, np.integer)) and int(value) == OUTLIER


def check_arm(arm: str, present: Sequence[str], *, field: str, where: str = "`runs`") -> None:
    """Refuse an arm, given as ``field``, that is not among ``present`` (the arms of ``where``)."""
    if arm not in present:
        raise InputError(f"arm {arm!r} given as `{field}` is not in {where} (arms: {sorted(present)})",
                         field=field)


def check_pair(present: Sequence[str], base: str, treated: Iterable[str], *, where: str = "`runs`") -> None:
    """``base`` and every ``treated`` arm are among ``present``, and no treated arm is ``base``."""
    check_arm(base, present, field="base", where=where)
    for arm in treated:
        check_arm(arm, present, field="treated", where=where)
        if arm == base:
            raise InputError("`base` and `treated` must be different arms", field="treated")


def check_counts(**counts: int) -> None:
    """Every named count (``n_boot=``, ``n_permutations=``) is at least 0."""
    bad = [name for name, value in counts.items() if value < 0]
    if bad:
        names = " and ".join(f"`{name}`" for name in counts)
        got = " and ".join(str(value) for value in counts.values())
        raise InputError(f"{names} must be >= 0, got {got}", field=bad[0])
