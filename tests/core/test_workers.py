"""The package's worker-process plumbing: frames survive a pipe whole, a cut frame reads as
the end, settings are whole numbers with a one-line error otherwise."""
from __future__ import annotations

import io

import pytest

from mechanism.core.errors import MechanismError
from mechanism.core.workers import read_frame, usable_cores, workers_setting, write_frame


def test_frames_round_trip_and_a_cut_frame_is_the_end():
    stream = io.BytesIO()
    for data in (b"", b"x", bytes(range(256)) * 1000):
        write_frame(stream, data)
    stream.seek(0)
    assert [read_frame(stream) for _ in range(3)] == [b"", b"x", bytes(range(256)) * 1000]
    assert read_frame(stream) is None
    cut = io.BytesIO()
    write_frame(cut, b"abcdef")
    assert read_frame(io.BytesIO(cut.getvalue()[:-2])) is None  # a worker that died mid-answer
    assert read_frame(io.BytesIO(cut.getvalue()[:3])) is None


def test_workers_setting(monkeypatch):
    monkeypatch.delenv("MECHANISM_TEST_WORKERS", raising=False)
    assert workers_setting("MECHANISM_TEST_WORKERS") is None
    monkeypatch.setenv("MECHANISM_TEST_WORKERS", " 3 ")
    assert workers_setting("MECHANISM_TEST_WORKERS") == 3
    monkeypatch.setenv("MECHANISM_TEST_WORKERS", "two")
    with pytest.raises(MechanismError, match="MECHANISM_TEST_WORKERS must be a whole number, got 'two'"):
        workers_setting("MECHANISM_TEST_WORKERS")
    assert usable_cores() >= 1
