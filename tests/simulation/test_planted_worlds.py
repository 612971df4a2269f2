"""One planted-world protocol: the simulator and every world of mechanism.datasets.worlds offer
``runs``, ``truth``, ``planted`` and one truth join; worlds take ``random_state`` (int, Generator or
None)."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from mechanism.core.errors import InputError
from mechanism.datasets.simulation import Simulation, simulate
from mechanism.datasets.worlds import PlantedWorld, World, join_truth, mixture_planted, multihop, service, webshop

KEYS = ["arm", "question_id", "sample_id"]
GENERATORS = {"multihop": multihop, "service": service, "webshop": webshop}


def _by_hand(runs: pl.DataFrame, truth: pl.DataFrame) -> list:
    """The planted strategy of each row of runs, looked up row by row."""
    index = {(a, q, s): st for a, q, s, st in truth.select(*KEYS, "strategy").iter_rows()}
    return [index.get(key) for key in runs.select(KEYS).iter_rows()]


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_every_world_is_a_planted_world_with_one_truth_join(name):
    world = GENERATORS[name](n_questions=6, n_samples=2, random_state=3)
    assert isinstance(world, World) and isinstance(world, PlantedWorld)
    runs = world.runs  # read back from the native records with mechanism.read
    assert runs.height == world.truth.height == len(world.records)
    shuffled = runs.sample(fraction=1.0, shuffle=True, seed=1)
    assert world.labels_for(shuffled).tolist() == _by_hand(shuffled, world.truth)
    assert world.join_truth(shuffled).select(KEYS).equals(shuffled.select(KEYS))
    # the planted values: arms differ only in their mixture, so the split is all composition
    planted = world.planted
    for arm, split in planted["split"].items():
        part = split["all"]
        assert part["within"] == 0.0 and part["pure_reweighting"]
        assert part["total"] == pytest.approx(planted["accuracy"][arm]["all"] - planted["accuracy"]["base"]["all"])


def test_the_simulator_is_a_planted_world_with_the_same_join():
    sim = simulate(n_questions=4, n_samples=2, arms=("base", "rl"), random_state=0, progress=False)
    assert isinstance(sim, Simulation) and isinstance(sim, PlantedWorld)
    shuffled = sim.runs.sample(fraction=1.0, shuffle=True, seed=2)
    assert sim.labels_for(shuffled).tolist() == _by_hand(shuffled, sim.truth)
    joined = sim.join_truth(columns=["correct", "n_rounds"])
    assert (joined["correct"] == sim.runs["correct"]).all() and (joined["n_rounds"] == sim.runs["n_rounds"]).all()
    assert set(sim.planted["split"]["rl"]["all"]) >= {"total", "composition", "within", "pure_reweighting"}
    assert set(sim.planted["accuracy"]["base"]) >= {"all"}


def test_join_truth_keeps_unknown_rows_and_refuses_a_duplicated_truth():
    runs = pl.DataFrame({"arm": ["a", "a"], "question_id": ["q1", "q9"], "sample_id": [0, 0]})
    truth = pl.DataFrame({"arm": ["a"], "question_id": ["q1"], "sample_id": [0], "strategy": ["x"]})
    assert join_truth(runs, truth)["strategy"].to_list() == ["x", None]
    with pytest.raises(InputError, match="twice"):
        join_truth(runs, pl.concat([truth, truth]))
    with pytest.raises(InputError, match="no column 'planned'"):
        join_truth(runs, truth, columns=["planned"])


def test_mixture_planted_by_brute_force():
    arms = {"base": {"a": 0.5, "b": 0.3, "c": 0.2}, "rl": {"a": 0.1, "b": 0.6, "c": 0.3}}
    success = {"a": 0.2, "b": 0.9, "c": 0.5}
    v = mixture_planted(arms, success)
    acc = {arm: sum(p * success[s] for s, p in mix.items()) for arm, mix in arms.items()}
    assert v["accuracy"]["rl"]["all"] == pytest.approx(acc["rl"])
    # Kitagawa's symmetric split with equal success in both arms: within = 0, composition = total
    comp = sum((arms["rl"][s] - arms["base"][s]) * (success[s] + success[s]) / 2 for s in success)
    assert v["split"]["rl"]["all"]["composition"] == pytest.approx(comp) == pytest.approx(acc["rl"] - acc["base"])
    assert v["base"] == "base" and "base" not in v["split"]


def test_planted_accuracy_is_what_a_large_world_shows():
    world = service(n_questions=200, n_samples=4, random_state=0)
    observed = world.runs.group_by("arm").agg(pl.col("correct").mean())
    for arm, acc in observed.iter_rows():
        assert acc == pytest.approx(world.planted["accuracy"][arm]["all"], abs=0.04)


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_worlds_take_random_state(name):
    gen = GENERATORS[name]
    new = gen(n_questions=3, n_samples=2, random_state=5)
    assert gen(n_questions=3, n_samples=2, random_state=5).records == new.records
    # a Generator is used as it is; the same draws give the same world
    assert gen(n_questions=3, n_samples=2, random_state=np.random.default_rng(5)).records == new.records
    assert gen(n_questions=3, n_samples=2, random_state=None).truth.height == new.truth.height
    with pytest.raises(InputError, match="random_state"):
        gen(n_questions=3, random_state="five")
