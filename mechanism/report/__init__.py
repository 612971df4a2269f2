"""The report layer: result objects in, files, tables, figures and text out.

Each analysis has one writer here that takes its results and only formats them
(:func:`write_passkt` takes :func:`analyse_passkt`'s :class:`PassKT`, :func:`write_strategies`
:func:`analyse_strategies`' :class:`StrategyResults`, :func:`write_reweighting` the
``Reweighting`` results of :func:`analyse_reweighting`, :func:`write_integration` an
``Integration``, :func:`write_track` a ``Track``), and :func:`write_report` computes every
analysis once on a user's runs, calls the writers and puts the answer on one page
(``summary.md`` and ``summary.html``). The command line, the demo, the analysis scripts and
notebooks all call these; the library never imports the command line (``mechanism._cli``).

Every writer returns a :class:`Section`: the paths written, the plain-text findings and the
result objects, so a caller states verdicts from the results, never by reading files back.
"""
from __future__ import annotations

from mechanism.core.lazy import lazy_exports

_EXPORTS = {
    "Section": "mechanism.report._section",
    "write_passkt": "mechanism.report.passkt", "analyse_passkt": "mechanism.report.passkt",
    "PassKT": "mechanism.report.passkt",
    "write_strategies": "mechanism.report.strategies", "pooled_share_table": "mechanism.report.strategies",
    "csv_ready": "mechanism.report.strategies", "analyse_strategies": "mechanism.report.strategies",
    "StrategyResults": "mechanism.report.strategies",
    "write_reweighting": "mechanism.report.reweighting", "describe_reweighting": "mechanism.report.reweighting",
    "analyse_reweighting": "mechanism.report.reweighting",
    "rounds_labels": "mechanism.report.reweighting",
    "write_integration": "mechanism.report.integration", "describe_integration": "mechanism.report.integration",
    "write_track": "mechanism.report.track",
    "write_swap": "mechanism.report.swap", "describe_swap": "mechanism.report.swap",
    "write_page": "mechanism.report.page", "write_report": "mechanism.report.study", "Report": "mechanism.report.study",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
