"""Swap-test files: the cells, the split, what each reasoner answered, the endpoints' counts,
a figure and the findings."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from mechanism.report._section import Section
from mechanism.report._write import write_figures, write_json, write_table, write_text


def write_swap(result: Any, out: str | Path, *, figures: bool = True, title: str | None = None) -> Section:
    """Write a :class:`~mechanism.analysis.swap.Swap`'s tables, figure and findings.

    ``swap.csv`` (the cells), ``split.csv`` (with a split), ``per_episode.parquet``,
    ``endpoints.csv``, ``swap.json``, ``swap.md`` (the summary in Markdown), ``summary.txt``
    and the ``swap`` figure.

    Parameters
    ----------
    result
        :func:`mechanism.swap`'s result.
    out
        Output folder (created).
    figures, title
        Draw the figure, with this title.

    Returns
    -------
    Section
        ``results`` holds the :class:`~mechanism.analysis.swap.Swap`; ``frames["swap"]`` its cells.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    section = Section(results=[result], frames={"swap": result.table})
    write_table(section, result.table, out / "swap.csv")
    if result.split is not None:
        write_table(section, result.split, out / "split.csv")
    write_table(section, result.per_episode, out / "per_episode.parquet")
    write_table(section, result.endpoints, out / "endpoints.csv")
    write_json(section, out / "swap.json", result.to_dict())
    write_text(section, out / "swap.md", result.summary().as_markdown())
    if figures:
        from mechanism.plots.swap import plot_swap  # noqa: PLC0415 - matplotlib: only when a figure is drawn

        write_figures(section, out, [("swap", plot_swap(result, title=title))])
    section.text = describe_swap(result)
    write_text(section, out / "summary.txt", section.text)
    return section


def describe_swap(result: Any) -> str:
    """Plain lines: the verdict, each cell, the notes (the result's own summary, indented)."""
    summary = result.summary()
    return "\n".join([summary.title, *(f"  {line}" for line in summary.lines)])
