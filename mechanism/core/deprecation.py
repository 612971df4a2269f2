"""Every compatibility shim of the package, in one place, each with its removal version.

A shim keeps an old spelling working for one more release and says so with a
:class:`DeprecationWarning` naming the replacement. Nothing else in the package keeps old
spellings: when a shim's version comes, delete its line in :data:`SHIMS` and the one call site
that names it (``grep -rn "deprecation" mechanism``).

Shims of the report layer (warned through :func:`deprecated`):

- ``written, text = section``: a :class:`~mechanism.report.Section` unpacking as the tuple
  writers once returned (use ``section.written`` and ``section.text``).
- ``mechanism.report.strategy_shares``: the old name of ``pooled_share_table``.
- ``mechanism.report.page._md``: the old name of ``mechanism.report.tables.md_inline``.
- a section writer given the canonical table instead of its results (``write_passkt(runs, out)``,
  ``write_reweighting(runs, labels, out)``, ``write_integration(runs, out)``,
  ``write_strategies(space, runs, out)`` without ``placement``): the analyses are computed for
  the caller as :func:`mechanism.report.write_report` computes them; compute them once and pass
  the results.
"""
from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

#: The release that removes every shim listed here.
REMOVAL = "0.2.0"

#: Old spelling -> its replacement.
SHIMS: dict[str, str] = {
    "mechanism.analysis.information.verdict(result)": "Integration.verdict()",
    "mechanism.integration_verdict(result)": "Integration.verdict()",
    "compare_arms(others=...)": "compare_arms(treated=...)",
}


def deprecated(old: str, new: str, *, stacklevel: int = 3) -> None:
    """The one deprecation warning of the package: ``old`` goes in :data:`REMOVAL`; ``new`` says
    what to use instead."""
    warnings.warn(f"{old} is deprecated and will be removed in {REMOVAL}; {new}",
                  DeprecationWarning, stacklevel=stacklevel)


def warn(old: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` (a key of :data:`SHIMS`) is deprecated, naming its replacement."""
    deprecated(old, f"use {SHIMS[old]}", stacklevel=stacklevel + 1)


def alias(func: Callable[..., Any], old: str) -> Callable[..., Any]:
    """``func`` under an old name: the same call, with a deprecation warning first."""
    if old not in SHIMS:
        raise KeyError(f"{old!r} is not a listed shim")

    @functools.wraps(func)
    def shim(*args: Any, **kwargs: Any) -> Any:
        warn(old)
        return func(*args, **kwargs)

    shim.__doc__ = f"Deprecated (removed in {REMOVAL}): use {SHIMS[old]}."
    return shim
