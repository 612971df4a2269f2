"""Strategies that differ only in a last action the agent picks on what it saw are one
(``mechanism.analysis._strategies.endings``)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import adjusted_rand_score

import mechanism as mx
from mechanism.analysis._strategies.endings import ENDING_SHARE, distinct_contexts, join_endings, swapped_endings
from mechanism.analysis._strategies.families import one_step_apart
from mechanism.datasets.worlds import sre

# two approaches that each end with `scale` or `restart`, a third that restarts straight away
PLANS = ["query_metrics+ > scale", "query_metrics+ > restart", "list_alerts > describe_pod+ > scale",
         "list_alerts > describe_pod+ > restart", "restart"]


def test_last_tools_swapped_after_two_prefixes_join_each_approach():
    labels = np.arange(5)
    out, records = join_endings(labels, np.array([40, 45, 38, 42, 60]), PLANS)
    assert out.tolist() == [1, 1, 3, 3, 4]  # each pair under its heavier member; `restart` alone stays
    assert {(r["endings"], r["contexts"], r["merged"]) for r in records} == {("restart / scale", 2, True)}


def test_a_swap_seen_after_one_prefix_only_is_left_to_the_cut():
    # the only thing two strategies differ in may be their last tool
    out, records = join_endings(np.arange(3), np.array([40, 45, 60]), PLANS[:2] + ["restart"])
    assert out.tolist() == [0, 1, 2]
    assert [(r["contexts"], r["merged"]) for r in records] == [(1, False)]


def test_an_ending_too_rare_to_count_is_no_second_context():
    counts = np.array([400, 450, 380, 2, 600])  # describe_pod then restart: 2 of 1,832 (< 1 %)
    assert 2 < ENDING_SHARE * counts.sum()
    assert swapped_endings(PLANS, counts) == {frozenset({"restart", "scale"}): {("query_metrics",)}}
    out, _ = join_endings(np.arange(5), counts, PLANS)
    assert out.tolist() == [0, 1, 2, 3, 4]


def test_a_last_tool_that_also_follows_the_other_is_a_step_not_an_alternative():
    # triage alone looks the flight up or not; escalating hands off to a human after the same
    # looks: `get_flight_status` and `transfer_to` both end plans after two prefixes, but one
    # also ends plans right after the other, so neither is the other's alternative
    plans = ["lookup > get_flight_status", "lookup > transfer_to", "ask_user > lookup > get_flight_status",
             "ask_user > lookup > transfer_to", "lookup > get_flight_status > transfer_to"]
    counts = np.array([40, 20, 30, 15, 20])
    assert swapped_endings(plans, counts) == {}
    assert join_endings(np.arange(5), counts, plans)[0].tolist() == [0, 1, 2, 3, 4]
    # without the chained plan, after two approaches, they are two endings, as restart and scale
    apart = ["lookup > get_flight_status", "lookup > transfer_to", "search > get_flight_status", "search > transfer_to"]
    assert join_endings(np.arange(4), counts[:4], apart)[0].tolist() == [0, 0, 2, 2]


def test_two_prefixes_one_step_apart_are_one_approach():
    # asking the customer for the code first, or not, is one approach: three ways of ending it
    # (triage alone, a specialist consulted, a human) seen after it are three strategies
    plans = [f"{first}lookup > {last}" for first in ("", "ask_user > ") for last in ("get_flight_status", "consult",
                                                                                       "transfer_to")]
    out, records = join_endings(np.arange(6), np.full(6, 30), plans)
    assert out.tolist() == list(range(6))
    assert {r["contexts"] for r in records} == {1}
    # with a third prefix of another approach, two approaches: joined
    more = plans + ["search > get_flight_status", "search > consult", "search > transfer_to"]
    out, _ = join_endings(np.arange(9), np.full(9, 30), more)
    assert len(set(out.tolist())) == 3


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abc"), min_size=1, max_size=4).map(tuple), max_size=8))
def test_approaches_are_the_prefixes_joined_one_step_apart(prefixes):
    n = distinct_contexts(prefixes)
    assert n == distinct_contexts(list(reversed(prefixes)))  # order never counts
    assert n <= len(set(prefixes))
    # no two one step apart: each its own approach; all one step from a first: one approach
    if all(one_step_apart(a, b) is None for i, a in enumerate(set(prefixes)) for b in list(set(prefixes))[i + 1:]):
        assert n == len(set(prefixes))
    if prefixes:
        core = prefixes[0]
        assert distinct_contexts([core, *((x, *core) for x in "xyz")]) == 1


def test_outliers_and_one_tool_plans_are_never_joined():
    plans = ["a > x", "a > y", "b > x", "b > y", "x", "y"]
    out, _ = join_endings(np.array([0, 1, 2, 3, 4, -1]), np.full(6, 10), plans)
    assert out.tolist() == [0, 0, 2, 2, 4, -1]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abcd"), min_size=1, max_size=4), min_size=2, max_size=10),
       st.data())
def test_joined_strategies_differ_in_their_last_tool_alone(plans, data):
    plans = [" > ".join(p) for p in plans]
    counts = np.array(data.draw(st.lists(st.integers(1, 20), min_size=len(plans), max_size=len(plans))))
    labels = np.arange(len(plans))
    out, _ = join_endings(labels, counts, plans)
    for c in set(out.tolist()):
        members = [plans[i].split(" > ") for i in np.flatnonzero(out == c)]
        # one row per strategy here: every member of a joined set shares all but the last tool
        assert len({tuple(m[:-1]) for m in members}) == 1
        assert len(members) == 1 or all(len(m) >= 2 for m in members)


@pytest.fixture(scope="module")
def sre_fit(tmp_path_factory):
    world = sre(n_questions=60, random_state=1)
    runs = mx.read(world.write(tmp_path_factory.mktemp("sre")), format=world.format)
    # every call by its name: by default `restart` and `scale` are read as one tool here
    # (test_the_incident_world_reads_restart_and_scale_as_one), and no strategy then ends two ways;
    # every token column as it is: on the first principal axes one of the two approaches is whole
    # by the cut already (ARI 1.0 either way), and the join this test is about is not met there
    space = mx.StrategySpace(random_state=1, n_bootstrap=0, progress=False, task_calls="keep",
                             token_rank=None).fit(runs)
    return runs, world.labels_for(runs), space


def test_the_incident_world_keeps_each_approach_whole_and_names_its_last_actions(sre_fit, tmp_path):
    """The on-call world at seed 1, every call by its name: reading the metrics and describing
    the pods each end with `scale` or `restart` on what they show; without the join each was cut
    in two (ARI 0.86)."""
    runs, truth, space = sre_fit
    assert adjusted_rand_score(truth, space.labels_) == pytest.approx(1.0)
    desc = space.describe()
    ended = desc.filter(pl_len(desc["endings"]) > 0)
    assert ended.height == 2
    assert all(e == ["restart / scale"] for e in ended["endings"].to_list())
    assert all(n.endswith("(then restart or scale)") for n in ended["name"].to_list())
    assert "restart" in desc["name"].to_list()  # restarting straight away is its own strategy
    loaded = mx.StrategySpace.load(space.save(tmp_path / "space"))
    assert loaded.describe()["endings"].to_list() == desc["endings"].to_list()


def pl_len(column):
    return column.list.len()


def test_the_incident_world_reads_restart_and_scale_as_one(tmp_path):
    """With the defaults, the same world reads the two last actions as one tool (met after
    every approach that acts, at like rates in both arms), which keeps each approach whole as
    the join did; a strategy that only restarts is named for what it calls."""
    world = sre(n_questions=60, random_state=1)
    runs = mx.read(world.write(tmp_path / "sre"), format=world.format)
    space = mx.StrategySpace(random_state=1, n_bootstrap=0, progress=False).fit(runs)
    assert space.task_calls_.alike == (("restart", "scale"),)
    assert adjusted_rand_score(world.labels_for(runs), space.labels_) == pytest.approx(1.0)
    names = space.describe()["name"].to_list()
    assert "restart" in names and any("restart_or_scale" in n for n in names), names
