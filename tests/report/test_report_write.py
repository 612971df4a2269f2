"""The report layer's write helpers, its share tables (questions weigh equally within an arm when
arms are compared), the renamed share functions (old names warn) and one ``describe()`` per report."""
from __future__ import annotations

import json

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import pytest

import mechanism as mx
from mechanism.analysis.strategy_space import StrategySpace
from mechanism.datasets.simulation import simulate
from mechanism.report._section import Section
from mechanism.report._write import write_figures, write_json, write_table, write_tables, write_text


def _weighted_by_hand(assigned: pl.DataFrame) -> dict[tuple[str, int], float]:
    """Brute force: per arm, the mean over its questions of each strategy's fraction of the question's samples."""
    out: dict[tuple[str, int], float] = {}
    for arm in assigned["arm"].unique().to_list():
        part = assigned.filter(pl.col("arm") == arm)
        questions = part["question_id"].unique().to_list()
        for s in assigned["strategy"].unique().to_list():
            fractions = []
            for q in questions:
                rows = part.filter(pl.col("question_id") == q)["strategy"].to_list()
                fractions.append(sum(r == s for r in rows) / len(rows))
            out[(arm, s)] = sum(fractions) / len(fractions)
    return out


@pytest.fixture(scope="module")
def unbalanced():
    """base with 8 samples on every question; rl with 8 on the even questions and 1 on the odd ones,
    so pooling would let the even questions decide rl's shares."""
    runs = simulate(n_questions=12, n_samples=8, arms=("base", "rl"), random_state=1, progress=False).runs
    qs = sorted(runs["question_id"].unique().to_list())
    odd = set(qs[1::2])
    runs = runs.filter((pl.col("arm") == "base") | ~pl.col("question_id").is_in(list(odd)) | (pl.col("sample_id") == 0))
    assert runs.filter(pl.col("arm") == "rl").height == 6 * 8 + 6
    space = StrategySpace(embedder="hashing-64", progress=False, random_state=0).fit(runs)
    return runs, space


def test_write_helpers_write_and_record_every_artefact(tmp_path):
    section = Section()
    frame = pl.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    write_table(section, frame, tmp_path / "t.csv")
    write_table(section, frame, tmp_path / "t.parquet")
    write_tables(section, tmp_path, [("u", frame), ("missing", None)])
    write_text(section, tmp_path / "s.txt", "line")
    write_json(section, tmp_path / "d.json", {"x": np.float64(0.5)}, default=float)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    write_figures(section, tmp_path / "figs", [("curve", fig)], prefix="figs/")
    names = [p.relative_to(tmp_path).as_posix() for p in section.written]
    assert names == ["t.csv", "t.parquet", "u.csv", "s.txt", "d.json", "figs/curve.png", "figs/curve.pdf"]
    assert all(p.is_file() for p in section.written) and not (tmp_path / "missing.csv").exists()
    assert pl.read_csv(tmp_path / "t.csv").equals(frame) and pl.read_parquet(tmp_path / "t.parquet").equals(frame)
    assert (tmp_path / "s.txt").read_text("utf-8") == "line\n"
    assert (tmp_path / "d.json").read_text("utf-8") == json.dumps({"x": 0.5}, indent=2) + "\n"
    assert section.figures == {"figs/curve": tmp_path / "figs" / "curve.png"}
    assert not plt.fignum_exists(fig.number)  # closed once saved
    with pytest.raises(ValueError, match="t.xlsx"):
        write_table(section, frame, tmp_path / "t.xlsx")


def test_pooled_share_table_counts_trajectories():
    from mechanism.report import pooled_share_table

    t = pl.DataFrame({"arm": ["a", "a", "a", "b"], "question_id": ["q1", "q1", "q2", "q1"], "strategy": [0, 0, 1, 1]})
    table = pooled_share_table(t)
    assert table.rows() == [("a", 0, 2, 2 / 3), ("a", 1, 1, 1 / 3), ("b", 1, 1, 1.0)]
    import mechanism.report as report

    assert "pooled_share_table" in report.__all__ and "strategy_shares" not in report.__all__
    from mechanism.analysis.parallel import strategy_shares

    assert mx.strategy_shares is strategy_shares  # the question-weighted one stays the package's


def test_shares_compared_between_arms_weigh_questions_equally(unbalanced, tmp_path):
    """shares.csv, the description text and the shares figure give each question weight 1 in its arm."""
    from mechanism.plots.strategies import plot_strategy_shares
    from mechanism.report import analyse_strategies, pooled_share_table, write_strategies

    runs, space = unbalanced
    section = write_strategies(analyse_strategies(space, runs, map_xy=False, n_boot=50), runs, tmp_path,
                               figures=False)
    assigned = section.results[0].assigned
    expected = _weighted_by_hand(assigned)
    table = pl.read_csv(tmp_path / "shares.csv")
    assert table.columns == ["arm", "strategy", "n", "share", "ci_low", "ci_high"]
    assert table.height == len(expected)
    for r in table.iter_rows(named=True):
        assert r["share"] == pytest.approx(expected[(r["arm"], r["strategy"])], abs=1e-12)
        assert r["ci_low"] <= r["share"] + 1e-12 and r["share"] <= r["ci_high"] + 1e-12
    pooled = {(r["arm"], r["strategy"]): r["share"] for r in pooled_share_table(assigned).iter_rows(named=True)}
    assert max(abs(pooled.get(k, 0.0) - v) for k, v in expected.items()) > 0.01  # the design makes them differ
    # the figure draws the same shares: bars per arm in order, the largest strategies first
    fig = plot_strategy_shares(space, runs, arms=["base", "rl"], assigned=assigned)
    keep = [s for s in space.describe()["strategy"].to_list() if s >= 0][:10]
    widths = [p.get_width() for p in fig.axes[0].patches]
    assert widths == pytest.approx([expected.get((a, s), 0.0) for a in ("base", "rl") for s in keep], abs=1e-12)
    plt.close(fig)
    # the same seed gives the same intervals
    write_strategies(analyse_strategies(space, runs, map_xy=False, n_boot=50), runs, tmp_path / "again",
                     figures=False)
    assert (tmp_path / "again" / "shares.csv").read_text() == (tmp_path / "shares.csv").read_text()


@pytest.mark.slow
def test_a_report_describes_its_space_once(unbalanced, tmp_path, monkeypatch):
    from mechanism.report import write_report

    runs, space = unbalanced
    calls = []
    describe = space.describe
    monkeypatch.setattr(space, "describe", lambda: calls.append(1) or describe())
    report = write_report(runs, tmp_path, base="base", space=space, k=[1], n_boot=20, n_permutations=10,
                          progress=False)
    assert len(calls) == 1
    assert (report.out / "strategies" / "strategy_shares.png").is_file()


def test_report_accuracy_weighs_questions_equally_with_an_interval():
    """The page's accuracy line sets arms side by side, so questions weigh equally within an arm
    (pooled, arm `a` below would read 0.75) and each arm gets its bootstrap interval, checked
    against the replicates computed by hand from the same weights."""
    import numpy as np

    from mechanism.core.resample import question_bootstrap_weights, stream
    from mechanism.report.study import arm_accuracy

    runs = pl.DataFrame({"arm": ["a"] * 4 + ["b"] * 2, "question_id": ["q1", "q1", "q1", "q2", "q1", "q2"],
                         "correct": [True, True, True, False, True, False]})
    got = arm_accuracy(runs, ci=0.9, n_boot=200, random_state=3)
    assert got["a"]["accuracy"] == 0.5 and got["b"]["accuracy"] == 0.5
    assert (got["a"]["n"], got["a"]["questions"]) == (4, 2)
    w = question_bootstrap_weights(2, 200, stream(3, "bootstrap")).astype(float)
    reps = (w @ np.array([1.0, 0.0])) / w.sum(axis=1)
    assert got["a"]["ci_low"] == pytest.approx(np.quantile(reps, 0.05))
    assert got["a"]["ci_high"] == pytest.approx(np.quantile(reps, 0.95))
    assert arm_accuracy(runs, ci=None)["a"]["ci_low"] is None
