"""The shard functions take every option of :func:`mechanism.read` (checked once, passed to
each shard's read): ``read_shards(..., n_jobs=2)`` is ``mx.read`` on each shard, concatenated,
table and report alike; and a saved space is read, hashed and loaded once per worker process,
not once per shard."""
from __future__ import annotations

import inspect
import json
import os
import warnings
from collections import OrderedDict
from pathlib import Path

import polars as pl
import pytest

import mechanism.analysis.parallel as parallel
from mechanism.analysis.parallel import (
    assign_shards,
    read_option_names,
    read_shards,
    render_shards,
    space_digest,
    space_files,
)
from mechanism.analysis.segmentation import render
from mechanism.analysis.strategy_space import StrategySpace
from mechanism.core.errors import InputError, ReadReport, ReadWarning
from mechanism.datasets.simulation import simulate
from mechanism.readers import read

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "options" / "react_trials.jsonl"
COLUMNS = {"text": "traj", "question_id": "qid", "gold": "gold_answer"}


def never(answer: str, gold: list[str]) -> bool:
    """A scorer (module level, so that it pickles to worker processes) that fails everything."""
    return False


def first_letter(answer: str, gold: list[str]) -> bool:
    return bool(answer) and any(g[:1].lower() == answer[:1].lower() for g in gold)


# option sets that change what is kept, how correct is scored, what an answer and a round are
COMBOS = {
    "label-where-rounds": dict(columns={**COLUMNS, "correct": "status:CORRECT"},
                               where="trial == 1 and not carried_over", round_tools="-reflect,-think"),
    "scorer-unanswered-skip": dict(columns=COLUMNS, scorer="f1", unanswered="error", errors="skip",
                                   round_tools=["search"]),
    "expr-arm-pattern-function": dict(columns=COLUMNS, where=pl.col("trial") == 2, arm="agent",
                                      answer_pattern=r"Finish\[(\w)", scorer=first_letter, errors="skip"),
    "zero-percent-warns": dict(columns=COLUMNS, scorer=never),
}


@pytest.fixture(scope="module")
def react_shards(tmp_path_factory) -> list[Path]:
    """Three copies of the options fixture (question ids made distinct per shard, the arm from
    the file name), and a fourth shard holding one good and one broken record."""
    folder = tmp_path_factory.mktemp("react")
    lines = FIXTURE.read_text().splitlines()
    paths = []
    for i in range(3):
        path = folder / f"shard-{i}.jsonl"
        path.write_text("\n".join(json.dumps({**json.loads(x), "qid": f"{json.loads(x)['qid']}-{i}"})
                                  for x in lines) + "\n")
        paths.append(path)
    bad = folder / "shard-3.jsonl"
    bad.write_text(lines[0].replace('"q1"', '"q9"') + "\n{not json\n")
    return paths + [bad]


def _per_shard(paths: list[Path], fmt: str, options: dict) -> tuple[pl.DataFrame, ReadReport]:
    """``mx.read`` on each shard, tables concatenated and reports merged in file order. A
    column one shard lacks (an optional column none of its rows fill) is null there, in the
    canonical order: the table of one ``mx.read`` of all the shards (checked here)."""
    tables, rep = [], ReadReport()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReadWarning)
        for path in paths:
            table, r = read(path, fmt, report=True, **options)
            tables.append(table)
            rep.merge(r)
        whole = read(paths, fmt, **options)
    table = pl.concat(tables, how="diagonal").select(whole.columns)
    assert table.equals(whole)
    return table, rep


def test_the_shard_functions_take_every_option_of_read():
    keywords = {n for n, p in inspect.signature(read).parameters.items() if p.kind is p.KEYWORD_ONLY}
    assert set(read_option_names()) == keywords - {"report", "progress"}
    assert {"arm", "columns", "errors", "where", "answer_pattern", "scorer", "unanswered",
            "round_tools"} <= set(read_option_names())


@pytest.mark.parametrize("combo", sorted(COMBOS))
def test_read_shards_in_two_workers_is_read_on_each_shard_concatenated(react_shards, combo):
    options = COMBOS[combo]
    paths = react_shards if options.get("errors") == "skip" else react_shards[:3]
    expected, expected_rep = _per_shard(paths, "react", options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ReadWarning)
        got, rep = read_shards(paths, "react", n_jobs=2, report=True, **options)
    assert got.equals(expected)
    assert rep == expected_rep  # every count, skip, note and warning, in file order
    assert rep.rows_in == rep.rows_kept + len(rep.skipped) + rep.rows_filtered
    # the warnings mx.read gives, given once in this process (the workers' stay in their reports)
    assert [str(w.message) for w in caught if issubclass(w.category, ReadWarning)] == rep.warnings
    if combo == "label-where-rounds":
        assert rep.rows_filtered > 0 and got.height == rep.rows_kept
    if combo == "zero-percent-warns":
        assert len(rep.warnings) == 3 and all("scores 0 %" in w for w in rep.warnings)
    if combo == "scorer-unanswered-skip":
        assert {s.line for s in rep.skipped if s.source.endswith("shard-3.jsonl")} == {2}
        assert sum("no final answer" in s.reason for s in rep.skipped) == 6  # two per copy of the fixture


def test_the_streamed_read_and_render_take_the_options_too(react_shards, tmp_path):
    # under this filter the last shard keeps no row, so its table lacks the optional columns
    options = COMBOS["expr-arm-pattern-function"]
    expected, expected_rep = _per_shard(react_shards, "react", options)
    lazy, rep = read_shards(react_shards, "react", out=tmp_path / "parts", report=True, **options)
    assert lazy.collect().equals(expected) and rep == expected_rep
    assert read_shards(tmp_path / "parts", "parts").equals(expected)

    assert render_shards(react_shards, "react", **options).equals(render(expected))


def test_bad_options_are_one_line_errors_naming_them_before_any_worker(react_shards, tmp_path):
    paths = react_shards[:3]
    cases = [({"scorrer": "em"}, "scorrer"), ({"progress": True}, "progress"), ({"scorer": "exact"}, "scorer"),
             ({"where": "trial =="}, "where"), ({"answer_pattern": "("}, "answer_pattern"),
             ({"columns": {"correct": "status:"}}, "columns"), ({"round_tools": ","}, "round_tools"),
             ({"unanswered": "drop"}, "unanswered"), ({"errors": "ignore"}, "errors"), ({"arm": ""}, "arm")]
    for options, name in cases:
        for call in (lambda options=options: read_shards(paths, "react", n_jobs=2, **options),
                     lambda options=options: assign_shards(tmp_path / "nowhere", paths, "react", **options)):
            with pytest.raises(InputError) as info:
                call()
            if "nowhere" not in str(info.value):  # assign_shards first checks its space
                assert info.value.field == name and "\n" not in str(info.value), (options, str(info.value))
    with pytest.raises(InputError, match="unknown read option `scorrer`"):
        read_shards(paths, scorrer="em")
    # a lambda cannot go to a spawned worker: said before any starts; in this process it is fine
    with pytest.raises(InputError, match="`scorer` cannot be sent to worker processes") as info:
        read_shards(paths, "react", n_jobs=2, columns=COLUMNS, scorer=lambda a, g: True)
    assert info.value.field == "scorer"
    lenient = read_shards(paths, "react", columns=COLUMNS, scorer=lambda a, g: True)
    assert lenient["correct"].equals(lenient["answer"].is_not_null().alias("correct"))  # unanswered: failures
    # the parts are tables read already: reading options do not apply to them
    read_shards(paths, "react", out=tmp_path / "parts", columns=COLUMNS)
    with pytest.raises(InputError, match="`where` does not apply") as info:
        read_shards(tmp_path / "parts", "parts", where="trial = 1")
    assert info.value.field == "where"
    assert read_shards(tmp_path / "parts", "parts", arm="x")["arm"].unique().to_list() == ["x"]


def test_a_bad_read_option_fails_the_shard_functions_exactly_as_it_fails_read(react_shards, monkeypatch):
    """One validation (mechanism.readers.check_read_options): every option read() checks, the
    shard functions check before any worker starts, with read's own one-line error."""
    cases = [({"scorer": "exact"}, "scorer"), ({"where": "trial =="}, "where"),
             ({"answer_pattern": "("}, "answer_pattern"),
             ({"columns": {"correct": "status:"}}, "columns"), ({"round_tools": ","}, "round_tools"),
             ({"unanswered": "drop"}, "unanswered"), ({"errors": "ignore"}, "errors"), ({"arm": ""}, "arm"),
             ({"multi_action": "middle"}, "multi_action"), ({"duplicates": "merge"}, "duplicates"),
             ({"question_key": "("}, "question_key"), ({"error_pattern": "("}, "error_pattern")]
    # a worker started for a bad option would be a check missed: make starting one fail loudly
    monkeypatch.setattr(parallel, "_map", lambda *a, **k: pytest.fail("a worker started before the check"))
    for options, name in cases:
        with pytest.raises(InputError) as by_read:
            read(react_shards[0], "react", **options)
        with pytest.raises(InputError) as by_shards:
            read_shards(react_shards[:3], "react", n_jobs=2, **options)
        assert by_read.value.field == by_shards.value.field == name
        assert str(by_shards.value) == str(by_read.value), options


@pytest.fixture(scope="module")
def space_and_shards(tmp_path_factory) -> tuple[Path, list[Path]]:
    runs = simulate(n_questions=24, n_samples=3, arms=("base", "rl"), random_state=3, progress=False).runs
    folder = tmp_path_factory.mktemp("sim")
    qids = sorted(runs["question_id"].unique().to_list())
    paths = []
    for i in range(6):
        path = folder / f"part-{i}.parquet"
        runs.filter(pl.col("question_id").is_in(qids[i::6])).write_parquet(path)
        paths.append(path)
    space = StrategySpace(embedder="hashing-64", random_state=0, progress=False).fit(runs)
    return space.save(tmp_path_factory.mktemp("space") / "space"), paths


def test_one_process_reads_hashes_and_loads_the_space_once_for_six_shards(space_and_shards, monkeypatch):
    saved, paths = space_and_shards
    calls = {"files": 0, "digest": 0, "load": 0}

    def counting(name, fn):
        def wrapped(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)
        return wrapped

    monkeypatch.setattr(parallel, "_SPACES", OrderedDict())
    monkeypatch.setattr(parallel, "space_files", counting("files", parallel.space_files))
    monkeypatch.setattr(parallel, "space_digest", counting("digest", parallel.space_digest))
    monkeypatch.setattr(StrategySpace, "load", classmethod(counting("load", StrategySpace.load.__func__)))
    labels = assign_shards(saved, paths, n_jobs=1)
    # the caller reads and hashes the files once; the process loads (and checks) the space once
    assert calls == {"files": 2, "digest": 2, "load": 1}
    assert labels.height == sum(pl.read_parquet(p).height for p in paths)
    assign_shards(saved, paths, n_jobs=1)  # the process keeps it: the next call loads nothing
    assert calls == {"files": 3, "digest": 3, "load": 1}


def _probe(task):
    """Run in a worker: whether the space was loaded in this process before this shard."""
    held = f"{task.space_key}:{task.cache_dir}" in parallel._SPACES
    table, _ = parallel.assign_task(task)
    return os.getpid(), held, table.height


def test_each_worker_process_loads_the_space_once(space_and_shards):
    saved, paths = space_and_shards
    key = space_digest(space_files(saved))
    tasks = parallel._tasks(paths, "auto", {}, 2, space=str(saved), space_key=key)
    results = parallel._map(_probe, tasks, 2)
    by_pid: dict[int, list[bool]] = {}
    for pid, held, _ in results:
        by_pid.setdefault(pid, []).append(held)
    assert 1 <= len(by_pid) <= 2 and os.getpid() not in by_pid
    assert all(held.count(False) == 1 for held in by_pid.values()), by_pid  # the first shard of each loads
    assert sum(len(h) for h in by_pid.values()) == 6


def test_assign_shards_with_options_is_assign_on_each_shard(space_and_shards, react_shards):
    saved, _ = space_and_shards
    options = COMBOS["expr-arm-pattern-function"]
    expected, expected_rep = _per_shard(react_shards, "react", options)
    got, rep = assign_shards(saved, react_shards, "react", n_jobs=2, report=True, **options)
    space = StrategySpace.load(saved, progress=False)
    assert got.equals(space.assign(expected).select(got.columns))
    assert rep == expected_rep
