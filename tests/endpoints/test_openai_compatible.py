"""The OpenAI-compatible endpoint against the real served simulator on 127.0.0.1.

Every number is checked against what is planted: the answers against the server's own answer to
the same body (sent with the standard library, not through the endpoint), the log-probabilities against the
arm's planted language model (``planted_logprobs``), and the request counts of each fault
against the tries its retry rule allows. Retries back off for 0.01 s, so the faults stay fast.
"""
from __future__ import annotations

import json
import socket
import time
import urllib.request

import pytest

pytest.importorskip("openai", reason="the endpoint runs on the openai client")
pytest.importorskip("fastapi", reason="the served simulator runs on fastapi")
pytest.importorskip("uvicorn", reason="the served simulator runs on uvicorn")
serving = pytest.importorskip("mechanism.datasets.serving", reason="needs the served simulator")

import mechanism as mx  # noqa: E402 - after the skips
from mechanism.core.errors import CacheWarning  # noqa: E402
from mechanism.endpoints import EndpointError, OpenAICompatible  # noqa: E402

TEXTS = [
    "Let me search for the author first.",
    "Search: capital of France\nObservation: Paris is the capital of France.",
    "  leading spaces, and a unicode ü  ",
    "one",
]


@pytest.fixture(scope="module")
def sim():
    return mx.simulate(n_questions=4, n_samples=2, arms=("base", "rl"), random_state=0, progress=False)


@pytest.fixture(scope="module")
def server(sim):
    with serving.serve(sim) as srv:
        yield srv


def _endpoint(url, **kwargs):
    options = {"backoff_s": 0.01, "max_retries": 2, "timeout_s": 10.0, "progress": False, **kwargs}
    return OpenAICompatible(url, "rl", **options)


def _prompts(sim):
    return [f"Question: {q}\nAnswer:" for q in sim.runs["question"].unique(maintain_order=True).to_list()]


def _one_line(exc, url):
    text = str(exc)
    assert "\n" not in text
    assert text.startswith(f"endpoint {url} (model `rl`): ")
    return text.removeprefix(f"endpoint {url} (model `rl`): ")


def _post(url, body):
    """The server's JSON answer to ``body``, sent without the endpoint's code."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_completions_and_chat_equal_the_servers_own_answers(sim, server):
    prompts = _prompts(sim)
    endpoint = _endpoint(server.url, max_concurrency=3)
    got = endpoint.complete(prompts, max_tokens=16, n=2, seed=3)
    direct = [_post(f"{server.url}/completions",
                    {"model": "rl", "prompt": p, "max_tokens": 16, "temperature": 0.0, "n": 2, "seed": 3})
              for p in prompts]
    assert got == [[c["text"] for c in sorted(d["choices"], key=lambda c: c["index"])] for d in direct]
    assert endpoint.stats.requests == len(prompts) and endpoint.stats.retries == 0
    assert endpoint.stats.prompt_tokens == sum(d["usage"]["prompt_tokens"] for d in direct)
    assert endpoint.stats.completion_tokens == sum(d["usage"]["completion_tokens"] for d in direct)

    conversations = [[{"role": "user", "content": p}] for p in prompts[:2]]
    chat = endpoint.chat(conversations, max_tokens=16, seed=1)
    want = [_post(f"{server.url}/chat/completions",
                  {"model": "rl", "messages": c, "max_tokens": 16, "temperature": 0.0, "n": 1, "seed": 1}
                  )["choices"][0]["message"]["content"] for c in conversations]
    assert chat == [[w] for w in want]
    assert endpoint.stats.requests == len(prompts) + 2


@pytest.mark.parametrize("via", ["prompt_logprobs", "echo", "auto"])
def test_logprobs_equal_the_planted_model(sim, server, via):
    from mechanism.datasets.served_model import planted_logprobs

    endpoint = _endpoint(server.url, logprobs_via=via)
    got = endpoint.logprobs(TEXTS)
    for text, scored in zip(TEXTS, got):
        tokens, offsets, want = planted_logprobs(sim, "rl", text)
        assert scored.text == text
        assert scored.tokens == tokens and scored.offsets == offsets
        assert scored.logprobs[0] is None and want[0] is None
        assert max((abs(a - b) for a, b in zip(scored.logprobs[1:], want[1:])), default=0.0) < 1e-6
        assert len(scored.logprobs) == len(want)
    assert endpoint.stats.requests == len(TEXTS) and endpoint.stats.failed == 0


def test_a_cached_rerun_sends_nothing_even_on_another_port(sim, server, tmp_path):
    prompts = _prompts(sim)
    first = _endpoint(server.url, cache_dir=tmp_path)
    answers = first.complete(prompts, max_tokens=8)
    scored = first.logprobs(TEXTS)
    assert first.stats.requests == len(prompts) + len(TEXTS) and first.stats.cached == 0

    with serving.serve(sim) as other:  # the same model restarted elsewhere: the key leaves the address out
        assert other.port != server.port
        again = _endpoint(other.url, cache_dir=tmp_path)
        assert again.complete(prompts, max_tokens=8) == answers
        assert again.logprobs(TEXTS) == scored
        assert again.stats.requests == 0 and other.requests == 0
        assert again.stats.cached == len(prompts) + len(TEXTS)
        # a changed body is another request
        again.complete(prompts[:1], max_tokens=9)
        assert again.stats.requests == 1 and other.requests == 1


def test_a_corrupted_cache_entry_is_fetched_again(sim, server, tmp_path):
    prompt = _prompts(sim)[:1]
    want = _endpoint(server.url, cache_dir=tmp_path).complete(prompt, max_tokens=8)
    [entry] = [p for p in (tmp_path / "endpoints").rglob("*.json") if not p.name.endswith(".json.json")]
    entry.write_bytes(entry.read_bytes().replace(b"choices", b"chOices"))
    rebuilt = _endpoint(server.url, cache_dir=tmp_path)
    with pytest.warns(CacheWarning, match="rebuilt"):
        assert rebuilt.complete(prompt, max_tokens=8) == want
    assert rebuilt.stats.requests == 1 and rebuilt.stats.cached == 0
    after = _endpoint(server.url, cache_dir=tmp_path)  # the entry was written again
    assert after.complete(prompt, max_tokens=8) == want
    assert after.stats.requests == 0 and after.stats.cached == 1


def test_a_server_that_is_down(sim):
    url = f"http://127.0.0.1:{_free_port()}/v1"  # bound then closed: nothing listens there
    endpoint = _endpoint(url)
    with pytest.raises(EndpointError) as info:
        endpoint.complete(["Question: x\nAnswer:"])
    assert _one_line(info.value, url) == "connection refused after 3 tries"
    assert endpoint.stats.as_dict() == {"requests": 3, "cached": 0, "retries": 2, "failed": 1,
                                        "prompt_tokens": 0, "completion_tokens": 0}


def test_a_slow_server_times_out(sim):
    with serving.serve(sim, delay_s=1.5) as slow:
        endpoint = _endpoint(slow.url, timeout_s=0.3, max_retries=1)
        started = time.monotonic()
        with pytest.raises(EndpointError) as info:
            endpoint.complete(_prompts(sim)[:1])
        assert time.monotonic() - started < 1.5  # two tries of 0.3 s, not the server's 1.5 s
        assert _one_line(info.value, slow.url) == "no answer within 0.3 s after 2 tries"
        assert (endpoint.stats.requests, endpoint.stats.retries, endpoint.stats.failed) == (2, 1, 1)


@pytest.mark.parametrize("fault", [500, 429])
def test_one_fault_is_retried_then_answered(sim, server, fault):
    prompt = _prompts(sim)[:1]
    want = _endpoint(server.url).complete(prompt, max_tokens=8)
    with serving.serve(sim, faults=(fault,)) as flaky:
        # a 429 says Retry-After: 0, which is honoured over a backoff of 30 s
        endpoint = _endpoint(flaky.url, backoff_s=30.0 if fault == 429 else 0.01)
        started = time.monotonic()
        assert endpoint.complete(prompt, max_tokens=8) == want
        assert time.monotonic() - started < 10
        assert (endpoint.stats.requests, endpoint.stats.retries, endpoint.stats.failed) == (2, 1, 0)
        assert flaky.requests == 2


def test_a_server_that_keeps_failing(sim):
    with serving.serve(sim, faults=(500, 500, 500, 500)) as broken:
        endpoint = _endpoint(broken.url)
        with pytest.raises(EndpointError) as info:
            endpoint.complete(_prompts(sim)[:1])
        what = _one_line(info.value, broken.url)
        assert what.startswith("HTTP 500 after 3 tries: ") and "planted fault" in what
        assert len(what) <= len("HTTP 500 after 3 tries: ") + 200
        assert (endpoint.stats.requests, endpoint.stats.retries, endpoint.stats.failed) == (3, 2, 1)
        assert broken.requests == 3


def test_a_server_without_logprobs(sim):
    with serving.serve(sim, logprobs=False) as bare:
        endpoint = _endpoint(bare.url)
        with pytest.raises(EndpointError) as info:
            endpoint.logprobs(TEXTS)
        what = _one_line(info.value, bare.url)
        assert what.startswith("does not return prompt log-probabilities (tried prompt_logprobs and echo)")
        # each refusal is a 400, not retried: one request per method, then the error
        assert (endpoint.stats.requests, endpoint.stats.retries, endpoint.stats.failed) == (2, 0, 2)
        assert bare.requests == 2


def test_an_unknown_model_is_not_retried(sim, server):
    endpoint = OpenAICompatible(server.url, "nobody", backoff_s=0.01, progress=False)
    before = server.requests
    with pytest.raises(EndpointError) as info:
        endpoint.complete(_prompts(sim)[:1])
    assert str(info.value).startswith(f"endpoint {server.url} (model `nobody`): HTTP 404: ")
    assert "\n" not in str(info.value)
    assert endpoint.stats.requests == 1 and server.requests == before + 1


def test_requests_run_concurrently_within_the_bound(sim):
    prompts = _prompts(sim)  # 4 prompts, each answered after 0.5 s
    with serving.serve(sim, delay_s=0.5) as slow:
        endpoint = _endpoint(slow.url, max_concurrency=2)
        started = time.monotonic()
        assert len(endpoint.complete(prompts, max_tokens=4)) == 4
        elapsed = time.monotonic() - started
    # two at a time: two rounds of 0.5 s, never one (four at once) nor four (one at a time)
    assert 1.0 <= elapsed < 1.9, elapsed
    assert endpoint.stats.requests == 4


def test_identical_requests_in_flight_at_once_are_sent_once(sim, tmp_path, recwarn):
    # the served answers carry a per-request id, so two concurrent writers of one entry would
    # leave a payload and a sidecar that disagree; the slow server keeps both in flight together
    prompt = _prompts(sim)[0]
    with serving.serve(sim, delay_s=0.3) as slow:
        endpoint = _endpoint(slow.url, max_concurrency=4, cache_dir=tmp_path)
        answers = endpoint.complete([prompt] * 4, max_tokens=4)
        assert all(a == answers[0] for a in answers)
        assert slow.requests == 1 and endpoint.stats.requests == 1 and endpoint.stats.cached == 3
        again = _endpoint(slow.url, cache_dir=tmp_path)
        assert again.complete([prompt], max_tokens=4) == answers[:1]
        assert slow.requests == 1 and again.stats.cached == 1
    assert not [w for w in recwarn if issubclass(w.category, CacheWarning)]
