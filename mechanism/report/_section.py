"""What a report writer hands back."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Section:
    """One analysis as written: ``written`` (every path), ``text`` (plain-text findings),
    ``results`` (the result objects behind them), ``figures`` (figure stems -> PNG path) and
    ``frames`` (the main tables as computed).
    """

    written: list[Path] = field(default_factory=list)
    text: str = ""
    results: list[Any] = field(default_factory=list)
    figures: dict[str, Path] = field(default_factory=dict)
    #: the main tables as computed (name -> frame), so a caller never reads back a file it wrote
    frames: dict[str, Any] = field(default_factory=dict)

    def add_figure(self, paths: list[Path], stem: str) -> None:
        """Record a figure saved as ``paths`` (PNG and PDF) under ``stem``."""
        self.written += paths
        png = next((p for p in paths if p.suffix == ".png"), None)
        if png is not None:
            self.figures[stem] = png
