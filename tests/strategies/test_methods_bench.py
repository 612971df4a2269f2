"""The sequence-analysis methods of benchmarks/bench_strategies_methods.py on inputs whose answer
is known: optimal-matching distances against hand-counted edits, and each method recovering
plans that differ in the way it can see."""
from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from mechanism.core.schema import from_records, make_step


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_strategies_methods")


def _world(plans: dict[str, list[str]], n_questions: int = 12, n_samples: int = 2):
    """Every question answered by every plan ``n_samples`` times: (runs, planted labels)."""
    records, truth = [], []
    for q in range(n_questions):
        for name, tools in plans.items():
            for _ in range(n_samples):
                steps = [make_step(tool=t, arguments=json.dumps({"id": f"item{q}-{i}"}),
                                   observation=f"{t} result {q}-{i}") for i, t in enumerate(tools)]
                records.append({"arm": "a", "question_id": f"q{q}", "sample_id": len(records),
                                "question": f"Look up item {q}", "gold": ["x"], "answer": "x", "correct": True,
                                "n_rounds": len(tools), "steps": steps})
                truth.append(name)
    return from_records(records), np.array(truth)


def test_optimal_matching_counts_edits(bench):
    seqs = [("a", "b"), ("a", "c"), ("a",), ("a", "b")]
    dist, inverse = bench.om_distances(seqs, "constant")
    assert inverse.tolist() == [0, 1, 2, 0]  # the repeated sequence is one row
    # a substitution costs 2 (a deletion and an insertion), an insertion 1
    assert dist.tolist() == [[0.0, 2.0, 1.0], [2.0, 0.0, 1.0], [1.0, 1.0, 0.0]]


def test_indelslog_makes_common_tools_cheap_to_insert(bench):
    # "a" in every trajectory, "b" in half: log(2 / (1 + 1)) = 0 and log(2 / 1.5)
    dist, _ = bench.om_distances([("a",), ("a", "b"), ("b", "a"), ("a",)], "indelslog")
    assert dist[0, 1] == pytest.approx(np.log(2 / 1.5))
    assert dist[1, 2] == pytest.approx(0.0)  # a tool every trajectory holds moves for free


def test_every_method_recovers_plans_of_different_tools(bench):
    runs, truth = _world({"look": ["search", "open"], "ask": ["ask_user"], "calc": ["calc", "calc", "calc"]})
    assert adjusted_rand_score(truth, bench.om_clusters(runs, "constant")) == pytest.approx(1.0)
    assert adjusted_rand_score(truth, bench.om_clusters(runs, "indelslog")) == pytest.approx(1.0)
    assert adjusted_rand_score(truth, bench.ngram_clusters(runs, seed=0)) == pytest.approx(1.0)


def test_one_markov_chain_explains_plans_that_start_apart(bench):
    # each plan starts with its own tool and runs deterministically: one chain fits them all
    # as well as three do, so BIC keeps one (a mixture separates conflicting transitions only)
    runs, _ = _world({"look": ["search", "open"], "ask": ["ask_user"], "calc": ["calc", "compute"]}, n_questions=60)
    assert len(set(bench.markov_clusters(runs, seed=0).tolist())) == 1


def test_order_alone_is_seen_by_edits_and_chains(bench):
    runs, truth = _world({"lookup_first": ["lookup", "update"], "update_first": ["update", "lookup"]})
    assert adjusted_rand_score(truth, bench.om_clusters(runs, "constant")) == pytest.approx(1.0)
    assert adjusted_rand_score(truth, bench.markov_clusters(runs, seed=0)) == pytest.approx(1.0)


def test_rare_tools_do_not_hide_the_chains(bench):
    # the order test's two plans, each trajectory ending on one of 30 rare tools: BIC counts the
    # transitions met, not every cell of a 33 x 33 matrix, so the two chains still stand
    plans = {f"{order}{i}": [*steps, f"rare{i}"] for i in range(30)
             for order, steps in (("lookup_first", ["lookup", "update"]), ("update_first", ["update", "lookup"]))}
    runs, truth = _world(plans, n_questions=4, n_samples=2)
    order = np.asarray([t.rstrip("0123456789") for t in truth])
    assert adjusted_rand_score(order, bench.markov_clusters(runs, seed=0)) == pytest.approx(1.0)


def test_the_choice_counts_worlds_below_the_floor_first(bench):
    table = {"steady": {"x": 0.8, "y": 0.8, "z": 0.1}, "peaky": {"x": 1.0, "y": 0.5, "z": 0.9}}
    floors = {"x": 0.7, "y": 0.7, "z": 0.0}
    assert bench.choose(table, floors, ["x", "y"]) == "steady"  # peaky is below y's floor
    assert bench.choose(table, floors, ["x", "z"]) == "peaky"  # neither below: the higher mean


def test_the_min_share_sweep_records_each_value_and_the_choice_leaving_a_world_out(load_benchmark, tmp_path,
                                                                                   monkeypatch):
    """benchmarks/bench_strategies_min_share.py, small: one row per world with every value's ARI,
    the value the other world chooses and whether it is below the floor, then the mean and the
    count of worlds below the floor per value."""
    monkeypatch.setenv("BENCH_RESULTS_DIR", str(tmp_path))
    sweep = load_benchmark("bench_strategies_min_share")
    sweep.main(["--worlds", "service", "multihop", "--seeds", "0", "--n", "12", "--values", "0.07", "0.5",
                "--embedder", "hashing-64"])
    record = json.loads((tmp_path / "bench_strategies_min_share.json").read_text())
    rows = {r["world"]: r for r in record["rows"]}
    assert set(rows) == {"service", "multihop", "mean", "worlds below floor"}
    for world in ("service", "multihop"):
        row = rows[world]
        assert row["chosen leaving it out"] in ("min_share 0.07", "min_share 0.5")
        assert row["its ARI"] == row[row["chosen leaving it out"]]
        assert row["below floor"] == ("yes" if row["its ARI"] < row["floor"] - 1e-9 else "")
        # min_share 0.5 leaves at most two strategies: never better than 0.07 on these worlds
        assert row["min_share 0.5"] <= row["min_share 0.07"] + 1e-9, world
    assert "Folds:" in record["notes"]


def test_arm_power_matches_the_exact_chance_on_a_table_small_enough_to_enumerate(load_benchmark):
    """benchmarks/bench_strategies_arm_power.py's simulated power against the exact probability,
    summed over every table of one question (four trajectories per arm), and its two limits: arms
    that take two strategies alike are separated at most at the test's level, arms that swap them
    nearly always."""
    from itertools import product

    from scipy.stats import multinomial

    from mechanism.analysis._strategies.clustering import VARIANT_ALPHA
    from mechanism.analysis._strategies.families import arm_test

    power = load_benchmark("bench_strategies_arm_power")
    a, b = np.array([0.5, 0.1]), np.array([0.2, 0.6])
    n = power.SAMPLES
    outcomes = [(i, j) for i in range(n + 1) for j in range(n + 1 - i)]
    exact = 0.0
    for (a0, b0), (a1, b1) in product(outcomes, outcomes):
        chance = (multinomial.pmf([a0, b0, n - a0 - b0], n, [a[0], b[0], 1 - a[0] - b[0]])
                  * multinomial.pmf([a1, b1, n - a1 - b1], n, [a[1], b[1], 1 - a[1] - b[1]]))
        exact += chance * (arm_test(np.array([[a0, a1], [b0, b1]], dtype=float)) < VARIANT_ALPHA)
    simulated = power.separation_power(a, b, 1, draws=4000, rng=np.random.default_rng(0))
    assert abs(simulated - exact) < 0.03, (simulated, exact)
    alike = power.separation_power(np.array([0.2, 0.2]), np.array([0.1, 0.1]), 60, draws=400,
                                   rng=np.random.default_rng(1))
    assert alike <= VARIANT_ALPHA + 0.05
    swapped = power.separation_power(np.array([0.3, 0.05]), np.array([0.05, 0.3]), 60, draws=200,
                                     rng=np.random.default_rng(2))
    assert swapped > 0.99
