"""A saved space is checked whole against its declared schema: any one file cut to a
subset of its columns, holding the wrong dtype, or holding an out-of-range value is refused by
name, checksums recomputed as a tamperer would, so only the schema can stop it.
"""
from __future__ import annotations

import io
import json
import os
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

from mechanism.analysis._strategies.persist import ARM_COLUMNS, STRATEGY_COLUMNS, TRAIN_ROW_COLUMNS
from mechanism.core.cachefile import digest
from mechanism.core.errors import InputError

N = int(os.environ.get("MECHANISM_HYPOTHESIS_EXAMPLES", "40"))
ARRAYS = ("train_features", "train_labels", "train_counts", "labels", "map_coords")
TABLES = ("strategies", "train_rows")
# space.json fields a space saved by an older version may lack (read with their documented defaults)
CONFIG_OPTIONAL = {"names", "threshold_rule", "checksum", "action_tools", "ignore_tools", "by", "kinds",
                   "task_tokens", "task_tested", "task_test"}  # absent from spaces saved before they were recorded
CONFIG_NUMBERS = {"threshold": (0, 1e12), "n_strategies": (0, 2**31), "embedding_dim": (0, 2**20),
                  "seed_agreement": (-1, 1)}


def _copy(saved: Path, tmp: Path) -> Path:
    out = Path(tempfile.mkdtemp(dir=tmp)) / "space"
    shutil.copytree(saved, out, symlinks=True)
    return out


def _config(folder: Path) -> dict:
    return json.loads((folder / "space.json").read_text())


def _put_array(folder: Path, name: str, arr: np.ndarray) -> None:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    (folder / f"{name}.npy").write_bytes(buf.getvalue())
    cfg = _config(folder)
    cfg["arrays"][name] = digest(np.ascontiguousarray(arr).tobytes())
    (folder / "space.json").write_text(json.dumps(cfg))


def _put_table(folder: Path, name: str, frame: pl.DataFrame) -> None:
    buf = io.BytesIO()
    frame.write_parquet(buf)
    (folder / f"{name}.parquet").write_bytes(buf.getvalue())
    cfg = _config(folder)
    cfg["tables"][name] = digest(buf.getvalue())
    (folder / "space.json").write_text(json.dumps(cfg))


def _spec(name: str, column: str):
    if name == "train_rows":
        return TRAIN_ROW_COLUMNS[column]
    if column in STRATEGY_COLUMNS:
        return STRATEGY_COLUMNS[column]
    return ARM_COLUMNS[column.split("[")[0]]


def _wrong_dtype(series: pl.Series) -> pl.Series:
    """The column as another kind: numbers as text, text as integers, lists as text."""
    if series.dtype.is_numeric():
        return series.cast(pl.String)
    if series.dtype == pl.String:
        return pl.Series(series.name, range(len(series)), dtype=pl.Int64)
    return pl.Series(series.name, ["x"] * len(series), dtype=pl.String)


def _out_of_range(series: pl.Series, spec, row: int, high: bool) -> pl.Series | None:
    """One value of the column outside what the schema allows (None where no value is)."""
    values = series.to_list()
    if spec.kind in ("int", "float"):
        bound = spec.high if high else spec.low
        if not np.isfinite(bound):
            bad = float("inf") if spec.kind == "float" else None
        else:
            bad = (int(bound) + 1 if high else int(bound) - 1) if spec.kind == "int" else bound + (1 if high else -1)
        if bad is None:
            return None
        if spec.kind == "int" and not -2**63 <= bad < 2**63:
            return None
        values[row] = bad
        return pl.Series(series.name, values, dtype=series.dtype)
    if spec.null:
        return None  # any text is in range; a missing value is allowed
    values[row] = None
    return pl.Series(series.name, values, dtype=series.dtype)


def _damage_array(folder: Path, name: str, how: str, draw) -> None:
    arr = np.load(folder / f"{name}.npy", allow_pickle=False)
    if how == "subset":
        keep = draw(st.integers(0, arr.shape[-1] - 1))
        _put_array(folder, name, np.ascontiguousarray(arr[..., :keep]))
    elif how == "dtype":
        wrong = draw(st.sampled_from(["float16", "complex64", "bool", "U4"] if arr.dtype.kind == "f"
                                     else ["float64", "float32", "bool", "uint8", "U4"]))
        _put_array(folder, name, arr.astype(wrong))
    else:
        out = arr.copy()
        flat = out.reshape(-1)
        where = draw(st.integers(0, flat.size - 1))
        n_strategies = _config(folder)["n_strategies"]
        flat[where] = draw(st.sampled_from({
            "train_features": [np.nan, np.inf, -np.inf], "map_coords": [np.nan, np.inf, -np.inf],
            "train_counts": [0, -1, -(2**40)], "train_labels": [-2, n_strategies, 2**40],
            "labels": [-2, n_strategies, 2**40]}[name]))
        _put_array(folder, name, out)


def _damage_table(folder: Path, name: str, how: str, draw) -> str | None:
    """Damage one table; the column the refusal must name (None: the damage is not a damage)."""
    frame = pl.read_parquet(folder / f"{name}.parquet")
    column = draw(st.sampled_from(frame.columns))
    spec = _spec(name, column)
    if how == "subset":
        if spec.optional:
            return None
        others = [c for c in frame.columns if c != column]
        kept = draw(st.lists(st.sampled_from(others), unique=True, max_size=len(others)))
        _put_table(folder, name, frame.select(kept))
        return None if not kept and name == "train_rows" else "*"
    if how == "dtype":
        _put_table(folder, name, frame.with_columns(_wrong_dtype(frame[column])))
        return column
    bad = _out_of_range(frame[column], spec, draw(st.integers(0, frame.height - 1)), draw(st.booleans()))
    if bad is None:
        return None
    _put_table(folder, name, frame.with_columns(bad))
    return column


def _damage_config(folder: Path, how: str, draw) -> str | None:
    cfg = _config(folder)
    if how == "subset":
        field = draw(st.sampled_from(sorted(set(cfg) - CONFIG_OPTIONAL)))
        del cfg[field]
    else:
        field = draw(st.sampled_from(sorted(CONFIG_NUMBERS)))
        low, high = CONFIG_NUMBERS[field]
        cfg[field] = str(cfg[field]) if how == "dtype" else draw(st.sampled_from([low - 1, high * 2 + 1]))
    (folder / "space.json").write_text(json.dumps(cfg))
    return field


@settings(max_examples=N * 3, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                     HealthCheck.function_scoped_fixture])
@given(st.sampled_from([*ARRAYS, *TABLES, "space"]), st.sampled_from(["subset", "dtype", "range"]), st.data())
def test_any_file_cut_mistyped_or_out_of_range_is_refused_by_name(saved_small_space, name, how, data):
    from mechanism.analysis.strategy_space import StrategySpace

    with tempfile.TemporaryDirectory() as tmp:
        folder = _copy(saved_small_space, Path(tmp))
        if name in ARRAYS:
            _damage_array(folder, name, how, data.draw)
            column, file = name, f"{name}.npy"
        elif name in TABLES:
            column, file = _damage_table(folder, name, how, data.draw), f"{name}.parquet"
            if column is None:
                return
        else:
            column, file = _damage_config(folder, how, data.draw), "space.json"
        with pytest.raises(InputError) as info:
            StrategySpace.load(folder)
        err = info.value
        text = str(err)
        assert "\n" not in text and len(text) < 1000, text
        assert Path(err.source).name == file, text
        if column != "*":
            assert column in text and err.field in (column, f"arrays.{column}", f"params.{column}"), text


def test_the_declared_schema_is_what_a_fit_writes(saved_small_space):
    """Every column a fresh save writes is declared (a new column must be added to the schema)."""
    frame = pl.read_parquet(saved_small_space / "strategies.parquet")
    bases = {c.split("[")[0] for c in frame.columns if "[" in c}
    assert bases == set(ARM_COLUMNS)
    assert {c for c in frame.columns if "[" not in c} == set(STRATEGY_COLUMNS)
    assert set(pl.read_parquet(saved_small_space / "train_rows.parquet").columns) == set(TRAIN_ROW_COLUMNS)


def test_an_outlier_row_without_stability_loads(saved_small_space, tmp_path):
    """A missing stability (the outliers' row of an HDBSCAN fit) is allowed, a missing name is not."""
    from mechanism.analysis.strategy_space import StrategySpace

    folder = _copy(saved_small_space, tmp_path)
    frame = pl.read_parquet(folder / "strategies.parquet")
    _put_table(folder, "strategies", frame.with_columns(pl.lit(None, pl.Float64).alias("stability")))
    assert StrategySpace.load(folder).n_strategies_ == frame.height
    _put_table(folder, "strategies", frame.with_columns(pl.lit(None, pl.String).alias("name")))
    with pytest.raises(InputError, match="column `name` has 6 missing values|column `name` has"):
        StrategySpace.load(folder)


def test_a_strategies_table_of_two_columns_is_refused_by_apply_in_one_line(saved_small_space, tmp_path):
    """The issue's case: only `strategy` and `stability` kept, checksum updated: exit 2, one line."""
    folder = _copy(saved_small_space, tmp_path)
    frame = pl.read_parquet(folder / "strategies.parquet")
    _put_table(folder, "strategies", frame.select("strategy", "stability"))
    proc = subprocess.run([sys.executable, "-m", "mechanism", "strategies", "apply", str(folder),
                           str(saved_small_space.parent / "runs.parquet"), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "MPLBACKEND": "Agg"})
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
    assert "strategies.parquet" in lines[0] and "has no column `name`" in lines[0], lines[0]
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("field", "value"), [
    ("segments", ["invoices", 3]), ("segments", "invoices"), ("segments", [""]), ("segments", ["x" * 201]),
    ("optional", ["whoami"]), ("optional", {"whoami": "batch"}), ("optional", {"whoami": [3]}),
    ("optional", {"": ["batch"]}), ("unknown", []),
])
def test_saved_task_calls_of_the_wrong_form_are_refused_by_name(saved_small_space, tmp_path, field, value):
    """The request segments and optional steps a fit saves (task_calls_) are checked on load."""
    from mechanism.analysis.strategy_space import StrategySpace

    folder = _copy(saved_small_space, tmp_path)
    config = _config(folder)
    config["task_calls"] = {**(config.get("task_calls") or {"tools": [], "drop": False}), field: value}
    (folder / "space.json").write_text(json.dumps(config))
    with pytest.raises(InputError, match="task_calls") as info:
        StrategySpace.load(folder)
    assert "\n" not in str(info.value) and Path(info.value.source).name == "space.json"


@pytest.mark.parametrize("value", ["T:clean", ["T:clean", 3], [""], ["x" * 10_001], {"T:clean": 1}])
def test_saved_task_tokens_of_the_wrong_form_are_refused_by_name(saved_small_space, tmp_path, value):
    """The move tokens the question decides (task_tokens_) are checked on load; a space saved
    before they were read has none and loads."""
    from mechanism.analysis.strategy_space import StrategySpace

    folder = _copy(saved_small_space, tmp_path)
    config = _config(folder)
    config.pop("task_tokens", None)
    (folder / "space.json").write_text(json.dumps(config))
    assert StrategySpace.load(folder).task_tokens_ == frozenset()
    config["task_tokens"] = value
    (folder / "space.json").write_text(json.dumps(config))
    with pytest.raises(InputError, match="task_tokens") as info:
        StrategySpace.load(folder)
    assert "\n" not in str(info.value) and Path(info.value.source).name == "space.json"


@pytest.mark.parametrize("value", ["yes", 1, [True], {"tested": True}])
def test_a_saved_task_tested_of_the_wrong_form_is_refused_by_name(saved_small_space, tmp_path, value):
    """Whether the fit tested what the question decides (task_tested_) is checked on load; a
    space saved before it was recorded has none and loads."""
    from mechanism.analysis.strategy_space import StrategySpace

    folder = _copy(saved_small_space, tmp_path)
    config = _config(folder)
    assert isinstance(config["task_tested"], bool)
    assert StrategySpace.load(folder).task_tested_ is config["task_tested"]
    config.pop("task_tested")
    (folder / "space.json").write_text(json.dumps(config))
    assert not hasattr(StrategySpace.load(folder), "task_tested_")
    config["task_tested"] = value
    (folder / "space.json").write_text(json.dumps(config))
    with pytest.raises(InputError, match="task_tested") as info:
        StrategySpace.load(folder)
    assert "\n" not in str(info.value) and Path(info.value.source).name == "space.json"


@pytest.mark.parametrize("value", ["yes", [1], {"questions": 10}, {"questions": -1, "trajectories": 20, "repeats": 0.1,
                                                                   "agreement": 0.0},
                                   {"questions": 10, "trajectories": 20, "repeats": 0.1, "agreement": float("nan")},
                                   {"questions": 10, "trajectories": 20, "repeats": True, "agreement": 0.0},
                                   {"questions": 10.5, "trajectories": 20, "repeats": 0.1, "agreement": 0.0}])
def test_a_saved_task_test_of_the_wrong_form_is_refused_by_name(saved_small_space, tmp_path, value):
    """The figures the fit decided the task test on (task_test_) are checked on load; a space
    saved before they were recorded has none and loads."""
    from mechanism.analysis.strategy_space import StrategySpace

    folder = _copy(saved_small_space, tmp_path)
    config = _config(folder)
    assert set(config["task_test"]) == {"questions", "trajectories", "repeats", "agreement"}
    assert StrategySpace.load(folder).task_test_ == config["task_test"]
    config.pop("task_test")
    (folder / "space.json").write_text(json.dumps(config))
    assert not hasattr(StrategySpace.load(folder), "task_test_")
    config["task_test"] = value
    (folder / "space.json").write_text(json.dumps(config, allow_nan=True))
    with pytest.raises(InputError, match="task_test") as info:
        StrategySpace.load(folder)
    assert "\n" not in str(info.value) and Path(info.value.source).name == "space.json"
