"""The report layer and `mechanism report`: every analysis on a user's runs, one page with every
figure and a verdict per arm; the page escapes every input string."""
from __future__ import annotations

import html
import re

import polars as pl
import pytest

import mechanism as mx
from mechanism._cli.main import main
from mechanism.report import write_report

EVIL = '<script>alert("arm")</script>'


@pytest.fixture(scope="module")
def evil_runs():
    """A simulated base / rl pair, the rl arm renamed to a string that would run as HTML."""
    sim = mx.simulate(n_questions=10, n_samples=6, arms=("base", "rl"), random_state=0, progress=False)
    return sim.runs.with_columns(pl.col("arm").replace({"rl": EVIL}))


@pytest.fixture(scope="module")
def report(evil_runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    return write_report(evil_runs, out, base="base", embedder="hashing-256", n_boot=100, n_permutations=50,
                        progress=False)


def _images(page: str) -> list[str]:
    return [html.unescape(src) for src in re.findall(r'<img src="([^"]+)"', page)]


def test_report_writes_every_section_and_figure(report):
    out = report.out
    for rel in ("passkt/pass_at_kt.csv", "strategies/strategies.csv", "strategies/labels.parquet",
                "space/space.json", "reweighting/reweighting_summary.csv", "integration/per_arm.csv",
                "summary.md", "summary.html", "numbers.json"):
        assert (out / rel).is_file(), rel
    shown = _images(report.summary_html.read_text("utf-8"))
    made = sorted(str(p.relative_to(out)) for p in report.figures())
    assert sorted(shown) == made and len(made) >= 9
    for rel in shown:
        assert (out / rel).is_file()
    tex = (out / "tables.tex").read_text("utf-8")
    assert tex.count(r"\begin{tabular}") >= 3 and "<script>" not in tex


def test_verdicts_come_from_the_results(report):
    (verdict,) = report.verdicts
    rw = report.sections["reweighting"].results[0]
    assert f"{rw.composition:+.3f}" in verdict and f"{rw.within:+.3f}" in verdict
    assert "capability boundary at T=5" in verdict
    assert len(verdict.split()) <= 70  # one short verdict; the integration findings sit in their section
    page = report.summary_html.read_text("utf-8")
    assert "Retrieval and integration rates per arm" in page


def test_page_escapes_input_strings(report):
    page = report.summary_html.read_text("utf-8")
    assert "<script" not in page.lower()
    assert html.escape(EVIL) in page
    markdown = report.summary_markdown.read_text("utf-8")
    outside_code = re.sub(r"`[^`\n]*`", "", markdown)  # a code span (a transcript's tool call) is shown literally
    outside_code = re.sub(r'^<a id="[a-z0-9-]+"></a>$', "", outside_code, flags=re.M)  # the page's own anchors
    assert re.search(r"(?<!\\)[<>]", outside_code) is None  # every angle bracket escaped
    assert "\\<script\\>" in outside_code  # the verdicts name the arm, escaped


def test_report_rejects_a_missing_arm_with_one_line(evil_runs, tmp_path):
    with pytest.raises(mx.InputError, match="`base`"):
        write_report(evil_runs, tmp_path, base="nope", embedder="hashing-64")


@pytest.mark.slow
def test_cli_report_on_a_simulated_run(tmp_path, capsys):
    sim = mx.simulate(n_questions=8, n_samples=4, arms=("base", "rl", "sft"), random_state=1, progress=False)
    sim.write(tmp_path / "data")
    rc = main(["report", str(tmp_path / "data" / "searchr1"), "--base", "base", "--out", str(tmp_path / "out"),
               "--embedder", "hashing-128", "--n-boot", "50", "--n-permutations", "20", "--no-progress"])
    assert rc == 0
    out = capsys.readouterr().out
    assert out.count(" vs base: ") == 2 and "summary.html" in out
    assert (tmp_path / "out" / "summary.md").read_text("utf-8").count("![") >= 10


@pytest.mark.slow
def test_cli_report_on_the_fireact_agents(fireact_dir, tmp_path, capsys):
    rc = main(["report", str(fireact_dir / "trajs"), "--format", "fireact", "--base", "llama-2-7b", "--out",
               str(tmp_path), "--embedder", "hashing-256", "--n-boot", "100", "--n-permutations", "50",
               "--no-progress"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "llama-2-13b vs llama-2-7b" in out and "gpt-3.5-turbo vs llama-2-7b" in out
    page = (tmp_path / "summary.html").read_text("utf-8")
    for rel in _images(page):
        assert (tmp_path / rel).is_file(), rel
    assert "pass_over_t.png" in page  # one sample per question: PASS@(1,T) over T, no curve over k


@pytest.mark.slow
def test_nothing_is_embedded_twice_in_one_call(monkeypatch, tmp_path):
    """A report fits a space on the runs and places the same runs; a series fits on two
    checkpoints and places all five: each distinct rendering reaches the model once."""
    from sklearn.feature_extraction.text import HashingVectorizer

    from mechanism.analysis.embed import Embedder

    seen: list[str] = []

    def encode(self, texts):  # the model's forward pass, replaced by a recording stand-in
        seen.extend(texts)
        vec = HashingVectorizer(n_features=64, alternate_sign=False, norm="l2")
        return vec.transform(list(texts)).toarray().astype("float32")

    monkeypatch.setattr(Embedder, "_encode", encode)
    sim = mx.simulate(n_questions=6, n_samples=4, arms=("base", "rl"), random_state=0, progress=False)
    write_report(sim.runs, tmp_path / "report", base="base", n_boot=20, n_permutations=0, progress=False)
    assert seen and len(seen) == len(set(seen))
    seen.clear()
    series = mx.training_run(steps=(0, 100, 200), n_questions=6, n_samples=4, progress=False)
    mx.track(series.runs, n_boot=20, progress=False)
    assert seen and len(seen) == len(set(seen))


def test_arms_that_differ_only_in_whitespace_read_apart_on_the_page(tmp_path):
    sim = mx.simulate(n_questions=6, n_samples=4, arms=("base", "rl"), random_state=0, progress=False)
    runs = sim.runs.with_columns(pl.when(pl.col("arm") == "base").then(pl.lit("rl ")).otherwise(pl.col("arm"))
                                 .alias("arm"))
    out = write_report(runs, tmp_path / "report", base="rl ", embedder="hashing-64", n_boot=20, n_permutations=0,
                       progress=False, figures=False)
    page = (tmp_path / "report" / "summary.html").read_text(encoding="utf-8")
    assert "rl␠" in page and out is not None
