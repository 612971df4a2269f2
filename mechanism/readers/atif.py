"""Agent Trajectory Interchange Format (ATIF) v1.x documents (Harbor RFC 0001).

A document has ``schema_version`` (``"ATIF-v1.4"``), ``session_id``, ``agent`` (``name``,
``version``, optional ``model_name``), and ``steps``: each with ``step_id``, ``source``
(``system``/``user``/``agent``), ``message``, optional ``reasoning_content``,
``tool_calls`` (``tool_call_id``, ``function_name``, ``arguments`` object) and
``observation.results`` (``source_call_id``, ``content``).

Mapping: the first user message is the question, later user messages go to the next call's
``user``; every agent tool call is a round (its
result found by ``source_call_id``), except a finishing tool; the final answer is taken from the
last agent message without tool calls, as in :mod:`mechanism.readers.openai`. ATIF has no fields for
the question id, gold answers or correctness: they are looked up at the root and in the root
``extra`` object (``extra.question_id``, ``extra.gold``, ``extra.correct``, ...), and the arm
defaults to ``agent.model_name`` (else ``agent.name``).
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from mechanism.core.errors import InputError
from mechanism.core.schema import USER_TURNS_JOIN, make_step
from mechanism.readers._fields import FieldMap
from mechanism.readers.openai import ANSWER_KEYS, FINISH_TOOLS, final_from_content, main_text

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
    steps: list[dict[str, str | None]] = []
    question: str | None = None
    answer: str | None = None
    rule: str | None = None
    final = False
    user_turns: list[str] = []
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
                user_turns.append(message.strip())  # a later user turn: the next call's `user`
        if source != "agent":
            continue
        calls = st.get("tool_calls") or []
        if not isinstance(calls, list):
            raise InputError(f"`{where}.tool_calls` must be an array", field=f"{where}.tool_calls")
        results, unmatched = _results(st.get("observation"), where)
        thought = "\n".join(t for t in (_text(st.get("reasoning_content"), f"{where}.reasoning_content").strip(),
                                        message.strip()) if t) or None
        if not calls:
            if message.strip():
                answer, rule = final_from_content(message, fields.answer_pattern)
                final = answer is not None
            continue
        made = len(steps)
        for j, call in enumerate(calls):
            cwhere = f"{where}.tool_calls[{j}]"
            if not isinstance(call, Mapping) or not isinstance(call.get("function_name"), str):
                raise InputError(f"`{cwhere}.function_name` is missing", field=f"{cwhere}.function_name")
            args = call.get("arguments", {})
            if not isinstance(args, Mapping):
                raise InputError(f"`{cwhere}.arguments` must be an object", field=f"{cwhere}.arguments")
            raw = json.dumps(args, ensure_ascii=False)
            name = call["function_name"]
            if name.lower() in FINISH_TOOLS:
                answer, final, rule = main_text(dict(args), raw, ANSWER_KEYS), True, "finish_tool"
                continue
            call_id = call.get("tool_call_id")
            observation = results.get(call_id) if isinstance(call_id, str) else None
            if observation is None and unmatched:
                observation = unmatched.pop(0)
            steps.append(make_step(thought=thought if j == 0 else None, tool=name, arguments=raw,
                                   query=main_text(dict(args), raw), observation=observation,
                                   user=USER_TURNS_JOIN.join(user_turns) if user_turns else None,
                                   parallel=len(steps) > made))  # a later call of the step: sent with it
            user_turns = []
            answer, final = None, False
    out: dict[str, Any] = {"steps": steps, "answer": answer, "final": final, "question": question,
                           "answer_rule": rule if final else None, "_consumed": {"steps", "schema_version"}}
    if user_turns:
        out["meta_extra"] = {"user_after_last_call": USER_TURNS_JOIN.join(user_turns)}
    out.update(_document_fields(record))
    return out


def _results(obs: Any, where: str) -> tuple[dict[str, str], list[str]]:
    """An agent step's tool results: by ``source_call_id``, and in order those without one."""
    results: dict[str, str] = {}
    unmatched: list[str] = []
    if isinstance(obs, Mapping) and isinstance(obs.get("results"), list):
        for r in obs["results"]:
            if not isinstance(r, Mapping):
                continue
            content = _text(r.get("content"), f"{where}.observation.results.content")
            if isinstance(r.get("source_call_id"), str):
                results[r["source_call_id"]] = content
            else:
                unmatched.append(content)
    return results, unmatched


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
