"""Reweighting and integration on the simulator's arms with its planted strategies, the
figures, and the two CLI commands."""
from __future__ import annotations

import matplotlib
import numpy as np
import polars as pl
import pytest
from matplotlib.figure import Figure

from mechanism._cli.main import main
from mechanism.analysis.compare import labels_from_table, reweighting
from mechanism.analysis.information import integration, retrieval_flags
from mechanism.core.errors import InputError
from mechanism.core.schema import from_records, make_step
from mechanism.plots.integration import plot_integration_grid, plot_integration_split
from mechanism.plots.reweighting import plot_decomposition, plot_share_success, text_label
from mechanism.plots.style import save_figure


@pytest.fixture(scope="module")
def sim():
    from mechanism.datasets.simulation import simulate

    return simulate(n_questions=30, n_samples=8, random_state=3, progress=False)


@pytest.mark.parametrize("strata", ["question", "pooled"])
def test_split_with_planted_labels_equals_a_direct_group_by(sim, strata):
    labels = labels_from_table(sim.runs, sim.truth)
    rw = reweighting(sim.runs, labels, base="base", treated="rl", n_boot=100, n_permutations=100, strata=strata)
    # direct computation from the truth table, independent of the module's array code; the
    # strata are (question, strategy) cells, or strategies alone (every question has 8 samples
    # per arm, so weighing questions equally is pooling trajectories)
    keys = ["question_id", "strategy"] if strata == "question" else ["strategy"]
    t = sim.truth.filter(pl.col("arm").is_in(["base", "rl"]))
    per = (t.group_by("arm", *keys).agg(n=pl.len(), r=pl.col("correct").mean())
           .with_columns(p=pl.col("n") / pl.col("n").sum().over("arm")))
    wide = (per.filter(pl.col("arm") == "base").select(*keys, pb="p", rb="r")
            .join(per.filter(pl.col("arm") == "rl").select(*keys, pt="p", rt="r"), on=keys, how="full",
                  coalesce=True)
            .with_columns(pl.col("pb").fill_null(0.0), pl.col("pt").fill_null(0.0)))
    if strata == "question":  # a cell one arm never used: that arm's own modelled rate (additive logit)
        from mechanism.analysis.compare import additive_logit

        qs = sorted(t["question_id"].unique().to_list())
        ss = sorted(t["strategy"].unique().to_list())
        fill = {}
        for arm, col in (("base", "rb"), ("rl", "rt")):
            sub = per.filter(pl.col("arm") == arm)
            n, c = np.zeros((len(qs), len(ss))), np.zeros((len(qs), len(ss)))
            for row in sub.iter_rows(named=True):
                n[qs.index(row["question_id"]), ss.index(row["strategy"])] = row["n"]
                c[qs.index(row["question_id"]), ss.index(row["strategy"])] = row["n"] * row["r"]
            model = additive_logit(n, c)
            fill[col] = [model[qs.index(q), ss.index(s)] for q, s in zip(wide["question_id"], wide["strategy"])]
        wide = wide.with_columns(pl.col("rb").fill_null(pl.Series(fill["rb"])),
                                 pl.col("rt").fill_null(pl.Series(fill["rt"])))
    else:
        wide = wide.with_columns(pl.col("rb").fill_null(pl.col("rt")), pl.col("rt").fill_null(pl.col("rb")))
    comp = ((wide["pt"] - wide["pb"]) * (wide["rt"] + wide["rb"]) / 2).sum()
    within = ((wide["rt"] - wide["rb"]) * (wide["pt"] + wide["pb"]) / 2).sum()
    acc = t.group_by("arm").agg(pl.col("correct").mean())
    total = acc.filter(pl.col("arm") == "rl")["correct"][0] - acc.filter(pl.col("arm") == "base")["correct"][0]
    assert rw.composition == pytest.approx(comp, abs=1e-12)
    assert rw.within == pytest.approx(within, abs=1e-12)
    assert rw.total == pytest.approx(total, abs=1e-12)
    assert abs(rw.composition + rw.within - rw.total) <= 1e-12


def test_retrieval_flag_agrees_with_the_simulators_truth(sim):
    truth = labels_from_table(sim.runs, sim.truth, column="retrieved_gold").astype(bool)
    assert np.array_equal(retrieval_flags(sim.runs), truth)


def test_figures_build_and_save(sim, tmp_path):
    labels = labels_from_table(sim.runs, sim.truth)
    rws = [reweighting(sim.runs, labels, base="base", treated=arm, n_boot=50, n_permutations=0)
           for arm in ("rl", "sft")]
    res = integration(sim.runs, n_boot=50)
    figs = {"share": plot_share_success(rws, title="t"), "waterfall": plot_decomposition(rws, top=3),
            "grid": plot_integration_grid(res), "split": plot_integration_split(res)}
    for stem, fig in figs.items():
        assert isinstance(fig, Figure)
        paths = save_figure(fig, tmp_path, stem, formats=("png", "pdf") if stem == "share" else ("png",))
        assert all(p.stat().st_size > 1000 for p in paths)
        matplotlib.pyplot.close(fig)
    # the waterfall pools strategies beyond `top` into one bar
    fig = plot_decomposition(rws[0], top=2)
    labels_drawn = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert any(t.startswith("comp.: other (") for t in labels_drawn)
    assert labels_drawn[-1].startswith("total")
    matplotlib.pyplot.close(fig)
    with pytest.raises(InputError, match="different base"):
        plot_share_success([rws[0], reweighting(sim.runs, labels, base="rl", treated="sft", n_boot=10,
                                                n_permutations=0)])
    with pytest.raises(InputError, match="split"):
        plot_integration_split(integration(sim.runs, arms=["rl"], n_boot=10))


def test_untrusted_strategy_names_render_as_plain_text(tmp_path):
    assert text_label("$\\frac{1}{0}$ evil") == "\\$\\frac{1}{0}\\$ evil"
    assert text_label(-1) == "outliers" and text_label(4) == "S4"
    assert len(text_label("x" * 500)) == 28
    records = []
    names = ["$\\undefinedmacro{$", "../../etc/passwd", "<script>alert(1)</script>"]
    for arm in ("base", "rl"):
        for q in range(6):
            for s in range(3):
                records.append({"arm": arm, "question_id": f"q{q}", "sample_id": s, "question": "?", "gold": ["a"],
                                "answer": "a", "correct": (q + s) % 2 == 0, "n_rounds": 1,
                                "steps": [make_step(query="x", observation="a")]})
    runs = from_records(records)
    labels = [names[(i // 3) % 3] for i in range(runs.height)]
    rw = reweighting(runs, labels, base="base", treated="rl", n_boot=20, n_permutations=0)
    for fig in (plot_share_success(rw), plot_decomposition(rw)):
        fig.canvas.draw()  # mathtext would raise on the unbalanced `$`
        matplotlib.pyplot.close(fig)


def test_cli_reweighting_and_integration(sim, tmp_path, capsys):
    data = tmp_path / "data"
    sim.write(data)
    inputs = [str(data / "searchr1" / f"{arm}.jsonl") for arm in ("base", "rl", "sft")]
    out = tmp_path / "rw"
    code = main(["reweighting", *inputs, "--labels", str(data / "truth" / "truth.parquet"), "--base", "base",
                 "--out", str(out), "--n-boot", "50", "--n-permutations", "50", "--no-figures"])
    assert code == 0
    table = pl.read_csv(out / "reweighting_summary.csv")
    assert set(table["treated"].to_list()) == {"rl", "sft"}
    assert (out / "rl_vs_base" / "strategies.csv").is_file()
    assert "composition" in capsys.readouterr().out
    code = main(["reweighting", *inputs[:2], "--by-rounds", "--base", "base", "--treated", "rl",
                 "--out", str(tmp_path / "rounds"), "--n-boot", "20", "--n-permutations", "0"])
    assert code == 0 and (tmp_path / "rounds" / "decomposition.png").is_file()
    # bad input: one line and exit status 2
    code = main(["reweighting", *inputs[:2], "--labels", str(data / "truth" / "config.json"), "--base", "base",
                 "--out", str(tmp_path / "x")])
    assert code == 2 and "labels file type" in capsys.readouterr().err
    code = main(["reweighting", *inputs[:2], "--by-rounds", "--base", "nope", "--out", str(tmp_path / "x")])
    assert code == 2
    out2 = tmp_path / "ig"
    code = main(["integration", *[str(data / "openai" / f"{a}.jsonl") for a in ("base", "rl")], "--out", str(out2),
                 "--n-boot", "50", "--no-figures"])
    assert code == 0
    split = pl.read_csv(out2 / "split.csv")
    parts = dict(zip(split["part"], split["estimate"]))
    assert abs(parts["retrieval"] + parts["integration"] + parts["parametric"] + parts["not_retrievable"]
               - parts["total"]) < 1e-12
    assert (out2 / "per_trajectory.parquet").is_file() and not (out2 / "integration_grid.png").exists()


def test_display_names_label_points_by_short_id_with_a_key(sim):
    labels = np.array([{"bridge": 0, "no_search": 1, "whole_question": 2, "verify": 3, "parallel_compare": 4,
                        "reformulate_loop": 5}.get(s, 6) for s in labels_from_table(sim.runs, sim.truth)])
    rw = reweighting(sim.runs, labels, base="base", treated="rl", n_boot=30, n_permutations=0)
    names = {0: "S0: look-bridge-answer", 1: "S1: answer w/o evidence"}
    fig = plot_share_success(rw, names=names)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert any(t.startswith("S0") for t in texts) and not any("look-bridge" in t for t in texts)
    assert any("S0 = look-bridge-answer" in t.get_text() for t in fig.texts)
    matplotlib.pyplot.close(fig)
    fig = plot_decomposition(rw, names=names)
    assert "comp.: S0: look-bridge-answer" in [t.get_text() for t in fig.axes[0].get_yticklabels()]
    matplotlib.pyplot.close(fig)


def test_cli_assigns_a_new_checkpoint_through_a_saved_space(sim, tmp_path):
    from mechanism.analysis.strategy_space import StrategySpace

    # fit on base and rl only, then bring sft in as the "new checkpoint" without refitting
    fitted = sim.runs.filter(pl.col("arm").is_in(["base", "rl"]))
    StrategySpace(embedder="hashing-64", random_state=0, progress=False).fit(fitted).save(tmp_path / "space")
    data = tmp_path / "data"
    sim.write(data)
    inputs = [str(data / "openai" / f"{arm}.jsonl") for arm in ("base", "rl", "sft")]
    out = tmp_path / "rw"
    code = main(["reweighting", *inputs, "--space", str(tmp_path / "space"), "--base", "base", "--out", str(out),
                 "--n-boot", "30", "--n-permutations", "30", "--no-figures"])
    assert code == 0
    table = pl.read_csv(out / "reweighting_summary.csv")
    assert set(table["treated"].to_list()) == {"rl", "sft"}
    assert "far_share" in table["quantity"].to_list()  # coordinates came from the space
    assert (out / "sft_vs_base" / "neighbours.csv").is_file()
