"""Outputs under hostile conditions: a killed or failing command never leaves a
folder that looks complete, a full disk is one line naming the path, names of any script
make file names, and no CSV cell starts with a formula a spreadsheet would run.

The corpus here is written by the tests into temporary folders: simulated runs whose arm
names are the hostile ones (formulas, other scripts, names that clash when sanitised).
"""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mechanism._cli._common import COMPLETE_MARKER, atomic_output, is_complete
from mechanism._cli.main import main
from mechanism.core.errors import OutputError
from mechanism.core.names import csv_safe, escape_formula, file_stems, pair_folders, safe_filename

N = int(os.environ.get("MECHANISM_HYPOTHESIS_EXAMPLES", "40"))
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _runs(arms, *, n_questions=6, n_samples=2) -> pl.DataFrame:
    return pl.DataFrame([{"arm": arm, "question_id": f"q{q}", "sample_id": s, "correct": (q + s + i) % 3 != 0,
                          "n_rounds": (q + s) % 4}
                         for i, arm in enumerate(arms) for q in range(n_questions) for s in range(n_samples)])


def _jsonl(path: Path, arms) -> Path:
    """Canonical JSONL of the given arms (tool calls included, for the reweighting command)."""
    rows = []
    for i, arm in enumerate(arms):
        for q in range(6):
            for s in range(3):
                n = (q + s + i) % 3
                steps = [{"thought": "t", "tool": "search", "arguments": "{}", "query": f"q{q} {k}",
                          "observation": "o"} for k in range(n)]
                rows.append({"arm": arm, "question_id": f"q{q}", "sample_id": s, "question": f"question {q}?",
                             "gold": ["x"], "answer": "x" if (q + s) % 2 else "y", "n_rounds": n, "steps": steps})
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    return path


def _cells(folder: Path):
    for path in folder.rglob("*.csv"):
        with path.open(newline="", encoding="utf-8") as fh:
            for row in csv.reader(fh):
                for cell in row:
                    yield path, cell


# ---------------------------------------------------------------- atomic output folder

def test_an_exception_leaves_the_previous_output_untouched(tmp_path):
    out = tmp_path / "out"
    with atomic_output(out) as tmp:
        (tmp / "a.csv").write_text("old")
    assert is_complete(out) and (out / "a.csv").read_text() == "old"
    with pytest.raises(RuntimeError):
        with atomic_output(out) as tmp:
            (tmp / "a.csv").write_text("new")
            (tmp / "half.pdf").write_bytes(b"")
            raise RuntimeError("killed halfway")
    assert (out / "a.csv").read_text() == "old" and not (out / "half.pdf").exists() and is_complete(out)
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # the hidden folder is gone


def test_a_new_output_replaces_the_old_whole_and_keeps_the_users_files(tmp_path):
    out = tmp_path / "out"
    with atomic_output(out) as tmp:
        (tmp / "stale.csv").write_text("from the first run")
        (tmp / "sub").mkdir()
        (tmp / "sub" / "x.csv").write_text("1")
    (out / "my_notes.txt").write_text("mine")
    with atomic_output(out) as tmp:
        (tmp / "sub").mkdir()
        (tmp / "sub" / "x.csv").write_text("2")
    assert not (out / "stale.csv").exists()  # the old run's file does not linger beside the new
    assert (out / "sub" / "x.csv").read_text() == "2" and (out / "my_notes.txt").read_text() == "mine"
    assert is_complete(out)


def test_a_users_folder_is_joined_with_the_marker_last(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "keep.txt").write_text("k")
    with atomic_output(out) as tmp:
        (tmp / "t.csv").write_text("t")
    assert (out / "keep.txt").read_text() == "k" and (out / "t.csv").read_text() == "t" and is_complete(out)


def test_a_marker_that_lists_a_missing_or_changed_file_is_not_complete(tmp_path):
    out = tmp_path / "out"
    with atomic_output(out) as tmp:
        (tmp / "t.csv").write_text("t")
    (out / "t.csv").write_text("truncated? no: longer")
    assert not is_complete(out)
    (out / "t.csv").unlink()
    assert not is_complete(out)


def test_stale_hidden_folders_of_dead_runs_are_swept(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".out.partial-{dead.stdout.strip()}-abc"
    stale.mkdir()
    (stale / "x").write_text("x")
    with atomic_output(tmp_path / "out") as tmp:
        (tmp / "y").write_text("y")
    assert not stale.exists() and is_complete(tmp_path / "out")


def test_a_full_disk_is_one_line_naming_the_path(tmp_path, monkeypatch):
    """ENOSPC raised by a writer (whose error names no file) becomes one OutputError that names
    the output, and nothing is left at --out."""
    import errno

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pl.DataFrame, "write_csv", full)
    out = tmp_path / "out"
    with pytest.raises(OutputError) as info:
        with atomic_output(out) as tmp:
            _runs(["base", "rl"]).write_csv(tmp / "t.csv")
    text = str(info.value)
    assert "\n" not in text and str(out) in text and "no space left on device" in text
    assert not out.exists() and not list(tmp_path.iterdir())


@pytest.mark.slow
def test_a_file_size_limit_mid_run_is_one_line_and_leaves_nothing(tmp_path):
    """A real command under a file-size limit (the kernel's EFBIG, as a full disk gives ENOSPC):
    exit 2, one line naming the output, no partial folder."""
    import resource

    path = _jsonl(tmp_path / "runs.jsonl", ["base", "rl"])

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "mechanism", "passkt", str(path), "--base", "base", "--n-boot", "20",
                           "--out", str(out)], capture_output=True, text=True, preexec_fn=limit,
                          env={**os.environ, "MPLBACKEND": "Agg"})
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and str(out) in lines[0], proc.stderr[-2000:]
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["runs.jsonl"]


@pytest.mark.slow
def test_a_report_killed_at_random_moments_never_leaves_a_complete_looking_folder(tmp_path):
    """``mechanism report`` killed (SIGKILL) at seeded random moments of a run: --out holds the
    previous complete output, byte for byte, or (for a first run) nothing; never the killed
    run's partial tables and figures beside an old summary."""
    from mechanism.datasets.simulation.run import simulate

    simulate(n_questions=6, n_samples=3, arms=("base", "rl"), random_state=4).write(tmp_path / "sim")
    env = {**os.environ, "MPLBACKEND": "Agg", "HF_HUB_OFFLINE": "1"}

    def command(out: Path, seed: int) -> list[str]:
        return [sys.executable, "-m", "mechanism", "report", str(tmp_path / "sim" / "searchr1"), "--base", "base",
                "--embedder", "hashing-16", "--n-boot", "10", "--n-permutations", "10", "--seed", str(seed),
                "--no-progress", "--out", str(out)]

    out = tmp_path / "out"
    start = time.monotonic()
    first = subprocess.run(command(out, 0), capture_output=True, text=True, env=env)
    duration = time.monotonic() - start
    assert first.returncode == 0, first.stderr[-2000:]
    assert is_complete(out)
    before = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert "summary.html" in before and COMPLETE_MARKER in before

    rng = np.random.default_rng(24)
    moments = rng.uniform(0.3, 1.0, size=3) * duration  # seeded: the same moments every run
    for i, moment in enumerate(moments):
        proc = subprocess.Popen(command(out, i + 1), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        time.sleep(moment)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if proc.returncode == 0:  # it finished first: the new output, complete
            assert is_complete(out)
            before = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
            continue
        now = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
        if now != before:  # killed after its output was renamed into place, before it exited:
            # then --out holds the new run's output, complete, and nothing of the old one
            listed = json.loads(now[COMPLETE_MARKER])["files"]
            assert is_complete(out) and set(now) == {*listed, COMPLETE_MARKER}, sorted(set(now) ^ set(before))[:10]
            before = now

    fresh = tmp_path / "fresh"  # a first run killed: nothing at --out
    proc = subprocess.Popen(command(fresh, 9), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    time.sleep(float(rng.uniform(0.3, 0.9)) * duration)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # nothing, or (killed after the rename, before it exited) the whole output and only it
    if fresh.exists():
        listed = json.loads((fresh / COMPLETE_MARKER).read_text("utf-8"))["files"]
        present = {p.relative_to(fresh).as_posix() for p in fresh.rglob("*") if p.is_file()}
        assert is_complete(fresh) and present == {*listed, COMPLETE_MARKER}


# ---------------------------------------------------------------- names in any script

def test_names_in_other_scripts_keep_their_letters():
    assert safe_filename("強化学習") == "強化学習" and safe_filename("обучение") == "обучение"
    assert safe_filename("ｒｌ") == "rl"  # NFKC
    assert safe_filename("../../x") == "x" and safe_filename("\u202e") == "unnamed"
    assert len(set(pair_folders(["強化学習", "обучение"], "base").values())) == 2


@settings(max_examples=N, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=6, unique=True))
def test_file_stems_are_distinct_safe_and_short(names):
    stems = file_stems(names)
    assert len({s.casefold() for s in stems.values()}) == len(names)
    for stem in stems.values():
        assert "/" not in stem and "\x00" not in stem and stem not in (".", "..")
        assert 0 < len(stem.encode("utf-8")) <= 80 and not stem.startswith(".")


def test_arms_in_other_scripts_compare_with_a_base(tmp_path, capsys):
    path = _jsonl(tmp_path / "runs.jsonl", ["base", "強化学習", "обучение"])
    for command in ("passkt", "reweighting"):
        out = tmp_path / command
        assert main([command, str(path), "--base", "base", "--n-boot", "20", "--no-figures",
                     *(["--n-permutations", "20", "--by-rounds"] if command == "reweighting" else []),
                     "--out", str(out)]) == 0
        assert (out / "強化学習_vs_base").is_dir() and (out / "обучение_vs_base").is_dir()
        assert is_complete(out)
    capsys.readouterr()


# ---------------------------------------------------------------- spreadsheet formulas

FORMULAS = ['=HYPERLINK("http://evil","rl")', "@SUM(1+1)*cmd|' /C calc'!A0", "+cmd|' /C calc'!A0",
            "-2+3+cmd|' /C calc'!A0", "\t=1+1", "\r=1+1"]


def test_formula_like_names_are_never_written_raw_at_the_start_of_a_cell(tmp_path, capsys):
    arms = ["base", *FORMULAS[:4]]
    path = _jsonl(tmp_path / "runs.jsonl", arms)
    for command in ("passkt", "reweighting"):
        out = tmp_path / command
        assert main([command, str(path), "--base", "base", "--n-boot", "20", "--no-figures",
                     *(["--n-permutations", "20", "--by-rounds"] if command == "reweighting" else []),
                     "--out", str(out)]) == 0
        seen = 0
        for file, cell in _cells(out):
            assert not (cell[:1] in FORMULA_START and not _is_number(cell)), (file.name, cell)
            seen += cell.startswith(("'=", "'@", "'+"))
        assert seen, "the escaped names are in the tables"
    capsys.readouterr()


def _is_number(cell: str) -> bool:
    """A plain decimal number, which no spreadsheet runs as a formula ("-1", "+2.5e3")."""
    import re

    return re.fullmatch(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", cell) is not None


@settings(max_examples=N, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.sampled_from(FORMULAS + ["-1", "+2.5", "-0.5e3", "", "=", "-"]), st.text(max_size=12)),
                min_size=1, max_size=8))
def test_csv_safe_escapes_exactly_the_formula_like_cells(values):
    frame = csv_safe(pl.DataFrame({"v": values, "c": pl.Series(values, dtype=pl.Categorical)}))
    for raw, v, c in zip(values, frame["v"], frame["c"]):
        assert v == c == escape_formula(raw)
        if raw[:1] in FORMULA_START and not _is_number(raw):
            assert v == "'" + raw
        else:
            assert v == raw
