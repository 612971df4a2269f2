"""Swap-test files: the cells, the split, what each reasoner answered, the endpoints' counts,
a figure and the findings."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from mechanism.core.text import estimate_text
from mechanism.report._section import Section
from mechanism.report._write import summary_text, write_figures, write_json, write_table, write_text
from mechanism.report.page import PageSection
from mechanism.report.tables import ReportTable

#: the page's name of each part of the split
PART_NAMES = {"total": "gain (total)", "retrieval": "retrieval (its plans)", "reasoning": "reasoning (its model)",
              "interaction": "interaction"}


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
    return summary_text(result)


def _source_name(source: str) -> str:
    return "none (the question alone)" if source == "none" else source


def swap_tables(result: Any, *, planted: Mapping[str, float] | None = None) -> list[ReportTable]:
    """The page's tables of a swap: the cells (a row per retrieval source, a column per
    reasoner, each accuracy with its interval) and, with a split, its parts with their shares
    (and the ``planted`` value of each part beside it, when given: a simulated world's truth)."""
    cells = result.table
    reasoners = cells["reasoner"].unique(maintain_order=True).to_list()
    rows = []
    for source in cells["retrieval_from"].unique(maintain_order=True).to_list():
        row = {"retrieval from": _source_name(source)}
        for r in cells.filter(pl.col("retrieval_from") == source).iter_rows(named=True):
            row[f"reasoner {r['reasoner']}"] = estimate_text(r["accuracy"], r["ci_low"], r["ci_high"])
        rows.append(row)
    columns = ["retrieval from", *(f"reasoner {a}" for a in reasoners)]
    tables = [ReportTable(key="swap", title="Swap test: accuracy by retrieval source x reasoner",
                          frame=pl.DataFrame(rows, schema=dict.fromkeys(columns, pl.String)),
                          note=f"{result.n_questions} questions, each weighing the same within a retrieval source"
                               + (f"; {result.ci:.0%} bootstrap intervals over questions" if result.ci else ""))]
    if result.split is None:
        return tables
    parts = []
    for r in result.split.iter_rows(named=True):
        row = {"part": PART_NAMES.get(r["part"], r["part"]),
               "estimate": estimate_text(r["estimate"], r["ci_low"], r["ci_high"], signed=True),
               "share of the gain": ("" if r["part"] == "total" else
                                     estimate_text(r["share"], r["share_ci_low"], r["share_ci_high"], digits=2))}
        if planted is not None:
            row["planted"] = estimate_text(planted.get(r["part"]), signed=True)
        parts.append(row)
    tables.append(ReportTable(
        key="swap-split", title=f"{result.treated}'s gain over {result.base} = retrieval + reasoning + interaction",
        frame=pl.DataFrame(parts, schema=dict.fromkeys(parts[0], pl.String)),
        note=f"retrieval: {result.base} reasoning on {result.treated}'s retrieval, minus its own; reasoning: "
             f"{result.treated} reasoning on {result.base}'s retrieval, minus {result.base}'s; paired intervals "
             "over questions"))
    return tables


def swap_page_section(result: Any, *, figure: str | None = None, planted: Mapping[str, float] | None = None,
                      intro: str | None = None) -> PageSection:
    """The swap test as a section of the summary page: ``intro`` (when given), the verdict,
    :func:`swap_tables` and the ``figure`` (a path relative to the page), the notes as a list."""
    return PageSection(key="swap-test", title="Swap test: retrieval or reasoning?",
                       paragraphs=[*([intro] if intro else []), result.verdict()],
                       items=[n for n in result.notes if n.startswith(("endpoint for", "accuracy as logged"))],
                       tables=swap_tables(result, planted=planted),
                       figures=[("Accuracy by retrieval source x reasoner", figure)] if figure else [])
