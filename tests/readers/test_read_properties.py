"""Property tests: readers never crash with anything but InputError, and round trips hold."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import polars as pl
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mechanism.core.errors import InputError
from mechanism.core.schema import STEP_FIELDS, STEP_FLAGS, validate
from mechanism.readers import FORMATS, atif, openai, react, read, searchr1
from mechanism.readers._fields import FieldMap

# MECHANISM_HYPOTHESIS_EXAMPLES=2000 for a longer hunt; the default keeps the suite fast
FAST = settings(max_examples=int(os.environ.get("MECHANISM_HYPOTHESIS_EXAMPLES", "60")), deadline=None,
                suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
# records that look enough like trajectories to reach the format parsers
KEYS = ["arm", "question_id", "sample_id", "question", "gold", "golden_answers", "answer", "correct",
        "response", "messages", "steps", "n_rounds", "traj", "reward", "pred", "schema_version", "role",
        "content", "tool_calls", "source", "step_id", "t_cap", "category"]
records = st.dictionaries(st.sampled_from(KEYS), json_values | st.sampled_from(
    ["<search> a </search>", "<answer> b </answer>", "Action: search[x]", "ATIF-v1.4", "<information>"]),
    max_size=8)


def _read_ok_or_input_error(path: Path, **kw) -> None:
    try:
        out = read(path, **kw)
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    validate(out)


@FAST
@given(st.binary(max_size=400), st.sampled_from([".jsonl", ".json", ".csv", ".parquet", ""]))
def test_arbitrary_bytes(data, suffix):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"f{suffix}"
        path.write_bytes(data)
        _read_ok_or_input_error(path)
        _read_ok_or_input_error(path, errors="skip")


@FAST
@given(st.lists(json_values | records, min_size=1, max_size=5), st.sampled_from(["auto", *FORMATS]))
def test_arbitrary_json_lines(values, fmt):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.jsonl"
        path.write_text("\n".join(json.dumps(v) for v in values))
        _read_ok_or_input_error(path, format=fmt)
        try:
            runs, rep = read(path, format=fmt, errors="skip", report=True)
        except InputError:
            return  # a file-level problem (unknown format, empty)
        # a session (Claude Code, Codex) is a file, its lines one record: the file counts once
        records = 1 if list(rep.formats.values())[0] in ("claudecode", "codex") else len(values)
        assert rep.rows_in == rep.rows_kept + len(rep.skipped) == records
        validate(runs)


@FAST
@given(json_values | records)
def test_arbitrary_json_document(value):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.json"
        path.write_text(json.dumps(value))
        _read_ok_or_input_error(path)
        _read_ok_or_input_error(path, format="atif", errors="skip")
        _read_ok_or_input_error(path, format="fireact")


@FAST
@given(records)
def test_format_parsers_only_raise_input_error(record):
    fields = FieldMap()
    for module in (searchr1, openai, react, atif):
        try:
            module.detect(record, fields)
            module.parse(record, fields)
        except InputError:
            pass


tag_text = st.lists(st.sampled_from(["<think>", "</think>", "<search>", "</search>", "<information>",
                                     "</information>", "<answer>", "</answer>", " a ", "b\n", "Action: search[x]",
                                     "Observation: o\n", "Thought 2: t\n", "]", "[", "Action: search\n",
                                     "Action Input: {\"q\": 1}\n", "Action Input: x\n", "Final Answer: y\n",
                                     "Code:\n```py\n", "```<end_code>\n", "final_answer(\"z\")\n", "Code: ",
                                     "<tool_call>", "</tool_call>", '{"name": "s", "arguments": {"q": 1}}',
                                     "<tool_response>", "</tool_response>", "```python\n", "```output\n", "```",
                                     "<|im_start|>user\n", "<|im_start|>assistant\n", "<|im_end|>",
                                     "<|begin_of_query|>", "<|end_of_query|>", "<|begin_search_result|>",
                                     "<|end_search_result|>", "<function=f>", "</function>",
                                     "<|start_header_id|>ipython<|end_header_id|>", "<|eot_id|>", "Action:\n```\n",
                                     '{"action": "s", "action_input": {"q": 1}}', '{"action": "Final Answer"}',
                                     "<|python_tag|>", 'brave_search.call(query="x")', "((", "<|eom_id|>",
                                     "<sql>", "</sql>", "SELECT * FROM t", "<observation>", "</observation>",
                                     "<reminder>", "</reminder>", "<solution>", "</solution>"]),
                   max_size=14).map("".join)


@FAST
@given(tag_text)
@example("<|python_tag|><|eot_id|><|python_tag|>")  # found by CI: two calls, the second `parallel`
def test_transcript_parsers_on_tag_soup(text):
    for parse in (searchr1.parse_text, react.parse_text):
        try:
            out = parse(text)
        except InputError:
            continue
        # every field of the schema, and beside them only its optional flags, written when true
        # (a second `<|python_tag|>` call before any result is `parallel`)
        for s in out["steps"]:
            assert set(STEP_FIELDS) <= set(s) and all(s[k] is True for k in set(s) - set(STEP_FIELDS)), s
            assert set(s) - set(STEP_FIELDS) <= set(STEP_FLAGS), s


words = st.text(alphabet=st.characters(blacklist_characters="<>", blacklist_categories=("Cs",)), max_size=20)


@FAST
@given(st.lists(st.tuples(words, words, words), max_size=4), st.one_of(st.none(), words), words)
def test_searchr1_round_trip(steps, answer, question):
    """A transcript written from known steps parses back to them."""
    text = "".join(f"<think>{t}</think>\n<search>{q}</search>\n<information>{o}</information>\n"
                   for t, q, o in steps)
    if answer is not None:
        text += f"<answer>{answer}</answer>"
    out = searchr1.parse_text(text)
    assert [s["query"] for s in out["steps"]] == [q.strip() for _, q, _ in steps]
    assert [s["observation"] for s in out["steps"]] == [o.strip() for _, _, o in steps]
    assert [s["thought"] for s in out["steps"]] == [t.strip() for t, _, _ in steps]
    assert [json.loads(s["arguments"]) for s in out["steps"]] == [{"query": q.strip()} for _, q, _ in steps]
    assert out["answer"] == (None if answer is None else answer.strip())


canonical_rows = st.lists(st.fixed_dictionaries({
    "arm": st.sampled_from(["base", "rl"]), "question": words.filter(bool), "gold": st.lists(words, max_size=3),
    "answer": st.one_of(st.none(), words), "correct": st.booleans(),
    "steps": st.lists(st.fixed_dictionaries({k: st.one_of(st.none(), words) for k in STEP_FIELDS}), max_size=3),
}), max_size=6)


@FAST
@given(canonical_rows)
def test_canonical_round_trip(rows):
    rows = [{**r, "question_id": f"q{i % 3}", "sample_id": i, "n_rounds": len(r["steps"])} for i, r in enumerate(rows)]
    if not rows:
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in rows))
        runs = read(path, format="canonical")
        assert runs.height == len(rows)
        for got, want in zip(runs.iter_rows(named=True), rows):
            for key in ("arm", "question_id", "sample_id", "question", "gold", "answer", "correct", "n_rounds",
                        "steps"):
                assert got[key] == want[key], key
        runs.write_parquet(Path(tmp) / "c.parquet")
        again = read(Path(tmp) / "c.parquet")
        assert again.equals(runs)
        csv = runs.with_columns(pl.col("gold").map_elements(lambda g: json.dumps(g.to_list()), return_dtype=pl.String),
                                pl.col("steps").map_elements(lambda s: json.dumps(s.to_list()), return_dtype=pl.String))
        csv.write_csv(Path(tmp) / "c.csv")
        from_csv = read(Path(tmp) / "c.csv")
        # CSV cannot tell an empty answer from a missing one
        assert from_csv.drop("answer").equals(runs.drop("answer"))


def _reference_find(record, paths):
    """The rule written out plainly: the first path, in order, that holds a non-null value."""
    for path in paths:
        node = record.get(path, None) if path in record else None
        if path not in record:
            node = record
            for part in path.split("."):
                node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            return path, node
    return None, None


@FAST
@given(st.dictionaries(st.sampled_from(["question", "problem", "q", "a.b", "a", "response", "text"]),
                       st.none() | st.text(max_size=3) | st.dictionaries(st.sampled_from(["b", "c"]),
                                                                         st.none() | st.integers(), max_size=2),
                       max_size=5),
       st.sampled_from([None, {"question": "a.b"}, {"question": "q"}, {"text": "text"}]))
def test_field_lookup_matches_reference(record, columns):
    fields = FieldMap(columns)
    for name in ("question", "text", "arm"):
        for _ in range(2):  # the second lookup goes through the cached plan
            assert fields.find(record, name) == _reference_find(record, fields.paths(name))
        assert fields.find_all(record, (name,))[name] == _reference_find(record, fields.paths(name))


def _loose(sensible):
    """Mostly well-formed values, sometimes any JSON: reaches deep into the parsers."""
    return st.one_of(sensible, sensible, sensible, json_values)


tool_call = st.fixed_dictionaries({}, optional={
    "id": _loose(st.sampled_from(["c1", "c2"])), "type": _loose(st.just("function")),
    "function": _loose(st.fixed_dictionaries({}, optional={
        "name": _loose(st.sampled_from(["search", "finish", "lookup"])),
        "arguments": _loose(st.sampled_from(['{"query": "a"}', '{"answer": "b"}', "{bad", "{}", '["x"]']))}))})
chat_message = st.fixed_dictionaries({}, optional={
    "role": _loose(st.sampled_from(["system", "user", "assistant", "tool", "function"])),
    "content": _loose(st.one_of(st.none(), st.text(max_size=20), st.sampled_from(
        ["Thought: t\nAction: search[a]", "Observation: o", "Action: finish[b]", "<answer>b</answer>"]))),
    "tool_calls": _loose(st.lists(tool_call, max_size=3)),
    "tool_call_id": _loose(st.sampled_from(["c1", "c2", "c3"])),
})
atif_step = st.fixed_dictionaries({}, optional={
    "step_id": _loose(st.integers(1, 5)), "source": _loose(st.sampled_from(["system", "user", "agent"])),
    "message": _loose(st.text(max_size=20)), "reasoning_content": _loose(st.text(max_size=10)),
    "tool_calls": _loose(st.lists(st.fixed_dictionaries({}, optional={
        "tool_call_id": _loose(st.sampled_from(["c1", "c2"])),
        "function_name": _loose(st.sampled_from(["search", "finish"])),
        "arguments": _loose(st.fixed_dictionaries({}, optional={"query": st.text(max_size=5),
                                                               "answer": st.text(max_size=5)}))}), max_size=3)),
    "observation": _loose(st.fixed_dictionaries({}, optional={"results": _loose(st.lists(
        st.fixed_dictionaries({}, optional={"source_call_id": _loose(st.sampled_from(["c1", "c2"])),
                                            "content": _loose(st.text(max_size=10))}), max_size=3))})),
})


@FAST
@given(st.lists(chat_message, max_size=7), st.lists(atif_step, max_size=5), st.sampled_from(["x", "ATIF-v1.4", None]))
def test_structured_documents_only_raise_input_error(messages, steps, version):
    fields = FieldMap()
    record = {"question": "q", "gold": ["b"], "messages": messages, "steps": steps, "schema_version": version}
    for module in (openai, react, atif):
        try:
            out = module.parse(record, fields)
        except InputError:
            continue
        assert all(isinstance(s["tool"], str) for s in out["steps"])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.jsonl"
        path.write_text(json.dumps(record))
        for fmt in ("auto", "openai", "react", "atif"):
            _read_ok_or_input_error(path, format=fmt)


# content blocks as other chat APIs log calls and results (Anthropic, Bedrock, Gemini, Responses, LangChain)
content_block = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["text", "thinking", "tool_use", "tool_result", "image",
                                                    "tool_odd"])},
                          optional={"text": _loose(st.text(max_size=8)), "thinking": _loose(st.text(max_size=8)),
                                    "id": _loose(st.sampled_from(["t1", "t2"])),
                                    "tool_use_id": _loose(st.sampled_from(["t1", "t2", "t3"])),
                                    "name": _loose(st.sampled_from(["search", "finish"])),
                                    "input": _loose(st.fixed_dictionaries({}, optional={"query": st.text(max_size=5)})),
                                    "content": _loose(st.text(max_size=8)), "is_error": _loose(st.booleans())}),
    st.fixed_dictionaries({}, optional={
        "toolUse": _loose(st.fixed_dictionaries({}, optional={"toolUseId": _loose(st.just("t1")),
                                                             "name": _loose(st.just("search")), "input": json_values})),
        "toolResult": _loose(st.fixed_dictionaries({}, optional={"toolUseId": _loose(st.just("t1")),
                                                                "content": json_values, "status": json_values})),
        "functionCall": _loose(st.fixed_dictionaries({}, optional={"name": _loose(st.just("search")),
                                                                  "args": json_values})),
        "functionResponse": _loose(st.fixed_dictionaries({}, optional={"response": json_values})),
        "text": _loose(st.text(max_size=8))}))
block_message = st.one_of(
    st.fixed_dictionaries({}, optional={
        "role": _loose(st.sampled_from(["user", "assistant", "model", "function"])),
        "content": _loose(st.lists(content_block, max_size=4)), "parts": _loose(st.lists(content_block, max_size=4))}),
    st.fixed_dictionaries({"from": st.sampled_from(["human", "gpt", "function_call", "observation", "odd"])},
                          optional={"value": _loose(st.sampled_from(['{"name": "s", "arguments": {"q": 1}}', "x",
                                                                     "<tool_call>{}</tool_call>", "{"]))}),
    st.fixed_dictionaries({"type": st.sampled_from(["human", "ai", "tool", "chat", "system"])}, optional={
        "data": _loose(st.fixed_dictionaries({}, optional={
            "content": _loose(st.text(max_size=8)), "role": json_values, "status": _loose(st.just("error")),
            "tool_call_id": _loose(st.just("c1")),
            "tool_calls": _loose(st.lists(st.fixed_dictionaries({}, optional={
                "name": _loose(st.just("search")), "args": json_values, "id": _loose(st.just("c1"))}), max_size=2))})),
        "content": _loose(st.text(max_size=8))}),
    st.fixed_dictionaries({"type": st.sampled_from(["function_call", "function_call_output", "reasoning", "message"])},
                          optional={"call_id": _loose(st.just("c1")), "name": _loose(st.just("search")),
                                    "arguments": _loose(st.just('{"query": "a"}')), "output": json_values,
                                    "summary": json_values, "role": _loose(st.just("user"))}))


@FAST
@given(st.lists(block_message, max_size=7))
def test_content_block_chats_only_raise_input_error(messages):
    record = {"question": "q", "gold": ["b"], "messages": messages}
    try:
        out = openai.parse(record, FieldMap())
    except InputError as exc:
        assert "\n" not in str(exc)
    else:
        assert all(isinstance(s["tool"], str) for s in out["steps"])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.jsonl"
        path.write_text(json.dumps(record))
        _read_ok_or_input_error(path)
