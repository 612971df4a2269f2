"""The cut's strategies refined as a mixture of move-token profiles
(``mechanism.analysis._strategies.mixture``, ``StrategySpace(refine=...)``)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_matrix
from sklearn.metrics import adjusted_rand_score

import mechanism as mx
from mechanism.analysis._strategies.features import presence_matrix
from mechanism.analysis._strategies.mixture import MIXTURE_ALPHA, refine
from mechanism.datasets.worlds import handoff


def _likeliest(x: np.ndarray, w: np.ndarray, labels: np.ndarray, alpha: float = MIXTURE_ALPHA) -> np.ndarray:
    """Each row's likeliest strategy under the profiles of ``labels``, written out: the chance of
    each token in each strategy ((count-weighted holders + alpha) / (members + 2 alpha)) and its
    share; -1 where a strategy is empty."""
    ids = np.unique(labels)
    score = np.full((len(x), len(ids)), -np.inf)
    for j, c in enumerate(ids):
        m = labels == c
        theta = (w[m] @ x[m] + alpha) / (w[m].sum() + 2 * alpha)
        score[:, j] = np.log(w[m].sum() / w.sum()) + x @ np.log(theta) + (1 - x) @ np.log(1 - theta)
    return ids[score.argmax(axis=1)]


def _planted(seed: int, n: int = 120) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two strategies: `archive` always searches the archive; `clarify` always asks first (a
    rare token) and searches either store at random; a noise step at 0.3 whatever the strategy.
    Columns: ask_user, archive, conversation, noise."""
    rng = np.random.default_rng(seed)
    truth = (rng.random(n) < 0.4).astype(int)
    store = rng.random(n) < 0.5
    x = np.column_stack([truth == 1, (truth == 0) | store, (truth == 1) & ~store, rng.random(n) < 0.3]).astype(float)
    return x, truth, rng.integers(1, 4, n).astype(float)


def test_a_defining_step_outweighs_a_choice_made_at_random():
    x, truth, w = _planted(1)
    # the cut put a sixth of clarify's archive searches with `archive`: one token apart from
    # it, where they are two apart from their own strategy's conversation searches
    strayed = (truth == 1) & (x[:, 1] == 1) & (np.arange(len(x)) % 6 == 0)
    cut = np.where(strayed, 0, truth)
    assert adjusted_rand_score(truth, cut) < 0.9
    out = refine(x, w, cut, np.zeros(len(x), int))
    assert adjusted_rand_score(truth, out) == pytest.approx(1.0)
    # dense or sparse, the same strategies
    assert refine(csr_matrix(x), w, cut, np.zeros(len(x), int)).tolist() == out.tolist()


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 5))
def test_the_result_is_a_fixed_point_of_the_written_out_likelihood(seed, k):
    rng = np.random.default_rng(seed)
    x = (rng.random((60, 7)) < rng.random(7)).astype(float)
    w = rng.integers(1, 5, 60).astype(float)
    out = refine(x, w, rng.integers(0, k, 60), np.zeros(60, int))
    # the loop stops where no row would move, unless it ran out of rounds
    assert out.tolist() == _likeliest(x, w, out).tolist() or len(np.unique(out)) == 1
    assert set(out.tolist()) <= set(range(k))


def test_no_row_crosses_a_block_and_outliers_stay():
    x, truth, w = _planted(1)
    blocks = np.zeros(len(x), int)
    blocks[:10] = 1  # ten rows on the other side of a line (a declared kind, calling tools or not)
    cut = truth.copy()
    cut[:10] = 2
    cut[10] = -1
    out = refine(x, w, cut, blocks)
    assert (out[:10] == 2).all()  # alone in their block: nowhere else to go
    assert out[10] == -1
    assert not (out[11:] == 2).any()


def test_one_strategy_or_none_is_left_as_it_is():
    x = np.eye(4)
    assert refine(x, np.ones(4), np.zeros(4, int), np.zeros(4, int)).tolist() == [0, 0, 0, 0]
    assert refine(x, np.ones(4), np.array([-1, -1, 0, 0]), np.zeros(4, int)).tolist() == [-1, -1, 0, 0]


def test_presence_reads_each_vocabulary_token_once():
    m = presence_matrix(["T:a B:a>b T:a", "", "T:z"], ["B:a>b", "T:a"])
    assert m.toarray().tolist() == [[1, 1], [0, 0], [0, 0]]


@pytest.fixture(scope="module")
def handoff_runs(tmp_path_factory):
    world = handoff(n_questions=60, random_state=0)
    runs = mx.read(world.write(tmp_path_factory.mktemp("handoff")), format=world.format)
    return runs, world.labels_for(runs)


def test_the_multi_agent_world_is_recovered_better_refined(handoff_runs):
    # the cut split `direct_handoff` by where the agent asked for the booking reference (a step
    # every strategy takes at random) and put half of it with the bounce-backs; the profiles read
    # the bounce-back's second transfer as its own (seed 0: ARI 0.599 -> 0.723)
    runs, truth = handoff_runs
    kw = dict(random_state=0, n_bootstrap=0, progress=False)
    cut = mx.StrategySpace(refine="none", **kw).fit(runs)
    refined = mx.StrategySpace(**kw).fit(runs)
    assert adjusted_rand_score(truth, cut.labels_) < 0.65
    assert adjusted_rand_score(truth, refined.labels_) > 0.7
    # the labels a fit gives are the labels its space assigns
    assert (refined.transform(runs) == refined.labels_).all()


def test_refine_is_a_checked_and_saved_parameter(handoff_runs, tmp_path):
    with pytest.raises(mx.InputError, match="refine"):
        mx.StrategySpace(refine="em").fit(handoff_runs[0])
    runs = handoff_runs[0].head(80)
    space = mx.StrategySpace(random_state=0, n_bootstrap=0, progress=False, refine="none").fit(runs)
    loaded = mx.StrategySpace.load(space.save(tmp_path / "space"))
    assert loaded.refine == "none"
    assert (loaded.transform(runs) == space.labels_).all()


def test_a_join_is_reported_where_most_of_its_strategy_went():
    from mechanism.analysis._strategies.fitcache import _by_final

    # strategy 5 (rows 0-2) joined a step; the refinement moved its first row to strategy 1
    held = np.array([5, 5, 5, 7])
    final = np.array([1, 0, 0, 1])
    records = [{"merged": True, "joined": 5, "step": "look"}]
    assert _by_final(records, final, held, np.array([1, 2, 2, 9]), "joined", "step") == {0: ["look"]}
    # by trajectories, not rows: a heavy first row keeps it
    assert _by_final(records, final, held, np.array([9, 2, 2, 1]), "joined", "step") == {1: ["look"]}
