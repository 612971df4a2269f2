"""Every compatibility shim of the report layer, in one place, each with the version that removes it.

A shim warns (:class:`DeprecationWarning`) when it is used, naming what replaces it; nothing
here is part of the contract of the design notes (section 4), so each goes in :data:`REMOVAL`.

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

import warnings

#: the release that removes every shim listed above
REMOVAL = "0.2.0"


def deprecated(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` goes in :data:`REMOVAL`; ``new`` says what to use instead."""
    warnings.warn(f"{old} is deprecated and will be removed in mechanism {REMOVAL}; {new}",
                  DeprecationWarning, stacklevel=stacklevel)
