"""Error types and the skip report shared by every stage.

Every problem with user input becomes a :class:`InputError` whose message is one line
naming the file, the line (or record) and the field, so the CLI can print it and exit 2.
"""
from __future__ import annotations

from dataclasses import dataclass, field

MESSAGE_MAX = 2000  # characters of an error line: two 100k-character names must not make a 200 KB line


def one_line(text: object, *, limit: int = MESSAGE_MAX) -> str:
    """``text`` on one line (runs of whitespace, newlines included, become one space), cut in
    the middle with `` … `` when longer than ``limit`` so both its start and its end show.

    >>> one_line("a\\n b")
    'a b'
    >>> len(one_line("x" * 10_000, limit=100))
    100
    """
    flat = " ".join(str(text).split())
    if len(flat) <= limit:
        return flat
    head = (limit - 3) * 2 // 3
    return f"{flat[:head]} … {flat[len(flat) - (limit - 3 - head):]}"


class MechanismError(ValueError):
    """Base class of every error the toolkit raises on purpose."""


class ReadWarning(UserWarning):
    """A read that succeeded but whose numbers look wrong (an arm scoring 0 % while answers
    were found): the answer was probably taken from the wrong place."""


class CacheWarning(UserWarning):
    """A cache entry that was not whole or not ours (unreadable, a folder or a link where a file
    goes, a digest that does not match): moved aside and rebuilt, the result unchanged."""


class ComparisonWarning(UserWarning):
    """A comparison that ran on part of its input: the arms share fewer than all questions, so
    it says on how many it compared."""


class InputError(MechanismError):
    """Bad input: a malformed record, a missing field, an unknown format, an empty file.

    Parameters
    ----------
    reason
        What is wrong, lowercase, with the offending field in backticks.
    source
        The file (or other source) the record came from.
    line
        1-based line number, or record index where the file has no lines.
    field
        The offending field, when one is to blame.
    """

    def __init__(self, reason: str, *, source: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        self.reason = reason
        self.source = source
        self.line = line
        self.field = field
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.source is not None:  # one line, even for odd names, and cut when very long
            where.append(one_line(self.source, limit=300) or repr(str(self.source)))
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.field is not None and f"`{self.field}`" not in self.reason:
            where.append(f"field `{self.field}`")
        text = one_line(self.reason, limit=MESSAGE_MAX - 400)  # one line, whatever the input held
        return f"{': '.join([', '.join(where), text]) if where else text}"


class OutputError(MechanismError):
    """An output that could not be written (disk full, no permission, a file where a folder
    goes): one line naming the path; nothing that looks complete is left behind."""


@dataclass(frozen=True)
class SkippedRecord:
    """One record left out under ``errors="skip"``, and why."""

    source: str
    line: int | None
    field: str | None
    reason: str

    def __str__(self) -> str:
        return str(InputError(self.reason, source=self.source, line=self.line, field=self.field))


@dataclass
class ReadReport:
    """What a read kept and what it skipped:
    ``rows_in == rows_kept + len(skipped) + rows_filtered``.

    ``rows_filtered`` counts records a ``where=`` filter left out; ``unanswered`` the kept
    episodes that ended without a final answer (failures); ``warnings`` the loud notes (an arm
    that scores 0 % while answers were found), also issued as :class:`ReadWarning`;
    ``skipped_files`` the whole inputs left out under ``errors="skip"`` (a folder entry that is
    not a regular file, an empty file), which hold no records.
    """

    rows_in: int = 0
    rows_kept: int = 0
    skipped: list[SkippedRecord] = field(default_factory=list)
    formats: dict[str, str] = field(default_factory=dict)  # source -> detected format
    notes: list[str] = field(default_factory=list)
    rows_filtered: int = 0
    unanswered: int = 0
    warnings: list[str] = field(default_factory=list)
    # whole inputs left out under errors="skip" (a folder entry that is not a regular file, an
    # empty file), each with why; they hold no records, so they are not counted in rows_in
    skipped_files: list[SkippedRecord] = field(default_factory=list)

    def merge(self, other: ReadReport) -> None:
        self.rows_in += other.rows_in
        self.rows_kept += other.rows_kept
        self.rows_filtered += other.rows_filtered
        self.unanswered += other.unanswered
        self.warnings.extend(other.warnings)
        self.skipped.extend(other.skipped)
        self.skipped_files.extend(other.skipped_files)
        self.formats.update(other.formats)
        self.notes.extend(other.notes)
