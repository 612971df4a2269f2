"""Base-model log-probabilities of the agent's own text, from any endpoint.

``integration`` reads per-token base-model log-probabilities from a column
(:data:`mechanism.analysis.information.LOGPROBS_DTYPE`); :func:`score_logprobs` makes that
column. Each trajectory is rendered as one text (the rendering of
:func:`mechanism.analysis.information.render_segments`, or the agent's own prompt format through
``template``), with the character span of every reasoning and query segment; the endpoint
scores the text (its prompt log-probabilities) and returns its tokens with their character
offsets. A token belongs to the segment its first non-space character falls in (its text is
read from the offsets, ``text[offset_i:offset_{i+1}]``: nothing is re-tokenised); tokens in no
asked-for segment, pure white space and the first token (no context) are left out.
"""
from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from mechanism.analysis._swap_prompts import check_template
from mechanism.analysis.information import LOGPROBS_DTYPE, render_segments, render_template
from mechanism.core.errors import InputError
from mechanism.core.progress import progress as bar
from mechanism.core.schema import validate

if TYPE_CHECKING:
    from mechanism.endpoints import Endpoint

__all__ = ["score_logprobs", "assign_segments"]

_BATCH = 64


def assign_segments(text: str, spans: Sequence[tuple[int, int, str]], offsets: Sequence[int],
                    logprobs: Sequence[float | None], *, segments: Sequence[str]) -> list[dict[str, Any]]:
    """Each scored token's segment, by character offsets: the segment whose span holds the
    token's first non-space character (a leading space belongs to what came before).

    >>> text = "Thought: go\\nSearch: Paris"
    >>> spans = [(9, 11, "reasoning"), (20, 25, "query")]
    >>> assign_segments(text, spans, [0, 8, 11, 19], [None, -1.0, -2.0, -3.0], segments=("query", "reasoning"))
    [{'segment': 'reasoning', 'logprob': -1.0}, {'segment': 'query', 'logprob': -3.0}]
    """
    starts = [a for a, _, _ in spans]
    wanted = set(segments)
    out = []
    for i, (start, logprob) in enumerate(zip(offsets, logprobs)):
        if logprob is None:
            continue
        end = offsets[i + 1] if i + 1 < len(offsets) else len(text)
        piece = text[start:max(end, start)]
        if not piece.strip():  # white space (or a token past the text) carries no segment text
            continue
        first = start + len(piece) - len(piece.lstrip())
        j = bisect_right(starts, first) - 1
        if j >= 0 and first < spans[j][1] and spans[j][2] in wanted:
            out.append({"segment": spans[j][2], "logprob": float(logprob)})
    return out


def score_logprobs(runs: pl.DataFrame, endpoint: Endpoint, *, segments: Sequence[str] = ("query", "reasoning"),
                   template: str | None = None, step_template: str | None = None,
                   column: str = "base_model_logprobs", progress: bool | None = None) -> pl.DataFrame:
    """``runs`` plus a column of base-model log-probabilities of the agent's own text, as
    ``mx.integration(..., logprobs_column=column)`` reads it.

    Parameters
    ----------
    runs
        Canonical table (``question``, ``steps``).
    endpoint
        The base model: any endpoint with ``logprobs(texts)`` (prompt log-probabilities, with
        each token's character offset).
    segments
        The segments kept: ``"query"``, ``"reasoning"`` or both.
    template, step_template
        The agent's prompt format: ``template`` over ``{question}`` and ``{steps}``, one
        ``step_template`` block per step over ``{thought}``, ``{query}``, ``{observation}`` and
        ``{tool}`` (Search-R1: ``"<think>{thought}</think>\\n<search> {query} </search>\\n\\n"
        "<information>{observation}</information>\\n\\n"``). Default: the rendering of
        :func:`mechanism.analysis.information.render_segments` (``Question:``, then
        ``Thought:``/``Search:``/``Observation:`` lines).
    column
        Name of the new column (:data:`~mechanism.analysis.information.LOGPROBS_DTYPE`).
    progress
        Progress bar over batches of texts (``None``: on a terminal only).

    Returns
    -------
    polars.DataFrame
        ``runs`` with ``column`` added (or replaced).
    """
    validate(runs, required=("question", "steps"))
    segments = _check_segments(segments)
    if not hasattr(endpoint, "logprobs"):
        raise InputError(f"`endpoint` must be an endpoint with `logprobs`, got {type(endpoint).__name__}",
                         field="endpoint")
    if template is None and step_template is not None:
        raise InputError("`step_template` needs `template`", field="step_template")
    if template is not None:
        template = check_template(template, ("question", "steps"), field="template", required=("steps",))
        step_template = check_template(step_template or "Thought: {thought}\nSearch: {query}\n"
                                       "Observation: {observation}\n", ("thought", "query", "observation", "tool"),
                                       field="step_template")
    rendered = [render_segments(row) if template is None else render_template(row, template, step_template)
                for row in runs.select("question", "steps").iter_rows(named=True)]
    texts = list(dict.fromkeys(text for text, spans in rendered if spans))
    scored = _score(endpoint, texts, progress)
    values = []
    for text, spans in rendered:
        if not spans:
            values.append([])
            continue
        got = scored[text]
        values.append(assign_segments(text, spans, list(got.offsets), list(got.logprobs), segments=segments))
    return runs.with_columns(pl.Series(column, values, dtype=LOGPROBS_DTYPE))


def _check_segments(segments: Any) -> tuple[str, ...]:
    values = (segments,) if isinstance(segments, str) else tuple(segments)
    bad = [s for s in values if s not in ("query", "reasoning")]
    if bad or not values:
        raise InputError(f"`segments` takes 'query' and/or 'reasoning', got {list(values)}", field="segments")
    return values


def _score(endpoint: Any, texts: list[str], progress: bool | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    batches = [texts[i:i + _BATCH] for i in range(0, len(texts), _BATCH)]
    for batch in bar(batches, enabled=progress, desc="base-model log-probs", total=len(batches)):
        got = endpoint.logprobs(batch)
        if len(got) != len(batch):
            raise InputError(f"the endpoint scored {len(got)} of {len(batch)} texts", field="endpoint")
        for text, item in zip(batch, got):
            if len(item.offsets) != len(item.logprobs) or any(o < 0 or o > len(text) for o in item.offsets):
                raise InputError("the endpoint's token offsets do not fit the text it scored", field="endpoint")
            out[text] = item
    return out
