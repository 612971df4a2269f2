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

from mechanism.core.cachefile import atomic_path, atomic_write
from mechanism.core.names import write_csv
from mechanism.report._section import Section


def write_table(section: Section, frame: pl.DataFrame, path: Path) -> Path:
    """Write ``frame`` to ``path`` as CSV (formula-like cells escaped, :func:`mechanism.core.names.csv_safe`)
    or parquet, by its suffix, atomically (a killed run leaves no half-written table), and record it."""
    if path.suffix not in (".parquet", ".csv"):
        raise ValueError(f"no table format for {path.name!r}: .csv or .parquet")
    with atomic_path(path) as tmp:
        if path.suffix == ".parquet":
            frame.write_parquet(tmp)
        else:
            write_csv(frame, tmp)  # names come from the input
    section.written.append(path)
    return path


def write_tables(section: Section, folder: Path, tables: Iterable[tuple[str, pl.DataFrame | None]],
                 *, suffix: str = ".csv") -> list[Path]:
    """Write each ``(name, frame)`` as ``folder/<name><suffix>`` (``None`` frames are left out) and record them."""
    return [write_table(section, frame, folder / f"{name}{suffix}") for name, frame in tables if frame is not None]


def write_text(section: Section, path: Path, text: str) -> Path:
    """Write ``text`` and a final newline to ``path`` (UTF-8: summaries, LaTeX) and record it."""
    atomic_write(path, (text + "\n").encode("utf-8"))  # whole or absent, never half a summary
    section.written.append(path)
    return path


def write_json(section: Section, path: Path, data: Any, *, default: Callable[[Any], Any] | None = None) -> Path:
    """Write ``data`` as indented JSON to ``path`` and record it; ``default`` as :func:`json.dumps`."""
    return write_text(section, path, json.dumps(data, indent=2, default=default))


def write_figures(section: Section, folder: Path, figures: Iterable[tuple[str, Any]], *, prefix: str = "") -> None:
    """Save each ``(stem, figure)`` as ``folder/<stem>.png`` and ``.pdf``, close it and record it
    under ``prefix + stem`` (the key of ``Section.figures``)."""
    from mechanism.plots.style import close, save_figure  # noqa: PLC0415 - matplotlib: only when a figure is drawn

    for stem, fig in figures:
        section.add_figure(save_figure(fig, folder, stem), prefix + stem)
        close(fig)


def summary_text(result: Any) -> str:
    """A result's own summary as plain lines: its title, then each line indented."""
    summary = result.summary()
    return "\n".join([summary.title, *(f"  {line}" for line in summary.lines)])
