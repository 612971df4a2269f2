"""One paper style for every figure, applied locally (``with paper_style():``), never globally."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from mechanism.names import display_name, safe_filename  # noqa: F401  (re-exported: figures use them)

# Okabe-Ito: distinguishable under the common colour-vision deficiencies and in greyscale print.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]
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
    from matplotlib import colormaps

    from mechanism.checkpoints import natural_key

    others = sorted(dict.fromkeys(a for a in arms if a not in ARM_COLORS), key=natural_key)
    out = {a: ARM_COLORS[a] for a in arms if a in ARM_COLORS}
    if ordered is None:
        import re

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
    """Write ``fig`` as ``out_dir/stem.png`` and ``.pdf``; return the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in formats:
        path = out / f"{safe_filename(stem)}.{ext}"
        with paper_style():
            fig.savefig(path, metadata={"CreationDate": None} if ext == "pdf" else None)
        paths.append(path)
    return paths


def close(fig: Figure) -> None:
    """Release a figure that was only written to disk."""
    plt.close(fig)
