"""Calls issued together: parallel function calling (several calls in one assistant message)
read as such in every format that can hold it, kept through a canonical file, and said in the
read report."""
from __future__ import annotations

import json

import pytest

import mechanism as mx
from mechanism.core.schema import PARALLEL

QUESTION = "Which is larger, Lyon or Nantes?"


def _openai_fanout() -> list[dict]:
    calls = [{"id": f"c{j}", "type": "function",
              "function": {"name": "web_search", "arguments": json.dumps({"query": f"population of {city}"})}}
             for j, city in enumerate(("Lyon", "Nantes"))]
    return [{"role": "user", "content": QUESTION},
            {"role": "assistant", "content": "Both at once.", "tool_calls": calls},
            {"role": "tool", "tool_call_id": "c1", "content": "Nantes: 320,000"},  # results in any order
            {"role": "tool", "tool_call_id": "c0", "content": "Lyon: 520,000"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c2", "type": "function",
                 "function": {"name": "calculator", "arguments": '{"expression": "520000-320000"}'}}]},
            {"role": "tool", "tool_call_id": "c2", "content": "200000"},
            {"role": "assistant", "content": "Lyon, by 200,000."}]


def _flags(runs) -> list[bool]:
    return [st.get(PARALLEL) is True for st in runs["steps"][0]]


def test_calls_of_one_message_are_marked_and_said_in_the_report(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"id": "q", "arm": "rl", "messages": _openai_fanout(), "gold": "Lyon"}) + "\n")
    runs, rep = mx.read(path, report=True)
    assert [st["tool"] for st in runs["steps"][0]] == ["web_search", "web_search", "calculator"]
    assert [st["observation"] for st in runs["steps"][0]][:2] == ["Lyon: 520,000", "Nantes: 320,000"]
    assert _flags(runs) == [False, True, False]
    assert any(n.startswith("1 calls issued in the same message as the call before them") for n in rep.notes)
    # kept through a canonical file (the read's table written out and read back) and parquet
    out = tmp_path / "canonical.jsonl"
    runs.write_ndjson(out)
    again = mx.read(out, format="canonical")
    assert _flags(again) == [False, True, False]
    runs.write_parquet(tmp_path / "t.parquet")
    assert _flags(mx.read(tmp_path / "t.parquet")) == [False, True, False]


def test_a_table_without_parallel_calls_has_no_such_field(tmp_path):
    msgs = [m for m in _openai_fanout() if m.get("tool_call_id") != "c1"]
    msgs[1] = {**msgs[1], "tool_calls": msgs[1]["tool_calls"][:1]}
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"id": "q", "arm": "rl", "messages": msgs, "gold": "Lyon"}) + "\n")
    runs, rep = mx.read(path, report=True)
    assert PARALLEL not in runs["steps"].dtype.inner.to_schema()
    assert not any("same message" in n for n in rep.notes)


def test_atif_calls_of_one_step_and_a_canonical_flag_that_is_no_boolean(tmp_path):
    doc = {"schema_version": "ATIF-v1.4", "session_id": "s1", "agent": {"name": "bot", "model_name": "m1"},
           "extra": {"question_id": "q1", "gold": ["Lyon"]},
           "steps": [{"step_id": 1, "source": "user", "message": QUESTION},
                     {"step_id": 2, "source": "agent", "message": "",
                      "tool_calls": [{"tool_call_id": f"t{j}", "function_name": "web_search", "arguments": {"query": c}}
                                     for j, c in ((1, "Lyon"), (2, "Nantes"))],
                      "observation": {"results": [{"source_call_id": "t1", "content": "520,000"},
                                                  {"source_call_id": "t2", "content": "320,000"}]}},
                     {"step_id": 3, "source": "agent", "message": "Lyon"}]}
    path = tmp_path / "a.json"
    path.write_text(json.dumps(doc))
    assert _flags(mx.read(path)) == [False, True]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"arm": "a", "question_id": "q", "sample_id": 0, "question": QUESTION, "gold": ["x"],
                               "answer": "x", "correct": True, "n_rounds": 1,
                               "steps": [{"tool": "web_search", "parallel": "yes"}]}) + "\n")
    with pytest.raises(mx.InputError, match=r"steps\[0\]\.parallel` must be true, false or null"):
        mx.read(bad, format="canonical")

