"""Where :func:`mechanism.plots.style.save_figure` hands a figure when another process saves it.

Set by :func:`mechanism.plots.background.saving_in_background`; kept apart from both so that
neither imports the other and a command can enter the block without loading matplotlib.
"""
from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# Takes ``(figure, folder, stem, formats)`` and returns whether it took the figure (False: the
# caller saves it itself).
HANDOFF: contextvars.ContextVar[Callable[[Any, Path, str, Sequence[str]], bool] | None] = contextvars.ContextVar(
    "figure_handoff", default=None)
