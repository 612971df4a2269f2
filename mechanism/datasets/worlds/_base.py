"""The planted-world protocol, one implementation of it for worlds in native files, and the
random names their generators draw.

A *planted world* is any generator of trajectories whose truth is known: the built-in simulator
(:class:`mechanism.datasets.simulation.Simulation`) and every world here (:class:`World`). Each has

- ``runs``: the canonical trajectory table (a world in native files reads them back with
  :func:`mechanism.read`, as a user's files are read);
- ``truth``: one row per trajectory, keyed by :data:`TRUTH_KEYS`, with at least the planted
  ``strategy``;
- ``planted``: the expected values the analyses should recover (JSON-ready), in one shape:
  ``accuracy[arm][category]`` and ``split[treated][category]`` with ``total``,
  ``composition``, ``within`` and ``pure_reweighting`` (category ``"all"`` always present);
- ``join_truth(runs)`` / ``labels_for(runs)``: the truth of each row of any table read from it,
  in that table's row order (:func:`join_truth`, the one join every caller uses).

:class:`PlantedWorld` states it as a :class:`typing.Protocol`, so a new world fits by having
these members; :func:`chat_world` builds a :class:`World` from a few callables.
"""
from __future__ import annotations

import functools
import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import polars as pl

from mechanism.core.errors import InputError
from mechanism.core.names import write_csv
from mechanism.core.options import RandomState, as_generator
from mechanism.readers import read

#: the columns that identify a trajectory in ``runs`` and in ``truth``
TRUTH_KEYS = ("arm", "question_id", "sample_id")


def join_truth(runs: pl.DataFrame, truth: pl.DataFrame, *, columns: Sequence[str] | None = None) -> pl.DataFrame:
    """The truth of each row of ``runs``: its :data:`TRUTH_KEYS` and the truth's ``columns``
    (default: all), in ``runs``' row order; a row the truth does not know gets nulls.

    Raises
    ------
    InputError
        When ``truth`` holds a trajectory twice (the join would duplicate rows of ``runs``).

    Examples
    --------
    >>> runs = pl.DataFrame({"arm": ["b", "a"], "question_id": ["q", "q"], "sample_id": [0, 0]})
    >>> truth = pl.DataFrame({"arm": ["a", "b"], "question_id": ["q", "q"], "sample_id": [0, 0],
    ...                       "strategy": ["x", "y"]})
    >>> join_truth(runs, truth)["strategy"].to_list()
    ['y', 'x']
    """
    keys = list(TRUTH_KEYS)
    wanted = [c for c in (truth.columns if columns is None else columns) if c not in keys]
    missing = [c for c in [*keys, *wanted] if c not in truth.columns]
    if missing:
        raise InputError(f"the truth has no column {missing[0]!r}", field="truth")
    if truth.select(keys).is_duplicated().any():
        raise InputError("the truth holds a trajectory twice (same arm, question_id, sample_id)", field="truth")
    return runs.select(keys).join(truth.select(*keys, *wanted), on=keys, how="left", maintain_order="left")


@runtime_checkable
class PlantedWorld(Protocol):
    """What every planted world offers (the simulator and :mod:`mechanism.datasets.worlds` alike)."""

    @property
    def runs(self) -> pl.DataFrame: ...

    @property
    def truth(self) -> pl.DataFrame: ...

    @property
    def planted(self) -> dict[str, Any]: ...

    def join_truth(self, runs: pl.DataFrame | None = None, *,
                   columns: Sequence[str] | None = None) -> pl.DataFrame: ...

    def labels_for(self, runs: pl.DataFrame | None = None) -> np.ndarray: ...


class TruthJoin:
    """``join_truth`` and ``labels_for`` of a planted world, from its ``runs`` and ``truth``."""

    def join_truth(self, runs: pl.DataFrame | None = None, *,
                   columns: Sequence[str] | None = None) -> pl.DataFrame:
        """The truth of each row of ``runs`` (default: the world's own runs), in its row order
        (:func:`join_truth`)."""
        return join_truth(self.runs if runs is None else runs, self.truth, columns=columns)

    def labels_for(self, runs: pl.DataFrame | None = None) -> np.ndarray:
        """The planted strategy of each row of ``runs`` (default: the world's own runs)."""
        return self.join_truth(runs, columns=["strategy"])["strategy"].to_numpy()


def mixture_planted(arms: Mapping[str, Mapping[str, float]], success: Mapping[str, float], *,
                    base: str | None = None) -> dict[str, Any]:
    """The planted values of a world whose arms differ only in their strategy mixture and whose
    strategies succeed at a fixed rate: shares, accuracy, and the composition / within split
    (``within`` exactly 0: pure reweighting), in :class:`PlantedWorld`'s shape.

    >>> v = mixture_planted({"base": {"a": 1, "b": 1}, "rl": {"a": 3, "b": 1}}, {"a": 1.0, "b": 0.0})
    >>> v["accuracy"]["rl"]["all"], v["split"]["rl"]["all"]["composition"]
    (0.75, 0.25)
    """
    shares = {arm: {s: float(p) / float(sum(mix.values())) for s, p in mix.items()} for arm, mix in arms.items()}
    accuracy = {arm: {"all": float(sum(p * success[s] for s, p in sh.items()))} for arm, sh in shares.items()}
    base = base if base is not None else ("base" if "base" in arms else next(iter(arms), None))
    split = {}
    for arm in shares:
        if arm == base:
            continue
        strategies = set(shares[arm]) | set(shares[base])
        composition = sum((shares[arm].get(s, 0.0) - shares[base].get(s, 0.0)) * success[s] for s in strategies)
        split[arm] = {"all": {"total": float(composition), "composition": float(composition), "within": 0.0,
                              "pure_reweighting": True}}
    return {"base": base, "shares": shares, "success": {s: float(r) for s, r in success.items()},
            "accuracy": accuracy, "split": split}


_ONSETS = ("b", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "ch", "sh", "th", "br", "tr")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou", "ea")
_CODAS = ("", "", "n", "r", "l", "s", "th", "m")


@dataclass(eq=False)
class World(TruthJoin):
    """Trajectories of one planted world in their native format, with the planted truth
    (a :class:`PlantedWorld`).

    Attributes
    ----------
    name
        The world's name.
    format
        The ``mechanism.read`` format of :attr:`records`.
    records
        One JSON-serialisable record per trajectory, in the native format.
    truth
        ``arm, question_id, sample_id, strategy``: the strategy planted in each record.
    planted
        The expected values the analyses should recover (:func:`mixture_planted`).
    """

    name: str
    format: str
    records: list[dict[str, Any]]
    truth: pl.DataFrame
    planted: dict[str, Any] = field(default_factory=dict)

    @functools.cached_property
    def runs(self) -> pl.DataFrame:
        """The canonical table, read from the native records with :func:`mechanism.read` as a
        user's file is (once; the file is written to a temporary folder and removed)."""
        with tempfile.TemporaryDirectory(prefix="mechanism-world-") as tmp:
            return read(self.write_records(Path(tmp)), format=self.format)

    def write_records(self, folder: str | os.PathLike) -> Path:
        """Write the records alone as ``folder/<name>.jsonl`` (no truth beside them)."""
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{self.name}.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            for rec in self.records:
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
        return path

    def write(self, folder: str | os.PathLike) -> Path:
        """Write the records as ``folder/<name>.jsonl`` (and the truth as ``truth.csv``)."""
        path = self.write_records(folder)
        write_csv(self.truth, Path(folder) / "truth.csv")
        return path


def word(rng: np.random.Generator, syllables: int = 2) -> str:
    """A pronounceable made-up word (lower case)."""
    return "".join(str(rng.choice(_ONSETS)) + str(rng.choice(_VOWELS)) + str(rng.choice(_CODAS))
                   for _ in range(syllables))


def name(rng: np.random.Generator) -> str:
    """A made-up capitalised name."""
    return word(rng, int(rng.integers(1, 3))).capitalize()


def pick(rng: np.random.Generator, options: tuple[str, ...] | list[str]) -> str:
    return options[int(rng.integers(len(options)))]


def draw(rng: np.random.Generator, mixture: dict[str, float]) -> str:
    keys = list(mixture)
    p = np.array([mixture[k] for k in keys], dtype=float)
    return keys[int(rng.choice(len(keys), p=p / p.sum()))]


def planted_world(name_: str, format_: str, rng: np.random.Generator, tasks: list[tuple[str, Any]],
                  arms: dict[str, dict[str, float]], n_samples: int,
                  episode: Callable[[np.random.Generator, str, str, int, str, Any], tuple[dict[str, Any], tuple]],
                  success: dict[str, float], *, truth_schema: Mapping[str, Any] | None = None) -> World:
    """A world in any native format: for every arm, task and sample, a strategy drawn from the
    arm's mixture and the record ``episode(rng, arm, question_id, sample_id, strategy, task)``
    returns with the values of the truth's extra columns (``truth_schema``: name -> polars type,
    in order); the episode draws the success label with the strategy's rate in ``success``
    (random within it: the outcome never tells strategies apart)."""
    records, truth = [], []
    for arm, mixture in arms.items():
        for qid, task in tasks:
            for s in range(n_samples):
                strategy = draw(rng, mixture)
                record, extra = episode(rng, arm, qid, s, strategy, task)
                records.append(record)
                truth.append((arm, qid, s, strategy, *extra))
    return World(name=name_, format=format_, records=records, truth=truth_frame(truth, truth_schema),
                 planted=mixture_planted(arms, success))


def chat_world(name_: str, format_: str, rng: np.random.Generator, tasks: list[tuple[str, Any]],
               arms: dict[str, dict[str, float]], n_samples: int,
               episode: Callable[[np.random.Generator, str, Any], Any], success: dict[str, float], *,
               truth_schema: Mapping[str, Any] | None = None) -> World:
    """A world of chat transcripts (:func:`planted_world`): each record holds the episode's
    ``messages`` from ``episode(rng, strategy, task)`` and a success label drawn after them;
    with ``truth_schema`` the episode returns ``(messages, values of the truth's extra columns)``."""
    def record(rng: np.random.Generator, arm: str, qid: str, s: int, strategy: str, task: Any
               ) -> tuple[dict[str, Any], tuple]:
        out = episode(rng, strategy, task)
        messages, extra = out if truth_schema is not None else (out, ())
        return {"arm": arm, "question_id": qid, "sample_id": s, "gold": [],
                "correct": bool(rng.random() < success[strategy]), "messages": messages}, tuple(extra)

    return planted_world(name_, format_, rng, tasks, arms, n_samples, record, success, truth_schema=truth_schema)


def truth_frame(rows: list[tuple], extra: Mapping[str, Any] | None = None) -> pl.DataFrame:
    """The truth table of a world from ``(arm, question_id, sample_id, strategy, *extra)`` rows;
    ``extra``: the further columns' names and polars types, in order."""
    return pl.DataFrame(rows, schema={"arm": pl.String, "question_id": pl.String, "sample_id": pl.Int64,
                                      "strategy": pl.String, **(extra or {})}, orient="row")


def world_generator(random_state: RandomState) -> np.random.Generator:
    """The Generator of a world's generator function from its ``random_state`` (int, Generator or None)."""
    return as_generator(random_state)
