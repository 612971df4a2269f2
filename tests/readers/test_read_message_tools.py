"""An agent that speaks to the user only through a tool (Letta / MemGPT's ``send_message``): each
message is the agent's words, not a round, the last one is the final answer, and the assistant's
own text is its inner monologue (``mechanism.readers.openai.MESSAGE_TOOLS``)."""
from __future__ import annotations

import json

import pytest

from mechanism.readers import read


def _call(name: str, args: dict, call_id: str, thought: str | None = None) -> dict:
    return {"role": "assistant", "content": thought,
            "tool_calls": [{"id": call_id, "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args)}}]}


def _result(call_id: str, name: str, message: str = "None", status: str = "OK") -> dict:
    return {"role": "tool", "tool_call_id": call_id, "name": name,
            "content": json.dumps({"status": status, "message": message, "time": "2025-07-17 10:44:08 PM"})}


def _letta(clarify: bool, trailing: bool) -> dict:
    """A returning user's question answered from archival memory, as Letta logs it."""
    messages = [{"role": "system", "content": "<persona>I am Sam.</persona><human>Name: Ana</human>"},
                {"role": "user", "content": "What was the restaurant I told you about?"}]
    if clarify:
        messages += [_call("send_message", {"message": "Which trip was that, the one in March?"}, "c0",
                           "Ambiguous: ask which one."), _result("c0", "send_message"),
                     {"role": "user", "content": "Yes, March in Lisbon."}]
    messages += [_call("archival_memory_search", {"query": "restaurant Lisbon", "request_heartbeat": True}, "c1",
                       "Search archival memory."),
                 _result("c1", "archival_memory_search", '[{"content": "Ana loved Cervejaria Ramiro"}]'),
                 _call("send_message", {"message": "It was Cervejaria Ramiro."}, "c2", "Found it; answering."),
                 _result("c2", "send_message")]
    if trailing:
        messages.append({"role": "assistant", "content": "She seemed pleased."})
    return {"id": f"q{int(clarify)}{int(trailing)}", "messages": messages, "gold": ["Cervejaria Ramiro"]}


@pytest.fixture
def letta_file(tmp_path):
    path = tmp_path / "letta.jsonl"
    path.write_text("\n".join(json.dumps(_letta(c, t)) for c in (False, True) for t in (False, True)) + "\n")
    return path


def test_the_last_message_to_the_user_is_the_answer_and_no_round(letta_file):
    runs, report = read(letta_file, format="openai", report=True, columns={"question_id": "id"}, scorer="contains")
    assert runs["answer"].to_list() == ["It was Cervejaria Ramiro."] * 4  # never the trailing thought
    assert runs["correct"].to_list() == [True] * 4
    assert runs["n_rounds"].to_list() == [1, 1, 1, 1]  # the search alone: messages are words, not rounds
    assert any("last message to the user through a message tool" in n for n in report.notes)
    rows = {r["question_id"]: r for r in runs.iter_rows(named=True)}
    meta = json.loads(rows["q01"]["meta"])
    assert meta["answer_thoughts"] == ["Found it; answering.", "She seemed pleased."]  # kept, not lost
    assert len(meta["message_results"]) == 1
    # the clarifying message joins the search's thought; the user's reply is that step's user turn
    step = rows["q10"]["steps"][0]
    assert "Which trip was that" in step["thought"] and step["user"] == "Yes, March in Lisbon."
    assert len(json.loads(rows["q11"]["meta"])["message_results"]) == 2


def test_a_round_after_a_message_means_no_answer_yet(tmp_path):
    # the agent spoke, then searched and never spoke again: no final answer, a failure
    rec = _letta(False, False)
    rec["messages"] = rec["messages"][:4] + [_call("send_message", {"message": "Let me look."}, "c9"),
                                             _result("c9", "send_message"),
                                             _call("conversation_search", {"query": "Lisbon"}, "c8"),
                                             _result("c8", "conversation_search", "[]"),
                                             {"role": "assistant", "content": "Nothing there."}]
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    runs = read(path, format="openai", columns={"question_id": "id"}, scorer="contains")
    assert runs["answer"].to_list() == [None] and runs["correct"].to_list() == [False]
    assert runs["n_rounds"].to_list() == [2]
    assert "Let me look." in runs["steps"][0][1]["thought"]


def _atif(messages: list[dict]) -> dict:
    """The same conversation as an ATIF document (Harbor's trajectory format): each assistant
    message with its calls one agent step, the calls' results in its observation."""
    steps: list[dict] = []
    for m in messages:
        if m["role"] in ("system", "user"):
            steps.append({"step_id": len(steps) + 1, "source": m["role"], "message": m["content"]})
        elif m["role"] == "assistant":
            calls = [{"tool_call_id": c["id"], "function_name": c["function"]["name"],
                      "arguments": json.loads(c["function"]["arguments"])} for c in m.get("tool_calls", [])]
            steps.append({"step_id": len(steps) + 1, "source": "agent", "message": m["content"] or "",
                          **({"tool_calls": calls, "observation": {"results": []}} if calls else {})})
        else:
            steps[-1]["observation"]["results"].append({"source_call_id": m["tool_call_id"], "content": m["content"]})
    return {"schema_version": "ATIF-v1.4", "session_id": "s", "agent": {"name": "letta", "model_name": "m"},
            "steps": steps}


def test_an_atif_document_reads_message_tools_as_the_chat_reader_does(tmp_path, letta_file):
    chat = read(letta_file, format="openai", columns={"question_id": "id"}, scorer="contains")
    for rec in map(json.loads, letta_file.read_text().splitlines()):
        doc = _atif(rec["messages"])
        doc["extra"] = {"question_id": rec["id"], "gold": rec["gold"]}
        (tmp_path / f"{rec['id']}.json").write_text(json.dumps(doc))
    runs, report = read(sorted(tmp_path.glob("q*.json")), format="atif", report=True, scorer="contains")
    assert runs["answer"].to_list() == ["It was Cervejaria Ramiro."] * 4
    assert runs["n_rounds"].to_list() == chat["n_rounds"].to_list() == [1, 1, 1, 1]
    assert any("last message to the user through a message tool" in n for n in report.notes)
    for a, b in zip(runs.sort("question_id").iter_rows(named=True), chat.sort("question_id").iter_rows(named=True)):
        assert [s["thought"] for s in a["steps"]] == [s["thought"] for s in b["steps"]]
        assert [s["user"] for s in a["steps"]] == [s["user"] for s in b["steps"]]
        assert json.loads(a["meta"])["answer_thoughts"] == json.loads(b["meta"])["answer_thoughts"]
