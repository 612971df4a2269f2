"""Bad input: every error names file, line and field; skip mode accounts for every record."""
from __future__ import annotations

import json

import pytest

from mechanism.core.errors import InputError
from mechanism.readers import read


def _raises(path, **kw) -> InputError:
    with pytest.raises(InputError) as info:
        read(path, **kw)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(path) if not isinstance(path, list) else "")
    return info.value


def test_mixed_file_raise_stops_at_first_bad_line(fixtures):
    path = fixtures / "bad" / "searchr1_mixed.jsonl"
    err = _raises(path)
    assert err.line == 2 and "truncated" in err.reason
    assert f"{path}, line 2" in str(err)


def test_mixed_file_skip_reports_every_record(fixtures):
    path = fixtures / "bad" / "searchr1_mixed.jsonl"
    runs, rep = read(path, errors="skip", report=True)
    assert rep.rows_in == 10  # eleven lines, one blank
    assert rep.rows_in == rep.rows_kept + len(rep.skipped)
    assert runs.height == rep.rows_kept == 3
    by_line = {s.line: s for s in rep.skipped}
    assert set(by_line) == {2, 3, 4, 6, 9, 10, 11}
    assert "invalid JSON" in by_line[2].reason
    assert by_line[3].field == "response" and "missing transcript" in by_line[3].reason
    assert "unclosed `<information>`" in by_line[4].reason and by_line[4].field == "response"
    assert "duplicate" in by_line[6].reason and "line 1" in by_line[6].reason and by_line[6].field == "sample_id"
    assert by_line[9].field == "question"
    assert by_line[10].field == "gold" and "cannot score" in by_line[10].reason
    assert "JSON object" in by_line[11].reason
    kept = runs.sort("sample_id").to_dicts()
    # line 5 never answered: kept as a failure, and counted
    assert kept[1]["sample_id"] == 4 and kept[1]["answer"] is None and kept[1]["correct"] is False
    assert rep.unanswered == 1 and any("1 episodes ended without a final answer" in n for n in rep.notes)
    # line 8 has no answer but records its outcome: kept, answer null
    assert kept[2]["sample_id"] == 5 and kept[2]["answer"] is None and kept[2]["correct"] is False
    # refusing unanswered episodes makes line 5 a bad record again
    _, rep = read(path, errors="skip", report=True, unanswered="error")
    assert {s.line for s in rep.skipped} == {2, 3, 4, 5, 6, 9, 10, 11}
    assert "no final answer" in next(s for s in rep.skipped if s.line == 5).reason
    for s in rep.skipped:  # every skipped record renders as one line naming file and line
        assert str(s).startswith(f"{path}, line {s.line}")


def test_non_utf8(fixtures):
    path = fixtures / "bad" / "non_utf8.jsonl"
    err = _raises(path)
    assert err.line == 2 and "UTF-8" in err.reason
    runs, rep = read(path, errors="skip", report=True)
    assert runs.height == 1 and rep.skipped[0].line == 2


def test_empty_and_unknown(fixtures, tmp_path):
    err = _raises(fixtures / "bad" / "empty.jsonl")
    assert "empty file" in err.reason
    err = _raises(fixtures / "bad" / "unknown.jsonl")
    assert "unknown format" in err.reason and err.field == "format"
    with pytest.raises(InputError, match="unknown format 'yaml'"):
        read(fixtures / "searchr1.jsonl", format="yaml")
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n\n  \n")
    err = _raises(blank)
    assert "empty file" in err.reason  # blank lines only: as empty as 0 bytes
    blank_json = tmp_path / "blank.json"
    blank_json.write_text("   \n")
    assert "empty file" in _raises(blank_json).reason


def test_missing_file_and_bad_options(tmp_path, fixtures):
    assert "file not found" in _raises(tmp_path / "nope.jsonl").reason
    with pytest.raises(InputError, match="`errors`"):
        read(fixtures / "searchr1.jsonl", errors="ignore")
    with pytest.raises(InputError, match="unknown canonical name `txt`"):
        read(fixtures / "searchr1.jsonl", columns={"txt": "response"})
    with pytest.raises(InputError, match="no input files"):
        read([])


def test_duplicate_across_files_names_both(fixtures):
    with pytest.raises(InputError) as info:
        read([fixtures / "canonical.jsonl", fixtures / "canonical.csv"])
    msg = str(info.value)
    assert msg.startswith(f"{fixtures / 'canonical.csv'}, line 2, field `sample_id`")
    assert f"first seen at {fixtures / 'canonical.jsonl'} line 1" in msg


def test_truncated_json_document(tmp_path):
    path = tmp_path / "t.json"
    path.write_text('[{"question": "a", "response": "<answer>x</answer>"')
    err = _raises(path)
    assert "invalid JSON" in err.reason


def test_wrong_types_name_the_field(tmp_path):
    path = tmp_path / "t.jsonl"
    rows = [{"question": "q", "gold": ["a"], "sample_id": "first", "response": "<answer>a</answer>"}]
    path.write_text(json.dumps(rows[0]))
    err = _raises(path)
    assert err.field == "sample_id" and err.line == 1 and "integer" in err.reason
    path.write_text(json.dumps({"question": "q", "gold": ["a"], "correct": "maybe", "response": "<answer>a</answer>"}))
    err = _raises(path)
    assert err.field == "correct" and "boolean" in err.reason
    path.write_text(json.dumps({"question": "q", "gold": {"a": 1}, "response": "<answer>a</answer>"}))
    assert _raises(path).field == "gold"


def test_searchr1_tag_problems(tmp_path):
    path = tmp_path / "t.jsonl"
    cases = {
        "<think> a <search> b </search></think><answer>x</answer>": "unclosed `<think>`",
        "<search> a </search><information> b": "unclosed `<information>`",
        "<answer> a </answer></search>": "unmatched `</search>`",
        "<information> a </information><answer>x</answer>": "without a `<search>`",
    }
    for text, expected in cases.items():
        path.write_text(json.dumps({"question": "q", "gold": ["x"], "response": text}))
        err = _raises(path, format="searchr1")
        assert expected in err.reason and err.field == "response" and err.line == 1


def test_searchr1_cut_off_generation_is_an_unanswered_failure(tmp_path):
    path = tmp_path / "t.jsonl"
    cut = ["<search> a </search><information> b </information><search> c",
           "<search> a </search><information> b </information><think> still thinking",
           "<search> a </search><information> b </information><answer> x"]
    path.write_text("\n".join(json.dumps({"question": "q", "gold": ["x"], "response": t, "sample_id": i})
                              for i, t in enumerate(cut)))
    runs, rep = read(path, format="searchr1", report=True)
    assert runs["n_rounds"].to_list() == [1, 1, 1]
    assert runs["answer"].to_list() == [None, None, None] and not runs["correct"].any()
    assert rep.unanswered == 3
    assert any(n.startswith("3 transcripts end inside an unclosed") for n in rep.notes)


def test_openai_problems(tmp_path):
    path = tmp_path / "t.jsonl"
    msgs = [{"role": "user", "content": "q"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "function": {"arguments": "{}"}}]}]
    path.write_text(json.dumps({"gold": ["x"], "messages": msgs}))
    err = _raises(path, format="openai")
    assert err.field == "messages[1].tool_calls[0].function.name"
    msgs = [{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "zz", "content": "obs"},
            {"role": "assistant", "content": "x"}]
    path.write_text(json.dumps({"gold": ["x"], "messages": msgs}))
    err = _raises(path, format="openai")
    assert "no tool call before it" in err.reason
    # a trajectory cut off after a tool result has no final answer
    msgs = [{"role": "user", "content": "q"},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "c1", "function": {"name": "search", "arguments": "{\"query\": \"a\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "obs"}]
    path.write_text(json.dumps({"gold": ["x"], "messages": msgs}))
    assert "no final answer" in _raises(path, format="openai", unanswered="error").reason
    runs, rep = read(path, format="openai", report=True)
    assert runs["answer"][0] is None and runs["correct"][0] is False and runs["n_rounds"][0] == 1
    assert rep.unanswered == 1


def test_atif_problems(tmp_path):
    path = tmp_path / "t.json"
    doc = {"schema_version": "ATIF-v2.0", "session_id": "s", "agent": {"name": "a", "version": "1"}, "steps": []}
    path.write_text(json.dumps(doc))
    assert "schema_version" in _raises(path, format="atif").reason
    doc["schema_version"] = "ATIF-v1.4"
    doc["steps"] = [{"step_id": 1, "source": "robot", "message": "hi"}]
    path.write_text(json.dumps(doc))
    assert _raises(path, format="atif").field == "steps[0].source"


def test_csv_problems(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b'arm,question_id,question,gold,answer,correct\nbase,1,q,["a"],a,true\nbase,2,q\xff,["a"],a,true\n')
    err = _raises(path)
    assert err.line == 3 and "UTF-8" in err.reason
    path.write_bytes(b'arm,question_id,question,gold,answer,correct,steps\nbase,1,q,["a"],a,true,[{"query": 1\n')
    err = _raises(path)
    assert err.field == "steps" and err.line == 2 and "JSON" in err.reason


def test_very_long_and_deeply_nested_lines(tmp_path):
    path = tmp_path / "t.jsonl"
    long_obs = "word " * 400_000  # a 2 MB observation
    good = {"question": "q", "gold": ["x"],
            "response": f"<search> a </search><information>{long_obs}</information><answer> x </answer>"}
    path.write_text(json.dumps(good) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    runs, rep = read(path, errors="skip", report=True)
    assert runs.height == 1 and len(runs["steps"][0][0]["observation"]) == len(long_obs.strip())
    assert rep.skipped[0].line == 2 and "nested too deeply" in rep.skipped[0].reason


def test_json_array_and_wrapped_documents(tmp_path, fixtures):
    lines = (fixtures / "searchr1.jsonl").read_text().splitlines()
    records = [json.loads(x) for x in lines]
    (tmp_path / "a.json").write_text(json.dumps(records))
    (tmp_path / "b.json").write_text(json.dumps({"trajectories": records}))
    expected = read(fixtures / "searchr1.jsonl")
    for name in ("a.json", "b.json"):
        runs, rep = read(tmp_path / name, report=True)
        assert rep.formats[str(tmp_path / name)] == "searchr1"
        assert runs.equals(expected)


def test_raise_reports_the_first_bad_record_even_when_it_is_a_duplicate(tmp_path):
    rec = {"question": "q", "question_id": "1", "sample_id": 0, "gold": ["x"], "response": "<answer> x </answer>"}
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([json.dumps(rec), json.dumps(rec), json.dumps({**rec, "sample_id": 1})[:-5]]))
    err = _raises(path)
    assert err.line == 2 and err.field == "sample_id"


def test_missing_sample_ids_never_collide_with_given_ones(tmp_path):
    row = {"arm": "a", "question_id": "q", "question": "Q", "gold": ["x"], "answer": "x", "n_rounds": 0}
    path = tmp_path / "mixed_ids.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in ({**row, "sample_id": 1}, row, {**row, "sample_id": 0}, row)))
    runs = read(path, format="canonical")
    assert runs["sample_id"].to_list() == [1, 2, 0, 3]


def test_integer_out_of_int64_range_is_an_input_error(tmp_path):
    path = tmp_path / "big.jsonl"
    path.write_text(json.dumps({"arm": "a", "question_id": "q", "question": "Q", "gold": ["x"], "correct": True,
                                "n_rounds": 10**30}) + "\n")
    err = _raises(path, format="canonical")
    assert err.line == 1 and err.field == "n_rounds" and "64-bit" in err.reason
