"""A large JSONL file read in parts (the first here, the others in worker processes) gives the
table and the report of one read of the whole file, or is read again in one process where that
cannot be proven: on any record mix, any cut, both error modes (mechanism.readers._parts)."""
from __future__ import annotations

import contextlib
import json
import pickle
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mechanism.readers as readers
from mechanism.core.errors import InputError
from mechanism.readers import _parts, read


def _record(i: int, kind: str) -> dict:
    base = {"arm": ("base", "rl")[i % 2], "question_id": f"q{i // 4}", "question": f"Who wrote book {i // 4}?",
            "golden_answers": [f"Author {i // 4}"], "sample_id": i % 4}
    if kind == "ok":
        base["response"] = (f"<think>look</think><search> book {i} </search><information>Doc 1 text {i}"
                            f"</information><answer> Author {i // 4 if i % 3 else i} </answer>")
    elif kind == "nothing":  # a short fixed reply to many different calls: counted in the replies
        base["response"] = (f"<search> try {i} </search><information>No results.</information>"
                            f"<search> again {i % 7} </search><information>None</information>")
    elif kind == "cant":  # a fixed reply after 12 calls, each made again and again: proposed with their count
        base["response"] = (f"<search> move {i // 4 % 12} </search><information>You can't do that.</information>"
                            f"<answer> Author {i // 4} </answer>")
    elif kind == "cut":  # generation cut off inside the answer: a parser note with its line
        base["response"] = f"<search> x{i} </search><information>Doc</information><answer> Aut"
    elif kind == "bad":  # an unclosed <information>: a bad record
        base["response"] = "<search> y </search><information>Doc"
    elif kind == "noqid":  # a question id hashed from the text, other fields counted
        base.pop("question_id")
        base.pop("sample_id")
        base["task_idx"] = i // 4
        base["response"] = f"<answer> Author {i} </answer>"
    return base


def _write(path: Path, kinds: list[str], blank_at: frozenset[int] = frozenset()) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for i, kind in enumerate(kinds):
            if i in blank_at:
                fh.write("\n")
            fh.write(("{not json" if kind == "json" else json.dumps(_record(i, kind))) + "\n")


class _InProcess:
    """Workers that read their parts in this process (so hypothesis can try many files fast)."""

    def __init__(self, jobs):
        self.jobs = jobs

    def results(self):
        out = []
        for job in self.jobs:  # pickled, as the worker gets them: copies, not the caller's objects
            try:
                out.append(readers.read_part(**pickle.loads(job)))
            except Exception:  # noqa: BLE001 - as the worker process: a failure is a missing part
                out.append(None)
        return out

    def stop(self):
        pass


@pytest.fixture
def in_parts(monkeypatch):
    """Reads cut into parts of a few hundred bytes, the parts read in this process; the list
    collects whether each read was put together from its parts."""
    joined: list[bool] = []
    real = readers._read_in_parts

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        joined.append(out is not None)
        return out

    @contextlib.contextmanager
    def started(jobs):
        yield _InProcess(jobs)

    monkeypatch.setattr(_parts, "MIN_BYTES", 0)
    monkeypatch.setattr(_parts, "PART_BYTES", 200)
    monkeypatch.setattr(_parts, "started", started)
    monkeypatch.setattr(readers, "_read_in_parts", spy)
    monkeypatch.setenv("MECHANISM_READ_WORKERS", "3")
    return joined


def _one_process(path: Path, monkeypatch, **kw):
    monkeypatch.setenv("MECHANISM_READ_WORKERS", "1")
    try:
        return read(path, report=True, **kw)
    finally:
        monkeypatch.setenv("MECHANISM_READ_WORKERS", "3")


def _same(a, b) -> None:
    (ta, ra), (tb, rb) = a, b
    assert ta.equals(tb)
    for name in ("rows_in", "rows_kept", "skipped", "formats", "notes", "warnings", "unanswered", "rows_filtered"):
        assert getattr(ra, name) == getattr(rb, name), name


_KINDS = st.lists(st.sampled_from(["ok", "ok", "ok", "nothing", "cut"]), min_size=2, max_size=40)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=_KINDS, blank=st.frozensets(st.integers(0, 40), max_size=3))
def test_parts_give_the_read_of_the_whole_file(tmp_path_factory, monkeypatch, in_parts, kinds, blank):
    path = tmp_path_factory.mktemp("parts") / "runs.jsonl"
    _write(path, kinds, blank)
    in_parts.clear()
    got = read(path, report=True)
    parts = len(_parts.spans(path, 3))
    assert in_parts == [parts > 1]
    _same(got, _one_process(path, monkeypatch))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.sampled_from(["ok", "ok", "bad", "json", "noqid"]), min_size=2, max_size=30))
def test_bad_records_and_hashed_ids_in_any_part(tmp_path_factory, monkeypatch, in_parts, kinds):
    path = tmp_path_factory.mktemp("bad") / "runs.jsonl"
    _write(path, kinds)
    # skipped: every bad record listed, in file order, whichever part it was in
    try:
        want = _one_process(path, monkeypatch, errors="skip")
    except InputError as exc:  # nothing left to read at all: the same error either way
        with pytest.raises(InputError) as got:
            read(path, report=True, errors="skip")
        assert str(got.value) == str(exc)
    else:
        _same(read(path, report=True, errors="skip"), want)
    # raised: the first bad record of the file, as one read raises it
    try:
        _one_process(path, monkeypatch)
    except InputError as exc:
        with pytest.raises(InputError) as got:
            read(path, report=True)
        assert str(got.value) == str(exc)
    else:
        _same(read(path, report=True), _one_process(path, monkeypatch))


def test_records_lacking_fields_give_the_same_skips_wherever_the_cut(tmp_path, monkeypatch, in_parts):
    # which record lacks the fields "the records before it" have depends on the order: a part
    # that keeps such a record (among its own first records) is not joined but read again
    joined = []
    for at in range(2, 30):
        rows = [_record(i, "ok") for i in range(30)]
        rows[at].pop("golden_answers")
        rows[at]["correct"] = True
        path = tmp_path / f"runs{at}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        in_parts.clear()
        got = read(path, report=True, errors="skip")
        joined.extend(in_parts)
        assert [s.line for s in got[1].skipped] == [at + 1]
        _same(got, _one_process(path, monkeypatch, errors="skip"))
    assert True in joined and False in joined


def test_a_full_bounded_count_is_read_in_one_process(tmp_path, monkeypatch, in_parts):
    # one reply after 20 tools fills the bounded count of its tools: which are kept depends on the order
    rows = [{"arm": "a", "question_id": f"q{i}", "sample_id": 0, "question": "Q?", "gold": ["x"], "answer": "x",
             "steps": [{"tool": f"tool{i % 20}", "arguments": json.dumps({"n": i}), "observation": "Done"}]}
            for i in range(60)]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    in_parts.clear()
    got = read(path, report=True)
    assert in_parts == [False]
    _same(got, _one_process(path, monkeypatch))
    # 12 tools stay under the bound: the parts are put together
    path.write_text("".join(json.dumps({**r, "steps": [{**r["steps"][0], "tool": f"tool{i % 12}"}]}) + "\n"
                            for i, r in enumerate(rows)), encoding="utf-8")
    in_parts.clear()
    got = read(path, report=True)
    assert in_parts == [True]
    _same(got, _one_process(path, monkeypatch))


def test_every_count_of_the_read_has_a_rule_for_parts():
    assert _parts.tally_fields() == _parts.RULES


def test_worker_processes_read_the_parts(tmp_path, monkeypatch):
    # the real thing: `python -m mechanism.readers` workers, parts of a few kilobytes
    path = tmp_path / "runs.jsonl"
    _write(path, ["ok", "nothing", "cut", "cant"] * 60 + ["bad"])
    monkeypatch.setattr(_parts, "MIN_BYTES", 0)
    monkeypatch.setattr(_parts, "PART_BYTES", 4096)
    monkeypatch.setenv("MECHANISM_READ_WORKERS", "3")
    results = []
    real = _parts.Workers.results

    def spy(self):
        out = real(self)
        results.extend(out)
        return out

    monkeypatch.setattr(_parts.Workers, "results", spy)
    got = read(path, report=True, errors="skip")
    assert len(results) == 2 and all(isinstance(p, _parts.Part) for p in results)
    _same(got, _one_process(path, monkeypatch, errors="skip"))
    assert got[1].skipped[0].line == 241
    # the same 12 calls made in every part are 12 distinct calls, not 12 per process
    assert any("follows 12 distinct calls" in note for note in got[1].notes)
    # a bad record under errors="raise": the workers' parts are dropped, the file read again here
    with pytest.raises(InputError, match="line 241: unclosed `<information>`"):
        read(path)


def test_spans_cut_at_line_starts_and_cover_the_file(tmp_path, monkeypatch):
    path = tmp_path / "x.jsonl"
    lines = [("a" * (i * 37 % 500)) + "\n" for i in range(400)]
    path.write_text("".join(lines), encoding="utf-8")
    data = path.read_bytes()
    monkeypatch.setattr(_parts, "PART_BYTES", 1000)
    for n in (1, 2, 3, 7):
        spans = _parts.spans(path, n, min_bytes=0)
        assert spans[0][0] == 0 and spans[-1][1] == len(data)
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
        assert all(data[s - 1:s] == b"\n" for s, _ in spans[1:])
        assert len(spans) == (1 if n == 1 else n)
        for start, _ in spans:
            assert _parts.first_line(path, start) == data[:start].count(b"\n") + 1
