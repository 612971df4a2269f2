"""On the real FireAct agents: the strategies separate answering without search from
searching, and the GPT-3.5 agent answers about a third of its questions without search."""
from __future__ import annotations

import re

import numpy as np
import polars as pl
import pytest

from mechanism.analysis.strategy_space import StrategySpace
from mechanism.readers import read

_CACHE: dict = {}


@pytest.fixture(params=["hashing-256", pytest.param(None, marks=pytest.mark.slow, id="minilm")])
def fitted(request, fireact_dir):
    # fitted once per embedder; fireact_dir skips with a reason when ../shared is absent
    if request.param not in _CACHE:
        runs = read(fireact_dir / "trajs", format="fireact")
        _CACHE[request.param] = runs, StrategySpace(embedder=request.param, progress=False).fit(runs)
    return _CACHE[request.param]


def test_no_search_is_its_own_strategy(fitted):
    runs, space = fitted
    searched = runs["n_rounds"].to_numpy() > 0
    for s in np.unique(space.labels_):
        members = searched[space.labels_ == s]
        assert members.all() or not members.any(), f"strategy {s} mixes searching and not searching"
    d = space.describe()
    assert set(d["no_search_share"].unique().to_list()) <= {0.0, 1.0}


def test_gpt35_no_search_share_is_about_a_third(fitted):
    runs, space = fitted
    no_search = space.describe().filter(pl.col("no_search_share") == 1.0)["strategy"].to_list()
    share = (pl.DataFrame({"arm": runs["arm"], "s": space.labels_})
             .group_by("arm").agg(pl.col("s").is_in(no_search).mean().alias("share")))
    by_arm = dict(zip(share["arm"], share["share"]))
    gpt = next(v for k, v in by_arm.items() if "gpt" in k)
    assert 0.28 <= gpt <= 0.38, by_arm
    assert all(v == 0.0 for k, v in by_arm.items() if "llama" in k), by_arm


def test_descriptions_name_the_tools(fitted):
    runs, space = fitted
    d = space.describe()
    names = d["name"].to_list()
    assert len(set(names)) == len(names)
    searched = d.filter(pl.col("no_search_share") == 0.0)["name"].to_list()
    assert searched and all(n.startswith("search") for n in searched), names
    assert d.filter(pl.col("no_search_share") == 1.0)["name"].to_list() == ["answer without tools"]


def _mentioned_tools(name: str) -> set[str]:
    """The tools a built name mentions (``search (bridge) -> lookup`` -> {search, lookup})."""
    name = re.sub(r"^answer with no call, or |^varied: ", "", name)
    name = re.sub(r" \((?:\d+(?:-\d+)? calls?|with .*|without .*)\)$", "", name)
    return {part.split(" (")[0].strip() for part in name.split(" -> ") if part.strip()}


def test_names_describe_their_members(fitted):
    """Issue 19 on the real logs: names distinct once ids are dropped, "without tools" only
    where no member calls a tool, and the tools a name mentions used by members holding at
    least 0.9 of the strategy's trajectories."""
    assert_names_describe_their_members(*fitted)


def assert_names_describe_their_members(runs, space) -> int:
    """The issue-19 checks of a fitted space's names (see the test above); returns how many
    strategies say "without tools" (also used by test_strategy_names_logs.py)."""
    from mechanism.analysis.segmentation import render

    d = space.describe()
    names = d["built_name"].to_list()
    stripped = [re.sub(r"\s*\[S\d+\]$", "", n) for n in names]
    assert len(set(stripped)) == len(stripped), names
    tools = [set(t.split(" > ")) - {""} for t in render(runs)["tools"].to_list()]
    without = 0
    for s, name in zip(d["strategy"].to_list(), names):
        members = [tools[i] for i in np.flatnonzero(space.labels_ == s)]
        if "without tools" in name:
            without += 1
            assert all(not t for t in members), name
            continue
        mentioned = _mentioned_tools(name)
        assert mentioned, name
        held = np.mean([mentioned <= t for t in members])
        assert held >= 0.9, (name, held)
    assert ((d["fidelity"] > 0) & (d["fidelity"] <= 1)).all()
    return without
