"""Text every output shares: Markdown escaped one way, Markdown tables, numbers with their intervals.

Text in a result comes from the input (arm names, strategy keywords, answers, observations), so
whatever is written as Markdown goes through :func:`md_escape`, the one escaper: control and
bidirectional characters are first shown as visible escapes (:func:`mechanism.core.names.escape_control`),
a newline is shown as ``\\n`` and runs of spaces collapse to one, so text cannot leave its line,
list item or table row, and every character that can open markup, a link, an image or raw HTML gets
a backslash. An underscore between two letters or digits (``ci_low``) cannot open emphasis in
CommonMark, so it is left as it is; anywhere else it is escaped.

Intervals are written one way too: :func:`interval_text` gives `` [low, high]`` (or nothing when
a bound is missing or not finite) and :func:`estimate_text` the value in front of it.

>>> md_escape("<b>x</b> | *y* a_b _c_")
'\\\\<b\\\\>x\\\\</b\\\\> \\\\| \\\\*y\\\\* a_b \\\\_c\\\\_'
>>> print(md_table(["arm", "share"], [["x|y", "0.5"]]))
| arm | share |
|---|---|
| x\\|y | 0.5 |
>>> estimate_text(0.41234, 0.38, 0.44)
'0.412 [0.380, 0.440]'
>>> interval_text(0.05, float("nan"))
''
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from mechanism.core.names import escape_control

__all__ = ["md_escape", "md_table", "interval_text", "estimate_text"]

#: Characters that start Markdown markup or raw HTML wherever they stand.
_MARKUP = frozenset("\\`*[]<>#|!{}")


def md_escape(text: object) -> str:
    """Inline Markdown showing ``text`` literally, on one line.

    Parameters
    ----------
    text : object
        Anything; it is converted with ``str``.

    Returns
    -------
    str
        The text with control characters shown as escapes, whitespace collapsed and every
        character that could start markup or raw HTML backslash-escaped.

    Examples
    --------
    >>> md_escape("line one\\nline two  [link](x) ![img](y)")
    'line one\\\\\\\\nline two \\\\[link\\\\](x) \\\\!\\\\[img\\\\](y)'
    >>> md_escape("__init__ snake_case")
    '\\\\_\\\\_init\\\\_\\\\_ snake_case'
    """
    shown = " ".join(escape_control(str(text)).split())
    out = []
    for i, ch in enumerate(shown):
        if ch in _MARKUP or (ch == "_" and not _intraword(shown, i)):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def _intraword(text: str, i: int) -> bool:
    return 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()


def md_table(columns: Sequence[object], rows: Iterable[Sequence[object]]) -> str:
    """A GitHub-flavoured Markdown pipe table, every header and cell through :func:`md_escape`.

    Parameters
    ----------
    columns : sequence
        The header cells.
    rows : iterable of sequences
        The body cells, already formatted as the caller wants them shown.

    Returns
    -------
    str
        The table, one line per row, no trailing newline.
    """
    lines = ["| " + " | ".join(md_escape(c) for c in columns) + " |",
             "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def interval_text(low: float | None, high: float | None, *, digits: int = 3, signed: bool = True,
                  scale: float = 1.0) -> str:
    """`` [low, high]`` with a leading space, or ``""`` when a bound is missing or not finite.

    Parameters
    ----------
    low, high : float or None
        The bounds.
    digits : int, default 3
        Decimals shown.
    signed : bool, default True
        Show a ``+`` on positive bounds (the bounds of a difference).
    scale : float, default 1.0
        Multiply both bounds first (100 for percentage points).

    Returns
    -------
    str

    Examples
    --------
    >>> interval_text(-0.02, 0.2)
    ' [-0.020, +0.200]'
    >>> interval_text(0.012, 0.034, scale=100, digits=0)
    ' [+1, +3]'
    >>> interval_text(None, 0.2)
    ''
    """
    if not (_finite(low) and _finite(high)):
        return ""
    sign = "+" if signed else ""
    return f" [{scale * low:{sign}.{digits}f}, {scale * high:{sign}.{digits}f}]"


def estimate_text(value: float | None, low: float | None = None, high: float | None = None, *,
                  digits: int = 3, signed: bool = False) -> str:
    """``0.412 [0.380, 0.440]``: a value and, when both bounds are finite, its interval.

    Parameters
    ----------
    value : float or None
        The estimate; ``n/a`` when it is missing or not finite.
    low, high : float or None, optional
        The interval's bounds.
    digits : int, default 3
        Decimals shown.
    signed : bool, default False
        Show a ``+`` on positive numbers (a difference).

    Returns
    -------
    str

    Examples
    --------
    >>> estimate_text(0.1, -0.02, 0.2, signed=True)
    '+0.100 [-0.020, +0.200]'
    >>> estimate_text(None)
    'n/a'
    """
    if not _finite(value):
        return "n/a"
    sign = "+" if signed else ""
    return f"{value:{sign}.{digits}f}" + interval_text(low, high, digits=digits, signed=signed)
