"""Read trajectory files of any supported format into the canonical table.

One module per format (``canonical``, ``searchr1``, ``openai``, ``react``, ``atif``, ``swe``,
``openhands``, ``fireact``, ``inspect`` in ``inspectlog``), each with ``detect(record, fields)`` and
``parse(record, fields)``; this module finds the files, detects formats, and turns parsed records into validated rows::

    from mechanism.readers import read
    runs, report = read(["base.searchr1.jsonl", "rl.searchr1.jsonl"], report=True)
    runs = read("trajs/", format="fireact")
"""
from __future__ import annotations

import pickle
import re
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from itertools import islice
from os import PathLike
from pathlib import Path
from typing import Any, Literal, NamedTuple

import polars as pl

from mechanism.core.errors import InputError, ReadReport, ReadWarning, SkippedRecord
from mechanism.core.names import safe_filename
from mechanism.core.options import check_choice
from mechanism.core.progress import progress as _progress
from mechanism.core.schema import validate
from mechanism.readers import (
    _parts,
    atif,
    canonical,
    claudecode,
    codex,
    fireact,
    inspectlog,
    openai,
    openhands,
    react,
    searchr1,
    swe,
)
from mechanism.readers._answer import compile_answer_pattern
from mechanism.readers._build import F1_THRESHOLD, SCORERS, Columns, ReadOptions, Tally, build_row
from mechanism.readers._fields import MISSING, FieldMap, get_path
from mechanism.readers._io import (
    EmptyInput,
    check_nonempty,
    check_surrogates,
    container,
    folder_files,
    frame_records,
    iter_jsonl,
    json_records,
    load_json,
    read_csv,
    read_parquet,
    unwrap,
)
from mechanism.readers._sessions import MESSAGES
from mechanism.readers._where import prepare_sql

__all__ = ["read", "detect_format", "check_read_options", "input_paths", "ReadSettings", "FORMATS", "SCORERS",
           "F1_THRESHOLD"]

FORMATS = ("canonical", "searchr1", "openai", "react", "atif", "swe", "openhands", "claudecode", "codex", "fireact",
           "inspect")
_MODULES = {m.FORMAT: m for m in (canonical, searchr1, openai, react, atif, swe, openhands, claudecode, codex, fireact,
                                  inspectlog)}
# formats whose file is one episode, its lines events (each module's `detect_lines`, `session_record`)
_SESSION_FORMATS = {m.FORMAT: m for m in (claudecode, codex)}
_FILE_SUFFIXES = (".jsonl", ".ndjson", ".jsonlines", ".json", ".traj", ".parquet", ".pq", ".csv", ".tsv", ".eval")
_DETECT_RECORDS = 20  # records looked at to detect a format
_DETECT_LINES = 200  # lines decoded to find them (a session file's bookkeeping lines may come first)
# the formats a record can show, by priority: a record that shows tool calls says more than one that
# happens to have none (a format's own mark, `trajectory_format` or `schema_version`, first)
_DETECT_ORDER = ("swe", "openhands", "atif", "canonical", "openai", "react", "searchr1")

PathArg = str | PathLike | Sequence[str | PathLike]
# read's fixed choices (checked by mechanism.core.options.check_choice; the CLI offers the same)
Errors = Literal["raise", "skip"]
Unanswered = Literal["fail", "error"]
MultiAction = Literal["first", "last"]
Duplicates = Literal["keep", "drop"]
_INT64_MAX = 2**63 - 1


def input_paths(path_or_paths: PathArg, *, skipped: list[SkippedRecord] | None = None) -> list[Path]:
    """The files :func:`read` visits for ``path_or_paths``, in order: a folder's trajectory
    files (.jsonl, .json, .parquet, .csv, ...) sorted by name, a file as it is; a conversation
    the OpenHands SDK saved (:func:`~mechanism.readers.openhands.is_conversation`) as its folder,
    and a folder holding only such conversations as each of them, sorted by name.

    A folder's entry with a trajectory suffix that is not a regular file (a dangling symlink,
    a FIFO, a device, a socket, a folder) is refused with one :class:`InputError` naming it,
    or, given a ``skipped`` list (``errors="skip"``), left out and listed there.
    """
    items = [path_or_paths] if isinstance(path_or_paths, (str, PathLike)) else list(path_or_paths)
    if not items:
        raise InputError("no input files given", field="path")
    out: list[Path] = []
    for item in items:
        if not isinstance(item, (str, PathLike)):
            raise InputError(f"expected a file path, got {type(item).__name__}", field="path")
        p = Path(item)
        if p.is_dir() and openhands.is_conversation(p):
            out.append(p)  # one episode, its events one a file
        elif p.is_dir():
            found, others = folder_files(p, _FILE_SUFFIXES)
            for entry, what in others:
                reason = f"not a regular file: {what}, in a folder of trajectory files"
                if skipped is None:
                    raise InputError(f"{reason} (remove it, or read with errors='skip' to leave it out, listed)",
                                     source=str(entry), field="path")
                skipped.append(SkippedRecord(str(entry), None, "path", reason))
            conversations = [] if found or others else [c for c in sorted(p.iterdir())
                                                         if c.is_dir() and openhands.is_conversation(c)]
            out.extend(conversations)
            if not found and not others and not conversations:
                subfolders = sorted(c.name for c in p.iterdir() if c.is_dir())
                hint = f"; it has the subfolders {', '.join(subfolders[:8])}" if subfolders else ""
                raise InputError(f"folder holds no trajectory files (.jsonl, .json, .parquet, .csv){hint}",
                                 source=str(p))
            out.extend(found)
        else:
            out.append(p)
    return out


def _detect_records(records: Iterable[Any], fields: FieldMap) -> str | None:
    """The format the first records show, by priority: a record that shows tool calls says
    more than one that happens to have none."""
    seen: set[str] = set()
    chat_without_tools = plain_text = False
    for rec in records:
        if not isinstance(rec, Mapping):
            continue
        for fmt in _DETECT_ORDER:
            if _MODULES[fmt].detect(rec, fields):
                seen.add(fmt)
        messages = fields.get(rec, "messages")
        if isinstance(messages, list) and messages and all(isinstance(m, Mapping) and "role" in m for m in messages):
            chat_without_tools = True
        if isinstance(fields.get(rec, "text"), str):
            plain_text = True
    for fmt in _DETECT_ORDER:
        if fmt in seen:
            return fmt
    if chat_without_tools:
        return "openai"  # chats whose agent answered without any tool call
    if plain_text:
        return "searchr1"  # transcripts without a single tag: answered (or not) without searching
    return None


class _Source:
    """One input file: its container, records and format."""

    def __init__(self, path: Path, fields: FieldMap) -> None:
        self.path = path
        self.name = str(path)
        self.fields = fields
        self._doc: Any = None
        self._frame: pl.DataFrame | None = None
        self.blank: list[int] = []  # blank lines (JSONL) and empty rows (CSV) of the last pass
        self._data: bytes | None = None  # the bytes of a pipe, read once; None for a file
        if path.is_dir() and openhands.is_conversation(path):  # the OpenHands SDK's: one record
            self.kind = "conversation"
            try:
                self._doc = openhands.conversation_record(path)
            except InputError as bad:  # the record's error: raised, or listed under errors="skip"
                self._doc = bad
            return
        self._data = check_nonempty(path)
        self.kind = container(path, self._data[:4] if self._data is not None else None)
        if self.kind == "json":
            self._doc = load_json(path, self._data)
        elif self.kind == "parquet":
            self._frame = read_parquet(path, self._data)
        elif self.kind == "csv":
            self._frame = read_csv(path, self._data)

    @property
    def from_pipe(self) -> bool:
        """Whether the records are bytes read from a pipe (not a file that can be read again)."""
        return self._data is not None

    def records(self, fmt: str) -> Iterator[tuple[int, Any]]:
        self.blank = []
        if fmt == "fireact":
            if self.kind != "json":
                raise InputError("the fireact format is a .json file", source=self.name)
            flagged = unwrap(self._doc) is not self._doc
            for index, record in fireact.records(self.path, unwrap(self._doc)):
                if flagged and isinstance(record, Mapping):
                    try:
                        check_surrogates(record, self.name, index)
                    except InputError as bad:
                        record = bad
                yield index, record
        elif self.kind == "conversation":
            yield 1, self._doc
        elif fmt in _SESSION_FORMATS:  # the whole file one session: its lines gathered into one record
            if self.kind != "jsonl":
                raise InputError(f"a {fmt} session is a JSONL file (one line an event)", source=self.name)
            first, record = _SESSION_FORMATS[fmt].session_record(iter_jsonl(self.path, self._data, self.blank),
                                                                 self.name)
            if isinstance(record, Mapping) and not record.get(MESSAGES):  # a summary alone: nothing said
                record = InputError(f"a {fmt} session with no message (only its bookkeeping lines)",
                                    source=self.name, line=first)
            yield first, record
        elif self.kind == "jsonl":
            yield from iter_jsonl(self.path, self._data, self.blank)
        elif self.kind == "json":
            yield from json_records(self._doc, self.name)
        else:
            assert self._frame is not None
            yield from frame_records(self._frame, first=2 if self.kind == "csv" else 1, blank=self.blank)

    def detect(self) -> str:
        if self.kind == "conversation":  # its folder's layout says it, even where an event is broken
            return openhands.FORMAT
        if self.kind == "json" and fireact.detect_document(unwrap(self._doc)):
            return "fireact"
        head: Iterable[tuple[int, Any]] = islice(self.records("auto"), _DETECT_LINES)
        if self.kind == "jsonl":  # a file of one session's events, not a record a line
            head = list(head)  # decoded once, for both readings of the file
            values = [v for _, v in head]
            for fmt, module in _SESSION_FORMATS.items():
                if module.detect_lines(values):
                    return fmt
        bad: list[InputError] = []
        sample = (rec for _, rec in head if not (isinstance(rec, InputError) and not bad.append(rec)))
        fmt = _detect_records(islice(sample, _DETECT_RECORDS), self.fields)
        if fmt is None and bad:
            raise bad[0]  # nothing decoded: the first decoding error is the real cause
        if fmt is None:
            raise InputError("unknown format: no record looks like canonical, searchr1, openai, react, atif, swe, "
                             "openhands or fireact, nor the file like a Claude Code or Codex session (name the "
                             "fields with `columns=` or pick `format=`)", source=self.name, field="format")
        return fmt


def detect_format(path: str | PathLike, *, columns: Mapping[str, str] | None = None) -> str:
    """Detect the format of one trajectory file from its content.

    Parameters
    ----------
    path
        The file.
    columns
        Field names, as for :func:`read`, so a renamed transcript field is still found.

    Returns
    -------
    str
        One of :data:`FORMATS`: ``canonical``, ``searchr1``, ``openai``, ``react``, ``atif``,
        ``swe``, ``openhands``, ``claudecode``, ``codex``, ``fireact``, ``inspect``.

    Raises
    ------
    InputError
        When the file is empty, unreadable, or matches no format.
    """
    if inspectlog.is_inspect_log(Path(path)):
        return "inspect"
    return _Source(Path(path), FieldMap(columns)).detect()


class ReadSettings(NamedTuple):
    """:func:`read`'s options, checked and compiled by :func:`check_read_options`."""

    fields: FieldMap               # the field names (``columns``) with the answer pattern and multi_action
    options: ReadOptions           # scorer, unanswered, round_tools, question_key, error_pattern
    where: _Where | None         # the record filter, or None


def check_read_options(format: str = "auto", *, arm: str | None = None, columns: Mapping[str, str] | None = None,
                       errors: Errors = "raise", where: str | pl.Expr | None = None,
                       answer_pattern: str | re.Pattern[str] | None = None,
                       scorer: str | Callable[[str, list[str]], bool] = "em",
                       unanswered: Unanswered = "fail",
                       round_tools: str | Collection[str] | None = None,
                       error_pattern: str | re.Pattern[str] | None = None,
                       multi_action: MultiAction = "first",
                       duplicates: Duplicates = "keep",
                       question_key: str | re.Pattern[str] | None = None) -> ReadSettings:
    """Check :func:`read`'s options (the same names, defaults and meanings) before any file is read.

    :func:`read` calls it, and so do the shard functions of :mod:`mechanism.analysis.parallel` once
    before their workers start, so a bad option fails the same way everywhere.

    Returns
    -------
    ReadSettings
        The compiled options.

    Raises
    ------
    InputError
        A bad option, with its parameter name as the error's ``field``.
    """
    check_choice(errors, Errors, field="errors")
    if format != "auto" and format not in FORMATS:
        raise InputError(f"unknown format {format!r}; expected auto or one of {', '.join(FORMATS)}", field="format")
    if arm is not None and (not isinstance(arm, str) or not arm):
        raise InputError("`arm` must be a non-empty string", field="arm")
    options = ReadOptions.make(scorer=scorer, unanswered=unanswered, round_tools=round_tools,
                               question_key=question_key, error_pattern=error_pattern)
    check_choice(multi_action, MultiAction, field="multi_action")
    check_choice(duplicates, Duplicates, field="duplicates")
    fields = FieldMap(columns)
    fields.answer_pattern = compile_answer_pattern(answer_pattern)
    fields.multi_action = multi_action
    return ReadSettings(fields, options, _Where.make(where))


def read(path_or_paths: PathArg, format: str = "auto", *, arm: str | None = None,
         columns: Mapping[str, str] | None = None, errors: Errors = "raise",
         report: bool = False, progress: bool | None = False, where: str | pl.Expr | None = None,
         answer_pattern: str | re.Pattern[str] | None = None,
         scorer: str | Callable[[str, list[str]], bool] = "em",
         unanswered: Unanswered = "fail",
         round_tools: str | Collection[str] | None = None,
         error_pattern: str | re.Pattern[str] | None = None,
         multi_action: MultiAction = "first",
         duplicates: Duplicates = "keep",
         question_key: str | re.Pattern[str] | None = None) -> pl.DataFrame | tuple[pl.DataFrame, ReadReport]:
    """Read trajectory files into the canonical table (one row per trajectory).

    Parameters
    ----------
    path_or_paths
        A file, a folder (its .jsonl/.json/.parquet/.csv files), or a list of them. Files of
        different arms and formats are read into one table. A pipe (``/dev/stdin``) reads too.
    format
        ``"auto"`` (detect per file), ``"canonical"``, ``"searchr1"``, ``"openai"``,
        ``"react"``, ``"atif"``, ``"swe"`` (mini-swe-agent and SWE-agent), ``"openhands"``
        (OpenHands event histories), ``"fireact"`` or
        ``"inspect"`` (Inspect AI logs, with the ``inspect`` extra installed).
    arm
        The arm of every row read (replaces an ``arm`` field). Without it and without an
        arm field, the arm is the file's name (sanitised), and the report says so.
    columns
        Canonical name -> the file's field name, e.g. ``{"text": "response", "gold":
        "golden_answers", "question_id": "qid"}``; ``text`` names a transcript string and
        ``messages`` a chat-message list. Dotted names reach into nested objects. A label
        held as text maps with ``"field:VALUE"``: ``{"correct": "status:CORRECT"}`` is true
        where ``status`` is ``CORRECT`` and false for any other value (``"status:A|B"``
        accepts several).
    errors
        ``"raise"`` stops at the first bad record with file, line and reason; ``"skip"``
        leaves bad records out and lists each in the report
        (``rows_in == rows_kept + len(skipped) + rows_filtered``). A whole input with no
        record to read (a 0-byte or blank-only file, a folder entry that is a dangling
        symlink, a FIFO, a device or a socket) is an error under ``"raise"`` and listed in
        the report's ``skipped_files`` under ``"skip"``.
    report
        Also return a :class:`~mechanism.core.errors.ReadReport` (format per file, skipped
        records, notes on derived ids, which field named the arms (or that the file name
        did), failed calls per tool, duplicated episodes, repaired actions and extra actions
        in a turn, unanswered episodes and given labels that disagree with the answers, and
        warnings). A record lacking canonical fields that the file's earlier records have is
        a bad record naming them (not a new arm or an empty episode).
    progress
        Show a progress bar per file (``None``: only on a terminal).
    where
        Keep only the records for which this holds, tested on the source's own fields
        before anything else is read from them: a polars expression
        (``pl.col("trial") == 1``) or the same as SQL text (``"trial = 1 AND NOT
        carried_over"``; ``==`` works too). A record without the field is left out. The
        report counts what was left out.
    answer_pattern
        A regular expression for the final answer in an agent's last message (chat
        formats); its last match wins, group 1 when it has a group. Without it, or when it
        does not match: ``<answer>`` tags, ``Finish[...]``, "Final answer:", ``\boxed{}``,
        "Answer:", else the whole message.
    scorer
        How ``correct`` is scored where the source gives no label: ``"em"`` (exact match
        after SQuAD normalisation, default), ``"f1"`` (token F1 >= 0.5), ``"contains"`` (a
        normalised gold answer appears as whole words in the normalised answer, as
        :func:`mechanism.contains_answer`: ``"no"`` is not in ``"nobody"``; ``"cover-em"``,
        cover exact match, is the same test), or a function ``(answer, gold) -> bool``. An
        arm that scores 0 % while answers were found raises a
        :class:`~mechanism.core.errors.ReadWarning`.
    unanswered
        ``"fail"`` (default): an episode that ended without a final answer and without a
        label is kept as a failure (``answer`` null, ``correct`` false) and counted;
        ``"error"``: it is a bad record.
    round_tools
        Which tool calls count as rounds (``n_rounds``, ``steps``): names of the tools that
        count (``["search", "lookup"]``), or names prefixed with ``-`` that do not
        (``"-reflect,-think"``); a call that does not count joins the next step's thought.
    error_pattern
        A regular expression (case-insensitive) for your environment's failure messages: an
        observation it matches is a failed call, besides the default reading
        (:mod:`mechanism.core.failures`: Wikipedia ReAct's "Could not find", tool errors and error
        objects, missing ids and files, code that could not run). The report counts failed
        calls per tool; pass the same pattern to :func:`mechanism.segment`.
    multi_action
        A ReAct turn that writes several actions before one observation: the environment
        ran the ``"first"`` (default; ReAct environments parse the first action) or the
        ``"last"``. The others stay in the thought text and are counted in a note.
    duplicates
        Episodes repeated within an arm and question (identical steps and answer, no
        ``sample_id`` in the source: a logger that wrote an episode twice) are counted in a
        note and ``"keep"`` (default), or ``"drop"``: left out, each listed in the report's
        skipped records.
    question_key
        Question ids from the question text instead of an id field: ``"text"`` (its
        normalised form) or a regular expression whose first match (group 1 when it has a
        group) is the question proper, for logs that prefix questions (a reflection, a
        trial header) so that one question keeps one id across runs.

    Returns
    -------
    polars.DataFrame or (polars.DataFrame, ReadReport)
        The canonical table (:mod:`mechanism.core.schema`), validated.

    Raises
    ------
    InputError
        A bad record (under ``errors="raise"``), an empty, compressed, UTF-16 or unreadable
        file, an unknown format, or a bad option; the message names the file, the line and
        the field.
    """
    fields, options, filt = check_read_options(
        format, arm=arm, columns=columns, errors=errors, where=where, answer_pattern=answer_pattern, scorer=scorer,
        unanswered=unanswered, round_tools=round_tools, error_pattern=error_pattern, multi_action=multi_action,
        duplicates=duplicates, question_key=question_key)
    rep = ReadReport()
    tally = Tally(scorer_name=options.scorer_name)
    rows = Columns()
    for path in input_paths(path_or_paths, skipped=rep.skipped_files if errors == "skip" else None):
        _read_file(path, rows, rep, tally, format=format, fields=fields, options=options, filt=filt, arm=arm,
                   errors=errors, progress=progress)
    missing = fields.unmatched() if rep.rows_in > len(rep.skipped) else []
    if missing:  # a misspelt field or path would otherwise be ignored without a word
        name = missing[0]
        raise InputError(f"`columns` maps `{name}` to `{fields.columns[name][:200]}`, which no record holds "
                         "(check the field's name and path)", field="columns")
    frame = _duplicates(rows.frame(origin=True), duplicates, rep)
    frame = _assign_samples(frame, errors, rep)
    rep.rows_kept = frame.height
    rep.unanswered = tally.unanswered
    rep.rows_in += rep.rows_filtered
    if filt is not None:
        rep.notes.append(f"`where` {filt.text}: left out {rep.rows_filtered} of {rep.rows_in} records")
    rep.notes.extend(tally.notes())
    rep.warnings.extend(tally.warnings())
    for message in rep.warnings:
        warnings.warn(message, ReadWarning, stacklevel=2)
    table = validate(frame.drop("_source", "_line"), source="read")
    return (table, rep) if report else table


def _open_file(path: Path, format: str, fields: FieldMap, errors: Errors,
               rep: ReadReport) -> tuple[_Source | None, str, str, Iterable[Any]] | None:
    """(source, its name, its format, its records) of one input file; None for a file with no
    record to read, listed under ``errors="skip"``."""
    if format == "inspect" or (format == "auto" and inspectlog.is_inspect_log(path)):
        return None, str(path), "inspect", inspectlog.records(path)
    try:
        src = _Source(path, fields)
    except EmptyInput as empty:  # no record to read, said either way
        if errors == "raise":
            raise
        rep.skipped_files.append(SkippedRecord(str(path), None, None, empty.reason))
        return None
    fmt = src.detect() if format == "auto" else format
    return src, src.name, fmt, src.records(fmt)


def _read_file(path: Path, rows: Columns, rep: ReadReport, tally: Tally, *, format: str, fields: FieldMap,
               options: ReadOptions, filt: _Where | None, arm: str | None, errors: Errors,
               progress: bool | None) -> None:
    """Every record of one file into ``rows``; bad records raised or listed in ``rep``."""
    opened = _open_file(path, format, fields, errors, rep)
    if opened is None:
        return
    src, src_name, fmt, records = opened
    rep.formats[src_name] = fmt
    # a conversation's folder is named by its id: the arm a name gives is its parent's
    stem_arm = safe_filename(path.parent.name if src is not None and src.kind == "conversation" else path.stem)
    how = {"fmt": fmt, "src_name": src_name, "fields": fields, "options": options, "arm": arm,
           "stem_arm": stem_arm, "errors": errors}
    blank = _read_in_parts(path, src, rows, rep, tally, how, filt=filt, progress=progress)
    if blank is None:  # one process, the records in order
        if filt is not None:
            records = filt.apply(records, src_name, rep)
        _read_records(_progress(records, enabled=progress, desc=path.name), rows, rep, tally, _Layout(fields),
                      **how)
        blank = src.blank if src is not None else []
    if blank:  # the same rule for JSONL and CSV: not records, but said
        shown = ", ".join(map(str, blank[:5])) + (", ..." if len(blank) > 5 else "")
        rep.notes.append(f"{src_name}: {len(blank)} blank line{'s' if len(blank) > 1 else ''} "
                         f"(no record) left out: line {shown}")


def _read_records(records: Iterable[tuple[int, Any]], rows: Columns, rep: ReadReport, tally: Tally,
                  layout: _Layout, *, fmt: str, src_name: str, fields: FieldMap, options: ReadOptions,
                  arm: str | None, stem_arm: str, errors: Errors) -> None:
    """``(line, record)`` pairs of one file into ``rows``; bad records raised or listed in ``rep``."""
    module = _MODULES[fmt]
    for line, record in records:
        rep.rows_in += 1
        try:
            if isinstance(record, InputError):
                raise record
            if not isinstance(record, Mapping):
                raise InputError(f"a record must be a JSON object, got {type(record).__name__}")
            present = layout.check(record)
            try:
                parsed = module.parse(record, fields)
            except InputError as exc:
                raise _mixed_format(exc, record, fields, fmt) from None
            if fmt == "canonical" and not parsed["steps"] and "n_rounds" not in parsed:
                other = _other_format(record, fields, fmt)
                if other is not None:
                    raise InputError(f"this record looks like {other}, not canonical (no `steps` and no "
                                     "`n_rounds`): mixed formats in one file; read them as separate files "
                                     "or pick `format=`", field="format")
            row = build_row(record, parsed, fields, fmt=fmt, source=src_name, line=line, arm=arm,
                            stem_arm=stem_arm, tally=tally, options=options)
            layout.keep(present)
        except InputError as exc:
            bad = exc if exc.source is not None else InputError(exc.reason, source=src_name, line=line,
                                                                  field=exc.field)
            if errors == "raise":
                # a duplicate key among the rows before this one is the first bad record
                _assign_samples(rows.keys_frame(), errors, ReadReport())
                raise bad from None
            rep.skipped.append(SkippedRecord(src_name, bad.line, bad.field, bad.reason))
            continue
        except RecursionError:
            bad = InputError("record nested too deeply", source=src_name, line=line)
            if errors == "raise":
                _assign_samples(rows.keys_frame(), errors, ReadReport())
                raise bad from None
            rep.skipped.append(SkippedRecord(src_name, line, None, bad.reason))
            continue
        row["_source"], row["_line"] = src_name, line
        rows.append(row)


# the formats whose records are the lines of a JSONL file, each parsed on its own
_PART_FORMATS = frozenset({"canonical", "searchr1", "openai", "react", "atif", "swe", "openhands"})


def _read_in_parts(path: Path, src: _Source | None, rows: Columns, rep: ReadReport, tally: Tally,
                   how: dict[str, Any], *, filt: _Where | None, progress: bool | None) -> list[int] | None:
    """Read a large JSONL file in parts, the first here and the others in worker processes
    (:mod:`mechanism.readers._parts`), and put them together as one read of the whole file.

    Returns the file's blank lines, or None when the file was not read (small, not a plain
    file, a filter, a part that failed or could not be put together exactly): the caller then
    reads it in this process. ``rows``, ``rep`` and ``tally`` are changed only on success.
    """
    # a scorer function is the caller's code: it is run here only, never imported by a worker
    if (src is None or src.kind != "jsonl" or src.from_pipe or filt is not None
            or how["fmt"] not in _PART_FORMATS or callable(how["options"].scorer)):
        return None
    workers = _parts.default_workers()
    ranges = _parts.spans(path, workers) if workers > 1 else []
    if len(ranges) < 2:
        return None
    try:  # each job pickled once, here: a pattern compiled by another engine may not travel
        jobs = [pickle.dumps({"path": path, "span": r, **how}, protocol=pickle.HIGHEST_PROTOCOL) for r in ranges[1:]]
    except (pickle.PicklingError, AttributeError, TypeError):
        return None
    with _parts.started(jobs) as pending:
        try:
            first: _parts.Part | None = read_part(path, (0, ranges[0][1]), first=1, progress=progress, **how)
        except InputError:  # the error to raise depends on the rows of earlier files too: read again
            first = None
        parts = [first, *pending.results()] if first is not None else [None]
    if (any(p is None for p in parts) or not _parts.uniform(parts) or not _parts.mergeable(tally, parts)
            or path.stat().st_size != ranges[-1][1]):  # a file that grew: read again, which refuses it
        return None
    blank: list[int] = []
    for part in parts:
        _parts.add_rows(rows, part.rows)
        _parts.add_tally(tally, part.tally)
        rep.rows_in += part.report.rows_in
        rep.skipped.extend(part.report.skipped)
        how["fields"].present |= part.present
        blank.extend(part.blank)
    return blank


def read_part(path: Path, span: tuple[int, int], *, fmt: str, src_name: str, fields: FieldMap,
              options: ReadOptions, arm: str | None, stem_arm: str, errors: Errors, first: int | None = None,
              progress: bool | None = False) -> _parts.Part:
    """The records of the byte range ``span`` of a JSONL file (cut at line starts), read into a
    part of their own (:class:`~mechanism.readers._parts.Part`). A worker process of
    :func:`_read_in_parts` runs it on its part; ``first`` is the number of the range's first
    line, counted when not given."""
    start, stop = span
    line = _parts.first_line(path, start) if first is None else first
    rows, rep, tally, layout, blank = Columns(), ReadReport(), Tally(scorer_name=options.scorer_name), \
        _Layout(fields), []
    records = iter_jsonl(path, None, blank, span=(start, stop, line))
    _read_records(_progress(records, enabled=progress, desc=f"{path.name} (part 1)"), rows, rep, tally, layout,
                  fmt=fmt, src_name=src_name, fields=fields, options=options, arm=arm, stem_arm=stem_arm,
                  errors=errors)
    groups = (layout.common, layout.union) if layout.common is not None else None
    return _parts.Part(rows, rep, tally.without_caches(), blank, set(fields.present), groups, layout.refused)


def _other_format(record: Mapping[str, Any], fields: FieldMap, fmt: str) -> str | None:
    """Another format this record shows, when it does not show ``fmt`` itself."""
    if fmt in _MODULES and fmt not in ("fireact", "inspect") and _MODULES[fmt].detect(record, fields):
        return None
    # the detection order, canonical last: a record showing another format's marks is named by them
    for other in (*(f for f in _DETECT_ORDER if f != "canonical"), "canonical"):
        if other != fmt and _MODULES[other].detect(record, fields):
            return other
    return None


def _mixed_format(exc: InputError, record: Mapping[str, Any], fields: FieldMap, fmt: str) -> InputError:
    """``exc``, saying so when the record is of another format than its file (mixed formats)."""
    if fmt in ("fireact", "inspect"):
        return exc
    other = _other_format(record, fields, fmt)
    if other is None:
        return exc
    return InputError(f"{exc.reason}; this record looks like {other} but the file reads as {fmt} "
                      "(mixed formats in one file: read them as separate files)", field=exc.field)


class _Where:
    """A ``where=`` filter, evaluated on the source records in batches (one polars call per
    batch, so its cost per record is small and the whole is linear in the input)."""

    BATCH = 2048

    def __init__(self, expr: pl.Expr, text: str) -> None:
        self.expr = expr
        self.text = text
        self.names = expr.meta.root_names()

    @classmethod
    def make(cls, where: str | pl.Expr | None) -> _Where | None:
        if where is None:
            return None
        if isinstance(where, pl.Expr):
            return cls(where, "(expression)")
        if not isinstance(where, str) or not where.strip():
            raise InputError("`where` must be a polars expression or SQL text such as \"trial = 1\"", field="where")
        # bounded in size and depth before polars parses it; Python's "==" becomes SQL's "="
        sql = prepare_sql(where)
        try:
            expr = pl.sql_expr(sql)
        except Exception as exc:  # noqa: BLE001 - polars raises several types for bad SQL
            reason = " ".join(str(exc).split())[:200]
            raise InputError(f"`where` is not a valid filter ({reason})", field="where") from None
        return cls(expr, repr(where))

    def _mask(self, batch: list[tuple[int, Any]], source: str) -> list[bool]:
        data = {}
        # a record without a field the filter names is left out, whatever the filter says
        # (`nofield IS NULL` included): the documented rule, and no guess about a missing field
        present = [True] * len(batch)
        for name in self.names:
            values = []
            for j, (_, record) in enumerate(batch):
                value = get_path(record, name) if isinstance(record, Mapping) else MISSING
                if value is MISSING:
                    present[j] = False
                values.append(None if value is MISSING else value)
            try:
                data[name] = pl.Series(name, values, strict=False)
            except Exception:  # noqa: BLE001 - values of kinds polars cannot put in one column: compare as text
                data[name] = pl.Series(name, [None if v is None else str(v) for v in values])
        try:
            frame = pl.DataFrame(data) if data else pl.DataFrame({"_": [0] * len(batch)})
            mask = frame.select(self.expr.alias("_keep")).to_series()
            if mask.len() == 1 and len(batch) != 1:
                mask = pl.Series([mask[0]] * len(batch))
            return [bool(v) and has for v, has in zip(mask.cast(pl.Boolean, strict=False).fill_null(False).to_list(),
                                                       present)]
        except Exception as exc:  # noqa: BLE001 - polars raises several types evaluating a filter
            reason = " ".join(str(exc).split())[:200]
            raise InputError(f"`where` {self.text} cannot be evaluated on these records ({reason})",
                             source=source, field="where") from None

    def apply(self, records: Iterable[tuple[int, Any]], source: str, rep: ReadReport) -> Iterator[tuple[int, Any]]:
        batch: list[tuple[int, Any]] = []
        for item in records:
            batch.append(item)
            if len(batch) >= self.BATCH:
                yield from self._keep(batch, source, rep)
                batch = []
        if batch:
            yield from self._keep(batch, source, rep)

    def _keep(self, batch: list[tuple[int, Any]], source: str, rep: ReadReport) -> Iterator[tuple[int, Any]]:
        # a record that failed to decode is never filtered: it goes on to be reported
        decoded = [(i, item) for i, item in enumerate(batch) if not isinstance(item[1], InputError)]
        mask = self._mask([item for _, item in decoded], source) if decoded else []
        keep = {i for (i, _), m in zip(decoded, mask) if m}
        for i, item in enumerate(batch):
            if isinstance(item[1], InputError) or i in keep:
                yield item
            else:
                rep.rows_filtered += 1


class _Layout:
    """The canonical fields every kept record of one file has so far: a record lacking some
    of them (``{"id": "x", "question": "q"}`` after full records) is not the same kind of
    record, and reading it would invent an arm or an episode, so it is a bad record."""

    # each group is one thing a record says; a transcript may be given in any of its forms
    GROUPS = (("arm",), ("question_id",), ("sample_id",), ("question",), ("gold",), ("correct",), ("answer",),
              ("steps", "text", "messages"), ("n_rounds",))
    MIN_RECORDS = 2  # fields shared by at least this many earlier records are expected

    def __init__(self, fields: FieldMap) -> None:
        self.fields = fields
        self.common: frozenset[int] | None = None
        self.union: frozenset[int] | None = None  # the fields some kept record has
        self.refused = 0  # records refused for lacking fields (their message counts the records before)
        self.seen_key: dict[int, str] = {}  # group -> the field name earlier records used for it
        self.kept = 0
        self._cache: dict[tuple[str, ...], dict[int, str]] = {}

    def _present(self, record: Mapping[str, Any]) -> dict[int, str]:
        layout = tuple(record)
        hit = self._cache.get(layout)
        if hit is None:
            keys = set(layout)
            hit = {}
            for g, names in enumerate(self.GROUPS):
                for name in names:
                    key = next((p for p in self.fields.paths(name)
                                if p in keys or ("." in p and get_path(record, p) is not MISSING)), None)
                    if key is not None:
                        hit[g] = key
                        break
            if len(self._cache) < 256:
                self._cache[layout] = hit
        return hit

    def check(self, record: Mapping[str, Any]) -> dict[int, str]:
        present = self._present(record)
        if self.common is not None and self.kept >= self.MIN_RECORDS:
            lacking = sorted(self.common - set(present))
            if lacking:
                self.refused += 1
                shown = ", ".join(f"`{self.seen_key[g]}`" for g in lacking)
                raise InputError(f"record lacks {shown}, which the {self.kept} records before it in this file "
                                 "have (a record of another kind, or cut short)", field=self.seen_key[lacking[0]])
        return present

    def keep(self, present: dict[int, str]) -> None:
        groups = frozenset(present)
        self.common = groups if self.common is None else self.common & groups
        self.union = groups if self.union is None else self.union | groups
        for g, key in present.items():
            self.seen_key.setdefault(g, key)
        self.kept += 1


def _duplicates(frame: pl.DataFrame, mode: str, rep: ReadReport) -> pl.DataFrame:
    """Count (and with ``mode="drop"`` leave out) episodes that repeat an earlier one of their
    arm and question exactly (steps and answer) where the source gave no sample id."""
    if frame.height < 2 or not frame["sample_id"].null_count():
        return frame
    content = pl.struct("arm", "question_id", "answer", "steps").struct.json_encode()
    # before sample ids are numbered: a null id is one the source did not give
    marked = frame.with_columns(_repeat=~content.is_first_distinct() & pl.col("sample_id").is_null()
                                & (pl.col("steps").list.len() > 0))
    n = int(marked["_repeat"].sum())
    if not n:
        return frame
    if mode == "keep":
        # a repeat in the file of its first copy is a logger's; one in another file is a second run
        # (two configurations merged into one arm) that happened to do the same
        first_source = pl.col("_source").first().over(content)
        same = int(marked.filter(pl.col("_repeat") & (pl.col("_source") == first_source)).height)
        if same:
            rep.notes.append(f"{same} episodes repeat an earlier episode of their arm and question exactly in the "
                             "same file (same steps and answer, no `sample_id` in the source: written twice by a "
                             "logger?): kept as further samples; `duplicates='drop'` leaves them out")
        if n - same:
            rep.notes.append(f"{n - same} episodes are identical to an episode of their arm and question in another "
                             "file (two runs merged into one arm that did the same; not a logger's repeat): kept")
        return frame
    firsts = (marked.filter(~pl.col("_repeat")).with_columns(_content=content)
              .unique("_content", keep="first", maintain_order=True).select("_content", "_source", "_line")
              .rename({"_source": "_first_source", "_line": "_first_line"}))
    dups = marked.filter(pl.col("_repeat")).with_columns(_content=content).join(firsts, on="_content", how="left",
                                                                               maintain_order="left")
    for d in dups.select("arm", "question_id", "_source", "_line", "_first_source", "_first_line").iter_rows():
        rep.skipped.append(SkippedRecord(d[2], d[3], "steps", f"duplicate episode of arm {d[0]!r}, question "
                                         f"{d[1]!r}: same steps and answer as {d[4]} line {d[5]} "
                                         "(`duplicates='drop'`)"))
    rep.notes.append(f"{n} episodes repeating an earlier episode of their arm and question exactly were left "
                     "out (`duplicates='drop'`)")
    return marked.filter(~pl.col("_repeat")).drop("_repeat")


def _assign_samples(frame: pl.DataFrame, errors: str, rep: ReadReport) -> pl.DataFrame:
    """Number missing sample ids within (arm, question_id) in file order, then drop (or raise
    on) duplicate keys, naming both lines."""
    numbered = frame["sample_id"].null_count()
    if numbered and frame.height:
        top = frame["sample_id"].max()
        if top is not None and top > _INT64_MAX - frame.height:
            at = frame.row(int(frame["sample_id"].arg_max()), named=True)
            raise InputError(f"cannot number the rows without `sample_id` after the given id {top}: it would pass "
                             "the 64-bit integer range", source=at["_source"], line=at["_line"], field="sample_id")
    if numbered:
        # number only the rows without an id, after the largest id given in their group, so a
        # number made up here never collides with one the file gave
        group = ("arm", "question_id")
        missing = pl.col("sample_id").is_null()
        frame = frame.with_columns(
            pl.when(missing)
            .then((pl.col("sample_id").max().over(group) + 1).fill_null(0)
                  + missing.cast(pl.Int64).cum_sum().over(group) - 1)
            .otherwise(pl.col("sample_id")).cast(pl.Int64).alias("sample_id"))
        rep.notes.append(f"{numbered} rows had no `sample_id`: numbered within (arm, question_id) in file order "
                         "(after the largest given id)")
    keys = pl.struct("arm", "question_id", "sample_id")
    frame = frame.with_columns(_first=keys.is_first_distinct())
    if frame["_first"].all():
        return frame.drop("_first")
    firsts = (frame.filter(pl.col("_first")).select("arm", "question_id", "sample_id",
                                                     _first_source="_source", _first_line="_line"))
    dups = (frame.with_row_index("_row").filter(~pl.col("_first"))
            .select("_row", "arm", "question_id", "sample_id", "_source", "_line")
            .join(firsts, on=["arm", "question_id", "sample_id"], how="left").sort("_row"))
    for d in dups.iter_rows(named=True):
        key = (d["arm"], d["question_id"], d["sample_id"])
        reason = (f"duplicate (arm, question_id, sample_id) = {key!r}, first seen at "
                  f"{d['_first_source']} line {d['_first_line']}")
        if errors == "raise":
            raise InputError(reason, source=d["_source"], line=d["_line"], field="sample_id")
        rep.skipped.append(SkippedRecord(d["_source"], d["_line"], "sample_id", reason))
    return frame.filter(pl.col("_first")).drop("_first")
