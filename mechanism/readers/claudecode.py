"""Claude Code session transcripts: one JSONL file a session, one line an event.

Claude Code (and the Claude Agent SDK, which runs the same loop) writes each session to
``~/.claude/projects/<project>/<session id>.jsonl``: every line one event, ``type`` saying which.
``user`` and ``assistant`` lines carry an Anthropic Messages ``message`` (``role``, ``content``:
text, ``thinking``, ``tool_use`` blocks from the model, ``tool_result`` blocks with ``is_error``
from the harness), each with the session's ``sessionId``, its own ``uuid`` and its
``parentUuid``. A model response of several blocks is written one block a line, every line
with that response's ``message.id``.

A file is one episode, its lines read in order into one chat (:func:`session_record`) and that
chat by the chat reader's rules (:func:`mechanism.readers.openai.parse_messages`):

- the first user text is the question, a later one a user turn; the lines the harness writes
  into the user's place (``isMeta``: its caveats, a command's output) are no turn;
- the ``tool_use`` blocks of one response (one ``message.id``) are calls sent together, each
  answered by the ``tool_result`` naming its id; a result with ``is_error`` failed;
- ``thinking`` blocks are thoughts; the last text after every call is the answer;
- a sub-agent's own events (``isSidechain``: the conversation a ``Task`` call starts) are no
  round of the session's agent, whose ``Task`` call is one call answered by the sub-agent's
  report: they are left out, counted in ``meta`` (``sidechain_events``) and in the read report;
- ``summary``, ``system``, ``file-history-snapshot``, ``queue-operation`` and other bookkeeping
  lines are no part of the chat.

A headless run's output (``claude -p --output-format stream-json``, the Agent SDK's messages)
reads the same way: its lines carry ``session_id``, a sub-agent's ``parent_tool_use_id``, the
``system`` init line the model and ``cwd``, and the ``result`` line its ``subtype``
(``success``, ``error_max_turns``, ...), ``is_error`` and ``num_turns``, kept in ``meta``.

The question id is the session id (``sessionId``: give a ``question_key=`` to gather sessions
that worked one task), the record's ``model`` (the one the responses name, ``message.model``)
the arm, and ``cwd``, ``gitBranch`` and ``version`` go to ``meta``. A session
records no grade: name one with ``columns=`` where a field says it, or score answers against
``gold``.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from mechanism.core.errors import InputError
from mechanism.readers._fields import FieldMap
from mechanism.readers.openai import parse_messages

FORMAT = "claudecode"

#: the line types that carry a chat message
CHAT_TYPES = frozenset({"user", "assistant"})
#: the fields a line of a session has beside its message (how a file is told to be one)
SESSION_FIELDS = ("sessionId", "uuid")
#: the session's context kept in ``meta``
CONTEXT_FIELDS = ("cwd", "gitBranch", "version")
SIDECHAIN_NOTE = "Claude Code sessions with a sub-agent's events (`isSidechain`), left out of the session's rounds"
MESSAGES = "messages"
LINES = "_lines"  # each message's first line in the file, for errors


def is_session_line(value: Any) -> bool:
    """Whether one decoded line is an event of a Claude Code session: a saved transcript's
    (``sessionId``, ``uuid``) or a headless run's ``stream-json`` output (``session_id``)."""
    if not isinstance(value, Mapping) or value.get("type") not in CHAT_TYPES:
        return False
    if not isinstance(value.get("message"), Mapping):
        return False
    return all(isinstance(value.get(f), str) for f in SESSION_FIELDS) or isinstance(value.get("session_id"), str)


def _session_of(value: Mapping[str, Any]) -> str | None:
    sid = value.get("sessionId", value.get("session_id"))
    return sid if isinstance(sid, str) and sid else None


def _sub_agent(value: Mapping[str, Any]) -> bool:
    """A sub-agent's own event: ``isSidechain`` in a transcript, a ``parent_tool_use_id`` (the
    ``Task`` call it answers) in ``stream-json``."""
    return value.get("isSidechain") is True or value.get("parent_tool_use_id") not in (None, "")


def _run_line(value: Mapping[str, Any], context: dict[str, Any]) -> str | None:
    """What a headless run's ``system`` init or ``result`` line says (the model it names is
    returned; the rest goes to ``context``)."""
    if value.get("type") == "system" and value.get("subtype") == "init":
        if isinstance(value.get("cwd"), str):
            context.setdefault("cwd", value["cwd"])
        return value.get("model") if isinstance(value.get("model"), str) else None
    if value.get("type") == "result":
        for key in ("subtype", "is_error", "num_turns"):
            if isinstance(value.get(key), (str, bool, int)):
                context[f"result_{key}" if key != "num_turns" else key] = value[key]
    return None


def detect_lines(lines: Iterable[Any]) -> bool:
    """Whether a file's first decoded lines are a session's: one of them a chat event of a
    session (the others bookkeeping, ``summary`` first)."""
    return any(is_session_line(v) for v in lines)


def session_record(lines: Iterable[tuple[int, Any]], name: str) -> tuple[int, dict[str, Any] | InputError]:
    """(first line, record) of one session file from its ``(line, value)`` pairs: its chat as
    ``messages`` (the lines of one response joined into one message), the session id, the model,
    its context and how many sub-agent events were left out; a line that is no JSON object is
    the record's error (raised, or the session skipped under ``errors="skip"``)."""
    messages: list[dict[str, Any]] = []
    first_lines: list[int] = []
    session = model = None
    context: dict[str, Any] = {}
    sidechain = 0
    first = None
    for number, value in lines:
        first = number if first is None else first
        if isinstance(value, InputError):
            return first, value
        if not isinstance(value, Mapping):
            return first, InputError(f"a session's line must be a JSON object, got {type(value).__name__}",
                                     source=name, line=number)
        if value.get("type") not in CHAT_TYPES or not isinstance(value.get("message"), Mapping):
            # the harness's bookkeeping (a summary, a snapshot), or a headless run's init and result
            named = _run_line(value, context)
            model = model or named
            continue
        if _sub_agent(value):
            sidechain += 1
            continue
        if value.get("isMeta") is True:
            continue  # the harness's words in the user's place
        session = session or _session_of(value)
        for f in CONTEXT_FIELDS:
            if isinstance(value.get(f), str) and value[f]:
                context.setdefault(f, value[f])
        message = value["message"]
        if isinstance(message.get("model"), str) and message["model"] and not message["model"].startswith("<"):
            model = model or message["model"]  # `<synthetic>`: the harness's own message
        role = message.get("role", value["type"])
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}] if content else []
        last = messages[-1] if messages else None
        # the blocks of one response, written a line each, are one message
        if (last is not None and role == "assistant" and last["role"] == "assistant"
                and message.get("id") is not None and last.get("id") == message.get("id")):
            last["content"].extend(blocks)
            continue
        messages.append({"role": role, "content": list(blocks), **({"id": message["id"]} if "id" in message else {})})
        first_lines.append(number)
    record: dict[str, Any] = {MESSAGES: messages, LINES: first_lines, "question_id": session, "model": model,
                              **context}
    if sidechain:
        record["sidechain_events"] = sidechain
    return (first or 1), record


def detect(record: Mapping[str, Any], fields: FieldMap) -> bool:
    return False  # a session is told by its file's lines (:func:`detect_lines`), never by one record


def parse(record: Mapping[str, Any], fields: FieldMap) -> dict[str, Any]:
    messages = record.get(MESSAGES)
    if not isinstance(messages, list):
        raise InputError("a Claude Code session must be read from its file (one JSONL line an event)",
                         field=MESSAGES)
    with rethrow_at_line(record.get(LINES) or []):
        out = parse_messages(messages, field=MESSAGES, pattern=fields.answer_pattern)
    if record.get("sidechain_events"):
        out["notes"] = [*out.get("notes", []), SIDECHAIN_NOTE]
    return {**out, "_consumed": {MESSAGES, LINES}}


@contextmanager
def rethrow_at_line(lines: Sequence[int]) -> Iterator[None]:
    """Errors of the joined chat (``messages[i]...``) naming the file line message ``i`` came
    from, not its place in the chat: ``lines[i]`` is that message's first line."""
    try:
        yield
    except InputError as exc:
        index = _message_index(exc.field)
        line = lines[index] if index is not None and index < len(lines) else None
        raise InputError(exc.reason + (f" (the event on line {line})" if line else ""), field=exc.field) from None


def _message_index(field: str | None) -> int | None:
    if not field or not field.startswith(f"{MESSAGES}["):
        return None
    digits = field[len(MESSAGES) + 1:].split("]", 1)[0]
    return int(digits) if digits.isdigit() else None
