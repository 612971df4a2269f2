"""The per-folder cache key made by many threads at once: one key, nothing set aside."""
from __future__ import annotations

import threading
import time

from mechanism.core import cachefile


def _race(folder, n_threads=8):
    start = threading.Barrier(n_threads)
    keys, errors = [], []

    def make():
        start.wait()
        try:
            keys.append(cachefile.cache_key(folder))
        except OSError as exc:  # the race lost: the key another thread had just made was moved aside
            errors.append(exc)

    threads = [threading.Thread(target=make) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return keys, errors


def test_threads_making_one_folders_key_at_once_share_it(tmp_path, monkeypatch):
    read_key = cachefile._read_key

    def slow_read(path):  # a slow disk: the window between reading the key and acting on it widens
        found = read_key(path)
        time.sleep(0.002)
        return found

    monkeypatch.setattr(cachefile, "_read_key", slow_read)
    for round_ in range(40):
        folder = tmp_path / f"f{round_}"
        keys, errors = _race(folder)
        assert not errors, errors[0]
        assert len(set(keys)) == 1 and len(keys) == 8
        assert sorted(p.name for p in folder.iterdir()) == [cachefile.KEY_FILE]  # nothing set aside
