"""``mechanism swap`` and ``mechanism report --endpoint`` against the served simulator on 127.0.0.1."""
from __future__ import annotations

import pytest

pytest.importorskip("openai", reason="the endpoint client needs the `endpoints` extra (openai)")
pytest.importorskip("fastapi", reason="the served simulator needs the `endpoints` extra (fastapi)")
pytest.importorskip("uvicorn", reason="the served simulator needs the `endpoints` extra (uvicorn)")

import polars as pl

import mechanism as mx
from mechanism._cli.main import main
from mechanism.datasets.serving import serve
from mechanism.endpoints import OpenAICompatible


@pytest.fixture(scope="module")
def sim():
    return mx.simulate(n_questions=10, n_samples=2, arms=("base", "rl"), random_state=0, progress=False)


@pytest.fixture
def data(sim, tmp_path):
    path = tmp_path / "runs.parquet"
    sim.runs.write_parquet(path)
    return path


def _args(data, url, out, *extra):
    return ["swap", str(data), "--base", "base", "--treated", "rl", "--endpoint", f"base={url}",
            "--endpoint", f"rl={url}", "--out", str(out), "--n-boot", "200", "--no-progress", *extra]


def test_swap_writes_the_library_s_numbers_and_a_cached_rerun_sends_nothing(sim, data, tmp_path, capsys):
    with serve(sim) as server:
        code = main(_args(data, server.url, tmp_path / "out", "--endpoint-cache", str(tmp_path / "cache")))
        assert code == 0, capsys.readouterr().err
        sent = server.requests
        eps = {a: OpenAICompatible(server.url, a, progress=False) for a in ("base", "rl")}
        direct = mx.swap(mx.read(data), reasoner=eps, retrieval_from=["base", "rl"], base="base", treated="rl",
                         n_bootstrap=200, progress=False)
        assert main(_args(data, server.url, tmp_path / "again", "--endpoint-cache", str(tmp_path / "cache"))) == 0
        assert server.requests == sent + direct.endpoints["requests"].sum()  # the rerun hit the cache only
    table = pl.read_csv(tmp_path / "out" / "swap.csv")
    assert table["accuracy"].to_list() == pytest.approx(direct.table["accuracy"].to_list(), abs=1e-12)
    assert table["ci_low"].to_list() == pytest.approx(direct.table["ci_low"].to_list(), abs=1e-12)
    split = pl.read_csv(tmp_path / "out" / "split.csv")
    assert split["part"].to_list() == ["total", "retrieval", "reasoning", "interaction"]
    assert split["estimate"].to_list() == pytest.approx(direct.split["estimate"].to_list(), abs=1e-12)
    for name in ("swap.md", "swap.json", "endpoints.csv", "per_episode.parquet", "summary.txt", "swap.png"):
        assert (tmp_path / "out" / name).is_file(), name
    again = pl.read_csv(tmp_path / "again" / "endpoints.csv")
    assert again["requests"].to_list() == [0, 0] and again["cached"].sum() > 0
    assert "swap test, rl vs base over 10 questions" in capsys.readouterr().out


@pytest.mark.parametrize(("change", "message"), [
    (lambda a: ["base" if x.startswith("base=") else x for x in a], "`--endpoint` takes ARM=VALUE, got 'base'"),
    (lambda a: a + ["--model", "sft=x"], "`--model` names arm 'sft', which has no `--endpoint`"),
    (lambda a: a + ["--endpoint", "sft=ftp://x"], "must be an http(s) URL"),
])
def test_bad_endpoint_arguments_exit_2_with_one_line(data, tmp_path, capsys, change, message):
    args = change(_args(data, "http://127.0.0.1:9/v1", tmp_path / "out"))
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_a_server_that_is_down_exits_2_with_one_line(data, tmp_path, capsys):
    assert main(_args(data, "http://127.0.0.1:9/v1", tmp_path / "out", "--max-retries", "0", "--timeout", "2")) == 2
    err = capsys.readouterr().err
    assert "endpoint http://127.0.0.1:9/v1 (model `base`)" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()


def test_an_arm_without_an_endpoint_exits_2(sim, data, tmp_path, capsys):
    with serve(sim) as server:
        args = ["swap", str(data), "--base", "base", "--treated", "rl", "--endpoint", f"base={server.url}",
                "--out", str(tmp_path / "out"), "--no-progress"]
        assert main(args) == 2
    err = capsys.readouterr().err
    assert "has no endpoint" in err and len(err.strip().splitlines()) == 1, err


def test_report_with_endpoints_adds_a_swap_section(sim, data, tmp_path, capsys):
    with serve(sim) as server:
        code = main(["report", str(data), "--base", "base", "--out", str(tmp_path / "out"), "--embedder",
                     "hashing-64", "--n-boot", "30", "--n-permutations", "0", "--no-progress", "--no-figures",
                     "--endpoint", f"base={server.url}", "--endpoint", f"rl={server.url}"])
        assert code == 0, capsys.readouterr().err
    page = (tmp_path / "out" / "summary.md").read_text("utf-8")
    assert "Swap test" in page and "swap test, rl vs base over 10 questions" in page
    assert (tmp_path / "out" / "swap" / "swap.csv").is_file()


def test_strategy_truncation_and_no_control_reach_the_library(sim, data, tmp_path, capsys):
    """``--strategy`` with ``--labels``, ``--after-results`` and ``--no-control`` give the numbers of
    the library called with the same options (and not those of the full swap)."""
    runs = mx.read(data)
    labels = runs.select("arm", "question_id", "sample_id", strategy=pl.col("sample_id") % 2)
    labels.write_csv(tmp_path / "labels.csv")
    with serve(sim) as server:
        code = main(_args(data, server.url, tmp_path / "out", "--strategy", "1", "--labels",
                          str(tmp_path / "labels.csv"), "--after-results", "1", "--no-control"))
        assert code == 0, capsys.readouterr().err
        eps = {a: OpenAICompatible(server.url, a, progress=False) for a in ("base", "rl")}
        direct = mx.swap(runs, reasoner=eps, retrieval_from=["base", "rl"], base="base", treated="rl",
                         strategy=1, labels=labels["strategy"].to_numpy(), after_results=1, control=False,
                         n_bootstrap=200, progress=False)
    table = pl.read_csv(tmp_path / "out" / "swap.csv")
    assert set(table["retrieval_from"]) == {"base", "rl"}  # no control row
    assert table["n_episodes"].to_list() == [10] * 4  # sample 1 of each of 10 questions
    assert table["accuracy"].to_list() == pytest.approx(direct.table["accuracy"].to_list(), abs=1e-12)
    notes = (tmp_path / "out" / "swap.md").read_text("utf-8")
    assert "within strategy '1' only" in notes and "truncated after the first 1 result" in notes


@pytest.mark.parametrize(("extra", "message"), [
    (["--strategy", "1"], "`--strategy` needs the strategy of each episode"),
    (["--labels", "labels.csv"], "give it too"),
])
def test_strategy_without_labels_exits_2_with_one_line(data, tmp_path, capsys, extra, message):
    assert main(_args(data, "http://127.0.0.1:9/v1", tmp_path / "out", *extra)) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_the_answers_are_scored_as_the_inputs_were_read():
    """``--scorer`` reads the inputs and scores the reasoners' answers alike: token F1 >= 0.5,
    whole words, or exact match (the swap's default)."""
    from mechanism._cli.swap import answer_scorer

    assert answer_scorer("em") is None
    f1 = answer_scorer("f1")
    assert f1("Paris France", ["Paris"]) and not f1("Paris in France today", ["Paris"]) and not f1(None, ["Paris"])
    contains = answer_scorer("contains")
    assert contains("the city of Paris", ["paris"]) and not contains("Parisian", ["Paris"])
    assert answer_scorer("cover-em")("it is Lyon", ["Lyon"])
