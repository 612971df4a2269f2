"""The final answer inside a model's last message, by the conventions agents use.

A chat agent rarely ends with the bare answer: it writes ``<answer>Paris</answer>``,
``\\boxed{Paris}``, ``Final answer: Paris``, ``Answer: Paris`` or a ReAct ``Finish[Paris]``
after some reasoning. Keeping the whole message as the answer makes exact match fail on
every row (the issue that made an arm score 0 %), so :func:`extract_answer` looks for these
conventions, last occurrence first, and falls back to the whole message only when none is
there.

Every search here is a ``str.rfind`` or one forward scan: model text is untrusted, and a
lazy regular expression such as ``<answer>(.*?)</answer>`` takes quadratic time on a record
full of unclosed tags.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from mechanism.core.patterns import PATTERN_MAX, compile_linear

__all__ = ["extract_answer", "strip_think", "compile_answer_pattern"]

# "final answer" phrases, longest first so "the final answer is" wins over "final answer"
_FINAL_PHRASES = ("the final answer is", "final answer is", "final answer:", "final answer")
_BOXED = ("\\boxed{", "\\fbox{")


def _lower(text: str) -> str:
    """``text.lower()`` when that keeps every index in place (a few letters, such as the
    Turkish dotted capital I, lower-case to two characters); else ``text`` as it is."""
    low = text.lower()
    return low if len(low) == len(text) else text


def _last_pair(text: str, open_tag: str, close_tag: str) -> str | None:
    """The body of the last complete ``open_tag ... close_tag`` pair (case-insensitive)."""
    low = _lower(text)
    end = low.rfind(close_tag)
    while end >= 0:
        start = low.rfind(open_tag, 0, end)
        if start >= 0:
            return text[start + len(open_tag): end]
        return None
    return None


def _boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` with balanced braces."""
    at = max(text.rfind(b) for b in _BOXED)
    if at < 0:
        return None
    start = text.index("{", at) + 1
    depth = 1
    for i in range(start, min(len(text), start + 10_000)):  # an answer is short; bound the scan
        ch = text[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start:i]
    return None


def _clean(answer: str) -> str:
    """Trim markdown emphasis, quotes and a trailing full stop that wrap an answer."""
    out = answer.strip()
    for _ in range(3):
        before = out
        out = out.strip().strip("*_`").strip()
        if len(out) >= 2 and out[0] == out[-1] and out[0] in "\"'":
            out = out[1:-1].strip()
        if out.endswith(".") and not out.endswith(".."):
            out = out[:-1].rstrip()
        if out == before:
            break
    return out


def _after_phrase(text: str) -> str | None:
    """The rest of the line after the last "final answer" phrase."""
    low = _lower(text)
    best = -1
    length = 0
    for phrase in _FINAL_PHRASES:
        at = low.rfind(phrase)
        if at > best:  # the last occurrence of any phrase; a longer phrase at the same place wins
            best, length = at, len(phrase)
    if best < 0:
        return None
    rest = text[best + length:]
    rest = rest.lstrip(" \t*_:")
    if rest.lower().startswith("is "):
        rest = rest[3:]
    rest = rest.lstrip(" \t*_:")
    if rest.startswith("\n"):  # "Final answer:\nParis"
        rest = rest.lstrip()
    first, _, after = rest.partition("\n")
    if first.strip() in _MATH_OPENERS:
        # a display block on the lines below: "\\[", "\\boxed{3640}", "\\]" (how reasoning models write it)
        return _display_answer(after)
    return _line_answer(first)


_MATH_OPENERS = ("\\[", "$$", "\\(", "$", "\\begin{equation*}", "\\begin{equation}", "\\begin{align*}")
_MATH_CLOSERS = ("\\]", "$$", "\\)", "$", "\\end{equation*}", "\\end{equation}", "\\end{align*}")


def _display_answer(text: str) -> str | None:
    """The answer inside a display-math block that follows a "Final answer" line: its
    ``\\boxed{}`` content, else its first line of math (the block ends at its closing line)."""
    lines: list[str] = []
    for line in text.split("\n", 20)[:20]:  # a final answer's block is a few lines; bound the scan
        if line.strip() in _MATH_CLOSERS:
            break
        lines.append(line)
    block = "\n".join(lines)
    boxed = _boxed(block)
    if boxed is not None:
        return _clean(boxed) or None
    first = next((ln for ln in lines if ln.strip()), None)
    return _line_answer(first) if first is not None else None


def _line_answer(line: str) -> str | None:
    """The answer written on one line: its ``\\boxed{}`` content if it has one, else the line, cleaned."""
    boxed = _boxed(line)
    return _clean(boxed if boxed is not None else line) or None


def _answer_is(text: str) -> str | None:
    """The rest of the line after the last "the answer is" (a chat model's plain ending)."""
    low = _lower(text)
    at = low.rfind("the answer is")
    if at < 0:
        return None
    rest = text[at + len("the answer is"):].lstrip(" \t:*_")
    return _line_answer(rest.split("\n", 1)[0])


def _answer_line(text: str) -> str | None:
    """The rest of the last line that starts with ``Answer:``."""
    low = _lower(text)
    at = low.rfind("answer:")
    while at >= 0:
        line_start = low.rfind("\n", 0, at) + 1
        prefix = low[line_start:at].strip(" \t*_#>-")
        if not prefix:
            return _line_answer(text[at + len("answer:"):].split("\n", 1)[0])
        at = low.rfind("answer:", 0, line_start) if line_start > 0 else -1
    return None


def _finish_call(text: str) -> str | None:
    """The argument of the last ReAct ``Finish[...]`` (to the last ``]`` of its line)."""
    low = _lower(text)
    at = low.rfind("finish[")
    if at < 0 or (at > 0 and (low[at - 1].isalnum() or low[at - 1] == "_")):
        return None
    line = text[at + len("finish["):].split("\n", 1)[0]
    close = line.rfind("]")
    return line[:close].strip() if close >= 0 else None


def strip_think(text: str) -> str:
    """``text`` without its ``<think>...</think>`` blocks (one linear pass; an unclosed
    ``<think>`` hides the rest, as a reasoning model's cut-off thought does)."""
    low = _lower(text)
    if "<think>" not in low and "</think>" not in low:
        return text
    out: list[str] = []
    pos = 0
    # a reply whose template opened <think> in the prompt starts inside it
    first_open, first_close = low.find("<think>"), low.find("</think>")
    if first_close >= 0 and (first_open < 0 or first_close < first_open):
        pos = first_close + len("</think>")
    while True:
        start = low.find("<think>", pos)
        if start < 0:
            out.append(text[pos:])
            break
        out.append(text[pos:start])
        end = low.find("</think>", start)
        if end < 0:
            break
        pos = end + len("</think>")
    return "".join(out)


ANSWER_PATTERN_MAX = PATTERN_MAX  # characters of a user's answer pattern


def compile_answer_pattern(pattern: str | re.Pattern[str] | None) -> Any:
    """A user's ``answer_pattern`` compiled by RE2 (:func:`mechanism.core.patterns.compile_linear`), a
    regular-expression engine whose time is linear in the text: Python's ``re`` backtracks, so
    ``(a+)+$`` takes time exponential in a long message and ``.*ANSWER: (.*)`` quadratic where
    nothing matches, and the messages are untrusted. A pattern RE2 cannot run (backreferences,
    lookaround) is refused with a one-line error saying so. ``.`` matches newlines, as ``re.S``
    does. An already compiled ``re.Pattern`` is the caller's own choice and is used as it is."""
    return compile_linear(pattern, option="answer_pattern", dot_all=True)


def extract_answer(text: str, *, pattern: Any = None,
                   fallback: bool = True) -> tuple[str | None, str]:
    """The final answer in a message, and the convention it was found by.

    Parameters
    ----------
    text
        The message (the agent's last words).
    pattern
        A user's regular expression: its last match wins (group 1 when it has a group).
        When it matches nothing, the conventions below are tried.
    fallback
        Return the whole message (``<think>`` blocks removed) when no convention matches.

    Returns
    -------
    (str or None, str)
        The answer (``None`` when the message is empty, or nothing matched and
        ``fallback`` is false) and the rule used: ``pattern``, ``answer_tag``, ``boxed``,
        ``final_answer``, ``answer_line``, ``answer_is``, ``finish``, ``whole_message`` or
        ``none``.

    Examples
    --------
    >>> extract_answer("Let me think.\\nFinal answer: Paris.")
    ('Paris', 'final_answer')
    >>> extract_answer("so it is \\\\boxed{\\\\frac{1}{2}}")
    ('\\\\frac{1}{2}', 'boxed')
    >>> extract_answer("<think>hmm</think> <answer> Paris </answer>")
    ('Paris', 'answer_tag')
    >>> extract_answer("Thought: done. Action: Finish[Paris]")
    ('Paris', 'finish')
    >>> extract_answer("Paris")
    ('Paris', 'whole_message')
    >>> extract_answer("So the total is 3640.\\n\\n**Final Answer**\\n\\\\[\\n\\\\boxed{3640}\\n\\\\]")
    ('3640', 'final_answer')
    """
    if pattern is not None:
        last = None
        try:
            for last in pattern.finditer(text):  # noqa: B007 - keeps the last match without a list of all
                pass
        except UnicodeEncodeError:  # a lone surrogate RE2 cannot encode: no match here
            last = None
        if last is not None:
            value = last.group(1) if pattern.groups else last.group(0)
            if value is not None and value.strip():
                return value.strip(), "pattern"
    visible = strip_think(text)
    tag = _last_pair(visible, "<answer>", "</answer>")
    if tag is not None:
        return tag.strip(), "answer_tag"
    rules: tuple[tuple[str, Callable[[str], str | None]], ...] = (
        ("finish", _finish_call), ("final_answer", _after_phrase), ("boxed", _boxed), ("answer_line", _answer_line),
        ("answer_is", _answer_is))
    for name, rule in rules:
        found = rule(visible)
        if found is not None and found.strip():
            return found.strip(), name
    whole = visible.strip()
    if fallback and whole:
        return whole, "whole_message"
    return None, "none"
