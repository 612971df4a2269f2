"""Names built from what a strategy's members share, distinct within a space, with their
fidelity; failed calls and their retries as one attempt of a move, their rates reported per
strategy and arm."""
from __future__ import annotations

import json
import re

import numpy as np
import polars as pl
import pytest

import mechanism as mx
from mechanism._cli.main import main
from mechanism.analysis._strategies.description import shared_core, strategy_names
from mechanism.datasets.worlds import service

FAST = "hashing-256"


def _frame(rows):
    """Members as (strategy, tools, moves, n): tokens are the tool sequence itself."""
    out = []
    for strategy, tools, moves, n in rows:
        for _ in range(n):
            out.append({"strategy": strategy, "tools": " > ".join(tools), "moves": " > ".join([*moves, "answer"]),
                        "tokens": " ".join(f"T:{t}" for t in tools) + " E:answer", "n_rounds": len(tools)})
    return pl.DataFrame(out)


def test_the_name_is_the_shared_core_and_fidelity_counts_members_it_describes():
    # strategy 0: a family whose members look at the item or not before buying
    names = strategy_names(_frame([
        (0, ["search", "click", "buy"], ["first", "first", "first"], 6),
        (0, ["search", "buy"], ["first", "first"], 4),
        (1, [], [], 5)]))
    row = dict(zip(names["strategy"].to_list(), zip(names["built_name"].to_list(), names["fidelity"].to_list())))
    assert row[0] == ("search -> buy", 1.0)  # the optional look is not in the name
    assert row[1] == ("answer without tools", 1.0)
    # the brute-force reading of fidelity: members that contain every named step in order
    assert shared_core([("a", "b", "c"), ("a", "c"), ("b",)], [5, 4, 1]) == (("a", "c"), 0.9)


def test_without_tools_only_where_no_member_calls_a_tool():
    names = strategy_names(_frame([(0, [], [], 8), (0, ["search"], ["first_lookup"], 2),
                                   (1, ["search"], ["first_lookup"], 3)]))
    mixed = names.filter(pl.col("strategy") == 0)
    assert "without tools" not in mixed["built_name"][0]
    assert mixed["built_name"][0] == "answer with no call, or search"
    assert mixed["fidelity"][0] == 1.0


def test_names_that_would_read_the_same_say_how_they_differ():
    names = strategy_names(_frame([
        (0, ["search"], ["first_lookup"], 5),
        (1, ["search", "search", "search"], ["first_lookup", "repeat", "repeat"], 5)]))
    got = names["built_name"].to_list()
    assert len(set(got)) == 2 and not any(re.search(r"\[S\d+\]", n) for n in got), got
    assert names["fidelity"].to_list() == [1.0, 1.0]


def test_giving_up_is_named_and_a_wording_two_tokens_share_is_never_added_twice():
    # one call each; strategy 1 gives up after it failed (the tokens of segmentation.move_tokens)
    frame = _frame([(0, ["get_quote"], ["first"], 6), (1, ["get_quote"], ["first"], 6)]).with_columns(
        tokens=pl.when(pl.col("strategy") == 1).then(pl.lit("T:get_quote E:answer_after_failure"))
        .otherwise(pl.col("tokens")))
    got = dict(zip(*strategy_names(frame).select("strategy", "built_name").to_dict(as_series=False).values()))
    assert got[1] == "get_quote (with gives up after a failed call)", got
    assert got[0] != got[1] and "gives up" not in got[0]
    # two tokens read in one wording ("ends with an answer"): a phrase both siblings would add
    # tells neither apart and is never stacked; the ids (or another qualifier) do
    frame = frame.with_columns(tokens=pl.when(pl.col("strategy") == 1).then(pl.lit("T:get_quote E:answer_x"))
                               .otherwise(pl.col("tokens")))
    got = strategy_names(frame)["built_name"].to_list()
    assert len(set(got)) == 2 and not any(n.count("(with ends with an answer)") for n in got), got


@pytest.fixture(scope="module")
def service_runs(tmp_path_factory):
    w = service(n_questions=20, random_state=0)
    runs = mx.read(w.write(tmp_path_factory.mktemp("service")), format=w.format)
    return runs, w.labels_for(runs)


def test_failures_and_retries_are_execution_by_default(service_runs):
    runs, truth = service_runs
    merged = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False).fit(runs)
    kept = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False, retries="keep").fit(runs)
    d, k = merged.describe(), kept.describe()
    assert not any("(failed" in n for n in d["name"].to_list())
    assert any("(failed" in n for n in k["name"].to_list())
    # the planted blind retry: every member failed and retried, and says so per arm
    retrying = d.filter(pl.col("retry_rate") == 1.0)
    assert retrying.height >= 1 and (retrying["failure_rate"] == 1.0).all()
    blind = truth == "blind_retry"
    s = int(np.bincount(merged.labels_[blind]).argmax())
    assert s in retrying["strategy"].to_list()
    ex = merged.execution()
    assert set(ex["arm"]) == {"base", "rl"}
    rows = ex.filter(pl.col("strategy") == s)
    assert (rows["retry_rate"] == 1.0).all() and (rows["retry_ci_low"] <= rows["retry_rate"]).all()
    never = ex.filter(pl.col("strategy").is_in(d.filter(pl.col("failure_rate") == 0)["strategy"].implode()))
    assert (never["failure_rate"] == 0).all()
    # the brute-force rate: share of an arm's members of that strategy with a failed call,
    # questions weighted equally (here every question has one sample per arm and strategy or more)
    n_failed = mx.render(runs)["n_failed"].to_numpy() > 0
    for arm in ("base", "rl"):
        sel = (runs["arm"] == arm).to_numpy() & (merged.labels_ == s)
        frame = pl.DataFrame({"q": runs["question_id"].to_numpy()[sel], "f": n_failed[sel].astype(float)})
        expected = frame.group_by("q").agg(pl.col("f").mean())["f"].mean()
        assert rows.filter(pl.col("arm") == arm)["failure_rate"][0] == pytest.approx(expected)
    assert d["fidelity"].min() > 0.0 and d["fidelity"].max() <= 1.0


def test_retries_and_error_pattern_are_saved_and_old_spaces_load_as_kept(service_runs, tmp_path):
    runs, _ = service_runs
    space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False, retries="keep",
                             error_pattern="^cannot").fit(runs)
    back = mx.StrategySpace.load(space.save(tmp_path / "s"))
    assert (back.retries, back.error_pattern) == ("keep", "^cannot")
    np.testing.assert_array_equal(back.transform(runs), space.labels_)
    cfg = tmp_path / "s" / "space.json"
    config = json.loads(cfg.read_text())
    for key in ("retries", "error_pattern"):
        del config["params"][key]
    cfg.write_text(json.dumps(config))
    old = mx.StrategySpace.load(tmp_path / "s")
    assert (old.retries, old.error_pattern) == ("keep", None)
    config["params"]["retries"] = "drop"
    cfg.write_text(json.dumps(config))
    with pytest.raises(mx.InputError, match="retries"):
        mx.StrategySpace.load(tmp_path / "s")
    with pytest.raises(mx.MechanismError, match="retries"):
        mx.StrategySpace(retries="drop", embedder=FAST).fit(runs)


def test_cli_passes_retries_and_the_error_pattern(service_runs, tmp_path):
    runs, _ = service_runs
    path = tmp_path / "runs.parquet"
    runs.write_parquet(path)
    assert main(["strategies", "fit", str(path), "--out", str(tmp_path / "sp"), "--embedder", FAST,
                 "--retries", "keep", "--error-pattern", "^cannot", "--no-progress", "--quiet",
                 "--no-figures"]) == 0
    params = json.loads((tmp_path / "sp" / "space.json").read_text())["params"]
    assert (params["retries"], params["error_pattern"]) == ("keep", "^cannot")


def test_outliers_fire_on_another_agent_and_not_on_a_fresh_sample(service_runs, tmp_path):
    """The threshold is calibrated on the fit's own distances to the medoids: a fresh sample of
    the fitted agent has (almost) no outliers, a saved space applied to another agent does."""
    from mechanism.datasets.worlds import multihop

    runs, _ = service_runs
    space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False).fit(runs)
    assert space.assign(runs)["outlier"].mean() <= 0.01
    loaded = mx.StrategySpace.load(space.save(tmp_path / "s"))
    fresh = service(n_questions=20, random_state=5)
    fresh_runs = mx.read(fresh.write(tmp_path / "fresh"), format=fresh.format)
    assert loaded.assign(fresh_runs)["outlier"].mean() <= 0.05
    other = multihop(n_questions=10, random_state=1)
    other_runs = mx.read(other.write(tmp_path / "other"), format=other.format)
    assigned = loaded.assign(other_runs)
    assert assigned["outlier"].mean() >= 0.9
    far = assigned.filter(pl.col("outlier"))
    assert (far["medoid_distance"] > loaded.threshold_).all() and (far["strategy"] == -1).all()
    # the brute-force threshold: the 99th percentile (count-weighted) of members' medoid distances
    med = space.medoids_
    d = np.sqrt(((space.train_features_ - space.train_features_[med[space.train_labels_]]) ** 2).sum(axis=1))
    per_trajectory = np.sort(np.repeat(d, space.train_counts_))
    q = per_trajectory[int(np.ceil(0.99 * len(per_trajectory))) - 1]
    assert space.threshold_ == pytest.approx(max(space.resolution, q), abs=1e-5)


def test_cramers_v_against_scipy_and_the_strategy_by_category_table(service_runs):
    from scipy.stats.contingency import association

    from mechanism.analysis._strategies.association import cramers_v

    rng = np.random.default_rng(0)
    table = rng.integers(1, 30, size=(4, 3))
    assert cramers_v(table, corrected=False) == pytest.approx(association(table, method="cramer"))
    runs, truth = service_runs
    space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False).fit(runs)
    # a category that is the planted strategy: strategies track it; one drawn at random: not
    tracked = space.association(runs.with_columns(pl.Series("category", truth)))
    v, lo, hi = tracked.select("cramers_v", "ci_low", "ci_high").row(0)
    assert v > 0.85 and lo <= v <= hi
    noise = rng.choice(["bridge", "comparison"], runs.height)
    free = space.association(runs.with_columns(pl.Series("category", noise)))
    assert free["cramers_v"][0] < 0.15 and free["ci_low"][0] <= 0.05
    assert free.group_by("strategy").agg(pl.col("share").sum())["share"].to_list() == pytest.approx(
        [1.0] * free["strategy"].n_unique())
    with pytest.raises(mx.InputError, match="`category`"):
        space.association(runs)


def test_association_with_the_task_is_about_zero_when_strategies_ignore_the_task(service_runs):
    """Strategies drawn independently of the question (the planted worlds): V with the task
    near 0 and its interval around the estimate, a question drawn twice in a resample counting
    as two tasks."""
    runs, _ = service_runs
    space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False).fit(runs)
    v, lo, hi = space.association(runs, by="question_id").select("cramers_v", "ci_low", "ci_high").row(0)
    assert v < 0.2 and lo <= v + 0.05 and hi >= v - 0.05 and lo < hi


def test_sweep_clusters_on_copies_and_never_changes_the_estimator(service_runs, monkeypatch):
    runs, _ = service_runs
    # one tree over every plan: the service world's strategies are each a plan of their own, so
    # under the default plans="apart" no coarser cut joins any (checked below)
    space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False, plans="mixed").fit(runs)
    apart = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False).fit(runs)
    assert apart.sweep([3.0])["n_strategies"][0] == apart.n_strategies_
    before = space.get_params()
    from mechanism.analysis._strategies import clustering

    seen = []
    original = clustering.cluster

    def spy(p, *args, **kwargs):
        seen.append((p is space, p.resolution, space.resolution))
        return original(p, *args, **kwargs)

    monkeypatch.setattr(clustering, "cluster", spy)
    table = space.sweep([1.0, 3.0])
    assert [r for _, r, _ in seen] == [1.0, 3.0]
    assert not any(is_self for is_self, _, _ in seen) and all(mine == 1.5 for _, _, mine in seen)
    assert space.get_params() == before
    # what merges at each level: the coarser cut joins fitted strategies
    coarse = table.filter(pl.col("resolution") == 3.0)
    assert coarse["n_strategies"][0] < space.n_strategies_ and coarse["merged_with"].list.len().max() > 0
