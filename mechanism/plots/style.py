"""One paper style for every figure, applied locally (``with paper_style():``), never globally."""
from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.text import Annotation, Text

from mechanism.core.names import display_name, escape_control, natural_key, safe_filename  # noqa: F401 - display_name, safe_filename: re-exported, figures use them
from mechanism.plots.handoff import HANDOFF

# Okabe-Ito: distinguishable under the common colour-vision deficiencies and in greyscale print.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]
# Strategies take another palette (Paul Tol's "muted", none of it an arm colour): a strategy is
# never read as an arm.
STRATEGY_PALETTE = ["#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677", "#882255",
                    "#AA4499", "#6F4E37", "#5D6D7E"]
ARM_COLORS = {"base": "#0072B2", "rl": "#D55E00", "sft": "#009E73"}
DIVERGING_CMAP = "RdBu_r"
SEQUENTIAL_CMAP = "viridis"

RC = {
    "figure.dpi": 110,
    "savefig.dpi": 200,
    "savefig.bbox": "tight",
    "font.size": 9,
    "axes.titlesize": 9.5,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.25,
    "grid.linewidth": 0.6,
    "lines.linewidth": 1.6,
    "legend.frameon": False,
    "pdf.fonttype": 42,  # editable text in the PDF, as journals ask
}


@contextlib.contextmanager
def paper_style() -> Iterator[None]:
    """Context in which figures take the toolkit's paper style; rcParams are restored after."""
    with matplotlib.rc_context(RC):
        yield


def arm_colors(arms: Sequence[str], *, ordered: bool | None = None) -> dict[str, str]:
    """A stable colour per arm, the same whatever order a figure lists the arms in.

    ``base``, ``rl`` and ``sft`` keep theirs. Other arms are sorted naturally (``step-50``
    before ``step-200``) and take the palette in that order; when they form a series
    (``ordered=True``, or by default three or more names that differ only in their numbers, such
    as ``step-100``, ``step-200``, ...), they take an ordered palette instead (viridis, light = late), so a reader
    sees training order in the colour. A report computes this once for all its arms and passes
    it to every figure (``colors=``).
    """
    others = sorted(dict.fromkeys(a for a in arms if a not in ARM_COLORS), key=natural_key)
    out = {a: ARM_COLORS[a] for a in arms if a in ARM_COLORS}
    if ordered is None:
        shapes = {re.sub(r"\d+(\.\d+)?", "#", str(a)) for a in others}
        ordered = len(others) >= 3 and len(shapes) == 1 and "#" in next(iter(shapes))
    if ordered and others:
        cmap = colormaps["viridis"]
        for i, arm in enumerate(others):
            out[arm] = matplotlib.colors.to_hex(cmap(0.1 + 0.75 * i / max(len(others) - 1, 1)))
        return {a: out[a] for a in dict.fromkeys(arms)}
    spare = [c for c in PALETTE if c not in ARM_COLORS.values()]
    for i, arm in enumerate(others):
        out[arm] = spare[i % len(spare)]
    return {a: out[a] for a in dict.fromkeys(arms)}


def save_figure(fig: Figure, out_dir: str | Path, stem: str, *, formats: Sequence[str] = ("png", "pdf")) -> list[Path]:
    """Write ``fig`` as ``out_dir/stem.png`` and ``.pdf``; return the paths. Inside
    :func:`mechanism.plots.background.saving_in_background` a worker process writes them (the
    same bytes) and the paths are returned at once."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{safe_filename(stem)}.{ext}" for ext in formats]
    handoff = HANDOFF.get()
    if handoff is not None and handoff(fig, out, stem, formats):
        return paths
    with paper_style():
        declutter(fig)
    for ext, path in zip(formats, paths):
        with paper_style():
            fig.savefig(path, metadata={"CreationDate": None} if ext == "pdf" else None)
    return paths


def close(fig: Figure) -> None:
    """Release a figure that was only written to disk."""
    plt.close(fig)


def short_names(names: Sequence[str], *, max_length: int = 28) -> dict[str, str]:
    """Figure labels for arm names, unique even when names share a prefix: a name longer
    than ``max_length`` (28 characters, as the README promises) keeps its start and its end
    around an ellipsis, the end growing until no two labels are alike.

    >>> sorted(short_names(["davinci003_react_base", "davinci003_react_reflexion",
    ...                     "claude3haiku_react_reflexion"], max_length=18).values())
    ['claude3haiku_…xion', 'davinci003_re…base', 'davinci003_re…xion']
    """
    full = {n: escape_control(n) for n in dict.fromkeys(names)}
    out: dict[str, str] = {}
    for tail in range(4, max_length):
        out = {n: (t if len(t) <= max_length else t[: max_length - 1 - tail] + "\u2026" + t[-tail:])
               for n, t in full.items()}
        if len(set(out.values())) == len(out):
            break
    if len(set(out.values())) < len(out):  # still alike: number them
        out = {n: f"{i}: {v}" for i, (n, v) in enumerate(out.items(), start=1)}
    return {n: v.replace("$", r"\$") for n, v in out.items()}


_ARM_LABELS: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar("arm_labels", default=None)


@contextlib.contextmanager
def arm_labels(names: Sequence[str], *, max_length: int = 28) -> Iterator[dict[str, str]]:
    """Within the block, every figure labels these arms by :func:`short_names` of all of them
    (a report sets it once, so every figure shows an arm alike); restored afterwards."""
    token = _ARM_LABELS.set(short_names(names, max_length=max_length))
    try:
        yield _ARM_LABELS.get()
    finally:
        _ARM_LABELS.reset(token)


def arm_label(name: str, *, max_length: int = 28) -> str:
    """An arm's label in a figure: its :func:`short_names` label inside :func:`arm_labels`,
    else the name kept at both ends (mathtext and control characters escaped)."""
    labels = _ARM_LABELS.get()
    if labels is not None and name in labels:
        return labels[name]
    return short_names([name], max_length=max_length)[name]


def text_overlaps(fig: Figure, *, tolerance: float = 1.0) -> list[tuple[Any, Any]]:
    """Pairs of visible texts of ``fig`` whose boxes, as the renderer draws them, overlap by
    more than ``tolerance`` pixels each way (titles, labels, ticks, legends, annotations)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    hidden = _undrawn_tick_labels(fig)
    boxes = [(t, t.get_window_extent(renderer)) for t in fig.findobj(Text)
             if t.get_visible() and t.get_text().strip() and t.figure is fig and id(t) not in hidden]
    out = []
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1:]:
            dx = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
            dy = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
            if dx > tolerance and dy > tolerance:
                out.append((a, b))
    return out


def _undrawn_tick_labels(fig: Figure) -> set[int]:
    """Ids of tick labels whose tick lies outside its axis's view: matplotlib keeps them
    (visible) but never draws them, so they overlap nothing."""
    hidden: set[int] = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            eps = (hi - lo) * 1e-9
            for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
                if not lo - eps <= tick.get_loc() <= hi + eps:
                    hidden |= {id(tick.label1), id(tick.label2)}
    return hidden


def _give_way(artist: Any, titles: set, ticks: set) -> int:
    """Which of two overlapping texts gives way, lowest first: an annotation (moved), then a
    title or label, a tick last."""
    return 1 if artist in titles else 2 if artist in ticks else 0


def _wrap(text: str) -> str:
    """``text`` broken into two lines at the separator nearest its middle (once)."""
    if "\n" in text or len(text) < 16:
        return text
    middle = len(text) / 2
    cuts = [i for i, ch in enumerate(text) if ch in " \u2212\u2192:,"]
    if not cuts or min(abs(i - middle) for i in cuts) > len(text) / 4:
        # no space near the middle: an arm name breaks after its own separators
        # (``davinci003_react_`` / ``reflexion``)
        cuts += [i for i, ch in enumerate(text) if ch in "_-/"]
    if not cuts:
        return text
    at = min(cuts, key=lambda i: abs(i - middle))
    return text[:at + 1].rstrip() + "\n" + text[at + 1:].lstrip()


def declutter(fig: Figure, *, rounds: int = 12, smallest: float = 5.0) -> Figure:
    """Make every text of ``fig`` readable on its own. While two texts overlap (as the
    renderer draws them): an annotation is moved first; a title or axis label is wrapped onto
    two lines, then set smaller;
    tick labels that run into each other are turned upright, then set smaller; an annotation
    is moved up or down off the other text (a label keeps its leader line), and only if that
    fails after every round is it left out. Called on every figure before it is saved."""
    for round_ in range(rounds):
        pairs = text_overlaps(fig)
        if not pairs:
            break
        renderer = fig.canvas.get_renderer()
        # tick labels are made anew as a figure is drawn: collect them after each drawing
        titles, ticks, xticks = set(), set(), {}
        for ax in fig.axes:
            titles |= {ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label}
            xticks.update(dict.fromkeys(ax.get_xticklabels(), ax))
            ticks |= set(ax.get_xticklabels()) | set(ax.get_yticklabels())
        if getattr(fig, "_suptitle", None) is not None:
            titles.add(fig._suptitle)
        # a legend's texts keep their place in it: they only get smaller, like ticks
        for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes)]:
            if legend is not None:
                ticks |= set(legend.get_texts()) | {legend.get_title()}
        done = set()
        for a, b in pairs:
            t, other = (a, b) if _give_way(a, titles, ticks) <= _give_way(b, titles, ticks) else (b, a)
            if id(t) in done:
                continue
            done.add(id(t))
            if t in titles:
                wrapped = _wrap(t.get_text())
                if wrapped != t.get_text():
                    t.set_text(wrapped)
                else:
                    t.set_fontsize(max(smallest, t.get_fontsize() * 0.88))
            elif t in ticks:
                if t.get_rotation() not in (90.0, 270.0) and other in xticks and t in xticks:
                    for tick in xticks[t].get_xticklabels():
                        tick.set_rotation(90)
                        tick.set_ha("center")
                        tick.set_rotation_mode("default")
                else:
                    t.set_fontsize(max(smallest, t.get_fontsize() * 0.88))
            elif round_ == rounds - 1:
                t.set_visible(False)
            else:
                _nudge(t, other, renderer)
    return fig


def _nudge(t: Any, other: Any, renderer: Any) -> None:
    """Move text ``t`` vertically just off ``other`` (display pixels to its own coordinates)."""
    box, obox = t.get_window_extent(renderer), other.get_window_extent(renderer)
    up = box.y0 + box.y1 >= obox.y0 + obox.y1
    dy = (obox.y1 - box.y0 + 2) if up else -(box.y1 - obox.y0 + 2)
    fig = t.figure
    if isinstance(t, Annotation) and t.anncoords in ("offset points", "offset pixels"):
        x, y = t.xyann
        t.xyann = (x, y + (dy * 72 / fig.dpi if t.anncoords == "offset points" else dy))
        return
    transform = t.get_transform()
    px, py = transform.transform(t.get_position())
    t.set_position(transform.inverted().transform((px, py + dy)))
