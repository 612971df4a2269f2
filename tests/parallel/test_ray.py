"""The Ray path (the optional extra ``mechanism[ray]``): a saved space applied to 20 shards on
a local 2-CPU Ray instance gives the single-process labels."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from mechanism.analysis.distributed import _report_from_json, _report_json, assign_shards_ray
from mechanism.analysis.parallel import assign_shards, strategy_shares
from mechanism.analysis.strategy_space import StrategySpace
from mechanism.core.errors import InputError, ReadReport, ReadWarning, SkippedRecord
from mechanism.datasets.simulation import simulate
from mechanism.readers import read

# after the imports: mechanism.analysis.distributed imports ray only when a cluster is used
ray = pytest.importorskip("ray", reason='Ray is not installed (pip install "mechanism[ray]"); CI installs it')


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=200 * 2**20,
             configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.mark.slow
def test_saved_space_on_20_shards_on_local_ray_equals_single_process(local_ray, tmp_path):
    runs = simulate(n_questions=40, n_samples=3, arms=("base", "rl"), random_state=2, progress=False).runs
    folder = tmp_path / "shards"
    folder.mkdir()
    qids = sorted(runs["question_id"].unique().to_list())
    for i in range(20):
        runs.filter(pl.col("question_id").is_in(qids[i::20])).write_parquet(folder / f"part-{i:02d}.parquet")
    whole = read(folder)
    space = StrategySpace(embedder="hashing-64", random_state=0, progress=False).fit(whole)
    saved = space.save(tmp_path / "space")

    labels, rep = assign_shards_ray(saved, folder, report=True)
    assert rep.rows_in == whole.height and not rep.skipped
    np.testing.assert_array_equal(labels["strategy"].to_numpy(), space.transform(whole))
    local = assign_shards(saved, folder, n_jobs=1)
    assert labels.equals(local)
    shares = strategy_shares(labels, n_boot=100)
    assert shares.group_by("arm").agg(pl.col("share").sum())["share"].to_list() == pytest.approx([1.0, 1.0])


def test_the_read_report_crosses_to_ray_workers_whole():
    rep = ReadReport(rows_in=5, rows_kept=3, skipped=[SkippedRecord("a.jsonl", 2, "answer", "bad")],
                     formats={"a.jsonl": "searchr1"}, notes=["n"], rows_filtered=1, unanswered=2, warnings=["w"])
    assert _report_from_json(_report_json(rep)) == rep


@pytest.mark.slow
def test_read_options_reach_the_ray_workers(local_ray, tmp_path):
    """Every option of mx.read crosses to the actors (a lambda scorer too: Ray ships it with
    cloudpickle), checked once on the driver: labels, report and warnings are those of the
    in-process path, which is mx.read on each shard (tests/test_parallel_options.py)."""
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "options" / "react_trials.jsonl"
    lines = fixture.read_text().splitlines()
    paths = []
    for i in range(3):
        path = tmp_path / f"shard-{i}.jsonl"
        records = [{**json.loads(x), "qid": f"{json.loads(x)['qid']}-{i}"} for x in lines]
        records.append({**records[0], "trial": 3})  # left out by `where`
        path.write_text("\n".join(json.dumps(r) for r in records) + "\n{not json\n")
        paths.append(path)
    runs = simulate(n_questions=12, n_samples=2, arms=("base", "rl"), random_state=4, progress=False).runs
    saved = StrategySpace(embedder="hashing-64", random_state=0, progress=False).fit(runs).save(tmp_path / "space")
    options = dict(columns={"text": "traj", "question_id": "qid", "gold": "gold_answer"},
                   where=pl.col("trial") < 3, round_tools="-reflect,-think", answer_pattern=r"Finish\[(\w+)",
                   scorer=lambda answer, gold: False, errors="skip")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ReadWarning)
        labels, rep = assign_shards_ray(saved, paths, "react", report=True, **options)
    with pytest.warns(ReadWarning, match="scores 0 %"):
        local, local_rep = assign_shards(saved, paths, "react", n_jobs=1, report=True, **options)
    assert labels.equals(local) and rep == local_rep
    assert rep.rows_filtered == 3 and [s.line for s in rep.skipped] == [10, 10, 10]
    assert len(rep.warnings) == 3  # each arm scores 0 % by the lambda: warned on the driver
    assert [str(w.message) for w in caught if issubclass(w.category, ReadWarning)] == rep.warnings
    with pytest.raises(InputError, match="unknown read option `scorrer`"):
        assign_shards_ray(saved, paths, "react", scorrer="em")
