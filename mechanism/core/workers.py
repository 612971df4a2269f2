"""Worker processes of this package: how many, how they are started, how they talk.

A worker is ``python -m <one of this package's modules>``: a fresh interpreter that imports only
what its job needs. It never runs the caller's script again (as multiprocessing's ``spawn``
does for a script without a ``__main__`` guard) and never inherits a forked copy of the
caller's threads (torch, polars). Jobs and answers travel as length-prefixed frames over the
worker's pipes, in memory, between this package's own processes; nothing is written to disk.
Figures saved while a report goes on (:mod:`mechanism.plots.background`) and large files read in
parts (:mod:`mechanism.readers._parts`) use them.
"""
from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import BinaryIO

from mechanism.core.errors import MechanismError

__all__ = ["usable_cores", "workers_setting", "start_worker", "write_frame", "read_frame", "answer_stream"]

_HEADER = struct.Struct("<Q")


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS and Windows have no affinity mask
        return os.cpu_count() or 1


def workers_setting(name: str) -> int | None:
    """The whole number in the environment variable ``name``, or None where it is unset or blank."""
    setting = os.environ.get(name, "").strip()
    if not setting:
        return None
    try:
        return int(setting)
    except ValueError:
        raise MechanismError(f"{name} must be a whole number, got {setting[:40]!r}") from None


def start_worker(module: str, env: dict[str, str] | None = None) -> subprocess.Popen | None:
    """``python -m module`` with pipes on its standard input and output, or None where none can start."""
    # the worker finds this copy of the package wherever the caller found it
    home = str(Path(__file__).resolve().parents[2])
    full = {**os.environ, **(env or {})}
    full["PYTHONPATH"] = os.pathsep.join(p for p in (home, os.environ.get("PYTHONPATH")) if p)
    try:
        return subprocess.Popen([sys.executable, "-m", module], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=full)
    except OSError:
        return None


def write_frame(stream: BinaryIO, data: bytes) -> None:
    """``data``, prefixed by its length."""
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def read_frame(stream: BinaryIO) -> bytes | None:
    """The next frame of ``stream``; None at its end or where it was cut short."""
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(head)
    data = stream.read(size)
    return data if len(data) == size else None


def answer_stream() -> BinaryIO:
    """In a worker: a copy of standard output for its answers. The descriptor itself then points
    at standard error, so a stray print (from Python or a C library) cannot land in them."""
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return answers
