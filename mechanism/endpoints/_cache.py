"""The content-addressed cache of endpoint answers: the same request is never sent twice.

The key is the digest of the canonical JSON of ``{"model", "route", "body"}``. The server's
address is left out on purpose: a server restarted on another port (or another host serving the
same model) answers the same requests the same way, so its answers are still good. A sampled
request (temperature above 0) is cached too: its seed is in the body, so the same request gives
the same answer. Identical requests in flight at once are sent once (the others wait for its
answer), so two writers never interleave one entry's payload and sidecar. With a folder, entries are JSON files kept by
:func:`mechanism.core.cachefile.write_checked` under ``<folder>/endpoints/<key[:2]>/<key>.json``
(a damaged entry is set aside with a warning and fetched again); without one, a dict in memory.
"""
from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mechanism.core.cachefile import digest, parse_json, read_checked, write_checked

_FORMAT = {"producer": "mechanism.endpoints", "entry_format": 1}


def request_key(model: str, route: str, body: dict[str, Any]) -> str:
    """The cache key of one request: the digest of its canonical JSON (sorted keys, no spaces)."""
    text = json.dumps({"model": model, "route": route, "body": body}, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False, allow_nan=False)
    return digest(text.encode("utf-8", "surrogatepass"))


class ResponseCache:
    """Answers (parsed JSON) by request key, in ``folder`` or, with ``folder=None``, in memory."""

    def __init__(self, folder: str | os.PathLike | None = None) -> None:
        self.folder = None if folder is None else Path(folder) / "endpoints"
        self._memory: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._in_flight: dict[str, threading.Lock] = {}

    def _path(self, key: str) -> Path:
        assert self.folder is not None
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any | None:
        """The answer stored under ``key``, or ``None`` when there is none (or it was damaged)."""
        with self._lock:
            if key in self._memory:
                return self._memory[key]
        if self.folder is None:
            return None
        data = read_checked(self._path(key), _FORMAT)
        if data is None:
            return None
        try:
            value = parse_json(data, name=f"{key}.json")
        except ValueError:  # cannot happen after the keyed digest matched; a rebuild is the safe answer
            return None
        with self._lock:
            self._memory[key] = value
        return value

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON-serialisable) under ``key``."""
        with self._lock:
            self._memory[key] = value
        if self.folder is not None:
            path = self._path(key)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_checked(path, json.dumps(value, sort_keys=True).encode("utf-8", "surrogatepass"), _FORMAT)

    def fetch(self, key: str, compute: Callable[[], Any]) -> tuple[Any, bool]:
        """``(answer, cached)``: the stored answer, else ``compute()``'s, stored. A key already being
        computed by another thread is waited for rather than computed again."""
        with self._lock:
            gate = self._in_flight.setdefault(key, threading.Lock())
        with gate:
            try:
                value = self.get(key)
                if value is not None:
                    return value, True
                value = compute()
                self.put(key, value)
                return value, False
            finally:
                with self._lock:
                    self._in_flight.pop(key, None)
