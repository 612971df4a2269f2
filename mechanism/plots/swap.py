"""The swap test's figure: accuracy by retrieval source x reasoner, one cell per pair. Returns a
Figure; nothing is shown or saved here."""
from __future__ import annotations

import re

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from mechanism.analysis.swap import NO_RETRIEVAL, Swap
from mechanism.core.errors import InputError
from mechanism.plots.style import SEQUENTIAL_CMAP, arm_label, paper_style

#: characters per line of a wrapped arm label (checkpoint names run to 30 and more)
LABEL_WIDTH = 18


def wrap_label(label: str, width: int = LABEL_WIDTH) -> str:
    """``label`` on lines of at most ``width`` characters, broken after its separators
    (``-``, ``_``, ``/``, ``.``, space) where it has them; a run longer than ``width`` stays whole.

    >>> wrap_label("Qwen2.5-7B-Search-R1-PPO-step-400")
    'Qwen2.5-7B-Search-\\nR1-PPO-step-400'
    >>> wrap_label("base")
    'base'
    """
    pieces = re.findall(r"[^-_/. ]*[-_/. ]|[^-_/. ]+$", label)
    lines = [""]
    for piece in pieces:
        if lines[-1] and len(lines[-1]) + len(piece.rstrip()) > width:
            lines.append("")
        lines[-1] += piece
    return "\n".join(line.rstrip() for line in lines)


def plot_swap(result: Swap, *, title: str | None = None) -> Figure:
    """The cells as a grid: rows the retrieval source (``none``: the question alone), columns the
    reasoner; each cell's accuracy and interval written in it. Long arm names are wrapped onto
    lines and the cells widen to hold them."""
    table = result.table
    if table.height == 0:
        raise InputError("no swap cells to plot", field="result")
    sources = table["retrieval_from"].unique(maintain_order=True).to_list()
    reasoners = table["reasoner"].unique(maintain_order=True).to_list()
    grid = np.full((len(sources), len(reasoners)), np.nan)
    text = {}
    for r in table.iter_rows(named=True):
        i, j = sources.index(r["retrieval_from"]), reasoners.index(r["reasoner"])
        grid[i, j] = r["accuracy"]
        low, high = r["ci_low"], r["ci_high"]
        interval = f"\n[{low:.2f}, {high:.2f}]" if low is not None and np.isfinite(low) else ""
        text[i, j] = f"{r['accuracy']:.2f}{interval}"
    columns = [wrap_label(arm_label(a, max_length=40)) for a in reasoners]
    rows = [wrap_label(arm_label(a, max_length=40)) if a != NO_RETRIEVAL else "none\n(question only)"
            for a in sources]
    # a column as wide as its longest label line, a row as tall as its label's lines
    width = max(1.3, 0.085 * max(len(line) for label in columns for line in label.splitlines()))
    height = max(0.75, 0.2 * max(label.count("\n") + 1 for label in rows) + 0.35)
    label_width = 0.075 * max(len(line) for label in rows for line in label.splitlines())
    with paper_style():
        fig, ax = plt.subplots(figsize=(1.0 + label_width + width * len(reasoners),
                                        1.3 + 0.2 * max(c.count("\n") for c in columns) + height * len(sources)))
        ax.imshow(grid, cmap=SEQUENTIAL_CMAP, vmin=0.0, vmax=1.0, aspect="auto")
        for (i, j), label in text.items():
            ax.text(j, i, label, ha="center", va="center", fontsize=8,
                    color="white" if grid[i, j] < 0.6 else "black")
        ax.set_xticks(range(len(reasoners)), columns)
        ax.set_yticks(range(len(sources)), rows)
        ax.set_xlabel("reasoner (the model that answers)")
        ax.set_ylabel("retrieval from")
        ax.tick_params(length=0)
        ax.grid(False)
        if title:
            ax.set_title(title)
        fig.tight_layout()
    return fig
