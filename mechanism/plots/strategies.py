"""Figures of a strategy space: the 2-D strategy map per arm, strategy shares, a strategy table.

Every function takes a fitted :class:`~mechanism.analysis.strategy_space.StrategySpace` (and the runs
to show) and returns a matplotlib Figure built inside :func:`paper_style`; nothing global
changes. Strategy labels shown are derived from move names, never from trajectory text; arm
names are untrusted and drawn with ``$`` escaped (matplotlib would parse ``$...$`` as mathtext,
and a malformed expression makes saving the figure fail).
"""
from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib.figure import Figure

from mechanism.analysis.shares import strategy_shares as question_weighted_shares
from mechanism.analysis.strategy_space import strategy_label
from mechanism.plots.style import STRATEGY_PALETTE, arm_colors, arm_label, display_name, escape_control, paper_style

if TYPE_CHECKING:  # imported for the annotations only: the plots need no fitted-space machinery
    from mechanism.analysis.strategy_space import StrategySpace

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
SHARES_LABEL_CHARS = 64  # a strategy's label beside its bars, at most
_STRATEGY_ID = re.compile(r"^S-?\d+:? ")  # the id a strategy label starts with (strategy_label)


def _colors(n_strategies: int, top: int) -> dict[int, str]:
    out = {s: _COLORS[s] if s < min(top, len(_COLORS)) else _OTHER for s in range(n_strategies)}
    out[-1] = "#000000"
    return out


_MAX_AREA = 1400.0  # pt^2 of the largest marker of any panel: one scale for every panel
_MIN_AREA = 3.0  # pt^2: a rendering holding a sliver of an arm stays visible (drawn at least this)
_LABEL_CHARS = 30  # a strategy's name on the map is cut past this many characters (ellipsis)
_LABEL_SIZE = 6.8


def _shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis (the ``$`` escaping kept whole)."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "\u2026"


def bar_labels(names: Sequence[str], limit: int = SHARES_LABEL_CHARS) -> list[str]:
    """Each name cut to ``limit`` characters (:func:`display_name`); names whose cuts would
    read alike (the strategy id set aside) show their start, then the words where they part.

    Examples
    --------
    >>> a = "S2 cat -> sed_i_or_python_inline -> test (without head) (by task: pytest)"
    >>> bar_labels([a, a.replace("S2", "S3").replace("without", "with"), "S4 grep"], 40)
    ['S2 cat -> sed_i_or_p…(without head) (by…', 'S3 cat -> sed_i_or_p…(with head) (by ta…', 'S4 grep']
    """
    cut = [display_name(n, max_length=limit) for n in names]
    plain = [escape_control(n) for n in names]
    key = [_STRATEGY_ID.sub("", c) for c in cut]
    out = []
    for i, short in enumerate(cut):
        twins = [j for j in range(len(cut)) if j != i and key[j] == key[i]]
        if twins and len(plain[i]) > limit:
            whole = _STRATEGY_ID.sub("", plain[i])
            parted = min(len(os.path.commonprefix([whole, _STRATEGY_ID.sub("", plain[j])])) for j in twins)
            ident = plain[i][:len(plain[i]) - len(whole)]
            head = limit // 2 - len(ident)
            start = max(head, whole.rfind(" ", 0, parted) + 1)
            room = limit - len(ident) - head - 2
            tail = whole[start:start + room] + ("\u2026" if start + room < len(whole) else "")
            short = (ident + whole[:head].rstrip() + "\u2026" + tail).replace("$", r"\$")
        out.append(short)
    return out


def _size_steps(largest: float) -> list[float]:
    """Two or three round shares at or below ``largest`` for the size key (largest first)."""
    steps = [s for s in (0.5, 0.25, 0.1, 0.05, 0.02, 0.01, 0.005, 0.001) if s <= largest * 1.0001]
    if not steps:
        return [largest]
    picked = [steps[0]]
    for s in steps[1:]:
        if s <= picked[-1] / 2.4:
            picked.append(s)
        if len(picked) == 3:
            break
    return picked


def _share_text(share: float) -> str:
    return f"{share:.0%}" if share >= 0.01 else f"{share:.1%}"


def _place_labels(ax: plt.Axes, centres: Sequence[tuple[str, str, float, float]], renderer) -> list:
    """Label each strategy at its centre: ``centres`` is ``(label, short, x, y)`` per strategy,
    largest first. A simple repel: each label takes the nearest free spot on a spiral around
    its centre (inside the axes, clear of the labels placed before it), joined to the centre by
    a leader line when moved; where the full name finds no spot its id (``S3``) is tried, and
    only where that finds none either is the label left to the colour key."""
    fig = ax.figure
    frame = ax.get_window_extent(renderer)
    placed: list[tuple[float, float, float, float]] = []
    texts = []
    pad = 3.0
    for label, short, x, y in centres:
        cx, cy = ax.transData.transform((x, y))
        for text in dict.fromkeys((label, short)):
            probe = ax.text(0, 0, text, fontsize=_LABEL_SIZE)
            box = probe.get_window_extent(renderer)
            probe.remove()
            w, h = box.width + 2 * pad, box.height + 2 * pad
            spot = None
            for radius in np.arange(0.0, 14.0) * h * 0.9:
                angles = [0.0] if radius == 0 else np.deg2rad(np.arange(90, 450, 30))
                for a in angles:
                    px, py = cx + radius * 1.6 * np.cos(a), cy + radius * np.sin(a)
                    b = (px - w / 2, py - h / 2, px + w / 2, py + h / 2)
                    if b[0] < frame.x0 or b[2] > frame.x1 or b[1] < frame.y0 or b[3] > frame.y1:
                        continue
                    if any(min(b[2], o[2]) > max(b[0], o[0]) and min(b[3], o[3]) > max(b[1], o[1]) for o in placed):
                        continue
                    spot = (px, py, b)
                    break
                if spot is not None:
                    break
            if spot is None:
                continue
            px, py, b = spot
            placed.append(b)
            moved = np.hypot(px - cx, py - cy) > h
            scale = 72.0 / fig.dpi
            offset = ((px - cx) * scale, (py - cy) * scale)
            if moved:  # the leader line is an annotation of its own: a label's box is its text alone
                ax.annotate("", (x, y), xytext=offset, textcoords="offset points", zorder=3, annotation_clip=False,
                            arrowprops={"arrowstyle": "-", "lw": 0.5, "color": "#555555", "shrinkA": 0, "shrinkB": 0})
            texts.append(ax.annotate(
                text, (x, y), xytext=offset, textcoords="offset points", ha="center", va="center",
                fontsize=_LABEL_SIZE, zorder=4, annotation_clip=False,
                bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8}))
            break
    return texts


def strategy_map(space: StrategySpace, runs: pl.DataFrame, *, arms: Sequence[str] | None = None, top: int = 8,
                 panel_size: float = 3.2, assigned: pl.DataFrame | None = None, xy: np.ndarray | None = None,
                 described: pl.DataFrame | None = None, caption: bool = False, labels: bool = True) -> Figure:
    """The 2-D strategy map (seeded UMAP of the joined space), one panel per arm.

    Each distinct rendering is one marker whose area is proportional to the share of the arm's
    trajectories it holds, on one scale for every panel (a size key gives round shares; a
    marker under 3 pt\u00b2 is drawn at 3 so that it stays visible). Colour is the strategy (the
    ``top`` largest get colours, the rest grey, outliers black); the other arms' positions are
    drawn faintly behind for reference. Each coloured strategy an arm holds is labelled at its
    heaviest point (the position holding most of its trajectories, the same in every panel), the
    name cut at 30 characters, labels kept apart by a simple repel.

    Parameters
    ----------
    space
        A fitted :class:`~mechanism.analysis.strategy_space.StrategySpace`.
    runs
        Trajectories to place (any arms; assigned without refitting).
    arms
        Panels, in order (default: the arms of ``runs``, sorted).
    top
        How many of the largest strategies get their own colour (at most 8).
    panel_size
        Width and height of one panel, inches.
    assigned, xy
        ``space.assign(runs)`` and ``space.map_coordinates(runs)`` when the caller has them
        (the report layer computes both from one embedding pass).
    described
        ``space.describe()`` when the caller has it.
    caption
        Add a title saying how to read the map (default: none; a paper has its own caption).
    labels
        Label the strategies on the map.

    Returns
    -------
    matplotlib.figure.Figure
        Its layout is fixed once drawn (the labels are placed on the laid-out panels).
    """
    assigned = assigned if assigned is not None else space.assign(runs)
    xy = xy if xy is not None else space.map_coordinates(runs)
    frame = assigned.select("arm", "strategy").with_columns(
        pl.Series("x", np.round(xy[:, 0], 4)), pl.Series("y", np.round(xy[:, 1], 4)))
    points = frame.group_by("arm", "strategy", "x", "y").agg(pl.len().alias("n")).sort("arm", "strategy", "x", "y")
    arms = list(arms) if arms is not None else sorted(frame["arm"].unique().to_list())
    names = _names(described if described is not None else space.describe())
    colors = _colors(space.n_strategies_, top)
    totals = dict(points.group_by("arm").agg(pl.col("n").sum()).iter_rows())
    points = points.with_columns((pl.col("n") / pl.col("arm").replace_strict(totals, return_dtype=pl.Float64))
                                 .alias("share"))
    shown_points = points.filter(pl.col("arm").is_in(arms))
    largest = float(shown_points["share"].max()) if shown_points.height else 1.0
    per_share = _MAX_AREA / max(largest, 1e-12)
    shown = list(range(min(space.n_strategies_, top, len(_COLORS))))
    # a strategy's heaviest point, not its mean: a strategy spread over two places has its mean
    # in the empty space between them
    centres = (frame.filter(pl.col("strategy").is_in(shown)).group_by("strategy", "x", "y").agg(pl.len().alias("n"))
               .sort(["strategy", "n", "x", "y"], descending=[False, True, False, False])
               .group_by("strategy", maintain_order=True).first())
    centre = {s: (x, y) for s, x, y in centres.select("strategy", "x", "y").iter_rows()}
    with paper_style():
        ncols = min(len(arms), 3)
        nrows = int(np.ceil(len(arms) / ncols))
        fig, axes = plt.subplots(nrows, ncols, figsize=(max(panel_size * ncols + 1.6, 6.5), panel_size * nrows + 1.2),
                                 squeeze=False, sharex=True, sharey=True, constrained_layout=True)
        # Drawing order changes anti-aliased pixels where markers overlap: every frame drawn is
        # sorted on all its keys, so one input gives one image.
        everything = points.group_by("x", "y").agg(pl.col("n").sum()).sort("x", "y")
        for ax, arm in zip(axes.ravel(), arms):
            ax.scatter(everything["x"], everything["y"], s=6, color="#E6E6E6", linewidths=0, zorder=1)
            mine = points.filter(pl.col("arm") == arm)
            total = int(mine["n"].sum())
            # biggest markers first so small ones stay visible on top
            mine = mine.sort(["n", "strategy", "x", "y"], descending=[True, False, False, False])
            ax.scatter(mine["x"], mine["y"], s=np.maximum(per_share * mine["share"].to_numpy(), _MIN_AREA),
                       c=[colors.get(s, _OTHER) for s in mine["strategy"].to_list()],
                       alpha=0.75, linewidths=0.4, edgecolors="white", zorder=2)
            ax.set_title(f"{arm_label(arm)} (n = {total:,})")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.grid(False)
            ax.margins(0.12)  # room for the largest markers and for labels at the edge
        for ax in axes.ravel()[len(arms):]:
            ax.set_visible(False)
        for ax in axes[-1, :]:
            ax.set_xlabel("UMAP 1")
        for ax in axes[:, 0]:
            ax.set_ylabel("UMAP 2")
        handles = [plt.Line2D([], [], marker="o", ls="", color=colors[s], markersize=6,
                              label=_shorten(names.get(s, f"S{s}"), 44)) for s in shown]
        if space.n_strategies_ > len(shown):
            rest = space.n_strategies_ - len(shown)
            handles.append(plt.Line2D([], [], marker="o", ls="", color=_OTHER, markersize=6,
                                      label=f"{rest} smaller {'strategy' if rest == 1 else 'strategies'}"))
        if (assigned["strategy"] == -1).any():
            handles.append(plt.Line2D([], [], marker="o", ls="", color="#000000", markersize=6, label="outlier"))
        fig.legend(handles=handles, loc="outside lower center", ncols=min(3, len(handles)),
                   title="strategy (typical moves)", alignment="left")
        sizes = [plt.Line2D([], [], marker="o", ls="", color="#888888", alpha=0.75, markeredgecolor="white",
                            markersize=float(np.sqrt(max(per_share * v, _MIN_AREA))), label=_share_text(v))
                 for v in _size_steps(largest)]
        fig.legend(handles=sizes, loc="outside right center", title="share of\nthe arm",
                   labelspacing=1.6, borderpad=1.0, handletextpad=1.2)
        if caption:
            fig.suptitle("Strategy map: marker area = share of the arm's trajectories", fontsize=9.5)
        if labels and centre:
            fig.canvas.draw()  # lay the panels out, then fix that layout: labels are placed in it
            fig.set_layout_engine("none")
            renderer = fig.canvas.get_renderer()
            for ax, arm in zip(axes.ravel(), arms):
                held = (points.filter((pl.col("arm") == arm) & pl.col("strategy").is_in(shown))
                        .group_by("strategy").agg(pl.col("n").sum()).sort(["n", "strategy"], descending=[True, False]))
                _place_labels(ax, [(_shorten(names.get(s, f"S{s}"), _LABEL_CHARS), f"S{s}", *centre[s])
                                   for s in held["strategy"].to_list()], renderer)
    return fig


def plot_strategy_shares(space: StrategySpace, runs: pl.DataFrame, *, arms: Sequence[str] | None = None,
                         top: int = 10, assigned: pl.DataFrame | None = None, shares: pl.DataFrame | None = None,
                         described: pl.DataFrame | None = None, colors: dict[str, str] | None = None,
                         ax: plt.Axes | None = None, caption: bool = False) -> Figure:
    """Share of each strategy per arm (grouped horizontal bars), questions weighted equally
    within an arm (:func:`mechanism.analysis.shares.strategy_shares`), the ``top`` largest strategies.

    Parameters
    ----------
    space
        A fitted :class:`~mechanism.analysis.strategy_space.StrategySpace`.
    runs
        Trajectories to show (assigned without refitting).
    arms
        Bars per strategy, in order (default: every arm, sorted).
    top
        How many of the largest strategies to show.
    assigned
        ``space.assign(runs)`` when the caller has it.
    shares
        ``arm, strategy, share`` (:func:`mechanism.analysis.shares.strategy_shares` of ``assigned``)
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
        assigned = assigned if assigned is not None else space.assign(runs)
        shares = question_weighted_shares(assigned, ci=None)
    arms = list(arms) if arms is not None else sorted(shares["arm"].unique().to_list())
    desc = described if described is not None else space.describe()
    keep = [s for s in desc["strategy"].to_list() if s >= 0][:top]
    names = _names(desc)
    colors = {**arm_colors(arms), **(colors or {})}
    with paper_style():
        own_figure = ax is None
        if ax is None:
            fig, ax = plt.subplots(figsize=(6.2, 0.42 * len(keep) + 0.5 + 0.25 * len(arms)), layout="constrained")
        else:
            fig = ax.figure
        height = 0.8 / max(len(arms), 1)
        for i, arm in enumerate(arms):
            sub = dict(shares.filter(pl.col("arm") == arm).select("strategy", "share").iter_rows())
            vals = [sub.get(s, 0.0) for s in keep]
            ax.barh(np.arange(len(keep)) + (i - (len(arms) - 1) / 2) * height, vals, height=height,
                    color=colors[arm], label=arm_label(arm))
        # a name that says which of many tools a strategy's calls stand for runs long: bounded,
        # so the bars keep their room (the full name is in the table beside the figure)
        ax.set_yticks(np.arange(len(keep)), bar_labels([names[s] for s in keep]))
        ax.invert_yaxis()
        ax.set_xlabel("share of the arm\n(questions weighted equally)")  # one line overran long labels' axes
        ax.grid(axis="y", visible=False)
        if own_figure:  # below the axes: inside, it covers the bars of the strategy under it
            fig.legend(*ax.get_legend_handles_labels(), title="arm", loc="outside lower center", frameon=False)
        else:
            ax.legend(title="arm", loc="best")
        if caption:
            ax.set_title("Strategy shares per arm")
    return fig


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
        label = strategy_label(r["strategy"], r["typical_moves"], r["typical_member"], name=r.get("name"))
        rows.append([label, f"{r['size']:,}", f"{r['share']:.1%}", *rate, ", ".join(r["keywords"][:3])])
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
