"""Read trajectory files of any supported format into the canonical table.

One module per format (``canonical``, ``searchr1``, ``openai``, ``react``, ``atif``,
``fireact``), each with ``detect(record, fields)`` and ``parse(record, fields)``; this module
finds the files, detects formats, and turns parsed records into validated rows::

    from mechanism.readers import read
    runs, report = read(["base.searchr1.jsonl", "rl.searchr1.jsonl"], report=True)
    runs = read("trajs/", format="fireact")
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from os import PathLike
from pathlib import Path
from typing import Any, Literal

import polars as pl

from mechanism.errors import InputError, ReadReport, SkippedRecord
from mechanism.progress import progress as _progress
from mechanism.readers import atif, canonical, fireact, openai, react, searchr1
from mechanism.names import safe_filename
from mechanism.readers._build import Columns, Tally, build_row
from mechanism.readers._fields import FieldMap
from mechanism.readers._io import (
    check_nonempty, container, frame_records, iter_jsonl, json_records, load_json,
    read_csv, read_parquet,
)
from mechanism.schema import validate

__all__ = ["read", "detect_format", "FORMATS"]

FORMATS = ("canonical", "searchr1", "openai", "react", "atif", "fireact")
_MODULES = {m.FORMAT: m for m in (canonical, searchr1, openai, react, atif, fireact)}
_FILE_SUFFIXES = (".jsonl", ".ndjson", ".jsonlines", ".json", ".parquet", ".pq", ".csv", ".tsv")
_DETECT_RECORDS = 20  # records looked at to detect a format

PathArg = str | PathLike | Sequence[str | PathLike]


def _paths(path_or_paths: PathArg) -> list[Path]:
    items = [path_or_paths] if isinstance(path_or_paths, (str, PathLike)) else list(path_or_paths)
    if not items:
        raise InputError("no input files given", field="path")
    out: list[Path] = []
    for item in items:
        if not isinstance(item, (str, PathLike)):
            raise InputError(f"expected a file path, got {type(item).__name__}", field="path")
        p = Path(item)
        if p.is_dir():
            found = sorted(c for c in p.iterdir() if c.is_file() and c.suffix.lower() in _FILE_SUFFIXES)
            if not found:
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
        for fmt in ("atif", "canonical", "openai", "react", "searchr1"):
            if _MODULES[fmt].detect(rec, fields):
                seen.add(fmt)
        messages = fields.get(rec, "messages")
        if isinstance(messages, list) and messages and all(isinstance(m, Mapping) and "role" in m for m in messages):
            chat_without_tools = True
        if isinstance(fields.get(rec, "text"), str):
            plain_text = True
    for fmt in ("atif", "canonical", "openai", "react", "searchr1"):
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
        check_nonempty(path)
        self.path = path
        self.name = str(path)
        self.fields = fields
        self.kind = container(path)
        self._doc: Any = None
        self._frame: pl.DataFrame | None = None
        if self.kind == "json":
            self._doc = load_json(path)
        elif self.kind == "parquet":
            self._frame = read_parquet(path)
        elif self.kind == "csv":
            self._frame = read_csv(path)

    def records(self, fmt: str) -> Iterator[tuple[int, Any]]:
        if fmt == "fireact":
            if self.kind != "json":
                raise InputError("the fireact format is a .json file", source=self.name)
            yield from fireact.records(self.path, self._doc)
        elif self.kind == "jsonl":
            yield from iter_jsonl(self.path)
        elif self.kind == "json":
            yield from json_records(self._doc, self.name)
        else:
            assert self._frame is not None
            yield from frame_records(self._frame, first=2 if self.kind == "csv" else 1)

    def detect(self) -> str:
        if self.kind == "json" and fireact.detect_document(self._doc):
            return "fireact"
        sample = (rec for _, rec in islice(self.records("auto"), 200) if not isinstance(rec, InputError))
        fmt = _detect_records(islice(sample, _DETECT_RECORDS), self.fields)
        if fmt is None:
            raise InputError("unknown format: no record looks like canonical, searchr1, openai, react, atif "
                             "or fireact (name the fields with `columns=` or pick `format=`)", source=self.name,
                             field="format")
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
        One of ``canonical``, ``searchr1``, ``openai``, ``react``, ``atif``, ``fireact``.

    Raises
    ------
    InputError
        When the file is empty, unreadable, or matches no format.
    """
    return _Source(Path(path), FieldMap(columns)).detect()


def read(path_or_paths: PathArg, format: str = "auto", *, arm: str | None = None,
         columns: Mapping[str, str] | None = None, errors: Literal["raise", "skip"] = "raise",
         report: bool = False, progress: bool | None = False) -> pl.DataFrame | tuple[pl.DataFrame, ReadReport]:
    """Read trajectory files into the canonical table (one row per trajectory).

    Parameters
    ----------
    path_or_paths
        A file, a folder (its .jsonl/.json/.parquet/.csv files), or a list of them. Files of
        different arms and formats are read into one table.
    format
        ``"auto"`` (detect per file), ``"canonical"``, ``"searchr1"``, ``"openai"``,
        ``"react"``, ``"atif"`` or ``"fireact"``.
    arm
        The arm of every row read (replaces an ``arm`` field). Without it and without an
        arm field, the arm is the file's name (sanitised), and the report says so.
    columns
        Canonical name -> the file's field name, e.g. ``{"text": "response", "gold":
        "golden_answers", "question_id": "qid"}``; ``text`` names a transcript string and
        ``messages`` a chat-message list. Dotted names reach into nested objects.
    errors
        ``"raise"`` stops at the first bad record with file, line and reason; ``"skip"``
        leaves bad records out and lists each in the report
        (``rows_in == rows_kept + len(skipped)``).
    report
        Also return a :class:`~mechanism.errors.ReadReport` (format per file, skipped
        records, notes on derived ids and on given labels that disagree with the answers).
    progress
        Show a progress bar per file (``None``: only on a terminal).

    Returns
    -------
    polars.DataFrame or (polars.DataFrame, ReadReport)
        The canonical table (:mod:`mechanism.schema`), validated.

    Raises
    ------
    InputError
        A bad record (under ``errors="raise"``), an empty or unreadable file, or an unknown
        format; the message names the file, the line and the field.
    """
    if errors not in ("raise", "skip"):
        raise InputError(f"`errors` must be 'raise' or 'skip', got {errors!r}", field="errors")
    if format != "auto" and format not in FORMATS:
        raise InputError(f"unknown format {format!r}; expected auto or one of {', '.join(FORMATS)}", field="format")
    if arm is not None and (not isinstance(arm, str) or not arm):
        raise InputError("`arm` must be a non-empty string", field="arm")
    fields = FieldMap(columns)
    rep = ReadReport()
    tally = Tally()
    rows = Columns()
    for path in _paths(path_or_paths):
        src = _Source(path, fields)
        fmt = src.detect() if format == "auto" else format
        rep.formats[src.name] = fmt
        module = _MODULES[fmt]
        stem_arm = safe_filename(path.stem)
        for line, record in _progress(src.records(fmt), enabled=progress, desc=path.name):
            rep.rows_in += 1
            try:
                if isinstance(record, InputError):
                    raise record
                if not isinstance(record, Mapping):
                    raise InputError(f"a record must be a JSON object, got {type(record).__name__}")
                parsed = module.parse(record, fields)
                row = build_row(record, parsed, fields, fmt=fmt, source=src.name, line=line, arm=arm,
                                stem_arm=stem_arm, tally=tally)
            except InputError as exc:
                bad = exc if exc.source is not None else InputError(exc.reason, source=src.name, line=line,
                                                                      field=exc.field)
                if errors == "raise":
                    # a duplicate key among the rows before this one is the first bad record
                    _assign_samples(rows.keys_frame(), errors, ReadReport())
                    raise bad from None
                rep.skipped.append(SkippedRecord(src.name, bad.line, bad.field, bad.reason))
                continue
            except RecursionError:
                bad = InputError("record nested too deeply", source=src.name, line=line)
                if errors == "raise":
                    _assign_samples(rows.keys_frame(), errors, ReadReport())
                    raise bad from None
                rep.skipped.append(SkippedRecord(src.name, line, None, bad.reason))
                continue
            row["_source"], row["_line"] = src.name, line
            rows.append(row)
    frame = _assign_samples(rows.frame(origin=True), errors, rep)
    rep.rows_kept = frame.height
    rep.notes.extend(tally.notes())
    table = validate(frame.drop("_source", "_line"), source="read")
    return (table, rep) if report else table


def _assign_samples(frame: pl.DataFrame, errors: str, rep: ReadReport) -> pl.DataFrame:
    """Number missing sample ids within (arm, question_id) in file order, then drop (or raise
    on) duplicate keys, naming both lines."""
    numbered = frame["sample_id"].null_count()
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
