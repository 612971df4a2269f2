"""Figures for information integration: the retrieved x correct 2x2 per arm, the split of
accuracy differences into retrieval, integration and parametric parts, and, with strategy
labels, the shift: did the treated arm move toward strategies that use what they retrieve,
with the nested split of the accuracy change. Functions return Figures; nothing is shown or
saved here.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from mechanism.analysis.compare import OUTLIER
from mechanism.analysis.information import Integration
from mechanism.core.errors import InputError
from mechanism.plots.reweighting import text_label
from mechanism.plots.style import SEQUENTIAL_CMAP, arm_colors, arm_label, paper_style


def plot_integration_grid(result: Integration, *, title: str | None = None) -> Figure:
    """One 2x2 panel per arm: rows retrieved / not retrieved, columns correct / wrong.

    Cells hold the share of the arm's trajectories (colour, one scale for all panels; questions
    weigh equally unless the result pooled trajectories) and the count; the panel title gives
    the retrieval, integration and parametric rates.
    """
    per = result.per_trajectory
    arms = list(result.arms)
    if per.height == 0:
        raise InputError("no trajectories to plot", field="result")
    rates = {r["arm"]: r for r in result.per_arm.iter_rows(named=True)}
    with paper_style():
        fig, axes = plt.subplots(1, len(arms), figsize=(0.9 + 2.35 * len(arms), 2.9), squeeze=False)
        image = None
        for ax, arm in zip(axes[0], arms):
            sub = per.filter(pl.col("arm") == arm)
            ret = sub["retrieved"].to_numpy()
            cor = sub["correct"].to_numpy()
            counts = np.array([[np.sum(ret & cor), np.sum(ret & ~cor)],
                               [np.sum(~ret & cor), np.sum(~ret & ~cor)]], dtype=float)
            # shares weigh questions as the result's rates do (each trajectory 1 / its question's samples)
            w = (1.0 / sub.select(pl.len().over("question_id"))["len"].to_numpy()
                 if getattr(result, "weighting", "question") == "question" else np.ones(sub.height))
            mass = np.array([[np.sum(w * (ret & cor)), np.sum(w * (ret & ~cor))],
                             [np.sum(w * (~ret & cor)), np.sum(w * (~ret & ~cor))]])
            shares = mass / max(mass.sum(), 1e-300)
            image = ax.imshow(shares, cmap=SEQUENTIAL_CMAP, vmin=0.0, vmax=1.0)
            for (i, j), share in np.ndenumerate(shares):
                ax.text(j, i, f"{100 * share:.1f}%\n(n={int(counts[i, j])})", ha="center", va="center",
                        fontsize=7.5, color="white" if share < 0.6 else "black")
            ax.set_xticks([0, 1], ["correct", "wrong"])
            ax.set_yticks([0, 1], ["gold\nretrieved", "not\nretrieved"] if ax is axes[0, 0] else ["", ""])
            ax.tick_params(length=0)
            ax.grid(False)
            for spine in ax.spines.values():
                spine.set_visible(False)
            r = rates[arm]
            ax.set_title(f"{arm_label(arm)}  (acc {r['accuracy']:.2f})\n"
                         f"R={_fmt(r['retrieval_rate'])}  I={_fmt(r['integration_rate'])}  "
                         f"P={_fmt(r['parametric_rate'])}", fontsize=8)
        fig.colorbar(image, ax=axes[0].tolist(), fraction=0.025, pad=0.03, label="share of trajectories")
        if title:
            fig.suptitle(title, y=1.05)
        fig.text(0.45, 0.02, "R = P(gold in an observation), I = P(correct | retrieved), "
                 "P = P(correct | not retrieved)", ha="center", va="top", fontsize=7.5, color="0.35")
    return fig


def _fmt(value: float | None) -> str:
    return "n/a" if value is None or not np.isfinite(value) else f"{value:.2f}"


def plot_integration_split(result: Integration, *, title: str | None = None, colors: dict[str, str] | None = None,
                           caption: bool = False) -> Figure:
    """Accuracy difference of each arm against the base, split into retrieval, integration and
    parametric parts (exact, Kitagawa), with bootstrap whiskers; ``colors`` maps arms to
    colours, ``caption`` adds a note under the axes."""
    if result.split is None or result.split.height == 0:
        raise InputError("the result holds no arm to split against the base; pass two or more arms",
                         field="result")
    split = result.split
    treated = list(dict.fromkeys(split["treated"].to_list()))
    parts = ["retrieval", "integration", "parametric", "not_retrievable", "total"]
    colors = {**arm_colors([result.base, *treated]), **(colors or {})}
    with paper_style():
        # at least 1.1 inch per part, so the two-line part names never touch
        fig, ax = plt.subplots(figsize=(max(5.0, 1.6 + 1.3 * len(treated) * 1.2), 3.0))
        width = 0.8 / len(treated)
        for k, arm in enumerate(treated):
            sub = split.filter(pl.col("treated") == arm)
            est = np.array([_num(sub.filter(pl.col("part") == p)["estimate"][0]) for p in parts])
            lo = np.array([_num(sub.filter(pl.col("part") == p)["ci_low"][0]) for p in parts])
            hi = np.array([_num(sub.filter(pl.col("part") == p)["ci_high"][0]) for p in parts])
            x = np.arange(len(parts)) + (k - (len(treated) - 1) / 2) * width
            ax.bar(x, est, width=width * 0.92, color=colors[arm], label=f"{arm_label(arm)} \u2212 "
                   f"{text_label(result.base)}", zorder=3)
            yerr = np.vstack([np.clip(est - lo, 0, None), np.clip(hi - est, 0, None)])
            ok = np.isfinite(yerr).all(axis=0)
            ax.errorbar(x[ok], est[ok], yerr=yerr[:, ok], fmt="none", ecolor="0.1", elinewidth=0.8,
                        capsize=2, zorder=4)
        ax.axhline(0, color="0.2", lw=0.7)
        ax.set_xticks(np.arange(len(parts)), ["retrieval\n(find it)", "integration\n(use it)",
                                              "parametric\n(without it)", "not retrievable\n(by text)",
                                              "total\n\u0394accuracy"])
        ax.axvline(3.5, color="0.7", lw=0.6, ls="--")
        ax.yaxis.set_major_locator(MaxNLocator(nbins=6))
        ax.set_ylabel("contribution to accuracy difference")
        ax.grid(axis="x", visible=False)
        ax.legend(loc="best")
        if title:
            ax.set_title(title)
        if caption:
            fig.text(0.5, -0.02, "retrieval + integration + parametric + not retrievable = total (exact); "
                     "whiskers: bootstrap intervals over questions", ha="center", va="top", fontsize=7.5, color="0.35")
        fig.tight_layout()
    return fig



def plot_integration_shift(result: Integration, *, treated: str | Sequence[str] | None = None,
                           names: Mapping[Any, str] | None = None, title: str | None = None,
                           label_top: int = 10) -> Figure:
    """Did the treated arm move toward strategies that use what they retrieve? One row per
    treated arm: the strategies and the nested split of the accuracy change.

    Left: one point per strategy at x = its integration rate in the base arm,
    P(correct | gold retrieved), and y = its share change (treated - base), with bootstrap
    whiskers on both; marker area follows the base share; the dashed line is the base arm's
    overall integration rate (strategies right of it are "above average"). Strategies the base
    arm never retrieved with have no integration rate and sit in a strip at the left.
    Right: total = composition (mass moved between strategies) + within strategies, within
    split into retrieval, integration and parametric parts, with intervals against 0.

    Parameters
    ----------
    result
        An :class:`~mechanism.analysis.information.Integration` computed with ``labels``.
    treated
        Arm or arms to draw (default: every compared arm).
    names
        Display names of strategy ids (e.g. from ``StrategySpace.describe()``).
    title
        Figure title.
    label_top
        Name at most this many strategies per panel (those whose share moved most).
    """
    if result.shift is None or result.strategy_shift is None:
        raise InputError("the result holds no strategy shift; compute it with `labels`", field="result")
    compared = list(dict.fromkeys(result.shift["treated"].to_list()))
    arms = compared if treated is None else ([treated] if isinstance(treated, str) else list(treated))
    for arm in arms:
        if arm not in compared:
            raise InputError(f"arm {arm!r} was not compared with {result.base!r} (compared: {compared})",
                             field="treated")
    colors = arm_colors([result.base, *compared])
    with paper_style():
        fig, axes = plt.subplots(len(arms), 2, figsize=(9.2, 3.6 * len(arms)), squeeze=False,
                                 gridspec_kw={"width_ratios": [1.35, 1.0]})
        for row, arm in enumerate(arms):
            table = result.strategy_shift.filter(pl.col("treated") == arm)
            shift = {r["quantity"]: r for r in result.shift.filter(pl.col("treated") == arm).iter_rows(named=True)}
            _draw_strategies(axes[row, 0], table, shift, result.base, arm, colors[arm], names, label_top)
            _draw_nested_split(axes[row, 1], shift, colors[arm], result.base, arm)
        handles = [Line2D([], [], marker="o", linestyle="", markerfacecolor="0.5", markeredgecolor="0.1",
                          markersize=7, label="base integration rate above the base average"),
                   Line2D([], [], marker="o", linestyle="", markerfacecolor="white", markeredgecolor="0.4",
                          markersize=7, label="at or below it, or no rate"),
                   Line2D([], [], marker="o", linestyle="", markerfacecolor="white", markeredgecolor="0.4",
                          markersize=3.5, label="marker area ~ base share")]
        # rows apart by more than the upright tick labels of the split so that no title meets them
        fig.tight_layout(rect=(0, 0.07, 1, 0.96 if title else 1.0), h_pad=2.5, w_pad=2.0)
        fig.legend(handles=handles, loc="lower center", ncol=3, bbox_to_anchor=(0.5, 0.025), fontsize=7.5)
        if title:
            fig.suptitle(title)
        fig.text(0.5, 0.0, "whiskers: bootstrap intervals over questions (questions weigh equally within an arm); "
                 "per-strategy ones simultaneous over the strategies (max-|t|), the split's at the nominal level\n"
                 "composition + within = total and retrieval + integration + parametric + not retrievable = within, "
                 "exactly",
                 ha="center", va="bottom",
                 fontsize=7, color="0.35")
    return fig


def _draw_strategies(ax: Any, table: pl.DataFrame, shift: dict, base: str, arm: str, color: str,
                     names: Mapping[Any, str] | None, label_top: int) -> None:
    def col(name: str) -> np.ndarray:
        return table[name].fill_null(np.nan).to_numpy().astype(float)

    x, y, share = col("integration_rate_base"), col("share_change"), col("share_base")
    xlo, xhi = col("integration_rate_base_ci_low"), col("integration_rate_base_ci_high")
    ylo, yhi = col("share_change_ci_low"), col("share_change_ci_high")
    strategies = table["strategy"].to_list()
    outlier = np.array([isinstance(s, (int, np.integer)) and int(s) == OUTLIER for s in strategies])
    no_rate = ~np.isfinite(x)
    strip = -0.2  # where strategies without a base integration rate are drawn, apart from the 0.0 tick
    xs = np.where(no_rate, strip, x)
    size = 25 + 1400 * np.nan_to_num(share)
    ok = ~outlier
    xerr = np.vstack([np.clip(x - xlo, 0, None), np.clip(xhi - x, 0, None)])
    yerr = np.vstack([np.clip(y - ylo, 0, None), np.clip(yhi - y, 0, None)])
    has_x = ok & ~no_rate & np.isfinite(xerr).all(axis=0)
    ax.errorbar(xs[has_x], y[has_x], xerr=xerr[:, has_x], fmt="none", ecolor="0.6", elinewidth=0.6, zorder=2)
    has_y = ok & np.isfinite(yerr).all(axis=0)
    ax.errorbar(xs[has_y], y[has_y], yerr=yerr[:, has_y], fmt="none", ecolor="0.15", elinewidth=0.9,
                capsize=2, zorder=3)
    above = table["above_average"].to_numpy()
    ax.scatter(xs[ok & above], y[ok & above], s=size[ok & above], color=color, alpha=0.75,
               edgecolors="0.1", linewidths=0.6, zorder=4)
    rest = ok & ~above
    ax.scatter(xs[rest], y[rest], s=size[rest], facecolors="white", edgecolors=color, linewidths=1.2,
               zorder=4)
    ax.axhline(0, color="0.2", lw=0.7, zorder=1)
    mean = shift["base_integration_rate"]["estimate"]
    if mean is not None and np.isfinite(mean):
        ax.axvline(mean, color="0.3", lw=0.8, ls="--", zorder=1)
        ax.text(mean, 0.01, f" base average {mean:.2f}", transform=ax.get_xaxis_transform(), fontsize=7,
                va="bottom", ha="left", color="0.3")
    if no_rate[ok].any():
        ax.axvspan(strip - 0.06, strip + 0.06, color="0.92", zorder=0)
    # name the strategies whose share moved most; a strategy too small to see is left unnamed
    order = np.argsort(-np.abs(np.nan_to_num(y)), kind="stable")
    visible = ok & ((np.abs(np.nan_to_num(y)) >= 0.005) | (np.nan_to_num(share) >= 0.01))
    chosen = [i for i in order if visible[i]][:label_top]
    lo = min(strip - 0.09, np.nanmin(np.r_[xlo[~no_rate], x[~no_rate], 1.0]) - 0.05) if no_rate.any() else \
        np.nanmin(np.r_[xlo, x, 1.0]) - 0.05
    ax.set_xlim(lo, 1.05)
    _place_labels(ax, [(xs[i], y[i], text_label(strategies[i], names=names, max_length=24)) for i in chosen])
    ticks = [t for t in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0) if t >= lo]
    ax.set_xticks(([strip] if no_rate[ok].any() else []) + ticks,
                  (["no rate\nin base"] if no_rate[ok].any() else []) + [f"{t:.1f}" for t in ticks])
    ax.set_xlabel(f"integration rate in {arm_label(base)}: P(correct | gold retrieved)")
    # one line per arm where the two would not fit beside the axis (long arm names collapsed
    # the layout: a 60-character vertical label is taller than the axes)
    ylabel = f"share change, {arm_label(arm)} \u2212 {arm_label(base)}"
    ax.set_ylabel(ylabel if len(ylabel) <= 40 else f"share change\n{arm_label(arm)}\n\u2212 {arm_label(base)}")
    align = shift["alignment_integration"]
    atext = "alignment n/a"
    if align["estimate"] is not None:
        atext = f"alignment {align['estimate']:+.2f}"
        if align["ci_low"] is not None and align["ci_high"] is not None:
            atext += f" [{align['ci_low']:+.2f}, {align['ci_high']:+.2f}]"
    moved = shift["mass_moved_above"]
    ax.set_title(f"{arm_label(base)} \u2192 {arm_label(arm)}: {atext}\nmass in above-average strategies "
                 f"{100 * shift['mass_above_base']['estimate']:.0f}% \u2192 "
                 f"{100 * shift['mass_above_treated']['estimate']:.0f}% ({100 * moved['estimate']:+.0f} points)",
                 fontsize=8.5)


def _place_labels(ax: Any, items: list[tuple[float, float, str]], *, fontsize: float = 6.8) -> None:
    """Write labels beside their points, pushing a label down while it would overlap one
    already placed (a greedy pass in display units; enough for a dozen strategies)."""
    fig = ax.figure
    fig.canvas.draw()  # fixes the axes limits and transforms
    to_points = 72.0 / fig.dpi
    placed: list[tuple[float, float, float]] = []  # x, y (points) and width of each placed label
    height = fontsize * 1.25
    for x, y, text in sorted(items, key=lambda item: -item[1]):
        px, py = (v * to_points for v in ax.transData.transform((x, y)))
        width = 0.55 * fontsize * len(text)
        dx, dy = 6.0, 3.0
        right = ax.get_window_extent().x1 * to_points
        if px + dx + width > right:  # written to the left of its point rather than out of the panel
            dx = -6.0 - width
        for _ in range(12):
            lx, ly = px + dx, py + dy
            if all(abs(ly - qy) >= height or lx + width <= qx or qx + qw <= lx for qx, qy, qw in placed):
                break
            dy -= height
        placed.append((px + dx, py + dy, width))
        ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=fontsize,
                    color="0.15", zorder=5, arrowprops=None if dy >= 0 else
                    {"arrowstyle": "-", "color": "0.6", "lw": 0.5, "shrinkA": 0, "shrinkB": 3})


def _draw_nested_split(ax: Any, shift: dict, color: str, base: str, arm: str) -> None:
    parts = [("composition", "composition"), ("within_retrieval", "retrieval"),
             ("within_integration", "integration"), ("within_parametric", "parametric"),
             ("within_not_retrievable", "not retrievable"),
             ("within", "within (sum)"), ("total", "total \u0394acc")]
    est = np.array([_num(shift[p]["estimate"]) for p, _ in parts])
    lo = np.array([_num(shift[p]["ci_low"]) for p, _ in parts])
    hi = np.array([_num(shift[p]["ci_high"]) for p, _ in parts])
    x = np.arange(len(parts), dtype=float)
    x[5:] += 0.4  # the sums stand apart from their parts
    shades = [color, color, color, color, color, "0.55", "0.25"]
    ax.bar(x, est, width=0.7, color=shades, alpha=0.85, zorder=3)
    yerr = np.vstack([np.clip(est - lo, 0, None), np.clip(hi - est, 0, None)])
    ok = np.isfinite(yerr).all(axis=0)
    ax.errorbar(x[ok], est[ok], yerr=yerr[:, ok], fmt="none", ecolor="0.1", elinewidth=0.8, capsize=2, zorder=4)
    ax.axhline(0, color="0.2", lw=0.7)
    ax.axvline(4.7, color="0.7", lw=0.6, ls="--")
    # upright from the start: slanted labels' boxes overlap their neighbours' (the overlap check
    # would turn some upright and shrink others, leaving mixed sizes)
    ax.set_xticks(x, [label for _, label in parts], fontsize=7.5, rotation=90, ha="center")
    ax.text(2.5, 1.0, "within strategies", transform=ax.get_xaxis_transform(), ha="center", va="top",
            fontsize=7, color="0.35")
    ax.text(0.0, 1.0, "between", transform=ax.get_xaxis_transform(), ha="center", va="top",
            fontsize=7, color="0.35")
    ax.yaxis.set_major_locator(MaxNLocator(nbins=6))
    ax.grid(axis="x", visible=False)
    ax.set_ylabel("contribution to accuracy change")
    ax.set_title(f"nested split of {arm_label(arm)} \u2212 {arm_label(base)}: "
                 f"{_num(shift['total']['estimate']):+.3f}", fontsize=8.5)


def _num(value: float | None) -> float:
    return np.nan if value is None else float(value)


__all__ = ["plot_integration_grid", "plot_integration_split", "plot_integration_shift"]
