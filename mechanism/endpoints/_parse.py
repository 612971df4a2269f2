"""Reading prompt log-probabilities out of the two answer shapes servers give.

- vLLM's ``prompt_logprobs`` (``POST /v1/completions`` with ``"prompt_logprobs": 0``):
  ``choices[0].prompt_logprobs`` is a list with one entry per prompt token, ``None`` for the
  first, each other a dict ``{token_id: {"logprob", "rank", "decoded_token"}}`` whose first key
  is the prompt's own token (vLLM puts it before the top alternatives; with
  ``prompt_token_ids`` in the answer the entry is picked by id instead). The first token's text
  is not given: it is what the text holds before the others (which run to the text's end, or to
  where only white space is left), and it is empty when it was a beginning-of-sequence token
  (then left out).
- The legacy completions format (``echo=True, logprobs=0, max_tokens=0``):
  ``choices[0].logprobs`` with ``tokens``, ``token_logprobs`` (``None`` first) and
  ``text_offset``. Tokens past the text (generated ones) are left out, and so is a leading token
  the text does not start with (a beginning-of-sequence token).

Offsets come from ``text_offset`` when the server gives it, else from the tokens' lengths.
Either reader returns ``None`` when the answer lacks the field, so the caller can try the other.
"""
from __future__ import annotations

import math
from typing import Any

from mechanism.endpoints._base import TokenLogprobs


class MalformedAnswer(ValueError):
    """An answer that has the field but not in its documented shape."""


def _number(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value > 1e-6:
        raise MalformedAnswer(f"log-probability {str(value)[:40]!r} is not a number <= 0")
    return float(value)


def _first_choice(answer: dict[str, Any]) -> dict[str, Any]:
    choices = answer.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise MalformedAnswer("the answer has no `choices`")
    return choices[0]


def _accumulate(start: int, tokens: list[str]) -> tuple[int, ...]:
    offsets, at = [], start
    for token in tokens:
        offsets.append(at)
        at += len(token)
    return tuple(offsets)


def _entry(entry: Any, token_id: Any) -> tuple[str, float]:
    if not isinstance(entry, dict) or not entry:
        raise MalformedAnswer("a `prompt_logprobs` entry is not a dict of tokens")
    chosen = entry.get(str(token_id), entry.get(token_id)) if token_id is not None else None
    if chosen is None:
        chosen = next(iter(entry.values()))
    if isinstance(chosen, (int, float)) and not isinstance(chosen, bool):  # {token: logprob}, as some servers give
        return str(next(iter(entry))), _number(chosen)
    if not isinstance(chosen, dict) or "logprob" not in chosen:
        raise MalformedAnswer("a `prompt_logprobs` entry lacks `logprob`")
    return str(chosen.get("decoded_token") or ""), _number(chosen["logprob"])


def _tail_start(text: str, tail: str) -> int:
    """Where the tokens after the first begin in ``text``: they run to its end, or to where only
    white space is left (a tokenizer may leave trailing white space out); 0 when they are not
    found (then the tokens' lengths place them)."""
    covered = len(text.rstrip())
    for end in range(len(text), covered - 1, -1):
        if end >= len(tail) and text.startswith(tail, end - len(tail)):
            return end - len(tail)
    return 0


def from_prompt_logprobs(text: str, answer: dict[str, Any]) -> TokenLogprobs | None:
    """The text's log-probabilities from vLLM's ``prompt_logprobs``, or ``None`` when absent."""
    choice = _first_choice(answer)
    entries = choice.get("prompt_logprobs", answer.get("prompt_logprobs"))
    if entries is None:
        return None
    if not isinstance(entries, list) or not entries:
        raise MalformedAnswer("`prompt_logprobs` is not a list of entries")
    ids = choice.get("prompt_token_ids") or answer.get("prompt_token_ids")
    ids = ids if isinstance(ids, list) and len(ids) == len(entries) else [None] * len(entries)
    rest = [_entry(entry, token_id) for entry, token_id in zip(entries[1:], ids[1:])]
    start = _tail_start(text, "".join(token for token, _ in rest))
    tokens = [token for token, _ in rest]
    logprobs: list[float | None] = [lp for _, lp in rest]
    if start > 0 or not rest:
        tokens.insert(0, text[:start])
        logprobs.insert(0, None)
        start = 0
    return TokenLogprobs(text, tuple(tokens), _accumulate(start, tokens), tuple(logprobs))


def from_echo(text: str, answer: dict[str, Any]) -> TokenLogprobs | None:
    """The text's log-probabilities from the legacy ``logprobs`` of an echoed prompt, or ``None``."""
    block = _first_choice(answer).get("logprobs")
    if not isinstance(block, dict) or not isinstance(block.get("tokens"), list):
        return None
    tokens = [str(t) for t in block["tokens"]]
    values = block.get("token_logprobs")
    if not isinstance(values, list) or len(values) != len(tokens):
        raise MalformedAnswer("`token_logprobs` does not match `tokens`")
    logprobs = [_number(v) for v in values]
    given = block.get("text_offset")
    offsets = (list(given) if isinstance(given, list) and len(given) == len(tokens)
               and all(isinstance(o, int) and not isinstance(o, bool) for o in given) else None)
    if tokens and not text.startswith(tokens[0]) and "".join(tokens[1:]).startswith(text[:1]):
        tokens, logprobs = tokens[1:], logprobs[1:]  # a beginning-of-sequence token before the text
        offsets = None
    offsets = offsets if offsets is not None and (not offsets or offsets[0] == 0) else list(_accumulate(0, tokens))
    keep = [i for i, o in enumerate(offsets) if o < len(text) or (i == 0 and not text)]
    return TokenLogprobs(text, tuple(tokens[i] for i in keep), tuple(offsets[i] for i in keep),
                         tuple(logprobs[i] for i in keep))
