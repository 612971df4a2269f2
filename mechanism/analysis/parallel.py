"""Work on a folder of shards in worker processes: read, segment, and apply a saved space.

RL runs write their rollouts as many files (one per checkpoint, per worker, per step). Each
function here treats every file as a shard, does the same work on each shard (in this
process with ``n_jobs=1``, in ``n_jobs`` worker processes otherwise) and puts the results
together in the order of the files, so the output does not depend on ``n_jobs``:
``n_jobs=2`` gives byte-identical tables to ``n_jobs=1``.

- :func:`read_shards`: :func:`mechanism.read` per shard; with ``out=`` each shard's table is
  written as a parquet part and a lazy frame over the parts comes back, so no process ever
  holds more than one shard's observations.
- ``format="parts"`` reads the parts :func:`read_shards` wrote (canonical tables, read whole
  with polars and checked with :func:`mechanism.core.schema.validate`), so the steps after the
  first read do not parse the records again.
- :func:`render_shards`: read and segment (:func:`mechanism.analysis.segmentation.render`) per shard.
- :func:`assign_shards`: read and assign each shard to a saved strategy space (its files
  read and hashed once by the caller, the space loaded once per worker process);
  :func:`strategy_shares` (:mod:`mechanism.analysis.shares`, named here too) then gives each arm's
  shares with intervals.

Every shard function takes :func:`mechanism.read`'s keyword options (``arm``, ``columns``,
``errors``, ``where``, ``answer_pattern``, ``scorer``, ``unanswered``, ``round_tools``:
:func:`read_option_names`) with the same names and meanings, checks them once before any
worker starts, and gives each shard's read all of them: the table is what
:func:`mechanism.read` gives on each shard, concatenated, and so is the merged report.

A shard is read on its own, so two things differ from one :func:`mechanism.read` of the
whole folder: rows without a ``sample_id`` are numbered within their shard (give sample ids
when one (arm, question) spans shards), and a key repeated in another shard is reported as
a duplicate without a line number. Workers are started with ``spawn`` (safe with polars'
threads) and share the cores among them (``OMP_NUM_THREADS`` and ``POLARS_MAX_THREADS`` are
set to ``cpu_count // n_jobs`` in each).
"""
from __future__ import annotations

import contextlib
import hashlib
import inspect
import os
import pickle
import tempfile
import warnings
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from mechanism.analysis.segmentation import render
from mechanism.analysis.shares import strategy_shares
from mechanism.core.errors import InputError, ReadReport, ReadWarning, SkippedRecord
from mechanism.core.schema import OPTIONAL_COLUMNS, REQUIRED_COLUMNS, validate
from mechanism.readers import FORMATS, check_read_options, input_paths, read

__all__ = ["shard_paths", "read_shards", "scan_shards", "render_shards", "assign_shards", "strategy_shares",
           "space_files", "space_digest", "read_option_names", "RUN_COLUMNS", "PARTS"]

# The format name of the parquet parts read_shards writes (canonical tables it validated).
PARTS = "parts"
# What PASS@(k,T), the reweighting split and the shares need: never the steps.
RUN_COLUMNS = ("arm", "question_id", "sample_id", "correct", "n_rounds")
_KEY = ["arm", "question_id", "sample_id"]
_ASSIGN_COLUMNS = ("arm", "question_id", "sample_id", "strategy", "distance", "outlier")


def shard_paths(path_or_paths: str | os.PathLike | Sequence[str | os.PathLike]) -> list[Path]:
    """The shard files of a folder (its trajectory files, sorted by name) or a list of paths,
    exactly as :func:`mechanism.read` would visit them."""
    return input_paths(path_or_paths)


def _n_workers(n_jobs: int, n_tasks: int) -> int:
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0 or n_jobs < -1:
        raise InputError(f"`n_jobs` must be a positive integer or -1 (all cores), got {n_jobs!r}", field="n_jobs")
    cores = os.cpu_count() or 1
    return max(1, min(cores if n_jobs == -1 else int(n_jobs), n_tasks))


@contextlib.contextmanager
def _thread_env(threads: int) -> Iterator[None]:
    """Thread limits the spawned workers inherit (read by torch, BLAS and polars at import)."""
    names = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "POLARS_MAX_THREADS")
    saved = {n: os.environ.get(n) for n in names}
    os.environ.update({n: str(threads) for n in names})
    try:
        yield
    finally:
        for n, v in saved.items():
            if v is None:
                os.environ.pop(n, None)
            else:
                os.environ[n] = v


def _map(fn: Any, tasks: list[Any], n_jobs: int) -> list[Any]:
    """``[fn(t) for t in tasks]``, in worker processes when ``n_jobs`` asks for them; results in
    task order either way."""
    workers = _n_workers(n_jobs, len(tasks))
    if workers == 1:
        return [fn(t) for t in tasks]
    threads = max(1, (os.cpu_count() or 1) // workers)
    with _thread_env(threads), ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(fn, t) for t in tasks]  # workers start here, inside the thread limits
        return [f.result() for f in futures]


# ----------------------------------------------------------------------------- read options
# mechanism.read's keywords that are not options of a shard's read: the shard functions
# return their own report, and bars drawn from several processes would garble each other.
_NOT_SHARD_OPTIONS = {"report": "the shard functions take `report=` themselves",
                      "progress": "worker processes draw no progress bars"}


def read_option_names() -> tuple[str, ...]:
    """The keyword options of :func:`mechanism.read` that every shard function takes and
    passes to each shard's read, with the same names and meanings (all but ``report`` and
    ``progress``): ``arm``, ``columns``, ``errors``, ``where``, ``answer_pattern``,
    ``scorer``, ``unanswered``, ``round_tools`` and any that :func:`mechanism.read` gains."""
    return tuple(name for name, p in inspect.signature(read).parameters.items()
                 if p.kind is inspect.Parameter.KEYWORD_ONLY and name not in _NOT_SHARD_OPTIONS)


@dataclass(frozen=True)
class ReadArgs:
    """How every shard is read: the format and :func:`mechanism.read`'s keyword options
    (checked once, by :func:`shard_read_args`)."""

    format: str = "auto"
    options: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def errors(self) -> str:
        return self.options.get("errors", "raise")


def shard_read_args(format: str, options: Mapping[str, Any]) -> ReadArgs:
    """``format`` and ``options`` checked once, before any worker starts, with the reader's
    own checks and one-line errors that name the option."""
    names = read_option_names()
    for name in options:
        if name not in names:
            why = _NOT_SHARD_OPTIONS.get(name, "not an option of mechanism.read")
            raise InputError(f"unknown read option `{name}` ({why}); the shard functions take "
                             f"{', '.join(names)}", field=name)
    if format not in ("auto", PARTS, *FORMATS):
        raise InputError(f"unknown format {format!r}; expected auto, {PARTS} or one of {', '.join(FORMATS)}",
                         field="format")
    defaults = {n: p.default for n, p in inspect.signature(read).parameters.items() if n in names}
    # what differs from read's defaults (a polars expression is never compared with ==)
    given = {n: v for n, v in options.items()
             if not (v is defaults[n] or (isinstance(v, str) and isinstance(defaults[n], str) and v == defaults[n]))}
    if format == PARTS:
        for name in given:
            if name not in ("arm", "errors"):
                raise InputError(f"`{name}` does not apply to format={PARTS!r}: the parts hold tables read "
                                 "already (give it to the read_shards call that wrote them)", field=name)
    # the reader's own checks, once here rather than once per shard in the workers
    check_read_options("auto" if format == PARTS else format, **given)
    if given.get("columns") is not None:
        given["columns"] = dict(given["columns"])
    return ReadArgs(format, given)


def _check_picklable(read_args: ReadArgs) -> None:
    """Worker processes are spawned: each option they get must pickle."""
    for name, value in read_args.options.items():
        try:
            pickle.dumps(value)
        except Exception:  # noqa: BLE001 - lambdas and local functions: pickle raises several types
            raise InputError(f"`{name}` cannot be sent to worker processes (a {type(value).__name__} that does "
                             "not pickle, such as a lambda or a local function): define it at module level, "
                             "or use n_jobs=1", field=name) from None


# ----------------------------------------------------------------------------- tasks
@dataclass(frozen=True)
class ShardTask:
    index: int
    path: str
    read: ReadArgs
    out: str | None = None
    space: str | None = None          # folder of a saved space (this machine)
    space_files: Mapping[str, bytes] | None = field(default=None, hash=False)  # or its files, shipped
    space_key: str | None = None      # digest of the space's files (space_digest), computed once by the caller
    cache_dir: str | None = None
    text: bool = False


def _read_one(task: ShardTask) -> tuple[pl.DataFrame, ReadReport]:
    """One shard through :func:`mechanism.read`; its :class:`ReadWarning` messages stay in the
    report (the caller warns once, for every shard, in its own process)."""
    a = task.read
    if a.format == PARTS:  # our own parts: canonical tables, read whole and checked again

        table = validate(pl.read_parquet(task.path), source=task.path)
        if a.options.get("arm") is not None:
            table = table.with_columns(pl.lit(a.options["arm"], pl.String).alias("arm"))
        return table, ReadReport(rows_in=table.height, rows_kept=table.height, formats={task.path: PARTS})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReadWarning)
        return read(task.path, format=a.format, report=True, **a.options)


def _read_task(task: ShardTask) -> tuple[pl.DataFrame | None, pl.DataFrame, ReadReport]:
    """One shard read: (table or None when written to ``out``, its keys, report)."""
    table, rep = _read_one(task)
    keys = table.select(_KEY)
    if task.out is None:
        return table, keys, rep
    table.write_parquet(_part_path(task.out, task.index))
    return None, keys, rep


def _part_path(out: str | os.PathLike, index: int) -> Path:
    return Path(out) / f"part-{index:05d}.parquet"


def _render_task(task: ShardTask) -> tuple[pl.DataFrame, ReadReport]:
    table, rep = _read_one(task)
    return render(table, cache_dir=task.cache_dir), rep


_SPACES: OrderedDict[str, Any] = OrderedDict()  # saved spaces loaded in this process, by content
_SPACES_KEPT = 2  # the most recently used; a loop over many spaces does not keep them all


def space_digest(files: Mapping[str, bytes]) -> str:
    """A digest of a saved space's files (:func:`space_files`): the key a worker keeps the
    loaded space under, so that it loads each space once, whatever the number of shards."""
    return hashlib.sha256(b"".join(hashlib.sha256(n.encode() + b"\0" + files[n]).digest()
                                   for n in sorted(files))).hexdigest()


def load_space(task: ShardTask) -> Any:
    """The task's saved space, loaded (and its files read and hashed) once per process: the
    caller hashed the files once (``task.space_key``); a worker that already holds a space
    under that key reads nothing."""
    from mechanism.analysis.strategy_space import StrategySpace  # noqa: PLC0415 - strategy_space loads scikit-learn and scipy; only assign_shards needs it

    key = f"{task.space_key}:{task.cache_dir}"
    if key in _SPACES:
        _SPACES.move_to_end(key)
        return _SPACES[key]
    files = task.space_files if task.space_files is not None else space_files(task.space)
    if space_digest(files) != task.space_key:
        raise InputError("the saved strategy space changed while shards were being assigned",
                         source=str(task.space or "space"))
    if task.space is not None:
        space = StrategySpace.load(task.space, cache_dir=task.cache_dir, progress=False)
    else:  # shipped as bytes: lay the files out in a private folder of this worker, for the load only
        with tempfile.TemporaryDirectory(prefix="mechanism-space-") as folder:
            for name, data in files.items():
                (Path(folder) / name).write_bytes(data)
            space = StrategySpace.load(folder, cache_dir=task.cache_dir, progress=False)
    _SPACES[key] = space
    while len(_SPACES) > _SPACES_KEPT:
        _SPACES.popitem(last=False)
    return space


# A shard is assigned this many rows at a time: every row's strategy is its own (the nearest
# fitted row), so the slices give the same table as the whole, and a worker's rendering,
# embedding and neighbour arrays stay those of one slice (a million rows on 2 workers: the
# largest worker's peak 1.45 -> 0.93 GB, bench_scale.py).
ASSIGN_BATCH = 16_384


def assign_task(task: ShardTask) -> tuple[pl.DataFrame, ReadReport]:
    table, rep = _read_one(task)
    space = load_space(task)
    cols = list(_ASSIGN_COLUMNS) + (["rendering", "moves"] if task.text else [])
    parts = [space.assign(table.slice(start, ASSIGN_BATCH)).select(cols)
             for start in range(0, max(table.height, 1), ASSIGN_BATCH)]
    return pl.concat(parts) if len(parts) > 1 else parts[0], rep


# ----------------------------------------------------------------------------- public
def _tasks(path_or_paths: Any, format: str, options: Mapping[str, Any], n_jobs: int, **extra: Any) -> list[ShardTask]:
    """One task per shard, the read options checked once for all of them."""
    read_args = shard_read_args(format, options)
    paths = shard_paths(path_or_paths)
    if _n_workers(n_jobs, len(paths)) > 1:
        _check_picklable(read_args)
    return [ShardTask(index=i, path=str(p), read=read_args, **extra) for i, p in enumerate(paths)]


def _merge(reports: list[ReadReport]) -> ReadReport:
    rep = ReadReport()
    for r in reports:
        rep.merge(r)
    return rep


def _cross_shard_duplicates(keys: list[pl.DataFrame], tasks: list[ShardTask], errors: str,
                            rep: ReadReport) -> dict[int, np.ndarray]:
    """Keys repeated across shards (each shard is already free of repeats): raise on the
    first, or report each and return, per shard, the rows to drop."""
    sizes = [k.height for k in keys]
    if sum(sizes) == 0:
        return {}
    frame = pl.concat(keys).with_columns(
        _shard=pl.Series(np.repeat(np.arange(len(keys)), sizes)),
        _row=pl.Series(np.concatenate([np.arange(n) for n in sizes]) if sizes else np.zeros(0, np.int64)))
    first = pl.struct(_KEY).is_first_distinct()
    frame = frame.with_columns(_first=first)
    if frame["_first"].all():
        return {}
    firsts = frame.filter(pl.col("_first")).select(*_KEY, _first_shard="_shard")
    dups = frame.filter(~pl.col("_first")).join(firsts, on=_KEY, how="left", maintain_order="left")
    drop: dict[int, list[int]] = {}
    for d in dups.iter_rows(named=True):
        key = (d["arm"], d["question_id"], d["sample_id"])
        reason = (f"duplicate (arm, question_id, sample_id) = {key!r}, first seen in "
                  f"{tasks[d['_first_shard']].path}")
        source = tasks[d["_shard"]].path
        if errors == "raise":
            raise InputError(reason, source=source, field="sample_id")
        rep.skipped.append(SkippedRecord(source, None, "sample_id", reason))
        drop.setdefault(d["_shard"], []).append(d["_row"])
    return {s: np.array(rows, dtype=np.int64) for s, rows in drop.items()}


def _without(frame: pl.DataFrame, rows: np.ndarray | None) -> pl.DataFrame:
    if rows is None or not len(rows):
        return frame
    keep = np.ones(frame.height, dtype=bool)
    keep[rows] = False
    return frame.filter(pl.Series(keep))


def read_shards(path_or_paths: str | os.PathLike | Sequence[str | os.PathLike], format: str = "auto", *,
                n_jobs: int = 1, out: str | os.PathLike | None = None, report: bool = False,
                **options: Any) -> pl.DataFrame | pl.LazyFrame | tuple[Any, ReadReport]:
    """Read a folder (or list) of trajectory files, one shard per file, in ``n_jobs`` processes.

    Parameters
    ----------
    path_or_paths, format
        As for :func:`mechanism.read`, applied to each shard.
    n_jobs
        Worker processes (``-1``: one per core; ``1``: this process).
    out
        A folder: each shard's canonical table is written there as ``part-NNNNN.parquet``
        and a lazy frame over the parts is returned (:func:`scan_shards`); no process holds
        more than one shard. ``None``: return the table.
    report
        Also return the merged :class:`~mechanism.core.errors.ReadReport` (the shards' reports in
        file order, plus the keys repeated across shards).
    **options
        :func:`mechanism.read`'s keyword options, with the same names and meanings, applied
        to each shard: ``arm``, ``columns`` (a text label maps with ``{"correct":
        "status:CORRECT"}``), ``errors``, ``where``, ``answer_pattern``, ``scorer``,
        ``unanswered``, ``round_tools`` (:func:`read_option_names`). They are checked once,
        before any worker starts; an unknown one is an :class:`InputError` naming it. With
        ``n_jobs > 1`` a function given (``scorer=``) must pickle (defined at module level).

    Returns
    -------
    polars.DataFrame or polars.LazyFrame, or (that, ReadReport)
        The shards' tables in file order (identical for every ``n_jobs``): what
        :func:`mechanism.read` gives on each shard, concatenated. Its
        :class:`~mechanism.core.errors.ReadWarning` messages are warned once, in this process.
    """
    tasks = _tasks(path_or_paths, format, options, n_jobs, out=None if out is None else str(out))
    if out is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
        stale = sorted(Path(out).glob("part-*.parquet"))
        if stale:
            raise InputError(f"folder already holds {len(stale)} part file(s); give an empty folder", source=str(out),
                             field="out")
    results = _map(_read_task, tasks, n_jobs)
    if out is None:
        return collect_shards([(r[0], r[2]) for r in results], tasks, report)
    rep = _merge([r[2] for r in results])
    drop = _cross_shard_duplicates([r[1] for r in results], tasks, tasks[0].read.errors, rep)
    for i, rows in drop.items():  # rewrite only the parts that lost a duplicate
        part = _part_path(out, i)
        _without(pl.read_parquet(part), rows).write_parquet(part)
    _finish(rep, drop, stacklevel=3)
    lazy = scan_shards(out)
    return (lazy, rep) if report else lazy


def scan_shards(folder: str | os.PathLike) -> pl.LazyFrame:
    """A lazy frame over the parts :func:`read_shards` wrote (in shard order). Select the
    columns a statistic needs (e.g. :data:`RUN_COLUMNS`) and only those are read: PASS@(k,T)
    and the reweighting split never load the steps."""
    parts = sorted(Path(folder).glob("part-*.parquet"))
    if not parts:
        raise InputError("no part-*.parquet files here", source=str(folder))
    # a part lacks an optional column none of its rows fill (an empty shard has none): the
    # columns of all parts (read from their footers), null where a part has none
    schema: dict[str, pl.DataType] = {}
    for part in parts:
        for name, dtype in pl.read_parquet_schema(part).items():
            schema.setdefault(name, dtype)
    return pl.scan_parquet(parts, schema={n: schema[n] for n in _canonical_order(schema)}, missing_columns="insert")


def _canonical_order(names: Any) -> list[str]:
    """Column names in the canonical table's order (the others after them, as they come)."""
    names = list(dict.fromkeys(names))
    known = [c for c in (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS) if c in names]
    return known + [c for c in names if c not in known]


def _concat(frames: list[pl.DataFrame]) -> pl.DataFrame:
    """The shards' tables one after another. A shard's table lacks an optional column that
    none of its rows fill (an empty shard has none): it is null there, and the columns come
    in the canonical order, as in one :func:`mechanism.read` of all the files."""
    if all(f.columns == frames[0].columns for f in frames):
        return pl.concat(frames, how="vertical")
    out = pl.concat(frames, how="diagonal")
    return out.select(_canonical_order(out.columns))


def render_shards(path_or_paths: str | os.PathLike | Sequence[str | os.PathLike], format: str = "auto", *,
                  n_jobs: int = 1, cache_dir: str | os.PathLike | None = None, report: bool = False,
                  **options: Any) -> pl.DataFrame | tuple[pl.DataFrame, ReadReport]:
    """Read and segment each shard in ``n_jobs`` processes: the rows of
    :func:`mechanism.analysis.segmentation.render` (rendering, moves, strategy descriptors) in file
    order, without the steps.

    Parameters
    ----------
    path_or_paths, format
        As for :func:`mechanism.read`, applied to each shard.
    n_jobs
        Worker processes (``-1``: one per core; ``1``: this process).
    cache_dir
        The segmentation cache (safe to share: its entries are written atomically).
    report
        Also return the merged read report.
    **options
        :func:`mechanism.read`'s keyword options, with the same names and meanings, applied
        to each shard: ``arm``, ``columns`` (a text label maps with ``{"correct":
        "status:CORRECT"}``), ``errors``, ``where``, ``answer_pattern``, ``scorer``,
        ``unanswered``, ``round_tools`` (:func:`read_option_names`). They are checked once,
        before any worker starts; an unknown one is an :class:`InputError` naming it. With
        ``n_jobs > 1`` a function given (``scorer=``) must pickle (defined at module level).
    """
    tasks = _tasks(path_or_paths, format, options, n_jobs, cache_dir=None if cache_dir is None else str(cache_dir))
    results = _map(_render_task, tasks, n_jobs)
    return collect_shards(results, tasks, report)


def collect_shards(results: list[tuple[pl.DataFrame, ReadReport]], tasks: list[ShardTask], report: bool) -> Any:
    rep = _merge([r[1] for r in results])
    drop = _cross_shard_duplicates([r[0].select(_KEY) for r in results], tasks, tasks[0].read.errors, rep)
    table = _concat([_without(r[0], drop.get(i)) for i, r in enumerate(results)])
    _finish(rep, drop, stacklevel=4)
    return (table, rep) if report else table


def _finish(rep: ReadReport, drop: Mapping[int, np.ndarray], *, stacklevel: int) -> None:
    """The merged report's count of kept rows (the shards' own, less the keys repeated
    across shards), and its warnings, warned here as :func:`mechanism.read` warns them."""
    rep.rows_kept -= sum(len(rows) for rows in drop.values())
    for message in rep.warnings:
        warnings.warn(message, ReadWarning, stacklevel=stacklevel)


def space_files(folder: str | os.PathLike) -> dict[str, bytes]:
    """The files of a saved strategy space, by name: what is shipped to workers that do not
    see this machine's disk (the space is loaded from them as from its folder, no pickle)."""
    folder = Path(folder)
    if not (folder / "space.json").is_file():
        raise InputError("no saved strategy space here (missing `space.json`)", source=str(folder))
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def assign_shards(space: str | os.PathLike, path_or_paths: str | os.PathLike | Sequence[str | os.PathLike],
                  format: str = "auto", *, n_jobs: int = 1, cache_dir: str | os.PathLike | None = None,
                  text: bool = False, report: bool = False,
                  **options: Any) -> pl.DataFrame | tuple[pl.DataFrame, ReadReport]:
    """Apply a saved strategy space to every shard, in ``n_jobs`` processes, without refitting.

    Parameters
    ----------
    space
        Folder written by :meth:`StrategySpace.save`. Its files are read and hashed once
        here; each worker process loads it once (on its first shard) and keeps it for the
        next ones.
    path_or_paths, format
        As for :func:`mechanism.read`, per shard; ``format="parts"`` for the parts
        :func:`read_shards` wrote.
    n_jobs
        Worker processes (``-1``: one per core).
    cache_dir
        Embedding and segmentation cache of the loaded space (shared by the workers).
    text
        Also keep each row's ``rendering`` and ``moves``.
    report
        Also return the merged read report.
    **options
        :func:`mechanism.read`'s keyword options, with the same names and meanings, applied
        to each shard: ``arm``, ``columns`` (a text label maps with ``{"correct":
        "status:CORRECT"}``), ``errors``, ``where``, ``answer_pattern``, ``scorer``,
        ``unanswered``, ``round_tools`` (:func:`read_option_names`). They are checked once,
        before any worker starts; an unknown one is an :class:`InputError` naming it. With
        ``n_jobs > 1`` a function given (``scorer=``) must pickle (defined at module level).

    Returns
    -------
    polars.DataFrame
        ``arm, question_id, sample_id, strategy`` (-1: outlier), ``distance``, ``outlier``
        (as :meth:`StrategySpace.assign`), one row per trajectory in file order.
    """
    key = space_digest(space_files(space))  # a clear error here rather than one per worker
    tasks = _tasks(path_or_paths, format, options, n_jobs, space=str(Path(space).resolve()), space_key=key,
                   cache_dir=None if cache_dir is None else str(cache_dir), text=text)
    results = _map(assign_task, tasks, n_jobs)
    return collect_shards(results, tasks, report)
