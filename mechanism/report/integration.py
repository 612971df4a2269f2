"""Information-integration files: per-arm rates, the retrieval/integration split, figures, findings."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mechanism.report._section import Section
from mechanism.report._write import summary_text, write_figures, write_json, write_table, write_tables, write_text


def write_integration(result: Any, out: str | Path, *, names: Mapping[Any, str] | None = None,
                      figures: bool = True, title: str | None = None, caption: bool = False,
                      colors: dict[str, str] | None = None) -> Section:
    """Write an :class:`~mechanism.analysis.information.Integration`'s tables, figures and findings.

    ``per_arm.csv``, ``split.csv``, ``per_trajectory.parquet``, ``integration.json``
    (and ``perplexity.csv``) plus the ``integration_grid`` and ``integration_split`` figures;
    with strategy labels behind the result also ``by_strategy.csv``, ``shift.csv``,
    ``strategy_shift.csv`` (and ``perplexity_by_strategy.csv``), the ``integration_shift``
    figure and one verdict line per treated arm.

    Parameters
    ----------
    result
        :func:`mechanism.integration` of the runs.
    out
        Output folder (created).
    names
        Display names of strategy ids in the figures.
    figures, title, caption
        Write the figures; ``title`` is drawn only with ``caption=True``.
    colors
        Arm -> colour shared by the report's figures.

    Returns
    -------
    Section
        ``results`` holds the :class:`~mechanism.analysis.information.Integration`.
    """
    from mechanism.plots.integration import plot_integration_grid, plot_integration_shift, plot_integration_split  # noqa: PLC0415 - matplotlib: only when a figure is drawn

    res = result
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    section = Section(results=[res])
    # the long table goes to parquet below, not CSV; by_category keeps its file name integration_by_category.csv
    write_tables(section, out, [({"by_category": "integration_by_category"}.get(name, name), table)
                                for name, table in res.tables().items() if name not in ("per_trajectory", "estimates")])
    write_table(section, res.per_trajectory, out / "per_trajectory.parquet")
    write_json(section, out / "integration.json", res.to_dict())
    if figures:
        shown = title if caption else None
        figs = [("integration_grid", plot_integration_grid(res, title=shown))]
        if res.split is not None:
            figs.append(("integration_split", plot_integration_split(res, title=shown, colors=colors,
                                                                     caption=caption)))
        if res.shift is not None:
            figs.append(("integration_shift", plot_integration_shift(res, names=names, title=shown)))
        write_figures(section, out, figs)
    section.text = describe_integration(res)
    write_text(section, out / "summary.txt", section.text)
    return section


def describe_integration(res: Any) -> str:
    """Plain lines stating the per-arm rates and the splits (the result's own summary, indented)."""
    return summary_text(res)
