"""Writing one artefact of a report and recording it in the section: tables, text, JSON, figures.

Every writer of the report layer goes through these, so a file written is a file listed in
``Section.written`` (and a figure saved is a figure closed and shown on the page).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import polars as pl

from mechanism.names import write_csv
from mechanism.report._section import Section


def write_table(section: Section, frame: pl.DataFrame, path: Path) -> Path:
    """Write ``frame`` to ``path`` as CSV or parquet (by its suffix) and record it."""
    if path.suffix == ".parquet":
        frame.write_parquet(path)
    elif path.suffix == ".csv":
        write_csv(frame, path)  # formula-like cells escaped (names come from the input)
    else:
        raise ValueError(f"no table format for {path.name!r}: .csv or .parquet")
    section.written.append(path)
    return path


def write_tables(section: Section, folder: Path, tables: Iterable[tuple[str, pl.DataFrame | None]],
                 *, suffix: str = ".csv") -> list[Path]:
    """Write each ``(name, frame)`` as ``folder/<name><suffix>`` (``None`` frames are left out) and record them."""
    return [write_table(section, frame, folder / f"{name}{suffix}") for name, frame in tables if frame is not None]


def write_text(section: Section, path: Path, text: str) -> Path:
    """Write ``text`` and a final newline to ``path`` (UTF-8: summaries, LaTeX) and record it."""
    path.write_text(text + "\n", encoding="utf-8")
    section.written.append(path)
    return path


def write_json(section: Section, path: Path, data: Any, *, default: Callable[[Any], Any] | None = None) -> Path:
    """Write ``data`` as indented JSON to ``path`` and record it; ``default`` as :func:`json.dumps`."""
    return write_text(section, path, json.dumps(data, indent=2, default=default))


def write_figures(section: Section, folder: Path, figures: Iterable[tuple[str, Any]], *, prefix: str = "") -> None:
    """Save each ``(stem, figure)`` as ``folder/<stem>.png`` and ``.pdf``, close it and record it
    under ``prefix + stem`` (the key of ``Section.figures``)."""
    from mechanism.plots.style import close, save_figure

    for stem, fig in figures:
        section.add_figure(save_figure(fig, folder, stem), prefix + stem)
        close(fig)
