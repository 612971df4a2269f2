"""Agent Trajectory Interchange Format (ATIF) v1.x documents (Harbor RFC 0001).

A document has ``schema_version`` (``"ATIF-v1.4"``), ``session_id``, ``agent`` (``name``,
``version``, optional ``model_name``), and ``steps``: each with ``step_id``, ``source``
(``system``/``user``/``agent``), ``message``, optional ``reasoning_content``,
``tool_calls`` (``tool_call_id``, ``function_name``, ``arguments`` object) and
``observation.results`` (``source_call_id``, ``content``).

Mapping: the document is read by the chat reader's rules (:mod:`mechanism.readers.openai`): the
first user message is the question, later user messages go to the next call's ``user``; every
agent tool call is a round (its result found by ``source_call_id``, else the step's next call
without one), except a finishing tool (its result kept in ``meta``) and a message tool
(``send_message``: the agent's words, the last one the answer); the final answer is otherwise
taken from the last agent message without tool calls. ATIF has no fields for
the question id, gold answers or correctness: they are looked up at the root and in the root
``extra`` object (``extra.question_id``, ``extra.gold``, ``extra.correct``, ...), and the arm
defaults to ``agent.model_name`` (else ``agent.name``).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from mechanism.core.errors import InputError
from mechanism.readers._fields import FieldMap
from mechanism.readers.openai import ChatTurns, final_from_content

FORMAT = "atif"

_VERSION = re.compile(r"^ATIF-v1\.\d+")


def detect(record: Mapping[str, Any], fields: FieldMap) -> bool:
    version = record.get("schema_version")
    if isinstance(version, str) and version.upper().startswith("ATIF"):
        return True
    steps = record.get("steps")
    return (isinstance(steps, list) and bool(steps) and isinstance(steps[0], Mapping)
            and "source" in steps[0] and "step_id" in steps[0])


def _text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # multimodal content parts (later 1.x): keep the text parts
        return "\n".join(p["text"] for p in value if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    raise InputError(f"`{where}` must be text, got {type(value).__name__}", field=where)


def parse(record: Mapping[str, Any], fields: FieldMap) -> dict[str, Any]:
    version = record.get("schema_version")
    if version is not None and not (isinstance(version, str) and _VERSION.match(version)):
        raise InputError(f"unsupported `schema_version` {version!r} (expected ATIF-v1.x)", field="schema_version")
    steps_in = record.get("steps")
    if not isinstance(steps_in, list):
        raise InputError("missing `steps` array", field="steps")
    # read as the chat reader reads its messages (one set of rules: finishing and message tools,
    # user turns, thoughts), each step's calls and results handed over in its shapes
    turns = ChatTurns()
    question: str | None = None
    for index, st in enumerate(steps_in):
        where = f"steps[{index}]"
        if not isinstance(st, Mapping):
            raise InputError(f"`{where}` must be an object", field=where)
        source = st.get("source")
        if source not in ("system", "user", "agent"):
            raise InputError(f"`{where}.source` must be system, user or agent, got {source!r}",
                             field=f"{where}.source")
        message = _text(st.get("message"), f"{where}.message")
        if source == "user":
            if question is None:
                question = message.strip()
            elif message.strip():
                turns.user_turns.append(message.strip())  # a later user turn: the next call's `user`
        if source != "agent":
            continue
        reasoning = _text(st.get("reasoning_content"), f"{where}.reasoning_content").strip()
        if reasoning:  # the thought of the step's first call, never an answer
            turns.said.append(reasoning)
        calls = _calls(st.get("tool_calls"), where)
        if not calls:
            if message.strip():
                if not turns.speaks:  # an agent speaking through a message tool only thinks here
                    turns.answer, turns.rule = final_from_content(message, fields.answer_pattern)
                    turns.final = turns.answer is not None
                turns.said.append(message.strip())
            continue
        turns.calls(calls, message, where)
        for content, call_id in _results(st.get("observation"), calls, where):
            turns.result({"tool_call_id": call_id, "content": content}, f"{where}.observation.results")
    out: dict[str, Any] = {**turns.outcome(question), "_consumed": {"steps", "schema_version"}}
    out.update(_document_fields(record))
    return out


def _calls(raw: Any, where: str) -> list[dict[str, Any]]:
    """An agent step's tool calls in the chat reader's shape, each with an id (``@j`` where the
    document gives none, so that its results pair with the step's own calls)."""
    raw = raw or []
    if not isinstance(raw, list):
        raise InputError(f"`{where}.tool_calls` must be an array", field=f"{where}.tool_calls")
    calls = []
    for j, call in enumerate(raw):
        cwhere = f"{where}.tool_calls[{j}]"
        if not isinstance(call, Mapping) or not isinstance(call.get("function_name"), str):
            raise InputError(f"`{cwhere}.function_name` is missing", field=f"{cwhere}.function_name")
        args = call.get("arguments", {})
        if not isinstance(args, Mapping):
            raise InputError(f"`{cwhere}.arguments` must be an object", field=f"{cwhere}.arguments")
        call_id = call.get("tool_call_id")
        calls.append({"id": call_id if isinstance(call_id, str) else f"@{where}.{j}",
                      "function": {"name": call["function_name"], "arguments": dict(args)}})
    return calls


def _results(obs: Any, calls: list[dict[str, Any]], where: str) -> list[tuple[str, str]]:
    """An agent step's tool results, each with the id of the call it answers: by
    ``source_call_id`` where it names one of the step's calls, else the step's next call
    still without a result, in order (a result left over has no call: an error)."""
    ids = [c["id"] for c in calls]
    named, unmatched, answered = [], [], set()
    if isinstance(obs, Mapping) and isinstance(obs.get("results"), list):
        for r in obs["results"]:
            if not isinstance(r, Mapping):
                continue
            content = _text(r.get("content"), f"{where}.observation.results.content")
            source = r.get("source_call_id")
            if isinstance(source, str) and source in ids and source not in answered:
                named.append((content, source))
                answered.add(source)
            else:  # no id, an id of no call of the step, or one answered already
                unmatched.append((content, source))
    free = iter([i for i in ids if i not in answered])
    paired = [(content, next(free, None)) for content, _ in unmatched]
    if any(call_id is None for _, call_id in paired):
        raise InputError(f"`{where}.observation.results` holds more results than the step has calls",
                         field=f"{where}.observation.results")
    return named + paired


def _document_fields(record: Mapping[str, Any]) -> dict[str, Any]:
    """The arm the document's agent names (and which field named it), and its root ``extra``."""
    out: dict[str, Any] = {}
    agent = record.get("agent")
    if isinstance(agent, Mapping):
        arm = agent.get("model_name") or agent.get("name")
        if isinstance(arm, str) and arm:
            out["arm_default"] = arm
            out["arm_source"] = "`agent.model_name`" if agent.get("model_name") else "`agent.name`"
    extra = record.get("extra")
    if isinstance(extra, Mapping):
        out["extra_fields"] = dict(extra)
    return out
