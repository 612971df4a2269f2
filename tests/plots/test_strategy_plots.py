"""Strategy figures: built, saved as PNG and PDF, nothing global changed."""
from __future__ import annotations

import matplotlib
import polars as pl
import pytest

from mechanism.analysis.strategy_space import StrategySpace
from mechanism.datasets.simulation import simulate
from mechanism.plots.strategies import plot_strategy_shares, strategy_label, strategy_map, strategy_table
from mechanism.plots.style import close, save_figure


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


def test_map_labels_strategies_without_overlap_and_sizes_markers_by_share(fitted):
    """Each coloured strategy an arm holds is named on its panel, inside it, no two texts of
    the figure overlapping; a marker's area is proportional to its share of the arm, on one
    scale for every panel, with a size key; a long arm name keeps the layout."""
    import numpy as np
    import polars as pl
    from matplotlib.text import Annotation

    from mechanism.plots.style import text_overlaps

    runs, space = fitted
    long = "claude3haiku_react_reflexion_with_a_much_longer_configuration_name"
    runs = runs.with_columns(pl.when(pl.col("arm") == "rl").then(pl.lit(long)).otherwise(pl.col("arm")).alias("arm"))
    fig = strategy_map(space, runs)
    assert text_overlaps(fig) == []
    renderer = fig.canvas.get_renderer()
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == 3 and all(len(ax.get_title()) < 45 for ax in panels)
    for ax in panels:
        labels = [t for t in ax.texts if isinstance(t, Annotation) and t.get_text()]
        assert labels, ax.get_title()
        frame = ax.get_window_extent(renderer)
        for t in labels:
            box = t.get_window_extent(renderer)
            assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            assert len(t.get_text()) <= 30 and t.get_text().startswith("S")
    # area / share is one constant over every panel's markers (a sliver drawn at the 3 pt^2 floor)
    xy = space.map_coordinates(runs)
    points = (space.assign(runs).select("arm").with_columns(pl.Series("x", np.round(xy[:, 0], 4)),
                                                            pl.Series("y", np.round(xy[:, 1], 4)))
              .group_by("arm", "x", "y").len()
              .with_columns((pl.col("len") / pl.col("len").sum().over("arm")).alias("share")))
    top = points["share"].max()
    for ax, arm in zip(panels, sorted(runs["arm"].unique().to_list())):
        expected = np.maximum(1400.0 * points.filter(pl.col("arm") == arm)["share"].to_numpy() / top, 3.0)
        assert np.allclose(np.sort(ax.collections[1].get_sizes()), np.sort(expected))
    keys = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert any(k.endswith("%") for k in keys)
    close(fig)


def test_long_strategy_names_keep_the_shares_figure_laid_out(fitted):
    """A name that lists the tools a strategy's calls stand for runs long: beside the bars it
    is cut, so constrained layout still has room (it gave up, with a warning, on such names)."""
    import warnings

    from mechanism.plots.strategies import SHARES_LABEL_CHARS

    runs, space = fitted
    described = space.describe().with_columns(
        name=pl.format("task_call_1 -> task_call_2 (mostly task_call_1 -> task_call_2) (by task: {} or 11 more)",
                       pl.col("strategy")))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # constrained layout's "axes sizes collapsed" fails here
        fig = plot_strategy_shares(space, runs, described=described)
        fig.canvas.draw()
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels and all(len(t) <= SHARES_LABEL_CHARS and "…" in t for t in labels)
    # the names part at their end ("by task: 3 or 11 more"): cut there, not at the end, so each
    # label still says which strategy it is
    assert len({t.split(" ", 1)[1] for t in labels}) == len(labels), labels
    assert fig.legends and not fig.axes[0].get_legend()  # below the axes, not over a strategy's bars
    close(fig)
