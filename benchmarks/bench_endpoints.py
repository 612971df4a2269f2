"""Benchmark: requests per second through ``mx.endpoints.OpenAICompatible`` against ``serve-sim``.

The served simulator (``mechanism serve-sim``) runs in a process of its own, as a real server
would, on 127.0.0.1. The same N completion requests (swap-test prompts: a question and its
retrieved passages) are sent in the same run, at the same concurrency bound:

- (a) **the server's own time**: a minimal client, the standard library's ``http.client``, one
  kept-alive connection per thread, bodies built once, answers read but not parsed beyond JSON;
- (b) ``OpenAICompatible.complete`` (the official ``openai`` client, our retries and counting, an
  in-memory cache that every request misses).

(b)/(a) is what the toolkit's client adds over the server (issue bar: at most 1.10 on 2 cores).
Then (c) the same requests again through (b)'s endpoint: every answer from the cache, no request.

Usage: ``python benchmarks/bench_endpoints.py [--n 2000] [--concurrency 8] [--repeat 3]``.
"""
from __future__ import annotations

import argparse
import http.client
import json
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import polars as pl
from harness import report

import mechanism as mx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, runs_file: Path, delay_s: float = 0.0) -> subprocess.Popen:
    """``mechanism serve-sim`` in its own process (each answer waiting ``delay_s``, as a model's
    generation would); returns once it answers."""
    proc = subprocess.Popen([sys.executable, "-m", "mechanism", "serve-sim", "--port", str(port),
                             "--n-questions", "60", "--n-samples", "4", "--delay-s", str(delay_s),
                             "--write-runs", str(runs_file)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/v1/models")
            if conn.getresponse().status == 200:
                return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"serve-sim did not answer on port {port}: {proc.stderr.read()[:500]}")


def prompts_of(runs: pl.DataFrame, n: int) -> list[str]:
    """Swap-test prompts (question plus every retrieved passage), cycled to ``n`` distinct ones
    (a suffix keeps them apart, so no cache or server can answer one from another)."""
    base = []
    for row in runs.select("question", "steps").iter_rows(named=True):
        steps = "\n".join(f"Search: {s['query']}\nObservation: {s['observation']}" for s in row["steps"] or [])
        base.append(f"Question: {row['question']}\n{steps}\nAnswer:")
    return [f"{base[i % len(base)]} ({i})" for i in range(n)]


def raw_client(port: int, bodies: list[bytes], concurrency: int) -> float:
    """Wall seconds for the minimal client to send every body and read every answer."""
    chunks = [bodies[i::concurrency] for i in range(concurrency)]

    def worker(chunk: list[bytes]) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for body in chunk:
            conn.request("POST", "/v1/completions", body=body, headers={"Content-Type": "application/json"})
            answer = conn.getresponse()
            if answer.status != 200:
                raise RuntimeError(f"HTTP {answer.status}")
            json.loads(answer.read())
        conn.close()

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(worker, chunks))
    return time.perf_counter() - t0


def measure(delay_s: float, args: argparse.Namespace) -> list[dict]:
    """The three timings, ``args.repeat`` times, against a server answering in ``delay_s``."""
    port = free_port()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        proc = start_server(port, Path(d) / "runs.jsonl", delay_s)
        try:
            runs = mx.read(Path(d) / "runs.jsonl", format="canonical")
            prompts = prompts_of(runs.filter(pl.col("arm") == "rl"), args.n)
            # the body OpenAICompatible sends for these options, built once for the minimal client
            bodies = [json.dumps({"model": "rl", "prompt": p, "max_tokens": 16, "temperature": 0.0, "n": 1,
                                  "seed": 0}).encode() for p in prompts]
            for rep in range(args.repeat):
                raw = raw_client(port, bodies, args.concurrency)
                endpoint = mx.endpoints.OpenAICompatible(f"http://127.0.0.1:{port}/v1", "rl",
                                                         max_concurrency=args.concurrency, progress=False)
                t0 = time.perf_counter()
                endpoint.complete(prompts, max_tokens=16)
                ours = time.perf_counter() - t0
                sent = endpoint.stats.requests
                t0 = time.perf_counter()
                endpoint.complete(prompts, max_tokens=16)
                cached = time.perf_counter() - t0
                rows.append({"server ms per answer": delay_s * 1000, "run": rep + 1, "requests": args.n,
                             "concurrency": args.concurrency, "(a) minimal client s": round(raw, 3),
                             "(a) req/s": round(args.n / raw), "(b) OpenAICompatible s": round(ours, 3),
                             "(b) req/s": round(args.n / ours), "(b)/(a)": round(ours / raw, 3),
                             "(b) requests sent": sent, "(c) cached rerun s": round(cached, 3),
                             "(c) requests sent": endpoint.stats.requests - sent})
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000, help="requests per timing")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3, help="timings of each client per delay")
    ap.add_argument("--delays", type=float, nargs="*", default=[0.0, 0.005, 0.02],
                    help="seconds the server waits before each answer, as a model's generation would")
    args = ap.parse_args(argv)
    rows = [row for delay in args.delays for row in measure(delay, args)]
    best = {d: min(r["(b)/(a)"] for r in rows if r["server ms per answer"] == d * 1000) for d in args.delays}
    report(__file__, rows, title="Requests per second through OpenAICompatible against serve-sim",
           params=vars(args),
           notes=("serve-sim in its own process on 127.0.0.1, each answer waiting the given time (asynchronously, as "
                  "a batching model server would); both clients at the same concurrency bound. (b)/(a): what the "
                  "toolkit's client adds over the server's own time (bar: <= 1.10), best of each: "
                  + ", ".join(f"{d * 1000:g} ms: {v}" for d, v in best.items())
                  + ". (c): the same requests again, every one answered from the cache."))


if __name__ == "__main__":
    main()
