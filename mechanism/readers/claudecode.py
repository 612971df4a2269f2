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

from collections.abc import Iterable, Mapping
from typing import Any

from mechanism.core.errors import InputError
from mechanism.readers._fields import FieldMap
from mechanism.readers._sessions import LINES, MESSAGES, gather, parse_session

FORMAT = "claudecode"

#: the line types that carry a chat message
CHAT_TYPES = frozenset({"user", "assistant"})
#: the fields a line of a session has beside its message (how a file is told to be one)
SESSION_FIELDS = ("sessionId", "uuid")
#: the session's context kept in ``meta``
CONTEXT_FIELDS = ("cwd", "gitBranch", "version")
SIDECHAIN_NOTE = "Claude Code sessions with a sub-agent's events (`isSidechain`), left out of the session's rounds"


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


#: the lines of a session that are its bookkeeping: a file of these alone is a session where
#: nothing was said (read as one, and refused or skipped for it by name)
BOOKKEEPING_TYPES = frozenset({"summary", "file-history-snapshot", "queue-operation"})


def detect_lines(lines: Iterable[Any]) -> bool:
    """Whether a file's first decoded lines are a session's: one of them a chat event of a
    session (the others bookkeeping, ``summary`` first), or all of them its bookkeeping."""
    lines = list(lines)
    return any(is_session_line(v) for v in lines) or (
        bool(lines) and all(isinstance(v, Mapping) and v.get("type") in BOOKKEEPING_TYPES for v in lines))


class _Transcript:
    """The chat of one session file, built line by line."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.lines: list[int] = []
        self.context: dict[str, Any] = {}
        self.session: str | None = None
        self.model: str | None = None
        self.sidechain = 0

    def add(self, number: int, value: Mapping[str, Any]) -> None:
        if value.get("type") not in CHAT_TYPES or not isinstance(value.get("message"), Mapping):
            # the harness's bookkeeping (a summary, a snapshot), or a headless run's init and result
            named = _run_line(value, self.context)
            self.model = self.model or named
            return
        if _sub_agent(value):
            self.sidechain += 1
            return
        if value.get("isMeta") is True:
            return  # the harness's words in the user's place
        self.session = self.session or _session_of(value)
        for f in CONTEXT_FIELDS:
            if isinstance(value.get(f), str) and value[f]:
                self.context.setdefault(f, value[f])
        message = value["message"]
        if isinstance(message.get("model"), str) and message["model"] and not message["model"].startswith("<"):
            self.model = self.model or message["model"]  # `<synthetic>`: the harness's own message
        role = message.get("role", value["type"])
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}] if content else []
        last = self.messages[-1] if self.messages else None
        # the blocks of one response, written a line each, are one message
        if (last is not None and role == "assistant" and last["role"] == "assistant"
                and message.get("id") is not None and last.get("id") == message.get("id")):
            last["content"].extend(blocks)
            return
        self.messages.append({"role": role, "content": list(blocks),
                              **({"id": message["id"]} if "id" in message else {})})
        self.lines.append(number)


def session_record(lines: Iterable[tuple[int, Any]], name: str) -> tuple[int, dict[str, Any] | InputError]:
    """(first line, record) of one session file from its ``(line, value)`` pairs: its chat as
    ``messages`` (the lines of one response joined into one message), the session id, the model,
    its context and how many sub-agent events were left out; a line that is no JSON object is
    the record's error (raised, or the session skipped under ``errors="skip"``)."""
    transcript = _Transcript()
    first, bad = gather(lines, name, "session", transcript.add)
    if bad is not None:
        return first, bad
    record: dict[str, Any] = {MESSAGES: transcript.messages, LINES: transcript.lines,
                              "question_id": transcript.session, "model": transcript.model, **transcript.context}
    if transcript.sidechain:
        record["sidechain_events"] = transcript.sidechain
    return first, record


def detect(record: Mapping[str, Any], fields: FieldMap) -> bool:
    return False  # a session is told by its file's lines (:func:`detect_lines`), never by one record


def parse(record: Mapping[str, Any], fields: FieldMap) -> dict[str, Any]:
    return parse_session(record, fields, "Claude Code session", {"sidechain_events": SIDECHAIN_NOTE})
