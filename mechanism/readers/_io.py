"""Records out of files: JSONL streamed line by line, JSON, parquet and CSV.

Every decoding problem is an :class:`InputError` naming the file and the line (JSONL) or
record index (JSON array, parquet; a CSV record's file line, the header being line 1).
"""
from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from mechanism.errors import InputError

JSONL_SUFFIXES = (".jsonl", ".ndjson", ".jsonlines")
# a JSON document that wraps its records in one of these keys
WRAPPER_KEYS = ("trajectories", "records", "data", "rows", "items", "samples")


class BadRecord(InputError):
    """A record that could not be decoded; readers skip it under ``errors="skip"``."""


def container(path: Path) -> str:
    """``jsonl``, ``json``, ``parquet`` or ``csv`` from the suffix, else from the first byte."""
    suffix = path.suffix.lower()
    if suffix in JSONL_SUFFIXES:
        return "jsonl"
    if suffix == ".json":
        return "json"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix in (".csv", ".tsv"):
        return "csv"
    with open(path, "rb") as fh:
        head = fh.read(4)
    if head == b"PAR1":
        return "parquet"
    return "jsonl"


def check_nonempty(path: Path) -> None:
    if not path.exists():
        raise InputError("file not found", source=str(path))
    if path.is_dir():
        raise InputError("is a directory, expected a file", source=str(path))
    if path.stat().st_size == 0:
        raise InputError("empty file", source=str(path))


def _decode(raw: bytes, source: str, line: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRecord(f"not valid UTF-8 (byte {exc.start + 1} of the line)", source=source, line=line) from None


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, decoded value) for every non-blank line, streamed.

    A line that fails to decode yields ``(line, BadRecord)`` so the caller decides whether to
    raise or skip, and reading goes on with the next line.
    """
    source = str(path)
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, 1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if not raw.strip():
                continue
            try:
                text = _decode(raw, source, number).rstrip("\r\n")
                try:
                    value = json.loads(text)
                except (ValueError, RecursionError) as exc:
                    raise BadRecord(f"invalid JSON ({_json_reason(exc, text)})", source=source, line=number) from None
            except BadRecord as bad:
                yield number, bad
                continue
            yield number, value


def _json_reason(exc: Exception, text: str) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    msg = str(getattr(exc, "msg", exc)).lower()
    msg = msg[:-3] if msg.endswith(" at") else msg
    pos = getattr(exc, "pos", None)
    if "unterminated" in msg or (pos is not None and pos >= len(text.rstrip())):
        return f"truncated line: {msg}"
    return f"{msg} at column {getattr(exc, 'colno', '?')}"


def load_json(path: Path) -> Any:
    """A whole JSON document (the format has no line structure to stream)."""
    source = str(path)
    raw = path.read_bytes()
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError("not valid UTF-8", source=source, line=line) from None
    if not text.strip():
        raise InputError("empty file", source=source)
    try:
        return json.loads(text)
    except RecursionError:
        raise InputError("invalid JSON (nested too deeply)", source=source) from None
    except ValueError as exc:
        raise InputError(f"invalid JSON ({getattr(exc, 'msg', str(exc)).lower()})", source=source,
                         line=getattr(exc, "lineno", None)) from None


def json_records(doc: Any, source: str) -> Iterator[tuple[int, Any]]:
    """Records in a JSON document: an array, an object wrapping an array, an object keyed by
    record id (the key kept as ``_key``), or a single record."""
    if isinstance(doc, list):
        yield from enumerate(doc, 1)
        return
    if not isinstance(doc, Mapping):
        raise InputError(f"expected a JSON array or object, got {type(doc).__name__}", source=source, line=1)
    for key in WRAPPER_KEYS:
        if isinstance(doc.get(key), list) and len(doc) <= 3:
            yield from enumerate(doc[key], 1)
            return
    if doc and all(isinstance(v, Mapping) for v in doc.values()) and not looks_like_record(doc):
        for index, (key, value) in enumerate(doc.items(), 1):
            yield index, {**value, "_key": key}
        return
    yield 1, doc


def looks_like_record(doc: Mapping[str, Any]) -> bool:
    """A single trajectory rather than a table keyed by id."""
    keys = set(doc)
    return bool(keys & {"schema_version", "steps", "messages", "response", "question", "text",
                        "session_id", "agent", "conversation", "arm"})


def frame_records(frame: pl.DataFrame, *, first: int = 1) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows as records, numbered from ``first`` (2 for CSV, whose line 1 is the header, so
    the number is the file line unless a quoted field holds a line break)."""
    yield from enumerate(frame.iter_rows(named=True), first)


def read_parquet(path: Path) -> pl.DataFrame:
    try:
        return pl.read_parquet(path)
    except Exception as exc:  # polars raises several types for a corrupt file
        raise InputError(f"cannot read parquet ({type(exc).__name__}: {_first_line(exc)})", source=str(path)) from None


def read_csv(path: Path) -> pl.DataFrame:
    separator = "\t" if path.suffix.lower() == ".tsv" else ","
    try:
        # all text: types are coerced per canonical field, with errors naming the row
        return pl.read_csv(path, infer_schema=False, separator=separator)
    except Exception as exc:
        _check_utf8_lines(path)  # name the line when the bytes are the problem
        raise InputError(f"cannot read CSV ({type(exc).__name__}: {_first_line(exc)})", source=str(path)) from None


def _check_utf8_lines(path: Path) -> None:
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, 1):
            _decode(raw, str(path), number)


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else ""
