"""Base-model scoring: segments located by character offsets, the column ``integration`` reads,
and through the served simulator the planted language model's numbers to 1e-6."""
from __future__ import annotations

import math
import re

import numpy as np
import polars as pl
import pytest

import mechanism as mx
from mechanism.analysis.base_scoring import assign_segments
from mechanism.analysis.information import LOGPROBS_DTYPE, render_segments, render_template

TOKEN = re.compile(r"\s*\S+")


class Scored:
    def __init__(self, text, tokens, offsets, logprobs):
        self.text, self.tokens, self.offsets, self.logprobs = text, tokens, offsets, logprobs


class WordScorer:
    """A fake base model: tokens ``\\s*\\S+`` (leading space kept, as BPE models do), log-probability
    ``-len(word) / 10``, the first token None."""

    def __init__(self) -> None:
        self.model = "fake"
        self.batches: list[int] = []

    def logprobs(self, texts):
        self.batches.append(len(texts))
        out = []
        for text in texts:
            ms = list(TOKEN.finditer(text))
            lps = [None] + [-len(m.group().strip()) / 10 for m in ms[1:]]
            out.append(Scored(text, tuple(m.group() for m in ms), tuple(m.start() for m in ms), tuple(lps)))
        return out


def _runs():
    steps = [mx.make_step(thought="find the city", query="capital of France", observation="Paris is the capital"),
             mx.make_step(thought="done", query="Paris population", observation="2 million")]
    return pl.DataFrame({"arm": ["base", "rl", "rl"], "question_id": ["q0", "q0", "q1"], "sample_id": [0, 0, 0],
                         "question": ["Where?", "Where?", "None?"], "gold": [["Paris"]] * 3,
                         "answer": ["Paris"] * 3, "correct": [True, True, False], "n_rounds": [2, 2, 0],
                         "steps": [steps, steps, []]})


def test_the_column_holds_each_segment_s_tokens_by_offsets():
    runs = _runs()
    ep = WordScorer()
    out = mx.score_logprobs(runs, ep)
    assert out.schema["base_model_logprobs"] == LOGPROBS_DTYPE
    first = out["base_model_logprobs"][0].to_list()
    # "Thought: find the city" -> reasoning: find, the, city; "Search: capital of France" -> query
    want = [("reasoning", "find"), ("reasoning", "the"), ("reasoning", "city"), ("query", "capital"),
            ("query", "of"), ("query", "France"), ("reasoning", "done"), ("query", "Paris"), ("query", "population")]
    assert [(e["segment"], e["logprob"]) for e in first] == [(s, -len(w) / 10) for s, w in want]
    assert out["base_model_logprobs"][2].to_list() == []  # no steps: nothing scored (and no request)
    assert ep.batches == [1]  # the two identical texts are scored once
    # the perplexity integration reports is exp(-mean) of each segment's log-probabilities, per arm
    with pytest.warns(mx.ComparisonWarning, match="share 1 of 2 questions"):
        res = mx.integration(out, base="base", treated="rl", logprobs_column="base_model_logprobs", n_boot=50)
    ppl = {(r["arm"], r["segment"]): r["perplexity"] for r in res.perplexity.iter_rows(named=True)}
    q_lp = [-len(w) / 10 for s, w in want if s == "query"]
    r_lp = [-len(w) / 10 for s, w in want if s == "reasoning"]
    assert ppl[("base", "query")] == pytest.approx(math.exp(-np.mean(q_lp)))
    assert ppl[("base", "reasoning")] == pytest.approx(math.exp(-np.mean(r_lp)))
    only = mx.score_logprobs(runs, ep, segments="query", column="lp")
    assert {e["segment"] for e in only["lp"][0].to_list()} == {"query"}


def test_a_token_belongs_where_its_first_non_space_character_falls():
    text = "ab cd|ef"
    spans = [(3, 5, "query"), (6, 8, "reasoning")]
    # tokens: "ab" (None), " cd|" (starts in the space; its first letter is in the query span),
    # "ef" (reasoning), and a whitespace-only token carries nothing
    got = assign_segments(text, spans, [0, 2, 6], [None, -1.0, -2.0], segments=("query", "reasoning"))
    assert got == [{"segment": "query", "logprob": -1.0}, {"segment": "reasoning", "logprob": -2.0}]
    assert assign_segments("a   b", [(4, 5, "query")], [0, 1, 4], [None, -1.0, -2.0], segments=("query",)) == \
        [{"segment": "query", "logprob": -2.0}]


def test_a_user_template_marks_its_segments():
    row = _runs().row(0, named=True)
    text, spans = render_template(row, "Answer.\nQuestion: {question}\n{steps}",
                                  "<think>{thought}</think>\n<search> {query} </search>\n"
                                  "<information>{observation}</information>\n")
    assert text.startswith("Answer.\nQuestion: Where?\n<think>find the city</think>\n<search> capital of France")
    assert [text[a:b] for a, b, _ in spans] == ["find the city", "capital of France", "done", "Paris population"]
    default_text, default_spans = render_segments(row)
    out = mx.score_logprobs(_runs(), WordScorer(), template="Q {question}\n{steps}",
                            step_template="T {thought} S {query} O {observation}\n")
    assert len(out["base_model_logprobs"][0]) == 9 and default_spans and default_text != text
    with pytest.raises(mx.InputError, match="unknown field"):
        mx.score_logprobs(_runs(), WordScorer(), template="{question} {trajectory}")
    with pytest.raises(mx.InputError, match="`segments` takes"):
        mx.score_logprobs(_runs(), WordScorer(), segments=("answer",))


def test_through_the_served_simulator_the_planted_numbers_to_1e6():
    pytest.importorskip("openai", reason="the endpoint client needs the `endpoints` extra (openai)")
    pytest.importorskip("fastapi", reason="the served simulator needs the `endpoints` extra (fastapi)")
    from mechanism.datasets.serving import planted_logprobs, serve
    from mechanism.endpoints import OpenAICompatible

    sim = mx.simulate(n_questions=6, n_samples=2, arms=("base", "rl"), random_state=0, progress=False)
    runs = sim.runs
    with serve(sim) as server:
        out = mx.score_logprobs(runs, OpenAICompatible(server.url, "base", progress=False), progress=False)
    for row, got in zip(runs.iter_rows(named=True), out["base_model_logprobs"].to_list()):
        text, spans = render_segments(row)
        tokens, offsets, lps = planted_logprobs(sim, "base", text)
        want = []
        for tok, off, lp in zip(tokens, offsets, lps):  # the planted tokens carry their leading space
            first = off + len(tok) - len(tok.lstrip())
            seg = next((s for a, b, s in spans if a <= first < b), None)
            if lp is not None and seg is not None:
                want.append((seg, lp))
        assert [e["segment"] for e in got] == [s for s, _ in want]
        assert np.allclose([e["logprob"] for e in got], [lp for _, lp in want], atol=1e-6, rtol=0)
    res = mx.integration(out, base="base", treated="rl", logprobs_column="base_model_logprobs", n_boot=50)
    tokens = out.select("arm", "base_model_logprobs").explode("base_model_logprobs").unnest("base_model_logprobs")
    for r in res.perplexity.iter_rows(named=True):  # equal samples per question: the token mean per arm
        lp = tokens.filter((pl.col("arm") == r["arm"]) & (pl.col("segment") == r["segment"]))["logprob"]
        assert r["perplexity"] == pytest.approx(math.exp(-lp.mean()), rel=1e-9)
    assert {r["segment"] for r in res.perplexity.iter_rows(named=True)} == {"query", "reasoning"}
