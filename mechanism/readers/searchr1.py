"""Search-R1 style transcripts: ``<think>``, ``<search>``, ``<information>``, ``<answer>`` tags.

Each ``<search> q </search>`` is one round; the ``<information>`` block after it is its
observation; the final answer is the last ``<answer>``. A transcript that ends inside an
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

from mechanism.core.errors import InputError
from mechanism.readers._fields import FieldMap, as_str

FORMAT = "searchr1"

TAGS = ("think", "search", "information", "answer")
CUT_OFF = ("transcripts end inside an unclosed `<think>`, `<search>` or `<answer>` (generation cut off): kept, "
           "the unfinished part counted as neither a round nor an answer")
_TAG = re.compile(r"<(/?)(think|search|information|answer)>")
# chat templates put the prompt (with example tags) before the model's turn
_ASSISTANT_MARKERS = ("<|im_start|>assistant", "<|start_header_id|>assistant<|end_header_id|>")


def detect(record: Mapping[str, Any], fields: FieldMap) -> bool:
    text = fields.get(record, "text")
    return isinstance(text, str) and ("<search>" in text or "<answer>" in text or "<information>" in text)


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
    if "<|" in text:  # one scan for the rare chat-template text, not one per marker
        for marker in _ASSISTANT_MARKERS:
            at = text.rfind(marker)
            if at >= 0:
                text = text[at + len(marker):]
                break
    steps: list[dict[str, str | None]] = []
    thoughts: list[str] = []
    answer: str | None = None
    open_tag: str | None = None
    # split() hands back [text, "/" or "", tag, text, ...] in one C call: far cheaper per
    # record than a Python loop over match objects
    parts = _TAG.split(text)
    for i in range(1, len(parts), 3):
        closing, tag = parts[i] == "/", parts[i + 1]
        if not closing:
            if open_tag is not None:
                raise InputError(f"unclosed `<{open_tag}>` tag in `{field}` (a `<{tag}>` opens before it closes)",
                                 field=field)
            open_tag = tag
            continue
        if open_tag != tag:
            if open_tag is None and tag == "think" and not steps and not thoughts:
                # the chat template opened <think> in the prompt: the reply starts inside it
                thoughts.append(parts[i - 1].strip())  # the text since the last tag, never tag names
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
        else:
            answer = body
    notes = []
    if open_tag is not None:
        if open_tag == "information":  # the environment's output, not the model's: a damaged record
            raise InputError(f"unclosed `<{open_tag}>` tag in `{field}`", field=field)
        # the model's generation stopped inside a tag (a length limit): the unfinished search
        # was never run and the unfinished answer never given
        notes.append(CUT_OFF)
    return {"steps": steps, "answer": answer, "final": answer is not None, "notes": notes}


def parse(record: Mapping[str, Any], fields: FieldMap) -> dict[str, Any]:
    """Parse one record holding a transcript in its ``text`` field (``response`` by default)."""
    name, text = fields.find(record, "text")
    if name is None:
        want = " or ".join(f"`{p}`" for p in fields.paths("text"))
        raise InputError(f"missing transcript field {want}", field=fields.paths("text")[0])
    return {**parse_text(as_str(text, name, allow_number=False), field=name), "_consumed": {name}}
