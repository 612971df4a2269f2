"""ReAct transcripts: ``Thought``/``Action``/``Observation`` lines, numbered
(``Action 2: Search[x]``) or not (``Action: search[x]``), as one string or spread over
chat-message contents.

An ``Action`` is executed when an ``Observation`` follows it; when a model writes several
actions before one observation, the last one is the one the environment ran (the earlier
ones stay in the thought text). A finishing action (``finish``, ``answer``, ...) gives the
final answer and is not a round. Tool names are lower-cased.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from mechanism.errors import InputError
from mechanism.readers._fields import FieldMap, as_str
from mechanism.readers.openai import FINISH_TOOLS, content_text
from mechanism.schema import make_step

FORMAT = "react"

_MARKER = re.compile(r"^[ \t]*(Thought|Action|Observation|Question)(?:[ \t]*\d+)?[ \t]*:[ \t]?", re.M | re.I)
# heads only: the argument is cut with str.rfind, so no pattern backtracks over untrusted text
_ACTION_HEAD = re.compile(r"[ \t]*([A-Za-z_][\w\-]*)[ \t]*\[")
_INLINE_HEAD = re.compile(r"Action(?:[ \t]*\d+)?[ \t]*:[ \t]*([A-Za-z_][\w\-]*)[ \t]*\[")
REPAIRED = "actions missing their closing `]` read to the end of the line (repaired)"
DROPPED = "action lines not of the form `tool[argument]` kept as thought text, not as rounds (dropped)"
_DETECT = re.compile(r"^[ \t]*Action(?:[ \t]*\d+)?[ \t]*:[ \t]*[A-Za-z_][\w\-]*[ \t]*\[", re.M | re.I)


def detect_text(text: Any) -> bool:
    return isinstance(text, str) and _DETECT.search(text) is not None


def detect(record: Mapping[str, Any], fields: FieldMap) -> bool:
    if detect_text(fields.get(record, "text")):
        return True
    messages = fields.get(record, "messages")
    if isinstance(messages, list):
        for m in messages:
            if isinstance(m, Mapping):
                try:
                    if detect_text(content_text(m.get("content"))):
                        return True
                except InputError:
                    return False
    return False


def _action(body: str) -> tuple[str, str, bool] | None:
    """(tool, argument, repaired) of an action body, or ``None`` when it is not ``tool[...]``.

    The argument runs to the last ``]`` of the action's first line (answers may hold
    brackets); without any ``]`` it runs to the end of the line, and ``repaired`` says so.
    """
    line = body.strip().split("\n", 1)[0]
    m = _ACTION_HEAD.match(line)
    if m is None:
        return None
    inner = line[m.end():]
    close = inner.rfind("]")
    if close < 0:
        return m.group(1).lower(), inner.strip(), True
    return m.group(1).lower(), inner[:close].strip(), False


def _inline_action(body: str) -> tuple[int, str, str] | None:
    """(start, tool, argument) of the first complete ``Action: tool[...]`` written inside a
    thought; one forward pass (a line without ``]`` is passed over whole)."""
    pos = 0
    while True:
        m = _INLINE_HEAD.search(body, pos)
        if m is None:
            return None
        line_end = body.find("\n", m.end())
        line_end = len(body) if line_end < 0 else line_end
        close = body.rfind("]", m.end(), line_end)
        if close >= 0:
            return m.start(), m.group(1).lower(), body[m.end():close].strip()
        pos = line_end


def parse_text(text: str, *, field: str = "text") -> dict[str, Any]:
    """Steps, answer and (when a ``Question:`` line gives it) the question from a transcript."""
    marks = list(_MARKER.finditer(text))
    question: str | None = None
    steps: list[dict[str, str | None]] = []
    thoughts: list[str] = []
    pending: tuple[str, str] | None = None
    answer: str | None = None
    final = False
    notes: list[str] = []

    def flush_pending() -> None:
        nonlocal pending
        if pending is not None:  # an action with no observation (the episode stopped there)
            tool, arg = pending
            steps.append(make_step(thought="\n".join(thoughts) or None, tool=tool,
                                   arguments=json.dumps({"query": arg}, ensure_ascii=False), query=arg))
            thoughts.clear()
            pending = None

    for i, m in enumerate(marks):
        kind = m.group(1).lower()
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[m.end(): end].strip()
        if kind == "question":
            if question is None:
                question = body
        elif kind == "thought":
            if pending is not None:  # thinking again before an observation: the earlier action was not run
                thoughts.append(f"Action: {pending[0]}[{pending[1]}]")
                pending = None
            inline = _inline_action(body) if "ction" in body else None
            if inline is not None and (i + 1 == len(marks) or marks[i + 1].group(1).lower() == "observation"):
                # "Thought: ... Action: finish[x]" written on one line
                body_thought = body[: inline[0]].strip()
                if body_thought:
                    thoughts.append(body_thought)
                pending = (inline[1], inline[2])
                if pending[0] in FINISH_TOOLS:
                    answer, final = pending[1], True
                    pending = None
            elif body:
                thoughts.append(body)
        elif kind == "action":
            found = _action(body)
            if found is None:
                if body:
                    thoughts.append(f"Action: {body}")
                    notes.append(DROPPED)
                continue
            tool, arg, repaired = found
            if repaired:
                notes.append(REPAIRED)
            if pending is not None:
                thoughts.append(f"Action: {pending[0]}[{pending[1]}]")
            if tool in FINISH_TOOLS:
                answer, final = arg, True
                pending = None
            else:
                pending = (tool, arg)
        else:  # observation
            if pending is not None:
                tool, arg = pending
                steps.append(make_step(thought="\n".join(thoughts) or None, tool=tool,
                                       arguments=json.dumps({"query": arg}, ensure_ascii=False),
                                       query=arg, observation=body))
                thoughts.clear()
                pending = None
                answer, final = None, False  # the episode went on after any earlier finish
    flush_pending()
    if final and steps and answer is None:
        final = False
    return {"steps": steps, "answer": answer, "final": final, "question": question, "notes": notes,
            "answer_rule": "finish" if final else None}


def messages_text(messages: Any, *, field: str = "messages") -> tuple[str, str | None]:
    """(ReAct transcript, question) from chat messages: the first user message that is not a
    ReAct line is the question; every other content joins the transcript."""
    if not isinstance(messages, list):
        raise InputError(f"`{field}` must be a list of messages, got {type(messages).__name__}", field=field)
    parts: list[str] = []
    question: str | None = None
    for index, msg in enumerate(messages):
        if not isinstance(msg, Mapping):
            raise InputError(f"`{field}[{index}]` must be an object, got {type(msg).__name__}", field=f"{field}[{index}]")
        role = msg.get("role")
        try:
            text = content_text(msg.get("content"))
        except InputError:
            raise InputError(f"`{field}[{index}].content` must be text", field=f"{field}[{index}].content") from None
        if role == "system":
            continue
        if role == "user" and question is None and not _MARKER.match(text):
            question = text.strip()
            continue
        parts.append(text)
    return "\n".join(parts), question


def parse(record: Mapping[str, Any], fields: FieldMap) -> dict[str, Any]:
    name, text = fields.find(record, "text")
    if name is not None and isinstance(text, str):
        return {**parse_text(text, field=name), "_consumed": {name}}
    mname, messages = fields.find(record, "messages")
    if mname is not None:
        transcript, question = messages_text(messages, field=mname)
        parsed = parse_text(transcript, field=mname)
        parsed["question"] = parsed["question"] or question
        return {**parsed, "_consumed": {mname}}
    if name is not None:
        as_str(text, name, allow_number=False)
    want = " or ".join(f"`{p}`" for p in fields.paths("text") + fields.paths("messages"))
    raise InputError(f"missing transcript field {want}", field=fields.paths("text")[0])
