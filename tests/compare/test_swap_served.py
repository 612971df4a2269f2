"""The swap test end to end: the real OpenAI-compatible client against the served simulator
(a FastAPI app under uvicorn on 127.0.0.1), whose planted truth says what the swap must find.

Each world is 40 questions x 4 samples of arms base and rl; the served reasoner's exact
expected accuracy per cell (``planted_swap``, computed from the episodes' steps, not from a
prompt) gives the planted split. In the default world both arms integrate alike (the
simulator's default policies share one integration rate), so its planted reasoning part is 0
and the gain is all retrieval; ``reasoning_only`` plants the reverse.
"""
from __future__ import annotations

import pytest

pytest.importorskip("openai", reason="the endpoint client needs the `endpoints` extra (openai)")
pytest.importorskip("fastapi", reason="the served simulator needs the `endpoints` extra (fastapi)")
pytest.importorskip("uvicorn", reason="the served simulator needs the `endpoints` extra (uvicorn)")

import polars as pl

import mechanism as mx
from mechanism.datasets.serving import planted_swap, serve, swap_policies, swap_split
from mechanism.endpoints import EndpointError, OpenAICompatible

ARMS = ("base", "rl")


def _world(kind: str | None):
    policies = None if kind is None else swap_policies(kind)
    return mx.simulate(n_questions=40, n_samples=4, arms=ARMS, policies=policies, random_state=0, progress=False)


def _swap(sim, **options):
    with serve(sim) as server:
        endpoints = {a: OpenAICompatible(server.url, a, timeout_s=20.0, progress=False) for a in ARMS}
        res = mx.swap(sim.runs, reasoner=endpoints, base="base", treated="rl", progress=False, **options)
        return res, server.requests


def _holds(res, part: str, value: float) -> bool:
    _, low, high = res.part(part)
    return low <= value <= high


@pytest.mark.parametrize("kind", [None, "retrieval_only", "reasoning_only"])
def test_the_split_holds_the_planted_parts(kind):
    sim = _world(kind)
    res, n_requests = _swap(sim)
    planted = swap_split(planted_swap(sim, ARMS, ARMS), "base", "rl")
    assert _holds(res, "retrieval", planted["retrieval"]), (res.split, planted)
    assert _holds(res, "reasoning", planted["reasoning"]), (res.split, planted)
    if kind in (None, "retrieval_only"):  # the reasoners share one integration: the reasoning part is 0
        assert planted["reasoning"] == 0.0 and _holds(res, "reasoning", 0.0)
        assert not _holds(res, "retrieval", 0.0)  # and the planted retrieval difference is found
    if kind == "reasoning_only":  # both arms draw their episodes from one distribution
        assert _holds(res, "retrieval", 0.0)
        assert not _holds(res, "reasoning", 0.0)
    # every cell's interval holds its planted expectation, the control included
    truth = planted_swap(sim, [*ARMS, "none"], ARMS)
    cells = res.table.join(truth.select("retrieval_from", "reasoner", pl.col("accuracy").alias("planted")),
                           on=["retrieval_from", "reasoner"])
    assert cells.height == 6
    assert cells.filter((pl.col("ci_low") > pl.col("planted")) | (pl.col("ci_high") < pl.col("planted"))).height <= 1
    # one request per distinct prompt and reasoner; the notes count them as the server did
    counted = res.endpoints["requests"].sum()
    assert counted == n_requests and 0 < counted <= 2 * (2 * 160 + 40)


def test_a_cached_rerun_sends_no_request(tmp_path):
    sim = mx.simulate(n_questions=8, n_samples=2, arms=ARMS, random_state=1, progress=False)
    with serve(sim) as server:
        def run():
            endpoints = {a: OpenAICompatible(server.url, a, cache_dir=tmp_path, progress=False) for a in ARMS}
            return mx.swap(sim.runs, reasoner=endpoints, base="base", treated="rl", n=2, progress=False)
        first = run()
        sent = server.requests
        again = run()
        assert server.requests == sent > 0
    assert again.endpoints["requests"].to_list() == [0, 0]
    assert again.endpoints["cached"].to_list() == first.endpoints["requests"].to_list()
    assert again.table.equals(first.table) and again.split.equals(first.split)
    assert any(" 0 requests, " in n and " cached" in n for n in again.notes)


def test_server_faults_through_the_swap(tmp_path):
    sim = mx.simulate(n_questions=2, n_samples=1, arms=ARMS, random_state=2, progress=False)
    runs = sim.runs
    # 500 then 429 (Retry-After: 0), then normal answers: retried, and the swap completes
    with serve(sim, faults=(500, 429)) as server:
        ep = OpenAICompatible(server.url, "rl", backoff_s=0.0, progress=False)
        res = mx.swap(runs, reasoner=ep, retrieval_from="rl", n_bootstrap=0, progress=False)
        assert res.endpoints["retries"].to_list() == [2]
        assert any("2 retries, 0 failed" in n for n in res.notes)
    # a server that is down: one line, with the endpoint named
    ep = OpenAICompatible(server.url, "rl", max_retries=1, backoff_s=0.0, timeout_s=2.0, progress=False)
    with pytest.raises(EndpointError) as info:
        mx.swap(runs, reasoner=ep, retrieval_from="rl", n_bootstrap=0, progress=False)
    assert "\n" not in str(info.value) and server.url.rstrip("/") in str(info.value)
    # a slow server: the timeout, one line
    with serve(sim, delay_s=1.0) as slow:
        ep = OpenAICompatible(slow.url, "rl", max_retries=0, timeout_s=0.2, progress=False)
        with pytest.raises(EndpointError) as info:
            mx.swap(runs.filter(pl.col("arm") == "rl").head(1), reasoner=ep, retrieval_from="rl", control=False,
                    n_bootstrap=0, progress=False)
        assert "\n" not in str(info.value) and "0.2" in str(info.value)
    # a server without log-probabilities: base-model scoring says so on one line
    with serve(sim, logprobs=False) as bare:
        ep = OpenAICompatible(bare.url, "base", max_retries=0, progress=False)
        with pytest.raises(EndpointError) as info:
            mx.score_logprobs(runs, ep)
        assert "\n" not in str(info.value) and "log-probabilities" in str(info.value)
