"""Shards in worker processes: n_jobs=2 gives byte-identical tables to n_jobs=1, and the
same labels as one read and one transform of the whole folder."""
from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import mechanism.analysis.parallel as parallel
from mechanism.analysis.parallel import (
    RUN_COLUMNS,
    assign_shards,
    read_shards,
    render_shards,
    scan_shards,
    space_files,
    strategy_shares,
)
from mechanism.analysis.passkt import pass_at_kt
from mechanism.analysis.segmentation import render
from mechanism.analysis.strategy_space import StrategySpace
from mechanism.core.errors import InputError
from mechanism.datasets.simulation import simulate
from mechanism.readers import read


def _bytes(frame: pl.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.write_parquet(buf)
    return buf.getvalue()


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> tuple[Path, pl.DataFrame]:
    """Six shards: canonical parquet and JSONL files, each holding some of the questions of both arms."""
    runs = simulate(n_questions=24, n_samples=4, arms=("base", "rl"), random_state=1, progress=False).runs
    folder = tmp_path_factory.mktemp("shards")
    qids = sorted(runs["question_id"].unique().to_list())
    for i in range(6):
        part = runs.filter(pl.col("question_id").is_in(qids[i::6]))
        if i % 2:
            part.write_parquet(folder / f"shard-{i}.parquet")
        else:
            with open(folder / f"shard-{i}.jsonl", "w") as fh:
                for rec in part.to_dicts():
                    fh.write(json.dumps(rec) + "\n")
    return folder, runs


@pytest.fixture(scope="module")
def saved_space(shards, tmp_path_factory) -> Path:
    folder, _ = shards
    space = StrategySpace(embedder="hashing-64", random_state=0, progress=False).fit(read(folder))
    return space.save(tmp_path_factory.mktemp("space") / "space")


def test_read_shards_equals_one_read_and_is_identical_for_two_workers(shards):
    folder, _ = shards
    one, rep1 = read_shards(folder, n_jobs=1, report=True)
    two, rep2 = read_shards(folder, n_jobs=2, report=True)
    assert _bytes(one) == _bytes(two)
    assert one.equals(read(folder))
    assert rep1.rows_in == rep2.rows_in == one.height == rep1.rows_kept


def test_render_and_assign_shards_identical_for_two_workers_and_equal_to_one_process(shards, saved_space):
    folder, _ = shards
    r1, r2 = render_shards(folder, n_jobs=1), render_shards(folder, n_jobs=2)
    assert _bytes(r1) == _bytes(r2)
    assert r1.equals(render(read(folder)))
    a1, a2 = assign_shards(saved_space, folder, n_jobs=1), assign_shards(saved_space, folder, n_jobs=2)
    assert _bytes(a1) == _bytes(a2)
    whole = StrategySpace.load(saved_space, progress=False).transform(read(folder))
    np.testing.assert_array_equal(a1["strategy"].to_numpy(), whole)
    assert a1.columns == ["arm", "question_id", "sample_id", "strategy", "distance", "outlier"]


def test_a_shard_assigned_in_slices_is_the_shard_assigned_whole(shards, saved_space, monkeypatch):
    # a worker assigns ASSIGN_BATCH rows at a time (bounded memory); slices of 7 rows, across
    # questions and arms, give the same table, byte for byte, as the whole shard at once
    folder, _ = shards
    text = {"text": True}
    whole = assign_shards(saved_space, folder, n_jobs=1, **text)
    monkeypatch.setattr(parallel, "ASSIGN_BATCH", 7)
    sliced = assign_shards(saved_space, folder, n_jobs=1, **text)
    assert _bytes(sliced) == _bytes(whole)
    assert min(pl.read_parquet(p).height for p in folder.glob("*.parquet")) > 7  # more than one slice each


def test_streamed_read_writes_parts_and_statistics_need_no_steps(shards, tmp_path):
    folder, _ = shards
    lazy = read_shards(folder, n_jobs=2, out=tmp_path / "parts")
    assert isinstance(lazy, pl.LazyFrame)
    assert len(list((tmp_path / "parts").glob("part-*.parquet"))) == 6
    whole = read(folder)
    assert lazy.collect().equals(whole)
    light = lazy.select(RUN_COLUMNS).collect()  # the steps are never read
    assert "steps" not in light.columns
    assert pass_at_kt(light, k=[1, 2], t=[0, 5], ci=None).equals(pass_at_kt(whole, k=[1, 2], t=[0, 5], ci=None))
    assert scan_shards(tmp_path / "parts").select(pl.len()).collect().item() == whole.height
    with pytest.raises(InputError, match="part file"):
        read_shards(folder, out=tmp_path / "parts")


def test_duplicates_across_shards_raise_or_are_skipped_and_reported(shards, tmp_path):
    folder, runs = shards
    first = runs.head(3)
    first.write_parquet(tmp_path / "a.parquet")
    runs.slice(2, 3).write_parquet(tmp_path / "b.parquet")  # row 2 again
    with pytest.raises(InputError, match=r"b\.parquet.*duplicate.*a\.parquet"):
        read_shards(tmp_path, n_jobs=1)
    table, rep = read_shards(tmp_path, errors="skip", report=True, n_jobs=1)
    assert table.height == 5 and rep.rows_in == 6 and rep.rows_kept == 5 and len(rep.skipped) == 1
    lazy, rep = read_shards(tmp_path, errors="skip", report=True, out=tmp_path / "parts")
    assert lazy.collect().equals(table)


def test_strategy_shares_weigh_questions_equally_with_intervals():
    t = pl.DataFrame({"arm": ["a"] * 6 + ["b"] * 2, "question_id": ["q1"] * 4 + ["q2"] * 2 + ["q1", "q2"],
                      "strategy": [0, 0, 0, 1, 1, 1, 0, -1]})
    out = strategy_shares(t, n_boot=200)
    a = out.filter(pl.col("arm") == "a").sort("strategy")
    np.testing.assert_allclose(a["share"].to_numpy(), [0.0, (0.75 + 0) / 2, (0.25 + 1) / 2])
    assert out.group_by("arm").agg(pl.col("share").sum())["share"].to_list() == pytest.approx([1.0, 1.0])
    assert (a["ci_low"] <= a["share"] + 1e-12).all() and (a["share"] <= a["ci_high"] + 1e-12).all()
    assert out.equals(strategy_shares(t.lazy(), n_boot=200))


def test_bad_arguments_give_one_line_errors(shards, tmp_path):
    folder, _ = shards
    with pytest.raises(InputError, match="n_jobs"):
        read_shards(folder, n_jobs=0)
    with pytest.raises(InputError, match="space.json"):
        assign_shards(tmp_path, folder)
    with pytest.raises(InputError, match="space.json"):
        space_files(tmp_path)


def test_parts_written_by_read_shards_are_read_back_whole(shards, saved_space, tmp_path):
    folder, _ = shards
    read_shards(folder, out=tmp_path / "parts")
    from_parts = assign_shards(saved_space, tmp_path / "parts", format="parts")
    assert from_parts.equals(assign_shards(saved_space, folder))
    assert read_shards(tmp_path / "parts", format="parts").equals(read(folder))
    with pytest.raises(InputError, match="format"):
        read_shards(folder, format="nope")


def test_a_bad_record_in_a_worker_raises_the_one_line_error_naming_file_and_line(shards, tmp_path):
    folder, runs = shards
    runs.head(4).write_parquet(tmp_path / "a.parquet")
    (tmp_path / "b.jsonl").write_text('{"arm": "base", "question_id": "q", "sample_id": 0}\n{not json\n')
    with pytest.raises(InputError, match=r"b\.jsonl.*line") as info:
        read_shards(tmp_path, format="canonical", n_jobs=2)
    assert "\n" not in str(info.value)
