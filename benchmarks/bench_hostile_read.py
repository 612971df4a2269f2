"""Benchmark: reading hostile records stays linear in their size.

For each format, one record whose text is N bytes of unclosed tags or actions (the inputs
on which a quadratic parser takes 13-31 s at 216-257 KB), at N = 64 KB ... 1 MB;
prints the read time (best of 3, after a warm-up) and the growth per doubling (2x is linear,
4x quadratic). With ``--passkt``, also runs ``mechanism passkt`` on a simulated data set whose
second arm has a 1,000-character name holding invalid mathtext and control characters, and
prints its peak memory (the bar: under 1.5 GB; drawn without escaping, such a name costs 2.2 GB and a
202 megapixel PNG).

With ``--round3``, also: ``--answer-pattern`` patterns that backtrack under
Python's ``re`` (exponential and quadratic) on messages of 64 KB ... 1 MB, run by RE2; the
refusal of a 4,000-term ``--where`` against a 12,000-value ``IN`` list that is accepted; a
1,000-deep nested parquet; and ``strategies apply`` on saved spaces whose ``space.json`` is
nested JSON or a ``/dev/zero`` symlink or whose array is a FIFO (exit status, wall time and the
command's own peak memory, from a small launcher that waits on it).

Usage: ``python benchmarks/bench_hostile_read.py [--passkt] [--round3]``; prints markdown tables.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import report

from mechanism.core.errors import InputError
from mechanism.readers import read

SIZES_KB = (64, 128, 256, 512, 1024)


def records(size: int) -> dict[str, tuple[dict | list[dict], dict]]:
    user = {"role": "user", "content": "q"}
    return {
        "openai: <answer> x N": ({"question": "q", "gold": ["x"], "messages": [
            user, {"role": "assistant", "content": "<answer>" * (size // 8)}]}, {}),
        "openai: <think> x N": ({"question": "q", "gold": ["x"], "messages": [
            user, {"role": "assistant", "content": "<think>" * (size // 7)}]}, {}),
        "openai: \\boxed{ x N": ({"question": "q", "gold": ["x"], "messages": [
            user, {"role": "assistant", "content": "\\boxed{" * (size // 7)}]}, {}),
        "react: inline Action: search[ x N": ({"question": "q", "gold": ["x"], "text": "Thought: a Action: search["
                                              * (size // 26) + "\nObservation: x"}, {"format": "react"}),
        "react: Action lines without ]": ({"question": "q", "gold": ["x"], "text": "Action 1: search[x\n"
                                           * (size // 19)}, {"format": "react"}),
        "searchr1: <answer> x N": ({"question": "q", "gold": ["x"], "response": "<answer>" * (size // 8)}, {}),
        # a mix of the fragments tests/readers/test_fuzz_readers.py draws from (its timing lives here)
        "searchr1: mixed fragments x N": ({"question": "q", "gold": ["x"], "response": (
            "<answer><think>\\boxed{Finish[Action: search[<search>Answer:") * (size // 58)}, {}),
        "atif: <answer> x N": ({"schema_version": "ATIF-v1.4", "session_id": "s",
                                "agent": {"name": "a", "version": "1"},
                                "extra": {"gold": ["x"]}, "steps": [
                                    {"step_id": 1, "source": "user", "message": "q"},
                                    {"step_id": 2, "source": "agent", "message": "<answer>" * (size // 8)}]}, {}),
        "swe: ```bash fences never closed x N": ({"trajectory_format": "mini-swe-agent-1", "info": {}, "gold": ["x"],
                                                  "messages": [user, {"role": "assistant",
                                                                      "content": "```bash\nls " * (size // 11)}]}, {}),
        "swe: unclosed <output> tags x N": ({"trajectory_format": "mini-swe-agent-1", "info": {}, "gold": ["x"],
                                             "messages": [user, {"role": "assistant", "content": "```bash\nls\n```"},
                                                          {"role": "user", "content": "<returncode>0</returncode>"
                                                           + "<output_head><output>" * (size // 21)}]}, {}),
        "openhands: one response's N calls, then their results": ({"gold": ["x"], "history": _openhands(size)}, {}),
        # a file of lines, not one record: a session
        "claudecode: one response's N tool_use lines, then their results": (_claudecode(size),
                                                                            {"columns": {"correct": "cwd:/r"}}),
    }


def _claudecode(size: int) -> list[dict]:
    """About ``size`` bytes of a Claude Code session: one response written as N tool_use lines,
    then one line of their N results."""
    n = max(1, size // 300)
    base = {"sessionId": "s", "cwd": "/r", "isSidechain": False}
    calls = [{**base, "uuid": f"a{i}", "type": "assistant", "message": {
        "id": "m", "role": "assistant", "model": "m",
        "content": [{"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": "ls"}}]}}
        for i in range(n)]
    results = {**base, "uuid": "r", "type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": f"t{i}", "content": "x"} for i in range(n)]}}
    return [{**base, "uuid": "q", "type": "user", "message": {"role": "user", "content": "q"}}, *calls, results]


def _openhands(size: int) -> list[dict]:
    """About ``size`` bytes of OpenHands events: one model response's calls, then their observations."""
    n = max(1, size // 260)
    meta = {"function_name": "execute_bash", "model_response": {"id": "r"}}
    calls = [{"id": i, "source": "agent", "action": "run", "args": {"command": "ls"},
              "tool_call_metadata": {**meta, "tool_call_id": f"c{i}"}} for i in range(n)]
    return [*calls, *({"id": n + i, "source": "agent", "observation": "run", "content": "x", "cause": i}
                      for i in range(n))]


def timed(path: Path, **kw) -> float:
    start = time.perf_counter()
    try:
        read(path, errors="skip", **kw)
    except InputError:
        pass
    return time.perf_counter() - start


def bench_read() -> None:
    names = list(records(1024))
    table = {name: [] for name in names}
    with tempfile.TemporaryDirectory() as tmp:
        for kb in SIZES_KB:
            for name, (record, kw) in records(kb * 1024).items():
                path = Path(tmp) / f"r.{'json' if name.startswith('atif') else 'jsonl'}"
                path.write_text("\n".join(map(json.dumps, record)) if isinstance(record, list) else json.dumps(record))
                timed(path, **kw)
                table[name].append(min(timed(path, **kw) for _ in range(3)))
    rows = []
    for name, times in table.items():
        growth = (times[-1] / times[2]) ** 0.5 if times[2] > 0 else float("nan")
        rows.append({"record": name, **{f"{kb} KB s": round(t, 4) for kb, t in zip(SIZES_KB, times)},
                     "growth per doubling (256 KB -> 1 MB)": f"{growth:.2f}x"})
    report(__file__, rows, part="read", title="hostile records, one per file; best of 3 after a warm-up")


def bench_passkt() -> None:
    from mechanism.datasets.simulation.run import simulate

    with tempfile.TemporaryDirectory() as tmp:
        files = simulate(n_questions=20, n_samples=8, arms=("base", "rl"), random_state=1).write(Path(tmp) / "sim")
        long = "A" * 400 + "$\\frac{x$ \x1b[31m\nforged line" + "B" * 580
        for path in (p for p in files if p.parent.name == "searchr1" and p.stem == "rl"):
            rows = [json.loads(x) for x in path.read_text().splitlines()]
            path.write_text("\n".join(json.dumps({**r, "arm": long}) for r in rows))
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "mechanism", "passkt", str(Path(tmp) / "sim" / "searchr1"),
                               "--base", "base", "--n-boot", "200", "--out", str(Path(tmp) / "out")],
                              capture_output=True, text=True, env={**os.environ, "MPLBACKEND": "Agg"})
        wall = time.perf_counter() - start
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        from PIL import Image

        biggest = max((Image.open(p).size[0] * Image.open(p).size[1], p.name)
                      for p in (Path(tmp) / "out").rglob("*.png"))
    report(__file__, [{"exit status": proc.returncode, "wall s": round(wall, 1), "peak RSS MB": round(peak_mb),
                       "largest PNG (megapixels)": f"{biggest[0] / 1e6:.2f} ({biggest[1]})"}], part="passkt",
           title=f"mechanism passkt, arm name of {len(long)} characters (invalid mathtext, control characters)")


def _pattern_record(size: int, pattern: str) -> dict:
    body = "a" * size + "!" if pattern.startswith("(a+)") else "x" * size
    return {"question": "q", "gold": ["x"], "messages": [{"role": "user", "content": "q"},
                                                        {"role": "assistant", "content": body}]}


def bench_round3() -> None:
    """Issue 24's bounds: answer patterns on RE2, --where, nested parquet, tampered spaces."""
    import shutil

    patterns = ("(a+)+$", ".*ANSWER: (.*)")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        table = []
        for pattern in patterns:
            times = []
            for kb in SIZES_KB:
                path = tmp / "p.jsonl"
                path.write_text(json.dumps(_pattern_record(kb * 1024, pattern)))
                timed(path, answer_pattern=pattern)
                times.append(min(timed(path, answer_pattern=pattern) for _ in range(3)))
            growth = (times[-1] / times[2]) ** 0.5 if times[2] > 0 else float("nan")
            table.append({"pattern": f"`{pattern}`", **{f"{kb} KB s": round(t, 4) for kb, t in zip(SIZES_KB, times)},
                          "growth per doubling": f"{growth:.2f}x"})
        report(__file__, table, part="answer_pattern",
               title="`--answer-pattern` on one message without a match (RE2; Python's re is exponential on the "
                     "first, quadratic on the second)")

        path = tmp / "w.jsonl"
        path.write_text("\n".join(json.dumps({"question": "q", "gold": ["x"], "question_id": str(i), "trial": i,
                                               "response": "<answer>x</answer>"}) for i in range(2000)))
        rows = []
        for label, where in (("4,000-term OR chain", " OR ".join(f"trial = {i}" for i in range(4000))),
                             ("IN list of 12,000 values", "trial IN (" + ", ".join(map(str, range(12000))) + ")")):
            start = time.perf_counter()
            try:
                kept, outcome = read(path, where=where).height, "kept"
            except InputError as exc:
                kept, outcome = 0, f"refused: {str(exc)[:60]}..."
            rows.append((label, time.perf_counter() - start, outcome, kept))
        report(__file__, [{"filter": label, "s": round(sec, 3), "outcome": outcome, "rows": kept}
                          for label, sec, outcome, kept in rows], part="where", title="`--where` on 2,000 records")

        import pyarrow as pa
        import pyarrow.parquet as pq

        value, kind = 1, pa.int64()
        for _ in range(1000):
            value, kind = [value], pa.list_(kind)
        deep = tmp / "deep.parquet"
        pq.write_table(pa.table({"x": pa.array([value], type=kind)}), deep)
        cases = [("1,000-deep parquet: mechanism read", ["read", str(deep), "--out", str(tmp / "o.parquet")])]

        from mechanism.analysis.strategy_space import StrategySpace
        from mechanism.datasets.simulation import simulate

        sim = simulate(n_questions=15, n_samples=4, random_state=0, progress=False)
        good = tmp / "space"
        StrategySpace(embedder="hashing-64", progress=False).fit(sim.runs).save(good)
        sim.runs.write_parquet(tmp / "runs.parquet")
        for label, damage in (("space.json nested 10^5 deep", "nested"), ("space.json -> /dev/zero", "zero"),
                              ("train_labels.npy is a FIFO", "fifo")):
            folder = tmp / f"space-{damage}"
            shutil.copytree(good, folder)
            if damage == "nested":
                (folder / "space.json").write_text("[" * 100_000 + "]" * 100_000)
            elif damage == "zero":
                (folder / "space.json").unlink()
                os.symlink("/dev/zero", folder / "space.json")
            else:
                (folder / "train_labels.npy").unlink()
                os.mkfifo(folder / "train_labels.npy")
            cases.append((f"strategies apply: {label}", ["strategies", "apply", str(folder), str(tmp / "runs.parquet"),
                                                         "--out", str(tmp / f"out-{damage}")]))
        launcher = ("import os, subprocess, sys\nchild = subprocess.Popen(sys.argv[1:])\n"
                    "_, status, usage = os.wait4(child.pid, 0)\nprint(f'peak_kb={usage.ru_maxrss}', file=sys.stderr)\n"
                    "sys.exit(os.waitstatus_to_exitcode(status))")
        table = []
        for label, args in cases:
            start = time.perf_counter()
            proc = subprocess.run([sys.executable, "-c", launcher, sys.executable, "-m", "mechanism", *args],
                                  capture_output=True, text=True, timeout=120, env={**os.environ, "MPLBACKEND": "Agg"})
            wall = time.perf_counter() - start
            errors, _, peak = proc.stderr.rpartition("peak_kb=")
            table.append({"case": label, "exit status": proc.returncode, "wall s": round(wall, 2),
                          "peak RSS MB": round(int(peak) / 1024), "stderr lines": len(errors.strip().splitlines())})
        report(__file__, table, part="tampered",
               title="tampered inputs through the command (one line on stderr expected)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passkt", action="store_true", help="also measure mechanism passkt with a long arm name")
    ap.add_argument("--round3", action="store_true", help="also measure issue 24's bounds")
    ap.add_argument("--no-read", action="store_true", help="skip the hostile-record table")
    args = ap.parse_args()
    if not args.no_read:
        bench_read()
    if args.passkt:
        bench_passkt()
    if args.round3:
        bench_round3()


if __name__ == "__main__":
    main()
