"""One bootstrap draw per call: ``reweighting`` draws its question-bootstrap weights once and
shares them between its stages. The stages drew identical weights before (one seed, one
stream), so the results must be bit-identical to those recorded from the code before the
change, where every stage drew its own (``tests/compare/recorded/shared_draws.json``, written with
``b43f094``; ``boundary`` is recorded too, for the same change there). Regenerated for issue
21, whose changes move these numbers on purpose: ``resample.stream`` keys each purpose on a
digest of the whole string (it read the first four bytes), the split is on question x
strategy strata, and the boundary judges one fixed subsample and tests by permutation. Regenerated
again for the intervals: every split part's interval is ``resample.split_interval``, the
per-strategy bands are calibrated for the questions resampled, and PASS@(k,T) curves below 30
problems get the Wilson-type interval; only interval fields and notes moved. Regenerated for
the empty cells, on purpose: cells one arm never used are valued at that arm's own modelled rate (the
split's numbers move), the split reports bounds and one-arm masses, reweighting notes small
samples, and the boundary tests carry the sparse test's columns. Compared to a relative 1e-12, not
bit for bit: the recording outlives the libraries it was made with, and a newer numpy or polars
may sum in another order (one unit in the last place, 1.1e-16, seen after an upgrade); every
key, string and integer must still be equal."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import mechanism.analysis.compare
from mechanism.analysis.boundaries import boundary
from mechanism.analysis.compare import reweighting
from mechanism.core.schema import from_records, make_step

FIXTURE = Path(__file__).parent / "recorded" / "shared_draws.json"


def reweighting_input() -> tuple[pl.DataFrame, np.ndarray, np.ndarray]:
    """12 questions, 4 samples per arm, query sequences from a small vocabulary, three
    strategies and outliers, 2-d coordinates with repeated points."""
    rng = np.random.default_rng(11)
    records, labels = [], []
    for arm in ("base", "rl"):
        for q in range(12):
            for s in range(4):
                qs = [f"w{int(v)}" for v in rng.integers(0, 3, rng.integers(0, 3))]
                ok = bool(rng.random() < (0.3 if arm == "base" else 0.6))
                records.append({"arm": arm, "question_id": f"q{q:02d}", "sample_id": s, "question": f"question {q}",
                                "gold": ["x"], "answer": "x" if ok else "y", "correct": ok, "n_rounds": len(qs),
                                "steps": [make_step(query=v, observation="obs") for v in qs]})
                labels.append(int(rng.integers(-1, 3)))
    coords = np.round(rng.normal(size=(len(records), 2)), 1)
    return from_records(records), np.array(labels), coords


def boundary_input() -> pl.DataFrame:
    """12 questions, 4 base and 6 treated samples (the larger arm is subsampled), rounds 0-3."""
    rng = np.random.default_rng(12)
    rows = [{"arm": arm, "question_id": f"q{q:02d}", "sample_id": s, "correct": bool(rng.random() < p),
             "n_rounds": int(rng.integers(0, 4))}
            for arm, n, p in (("base", 4, 0.3), ("rl", 6, 0.5)) for q in range(12) for s in range(n)]
    return pl.DataFrame(rows)


def _plain(result: dict) -> dict:
    """The result as its JSON round trip (floats kept exactly; NaN as the string ``"NaN"`` so that
    equal results compare equal)."""
    return json.loads(json.dumps(result), parse_constant=str)


def reweighting_result() -> dict:
    runs, labels, coords = reweighting_input()
    rw = reweighting(runs, labels, base="base", treated="rl", n_boot=40, n_permutations=30, coordinates=coords,
                     random_state=5)
    return _plain(rw.to_dict())


def boundary_result() -> dict:
    b = boundary(boundary_input(), base="base", treated="rl", t=[0, 1, 3], k=[1, 2, 4], n_boot=40, random_state=5)
    return _plain(b.to_dict())


def _counting(monkeypatch: pytest.MonkeyPatch, *modules: object) -> list[int]:
    """Count the calls of ``question_bootstrap_weights`` made through each module's name."""
    calls: list[int] = []
    for module in modules:
        original = module.question_bootstrap_weights

        def wrapped(*args, _original=original, **kwargs):
            calls.append(1)
            return _original(*args, **kwargs)

        monkeypatch.setattr(module, "question_bootstrap_weights", wrapped)
    return calls


def _same(a, b, path: str = "") -> bool:
    """``a == b``, floats to a relative 1e-12 (see the module's docstring); raises naming the first difference."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), f"{path}: keys {sorted(set(a) ^ set(b))}"
        return all(_same(a[k], b[k], f"{path}.{k}") for k in a)
    if isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), f"{path}: {len(a)} items, recorded {len(b)}"
        return all(_same(x, y, f"{path}[{i}]") for i, (x, y) in enumerate(zip(a, b)))
    if isinstance(a, float) and isinstance(b, float):
        assert abs(a - b) <= 1e-12 * max(1.0, abs(b)), f"{path}: {a!r}, recorded {b!r}"
        return True
    assert type(a) is type(b) and a == b, f"{path}: {a!r}, recorded {b!r}"
    return True


def test_the_comparison_tells_a_moved_number_from_one_ulp():
    assert _same({"x": [1.0, "a"]}, {"x": [1.0 + 2e-16, "a"]})
    with pytest.raises(AssertionError, match=r"\.x\[0\]"):
        _same({"x": [1.0 + 1e-9, "a"]}, {"x": [1.0, "a"]})
    with pytest.raises(AssertionError, match="recorded 2"):
        _same({"n": 1}, {"n": 2})


@pytest.fixture(scope="module")
def recorded() -> dict:
    return json.loads(FIXTURE.read_text(), parse_constant=str)


def test_reweighting_is_bit_identical_to_the_result_recorded_before_sharing_the_draws(recorded):
    out = reweighting_result()
    assert out["query_sequences"] is not None and out["neighbours"] is not None  # every stage ran
    assert _same(out, recorded["reweighting"])


def test_reweighting_draws_the_question_bootstrap_once(monkeypatch):
    runs, labels, coords = reweighting_input()
    calls = _counting(monkeypatch, mechanism.analysis.compare)
    rw = reweighting(runs, labels, base="base", treated="rl", n_boot=20, n_permutations=0, coordinates=coords)
    assert rw.query_sequences is not None and rw.neighbours is not None
    assert len(calls) == 1  # one draw shared by the split, the query sequences and the neighbours
    calls.clear()
    reweighting(runs, labels, base="base", treated="rl", ci=None, n_permutations=0, coordinates=coords)
    assert calls == []


def test_boundary_matches_the_result_recorded_before(recorded):
    assert _same(boundary_result(), recorded["boundary"])


def test_boundary_draws_the_question_bootstrap_once(monkeypatch):
    import mechanism.analysis.boundaries
    import mechanism.analysis.passkt

    calls = _counting(monkeypatch, mechanism.analysis.passkt, mechanism.analysis.boundaries)
    boundary(boundary_input(), base="base", treated="rl", t=[0, 1, 3], k=[1, 2, 4], n_boot=40, random_state=5)
    assert len(calls) == 1  # one draw shared by the curves' replicates and the split of the change
