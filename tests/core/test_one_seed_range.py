"""Every public function and estimator taking ``random_state`` accepts the same range: any
non-negative int (numpy's SeedSequence takes them all; scikit-learn and UMAP get a 32-bit seed
derived from it), a numpy Generator or None, and refuses anything else with one line naming it."""
from __future__ import annotations

import inspect

import numpy as np
import pytest
from stand_in_endpoint import reasoners

import mechanism as mx
from mechanism.core.errors import InputError

BIG = 2**33


@pytest.fixture(scope="module")
def small():
    sim = mx.simulate(n_questions=6, n_samples=2, random_state=0, progress=False)
    return sim.runs, np.unique(sim.labels_for(), return_inverse=True)[1].astype(np.int64)


def _calls(runs, labels):
    """One small call of every public name of ``mechanism.__all__`` that takes ``random_state``."""
    fast = {"n_boot": 10}
    return {
        "simulate": lambda s: mx.simulate(n_questions=6, n_samples=2, random_state=s, progress=False),
        "training_run": lambda s: mx.training_run(steps=(0, 100), n_questions=6, n_samples=2, random_state=s,
                                                  progress=False),
        "pass_at_kt": lambda s: mx.pass_at_kt(runs, k=[1, 2], t=[1], random_state=s, **fast),
        "consistency": lambda s: mx.consistency(runs, random_state=s, **fast),
        "boundary": lambda s: mx.boundary(runs, base="base", treated="rl", t=[1], random_state=s, **fast),
        "StrategySpace": lambda s: mx.StrategySpace(embedder="hashing-64", n_bootstrap=2, random_state=s,
                                                    progress=False).fit(runs),
        "reweighting": lambda s: mx.reweighting(runs, labels, base="base", treated="rl", n_permutations=10,
                                                random_state=s, **fast),
        "compare_arms": lambda s: mx.compare_arms(runs, labels, base="base", n_permutations=10, random_state=s,
                                                  **fast),
        "integration": lambda s: mx.integration(runs, base="base", treated="rl", labels=labels, random_state=s,
                                                **fast),
        "strategy_shares": lambda s: mx.strategy_shares(
            runs.select("arm", "question_id").with_columns(strategy=labels), random_state=s, **fast),
        "swap": lambda s: mx.swap(runs, reasoner=reasoners("base", "rl"), base="base", treated="rl", n_bootstrap=10,
                                  random_state=s),
        "track": lambda s: mx.track(mx.training_run(steps=(0, 100), n_questions=6, n_samples=2, random_state=0,
                                                    progress=False).runs, embedder="hashing-64", random_state=s,
                                    progress=False, **fast),
    }


def _takes_random_state() -> set[str]:
    out = set()
    for name in mx.__all__:
        try:
            if "random_state" in inspect.signature(getattr(mx, name)).parameters:
                out.add(name)
        except (TypeError, ValueError):
            continue
    return out


def test_every_public_random_state_takes_2_to_the_33(small):
    runs, labels = small
    calls = _calls(runs, labels)
    # reproduce_study runs the whole study (minutes): its seed goes through the same resolve_seed
    assert _takes_random_state() - {"reproduce_study"} == set(calls)
    for call in calls.values():
        call(BIG)  # accepted, as every int >= 0 is


@pytest.mark.parametrize("bad", [-1, 1.5, True, "0"])
def test_every_public_random_state_refuses_the_same_way(small, bad):
    runs, labels = small
    messages = set()
    for name, call in _calls(runs, labels).items():
        with pytest.raises(InputError) as info:
            call(bad)
        assert info.value.field == "random_state" and "\n" not in str(info.value), name
        messages.add(str(info.value))
    assert len(messages) == 1, messages
