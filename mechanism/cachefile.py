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
import json
import os
import tempfile
from pathlib import Path
from typing import Any

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
        record = json.loads(side.read_text("utf-8"))
        data = path.read_bytes()
        if (not isinstance(record, dict) or record.get("sidecar_format") != SIDECAR_FORMAT
                or record.get("size") != len(data) or record.get("digest") != digest(data)
                or any(record.get(k) != v for k, v in (meta or {}).items())):
            raise ValueError("size, digest or producer mismatch")
        return data
    except (OSError, ValueError, TypeError):
        discard(path)
        return None


def discard(path: Path) -> None:
    """Delete a payload and its sidecar (either may be absent)."""
    sidecar(path).unlink(missing_ok=True)
    path.unlink(missing_ok=True)
