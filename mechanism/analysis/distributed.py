"""Apply a saved strategy space to shards on a Ray cluster (``pip install "mechanism[ray]"``).

The RL stacks that produce rollouts by the million (verl, OpenRLHF, SkyRL, ...) already run
on Ray, so the toolkit uses it rather than an engine of its own: :func:`assign_shards_ray`
builds a ``ray.data`` dataset with one item per shard, and a pool of actors, each holding
the saved space, reads and assigns one shard per batch. The space travels as its files'
bytes (:func:`mechanism.analysis.parallel.space_files`): workers need not see the driver's disk, only
the shards (a shared file system or a mounted bucket); nothing is pickled into the space.

The per-shard work is the one :func:`mechanism.analysis.parallel.assign_shards` does in local worker
processes, and the results are put back in file order, so the labels are identical to a
single-process run. Collect shares from them with :func:`mechanism.analysis.parallel.strategy_shares`.

Recipe (every checkpoint's rollouts, one folder each)::

    import ray, polars as pl
    from mechanism.analysis.distributed import assign_shards_ray
    from mechanism.analysis.parallel import strategy_shares

    ray.init(address="auto")
    labels = pl.concat([assign_shards_ray("space/", f"rollouts/step-{s}/", arm=f"step-{s}")
                        for s in (100, 200, 400)])
    shares = strategy_shares(labels)        # arm (= checkpoint), strategy, n, share, ci_low, ci_high
"""
from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from mechanism.analysis.parallel import (
    ReadArgs,
    ShardTask,
    assign_task,
    collect_shards,
    load_space,
    shard_paths,
    shard_read_args,
    space_digest,
    space_files,
)
from mechanism.core.errors import MechanismError, ReadReport, SkippedRecord

__all__ = ["assign_shards_ray"]


def _require_ray() -> Any:
    try:
        import ray  # noqa: PLC0415 - ray: the optional [ray] extra
        import ray.data  # noqa: PLC0415 - ray: the optional [ray] extra
    except ImportError:
        raise MechanismError('the Ray path needs Ray: pip install "mechanism[ray]"') from None
    return ray


def _report_json(rep: ReadReport) -> str:
    # every field of the report, so that the Ray path loses nothing the in-process path keeps
    return json.dumps(dataclasses.asdict(rep))


def _report_from_json(text: str) -> ReadReport:
    d = json.loads(text)
    return ReadReport(**{**d, "skipped": [SkippedRecord(**s) for s in d["skipped"]]})


class _AssignActor:
    """A Ray actor: loads the shipped space once (its process keeps it) and assigns one
    shard per batch."""

    def __init__(self, files: Mapping[str, bytes], space_key: str, format: str, options: Mapping[str, Any],
                 cache_dir: str | None, text: bool) -> None:
        # an actor holds the CPUs Ray gave it: its reads stay in its own process, whatever the
        # shard's size (mechanism.readers._parts would otherwise start a worker per core)
        os.environ["MECHANISM_READ_WORKERS"] = "1"
        self.files = dict(files)
        self.space_key = space_key
        self.read = ReadArgs(format, dict(options))  # checked by the driver
        self.cache_dir = cache_dir
        self.text = text
        load_space(self._task(-1, ""))  # hashed and loaded here, once per actor, not once per shard

    def _task(self, index: int, path: str) -> ShardTask:
        return ShardTask(index=index, path=path, read=self.read, space_files=self.files, space_key=self.space_key,
                     cache_dir=self.cache_dir, text=self.text)

    def __call__(self, batch: Any) -> Any:
        out = []
        for index, path in zip(batch["index"].to_pylist(), batch["path"].to_pylist()):
            table, rep = assign_task(self._task(int(index), str(path)))
            body = table.with_columns(pl.lit(int(index), pl.Int64).alias("_shard"),
                                      pl.int_range(table.height, dtype=pl.Int64).alias("_row"),
                                      pl.lit(None, pl.String).alias("_report"))
            head = pl.DataFrame({"_shard": [int(index)], "_row": [-1], "_report": [_report_json(rep)]},
                                schema={"_shard": pl.Int64, "_row": pl.Int64, "_report": pl.String})
            out.append(pl.concat([head, body], how="diagonal"))
        return pl.concat(out, how="diagonal_relaxed").to_arrow(compat_level=pl.CompatLevel.oldest())


def assign_shards_ray(space: str | os.PathLike, path_or_paths: str | os.PathLike | Sequence[str | os.PathLike],
                      format: str = "auto", *, concurrency: int | None = None, num_cpus: float = 1.0,
                      cache_dir: str | os.PathLike | None = None, text: bool = False, report: bool = False,
                      **options: Any) -> pl.DataFrame | tuple[pl.DataFrame, ReadReport]:
    """Apply a saved strategy space to every shard with ``ray.data`` on the connected Ray cluster.

    Parameters
    ----------
    space
        Folder written by :meth:`StrategySpace.save`, on the driver; its files are read and
        hashed once and shipped, and each actor loads the space once.
    path_or_paths, format
        As for :func:`mechanism.read`, per shard; the shard paths must be readable by the
        workers.
    concurrency
        Actors in the pool (default: the cluster's CPUs divided by ``num_cpus``, at most
        one per shard).
    num_cpus
        CPUs reserved per actor.
    cache_dir
        Embedding and segmentation cache on the workers (``None``: none).
    text
        Also keep each row's ``rendering`` and ``moves``.
    report
        Also return the merged read report.
    **options
        :func:`mechanism.read`'s keyword options, as :func:`mechanism.analysis.parallel.assign_shards`
        takes them (checked once, on the driver; an unknown one is an :class:`InputError`
        naming it). Ray ships them with cloudpickle, so a ``scorer`` function may be a lambda.

    Returns
    -------
    polars.DataFrame
        What :func:`mechanism.analysis.parallel.assign_shards` returns, in file order: labels identical
        to a single-process run. Ray is started locally when not yet initialised.
    """
    ray = _require_ray()
    files = space_files(space)
    read_args = shard_read_args(format, options)
    paths = shard_paths(path_or_paths)
    tasks = [ShardTask(index=i, path=str(Path(p).resolve()), read=read_args) for i, p in enumerate(paths)]
    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=False)
    if concurrency is None:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        concurrency = max(1, min(len(tasks), int(cpus // max(num_cpus, 1e-9)) or 1))
    ds = ray.data.from_items([{"index": t.index, "path": t.path} for t in tasks])
    ds = ds.map_batches(
        _AssignActor, batch_size=1, batch_format="pyarrow", concurrency=concurrency, num_cpus=num_cpus,
        fn_constructor_kwargs={"files": files, "space_key": space_digest(files), "format": read_args.format,
                               "options": dict(read_args.options),
                               "cache_dir": None if cache_dir is None else str(cache_dir), "text": text})
    parts = [pl.from_arrow(t) for t in ray.get(ds.to_arrow_refs())]
    frame = pl.concat([p for p in parts if p.height], how="diagonal_relaxed").sort("_shard", "_row")
    results: list[tuple[pl.DataFrame, ReadReport]] = []
    by_shard = frame.partition_by("_shard", as_dict=True, maintain_order=True)  # one pass, not one per shard
    for i in range(len(tasks)):
        shard = by_shard.get((i,), frame.clear())
        head = shard.filter(pl.col("_row") == -1)
        if head.height != 1:
            raise MechanismError(f"the Ray pipeline returned no result for shard {tasks[i].path}")
        body = shard.filter(pl.col("_row") >= 0).drop("_shard", "_row", "_report")
        results.append((body, _report_from_json(head["_report"][0])))
    cols = ["arm", "question_id", "sample_id", "strategy", "distance", "outlier"] + (
        ["rendering", "moves"] if text else [])
    schema = {"arm": pl.String, "question_id": pl.String, "sample_id": pl.Int64, "strategy": pl.Int64,
              "distance": pl.Float64, "outlier": pl.Boolean, "rendering": pl.String, "moves": pl.String}
    results = [(b.select(cols).cast({c: schema[c] for c in cols}), r) for b, r in results]
    return collect_shards(results, tasks, report)
