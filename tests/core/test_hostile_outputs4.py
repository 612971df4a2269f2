"""Hostile input, round four, writing side: a cache heals itself (a planted folder,
a link, a crafted entry with a recomputed plain checksum are moved aside and rebuilt, with one
warning, and the result is unchanged), and the output swap has no empty moment: a kill at every
step of it leaves the old output or the new one."""
from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import warnings

import numpy as np
import pytest

from mechanism._cli._common import _sweep_stale, atomic_output, is_complete
from mechanism.core import cachefile
from mechanism.core.cachefile import KEY_FILE, read_checked, sidecar, write_checked
from mechanism.core.errors import CacheWarning

# ---------------------------------------------------------------- the cache

def _plain_digest(record: dict, data: bytes) -> str:
    """The digest an attacker without the folder's secret can compute (unkeyed BLAKE2b)."""
    fields = {k: v for k, v in record.items() if k != "digest"}
    return hashlib.blake2b(json.dumps(fields, sort_keys=True).encode() + b"\0" + data, digest_size=32).hexdigest()


def test_the_secret_is_made_once_private_and_keys_the_digest(tmp_path):
    path = tmp_path / "c" / "e.bin"
    write_checked(path, b"payload", {"format": 1})
    key = tmp_path / "c" / KEY_FILE
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_bytes()) == 32
    assert read_checked(path, {"format": 1}) == b"payload"
    record = json.loads(sidecar(path).read_text())
    assert record["digest"] != _plain_digest(record, b"payload")


def test_a_crafted_entry_with_a_recomputed_plain_checksum_is_rebuilt(tmp_path):
    path = tmp_path / "e.bin"
    write_checked(path, b"payload", {"format": 1})
    record = json.loads(sidecar(path).read_text())
    record["size"] = len(b"crafted")
    record["digest"] = _plain_digest(record, b"crafted")
    path.write_bytes(b"crafted")
    sidecar(path).write_text(json.dumps(record))
    with pytest.warns(CacheWarning, match="moved aside"):
        assert read_checked(path, {"format": 1}) is None
    assert not path.exists() and (tmp_path / ".e.bin.bad").read_bytes() == b"crafted"


def test_a_key_file_that_is_not_ours_is_replaced(tmp_path):
    write_checked(tmp_path / "e.bin", b"x", {"format": 1})
    key = tmp_path / KEY_FILE
    old = key.read_bytes()
    cachefile._KEYS.clear()
    os.chmod(key, 0o644)  # readable by others: not a secret any more
    with pytest.warns(CacheWarning):
        new = cachefile.cache_key(tmp_path)
    assert new != old and stat.S_IMODE(key.stat().st_mode) == 0o600
    with pytest.warns(CacheWarning):  # entries keyed with the old secret are rebuilt
        assert read_checked(tmp_path / "e.bin", {"format": 1}) is None


@pytest.mark.parametrize("plant", ["folder", "link", "link-sidecar"])
def test_a_planted_folder_or_link_where_an_entry_goes_is_set_aside_on_write_and_read(tmp_path, plant):
    path = tmp_path / "e.parquet"
    target = sidecar(path) if plant == "link-sidecar" else path
    if plant == "folder":
        target.mkdir()
        (target / "inside").write_text("x")
    else:
        (tmp_path / "real").write_bytes(b"x")
        os.symlink(tmp_path / "real", target)
    with pytest.warns(CacheWarning):
        assert read_checked(path, {"format": 1}) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the way is clear now: writing warns no more
        write_checked(path, b"payload", {"format": 1})
        assert read_checked(path, {"format": 1}) == b"payload"
    assert path.is_file() and not path.is_symlink()


@pytest.fixture(scope="module")
def fit_runs():
    from mechanism.datasets.simulation import simulate

    return simulate(n_questions=10, n_samples=3, random_state=3, progress=False).runs


@pytest.fixture(scope="module")
def reference(fit_runs):
    from mechanism.analysis.strategy_space import StrategySpace

    return StrategySpace(embedder="hashing-64", progress=False).fit(fit_runs)


@pytest.mark.parametrize("plant", ["segments-folder", "fits-link", "fits-crafted"])
def test_a_planted_cache_leads_to_a_rebuilt_cache_and_the_same_result(tmp_path, fit_runs, reference, plant):
    """The issue's case: a folder where a --cache-dir entry goes made every later run fail."""
    from mechanism.analysis.strategy_space import StrategySpace

    cache = tmp_path / "cache"
    StrategySpace(embedder="hashing-64", cache_dir=cache, progress=False).fit(fit_runs)
    if plant == "segments-folder":
        entry = next((cache / "segments").rglob("*.parquet"))
        entry.unlink()
        entry.mkdir()
    else:
        (entry,) = [p for p in (cache / "fits").iterdir() if p.suffix == ".json" and sidecar(p).exists()]
        if plant == "fits-link":
            os.replace(entry, tmp_path / "moved.json")
            os.symlink(tmp_path / "moved.json", entry)
        else:  # other labels, under a plain checksum recomputed as an attacker would
            record = json.loads(entry.read_text())
            record["labels"] = [0] * len(record["labels"])
            data = json.dumps(record).encode()
            meta = json.loads(sidecar(entry).read_text())
            meta["size"] = len(data)
            meta["digest"] = _plain_digest(meta, data)
            entry.write_bytes(data)
            sidecar(entry).write_text(json.dumps(meta))
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        space = StrategySpace(embedder="hashing-64", cache_dir=cache, progress=False).fit(fit_runs)
    np.testing.assert_array_equal(space.labels_, reference.labels_)
    healed = [w for w in said if issubclass(w.category, CacheWarning)]
    assert len(healed) == 1 and str(entry) in str(healed[0].message), [str(w.message) for w in said]
    assert entry.is_file() and not entry.is_symlink()  # rebuilt in place
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)  # and trusted from now on
        StrategySpace(embedder="hashing-64", cache_dir=cache, progress=False).fit(fit_runs)


# ---------------------------------------------------------------- the output swap

_KILLED_AT = """
import os, sys
from pathlib import Path
from mechanism._cli import _common
out, step, exchange = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
if not exchange:
    _common._exchange = lambda a, b: False  # a system that cannot exchange two folders
def hook(name):
    if name == step:
        os._exit(137)  # as a SIGKILL: no cleanup, no finally
_common._swap_step = hook
with _common.atomic_output(out) as tmp:
    (tmp / "a.csv").write_text("new")
"""
STEPS = {True: ["marker", "exchange", "set aside", "carry mine.txt", "remove old"],
         False: ["marker", "exchange", "set aside", "move in", "carry mine.txt", "remove old"]}


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two-renames"])
def test_a_kill_at_every_step_of_the_swap_leaves_the_old_output_or_the_new(tmp_path, exchange):
    from mechanism._cli._common import _exchange

    if exchange:
        probe = tmp_path / "probe"
        (probe / "a").mkdir(parents=True)
        (probe / "b").mkdir()
        if not _exchange(probe / "a", probe / "b"):
            pytest.skip("this system or file system cannot exchange two folders")
    for step in STEPS[exchange]:
        out = tmp_path / step.replace(" ", "-") / "out"
        with atomic_output(out) as tmp:
            (tmp / "a.csv").write_text("old")
        (out / "mine.txt").write_text("mine")
        proc = subprocess.run([sys.executable, "-c", _KILLED_AT, str(out), step, "1" if exchange else "0"],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 137, (step, proc.stderr[-2000:])
        if exchange:
            assert is_complete(out), step  # never a moment without an output
        _sweep_stale(out)  # what the next run does first
        assert is_complete(out), step
        assert (out / "a.csv").read_text() in ("old", "new") and (out / "mine.txt").read_text() == "mine", step
        assert [p.name for p in out.parent.iterdir()] == ["out"], step  # nothing hidden is left
        with atomic_output(out) as tmp:  # and the next run works as ever
            (tmp / "a.csv").write_text("next")
        assert (out / "a.csv").read_text() == "next" and (out / "mine.txt").read_text() == "mine"


def test_the_swap_falls_back_cleanly_where_exchange_is_refused(tmp_path, monkeypatch):
    import ctypes
    import errno

    from mechanism._cli import _common

    class NoExchange:
        def __init__(self, *args, **kwargs):
            pass

        @property
        def renameat2(self):
            def call(*args):
                ctypes.set_errno(errno.EINVAL)
                return -1
            return call

    monkeypatch.setattr(ctypes, "CDLL", NoExchange)
    assert _common._exchange(tmp_path / "a", tmp_path / "b") is False
    out = tmp_path / "out"
    for text in ("old", "new"):
        with atomic_output(out) as tmp:
            (tmp / "a.csv").write_text(text)
    assert (out / "a.csv").read_text() == "new" and is_complete(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
