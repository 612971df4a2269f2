"""One convention per option, checked in one place.

Every option of the toolkit follows the same rule, wherever it appears (library and CLI):

- ``random_state``: a non-negative ``int`` (any size), :class:`numpy.random.Generator` or ``None``
  (fresh entropy), as in numpy; :func:`check_seed` checks it, :func:`as_generator` turns it into a
  Generator and :func:`mechanism.core.resample.resolve_seed` into one integer.
- ``ci``: ``float`` in (0, 1), or ``None`` for no interval; :func:`check_ci`.
- a fixed set of choices: a ``Literal`` type, checked by :func:`check_choice`, whose error
  names the field; the CLI offers the same choices through :func:`choices`.

Errors here cite the library's parameter names (``field``), never a command-line flag: the
CLI maps a field to its flag when it prints the error.
"""
from __future__ import annotations

import typing
from typing import Any, Literal

import numpy as np

from mechanism.core.errors import InputError

RandomState = int | np.random.Generator | None

# Options shared by several modules, named once.
Weighting = Literal["question", "trajectory"]
#: Where the interaction depth T of an episode comes from (:func:`mechanism.analysis.passkt.pass_at_kt`).
TSource = Literal["auto", "t_cap", "truncation", "messages"]
OutputFormat = Literal["html", "markdown"]


def choices(option: Any) -> tuple[str, ...]:
    """The values a ``Literal`` type (or a tuple of strings) allows, in order.

    >>> choices(Literal["merge", "keep"])
    ('merge', 'keep')
    >>> choices(("a", "b"))
    ('a', 'b')
    """
    if isinstance(option, (tuple, list, frozenset, set)):
        return tuple(option)
    args = typing.get_args(option)
    if typing.get_origin(option) is not Literal or not args:
        raise TypeError(f"not a Literal type or a tuple of choices: {option!r}")
    return tuple(args)


def check_choice(value: Any, option: Any, *, field: str) -> Any:
    """``value`` when it is one of ``option``'s choices, else a one-line :class:`InputError` naming ``field``.

    >>> check_choice("keep", Literal["merge", "keep"], field="retries")
    'keep'
    >>> check_choice("drop", Literal["merge", "keep"], field="retries")
    Traceback (most recent call last):
    ...
    mechanism.core.errors.InputError: `retries` must be one of 'merge', 'keep'; got 'drop'
    """
    allowed = choices(option)
    try:
        ok = value in allowed
    except TypeError:  # an unhashable or odd value is simply not a choice
        ok = False
    if not ok:
        shown = ", ".join(repr(a) for a in allowed)
        raise InputError(f"`{field}` must be one of {shown}; got {str(value)[:40]!r}", field=field)
    return value


def check_ci(ci: Any, *, field: str = "ci") -> float | None:
    """``ci`` as a float in (0, 1), or ``None`` (no interval); anything else a one-line error.

    >>> check_ci(0.95), check_ci(None)
    (0.95, None)
    """
    if ci is None:
        return None
    if isinstance(ci, bool) or not isinstance(ci, (int, float, np.floating)) or not 0.0 < float(ci) < 1.0:
        raise InputError(f"`{field}` must be a number in (0, 1) or None; got {str(ci)[:40]!r}", field=field)
    return float(ci)


def check_seed(random_state: Any, *, field: str = "random_state") -> RandomState:
    """``random_state`` when it is a seed: a non-negative int of any size (numpy's
    :class:`~numpy.random.SeedSequence` takes them all), a :class:`numpy.random.Generator` or
    ``None``; anything else a one-line :class:`InputError` naming ``field``. Every function taking
    ``random_state`` checks it here, so every one accepts the same range.

    >>> check_seed(2**33) == 2**33
    True
    >>> check_seed(-1)
    Traceback (most recent call last):
    ...
    mechanism.core.errors.InputError: `random_state` must be a non-negative int, a numpy Generator or None; got '-1'
    """
    if random_state is None or isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, (bool, np.bool_)) or not isinstance(random_state, (int, np.integer)) \
            or random_state < 0:
        raise InputError(f"`{field}` must be a non-negative int, a numpy Generator or None; "
                         f"got {str(random_state)[:40]!r}", field=field)
    return int(random_state)


def as_generator(random_state: Any, *, field: str = "random_state") -> np.random.Generator:
    """A :class:`numpy.random.Generator` from ``random_state`` (checked by :func:`check_seed`).

    An int gives the same draws every time; a Generator is used as it is (its state advances);
    ``None`` draws fresh entropy.

    >>> bool(as_generator(0).integers(10) == as_generator(0).integers(10))
    True
    """
    return np.random.default_rng(check_seed(random_state, field=field))
