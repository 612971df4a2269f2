"""One protocol for every result object, as statsmodels' results have one.

Every analysis result (:class:`~mechanism.analysis.boundaries.Boundary`,
:class:`~mechanism.analysis.compare.Reweighting`, :class:`~mechanism.analysis.information.Integration`,
:class:`~mechanism.analysis.checkpoints.Track`, :class:`~mechanism.analysis.passkt.Consistency`,
:class:`~mechanism.analysis.passkt.PassEstimate`, :class:`~mechanism.analysis.passkt.PassTable`, ...)
derives from :class:`Result` and offers the same things:

- ``to_frame()``: one long polars table of the headline estimates;
- ``summary()`` returns a :class:`Summary`: it prints as plain text and renders as Markdown,
  HTML and LaTeX (in a notebook it shows as an HTML table of its findings);
- ``verdict()`` the finding in one line;
- ``tables()`` every table by a file-friendly name;
- ``to_dict()`` a JSON-ready dict;
- a one-line ``repr`` that says what the object is, not every table it holds.

Conventions, the same in every result:

- **Columns.** ``to_frame()`` has the result's declared key columns first (the class attribute
  ``key_columns``, e.g. ``base, treated, weighting`` or ``checkpoint, k, t``), then any further
  column the result declares (``extra_columns``, e.g. ``planted``, ``ci_level``), then the
  shared columns :data:`SHARED_COLUMNS` (the same names and dtypes everywhere), so every
  ``to_frame()`` ends in exactly ``quantity, estimate, ci_low, ci_high``:
  ``..., detectable, quantity, estimate, ci_low, ci_high``.
- **Pairs.** A result that compares two arms names them ``base`` and ``treated`` (key columns
  of those names; a difference is treated - base).
- **Tables.** ``tables()`` always holds ``"estimates"`` (``to_frame()``); its other names are
  plain snake_case without the result's name as a prefix (``tests``, ``split``, ``by_category``).
- **Quantities.** A key is a column, never part of a quantity's name: ``pass1`` with the arm
  in ``arm``, not ``pass1_base``; ``pass_at_kt`` with ``k`` and ``t`` columns, not ``PASS@(1,5)``.

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
from typing import Any, ClassVar, TypeVar

import polars as pl

from mechanism.core.errors import InputError
from mechanism.core.names import escape_control
from mechanism.core.text import md_escape, md_table

__all__ = ["Summary", "Result", "TableResult", "SHARED_COLUMNS", "VALUE_COLUMNS", "conform_frame",
           "frame_to_markdown", "frame_to_html", "frame_to_latex", "latex_escape"]

#: The columns every ``to_frame()`` ends with, in order, and their dtypes. ``detectable`` is the
#: smallest true effect the design detects with probability 0.8 at the interval's level
#: (:func:`mechanism.core.resample.detectable_effect`), null where the result does not compute one.
SHARED_COLUMNS: dict[str, pl.DataType] = {"detectable": pl.Float64(), "quantity": pl.String(),
                                          "estimate": pl.Float64(), "ci_low": pl.Float64(), "ci_high": pl.Float64()}
#: The last four columns of every ``to_frame()``.
VALUE_COLUMNS: tuple[str, ...] = ("quantity", "estimate", "ci_low", "ci_high")


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
    """A GitHub-flavoured Markdown table of ``frame``, every cell through :func:`mechanism.core.text.md_escape`."""
    rows, hidden = _rows(frame, max_rows)
    lines = [md_table(frame.columns, rows)]
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
    (:func:`mechanism.core.names.escape_control`), so a table shows an arm name as the terminal
    and the figures do.

    >>> latex_escape("50% of a_b & {c}")
    '50\\% of a\\_b \\& \\{c\\}'
    >>> latex_escape("rl\x1b[1m")
    'rl\\textbackslash{}x1b[1m'
    """
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
    """

    def __init__(self, title: str, *, lines: Iterable[str] = (),
                 tables: Mapping[str, pl.DataFrame] | None = None) -> None:
        self.title = str(title)
        self.lines = [str(line) for line in lines]
        self.tables = dict(tables or {})

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

    def equals(self, other: Summary) -> bool:
        """Same text and the same tables."""
        return (isinstance(other, Summary) and self.as_text() == other.as_text()
                and list(self.tables) == list(other.tables)
                and all(self.tables[n].equals(other.tables[n]) for n in self.tables))

    def __eq__(self, other: object) -> bool:
        return self.equals(other) if isinstance(other, Summary) else NotImplemented

    __hash__ = None  # mutable, compared by content

    # -- renderings
    def as_markdown(self, *, max_rows: int | None = 50) -> str:
        """Markdown: the title as a heading, findings as a list, then each table."""
        parts = [f"**{md_escape(self.title)}**", ""]
        parts += [f"- {md_escape(line)}" for line in self.lines if line.strip()]
        for name, table in self.tables.items():
            parts += ["", f"*{md_escape(name)}*", "", frame_to_markdown(table, max_rows=max_rows)]
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


def conform_frame(frame: pl.DataFrame, keys: Mapping[str, pl.DataType | None], *,
                  extra: Mapping[str, pl.DataType | None] | None = None) -> pl.DataFrame:
    """``frame`` in the shared schema: ``keys``, then ``extra``, then :data:`SHARED_COLUMNS`.

    A key or shared column the frame lacks is added as nulls of its dtype; a dtype of ``None``
    keeps the frame's own (keys taken from the input, such as ``by`` columns). A column that is
    neither declared nor shared is a programming error, not something to drop quietly.

    >>> conform_frame(pl.DataFrame({"arm": ["a"], "quantity": ["accuracy"], "estimate": [0.5]}),
    ...               {"arm": pl.String}).columns
    ['arm', 'detectable', 'quantity', 'estimate', 'ci_low', 'ci_high']
    """
    extra = dict(extra or {})
    declared = {**keys, **extra, **SHARED_COLUMNS}
    unknown = [c for c in frame.columns if c not in declared]
    if unknown:
        raise TypeError(f"columns {unknown} are not declared key columns of this result")
    exprs = []
    for name, dtype in declared.items():
        if name in frame.columns:
            exprs.append(pl.col(name) if dtype is None else pl.col(name).cast(dtype))
        elif name in SHARED_COLUMNS or name in keys:
            exprs.append(pl.lit(None, dtype=dtype or pl.String).alias(name))
    return frame.select(exprs)


class Result:
    """The shared protocol of every result object.

    A result class declares ``key_columns`` (name -> dtype, ``None`` to keep the input's dtype)
    and implements ``_estimates()`` (a frame with those keys and the shared columns; missing
    ones are filled with nulls), ``to_dict()``, ``verdict()`` and ``_summary_lines()``; it may
    refine ``tables()``, ``_summary_title()``, ``_summary_tables()`` and ``_headline()``. The base
    gives ``to_frame()`` (in the shared schema), ``summary()``, ``to_latex()`` and the one-line repr
    (a dataclass result is declared with ``repr=False`` so that it keeps this repr).
    """

    #: Key columns of ``to_frame()``, before the shared ones: name -> dtype.
    key_columns: ClassVar[Mapping[str, pl.DataType | None]] = {}
    #: Further columns some results carry between the keys and the shared ones (e.g. a planted value).
    extra_columns: ClassVar[Mapping[str, pl.DataType | None]] = {}

    def _keys(self) -> Mapping[str, pl.DataType | None]:
        """The key columns of this result (a class attribute; a result grouped by columns the
        caller chose puts them first)."""
        return self.key_columns

    def _estimates(self) -> pl.DataFrame:
        raise NotImplementedError

    def to_frame(self) -> pl.DataFrame:
        """Long table of the headline estimates: the key columns, any extra ones, then
        ``detectable, quantity, estimate, ci_low, ci_high``."""
        return conform_frame(self._estimates(), self._keys(), extra=self.extra_columns)

    def tables(self) -> dict[str, pl.DataFrame]:
        """Every table by a file-friendly name."""
        return {"estimates": self.to_frame()}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        raise NotImplementedError

    def verdict(self) -> str:
        """The finding in one line."""
        raise NotImplementedError

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
        return Summary(self._summary_title(), lines=self._summary_lines(), tables=self._summary_tables())

    def to_latex(self, *, max_rows: int | None = None) -> str:
        """The main tables as booktabs LaTeX (the long table of estimates first)."""
        return self.summary().as_latex(max_rows=max_rows)

    def __repr__(self) -> str:
        head = self._headline()
        return f"<{type(self).__name__}{': ' + head if head else ''}>"


_T = TypeVar("_T", bound="TableResult")


class TableResult(pl.DataFrame, Result):
    """A result that is its own wide table: a ``polars.DataFrame`` (every DataFrame method and
    ``isinstance(x, pl.DataFrame)`` hold, and it prints as the table it is) that is also a
    :class:`Result`, for functions whose callers index the table they return.

    A subclass declares ``value_column`` (the wide column that is ``estimate`` in
    ``to_frame()``), ``quantity`` (its name there), ``table_name`` (the wide table's name in
    ``tables()``) and ``key_columns``, and implements ``verdict()``. ``notes`` hold what the
    caller should know (small samples, how something was counted); ``pl.DataFrame(table)`` is
    the wide table as a plain frame.

    Examples
    --------
    >>> class Means(TableResult):
    ...     key_columns = {"arm": pl.String()}
    ...     value_column, quantity, table_name = "mean", "mean", "means"
    >>> means = Means.with_notes(pl.DataFrame({"arm": ["a"], "mean": [0.5]}), ["one sample"])
    >>> isinstance(means, pl.DataFrame), means.notes, means["mean"].to_list()
    (True, ('one sample',), [0.5])
    >>> means.to_frame().columns
    ['arm', 'detectable', 'quantity', 'estimate', 'ci_low', 'ci_high']
    >>> sorted(means.tables()), means.to_dict()
    (['estimates', 'means'], {'notes': ['one sample'], 'mean': [{'arm': 'a', 'mean': 0.5}]})
    """

    notes: tuple[str, ...] = ()
    #: The wide column whose values are ``estimate`` in ``to_frame()``.
    value_column: ClassVar[str] = "estimate"
    #: The ``quantity`` of every row of ``to_frame()``.
    quantity: ClassVar[str] = "estimate"
    #: The wide table's name in ``tables()`` and ``summary()``.
    table_name: ClassVar[str] = "table"

    @classmethod
    def with_notes(cls: type[_T], frame: pl.DataFrame, notes: Iterable[str] = ()) -> _T:
        """``frame`` as this result, holding ``notes``."""
        out = cls(frame)
        out.notes = tuple(notes)
        return out

    def _wide(self) -> pl.DataFrame:
        """The wide table ``to_frame()`` is read from (a subclass may fill in a key it implies)."""
        return pl.DataFrame(self)

    def _estimates(self) -> pl.DataFrame:
        """One row per row of the wide table: its keys, ``value_column`` as ``estimate``, its interval."""
        frame = self._wide()
        keep = [c for c in (*self._keys(), *self.extra_columns, "detectable") if c in frame.columns]
        return frame.select(*keep, pl.lit(self.quantity).alias("quantity"), pl.col(self.value_column).alias("estimate"),
                            *[c for c in ("ci_low", "ci_high") if c in frame.columns])

    def tables(self) -> dict[str, pl.DataFrame]:
        """``estimates`` (:meth:`to_frame`) and the wide table as a plain DataFrame (``table_name``)."""
        return {"estimates": self.to_frame(), self.table_name: pl.DataFrame(self)}

    def to_dict(self, *, as_series: bool | None = None) -> dict[str, Any]:
        """JSON-ready dict: the notes and the wide table as a list of rows (under ``value_column``).

        With ``as_series`` given, polars' own ``DataFrame.to_dict`` (column name -> values).
        """
        if as_series is not None:
            return pl.DataFrame.to_dict(self, as_series=as_series)
        return {"notes": list(self.notes), self.value_column: pl.DataFrame(self).to_dicts()}

    def _summary_lines(self) -> list[str]:
        return [f"note: {n}" for n in self.notes]

    def _summary_tables(self) -> dict[str, pl.DataFrame]:
        return {self.table_name: pl.DataFrame(self)}

    def _headline(self) -> str:
        return f"{self.height} rows"

    __repr__ = pl.DataFrame.__repr__  # prints as the table it is, as a DataFrame does


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
