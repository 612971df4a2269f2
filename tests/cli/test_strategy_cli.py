"""`mechanism strategies fit|apply` end to end on simulated files."""
from __future__ import annotations

import polars as pl
import pytest

from mechanism._cli.main import main
from mechanism.datasets.simulation import simulate


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("sim")
    simulate(n_questions=15, n_samples=4, random_state=0, progress=False).write(root / "a")
    simulate(n_questions=15, n_samples=4, random_state=1, progress=False).write(root / "b")
    return root


def test_fit_then_apply(tmp_path, files, capsys):
    space = tmp_path / "space"
    rc = main(["strategies", "fit", str(files / "a" / "searchr1" / "base.jsonl"),
               str(files / "a" / "openai" / "rl.jsonl"),
               "--out", str(space), "--embedder", "hashing-128", "--no-progress", "--quiet"])
    assert rc == 0
    assert (space / "space.json").is_file() and (space / "strategies.csv").is_file()
    labels = pl.read_parquet(space / "labels.parquet")
    assert labels.height == 2 * 15 * 4 and set(labels["arm"]) == {"base", "rl"}
    out = tmp_path / "applied"
    rc = main(["strategies", "apply", str(space), str(files / "b" / "searchr1" / "rl.jsonl"), "--out", str(out),
               "--no-progress"])
    assert rc == 0
    applied = pl.read_parquet(out / "labels.parquet")
    assert applied.height == 60 and {"strategy", "distance", "outlier"} <= set(applied.columns)
    shares = pl.read_csv(out / "shares.csv")
    assert shares["share"].sum() == pytest.approx(1.0)
    assert "assigned to" in capsys.readouterr().err


def test_bad_space_is_one_line_exit_2(tmp_path, files, capsys):
    rc = main(["strategies", "apply", str(tmp_path / "missing"), str(files / "b" / "searchr1" / "rl.jsonl"),
               "--out", str(tmp_path / "x"), "--no-progress"])
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert "space.json" in err and "\n" not in err and "Traceback" not in err


def test_skipped_records_are_reported(tmp_path, files, capsys):
    """Under --errors skip, every left-out record is said on stderr (rows in = kept + reported)."""
    good = (files / "a" / "searchr1" / "base.jsonl").read_text().splitlines()[:3]
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("\n".join([*good, "not json", '{"arm": "base"}']) + "\n")
    rc = main(["strategies", "fit", str(mixed), "--format", "searchr1", "--errors", "skip",
               "--out", str(tmp_path / "space"), "--embedder", "hashing-16", "--no-progress", "--quiet"])
    assert rc == 0
    err = capsys.readouterr().err
    assert "skipped 2 of 5 records" in err and "line 4" in err and "line 5" in err


def test_model_folder_without_a_model_is_one_line_exit_2(tmp_path, files, capsys):
    rc = main(["strategies", "fit", str(files / "a" / "searchr1" / "base.jsonl"), "--out", str(tmp_path / "s"),
               "--embedder", str(tmp_path), "--no-progress"])
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert "cannot load embedding model" in err and "\n" not in err


def test_fit_uses_the_library_defaults_unless_told(tmp_path, files):
    """`strategies fit` gives the strategies `StrategySpace()` gives (it once had its own,
    stale resolution), and passes --resolution / --min-share through when set."""
    import json

    import mechanism as mx

    inputs = [str(files / "a" / "searchr1" / "base.jsonl"), str(files / "a" / "openai" / "rl.jsonl")]
    assert main(["strategies", "fit", *inputs, "--out", str(tmp_path / "d"), "--embedder", "hashing-128",
                 "--no-progress", "--quiet", "--no-figures"]) == 0
    runs = mx.read(inputs, format="auto")
    library = mx.StrategySpace(embedder="hashing-128", progress=False).fit(runs)
    cli = pl.read_parquet(tmp_path / "d" / "labels.parquet")
    assert cli["strategy"].to_list() == library.labels_.tolist()
    assert main(["strategies", "fit", *inputs, "--out", str(tmp_path / "e"), "--embedder", "hashing-128",
                 "--resolution", "0.9", "--min-share", "0.1", "--no-progress", "--quiet", "--no-figures"]) == 0
    params = json.loads((tmp_path / "e" / "space.json").read_text())["params"]
    assert (params["resolution"], params["min_share"]) == (0.9, 0.1)
