"""`mechanism strategies fit|apply` end to end on simulated files."""
from __future__ import annotations

import polars as pl
import pytest

from mechanism.cli import main
from mechanism.simulate import simulate


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("sim")
    simulate(n_questions=15, n_samples=4, seed=0, progress=False).write(root / "a")
    simulate(n_questions=15, n_samples=4, seed=1, progress=False).write(root / "b")
    return root


def test_fit_then_apply(tmp_path, files, capsys):
    space = tmp_path / "space"
    rc = main(["strategies", "fit", str(files / "a" / "base.searchr1.jsonl"), str(files / "a" / "rl.openai.jsonl"),
               "--out", str(space), "--embedder", "hashing-128", "--no-progress", "--quiet"])
    assert rc == 0
    assert (space / "space.json").is_file() and (space / "strategies.csv").is_file()
    labels = pl.read_parquet(space / "labels.parquet")
    assert labels.height == 2 * 15 * 4 and set(labels["arm"]) == {"base", "rl"}
    out = tmp_path / "applied"
    rc = main(["strategies", "apply", str(space), str(files / "b" / "rl.searchr1.jsonl"), "--out", str(out),
               "--no-progress"])
    assert rc == 0
    applied = pl.read_parquet(out / "labels.parquet")
    assert applied.height == 60 and {"strategy", "distance", "outlier"} <= set(applied.columns)
    shares = pl.read_csv(out / "shares.csv")
    assert shares["share"].sum() == pytest.approx(1.0)
    assert "assigned to" in capsys.readouterr().err


def test_bad_space_is_one_line_exit_2(tmp_path, files, capsys):
    rc = main(["strategies", "apply", str(tmp_path / "missing"), str(files / "b" / "rl.searchr1.jsonl"),
               "--out", str(tmp_path / "x"), "--no-progress"])
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert "space.json" in err and "\n" not in err and "Traceback" not in err
