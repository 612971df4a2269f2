"""The text of a ``where=`` filter, checked before polars parses it.

polars' SQL parser and its expression tree recurse: a chain of 4,000 ``OR`` terms took 46 s
and 3.1 GB before a panic, and 7,000 crashed the process. A filter is a user's option, but it
may come from a script that builds it from data, so it is bounded here, in one linear scan
that also turns Python's ``==`` into SQL's ``=`` outside quoted text: at most
:data:`WHERE_MAX_CHARS` characters, :data:`WHERE_MAX_TERMS` boolean operators (``AND``,
``OR``, ``NOT``) and :data:`WHERE_MAX_DEPTH` levels of parentheses. A long ``IN (...)`` list
is one term and stays cheap.
"""
from __future__ import annotations

import re

from mechanism.core.errors import InputError

WHERE_MAX_CHARS = 200_000
WHERE_MAX_TERMS = 256
WHERE_MAX_DEPTH = 32
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BOOLEAN = {"and", "or", "not"}


def prepare_sql(where: str) -> str:
    """``where`` as polars' SQL takes it (``==`` written ``=``), or a one-line
    :class:`~mechanism.core.errors.InputError` when it is above the bounds.

    >>> prepare_sql("trial == 1 AND name = 'a==b'")
    "trial = 1 AND name = 'a==b'"
    """
    if len(where) > WHERE_MAX_CHARS:
        raise InputError(f"`where` is {len(where)} characters long: at most {WHERE_MAX_CHARS}", field="where")
    out: list[str] = []
    terms = depth = deepest = 0
    i, n = 0, len(where)
    while i < n:
        ch = where[i]
        if ch in "'\"":  # quoted text or identifier: copied whole ('' and "" escape themselves)
            end = where.find(ch, i + 1)
            while end != -1 and end + 1 < n and where[end + 1] == ch:
                end = where.find(ch, end + 2)
            end = n - 1 if end == -1 else end
            out.append(where[i:end + 1])
            i = end + 1
            continue
        if ch == "=" and where.startswith("==", i):
            out.append("=")
            i += 2
            continue
        if ch == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == ")":
            depth -= 1
        elif ch.isalpha() or ch == "_":
            m = _WORD.match(where, i)
            if m is not None:
                word = m.group(0)
                terms += word.lower() in _BOOLEAN
                out.append(word)
                i = m.end()
                continue
        out.append(ch)
        i += 1
    if terms > WHERE_MAX_TERMS:
        raise InputError(f"`where` joins {terms} conditions with AND/OR/NOT: at most {WHERE_MAX_TERMS} (for many "
                         "values of one field, write `field IN (a, b, ...)`)", field="where")
    if deepest > WHERE_MAX_DEPTH:
        raise InputError(f"`where` nests parentheses {deepest} deep: at most {WHERE_MAX_DEPTH}", field="where")
    return "".join(out)
