"""Regular expressions a user or a file supplies, compiled by RE2: time linear in the text.

Python's ``re`` backtracks: ``^(\\w+\\s?)+$`` takes time exponential in a 35-character
observation that almost matches, and ``.*ANSWER: (.*)`` quadratic in a message where nothing
does. The texts these patterns run on (observations, questions, model messages) are
untrusted, and the patterns come from options, the command line or a saved space's
``space.json``; so every such pattern is compiled here, by RE2 (``google-re2``), whose
matching time is linear in the text whatever the pattern. A pattern RE2 cannot run
(backreferences, lookaround) is refused with one line that says so and names the option.

The toolkit's own fixed patterns (:mod:`mechanism.core.failures`' default reading, the readers'
tag scanners) stay on ``re``: they are written to be linear (anchored, bounded repeats) and
are tested so. An already compiled ``re.Pattern`` passed from Python is the caller's own
choice and is used as it is.

RE2 differs from ``re`` in a few classes: ``\\w``, ``\\d``, ``\\s`` and ``\\b`` are ASCII.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from mechanism.core.errors import InputError

__all__ = ["LinearPattern", "compile_linear", "PATTERN_MAX"]

PATTERN_MAX = 10_000  # characters of a user's pattern
# lone surrogates (from JSON escapes such as "\ud800") cannot be encoded to UTF-8 for RE2;
# each is read as U+FFFD, one character for one, so positions stay where they were
_SURROGATE = re.compile("[\ud800-\udfff]")


def _utf8_safe(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text)


class LinearPattern:
    """A compiled RE2 pattern with the part of ``re.Pattern``'s interface the toolkit uses
    (``search``, ``match``, ``fullmatch``, ``finditer``, ``pattern``, ``flags``, ``groups``).

    ``pattern`` is the user's text as given; ``flags`` the ``re`` flags it is read with
    (``re.I``, ``re.M``, ``re.S``), so a cache key built from both tells two readings apart.
    A text holding lone surrogates is matched with each read as U+FFFD.
    """

    __slots__ = ("pattern", "flags", "groups", "_re2")

    def __init__(self, pattern: str, flags: int, compiled: Any) -> None:
        self.pattern = pattern
        self.flags = flags
        self.groups = compiled.groups
        self._re2 = compiled

    def _call(self, method: str, text: str) -> Any:
        try:
            return getattr(self._re2, method)(text)
        except UnicodeEncodeError:
            return getattr(self._re2, method)(_utf8_safe(text))

    def search(self, text: str) -> Any:
        """The first match anywhere in ``text``, or ``None``."""
        return self._call("search", text)

    def match(self, text: str) -> Any:
        """A match at the start of ``text``, or ``None``."""
        return self._call("match", text)

    def fullmatch(self, text: str) -> Any:
        """A match of the whole of ``text``, or ``None``."""
        return self._call("fullmatch", text)

    def finditer(self, text: str) -> Iterator[Any]:
        """Every non-overlapping match, in order."""
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = _utf8_safe(text)
        return self._re2.finditer(text)

    def __repr__(self) -> str:
        return f"LinearPattern({self.pattern!r})"


def compile_linear(pattern: str | re.Pattern[str] | None, *, option: str, ignore_case: bool = False,
                   multiline: bool = False, dot_all: bool = False) -> LinearPattern | re.Pattern[str] | None:
    """``pattern`` compiled by RE2, or a one-line :class:`InputError` naming ``option``.

    Parameters
    ----------
    pattern
        The user's regular expression (``None``: none; a compiled ``re.Pattern``: used as it is).
    option
        The option's name, as the error message shows it (``error_pattern``, ``question_key``).
    ignore_case, multiline, dot_all
        Read as ``re.I``, ``re.M`` (``^`` and ``$`` at every line), ``re.S`` (``.`` matches a newline).

    Examples
    --------
    >>> p = compile_linear("^busy", option="error_pattern", ignore_case=True, multiline=True)
    >>> bool(p.search("ok\\nBUSY now")), p.flags == re.I | re.M
    (True, True)
    >>> compile_linear(r"(a)\\1", option="error_pattern")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    mechanism.core.errors.InputError: `error_pattern` uses a feature the linear-time engine (RE2) cannot run
    (invalid escape sequence: \\1): rewrite it without backreferences or lookaround
    """
    if pattern is None or isinstance(pattern, re.Pattern):
        return pattern
    if not isinstance(pattern, str) or not pattern:
        raise InputError(f"`{option}` must be a non-empty regular expression", field=option)
    if len(pattern) > PATTERN_MAX:
        raise InputError(f"`{option}` is {len(pattern)} characters long: at most {PATTERN_MAX}", field=option)
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"`{option}` holds a lone surrogate character, which no engine can match",
                         field=option) from None
    import re2  # noqa: PLC0415 - google-re2: only when a pattern option is given

    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.dot_nl = dot_all
    options.log_errors = False  # RE2 would print its own message on stderr
    flags = (re.I if ignore_case else 0) | (re.M if multiline else 0) | (re.S if dot_all else 0)
    # RE2's multi-line mode is an inline flag outside POSIX syntax (a prefix, not a group: a
    # group around the text would make "a)|(b" valid)
    source = f"(?m){pattern}" if multiline else pattern
    try:
        return LinearPattern(pattern, flags, re2.compile(source, options))
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        reason = " ".join(reason.replace(source, pattern).split())[:200]
        try:
            re.compile(pattern)
            valid = True
        except (re.error, RecursionError, OverflowError):
            valid = False
        if valid:
            raise InputError(f"`{option}` uses a feature the linear-time engine (RE2) cannot run ({reason}): "
                             "rewrite it without backreferences or lookaround", field=option) from None
        raise InputError(f"`{option}` is not a valid regular expression ({reason})", field=option) from None
