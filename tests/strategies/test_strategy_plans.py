"""Tool plans keep strategies apart: the tree is cut within each plan (the tools a
trajectory calls, in order, a run of one tool read as once or again), so two trajectories that
call other tools are never one strategy by the cut, however close their tokens and wording."""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mechanism as mx
from mechanism.analysis._strategies.clustering import agglomerative
from mechanism.analysis._strategies.features import plan_codes, plan_profiles, tool_plan
from mechanism.analysis.segmentation import render
from mechanism.datasets.worlds import analyst

ROOT = Path(__file__).resolve().parents[2]
OLD_SPACE = ROOT / "tests" / "fixtures" / "spaces" / "f075e91-agglomerative"


def test_a_run_of_one_tool_reads_as_once_or_again():
    assert tool_plan("run_sql") == "run_sql"
    assert tool_plan("run_sql > run_sql") == tool_plan("run_sql > run_sql > run_sql") == "run_sql+"
    assert tool_plan("a > b > a") == "a > b > a"  # order counts: a return to a tool is a step
    assert tool_plan("") == tool_plan(None) == ""


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(1, 4)), max_size=6))
def test_the_plan_depends_on_runs_only_as_once_or_again(runs):
    """Repeating a call inside a run that already holds two changes nothing; a second call does."""
    merged: list[list] = []
    for tool, n in runs:  # adjacent draws of one tool are one run
        if merged and merged[-1][0] == tool:
            merged[-1][1] += n
        else:
            merged.append([tool, n])
    runs = [tuple(r) for r in merged]
    seq = [t for t, n in runs for _ in range(n)]
    longer = [t for t, n in runs for _ in range(n + (n >= 2))]
    assert tool_plan(" > ".join(seq)) == tool_plan(" > ".join(longer))
    if runs and runs[0][1] == 1:
        assert tool_plan(" > ".join(seq)) != tool_plan(" > ".join(seq[:1] + seq))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 30), st.integers(1, 4))
def test_the_cut_never_joins_two_plans(seed, m, n_groups):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(m, 3))
    dist = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    groups = rng.integers(0, n_groups, m)
    labels = agglomerative(dist, np.ones(m), resolution=2.0, linkage="average", min_share=0.0, groups=groups)
    for c in np.unique(labels):
        assert len(np.unique(groups[labels == c])) == 1
    # one group is one tree: the cut of all rows in one plan equals the cut without plans
    same = agglomerative(dist, np.ones(m), resolution=2.0, linkage="average", min_share=0.0,
                         groups=np.zeros(m, np.int64))
    plain = agglomerative(dist, np.ones(m), resolution=2.0, linkage="average", min_share=0.0)
    assert (same == plain).all()


def test_a_small_strategy_joins_one_of_its_own_plan_first():
    # rows 0-1 and 2-3 are one plan, row 4 another; row 3 is nearer row 4 than its own plan
    x = np.array([[0.0], [0.1], [5.0], [9.0], [9.5]])
    dist = np.abs(x - x.T)
    counts = np.array([10, 10, 10, 1, 10])
    groups = np.array([0, 0, 0, 0, 1])
    labels = agglomerative(dist, counts, resolution=1.0, linkage="average", min_share=0.1, groups=groups)
    assert labels[3] == labels[2] != labels[4]
    mixed = agglomerative(dist, counts, resolution=1.0, linkage="average", min_share=0.1)
    assert mixed[3] == mixed[4]


def test_a_strategy_alone_in_its_plan_joins_the_plan_whose_tools_are_most_alike():
    """An optional first step (`a`) that most plans take hardly counts: `a > r`, too small and
    alone in its plan, joins `r`, although in the joined space it lies nearer `a > p`; without
    the profiles it joins the nearest."""
    plans = ["a > r", "r", "a > p", "p", "a > q", "q"]
    dist = np.full((6, 6), 5.0)
    np.fill_diagonal(dist, 0.0)
    dist[0, 1] = dist[1, 0] = 2.0
    dist[0, 2] = dist[2, 0] = 1.5
    counts = np.array([1, 10, 10, 10, 10, 10])
    kw = dict(resolution=1.0, linkage="average", min_share=0.05, groups=plan_codes(plans))
    alike = agglomerative(dist, counts, profiles=plan_profiles(plans), **kw)
    assert alike[0] == alike[1] and len(set(alike.tolist())) == 5
    nearest = agglomerative(dist, counts, **kw)
    assert nearest[0] == nearest[2]
    # the profiles only order joins across plans: with no row too small, nothing moves
    big = np.full(6, 10)
    assert (agglomerative(dist, big, profiles=plan_profiles(plans), **kw) == agglomerative(dist, big, **kw)).all()


def test_plan_profiles_weigh_a_tool_most_plans_call_least():
    x = plan_profiles(["list_alerts > restart", "restart", "list_alerts > post_status", "post_status+", ""]).toarray()
    assert np.allclose((x ** 2).sum(axis=1), 1.0)
    cos = x @ x.T
    assert cos[0, 1] > cos[0, 2]  # restart, rarer than list_alerts, decides
    assert cos[4, :4].max() == 0.0  # no tool called: alike to no plan that calls one
    # a run called again counts its tool twice: nearer a plan that calls it again than once
    y = plan_profiles(["p", "p+", "p > q"]).toarray()
    assert y[1] @ y[0] > 0 and not np.allclose(y[0], y[1])


def test_a_small_strategy_without_tools_stays_apart_and_tool_users_never_join_it():
    """min_share joins across plans, but never across calling tools or not: a rare tool-free
    strategy keeps its own, and a rare tool-using one alone on its side stays too."""
    x = np.array([[0.0], [0.1], [5.0], [5.1], [0.05]])
    dist = np.abs(x - x.T)
    groups = np.array([0, 0, 1, 1, -1])  # row 4 calls no tool, and lies nearest rows 0-1
    labels = agglomerative(dist, np.array([10, 10, 10, 10, 1]), resolution=1.0, linkage="average",
                           min_share=0.2, groups=groups)
    assert len(set(labels[[0, 2, 4]].tolist())) == 3
    only = agglomerative(dist[np.ix_([0, 4], [0, 4])], np.array([1, 20]), resolution=1.0, linkage="average",
                         min_share=0.2, groups=np.array([0, -1]))
    assert only[0] != only[1]  # one tool user among those who call none: still its own


@pytest.fixture(scope="module")
def analyst_runs():
    world = analyst(n_questions=60, random_state=0)
    with tempfile.TemporaryDirectory() as d:
        runs = mx.read(world.write(d), format="openai")
    return runs, world.labels_for(runs)


def _plans_per_strategy(runs, labels):
    plans = [tool_plan(t) for t in render(runs)["tools"].to_list()]
    return {c: sorted({p for p, lab in zip(plans, labels) if lab == c}) for c in np.unique(labels)}


@pytest.mark.slow
def test_on_the_analyst_world_sql_alone_and_sql_then_python_stay_apart(analyst_runs):
    """Measured (seed 0): with one tree, 10 episodes that fetch with SQL and compute in Python
    join the strategy that answers with one query; by plan they cannot, and recovery rises."""
    from sklearn.metrics import adjusted_rand_score

    runs, truth = analyst_runs
    apart = mx.StrategySpace(embedder="hashing-256", n_bootstrap=0, progress=False).fit(runs)
    mixed = mx.StrategySpace(embedder="hashing-256", n_bootstrap=0, progress=False, plans="mixed").fit(runs)
    joined = {"select", "select > run_python"}  # its `run_sql` read by its statements (a query: `select`)
    assert not any(joined <= set(p) for p in _plans_per_strategy(runs, apart.labels_).values())
    assert any(joined <= set(p) for p in _plans_per_strategy(runs, mixed.labels_).values())
    assert adjusted_rand_score(truth, apart.labels_) > adjusted_rand_score(truth, mixed.labels_)


def test_plans_are_saved_and_a_loaded_space_sweeps_as_the_fitted_one(analyst_runs, tmp_path):
    runs, _ = analyst_runs
    space = mx.StrategySpace(embedder="hashing-64", n_bootstrap=0, progress=False).fit(runs)
    assert len(space.train_plans_) == len(space.train_counts_)
    assert len(plan_codes(space.train_plans_)) == len(space.train_plans_)
    loaded = mx.StrategySpace.load(space.save(tmp_path / "s"), progress=False)
    assert loaded.train_plans_ == space.train_plans_ and loaded.plans == "apart"
    assert loaded.sweep([1.0, 1.5, 3.0]).equals(space.sweep([1.0, 1.5, 3.0]))
    assert (loaded.transform(runs) == space.labels_).all()


def test_a_space_saved_before_plans_loads_with_one_tree():
    old = mx.StrategySpace.load(OLD_SPACE, progress=False)
    assert old.plans == "mixed" and old.train_plans_ is None
    assert old.sweep([1.5]).height > 0  # one tree over every row, as it was fitted


def test_plans_is_a_checked_choice():
    with pytest.raises(mx.InputError, match="plans"):
        mx.StrategySpace(plans="sometimes").fit(analyst(n_questions=1, n_samples=1).runs)


def _moves_record(qid: str, sample: int, arm: str, batches: list[int]) -> dict:
    """An OpenAI record of one `move` agent: ``batches`` the calls sent in each message."""
    messages, n = [{"role": "user", "content": f"Solve level {qid}."}], 0
    for size in batches:
        calls = [{"id": f"c{n + i}", "type": "function",
                  "function": {"name": "move", "arguments": f'{{"direction": "{"up" if (n + i) % 2 else "left"}"}}'}}
                 for i in range(size)]
        messages.append({"role": "assistant", "content": "", "tool_calls": calls})
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": f"Board after move {n + i}."}
                     for i, c in enumerate(calls)]
        n += size
    messages.append({"role": "assistant", "content": "Solved."})
    return {"arm": arm, "question_id": qid, "sample_id": sample, "correct": True, "messages": messages}


def test_a_batch_of_one_tools_calls_is_a_plan_step_of_its_own(tmp_path):
    """A planner that sends its moves in batches and a greedy agent that sends one a message
    call the same tool as often: by plan they are two strategies (the Sokoban world's
    planner and greedy player read as one before)."""
    import json

    from sklearn.metrics import adjusted_rand_score

    records, truth = [], []
    for q in range(20):
        for s in range(4):
            for arm in ("base", "rl"):
                batched = (q + s + (arm == "rl")) % 2 == 0
                length = 6 + (q + s) % 3
                records.append(_moves_record(f"q{q}", s, arm, [3, length - 3] if batched else [1] * length))
                truth.append(batched)
    path = tmp_path / "moves.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    runs = mx.read(path, format="openai")
    space = mx.StrategySpace(embedder=None, n_bootstrap=0, progress=False).fit(runs)
    assert sorted(set(space.train_plans_)) == ["move&+", "move+"]
    found = dict(zip(zip(runs["question_id"], runs["sample_id"], runs["arm"]), space.labels_))
    labels = [found[(r["question_id"], r["sample_id"], r["arm"])] for r in records]
    assert adjusted_rand_score(truth, labels) == 1.0
