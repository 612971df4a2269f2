"""A fitted space finds the pairs its fit joined by digest: applied to its own runs (or to runs
that share renderings) it asks the embedder only for new renderings, and what it assigns is what
embedding every rendering again assigns; saved and loaded, the same; a space saved before the
digests were kept is applied as before."""
from __future__ import annotations

import json

import numpy as np

from mechanism.analysis.embed import Embedder
from mechanism.analysis.strategy_space import StrategySpace
from mechanism.datasets.simulation import simulate


class Counting(Embedder):
    """A model-free embedder that counts the texts it is asked to encode."""

    def __init__(self) -> None:
        super().__init__("counting-known-model", progress=False)
        self.asked: list[str] = []

    def _encode(self, texts):
        self.asked += list(texts)
        out = np.array([[len(t) + 1.0, t.count("a") + 1.0, t.count("s") + 1.0, t.count(">") + 1.0] for t in texts],
                       np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def _fitted():
    runs = simulate(n_questions=20, n_samples=4, random_state=3, progress=False).runs
    embedder = Counting()
    space = StrategySpace(embedder=embedder, n_bootstrap=0, progress=False).fit(runs)
    return runs, space, embedder


def test_the_fitted_runs_are_placed_without_the_embedder():
    runs, space, embedder = _fitted()
    asked = len(embedder.asked)
    placed = space.place(runs)
    assert len(embedder.asked) == asked  # every pair was joined by the fit
    assert (placed.assigned["strategy"].to_numpy() == space.labels_).all()
    assert placed.assigned["distance"].max() == 0.0  # each row is its own training row
    space.known_pairs_ = None  # as a space saved before the digests: every rendering embedded again
    again = space.place(runs)
    assert len(embedder.asked) > asked
    assert again.assigned.equals(placed.assigned)
    assert np.array_equal(again.coordinates, placed.coordinates) and np.array_equal(again.map_xy, placed.map_xy)


def test_new_runs_embed_only_their_new_renderings():
    runs, space, embedder = _fitted()
    other = simulate(n_questions=20, n_samples=4, random_state=4, progress=False).runs
    seen = set(embedder.asked)
    embedder.asked.clear()
    with_known = space.assign(other)
    assert embedder.asked and not set(embedder.asked) & seen  # only renderings the fit never met
    space.known_pairs_ = None
    assert space.assign(other).equals(with_known)


def test_saved_and_loaded_the_digests_serve_alike(tmp_path):
    runs, space, embedder = _fitted()
    space.save(tmp_path / "space")
    config = json.loads((tmp_path / "space" / "space.json").read_text())
    assert {"known_pairs", "known_rows"} <= set(config["arrays"])
    loaded = StrategySpace.load(tmp_path / "space", embedder=embedder)
    assert np.array_equal(loaded.known_pairs_, space.known_pairs_)
    asked = len(embedder.asked)
    assert loaded.assign(runs).equals(space.assign(runs)) and len(embedder.asked) == asked


def test_a_space_saved_without_digests_loads_and_embeds(tmp_path):
    runs, space, embedder = _fitted()
    space.known_pairs_ = space.known_rows_ = None  # as saved by a version that kept none
    space.save(tmp_path / "old")
    assert not (tmp_path / "old" / "known_pairs.npy").exists()
    loaded = StrategySpace.load(tmp_path / "old", embedder=embedder)
    assert getattr(loaded, "known_pairs_", None) is None
    asked = len(embedder.asked)
    assert (loaded.assign(runs)["strategy"].to_numpy() == space.labels_).all() and len(embedder.asked) > asked
