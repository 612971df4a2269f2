"""Figures for the reweighting analysis: where each strategy's share and success moved
(arrows from base to treated), and the decomposition (total = composition + within, per
strategy, bars from 0 with bootstrap whiskers). Functions return Figures; nothing is shown or saved.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import Bbox

from mechanism.analysis.compare import OUTLIER, Reweighting
from mechanism.core.errors import InputError
from mechanism.core.names import display_name
from mechanism.core.resample import percentile_interval
from mechanism.plots.style import arm_colors, arm_label, paper_style

POSITIVE = "#009E73"
NEGATIVE = "#D55E00"
SUBTOTAL = "0.35"


def text_label(value: Any, *, max_length: int = 28, names: Mapping[Any, str] | None = None) -> str:
    """A strategy or arm name safe to draw: no mathtext (``$``), bounded length, one line.

    ``names`` maps strategy ids to display names (e.g. built from ``StrategySpace.describe()``).
    """
    if names is not None and value in names:
        value = str(names[value])
    elif isinstance(value, (int, np.integer)):
        return "outliers" if int(value) == OUTLIER else f"S{int(value)}"
    return display_name(" ".join(str(value).split()), max_length=max_length)


def _as_list(results: Reweighting | Sequence[Reweighting]) -> list[Reweighting]:
    out = [results] if isinstance(results, Reweighting) else list(results)
    if not out:
        raise InputError("no reweighting result to plot", field="results")
    bases = {r.base for r in out}
    if len(bases) > 1:
        raise InputError(f"results compare against different base arms {sorted(bases)}", field="results")
    return out


def _share_panel(ax: Any, rw: Reweighting, base: str, colors: Mapping[str, str], *, label_top: int,
                 names: Mapping[Any, str] | None, keyed: dict[Any, str]) -> tuple[list, list]:
    """One treated arm's panel of :func:`plot_share_success`: whiskers, markers and arrows; returns
    the labels to place and the markers they must avoid (strategies named by a short id go in ``keyed``)."""
    t = rw.strategies
    sb, st = t["share_base"].to_numpy(), t["share_treated"].to_numpy()
    rb = t["success_base"].fill_null(np.nan).to_numpy()
    rt = t["success_treated"].fill_null(np.nan).to_numpy()
    x_max = float(np.nanmax(np.r_[sb, st, t["share_treated_ci_high"].fill_null(0).to_numpy(),
                                  t["share_base_ci_high"].fill_null(0).to_numpy()]))
    ax.set_xlim(-0.01, min(1.02, x_max * 1.15 + 0.03))
    for arm, share, rate, prefix, filled in ((base, sb, rb, "share_base", False),
                                             (rw.treated, st, rt, "share_treated", True)):
        ok = share > 0
        rate_key = "success_base" if prefix == "share_base" else "success_treated"
        xerr = np.vstack([share - t[f"{prefix}_ci_low"].fill_null(np.nan).to_numpy(),
                          t[f"{prefix}_ci_high"].fill_null(np.nan).to_numpy() - share])
        yerr = np.vstack([rate - t[f"{rate_key}_ci_low"].fill_null(np.nan).to_numpy(),
                          t[f"{rate_key}_ci_high"].fill_null(np.nan).to_numpy() - rate])
        ax.errorbar(share[ok], rate[ok], xerr=np.clip(xerr[:, ok], 0, None),
                    yerr=np.clip(yerr[:, ok], 0, None), fmt="none",
                    ecolor=colors[arm], elinewidth=0.6, alpha=0.45, capsize=0, zorder=2)
        ax.scatter(share[ok], rate[ok], s=30 + 900 * share[ok],
                   facecolors=colors[arm] if filled else "white", edgecolors=colors[arm],
                   linewidths=1.2, alpha=0.9 if filled else 1.0, zorder=3)
    both = (sb > 0) & (st > 0)
    for i in np.flatnonzero(both):
        ax.annotate("", xy=(st[i], rt[i]), xytext=(sb[i], rb[i]), zorder=4,
                    arrowprops={"arrowstyle": "-|>", "color": "0.25", "lw": 0.9,
                                "shrinkA": 4, "shrinkB": 5, "mutation_scale": 8})
    moved = np.abs(st - sb)
    labels = []
    for i in np.argsort(-moved, kind="stable")[:label_top]:
        x, y = (st[i], rt[i]) if st[i] > 0 else (sb[i], rb[i])
        if not np.isfinite(y):
            continue
        value = t["strategy"][int(i)]
        name = _short_id(value, names)
        if names is not None and value in names:
            keyed[value] = text_label(value, names=names, max_length=60)
        if sb[i] == 0:
            name += " (new)"
        elif st[i] == 0:
            name += " (dropped)"
        labels.append((float(x), float(y), name))
    markers = [(float(xx), float(yy), 30 + 900 * float(xx)) for share, rate in ((sb, rb), (st, rt))
               for xx, yy in zip(share, rate) if xx > 0 and np.isfinite(yy)]
    ax.set_title(f"{arm_label(base)} \u2192 {arm_label(rw.treated)}\n"
                 f"\u0394acc {rw.total:+.3f} = {rw.composition:+.3f} composition "
                 f"{rw.within:+.3f} within", fontsize=8.5)
    ax.set_xlabel("share of trajectories")
    return labels, markers


def plot_share_success(results: Reweighting | Sequence[Reweighting], *, title: str | None = None,
                       label_top: int = 8, names: Mapping[Any, str] | None = None,
                       colors: Mapping[str, str] | None = None, caption: bool = False) -> Figure:
    """Share vs success rate per strategy, with an arrow from the base arm to the treated arm.

    One panel per treated arm. Marker area follows the share; whiskers are the bootstrap
    intervals of share (horizontal) and success (vertical). A strategy used by one arm only
    is drawn as that arm's point alone.

    Parameters
    ----------
    results
        One :class:`~mechanism.analysis.compare.Reweighting` or several against the same base.
    title
        Figure title.
    label_top
        Name only this many strategies per panel (those whose share moved most), so labels
        stay readable when there are many.
    names
        Display names of strategy ids (default: ``S<id>``, or the label itself for text labels);
        a name ``"S3: bridge"`` labels its point ``S3`` and is spelled out under the panels.
    colors
        Arm -> colour, shared with the report's other figures.
    caption
        Add a note on how to read the markers, whiskers and arrows.
    """
    results = _as_list(results)
    base = results[0].base
    colors = {**arm_colors([base, *[r.treated for r in results]]), **(colors or {})}
    with paper_style():
        fig, axes = plt.subplots(1, len(results), figsize=(0.6 + 3.5 * len(results), 3.4),
                                 sharey=True, squeeze=False)
        ax_labels: list[tuple[Any, list, list]] = []
        keyed: dict[Any, str] = {}  # strategies named on the plot by a short id, spelled out below
        for ax, rw in zip(axes[0], results):
            labels, markers = _share_panel(ax, rw, base, colors, label_top=label_top, names=names, keyed=keyed)
            ax_labels.append((ax, labels, markers))
        axes[0, 0].set_ylabel("success rate within strategy")
        axes[0, 0].set_ylim(-0.03, 1.05)
        handles = [Line2D([], [], marker="o", linestyle="", markerfacecolor="white",
                          markeredgecolor=colors[base], markersize=7, label=text_label(base))]
        handles += [Line2D([], [], marker="o", linestyle="", color=colors[r.treated], markersize=7,
                           label=text_label(r.treated)) for r in results]
        # lay the panels out first, then hang legend, title and notes around them
        fig.tight_layout(rect=(0, 0, 1, 0.9))
        renderer = fig.canvas.get_renderer()
        top = max(ax.title.get_window_extent(renderer).y1 for ax in axes[0]) / fig.bbox.height
        fig.legend(handles=handles, loc="lower center", ncol=len(handles), bbox_to_anchor=(0.5, top + 0.01))
        if title:
            fig.suptitle(title, y=top + 0.3 / fig.get_figheight(), va="bottom")
        notes = (["marker area ~ share (questions weigh equally within each arm); whiskers: bootstrap intervals "
                  "over questions, simultaneous over strategies; arrows: base \u2192 treated"]
                 if caption else [])
        entries = [f"{_short_id(k, names)} = {v.split(': ', 1)[-1]}" for k, v in sorted(keyed.items(), key=_order)
                   if _short_id(k, names) != v]
        per_line = max(1, len(results) * 2)
        notes += ["; ".join(entries[i:i + per_line]) for i in range(0, len(entries), per_line)]
        fig.text(0.5, -0.01, "\n".join(notes), ha="center", va="top", fontsize=7, color="0.35",
                 linespacing=1.5)
        for ax, labels, markers in ax_labels:  # after layout, so boxes are measured where they end up
            _place_labels(fig, ax, labels, markers)
    return fig


def _order(item: tuple[Any, str]) -> tuple[int, Any]:
    key = item[0]
    return (0, int(key)) if isinstance(key, (int, np.integer)) else (1, str(key))


def _short_id(value: Any, names: Mapping[Any, str] | None) -> str:
    """What a point is labelled with: the part of its display name before ``": "``."""
    label = text_label(value, names=names, max_length=60)
    return label.split(": ", 1)[0]


def _place_labels(fig: Figure, ax: Any, labels: list[tuple[float, float, str]],
                  markers: list[tuple[float, float, float]]) -> None:
    """Name points without overlapping each other or the markers.

    Each label tries positions right, then left, of its point, stepping away vertically,
    until its box clears the markers (``(x, y, area in pt^2)``) and the labels already
    placed; a leader line joins a displaced label to its point.
    """
    renderer = fig.canvas.get_renderer()
    scale = fig.dpi / 72.0
    obstacles = []
    for x, y, area in markers:
        px, py = ax.transData.transform((x, y))
        r = np.sqrt(area) / 2.0 * scale
        obstacles.append(Bbox.from_extents(px - r, py - r, px + r, py + r))
    axes_box = ax.get_window_extent(renderer)
    placed: list[Any] = []
    for x, y, name in sorted(labels, key=lambda item: (-item[1], item[0])):
        px, py = ax.transData.transform((x, y))
        probe = ax.annotate(name, (x, y), xytext=(0, 0), textcoords="offset points", fontsize=7)
        extent = probe.get_window_extent(renderer)
        probe.remove()
        w, h = extent.width * 1.03, extent.height * 1.1
        choice = (8, 2, "left")
        for j in [0, *[k for i in range(1, 30) for k in (i, -i)]]:
            dy = 2 + 6 * j
            yc = py + dy * scale
            found = False
            for dx, ha in ((8, "left"), (-8, "right")):
                x0 = px + dx * scale if ha == "left" else px + dx * scale - w
                box = Bbox.from_bounds(x0, yc - h / 2, w, h)
                inside = axes_box.x0 <= box.x0 and box.x1 <= axes_box.x1 and \
                    axes_box.y0 <= box.y0 and box.y1 <= axes_box.y1
                if inside and not any(box.overlaps(o) for o in placed + obstacles):
                    choice, found = (dx, dy, ha), True
                    break
            if found:
                break
        dx, dy, ha = choice
        text = ax.annotate(name, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=7,
                           ha=ha, va="center", color="0.1", zorder=6,
                           arrowprops={"arrowstyle": "-", "color": "0.55", "lw": 0.5, "shrinkA": 1,
                                       "shrinkB": 4} if abs(dy) > 8 else None)
        placed.append(text.get_window_extent(renderer))


def _top_strategies(results: list[Reweighting], top: int) -> tuple[list[Any], int]:
    """The strategies to show by name (largest total |contribution| over all panels, in
    strategy order), and how many others there are across the panels."""
    weight: dict[Any, float] = {}
    for rw in results:
        s = rw.strategies
        for name, comp, within in zip(s["strategy"].to_list(), s["composition"].to_list(), s["within"].to_list()):
            weight[name] = weight.get(name, 0.0) + abs(comp or 0.0) + abs(within or 0.0)
    if len(weight) <= top + 1:  # pooling a single strategy into "other" would only hide its name
        top = len(weight)
    ranked = sorted(weight, key=lambda k: -weight[k])  # stable: ties keep strategy order
    keep = [k for k, _ in sorted(((k, "") for k in ranked[:top]), key=_order)]
    return keep, len(weight) - len(keep)


def plot_decomposition(results: Reweighting | Sequence[Reweighting], *, top: int = 8,
                       title: str | None = None, names: Mapping[Any, str] | None = None,
                       colors: Mapping[str, str] | None = None, caption: bool = False) -> Figure:
    """The accuracy difference by part: composition per strategy, its sum, within per
    strategy, its sum, and the total, each a bar from 0 with its bootstrap interval, so
    whether an interval includes 0 shows at a glance.

    One panel per treated arm (shared rows); ``caption`` adds a note on the whiskers.
    Strategies beyond the ``top`` largest are pooled into one "other" bar (its interval is
    that of the pooled sum). ``names`` gives display names of strategy ids.
    """
    results = _as_list(results)
    keep, n_other = _top_strategies(results, top)
    with paper_style():
        n_rows = 2 * (len(keep) + (1 if n_other else 0)) + 3
        fig, axes = plt.subplots(1, len(results), figsize=(0.8 + 3.6 * len(results), 1.0 + 0.2 * n_rows),
                                 sharey=True, squeeze=False)
        for ax, rw in zip(axes[0], results):
            rows = _waterfall_rows(rw, keep, n_other, names)
            y = np.arange(len(rows))[::-1]
            # every bar and its interval start from 0, so whether an interval includes 0 is
            # read directly (a waterfall's cumulative positions hide it)
            for yi, row in zip(y, rows):
                value = row["value"]
                color = SUBTOTAL if row["kind"] == "sum" else (POSITIVE if value >= 0 else NEGATIVE)
                ax.barh(yi, value, left=0.0, height=0.7, color=color,
                        alpha=1.0 if row["kind"] == "sum" else 0.85, zorder=3)
                lo, hi = row["ci"]
                if np.isfinite(lo) and np.isfinite(hi):
                    ax.errorbar(value, yi, xerr=[[max(value - lo, 0)], [max(hi - value, 0)]], fmt="none",
                                ecolor="0.1", elinewidth=0.8, capsize=2, zorder=4)
            for i in range(len(rows) - 1):  # a thin rule under each sum separates the blocks
                if rows[i]["kind"] == "sum":
                    ax.axhline(y[i] - 0.5, color="0.75", lw=0.5, zorder=1)
            ax.axvline(0, color="0.2", lw=0.8, zorder=5)
            ax.set_yticks(y)
            ax.set_yticklabels([r["label"] for r in rows])
            for tick, row in zip(ax.get_yticklabels(), rows):
                if row["kind"] == "sum":
                    tick.set_fontweight("bold")
            ax.set_title(f"{arm_label(rw.base)} \u2192 {arm_label(rw.treated)}")
            ax.set_xlabel("contribution to accuracy difference")
            ax.grid(axis="y", visible=False)
            ax.xaxis.set_major_locator(MaxNLocator(nbins=5))
        handles = [Patch(color=POSITIVE, label="raises accuracy"), Patch(color=NEGATIVE, label="lowers accuracy"),
                   Patch(color=SUBTOTAL, label="sum")]
        level = "" if results[0].ci is None else f"{100 * results[0].ci:.0f}% "
        if caption:
            fig.text(0.5, -0.01, f"whiskers: {level}bootstrap intervals over questions (per-strategy bars "
                     "simultaneous over strategies); total = composition + within (Kitagawa), "
                     "questions weighing equally within each arm", ha="center", va="top", fontsize=7.5, color="0.35")
        fig.tight_layout(rect=(0, 0, 1, 0.95))
        # legend and title hang just above the panel titles, wherever the layout put them
        renderer = fig.canvas.get_renderer()
        top = max(ax.title.get_window_extent(renderer).y1 for ax in axes[0]) / fig.bbox.height
        fig.legend(handles=handles, loc="lower center", ncol=3, bbox_to_anchor=(0.5, top + 0.005))
        if title:
            fig.suptitle(title, y=top + 0.3 / fig.get_figheight(), va="bottom")
    return fig


def _waterfall_rows(rw: Reweighting, keep: list[Any], n_other: int,
                    names: Mapping[Any, str] | None = None) -> list[dict[str, Any]]:
    t = rw.strategies
    position = {name: i for i, name in enumerate(t["strategy"].to_list())}
    rest = [i for name, i in position.items() if name not in keep]
    reps = rw.replicates

    # per-strategy bars at the adjusted level of the strategy table (the sums at rw.ci)
    level = rw.strategy_ci or rw.ci

    def ci_of(part: str, idx: list[int]) -> tuple[float, float]:
        if part not in reps or rw.ci is None or not idx:
            return (np.nan, np.nan)
        lo, hi = percentile_interval(np.nansum(reps[part][:, idx], axis=1), level)
        return float(lo), float(hi)

    rows: list[dict[str, Any]] = []
    running = 0.0
    for part, label, total, total_ci in (("composition", "composition", rw.composition, rw.composition_ci),
                                         ("within", "within", rw.within, rw.within_ci)):
        part_start = running
        values = t[part].fill_null(0.0).to_numpy()
        # the same rows in every panel (shared axis); a strategy this pair lacks contributes 0
        groups = [([position[name]] if name in position else [], text_label(name, names=names, max_length=34))
                  for name in keep]
        if n_other:
            groups.append((rest, f"other ({n_other})"))
        prefix = "comp." if part == "composition" else "within"
        for idx, name in groups:
            v = float(np.sum(values[idx])) if idx else 0.0
            rows.append({"label": f"{prefix}: {name}", "start": running, "value": v,
                         "ci": ci_of(part, idx), "kind": "part"})
            running += v
        rows.append({"label": f"{label} (sum)", "start": part_start, "value": total, "ci": total_ci,
                     "kind": "sum"})
    rows.append({"label": "total \u0394accuracy", "start": 0.0, "value": rw.total, "ci": rw.total_ci,
                 "kind": "sum"})
    return rows
