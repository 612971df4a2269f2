"""The served simulator: a real HTTP server on 127.0.0.1, its routes in the OpenAI shapes, its
faults, and its answers against their planted truth (``planted_swap``, ``planted_logprobs``)."""
from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter

import polars as pl
import pytest

pytest.importorskip("fastapi", reason="the served simulator needs fastapi (the `endpoints` extra)")
pytest.importorskip("uvicorn", reason="the served simulator needs uvicorn (the `endpoints` extra)")
httpx = pytest.importorskip("httpx2", reason="these tests talk to the server with httpx2 (the openai client's)")

import mechanism as mx  # noqa: E402
from mechanism.core.errors import InputError  # noqa: E402
from mechanism.datasets.served_model import (  # noqa: E402
    TOKEN,
    arm_texts,
    gold_counts,
    language_model,
    reasoner_probability,
)
from mechanism.datasets.serving import (  # noqa: E402
    planted_logprobs,
    planted_swap,
    serve,
    swap_policies,
    swap_split,
)
from mechanism.datasets.simulation import simulate  # noqa: E402

TIMEOUT = 10.0


@pytest.fixture(scope="module")
def sim():
    # both parts of the gain nonzero, so a reasoner that ignored its model or its context would show
    return simulate(n_questions=24, n_samples=4, arms=("base", "rl"), policies=swap_policies("both"),
                    random_state=3, progress=False)


@pytest.fixture(scope="module")
def server(sim):
    with serve(sim, random_state=5) as srv:
        yield srv


@pytest.fixture(scope="module")
def client():
    with httpx.Client(timeout=TIMEOUT) as c:
        yield c


def prompt_of(question: str, steps) -> str:
    """The retrieval part of an episode rendered as a swap test renders it."""
    blocks = [f"Search: {s['query']}\nObservation: {s['observation']}" for s in steps or ()]
    return "\n".join([f"Question: {question}", *blocks, "Answer:"])


def test_models_route_lists_one_model_per_arm(server, client):
    body = client.get(f"{server.url}/models").json()
    assert body["object"] == "list"
    assert [m["id"] for m in body["data"]] == ["base", "rl"]
    assert all(m["object"] == "model" for m in body["data"])


def test_completions_shape_and_usage(sim, server, client):
    qs = sim.world[:3]
    prompts = [f"Question: {q.text}\nAnswer:" for q in qs]
    r = client.post(f"{server.url}/completions", json={"model": "rl", "prompt": prompts, "n": 2, "max_tokens": 16})
    assert r.status_code == 200
    body = r.json()
    assert body["object"] == "text_completion" and body["model"] == "rl"
    assert [c["index"] for c in body["choices"]] == list(range(6))
    for i, c in enumerate(body["choices"]):
        q = qs[i // 2]
        assert c["text"] in {q.gold[0], *q.wrong_pool}
        assert c["finish_reason"] == "stop" and c["logprobs"] is None
    usage = body["usage"]
    assert usage["prompt_tokens"] == sum(len(TOKEN.findall(p)) for p in prompts)
    assert usage["completion_tokens"] == sum(len(TOKEN.findall(c["text"])) for c in body["choices"])
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    # max_tokens counts planted tokens, and stop cuts the text
    long_q = next(q for q in sim.world if len(TOKEN.findall(q.gold[0])) >= 2 and q.category == "comparison")
    one = client.post(f"{server.url}/completions", json={"model": "rl", "prompt": f"Question: {long_q.text}",
                                                         "max_tokens": 1, "n": 8}).json()
    assert all(len(TOKEN.findall(c["text"])) == 1 and c["finish_reason"] == "length" for c in one["choices"])


def test_chat_shape(sim, server, client):
    q = sim.world[0]
    messages = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": f"Question: {q.text}"}]
    body = client.post(f"{server.url}/chat/completions", json={"model": "base", "messages": messages, "n": 3}).json()
    assert body["object"] == "chat.completion"
    assert [c["index"] for c in body["choices"]] == [0, 1, 2]
    for c in body["choices"]:
        assert c["message"]["role"] == "assistant" and c["message"]["content"] in {q.gold[0], *q.wrong_pool}
    assert body["usage"]["prompt_tokens"] == len(TOKEN.findall("Answer briefly.")) + len(TOKEN.findall(
        f"Question: {q.text}"))


def test_echo_and_prompt_logprobs_equal_the_planted_model(sim, server, client):
    text = "Let me search for this.\nSearch: who directed it\nObservation: nothing zzzunseen"
    tokens, offsets, lps = planted_logprobs(sim, "base", text)
    assert "".join(tokens) == text and offsets[0] == 0 and lps[0] is None
    echo = client.post(f"{server.url}/completions", json={"model": "base", "prompt": text, "echo": True,
                                                          "logprobs": 0, "max_tokens": 0}).json()
    c = echo["choices"][0]
    assert c["text"] == text
    legacy = c["logprobs"]
    assert legacy["tokens"] == list(tokens) and legacy["text_offset"] == list(offsets)
    assert legacy["token_logprobs"][0] is None and legacy["top_logprobs"][0] is None
    assert max(abs(a - b) for a, b in zip(legacy["token_logprobs"][1:], lps[1:])) < 1e-12
    assert [d[t] for d, t in zip(legacy["top_logprobs"][1:], tokens[1:])] == list(lps[1:])
    vllm = client.post(f"{server.url}/completions", json={"model": "base", "prompt": text, "max_tokens": 1,
                                                          "prompt_logprobs": 0}).json()
    entries = vllm["choices"][0]["prompt_logprobs"]
    assert len(entries) == len(tokens) and entries[0] is None
    for entry, tok, lp in zip(entries[1:], tokens[1:], lps[1:]):
        (only,) = entry.values()  # prompt_logprobs=0: the prompt's own token alone
        assert only["decoded_token"] == tok and abs(only["logprob"] - lp) < 1e-12 and only["rank"] >= 1
    # the unseen token has the smoothing mass: alpha / (total + alpha (V + 1))
    lm = language_model(sim, "base")
    assert lps[-1] == pytest.approx(math.log(1.0 / (lm.total + len(lm.vocab) + 1)), abs=1e-12)
    # another arm is another model
    assert planted_logprobs(sim, "rl", text)[2][1:] != lps[1:]


def test_planted_unigram_model_is_normalised_and_counts_the_arm_text(sim):
    for arm in ("base", "rl"):
        lm = language_model(sim, arm)
        counts = Counter(m.group() for t in arm_texts(sim.runs, arm) for m in TOKEN.finditer(t))
        assert lm.counts == counts and lm.total == sum(counts.values())
        mass = math.fsum(math.exp(lm.logprob(t)) for t in lm.vocab) + math.exp(lm.logprob("\x00never"))
        assert mass == pytest.approx(1.0, abs=1e-12)
        top = lm.vocab[0]
        assert lm.logprob(top) == pytest.approx(math.log((counts[top] + 1) / (lm.total + len(counts) + 1)))


def test_a_non_loopback_host_is_refused(sim):
    for host in ("0.0.0.0", "192.168.1.10", "example.org"):
        with pytest.raises(InputError, match="loopback") as err:
            serve(sim, host=host)
        assert "\n" not in str(err.value)


def test_faults_then_normal_answers_and_the_request_counter(sim, client):
    with serve(sim, faults=(500, 429, 503)) as srv:
        first = [client.get(f"{srv.url}/models") for _ in range(4)]
        assert [r.status_code for r in first] == [500, 429, 503, 200]
        assert first[1].headers["retry-after"] == "0"
        assert first[0].json()["error"]["code"] == 500
        assert srv.requests == 4
        client.post(f"{srv.url}/completions", json={"model": "nope", "prompt": "x"})
        assert srv.requests == 5


def test_unknown_model_and_unknown_question(server, client):
    r = client.post(f"{server.url}/completions", json={"model": "gpt-9", "prompt": "Question: ?"})
    assert r.status_code == 404 and "gpt-9" in r.json()["error"]["message"]
    r = client.post(f"{server.url}/chat/completions",
                    json={"model": "rl", "messages": [{"role": "user", "content": "Question: not one of them"}]})
    assert r.status_code == 400 and r.json()["error"]["param"] == "prompt"


def test_delay_and_no_logprobs(sim, client):
    with serve(sim, delay_s=0.3, logprobs=False) as srv:
        t0 = time.perf_counter()
        ok = client.post(f"{srv.url}/completions",
                         json={"model": "base", "prompt": f"Question: {sim.world[0].text}"})
        assert ok.status_code == 200 and time.perf_counter() - t0 >= 0.3
        for extra in ({"echo": True, "logprobs": 0, "max_tokens": 0}, {"prompt_logprobs": 0, "max_tokens": 1}):
            r = client.post(f"{srv.url}/completions", json={"model": "base", "prompt": "some text", **extra})
            assert r.status_code == 400
            assert r.json()["error"]["type"] == "BadRequestError"
        with pytest.raises(httpx.TimeoutException):
            client.get(f"{srv.url}/models", timeout=0.05)
        t0 = time.perf_counter()
    assert time.perf_counter() - t0 < 8.0  # stopping is bounded even with a request in flight


def test_answers_are_deterministic_and_seeded(sim, server, client):
    prompts = [f"Question: {q.text}\nAnswer:" for q in sim.world]

    def texts(seed):
        body = client.post(f"{server.url}/completions", json={"model": "base", "prompt": prompts, "n": 2,
                                                              "seed": seed}).json()
        return [c["text"] for c in body["choices"]]

    a, b, c = texts(0), texts(0), texts(1)
    assert a == b
    assert a != c  # another seed is another sample (48 draws, most with p strictly inside (0, 1))


def test_the_reasoner_is_the_simulators_closed_form_on_lookup_strategies(sim):
    world = {q.question_id: q for q in sim.world}
    truth = sim.truth.select("arm", "question_id", "sample_id", "strategy", "p_correct")
    runs = sim.runs.join(truth, on=["arm", "question_id", "sample_id"])
    checked = 0
    for row in runs.iter_rows(named=True):
        if row["strategy"] not in ("no_search", "bridge", "parallel_compare", "verify", "parallel_verify"):
            continue  # whole-question evidence is integrated as a lookup's (the module's stated difference)
        q = world[row["question_id"]]
        p = reasoner_probability(sim.policies[row["arm"]], q, gold_counts(q, (s["observation"] for s in row["steps"])))
        assert p == pytest.approx(row["p_correct"], abs=1e-12)
        checked += 1
    assert checked > 50


def test_served_accuracy_matches_planted_swap(sim, server, client):
    """Every answer is an independent Bernoulli(p) draw given its prompt, so the question-weighted
    accuracy of K answers per episode has standard deviation at most 0.5 * sqrt(sum_i w_i^2)
    (w_i the weight of answer i); the served accuracy must lie within 4 of them of the exact
    expectation (and the draws are seeded, so the test is deterministic)."""
    k = 12
    cells = [("none", "base"), ("none", "rl"), ("base", "base"), ("base", "rl"), ("rl", "base"), ("rl", "rl")]
    table = planted_swap(sim, ["none", "base", "rl"], ["base", "rl"])
    planted = {(r, m): a for r, m, a in table.select("retrieval_from", "reasoner", "accuracy").iter_rows()}
    served = {}
    for source, reasoner in cells:
        if source == "none":
            episodes = [(q.question_id, q.text, q.gold[0], []) for q in sim.world]
        else:
            sub = sim.runs.filter(pl.col("arm") == source)
            episodes = [(r["question_id"], r["question"], r["gold"][0], r["steps"]) for r in sub.iter_rows(named=True)]
        prompts = [prompt_of(question, steps) for _, question, _, steps in episodes]
        body = client.post(f"{server.url}/completions", json={"model": reasoner, "prompt": prompts, "n": k,
                                                              "seed": 11}).json()
        texts = [c["text"] for c in body["choices"]]
        per_q: dict[str, list[float]] = {}
        for e, (qid, _, gold, _) in enumerate(episodes):
            per_q.setdefault(qid, []).append(sum(t == gold for t in texts[e * k:(e + 1) * k]) / k)
        served[source, reasoner] = sum(sum(v) / len(v) for v in per_q.values()) / len(per_q)
        n_q = len(per_q)
        sd = 0.5 * math.sqrt(sum(len(v) * k * (1.0 / (n_q * len(v) * k)) ** 2 for v in per_q.values()))
        assert abs(served[source, reasoner] - planted[source, reasoner]) < 4 * sd, (source, reasoner, sd)
    split = swap_split(table, "base", "rl")
    assert split["retrieval"] > 0.05 and split["reasoning"] > 0.05  # the world plants both parts
    assert split["total"] == pytest.approx(split["retrieval"] + split["reasoning"] + split["interaction"])
    # the control is the questions' familiarity, whoever reasons
    fam = sum(q.familiarity for q in sim.world) / len(sim.world)
    assert planted["none", "base"] == pytest.approx(fam) and planted["none", "rl"] == pytest.approx(fam)


def test_swap_policies_plant_one_part_at_zero():
    sim = simulate(n_questions=16, n_samples=4, arms=("base", "rl"), policies=swap_policies("retrieval_only"),
                   random_state=1, progress=False)
    split = swap_split(planted_swap(sim, ["base", "rl"], ["base", "rl"]), "base", "rl")
    assert split["reasoning"] == 0.0 and split["interaction"] == 0.0 and split["retrieval"] > 0.05
    pols = swap_policies("reasoning_only")
    assert pols["rl"].probabilities == pols["base"].probabilities
    assert pols["rl"].integration > pols["base"].integration
    with pytest.raises(InputError):
        swap_policies("neither")


def _read_line(stream, timeout: float) -> str:
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return out[0] if out else ""


def test_cli_serve_sim_answers_and_writes_runs(tmp_path, client):
    runs_file = tmp_path / "served.jsonl"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "mechanism", "serve-sim", "--port", "0", "--n-questions", "5",
                             "--n-samples", "2", "--world", "retrieval_only", "--write-runs", str(runs_file)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = _read_line(proc.stdout, 60.0)
        assert line.startswith("serving base, rl at http://127.0.0.1:"), line + proc.stderr.read()
        url = line.split(" at ")[1].split()[0]
        assert [m["id"] for m in client.get(f"{url}/models").json()["data"]] == ["base", "rl"]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)
    runs = mx.read(runs_file)
    assert runs.height == 5 * 2 * 2 and sorted(runs["arm"].unique()) == ["base", "rl"]
    assert "stopped after 1 requests" in proc.stderr.read()


def test_ports_hosts_and_a_light_import(sim):
    with serve(sim, host="localhost") as srv:
        assert srv.url == f"http://127.0.0.1:{srv.port}/v1" and srv.port > 0
        with pytest.raises(InputError, match="cannot listen"):
            serve(sim, port=srv.port)  # taken
    for bad in ({"port": 70000}, {"delay_s": -1.0}, {"faults": (200,)}):
        with pytest.raises(InputError):
            serve(sim, **bad)
    code = ("import sys, mechanism.datasets.serving, mechanism._cli.main; "
            "print(sorted(m for m in ('fastapi', 'uvicorn', 'openai') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
