"""Figures of a checkpoint series (:func:`mechanism.track`): shares, the split and PASS@(k,T)
over training.

Every function takes the :class:`~mechanism.analysis.checkpoints.Track` tables (never fits anything) and
returns a matplotlib Figure drawn inside :func:`paper_style`. The x axis is the training step
when every checkpoint has one, else the checkpoints in order, labelled by name. Series of an
ordered quantity (T) take an ordered palette; strategies keep one colour each across figures.
"""
from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib import colormaps
from matplotlib.figure import Figure

from mechanism.analysis.passkt import TRUNCATED
from mechanism.plots.style import STRATEGY_PALETTE, display_name, paper_style

_OTHER = "#BBBBBB"
# beyond the seven Okabe-Ito hues: distinct from them and from the grey of "other strategies"
_OUTLIER = "#000000"
_PART_COLORS = {"total": "#000000", "composition": "#0072B2", "within": "#D55E00"}


def _plain(text: object) -> str:
    return display_name(text, max_length=64)


def _axis(table: pl.DataFrame) -> tuple[list[str], np.ndarray, bool]:
    """Checkpoints in order, their x positions, and whether x is the training step."""
    keys = table.select("checkpoint", "step", "order").unique().sort("order")
    names = keys["checkpoint"].to_list()
    steps = keys["step"].to_list()
    if all(s is not None for s in steps) and len(set(steps)) == len(steps):
        return names, np.asarray(steps, dtype=float), True
    return names, np.arange(len(names), dtype=float), False


def _label_x(ax: plt.Axes, names: list[str], x: np.ndarray, by_step: bool, label: str | None = None) -> None:
    """Ticks and the x-axis label: ``label`` when the user named the series' axis (a series
    of Reflexion trials is not training), else ``training step`` or ``checkpoint``."""
    if by_step:
        ax.set_xticks(x, [f"{v:g}" for v in x])
        ax.set_xlabel(_plain(label) if label else "training step")
    else:
        ax.set_xticks(x, [_plain(n) for n in names], rotation=30 if max(map(len, names)) > 6 else 0,
                      ha="right" if max(map(len, names)) > 6 else "center")
        ax.set_xlabel(_plain(label) if label else "checkpoint")


def strategy_colors(strategies: Sequence[int], *, top: int = 11) -> dict[int, str]:
    """One colour per strategy id, the same in every figure: ids 0..top-1 take the palette
    (:data:`~mechanism.plots.style.STRATEGY_PALETTE`, none of it an arm colour), larger ids grey,
    outliers (-1) black."""
    colors = list(STRATEGY_PALETTE)
    return {s: (_OUTLIER if s == -1 else colors[s] if 0 <= s < min(top, len(colors)) else _OTHER)
            for s in strategies}


def plot_track_shares(shares: pl.DataFrame, *, top: int = 7, ax: plt.Axes | None = None,
                      caption: bool = False, step_label: str | None = None) -> Figure:
    """Strategy shares over training, stacked (each checkpoint's shares sum to 1).

    Parameters
    ----------
    shares
        :attr:`Track.shares` (``checkpoint, step, order, strategy, name, share``).
    top
        Strategies drawn in their own colour, by their largest share in the series; the rest
        are stacked together as "other strategies"; outliers (strategy -1) are their own layer,
        "outliers", as in every table.
    ax
        Axes to draw into (default: a new figure).
    caption
        Add a title.
    """
    names, x, by_step = _axis(shares)
    largest = (shares.group_by("strategy").agg(pl.col("share").max()).sort(["share", "strategy"],
                                                                           descending=[True, False]))
    kept = [s for s in largest["strategy"].to_list() if s != -1][:top]
    kept.sort()
    label = dict(shares.select("strategy", "name").unique("strategy").iter_rows())
    colors = strategy_colors(sorted(set(shares["strategy"].to_list())), top=max(top, 11))
    grid = {s: np.zeros(len(names)) for s in kept}
    other = np.zeros(len(names))
    outliers = np.zeros(len(names))  # one label everywhere: the tables call strategy -1 "outliers" too
    for r in shares.iter_rows(named=True):
        i = names.index(r["checkpoint"])
        if r["strategy"] in grid:
            grid[r["strategy"]][i] = r["share"]
        elif r["strategy"] == -1:
            outliers[i] += r["share"]
        else:
            other[i] += r["share"]
    with paper_style():
        if ax is None:
            fig, ax = plt.subplots(figsize=(8.0, 3.2), constrained_layout=True)
        else:
            fig = ax.figure
        layers = [grid[s] for s in kept] + ([other] if other.any() else []) + ([outliers] if outliers.any() else [])
        labels = ([_plain(label.get(s, f"S{s}")) for s in kept] + (["other strategies"] if other.any() else [])
                  + (["outliers"] if outliers.any() else []))
        cols = [colors[s] for s in kept] + ([_OTHER] if other.any() else []) + (["#000000"] if outliers.any() else [])
        ax.stackplot(x, *layers, labels=labels, colors=cols, alpha=0.9, edgecolor="white", linewidth=0.6)
        for xi in x:
            ax.axvline(xi, color="white", linewidth=0.4, alpha=0.6)
        ax.set_xlim(x[0], x[-1])
        ax.set_ylim(0, 1)
        ax.set_ylabel("share of trajectories")
        ax.grid(False)
        _label_x(ax, names, x, by_step, step_label)
        handles, texts = ax.get_legend_handles_labels()
        ax.legend(handles[::-1], texts[::-1], loc="center left", bbox_to_anchor=(1.01, 0.5), title="strategy")
        if caption:
            ax.set_title("Strategy shares over training")
    return fig


def plot_track_share_panels(shares: pl.DataFrame, *, top: int = 6, ncols: int = 3,
                            caption: bool = False, step_label: str | None = None) -> Figure:
    """Each large strategy's share over training with its bootstrap interval, one panel per
    strategy; panels share both axes so heights compare directly."""
    names, x, by_step = _axis(shares)
    largest = (shares.filter(pl.col("strategy") != -1).group_by("strategy").agg(pl.col("share").max())
               .sort(["share", "strategy"], descending=[True, False]))
    kept = sorted(largest["strategy"].to_list()[:top])
    colors = strategy_colors(sorted(set(shares["strategy"].to_list())), top=max(top, 7))
    nrows = int(np.ceil(len(kept) / ncols))
    with paper_style():
        fig, axes = plt.subplots(nrows, ncols, figsize=(2.3 * ncols + 0.4, 1.9 * nrows + 0.5), squeeze=False,
                                 sharex=True, sharey=True, constrained_layout=True)
        for ax, s in zip(axes.ravel(), kept):
            sub = shares.filter(pl.col("strategy") == s).sort("order")
            xs = np.array([x[names.index(c)] for c in sub["checkpoint"].to_list()])
            ax.plot(xs, sub["share"].to_numpy(), marker="o", markersize=3, color=colors[s])
            if sub["ci_low"].null_count() == 0:
                ax.fill_between(xs, sub["ci_low"].to_numpy(), sub["ci_high"].to_numpy(), color=colors[s],
                                alpha=0.2, linewidth=0)
            ax.set_title(_plain(sub["name"][0]), fontsize=8)
        for ax in axes.ravel()[len(kept):]:
            ax.set_visible(False)
        for ax in axes.ravel()[:len(kept)]:
            ax.set_ylim(bottom=0)
        for ax in axes[-1]:
            _label_x(ax, names, x, by_step, step_label)
        for ax in axes[:, 0]:
            ax.set_ylabel("share")
        if caption:
            fig.suptitle("Strategy shares over training (bands: bootstrap interval over questions)")
    return fig


def plot_track_split(split: pl.DataFrame, *, base: str | None = None, ax: plt.Axes | None = None,
                     caption: bool = False, step_label: str | None = None) -> Figure:
    """The accuracy change against the base checkpoint over training, split into composition
    (reweighting) and within-strategy execution, with bootstrap bands; a line at 0 shows
    whether each part's interval includes it."""
    names, x, by_step = _axis(split)
    with paper_style():
        if ax is None:
            fig, ax = plt.subplots(figsize=(4.6, 3.0), constrained_layout=True)
        else:
            fig = ax.figure
        ax.axhline(0.0, color="#555555", linewidth=0.8, zorder=1)
        for part, style in (("total", "-"), ("composition", "-"), ("within", "--")):
            sub = split.filter(pl.col("part") == part).sort("order")
            xs = np.array([x[names.index(c)] for c in sub["checkpoint"].to_list()])
            ax.plot(xs, sub["estimate"].to_numpy(), marker="o", markersize=3, linestyle=style,
                    color=_PART_COLORS[part], label=part if part != "composition" else "composition (reweighting)",
                    zorder=3)
            lo, hi = sub["ci_low"].to_numpy(), sub["ci_high"].to_numpy()
            ok = ~(np.isnan(lo.astype(float)) | np.isnan(hi.astype(float)))
            if ok.any():
                ax.fill_between(xs[ok], lo[ok].astype(float), hi[ok].astype(float), color=_PART_COLORS[part],
                                alpha=0.15, linewidth=0, zorder=2)
        ax.set_ylabel("accuracy change vs " + _plain(base if base is not None else names[0]))
        _label_x(ax, names, x, by_step, step_label)
        ax.legend(loc="upper left", fontsize=7.5)
        if caption:
            ax.set_title("Accuracy change = composition + within, over training")
    return fig


def plot_track_passkt(passkt: pl.DataFrame, *, k: Sequence[int] | None = None, t: Sequence[int] | None = None,
                      caption: bool = False, step_label: str | None = None) -> Figure:
    """PASS@(k,T) over training: one panel per k (shared axes), one line per round budget T
    in an ordered palette (light = small T), bootstrap bands. When T was counted by
    truncation the legend says so."""
    names, x, by_step = _axis(passkt)
    ks = sorted(set(passkt["k"].to_list())) if k is None else list(k)
    ts = sorted(set(passkt["t"].to_list())) if t is None else list(t)
    truncated = "t_source" in passkt.columns and passkt.height and passkt["t_source"][0] in TRUNCATED
    cmap = colormaps["viridis"]
    shades = {tv: cmap(0.15 + 0.75 * i / max(len(ts) - 1, 1)) for i, tv in enumerate(ts)}
    has_ci = "ci_low" in passkt.columns
    with paper_style():
        fig, axes = plt.subplots(1, len(ks), figsize=(3.0 * len(ks) + 1.4, 2.9), squeeze=False, sharex=True,
                                 sharey=True, constrained_layout=True)
        for ax, kv in zip(axes[0], ks):
            for tv in ts:
                sub = passkt.filter((pl.col("k") == kv) & (pl.col("t") == tv)).sort("order")
                if not sub.height:
                    continue
                xs = np.array([x[names.index(c)] for c in sub["checkpoint"].to_list()])
                ax.plot(xs, sub["pass_at_kt"].to_numpy(), marker="o", markersize=2.8, color=shades[tv],
                        label=f"T = {tv}")
                if has_ci:
                    ax.fill_between(xs, sub["ci_low"].to_numpy(), sub["ci_high"].to_numpy(), color=shades[tv],
                                    alpha=0.15, linewidth=0)
            ax.set_title(f"k = {kv}")
            _label_x(ax, names, x, by_step, step_label)
        axes[0][0].set_ylabel("PASS@(k,T)")
        axes[0][0].set_ylim(0, 1.02)
        axes[0][-1].legend(loc="center left", bbox_to_anchor=(1.02, 0.5),
                           title="T by truncation" if truncated else "T (round cap)")
        if caption:
            fig.suptitle("PASS@(k,T) over training")
    return fig


def plot_track_divergence(divergence: pl.DataFrame, *, base: str | None = None, ax: plt.Axes | None = None,
                          caption: bool = False, color: str = "#0072B2", step_label: str | None = None) -> Figure:
    """Jensen-Shannon divergence (bits) of each checkpoint's strategy distribution from the base one."""
    names, x, by_step = _axis(divergence)
    sub = divergence.sort("order")
    with paper_style():
        if ax is None:
            fig, ax = plt.subplots(figsize=(4.0, 2.6), constrained_layout=True)
        else:
            fig = ax.figure
        ax.plot(x, sub["js_divergence"].to_numpy(), marker="o", markersize=3, color=color)
        if sub["ci_low"].null_count() == 0:
            ax.fill_between(x, sub["ci_low"].to_numpy(), sub["ci_high"].to_numpy(), color=color, alpha=0.2,
                            linewidth=0)
        ax.set_ylim(bottom=0)
        ax.set_ylabel(f"JS divergence from {_plain(base if base is not None else names[0])} (bits)")
        _label_x(ax, names, x, by_step, step_label)
        if caption:
            ax.set_title("Strategy distribution: distance from the base checkpoint")
    return fig
