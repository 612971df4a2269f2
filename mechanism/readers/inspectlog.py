"""Inspect AI evaluation logs (``.eval`` archives and ``.json`` logs), through inspect_ai's own
log reader (the optional ``inspect`` extra: ``pip install "mechanism[inspect]"``).

Mapping, one row per sample and epoch: the arm is the log's model (``eval.model``); the
question id is ``sample.id``; the sample id is ``epoch - 1``; the question is the sample's
input (its first user message when the input is a message list); gold is ``sample.target``;
the messages (assistant tool calls and ``tool`` results) are read as in
:mod:`mechanism.readers.openai`. ``correct`` comes from the sample's first score: Inspect's
``C`` (correct) is true, ``I`` (incorrect), ``N`` (no answer) and ``P`` (partial) are false,
and a boolean or a 0/1 number is taken as it is; another value is kept as ``score`` and the
answer is scored against the target. Sample metadata goes into ``meta``.

The logs are read by inspect_ai and never executed; a log inspect_ai cannot read is a
one-line :class:`~mechanism.core.errors.InputError`.
"""
from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from mechanism.core.errors import InputError
from mechanism.readers._fields import FieldMap
from mechanism.readers._io import check_surrogates
from mechanism.readers.openai import parse_messages

FORMAT = "inspect"

_LABELS = {"C": True, "I": False, "N": False, "P": False}
_MISSING_EXTRA = "reading Inspect AI logs needs inspect_ai: pip install \"mechanism[inspect]\""


def detect(record: Mapping[str, Any], fields: FieldMap) -> bool:
    return False  # whole logs are recognised by :func:`is_inspect_log`, never single records


def is_inspect_log(path: Path) -> bool:
    """An ``.eval`` file, or a ``.json`` file that opens the way an Inspect AI log does."""
    suffix = path.suffix.lower()
    if suffix == ".eval":
        return True
    if suffix != ".json" or not path.is_file():
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(512).decode("utf-8", errors="replace")
    except OSError:
        return False
    compact = "".join(head.split())
    return compact.startswith('{"version":') and '"status":' in compact and '"eval":' in compact


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # Content parts: keep the text ones
        return "\n".join(getattr(p, "text", "") for p in content if isinstance(getattr(p, "text", None), str))
    return str(content)


def _message(msg: Any) -> dict[str, Any]:
    """An Inspect ChatMessage as an OpenAI-style message dict."""
    out: dict[str, Any] = {"role": msg.role, "content": _text(msg.content)}
    calls = getattr(msg, "tool_calls", None)
    if msg.role == "assistant" and calls:
        out["tool_calls"] = [{"id": c.id, "function": {"name": c.function,
                                                      "arguments": json.dumps(c.arguments, ensure_ascii=False,
                                                                              default=str)}}
                             for c in calls]
    if msg.role == "tool":
        out["tool_call_id"] = getattr(msg, "tool_call_id", None)
        error = getattr(msg, "error", None)
        if error is not None and not out["content"]:
            out["content"] = f"error: {getattr(error, 'message', error)}"
    return out


def _label(scores: Mapping[str, Any] | None) -> tuple[bool | None, float | None]:
    """(correct, score) from a sample's first score."""
    if not scores:
        return None, None
    value = next(iter(scores.values())).value
    if isinstance(value, bool):
        return value, None
    if isinstance(value, str):
        return _LABELS.get(value.strip().upper()), None
    if isinstance(value, (int, float)):
        return (bool(value), None) if value in (0, 1) else (None, float(value))
    return None, None


def records(path: Path) -> Iterator[tuple[int, Any]]:
    """(sample index, record for :func:`parse`) for every sample of the log."""
    source = str(path)
    try:
        from inspect_ai.log import read_eval_log  # noqa: PLC0415 - inspect_ai: an optional extra, only for .eval logs
    except ImportError:
        raise InputError(_MISSING_EXTRA, source=source, field="format") from None
    if not path.is_file():
        raise InputError("file not found", source=source)
    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # noqa: BLE001 - inspect_ai raises many types for a file that is not its log
        reason = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise InputError(f"cannot read Inspect AI log ({type(exc).__name__}: {reason})", source=source,
                         field="format") from None
    arm = log.eval.model if isinstance(getattr(log.eval, "model", None), str) else None
    for index, sample in enumerate(log.samples or [], 1):
        try:
            record = _record(sample, arm)
            check_surrogates(record, source, index)  # a JSON log may carry lone surrogate escapes
        except InputError as bad:
            yield index, bad
            continue
        except (AttributeError, TypeError, ValueError) as exc:
            reason = " ".join(str(exc).split())[:200]
            yield index, InputError(f"sample not readable ({type(exc).__name__}: {reason})", source=source,
                                    line=index)
            continue
        yield index, record


def _record(sample: Any, arm: str | None) -> dict[str, Any]:
    target = sample.target
    gold = [target] if isinstance(target, str) else [t for t in (target or []) if isinstance(t, str)]
    question = sample.input if isinstance(sample.input, str) else next(
        (_text(m.content) for m in sample.input if getattr(m, "role", None) == "user"), None)
    correct, score = _label(sample.scores)
    record: dict[str, Any] = {
        "question_id": str(sample.id),
        "sample_id": int(sample.epoch) - 1,
        "question": question,
        "gold": gold,
        "messages": [_message(m) for m in sample.messages],
    }
    if arm:
        record["arm"] = arm
    if correct is not None:
        record["correct"] = correct
    if score is not None:
        record["score"] = score
    if sample.metadata:
        record["meta"] = json.loads(json.dumps(sample.metadata, default=str))
    return record


def parse(record: Mapping[str, Any], fields: FieldMap) -> dict[str, Any]:
    parsed = parse_messages(record["messages"], field="messages", pattern=fields.answer_pattern)
    parsed["question"] = record.get("question") or parsed["question"]
    return {**parsed, "_consumed": {"messages"}}
