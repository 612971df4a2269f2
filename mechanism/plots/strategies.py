"""Figures of a strategy space: the 2-D strategy map per arm, strategy shares, a strategy table.

Every function takes a fitted :class:`~mechanism.strategy_space.StrategySpace` (and the runs
to show) and returns a matplotlib Figure built inside :func:`paper_style`; nothing global
changes. Strategy labels shown are derived from move names, never from trajectory text; arm
names are untrusted and drawn with ``$`` escaped (matplotlib would parse ``$...$`` as mathtext,
and a malformed expression makes saving the figure fail).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib.figure import Figure

from mechanism.deprecation import deprecated
from mechanism.plots.style import STRATEGY_PALETTE, arm_colors, arm_label, display_name, paper_style
from mechanism.strategy_space import strategy_label

if TYPE_CHECKING:  # imported for the annotations only: the plots need no fitted-space machinery
    from mechanism.strategy_space import StrategySpace

_OTHER = "#BBBBBB"


def _plain(name: object) -> str:
    """An arm name drawn literally and briefly: ``$`` escaped so that matplotlib parses no
    mathtext, long names cut (:func:`~mechanism.plots.style.display_name`)."""
    return display_name(name)


def _names(described: pl.DataFrame) -> dict[int, str]:
    """Strategy id -> :func:`strategy_label`, from ``StrategySpace.describe()``."""
    return {r["strategy"]: strategy_label(r["strategy"], r["typical_moves"], r["typical_member"], name=r.get("name"))
            for r in described.iter_rows(named=True)}


_COLORS = list(STRATEGY_PALETTE)  # never an arm colour; black marks outliers


def _colors(n_strategies: int, top: int) -> dict[int, str]:
    out = {s: _COLORS[s] if s < min(top, len(_COLORS)) else _OTHER for s in range(n_strategies)}
    out[-1] = "#000000"
    return out


def strategy_map(space: StrategySpace, runs: pl.DataFrame, *, arms: Sequence[str] | None = None, top: int = 8,
                 panel_size: float = 2.6, assigned: pl.DataFrame | None = None, xy: np.ndarray | None = None,
                 described: pl.DataFrame | None = None, caption: bool = False) -> Figure:
    """The 2-D strategy map (seeded UMAP of the joined space), one panel per arm.

    Each distinct rendering is one marker, its area proportional to how many of the arm's
    trajectories it holds; colour is the strategy (the ``top`` largest get colours, the rest
    grey, outliers black); the other arms' positions are drawn faintly behind for reference.

    Parameters
    ----------
    space
        A fitted :class:`~mechanism.strategy_space.StrategySpace`.
    runs
        Trajectories to place (any arms; assigned without refitting).
    arms
        Panels, in order (default: the arms of ``runs``, sorted).
    top
        How many of the largest strategies get their own colour (at most 8).
    assigned, xy
        ``space.assign(runs)`` and ``space.map_coordinates(runs)`` when the caller has them
        (the report layer computes both from one embedding pass).
    described
        ``space.describe()`` when the caller has it.
    caption
        Add a title saying how to read the map (default: none; a paper has its own caption).
    """
    assigned = assigned if assigned is not None else space.assign(runs)
    xy = xy if xy is not None else space.map_coordinates(runs)
    frame = assigned.select("arm", "strategy").with_columns(
        pl.Series("x", np.round(xy[:, 0], 4)), pl.Series("y", np.round(xy[:, 1], 4)))
    points = frame.group_by("arm", "strategy", "x", "y").agg(pl.len().alias("n")).sort("arm", "strategy", "x", "y")
    arms = list(arms) if arms is not None else sorted(frame["arm"].unique().to_list())
    names = _names(described if described is not None else space.describe())
    colors = _colors(space.n_strategies_, top)
    with paper_style():
        ncols = min(len(arms), 3)
        nrows = int(np.ceil(len(arms) / ncols))
        fig, axes = plt.subplots(nrows, ncols, figsize=(panel_size * ncols + 1.9, panel_size * nrows + 0.3),
                                 squeeze=False, sharex=True, sharey=True, constrained_layout=True)
        # Drawing order changes anti-aliased pixels where markers overlap: every frame drawn is
        # sorted on all its keys, so one input gives one image.
        everything = points.group_by("x", "y").agg(pl.col("n").sum()).sort("x", "y")
        for ax, arm in zip(axes.ravel(), arms):
            ax.scatter(everything["x"], everything["y"], s=6, color="#E6E6E6", linewidths=0, zorder=1)
            mine = points.filter(pl.col("arm") == arm)
            total = max(int(mine["n"].sum()), 1)
            # biggest markers first so small ones stay visible on top
            mine = mine.sort(["n", "strategy", "x", "y"], descending=[True, False, False, False])
            ax.scatter(mine["x"], mine["y"], s=8 + 900 * mine["n"].to_numpy() / total,
                       c=[colors.get(s, _OTHER) for s in mine["strategy"].to_list()],
                       alpha=0.75, linewidths=0.4, edgecolors="white", zorder=2)
            ax.set_title(f"{arm_label(arm)} (n = {total:,})")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.grid(False)
        for ax in axes.ravel()[len(arms):]:
            ax.set_visible(False)
        for ax in axes[-1, :]:
            ax.set_xlabel("UMAP 1")
        for ax in axes[:, 0]:
            ax.set_ylabel("UMAP 2")
        shown = list(range(min(space.n_strategies_, top, len(_COLORS))))
        handles = [plt.Line2D([], [], marker="o", ls="", color=colors[s], label=names.get(s, f"S{s}"), markersize=6)
                   for s in shown]
        if space.n_strategies_ > len(shown):
            rest = space.n_strategies_ - len(shown)
            handles.append(plt.Line2D([], [], marker="o", ls="", color=_OTHER, markersize=6,
                                      label=f"{rest} smaller {'strategy' if rest == 1 else 'strategies'}"))
        if (assigned["strategy"] == -1).any():
            handles.append(plt.Line2D([], [], marker="o", ls="", color="#000000", markersize=6, label="outlier"))
        # beside one or two panels a key of long names leaves the axes no width: it goes below them
        below = ncols < 3
        if below:
            fig.set_size_inches(max(panel_size * ncols + 1.9, 6.5),
                                panel_size * nrows + 0.7 + 0.2 * len(handles))
        fig.legend(handles=handles, loc="outside lower center" if below else "outside right center",
                   title="strategy (typical moves)", alignment="left")
        if caption:
            fig.suptitle("Strategy map: marker area = share of the arm's trajectories", fontsize=9.5)
    return fig


def plot_strategy_shares(space: StrategySpace, runs: pl.DataFrame, *, arms: Sequence[str] | None = None,
                         top: int = 10, assigned: pl.DataFrame | None = None, shares: pl.DataFrame | None = None,
                         described: pl.DataFrame | None = None, colors: dict[str, str] | None = None,
                         ax: plt.Axes | None = None, caption: bool = False) -> Figure:
    """Share of each strategy per arm (grouped horizontal bars), questions weighted equally
    within an arm (:func:`mechanism.shares.strategy_shares`), the ``top`` largest strategies.

    Parameters
    ----------
    space
        A fitted :class:`~mechanism.strategy_space.StrategySpace`.
    runs
        Trajectories to show (assigned without refitting).
    arms
        Bars per strategy, in order (default: every arm, sorted).
    top
        How many of the largest strategies to show.
    assigned
        ``space.assign(runs)`` when the caller has it.
    shares
        ``arm, strategy, share`` (:func:`mechanism.shares.strategy_shares` of ``assigned``)
        when the caller has it; otherwise computed here without intervals.
    described
        ``space.describe()`` when the caller has it.
    colors
        Arm -> colour (default :func:`~mechanism.plots.style.arm_colors`).
    ax
        Draw into an existing axes.
    caption
        Add a title.
    """
    if shares is None:
        from mechanism.shares import strategy_shares as question_weighted_shares

        assigned = assigned if assigned is not None else space.assign(runs)
        shares = question_weighted_shares(assigned, ci=None)
    arms = list(arms) if arms is not None else sorted(shares["arm"].unique().to_list())
    desc = described if described is not None else space.describe()
    keep = [s for s in desc["strategy"].to_list() if s >= 0][:top]
    names = _names(desc)
    colors = {**arm_colors(arms), **(colors or {})}
    with paper_style():
        if ax is None:
            fig, ax = plt.subplots(figsize=(6.2, 0.42 * len(keep) + 1.0), constrained_layout=True)
        else:
            fig = ax.figure
        height = 0.8 / max(len(arms), 1)
        for i, arm in enumerate(arms):
            sub = dict(shares.filter(pl.col("arm") == arm).select("strategy", "share").iter_rows())
            vals = [sub.get(s, 0.0) for s in keep]
            ax.barh(np.arange(len(keep)) + (i - (len(arms) - 1) / 2) * height, vals, height=height,
                    color=colors[arm], label=arm_label(arm))
        ax.set_yticks(np.arange(len(keep)), [names[s] for s in keep])
        ax.invert_yaxis()
        ax.set_xlabel("share of the arm (questions weighted equally)")
        ax.grid(axis="y", visible=False)
        ax.legend(title="arm", loc="lower right")
        if caption:
            ax.set_title("Strategy shares per arm")
    return fig


def strategy_shares(*args, **kwargs) -> Figure:
    """Deprecated name of :func:`plot_strategy_shares`."""
    deprecated("`mechanism.plots.strategy_shares`", "use `mechanism.plots.plot_strategy_shares`")
    return plot_strategy_shares(*args, **kwargs)


def strategy_table(space: StrategySpace, *, top: int = 12, described: pl.DataFrame | None = None,
                   caption: bool = False) -> Figure:
    """The strategies as a table figure: size, share, success rate per arm (with its n), keywords;
    ``described`` is ``space.describe()`` when the caller has it."""
    desc = (described if described is not None else space.describe()).filter(pl.col("strategy") >= 0).head(top)
    arms = [c[len("n["):-1] for c in desc.columns if c.startswith("n[")]
    header = ["strategy", "n", "share", *[f"success\n{_plain(a)}" for a in arms], "keywords"]
    rows = []
    for r in desc.iter_rows(named=True):
        rate = [("–" if r[f"success_rate[{a}]"] is None
                 else f"{r[f'success_rate[{a}]']:.2f} (n={r[f'n[{a}]']:,})") for a in arms]
        rows.append([strategy_label(r["strategy"], r["typical_moves"], r["typical_member"], name=r.get("name")), f"{r['size']:,}", f"{r['share']:.1%}",
                     *rate, ", ".join(r["keywords"][:3])])
    with paper_style():
        fig, ax = plt.subplots(figsize=(3.0 + 0.9 * len(header), 0.24 * len(rows) + 0.6),
                               constrained_layout=True)
        ax.axis("off")
        table = ax.table(cellText=rows, colLabels=header, loc="center", cellLoc="left", colLoc="left")
        table.auto_set_font_size(False)
        table.set_fontsize(7.5)
        table.auto_set_column_width(list(range(len(header))))
        for (row, _), cell in table.get_celld().items():
            cell.set_linewidth(0.3)
            if row == 0:
                cell.set_text_props(weight="bold")
                cell.set_height(cell.get_height() * 1.6)
        if caption:
            ax.set_title("Strategies (c-TF-IDF keywords over masked renderings)")
    return fig
