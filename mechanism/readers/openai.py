"""OpenAI chat messages with ``tool_calls`` and ``role: "tool"`` results.

Each tool call is one round, except a call to a finishing tool (``finish``, ``answer``,
``final_answer``, ``submit``), which gives the final answer. Results are matched to calls by
``tool_call_id`` (parallel calls each get their own observation). Without a finishing call,
the final answer is taken from the last assistant message that makes no tool call, by
:func:`mechanism.readers._answer.extract_answer` (``answer_pattern=``, ``<answer>`` tags,
``Finish[...]``, "Final answer:", ``\\boxed{}``, "Answer:", else the whole message).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mechanism.errors import InputError
from mechanism.readers._answer import extract_answer
from mechanism.readers._fields import FieldMap
from mechanism.schema import make_step

FORMAT = "openai"

FINISH_TOOLS = frozenset({"finish", "answer", "final_answer", "submit", "submit_answer"})
# argument names that hold a tool call's main text, tried in order
QUERY_KEYS = ("query", "q", "search_query", "keywords", "question", "entity", "input", "text", "url")
ANSWER_KEYS = ("answer", "final_answer", "result", "text", "content")


def detect(record: Mapping[str, Any], fields: FieldMap) -> bool:
    messages = fields.get(record, "messages")
    if not isinstance(messages, list):
        return False
    return any(isinstance(m, Mapping) and (m.get("tool_calls") or m.get("role") in ("tool", "function")
                                           or m.get("function_call")) for m in messages)


def content_text(content: Any) -> str:
    """Message content as text: a string, or the text parts of a content list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    if isinstance(content, Mapping) and isinstance(content.get("text"), str):
        return content["text"]
    raise InputError(f"message `content` must be text, got {type(content).__name__}", field="content")


def _arguments(raw: Any) -> tuple[str, dict[str, Any] | None]:
    """(arguments as JSON text, parsed object or None when not a JSON object)."""
    if isinstance(raw, Mapping):
        return json.dumps(raw, ensure_ascii=False), dict(raw)
    if raw is None:
        return "{}", {}
    if not isinstance(raw, str):
        return json.dumps(raw, ensure_ascii=False), None
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):
        return raw, None  # models emit broken JSON; kept verbatim, the query is the raw text
    return raw, parsed if isinstance(parsed, dict) else None


def main_text(args: dict[str, Any] | None, raw: str, keys: tuple[str, ...] = QUERY_KEYS) -> str | None:
    """The main text argument of a tool call.

    Parameters
    ----------
    args
        The parsed arguments object, or ``None`` when the arguments were not a JSON object.
    raw
        The arguments as given (returned when ``args`` is ``None``).
    keys
        Argument names tried first, in order.

    Returns
    -------
    str or None
        The first of ``keys`` holding a string, else the first string argument, else
        ``None`` (no string argument at all).
    """
    if args is None:
        return raw
    for key in keys:
        if isinstance(args.get(key), str):
            return args[key]
    for value in args.values():
        if isinstance(value, str):
            return value
    return None


def final_from_content(text: str, pattern: Any = None) -> tuple[str | None, str]:
    """(final answer, the rule that found it) from an assistant message (linear time)."""
    return extract_answer(text, pattern=pattern)


def parse_messages(messages: Any, *, field: str = "messages", pattern: Any = None) -> dict[str, Any]:
    """Steps, question and final answer from a chat-message list."""
    if not isinstance(messages, list):
        raise InputError(f"`{field}` must be a list of messages, got {type(messages).__name__}", field=field)
    steps: list[dict[str, str | None]] = []
    by_id: dict[str, dict[str, str | None]] = {}
    pending_legacy: list[dict[str, str | None]] = []
    question: str | None = None
    answer: str | None = None
    rule: str | None = None
    final = False
    for index, msg in enumerate(messages):
        where = f"{field}[{index}]"
        if not isinstance(msg, Mapping):
            raise InputError(f"`{where}` must be an object, got {type(msg).__name__}", field=where)
        role = msg.get("role")
        if not isinstance(role, str):
            raise InputError(f"`{where}.role` is missing", field=f"{where}.role")
        try:
            text = content_text(msg.get("content"))
        except InputError:
            raise InputError(f"`{where}.content` must be text", field=f"{where}.content") from None
        if role == "user" and question is None:
            question = text.strip()
        elif role == "assistant":
            calls = msg.get("tool_calls") or []
            if msg.get("function_call"):
                calls = [{"id": None, "function": msg["function_call"]}]
            if not isinstance(calls, list):
                raise InputError(f"`{where}.tool_calls` must be a list", field=f"{where}.tool_calls")
            thought = text.strip() or None
            if not calls:
                if text.strip():
                    answer, rule = final_from_content(text, pattern)
                    final = answer is not None
                continue
            for j, call in enumerate(calls):
                cwhere = f"{where}.tool_calls[{j}]"
                fn = call.get("function") if isinstance(call, Mapping) else None
                if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
                    raise InputError(f"`{cwhere}.function.name` is missing", field=f"{cwhere}.function.name")
                name = fn["name"]
                raw, args = _arguments(fn.get("arguments"))
                if name.lower() in FINISH_TOOLS:
                    answer, final, rule = main_text(args, raw, ANSWER_KEYS), True, "finish_tool"
                    continue
                step = make_step(thought=thought if j == 0 else None, tool=name, arguments=raw,
                                 query=main_text(args, raw))
                steps.append(step)
                answer, final = None, False  # a later tool call means the episode went on
                call_id = call.get("id")
                if isinstance(call_id, str):
                    by_id[call_id] = step
                else:
                    pending_legacy.append(step)
        elif role in ("tool", "function"):
            call_id = msg.get("tool_call_id")
            step = by_id.pop(call_id, None) if isinstance(call_id, str) else None
            if step is None:
                # legacy function results, or ids missing: match the oldest unanswered call
                open_steps = pending_legacy or [s for s in steps if s["observation"] is None]
                if not open_steps:
                    raise InputError(f"`{where}` is a tool result with no tool call before it",
                                     field=f"{where}.tool_call_id")
                step = open_steps[0]
                if pending_legacy:
                    pending_legacy.pop(0)
                if isinstance(call_id, str):
                    by_id.pop(next((k for k, v in by_id.items() if v is step), ""), None)
            step["observation"] = text
    return {"steps": steps, "answer": answer, "final": final, "question": question,
            "answer_rule": rule if final else None}


def parse(record: Mapping[str, Any], fields: FieldMap) -> dict[str, Any]:
    name, messages = fields.find(record, "messages")
    if name is None:
        want = " or ".join(f"`{p}`" for p in fields.paths("messages"))
        raise InputError(f"missing chat-message field {want}", field=fields.paths("messages")[0])
    return {**parse_messages(messages, field=name, pattern=fields.answer_pattern), "_consumed": {name}}
