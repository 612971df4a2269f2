"""Saving a fitted :class:`~mechanism.analysis.strategy_space.StrategySpace` and reading one back.

A saved space is a folder of ``space.json``, numpy ``.npy`` arrays and parquet tables (no
pickle). Reading one treats every file as untrusted input (docs/design.md, "Untrusted input"), because a
space travels between machines and users:

- only the fixed file names below are opened, each a regular file inside the folder (a
  symlink out of it, a FIFO or a device is refused before a byte is read), of at most a
  stated size (checked on the open file before reading);
- ``space.json`` is measured for nesting depth before it is decoded, and a key given twice
  is refused (JSON lets the last one win silently);
- every array is checked for its dtype, shape and finiteness, and every value for its range:
  labels within the space's strategies, counts positive and summing to the training rows,
  ``n_strategies`` equal to the strategies the tables describe, parameters of the right kind;
- every table is checked whole against its declared schema (:data:`STRATEGY_COLUMNS`,
  :data:`ARM_COLUMNS`, :data:`TRAIN_ROW_COLUMNS`): each column there, of its dtype, with its
  values in range, no column the schema does not know, and the counts agreeing across files
  (sizes with the labels, arm counts with the sizes), so that a space that passes its checksums
  cannot fail later with a missing column or an impossible value;
- each array and table must match the checksum ``space.json`` gives for it (BLAKE2b through
  :func:`mechanism.core.cachefile.digest`, the toolkit's one digest; SHA-256 in spaces saved before);
- the embedding model's name is parsed by a bounded grammar and loaded on the file's word
  only when it is a model this toolkit ships (:func:`mechanism.analysis.embed.known_model`).

Every refusal is one :class:`~mechanism.core.errors.InputError` naming the file and the field.

Files are written with :func:`mechanism.core.cachefile.atomic_write`. This module takes the space
it saves, and the estimator's ``_restore`` that rebuilds a loaded one, from its caller (it never
imports the estimator).
"""
from __future__ import annotations

import io
import json
import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from mechanism.analysis._strategies.known import is_sorted
from mechanism.analysis._strategies.params import MODEL_PARAMS
from mechanism.analysis._strategies.params import check as check_params
from mechanism.analysis.embed import known_model
from mechanism.analysis.segmentation import TaskCalls
from mechanism.core.actions import ACTION_FIELDS, MARK_FIELDS, MAX_AGENT_TOOLS, MAX_VERB_CHARS, TEXT_FIELD
from mechanism.core.cachefile import (
    NPY_MAX_BYTES,
    atomic_write,
    check_parquet_depth,
    digest,
    load_npy,
    parse_json,
    read_regular,
)
from mechanism.core.errors import InputError, MechanismError

FORMAT_NAME = "mechanism.StrategySpace"
FORMAT_VERSION = 2
CONFIG_MAX_BYTES = 64 * 2**20  # space.json holds the vocabulary and the names; 64 MB is far above any real one
TABLE_MAX_BYTES = 2 * 2**30
_NAME_MAX = 10_000  # characters of a vocabulary token or a strategy name

# The tables `save` writes, each checked against its checksum in space.json on load.
SAVED_TABLES = ("train_rows", "strategies")

# The arrays `save` writes: the attribute each is read back into, and the dtype kind it must have
# (f: floating point, i: integer).
SAVED_ARRAYS = {"train_features": ("train_features_", "f"), "train_labels": ("train_labels_", "i"),
                "train_counts": ("train_counts_", "i"), "labels": ("labels_", "i"),
                "train_space": ("train_space_", "f"), "map_coords": ("map_coords_", "f"),
                "known_pairs": ("known_pairs_", "i"), "known_rows": ("known_rows_", "i"),
                "token_mean": ("token_mean_", "f"), "token_axes": ("token_axes_", "f")}

# Saved by spaces before it was removed; it never changed a fit, so it is read and dropped.
_RETIRED = ("outlier_factor",)
# Parameters added after spaces were first saved: a space saved without them was fitted as these
# say (every call its own move, the default failure reading, one tree over every plan, no tested band,
# the cut's strategies as they were).
_SAVED_BEFORE = {"retries": "keep", "error_pattern": None, "families": "keep", "plans": "mixed",
                 "task_calls": "keep", "min_share_tested": 0.0, "token_rank": None, "refine": "none"}
CHECKSUM = "blake2b"  # what `save` writes; a space without the field was checked with SHA-256
_CHECKSUMS = ("blake2b", "sha256")


def save(space: Any, folder: str | os.PathLike, *, params: dict[str, Any], map_coords: np.ndarray | None) -> Path:
    """Write the fitted ``space`` to ``folder`` (JSON, ``.npy`` and parquet; no pickle), with the
    parameters that define it and its strategy map when one was drawn."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    arrays = {"train_features": space.train_features_, "train_labels": space.train_labels_,
              "train_counts": space.train_counts_, "labels": space.labels_}
    if space.cluster_on == "umap":
        arrays["train_space"] = space.train_space_
    if map_coords is not None:
        arrays["map_coords"] = map_coords
    if getattr(space, "known_pairs_", None) is not None:  # a space loaded from before them has none
        arrays.update(known_pairs=space.known_pairs_, known_rows=space.known_rows_)
    if getattr(space, "token_mean_", None) is not None:  # fitted with token_rank below the vocabulary's size
        arrays.update(token_mean=space.token_mean_, token_axes=space.token_axes_)
    checksums = {}
    for name, arr in arrays.items():
        buf = io.BytesIO()
        np.save(buf, arr, allow_pickle=False)
        atomic_write(out / f"{name}.npy", buf.getvalue())
        checksums[name] = digest(np.ascontiguousarray(arr).tobytes())
    tables = {}
    train_rows = {"rendering": space.train_renderings_, "moves": space.train_moves_}
    if getattr(space, "train_plans_", None) is not None:  # a space saved before plans has none
        train_rows["plan"] = space.train_plans_
    frames = {"train_rows": pl.DataFrame(train_rows, schema=dict.fromkeys(train_rows, pl.String)),
              "strategies": space.strategies_}
    for name in SAVED_TABLES:
        buf = io.BytesIO()
        frames[name].write_parquet(buf)
        atomic_write(out / f"{name}.parquet", buf.getvalue())
        tables[name] = digest(buf.getvalue())
    config = {
        "format": FORMAT_NAME, "format_version": FORMAT_VERSION,
        "embedding_model": space.embedding_model_, "embedding_dim": space.embedding_dim_,
        "vocabulary": list(space.vocabulary_),
        "params": params, "threshold": space.threshold_, "checksum": CHECKSUM,
        "threshold_rule": getattr(space, "threshold_rule_", "medoid"),
        "n_strategies": space.n_strategies_, "arrays": checksums, "tables": tables,
        "names": {str(k): v for k, v in sorted(getattr(space, "names_", {}).items())},
        "seed_agreement": space.seed_agreement_,
        "action_tools": dict(sorted(getattr(space, "action_tools_", {}).items())),
        "task_calls": getattr(space, "task_calls_", TaskCalls()).to_dict(),
        "task_tokens": sorted(getattr(space, "task_tokens_", ())),
        **({"task_tested": space.task_tested_} if hasattr(space, "task_tested_") else {}),
        **({"task_test": space.task_test_} if hasattr(space, "task_test_") else {}),
        "ignore_tools": sorted(space.ignore_tools or ()),
        "by": space.by, "kinds": list(getattr(space, "kinds_", [])),
    }
    # written last: a folder whose space.json is there holds every file it lists
    atomic_write(out / "space.json", json.dumps(config, indent=1).encode("utf-8"))
    return out


def _string_list(value: Any, most: int, longest: int = 200) -> bool:
    """Whether ``value`` is a list of at most ``most`` non-empty strings of at most ``longest``
    characters."""
    return (isinstance(value, list) and len(value) <= most
            and all(isinstance(t, str) and 0 < len(t) <= longest for t in value))


def _task_calls(raw: Any, cfg: str, mode: str) -> TaskCalls:
    """The saved task calls: none in a space fitted with ``task_calls="keep"`` (as every space
    saved before they were read was), required under ``"auto"``."""
    if raw is None and mode == "keep":
        return TaskCalls()
    ok = isinstance(raw, dict) and set(raw) <= {"tools", "drop", "by_place", "alike", "segments", "optional"}
    if ok:
        alike, optional = raw.get("alike", []), raw.get("optional", {})
        ok = (_string_list(raw.get("tools"), 10_000) and isinstance(raw.get("drop"), bool)
              and isinstance(raw.get("by_place", False), bool) and _string_list(raw.get("segments", []), 10_000)
              and isinstance(alike, list) and len(alike) <= 1_000
              and all(_string_list(g, 100) and len(g) >= 2 for g in alike)
              and isinstance(optional, dict) and len(optional) <= 1_000
              and all(_string_list([t], 1) and _string_list(plans, 10_000, 20_000) for t, plans in optional.items()))
    if not ok:
        raise _Refusal("`task_calls` must be {tools: [names], drop: true or false, by_place: true or false, "
                       "alike: [[names]], segments: [names], optional: {name: [plans]}}", cfg, "task_calls")
    return TaskCalls.from_dict(raw)


def _task_tokens(raw: Any, cfg: str) -> frozenset[str]:
    """The saved move tokens the question decides (none in a space saved before they were read)."""
    if not _string_list(raw, 100_000, _NAME_MAX):
        raise _Refusal("`task_tokens` must be a list of move tokens", cfg, "task_tokens")
    return frozenset(raw)


def _task_tested(raw: Any, cfg: str) -> dict[str, bool]:
    """Whether the fit tested what the question decides, as state (none in a space saved before
    it was recorded)."""
    if raw is None:
        return {}
    if not isinstance(raw, bool):
        raise _Refusal("`task_tested` must be true or false", cfg, "task_tested")
    return {"task_tested_": raw}


def _task_test(raw: Any, cfg: str) -> dict[str, dict[str, float]]:
    """The figures the fit decided on whether to test what the question decides (none in a
    space saved before they were recorded, or fitted under ``task_calls="keep"``)."""
    if raw is None:
        return {}
    counts, shares = ("questions", "trajectories"), ("repeats", "agreement")
    ok = (isinstance(raw, dict) and set(raw) == {*counts, *shares}
          and all(type(raw[k]) is int and 0 <= raw[k] <= 2**53 for k in counts)
          and all(isinstance(raw[k], (int, float)) and not isinstance(raw[k], bool)
                  and math.isfinite(raw[k]) and -2**53 <= raw[k] <= 1 for k in shares))
    if not ok:
        raise _Refusal("`task_test` must be {questions: count, trajectories: count, repeats: share, "
                       "agreement: number at most 1}", cfg, "task_test")
    return {"task_test_": {**{k: raw[k] for k in counts}, **{k: float(raw[k]) for k in shares}}}


# The most entries a saved space's `action_tools` holds: the generic tools (at most five, each
# carrying a fifth of the calls), and a multi-agent system's handoffs and consults.
MAX_ACTION_TOOLS = 5 + MAX_AGENT_TOOLS
# A field of another name the detection reads an action through (`run_tactic`'s `tactic`): a
# JSON member's name, as short as the detection allows (no mark: those start with `@` or are `*`)
_FIELD_NAME = re.compile(rf"[^\s@*][^\s]{{0,{MAX_VERB_CHARS - 1}}}")


def _action_tools(raw: Any, cfg: str) -> dict[str, str]:
    """The generic tools a space read as verbs: a mapping of short tool names to the field each
    is read through (one of the fields :mod:`mechanism.core.actions` knows by name, its whole
    text, a field of another name as the detection reads one, or its handoff or consult mark; a
    space saved without it read every call by name)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict) or len(raw) > MAX_ACTION_TOOLS or not all(
            isinstance(k, str) and 0 < len(k) <= 200 and isinstance(v, str)
            and (v in (*ACTION_FIELDS, TEXT_FIELD, *MARK_FIELDS) or _FIELD_NAME.fullmatch(v))
            for k, v in raw.items()):
        raise _Refusal("`action_tools` must map tool names to action fields", cfg, "action_tools")
    return dict(raw)


def _ignore_tools(raw: Any, cfg: str) -> list[str] | None:
    """The tools a space left out of every trajectory (a space saved without it left none out)."""
    if raw is None or raw == []:
        return None
    if not isinstance(raw, list) or len(raw) > 256 or not all(isinstance(t, str) and 0 < len(t) <= 200 for t in raw):
        raise _Refusal("`ignore_tools` must be a list of tool names", cfg, "ignore_tools")
    return list(raw)


def _kinds(by: Any, kinds: Any, cfg: str) -> tuple[str | None, list[str]]:
    """The column a space was fitted ``by`` and its kinds (a space saved without them had none)."""
    if by is None and not kinds:
        return None, []
    if not isinstance(by, str) or not 0 < len(by) <= 200:
        raise _Refusal("`by` must be a column name", cfg, "by")
    if (not isinstance(kinds, list) or not kinds or len(kinds) > 10_000 or len(set(map(str, kinds))) != len(kinds)
            or not all(isinstance(k, str) and len(k) <= 10_000 for k in kinds)):
        raise _Refusal("`kinds` must be a list of distinct task kinds", cfg, "kinds")
    return by, list(kinds)


class _Refusal(Exception):
    """A reason to refuse the saved space, with the file and field to name."""

    def __init__(self, reason: str, file: str, field: str | None = None) -> None:
        super().__init__(reason)
        self.reason, self.file, self.field = reason, file, field


def _number(value: Any, field: str, *, low: float, high: float, integer: bool = False) -> Any:
    """``value`` when it is a finite number (an integer with ``integer``) within [low, high]."""
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok:
        raise _Refusal(f"`{field}` must be {'an integer' if integer else 'a number'}, got "
                       f"{type(value).__name__}", "space.json", field)
    if (isinstance(value, float) and not math.isfinite(value)) or not low <= value <= high:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise _Refusal(f"`{field}` must lie in [{low:g}, {high:g}], got {shown}", "space.json", field)
    return value


def _params(raw: Any) -> dict[str, Any]:
    """The saved parameters, each checked against the estimator's one table
    (:data:`~mechanism.analysis._strategies.params.CONSTRAINTS`, fields ``params.<name>``)."""
    if not isinstance(raw, dict):
        raise _Refusal("`params` must be a mapping", "space.json", "params")
    raw = {**_SAVED_BEFORE, **{k: v for k, v in raw.items() if k not in _RETIRED}}
    unknown, missing = sorted(set(raw) - set(MODEL_PARAMS)), sorted(set(MODEL_PARAMS) - set(raw))
    if unknown or missing:
        what = f"unknown parameter `{unknown[0][:60]}`" if unknown else f"no parameter `{missing[0]}`"
        raise _Refusal(f"`params` has {what}", "space.json", "params")
    if isinstance(raw["k_range"], list):  # JSON has no tuples
        raw["k_range"] = tuple(raw["k_range"])
    try:
        check_params(raw, prefix="params.")
    except InputError as exc:
        raise _Refusal(exc.reason, "space.json", exc.field) from None
    return raw


def _strings(value: Any, field: str, *, max_items: int = 1_000_000) -> list[str]:
    if (not isinstance(value, list) or len(value) > max_items
            or not all(isinstance(t, str) and len(t) <= _NAME_MAX for t in value)):
        raise _Refusal(f"`{field}` must be a list of strings", "space.json", field)
    return value


def _read_listed(folder: Path, file: str, digest: Any, field: str, max_bytes: int) -> bytes:
    """The bytes of a file space.json lists, once its checksum there is well formed."""
    if not isinstance(digest, str) or len(digest) != 64:
        raise _Refusal(f"the checksum of `{file}` must be 64 hex digits", "space.json", field)
    try:
        return read_regular(folder / file, max_bytes=max_bytes, folder=folder)
    except FileNotFoundError:
        raise _Refusal(f"`{file}` is missing", file) from None
    except ValueError as exc:
        raise _Refusal(str(exc), file) from None


def _array(folder: Path, name: str, expected: Any, algorithm: str) -> np.ndarray:
    file = f"{name}.npy"
    data = _read_listed(folder, file, expected, f"arrays.{name}", NPY_MAX_BYTES)
    try:
        arr = load_npy(data)  # header checked against the bytes before anything is allocated
    except ValueError as exc:
        raise _Refusal(str(exc), file) from None
    want = SAVED_ARRAYS[name][1]
    if arr.dtype.kind != want or arr.dtype.itemsize not in (4, 8) or arr.dtype.byteorder == ">":
        kind = "floating-point" if want == "f" else "integer"
        raise _Refusal(f"`{file}` holds {arr.dtype} values, expected {kind} (32 or 64 bits)", file, name)
    if digest(np.ascontiguousarray(arr).tobytes(), algorithm=algorithm) != expected:
        raise _Refusal(f"`{file}` does not match its checksum", file, f"arrays.{name}")
    if want == "f" and not np.isfinite(arr).all():
        raise _Refusal(f"`{file}` holds NaN or infinite values", file, name)
    return arr


def _table(folder: Path, name: str, expected: Any, algorithm: str) -> pl.DataFrame:
    file = f"{name}.parquet"
    data = _read_listed(folder, file, expected, f"tables.{name}", TABLE_MAX_BYTES)
    if digest(data, algorithm=algorithm) != expected:
        raise _Refusal(f"`{file}` does not match its checksum", file, f"tables.{name}")
    try:
        check_parquet_depth(data, name=file, max_depth=4)  # ours nest 2 levels (a list of strings)
        return pl.read_parquet(io.BytesIO(data))
    except ValueError as exc:
        raise _Refusal(str(exc), file) from None
    except Exception as exc:  # noqa: BLE001 - polars raises several types on a corrupt file
        raise _Refusal(f"`{file}` is not readable ({type(exc).__name__}: {' '.join(str(exc).split())[:160]})",
                       file) from None


class Column(NamedTuple):
    """What one column of a saved table must hold.

    ``kind`` is ``"int"``, ``"float"``, ``"str"`` or ``"strs"`` (a list of strings); numbers lie
    in ``[low, high]``; ``null`` allows missing values, ``nan`` NaN (a rate of no members, a
    stability never resampled); ``optional`` columns may be absent (spaces saved before them).
    """

    kind: str
    low: float = -math.inf
    high: float = math.inf
    null: bool = False
    nan: bool = False
    optional: bool = False


_RATE = Column("float", 0, 1)
_ARM_RATE = Column("float", 0, 1, null=True, nan=True)  # null where the arm has no member
# strategies.parquet (what :func:`mechanism.analysis._strategies.describe.table` writes); a column added
# there must be declared here, or the spaces it saves are refused on load
STRATEGY_COLUMNS: dict[str, Column] = {
    "strategy": Column("int", -1, 2**31 - 1), "name": Column("str"), "built_name": Column("str"),
    "fidelity": _RATE, "size": Column("int", 1, 2**63 - 1), "share": _RATE,
    "stability": Column("float", 0, 1, null=True, nan=True), "keywords": Column("strs", null=True),
    "typical_member": Column("str", null=True), "typical_moves": Column("str"), "typical_tools": Column("str"),
    "example": Column("str", null=True), "success_rate": _RATE, "mean_rounds": Column("float", 0, 2**31),
    "no_search_share": _RATE, "failure_rate": _RATE, "retry_rate": _RATE,
    "failed_call_share": Column("float", 0, 2**31), "optional_steps": Column("strs"),
    "task_variants": Column("strs", optional=True), "endings": Column("strs", optional=True),
    "retry_loop_share": Column("float", 0, 1, optional=True),
}
# the columns strategies.parquet holds for every arm, named ``<column>[<arm>]``
ARM_COLUMNS: dict[str, Column] = {
    "n": Column("int", 0, 2**63 - 1), "success_rate": _ARM_RATE, "ci_low": _ARM_RATE, "ci_high": _ARM_RATE,
    **{f"{w}{x}": _ARM_RATE for w in ("failure_rate", "retry_rate") for x in ("", "_ci_low", "_ci_high")},
}
TRAIN_ROW_COLUMNS: dict[str, Column] = {
    "rendering": Column("str"), "moves": Column("str"), "plan": Column("str", optional=True),
}
_ARM_COLUMN = re.compile(r"(\w+)\[(.+)\]", re.S)


def _kind_ok(dtype: Any, kind: str) -> bool:
    if kind == "int":
        return dtype.is_integer()
    if kind == "float":
        return dtype.is_float()
    if kind == "str":
        return dtype == pl.String
    return dtype == pl.List(pl.String)


def _check_column(series: pl.Series, file: str, name: str, spec: Column) -> None:
    """Refuse a column of the wrong dtype, with missing values it may not have, or a value out of range."""
    shown = name if len(name) <= 60 else name[:57] + "..."
    if not (_kind_ok(series.dtype, spec.kind) or (spec.null and series.dtype == pl.Null)):
        want = {"int": "integers", "float": "floating-point numbers", "str": "text",
                "strs": "lists of text"}[spec.kind]
        raise _Refusal(f"`{file}` column `{shown}` holds {series.dtype}, expected {want}", file, name)
    if series.null_count() and not spec.null:
        raise _Refusal(f"`{file}` column `{shown}` has {series.null_count()} missing values", file, name)
    if spec.kind in ("int", "float") and series.dtype != pl.Null:
        values = series.drop_nulls()
        if spec.kind == "float":
            nan = values.is_nan()
            if nan.any() and not spec.nan:
                raise _Refusal(f"`{file}` column `{shown}` holds NaN", file, name)
            values = values.filter(~nan)
        if len(values) and (values.min() < spec.low or values.max() > spec.high or
                            (spec.kind == "float" and not values.is_finite().all())):
            raise _Refusal(f"`{file}` column `{shown}` holds values from {values.min()} to {values.max()}, "
                           f"outside [{spec.low:g}, {spec.high:g}]", file, name)
    elif spec.kind == "strs" and series.dtype != pl.Null and series.list.eval(pl.element().is_null()).list.any().any():
        raise _Refusal(f"`{file}` column `{shown}` has missing values inside its lists", file, name)


def _check_table(frame: pl.DataFrame, file: str, columns: dict[str, Column],
                 arm_columns: dict[str, Column] | None = None) -> list[str]:
    """Check ``frame`` against its declared schema; the arms its per-arm columns name."""
    arms: dict[str, set[str]] = {}
    for name in frame.columns:
        if name in columns:
            continue
        match = _ARM_COLUMN.fullmatch(name) if arm_columns else None
        if match is None or match.group(1) not in arm_columns:
            shown = name if len(name) <= 60 else name[:57] + "..."
            raise _Refusal(f"`{file}` has a column `{shown}` that no saved space holds", file, name)
        arms.setdefault(match.group(2), set()).add(match.group(1))
    for name, spec in columns.items():
        if name not in frame.columns:
            if spec.optional:
                continue
            raise _Refusal(f"`{file}` has no column `{name}`", file, name)
        _check_column(frame[name], file, name, spec)
    for arm, have in arms.items():
        for base, spec in (arm_columns or {}).items():
            name = f"{base}[{arm}]"
            if base not in have:
                raise _Refusal(f"`{file}` has no column `{name[:80]}` (each arm has {len(arm_columns)})", file, name)
            _check_column(frame[name], file, name, spec)
    return sorted(arms)


def _check_strategies(frame: pl.DataFrame, n_strategies: int, n_labels: int) -> list[str]:
    """strategies.parquet against its schema and itself: one row per strategy, sizes summing to
    the labelled rows and to the arms' counts."""
    file = "strategies.parquet"
    arms = _check_table(frame, file, STRATEGY_COLUMNS, ARM_COLUMNS)
    if not arms:
        raise _Refusal(f"`{file}` has no per-arm columns (such as `n[base]`)", file, "n")
    ids = frame["strategy"]
    if ids.n_unique() != len(ids):
        raise _Refusal(f"`{file}` describes a strategy twice", file, "strategy")
    described = sorted(i for i in ids.to_list() if i >= 0)
    if described != list(range(n_strategies)):
        raise _Refusal(f"`n_strategies` is {n_strategies} but `{file}` describes strategies "
                       f"{described[:5]}{'...' if len(described) > 5 else ''}", "space.json", "n_strategies")
    arm_total = frame.select(pl.sum_horizontal(*(pl.col(f"n[{a}]") for a in arms))).to_series()
    wrong = (arm_total != frame["size"]).arg_true()
    if len(wrong):
        i = int(wrong[0])
        raise _Refusal(f"`{file}` gives strategy {ids[i]} a `size` of {frame['size'][i]} but its arms' `n[...]` "
                       f"sum to {arm_total[i]}", file, "size")
    if int(frame["size"].sum()) != n_labels:
        raise _Refusal(f"`{file}` sizes sum to {int(frame['size'].sum())} rows but `labels.npy` labels "
                       f"{n_labels}", "labels.npy", "labels")
    return arms


def _labels_in_range(arr: np.ndarray, n: int, file: str, field: str) -> None:
    if len(arr) and (arr.min() < -1 or arr.max() >= n):
        raise _Refusal(f"`{file}` holds labels outside -1..{n - 1} (the space's {n} strategies), from "
                       f"{int(arr.min())} to {int(arr.max())}", file, field)


def load(restore: Callable[[dict[str, Any], dict[str, Any]], Any], folder: str | os.PathLike, *,
         embedder: Any = None, cache_dir: str | os.PathLike | None = None, progress: bool | None = None) -> Any:
    """Read a space written by :func:`save`, checking every file (see the module docstring), and
    hand its parameters and fitted state to ``restore`` (the estimator's ``_restore``)."""
    folder = Path(folder)
    try:
        return _load(restore, folder, embedder=embedder, cache_dir=cache_dir, progress=progress)
    except _Refusal as bad:
        raise InputError(bad.reason, source=str(folder / bad.file), field=bad.field) from None


def _read_config(folder: Path) -> dict[str, Any]:
    """``space.json``, once it says it is a saved strategy space of the version this code reads."""
    cfg = "space.json"
    if not folder.is_dir():
        raise InputError("no saved strategy space here (no folder holding `space.json`)", source=str(folder))
    try:
        config = parse_json(read_regular(folder / cfg, max_bytes=CONFIG_MAX_BYTES, folder=folder), name=cfg)
    except FileNotFoundError:
        raise InputError("no saved strategy space here (missing `space.json`)", source=str(folder)) from None
    except (OSError, ValueError) as exc:
        raise _Refusal(f"unreadable `space.json`: {' '.join(str(exc).split())[:300]}", cfg) from None
    if not isinstance(config, dict) or config.get("format") != FORMAT_NAME:
        raise _Refusal("not a saved strategy space (field `format`)", cfg, "format")
    if config.get("format_version") != FORMAT_VERSION:
        version = repr(config.get("format_version"))[:40]
        raise _Refusal(f"strategy space format version {version}, this mechanism reads version {FORMAT_VERSION} "
                       "(version 1 spaces were built on search-only moves): refit with "
                       "StrategySpace(...).fit(runs).save(folder)", cfg, "format_version")
    return config


def _model(config: dict[str, Any], embedder: Any) -> tuple[list[str], str]:
    """The vocabulary and the embedding model's name, a name loaded on the file's word only when
    it is a model this toolkit ships."""
    cfg = "space.json"
    vocabulary = config.get("vocabulary")
    if not isinstance(vocabulary, list) or not all(isinstance(t, str) for t in vocabulary):
        raise _Refusal("missing or bad `vocabulary` in space.json", cfg, "vocabulary")
    _strings(vocabulary, "vocabulary")
    model = config.get("embedding_model")
    if not isinstance(model, str) or not model:
        raise _Refusal("missing or bad `embedding_model` in space.json", cfg, "embedding_model")
    if embedder is None and not known_model(model):
        # a name from the file could point the loader at any folder: only the known models load
        # by themselves; another one must be named by the user
        shown = repr(model[:80])
        raise _Refusal(f"space.json names the embedding model {shown}, which is not one this toolkit loads on a "
                       "file's word; pass `embedder=` (that model's name, or a folder you trust) to load it",
                       cfg, "embedding_model")
    return list(vocabulary), model


def _read_files(folder: Path, config: dict[str, Any], cluster_on: str) -> tuple[dict[str, np.ndarray],
                                                                               dict[str, pl.DataFrame]]:
    """The arrays and tables space.json lists, each against its checksum. Only the names `save`
    writes are read: the names in space.json are untrusted and must neither pick files outside
    the folder nor set arbitrary attributes."""
    cfg = "space.json"
    arrays = config.get("arrays")
    if not isinstance(arrays, dict):
        raise _Refusal("`arrays` in space.json is not a mapping", cfg, "arrays")
    unknown = sorted(set(arrays) - set(SAVED_ARRAYS))
    if unknown:
        raise _Refusal(f"unknown array(s) {[u[:60] for u in unknown[:3]]} in space.json", cfg, "arrays")
    required = {"train_features", "train_labels", "train_counts", "labels"} | ({"train_space"} if cluster_on ==
                                                                              "umap" else set())
    if required - set(arrays):
        raise _Refusal(f"space.json lists no {sorted(required - set(arrays))}", cfg, "arrays")
    algorithm = config.get("checksum", "sha256")
    if algorithm not in _CHECKSUMS:
        raise _Refusal(f"`checksum` must be one of {list(_CHECKSUMS)}", cfg, "checksum")
    loaded = {name: _array(folder, name, expected, algorithm) for name, expected in arrays.items()}
    tables = config.get("tables")
    if not isinstance(tables, dict) or set(tables) != set(SAVED_TABLES):
        raise _Refusal(f"`tables` in space.json must list exactly {list(SAVED_TABLES)}", cfg, "tables")
    return loaded, {name: _table(folder, name, tables[name], algorithm) for name in SAVED_TABLES}


def _check_shapes(loaded: dict[str, np.ndarray], dim: int, n_components: int) -> int:
    """The number of distinct training rows, once every array has the shape it must have."""
    features = loaded["train_features"]
    m = features.shape[0] if features.ndim == 2 else -1
    if features.shape != (m, dim):
        raise _Refusal(f"`train_features.npy` has shape {features.shape}, expected (rows, {dim}) from the "
                       "vocabulary, `embedding_dim` and `kinds`", "train_features.npy", "train_features")
    for name, shape in (("train_labels", (m,)), ("train_counts", (m,)),
                        ("train_space", (m, n_components)), ("map_coords", (m, 2))):
        if name in loaded and loaded[name].shape != shape:
            raise _Refusal(f"`{name}.npy` has shape {loaded[name].shape}, expected {shape} (one row per distinct "
                           "training row)", f"{name}.npy", name)
    if loaded["labels"].ndim != 1:
        raise _Refusal(f"`labels.npy` has {loaded['labels'].ndim} dimensions, expected 1", "labels.npy", "labels")
    _check_known(loaded, m)
    return m


def _check_axes(loaded: dict[str, np.ndarray], n_tokens: int, rank: int | None) -> None:
    """The move tokens' mean and principal axes (both or neither; ``rank`` axes of unit length
    over the vocabulary's tokens; finite, as :func:`_array` checks every float array)."""
    if ("token_mean" in loaded) != ("token_axes" in loaded):
        name = "token_axes" if "token_mean" in loaded else "token_mean"
        raise _Refusal(f"space.json lists no `{name}`, which goes with the other", "space.json", "arrays")
    if "token_mean" not in loaded:  # fitted with every column (token_rank None, or no more tokens or rows)
        return
    mean, axes = loaded["token_mean"], loaded["token_axes"]
    if rank is None or mean.shape != (n_tokens,) or axes.shape != (rank, n_tokens):
        raise _Refusal(f"`token_mean.npy` has shape {mean.shape} and `token_axes.npy` {axes.shape}, expected "
                       f"({n_tokens},) and ({rank}, {n_tokens}) from the vocabulary and `token_rank`",
                       "token_axes.npy", "token_axes")
    if not np.allclose(np.linalg.norm(axes, axis=1), 1.0, atol=1e-6):
        raise _Refusal("`token_axes.npy` holds an axis not of unit length", "token_axes.npy", "token_axes")


def _check_known(loaded: dict[str, np.ndarray], m: int) -> None:
    """The fitted pairs' digests and rows (both or neither): one digest of two int64 per pair,
    distinct and sorted (they are searched), each row one of the ``m`` training rows."""
    if ("known_pairs" in loaded) != ("known_rows" in loaded):
        name = "known_rows" if "known_pairs" in loaded else "known_pairs"
        raise _Refusal(f"space.json lists no `{name}` beside its pair", "space.json", "arrays")
    if "known_pairs" not in loaded:
        return
    pairs, rows = loaded["known_pairs"], loaded["known_rows"]
    if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.dtype.itemsize != 8 or rows.shape != (pairs.shape[0],):
        raise _Refusal(f"`known_pairs.npy` has shape {pairs.shape} and `known_rows.npy` {rows.shape}, expected "
                       "(pairs, 2) int64 and (pairs,)", "known_pairs.npy", "known_pairs")
    if len(rows) and (rows.min() < 0 or rows.max() >= m):
        raise _Refusal(f"`known_rows.npy` holds a row outside the {m} training rows", "known_rows.npy", "known_rows")
    if not is_sorted(pairs):
        raise _Refusal("`known_pairs.npy` is not sorted or repeats a pair", "known_pairs.npy", "known_pairs")


def _check_members(loaded: dict[str, np.ndarray], strategies: pl.DataFrame, n_strategies: int) -> None:
    """Labels, counts and the strategies table agree on every strategy's members."""
    labels, counts = loaded["labels"], loaded["train_counts"]
    if len(counts) and counts.min() < 1:
        raise _Refusal(f"`train_counts.npy` holds a count of {int(counts.min())}: counts are positive",
                       "train_counts.npy", "train_counts")
    _check_strategies(strategies, n_strategies, labels.shape[0])
    _labels_in_range(loaded["train_labels"], n_strategies, "train_labels.npy", "train_labels")
    _labels_in_range(labels, n_strategies, "labels.npy", "labels")
    members = np.bincount(labels + 1, minlength=n_strategies + 1)
    for strategy, size in zip(strategies["strategy"].to_list(), strategies["size"].to_list()):
        if members[strategy + 1] != size:
            raise _Refusal(f"`labels.npy` gives strategy {strategy} {members[strategy + 1]} members, "
                           f"`strategies.parquet` {size}", "labels.npy", "labels")
    if int(counts.sum(dtype=np.float64)) != labels.shape[0]:
        raise _Refusal(f"`train_counts.npy` sums to {int(counts.sum(dtype=np.float64))} rows but `labels.npy` "
                       f"labels {labels.shape[0]}", "train_counts.npy", "train_counts")
    # the distinct training rows, weighted by their counts, hold each strategy's members
    weighted = np.bincount(loaded["train_labels"] + 1, weights=counts, minlength=n_strategies + 1)
    if not np.array_equal(weighted, members):
        strategy = int(np.flatnonzero(weighted != members)[0]) - 1
        raise _Refusal(f"`train_labels.npy` gives strategy {strategy} {int(weighted[strategy + 1])} members, "
                       f"`labels.npy` {int(members[strategy + 1])}", "train_labels.npy", "train_labels")


def _names(raw: Any, n_strategies: int) -> dict[int, str]:
    """The names given with ``rename``: strategy id -> name."""
    raw = raw if raw is not None else {}
    if not isinstance(raw, dict) or not all(isinstance(v, str) and len(v) <= _NAME_MAX for v in raw.values()):
        raise _Refusal("`names` must map strategy ids to strings", "space.json", "names")
    names: dict[int, str] = {}
    for key, value in raw.items():
        if not (key.isascii() and key.isdigit() and len(key) <= 10 and int(key) < max(n_strategies, 1)):
            raise _Refusal(f"`names` has key {key[:20]!r}, not a strategy id", "space.json", "names")
        names[int(key)] = value
    return names


def _train_rows(rows: pl.DataFrame, m: int) -> dict[str, Any]:
    """The renderings, moves and plans of the distinct training rows."""
    _check_table(rows, "train_rows.parquet", TRAIN_ROW_COLUMNS)
    if rows.height != m:
        raise _Refusal(f"`train_rows.parquet` has {rows.height} rows, `train_features.npy` {m}",
                       "train_rows.parquet", "rendering")
    # a space saved before plans were read has none: its sweep then cuts one tree, as its fit did
    return {"train_renderings_": rows["rendering"].to_list(), "train_moves_": rows["moves"].to_list(),
            "train_plans_": rows["plan"].to_list() if "plan" in rows.columns else None}


def _load(restore: Callable[[dict[str, Any], dict[str, Any]], Any], folder: Path, *, embedder: Any,
          cache_dir: Any, progress: Any) -> Any:
    cfg = "space.json"
    config = _read_config(folder)
    vocabulary, model = _model(config, embedder)
    params = _params(config.get("params"))
    embedding_dim = _number(config.get("embedding_dim"), "embedding_dim", low=0, high=2**20, integer=True)
    threshold = float(_number(config.get("threshold"), "threshold", low=0, high=1e12))
    seed_agreement = float(_number(config.get("seed_agreement"), "seed_agreement", low=-1, high=1))
    n_strategies = _number(config.get("n_strategies"), "n_strategies", low=0, high=2**31, integer=True)
    names = _names(config.get("names"), n_strategies)
    loaded, frames = _read_files(folder, config, params["cluster_on"])
    by, kinds = _kinds(config.get("by"), config.get("kinds"), cfg)
    m = _check_shapes(loaded, len(vocabulary) + 1 + embedding_dim + len(kinds), params["n_components"])
    _check_axes(loaded, len(vocabulary), params["token_rank"])
    strategies = frames["strategies"]
    _check_members(loaded, strategies, n_strategies)
    for column in ("task_variants", "endings"):  # saved before these joins were made: none joined
        if column not in strategies.columns:
            strategies = strategies.with_columns(pl.Series(column, [[] for _ in range(strategies.height)],
                                                           dtype=pl.List(pl.String)))
    # a space saved without a rule measured outliers from the nearest training row
    rule = config.get("threshold_rule", "nearest")
    if rule not in ("nearest", "medoid"):
        raise _Refusal("`threshold_rule` must be 'nearest' or 'medoid'", cfg, "threshold_rule")
    state = {SAVED_ARRAYS[name][0]: arr.astype(np.int64) if SAVED_ARRAYS[name][1] == "i" else arr
             for name, arr in loaded.items()}
    state.update(_train_rows(frames["train_rows"], m), strategies_=strategies,
                 stability_=strategies.select("strategy", "stability"), embedding_model_=model,
                 embedding_dim_=embedding_dim, vocabulary_=vocabulary, threshold_=threshold, threshold_rule_=rule,
                 n_strategies_=n_strategies, names_=names, seed_agreement_=seed_agreement,
                 action_tools_=_action_tools(config.get("action_tools"), cfg), kinds_=kinds,
                 task_calls_=_task_calls(config.get("task_calls"), cfg, params["task_calls"]),
                 task_tokens_=_task_tokens(config.get("task_tokens", []), cfg),
                 **_task_tested(config.get("task_tested"), cfg), **_task_test(config.get("task_test"), cfg))
    space = restore({**params, "embedder": embedder if embedder is not None else model, "cache_dir": cache_dir,
                     "progress": progress, "ignore_tools": _ignore_tools(config.get("ignore_tools"), cfg),
                     "by": by}, state)
    try:
        emb = space._embedder()
    except MechanismError as exc:
        raise _Refusal(f"cannot make the embedder: {exc}", cfg, "embedding_model") from None
    if emb.model_id != model:
        raise _Refusal(f"space was fitted with embedding model `{model[:80]}`, got `{str(emb.model_id)[:80]}`",
                       cfg, "embedding_model")
    return space
