"""The prompts of the swap test: an episode's retrieval part rendered for another model, and
the answer read back from what that model wrote.

The retrieval part of an episode is what its tools returned, with the calls that asked for
it: its steps up to the last one with a result (an observation), or up to the ``k``-th result
when the swap is truncated. The agent's thoughts are left out (they are its reasoning, the
half the reasoner replaces), and so are calls after the last result (they returned nothing).
"""
from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

from mechanism.core.errors import InputError

#: The prompt around the retrieval part (fields ``{question}`` and ``{retrieval}``).
DEFAULT_TEMPLATE = "Question: {question}\n{retrieval}\nAnswer:"
#: One block per step of the retrieval part (fields ``{query}``, ``{observation}``, ``{tool}``).
DEFAULT_STEP_TEMPLATE = "Search: {query}\nObservation: {observation}"

_ANSWER_TAG = re.compile(r"<answer>(.*?)(?:</answer>|$)", re.DOTALL | re.IGNORECASE)


def check_template(template: str, allowed: Sequence[str], *, field: str, required: Sequence[str] = ()) -> str:
    """``template`` when it is a format string over ``allowed`` fields only (and holds every
    ``required`` one); else a one-line error naming ``field``.

    >>> check_template("Q: {question}", ("question", "retrieval"), field="template")
    'Q: {question}'
    """
    if not isinstance(template, str):
        raise InputError(f"`{field}` must be a format string, got {type(template).__name__}", field=field)
    try:
        names = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as exc:
        raise InputError(f"`{field}` is not a valid format string: {exc}", field=field) from exc
    unknown = sorted(n for n in names if n not in allowed)
    if unknown:
        raise InputError(f"`{field}` names unknown field(s) {unknown}; it may use {list(allowed)} "
                         "(write literal braces as {{ and }})", field=field)
    missing = [n for n in required if n not in names]
    if missing:
        raise InputError(f"`{field}` must hold {{{missing[0]}}}", field=field)
    return template


def retrieval_steps(steps: Sequence[Mapping[str, Any]] | None, after_results: int | None = None) -> list[Mapping]:
    """The steps of an episode's retrieval part: up to the last step with a result, or up to its
    ``after_results``-th result.

    >>> steps = [{"query": "a", "observation": "x"}, {"query": "b", "observation": None},
    ...          {"query": "c", "observation": "y"}, {"query": "d", "observation": None}]
    >>> [s["query"] for s in retrieval_steps(steps)], [s["query"] for s in retrieval_steps(steps, 1)]
    (['a', 'b', 'c'], ['a'])
    """
    steps = list(steps or [])
    with_result = [i for i, step in enumerate(steps) if step.get("observation") is not None]
    if after_results is not None:
        with_result = with_result[:after_results]
    return steps[: with_result[-1] + 1] if with_result else []


def render_retrieval(steps: Sequence[Mapping[str, Any]], step_template: str) -> str:
    """One block per step, joined by new lines (a missing field reads as empty)."""
    return "\n".join(step_template.format(query=step.get("query") or "", observation=step.get("observation") or "",
                                          tool=step.get("tool") or "") for step in steps)


def render_prompt(question: str | None, steps: Sequence[Mapping[str, Any]], *, template: str,
                  step_template: str) -> str:
    """The reasoner's prompt: ``template`` with the question and the rendered retrieval part."""
    return template.format(question=question or "", retrieval=render_retrieval(steps, step_template))


def read_answer(completion: str | None) -> str | None:
    """The answer in a completion: inside ``<answer>`` tags when it has them, else its first
    non-empty line; ``None`` when it holds nothing.

    >>> read_answer(" Paris\\nbecause ..."), read_answer("<think>x</think><answer> Lyon </answer>"), read_answer("  ")
    ('Paris', 'Lyon', None)
    """
    if not completion:
        return None
    tagged = _ANSWER_TAG.search(completion)
    text = tagged.group(1) if tagged else next((line for line in completion.splitlines() if line.strip()), "")
    text = text.strip()
    return text or None
