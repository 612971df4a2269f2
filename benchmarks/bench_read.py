"""Benchmark: reading Search-R1 style trajectories into the canonical table.

Writes N searchr1-format trajectories (default 100,000; 0-4 searches each, three retrieved
passages of about 60 words per search, like Search-R1's top-3 retrieval) to a temporary
file, then times in the same run:

- ``mechanism.read`` (the toolkit's reader: streamed, validated, scored, duplicates checked), in
  parts by worker processes (the default on a large file) and in one process
  (``MECHANISM_READ_WORKERS=1``);
- a naive reference: ``json.loads`` per line, ``re.findall`` per tag type, a dict per row,
  ``polars.DataFrame(rows)`` (no validation, no per-record error handling).

Usage: ``python benchmarks/bench_read.py [--n 100000] [--repeat 1]``; prints a markdown table.

``--openai 5000,10000,20000,40000`` instead times the openai reader on one conversation per
size whose calls have ids but whose tool messages carry no ``tool_call_id`` (old logs), where
each result takes the oldest unanswered call: the growth from one size to the next (4x the messages should cost
at most 6x the time: linear, with headroom for noise).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import tempfile
import time
from pathlib import Path
from unittest import mock

import polars as pl
from harness import report

from mechanism.core.scoring import exact_match
from mechanism.readers import _parts, read

WORDS = ("the of and in to a was is for on as with by he that at from his it an were are which this be "
         "film album band river city born american british french director novel series season team club "
         "university company station church village district county population museum published released "
         "founded played known largest second first national international football league record").split()


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


_POOL = [_sentence(random.Random(i), 12) for i in range(4096)]  # sentences to draw passages from


def _passages(rng: random.Random) -> str:
    return "\n".join(f'Doc {i + 1}(Title: "{rng.choice(WORDS).title()} {rng.choice(WORDS).title()}") '
                     + " ".join(rng.choices(_POOL, k=5)) for i in range(3))


def make_record(i: int, rng: random.Random) -> dict:
    gold = f"{rng.choice(WORDS).title()} {rng.choice(WORDS).title()}"
    parts = []
    for _ in range(rng.choice((0, 1, 2, 2, 3, 3, 4))):
        parts.append(f"<think>{_sentence(rng, 20)}</think>\n<search> {_sentence(rng, 6)} </search>\n"
                     f"<information>{_passages(rng)}</information>\n")
    answer = gold if rng.random() < 0.4 else f"{rng.choice(WORDS).title()}"
    parts.append(f"<think>{_sentence(rng, 15)}</think>\n<answer> {answer} </answer>")
    return {"arm": ("base", "rl", "sft")[i % 3], "question_id": f"q{i // 24}", "sample_id": (i // 3) % 8,
            "question": _sentence(rng, 16), "golden_answers": [gold], "category": "bridge", "t_cap": 5,
            "response": "".join(parts)}


def write_file(path: Path, n: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps(make_record(i, rng)) + "\n")


_RE = {t: re.compile(f"<{t}>(.*?)</{t}>", re.S) for t in ("think", "search", "information", "answer")}


def naive_read(path: Path) -> pl.DataFrame:
    """The reference: the obvious per-line script a researcher would write."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            text = rec["response"]
            searches = [s.strip() for s in _RE["search"].findall(text)]
            infos = [s.strip() for s in _RE["information"].findall(text)]
            thinks = [s.strip() for s in _RE["think"].findall(text)]
            answers = _RE["answer"].findall(text)
            answer = answers[-1].strip() if answers else None
            steps = [{"thought": thinks[j] if j < len(thinks) else None, "tool": "search",
                      "arguments": json.dumps({"query": q}), "query": q,
                      "observation": infos[j] if j < len(infos) else None} for j, q in enumerate(searches)]
            rows.append({"arm": rec["arm"], "question_id": rec["question_id"], "sample_id": rec["sample_id"],
                         "question": rec["question"], "gold": rec["golden_answers"], "answer": answer,
                         "correct": exact_match(answer, rec["golden_answers"]), "n_rounds": len(steps),
                         "steps": steps, "t_cap": rec["t_cap"], "category": rec["category"]})
    return pl.DataFrame(rows)


def _cpu() -> float:
    """CPU seconds of this process and of the worker processes it waited for."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _time(fn, repeat: int) -> tuple[float, float, object]:
    """(median wall seconds, median CPU seconds of this process and its workers, last result)."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), _cpu()
        out = fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(_cpu() - c0)
    return statistics.median(walls), statistics.median(cpus), out


def _one_process(fn):
    """``fn`` with the read kept in one process (no workers reading parts of the file)."""
    def run():
        with mock.patch.dict(os.environ, {"MECHANISM_READ_WORKERS": "1"}):
            return fn()
    return run


def openai_record(n_tools: int) -> dict:
    """One conversation with ``n_tools`` tool calls (with ids) whose results carry no
    ``tool_call_id``: each result is matched to the oldest unanswered call."""
    messages = [{"role": "user", "content": "Find everything about item 0."}]
    for i in range(n_tools):
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{i}", "type": "function",
             "function": {"name": "lookup", "arguments": json.dumps({"item": f"item_{i}"})}}]})
        messages.append({"role": "tool", "content": f"item_{i} links to item_{i + 1}"})
    messages.append({"role": "assistant", "content": "Final answer: done"})
    return {"arm": "a", "question_id": "q", "gold": ["done"], "messages": messages}


def bench_openai(sizes: list[int], repeat: int) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            path = Path(tmp) / f"openai_{n}.jsonl"
            path.write_text(json.dumps(openai_record(n)) + "\n", encoding="utf-8")
            wall, cpu, runs = _time(lambda path=path: read(path, format="openai"), repeat)
            assert runs["n_rounds"][0] == n
            assert runs["steps"][0][-1]["observation"] == f"item_{n - 1} links to item_{n}"
            rows.append((n, wall, cpu))
    table = []
    for i, (n, wall, cpu) in enumerate(rows):
        growth = f"{wall / rows[i - 1][1]:.2f}x for {n / rows[i - 1][0]:.0f}x" if i else "-"
        table.append({"tool messages": n, "wall s": round(wall, 2), "CPU s": round(cpu, 2),
                      "growth vs previous size (wall)": growth})
    report(__file__, table, part="openai", params={"openai": ",".join(map(str, sizes)), "repeat": repeat},
           title="openai reader, one conversation per size, calls with ids, tool messages without",
           notes=f"Median of {repeat}.")

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--openai", default=None, metavar="SIZES",
                    help="time the openai reader on conversations of these many id-less tool messages")
    args = ap.parse_args()
    if args.openai:
        bench_openai([int(x) for x in args.openai.split(",")], args.repeat)
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.searchr1.jsonl"
        t0 = time.perf_counter()
        write_file(path, args.n)
        write_s = time.perf_counter() - t0
        size_mb = path.stat().st_size / 1e6
        n_parts = len(_parts.spans(path, _parts.default_workers()))
        t_ours, c_ours, ours = _time(lambda: read(path, format="searchr1"), args.repeat)
        t_auto, c_auto, _ = _time(lambda: read(path), args.repeat)
        t_one, c_one, one = _time(_one_process(lambda: read(path, format="searchr1")), args.repeat)
        t_naive, c_naive, naive = _time(lambda: naive_read(path), args.repeat)
        assert ours.equals(one)  # the parts put together are the read of the whole file
        assert ours.height == naive.height == args.n
        assert ours["n_rounds"].to_list() == naive["n_rounds"].to_list()
        assert ours["correct"].to_list() == naive["correct"].to_list()
    rows = [{"implementation": name, "wall s": round(t, 2), "CPU s": round(c, 2),
             "trajectories/s (wall)": round(args.n / t), "speed vs naive (wall)": f"{t_naive / t:.2f}x"}
            for name, t, c in (("mechanism.read(format='searchr1')", t_ours, c_ours),
                               ("mechanism.read(format='auto')", t_auto, c_auto),
                               ("mechanism.read(format='searchr1'), one process (MECHANISM_READ_WORKERS=1)",
                                t_one, c_one),
                               ("naive json.loads + re.findall + pl.DataFrame", t_naive, c_naive))]
    report(__file__, rows, params=vars(args), title=f"searchr1 read benchmark: {args.n:,} trajectories",
           notes=f"{size_mb:,.0f} MB JSONL (written in {write_s:.1f} s), mean rounds {ours['n_rounds'].mean():.2f}; "
                 f"read in {n_parts} parts on {os.cpu_count()} CPUs, "
                 f"the table equal to the one-process read's; CPU s counts the workers too; "
                 f"polars {pl.__version__}; median of {args.repeat}.")

if __name__ == "__main__":
    main()
