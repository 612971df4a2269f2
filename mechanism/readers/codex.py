"""Codex CLI session rollouts: one JSONL file a session, one line an event.

Codex (OpenAI's coding agent CLI, and ``codex exec``) writes each session to
``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``: every line ``{"timestamp", "type",
"payload"}``. ``session_meta`` opens it (the session's ``id``, ``cwd``, ``cli_version``, ``git``),
``turn_context`` names the ``model`` of each turn, and ``response_item`` lines hold what the
model saw and did, as OpenAI Responses items:

- ``message`` (``role`` ``user`` / ``assistant``, ``input_text`` / ``output_text`` parts): the
  first user text is the question (the harness's own user messages, ``<environment_context>``,
  ``<user_instructions>`` and the repository's ``AGENTS.md`` instructions, are no turn), a
  later one a user turn, the last assistant text after every call the answer;
- ``function_call`` (``name``, ``arguments``, ``call_id``) is a call, and the calls with no
  output or message between them were sent together; ``custom_tool_call`` (``apply_patch``'s
  free-form ``input``) and ``local_shell_call`` (``action.command``) are calls too, and
  ``web_search_call`` a call of ``web_search`` with its query;
- ``function_call_output`` / ``custom_tool_call_output`` answer the call their ``call_id``
  names; a shell call's output written as ``{"output": ..., "metadata": {"exit_code": ...}}`` is
  read as its output, the exit codes kept in ``meta`` (``exit_codes``: a command that exits 1 is
  not a failed call, ``grep`` finding nothing does);
- a command given as an argument list (``["bash", "-lc", "ls -la"]``) is the command line it
  runs (``ls -la``);
- ``reasoning`` (its ``summary`` text) is a thought.

``event_msg`` lines (token counts, the UI's copies of messages), ``compacted`` summaries and
snapshots are the harness's. A ``response_item`` of another type is left out, named in ``meta``
(``unknown_items``) and counted in the read report. The question id is the session's ``id``
(a ``question_key=`` gathers sessions that worked one task), the first turn's ``model`` the
arm; ``cwd``, ``cli_version`` and the git branch go to ``meta``. A session records no grade.
"""
from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Mapping
from typing import Any

from mechanism.core.actions import SHELLS
from mechanism.core.errors import InputError
from mechanism.readers._fields import FieldMap
from mechanism.readers._sessions import LINES, MESSAGES, gather, parse_session

FORMAT = "codex"

#: the line types of a rollout
LINE_TYPES = frozenset({"session_meta", "response_item", "turn_context", "event_msg", "compacted"})
#: user messages the harness writes (the environment, the instructions), never the user's words
HARNESS_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<user_shell_command>")
#: items that are calls (:func:`_call_item`) and their outputs
CALL_ITEMS = frozenset({"function_call", "custom_tool_call", "local_shell_call", "web_search_call"})
OUTPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output"})
#: items that are the harness's (a snapshot of the repository)
HARNESS_ITEMS = frozenset({"ghost_snapshot", "compaction", "compaction_summary"})
UNKNOWN_NOTE = "Codex sessions with response items of a type this reader does not know, left out"
MAX_NAMED = 8


def detect_lines(lines: Iterable[Any]) -> bool:
    """Whether a file's first decoded lines are a rollout's: ``{"type", "payload"}`` lines with
    a ``session_meta`` or a ``response_item`` among them."""
    return any(isinstance(v, Mapping) and v.get("type") in ("session_meta", "response_item")
               and isinstance(v.get("payload"), Mapping) for v in lines)


def command_line(command: Any) -> Any:
    """A command given as an argument list as the line it runs: a shell's ``-c`` / ``-lc``
    script, else the words joined as a shell would read them; anything else as it is.

    >>> command_line(["bash", "-lc", "ls -la"]), command_line(["rg", "-n", "def parse"])
    ('ls -la', "rg -n 'def parse'")
    """
    if not isinstance(command, list) or not command or not all(isinstance(w, str) for w in command):
        return command
    if len(command) >= 3 and command[0].rsplit("/", 1)[-1] in SHELLS and command[1] in ("-c", "-lc"):
        return command[2]
    return shlex.join(command)


def _arguments(raw: Any) -> str:
    """A call's arguments as JSON text, a command list read as its command line."""
    parsed: Any = raw
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            return raw
    if isinstance(parsed, Mapping) and isinstance(parsed.get("command"), list):
        parsed = {**parsed, "command": command_line(parsed["command"])}
    return json.dumps(parsed, ensure_ascii=False) if isinstance(parsed, Mapping) else str(raw)


def _call_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """A call item as an OpenAI ``tool_calls`` entry."""
    kind = item["type"]
    if kind == "custom_tool_call":
        name, arguments = item.get("name"), json.dumps({"input": item.get("input")}, ensure_ascii=False)
    elif kind == "local_shell_call":
        action = item.get("action") if isinstance(item.get("action"), Mapping) else {}
        name, arguments = "local_shell", json.dumps({"command": command_line(action.get("command"))},
                                                    ensure_ascii=False)
    elif kind == "web_search_call":
        action = item.get("action") if isinstance(item.get("action"), Mapping) else {}
        name, arguments = "web_search", json.dumps({"query": action.get("query")}, ensure_ascii=False)
    else:
        name, arguments = item.get("name"), _arguments(item.get("arguments"))
    return {"id": item.get("call_id", item.get("id")), "type": "function",
            "function": {"name": name, "arguments": arguments}}


def _output(raw: Any, codes: list[int]) -> Any:
    """A call's output: a shell's ``{"output", "metadata": {"exit_code"}}`` as its output text,
    the exit code appended to ``codes``."""
    if isinstance(raw, Mapping) and "content" in raw:  # a payload written out: its text
        raw = raw["content"]
    if isinstance(raw, str) and raw.startswith("{"):
        try:
            value = json.loads(raw)
        except ValueError:
            return raw
        if isinstance(value, Mapping) and isinstance(value.get("output"), str):
            meta = value.get("metadata") if isinstance(value.get("metadata"), Mapping) else {}
            if isinstance(meta.get("exit_code"), int):
                codes.append(meta["exit_code"])
            return value["output"]
    return raw


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return ""


class _Rollout:
    """The chat of one rollout, built line by line."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.lines: list[int] = []
        self.meta: dict[str, Any] = {}
        self.codes: list[int] = []
        self.unknown: list[str] = []
        self.session: str | None = None
        self.model: str | None = None

    def add(self, number: int, line: Mapping[str, Any]) -> None:
        kind, payload = line.get("type"), line.get("payload")
        if not isinstance(payload, Mapping):
            return
        if kind == "session_meta":
            self.session = self.session or (payload.get("id") if isinstance(payload.get("id"), str) else None)
            git = payload.get("git") if isinstance(payload.get("git"), Mapping) else {}
            for key, value in (("cwd", payload.get("cwd")), ("cli_version", payload.get("cli_version")),
                               ("git_branch", git.get("branch"))):
                if isinstance(value, str) and value:
                    self.meta.setdefault(key, value)
        elif kind == "turn_context" and isinstance(payload.get("model"), str):
            self.model = self.model or payload["model"]
        elif kind == "response_item":
            self._item(number, payload)

    def _push(self, number: int, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self.lines.append(number)

    def _item(self, number: int, item: Mapping[str, Any]) -> None:
        kind = item.get("type")
        last = self.messages[-1] if self.messages else None
        if kind == "message":
            text = _text(item.get("content"))
            role = item.get("role")
            if role == "user" and text.strip() and not text.lstrip().startswith(HARNESS_PREFIXES):
                self._push(number, {"role": "user", "content": text})
            elif role == "assistant" and text.strip():
                self._push(number, {"role": "assistant", "content": text})
        elif kind == "reasoning":
            self._push(number, dict(item))
        elif kind in CALL_ITEMS:
            call = _call_item(item)
            # calls with nothing between them were sent together; text just before is their thought
            if last is not None and last.get("role") == "assistant" and "type" not in last:
                last.setdefault("tool_calls", []).append(call)
            else:
                self._push(number, {"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind in OUTPUT_ITEMS:
            self._push(number, {"role": "tool", "tool_call_id": item.get("call_id"),
                                "content": _output(item.get("output"), self.codes)})
        elif kind not in HARNESS_ITEMS and len(self.unknown) < MAX_NAMED and str(kind)[:80] not in self.unknown:
            self.unknown.append(str(kind)[:80])


def session_record(lines: Iterable[tuple[int, Any]], name: str) -> tuple[int, dict[str, Any] | InputError]:
    """(first line, record) of one rollout file from its ``(line, value)`` pairs: its chat as
    ``messages``, the session id, the model and what ``meta`` keeps; a line that is no JSON
    object is the record's error (raised, or the session skipped under ``errors="skip"``)."""
    rollout = _Rollout()
    first, bad = gather(lines, name, "rollout", rollout.add)
    if bad is not None:
        return first, bad
    record: dict[str, Any] = {MESSAGES: rollout.messages, LINES: rollout.lines, "question_id": rollout.session,
                              "model": rollout.model, **rollout.meta}
    if rollout.codes:
        record["exit_codes"] = rollout.codes
    if rollout.unknown:
        record["unknown_items"] = rollout.unknown
    return first, record


def detect(record: Mapping[str, Any], fields: FieldMap) -> bool:
    return False  # a rollout is told by its file's lines (:func:`detect_lines`), never by one record


def parse(record: Mapping[str, Any], fields: FieldMap) -> dict[str, Any]:
    return parse_session(record, fields, "Codex rollout", {"unknown_items": UNKNOWN_NOTE})
