"""Strategy figures: built, saved as PNG and PDF, nothing global changed."""
from __future__ import annotations

import matplotlib
import pytest

from mechanism.plots.strategies import plot_strategy_shares, strategy_label, strategy_map, strategy_table
from mechanism.plots.style import close, save_figure
from mechanism.simulation import simulate
from mechanism.strategy_space import StrategySpace


@pytest.fixture(scope="module")
def fitted():
    runs = simulate(n_questions=20, n_samples=6, random_state=0, progress=False).runs
    return runs, StrategySpace(embedder="hashing-64", progress=False).fit(runs)


def test_figures_save_and_leave_rcparams_alone(tmp_path, fitted):
    runs, space = fitted
    before = dict(matplotlib.rcParams)
    for stem, fig in (("map", strategy_map(space, runs)), ("shares", plot_strategy_shares(space, runs)),
                      ("table", strategy_table(space))):
        paths = save_figure(fig, tmp_path, stem)
        assert [p.suffix for p in paths] == [".png", ".pdf"] and all(p.stat().st_size > 1000 for p in paths)
        close(fig)
    assert dict(matplotlib.rcParams) == before


def test_map_has_one_panel_per_arm(fitted):
    runs, space = fitted
    fig = strategy_map(space, runs, arms=["rl", "base"])
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert titles[0].startswith("rl") and titles[1].startswith("base")
    close(fig)


def test_labels():
    assert strategy_label(3, "first_lookup > repeat > repeat > repeat > answer_without_evidence",
                          "1. search first_lookup: whole question [Q] | 2. search repeat: whole question [Q]") \
        == "S3 ask whole › repeat×3"
    assert strategy_label(0, "first_lookup > answer_with_evidence") == "S0 search once"
    assert strategy_label(2, "no_answer") == "S2 no answer"


def test_untrusted_arm_names_are_drawn_literally(tmp_path, small_pair):
    """An arm name holding `$...$` is text, not mathtext: a malformed expression must not
    make saving the figure fail."""
    import polars as pl

    runs = small_pair.runs
    evil = r"$\evil{$"
    runs = runs.with_columns(pl.when(pl.col("arm") == "rl").then(pl.lit(evil)).otherwise(pl.col("arm")).alias("arm"))
    space = StrategySpace(embedder="hashing-32", progress=False).fit(runs)
    for stem, fig in (("map", strategy_map(space, runs)), ("shares", plot_strategy_shares(space, runs)),
                      ("table", strategy_table(space))):
        save_figure(fig, tmp_path, stem)
        close(fig)
