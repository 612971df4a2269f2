"""One result protocol: Boundary, Reweighting, Integration, Track and Simulation each give a
Summary (text, Markdown, HTML, LaTeX), a long table with intervals, tables(), a JSON-ready dict
and a one-line repr; every renderer escapes input strings. Plus CLI parity across commands."""
from __future__ import annotations

import argparse
import json

import polars as pl
import pytest

import mechanism as mx
from mechanism.core.results import Summary, frame_to_html, frame_to_latex, frame_to_markdown, latex_escape

EVIL = "<b>x</b> & 50%_$|"


@pytest.fixture(scope="module")
def results(small_pair):
    sim = small_pair
    runs = sim.runs.with_columns(pl.col("arm").replace({"rl": EVIL}))
    labels = sim.truth["strategy"].to_numpy()
    series = mx.training_run(steps=(0, 100, 200), n_questions=6, n_samples=4, progress=False)
    return {
        "Boundary": mx.boundary(runs, base="base", treated=EVIL, n_boot=30),
        "Reweighting": mx.reweighting(runs, labels, base="base", treated=EVIL, n_boot=30, n_permutations=20),
        "Integration": mx.integration(runs, base="base", n_boot=30),
        "Track": mx.track(series.runs, labels=series.truth["strategy"], n_boot=30),
        "Simulation": sim,
    }


@pytest.mark.parametrize("name", ["Boundary", "Reweighting", "Integration", "Track", "Simulation"])
def test_every_result_follows_the_protocol(results, name):
    res = results[name]
    text = repr(res)
    assert "\n" not in text and text.startswith(f"<{name}") and len(text) < 300
    s = res.summary()
    assert isinstance(s, Summary)
    assert str(s).splitlines()[0] == s.title and len(str(s).splitlines()) >= 2
    frame = res.to_frame()
    assert isinstance(frame, pl.DataFrame) and frame.height > 0
    if name != "Simulation":  # the simulation's table is the planted truth, exact
        assert {"estimate", "ci_low", "ci_high"} <= set(frame.columns)
    tables = res.tables()
    assert tables and all(isinstance(t, pl.DataFrame) for t in tables.values())
    json.dumps(res.to_dict(), allow_nan=False, default=str)
    assert s._repr_html_().startswith("<div") and s._repr_markdown_() and s._repr_latex_()


@pytest.mark.parametrize("name", ["Boundary", "Reweighting", "Integration"])
def test_renderings_escape_input_strings(results, name):
    s = results[name].summary()
    assert EVIL in str(s)  # plain text is the text itself
    page = s.as_html()
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page
    latex = s.as_latex()
    assert r"50\%\_\$" in latex and r"\textless{}b\textgreater{}" in latex and "<b>" not in latex
    md = s.as_markdown()
    assert "<b>" not in md


def test_summary_is_text_and_the_table_is_to_frame(results):
    """The summary no longer poses as a DataFrame: tables come from ``to_frame()``."""
    rw = results["Reweighting"]
    assert not hasattr(rw.summary(), "filter")
    with pytest.raises(TypeError):
        rw.summary()["quantity"]
    assert rw.to_frame().filter(pl.col("quantity") == "total")["estimate"][0] == pytest.approx(rw.total)
    assert rw.summary().equals(rw.summary()) and not rw.summary().equals(results["Boundary"].summary())
    assert "gained" in results["Boundary"].summary()
    frame = results["Integration"].to_frame()  # per-arm rows name their arm, pair rows their base and treated
    assert set(frame["arm"].drop_nulls().to_list()) == {"base", EVIL}
    assert set(frame["treated"].drop_nulls().to_list()) == {EVIL} and set(frame["base"].drop_nulls()) == {"base"}


def test_latex_table_escapes_and_aligns():
    frame = pl.DataFrame({"arm": ["a_b & c"], "share": [0.5], "n": [3]})
    out = frame_to_latex(frame, caption="Shares (%)", label="tab:x")
    assert r"\begin{tabular}{lrr}" in out and r"a\_b \& c & 0.500 & 3 \\" in out
    assert r"\caption{Shares (\%)}" in out and r"\label{tab:x}" in out
    assert latex_escape("\\") == r"\textbackslash{}"
    assert "a\\_b" not in frame_to_markdown(frame) and "&amp;" in frame_to_html(frame)


def test_to_latex_gives_the_main_tables(results):
    out = results["Reweighting"].to_latex()
    assert out.count(r"\begin{tabular}") >= 1 and "composition" in out


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    from mechanism._cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = {}
    for name, command in sub.choices.items():
        nested = [a for a in command._actions if isinstance(a, argparse._SubParsersAction)]
        if nested:
            out.update({f"{name} {n}": c for n, c in nested[0].choices.items()})
        else:
            out[name] = command
    return out


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {opt for action in parser._actions for opt in action.option_strings}


def test_every_reading_command_takes_columns_errors_and_format():
    commands = _subcommands()
    readers = [n for n, p in commands.items() if any(a.dest == "inputs" for a in p._actions)]
    assert {"read", "passkt", "strategies fit", "strategies apply", "reweighting", "integration", "track",
            "report"} <= set(readers)
    for name in readers:
        assert {"--columns", "--errors", "--format"} <= _options(commands[name]), name


def test_every_embedding_command_takes_cache_dir_and_no_progress():
    commands = _subcommands()
    for name in ("strategies fit", "strategies apply", "reweighting", "track", "report", "demo"):
        assert {"--cache-dir", "--no-progress"} <= _options(commands[name]), name


def test_columns_reach_the_reader(tmp_path, capsys):
    from mechanism._cli.main import main

    rows = [{"model": "base", "qid": f"q{i}", "sample_id": 0, "question": "q?", "gold": ["a"], "answer": "a",
             "correct": True, "n_rounds": 0, "steps": []} for i in range(3)]
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    rc = main(["passkt", str(path), "--format", "canonical", "--columns", "arm=model,question_id=qid",
               "--out", str(tmp_path / "out"), "--n-boot", "10", "--no-figures"])
    assert rc == 0 and "base" in capsys.readouterr().out
