"""Strategy labels for the rows of a trajectory table, from the three places they come from.

A comparison (:func:`mechanism.reweighting`, :func:`mechanism.integration`, :func:`mechanism.track`)
takes one label per trajectory. They come from a table someone else made (:func:`read_labels`),
from a saved :class:`~mechanism.analysis.strategy_space.StrategySpace` (:func:`labels_from_space`),
or from the number of search rounds, a structural baseline that needs no model (:func:`rounds_labels`).

>>> import polars as pl
>>> rounds_labels(pl.DataFrame({"n_rounds": [0, 1, 2, 7]})).tolist()
['0 rounds', '1 round', '2 rounds', '5+ rounds']
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from mechanism.analysis.compare import labels_from_table
from mechanism.analysis.strategy_params import Level
from mechanism.core.cachefile import check_parquet_depth
from mechanism.core.errors import InputError

__all__ = ["read_labels", "labels_from_space", "given_space", "rounds_labels"]


def read_labels(runs: pl.DataFrame, path: str | Path, *, column: str = "strategy") -> np.ndarray:
    """Strategy labels for the rows of ``runs`` from a table keyed by ``arm, question_id, sample_id``.

    Parameters
    ----------
    runs : polars.DataFrame
        The canonical trajectory table the labels are for.
    path : str or Path
        A ``.parquet``, ``.csv`` or ``.jsonl``/``.ndjson`` file with ``arm``, ``question_id``,
        ``sample_id`` and the label column.
    column : str, default "strategy"
        The label column of the file.

    Returns
    -------
    numpy.ndarray
        One label per row of ``runs``, in its order.

    Raises
    ------
    InputError
        The file is missing, of an unknown type, unreadable, nested too deep, or does not
        cover the rows of ``runs``.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError("labels file not found", source=str(path))
    try:
        table = _read_table(path)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise InputError(f"cannot read labels: {' '.join(str(exc).split())[:300]}", source=str(path)) from None
    return labels_from_table(runs, table, column=column, source=str(path))


def _read_table(path: Path) -> pl.DataFrame:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        try:  # a crafted schema nested 1,000 deep would crash polars: refused from the footer
            check_parquet_depth(path, name=path.name)
        except ValueError as exc:
            raise InputError(str(exc), source=str(path), field="schema") from None
        return pl.read_parquet(path)
    if suffix == ".csv":
        return pl.read_csv(path, schema_overrides={"question_id": pl.String})
    if suffix in (".jsonl", ".ndjson"):
        return pl.read_ndjson(path)
    raise InputError(f"unknown labels file type {suffix!r} (use .parquet, .csv or .jsonl)", source=str(path))


def labels_from_space(runs: pl.DataFrame, folder: str | Path, *, cache_dir: str | Path | None = None,
                      progress: bool | None = None, level: Level = "variant",
                      ) -> tuple[np.ndarray, np.ndarray | None, dict[int, str]]:
    """Labels, map coordinates and display names from a saved StrategySpace, each trajectory embedded once.

    Parameters
    ----------
    runs : polars.DataFrame
        The canonical trajectory table to assign.
    folder : str or Path
        The folder :meth:`~mechanism.analysis.strategy_space.StrategySpace.save` wrote.
    cache_dir : str or Path, optional
        Where embeddings are cached.
    progress : bool, optional
        Show progress bars (default: when the terminal is interactive).
    level : {"variant", "family"}, default "variant"
        The strategies as fitted, or their families
        (:meth:`~mechanism.analysis.strategy_space.StrategySpace.describe` with ``level="family"``).

    Returns
    -------
    tuple
        ``(labels, coordinates, names)``: one strategy (or family) id per row of ``runs`` (-1 an outlier),
        the coordinates of the placement (or None), and each strategy's display name.
    """
    from mechanism.analysis.strategy_space import (  # noqa: PLC0415 - scikit-learn and the embedder: only when a saved space is read
        StrategySpace,
        at_level,
        check_level,
        display_names,
    )

    check_level(level)  # before the space is loaded and the runs embedded
    space = StrategySpace.load(folder, cache_dir=cache_dir, progress=progress)
    placement = space.place(runs, map_xy=False)
    described = space.describe(level=level)
    if level == "family":
        described = described.rename({"family": "strategy"})
    return (at_level(placement.labels, space.describe(), level), placement.coordinates,
            display_names(described))


def given_space(space: Any, *, cache_dir: str | Path | None = None, progress: bool | None = None) -> tuple[Any, str]:
    """A fitted StrategySpace as given, or loaded from the folder ``space`` names, and where it
    came from in words (``"the saved space <folder>, applied without refitting"``), for a note."""
    if not isinstance(space, (str, Path)):
        return space, "the given fitted space, applied without refitting"
    from mechanism.analysis.strategy_space import StrategySpace  # noqa: PLC0415 - scikit-learn and the embedder: only when a saved space is read

    return (StrategySpace.load(space, cache_dir=cache_dir, progress=progress),
            f"the saved space {space}, applied without refitting")


def rounds_labels(runs: pl.DataFrame, *, cap: int = 5) -> np.ndarray:
    """A structural baseline stratum per trajectory: its number of search rounds.

    Parameters
    ----------
    runs : polars.DataFrame
        A table with ``n_rounds``.
    cap : int, default 5
        Rounds from ``cap`` on share one stratum, ``"<cap>+ rounds"``.

    Returns
    -------
    numpy.ndarray
        One text label per row of ``runs``.
    """
    rounds = np.minimum(runs["n_rounds"].to_numpy(), cap)
    return np.array([f"{r}+ rounds" if r == cap else f"{r} round{'s' if r != 1 else ''}" for r in rounds])
