"""Figures for PASS@(k,T): curves over k, the k x T surface, the difference between two arms
and the gained/lost boundary chart. Every function returns a matplotlib Figure built in the
toolkit's paper style; nothing is shown or saved here (see ``mechanism.plots.style.save_figure``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullLocator

from mechanism.analysis.boundaries import Boundary
from mechanism.analysis.passkt import TRUNCATED
from mechanism.core.errors import InputError
from mechanism.plots.style import DIVERGING_CMAP, SEQUENTIAL_CMAP, arm_colors, arm_label, paper_style


def plot_pass_curves(
    curves: pl.DataFrame,
    *,
    arms: Sequence[str] | None = None,
    t: Sequence[int] | None = None,
    title: str | None = None,
    colors: Mapping[str, str] | None = None,
    caption: bool = False,
) -> Figure:
    """PASS@(k,T) over k on a log2 axis: one panel per T, one line per arm, interval bands.

    Parameters
    ----------
    curves
        Output of :func:`mechanism.analysis.passkt.pass_at_kt` (``ci_low``/``ci_high`` optional).
    arms, t
        Which arms and depths to draw (default: all, in table order).
    title
        Figure title.
    colors
        Arm -> colour (default :func:`mechanism.plots.style.arm_colors`); pass the same
        mapping to every figure of one analysis so an arm keeps its colour.
    caption
        Add a note under the panels (default: none; a paper has its own caption).
    """
    _need(curves, ["arm", "k", "t", "pass_at_kt"], "curves")
    arms = list(dict.fromkeys(curves["arm"].to_list())) if arms is None else list(arms)
    truncated = _source(curves) in TRUNCATED
    unit = "message" if _source(curves) == "messages" else "round"  # what T counts
    ts = sorted(set(curves["t"].to_list())) if t is None else list(t)
    colors = {**arm_colors(arms), **(colors or {})}
    has_ci = {"ci_low", "ci_high"} <= set(curves.columns)
    with paper_style():
        ncols = min(len(ts), 5)
        nrows = int(np.ceil(len(ts) / ncols))
        fig, axes = plt.subplots(nrows, ncols, figsize=(1.0 + 2.1 * ncols, 0.6 + 2.2 * nrows),
                                 sharex=True, sharey=True, squeeze=False)
        ks = sorted(set(curves["k"].to_list()))
        for ax, tv in zip(axes.flat, ts):
            for arm in arms:
                part = curves.filter((pl.col("arm") == arm) & (pl.col("t") == tv)).sort("k")
                if part.height == 0:
                    continue
                x = part["k"].to_numpy()
                ax.plot(x, part["pass_at_kt"].to_numpy(), marker="o", markersize=2.8, color=colors[arm],
                        label=arm_label(arm))
                if has_ci:
                    ax.fill_between(x, part["ci_low"].to_numpy(), part["ci_high"].to_numpy(),
                                    color=colors[arm], alpha=0.18, linewidth=0)
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_locator(FixedLocator(ks))
            ax.xaxis.set_minor_locator(NullLocator())
            ax.set_xticklabels([str(k) for k in ks], rotation=0 if len(ks) <= 7 else 90)
            ax.set_title(f"T = {tv} {unit}{'s' if tv != 1 else ''}" + (" used" if truncated else ""))
        for ax in axes.flat[len(ts):]:
            ax.set_visible(False)
        for ax in axes[-1]:
            ax.set_xlabel("k (samples)")
        for ax in axes[:, 0]:
            ax.set_ylabel("PASS@(k,T)")
        axes.flat[0].set_ylim(-0.02, 1.02)
        handles, labels = axes.flat[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="upper center", ncol=min(len(arms), 4), bbox_to_anchor=(0.5, 1.0),
                   title=f"T by truncation: an episode counts if correct within T {unit}s" if truncated else None)
        if title:
            fig.suptitle(title, y=1.07)
        if caption:
            band = " (bands: bootstrap interval over problems)" if has_ci else ""
            depth = (f"; T = {unit}s an episode happened to use (truncation), not a budget: run per-T caps "
                     "(`t_cap`) for a budget claim" if truncated else "")
            fig.text(0.5, -0.02, f"PASS@(k,T) by arm{band}{depth}", ha="center", va="top", fontsize=7.5,
                     color="0.35")
        fig.tight_layout(rect=(0, 0, 1, 0.88 if truncated else 0.92))
    return fig


def plot_pass_over_t(curves: pl.DataFrame, *, k: int = 1, arms: Sequence[str] | None = None,
                     colors: Mapping[str, str] | None = None, ax: plt.Axes | None = None,
                     caption: bool = False) -> Figure:
    """PASS@(k,T) over the round budget T at one k, one line per arm, with interval bands.

    The view that remains when problems have too few samples for a curve over k (with one
    sample per problem only k = 1 exists). ``ax`` draws into an existing axes; ``caption``
    adds a title.
    """
    _need(curves, ["arm", "k", "t", "pass_at_kt"], "curves")
    part_k = curves.filter(pl.col("k") == k)
    if part_k.height == 0:
        raise InputError(f"`curves` has no rows with k = {k}", field="k")
    arms = list(dict.fromkeys(part_k["arm"].to_list())) if arms is None else list(arms)
    colors = {**arm_colors(arms), **(colors or {})}
    has_ci = {"ci_low", "ci_high"} <= set(curves.columns)
    ts = sorted(set(part_k["t"].to_list()))
    with paper_style():
        if ax is None:
            fig, ax = plt.subplots(figsize=(3.9, 2.8), constrained_layout=True)
        else:
            fig = ax.figure
        for arm in arms:
            part = part_k.filter(pl.col("arm") == arm).sort("t")
            x = part["t"].to_numpy()
            ax.plot(x, part["pass_at_kt"].to_numpy(), marker="o", markersize=3, color=colors[arm],
                    label=arm_label(arm))
            if has_ci:
                ax.fill_between(x, part["ci_low"].to_numpy(), part["ci_high"].to_numpy(), color=colors[arm],
                                alpha=0.18, linewidth=0)
        ax.set_xticks(ts)
        ax.set_xlabel(_t_label(_source(curves)))
        ax.set_ylabel(f"PASS@({k},T)")
        ax.set_ylim(bottom=0)
        ax.legend(loc="lower right")
        if caption:
            ax.set_title(f"PASS@({k},T) by round budget" + (" (bands: bootstrap interval)" if has_ci else ""))
    return fig


def plot_pass_surfaces(curves: pl.DataFrame, *, arms: Sequence[str] | None = None) -> Figure:
    """The k x T surface of each arm as an annotated heatmap (one panel per arm, shared scale)."""
    _need(curves, ["arm", "k", "t", "pass_at_kt"], "curves")
    arms = list(dict.fromkeys(curves["arm"].to_list())) if arms is None else list(arms)
    ks = sorted(set(curves["k"].to_list()))
    ts = sorted(set(curves["t"].to_list()))
    with paper_style():
        # a panel wide enough for an arm's label (28 characters) above it, however few the k
        width = 1.2 + max(0.4 * len(ks) + 0.4, 2.6) * len(arms)
        fig, axes = plt.subplots(1, len(arms), figsize=(width, 0.9 + 0.4 * len(ts)), squeeze=False,
                                 constrained_layout=True)
        image = None
        for ax, arm in zip(axes[0], arms):
            grid = _grid(curves.filter(pl.col("arm") == arm), "pass_at_kt", ks, ts)
            image = ax.imshow(grid, cmap=SEQUENTIAL_CMAP, vmin=0.0, vmax=1.0, origin="lower", aspect="auto")
            _annotate(ax, grid, fmt="{:.2f}", dark_above=0.55, reverse=True)
            _label_grid(ax, ks, ts, _source(curves))
            ax.set_title(arm_label(arm))
            if _source(curves) in TRUNCATED:
                ax.set_ylabel(_t_label(_source(curves)))
        for ax in axes[0][1:]:
            ax.set_ylabel("")
        fig.colorbar(image, ax=axes[0].tolist(), shrink=0.9, label="PASS@(k,T)")
    return fig


def plot_gap_surface(gap: pl.DataFrame, *, base: str, treated: str, t_source: str | None = None,
                     ax: plt.Axes | None = None, caption: bool = False) -> Figure:
    """Treated - base over the k x T grid, on a diverging map centred on zero.

    Parameters
    ----------
    gap
        :attr:`mechanism.analysis.boundaries.Boundary.gap` (``t``, ``k``, ``gap``, ``ci_low``,
        ``ci_high``). Cells whose interval excludes zero are marked with an asterisk.
    base, treated
        Arm names for the title.
    t_source
        ``"truncation"`` labels the T axis as rounds used (:attr:`Boundary.t_source`).
    ax
        Axes to draw into (default: a new figure).
    caption
        Add a note on the asterisks under the axes.
    """
    _need(gap, ["t", "k", "gap"], "gap")
    ks = sorted(set(gap["k"].to_list()))
    ts = sorted(set(gap["t"].to_list()))
    grid = _grid(gap, "gap", ks, ts)
    sig = None
    if {"ci_low", "ci_high"} <= set(gap.columns):
        sig = (_grid(gap, "ci_low", ks, ts) > 0) | (_grid(gap, "ci_high", ks, ts) < 0)
    limit = max(float(np.nanmax(np.abs(grid))), 1e-3)
    b, t = arm_label(base), arm_label(treated)
    with paper_style():
        if ax is None:
            fig, ax = plt.subplots(figsize=(2.2 + 0.5 * len(ks), 1.1 + 0.4 * len(ts)), constrained_layout=True)
        else:
            fig = ax.figure
        image = ax.imshow(grid, cmap=DIVERGING_CMAP, norm=TwoSlopeNorm(0.0, -limit, limit), origin="lower",
                          aspect="auto")
        labels = np.vectorize(lambda v: f"{v:+.2f}")(grid)
        if sig is not None:
            labels = np.where(sig, np.char.add(labels.astype(str), "*"), labels)
        for (i, j), text in np.ndenumerate(labels):
            strong = abs(grid[i, j]) > 0.6 * limit
            ax.text(j, i, text, ha="center", va="center", fontsize=7, color="white" if strong else "black")
        _label_grid(ax, ks, ts, t_source)
        if t_source in TRUNCATED:
            ax.set_ylabel(_t_label(t_source))
        ax.set_title(f"PASS@(k,T): {t} − {b}" + (" (* interval excludes 0)" if sig is not None else ""))
        # the title names the two arms; beside the bar, long names would be taller than the axes
        fig.colorbar(image, ax=ax, shrink=0.9, label=f"{t} − {b}" if len(t) + len(b) <= 34 else "difference")
        if sig is not None and caption:
            fig.text(0.5, -0.01, "* bootstrap interval over problems excludes 0 "
                     "(each cell at its own level, not adjusted over cells)",
                     ha="center", va="top", fontsize=7.5, color="0.35")
    return fig


def plot_boundary(result: Boundary, *, colors: Mapping[str, str] | None = None, caption: bool = False) -> Figure:
    """The capability boundary per T: problems solved by each arm, and gained vs lost.

    Left: ``|B_T|`` per arm. Right: problems gained (up) and lost (down) by the treated arm,
    with the two-sided p-value of the within-question permutation test above each depth (``*``:
    significant after Holm adjustment); ``caption`` adds a note saying so under the panels.
    """
    base, treated = result.base, result.treated
    colors = {**arm_colors([base, treated]), **(colors or {})}
    b_name, t_name = arm_label(base), arm_label(treated)
    t_axis = _t_label(result.t_source)
    tests = result.tests.sort("t")
    ts = tests["t"].to_list()
    x = np.arange(len(ts))
    with paper_style():
        fig, (ax_sets, ax_diff) = plt.subplots(1, 2, figsize=(8.2, 2.8), constrained_layout=True)
        width = 0.38
        solved_b = (tests["both"] + tests["lost"]).to_numpy()
        solved_t = (tests["both"] + tests["gained"]).to_numpy()
        ax_sets.bar(x - width / 2, solved_b, width, color=colors[base], label=b_name)
        ax_sets.bar(x + width / 2, solved_t, width, color=colors[treated], label=t_name)
        n_problems = int(tests["n_problems"][0])
        ax_sets.set_ylim(0, n_problems * 1.12)
        ax_sets.axhline(n_problems, color="0.5", linewidth=0.8, linestyle=":")
        ax_sets.text(x[-1] + 0.5, n_problems, f"all {n_problems}", ha="right", va="bottom", fontsize=7, color="0.35")
        ax_sets.set_xticks(x, [str(t) for t in ts])
        ax_sets.set_xlabel(t_axis)
        budget = ""
        if "budget_min" in result.tests.columns:
            lo, hi = int(result.tests["budget_min"].min()), int(result.tests["budget_max"].max())
            budget = f"\nin {lo} samples" if lo == hi else "\nin a common n per problem"
        ax_sets.set_ylabel("problems solved at least once" + budget)
        one_sample = int(result.problems.select(pl.max_horizontal("n_base", "n_treated").max()).item()) < 2
        ax_sets.set_title("problems solved on their one try" if one_sample else "boundary size |B_T|")
        ax_sets.legend(loc="upper left", ncol=2 if len(b_name) + len(t_name) <= 24 else 1)

        gained = tests["gained"].to_numpy()
        lost = tests["lost"].to_numpy()
        ax_diff.bar(x, gained, 0.6, color=colors[treated], label=f"gained by {t_name}")
        ax_diff.bar(x, -lost, 0.6, color=colors[base], label=f"lost (only {b_name})")
        ax_diff.axhline(0, color="0.2", linewidth=0.8)
        top = max(int(gained.max(initial=0)), int(lost.max(initial=0)), 1)
        ax_diff.set_ylim(-top * 1.35, top * 1.55)
        significant = (tests["p_holm"] < result.alpha).to_list()
        for xi, g, lo, p, exp in zip(x, gained, lost, tests["p_value"], significant):
            ax_diff.text(xi, g + top * 0.06, f"+{g}" if g else "0", ha="center", va="bottom", fontsize=7)
            ax_diff.text(xi, -lo - top * 0.06, f"−{lo}" if lo else "0", ha="center", va="top", fontsize=7)
            ax_diff.text(xi, top * 1.32, _p_label(p) + ("*" if exp else ""), ha="center", va="bottom",
                         fontsize=6.5 if len(x) <= 5 else 5.8, color="0.25")
        # the row of p-values is named in the legend, outside the axes, so nothing crowds it
        ax_diff.plot([], [], " ", label="top row: permutation test p\n(* Holm-significant)")
        ax_diff.set_xticks(x, [str(t) for t in ts])
        ax_diff.set_xlabel(t_axis)
        ax_diff.set_ylabel("problems")
        ax_diff.set_title(f"gained vs lost ({t_name} vs {b_name})")
        ax_diff.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=7)
        if caption:
            fig.text(0.5, -0.02, "p: two-sided within-question permutation test at the common budget; "
                     f"* significant at {result.alpha:g} after Holm adjustment over T", ha="center", va="top",
                     fontsize=7, color="0.35")
    return fig


def plot_gap_over_t(gap: pl.DataFrame, *, base: str, treated: str, k: int | None = None,
                    colors: Mapping[str, str] | None = None, t_source: str | None = None,
                    ax: plt.Axes | None = None) -> Figure:
    """Treated - base at one k over the round budget T, with its bootstrap interval.

    The view of the gap that remains with a single k (one sample per problem).
    """
    _need(gap, ["t", "k", "gap"], "gap")
    k = int(gap["k"].max()) if k is None else k
    part = gap.filter(pl.col("k") == k).sort("t")
    if part.height == 0:
        raise InputError(f"`gap` has no rows with k = {k}", field="k")
    color = {**arm_colors([base, treated]), **(colors or {})}[treated]
    with paper_style():
        if ax is None:
            fig, ax = plt.subplots(figsize=(3.9, 2.6), constrained_layout=True)
        else:
            fig = ax.figure
        x = part["t"].to_numpy()
        ax.axhline(0.0, color="0.3", linewidth=0.8)
        ax.plot(x, part["gap"].to_numpy(), marker="o", markersize=3, color=color)
        if {"ci_low", "ci_high"} <= set(part.columns):
            ax.fill_between(x, part["ci_low"].to_numpy(), part["ci_high"].to_numpy(), color=color, alpha=0.2,
                            linewidth=0, label="bootstrap interval")
            ax.legend(loc="best")
        ax.set_xticks(x)
        ax.set_xlabel(_t_label(t_source))
        ax.set_ylabel(f"difference in PASS@({k},T)")
        ax.set_title(f"{arm_label(treated)} − {arm_label(base)} at k = {k}")
    return fig


def _t_label(t_source: str | None) -> str:
    """The T axis label; says when T came from truncating the rounds an episode used."""
    if t_source == "truncation":
        return "T (rounds used; by truncation)"
    if t_source == "messages":
        return "T (messages used; by truncation)"
    return "T (round budget)"


def _source(curves: pl.DataFrame) -> str | None:
    return str(curves["t_source"][0]) if "t_source" in curves.columns and curves.height else None


def _p_label(p: float) -> str:
    return "<.001" if p < 0.001 else f"{p:.2g}".replace("0.", ".", 1) if p < 1 else "1"


def _need(frame: pl.DataFrame, columns: list[str], name: str) -> None:
    for col in columns:
        if col not in frame.columns:
            raise InputError(f"`{name}` table lacks column `{col}`", field=col)
    if frame.height == 0:
        raise InputError(f"`{name}` table is empty", field=name)


def _grid(frame: pl.DataFrame, column: str, ks: list[int], ts: list[int]) -> np.ndarray:
    out = np.full((len(ts), len(ks)), np.nan)
    k_at = {k: j for j, k in enumerate(ks)}
    t_at = {t: i for i, t in enumerate(ts)}
    for kv, tv, value in frame.select("k", "t", column).iter_rows():
        out[t_at[tv], k_at[kv]] = value
    return out


def _annotate(ax, grid: np.ndarray, *, fmt: str, dark_above: float, reverse: bool = False) -> None:
    for (i, j), value in np.ndenumerate(grid):
        if np.isnan(value):
            continue
        light_bg = value > dark_above if reverse else value < dark_above
        ax.text(j, i, fmt.format(value), ha="center", va="center", fontsize=6.5,
                color="black" if light_bg else "white")


def _label_grid(ax, ks: list[int], ts: list[int], source: str | None = None) -> None:
    ax.set_xticks(range(len(ks)), [str(k) for k in ks])
    ax.set_yticks(range(len(ts)), [str(t) for t in ts])
    ax.set_xlabel("k (samples)")
    ax.set_ylabel(_t_label(source))
    ax.grid(False)
