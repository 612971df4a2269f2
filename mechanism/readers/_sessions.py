"""What the readers of session files share (:mod:`~mechanism.readers.claudecode`,
:mod:`~mechanism.readers.codex`): a file of one session's events, its lines gathered into one
record whose ``messages`` are a chat the chat reader reads, errors naming the line a message came
from."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from mechanism.core.errors import InputError
from mechanism.readers._fields import FieldMap
from mechanism.readers.openai import parse_messages

MESSAGES = "messages"
LINES = "_lines"  # each message's first line in the file, for errors


def gather(lines: Iterable[tuple[int, Any]], name: str, what: str, add: Callable[[int, Mapping[str, Any]], None]
           ) -> tuple[int, InputError | None]:
    """Hand every ``(line, value)`` of a session file to ``add``; (the first line, the error of a
    line that is no JSON object, or ``None``): that error is the whole record's (raised, or the
    session skipped under ``errors="skip"``)."""
    first = None
    for number, value in lines:
        first = number if first is None else first
        if isinstance(value, InputError):
            return first, value
        if not isinstance(value, Mapping):
            return first, InputError(f"a {what}'s line must be a JSON object, got {type(value).__name__}",
                                     source=name, line=number)
        add(number, value)
    return (first or 1), None


def parse_session(record: Mapping[str, Any], fields: FieldMap, what: str, notes: Mapping[str, str]) -> dict[str, Any]:
    """A session record's chat read by the chat reader's rules
    (:func:`~mechanism.readers.openai.parse_messages`), with ``notes[key]`` for every ``key`` the
    record holds."""
    messages = record.get(MESSAGES)
    if not isinstance(messages, list):
        raise InputError(f"a {what} must be read from its file (one JSONL line an event)", field=MESSAGES)
    with rethrow_at_line(record.get(LINES) or []):
        out = parse_messages(messages, field=MESSAGES, pattern=fields.answer_pattern)
    said = [note for key, note in notes.items() if record.get(key)]
    if said:
        out["notes"] = [*out.get("notes", []), *said]
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
