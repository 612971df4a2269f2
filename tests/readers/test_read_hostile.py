"""Hostile input: bounded time, one-line errors or reported skips, escaped output.

Each case reproduces an attack on a reader; every error is one line naming file, line and
field, and reading time stays linear in the input.
"""
from __future__ import annotations

import gzip
import json
import os
import threading
import zipfile

import pytest

from mechanism._cli.main import main
from mechanism.core.errors import InputError
from mechanism.readers import read

GOOD = {"question": "q", "gold": ["x"], "response": "<answer>x</answer>"}
KB256 = 256 * 1024


def _one_line(exc: InputError, path) -> str:
    text = str(exc)
    assert "\n" not in text and text.startswith(str(path)), text
    return text


def _unclosed_records(size: int) -> dict[str, tuple[dict, dict]]:
    """One record per format whose text is ``size`` bytes of unclosed tags or actions."""
    user = {"role": "user", "content": "q"}
    return {
        "openai_answer": ({"question": "q", "gold": ["x"], "messages": [
            user, {"role": "assistant", "content": "<answer>" * (size // 8)}]}, {}),
        "openai_think": ({"question": "q", "gold": ["x"], "messages": [
            user, {"role": "assistant", "content": "<think>" * (size // 7)}]}, {}),
        "openai_boxed": ({"question": "q", "gold": ["x"], "messages": [
            user, {"role": "assistant", "content": "\\boxed{" * (size // 7)}]}, {}),
        "openai_final": ({"question": "q", "gold": ["x"], "messages": [
            user, {"role": "assistant", "content": "Final answer: Answer:\n" * (size // 22)}]}, {}),
        "react_inline": ({"question": "q", "gold": ["x"], "text": "Thought: a Action: search[" * (size // 26)
                          + "\nObservation: x"}, {"format": "react"}),
        "react_lines": ({"question": "q", "gold": ["x"], "text": "Action 1: search[x\n" * (size // 19)},
                        {"format": "react"}),
        "react_finish": ({"question": "q", "gold": ["x"], "messages": [
            user, {"role": "assistant", "content": "Action: Finish[" * (size // 15)}]}, {"format": "react"}),
        "searchr1": ({"question": "q", "gold": ["x"], "response": "<answer>" * (size // 8)}, {}),
        "atif": ({"schema_version": "ATIF-v1.4", "session_id": "s", "agent": {"name": "a", "version": "1"},
                  "extra": {"gold": ["x"]}, "steps": [{"step_id": 1, "source": "user", "message": "q"},
                                                      {"step_id": 2, "source": "agent",
                                                       "message": "<answer>" * (size // 8)}]}, {}),
        # mini-swe-agent: fences opened and never closed; results of unclosed output tags
        "swe_fences": ({"trajectory_format": "mini-swe-agent-1", "info": {}, "gold": ["x"], "messages": [
            user, {"role": "assistant", "content": "```bash\nls " * (size // 11)}]}, {}),
        "swe_outputs": ({"trajectory_format": "mini-swe-agent-1", "info": {}, "gold": ["x"], "messages": [
            user, {"role": "assistant", "content": "```bash\nls\n```"},
            {"role": "user", "content": "<returncode>0</returncode>" + "<output_head><output>" * (size // 21)}]}, {}),
        # OpenHands: one model response's calls, every one answered after all were made
        "openhands": ({"gold": ["x"], "history": _openhands_events(size)}, {}),
        "openhands_sdk": ({"gold": ["x"], "history": _openhands_sdk_events(size)}, {}),
    }


def _openhands_sdk_events(size: int) -> list[dict]:
    """The same in the SDK's typed events: one response's calls, then their observations."""
    n = max(1, size // 300)
    calls = [{"kind": "ActionEvent", "id": f"a{i}", "source": "agent", "tool_name": "terminal", "tool_call_id": f"c{i}",
              "llm_response_id": "r", "action": {"command": "ls"}} for i in range(n)]
    return [*calls, *({"kind": "ObservationEvent", "id": f"o{i}", "tool_call_id": f"c{i}", "action_id": f"a{i}",
                       "observation": {"content": [{"type": "text", "text": "x"}]}} for i in range(n))]


def _openhands_events(size: int) -> list[dict]:
    """About ``size`` bytes of OpenHands events: one response's calls, then their observations."""
    n = max(1, size // 260)
    meta = {"function_name": "execute_bash", "model_response": {"id": "r"}}
    calls = [{"id": i, "source": "agent", "action": "run", "args": {"command": "ls"},
              "tool_call_metadata": {**meta, "tool_call_id": f"c{i}"}} for i in range(n)]
    return [*calls, *({"id": n + i, "source": "agent", "observation": "run", "content": "x", "cause": i}
                      for i in range(n))]


def _read_skipping(path, **kw) -> None:
    try:
        read(path, errors="skip", **kw)
    except InputError:
        pass


def test_a_whole_long_message_as_answer_is_noted(tmp_path):
    path = tmp_path / "long.jsonl"
    path.write_text(json.dumps({"question": "q", "gold": ["x"], "messages": [
        {"role": "user", "content": "q"}, {"role": "assistant", "content": "blah " * 1000}]}))
    runs, rep = read(path, report=True)
    assert len(runs["answer"][0]) == len(("blah " * 1000).strip())
    assert any(n.startswith("1 answers are longer than 2,000 characters") for n in rep.notes)


def test_256_kb_of_unclosed_tags_is_read_or_skipped_with_a_reason(tmp_path):
    """Nothing is lost silently: each record becomes a row or a reported skip naming line and field.
    How the time grows is ``test_reading_time_grows_linearly``'s, and bench_hostile_read's, business."""
    for name, (record, kw) in _unclosed_records(KB256).items():
        path = tmp_path / f"{name}.{'json' if name == 'atif' else 'jsonl'}"
        path.write_text(json.dumps(record))
        assert path.stat().st_size >= KB256 - 64
        runs, rep = read(path, errors="skip", report=True, **kw)
        assert runs.height + len(rep.skipped) == 1, name
        for skip in rep.skipped:
            assert skip.line == 1 and skip.field and skip.reason, (name, skip)


# How the reading time grows with the record's size is measured, not asserted (a wall-clock
# ratio failed on a loaded machine): benchmarks/bench_hostile_read.py, the same records at 64 KB-1 MB.


def test_lone_surrogate_is_a_one_line_error_or_a_reported_skip(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(GOOD) + "\n"
                    + '{"question": "q\\ud800", "gold": ["x"], "response": "<answer>x</answer>"}\n'
                    + '{"question": "smile \\ud83d\\ude00", "gold": ["x"], "response": "<answer>x</answer>"}\n')
    with pytest.raises(InputError) as info:
        read(path)
    text = _one_line(info.value, path)
    assert info.value.line == 2 and info.value.field == "question" and "surrogate" in text
    runs, rep = read(path, errors="skip", report=True)
    assert runs.height == 2 and [s.line for s in rep.skipped] == [2]
    assert "\U0001F600" in runs["question"][1]  # a valid surrogate pair is one emoji, kept
    for body, field in (('{"question": "q", "gold": ["x\\udfff"], "response": "<answer>x</answer>"}', "gold[0]"),
                        ('{"question": "q", "gold": ["x"], "response": "<answer>x</answer>", "m": {"\\udc00": 1}}',
                         "m.<key>")):
        path.write_text(body)
        with pytest.raises(InputError) as info:
            read(path)
        assert info.value.field == field
    doc = tmp_path / "s.json"
    doc.write_text('[{"question": "q", "gold": ["x"], "response": "<answer>x\\ud800</answer>"}, '
                   + json.dumps(GOOD) + "]")
    runs, rep = read(doc, errors="skip", report=True)
    assert runs.height == 1 and rep.skipped[0].line == 1 and rep.skipped[0].field == "response"


def test_nan_fields_read_as_missing(tmp_path):
    path = tmp_path / "n.jsonl"
    path.write_text('{"question_id": NaN, "sample_id": NaN, "question": "q", "gold": ["x", NaN], '
                    '"response": "<answer>x</answer>", "category": NaN}\n'
                    '{"question_id": "a", "question": "q", "gold": ["y"], "response": "<answer>x</answer>", '
                    '"correct": NaN}\n')
    runs, rep = read(path, report=True)
    first, second = runs.to_dicts()
    assert first["question_id"].startswith("q") and first["question_id"] != "nan"  # hashed from the question
    assert first["sample_id"] == 0 and first["gold"] == ["x"] and first.get("category") is None
    assert second["correct"] is False  # NaN label: scored from the answer instead
    path.write_text('{"question_id": Infinity, "question": "q", "gold": ["x"], "response": "<answer>x</answer>"}\n')
    with pytest.raises(InputError) as info:
        read(path)
    assert info.value.field == "question_id"


def test_sample_id_numbering_never_wraps(tmp_path):
    path = tmp_path / "o.jsonl"
    path.write_text(json.dumps({**GOOD, "question_id": "a", "sample_id": 2**63 - 1}) + "\n"
                    + json.dumps({**GOOD, "question_id": "a"}) + "\n")
    with pytest.raises(InputError) as info:
        read(path)
    assert info.value.field == "sample_id" and "64-bit" in _one_line(info.value, path)
    path.write_text(json.dumps({**GOOD, "sample_id": 2**63}))
    with pytest.raises(InputError, match="64-bit"):
        read(path)


@pytest.mark.parametrize("name, data, expected", [
    ("u16.jsonl", json.dumps(GOOD).encode("utf-16"), "UTF-16"),
    ("u16le.jsonl", json.dumps(GOOD).encode("utf-16-le"), "UTF-16"),
    ("u16.json", json.dumps([GOOD]).encode("utf-16"), "UTF-16"),
    ("g.jsonl", gzip.compress(json.dumps(GOOD).encode(), mtime=0), "gzip"),
    ("g.json.gz", gzip.compress(json.dumps(GOOD).encode(), mtime=0), "gzip"),
    ("u32.jsonl", json.dumps(GOOD).encode("utf-32"), "UTF-32"),
], ids=["utf16-bom", "utf16le", "utf16-json", "gzip", "gzip-suffix", "utf32"])
def test_encodings_and_compression_are_named(tmp_path, name, data, expected):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(InputError) as info:
        read(path)
    assert expected in _one_line(info.value, path) and info.value.field == "encoding"


def test_zip_is_named(tmp_path):
    path = tmp_path / "z.jsonl"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("a.jsonl", json.dumps(GOOD))
    with pytest.raises(InputError, match="zip archive"):
        read(path)


def test_a_pipe_is_read_not_reported_empty(tmp_path, fixtures):
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    payload = (fixtures / "searchr1.jsonl").read_bytes()

    def feed(data: bytes) -> None:
        with open(fifo, "wb") as fh:
            fh.write(data)

    writer = threading.Thread(target=feed, args=(payload,))
    writer.start()
    runs = read(fifo, arm="piped")
    writer.join()
    assert runs.drop("arm").equals(read(fixtures / "searchr1.jsonl").drop("arm"))
    writer = threading.Thread(target=feed, args=(b"",))
    writer.start()
    with pytest.raises(InputError, match="pipe or device gave no data"):
        read(fifo)
    writer.join()


def test_mixed_formats_in_one_file_are_reported(tmp_path):
    chat = {"question": "q", "question_id": "2", "gold": ["x"], "messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "a", "function": {"name": "s", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "o"}, {"role": "assistant", "content": "x"}]}
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps({**GOOD, "question_id": "1"}) + "\n" + json.dumps(chat) + "\n")
    with pytest.raises(InputError) as info:
        read(path)
    assert "looks like searchr1 but the file reads as openai" in _one_line(info.value, path)
    runs, rep = read(path, errors="skip", report=True)
    assert runs.height == 1 and "mixed formats" in rep.skipped[0].reason
    # a Search-R1 record with a `correct` field in a canonical file is not read as 0 rounds
    canon = {"arm": "a", "question_id": "1", "sample_id": 0, "question": "q", "gold": ["x"], "answer": "x",
             "correct": True, "n_rounds": 0, "steps": []}
    path.write_text(json.dumps(canon) + "\n" + json.dumps({**GOOD, "question_id": "2", "correct": True}) + "\n")
    with pytest.raises(InputError) as info:
        read(path)
    assert info.value.line == 2 and "looks like searchr1, not canonical" in str(info.value)
    alone = tmp_path / "alone.jsonl"
    alone.write_text(json.dumps({**GOOD, "response": "<search>a</search><information>b</information>"
                                 "<answer>x</answer>", "correct": True}))
    assert read(alone)["n_rounds"].to_list() == [1]


def test_control_characters_never_reach_the_terminal(tmp_path, capsys):
    path = tmp_path / "c.jsonl"
    evil = "rl\nforged: line\x1b[31m"
    rows = [{**GOOD, "arm": evil, "question_id": str(i)} for i in range(3)]
    rows.append({"arm": "base\x07", "question_id": "9", "question": "q\x1b]0;title\x07", "response": "x</search>"})
    path.write_text("\n".join(json.dumps(r) for r in rows))
    runs, rep = read(path, errors="skip", report=True)
    assert runs["arm"].unique().to_list() == ["rl\\nforged: line\\x1b[31m"]
    assert any("control characters" in n for n in rep.notes)
    code = main(["read", str(path), "--errors", "skip", "--out", str(tmp_path / "o.parquet")])
    captured = capsys.readouterr()
    assert code == 0
    for stream in (captured.out, captured.err):
        assert "\x1b" not in stream and "\x07" not in stream
        assert not any(line.startswith("forged") for line in stream.splitlines())
    # a file name with a newline forges no line either
    odd = tmp_path / "x\nforged: y.jsonl"
    odd.write_text(json.dumps(GOOD))
    assert main(["read", str(odd), "--out", str(tmp_path / "o2.parquet")]) == 0
    out = capsys.readouterr().out
    assert not any(line.startswith("forged") for line in out.splitlines())
    # the skip listing of an analysis command is escaped too
    code = main(["passkt", str(path), "--errors", "skip", "--no-figures", "--n-boot", "10", "--k", "1",
                 "--out", str(tmp_path / "p")])
    captured = capsys.readouterr()
    assert "\x1b" not in captured.err and "\x07" not in captured.err


def test_passkt_negative_seed_is_a_clean_error(fixtures, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["passkt", str(fixtures / "searchr1.jsonl"), "--seed", "-1", "--out", str(tmp_path / "p")])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --seed" in err and "Traceback" not in err


def test_os_errors_are_one_escaped_line(fixtures, tmp_path, capsys):
    blocker = tmp_path / "x\x1b[2J"
    blocker.write_text("a file where a folder should be")
    assert main(["read", str(fixtures / "searchr1.jsonl"), "--out", str(blocker / "o.parquet")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err and "\\x1b" in err


@pytest.mark.slow
def test_passkt_with_a_long_mathtext_arm_name_stays_small(tmp_path):
    import subprocess
    import sys

    from PIL import Image

    from mechanism.datasets.simulation.run import simulate

    files = simulate(n_questions=12, n_samples=4, arms=("base", "rl"), random_state=2).write(tmp_path / "sim")
    long = "A" * 400 + "$\\frac{x$ \x1b[31m\nforged" + "B" * 580  # 1,000+ characters, invalid mathtext
    for path in (p for p in files if p.parent.name == "searchr1" and p.stem == "rl"):
        rows = [json.loads(x) for x in path.read_text().splitlines()]
        path.write_text("\n".join(json.dumps({**r, "arm": long}) for r in rows))
    out = tmp_path / "out"
    # A child's ru_maxrss starts at its parent's resident size (Linux carries it across fork and exec),
    # and this pytest worker may hold a loaded embedder from an earlier test; so the command is started
    # from a small launcher process, which reports the command's own peak.
    launcher = ("import os, subprocess, sys\n"
                "child = subprocess.Popen(sys.argv[1:])\n"
                "_, status, usage = os.wait4(child.pid, 0)\n"
                "child.returncode = os.waitstatus_to_exitcode(status)\n"
                "print(f'peak_kb={usage.ru_maxrss}', file=sys.stderr)\n"
                "sys.exit(child.returncode)")
    proc = subprocess.run([sys.executable, "-c", launcher, sys.executable, "-m", "mechanism", "passkt",
                           str(tmp_path / "sim" / "searchr1"), "--base", "base", "--n-boot", "20",
                           "--k", "1", "2", "4", "--out", str(out)],
                          capture_output=True, text=True, env={**os.environ, "MPLBACKEND": "Agg"})
    errors, _, peak = proc.stderr.rpartition("peak_kb=")
    assert proc.returncode == 0, errors[-2000:]
    assert "Traceback" not in errors and "\x1b" not in proc.stdout + errors
    assert int(peak) < 2**20, peak  # kilobytes: under 1 GB (about 0.3 GB measured)
    pngs = list(out.rglob("*.png"))
    assert pngs
    for png in pngs:
        width, height = Image.open(png).size
        assert width * height < 6_000_000, (png.name, width, height)
        assert len(png.name) < 120


@pytest.mark.slow
def test_memory_is_bounded_by_the_input(tmp_path):
    """Peak Python allocation while reading a 512 KB hostile record is a fixed multiple of its
    size (measured 3-15x, the same at 256 KB), never a function of how many tags it opens."""
    import tracemalloc

    for name, (record, kw) in _unclosed_records(2 * KB256).items():
        path = tmp_path / f"{name}.{'json' if name == 'atif' else 'jsonl'}"
        path.write_text(json.dumps(record))
        _read_skipping(path, **kw)  # imports and caches outside the measurement
        tracemalloc.start()
        try:
            _read_skipping(path, **kw)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 24 * path.stat().st_size + 8 * 2**20, (name, peak)


def test_an_arm_name_reads_the_same_on_the_terminal_in_figures_and_in_file_names(tmp_path, capsys, monkeypatch):
    """One escaping rule: an arm name holding an ANSI sequence, a right-to-left override and
    a zero-width space prints, in ``mechanism passkt``'s summary, exactly as its figures
    draw it, and its output folder is named from that same rendering."""
    import unicodedata

    from matplotlib.figure import Figure
    from matplotlib.text import Text

    from mechanism.core.names import display_name, escape_control, safe_filename
    from mechanism.plots.background import saving_in_background

    evil = "rl\x1b[1m\u202eZ\u200b"
    shown = escape_control(evil)
    assert shown == "rl\\x1b[1m\\u202eZ\\u200b" and display_name(evil) == shown
    path = tmp_path / "c.jsonl"
    rows = [{**GOOD, "arm": arm, "question_id": str(q), "response": f"<answer>{'x' if (q + s) % 3 else 'y'}</answer>"}
            for arm in ("base", evil) for q in range(6) for s in range(2)]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    drawn: list[str] = []
    savefig = Figure.savefig

    def recording(fig, *args, **kwargs):
        drawn.extend(t.get_text() for t in fig.findobj(Text))
        return savefig(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", recording)
    out = tmp_path / "p"
    with saving_in_background(0):  # saved in this process, where savefig is recorded
        assert main(["passkt", str(path), "--n-boot", "10", "--k", "1", "2", "--t", "0", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert shown in printed
    ours = [t[t.index("rl\\"):] for t in drawn if "rl\\" in t]  # titles, legends, "rl... − base"
    assert shown in ours  # drawn whole where the figure has room ...
    for text in ours:  # ... and elsewhere cut from the same rendering, never drawn differently
        cut = text.split("\u2026")[0]
        assert text.startswith(shown) or ("\u2026" in text and shown.startswith(cut)), text
    for text in (printed, *drawn):
        assert not [ch for ch in text if ch not in "\n\t" and unicodedata.category(ch) in ("Cc", "Cf")], text
    assert (out / f"{safe_filename(shown)}_vs_base").is_dir()


# ---------------------------------------------------------------- bounded options and readers

def _deep_parquet(path, depth: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    value, kind = 1, pa.int64()
    for _ in range(depth):
        value, kind = [value], pa.list_(kind)
    pq.write_table(pa.table({"arm": ["rl"], "question_id": ["q"], "sample_id": [0], "strategy": [0],
                             "x": pa.array([value], type=kind)}), path)


@pytest.mark.slow
def test_a_1000_deep_parquet_exits_2_with_one_line_through_read_and_labels(tmp_path):
    import subprocess
    import sys

    deep = tmp_path / "deep.parquet"
    _deep_parquet(deep, 1000)
    good = tmp_path / "runs.jsonl"
    good.write_text("\n".join(json.dumps({**GOOD, "arm": a, "question_id": str(q), "sample_id": 0})
                              for a in ("base", "rl") for q in range(3)))
    env = {**os.environ, "MPLBACKEND": "Agg"}
    for args in (["read", str(deep), "--out", str(tmp_path / "o.parquet")],
                 ["reweighting", str(good), "--base", "base", "--labels", str(deep), "--out", str(tmp_path / "r")]):
        proc = subprocess.run([sys.executable, "-m", "mechanism", *args], capture_output=True, text=True,
                              timeout=120, env=env)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
        assert "deep.parquet" in lines[0] and "levels" in lines[0], lines[0]
    assert not (tmp_path / "o.parquet").exists() and not (tmp_path / "r").exists()


def test_nested_parquet_is_refused_from_its_schema_and_shallow_nesting_reads(tmp_path):
    deep = tmp_path / "deep.parquet"
    _deep_parquet(deep, 40)
    with pytest.raises(InputError, match="levels") as info:
        read(deep)
    assert info.value.field == "schema"
    _one_line(info.value, deep)


def test_a_categorical_or_integer_arm_in_a_labels_file_is_no_traceback(tmp_path):
    import numpy as np
    import polars as pl

    from mechanism.analysis.labels import read_labels

    runs = pl.DataFrame({"arm": ["1", "1", "2"], "question_id": ["a", "b", "a"], "sample_id": [0, 0, 0]})
    for arm in (pl.Series(["1", "1", "2"], dtype=pl.Categorical), pl.Series([1, 1, 2])):
        table = pl.DataFrame({"arm": arm, "question_id": ["a", "b", "a"], "sample_id": [0, 0, 0],
                              "strategy": [3, 4, 5]})
        path = tmp_path / "labels.parquet"
        table.write_parquet(path)
        np.testing.assert_array_equal(read_labels(runs, path), [3, 4, 5])
    path = tmp_path / "labels.csv"
    pl.DataFrame({"arm": [1, 1, 2], "question_id": ["a", "b", "a"], "sample_id": [0, 0, 0],
                  "strategy": [3, 4, 5]}).write_csv(path)
    np.testing.assert_array_equal(read_labels(runs, path), [3, 4, 5])


@pytest.mark.parametrize("where, words", [
    (" OR ".join(f"trial = {i}" for i in range(4000)), "at most 256"),
    ("(" * 100 + "trial = 1" + ")" * 100, "parentheses 100 deep"),
    ("NOT " * 5000 + "carried", "at most 256"),
    ("trial = 1 AND name = '" + "x" * 300_000 + "'", "characters long"),
])
def test_where_above_its_bounds_is_refused_in_one_line(tmp_path, where, words):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({**GOOD, "trial": 1}))
    with pytest.raises(InputError, match=words) as info:
        read(path, where=where)
    assert info.value.field == "where" and "\n" not in str(info.value)


def test_a_long_in_list_and_quoted_equals_still_filter(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(json.dumps({**GOOD, "question_id": str(q), "trial": q, "tag": "a==b" if q else "c"})
                              for q in range(5)))
    kept = read(path, where="trial IN (" + ", ".join(map(str, range(0, 12_000, 3))) + ")")
    assert sorted(kept["question_id"]) == ["0", "3"]
    assert read(path, where="tag == 'a==b'").height == 4


def test_where_leaves_out_records_without_the_field_as_documented(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join([json.dumps({**GOOD, "question_id": "has-null", "nofield": None}),
                               json.dumps({**GOOD, "question_id": "lacks"}),
                               json.dumps({**GOOD, "question_id": "has", "nofield": 1})]))
    runs, rep = read(path, where="nofield IS NULL", report=True)
    assert runs["question_id"].to_list() == ["has-null"] and rep.rows_filtered == 2
    assert read(path, where="NOT (nofield = 1)")["question_id"].to_list() == []  # null and missing: out


@pytest.mark.parametrize("path", ["golden_answers.\u00b2", "golden_answers.\u0661", "golden_answers." + "9" * 5000,
                                  "a" + ".b" * 100])
def test_dotted_paths_take_ascii_indexes_and_are_bounded(tmp_path, path):
    file = tmp_path / "r.jsonl"
    file.write_text(json.dumps({"question": "q", "golden_answers": ["x", "y"], "response": "<answer>x</answer>"}))
    try:
        runs = read(file, columns={"gold": path}, errors="skip")
    except InputError as exc:
        assert "\n" not in str(exc) and exc.field == "columns"
        return
    assert runs.height == 0 or runs["gold"].to_list() == [[]]


def test_answer_pattern_runs_in_linear_time_or_is_refused(tmp_path):
    path = tmp_path / "r.jsonl"
    long = "a" * 200_000 + "!"
    path.write_text("\n".join(json.dumps({"question_id": str(i), "question": "q", "gold": ["x"],
                                          "messages": [{"role": "user", "content": "q"},
                                                       {"role": "assistant", "content": text}]})
                              for i, text in enumerate([long, "x" * 200_000, "so ANSWER: x"])))
    # exponential and quadratic under Python's re; RE2 scans each message once
    for pattern in ("(a+)+$", ".*ANSWER: (.*)"):
        runs = read(path, answer_pattern=pattern)
        assert runs.height == 3
    assert read(path, answer_pattern=".*ANSWER: (.*)")["answer"][2] == "x"
    for pattern, words in (("(a)\\1", "cannot run"), ("(?<=a)b", "cannot run"), ("(", "not a valid")):
        with pytest.raises(InputError, match=words) as info:
            read(path, answer_pattern=pattern)
        assert info.value.field == "answer_pattern" and "\n" not in str(info.value)


def test_blank_lines_are_handled_alike_in_csv_and_jsonl_and_reported(tmp_path):
    jsonl = tmp_path / "r.jsonl"
    jsonl.write_text("\n".join([json.dumps({**GOOD, "question_id": "a"}), "", "   ",
                                json.dumps({**GOOD, "question_id": "b"}), ""]))
    csv_path = tmp_path / "r.csv"
    csv_path.write_text('question_id,question,gold,response\na,q,"[""x""]",<answer>x</answer>\n\n'
                        'b,q,"[""x""]",<answer>x</answer>\n\n')
    for path in (jsonl, csv_path):
        runs, rep = read(path, report=True)
        assert runs["question_id"].to_list() == ["a", "b"] and not rep.skipped
        assert any("blank line" in note and str(path) in note for note in rep.notes), rep.notes


def test_duplicate_json_keys_are_reported_not_last_wins(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"question": "q", "gold": ["x"], "response": "<answer>x</answer>", "arm": "base", "arm": "rl"}\n'
                    + json.dumps({**GOOD, "arm": "base"}))
    with pytest.raises(InputError, match="duplicate key `arm`") as info:
        read(path)
    _one_line(info.value, path)
    runs, rep = read(path, errors="skip", report=True)
    assert runs.height == 1 and len(rep.skipped) == 1 and rep.skipped[0].line == 1
    doc = tmp_path / "r.json"
    doc.write_text('[{"question": "q", "question": "p", "gold": ["x"], "response": "x"}]')
    with pytest.raises(InputError, match="duplicate key `question`"):
        read(doc)


def test_two_100k_character_names_give_a_short_error_line(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    a, b = "A" * 100_000, "B" * 100_000
    path.write_text("\n".join(json.dumps({**GOOD, "arm": arm, "question_id": "1"}) for arm in (a, b)))
    assert main(["passkt", str(path), "--base", "C" * 100_000, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and len(err) < 2100, len(err)


def test_out_of_memory_is_one_line(tmp_path, capsys, monkeypatch):
    import mechanism._cli.passkt as passkt

    def no_memory(args):
        raise MemoryError()

    monkeypatch.setattr(passkt, "run", no_memory)
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(GOOD))
    assert main(["passkt", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [err.strip()] and "out of memory" in err and "Traceback" not in err
