"""Search-R1 style transcripts: ``<think>``, ``<search>``, ``<information>``, ``<answer>`` tags,
and the other tagged transcripts RL recipes train on: Hermes / Qwen function calling
(``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` answered by ``<tool_response>``) and
tool-integrated reasoning with code fences (ToRL, SimpleTIR: a `````python`` block answered by
an `````output`` block). R1-Searcher's (``<|begin_of_query|>``, ``<|begin_of_documents|>``) and
Search-o1's (``<|begin_search_query|>``, ``<|begin_search_result|>``) delimiters are read as
``<search>`` and ``<information>``; Search-o1 answers in words (``\\boxed{}``). Llama 3.1's
``<function=NAME>{...}</function>`` calls and ``ipython`` result turns are read as Hermes'.

Each ``<search> q </search>`` is one round; the ``<information>`` block after it is its
observation; the final answer is the last ``<answer>``. Each ``<tool_call>`` is a call of the
tool it names (a body that is not JSON: the call ``tool_call``, its text the argument, noted),
and the ``<tool_response>`` blocks answer the calls in order (parallel calls, then their
results). Each `````python`` block is a call of ``python`` with a ``code`` field, and the
`````output`` block after it its observation. Where such a transcript has no ``<answer>``, the
answer is read from its last words (``\\boxed{}``, "the answer is", ...). In a chat template's
text, the model's reply starts at the first assistant turn after the last user turn that is not
a tool's response. A transcript that ends inside an
unclosed ``<think>``, ``<search>`` or ``<answer>`` was cut off by a length limit: it is kept
(the unfinished part is neither a round nor an answer) and noted. A tag opened inside another,
an unmatched closing tag or an unclosed ``<information>`` (the environment's output) is a
parse problem of that record (an :class:`InputError` naming the field).
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from mechanism.core.actions import main_text
from mechanism.core.errors import InputError
from mechanism.core.schema import PARALLEL, make_step
from mechanism.readers._answer import extract_answer
from mechanism.readers._fields import FieldMap, as_str
from mechanism.readers._shapes import (
    LLAMA_BUILTIN,
    UNPARSED_CALL,
    UNREAD,
    hermes_call,
    llama_builtin_as_hermes,
    llama_calls_as_hermes,
    unread_markup,
)

FORMAT = "searchr1"

TAGS = ("think", "search", "information", "answer", "tool_call", "tool_response", "sql", "observation", "solution")
CUT_OFF = ("transcripts end inside an unclosed `<think>`, `<search>` or `<answer>` (generation cut off): kept, "
           "the unfinished part counted as neither a round nor an answer")
_TAG = re.compile(r"<(/?)(think|search|information|answer|tool_call|tool_response|sql|observation|solution)>")
# chat templates put the prompt (with example tags) before the model's turn: (user, assistant)
_TEMPLATES = (("<|im_start|>user", "<|im_start|>assistant"),
              ("<|start_header_id|>user<|end_header_id|>", "<|start_header_id|>assistant<|end_header_id|>"))
# a user turn that is a tool's response, not the user's words
_TOOL_TURN = ("<tool_response>", "<information>", "<observation>")
# Llama 3.1: a tool's result is an `ipython` turn; a template's special tokens are not words
_LLAMA_TOOL_TURN = "<|start_header_id|>ipython<|end_header_id|>"
_SPECIAL = re.compile(r"<\|[A-Za-z_]{1,40}\|>")
# other search agents' delimiters for a query and its documents: R1-Searcher, Search-o1
_DELIMITERS = (("<|begin_of_query|>", "<search>"), ("<|end_of_query|>", "</search>"),
               ("<|begin_of_documents|>", "<information>"), ("<|end_of_documents|>", "</information>"),
               ("<|begin_search_query|>", "<search>"), ("<|end_search_query|>", "</search>"),
               ("<|begin_search_result|>", "<information>"), ("<|end_search_result|>", "</information>"))
_FENCE = re.compile(r"```[ \t]*(python|py|output)[ \t]*\n", re.I)


def detect(record: Mapping[str, Any], fields: FieldMap) -> bool:
    text = fields.get(record, "text")
    return isinstance(text, str) and ("<search>" in text or "<answer>" in text or "<information>" in text
                                      or "<tool_call>" in text or "```output" in text or "<|begin_of_query|>" in text
                                      or "<|begin_search_query|>" in text or "<sql>" in text or "<solution>" in text)


_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')


def _query_json(query: str) -> str:
    """``json.dumps({"query": query}, ensure_ascii=False)``, without the encoder's overhead
    for the common query that needs no escaping."""
    if _NEEDS_ESCAPE.search(query) is None:
        return '{"query": "' + query + '"}'
    return json.dumps({"query": query}, ensure_ascii=False)


def parse_text(text: str, *, field: str = "text") -> dict[str, Any]:
    """Parse one transcript into steps and answer.

    Returns
    -------
    dict
        ``steps`` (list of step dicts), ``answer`` (str or None) and ``final`` (whether an
        ``<answer>`` was given).

    Raises
    ------
    InputError
        On an unclosed ``<tag>`` or a closing tag without its opening one.
    """
    words_answer = False  # whether an answer in words counts where no `<answer>` is given
    if "<|" in text:  # one scan for the rare chat-template text, not one per marker
        text, words_answer = _template_text(text)
    if "<function=" in text:  # Llama 3.1's custom tool calls, read as Hermes' `<tool_call>`
        text = llama_calls_as_hermes(text)
    if "```output" in text and "<search>" not in text and "<tool_call>" not in text:
        return _fenced(text, field)
    steps: list[dict[str, str | None]] = []
    thoughts: list[str] = []
    answer: str | None = None
    open_tag: str | None = None
    notes: list[str] = []
    answered = 0  # the calls answered in order: `<tool_response>` blocks answer parallel calls
    last_call = -1  # where the last `<tool_call>` or `<tool_response>` closed
    # split() hands back [text, "/" or "", tag, text, ...] in one C call: far cheaper per
    # record than a Python loop over match objects
    parts = _TAG.split(text)
    for i in range(1, len(parts), 3):
        closing, tag = parts[i] == "/", parts[i + 1]
        if not closing:
            if open_tag is not None:
                if tag in _SKYRL_TAGS:  # inside another block (a thought that names it): words, kept as written
                    parts[i + 2] = f"{parts[i - 1]}<{tag}>{parts[i + 2]}"
                    continue
                raise InputError(f"unclosed `<{open_tag}>` tag in `{field}` (a `<{tag}>` opens before it closes)",
                                 field=field)
            open_tag = tag
            continue
        if open_tag != tag:
            if open_tag is None and tag == "think" and not steps and not thoughts:
                # the chat template opened <think> in the prompt: the reply starts inside it
                thoughts.append(parts[i - 1].strip())  # the text since the last tag, never tag names
                continue
            if open_tag is not None and tag in _SKYRL_TAGS:
                parts[i + 2] = f"{parts[i - 1]}</{tag}>{parts[i + 2]}"
                continue
            raise InputError(f"unmatched `</{tag}>` in `{field}`", field=field)
        body = parts[i - 1].strip()
        open_tag = None
        if tag == "think":
            thoughts.append(body)
        elif tag == "search":
            steps.append({"thought": "\n".join(thoughts) if thoughts else None, "tool": "search",
                          "arguments": _query_json(body), "query": body, "observation": None, "user": None})
            thoughts = []
        elif tag == "information":
            if steps and steps[-1]["observation"] is None:
                steps[-1]["observation"] = body
            else:
                raise InputError(f"`<information>` without a `<search>` before it in `{field}`", field=field)
        elif tag in ("tool_call", "sql"):  # a Hermes call, or SkyRL-SQL's statement (its result an `<observation>`)
            steps.append(_call_step(body, "\n".join(thoughts) if thoughts else None, notes, sql=tag == "sql"))
            if last_call >= 0 and parts[last_call + 1] == "tool_call":  # no result since the last call: one turn
                steps[-1][PARALLEL] = True
            thoughts = []
            last_call = i
        elif tag in ("tool_response", "observation"):
            while answered < len(steps) and steps[answered]["observation"] is not None:
                answered += 1
            if answered == len(steps):
                if tag == "observation":  # some agents write the tag in their own words: text
                    continue
                raise InputError(f"`<tool_response>` without a `<tool_call>` before it in `{field}`", field=field)
            # SkyRL-SQL's result ends in a reminder of the turns left: the environment's, not the tool's
            steps[answered]["observation"] = _REMINDER.sub("", body).strip() if "<reminder>" in body else body
            last_call = i
        else:  # `<answer>`, SkyRL-SQL's `<solution>`
            answer = body
    rule = "answer_tag"
    if answer is None and last_call >= 0:  # a function-calling transcript ends in words
        answer, rule = extract_answer(_SPECIAL.sub(" ", "".join(parts[last_call + 2:])), fallback=False)
    elif answer is None and words_answer and steps:  # Search-o1 answers in words, `\boxed{}`
        answer, rule = extract_answer(parts[-1], fallback=False)
    if not steps and unread_markup(text):  # say so, never a silent "no tool used"
        notes.append(UNREAD)
    if open_tag is not None:
        if open_tag == "information":  # the environment's output, not the model's: a damaged record
            raise InputError(f"unclosed `<{open_tag}>` tag in `{field}`", field=field)
        # the model's generation stopped inside a tag (a length limit): the unfinished search
        # was never run and the unfinished answer never given
        notes.append(CUT_OFF)
    return {"steps": steps, "answer": answer, "final": answer is not None, "notes": notes,
            **({"answer_rule": rule} if answer is not None and rule != "answer_tag" else {})}


_REMINDER = re.compile(r"<reminder>.*?</reminder>", re.S)
_SKYRL_TAGS = frozenset({"sql", "observation", "solution"})


def _template_text(text: str) -> tuple[str, bool]:
    """A chat template's text as the tags read it: the reply (:func:`_reply`), Llama 3.1's tool
    results and built-in calls as Hermes' blocks, R1-Searcher's and Search-o1's delimiters as
    Search-R1's tags; and whether an answer in words counts (Search-o1's ``\\boxed{}``)."""
    text = _reply(text)
    if _LLAMA_TOOL_TURN in text:  # Llama 3.1's tool results, read as Hermes' `<tool_response>`
        text = _llama_results(text)
    if LLAMA_BUILTIN in text:  # Llama 3.1's built-in calls (`<|python_tag|>brave_search.call(...)`)
        text = llama_builtin_as_hermes(text)
    if "<|begin_" not in text:
        return text, False
    for theirs, ours in _DELIMITERS:  # R1-Searcher's and Search-o1's delimiters, read as Search-R1's tags
        text = text.replace(theirs, ours)
    return text, True


def _llama_results(text: str) -> str:
    """Llama 3.1's ``ipython`` turns (tool results, up to ``<|eot_id|>``) as ``<tool_response>``
    blocks; one forward pass."""
    out, pos = [], 0
    start = text.find(_LLAMA_TOOL_TURN)
    while start >= 0:
        end = text.find("<|eot_id|>", start)
        end = len(text) if end < 0 else end
        out += [text[pos:start], "<tool_response>", text[start + len(_LLAMA_TOOL_TURN):end].strip(), "</tool_response>"]
        pos = end
        start = text.find(_LLAMA_TOOL_TURN, pos)
    return "".join(out) + text[pos:]


def _reply(text: str) -> str:
    """The model's reply in a chat template's text: from the first assistant turn after the
    last user turn that is not a tool's response (the question; example turns before it and
    the tool turns after it are not where the reply starts); all of it where every user turn is
    a tool's; else after the last assistant marker; else all of it. The user turns are scanned
    from the end, so a one-question prompt costs one pass."""
    for user, assistant in _TEMPLATES:
        question, tool_turns = text.rfind(user), False
        while question >= 0 and text[question + len(user):question + len(user) + 40].lstrip().startswith(_TOOL_TURN):
            tool_turns = True
            question = text.rfind(user, 0, question)
        if question < 0 and tool_turns:  # every user turn a tool's: the text starts in the reply
            return text
        at = text.find(assistant, question) if question >= 0 else text.rfind(assistant)
        if at >= 0:
            return text[at + len(assistant):]
    return text


def _call_step(body: str, thought: str | None, notes: list[str], *, sql: bool = False) -> dict[str, str | None]:
    """The step of a ``<tool_call>`` body: ``{"name": ..., "arguments": {...}}`` as that tool's
    call; another body as a call of ``tool_call`` with its text (noted), its name taken where
    one is written. With ``sql``, the body of SkyRL-SQL's ``<sql>``: a call of ``sql`` with the
    statement in its ``sql`` field."""
    if sql:
        return make_step(thought=thought, tool="sql", arguments=json.dumps({"sql": body}, ensure_ascii=False),
                         query=body)
    name, args, parsed = hermes_call(body)
    if not parsed:
        notes.append(UNPARSED_CALL)
    raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    return make_step(thought=thought, tool=name, arguments=raw,
                     query=main_text(args if isinstance(args, dict) else None, raw))


def _fenced(text: str, field: str) -> dict[str, Any]:
    """Steps and answer of a transcript of code fences: each `````python`` block a call of
    ``python`` (its ``code`` field), the `````output`` block after it its observation, the
    answer from the words after the last block. One forward pass."""
    steps: list[dict[str, str | None]] = []
    pos = 0
    for m in _FENCE.finditer(text):
        if m.start() < pos:  # a fence written inside an earlier block's text
            continue
        close = text.find("```", m.end())
        body = (text[m.end():] if close < 0 else text[m.end():close]).strip()
        words = text[pos:m.start()].strip()
        pos = len(text) if close < 0 else close + 3
        if m.group(1).lower() != "output":
            steps.append(make_step(thought=words or None, tool="python",
                                   arguments=json.dumps({"code": body}, ensure_ascii=False), query=body))
        elif steps and steps[-1]["observation"] is None:
            steps[-1]["observation"] = body
        else:
            raise InputError(f"an ```output block without a ```python block before it in `{field}`", field=field)
    answer, rule = extract_answer(text[pos:], fallback=False)
    return {"steps": steps, "answer": answer, "final": answer is not None, "notes": [],
            **({"answer_rule": rule} if answer is not None else {})}


def parse(record: Mapping[str, Any], fields: FieldMap) -> dict[str, Any]:
    """Parse one record holding a transcript in its ``text`` field (``response`` by default)."""
    name, text = fields.find(record, "text")
    if name is None:
        want = " or ".join(f"`{p}`" for p in fields.paths("text"))
        raise InputError(f"missing transcript field {want}", field=fields.paths("text")[0])
    return {**parse_text(as_str(text, name, allow_number=False), field=name), "_consumed": {name}}
