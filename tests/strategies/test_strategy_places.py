"""Calls read by their place where the question picks the tools (mechanism.analysis._strategies.places)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

import mechanism as mx
from mechanism.analysis._strategies.places import question_association, read_by_place
from mechanism.analysis.segmentation import TaskCalls, render
from mechanism.core.errors import InputError
from mechanism.core.schema import from_records, make_step
from mechanism.datasets.worlds import gui, service, toolbench

FAST = "hashing-64"


def _read(world, tmp_path):
    runs = mx.read(world.write(tmp_path / world.name), format=world.format)
    return runs, np.asarray([str(t) for t in world.labels_for(runs)])


@pytest.fixture(scope="module")
def api_world(tmp_path_factory):
    """The API-calling world: each request picks which of fourteen APIs are called; the
    strategy is the shape of the calls."""
    runs, truth = _read(toolbench(n_questions=30, random_state=0), tmp_path_factory.mktemp("api"))
    space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False).fit(runs)
    return runs, truth, space


def test_read_by_place_every_call_is_named_by_the_order_its_tool_was_first_called():
    steps = [make_step(tool=t, arguments=json.dumps({"q": a}), observation="ok")
             for t, a in (("geocode", "Oslo"), ("weather_current", "59.9,10.7"), ("geocode", "Bergen"))]
    runs = from_records([{"arm": "base", "question_id": "q0", "sample_id": 0, "question": "Weather in Oslo?",
                          "gold": [], "answer": "cold", "correct": True, "n_rounds": 3, "steps": steps}])
    place = TaskCalls(frozenset({"geocode", "weather_current"}), by_place=True)
    table = render(runs, task_calls=place)
    # every call kept (a renamed run is not collapsed as the task's calls are), each by its place
    assert table["tools"][0] == "task_call_1 > task_call_2 > task_call_1"
    assert render(runs)["tools"][0] == "geocode > weather_current > geocode"
    assert TaskCalls.from_dict(place.to_dict()) == place
    assert TaskCalls.from_dict({"tools": ["a"], "drop": True}).by_place is False  # saved before the reading


def test_the_question_association_is_chance_corrected():
    q = np.repeat(np.arange(30), 8)
    rng = np.random.default_rng(0)
    assert abs(question_association(rng.integers(0, 6, q.size), q)) < 0.02  # drawn per episode
    assert question_association(q % 6, q) > 0.6  # decided by the question
    assert question_association(np.tile(np.arange(8), 30), q) < 0  # every strategy on every question: below chance
    assert question_association(np.full(q.size, -1), q) == 0.0  # outliers only
    assert read_by_place(TaskCalls(frozenset({"a"})), ["a", "a"]) is None  # one tool: nothing to reread


def test_an_agent_whose_requests_pick_its_tools_is_read_by_the_shape_of_its_calls(api_world):
    runs, truth, space = api_world
    test = space.place_association_
    assert test["reading"] == "place" and space.task_calls_.by_place
    assert test["by_place"] <= 0.5 * test["by_name"]
    by_name = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False, task_calls="keep").fit(runs)
    found, named = adjusted_rand_score(truth, space.labels_), adjusted_rand_score(truth, by_name.labels_)
    assert found >= 0.45 and found > named + 0.2, (found, named)
    # a name lists a few of the tools its task calls stand for, the column all of them
    row = space.describe().row(0, named=True)
    assert "task_call_1" in row["name"] and " more)" in row["name"]
    assert len(row["task_variants"]) >= 1
    # the report says how the calls were read, and what the test measured
    from mechanism.report.study import _reading_note

    note = _reading_note(space)
    assert note.startswith("Every call is read by its place") and f"{test['by_name']:.2f} read by tool name" in note
    assert _reading_note(by_name) == ""


def test_a_space_read_by_place_is_saved_and_applied_as_it_was_fitted(api_world, tmp_path):
    runs, _, space = api_world
    loaded = mx.StrategySpace.load(space.save(tmp_path / "space"))
    assert loaded.task_calls_ == space.task_calls_
    assert (loaded.transform(runs) == space.transform(runs)).all()
    config = json.loads((tmp_path / "space" / "space.json").read_text())
    config["task_calls"]["by_place"] = "yes"
    (tmp_path / "space" / "space.json").write_text(json.dumps(config))
    with pytest.raises(InputError, match="task_calls"):
        mx.StrategySpace.load(tmp_path / "space")


def test_an_agent_whose_strategies_do_not_track_the_question_keeps_its_tool_names(tmp_path):
    runs, truth = _read(service(n_questions=30, random_state=0), tmp_path)
    space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False).fit(runs)
    assert not space.task_calls_.by_place
    assert space.place_association_ is None or space.place_association_["reading"] == "name"
    assert adjusted_rand_score(truth, space.labels_) == 1.0


def test_a_question_that_decides_one_step_among_many_leaves_the_tools_their_names(tmp_path, monkeypatch):
    """The phone GUI: the question decides whether the agent types (``type``, about an eighth of
    the calls), and at 30 questions (seed 2) the strategies read by name track the question
    just past the threshold (0.056). Read by place, ``tap``, ``swipe`` and ``search_settings``
    would lose the names that tell its strategies apart."""
    from mechanism.analysis._strategies import places

    runs, truth = _read(gui(n_questions=30, random_state=2), tmp_path)
    # every token column as it is: on the default's first principal axes the strategies read by
    # name track the question less, under the threshold, and the place reading is not tried at all
    space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False, token_rank=None).fit(runs)
    assert space.task_calls_.tools == frozenset({"type"}) and not space.task_calls_.by_place
    assert space.place_association_ is None
    kept = adjusted_rand_score(truth, space.labels_)
    monkeypatch.setattr(places, "PLACE_CALL_SHARE", 0.0)  # the reading tried whatever the share
    tried = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False, token_rank=None).fit(runs)
    assert tried.task_calls_.by_place and tried.place_association_["by_name"] >= places.PLACE_ASSOCIATION
    assert kept > adjusted_rand_score(truth, tried.labels_) + 0.15, kept
