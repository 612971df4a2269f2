"""Names made from untrusted text (arm and strategy names) that end up as file names, figure
text or terminal output.

Arm names come from the input files. Drawn as they are, a 1,000-character name makes a
figure saved with a tight bounding box grow to hundreds of megapixels, ``$...$`` is parsed as
mathtext (and an invalid formula crashes the plot), and control characters reach the
terminal. :func:`display_name` and :func:`safe_filename` are the two renderings every path
uses.
"""
from __future__ import annotations

import hashlib
import re

__all__ = ["safe_filename", "display_name", "escape_control"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def safe_filename(name: str, *, max_length: int = 80) -> str:
    """A file-name-safe rendering of an arm or strategy name (untrusted text).

    A name longer than ``max_length`` is cut and ends in a short hash of the whole name, so
    two long names that share their beginning still get different files.

    >>> safe_filename("../../etc/passwd")
    'etc_passwd'
    >>> safe_filename("a" * 100) != safe_filename("a" * 99 + "b")
    True
    >>> len(safe_filename("a" * 100))
    80
    """
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", str(name)).strip("._") or "unnamed"
    if len(cleaned) <= max_length:
        return cleaned
    tag = hashlib.blake2b(str(name).encode("utf-8", "backslashreplace"), digest_size=4).hexdigest()
    return f"{cleaned[: max(1, max_length - 9)]}-{tag}"


def escape_control(text: str) -> str:
    """``text`` with every control character (newlines, escape sequences, bidirectional
    overrides) written as a visible escape such as ``\\n`` or ``\\x1b``.

    >>> escape_control("base\\n\\x1b[31mrl")
    'base\\\\n\\\\x1b[31mrl'
    """
    return _CONTROL.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), str(text))


def display_name(name: object, *, max_length: int = 28, mathtext: bool = True) -> str:
    """A name to show in a figure, a table or on a terminal: control characters escaped,
    at most ``max_length`` characters (cut with an ellipsis), and with ``mathtext`` (for
    matplotlib text) every ``$`` escaped so that no mathtext is ever interpreted.

    Parameters
    ----------
    name
        The arm or strategy name (untrusted).
    max_length
        The longest rendering, ellipsis included.
    mathtext
        Escape ``$`` as ``\\$`` (matplotlib draws it as a dollar sign).

    Examples
    --------
    >>> display_name("$\\\\frac{x$")
    '\\\\$\\\\frac{x\\\\$'
    >>> display_name("x" * 100, max_length=8)
    'xxxxxxx…'
    >>> display_name("a\\nb", mathtext=False)
    'a\\\\nb'
    """
    text = escape_control(name)
    if len(text) > max_length:
        text = text[: max(1, max_length - 1)] + "\u2026"
    return text.replace("$", r"\$") if mathtext else text
