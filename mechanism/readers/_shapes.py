"""Tool calls and results as other chat APIs and data formats log them, written as OpenAI chat
messages (:func:`openai_shaped`), so that one parser reads them all
(:func:`mechanism.readers.openai.parse_messages`).

Anthropic Messages content blocks (``tool_use``, ``tool_result`` with ``is_error``,
``thinking``), Amazon Bedrock Converse blocks (``toolUse``, ``toolResult`` with ``status``),
Google Gemini ``parts`` (``functionCall``, ``functionResponse``, role ``model``), OpenAI Responses
items (``function_call``, ``function_call_output``, ``reasoning``), LangChain messages (``type``
``human`` / ``ai`` / ``tool``, flat ``tool_calls`` ``{"name", "args", "id"}``, the
``messages_to_dict`` form), ShareGPT turns (``from`` / ``value``, ``function_call`` and
``observation``; LLaMA-Factory's agent data), and function calling written in the text: Hermes /
Qwen ``<tool_call>`` and ``<tool_response>`` blocks, Llama 3.1's ``<function=NAME>`` calls and
``ipython`` results. A content block whose type names a call or a result in a form not listed
here is an error naming its field.
"""
from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

from mechanism.core.errors import InputError


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


def message_role(msg: Any, where: str) -> str:
    if not isinstance(msg, Mapping):
        raise InputError(f"`{where}` must be an object, got {type(msg).__name__}", field=where)
    role = msg.get("role")
    if not isinstance(role, str):
        raise InputError(f"`{where}.role` is missing", field=f"{where}.role")
    return role


# Other APIs' ways of logging a tool call or its result, each read as OpenAI's: Anthropic
# Messages (`tool_use`, `tool_result`), Bedrock Converse (`toolUse`, `toolResult`), Gemini
# (`functionCall`, `functionResponse`), and the reasoning blocks that go with them
_CALL_TYPES = frozenset({"tool_use", "server_tool_use"})
_RESULT_TYPES = frozenset({"tool_result", "web_search_tool_result"})
_THINKING_TYPES = frozenset({"thinking", "reasoning"})
_CALL_KEYS = ("toolUse", "functionCall")
_RESULT_KEYS = ("toolResult", "functionResponse")
# OpenAI Responses items that are not messages (no role)
_ITEM_CALLS = frozenset({"function_call", "function_call_output", "reasoning"})
# LangChain / LangGraph messages name their role by `type` ("chat" messages carry a `role`)
_LANGCHAIN_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system", "function": "function",
                    "chat": None}
# a block type that names a call or a result in some API's words
_CALL_LIKE = re.compile(r"tool|function|call", re.IGNORECASE)


def _blocks(msg: Mapping[str, Any]) -> list[Any]:
    """A message's content blocks (``content`` as a list, or Gemini's ``parts``); [] for text."""
    content = msg.get("content") if "content" in msg else msg.get("parts")
    return content if isinstance(content, list) else []


def _block_kind(block: Any) -> str | None:
    """``"call"``, ``"result"`` or ``"thinking"`` for a content block other APIs log a tool
    call, a tool result or reasoning with; ``None`` for text and anything else."""
    if not isinstance(block, Mapping):
        return None
    kind = block.get("type")
    if kind in _CALL_TYPES or any(isinstance(block.get(k), Mapping) for k in _CALL_KEYS):
        return "call"
    if kind in _RESULT_TYPES or any(isinstance(block.get(k), Mapping) for k in _RESULT_KEYS):
        return "result"
    if kind in _THINKING_TYPES:
        return "thinking"
    return None


def _call_of(block: Mapping[str, Any]) -> dict[str, Any]:
    """A call block as an OpenAI ``tool_calls`` entry (``id`` None where the API logs none)."""
    inner = next((block[k] for k in _CALL_KEYS if isinstance(block.get(k), Mapping)), block)
    call_id = inner.get("id", inner.get("toolUseId"))
    args = inner.get("input", inner.get("args", inner.get("arguments")))
    return {"id": call_id if isinstance(call_id, str) else None,
            "function": {"name": inner.get("name"), "arguments": args}}


def _result_of(block: Mapping[str, Any]) -> dict[str, Any]:
    """A result block as an OpenAI ``role: "tool"`` message; ``_failed`` where the API said so
    (Anthropic ``is_error``, Bedrock ``status: "error"``)."""
    inner = next((block[k] for k in _RESULT_KEYS if isinstance(block.get(k), Mapping)), block)
    call_id = inner.get("tool_use_id", inner.get("toolUseId", inner.get("id")))
    content = inner.get("content", inner.get("response"))
    if isinstance(content, list):  # Bedrock's {"json": {...}} parts are results too, as JSON text
        content = [{"text": json.dumps(p["json"], ensure_ascii=False, default=str)}
                   if isinstance(p, Mapping) and "json" in p and "text" not in p else p for p in content]
    return {"role": "tool", "tool_call_id": call_id if isinstance(call_id, str) else None, "content": content,
            "_failed": inner.get("is_error") is True or inner.get("status") == "error"}


def _text_of_thinking(block: Mapping[str, Any]) -> str:
    text = block.get("thinking", block.get("text"))
    if isinstance(text, str):
        return text
    summary = block.get("summary")  # a Responses reasoning item: summary parts with text
    if isinstance(summary, list):
        return "\n".join(p["text"] for p in summary if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return ""


def parse_tool_call(body: str) -> tuple[str, Any] | None:
    """(name, arguments) of a Hermes / Qwen ``<tool_call>`` body, ``{"name": ..., "arguments":
    {...}}`` (``parameters`` too; arguments given as JSON text are parsed); ``None`` where the
    body is not such an object.

    >>> parse_tool_call('{"name": "search", "arguments": {"query": "Paris"}}')
    ('search', {'query': 'Paris'})
    >>> parse_tool_call("search Paris") is None
    True
    """
    try:
        call = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return None
    args = call.get("arguments", call.get("parameters", {}))
    if isinstance(args, str):  # arguments as JSON text, as the OpenAI API gives them
        try:
            args = json.loads(args)
        except (ValueError, RecursionError):
            pass
    return call["name"], args


UNPARSED_CALL = ("`<tool_call>` bodies that are not a JSON call object, read as calls of the tool they name (else "
                 "`tool_call`) with their text")
_NAME = re.compile(r'"name"[ \t]*:[ \t]*"([^"\\]{1,200})"')


#: marks a call read from a body that did not parse (the chat reader notes it)
UNPARSED = {"unparsed": True}


def hermes_call(body: str) -> tuple[str, Any, bool]:
    """(tool, arguments, whether the body parsed) of a ``<tool_call>`` body: a JSON call object
    as that tool's call; any other body as a call of the tool it names (``"name": "x"``), else of
    ``tool_call``, with its text as the query, in chat messages and transcripts alike.

    >>> hermes_call('{"name": "search", "arguments": {"q": "x"}}'), hermes_call('{"name": "search", "q": x}')
    (('search', {'q': 'x'}, True), ('search', {'query': '{"name": "search", "q": x}'}, False))
    """
    parsed = parse_tool_call(body)
    if parsed is not None:
        return parsed[0], parsed[1], True
    named = _NAME.search(body)
    return (named.group(1) if named else "tool_call"), {"query": body}, False


_LLAMA_CALL = "<function="


def llama_calls_as_hermes(text: str) -> str:
    """Llama 3.1's custom tool calls, ``<function=NAME>{...}</function>``, written as Hermes
    ``<tool_call>{"name": NAME, "arguments": {...}}</tool_call>`` (a body that is not JSON stays
    a call of NAME, with its text); one forward pass.

    >>> llama_calls_as_hermes('<function=search>{"q": "x"}</function>')
    '<tool_call>{"name": "search", "arguments": {"q": "x"}}</tool_call>'
    """
    out, pos = [], 0
    start = text.find(_LLAMA_CALL)
    while start >= 0:
        name_end = text.find(">", start)
        close = text.find("</function>", name_end) if name_end >= 0 else -1
        if close < 0:
            break
        name, body = text[start + len(_LLAMA_CALL):name_end].strip(), text[name_end + 1:close].strip()
        try:
            json.loads(body)
        except (ValueError, RecursionError):
            body = json.dumps({"query": body}, ensure_ascii=False)
        out += [text[pos:start], '<tool_call>{"name": ', json.dumps(name, ensure_ascii=False), ', "arguments": ',
                body, "}</tool_call>"]
        pos = close + len("</function>")
        start = text.find(_LLAMA_CALL, pos)
    return "".join(out) + text[pos:] if out else text


LLAMA_BUILTIN = "<|python_tag|>"
# where a built-in call ends: the end of its message (`<|eom_id|>`: a tool's result follows), of
# its turn, or the next header
_LLAMA_ENDS = ("<|eom_id|>", "<|eot_id|>", "<|start_header_id|>")
_BUILTIN_CALL = re.compile(r"([A-Za-z_]\w{0,60})\.call\((.*)\)\s*;?\s*", re.S)
_BUILTIN_MAX = 20_000


def _builtin_arguments(text: str) -> dict[str, Any] | None:
    """The keyword (and first positional) arguments of ``name.call(...)``, where each is a
    literal (``query="x"``, ``n=3``); ``None`` where they are not. Parsed, never run."""
    try:
        tree = ast.parse(f"f({text})", mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    call = tree.body
    if not isinstance(call, ast.Call):
        return None
    try:
        args = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
        if call.args:
            args.setdefault("query", ast.literal_eval(call.args[0]))
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None
    return args


def llama_builtin_as_hermes(text: str) -> str:
    """Llama 3.1's built-in tool calls, ``<|python_tag|>`` then ``brave_search.call(query="x")``
    (or ``wolfram_alpha.call(...)``), a JSON call ``{"name": ..., "parameters": ...}``, or a
    program for its code interpreter, written as Hermes ``<tool_call>`` blocks (the program as a
    call of ``code_interpreter`` with a ``code`` field); one forward pass.

    >>> llama_builtin_as_hermes('<|python_tag|>brave_search.call(query="Seine")<|eom_id|>')
    '<tool_call>{"name": "brave_search", "arguments": {"query": "Seine"}}</tool_call><|eom_id|>'
    >>> llama_builtin_as_hermes("<|python_tag|>print(2 + 2)<|eom_id|>")
    '<tool_call>{"name": "code_interpreter", "arguments": {"code": "print(2 + 2)"}}</tool_call><|eom_id|>'
    """
    out, pos = [], 0
    start = text.find(LLAMA_BUILTIN)
    ends = dict.fromkeys(_LLAMA_ENDS, -2)  # each end marker's next place (-1: none left), found again once passed
    while start >= 0:
        begin = start + len(LLAMA_BUILTIN)
        for marker, at in ends.items():
            if at != -1 and at < begin:
                ends[marker] = text.find(marker, begin)
        end = min((i for i in ends.values() if i >= 0), default=len(text))
        body = text[begin:end].strip()
        call = _BUILTIN_CALL.fullmatch(body[:_BUILTIN_MAX])
        parsed = parse_tool_call(body) if body.startswith("{") else None
        if call is not None and (args := _builtin_arguments(call.group(2))) is not None:
            name, arguments = call.group(1), args
        elif parsed is not None:
            name, arguments = parsed
        else:
            name, arguments = "code_interpreter", {"code": body}
        out += [text[pos:start], "<tool_call>", json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False,
                                                             default=str), "</tool_call>"]
        pos = end
        start = text.find(LLAMA_BUILTIN, pos)
    return "".join(out) + text[pos:] if out else text


def _tagged(text: str, tag: str) -> tuple[list[str], str]:
    """The bodies of ``<tag>...</tag>`` blocks in ``text`` and the text outside them (an
    unclosed block runs to the end); one forward pass."""
    opening, closing = f"<{tag}>", f"</{tag}>"
    bodies, rest, pos = [], [], 0
    start = text.find(opening)
    while start >= 0:
        rest.append(text[pos:start])
        end = text.find(closing, start + len(opening))
        bodies.append((text[start + len(opening):] if end < 0 else text[start + len(opening):end]).strip())
        pos = len(text) if end < 0 else end + len(closing)
        start = text.find(opening, pos)
    rest.append(text[pos:])
    return bodies, "".join(rest).strip()


# ShareGPT turns (LLaMA-Factory's agent data): `from` names the speaker, `value` the text
_SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant", "system": "system",
                   "observation": "tool", "tool": "tool", "function": "tool"}


def _sharegpt(msg: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    """A ShareGPT turn as an OpenAI message: ``function_call`` (its value a JSON call, or Hermes
    ``<tool_call>`` text) as an assistant call, ``observation`` as a tool result; a speaker it
    does not know is an error naming the field (its turn would be lost)."""
    speaker, value = msg["from"], msg.get("value")
    if speaker != "function_call" and speaker.lower() not in _SHAREGPT_ROLES:
        raise InputError(f"`{where}.from` is {speaker[:40]!r}, a ShareGPT speaker this reader does not know "
                         f"(it reads {', '.join(sorted(_SHAREGPT_ROLES))}, function_call)", field=f"{where}.from")
    if speaker == "function_call" and isinstance(value, str):
        parsed = parse_tool_call(value)
        if parsed is not None:
            return {"role": "assistant", "content": None,
                    "tool_calls": [{"id": None, "function": {"name": parsed[0], "arguments": parsed[1]}}]}
        return {"role": "assistant", "content": value if "<tool_call>" in value else f"<tool_call>{value}</tool_call>"}
    return {"role": _SHAREGPT_ROLES.get(speaker.lower(), speaker), "content": value}


def _hermes(msg: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    """A message that writes its calls as ``<tool_call>`` blocks in its text (Hermes / Qwen
    function calling), or its results as ``<tool_response>`` blocks, as OpenAI messages; else
    ``None``. Results carry no ids: they answer the calls in order."""
    text, role = msg.get("content"), msg.get("role")
    if not isinstance(text, str) or msg.get("tool_calls"):
        return None
    if role == "ipython":  # Llama 3.1's tool results
        return [{"role": "tool", "tool_call_id": None, "content": text}]
    if role == "assistant" and _LLAMA_CALL in text:
        text = llama_calls_as_hermes(text)
    if role == "assistant" and LLAMA_BUILTIN in text:
        text = llama_builtin_as_hermes(text)
    if role == "assistant" and "<tool_call>" in text:
        bodies, rest = _tagged(text, "tool_call")
        calls = []
        for body in bodies:
            name, args, parsed = hermes_call(body)
            calls.append({"id": None, "function": {"name": name, "arguments": args}, **({} if parsed else UNPARSED)})
        return [{**msg, "content": rest, "tool_calls": calls}]
    if role in ("user", "tool") and "<tool_response>" in text:
        bodies, rest = _tagged(text, "tool_response")
        said = [{"role": "user", "content": rest}] if role == "user" and rest else []
        return [{"role": "tool", "tool_call_id": None, "content": b} for b in bodies] + said
    return None


def openai_shaped(msg: Any, where: str) -> list[Mapping[str, Any]]:
    """One logged message (or Responses item) as the OpenAI chat messages it stands for.

    A message whose content blocks hold tool calls becomes one assistant message with
    ``tool_calls`` (its text and reasoning blocks, its thought); one whose blocks hold tool
    results becomes a ``role: "tool"`` message per result, then a user message with its text,
    if any (the user's next turn). Gemini's role ``model`` is the assistant. A message of
    OpenAI's own shape comes back as it is.

    Examples
    --------
    >>> [m["role"] for m in openai_shaped({"role": "user", "content": [
    ...     {"type": "tool_result", "tool_use_id": "t1", "content": "42"},
    ...     {"type": "text", "text": "thanks, now the next one"}]}, "messages[2]")]
    ['tool', 'user']
    >>> openai_shaped({"role": "model", "parts": [{"functionCall": {"name": "search", "args": {"q": "x"}}}]},
    ...               "contents[1]")[0]["tool_calls"]
    [{'id': None, 'function': {'name': 'search', 'arguments': {'q': 'x'}}}]
    """
    if not isinstance(msg, Mapping):
        return [msg]  # the parser names what it is
    msg = _with_role(msg, where)
    shaped = _responses_item(msg)
    if shaped is None:
        shaped = _hermes(msg)
    return shaped if shaped is not None else _from_blocks(msg, where)


def _with_role(msg: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    """A ShareGPT turn or a LangChain message with OpenAI's ``role`` (and flat calls,
    ``{"name", "args"}``, as OpenAI's ``{"id", "function": {...}}``)."""
    if "role" not in msg and isinstance(msg.get("from"), str):
        msg = _sharegpt(msg, where)
    if "role" not in msg and msg.get("type") in _LANGCHAIN_ROLES:
        data = msg.get("data") if isinstance(msg.get("data"), Mapping) else msg  # messages_to_dict nests it
        role = _LANGCHAIN_ROLES[msg["type"]] or data.get("role")
        msg = {**data, **({"role": role} if role is not None else {})}
    calls = msg.get("tool_calls")
    if isinstance(calls, list) and any(isinstance(c, Mapping) and "function" not in c and "name" in c for c in calls):
        msg = {**msg, "tool_calls": [
            {"id": c.get("id"), "function": {"name": c["name"],
                                             "arguments": c.get("args", c.get("arguments", c.get("parameters")))}}
            if isinstance(c, Mapping) and "function" not in c and "name" in c else c for c in calls]}
    return msg


def _responses_item(msg: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    """An OpenAI Responses item that is not a message (a call, its output, reasoning) as the
    message it stands for; ``None`` for anything else."""
    kind = msg.get("type") if "role" not in msg else None
    if kind == "function_call":
        return [{"role": "assistant", "content": None, "tool_calls": [
            {"id": msg.get("call_id", msg.get("id")), "function": {"name": msg.get("name"),
                                                                "arguments": msg.get("arguments")}}]}]
    if kind == "function_call_output":
        return [{"role": "tool", "tool_call_id": msg.get("call_id"), "content": msg.get("output")}]
    if kind == "reasoning":
        return [{"role": "assistant", "content": None, "_thinking": _text_of_thinking(msg)}]
    return None


def _from_blocks(msg: Mapping[str, Any], where: str) -> list[Mapping[str, Any]]:
    """A message whose content blocks (or Gemini parts) hold calls, results or reasoning as the
    OpenAI messages they stand for; any other message as it is (Gemini's role ``model`` as the
    assistant)."""
    blocks = _blocks(msg)
    kinds = [_block_kind(b) for b in blocks]
    for i, (block, kind) in enumerate(zip(blocks, kinds)):
        # a call or result in a block this reader does not know would be lost without a word
        named = block.get("type") if kind is None and isinstance(block, Mapping) else None
        if isinstance(named, str) and _CALL_LIKE.search(named):
            part = "content" if "content" in msg else "parts"
            raise InputError(f"`{where}.{part}[{i}]` is a `{named[:40]}` block, a tool call or result in a form this "
                             "reader does not know; convert it to OpenAI `tool_calls` or Anthropic `tool_use`",
                             field=f"{where}.{part}[{i}].type")
    if not any(kinds):
        if msg.get("role") == "model" or "content" not in msg and "parts" in msg:
            return [{**msg, "role": "assistant" if msg.get("role") == "model" else msg.get("role"),
                     "content": msg.get("content", msg.get("parts"))}]
        return [msg]
    role = message_role(msg, where)
    text = [b for b, k in zip(blocks, kinds) if k is None]
    if "result" in kinds:
        out: list[Mapping[str, Any]] = [_result_of(b) for b, k in zip(blocks, kinds) if k == "result"]
        said = content_text(text)
        return out + ([{"role": "user", "content": said}] if said.strip() else [])
    calls = [_call_of(b) for b, k in zip(blocks, kinds) if k == "call"]
    thinking = "\n".join(t for t in (_text_of_thinking(b) for b, k in zip(blocks, kinds) if k == "thinking") if t)
    return [{"role": "assistant" if role == "model" else role, "content": text, "tool_calls": calls,
             "_thinking": thinking}]


def shows_tool_call(msg: Any) -> bool:
    """Whether a logged message shows a tool call or a tool's result in any form read here
    (what a file of chats is detected by).

    >>> shows_tool_call({"role": "assistant", "content": [{"type": "tool_use", "name": "search"}]})
    True
    >>> shows_tool_call({"role": "user", "content": "hello"})
    False
    """
    if not isinstance(msg, Mapping):
        return False
    if isinstance(msg.get("data"), Mapping):  # LangChain's messages_to_dict form
        msg = msg["data"]
    content = msg.get("content")
    return bool(msg.get("tool_calls") or msg.get("role") in ("tool", "function", "ipython") or msg.get("function_call")
                or msg.get("type") in _ITEM_CALLS or msg.get("type") == "tool"
                or msg.get("from") in ("function_call", "observation") or any(_block_kind(b) for b in _blocks(msg))
                or (isinstance(content, str) and ("<tool_call>" in content or _LLAMA_CALL in content
                                                  or LLAMA_BUILTIN in content)))


UNREAD = ("episodes without a call whose agent's text holds markup no reader here reads (a code fence, a "
          "`<|...|>` delimiter, a `<tool...>`, `<function...>` or `<code>` tag, an `Action:` line, Mistral's "
          "`[TOOL_CALLS]`): read as answering "
          "without tools; if the agent called tools there, its format is not one read here (`format=`, `columns=`)")
# markup of a call format no reader knows (bounded: no pattern backtracks over the text)
# (Mistral's `[TOOL_CALLS]` and DeepSeek's `<｜tool▁calls▁begin｜>` tokens among them)
_UNREAD = re.compile(r"```|<\|[A-Za-z_]{1,40}\|>|<(?:tool|function|code|call|execute|python)\b|^[ \t]*Action[ \t]*:"
                     r"|\[TOOL_CALLS\]|<｜tool", re.M)


def unread_markup(text: str) -> bool:
    """Whether an agent's text holds markup of a call format (:data:`UNREAD`): asked of episodes
    read without a call, so that one in a format no reader knows is said in the read report.

    >>> unread_markup('<|tool_start|>lookup("x")'), unread_markup('[TOOL_CALLS] [{"name": "f"}]')
    (True, True)
    >>> unread_markup("Paris.")
    False
    """
    return _UNREAD.search(text) is not None
