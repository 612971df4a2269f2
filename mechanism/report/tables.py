"""The report's tables: one display frame per result, rendered by Great Tables (polars'
``DataFrame.style``) as HTML for the page and as a booktabs LaTeX table for a paper, and by
:func:`markdown_table` for ``summary.md``.

A :class:`ReportTable` holds text only (every number already formatted with its interval), so
the three renderings show the same cells. Cell text may come from the input (arm and strategy
names, tool names): Great Tables escapes it for HTML and LaTeX, and control and bidirectional
characters are first written out as visible escapes (:func:`mechanism.names.escape_control`),
the rule every other output follows.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import polars as pl

from mechanism.names import escape_control


@dataclass
class ReportTable:
    """A table of the report: ``key`` (its HTML id and LaTeX label, ``tab:<key>``), ``title``
    (the caption), ``frame`` (string cells), ``note`` (shown under it) and ``links``
    (column -> ``{cell text: in-page anchor}``: cells that open a part of the page)."""

    key: str
    title: str
    frame: pl.DataFrame
    note: str = ""
    links: dict[str, dict[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.frame = self.frame.with_columns(pl.col(c).cast(pl.String).fill_null("").map_elements(
            escape_control, return_dtype=pl.String) for c in self.frame.columns)
        self.frame = self.frame.rename({c: escape_control(c) for c in self.frame.columns})

    def _gt(self, *, links: bool):  # noqa: ANN202 - a great_tables.GT
        from great_tables import GT

        table = GT(self.frame, id=f"gt-{self.key}")
        if links:
            for column, anchors in self.links.items():
                # the cell's text is escaped here by hand: a formatter's output is taken as HTML
                table = table.fmt(lambda v, anchors=anchors: _link(str(v), anchors.get(str(v))), columns=column)
        if self.note:
            table = table.tab_source_note(self.note)
        return table

    def html(self) -> str:
        """The table as an HTML fragment (Great Tables), its caption as the first row."""
        return self._gt(links=True).tab_header(title=self.title).as_raw_html()

    def latex(self) -> str:
        r"""A booktabs ``table`` with ``\caption`` and ``\label{tab:<key>}`` (needs ``booktabs``)."""
        from mechanism.results import latex_escape

        body = self._gt(links=False).as_latex()
        caption = rf"\caption{{{latex_escape(self.title)}}}" + "\n" + rf"\label{{tab:{self.key}}}"
        # Great Tables writes an unnumbered ``\caption*`` only with a header; a paper cites its tables
        body = re.sub(r"\\caption\*\{.*?\n\} *\n", "", body, flags=re.S)
        body = body.replace("\\fontsize{12.0pt}{14.4pt}\\selectfont\n", "")
        return body.replace("\\begin{table}[!t]\n", "\\begin{table}[!t]\n\\centering\n" + caption + "\n", 1)

    def markdown(self) -> str:
        """The table as a Markdown pipe table, caption above and note below."""
        return "\n".join([f"**{md_inline(self.title)}**", "", markdown_table(self.frame)]
                         + (["", f"*{md_inline(self.note)}*"] if self.note else []))


def _link(text: str, anchor: str | None) -> str:
    import html

    shown = html.escape(text)
    return f'<a href="#{html.escape(anchor, quote=True)}">{shown}</a>' if anchor else shown


def md_inline(text: object) -> str:
    """Inline Markdown with every character that would start markup or raw HTML escaped."""
    out = []
    for ch in " ".join(escape_control(str(text)).split()):
        out.append("\\" + ch if ch in "\\`*_[]<>#|!{}" else ch)
    return "".join(out)


def markdown_table(frame: pl.DataFrame) -> str:
    """``frame`` (string cells) as a GitHub pipe table, every cell escaped."""
    head = "| " + " | ".join(md_inline(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(md_inline(v) for v in row) + " |" for row in frame.iter_rows()]
    return "\n".join([head, rule, *rows])


def estimate(value: float | None, low: float | None = None, high: float | None = None, *,
             digits: int = 3, signed: bool = False) -> str:
    """``0.412 [0.380, 0.440]``; ``n/a`` for a missing or non-finite value.

    >>> estimate(0.41234, 0.38, 0.44)
    '0.412 [0.380, 0.440]'
    >>> estimate(0.1, -0.02, 0.2, signed=True)
    '+0.100 [-0.020, +0.200]'
    >>> estimate(None)
    'n/a'
    """
    import math

    def fmt(v: float) -> str:
        return f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"

    if value is None or not math.isfinite(value):
        return "n/a"
    text = fmt(value)
    if low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
        text += f" [{fmt(low)}, {fmt(high)}]"
    return text


def renamed(names: Mapping[str, str] | None, arm: str) -> str:
    """An arm's display name (``arm_names``), else the arm itself."""
    return (names or {}).get(arm, arm)


def arm_table(rows: Sequence[dict], columns: Sequence[str]) -> pl.DataFrame:
    """A string frame from row dicts, in ``columns`` order."""
    return pl.DataFrame([{c: str(r.get(c, "")) for c in columns} for r in rows],
                        schema={c: pl.String for c in columns})
