"""Checked cache files: written atomically, committed by a JSON sidecar, verified on read.

The one cache implementation of the toolkit. Every cache (per-trajectory segmentations in
:mod:`mechanism.segmentation`, embeddings in :mod:`mechanism.embed`, fitted clusterings and
UMAP reductions in :mod:`mechanism._strategies`) stores each entry as a payload file (parquet,
JSON or ``.npy``; never pickle) plus a JSON sidecar holding the payload's size and a BLAKE2b
digest over the payload and the sidecar's own fields (so editing either is caught). The payload
is written first and the sidecar last, each to a temporary file moved into place
(``os.replace``), so a crash leaves a whole entry, a payload without sidecar (ignored, then
overwritten), or nothing. A payload whose digest or size does not match its sidecar is deleted
with the sidecar and reported as missing, so the caller rebuilds it. Saved strategy spaces
check their files with the same :func:`digest`; :func:`code_id` is the one digest of source
code that keys a cache to the code that filled it.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

SIDECAR_FORMAT = 2  # 2: the digest covers the sidecar's fields too


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path`` (same folder, so the move is atomic) for a writer that
    takes a path (polars, matplotlib); moved onto ``path`` with ``os.replace`` when the block
    finishes and removed on an exception, so ``path`` is never a half-written file. The file
    gets the permissions a new file would (mkstemp's are private)."""
    path = Path(path)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name.encode()[:100].decode('utf-8', 'ignore')}.",
                                suffix=f".partial{path.suffix}")
    os.close(fd)
    mask = os.umask(0o022)
    os.umask(mask)
    os.chmod(name, 0o666 & ~mask)
    try:
        yield Path(name)
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


def digest(data: bytes, *, algorithm: str = "blake2b") -> str:
    """BLAKE2b-256 of ``data`` as hex (faster than SHA-256 and as collision-resistant here);
    ``algorithm="sha256"`` reads checksums written before BLAKE2b was the one digest."""
    if algorithm == "sha256":
        return hashlib.sha256(data).hexdigest()
    return hashlib.blake2b(data, digest_size=32).hexdigest()


def code_id(paths: "Iterable[Path]") -> str:
    """Digest of source files (16 hex digits): a cache entry is valid only for the code that
    made it. The one code digest of the toolkit (segmentations and fitted clusterings)."""
    return digest(b"\0".join(Path(p).read_bytes() for p in paths))[:16]


def sidecar(path: Path) -> Path:
    """The sidecar of a payload file: ``<payload name>.json`` beside it."""
    return path.with_name(path.name + ".json")


def _entry_digest(record: dict[str, Any], data: bytes) -> str:
    fields = {k: v for k, v in record.items() if k != "digest"}
    return digest(json.dumps(fields, sort_keys=True).encode("utf-8", "surrogatepass") + b"\0" + data)


def write_checked(path: Path, data: bytes, meta: dict[str, Any] | None = None, *,
                  side: Path | None = None) -> None:
    """Write a payload, then its sidecar (``meta`` plus size and digest), both atomically.

    Parameters
    ----------
    path
        The payload file.
    data
        Its bytes.
    meta
        Extra JSON-serialisable fields kept in the sidecar (format, producer, row count); the
        digest covers them.
    side
        The sidecar's path (default :func:`sidecar`).
    """
    atomic_write(path, data)
    record = {**(meta or {}), "sidecar_format": SIDECAR_FORMAT, "size": len(data)}
    record["digest"] = _entry_digest(record, data)
    atomic_write(side or sidecar(path), json.dumps(record, sort_keys=True).encode("utf-8", "surrogatepass"))


def read_entry(path: Path, meta: dict[str, Any] | None = None, *,
               side: Path | None = None) -> tuple[bytes, dict[str, Any]] | None:
    """The payload at ``path`` and its sidecar's fields if they agree, else ``None``.

    A missing entry returns ``None`` and leaves the folder alone; a corrupt one (unreadable
    sidecar, size or digest mismatch, or ``meta`` fields that differ) is deleted, so the
    caller rebuilds it.

    Parameters
    ----------
    path
        The payload file.
    meta
        Fields the sidecar must hold with these values.
    side
        The sidecar's path (default :func:`sidecar`).
    """
    side = side or sidecar(path)
    if not os.path.lexists(side):
        return None
    try:
        record = load_json_small(side, folder=path.parent)
        size = record.get("size") if isinstance(record, dict) else None
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ValueError("bad size in the sidecar")
        # the sidecar's size caps what is read: a /dev/zero or a grown file is refused unread
        data = read_regular(path, max_bytes=size, folder=path.parent)
        if (record.get("sidecar_format") != SIDECAR_FORMAT
                or record.get("size") != len(data) or record.get("digest") != _entry_digest(record, data)
                or any(record.get(k) != v for k, v in (meta or {}).items())):
            raise ValueError("size, digest or producer mismatch")
        return data, record
    except (OSError, ValueError, TypeError, AttributeError):
        discard(path, side=side)
        return None


def read_checked(path: Path, meta: dict[str, Any] | None = None) -> bytes | None:
    """The payload of :func:`read_entry`, without the sidecar's fields."""
    entry = read_entry(path, meta)
    return None if entry is None else entry[0]


def write_array(path: Path, arr: np.ndarray, meta: dict[str, Any] | None = None, *,
                side: Path | None = None) -> None:
    """:func:`write_checked` of an array as ``.npy`` (no pickle)."""
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
    write_checked(path, buf.getvalue(), meta, side=side)


def read_array(path: Path, meta: dict[str, Any] | None = None, *, dtype: "np.dtype | type",
               shape: tuple[int, ...] | None = None, side: Path | None = None,
               ) -> tuple[np.ndarray, dict[str, Any]] | None:
    """An array written by :func:`write_array`, with its sidecar's fields, when the entry is whole
    and the array has ``dtype``, ``shape`` (when given) and only finite values; else ``None``
    (a bad entry is deleted, so the caller rebuilds it)."""
    entry = read_entry(path, meta, side=side)
    if entry is None:
        return None
    try:
        arr = load_npy(entry[0], dtype=dtype, ndim=None if shape is None else len(shape))
        if (shape is not None and arr.shape != tuple(shape)) or not np.isfinite(arr).all():
            raise ValueError("shape or values mismatch")
    except ValueError:
        discard(path, side=side)
        return None
    return arr, entry[1]


SIDECAR_MAX_BYTES = 64 * 2**20  # a sidecar lists keys and digests; larger is not one of ours
JSON_MAX_DEPTH = 64  # the deepest JSON the toolkit writes is 4 levels; deeper is not one of ours


def read_regular(path: Path, *, max_bytes: int, folder: Path | None = None) -> bytes:
    """The bytes of ``path``, read as untrusted input: only a regular file (a FIFO would block
    forever, ``/dev/zero`` never ends), at most ``max_bytes`` (checked on the open file before
    reading), and, with ``folder``, only a file inside it (a symlink pointing out is refused).

    The file is opened without blocking and checked on its descriptor, so it cannot be swapped
    for a FIFO or a device between the check and the read.

    Raises
    ------
    FileNotFoundError
        When ``path`` is not there.
    ValueError
        Any other reason to refuse it, one line naming the file.
    """
    path = Path(path)
    name = path.name
    if folder is not None and os.path.islink(path):
        inside = os.path.realpath(folder)
        if os.path.commonpath([inside, os.path.realpath(path)]) != inside:
            raise ValueError(f"`{name}` is a symlink pointing outside its folder")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except IsADirectoryError:
        raise ValueError(f"`{name}` is a directory, not a file") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"`{name}` is not a regular file (a FIFO, device or socket)")
        if info.st_size > max_bytes:
            raise ValueError(f"`{name}` is {info.st_size} bytes, more than the {max_bytes} this file may hold")
        chunks, left = [], info.st_size + 1  # one byte more: a file that grew while read is refused
        while left > 0:
            chunk = os.read(fd, min(left, 2**24))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:
            raise ValueError(f"`{name}` changed while it was read")
        return b"".join(chunks)
    finally:
        os.close(fd)


# a JSON string (escapes included): what the depth scan skips over
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)  # unrolled: a tight loop per run of plain bytes


def json_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects in JSON text, found without recursion (strings
    removed, then a running count of brackets), so a crafted file of 10^5 brackets is measured,
    never decoded."""
    bare = np.frombuffer(_JSON_STRING.sub(b'""', data), dtype=np.uint8)
    if not len(bare):
        return 0
    step = (np.isin(bare, (ord("["), ord("{"))).astype(np.int32)
            - np.isin(bare, (ord("]"), ord("}"))).astype(np.int32))
    return int(np.cumsum(step).max(initial=0))


class DuplicateKeyError(ValueError):
    """A JSON object that gives one key twice (JSON decoders keep the last one silently)."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for :func:`json.loads` that refuses a key given twice in one object."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                shown = key if len(key) <= 60 else key[:57] + "..."
                raise DuplicateKeyError(f"duplicate key `{shown}` in one object (which value is meant is "
                                        "ambiguous: JSON readers keep the last silently)")
            seen.add(key)
    return out


def parse_json(data: bytes, *, name: str = "file", max_depth: int = JSON_MAX_DEPTH) -> Any:
    """JSON text the toolkit wrote (a sidecar, a manifest, ``space.json``), refused with a
    one-line :class:`ValueError` when not UTF-8, not JSON, nested deeper than ``max_depth``
    (measured before decoding), or holding a key twice (which value was meant is unknown)."""
    depth = json_depth(data)
    if depth > max_depth:
        raise ValueError(f"`{name}` is nested too deeply ({depth} levels, more than the {max_depth} it may be)")
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=unique_keys)
    except UnicodeDecodeError:
        raise ValueError(f"`{name}` is not UTF-8") from None
    except RecursionError:  # not reached after the depth check; kept as a last guard
        raise ValueError(f"`{name}` is nested too deeply") from None
    except ValueError as exc:
        raise ValueError(f"`{name}` is not valid JSON ({' '.join(str(exc).split())[:160]})") from None


def load_json_small(path: Path, *, max_bytes: int = SIDECAR_MAX_BYTES, folder: Path | None = None) -> Any:
    """A JSON file that the toolkit wrote (a sidecar, a manifest): :func:`read_regular` then
    :func:`parse_json`; every refusal is a one-line :class:`ValueError`."""
    return parse_json(read_regular(path, max_bytes=max_bytes, folder=folder), name=Path(path).name)


PARQUET_MAX_DEPTH = 32  # the canonical table nests 3 levels (steps: list of struct); chat logs a few more


def check_parquet_depth(source: "Path | bytes", *, max_depth: int = PARQUET_MAX_DEPTH, name: str = "file") -> None:
    """Refuse (one-line :class:`ValueError`) a parquet file whose schema nests more than
    ``max_depth`` levels of lists and structs, from its footer alone: a file of lists nested
    1,000 deep crashes the reader (a segfault, no message) and 300 levels take 700 MB."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        handle = pq.ParquetFile(pa.BufferReader(source) if isinstance(source, bytes) else str(source))
        schema = handle.schema_arrow
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types on a corrupt footer
        reason = " ".join(str(exc).split())[:160]
        if "deeply nested" in reason:
            raise ValueError(f"`{name}` nests its columns too deeply (more than {max_depth} levels)") from None
        raise ValueError(f"`{name}` is not a readable parquet file ({type(exc).__name__}: {reason})") from None
    stack = [(f.type, 1, f.name) for f in schema]
    while stack:
        kind, depth, column = stack.pop()
        if depth > max_depth:
            raise ValueError(f"`{name}` nests column `{column[:60]}` more than {max_depth} levels deep")
        stack.extend((kind.field(i).type, depth + 1, column) for i in range(kind.num_fields))


NPY_MAX_BYTES = 4 * 2**30  # one saved or cached array; a larger file is refused before it is read


def load_npy(source: "Path | bytes", *, dtype: "np.dtype | type | None" = None, ndim: int | None = None,
             max_bytes: int = NPY_MAX_BYTES, folder: Path | None = None) -> np.ndarray:
    """A ``.npy`` array whose header is checked before anything is allocated.

    The header's shape and dtype must account for exactly the bytes the file holds, so a
    crafted header claiming a huge shape is refused (:class:`ValueError`) instead of making
    NumPy allocate it; object arrays are refused (no pickle).

    Parameters
    ----------
    source
        The file (read by :func:`read_regular`), or its bytes.
    dtype, ndim
        When given, the array must have this dtype / number of dimensions.
    max_bytes, folder
        As :func:`read_regular`.
    """
    data = source if isinstance(source, bytes) else read_regular(Path(source), max_bytes=max_bytes, folder=folder)
    fh = io.BytesIO(data)
    try:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, fortran, have = np.lib.format.read_array_header_1_0(fh)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, have = np.lib.format.read_array_header_2_0(fh)
        else:
            raise ValueError(f"unknown .npy version {version}")
    except Exception as exc:  # numpy's header parser raises many types (tokenize, syntax, EOF) on junk
        reason = " ".join(str(exc).split())[:120]
        raise ValueError(f"bad .npy header ({type(exc).__name__}: {reason})") from None
    if have.hasobject:
        raise ValueError("object arrays are not loaded (they would need pickle)")
    if dtype is not None and have != np.dtype(dtype):
        raise ValueError(f".npy dtype {have}, expected {np.dtype(dtype)}")
    if ndim is not None and len(shape) != ndim:
        raise ValueError(f".npy array has {len(shape)} dimensions, expected {ndim}")
    if any((not isinstance(n, int)) or n < 0 for n in shape):
        raise ValueError(f"bad .npy shape {shape}")
    count = 1
    for n in shape:
        count *= n
    body = len(data) - fh.tell()
    if count * have.itemsize != body:
        raise ValueError(f".npy header claims shape {shape} ({count * have.itemsize} bytes) but the file holds "
                         f"{body}")
    arr = np.frombuffer(data, dtype=have, count=count, offset=fh.tell())
    return arr.reshape(shape, order="F" if fortran else "C").copy()


def discard(path: Path, *, side: Path | None = None) -> None:
    """Delete a payload and its sidecar (either may be absent)."""
    (side or sidecar(path)).unlink(missing_ok=True)
    path.unlink(missing_ok=True)
