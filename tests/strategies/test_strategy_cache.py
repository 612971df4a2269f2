"""Caches of the strategy space: per-trajectory segmentations and fitted clusterings.

A warm fit gives exactly the cold (and the uncached) result without recomputing what the
cache holds; corrupt entries are detected and rebuilt; a changed input or parameter misses.
"""
from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from mechanism.analysis._strategies import fitcache
from mechanism.analysis.strategy_space import StrategySpace
from mechanism.core.cachefile import KEY_FILE, read_checked, sidecar, write_checked
from mechanism.datasets.simulation import simulate

# the module itself: the package attribute `mechanism.analysis.segmentation` is the function of that name
seg = importlib.import_module("mechanism.analysis.segmentation")

FAST = "hashing-64"


@pytest.fixture(scope="module")
def runs():
    return simulate(n_questions=20, n_samples=6, random_state=3, progress=False).runs


@pytest.fixture(scope="module")
def uncached(runs):
    return StrategySpace(embedder=FAST, progress=False).fit(runs)


def _same(a: StrategySpace, b: StrategySpace) -> None:
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.train_features_, b.train_features_)
    np.testing.assert_array_equal(a.train_labels_, b.train_labels_)
    np.testing.assert_array_equal(a.train_counts_, b.train_counts_)
    assert a.train_renderings_ == b.train_renderings_ and a.train_moves_ == b.train_moves_
    assert a.threshold_ == b.threshold_ and a.n_strategies_ == b.n_strategies_
    assert a.describe().equals(b.describe())


def _forbid_recompute(monkeypatch) -> None:
    def boom(*args, **kwargs):
        raise AssertionError("recomputed although cached")

    monkeypatch.setattr(seg, "_segment_one", boom)
    monkeypatch.setattr(fitcache, "fit_clusters", boom)


def test_warm_fit_equals_cold_and_uncached_and_recomputes_nothing(tmp_path, runs, uncached, monkeypatch):
    cold = StrategySpace(embedder=FAST, cache_dir=tmp_path, progress=False).fit(runs)
    _same(cold, uncached)
    _forbid_recompute(monkeypatch)
    warm = StrategySpace(embedder=FAST, cache_dir=tmp_path, progress=False).fit(runs)
    _same(warm, uncached)
    np.testing.assert_array_equal(warm.transform(runs), uncached.labels_)


@pytest.mark.parametrize("method", ["kmeans", "hdbscan"])
def test_warm_fit_equals_cold_for_other_methods(tmp_path, runs, method, monkeypatch):
    plain = StrategySpace(embedder=FAST, method=method, progress=False).fit(runs)
    StrategySpace(embedder=FAST, method=method, cache_dir=tmp_path, progress=False).fit(runs)
    _forbid_recompute(monkeypatch)
    warm = StrategySpace(embedder=FAST, method=method, cache_dir=tmp_path, progress=False).fit(runs)
    _same(warm, plain)
    if method == "kmeans":
        assert warm.silhouette_ == plain.silhouette_


@pytest.mark.slow  # UMAP's first use in a process compiles numba kernels (~8 s)
def test_warm_fit_equals_cold_with_umap_clustering(tmp_path, runs, monkeypatch):
    kw = {"embedder": FAST, "cluster_on": "umap", "n_components": 2, "max_umap_points": 300, "progress": False}
    plain = StrategySpace(**kw).fit(runs)
    StrategySpace(cache_dir=tmp_path, **kw).fit(runs)
    _forbid_recompute(monkeypatch)
    warm = StrategySpace(cache_dir=tmp_path, **kw).fit(runs)
    _same(warm, plain)
    np.testing.assert_array_equal(warm.train_space_, plain.train_space_)


def test_corrupt_segment_shard_is_rebuilt(tmp_path, runs, uncached):
    StrategySpace(embedder=FAST, cache_dir=tmp_path, progress=False).fit(runs)
    shards = list((tmp_path / "segments").rglob("*.parquet"))
    assert len(shards) == 1
    data = bytearray(shards[0].read_bytes())
    data[len(data) // 2] ^= 0xFF  # a flipped byte: the digest no longer matches
    shards[0].write_bytes(bytes(data))
    cache = seg.SegmentCache(tmp_path / "segments")
    assert cache.load(seg.row_keys(runs)).height == 0 and cache.rebuilt == [shards[0].stem]
    assert not shards[0].exists() and not sidecar(shards[0]).exists()
    again = StrategySpace(embedder=FAST, cache_dir=tmp_path, progress=False).fit(runs)
    _same(again, uncached)
    keys = seg.row_keys(runs)
    assert seg.SegmentCache(tmp_path / "segments").load(keys).height == keys.n_unique()


def test_truncated_segment_shard_and_missing_sidecar(tmp_path, runs):
    first = seg.render(runs, cache_dir=tmp_path)
    shard = next(tmp_path.rglob("*.parquet"))
    shard.write_bytes(shard.read_bytes()[:100])  # a torn write
    assert seg.render(runs, cache_dir=tmp_path).equals(first)
    for side in tmp_path.rglob("*.parquet.json"):  # payloads whose commit never landed
        side.unlink()
    assert seg.SegmentCache(tmp_path).load(seg.row_keys(runs)).height == 0
    assert seg.render(runs, cache_dir=tmp_path).equals(first)


def test_corrupt_fit_entry_is_rebuilt(tmp_path, runs, uncached):
    StrategySpace(embedder=FAST, cache_dir=tmp_path, progress=False).fit(runs)
    (entry,) = [p for p in (tmp_path / "fits").iterdir()
                if not p.name.endswith(".json.json") and p.name != KEY_FILE]
    entry.write_text(entry.read_text().replace('"labels": [', '"labels": [9, '))  # digest mismatch
    sp = StrategySpace(embedder=FAST, cache_dir=tmp_path, progress=False).fit(runs)
    _same(sp, uncached)
    # A well-formed entry (valid digest) that does not fit the rows is caught as well.
    record = json.loads(read_checked(entry))
    record["labels"] = record["labels"][:-1]
    write_checked(entry, json.dumps(record).encode(), {"format": 1})
    sp = StrategySpace(embedder=FAST, cache_dir=tmp_path, progress=False).fit(runs)
    assert sp.fit_cache_rebuilt_
    _same(sp, uncached)
    assert json.loads(read_checked(entry))["labels"] == uncached.train_labels_.tolist()


def test_changed_row_misses_only_itself(tmp_path, runs, monkeypatch):
    seg.render(runs, cache_dir=tmp_path)
    changed = runs.with_columns(pl.when(pl.int_range(pl.len()) == 0).then(pl.lit("Somewhere else"))
                                .otherwise(pl.col("answer")).alias("answer"))
    calls = []
    original = seg._segment_one
    monkeypatch.setattr(seg, "_segment_one", lambda *a, **k: calls.append(a[1]) or original(*a, **k))
    out = seg.render(changed, cache_dir=tmp_path)
    assert calls == ["Somewhere else"]
    monkeypatch.undo()
    assert out.equals(seg.render(changed))


def test_row_keys_content_only():
    from mechanism.core.schema import from_records, make_step

    base = {"question_id": "q", "sample_id": 0, "question": "Who?", "gold": ["x"], "correct": False,
            "n_rounds": 1, "steps": [make_step(tool="search", query="who", observation="X")]}
    table = from_records([{**base, "arm": "a", "answer": None}, {**base, "arm": "b", "answer": None},
                          {**base, "arm": "a", "sample_id": 1, "answer": ""},
                          {**base, "arm": "a", "sample_id": 2, "answer": None, "gold": ["y"]}])
    keys = seg.row_keys(table).to_list()
    assert keys[0] == keys[1] == keys[3]  # arm, ids and gold do not enter the segmentation
    assert keys[0] != keys[2]  # null answer and empty answer segment differently


def test_changed_params_or_embedder_miss_the_fit_cache(tmp_path, runs):
    StrategySpace(embedder=FAST, cache_dir=tmp_path, progress=False).fit(runs)
    StrategySpace(embedder=FAST, resolution=0.5, cache_dir=tmp_path, progress=False).fit(runs)
    StrategySpace(embedder="hashing-32", cache_dir=tmp_path, progress=False).fit(runs)
    entries = [p for p in (tmp_path / "fits").iterdir()
                if not p.name.endswith(".json.json") and p.name != KEY_FILE]
    assert len(entries) == 3
    fine = StrategySpace(embedder=FAST, resolution=0.5, cache_dir=tmp_path, progress=False).fit(runs)
    plain = StrategySpace(embedder=FAST, resolution=0.5, progress=False).fit(runs)
    _same(fine, plain)


def test_dedup_segmentation_equals_row_by_row(runs):
    """Segmenting each distinct row once and gathering equals segmenting every row."""
    doubled = pl.concat([runs, runs.with_columns(pl.col("arm") + "_copy")])
    moves, traj = seg.segment_all(doubled)
    expected_moves, renderings = [], []
    for question, answer, steps in zip(doubled["question"].to_list(), doubled["answer"].to_list(),
                                       doubled["steps"].to_list()):
        m, final, _, rendering = seg._segment_one(question, answer, steps)
        expected_moves += [x.move for x in [*m, final]]
        renderings.append(rendering)
    assert moves["move"].to_list() == expected_moves
    assert traj["rendering"].to_list() == renderings
    assert traj.equals(seg.render(doubled))


_STUB = """
import hashlib
import numpy as np

class Stub:
    model_id = "stub-16"

    def embed(self, texts):
        return np.stack([np.random.default_rng(int(hashlib.blake2b(t.encode(), digest_size=8).hexdigest(), 16))
                         .normal(size=16) for t in texts]).astype(np.float32)
"""


def test_fitting_from_cache_imports_no_heavy_library(tmp_path, runs):
    """A warm fit in a fresh process imports neither torch, scikit-learn nor matplotlib."""
    runs.write_parquet(tmp_path / "runs.parquet")
    (tmp_path / "stub_embedder.py").write_text(_STUB)
    code = ("import sys, polars as pl\nfrom stub_embedder import Stub\n"
            "from mechanism.analysis.strategy_space import StrategySpace\n"
            "r = pl.read_parquet('runs.parquet')\n"
            "s = StrategySpace(embedder=Stub(), cache_dir='cache', progress=False).fit(r)\n"
            "print(s.n_strategies_, "
            "sorted(m for m in ('torch', 'sklearn', 'scipy', 'matplotlib') if m in sys.modules))")
    repo = str(Path(__file__).resolve().parents[2])  # this tree's mechanism, not an installed one
    env = {**__import__("os").environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), repo])}
    cold = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=tmp_path,
                          env=env).stdout.split()
    warm = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=tmp_path,
                          env=env).stdout.split()
    assert "'sklearn'" in " ".join(cold)  # the cold fit clusters
    # StrategySpace is a scikit-learn estimator (BaseEstimator), so scikit-learn itself is
    # imported; the warm fit loads neither the model (torch) nor plotting
    assert warm[0] == cold[0] and "'torch'" not in " ".join(warm) and "'matplotlib'" not in " ".join(warm)


def test_package_keeps_functions_named_like_modules():
    code = ("import mechanism.analysis.segmentation, mechanism.analysis.boundaries, mechanism.datasets.simulation, "
            "mechanism.analysis.compare, "
            "mechanism.analysis.information, sys; import mechanism as mx; "
            "assert all(callable(getattr(mx, n)) for n in "
            "('segment', 'boundary', 'simulate', 'reweighting', 'integration', 'render', 'StrategySpace')); "
            "mx.plots.strategy_map")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_cached_fits_are_keyed_on_the_clustering_code(monkeypatch, tmp_path):
    """A cached fit holds stability and descriptions, so editing any module of
    mechanism.analysis._strategies (not only strategy_space.py) must miss the cache."""
    import shutil
    from pathlib import Path

    copy = tmp_path / "pkg"
    shutil.copytree(Path(fitcache.__file__).parents[1], copy / "mechanism",
                    ignore=shutil.ignore_patterns("__pycache__"))
    folder = copy / "mechanism" / "_strategies"
    before = fitcache.source_id(folder)
    assert before == fitcache.source_id()  # the copy is this code
    stability = folder / "stability.py"
    stability.write_text(stability.read_text() + "\n# edited\n")
    fitcache.source_id.cache_clear()
    edited = fitcache.source_id(folder)
    assert edited != before
    estimator = copy / "mechanism" / "strategy_space.py"
    estimator.write_text(estimator.read_text() + "\n# edited\n")
    fitcache.source_id.cache_clear()
    assert fitcache.source_id(folder) not in (before, edited)
