"""Chat messages with tool calls: OpenAI's ``tool_calls`` and ``role: "tool"`` results, and the
same turns as other APIs and data formats log them, each message first written as OpenAI's
(:func:`mechanism.readers._shapes.openai_shaped`: Anthropic, Bedrock, Gemini, OpenAI Responses,
LangChain, ShareGPT, Hermes / Qwen and Llama 3.1 function calling in the text).

Each tool call is one round, except a call to a finishing tool (``finish``, ``answer``,
``final_answer``, ``submit``), which gives the final answer (its tool result, which the API
requires, is kept in ``meta``). Results are matched to calls by ``tool_call_id`` (parallel
calls each get their own observation), in one pass. Every user turn after the first message
(the question) is kept in the ``user`` field of the next call's step, so provenance can name
the user for an id typed in a later turn. Without a finishing call,
the final answer is taken from the last assistant message that makes no tool call, by
:func:`mechanism.readers._answer.extract_answer` (``answer_pattern=``, ``<answer>`` tags,
``Finish[...]``, "Final answer:", ``\\boxed{}``, "Answer:", else the whole message).
"""
from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping
from typing import Any

from mechanism.core.actions import main_text
from mechanism.core.errors import InputError
from mechanism.core.schema import USER_TURNS_JOIN, make_step
from mechanism.readers._answer import extract_answer
from mechanism.readers._fields import FieldMap
from mechanism.readers._shapes import (
    UNPARSED_CALL,
    UNREAD,
    content_text,
    message_role,
    openai_shaped,
    shows_tool_call,
    unread_markup,
)

FORMAT = "openai"

FINISH_TOOLS = frozenset({"finish", "answer", "final_answer", "submit", "submit_answer"})
#: Tools an agent speaks to the user through (Letta / MemGPT's ``send_message``): where a record
#: calls one, each call is the agent's words (not a round), the last one with no round after it
#: is the final answer, and the assistant's own text is its inner monologue, never the answer.
MESSAGE_TOOLS = frozenset({"send_message", "send_message_to_user", "message_user", "reply_to_user",
                           "respond_to_user"})
MESSAGE_KEYS = ("message", "content", "text", "response")
# argument names that hold a finishing call's answer, tried in order
ANSWER_KEYS = ("answer", "final_answer", "result", "text", "content")


def detect(record: Mapping[str, Any], fields: FieldMap) -> bool:
    messages = fields.get(record, "messages")
    return isinstance(messages, list) and any(shows_tool_call(m) for m in messages)


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


def final_from_content(text: str, pattern: Any = None) -> tuple[str | None, str]:
    """(final answer, the rule that found it) from an assistant message (linear time)."""
    return extract_answer(text, pattern=pattern)


class _Call:
    """One tool call waiting for (or holding) its result: a step, a finishing call, or a
    message to the user (``message``)."""

    __slots__ = ("step", "call_id", "answered", "message")

    def __init__(self, step: dict[str, str | None] | None, call_id: str | None, *, message: bool = False) -> None:
        self.step = step  # None: a finishing call or a message (not a round)
        self.call_id = call_id
        self.answered = False
        self.message = message


def _result_text(content: Any, where: str) -> str:
    """A tool result as text: text content as it is, an error object or other JSON as JSON
    text (tools return ``{"error": ...}``; the failure reading needs to see it)."""
    try:
        return content_text(content)
    except InputError:
        try:
            return json.dumps(content, ensure_ascii=False, default=str)
        except (TypeError, ValueError, RecursionError):
            raise InputError(f"`{where}.content` must be text or JSON", field=f"{where}.content") from None


class _Pending:
    """Tool calls waiting for their results: by id, and in order for results without a known id
    (legacy ``function`` results first). Answered calls are passed over lazily, so matching
    stays linear in the messages."""

    __slots__ = ("by_id", "legacy", "unanswered")

    def __init__(self) -> None:
        self.by_id: dict[str, _Call] = {}
        self.legacy: deque[_Call] = deque()  # calls made without an id, oldest first
        self.unanswered: deque[_Call] = deque()  # every call in order

    def add(self, slot: _Call) -> None:
        if slot.call_id is not None:
            self.by_id[slot.call_id] = slot
        else:
            self.legacy.append(slot)
        self.unanswered.append(slot)

    def take(self, call_id: Any, where: str) -> _Call:
        """The call a result at ``where`` answers, marked answered."""
        slot = self.by_id.pop(call_id, None) if isinstance(call_id, str) else None
        if slot is None:
            # legacy function results, or ids missing: the oldest unanswered call
            queue = self.legacy if self.legacy else self.unanswered
            while queue and queue[0].answered:
                queue.popleft()
            if not queue:
                raise InputError(f"`{where}` is a tool result with no tool call before it",
                                 field=f"{where}.tool_call_id")
            slot = queue.popleft()
            if slot.call_id is not None:
                self.by_id.pop(slot.call_id, None)
        slot.answered = True
        return slot


def _assistant_calls(msg: Mapping[str, Any], where: str) -> list[Any]:
    calls = msg.get("tool_calls") or []
    if msg.get("function_call"):
        calls = [{"id": None, "function": msg["function_call"]}]
    if not isinstance(calls, list):
        raise InputError(f"`{where}.tool_calls` must be a list", field=f"{where}.tool_calls")
    return calls


def _outcome(steps: list[dict[str, str | None]], question: str | None, answer: str | None, final: bool,
             rule: str | None, finish_results: list[str], user_turns: list[str],
             kept: Mapping[str, list[str]] | None = None) -> dict[str, Any]:
    """The parsed record, with what was kept beside the steps in ``meta_extra`` (``kept``: more
    of it by name, each kept where it holds anything)."""
    out: dict[str, Any] = {"steps": steps, "answer": answer, "final": final, "question": question,
                           "answer_rule": rule if final else None}
    extra: dict[str, Any] = {name: texts for name, texts in (kept or {}).items() if texts}
    if finish_results:
        extra["finish_result"] = finish_results[0] if len(finish_results) == 1 else finish_results
    if user_turns:
        extra["user_after_last_call"] = USER_TURNS_JOIN.join(user_turns)
    if extra:
        out["meta_extra"] = extra
    return out


class ChatTurns:
    """What :func:`parse_messages` has read of one record so far: its steps, the calls waiting for
    their results, the user's later turns and the assistant's words since the last call, and the
    final answer as it stands. Other readers of turns in other shapes (:mod:`~mechanism.readers.atif`)
    drive it the same way, so that one set of rules reads every chat."""

    def __init__(self) -> None:
        self.steps: list[dict[str, str | None]] = []
        self.pending = _Pending()
        self.user_turns: list[str] = []
        self.said: list[str] = []  # assistant words to the user since the last call
        self.finish_results: list[str] = []
        self.message_results: list[str] = []
        self.speaks = False  # the record speaks to the user through a message tool
        self.answer_at: int | None = None  # the answering message's words in `said` (None: none since a round)
        self.answer: str | None = None
        self.rule: str | None = None
        self.final = False
        self.unparsed = False  # a `<tool_call>` body that was no JSON call, read by the name it writes

    def result(self, msg: Mapping[str, Any], where: str) -> None:
        """A tool's result, with the call it answers."""
        text = _result_text(msg.get("content"), where)
        slot = self.pending.take(msg.get("tool_call_id"), where)
        if slot.step is None:
            (self.message_results if slot.message else self.finish_results).append(text)
        else:
            slot.step["observation"] = text
            if msg.get("_failed") or msg.get("status") == "error":  # the API's own verdict (is_error, status)
                slot.step["failed"] = True

    def calls(self, calls: list[Any], text: str, where: str) -> None:
        """An assistant message's tool calls: steps, a finishing call, or messages to the user."""
        thought = "\n".join([*self.said, text.strip()] if text.strip() else self.said) or None
        self.said, self.answer_at = [], None
        first = True
        for j, call in enumerate(calls):
            cwhere = f"{where}.tool_calls[{j}]"
            fn = call.get("function") if isinstance(call, Mapping) else None
            if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
                raise InputError(f"`{cwhere}.function.name` is missing", field=f"{cwhere}.function.name")
            name = fn["name"]
            self.unparsed = self.unparsed or call.get("unparsed") is True
            raw, args = _arguments(fn.get("arguments"))
            call_id = call.get("id")
            call_id = call_id if isinstance(call_id, str) else None
            if name.lower() in FINISH_TOOLS:
                self.answer, self.final, self.rule = main_text(args, raw, ANSWER_KEYS), True, "finish_tool"
                slot = _Call(None, call_id)
            elif name.lower() in MESSAGE_TOOLS:
                if thought and first:  # the message's own inner monologue, kept with its words
                    self.said.append(thought)
                    thought = None
                words = (main_text(args, raw, MESSAGE_KEYS) or "").strip()
                self.said += [words] if words else []
                self.answer, self.final, self.rule = words or None, bool(words), "message_tool"
                self.speaks, self.answer_at = True, len(self.said) - 1 if words else None
                slot = _Call(None, call_id, message=True)
            else:
                turns = self.user_turns
                step = make_step(thought=thought if first else None, tool=name, arguments=raw,  # a later call
                                 query=main_text(args, raw), parallel=not first,  # of a message: sent with it
                                 user=USER_TURNS_JOIN.join(turns) if first and turns else None)
                if first:
                    self.user_turns = []
                first = False
                self.steps.append(step)
                self.answer, self.final = None, False  # a later tool call means the episode went on
                self.answer_at = None  # the words before a round joined its thought
                slot = _Call(step, call_id)
            self.pending.add(slot)

    def outcome(self, question: str | None) -> dict[str, Any]:
        """The parsed record (:func:`_outcome`), the thoughts around a message that answered kept."""
        said, at = self.said, self.answer_at
        # the answer's own thought and what the assistant thought after it: kept beside the answer
        after = [*said[:at], *said[at + 1:]] if self.final and at is not None else []
        return _outcome(self.steps, question, self.answer, self.final, self.rule, self.finish_results,
                        self.user_turns, {"message_results": self.message_results, "answer_thoughts": after})


def parse_messages(messages: Any, *, field: str = "messages", pattern: Any = None) -> dict[str, Any]:
    """Steps, question and final answer from a chat-message list, in one pass.

    The first user message is the question; every later user turn is kept in the ``user``
    field of the next call's step (user turns after the last call go to ``meta`` as
    ``user_after_last_call``). An assistant message without a tool call that is followed by
    more calls (the agent speaking to the user) joins the next step's thought. Tool results
    are matched to calls by ``tool_call_id``; a result without a known id takes the oldest
    call still unanswered (legacy ``function`` results first), with a queue, so matching is
    linear in the messages. A result answering a finishing call (``submit``, ``finish``) is
    kept with it, in ``meta`` as ``finish_result``, not as a round. Where the record speaks to
    the user through a message tool (:data:`MESSAGE_TOOLS`), a message is read as the agent's
    words (the next step's thought, or the final answer where no round follows), its result kept
    in ``meta`` as ``message_results``, and the assistant's text as its thought, never the answer:
    the thoughts around the last message go to ``meta`` as ``answer_thoughts``.
    """
    if not isinstance(messages, list):
        raise InputError(f"`{field}` must be a list of messages, got {type(messages).__name__}", field=field)
    turns = ChatTurns()
    unread = False  # call markup in words: a format no reader knows (noted where no call is read)
    question: str | None = None
    shaped = ((f"{field}[{index}]", m) for index, raw in enumerate(messages)
              for m in openai_shaped(raw, f"{field}[{index}]"))
    for where, msg in shaped:
        role = message_role(msg, where)
        if role in ("tool", "function"):
            turns.result(msg, where)
            continue
        thinking = msg.get("_thinking")
        if thinking:  # reasoning blocks: the thought of the next call, never an answer
            turns.said.append(thinking.strip())
        try:
            text = content_text(msg.get("content"))
        except InputError:
            raise InputError(f"`{where}.content` must be text", field=f"{where}.content") from None
        if role == "user":
            if question is None:
                question = text.strip()
            elif text.strip():
                turns.user_turns.append(text.strip())
        elif role == "assistant":
            calls = _assistant_calls(msg, where)
            if calls:
                turns.calls(calls, text, where)
            elif text.strip():
                if not turns.speaks:  # an agent speaking through a message tool only thinks here
                    turns.answer, turns.rule = final_from_content(text, pattern)
                    turns.final = turns.answer is not None
                turns.said.append(text.strip())
                # asked only while no call is read: the note is for episodes without any
                unread = unread or (not turns.steps and unread_markup(text))
    out = turns.outcome(question)
    notes = [*([UNREAD] if unread and not turns.steps else []), *([UNPARSED_CALL] if turns.unparsed else [])]
    if notes:  # say so, never a silent "no tool used" or a call read from its text alone
        out["notes"] = notes
    return out


def parse(record: Mapping[str, Any], fields: FieldMap) -> dict[str, Any]:
    name, messages = fields.find(record, "messages")
    if name is None:
        want = " or ".join(f"`{p}`" for p in fields.paths("messages"))
        raise InputError(f"missing chat-message field {want}", field=fields.paths("messages")[0])
    return {**parse_messages(messages, field=name, pattern=fields.answer_pattern), "_consumed": {name}}
