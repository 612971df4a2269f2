"""The swap test's figure: accuracy by retrieval source x reasoner, one cell per pair. Returns a
Figure; nothing is shown or saved here."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from mechanism.analysis.swap import Swap
from mechanism.core.errors import InputError
from mechanism.plots.style import SEQUENTIAL_CMAP, arm_label, paper_style


def plot_swap(result: Swap, *, title: str | None = None) -> Figure:
    """The cells as a grid: rows the retrieval source (``none``: the question alone), columns the
    reasoner; each cell's accuracy and interval written in it."""
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
    with paper_style():
        fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(reasoners), 0.9 + 0.75 * len(sources)))
        ax.imshow(grid, cmap=SEQUENTIAL_CMAP, vmin=0.0, vmax=1.0)
        for (i, j), label in text.items():
            ax.text(j, i, label, ha="center", va="center", fontsize=8,
                    color="white" if grid[i, j] < 0.6 else "black")
        ax.set_xticks(range(len(reasoners)), [arm_label(a) for a in reasoners])
        ax.set_yticks(range(len(sources)), [arm_label(a) if a != "none" else "none (question only)"
                                            for a in sources])
        ax.set_xlabel("reasoner")
        ax.set_ylabel("retrieval from")
        ax.tick_params(length=0)
        ax.grid(False)
        if title:
            ax.set_title(title)
        fig.tight_layout()
    return fig
