"""Names made from untrusted text (arm and strategy names) that end up as file names, figure
text or terminal output.

Arm names come from the input files. Drawn as they are, a 1,000-character name makes a
figure saved with a tight bounding box grow to hundreds of megapixels, ``$...$`` is parsed as
mathtext (and an invalid formula crashes the plot), and control characters reach the
terminal. :func:`display_name` and :func:`safe_filename` are the two renderings every path
uses. :func:`escape_control` is the one rule for characters that steer a terminal or a line
(controls, ANSI escapes, bidirectional overrides, zero-width characters): the readers apply it
to arm names, :func:`display_name` to figure text, and the command line's ``terminal_safe``
to everything it prints, so a name reads the same everywhere.
"""
from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from typing import TYPE_CHECKING

from mechanism.core.errors import InputError

if TYPE_CHECKING:
    import polars as pl

__all__ = ["safe_filename", "file_stems", "pair_folders", "display_name", "visible_name", "escape_control",
           "escape_formula", "csv_safe", "write_csv", "natural_key"]

# The Unicode categories escape_control writes as escapes: controls (C0, DEL, C1; Cc),
# format characters (bidirectional overrides and isolates, zero-width characters, the
# byte-order mark, soft hyphen; Cf), lone surrogates (Cs), line and paragraph separators
# (Zl, Zp). Everything else, spaces and private-use characters included, is shown as it is.
ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# The escapes escape_control writes (those of Python's ``unicode_escape`` codec).
_ESCAPE_FORM = re.compile(r"\\(?:[ntr]|x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8})")
_SHORT = {"n": "\n", "t": "\t", "r": "\r"}  # the escapes of one letter, back


def _short_hash(name: object) -> str:
    return hashlib.blake2b(str(name).encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()


def safe_filename(name: str, *, max_length: int = 80) -> str:
    """A file-name-safe rendering of an arm or strategy name (untrusted text).

    The name is NFKC-normalised (full-width and other compatibility forms become their plain
    letters and digits); letters, marks and digits of every script are kept, with ``.``,
    ``_`` and ``-``; every other run of characters (separators, slashes, controls,
    punctuation) becomes ``_``. A name longer than ``max_length`` bytes of UTF-8 is cut and
    ends in a short hash of the whole name, so two long names that share their beginning still
    get different files (and a file name never passes the 255 bytes file systems allow).
    Two names that render alike here get told apart by :func:`file_stems`.

    >>> safe_filename("../../etc/passwd")
    'etc_passwd'
    >>> safe_filename("強化学習"), safe_filename("обучение"), safe_filename("ｒｌ")
    ('強化学習', 'обучение', 'rl')
    >>> safe_filename("a" * 100) != safe_filename("a" * 99 + "b")
    True
    >>> len(safe_filename("a" * 100)), len(safe_filename("学" * 100).encode()) <= 80
    (80, True)
    """
    text = unicodedata.normalize("NFKC", str(name).encode("utf-8", "surrogatepass").decode("utf-8", "replace"))
    marked = "".join(ch if ch in "._-" or unicodedata.category(ch)[0] in "LMN" else "\0" for ch in text)
    cleaned = re.sub("\0+", "_", marked).strip("._") or "unnamed"
    if len(cleaned.encode("utf-8")) <= max_length:
        return cleaned
    room = max(1, max_length - 9)
    cut = cleaned.encode("utf-8")[:room].decode("utf-8", "ignore") or cleaned[0]
    return f"{cut}-{_short_hash(name)}"


def file_stems(names: list[str] | tuple[str, ...], *, max_length: int = 80) -> dict[str, str]:
    """A file stem for each distinct name, distinct between names: :func:`safe_filename`, and
    where two names would share a stem (``"x y"`` and ``"x_y"``, ``"ｒｌ"`` and ``"rl"``) each
    of them ends in a short hash of the name itself.

    >>> file_stems(["rl", "x y", "x_y"])["rl"]
    'rl'
    >>> len(set(file_stems(["x y", "x_y"]).values()))
    2
    """
    distinct = list(dict.fromkeys(str(n) for n in names))
    plain = {n: safe_filename(n, max_length=max_length) for n in distinct}
    taken: dict[str, int] = {}
    for stem in plain.values():
        taken[stem.casefold()] = taken.get(stem.casefold(), 0) + 1  # case-insensitive file systems too
    out = {}
    for n, stem in plain.items():
        if taken[stem.casefold()] > 1:
            stem = f"{safe_filename(n, max_length=max_length - 9)}-{_short_hash(n)}"
        out[n] = stem
    if len({v.casefold() for v in out.values()}) < len(out):  # two 32-bit hashes alike: never silently

        raise InputError(f"names {[display_name(n, mathtext=False) for n in sorted(distinct)[:4]]} give clashing "
                         "file names even with their hashes: rename one", field="arm")
    return out


def pair_folders(others: list[str] | tuple[str, ...], base: str) -> dict[str, str]:
    """The output folder ``<arm>_vs_<base>`` of each compared arm, distinct for distinct arms
    (:func:`file_stems` over the arms and the base)."""
    stems = file_stems([*others, base])
    return {arm: f"{stems[arm]}_vs_{stems[base]}" for arm in dict.fromkeys(others)}


def escape_control(text: object, *, keep: str = "") -> str:
    """``text`` with every character that can steer a terminal or the layout of a line
    written as a visible escape: the one rule for untrusted text (arm names, strategy names,
    answers, file names) shown on a terminal, in a table or in a figure.

    Escaped are the characters of the Unicode categories Cc (C0 and C1 controls, DEL, and
    so the ESC that starts an ANSI sequence), Cf (format characters: bidirectional overrides
    and isolates such as U+202E and U+2066-2069, zero-width characters, the byte-order
    mark), Cs (lone surrogates), Zl and Zp (U+2028, U+2029). Each becomes the escape Python
    writes for it: ``\\n``, ``\\t``, ``\\r``, ``\\x1b``, ``\\u202e``, ``\\U000e0001``.
    Every other character (letters of any script, CJK, emoji, spaces, backslashes) is kept,
    so text without an escaped character comes back unchanged.

    The rule is idempotent: escaping twice gives what escaping once gives (its output has no
    escaped character left, and a backslash is never doubled), so a name escaped when read
    is shown the same by every later layer that escapes again. The price: a text that already
    holds an escape as literal characters (the four characters ``\\x1b``) is shown exactly
    as the text holding the character itself (ESC). Among texts that hold no such literal
    escape the rendering is one to one, and reversible: each escape stands for exactly one
    character.

    Parameters
    ----------
    text
        Untrusted text (anything else is shown as its ``str``).
    keep
        Characters left as they are: a terminal report keeps its own newlines and tabs
        (``keep="\\n\\t"``).

    Returns
    -------
    str
        The text with no character of the categories above, except those in ``keep``.

    Examples
    --------
    >>> escape_control("base\\n\\x1b[31mrl")
    'base\\\\n\\\\x1b[31mrl'
    >>> escape_control("rl\\u202eZ\\u200b")
    'rl\\\\u202eZ\\\\u200b'
    >>> escape_control("café 強化学習 🚀")
    'café 強化学習 🚀'
    >>> escape_control(escape_control("a\\x1b")) == escape_control("a\\x1b")
    True
    """
    text = str(text)
    if text.isprintable():  # fast path: a printable text holds no character of those categories
        return text
    return "".join(ch if ch.isprintable() or ch in keep or unicodedata.category(ch) not in ESCAPED_CATEGORIES
                   else ch.encode("unicode_escape").decode("ascii") for ch in text)


def _unescape_control(text: str) -> str:
    """The text :func:`escape_control` was given, for text that held no literal escape:
    every escape it writes turned back into its character."""
    def one(m: re.Match[str]) -> str:
        body = m.group(0)[1:]
        return _SHORT[body] if len(body) == 1 else chr(int(body[1:], 16))
    return _ESCAPE_FORM.sub(one, text)


VISIBLE_SPACE = "\u2420"  # ␠, SYMBOL FOR SPACE


def visible_name(name: object) -> str:
    """``name`` with the whitespace that would hide a difference made visible: a space at
    either end, or after another space, is drawn ``␠`` (HTML collapses runs of spaces and
    trims none visibly, so ``rl`` and ``rl `` would read alike), and any other space character
    (a no-break or thin space) is escaped as ``\\uXXXX``; a literal ``␠`` is escaped too,
    so that no two names read alike. Control characters are left to :func:`escape_control`.

    Examples
    --------
    >>> visible_name("rl ")
    'rl␠'
    >>> visible_name(" a  b")
    '␠a ␠b'
    >>> visible_name("rl\u00a0")
    'rl\\\\u00a0'
    >>> visible_name("rl") == "rl"
    True
    """
    text = str(name)
    if not any(ch.isspace() or ch == VISIBLE_SPACE for ch in text) or not text:
        return text
    out = []
    last = len(text) - 1
    for i, ch in enumerate(text):
        if ch == " ":
            edge = i == 0 or i == last or text[i - 1] == " " or text[i + 1:].strip(" ") == ""
            out.append(VISIBLE_SPACE if edge else ch)
        elif ch == VISIBLE_SPACE or (ch.isspace() and unicodedata.category(ch) == "Zs"):
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


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


# What a spreadsheet reads as the start of a formula (OWASP, "CSV Injection"): = + - @, and a
# tab or carriage return before one of them. A cell that is a plain number ("-3", "+1.5e3") is
# no formula and is left alone.
_FORMULA_START = r"^[=+\-@\t\r]"
_NUMBER = r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_PLAIN_NUMBER = f"^{_NUMBER}$"  # for polars (Rust regex: $ is the end of the text only)


def escape_formula(cell: str) -> str:
    """``cell`` as OWASP recommends writing untrusted text into a CSV cell: a leading ``'``
    when it starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return and is not a
    plain number, so a spreadsheet shows it as text instead of running it as a formula.

    >>> escape_formula('=HYPERLINK("http://x", "rl")'), escape_formula("-0.5"), escape_formula("rl")
    ('\\'=HYPERLINK("http://x", "rl")', '-0.5', 'rl')
    """
    if cell[:1] and cell[0] in "=+-@\t\r" and not re.fullmatch(_NUMBER, cell):
        return "'" + cell
    return cell


def csv_safe(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with :func:`escape_formula` applied to every text cell and column name (one
    vectorised pass per text column): what every CSV writer of the toolkit writes."""
    import polars as pl  # noqa: PLC0415 - polars: a quarter second to import; this module is otherwise standard library

    text = [c for c, t in frame.schema.items() if t in (pl.String, pl.Categorical) or isinstance(t, pl.Enum)]
    if text:
        col = [pl.col(c).cast(pl.String) for c in text]
        frame = frame.with_columns(
            pl.when(e.str.contains(_FORMULA_START) & ~e.str.contains(_PLAIN_NUMBER))
            .then(pl.lit("'") + e).otherwise(e).alias(c) for c, e in zip(text, col))
    renamed = {c: escape_formula(c) for c in frame.columns if escape_formula(c) != c}
    return frame.rename(renamed) if renamed else frame


def write_csv(frame: pl.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write ``frame`` as CSV with every text cell made formula-safe (:func:`csv_safe`): the one
    CSV writer of the toolkit, since arm, question and strategy names come from the input."""
    csv_safe(frame).write_csv(path)


def natural_key(name: str) -> tuple:
    """Sort key that orders the digit runs of a name by value (checkpoints, arms in figures).

    >>> sorted(["ckpt200", "ckpt50", "ckpt1000", "base"], key=natural_key)
    ['base', 'ckpt50', 'ckpt200', 'ckpt1000']
    """
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part)
                 for part in re.split(r"(\d+)", str(name)) if part != "")
