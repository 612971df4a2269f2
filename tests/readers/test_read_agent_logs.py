"""Agents' logs in the shapes other harnesses and RL recipes write, read as what they are.

Chat APIs (Anthropic Messages, Bedrock Converse, Gemini, OpenAI Responses, LangChain, ShareGPT)
read as OpenAI's: the same episode in every form gives the same steps, failures and moves.
Transcripts (LangChain's ReAct, smolagents' code actions, Hermes / Qwen tool calls, ToRL code
fences, R1-Searcher's and Search-o1's delimiters) read call by call with their answers. A call
in a form the reader does not know is an error that names file, line and field, never a
trajectory without its calls.
"""
from __future__ import annotations

import json

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mechanism as mx
from mechanism.core.errors import InputError

QUESTION = "Which river flows through the capital of the country where the Eiffel Tower stands?"
# one episode: a search that fails (rate limited), its retry, two lookups at once, an answer
CALLS = [("search", {"query": "Eiffel Tower country"}, '{"error": "rate limited"}', True),
         ("search", {"query": "Eiffel Tower country"}, "The Eiffel Tower is in Paris, France.", False),
         ("lookup", {"entity": "Paris"}, "Paris is the capital of France.", False),
         ("lookup", {"entity": "Seine"}, "The Seine flows through Paris.", False)]
THOUGHTS = ["I will find the country first.", "The error was transient; again.", "Two lookups at once."]
ANSWER = "The answer is the Seine."


def _openai() -> list[dict]:
    msgs: list[dict] = [{"role": "user", "content": QUESTION}]
    for turn, (thought, calls) in enumerate(zip(THOUGHTS, (CALLS[:1], CALLS[1:2], CALLS[2:]))):
        ids = [f"c{turn}{j}" for j in range(len(calls))]
        msgs.append({"role": "assistant", "content": thought, "tool_calls": [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, (n, a, _, _) in zip(ids, calls)]})
        msgs += [{"role": "tool", "tool_call_id": i, "content": r} for i, (_, _, r, _) in zip(ids, calls)]
    return msgs + [{"role": "assistant", "content": ANSWER}]


def _anthropic() -> list[dict]:
    msgs: list[dict] = [{"role": "user", "content": [{"type": "text", "text": QUESTION}]}]
    for turn, (thought, calls) in enumerate(zip(THOUGHTS, (CALLS[:1], CALLS[1:2], CALLS[2:]))):
        ids = [f"toolu_{turn}{j}" for j in range(len(calls))]
        msgs.append({"role": "assistant", "content": [{"type": "thinking", "thinking": thought, "signature": "x"}] + [
            {"type": "tool_use", "id": i, "name": n, "input": a} for i, (n, a, _, _) in zip(ids, calls)]})
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": i, "content": [{"type": "text", "text": r}], "is_error": f}
            for i, (_, _, r, f) in zip(ids, calls)]})
    return msgs + [{"role": "assistant", "content": [{"type": "text", "text": ANSWER}]}]


def _bedrock() -> list[dict]:
    msgs: list[dict] = [{"role": "user", "content": [{"text": QUESTION}]}]
    for turn, (thought, calls) in enumerate(zip(THOUGHTS, (CALLS[:1], CALLS[1:2], CALLS[2:]))):
        ids = [f"tooluse_{turn}{j}" for j in range(len(calls))]
        msgs.append({"role": "assistant", "content": [{"text": thought}] + [
            {"toolUse": {"toolUseId": i, "name": n, "input": a}} for i, (n, a, _, _) in zip(ids, calls)]})
        msgs.append({"role": "user", "content": [
            {"toolResult": {"toolUseId": i, "content": [{"json": json.loads(r)} if r.startswith("{") else {"text": r}],
                            "status": "error" if f else "success"}} for i, (_, _, r, f) in zip(ids, calls)]})
    return msgs + [{"role": "assistant", "content": [{"text": ANSWER}]}]


def _gemini() -> list[dict]:
    # no call ids: results answer the calls in order
    msgs: list[dict] = [{"role": "user", "parts": [{"text": QUESTION}]}]
    for thought, calls in zip(THOUGHTS, (CALLS[:1], CALLS[1:2], CALLS[2:])):
        msgs.append({"role": "model", "parts": [{"text": thought}] + [
            {"functionCall": {"name": n, "args": a}} for n, a, _, _ in calls]})
        msgs.append({"role": "user", "parts": [
            {"functionResponse": {"name": n, "response": json.loads(r) if r.startswith("{") else {"result": r}}}
            for n, _, r, _ in calls]})
    return msgs + [{"role": "model", "parts": [{"text": ANSWER}]}]


def _responses() -> list[dict]:
    items: list[dict] = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": QUESTION}]}]
    for turn, (thought, calls) in enumerate(zip(THOUGHTS, (CALLS[:1], CALLS[1:2], CALLS[2:]))):
        items.append({"type": "reasoning", "id": f"rs_{turn}", "summary": [{"type": "summary_text", "text": thought}]})
        ids = [f"call_{turn}{j}" for j in range(len(calls))]
        items += [{"type": "function_call", "call_id": i, "name": n, "arguments": json.dumps(a)}
                  for i, (n, a, _, _) in zip(ids, calls)]
        items += [{"type": "function_call_output", "call_id": i, "output": r} for i, (_, _, r, _) in zip(ids, calls)]
    return items + [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": ANSWER}]}]


def _langchain() -> list[dict]:
    # messages_to_dict: {"type", "data"}; flat tool calls; a failed tool call's status "error"
    msgs: list[dict] = [{"type": "human", "data": {"content": QUESTION}}]
    for turn, (thought, calls) in enumerate(zip(THOUGHTS, (CALLS[:1], CALLS[1:2], CALLS[2:]))):
        ids = [f"call_{turn}{j}" for j in range(len(calls))]
        msgs.append({"type": "ai", "data": {"content": thought, "tool_calls": [
            {"name": n, "args": a, "id": i, "type": "tool_call"} for i, (n, a, _, _) in zip(ids, calls)]}})
        msgs += [{"type": "tool", "data": {"content": r, "tool_call_id": i, "status": "error" if f else "success"}}
                 for i, (_, _, r, f) in zip(ids, calls)]
    return msgs + [{"type": "ai", "data": {"content": ANSWER}}]


def _sharegpt() -> list[dict]:
    # LLaMA-Factory's agent data: a gpt turn's words, then one function_call turn per call
    turns: list[dict] = [{"from": "system", "value": "You may call tools."}, {"from": "human", "value": QUESTION}]
    for thought, calls in zip(THOUGHTS, (CALLS[:1], CALLS[1:2], CALLS[2:])):
        turns.append({"from": "gpt", "value": thought})
        turns += [{"from": "function_call", "value": json.dumps({"name": n, "arguments": a})} for n, a, _, _ in calls]
        turns += [{"from": "observation", "value": r} for _, _, r, _ in calls]
    return turns + [{"from": "gpt", "value": ANSWER}]


FORMS = {"sharegpt": ("conversations", _sharegpt), "langchain": ("messages", _langchain),
         "openai": ("messages", _openai), "anthropic": ("messages", _anthropic), "bedrock": ("messages", _bedrock),
         "gemini": ("contents", _gemini), "responses": ("messages", _responses)}


def _write(tmp_path, form: str, n: int = 3):
    field, make = FORMS[form]
    path = tmp_path / f"{form}.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "arm": "base", field: make(), "gold": "Seine"}) + "\n"
                            for i in range(n)))
    return path


@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_form_reads_the_episode_call_by_call(tmp_path, form):
    runs, rep = mx.read(_write(tmp_path, form), report=True)
    assert rep.formats == {str(tmp_path / f"{form}.jsonl"): "openai"}
    assert runs["n_rounds"].to_list() == [4, 4, 4]
    assert runs["answer"].to_list() == ["the Seine"] * 3 and runs["correct"].all()
    steps = runs["steps"][0]
    assert [s["tool"] for s in steps] == [c[0] for c in CALLS]
    assert [s["query"] for s in steps] == [next(iter(c[1].values())) for c in CALLS]
    assert [json.loads(s["arguments"]) for s in steps] == [c[1] for c in CALLS]
    # each result reached its own call, parallel calls included (Gemini's by order)
    for step, (_, _, result, _) in zip(steps, CALLS):
        assert result in step["observation"] or json.loads(result) == json.loads(step["observation"])
    # the reasoning before a call is its thought, and never the answer
    assert [s["thought"] for s in steps] == [THOUGHTS[0], THOUGHTS[1], THOUGHTS[2], None]


@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_form_gives_the_same_moves_and_failures(tmp_path, form):
    reference = mx.segment(mx.read(_write(tmp_path, "openai")))
    moves = mx.segment(mx.read(_write(tmp_path, form)))
    columns = ["step", "tool", "move", "relation", "sources", "failed", "token"]
    assert moves.select(columns).equals(reference.select(columns))
    assert moves.filter(pl.col("tool") == "search")["failed"].to_list() == [True, False] * 3


def test_the_apis_own_error_flag_marks_a_call_whose_result_reads_as_success(tmp_path):
    # Anthropic's is_error and Bedrock's status "error" on a result whose text looks fine
    msgs = _anthropic()
    msgs[2]["content"][0]["content"] = [{"type": "text", "text": "Eiffel Tower: see page 2"}]
    path = tmp_path / "flag.jsonl"
    path.write_text(json.dumps({"id": "q", "arm": "a", "messages": msgs, "gold": "Seine"}) + "\n")
    runs = mx.read(path)
    assert [s["failed"] for s in runs["steps"][0]][:2] == [True, None]
    assert mx.segment(runs)["failed"].to_list()[:2] == [True, False]


def test_a_user_turn_beside_tool_results_is_the_users(tmp_path):
    msgs = _anthropic()
    msgs[4]["content"].append({"type": "text", "text": "Please also check the river's length."})
    path = tmp_path / "turn.jsonl"
    path.write_text(json.dumps({"id": "q", "arm": "a", "messages": msgs, "gold": "Seine"}) + "\n")
    steps = mx.read(path)["steps"][0]
    assert steps[2]["user"] == "Please also check the river's length."
    assert steps[1]["observation"] == "The Eiffel Tower is in Paris, France."


def test_a_call_block_of_an_unknown_form_names_file_line_and_field(tmp_path):
    msgs = _openai()
    msgs[1] = {"role": "assistant", "content": [{"type": "text", "text": "hm"},
                                                  {"type": "custom_tool_invocation", "tool": "search", "q": "x"}]}
    path = tmp_path / "odd.jsonl"
    path.write_text(json.dumps({"id": "q0", "arm": "a", "messages": _openai(), "gold": "Seine"}) + "\n"
                    + json.dumps({"id": "q1", "arm": "a", "messages": msgs, "gold": "Seine"}) + "\n")
    with pytest.raises(InputError) as info:
        mx.read(path)
    message = str(info.value)
    assert message.startswith(f"{path}, line 2") and "messages[1].content[1]" in message
    assert "custom_tool_invocation" in message and "\n" not in message
    runs, rep = mx.read(path, errors="skip", report=True)
    assert runs.height == 1 and [s.line for s in rep.skipped] == [2]


def _forms_of(turns) -> dict[str, list[dict]]:
    """One episode (turns of parallel calls: name, query, result, failed) in two APIs' forms."""
    oa: list[dict] = [{"role": "user", "content": QUESTION}]
    an: list[dict] = [{"role": "user", "content": [{"type": "text", "text": QUESTION}]}]
    for t, calls in enumerate(turns):
        ids = [f"id{t}_{j}" for j in range(len(calls))]
        oa.append({"role": "assistant", "content": f"thought {t}", "tool_calls": [
            {"id": i, "function": {"name": n, "arguments": json.dumps({"query": q})}}
            for i, (n, q, _, _) in zip(ids, calls)]})
        oa += [{"role": "tool", "tool_call_id": i, "content": r} for i, (_, _, r, _) in zip(ids, calls)]
        an.append({"role": "assistant", "content": [{"type": "text", "text": f"thought {t}"}] + [
            {"type": "tool_use", "id": i, "name": n, "input": {"query": q}} for i, (n, q, _, _) in zip(ids, calls)]})
        # results in any order inside the user message: matched by id
        an.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": r}
                                               for i, (_, _, r, _) in reversed(list(zip(ids, calls)))]})
    oa.append({"role": "assistant", "content": ANSWER})
    an.append({"role": "assistant", "content": [{"type": "text", "text": ANSWER}]})
    return {"openai": oa, "anthropic": an}


_word = st.text("abcdefg xyz", min_size=1, max_size=12).filter(str.strip)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.tuples(st.sampled_from(["search", "lookup", "open_page"]), _word,
                                   st.one_of(_word, st.just("Error: not found")), st.booleans()),
                         min_size=1, max_size=3), min_size=1, max_size=5))
def test_anthropic_blocks_read_as_the_same_openai_episode(tmp_path_factory, turns):
    tmp = tmp_path_factory.mktemp("forms")
    read = {}
    for form, msgs in _forms_of(turns).items():
        path = tmp / f"{form}.jsonl"
        path.write_text(json.dumps({"id": "q", "arm": "a", "messages": msgs, "gold": "Seine"}) + "\n")
        read[form] = mx.read(path)
    assert read["anthropic"]["steps"].to_list() == read["openai"]["steps"].to_list()
    assert read["anthropic"]["n_rounds"].item() == sum(len(c) for c in turns)
    # every call after a message's first is marked as issued with the one before it
    together = [st.get("parallel") is True for st in read["openai"]["steps"][0]]
    assert together == [j > 0 for calls in turns for j in range(len(calls))]


def _transcript(tmp_path, text: str, *, question: str = QUESTION, gold: str = "Seine"):
    """(path, runs, report) of a file holding one transcript record, read."""
    path = tmp_path / "transcript.jsonl"
    path.write_text(json.dumps({"id": "q", "arm": "a", "question": question, "response": text, "gold": gold}) + "\n")
    runs, rep = mx.read(path, report=True)
    return path, runs, rep


def _mrkl(turns=CALLS[1:]) -> str:
    """LangChain's ReAct (MRKL) transcript of the episode without its failed call."""
    lines = [f"Question: {QUESTION}"]
    for (name, args, result, _), thought in zip(turns, [*THOUGHTS, "And the river."]):
        arg = json.dumps(args) if name == "lookup" else next(iter(args.values()))
        lines += [f"Thought: {thought}", f"Action: {name}", f"Action Input: {arg}", f"Observation: {result}"]
    return "\n".join([*lines, "Thought: I now know the final answer", "Final Answer: the Seine"])


def test_langchain_react_reads_named_tools_their_input_and_the_final_answer(tmp_path):
    path, runs, rep = _transcript(tmp_path, _mrkl())
    assert rep.formats == {str(path): "react"}
    assert runs["answer"].to_list() == ["the Seine"] and runs["correct"].all()
    steps = runs["steps"][0]
    assert [(s["tool"], s["query"]) for s in steps] == [("search", "Eiffel Tower country"), ("lookup", "Paris"),
                                                       ("lookup", "Seine")]
    # a JSON input is the call's arguments, as a chat API's would be
    want = [{"query": "Eiffel Tower country"}, *(c[1] for c in CALLS[2:])]
    assert [json.loads(s["arguments"]) for s in steps] == want
    assert [s["observation"] for s in steps] == [c[2] for c in CALLS[1:]]
    assert not any("generic tool" in n for n in rep.notes)  # named tools, not bare commands


def test_an_action_input_without_its_action_stays_thought_text(tmp_path):
    text = ("Thought: hm\nAction Input: stray\nAction: search\nAction Input: Paris\nObservation: Paris is in France.\n"
            "Final Answer: France")
    path = tmp_path / "stray.jsonl"
    path.write_text(json.dumps({"id": "q", "arm": "a", "question": "Where is Paris?", "response": text,
                                "gold": "France"}) + "\n")
    steps = mx.read(path)["steps"][0]
    assert [(s["tool"], s["query"]) for s in steps] == [("search", "Paris")]
    assert steps[0]["thought"] == "hm\nAction Input: stray"


SMOL = ("Thought: I will count the pairs first.\nCode:\n```py\nimport itertools\n"
        "pairs = list(itertools.combinations(range(13), 2))\nprint(len(pairs))\n```<end_code>\n"
        "Observation: Execution logs:\n78\nLast output from code snippet:\nNone\n"
        "Thought: Now the answer.\nCode:\n```py\nfinal_answer(\"78\")\n```<end_code>")


def test_smolagents_code_actions_are_interpreter_calls_and_final_answer_ends(tmp_path):
    path, runs, rep = _transcript(tmp_path, SMOL, question="How many pairs of 13 items?", gold="78")
    assert rep.formats == {str(path): "react"}
    assert runs["answer"].to_list() == ["78"] and runs["correct"].all() and runs["n_rounds"].to_list() == [1]
    (step,) = runs["steps"][0]
    assert step["tool"] == "python_interpreter" and step["thought"] == "I will count the pairs first."
    assert json.loads(step["arguments"])["code"].splitlines()[0] == "import itertools"
    assert step["observation"].startswith("Execution logs:\n78")
    # the program is read by what it does, as any code field is
    assert mx.segment(runs, action_field={"python_interpreter": "code"})["tool"].to_list()[0] == "itertools"
    # and found so without being told, over programs of several kinds on several questions
    records = [{"id": f"q{i}", "arm": "a", "sample_id": j, "question": f"q{i}?", "gold": "78",
                "response": SMOL if (i + j) % 2 else SMOL.replace("import itertools", "import sympy")}
               for i in range(6) for j in range(2)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    space = mx.StrategySpace(embedder="hashing-64", progress=False, n_bootstrap=0).fit(mx.read(path))
    assert space.action_tools_ == {"python_interpreter": "code"}


CODEACT = ("Thought: Stock everywhere, then the quote.\nCode:\n```py\nfor w in ['W1', 'W2']:\n"
           "    print(w, check_stock(sku='S1', warehouse=w))\nq = quote_shipping(warehouse='W2', units=5)\n"
           "print(q)\n```<end_code>\nObservation: Execution logs:\nW1 3\nW2 9\n{'cost': 12.5}\n"
           "Last output from code snippet:\nNone\n"
           "Thought: Answer.\nCode:\n```py\ncost = q['cost'] * 2\nfinal_answer(f'W2, {cost} EUR')\n```<end_code>\n"
           "Observation: Execution logs:\n\nCode execution failed at line 'cost = q[\"cost\"] * 2' due to: "
           "InterpreterError: q is not defined\n"
           "Thought: Again.\nCode:\n```py\nfinal_answer(f'W2, {12.5 * 2} EUR')\n```<end_code>\n"
           "Observation: Execution logs:\n\nLast output from code snippet:\nW2, 25.0 EUR")


def test_codeact_programs_answer_with_the_value_they_gave_and_fail_in_smolagents_words(tmp_path):
    # a `final_answer(...)` of an expression gives the value the run reports, not the expression;
    # a program that failed before its `final_answer` gave nothing, and its failure is read
    path, runs, rep = _transcript(tmp_path, CODEACT, question="Which warehouse, at what cost?", gold="W2, 25.0 EUR")
    assert runs["answer"].to_list() == ["W2, 25.0 EUR"] and runs["correct"].all()
    steps = runs["steps"][0]
    assert len(steps) == 2 and "Code execution failed" in steps[1]["observation"]
    assert mx.segment(runs, action_field={"python_interpreter": "code"})["failed"].to_list() == [False, True, False]
    # a program calling the agent's tools is read by them: several tools, one verb (and its loop)
    tools = mx.segment(runs, action_field={"python_interpreter": "code"})["tool"].to_list()
    assert tools[0] == "several_tools_loop"


def test_a_code_line_without_a_program_stays_thought_text(tmp_path):
    text = "Thought: Code: none needed here.\nCode: the answer is known\nAction: finish[78]"
    path = tmp_path / "words.jsonl"
    path.write_text(json.dumps({"id": "q", "arm": "a", "question": "q?", "response": text, "gold": "78"}) + "\n")
    runs = mx.read(path)
    assert runs["answer"].to_list() == ["78"] and runs["n_rounds"].to_list() == [0]


def _hermes_text(*, template: bool = True, answer_tag: bool = False) -> str:
    """A Qwen chat-template transcript with Hermes function calling: an example turn in the
    prompt, a failed call and its retry, two calls at once answered in order, an answer in words."""
    im = ("<|im_start|>", "<|im_end|>")
    turns = [f"{im[0]}system\nYou are helpful. Example:{im[1]}\n{im[0]}user\nWhat is 2+2?{im[1]}\n"
             f"{im[0]}assistant\n<tool_call>\n{json.dumps({'name': 'calc', 'arguments': {'expr': '2+2'}})}\n"
             f"</tool_call>{im[1]}\n"
             f"{im[0]}user\n{QUESTION}{im[1]}\n{im[0]}assistant\n"] if template else [""]
    for thought, calls in zip(THOUGHTS, (CALLS[:1], CALLS[1:2], CALLS[2:])):
        turns.append(f"<think>{thought}</think>\n" + "".join(
            f"<tool_call>\n{json.dumps({'name': n, 'arguments': a})}\n</tool_call>\n" for n, a, _, _ in calls)
            + f"{im[1]}\n{im[0]}user\n" + "".join(f"<tool_response>\n{r}\n</tool_response>\n" for _, _, r, _ in calls)
            + f"{im[1]}\n{im[0]}assistant\n")
    return "".join(turns) + ("<answer>the Seine</answer>" if answer_tag else ANSWER)


@pytest.mark.parametrize("template, answer_tag", [(True, False), (False, False), (True, True)])
def test_hermes_function_calling_in_a_transcript_reads_call_by_call(tmp_path, template, answer_tag):
    path = tmp_path / "hermes.jsonl"
    path.write_text(json.dumps({"id": "q", "arm": "a", "question": QUESTION, "gold": "Seine",
                                "response": _hermes_text(template=template, answer_tag=answer_tag)}) + "\n")
    runs, rep = mx.read(path, report=True)
    assert rep.formats == {str(path): "searchr1"}
    assert runs["answer"].to_list() == ["the Seine"] and runs["correct"].all()
    steps = runs["steps"][0]
    # the prompt's example call is not the agent's; the retry and both parallel calls are
    assert [(s["tool"], json.loads(s["arguments"])) for s in steps] == [(n, a) for n, a, _, _ in CALLS]
    assert [s["observation"] for s in steps] == [r for _, _, r, _ in CALLS]
    assert [s["thought"] for s in steps] == [*THOUGHTS, None]
    assert mx.segment(runs).filter(pl.col("tool") == "search")["failed"].to_list() == [True, False]


def test_hermes_function_calling_in_chat_messages_reads_as_tool_calls(tmp_path):
    msgs: list[dict] = [{"role": "user", "content": QUESTION}]
    for thought, calls in zip(THOUGHTS, (CALLS[:1], CALLS[1:2], CALLS[2:])):
        msgs.append({"role": "assistant", "content": f"{thought}\n" + "".join(
            f"<tool_call>\n{json.dumps({'name': n, 'arguments': a})}\n</tool_call>" for n, a, _, _ in calls)})
        msgs.append({"role": "user", "content": "".join(f"<tool_response>\n{r}\n</tool_response>"
                                                        for _, _, r, _ in calls)})
    msgs.append({"role": "assistant", "content": ANSWER})
    path = tmp_path / "hermes_chat.jsonl"
    path.write_text(json.dumps({"id": "q", "arm": "a", "messages": msgs, "gold": "Seine"}) + "\n")
    reference = mx.read(_write(tmp_path, "openai"))
    runs = mx.read(path)
    assert runs["steps"].to_list()[0] == reference["steps"].to_list()[0]
    assert runs["answer"].to_list() == ["the Seine"]


def test_a_tool_call_that_is_not_json_is_read_by_its_name_and_noted(tmp_path):
    text = ('<tool_call>{"name": "search", "arguments": {"query": "Eiffel"</tool_call>'
            "<tool_response>Error: malformed call</tool_response><tool_call>look it up</tool_call>"
            "<tool_response>?</tool_response>The answer is the Seine.")
    _, runs, rep = _transcript(tmp_path, text)
    assert [s["tool"] for s in runs["steps"][0]] == ["search", "tool_call"]
    assert any("not a JSON call object" in n for n in rep.notes)
    assert runs["answer"].to_list() == ["the Seine"]
    # in chat messages the same bodies read the same way, and are noted the same way
    chat = tmp_path / "hermes_chat.jsonl"
    chat.write_text(json.dumps({"id": "q", "arm": "a", "gold": "Seine", "messages": [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": '<tool_call>{"name": "search", "arguments": {"query": "Eiffel"</tool_call>'},
        {"role": "user", "content": "<tool_response>Error: malformed call</tool_response>"},
        {"role": "assistant", "content": "<tool_call>look it up</tool_call>"},
        {"role": "tool", "content": "<tool_response>?</tool_response>"},
        {"role": "assistant", "content": "The answer is the Seine."}]}) + "\n")
    chat_runs, chat_rep = mx.read(chat, report=True)
    assert chat_runs["steps"].to_list() == runs["steps"].to_list()
    assert any("not a JSON call object" in n for n in chat_rep.notes)


TORL = ("Count the pairs.\n```python\nfrom itertools import combinations\n"
        "print(len(list(combinations(range(13), 2)))\n```\n```output\n78\n```\nThen check with the formula.\n"
        "```python\nfrom math import comb\nprint(comb(13, 2))\n```\n```output\n78\n```\nSo the answer is \\boxed{78}.")


def test_code_fence_transcripts_read_each_program_and_its_output(tmp_path):
    path, runs, rep = _transcript(tmp_path, TORL, question="Pairs of 13?", gold="78")
    assert rep.formats == {str(path): "searchr1"}
    assert runs["answer"].to_list() == ["78"] and runs["correct"].all()
    steps = runs["steps"][0]
    assert [s["tool"] for s in steps] == ["python", "python"]
    assert [s["observation"] for s in steps] == ["78", "78"]
    assert [s["thought"] for s in steps] == ["Count the pairs.", "Then check with the formula."]
    assert json.loads(steps[1]["arguments"])["code"].startswith("from math import comb")
    # read by what the program does
    tools = mx.segment(runs, action_field={"python": "code"})["tool"].to_list()
    assert tools == ["itertools", "math", "answer"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "q", "arm": "a", "question": "q?", "response": "```output\n1\n```"}) + "\n")
    with pytest.raises(InputError, match=r"line 1.*```output block without a ```python block"):
        mx.read(bad)


@pytest.mark.parametrize("delimiters", [("<|begin_of_query|>", "<|end_of_query|>", "<|begin_of_documents|>",
                                         "<|end_of_documents|>"),
                                        ("<|begin_search_query|>", "<|end_search_query|>", "<|begin_search_result|>",
                                         "<|end_search_result|>")])
def test_other_search_agents_delimiters_read_as_searches(tmp_path, delimiters):
    q0, q1, d0, d1 = delimiters
    searches = [(c[1]["query"], c[2]) for c in CALLS[:2]]
    text = "".join(f"<think>{t}</think>{q0}{q}{q1}\n{d0}\n{r}\n{d1}\n" for t, (q, r) in zip(THOUGHTS, searches))
    path, runs, rep = _transcript(tmp_path, text + "So the answer is \\boxed{Seine}.")
    assert rep.formats == {str(path): "searchr1"}
    steps = runs["steps"][0]
    assert [(s["tool"], s["query"], s["observation"]) for s in steps] == [("search", q, r) for q, r in searches]
    assert [s["thought"] for s in steps] == THOUGHTS[:2]
    assert runs["answer"].to_list() == ["Seine"]
    assert mx.segment(runs)["failed"].to_list() == [True, False, False]


def _skyrl_sql(n_turns: int = 5) -> str:
    """A SkyRL-SQL episode as its environment writes the chat: `<sql>` statements, `<observation>`
    results that end in a `<reminder>` of the turns left, a `<solution>`."""
    statements = [("SELECT name FROM sqlite_master WHERE type = 'table'", "name\norders\ncustomers"),
                  ("SELECT COUNT(*) FROM orders WHERE cty = 'Lyon'",
                   "Error executing SQL: no such column: cty, db file: /db/shop/shop.sqlite"),
                  ("SELECT COUNT(*) FROM orders WHERE city = 'Lyon'", "COUNT(*)\n7")]
    turns = ["<|im_start|>system\nAnswer with <sql>...</sql> and <solution>...</solution>.<|im_end|>\n"
             "<|im_start|>user\nHow many orders came from Lyon?<|im_end|>\n"]
    for i, (sql, result) in enumerate(statements):
        turns.append(f"<|im_start|>assistant\n<think>Step {i}.</think>\n<sql>\n{sql}\n</sql><|im_end|>\n"
                     f"<|im_start|>user\n\n\n<observation>{result}\n<reminder>You have {n_turns - i - 1} turns left "
                     "to complete the task.</reminder></observation>\n\n<|im_end|>\n")
    return "".join(turns) + "<|im_start|>assistant\n<think>Seven.</think>\n<solution>7</solution><|im_end|>"


def test_skyrl_sql_transcripts_read_each_statement_its_result_and_the_solution(tmp_path):
    path, runs, rep = _transcript(tmp_path, _skyrl_sql(), question="How many orders came from Lyon?", gold="7")
    assert rep.formats == {str(path): "searchr1"}
    assert runs["answer"].to_list() == ["7"] and runs["correct"].all()
    steps = runs["steps"][0]
    assert [s["tool"] for s in steps] == ["sql"] * 3
    assert [s["thought"] for s in steps] == ["Step 0.", "Step 1.", "Step 2."]
    assert json.loads(steps[2]["arguments"]) == {"sql": "SELECT COUNT(*) FROM orders WHERE city = 'Lyon'"}
    assert [s["observation"] for s in steps][::2] == ["name\norders\ncustomers", "COUNT(*)\n7"]  # no reminder
    # read by what each statement does; the misspelt column failed and its retry is one attempt
    moves = mx.segment(runs, action_field={"sql": "sql"})
    assert moves["tool"].to_list() == ["schema", "select", "select", "answer"]
    assert moves["failed"].to_list() == [False, True, False, False]
    # a Search-R1 thought that names these tags is words, kept as written, not a call or an error
    text = "<think>No <sql> here, nor an </observation>.</think><search>Seine</search><information>r</information>"
    _, runs, _ = _transcript(tmp_path, text + "<answer>Seine</answer>")
    assert runs["steps"][0][0]["thought"] == "No <sql> here, nor an </observation>."
    assert [s["tool"] for s in runs["steps"][0]] == ["search"]


def test_a_transcript_with_markup_no_reader_knows_is_said_in_the_report(tmp_path):
    # DeepSeek-V3's tool-call tokens: not read, and the report says so with the line
    unknown = ("I will look.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>search\n```json\n"
               '{"query": "Seine"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>So the answer is the Seine.')
    path = tmp_path / "llama.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "arm": "a", "question": QUESTION, "gold": "Seine",
                                        "response": text}) + "\n"
                            for i, text in enumerate(["<answer>the Seine</answer>", unknown])))
    runs, rep = mx.read(path, report=True)
    assert runs["n_rounds"].to_list() == [0, 0]
    (note,) = [n for n in rep.notes if "markup no reader here reads" in n]
    assert note.startswith("1 episodes") and note.endswith(f"{path} line 2")
    # and in chat messages alike
    chat = tmp_path / "llama_chat.jsonl"
    chat.write_text("".join(json.dumps({"id": f"q{i}", "arm": "a", "gold": "Seine", "messages": [
        {"role": "user", "content": QUESTION}, {"role": "assistant", "content": text}]}) + "\n"
        for i, text in enumerate([unknown, "The answer is the Seine."])))
    runs, rep = mx.read(chat, report=True)
    assert runs["n_rounds"].to_list() == [0, 0]
    (note,) = [n for n in rep.notes if "markup no reader here reads" in n]
    assert note.startswith("1 episodes") and note.endswith(f"{chat} line 1")


def _llama_template() -> str:
    """Llama 3.1's chat template with custom tool calls (``<function=...>``) and ``ipython`` turns."""
    head = "<|start_header_id|>{}<|end_header_id|>\n\n"
    text = head.format("system") + "Tools: search, lookup<|eot_id|>" + head.format("user") + QUESTION + "<|eot_id|>"
    for thought, calls in zip(THOUGHTS, (CALLS[:1], CALLS[1:2], CALLS[2:])):
        text += head.format("assistant") + thought + "".join(
            f"<function={n}>{json.dumps(a)}</function>" for n, a, _, _ in calls) + "<|eom_id|>"
        text += "".join(head.format("ipython") + r + "<|eot_id|>" for _, _, r, _ in calls)
    return text + head.format("assistant") + ANSWER + "<|eot_id|>"


def test_llama_custom_tool_calls_read_in_a_template_and_in_chat_messages(tmp_path):
    path = tmp_path / "llama.jsonl"
    path.write_text(json.dumps({"id": "q", "arm": "a", "question": QUESTION, "gold": "Seine",
                                "response": _llama_template()}) + "\n")
    runs = mx.read(path)
    steps = runs["steps"][0]
    assert [(s["tool"], json.loads(s["arguments"])) for s in steps] == [(n, a) for n, a, _, _ in CALLS]
    assert [s["observation"] for s in steps] == [r for _, _, r, _ in CALLS]
    assert runs["answer"].to_list() == ["the Seine"]
    msgs: list[dict] = [{"role": "user", "content": QUESTION}]
    for thought, calls in zip(THOUGHTS, (CALLS[:1], CALLS[1:2], CALLS[2:])):
        msgs.append({"role": "assistant", "content": thought + "".join(
            f"<function={n}>{json.dumps(a)}</function>" for n, a, _, _ in calls)})
        msgs += [{"role": "ipython", "content": r} for _, _, r, _ in calls]
    msgs.append({"role": "assistant", "content": ANSWER})
    chat = tmp_path / "llama_chat.jsonl"
    chat.write_text(json.dumps({"id": "q", "arm": "a", "messages": msgs, "gold": "Seine"}) + "\n")
    assert mx.read(chat)["steps"].to_list()[0] == mx.read(_write(tmp_path, "openai"))["steps"].to_list()[0]


def test_llama_built_in_tool_calls_read_in_a_template_and_in_chat_messages(tmp_path):
    head = "<|start_header_id|>{}<|end_header_id|>\n\n"
    program = "import math\nprint(math.comb(13, 2))"
    text = (head.format("system") + "Environment: ipython\nTools: brave_search<|eot_id|>" + head.format("user")
            + QUESTION + "<|eot_id|>" + head.format("assistant")
            + '<|python_tag|>brave_search.call(query="Eiffel Tower river")<|eom_id|>' + head.format("ipython")
            + "The Eiffel Tower stands by the Seine.<|eot_id|>" + head.format("assistant")
            + f"<|python_tag|>{program}<|eom_id|>" + head.format("ipython") + "78<|eot_id|>"
            + head.format("assistant") + ANSWER + "<|eot_id|>")
    path = tmp_path / "builtin.jsonl"
    path.write_text(json.dumps({"id": "q", "arm": "a", "question": QUESTION, "gold": "Seine", "response": text}) + "\n")
    runs, rep = mx.read(path, report=True)
    steps = runs["steps"][0]
    assert [(s["tool"], json.loads(s["arguments"])) for s in steps] == [
        ("brave_search", {"query": "Eiffel Tower river"}), ("code_interpreter", {"code": program})]
    assert [s["observation"] for s in steps] == ["The Eiffel Tower stands by the Seine.", "78"]
    assert runs["answer"].to_list() == ["the Seine"] and not [n for n in rep.notes if "no reader" in n]
    # in chat messages alike; a call whose arguments are no literals is a program, never run
    msgs = [{"role": "user", "content": QUESTION},
            {"role": "assistant", "content": '<|python_tag|>wolfram_alpha.call(query="2+2")'},
            {"role": "ipython", "content": "4"},
            {"role": "assistant", "content": "<|python_tag|>brave_search.call(query=__import__('os').getcwd())"},
            {"role": "ipython", "content": "nothing"}, {"role": "assistant", "content": ANSWER}]
    chat = tmp_path / "builtin_chat.jsonl"
    chat.write_text(json.dumps({"id": "q", "arm": "a", "messages": msgs, "gold": "Seine"}) + "\n")
    steps = mx.read(chat)["steps"][0]
    assert [(s["tool"], json.loads(s["arguments"])) for s in steps] == [
        ("wolfram_alpha", {"query": "2+2"}),
        ("code_interpreter", {"code": "brave_search.call(query=__import__('os').getcwd())"})]


def test_flat_tool_calls_with_parameters_keep_their_arguments(tmp_path):
    # Cohere's shape: {"name", "parameters"}
    msgs = _openai()
    for m in msgs:
        for c in m.get("tool_calls") or []:
            fn = c.pop("function")
            c.update(name=fn["name"], parameters=json.loads(fn["arguments"]))
    path = tmp_path / "flat.jsonl"
    path.write_text(json.dumps({"id": "q", "arm": "a", "messages": msgs, "gold": "Seine"}) + "\n")
    assert mx.read(path)["steps"].to_list()[0] == mx.read(_write(tmp_path, "openai"))["steps"].to_list()[0]


def test_a_sharegpt_speaker_no_reader_knows_names_its_field(tmp_path):
    turns = _sharegpt()
    turns[3] = {"from": "tool_caller", "value": "x"}
    path = tmp_path / "odd_speaker.jsonl"
    path.write_text(json.dumps({"id": "q", "arm": "a", "conversations": turns, "gold": "Seine"}) + "\n")
    with pytest.raises(InputError, match=r"line 1.*conversations\[3\]\.from.*'tool_caller'"):
        mx.read(path)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.tuples(st.sampled_from(["search", "lookup", "open_page"]), _word,
                                   st.one_of(_word.map(str.strip), st.just("Error: not found")), st.booleans()),
                         min_size=1, max_size=3), min_size=1, max_size=5))
def test_hermes_transcripts_read_as_the_same_openai_episode(tmp_path_factory, turns):
    # the same episode as a Qwen chat-template transcript with Hermes calls, and as OpenAI turns
    # (a tag's body is read stripped, as Search-R1's are: results here carry no edge spaces)
    im = ("<|im_start|>", "<|im_end|>")
    text = f"{im[0]}system\nTools.{im[1]}\n{im[0]}user\n{QUESTION}{im[1]}\n{im[0]}assistant\n"
    for t, calls in enumerate(turns):
        text += f"<think>thought {t}</think>" + "".join(
            f"<tool_call>{json.dumps({'name': n, 'arguments': {'query': q}})}</tool_call>" for n, q, _, _ in calls)
        text += f"{im[1]}\n{im[0]}user\n" + "".join(f"<tool_response>{r}</tool_response>" for _, _, r, _ in calls)
        text += f"{im[1]}\n{im[0]}assistant\n"
    tmp = tmp_path_factory.mktemp("hermes")
    hermes = tmp / "hermes.jsonl"
    hermes.write_text(json.dumps({"id": "q", "arm": "a", "question": QUESTION, "gold": "Seine",
                                  "response": text + ANSWER}) + "\n")
    chat = tmp / "openai.jsonl"
    chat.write_text(json.dumps({"id": "q", "arm": "a", "messages": _forms_of(turns)["openai"], "gold": "Seine"}) + "\n")
    got, want = mx.read(hermes), mx.read(chat)
    assert got["steps"].to_list() == want["steps"].to_list()  # the calls of one turn marked alike
    assert got["answer"].to_list() == want["answer"].to_list() == ["the Seine"]


def test_langchain_json_agents_read_their_action_blobs(tmp_path):
    # structured-chat agents: a fenced blob, an object input, and the final answer as an action
    text = (f"Question: {QUESTION}\nThought: {THOUGHTS[0]}\nAction:\n```\n"
            + json.dumps({"action": "search", "action_input": "Eiffel Tower country"}, indent=2)
            + f"\n```\nObservation: {CALLS[1][2]}\nThought: {THOUGHTS[2]}\nAction:\n```json\n"
            + json.dumps({"action": "lookup", "action_input": {"entity": "Seine"}})
            + f"\n```\nObservation: {CALLS[3][2]}\n"
            + 'Thought: done\nAction: {"action": "Final Answer", "action_input": "the Seine"}')
    path, runs, rep = _transcript(tmp_path, text)
    assert rep.formats == {str(path): "react"}
    steps = runs["steps"][0]
    assert [(s["tool"], json.loads(s["arguments"])) for s in steps] == [("search", {"query": "Eiffel Tower country"}),
                                                                       ("lookup", {"entity": "Seine"})]
    assert [s["observation"] for s in steps] == [CALLS[1][2], CALLS[3][2]]
    assert runs["answer"].to_list() == ["the Seine"] and runs["correct"].all()
