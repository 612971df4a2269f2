"""One result protocol with one table schema.

Every public result (Boundary, Reweighting, Integration, Track, Consistency, PassEstimate,
Simulation, Reproduction) runs here on a small simulated input: its ``to_frame()`` has its
declared key columns then the shared ``detectable, quantity, estimate, ci_low, ci_high`` with
the same dtypes, keys are columns (no arm, k, T, strategy or weighting inside a quantity's
name), and ``summary()``, ``tables()``, ``to_dict()`` and ``verdict()`` answer on every one.
"""
from __future__ import annotations

import json
import re

import polars as pl
import pytest
from stand_in_endpoint import reasoners

import mechanism as mx
from mechanism.analysis.boundaries import Boundary
from mechanism.analysis.checkpoints import Track
from mechanism.analysis.compare import Comparison, Reweighting
from mechanism.analysis.information import Integration
from mechanism.analysis.passkt import Consistency, PassEstimate, PassTable, estimate_pass
from mechanism.analysis.reproduction import Reproduction
from mechanism.analysis.shares import ShareTable
from mechanism.analysis.swap import Swap
from mechanism.core.results import SHARED_COLUMNS, Result, Summary, TableResult, conform_frame
from mechanism.datasets.simulation import Simulation

ARMS = {"base": "A0", "rl": "B1"}
CLASSES = {"Boundary": Boundary, "Reweighting": Reweighting, "Comparison": Comparison, "Integration": Integration,
           "Track": Track, "Consistency": Consistency, "PassEstimate": PassEstimate, "Simulation": Simulation,
           "Swap": Swap}


@pytest.fixture(scope="module")
def sim():
    return mx.simulate(n_questions=10, n_samples=4, arms=("base", "rl"), random_state=0, progress=False)


@pytest.fixture(scope="module")
def results(sim):
    # arm names no quantity could contain, so a name that encodes an arm is caught below
    runs, labels = sim.runs.with_columns(pl.col("arm").replace(ARMS)), sim.truth["strategy"].to_numpy()
    series = mx.training_run(steps=(0, 100, 200), n_questions=6, n_samples=4, progress=False)
    return {
        "Boundary": mx.boundary(runs, base="A0", treated="B1", n_boot=30, n_permutations=200),
        "Reweighting": mx.reweighting(runs, labels, base="A0", treated="B1", n_boot=30, n_permutations=20),
        "Comparison": mx.compare_arms(runs, labels, base="A0", n_boot=30, n_permutations=20),
        "Integration": mx.integration(runs, base="A0", treated="B1", labels=labels, n_boot=30),
        "Track": mx.track(series.runs, labels=series.truth["strategy"], n_boot=30),
        "Consistency": mx.consistency(runs, n_boot=30),
        "PassEstimate": estimate_pass(runs, [1, 2], [0, 5], n_boot=30),
        "Simulation": sim,
        "Swap": mx.swap(runs, reasoner=reasoners("A0", "B1"), base="A0", treated="B1", n_bootstrap=30),
    }


def test_every_public_result_class_is_covered():
    """A result class added to the package without a case here fails this test."""
    for name in ("Boundary", "Reweighting", "Integration", "Track", "Consistency", "Simulation", "Reproduction"):
        assert issubclass(getattr(mx, name), Result), name
    assert set(CLASSES) | {"Reproduction"} >= {n for n in mx.__all__ if isinstance(getattr(mx, n), type)
                                                 and issubclass(getattr(mx, n), Result)}


@pytest.mark.parametrize("name", list(CLASSES))
def test_to_frame_has_the_declared_keys_then_the_shared_columns(results, name):
    res = results[name]
    assert isinstance(res, CLASSES[name])
    frame = res.to_frame()
    keys = list(res._keys())
    assert frame.height > 0
    assert frame.columns == [*keys, *SHARED_COLUMNS], frame.columns
    for column, dtype in SHARED_COLUMNS.items():
        assert frame.schema[column] == dtype, (column, frame.schema[column])
    assert frame["quantity"].null_count() == 0 and frame["estimate"].dtype == pl.Float64
    # a key is a column, never part of a quantity's name
    names = frame["quantity"].unique().to_list()
    assert not [q for q in names if re.search(r"pass_at_\d|share_S\d|_trajectory_pooled|_pooled_over|_vs_", q)]
    for column in ("arm", "checkpoint", "segment"):
        if column in keys:
            values = [str(v) for v in frame[column].drop_nulls().unique().to_list()]
            assert not [q for q in names for v in values if q.endswith(f"_{v}")], (column, values)


@pytest.mark.parametrize("name", list(CLASSES))
def test_summary_tables_to_dict_and_verdict(results, name):
    res = results[name]
    s = res.summary()
    assert isinstance(s, Summary) and str(s).splitlines()[0] == s.title and s.lines
    assert not hasattr(s, "filter")  # text, not a DataFrame in disguise
    tables = res.tables()
    assert tables and all(isinstance(t, pl.DataFrame) for t in tables.values())
    json.dumps(res.to_dict(), allow_nan=False, default=str)
    line = res.verdict()
    assert isinstance(line, str) and line and "\n" not in line
    assert "\n" not in repr(res) and repr(res).startswith(f"<{name}")


def test_keys_carry_what_names_used_to(results):
    rw = results["Reweighting"].to_frame()
    acc = rw.filter(pl.col("quantity") == "accuracy")
    assert acc["arm"].to_list() == ["A0", "B1"]
    assert acc["estimate"].to_list() == pytest.approx([results["Reweighting"].accuracy_base,
                                                       results["Reweighting"].accuracy_treated])
    assert set(rw["weighting"]) == {"question"} and set(rw["strata"]) == {"question"}
    track = results["Track"]
    shares = track.to_frame().filter(pl.col("quantity") == "share")
    assert shares.select("checkpoint", "strategy", "estimate").equals(
        track.shares.select("checkpoint", "strategy", pl.col("share").alias("estimate")))
    split = track.to_frame().filter(pl.col("quantity") == "within")
    assert split["detectable"][0] is None and split["detectable"][1:].is_not_null().all()  # base vs itself: none
    curves = track.to_frame().filter(pl.col("quantity") == "pass_at_kt")
    assert curves["estimate"].to_list() == track.passkt["pass_at_kt"].to_list()
    assert curves.select("k", "t").equals(track.passkt.select("k", "t"))
    b = results["Boundary"]
    split = b.to_frame().filter((pl.col("quantity") == "pass1") & (pl.col("component") == "total"))
    assert split["detectable"].to_list() == b.split.filter(pl.col("component") == "total")["detectable"].to_list()
    est = results["PassEstimate"]
    assert est.to_frame()["estimate"].to_list() == est.curves()["pass_at_kt"].to_list()
    renamed = results["Simulation"].runs.with_columns(pl.col("arm").replace(ARMS))
    assert est.curves().equals(mx.pass_at_kt(renamed, k=[1, 2], t=[0, 5], n_boot=30))
    integ = results["Integration"].to_frame()
    assert integ.filter(pl.col("quantity") == "split")["base"].unique().to_list() == ["A0"]
    assert integ.filter(pl.col("quantity") == "accuracy")["base"].null_count() == 2


def test_reproduction_is_a_result_with_the_shared_schema():
    table = pl.DataFrame({"quantity": ["gained"], "arm": ["rl"], "category": ["all"], "estimate": [3.0],
                          "ci_low": [None], "ci_high": [None], "planted": [2.5]})
    rep = Reproduction(table=table, findings=pl.DataFrame({"finding": ["x"], "recovered": [True],
                                                           "evidence": ["3 vs 2.5"]}))
    frame = rep.to_frame()
    assert frame.columns == ["base", "treated", "arm", "category", "k", "t", "planted", *SHARED_COLUMNS]
    assert frame.row(0, named=True) | {"detectable": None} == {
        "base": None, "treated": "rl", "arm": None, "category": "all", "k": None, "t": None, "planted": 2.5,
        "detectable": None, "quantity": "gained", "estimate": 3.0, "ci_low": None, "ci_high": None}
    assert rep.verdict() == "1 of 1 findings recovered"
    assert list(rep.tables()) == ["estimates", "table", "findings"]


def test_reproduction_frame_puts_keys_in_columns():
    table = pl.DataFrame({"quantity": ["PASS@(64,5)", "unique query sequences / problem", "boundary p (permutation)"],
                          "arm": ["rl", "base", "rl"], "category": ["bridge", "all", "all"],
                          "estimate": [0.5, 3.0, 0.01],
                          "ci_low": [0.4, 2.0, None], "ci_high": [0.6, 4.0, None], "planted": [0.55, None, None]})
    rep = Reproduction(table=table, findings=pl.DataFrame({"finding": ["x"], "recovered": [True], "evidence": ["e"]}),
                       meta={"base": "base"})
    frame = rep.to_frame().select("base", "treated", "arm", "k", "t", "quantity")
    assert frame.rows() == [(None, None, "rl", 64, 5, "pass_at_kt"), (None, None, "base", None, None,
                                                                       "unique_query_sequences"),
                            ("base", "rl", None, None, None, "p_value")]


def test_conform_refuses_an_undeclared_column():
    with pytest.raises(TypeError, match="not declared"):
        conform_frame(pl.DataFrame({"quantity": ["a"], "estimate": [1.0], "extra": [1]}), {})


def test_the_tables_callers_index_share_one_base(sim):
    """``pass_at_kt`` and ``strategy_shares`` return DataFrames that are results, from one base."""
    runs = sim.runs
    made = {"pass_at_kt": mx.pass_at_kt(runs, k=[1, 2], t=[0, 5], n_boot=30),
            "share": mx.strategy_shares(runs.select("arm", "question_id").with_columns(
                strategy=runs["n_rounds"].clip(0, 2)), n_boot=30)}
    for value, table in made.items():
        assert type(table) in (PassTable, ShareTable) and isinstance(table, TableResult)
        assert isinstance(table, pl.DataFrame) and isinstance(table, Result) and table.value_column == value
        frame = table.to_frame()
        assert frame.columns == [*table._keys(), *table.extra_columns, *SHARED_COLUMNS]
        assert frame["estimate"].to_list() == table[value].to_list()
        assert frame["quantity"].unique().to_list() == [table.quantity]
        tables = table.tables()
        assert list(tables) == ["estimates", table.table_name] and type(tables[table.table_name]) is pl.DataFrame
        assert table.to_dict(as_series=False) == pl.DataFrame(table).to_dict(as_series=False)
        json.dumps(table.to_dict(), allow_nan=False, default=str)
        assert repr(table) == repr(pl.DataFrame(table)) and table.summary().lines
        assert type(table.filter(pl.lit(True))) is pl.DataFrame  # derived frames are plain DataFrames


def test_boundary_takes_ci_none(sim):
    b = mx.boundary(sim.runs, base="base", treated="rl", ci=None, n_permutations=200)
    with_ci = mx.boundary(sim.runs, base="base", treated="rl", n_boot=30, n_permutations=200)
    frame = b.to_frame()
    assert frame["ci_low"].null_count() == frame.height and frame["detectable"].null_count() == frame.height
    assert frame["estimate"].to_list() == with_ci.to_frame()["estimate"].to_list()
    assert b.tests.equals(with_ci.tests) and "PASS@(1,T) difference" in str(b.summary())


@pytest.mark.parametrize("call, field", [
    (lambda runs, lab: mx.reweighting(runs, lab, base="base", treated="rl", weighting="pooled"), "weighting"),
    (lambda runs, lab: mx.reweighting(runs, lab, base="base", treated="rl", strata="x"), "strata"),
    (lambda runs, lab: mx.integration(runs, base="base", treated="rl", weighting="x"), "weighting"),
    (lambda runs, lab: mx.pass_at_kt(runs, k=[1], t=[1], t_source="cap"), "t_source"),
    (lambda runs, lab: mx.pass_at_kt(runs, k=[1], t=[1], metric="pass@1"), "metric"),
    (lambda runs, lab: mx.boundary(runs, base="base", treated="rl", t_source="x"), "t_source"),
    (lambda runs, lab: mx.boundary(runs, base="base", treated="rl", ci=1.5), "ci"),
    (lambda runs, lab: mx.boundary(runs, base="base", treated="rl", random_state="seed"), "random_state"),
    (lambda runs, lab: mx.consistency(runs, random_state=-1), "random_state"),
    (lambda runs, lab: mx.track(runs, labels=lab, t_source="x"), "t_source"),
])
def test_option_errors_name_the_parameter(sim, call, field):
    with pytest.raises(mx.InputError) as err:
        call(sim.runs, sim.truth["strategy"].to_numpy())
    assert err.value.field == field and f"`{field}`" in str(err.value) and "--" not in str(err.value)
