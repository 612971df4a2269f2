"""The fast paths change no output: a report on the default world whose figures were saved by
worker processes holds the same files, byte for byte, as one saved in the caller; UMAP's code
compiled once and loaded from numba's cache gives the same coordinates as code compiled afresh.
(``benchmarks/bench_small.py`` compares every output with the previous commit's, in one run.)"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import mechanism as mx
from mechanism.plots.background import saving_in_background
from mechanism.report import write_report
from mechanism.report.digests import output_digests


@pytest.mark.slow
def test_figures_saved_by_workers_are_the_files_saved_here(tmp_path):
    runs = mx.simulate(n_questions=30, n_samples=2, random_state=0, progress=False).runs
    options = {"base": "base", "embedder": "hashing-128", "n_boot": 50, "n_permutations": 20, "progress": False}
    with saving_in_background(0):
        write_report(runs, tmp_path / "here", **options)
    with saving_in_background(2):
        write_report(runs, tmp_path / "workers", **options)
    here, workers = output_digests(tmp_path / "here"), output_digests(tmp_path / "workers")
    assert sum(name.endswith(".png") for name in here) >= 10
    assert here == workers


_UMAP = """
import sys
import numpy as np
from mechanism.analysis._strategies.reduce import umap_coordinates
x = np.random.default_rng(0).normal(size=(120, 8))
out = umap_coordinates(x, np.ones(120, dtype=np.int64), 2, weighted=False, n_neighbors=10, min_dist=0.1,
                       resolution=1.5, max_points=1000, seed=0)
sys.stdout.write(out.tobytes().hex())
"""


@pytest.mark.slow
def test_umap_loaded_from_numbas_cache_gives_the_same_map(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    # the first process compiles (its cache is empty), the second loads what the first kept
    first = subprocess.run([sys.executable, "-c", _UMAP], env=env, capture_output=True, text=True, check=True,
                           timeout=600).stdout
    kept = {p.name for p in (tmp_path / "numba").rglob("*") if p.suffix in (".nbi", ".nbc") and "umap_" in p.name}
    assert any(name.startswith("umap_.") for name in kept)  # umap-learn's own module, declared without cache=True
    again = subprocess.run([sys.executable, "-c", _UMAP], env=env, capture_output=True, text=True, check=True,
                           timeout=600).stdout
    assert first == again and len(first) == 120 * 2 * 8 * 2
