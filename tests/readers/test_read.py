"""Every reader on its small hand-written fixture: rows, steps, answers, labels, report."""
from __future__ import annotations

import json

import polars as pl
import pytest

from mechanism.core.schema import PARALLEL, REQUIRED_COLUMNS, STEP_DTYPE, validate
from mechanism.readers import detect_format, read
from mechanism.readers.openai import parse_messages
from mechanism.readers.react import parse_text as react_text
from mechanism.readers.searchr1 import parse_text as searchr1_text


def _queries(row: dict) -> list[str]:
    return [s["query"] for s in row["steps"]]


def _by_key(df: pl.DataFrame) -> dict[tuple[str, str, int], dict]:
    return {(r["arm"], r["question_id"], r["sample_id"]): r for r in df.iter_rows(named=True)}


@pytest.mark.parametrize("name, fmt", [
    ("searchr1.jsonl", "searchr1"), ("openai.jsonl", "openai"), ("react.jsonl", "react"),
    ("atif.json", "atif"), ("canonical.jsonl", "canonical"), ("canonical.csv", "canonical"),
])
def test_detect_and_report_format(fixtures, name, fmt):
    path = fixtures / name
    assert detect_format(path) == fmt
    runs, rep = read(path, report=True)
    assert rep.formats == {str(path): fmt}
    assert rep.rows_in == rep.rows_kept == runs.height > 0
    assert not rep.skipped
    validate(runs)
    for name_, dtype in REQUIRED_COLUMNS.items():
        if name_ == "steps" and fmt in ("openai", "atif"):  # their fixtures hold calls issued together
            dtype = pl.List(pl.Struct({**dict(STEP_DTYPE.to_schema()), PARALLEL: pl.Boolean}))
        assert runs.schema[name_] == dtype


def test_searchr1(fixtures):
    runs = _by_key(read(fixtures / "searchr1.jsonl"))
    two = runs[("base", "hp-001", 0)]
    assert two["n_rounds"] == 2
    assert _queries(two) == ["Arthur's Magazine first published", "First for Women magazine founded"]
    assert two["steps"][0]["observation"].startswith('Doc 1(Title: "Arthur\'s Magazine")')
    assert two["steps"][0]["thought"] == "I need the founding years of both magazines."
    assert two["steps"][1]["thought"] == "Arthur's Magazine began in 1844. Now First for Women."
    assert json.loads(two["steps"][0]["arguments"]) == {"query": "Arthur's Magazine first published"}
    assert two["answer"] == "Arthur's Magazine" and two["correct"] and two["score"] == 1.0
    assert two["gold"] == ["Arthur's Magazine"] and two["t_cap"] == 3 and two["category"] == "comparison"
    direct = runs[("base", "hp-001", 1)]
    assert direct["n_rounds"] == 0 and direct["steps"] == [] and not direct["correct"]
    # the chat-template prompt holds example tags; only the assistant's turn is parsed
    templ = runs[("rl", "hp-002", 1)]
    assert templ["n_rounds"] == 1 and templ["answer"] == "Mumbai" and not templ["correct"]
    assert runs[("rl", "hp-002", 0)]["correct"]


def test_openai_parallel_calls_and_finish_tool(fixtures):
    runs = _by_key(read(fixtures / "openai.jsonl"))
    par = runs[("rl", "hp-003", 0)]
    assert par["n_rounds"] == 2
    # results arrive in the other order: matched by tool_call_id, not by position
    assert par["steps"][0]["query"] == "Danny Green basketball born"
    assert "June 22, 1987" in par["steps"][0]["observation"]
    assert "February 27, 1961" in par["steps"][1]["observation"]
    assert par["answer"] == "James Worthy" and par["correct"]
    fin = runs[("rl", "hp-004", 0)]
    assert fin["n_rounds"] == 2  # the finish call is not a round
    assert fin["answer"] == "Chief of Protocol" and fin["correct"]
    assert fin["steps"][1]["thought"] == "Now her government position."
    plain = runs[("base", "hp-004", 0)]
    assert plain["n_rounds"] == 0 and plain["answer"].startswith("Shirley Temple") and not plain["correct"]


def test_react_numbered_unnumbered_and_chat(fixtures):
    runs = _by_key(read(fixtures / "react.jsonl"))
    numbered = runs[("react-base", "hp-005", 0)]
    assert _queries(numbered) == ["Scott Derrickson", "Ed Wood"]
    assert [s["tool"] for s in numbered["steps"]] == ["search", "search"]
    # an observation that runs over two lines stays whole
    assert numbered["steps"][1]["observation"].endswith("writer,\nproducer, and director.")
    assert numbered["answer"] == "yes" and numbered["correct"]
    lookup = runs[("react-base", "hp-006", 0)]
    assert [s["tool"] for s in lookup["steps"]] == ["search", "lookup"]
    assert lookup["answer"] == "Richard Nixon" and not lookup["correct"] and 0 < lookup["score"] < 1
    chat = runs[("react-chat", "hp-005", 0)]
    assert chat["question"].startswith("Were Scott Derrickson")
    assert _queries(chat) == ["Scott Derrickson nationality", "Ed Wood nationality"]
    assert chat["steps"][0]["observation"] == "Scott Derrickson is an American filmmaker."
    no_search = runs[("react-chat", "hp-007", 0)]
    assert no_search["n_rounds"] == 0 and no_search["correct"]


def test_react_text_forms():
    text = ("Thought: go\nAction: search[a [b] c]\nObservation: x\n"
            "Thought: two actions, the environment runs the first\nAction: search[first]\n"
            "Action: search[second]\nObservation: y\nThought: done. Action: finish[the [answer]]")
    out = react_text(text)
    assert [s["query"] for s in out["steps"]] == ["a [b] c", "first"]
    assert "Action: search[second]" in out["steps"][1]["thought"]
    assert out["answer"] == "the [answer]" and out["final"]
    last = react_text(text, multi_action="last")  # environments that run the last action
    assert [s["query"] for s in last["steps"]] == ["a [b] c", "second"]
    assert "Action: search[first]" in last["steps"][1]["thought"]
    assert len(out["notes"]) == len(last["notes"]) == 1  # the action not run, counted
    unfinished = react_text("Thought: t\nAction: Search[q]")
    assert len(unfinished["steps"]) == 1 and unfinished["steps"][0]["observation"] is None
    assert not unfinished["final"]


def test_atif(fixtures):
    runs = read(fixtures / "atif.json")
    row = runs.row(0, named=True)
    assert row["arm"] == "qwen2.5-7b-grpo"  # agent.model_name
    assert row["question_id"] == "hp-002" and row["gold"] == ["Delhi"] and row["t_cap"] == 3
    assert row["question"].startswith("The Oberoi family")
    assert row["n_rounds"] == 2 and _queries(row) == ["Oberoi family hotel company", "Oberoi Group head office"]
    assert row["steps"][1]["observation"] == "The Oberoi Group is a hotel company with its head office in Delhi."
    assert row["steps"][0]["thought"].startswith("Two hops")
    assert row["answer"] == "Delhi" and row["correct"]
    assert json.loads(row["meta"])["session_id"] == "6f1c2a4e-0b1d-4c8e-9a57-3e2f5d9b7c10"


def test_meta_field_and_parser_extras_both_kept(tmp_path):
    # a `meta` object beside what the parser keeps (the finishing call's result, a last user turn)
    msgs = [{"role": "user", "content": "Capital of France?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "function": {"name": "search", "arguments": '{"query": "France capital"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "Paris is the capital."},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c2", "function": {"name": "finish", "arguments": '{"answer": "Paris"}'}}]},
            {"role": "tool", "tool_call_id": "c2", "content": "Submitted."},
            {"role": "user", "content": "###STOP###"}]
    rec = {"arm": "a", "question_id": "q1", "gold": ["Paris"], "messages": msgs,
           "meta": {"run": "r7", "seed": 3}}
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    meta = json.loads(read(path, format="openai").row(0, named=True)["meta"])
    assert meta == {"run": "r7", "seed": 3, "finish_result": "Submitted.", "user_after_last_call": "###STOP###"}


def test_atif_final_message_answer(tmp_path):
    doc = {"schema_version": "ATIF-v1.2", "session_id": "s", "agent": {"name": "a", "version": "1"},
           "extra": {"gold": ["4"]},
           "steps": [{"step_id": 1, "source": "user", "message": "2+2?"},
                     {"step_id": 2, "source": "agent", "message": "<think>easy</think><answer>4</answer>"}]}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    row = read(path, arm="x").row(0, named=True)
    assert row["arm"] == "x" and row["answer"] == "4" and row["correct"] and row["n_rounds"] == 0


def test_canonical_jsonl_csv_parquet_agree(fixtures, tmp_path):
    a = read(fixtures / "canonical.jsonl")
    b = read(fixtures / "canonical.csv")
    assert a.equals(b)
    row = _by_key(a)[("rl", "q1", 0)]
    assert row["answer"] is None and row["correct"] is False and row["n_rounds"] == 2
    assert row["steps"][1]["observation"] is None
    a.write_parquet(tmp_path / "c.parquet")
    c = read(tmp_path / "c.parquet")
    assert a.equals(c)


def test_several_files_one_table_with_arm_override(fixtures):
    runs, rep = read([fixtures / "searchr1.jsonl", fixtures / "openai.jsonl"], report=True)
    assert set(rep.formats.values()) == {"searchr1", "openai"}
    assert runs.height == 7
    over = read(fixtures / "searchr1.jsonl", arm="step-400", report=True)
    assert set(over[0]["arm"]) == {"step-400"}
    assert any("`arm=` replaced" in n for n in over[1].notes)


def test_columns_mapping_and_derived_ids(tmp_path):
    rows = [{"traj": {"out": "<search> x </search><information>y</information><answer> B </answer>"},
             "prompt_text": "What is x?", "targets": ["b"]},
            {"traj": {"out": "<answer> c </answer>"}, "prompt_text": "What is x?", "targets": ["b"]}]
    path = tmp_path / "my-run.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    runs, rep = read(path, format="searchr1", columns={"text": "traj.out", "question": "prompt_text",
                                                       "gold": "targets"}, report=True)
    assert runs["arm"].to_list() == ["my-run", "my-run"]  # from the file name
    assert runs["sample_id"].to_list() == [0, 1]
    assert runs["question_id"].n_unique() == 1 and runs["question_id"][0].startswith("q")
    assert runs["correct"].to_list() == [True, False]
    assert any("question_id" in n for n in rep.notes) and any("named 'my-run'" in n for n in rep.notes)
    # the same question text gives the same id in another read
    again = read(path, format="searchr1", columns={"text": "traj.out", "question": "prompt_text", "gold": "targets"})
    assert again["question_id"].to_list() == runs["question_id"].to_list()


def test_given_correct_kept_and_disagreement_reported(tmp_path):
    rows = [{"arm": "a", "question_id": "1", "question": "q", "gold": ["Paris"], "correct": True,
             "response": "<answer> Lyon </answer>"},
            {"arm": "a", "question_id": "2", "question": "q", "gold": ["Paris"], "correct": 0,
             "response": "<answer> It is Paris </answer>"}]
    path = tmp_path / "x.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    runs, rep = read(path, report=True)
    assert runs["correct"].to_list() == [True, False]  # never silently changed
    note = next(n for n in rep.notes if "disagrees" in n)
    assert note.startswith("1 rows") and "line 1" in note


def test_folder_reads_every_file(fixtures):
    runs, rep = read(fixtures, errors="skip", report=True)
    assert len(rep.formats) == 6
    # canonical.csv and canonical.jsonl hold the same keys: the second copy is reported
    assert len(rep.skipped) == 3 and all(s.field == "sample_id" for s in rep.skipped)
    assert rep.rows_in == rep.rows_kept + len(rep.skipped)


def test_searchr1_reply_opening_inside_think():
    # chat templates that open <think> in the prompt leave the reply starting inside it
    out = searchr1_text("plan first</think>\n<search> a </search><information> b </information><answer> c </answer>")
    assert out["steps"][0]["thought"] == "plan first" and out["steps"][0]["observation"] == "b"
    assert out["answer"] == "c"


def test_openai_content_parts_and_legacy_function_call():
    out = parse_messages([
        {"role": "user", "content": [{"type": "text", "text": "Who?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "look"}],
         "function_call": {"name": "search", "arguments": "{\"q\": \"who\"}"}},
        {"role": "function", "name": "search", "content": [{"type": "text", "text": "him"}]},
        {"role": "assistant", "content": "<answer>him</answer>"}])
    assert out["question"] == "Who?"
    assert out["steps"] == [{"thought": "look", "tool": "search", "arguments": "{\"q\": \"who\"}", "query": "who",
                             "observation": "him", "user": None}]
    assert out["answer"] == "him" and out["final"]
    # arguments that are not JSON are kept verbatim, and are the query
    broken = parse_messages([{"role": "user", "content": "q"},
                             {"role": "assistant", "tool_calls": [{"id": "1", "function": {"name": "search",
                                                                                           "arguments": "{oops"}}]},
                             {"role": "tool", "tool_call_id": "1", "content": "r"}])
    assert broken["steps"][0]["arguments"] == "{oops" and broken["steps"][0]["query"] == "{oops"
    assert not broken["final"]
