"""Records out of files: JSONL streamed line by line, JSON, parquet and CSV.

Every decoding problem is an :class:`InputError` naming the file and the line (JSONL) or
record index (JSON array, parquet; a CSV record's file line, the header being line 1).
"""
from __future__ import annotations

import io
import json
import os
import re
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import polars as pl

from mechanism.core.cachefile import DuplicateKeyError, check_parquet_depth, read_regular, unique_keys
from mechanism.core.errors import InputError

JSONL_SUFFIXES = (".jsonl", ".ndjson", ".jsonlines")
# a JSON document that wraps its records in one of these keys
WRAPPER_KEYS = ("trajectories", "records", "data", "rows", "items", "samples")


class BadRecord(InputError):
    """A record that could not be decoded; readers skip it under ``errors="skip"``."""


class EmptyInput(InputError):
    """A file with no records at all (0 bytes, or only blank lines); skipped whole, and
    listed, under ``errors="skip"``."""


# what a file that no format decodes most often is, by its first bytes
_MAGIC = ((b"\x1f\x8b", "gzip-compressed: decompress it first (gunzip)"),
          (b"\x28\xb5\x2f\xfd", "zstd-compressed: decompress it first (zstd -d)"),
          (b"BZh", "bzip2-compressed: decompress it first (bunzip2)"),
          (b"\xfd7zXZ\x00", "xz-compressed: decompress it first (unxz)"),
          (b"PK\x03\x04", "a zip archive (an Inspect AI .eval log reads with format='inspect'); unpack it first"),
          (b"\xff\xfe", "UTF-16 encoded: convert it to UTF-8 (iconv -f UTF-16 -t UTF-8)"),
          (b"\xfe\xff", "UTF-16 encoded: convert it to UTF-8 (iconv -f UTF-16 -t UTF-8)"))


def sniff_encoding(head: bytes, source: str) -> None:
    """A one-line error naming what the file is when its first bytes say it is compressed,
    an archive or UTF-16 (which would otherwise read as "unknown format" or bad UTF-8)."""
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        raise InputError("file is UTF-32 encoded: convert it to UTF-8", source=source, field="encoding")
    for magic, what in _MAGIC:
        if head.startswith(magic):
            raise InputError(f"file is {what}", source=source, field="encoding")
    sample = head[:64]
    half = len(sample) // 2 - 1
    if len(sample) >= 8 and (sample[1::2].count(0) >= half or sample[0::2].count(0) >= half):
        raise InputError("file looks UTF-16 encoded (no byte-order mark): convert it to UTF-8", source=source,
                         field="encoding")


def container(path: Path, head: bytes | None = None) -> str:
    """``jsonl``, ``json``, ``parquet`` or ``csv`` from the suffix, else from the first byte."""
    suffix = path.suffix.lower()
    if suffix in JSONL_SUFFIXES:
        return "jsonl"
    if suffix in (".json", ".traj"):  # .traj: SWE-agent's trajectory, one JSON document
        return "json"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix in (".csv", ".tsv"):
        return "csv"
    if head is None:
        with open(path, "rb") as fh:
            head = fh.read(4)
    if head[:4] == b"PAR1":
        return "parquet"
    return "jsonl"


# A pipe is read into memory (it can be read only once): past this many bytes it is refused by
# name, before memory runs out, with the advice to write it to a file (which streams).
PIPE_MAX_BYTES = 2 * 2**30
_BLANK_SCAN = 2**20  # bytes looked at per step for a first non-blank byte


def entry_kind(path: Path) -> str | None:
    """What ``path`` is when it is not a regular file (following symlinks): ``"a dangling
    symlink"``, ``"a FIFO"``, ``"a character device"``, ... ; ``None`` for a regular file."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return "a dangling symlink" if os.path.islink(path) else "missing"
    except OSError as exc:
        return f"unreadable ({' '.join(str(exc.strerror or exc).split()).lower()})"
    mode = info.st_mode
    for test, what in ((stat.S_ISREG, None), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return "not a regular file"


def folder_files(folder: Path, suffixes: tuple[str, ...]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """A folder's entries with a trajectory suffix, sorted by name: the regular files (symlinks to
    regular files included), and the others with what they are (a dangling symlink, a FIFO, a
    device, a socket, a folder), which the caller refuses or reports: none is left out unsaid."""
    files, others = [], []
    for entry in sorted(folder.iterdir()):
        if entry.suffix.lower() not in suffixes:
            continue
        what = entry_kind(entry)
        if what is None:
            files.append(entry)
        else:
            others.append((entry, what))
    return files, others


def _first_non_blank(fh: IO[bytes]) -> bool:
    """Whether the file holds a byte that is not whitespace (read until one is found)."""
    while True:
        chunk = fh.read(_BLANK_SCAN)
        if not chunk:
            return False
        if chunk.strip():
            return True


def check_nonempty(path: Path) -> bytes | None:
    """Check that ``path`` is there and holds something besides blank lines (a 0-byte file and
    a file of blank lines are both "empty file"). A pipe (``/dev/stdin``, a shell's ``<(...)``)
    has no size to look at and can be read only once: its bytes are read here, at most
    :data:`PIPE_MAX_BYTES`, and returned (``None`` for a regular file). A device
    (``/dev/zero``, a terminal), a socket or a dangling symlink is refused by name unread."""
    if not os.path.lexists(path):
        raise InputError("file not found", source=str(path))
    what = entry_kind(path)
    if what == "a folder":
        raise InputError("is a directory, expected a file", source=str(path))
    if what not in (None, "a FIFO"):
        raise InputError(f"not a regular file: {what} (trajectories are read from files or pipes)",
                         source=str(path), field="path")
    try:
        if what is None:
            if path.stat().st_size == 0:
                raise EmptyInput("empty file (0 bytes)", source=str(path))
            with open(path, "rb") as fh:
                sniff_encoding(fh.read(64), str(path))
                fh.seek(0)
                if not _first_non_blank(fh):
                    raise EmptyInput("empty file (only blank lines)", source=str(path))
            return None
        with open(path, "rb") as fh:
            data = fh.read(PIPE_MAX_BYTES + 1)
    except PermissionError:
        raise InputError("permission denied", source=str(path)) from None
    if len(data) > PIPE_MAX_BYTES:
        raise InputError(f"the pipe gave more than {PIPE_MAX_BYTES:,} bytes: write it to a file first (files "
                         "are streamed)", source=str(path), field="path")
    if not data:
        raise EmptyInput("empty input (the pipe or device gave no data)", source=str(path))
    sniff_encoding(data[:64], str(path))
    if not data.strip():
        raise EmptyInput("empty input (the pipe gave only blank lines)", source=str(path))
    return data


def open_binary(path: Path, data: bytes | None) -> IO[bytes]:
    """The file, or the bytes already read from a pipe."""
    return io.BytesIO(data) if data is not None else open(path, "rb")


# a JSON escape of a UTF-16 surrogate: json.loads turns a lone one into a string that
# cannot be encoded, and every later stage (polars, Arrow, files) would fail on it
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


def may_hold_surrogates(text: str) -> bool:
    return _SURROGATE_ESCAPE.search(text) is not None


def lone_surrogate_field(value: Any) -> str | None:
    """The path of the first string (or key) in ``value`` holding a lone surrogate, else
    ``None``; iterative, so no depth of nesting can overflow the stack."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                return where or "value"
        elif isinstance(node, Mapping):
            items = list(node.items())
            for key, child in reversed(items):
                name = f"{where}.{key}" if where else str(key)
                if isinstance(key, str):
                    try:
                        key.encode("utf-8")
                    except UnicodeEncodeError:
                        return (f"{where}.<key>" if where else "<key>")
                stack.append((child, name))
        elif isinstance(node, list):
            for i in range(len(node) - 1, -1, -1):
                stack.append((node[i], f"{where}[{i}]"))
    return None


def check_surrogates(value: Any, source: str, line: int) -> None:
    field = lone_surrogate_field(value)
    if field is not None:
        raise BadRecord(f"`{ascii(field)[1:-1]}` holds a lone surrogate escape (such as \\ud800): not valid "
                        "Unicode text", source=source, line=line, field=ascii(field)[1:-1])


def _decode(raw: bytes, source: str, line: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRecord(f"not valid UTF-8 (byte {exc.start + 1} of the line)", source=source, line=line) from None


def iter_jsonl(path: Path, data: bytes | None = None, blank: list[int] | None = None, *,
               span: tuple[int, int, int] | None = None) -> Iterator[tuple[int, Any]]:
    """(line number, decoded value) for every non-blank line, streamed.

    A line that fails to decode yields ``(line, BadRecord)`` so the caller decides whether to
    raise or skip, and reading goes on with the next line; a key given twice in one object is
    such a failure (JSON would keep the last value silently). The numbers of blank lines are
    appended to ``blank`` (the caller reports them, as it does for CSV). ``span`` = (first
    byte, end byte, number of its first line) reads only the lines of that byte range of a
    file (both ends at line starts), numbered as in the whole file.
    """
    source = str(path)
    start, stop, first = span if span is not None else (0, None, 1)
    with open_binary(path, data) as fh:
        # a file that grows while it is read (a live log, a special file posing as a regular one)
        # is refused at the size it had when opened, before it can fill memory
        limit, used = (os.fstat(fh.fileno()).st_size if data is None else len(data)), start
        if stop is not None:
            fh.seek(start)
            limit = min(limit, stop)
        for number, raw in enumerate(fh, first):
            if used >= limit and stop is not None:
                break
            used += len(raw)
            if used > limit:
                raise InputError(f"file grew while it was read (past the {limit:,} bytes it had when opened): "
                                 "read a finished file", source=source, line=number)
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if not raw or raw.isspace():  # (raw.strip() would copy a long line to test it)
                if blank is not None:
                    blank.append(number)
                continue
            try:
                # no rstrip: JSON ignores the line break, and a copy of a 100 MB line is 100 MB
                text = _decode(raw, source, number)
                del raw  # the bytes are not needed once decoded
                try:
                    value = json.loads(text, object_pairs_hook=unique_keys)
                except (ValueError, RecursionError) as exc:
                    raise BadRecord(f"invalid JSON ({_json_reason(exc, text)})", source=source, line=number) from None
                if may_hold_surrogates(text):
                    check_surrogates(value, source, number)
                del text  # not held while the caller parses the record
            except BadRecord as bad:
                yield number, bad
                continue
            yield number, value


def _json_reason(exc: Exception, text: str) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if isinstance(exc, DuplicateKeyError):
        return str(exc)
    msg = str(getattr(exc, "msg", exc)).lower()
    msg = msg[:-3] if msg.endswith(" at") else msg
    pos = getattr(exc, "pos", None)
    if "unterminated" in msg or (pos is not None and pos >= len(text.rstrip())):
        return f"truncated line: {msg}"
    return f"{msg} at column {getattr(exc, 'colno', '?')}"


def load_json(path: Path, data: bytes | None = None) -> Any:
    """A whole JSON document (the format has no line structure to stream)."""
    source = str(path)
    if data is None:
        try:
            raw = read_regular(path, max_bytes=2**63 - 1)
        except ValueError as exc:
            raise InputError(str(exc).replace(f"`{path.name}` ", "file ", 1), source=source) from None
    else:
        raw = data
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
        doc = json.loads(text, object_pairs_hook=unique_keys)
        if may_hold_surrogates(text):
            return _Flagged(doc)
        return doc
    except RecursionError:
        raise InputError("invalid JSON (nested too deeply)", source=source) from None
    except DuplicateKeyError as exc:
        raise InputError(f"invalid JSON ({exc})", source=source) from None
    except ValueError as exc:
        raise InputError(f"invalid JSON ({getattr(exc, 'msg', str(exc)).lower()})", source=source,
                         line=getattr(exc, "lineno", None)) from None


class _Flagged:
    """A decoded JSON document whose text holds surrogate escapes: its records are checked
    one by one, so one bad record is reported (or skipped) alone."""

    def __init__(self, doc: Any) -> None:
        self.doc = doc


def unwrap(doc: Any) -> Any:
    return doc.doc if isinstance(doc, _Flagged) else doc


def json_records(doc: Any, source: str) -> Iterator[tuple[int, Any]]:
    """Records in a JSON document: an array, an object wrapping an array, an object keyed by
    record id (the key kept as ``_key``), or a single record."""
    if isinstance(doc, _Flagged):
        for index, record in _json_records(doc.doc, source):
            try:
                check_surrogates(record, source, index)
            except BadRecord as bad:
                yield index, bad
                continue
            yield index, record
        return
    yield from _json_records(doc, source)


def _json_records(doc: Any, source: str) -> Iterator[tuple[int, Any]]:
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


def frame_records(frame: pl.DataFrame, *, first: int = 1,
                  blank: list[int] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows as records, numbered from ``first`` (2 for CSV, whose line 1 is the header, so
    the number is the file line unless a quoted field holds a line break). A row with every
    value missing (a blank CSV line) is no record: its number goes to ``blank``, as blank
    JSONL lines do."""
    empty = frame.select(pl.all_horizontal(pl.all().is_null())).to_series() if frame.width else None
    for (number, row), is_empty in zip(enumerate(frame.iter_rows(named=True), first),
                                       empty if empty is not None else iter(lambda: False, True)):
        if is_empty:
            if blank is not None:
                blank.append(number)
            continue
        yield number, row


def read_parquet(path: Path, data: bytes | None = None) -> pl.DataFrame:
    try:  # from the footer, before polars reads a column: 1,000 nested lists crash it (no message)
        check_parquet_depth(data if data is not None else path, name=path.name)
    except ValueError as exc:
        raise InputError(str(exc), source=str(path), field="schema") from None
    try:
        return pl.read_parquet(io.BytesIO(data) if data is not None else path)
    except Exception as exc:  # noqa: BLE001 - polars raises several types for a corrupt file
        raise InputError(f"cannot read parquet ({type(exc).__name__}: {_first_line(exc)})", source=str(path)) from None


def read_csv(path: Path, data: bytes | None = None) -> pl.DataFrame:
    separator = "\t" if path.suffix.lower() == ".tsv" else ","
    try:
        # all text: types are coerced per canonical field, with errors naming the row
        return pl.read_csv(io.BytesIO(data) if data is not None else path, infer_schema=False, separator=separator)
    except Exception as exc:  # noqa: BLE001 - polars raises several types for a malformed CSV
        _check_utf8_lines(path, data)  # name the line when the bytes are the problem
        raise InputError(f"cannot read CSV ({type(exc).__name__}: {_first_line(exc)})", source=str(path)) from None


def _check_utf8_lines(path: Path, data: bytes | None = None) -> None:
    with open_binary(path, data) as fh:
        for number, raw in enumerate(fh, 1):
            _decode(raw, str(path), number)


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else ""
