"""The move-token columns read on their first principal axes (``StrategySpace(token_rank=...)``):
learnt in ``fit`` only, applied alike to new runs and after a save, and off with ``None``."""
from __future__ import annotations

import numpy as np
import pytest

from mechanism.analysis._strategies.features import project_tokens, token_basis
from mechanism.analysis.strategy_space import StrategySpace
from mechanism.core.errors import InputError
from mechanism.datasets.worlds import todo


@pytest.fixture(scope="module")
def world():
    return todo(n_questions=12, n_samples=2, random_state=0).runs


def test_a_noise_column_leaves_the_distances_on_the_first_axes():
    # two strategies (four tokens each way) and six tokens drawn at 0.3 whatever the strategy
    rng = np.random.default_rng(1)
    strategy = np.repeat([[1, 1, 1, 1, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1, 1, 1]], 100, axis=0)
    block = np.hstack([strategy, (rng.random((200, 6)) < 0.3)]).astype(np.float32)
    rows = np.hstack([block, np.ones((200, 3), np.float32)])  # the columns after the tokens stay
    projected = project_tokens(rows, 14, token_basis(block, np.ones(200), rank=1))
    assert np.array_equal(projected[:, 14:], rows[:, 14:])
    within = np.linalg.norm(projected[0, :14] - projected[1:100, :14], axis=1)
    across = np.linalg.norm(projected[0, :14] - projected[100:, :14], axis=1)
    # on the first axis members of one strategy coincide up to the noise's small share of it
    assert within.max() < 0.5 < 2.5 < across.min()
    assert within.max() < np.linalg.norm(rows[0, :14] - rows[1:100, :14], axis=1).max()


def test_counts_weigh_the_axes_as_the_trajectories_do():
    block = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32)
    repeated = np.repeat(block, [5, 1, 1], axis=0)
    a_mean, a_axes = token_basis(block, np.array([5, 1, 1]), rank=1)
    b_mean, b_axes = token_basis(repeated, np.ones(7), rank=1)
    assert np.allclose(a_mean, b_mean) and np.allclose(a_axes, b_axes)
    assert token_basis(block, np.ones(3), rank=None) is None


def test_fit_transform_and_save_read_alike(world, tmp_path):
    space = StrategySpace(embedder="hashing-64", n_bootstrap=0, progress=False, token_rank=5).fit(world)
    assert space.token_axes_.shape == (5, len(space.vocabulary_))
    assert (space.transform(world) == space.labels_).all()
    space.save(tmp_path / "space")
    loaded = StrategySpace.load(tmp_path / "space")
    assert np.array_equal(loaded.token_axes_, space.token_axes_)
    assert (loaded.transform(world) == space.labels_).all()


def test_none_keeps_every_column(world):
    off = StrategySpace(embedder="hashing-64", n_bootstrap=0, progress=False, token_rank=None).fit(world)
    wide = StrategySpace(embedder="hashing-64", n_bootstrap=0, progress=False, token_rank=10**6).fit(world)
    assert not hasattr(off, "token_axes_") and not hasattr(wide, "token_axes_")
    assert np.array_equal(off.labels_, wide.labels_)
    with pytest.raises(InputError, match="token_rank"):
        StrategySpace(token_rank=0, progress=False).fit(world)
