"""Figures for information integration: the retrieved x correct 2x2 per arm, and the split of
accuracy differences into retrieval, integration and parametric parts. Functions return
Figures; nothing is shown or saved here.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from mechanism.errors import InputError
from mechanism.information import Integration
from mechanism.plots.reweighting import text_label
from mechanism.plots.style import SEQUENTIAL_CMAP, arm_colors, paper_style


def plot_integration_grid(result: Integration, *, title: str | None = None) -> Figure:
    """One 2x2 panel per arm: rows retrieved / not retrieved, columns correct / wrong.

    Cells hold the share of the arm's trajectories (colour, one scale for all panels) and
    the count; the panel title gives the retrieval, integration and parametric rates.
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
            shares = counts / max(counts.sum(), 1.0)
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
            ax.set_title(f"{text_label(arm)}  (acc {r['accuracy']:.2f})\n"
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
    parts = ["retrieval", "integration", "parametric", "total"]
    colors = {**arm_colors([result.base, *treated]), **(colors or {})}
    with paper_style():
        # at least 1.1 inch per part, so the two-line part names never touch
        fig, ax = plt.subplots(figsize=(max(5.0, 1.6 + 1.3 * len(treated) * 1.2), 3.0))
        width = 0.8 / len(treated)
        for k, arm in enumerate(treated):
            sub = split.filter(pl.col("treated") == arm)
            est = np.array([sub.filter(pl.col("part") == p)["estimate"][0] for p in parts])
            lo = np.array([sub.filter(pl.col("part") == p)["ci_low"][0] for p in parts])
            hi = np.array([sub.filter(pl.col("part") == p)["ci_high"][0] for p in parts])
            x = np.arange(len(parts)) + (k - (len(treated) - 1) / 2) * width
            ax.bar(x, est, width=width * 0.92, color=colors[arm], label=f"{text_label(arm)} \u2212 "
                   f"{text_label(result.base)}", zorder=3)
            yerr = np.vstack([np.clip(est - lo, 0, None), np.clip(hi - est, 0, None)])
            ok = np.isfinite(yerr).all(axis=0)
            ax.errorbar(x[ok], est[ok], yerr=yerr[:, ok], fmt="none", ecolor="0.1", elinewidth=0.8,
                        capsize=2, zorder=4)
        ax.axhline(0, color="0.2", lw=0.7)
        ax.set_xticks(np.arange(len(parts)), ["retrieval\n(find it)", "integration\n(use it)",
                                              "parametric\n(without it)", "total\n\u0394accuracy"])
        ax.axvline(2.5, color="0.7", lw=0.6, ls="--")
        ax.yaxis.set_major_locator(MaxNLocator(nbins=6))
        ax.set_ylabel("contribution to accuracy difference")
        ax.grid(axis="x", visible=False)
        ax.legend(loc="best")
        if title:
            ax.set_title(title)
        if caption:
            fig.text(0.5, -0.02, "retrieval + integration + parametric = total (exact); whiskers: bootstrap "
                     "intervals over questions", ha="center", va="top", fontsize=7.5, color="0.35")
        fig.tight_layout()
    return fig


__all__ = ["plot_integration_grid", "plot_integration_split"]
