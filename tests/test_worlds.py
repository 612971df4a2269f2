"""Strategy discovery on planted worlds written independently of the grammar
(mechanism.worlds): multi-hop search in Search-R1 tags and in ReAct text, customer service in
OpenAI tool_calls. Each is read from its native file with `mechanism.read`, as a user would."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

import mechanism as mx
from mechanism.segmentation import segment
from mechanism.worlds import multihop, service

FAST = "hashing-256"
_GEN = {"multihop": lambda seed: multihop(n_questions=40, seed=seed),
        "multihop_react": lambda seed: multihop(n_questions=40, seed=seed, react=True),
        "service": lambda seed: service(n_questions=40, seed=seed)}
_FITS: dict = {}


def _read(name, seed, tmp):
    world = _GEN[name](seed)
    runs = mx.read(world.write(tmp / f"{name}-{seed}"), format="auto")
    return runs, world.labels_for(runs)


@pytest.fixture(params=list(_GEN))
def fitted(request, tmp_path_factory):
    if request.param not in _FITS:
        tmp = tmp_path_factory.mktemp(request.param)
        runs, truth = _read(request.param, 0, tmp)
        space = mx.StrategySpace(embedder=FAST, random_state=0, progress=False).fit(runs)
        _FITS[request.param] = request.param, runs, truth, space, tmp
    return _FITS[request.param]


def test_native_formats_are_read_as_written(fitted):
    name, runs, truth, _, _ = fitted
    assert runs.height == 320 and not any(t is None for t in truth)


def test_recovers_planted_strategies(fitted):
    name, runs, truth, space, _ = fitted
    ari = adjusted_rand_score(truth, space.labels_)
    assert ari >= 0.85, (name, ari)
    assert space.n_strategies_ in (6, 7)


def test_two_seeds_agree(fitted):
    name, runs, truth, space, _ = fitted
    other = mx.StrategySpace(embedder=FAST, random_state=1, progress=False).fit(runs)
    assert adjusted_rand_score(space.labels_, other.labels_) >= 0.8


def test_saved_space_on_a_fresh_sample_agrees_as_well_as_the_fit(fitted):
    name, runs, truth, space, tmp = fitted
    space.save(tmp / "space")
    loaded = mx.StrategySpace.load(tmp / "space", progress=False)
    fresh, fresh_truth = _read(name, 5, tmp)
    labels = loaded.transform(fresh)
    assert adjusted_rand_score(fresh_truth, labels) >= adjusted_rand_score(truth, space.labels_) - 0.05


def test_spaces_fitted_on_independent_samples_agree(fitted):
    """Two spaces fitted on independent samples label a third sample alike."""
    name, runs, truth, space, tmp = fitted
    other_runs, _ = _read(name, 7, tmp)
    other = mx.StrategySpace(embedder=FAST, random_state=0, progress=False).fit(other_runs)
    third, _ = _read(name, 9, tmp)
    assert adjusted_rand_score(space.transform(third), other.transform(third)) >= 0.8


def test_entity_content_does_not_cluster(fitted):
    """Renderings carry no names, ids or e-mails: the question's content is masked."""
    name, runs, truth, space, _ = fitted
    text = " ".join(space.train_renderings_).lower()
    for q in runs["question"].head(20).to_list():
        for word in q.split():
            w = word.strip("?,.()").lower()
            if "@" in w or w.startswith("#w") or (len(w) > 3 and w[0].isupper()):
                assert w not in text


def test_service_moves_name_tools_and_provenance():
    world = service(n_questions=3, seed=2, arms={"a": {"cancel_confirm": 1.0}})
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        runs = mx.read(world.write(Path(d)), format="openai")
    moves = segment(runs.head(1))
    assert moves["tool"].to_list()[:4] == ["find_user_id_by_email", "get_order_details", "cancel_pending_order",
                                           "get_order_details"]
    # read, change the same order under another tool, read it again
    assert moves["relation"].to_list()[:4] == ["first", "first", "switch", "return"]
    assert moves["sources"].to_list()[:4] == ["user", "user", "user", "user"]


def test_outcome_does_not_define_strategies(fitted):
    """Flipping every success label leaves the strategies unchanged."""
    name, runs, truth, space, _ = fitted
    flipped = runs.with_columns(~runs["correct"])
    again = mx.StrategySpace(embedder=FAST, random_state=0, progress=False).fit(flipped)
    np.testing.assert_array_equal(again.labels_, space.labels_)
