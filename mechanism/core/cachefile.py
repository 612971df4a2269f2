"""Checked cache files: written atomically, committed by a JSON sidecar, verified on read.

The one cache implementation of the toolkit. Every cache (per-trajectory segmentations in
:mod:`mechanism.analysis.segmentation`, embeddings in :mod:`mechanism.analysis.embed`, fitted clusterings and
UMAP reductions in :mod:`mechanism.analysis._strategies`) stores each entry as a payload file (parquet,
JSON or ``.npy``; never pickle) plus a JSON sidecar holding the payload's size and a digest over
the payload and the sidecar's own fields (so editing either is caught). The payload is written
first and the sidecar last, each to a temporary file moved into place (``os.replace``), so a
crash leaves a whole entry, a payload without sidecar (ignored, then overwritten), or nothing.

A cache folder is shared (``--cache-dir``, workers), so its entries are untrusted: the digest
is keyed (BLAKE2b in its MAC mode) with a secret of that folder (:func:`cache_key`, a file
readable by its owner only), so an entry crafted with a recomputed plain checksum does not
match and is rebuilt, never trusted. An entry that is unreadable, of the wrong kind (a folder,
a link, a FIFO or device where a file goes) or fails its check is moved aside (``.<name>.bad``,
one slot per entry) with one :class:`~mechanism.core.errors.CacheWarning` and reported as missing,
so the caller rebuilds it; an entry made by another format or producer is replaced silently.
Saved strategy spaces check their files with the same :func:`digest`; :func:`code_id` is the
one digest of source code that keys a cache to the code that filled it.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import secrets
import shutil
import stat
import tempfile
import threading
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from mechanism.core.errors import CacheWarning

SIDECAR_FORMAT = 3  # 2: the digest covers the sidecar's fields too; 3: keyed with the folder's secret
KEY_FILE = ".mechanism-cache-key"  # the folder's secret (no .json suffix: caches list their *.json)
_KEY_BYTES = 32


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


def code_id(paths: Iterable[Path]) -> str:
    """Digest of source files (16 hex digits): a cache entry is valid only for the code that
    made it. The one code digest of the toolkit (segmentations and fitted clusterings)."""
    return digest(b"\0".join(Path(p).read_bytes() for p in paths))[:16]


def sidecar(path: Path) -> Path:
    """The sidecar of a payload file: ``<payload name>.json`` beside it."""
    return path.with_name(path.name + ".json")


_KEYS: dict[str, bytes] = {}  # folder -> its secret, read once per process
_KEYS_LOCK = threading.Lock()


def cache_key(folder: Path) -> bytes:
    """The secret that keys the digests of the entries in ``folder``, made on first use: 32
    random bytes in ``folder/.mechanism-cache-key``, readable and writable by its owner only.

    A key file that is not a regular file of ours (another owner, other permissions, a link,
    the wrong size) is moved aside and a new one made, so entries keyed with it are rebuilt.
    """
    folder = Path(folder)
    known = _KEYS.get(str(folder))
    if known is not None:
        return known
    with _KEYS_LOCK:  # threads of one process make a folder's key one at a time
        known = _KEYS.get(str(folder))
        if known is None:
            known = _KEYS[str(folder)] = _make_key(folder / KEY_FILE)
    return known


def _make_key(path: Path) -> bytes:
    """The key at ``path``, made when there is none (:func:`cache_key`)."""
    key = _read_key(path)
    if key is None and os.path.lexists(path):
        # read again before calling it bad: another process may have linked its key there
        # between the read above and this look (the file it found missing is now whole)
        key = _read_key(path)
    if key is None:
        if os.path.lexists(path):
            set_aside(path, "not a key file of this user's (0600, 32 bytes)")
        folder = path.parent
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f"{KEY_FILE}.")  # mkstemp's file is 0600
        try:
            os.write(fd, secrets.token_bytes(_KEY_BYTES))
            os.fsync(fd)
            os.close(fd)
            try:
                os.link(tmp, path)  # never replaces a key another process made meanwhile
            except FileExistsError:
                pass
        finally:
            os.unlink(tmp)
        key = _read_key(path)
        if key is None:
            raise OSError(f"cannot make the cache key {path}")
    return key


def _read_key(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if (not stat.S_ISREG(info.st_mode) or info.st_size != _KEY_BYTES or info.st_mode & 0o077
                or (hasattr(os, "geteuid") and info.st_uid != os.geteuid())):
            return None
        data = os.read(fd, _KEY_BYTES + 1)
        return data if len(data) == _KEY_BYTES else None
    finally:
        os.close(fd)


def _entry_digest(record: dict[str, Any], data: bytes, key: bytes) -> str:
    fields = {k: v for k, v in record.items() if k != "digest"}
    mac = hashlib.blake2b(key=key, digest_size=32)
    mac.update(json.dumps(fields, sort_keys=True).encode("utf-8", "surrogatepass") + b"\0")
    mac.update(data)
    return mac.hexdigest()


def _kind(path: Path) -> str | None:
    """What stands at ``path`` when it is not a regular file (a folder, a link, ...), else None."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISREG(mode):
        return None
    return ("a symlink" if stat.S_ISLNK(mode) else "a folder" if stat.S_ISDIR(mode)
            else "a FIFO, device or socket")


def set_aside(path: Path, why: str, *, warn: bool = True) -> str:
    """Move ``path`` (whatever it is) to ``.<name>.bad`` beside it, replacing an earlier one, and
    say so in one :class:`~mechanism.core.errors.CacheWarning`; removed where it cannot be moved.
    Returns what was done ("moved aside to ...", "removed")."""
    path = Path(path)
    target = path.with_name(f".{path.name.encode()[:200].decode('utf-8', 'ignore')}.bad")
    try:
        if os.path.lexists(target):
            if os.path.isdir(target) and not os.path.islink(target):
                shutil.rmtree(target)
            else:
                target.unlink()
        os.rename(path, target)
        where = f"moved aside to {target.name}"
    except OSError:
        with contextlib.suppress(OSError):
            shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else path.unlink()
        where = "removed"
    if warn:
        warnings.warn(CacheWarning(f"cache entry {' '.join(str(path).split())} was {why}: {where}, rebuilt"),
                      stacklevel=3)
    return where


def _make_room(path: Path) -> None:
    """Clear the way for a new entry at ``path``: anything but a regular file there is set aside."""
    what = _kind(path)
    if what is not None:
        set_aside(path, what)


def write_checked(path: Path, data: bytes, meta: dict[str, Any] | None = None, *,
                  side: Path | None = None) -> None:
    """Write a payload, then its sidecar (``meta`` plus size and keyed digest), both atomically.

    Anything that is not a regular file where either goes (a folder, a link) is set aside first.

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
    side = side or sidecar(path)
    for target in (path, side):
        _make_room(target)
    key = cache_key(path.parent)
    atomic_write(path, data)
    record = {**(meta or {}), "sidecar_format": SIDECAR_FORMAT, "size": len(data)}
    record["digest"] = _entry_digest(record, data, key)
    atomic_write(side, json.dumps(record, sort_keys=True).encode("utf-8", "surrogatepass"))


class _Stale(Exception):
    """An entry another format or producer wrote: replaced without a warning."""


def read_entry(path: Path, meta: dict[str, Any] | None = None, *,
               side: Path | None = None) -> tuple[bytes, dict[str, Any]] | None:
    """The payload at ``path`` and its sidecar's fields if they agree, else ``None``.

    A missing entry returns ``None`` and leaves the folder alone. One that is not whole or not
    ours (a folder or link where a file goes, an unreadable sidecar, a size or keyed digest
    that does not match) is set aside with one warning (:func:`set_aside`); one of another
    sidecar format or with other ``meta`` fields is deleted silently. Either way the caller
    rebuilds it.

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
        if _kind(path) is not None:
            set_aside(path, _kind(path))
        return None
    for target in (side, path):
        what = _kind(target)
        if what is not None:
            discard(path, side=side, why=what)
            return None
    try:
        record = load_json_small(side, folder=path.parent)
        size = record.get("size") if isinstance(record, dict) else None
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ValueError("bad size in the sidecar")
        if record.get("sidecar_format") != SIDECAR_FORMAT or any(record.get(k) != v for k, v in (meta or {}).items()):
            raise _Stale
        # the sidecar's size caps what is read: a grown file is refused unread
        data = read_regular(path, max_bytes=size, folder=path.parent)
        if len(data) != size or record.get("digest") != _entry_digest(record, data, cache_key(path.parent)):
            raise ValueError("its size or keyed digest does not match its sidecar")
        return data, record
    except _Stale:
        _remove(path, side)
        return None
    except FileNotFoundError:
        _remove(path, side)  # a sidecar without its payload: a torn write
        return None
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        discard(path, side=side, why=f"unreadable or not this cache's ({' '.join(str(exc).split())[:120]})")
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


def read_array(path: Path, meta: dict[str, Any] | None = None, *, dtype: np.dtype | type,
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


def check_parquet_depth(source: Path | bytes, *, max_depth: int = PARQUET_MAX_DEPTH, name: str = "file") -> None:
    """Refuse (one-line :class:`ValueError`) a parquet file whose schema nests more than
    ``max_depth`` levels of lists and structs, from its footer alone: a file of lists nested
    1,000 deep crashes the reader (a segfault, no message) and 300 levels take 700 MB."""
    import pyarrow as pa  # noqa: PLC0415 - pyarrow: only when a parquet file is checked; the core layer imports light
    import pyarrow.parquet as pq  # noqa: PLC0415 - pyarrow: only when a parquet file is checked; the core layer imports light

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


def load_npy(source: Path | bytes, *, dtype: np.dtype | type | None = None, ndim: int | None = None,
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
    except Exception as exc:  # noqa: BLE001 - numpy's header parser raises many types (tokenize, syntax, EOF) on junk
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


def discard(path: Path, *, side: Path | None = None, why: str = "refused by its check") -> None:
    """Set a bad entry aside, its payload and sidecar (either may be absent), with one
    :class:`~mechanism.core.errors.CacheWarning` for the two, so the caller rebuilds it."""
    side = side or sidecar(path)
    there = [p for p in (path, side) if os.path.lexists(p)]
    if not there:
        return
    done = [set_aside(p, why, warn=False) for p in there]
    shown = " ".join(str(path).split())
    warnings.warn(CacheWarning(f"cache entry {shown} was {why}: {done[0]}, rebuilt"), stacklevel=2)


def _remove(path: Path, side: Path) -> None:
    """Delete an entry of another format or producer (no warning: it is only out of date)."""
    for p in (side, path):
        with contextlib.suppress(OSError):
            p.unlink()
