"""Hostile input, round four, reading side: every folder entry is read, refused by
name or skipped and listed; devices and growing inputs are refused before memory runs out; an
empty and a blank-only file read alike; a ``--columns`` path that matches nothing is an error;
whitespace in arm names shows; each reproduction is one line and exit 2 through the CLI."""
from __future__ import annotations

import json
import os
import socket
import time

import pytest

from mechanism._cli.main import main
from mechanism.core.errors import InputError
from mechanism.readers import read

GOOD = {"question": "q", "gold": ["x"], "response": "<answer>x</answer>"}


def _one_error_line(capsys, argv) -> str:
    start = time.perf_counter()
    assert main(argv) == 2
    assert time.perf_counter() - start < 30
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _folder(tmp_path, kind: str):
    """A folder of one good file and one entry of ``kind`` with a trajectory suffix."""
    folder = tmp_path / kind
    folder.mkdir()
    (folder / "a.jsonl").write_text(json.dumps({**GOOD, "arm": "a", "question_id": "1"}) + "\n")
    bad = folder / "b.jsonl"
    if kind == "dangling":
        os.symlink(tmp_path / "nowhere.jsonl", bad)
    elif kind == "fifo":
        os.mkfifo(bad)
    elif kind == "device":
        os.symlink("/dev/zero", bad)
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(bad))
        sock.close()
    elif kind == "folder":
        bad.mkdir()
    return folder, bad


KINDS = {"dangling": "a dangling symlink", "fifo": "a FIFO", "device": "a character device", "socket": "a socket",
         "folder": "a folder"}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_folder_entry_that_is_no_regular_file_is_refused_by_name(tmp_path, kind):
    folder, bad = _folder(tmp_path, kind)
    with pytest.raises(InputError) as info:
        read(folder)
    assert info.value.source == str(bad) and KINDS[kind] in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_under_skip_it_is_left_out_and_listed(tmp_path, kind):
    folder, bad = _folder(tmp_path, kind)
    runs, rep = read(folder, errors="skip", report=True)
    assert runs.height == 1 and rep.rows_in == 1
    assert [(s.source, KINDS[kind] in s.reason) for s in rep.skipped_files] == [(str(bad), True)]


@pytest.mark.parametrize("kind", ["dangling", "fifo", "device"])
def test_the_cli_says_so_in_one_line_or_lists_it(tmp_path, capsys, kind):
    folder, bad = _folder(tmp_path, kind)
    line = _one_error_line(capsys, ["read", str(folder), "--out", str(tmp_path / "o.parquet")])
    assert str(bad) in line and KINDS[kind] in line
    assert main(["read", str(folder), "--errors", "skip", "--out", str(tmp_path / "o.parquet")]) == 0
    out = capsys.readouterr().out
    assert "skipped 1 input(s) with no records" in out and str(bad) in out


def test_dev_zero_as_an_input_is_refused_unread(tmp_path, capsys):
    line = _one_error_line(capsys, ["read", "/dev/zero", "--out", str(tmp_path / "o.parquet")])
    assert "/dev/zero" in line and "character device" in line


def test_a_pipe_past_its_bound_is_refused_by_name(tmp_path, monkeypatch):
    import threading

    from mechanism.readers import _io

    monkeypatch.setattr(_io, "PIPE_MAX_BYTES", 1000)
    fifo = tmp_path / "p.jsonl"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as fh:
            try:
                fh.write((json.dumps(GOOD) + "\n").encode() * 200)
            except BrokenPipeError:
                pass

    writer = threading.Thread(target=feed)
    writer.start()
    with pytest.raises(InputError, match="more than 1,000 bytes") as info:
        read(fifo)
    writer.join()
    assert info.value.source == str(fifo)


def test_a_file_that_grows_while_read_is_refused(tmp_path, monkeypatch):
    """A regular file read past the size it had when opened (a live log, a special file that
    never ends) is refused by name, not read on until memory runs out."""
    from mechanism.readers import _io

    path = tmp_path / "grow.jsonl"
    path.write_text((json.dumps(GOOD) + "\n") * 3)
    real = _io.open_binary

    class Growing:
        """The file, which grows once its first line is read."""

        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def fileno(self):
            return self.fh.fileno()

        def __iter__(self):
            for number, line in enumerate(self.fh):
                if number == 0:
                    with open(path, "a") as more:
                        more.write((json.dumps(GOOD) + "\n") * 3)
                yield line

    def growing(p, data):
        return Growing(real(p, data))

    monkeypatch.setattr(_io, "open_binary", growing)
    with pytest.raises(InputError, match="grew while it was read") as info:
        read(path)
    assert info.value.source == str(path)


@pytest.mark.parametrize("content", [b"", b"\n\n  \n", b"\r\n\t\n"])
def test_empty_and_blank_only_files_read_alike(tmp_path, capsys, content):
    path = tmp_path / "e.jsonl"
    path.write_bytes(content)
    with pytest.raises(InputError, match="empty file"):
        read(path)
    line = _one_error_line(capsys, ["read", str(path), "--out", str(tmp_path / "o.parquet")])
    assert "empty file" in line and str(path) in line
    good = tmp_path / "g.jsonl"
    good.write_text(json.dumps({**GOOD, "arm": "a"}) + "\n")
    runs, rep = read([good, path], errors="skip", report=True)
    assert runs.height == 1 and [s.source for s in rep.skipped_files] == [str(path)]


def test_a_columns_path_that_matches_nothing_is_an_error_also_under_openai(tmp_path, capsys):
    rec = {"question": "q", "gold": ["x"], "messages": [{"role": "user", "content": "q"},
                                                        {"role": "assistant", "content": "<answer>x</answer>"}]}
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    for columns in ("question=nope.deeper", "question=nope"):
        line = _one_error_line(capsys, ["read", str(path), "--format", "openai", "--columns", columns,
                                        "--out", str(tmp_path / "o.parquet")])
        assert columns.split("=")[1] in line and "no record holds" in line and "`--columns`" in line
    assert read(path, columns={"question": "question"}).height == 1


def test_read_refuses_an_out_that_is_one_of_its_inputs(tmp_path, capsys):
    src = tmp_path / "x.jsonl"
    src.write_text(json.dumps({**GOOD, "arm": "a"}) + "\n")
    table = tmp_path / "x.parquet"
    assert main(["read", str(src), "--out", str(table), "--quiet"]) == 0
    before = table.read_bytes()
    line = _one_error_line(capsys, ["read", str(table), "--where", "arm = 'none'", "--out", str(table)])
    assert "one of the inputs" in line and table.read_bytes() == before
    line = _one_error_line(capsys, ["read", str(tmp_path), "--out", str(table)])  # in a folder read too
    assert "one of the inputs" in line


def test_a_failing_command_prints_only_its_error_line(tmp_path, capsys):
    """The issue's case: the read warns (an arm scoring 0 %) and the command then fails."""
    path = tmp_path / "zero.jsonl"
    path.write_text("\n".join(
        json.dumps({**GOOD, "arm": "base", "question_id": str(q), "response": "<answer>y</answer>"})
        for q in range(30)))
    line = _one_error_line(capsys, ["reweighting", str(path), "--by-rounds", "--base", "base",
                                    "--out", str(tmp_path / "o")])
    assert "error" in line and "warning" not in line
    assert main(["passkt", str(path), "--n-boot", "10", "--k", "1", "--t", "0", "--out", str(tmp_path / "p")]) == 0
    assert "warning" in capsys.readouterr().err  # printed when the command succeeds


def test_whitespace_in_arm_names_is_shown(tmp_path, capsys):
    from mechanism.core.names import display_name, visible_name

    assert visible_name("rl ") == "rl\u2420" != visible_name("rl")
    assert display_name(visible_name("rl\x1b ")) == "rl\\x1b\u2420"
    path = tmp_path / "arms.jsonl"
    path.write_text("\n".join(json.dumps({**GOOD, "arm": arm, "question_id": "1"}) for arm in ("rl", "rl ")))
    assert main(["read", str(path), "--out", str(tmp_path / "o.parquet")]) == 0
    out = capsys.readouterr().out
    assert "rl\u2420 " in out or "rl\u2420\n" in out
