"""Member pages say which calls an agent sent together (parallel function calling)."""
from __future__ import annotations

import json

import polars as pl

import mechanism as mx
from mechanism.report.explorer import member_transcript

QUESTION = "Which is larger, Lyon or Nantes?"

MESSAGES = [
    {"role": "user", "content": QUESTION},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": f"c{j}", "type": "function",
         "function": {"name": "web_search", "arguments": json.dumps({"query": f"population of {city}"})}}
        for j, city in enumerate(("Lyon", "Nantes"))]},
    {"role": "tool", "tool_call_id": "c0", "content": "Lyon: 520,000"},
    {"role": "tool", "tool_call_id": "c1", "content": "Nantes: 320,000"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c2", "type": "function", "function": {"name": "calculator", "arguments": '{"expression": "5-3"}'}}]},
    {"role": "tool", "tool_call_id": "c2", "content": "2"},
    {"role": "assistant", "content": "Lyon."}]


def test_a_member_page_says_which_calls_were_sent_together(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"id": "q", "arm": "rl", "messages": MESSAGES, "gold": "Lyon"}) + "\n")
    runs = mx.read(path)
    segs = mx.segment(runs).filter(pl.col("tool") != "answer").to_dicts()
    shown = member_transcript(runs.row(0, named=True), segs)
    assert [c["together"] for c in shown["calls"]] == [False, True, False]
