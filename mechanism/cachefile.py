"""Checked cache files: written atomically, committed by a JSON sidecar, verified on read.

The caches of :mod:`mechanism.segmentation` (per-trajectory segmentations) and
:mod:`mechanism.strategy_space` (fitted clusterings) store each entry as a payload file
(parquet or JSON; never pickle) plus ``<name>.json``, a sidecar holding the payload's
BLAKE2b digest and size. The payload is written first and the sidecar last, each to a
temporary file moved into place (``os.replace``), so a crash leaves a whole entry, a payload
without sidecar (ignored, then overwritten), or nothing. A payload whose digest or size does
not match its sidecar is deleted with the sidecar and reported as missing, so the caller
rebuilds it.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

SIDECAR_FORMAT = 1


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def digest(data: bytes) -> str:
    """BLAKE2b-256 of ``data`` as hex (faster than SHA-256 and as collision-resistant here)."""
    return hashlib.blake2b(data, digest_size=32).hexdigest()


def sidecar(path: Path) -> Path:
    """The sidecar of a payload file: ``<payload name>.json`` beside it."""
    return path.with_name(path.name + ".json")


def write_checked(path: Path, data: bytes, meta: dict[str, Any] | None = None) -> None:
    """Write a payload, then its sidecar (``meta`` plus size and digest), both atomically.

    Parameters
    ----------
    path
        The payload file.
    data
        Its bytes.
    meta
        Extra JSON-serialisable fields kept in the sidecar (format, producer, row count).
    """
    atomic_write(path, data)
    record = {**(meta or {}), "sidecar_format": SIDECAR_FORMAT, "size": len(data), "digest": digest(data)}
    atomic_write(sidecar(path), json.dumps(record, sort_keys=True).encode())


def read_checked(path: Path, meta: dict[str, Any] | None = None) -> bytes | None:
    """The payload at ``path`` if it and its sidecar agree, else ``None``.

    A missing entry returns ``None`` and leaves the folder alone; a corrupt one (unreadable
    sidecar, size or digest mismatch, or ``meta`` fields that differ) is deleted, so the
    caller rebuilds it.

    Parameters
    ----------
    path
        The payload file.
    meta
        Fields the sidecar must hold with these values.
    """
    side = sidecar(path)
    if not side.exists():
        return None
    try:
        record = load_json_small(side)
        data = path.read_bytes()
        if (not isinstance(record, dict) or record.get("sidecar_format") != SIDECAR_FORMAT
                or record.get("size") != len(data) or record.get("digest") != digest(data)
                or any(record.get(k) != v for k, v in (meta or {}).items())):
            raise ValueError("size, digest or producer mismatch")
        return data
    except (OSError, ValueError, TypeError, AttributeError):
        discard(path)
        return None


SIDECAR_MAX_BYTES = 64 * 2**20  # a sidecar lists keys and digests; larger is not one of ours


def load_json_small(path: Path, *, max_bytes: int = SIDECAR_MAX_BYTES) -> Any:
    """A JSON file that the toolkit wrote (a sidecar, a manifest), refused with
    :class:`ValueError` when it is larger than ``max_bytes``, not UTF-8, not JSON, or nested
    too deeply to decode (a crafted file must not crash the caller with a RecursionError)."""
    size = path.stat().st_size
    if size > max_bytes:
        raise ValueError(f"{path.name} is {size} bytes, more than the {max_bytes} a sidecar may hold")
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except RecursionError:
        raise ValueError(f"{path.name} is nested too deeply") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path.name} is not UTF-8") from None


def load_npy(source: "Path | bytes", *, dtype: "np.dtype | type | None" = None, ndim: int | None = None) -> np.ndarray:
    """A ``.npy`` array whose header is checked before anything is allocated.

    The header's shape and dtype must account for exactly the bytes the file holds, so a
    crafted header claiming a huge shape is refused (:class:`ValueError`) instead of making
    NumPy allocate it; object arrays are refused (no pickle).

    Parameters
    ----------
    source
        The file, or its bytes.
    dtype, ndim
        When given, the array must have this dtype / number of dimensions.
    """
    data = source if isinstance(source, bytes) else Path(source).read_bytes()
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


def discard(path: Path) -> None:
    """Delete a payload and its sidecar (either may be absent)."""
    sidecar(path).unlink(missing_ok=True)
    path.unlink(missing_ok=True)
