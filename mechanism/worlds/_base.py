"""The result of a planted world, and the random names its generators draw."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

_ONSETS = ("b", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "ch", "sh", "th", "br", "tr")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou", "ea")
_CODAS = ("", "", "n", "r", "l", "s", "th", "m")


@dataclass
class World:
    """Trajectories of one planted world in their native format, with the planted truth.

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
    """

    name: str
    format: str
    records: list[dict[str, Any]]
    truth: pl.DataFrame

    def write(self, folder: str | os.PathLike) -> Path:
        """Write the records as ``folder/<name>.jsonl`` (and the truth as ``truth.csv``)."""
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{self.name}.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            for rec in self.records:
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
        from mechanism.names import write_csv

        write_csv(self.truth, out / "truth.csv")
        return path

    def labels_for(self, runs: pl.DataFrame) -> np.ndarray:
        """The planted strategy of each row of ``runs`` (read from this world's file)."""
        keys = ["arm", "question_id", "sample_id"]
        joined = runs.select(keys).join(self.truth, on=keys, how="left", maintain_order="left")
        return joined["strategy"].to_numpy()


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


def chat_world(name_: str, format_: str, rng: np.random.Generator, tasks: list[tuple[str, Any]],
               arms: dict[str, dict[str, float]], n_samples: int,
               episode: Callable[[np.random.Generator, str, Any], list[dict[str, Any]]],
               success: dict[str, float]) -> World:
    """A world of chat transcripts: for every arm, task and sample, a strategy drawn from the
    arm's mixture, the episode's ``messages`` from ``episode(rng, strategy, task)``, and a
    success label drawn with the strategy's rate (random within it: the outcome never tells
    strategies apart)."""
    records, truth = [], []
    for arm, mixture in arms.items():
        for qid, task in tasks:
            for s in range(n_samples):
                strategy = draw(rng, mixture)
                messages = episode(rng, strategy, task)
                records.append({"arm": arm, "question_id": qid, "sample_id": s, "gold": [],
                                "correct": bool(rng.random() < success[strategy]), "messages": messages})
                truth.append((arm, qid, s, strategy))
    frame = pl.DataFrame(truth, schema={"arm": pl.String, "question_id": pl.String, "sample_id": pl.Int64,
                                        "strategy": pl.String}, orient="row")
    return World(name=name_, format=format_, records=records, truth=frame)
