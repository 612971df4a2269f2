"""Saved strategy spaces are untrusted input: every tampered file is one
:class:`InputError` naming the file (and the field, where one is to blame), never a traceback,
a hang, or a silently accepted space.

``CORPUS`` is the committed corpus: each case is a function that damages a copy of a good
saved space, written by the test into a temporary folder. Checksums are recomputed where the
attack would recompute them, so the value checks are what stops it. A hypothesis suite then
writes random values into the arrays and fields, checksums recomputed.
"""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mechanism.core.cachefile import digest
from mechanism.core.errors import InputError, MechanismError

N = int(os.environ.get("MECHANISM_HYPOTHESIS_EXAMPLES", "40"))


@pytest.fixture(scope="module")
def saved(saved_small_space):
    return saved_small_space  # shared with tests/core/test_fuzz_cache.py (tests/conftest.py)


def _copy(saved: Path, tmp: Path) -> Path:
    out = Path(tempfile.mkdtemp(dir=tmp)) / "space"
    shutil.copytree(saved, out, symlinks=True)
    return out


def _config(folder: Path) -> dict:
    return json.loads((folder / "space.json").read_text())


def _write_config(folder: Path, cfg: dict) -> None:
    (folder / "space.json").write_text(json.dumps(cfg))


def _put_array(folder: Path, name: str, arr: np.ndarray) -> None:
    """Replace an array and recompute its checksum in space.json, as a tamperer would."""
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    (folder / f"{name}.npy").write_bytes(buf.getvalue())
    cfg = _config(folder)
    cfg["arrays"][name] = digest(np.ascontiguousarray(arr).tobytes())
    _write_config(folder, cfg)


def _array(folder: Path, name: str) -> np.ndarray:
    return np.load(folder / f"{name}.npy", allow_pickle=False)


def _edit(**fields):
    def edit(folder: Path) -> None:
        _write_config(folder, {**_config(folder), **fields})
    return edit


def _values(name: str, fn):
    def edit(folder: Path) -> None:
        _put_array(folder, name, fn(_array(folder, name)))
    return edit


def _nested_table(folder: Path) -> None:
    """train_rows.parquet replaced by lists nested 200 deep, its checksum recomputed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    value, kind = 1, pa.int64()
    for _ in range(200):
        value, kind = [value], pa.list_(kind)
    buf = io.BytesIO()
    pq.write_table(pa.table({"rendering": pa.array([value], type=kind)}), buf)
    (folder / "train_rows.parquet").write_bytes(buf.getvalue())
    cfg = _config(folder)
    cfg["tables"]["train_rows"] = digest(buf.getvalue())
    _write_config(folder, cfg)


def _symlink(name: str, target: str):
    def edit(folder: Path) -> None:
        (folder / name).unlink()
        os.symlink(target, folder / name)
    return edit


def _symlink_out(folder: Path) -> None:
    """A symlink to a good copy of the file, outside the folder: still refused."""
    outside = folder.parent / "elsewhere.npy"
    shutil.copy(folder / "train_features.npy", outside)
    _symlink("train_features.npy", str(outside))(folder)


def _fifo(folder: Path) -> None:
    (folder / "train_labels.npy").unlink()
    os.mkfifo(folder / "train_labels.npy")


def _sparse_config(folder: Path) -> None:
    with open(folder / "space.json", "r+b") as fh:  # 65 MB of zeros, made without writing them
        fh.truncate(65 * 2**20)


def _duplicate_key(folder: Path) -> None:
    text = (folder / "space.json").read_text()
    (folder / "space.json").write_text(text.replace('"threshold":', '"threshold": 0.0, "threshold":', 1))


# (name, damage, file named in the error, field named or None, words of the reason)
CORPUS = [
    ("nested-json", lambda f: (f / "space.json").write_text("[" * 100_000 + "]" * 100_000), "space.json", None,
     "nested too deeply"),
    ("dev-zero-config", _symlink("space.json", "/dev/zero"), "space.json", None, "space.json"),
    ("fifo-array", _fifo, "train_labels.npy", None, "not a regular file"),
    ("dev-zero-array", _symlink("train_counts.npy", "/dev/zero"), "train_counts.npy", None, "symlink"),
    ("symlink-out", _symlink_out, "train_features.npy", None, "symlink pointing outside"),
    ("huge-config", _sparse_config, "space.json", None, "more than"),
    ("duplicate-key", _duplicate_key, "space.json", None, "duplicate key `threshold`"),
    ("model-superscript", _edit(embedding_model="hashing-\u00b2"), "space.json", "embedding_model", "embedding model"),
    ("model-composed-3000", _edit(embedding_model="composed:" * 3000), "space.json", "embedding_model",
     "embedding model"),
    ("nan-features", _values("train_features", lambda a: np.where(a > 0, np.nan, a).astype(a.dtype)),
     "train_features.npy", "train_features", "NaN or infinite"),
    ("inf-features", _values("train_features", lambda a: a * np.float32(np.inf)), "train_features.npy",
     "train_features", "NaN or infinite"),
    ("complex-features", _values("train_features", lambda a: a.astype(np.complex64)), "train_features.npy",
     "train_features", "complex"),
    ("string-features", _values("train_features", lambda a: a.astype("U3")), "train_features.npy",
     "train_features", "expected floating-point"),
    ("datetime-features", _values("train_features", lambda a: a.astype(np.int64).astype("datetime64[s]")),
     "train_features.npy", "train_features", "datetime64"),
    ("labels-1e9", _values("train_labels", lambda a: np.full_like(a, 10**9)), "train_labels.npy", "train_labels",
     "outside"),
    ("labels-minus-7", _values("labels", lambda a: np.full_like(a, -7)), "labels.npy", "labels", "outside"),
    ("n-strategies-minus-1", _edit(n_strategies=-1), "space.json", "n_strategies", "must lie in"),
    ("n-strategies-1e18", _edit(n_strategies=10**18), "space.json", "n_strategies", "must lie in"),
    ("n-strategies-inconsistent", _edit(n_strategies=3), "space.json", "n_strategies", "describes strategies"),
    ("negative-counts", _values("train_counts", lambda a: -a), "train_counts.npy", "train_counts",
     "counts are positive"),
    ("counts-not-summing", _values("train_counts", lambda a: a * 2), "train_counts.npy", "train_counts", "sums to"),
    ("map-coords-wrong-shape", _values("map_coords", lambda a: a[:, :1].copy()), "map_coords.npy", "map_coords",
     "shape"),
    ("nested-table", _nested_table, "train_rows.parquet", None, "levels"),
    ("known-rows-outside", _values("known_rows", lambda a: np.full_like(a, 10**6)), "known_rows.npy", "known_rows",
     "outside"),
    ("known-pairs-unsorted", _values("known_pairs", lambda a: a[::-1].copy()), "known_pairs.npy", "known_pairs",
     "not sorted"),
    ("known-pairs-one-column", _values("known_pairs", lambda a: a[:, :1].copy()), "known_pairs.npy", "known_pairs",
     "shape"),
    ("known-pairs-alone", lambda f: _edit(arrays={k: v for k, v in _config(f)["arrays"].items()
                                                  if k != "known_rows"})(f), "space.json", "arrays", "beside"),
    ("token-axes-alone", lambda f: _edit(arrays={k: v for k, v in _config(f)["arrays"].items()
                                                if k != "token_mean"})(f), "space.json", "arrays", "goes with"),
    ("token-axes-one-too-few", _values("token_axes", lambda a: a[:-1].copy()), "token_axes.npy", "token_axes",
     "shape"),
    ("token-axes-not-unit", _values("token_axes", lambda a: a * 2), "token_axes.npy", "token_axes", "unit length"),
    ("token-rank-not-the-axes", lambda f: _edit(params={**_config(f)["params"], "token_rank": 3})(f),
     "token_axes.npy", "token_axes", "from the vocabulary and `token_rank`"),
    ("threshold-nan", lambda f: (f / "space.json").write_text(re.sub(r'"threshold": [0-9.e+-]+', '"threshold": NaN',
                                                                      (f / "space.json").read_text(), count=1)),
     "space.json", "threshold", "must lie in"),
    ("name-key-not-an-id", _edit(names={"x": "evil"}), "space.json", "names", "not a strategy id"),
    ("params-huge-int", lambda f: _edit(params={**_config(f)["params"], "n_components": 10**400})(f),
     "space.json", "params.n_components", "must lie in"),
]


@pytest.mark.parametrize("name, damage, file, field, words", CORPUS, ids=[c[0] for c in CORPUS])
def test_tampered_saved_space_is_one_line_naming_the_file(saved, tmp_path, name, damage, file, field, words):
    from mechanism.analysis.strategy_space import StrategySpace

    folder = _copy(saved, tmp_path)
    damage(folder)
    with pytest.raises(InputError) as info:
        StrategySpace.load(folder)
    err = info.value
    text = str(err)
    assert "\n" not in text and len(text) < 2500, text
    assert err.source is not None and Path(err.source).name == file, text
    if field is not None:
        assert err.field == field, text
    assert words in text, text


def test_the_untouched_copy_loads(saved, tmp_path):
    from mechanism.analysis.strategy_space import StrategySpace

    space = StrategySpace.load(_copy(saved, tmp_path))
    assert space.n_strategies_ > 1 and space.train_counts_.min() >= 1


def test_a_symlink_inside_the_folder_is_followed(saved, tmp_path):
    from mechanism.analysis.strategy_space import StrategySpace

    folder = _copy(saved, tmp_path)
    (folder / "train_labels.npy").rename(folder / "kept.npy")
    os.symlink("kept.npy", folder / "train_labels.npy")
    assert StrategySpace.load(folder).n_strategies_ > 1


_LAUNCHER = ("import os, subprocess, sys\n"
             "child = subprocess.Popen(sys.argv[1:])\n"
             "_, status, usage = os.wait4(child.pid, 0)\n"
             "print(f'peak_kb={usage.ru_maxrss}', file=sys.stderr)\n"
             "sys.exit(os.waitstatus_to_exitcode(status))")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["nested-json", "dev-zero-config", "fifo-array"])
def test_strategies_apply_refuses_a_tampered_space_in_one_line(saved, tmp_path, name):
    """The issue's three cases through the command: exit 2 with one line, under 1.5 GB (the
    command's own peak, measured by a small launcher) and within 60 s (a hang is killed)."""
    damage = {c[0]: c[1] for c in CORPUS}[name]
    folder = _copy(saved, tmp_path)
    damage(folder)
    proc = subprocess.run([sys.executable, "-c", _LAUNCHER, sys.executable, "-m", "mechanism", "strategies",
                           "apply", str(folder), str(saved.parent / "runs.parquet"), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "MPLBACKEND": "Agg"})
    errors, _, peak = proc.stderr.rpartition("peak_kb=")
    assert proc.returncode == 2, errors[-2000:]
    lines = errors.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in errors and "space" in lines[0], errors[-2000:]
    assert int(peak) < 1.5 * 2**20, peak  # kilobytes
    assert not (tmp_path / "o").exists()


FUZZ = settings(max_examples=N, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                      HealthCheck.function_scoped_fixture])
numbers = (st.integers(-2**63, 2**63 - 1) | st.floats(allow_nan=True, allow_infinity=True)
           | st.sampled_from([0, -1, 1, 10**9]))


@FUZZ
@given(st.sampled_from(["train_features", "train_labels", "train_counts", "labels", "map_coords", "known_pairs",
                        "known_rows", "token_mean", "token_axes"]),
       st.lists(st.tuples(st.integers(0, 10**6), numbers), min_size=1, max_size=4),
       st.sampled_from(["same", "float64", "int64", "float32"]))
def test_random_array_values_are_loaded_only_when_valid(saved, name, edits, dtype):
    """Random values written into an array, checksum recomputed: the space loads only when
    every invariant holds; otherwise one line naming the array's file."""
    from mechanism.analysis.strategy_space import StrategySpace

    with tempfile.TemporaryDirectory() as tmp:
        folder = _copy(saved, Path(tmp))
        arr = _array(folder, name)
        flat = arr.astype(np.float64 if dtype in ("float64", "float32") or arr.dtype.kind == "f" else object).ravel()
        for where, value in edits:
            flat[where % flat.size] = value
        try:
            target = arr.dtype if dtype == "same" else np.dtype(dtype)
            with np.errstate(all="ignore"):
                new = np.array([float(v) if target.kind == "f" else v for v in flat]).astype(target)
        except (OverflowError, ValueError, TypeError):
            return  # not representable in that dtype: nothing to write
        _put_array(folder, name, new.reshape(arr.shape))
        try:
            space = StrategySpace.load(folder)
        except InputError as exc:
            assert "\n" not in str(exc) and Path(exc.source).name in (f"{name}.npy", "space.json"), str(exc)
            return
        assert np.isfinite(space.train_features_).all() and space.train_counts_.min() >= 1
        assert space.train_counts_.sum() == len(space.labels_)
        for labels in (space.labels_, space.train_labels_):
            assert labels.min() >= -1 and labels.max() < space.n_strategies_
        assert space.known_rows_.min() >= 0 and space.known_rows_.max() < len(space.train_features_)
        assert np.isfinite(space.token_mean_).all() and np.allclose(np.linalg.norm(space.token_axes_, axis=1), 1)


@FUZZ
@given(st.sampled_from(["threshold", "n_strategies", "embedding_dim", "seed_agreement", "names", "vocabulary",
                        "embedding_model", "params", "arrays", "tables"]),
       st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                max_size=3), max_leaves=8))
def test_random_config_values_are_one_line_errors(saved, field, value):
    from mechanism.analysis.strategy_space import StrategySpace

    with tempfile.TemporaryDirectory() as tmp:
        folder = _copy(saved, Path(tmp))
        _edit(**{field: value})(folder)
        try:
            StrategySpace.load(folder)
        except MechanismError as exc:
            assert "\n" not in str(exc)


def test_saved_tables_are_written_whole(saved):
    """save writes each file atomically and space.json last: what it lists is there."""
    cfg = _config(saved)
    for name in cfg["arrays"]:
        assert (saved / f"{name}.npy").is_file()
    for name in cfg["tables"]:
        pl.read_parquet(saved / f"{name}.parquet")
