"""One protocol for every result object, as statsmodels' results have one.

Every analysis result (:class:`~mechanism.boundaries.Boundary`,
:class:`~mechanism.compare.Reweighting`, :class:`~mechanism.information.Integration`,
:class:`~mechanism.track.Track`, :class:`~mechanism.simulation.Simulation`) offers the same
five things:

- ``summary()`` returns a :class:`Summary`: it prints as plain text and renders as Markdown,
  HTML and LaTeX (in a notebook it shows as an HTML table of its findings);
- ``to_frame()`` one long polars table of the headline estimates with their intervals;
- ``tables()`` every table by a file-friendly name;
- ``to_dict()`` a JSON-ready dict;
- a one-line ``repr`` that says what the object is, not every table it holds.

Text in a result comes from the input (arm names, strategy keywords, answers), so every
renderer escapes it for its target: HTML entities, LaTeX specials, Markdown table pipes.

>>> import polars as pl
>>> s = Summary("a title", lines=["first finding", "second <b>"],
...             tables={"t": pl.DataFrame({"arm": ["x|y"], "share": [0.5]})})
>>> print(s)
a title
first finding
second <b>
>>> "second &lt;b&gt;" in s.as_html()
True
>>> "x\\\\|y" in s.as_markdown()
True
"""
from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl

__all__ = ["Summary", "ResultMixin", "frame_to_markdown", "frame_to_html", "frame_to_latex", "latex_escape"]


def _cell(value: Any, digits: int = 3) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:.{digits}g}" if abs(value) >= 1000 or (value != 0 and abs(value) < 1e-3) \
            else f"{value:.{digits}f}"
    if isinstance(value, (list, tuple)):
        return "; ".join(_cell(v, digits) for v in value)
    return str(value)


def _rows(frame: pl.DataFrame, max_rows: int | None) -> tuple[list[list[str]], int]:
    shown = frame if max_rows is None else frame.head(max_rows)
    rows = [[_cell(v) for v in row] for row in shown.iter_rows()]
    return rows, frame.height - shown.height


def frame_to_markdown(frame: pl.DataFrame, *, max_rows: int | None = 50) -> str:
    """A GitHub-flavoured Markdown table of ``frame`` (pipes and newlines in cells escaped)."""
    def esc(text: str) -> str:
        return (text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "\\<").replace(">", "\\>")
                .replace("\n", " ").replace("\r", " "))

    rows, hidden = _rows(frame, max_rows)
    lines = ["| " + " | ".join(esc(c) for c in frame.columns) + " |",
             "|" + "|".join("---" for _ in frame.columns) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    if hidden:
        lines.append(f"\n({hidden} more rows)")
    return "\n".join(lines)


def frame_to_html(frame: pl.DataFrame, *, max_rows: int | None = 50) -> str:
    """An HTML table of ``frame``; every header and cell is escaped."""
    rows, hidden = _rows(frame, max_rows)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in frame.columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    more = f"<p>({hidden} more rows)</p>" if hidden else ""
    return f"<table class='mechanism'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"


_LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                   "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                   "<": r"\textless{}", ">": r"\textgreater{}"}
_LATEX_RE = re.compile("|".join(re.escape(k) for k in _LATEX_SPECIALS))


def latex_escape(text: str) -> str:
    r"""``text`` with LaTeX's special characters escaped.

    Control and format characters are first written out by the rule every other output uses
    (:func:`mechanism.names.escape_control`), so a table shows an arm name as the terminal
    and the figures do.

    >>> latex_escape("50% of a_b & {c}")
    '50\\% of a\\_b \\& \\{c\\}'
    >>> latex_escape("rl\x1b[1m")
    'rl\\textbackslash{}x1b[1m'
    """
    from mechanism.names import escape_control

    text = escape_control(str(text))
    return _LATEX_RE.sub(lambda m: _LATEX_SPECIALS[m.group(0)], text)


def frame_to_latex(frame: pl.DataFrame, *, caption: str | None = None, label: str | None = None,
                   max_rows: int | None = None) -> str:
    r"""A booktabs ``table`` of ``frame`` for a paper (needs ``\usepackage{booktabs}``).

    Numeric columns are right-aligned; every cell is escaped.

    >>> print(frame_to_latex(pl.DataFrame({"arm": ["rl_1"], "share": [0.25]})))
    \begin{table}[t]
    \centering
    \begin{tabular}{lr}
    \toprule
    arm & share \\
    \midrule
    rl\_1 & 0.250 \\
    \bottomrule
    \end{tabular}
    \end{table}
    """
    rows, hidden = _rows(frame, max_rows)
    align = "".join("r" if dtype.is_numeric() else "l" for dtype in frame.dtypes)
    lines = [r"\begin{table}[t]", r"\centering"]
    if caption:
        lines.append(rf"\caption{{{latex_escape(caption)}}}")
    if label:
        lines.append(rf"\label{{{latex_escape(label)}}}")
    lines += [rf"\begin{{tabular}}{{{align}}}", r"\toprule",
              " & ".join(latex_escape(c) for c in frame.columns) + r" \\", r"\midrule"]
    lines += [" & ".join(latex_escape(c) for c in row) + r" \\" for row in rows]
    if hidden:
        lines.append(rf"\multicolumn{{{len(frame.columns)}}}{{l}}{{({hidden} more rows)}} \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines)


class Summary:
    """What a result found, in words and tables; prints as text, renders as Markdown, HTML, LaTeX.

    Parameters
    ----------
    title
        First line.
    lines
        The findings, one statement (with its interval) per line.
    tables
        Tables shown under the findings in Markdown, HTML and LaTeX (not in the text form).
    frame
        The result's long table (``to_frame()``). For code written when ``summary()`` returned
        that table, column access and DataFrame methods reach it (``s["arm"]``, ``s.filter(...)``).
    """

    def __init__(self, title: str, *, lines: Iterable[str] = (), tables: Mapping[str, pl.DataFrame] | None = None,
                 frame: pl.DataFrame | None = None) -> None:
        self.title = str(title)
        self.lines = [str(line) for line in lines]
        self.tables = dict(tables or {})
        self.frame = frame

    # -- text
    def as_text(self) -> str:
        """Plain text: the title and one line per finding."""
        return "\n".join([self.title, *self.lines])

    def __str__(self) -> str:
        return self.as_text()

    def __repr__(self) -> str:
        return self.as_text()

    def __contains__(self, text: str) -> bool:
        return text in self.as_text()

    def __add__(self, other: str) -> str:
        return self.as_text() + other

    def __radd__(self, other: str) -> str:
        return other + self.as_text()

    # -- the long table, for code that used summary() as a DataFrame
    def __getitem__(self, key: Any) -> Any:
        if self.frame is None:
            raise TypeError("this summary has no table")
        return self.frame[key]

    def __getattr__(self, name: str) -> Any:
        frame = self.__dict__.get("frame")
        if name.startswith("_") or frame is None:
            raise AttributeError(name)
        return getattr(frame, name)

    def equals(self, other: Any) -> bool:
        """Same text and same long table."""
        if isinstance(other, Summary):
            same_frame = (self.frame is None and other.frame is None) or (
                self.frame is not None and other.frame is not None and self.frame.equals(other.frame))
            return same_frame and self.as_text() == other.as_text()
        return self.frame is not None and isinstance(other, pl.DataFrame) and self.frame.equals(other)

    def __eq__(self, other: object) -> bool:
        return self.equals(other) if isinstance(other, (Summary, pl.DataFrame)) else NotImplemented

    __hash__ = None  # mutable, compared by content

    # -- renderings
    def as_markdown(self, *, max_rows: int | None = 50) -> str:
        """Markdown: the title as a heading, findings as a list, then each table."""
        def esc(text: str) -> str:
            return re.sub(r"([\\`*_\[\]<>|#])", r"\\\1", text.strip())

        parts = [f"**{esc(self.title)}**", ""]
        parts += [f"- {esc(line)}" for line in self.lines if line.strip()]
        for name, table in self.tables.items():
            parts += ["", f"*{esc(name)}*", "", frame_to_markdown(table, max_rows=max_rows)]
        return "\n".join(parts)

    def as_html(self, *, max_rows: int | None = 50) -> str:
        """HTML with every string escaped (arm and strategy names come from the input)."""
        items = "".join(f"<li>{html.escape(line.strip())}</li>" for line in self.lines if line.strip())
        parts = [f"<div class='mechanism-summary'><p><b>{html.escape(self.title)}</b></p><ul>{items}</ul>"]
        for name, table in self.tables.items():
            parts.append(f"<p><i>{html.escape(name)}</i></p>{frame_to_html(table, max_rows=max_rows)}")
        parts.append("</div>")
        return "".join(parts)

    def as_latex(self, *, max_rows: int | None = None) -> str:
        """LaTeX: the findings as an itemize list and each table as a booktabs table."""
        parts = [r"\paragraph{" + latex_escape(self.title) + "}"]
        if self.lines:
            parts += [r"\begin{itemize}"] + [r"\item " + latex_escape(line.strip()) for line in self.lines
                                              if line.strip()] + [r"\end{itemize}"]
        parts += [frame_to_latex(table, caption=name, max_rows=max_rows) for name, table in self.tables.items()]
        return "\n".join(parts)

    def _repr_html_(self) -> str:
        return self.as_html()

    def _repr_markdown_(self) -> str:
        return self.as_markdown()

    def _repr_latex_(self) -> str:
        return self.as_latex()


class ResultMixin:
    """The shared protocol. A result class defines ``to_frame()``, ``tables()``, ``to_dict()``,
    ``_summary_title()``, ``_summary_lines()`` and ``_headline()``; the mixin gives ``summary()``,
    ``to_latex()`` and the one-line repr (a dataclass result assigns ``__repr__ =
    ResultMixin.__repr__`` in its body, since ``@dataclass`` writes its own otherwise)."""

    def _summary_title(self) -> str:
        return type(self).__name__

    def _summary_lines(self) -> list[str]:
        return []

    def _summary_tables(self) -> dict[str, pl.DataFrame]:
        return {"estimates": self.to_frame()}

    def _headline(self) -> str:
        return ""

    def summary(self) -> Summary:
        """The findings: prints as text, renders as Markdown, HTML and LaTeX."""
        frame = self.to_frame()
        return Summary(self._summary_title(), lines=self._summary_lines(),
                       tables=self._summary_tables(), frame=frame)

    def to_latex(self, *, max_rows: int | None = None) -> str:
        """The main tables as booktabs LaTeX (the long table of estimates first)."""
        return self.summary().as_latex(max_rows=max_rows)

    def __repr__(self) -> str:
        head = self._headline()
        return f"<{type(self).__name__}{': ' + head if head else ''}>"


#: The ``category`` value of the pooled rows in a ``by_category`` table.
POOLED_CATEGORY = "all"


def by_category(runs: pl.DataFrame, by: str, pooled: Any, compute: Any) -> tuple[pl.DataFrame, list[str]]:
    """Per-category results beside the pooled one, as one long table keyed by ``category``.

    The study's verdicts are per task type: ``compute(mask)`` runs the same analysis on the
    rows of one category (``mask`` a boolean array over ``runs``) and its ``to_frame()`` is
    stacked under the pooled result's, with ``category`` first (``"all"`` for the pooled
    rows, a null category read as ``"(missing)"``). A category the analysis cannot run on
    (say, one arm never answered it) is left out and said in the returned notes.

    Parameters
    ----------
    runs
        The table analysed.
    by
        Name of the category column.
    pooled
        The result on every row.
    compute
        ``mask -> result`` for one category.

    Returns
    -------
    table, notes
    """
    from mechanism.errors import InputError

    if by not in runs.columns:
        raise InputError(f"no column `{by}` to split results by (columns: {', '.join(runs.columns)})", field=by)
    values = runs[by].cast(pl.String).fill_null("(missing)")
    if (values == POOLED_CATEGORY).any():
        raise InputError(f"column `{by}` holds the value {POOLED_CATEGORY!r}, which names the pooled rows; "
                         "rename that category", field=by)
    frames = [pooled.to_frame().with_columns(pl.lit(POOLED_CATEGORY).alias("category"))]
    notes = []
    for value in sorted(values.unique().to_list()):
        mask = (values == value).to_numpy()
        try:
            result = compute(mask)
        except InputError as err:
            notes.append(f"category {value!r} of `{by}` not analysed on its own: {err}")
            continue
        frames.append(result.to_frame().with_columns(pl.lit(value).alias("category")))
    table = pl.concat(frames, how="diagonal_relaxed")
    return table.select("category", pl.all().exclude("category")), notes
