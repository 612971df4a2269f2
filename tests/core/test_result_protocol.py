"""Every public statistic of ``mechanism.__all__`` returns a Result of the one protocol.

The test walks ``mx.__all__``: each public callable is either a statistic (called below on a
small simulated input) or listed as something else with the reason, so a new public function
that is neither fails here instead of being skipped. A statistic's result is a
:class:`mechanism.core.results.Result` whose ``to_frame()`` ends in ``quantity, estimate,
ci_low, ci_high``, that names a compared pair ``base``/``treated``, and whose ``tables()``
holds ``"estimates"``.
"""
from __future__ import annotations

import polars as pl
import pytest
from stand_in_endpoint import reasoners

import mechanism as mx
from mechanism.core.results import Result

BOOT = {"n_boot": 20}

#: name -> call on (runs, labels); ``compares`` says whether the result compares two arms.
STATISTICS = {
    "pass_at_kt": (lambda runs, lab: mx.pass_at_kt(runs, k=[1, 2], t=[0, 5], **BOOT), False),
    "pass_at_kt_per_problem": (lambda runs, lab: mx.pass_at_kt_per_problem(runs, k=[1, 2], t=[0, 5]), False),
    "consistency": (lambda runs, lab: mx.consistency(runs, **BOOT), False),
    "boundary": (lambda runs, lab: mx.boundary(runs, base="base", treated="rl", t=[0, 5], n_permutations=200,
                                               **BOOT), True),
    "reweighting": (lambda runs, lab: mx.reweighting(runs, lab, base="base", treated="rl", n_permutations=20,
                                                     **BOOT), True),
    "compare_arms": (lambda runs, lab: mx.compare_arms(runs, lab, base="base", n_permutations=20, **BOOT), True),
    "integration": (lambda runs, lab: mx.integration(runs, base="base", treated="rl", labels=lab, **BOOT), True),
    "strategy_shares": (lambda runs, lab: mx.strategy_shares(runs.with_columns(pl.Series("strategy", lab)),
                                                             **BOOT), False),
    "track": (lambda runs, lab: _track(), True),
    "reproduce_study": (lambda runs, lab: _reproduction(), True),
    "swap": (lambda runs, lab: mx.swap(runs, reasoner=reasoners("base", "rl"),
                                       base="base", treated="rl", n_bootstrap=20), True),
}

#: Public callables that compute no statistic, and why.
NOT_STATISTICS = {
    "make_step": "builds one step record", "validate": "checks a table", "read": "reads files",
    "detect_format": "names a file format", "normalize_answer": "normalises one answer",
    "exact_match": "scores one answer", "f1_score": "scores one answer", "contains_answer": "scores one answer",
    "extract_answer": "reads one transcript", "is_failure": "classifies one observation",
    "simulate": "generates data (a Simulation result of planted truth)", "training_run": "generates data",
    "default_policies": "simulator settings", "segment": "segments trajectories", "render": "renders text",
    "paper_style": "figure style", "shared_questions": "counts shared questions, a check",
    "read_shards": "reads shards", "scan_shards": "reads shards", "render_shards": "renders shards",
    "assign_shards": "assigns strategies to shards",
    "kitagawa_split": "a closed-form decomposition of given shares and rates: no draws, no intervals",
    "js_divergence": "a closed-form distance between given distributions: no draws, no intervals",
    "score_logprobs": "adds a column of base-model log-probabilities (the input of `integration`)",
}


def _track():
    runs = mx.training_run(steps=(0, 100), n_questions=6, n_samples=3, progress=False).runs
    return mx.track(runs, labels=runs["n_rounds"].clip(0, 2).to_numpy(), **BOOT)


def _reproduction():
    sim = mx.simulate(n_questions=8, n_samples=3, arms=("base", "rl", "sft"), random_state=0, progress=False)
    labels = sim.runs["n_rounds"].clip(0, 2).to_numpy()
    return mx.reproduce_study(sim.runs, sim.planted, labels, ks=(1, 2), **BOOT)


#: Statistics known not to follow the protocol, name -> why: each runs as a strict xfail, so one
#: that comes to follow it must leave this list.
PENDING: dict[str, str] = {}


@pytest.fixture(scope="module")
def data():
    sim = mx.simulate(n_questions=8, n_samples=3, arms=("base", "rl"), random_state=0, progress=False)
    return sim.runs, sim.runs["n_rounds"].clip(0, 2).to_numpy()


def _public_functions(package=mx) -> set[str]:
    return {name for name in package.__all__
            if callable(getattr(package, name)) and not isinstance(getattr(package, name), type)}


def _unclassified(public: set[str]) -> set[str]:
    return public - set(STATISTICS) - set(NOT_STATISTICS)


def test_every_public_function_is_classified():
    """A new public function must be listed as a statistic or as something else."""
    public = _public_functions()
    unclassified = _unclassified(public)
    assert not unclassified, f"classify in STATISTICS or NOT_STATISTICS: {sorted(unclassified)}"
    assert not (set(STATISTICS) | set(NOT_STATISTICS)) - public, "a listed name left mx.__all__"
    assert not set(STATISTICS) & set(NOT_STATISTICS)
    assert set(PENDING) <= set(STATISTICS)


def test_a_new_public_function_in_neither_list_is_caught(monkeypatch):
    monkeypatch.setattr(mx, "__all__", [*mx.__all__, "new_statistic"])
    monkeypatch.setattr(mx, "new_statistic", lambda runs: pl.DataFrame(), raising=False)
    assert _unclassified(_public_functions()) == {"new_statistic"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=PENDING[n], strict=True))
                                  if n in PENDING else n for n in STATISTICS])
def test_statistic_returns_a_result_of_the_protocol(data, name):
    call, compares = STATISTICS[name]
    res = call(*data)
    assert isinstance(res, Result), f"{name} returns {type(res).__name__}"
    frame = res.to_frame()
    assert frame.height > 0
    assert frame.columns[-4:] == ["quantity", "estimate", "ci_low", "ci_high"], frame.columns
    assert frame.columns[-5] == "detectable", frame.columns  # the keys, then detectable, then those four
    if compares:
        assert {"base", "treated"} <= set(frame.columns), frame.columns
        assert frame["base"].drop_nulls().len() > 0
    tables = res.tables()
    assert "estimates" in tables and tables["estimates"].equals(frame)
    prefix = f"{type(res).__name__.lower()}_"
    bad = [key for key in tables if key != key.lower() or " " in key or key.startswith(prefix)]
    assert not bad, f"table names not plain snake_case: {bad}"
    assert isinstance(res.verdict(), str) and "\n" not in res.verdict()
    assert isinstance(res.to_dict(), dict)
