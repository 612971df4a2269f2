"""`mechanism read`: converts, prints what it read, exits 2 with one line on bad input."""
from __future__ import annotations

import polars as pl

from mechanism._cli.main import main
from mechanism.readers import read


def test_read_command_writes_parquet_and_summary(fixtures, tmp_path, capsys):
    out = tmp_path / "runs.parquet"
    code = main(["read", str(fixtures / "searchr1.jsonl"), str(fixtures / "openai.jsonl"), "--out", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "searchr1.jsonl: format searchr1" in text and "openai.jsonl: format openai" in text
    assert "rows read 7, kept 7, skipped 0" in text
    assert "mean rounds" in text and "correct" in text
    table = pl.read_parquet(out)
    assert table.equals(read([fixtures / "searchr1.jsonl", fixtures / "openai.jsonl"]))


def test_read_command_skip_lists_reasons(fixtures, tmp_path, capsys):
    out = tmp_path / "runs.parquet"
    code = main(["read", str(fixtures / "bad" / "searchr1_mixed.jsonl"), "--errors", "skip", "--arm", "a",
                 "--out", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "rows read 10, kept 3, skipped 7" in text
    assert "skipped, by reason:" in text and "line 2" in text
    assert "1 episodes ended without a final answer" in text
    assert pl.read_parquet(out).height == 3


def test_read_command_columns(tmp_path, capsys):
    src = tmp_path / "x.jsonl"
    src.write_text('{"q": "What?", "gt": ["b"], "out": "<answer> b </answer>"}\n')
    code = main(["read", str(src), "--columns", "text=out,question=q", "--columns", "gold=gt",
                 "--out", str(tmp_path / "o.parquet")])
    assert code == 0
    assert pl.read_parquet(tmp_path / "o.parquet")["correct"].to_list() == [True]


def test_read_command_bad_input_exits_2_one_line(fixtures, tmp_path, capsys):
    for args in (["read", str(fixtures / "bad" / "searchr1_mixed.jsonl")],
                 ["read", str(fixtures / "bad" / "empty.jsonl")],
                 ["read", str(fixtures / "bad" / "unknown.jsonl")],
                 ["read", str(tmp_path / "missing.jsonl")],
                 ["read", str(fixtures / "searchr1.jsonl"), "--columns", "nonsense"],
                 ["read", str(fixtures / "searchr1.jsonl"), "--columns", "txt=response"]):
        code = main([*args, "--out", str(tmp_path / "o.parquet")])
        err = capsys.readouterr().err
        assert code == 2, args
        assert err.count("\n") == 1 and err.startswith("mechanism read: error: "), err


def test_unwritable_output_is_one_line_and_status_2(fixtures, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code = main(["read", str(fixtures / "searchr1.jsonl"), "--out", str(blocker / "o.parquet")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("mechanism read: error:")
