"""Question x strategy cells one arm never used: valued at that arm's own modelled
success, never at the other arm's, with assumption-free bounds and the mass in one-arm cells
beside the estimate; and verdicts that state a direction only where their interval excludes 0."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from mechanism.analysis._verdicts import NOT_DISTINGUISHABLE
from mechanism.analysis.compare import additive_logit, reweighting
from mechanism.analysis.information import integration
from mechanism.core.schema import from_records, make_step

SHARES = np.array([0.55, 0.25, 0.12, 0.08])
EFFECT = np.array([0.0, 0.1, -0.05, 0.15])


def execution_change(seed: int, n_q: int = 100, n_samples: int = 4, gain: float = 0.15
                     ) -> tuple[pl.DataFrame, np.ndarray, float]:
    """Identical strategy shares (55/25/12/8 %), rl better by ``gain`` on every cell: the true
    composition is 0 and the true within the mean gain (returned)."""
    rng = np.random.default_rng(seed)
    rate_b = np.clip(rng.uniform(0.1, 0.65, n_q)[:, None] + EFFECT[None, :], 0.02, 0.98)
    rate_t = np.clip(rate_b + gain, 0.0, 1.0)
    frames, labels = [], []
    for arm, rate in (("base", rate_b), ("rl", rate_t)):
        s = rng.choice(4, size=(n_q, n_samples), p=SHARES)
        ok = rng.random((n_q, n_samples)) < np.take_along_axis(rate, s, axis=1)
        frames.append(pl.DataFrame({"arm": arm, "question_id": np.repeat([f"q{q:03d}" for q in range(n_q)], n_samples),
                                    "sample_id": np.tile(np.arange(n_samples), n_q), "correct": ok.reshape(-1)}))
        labels.append(s.reshape(-1))
    return pl.concat(frames), np.concatenate(labels), float((SHARES[None] * (rate_t - rate_b)).sum(axis=1).mean())


def integration_gain(seed: int, n_q: int = 60, n_samples: int = 4) -> tuple[pl.DataFrame, np.ndarray]:
    """Identical shares and retrieval; rl integrates better (0.8 vs 0.5 when retrieved) on every
    strategy: all of the change is within integration."""
    rng = np.random.default_rng(seed)
    retrieve = np.array([0.7, 0.5, 0.3, 0.6])
    records, labels = [], []
    for arm, integ in (("base", 0.5), ("rl", 0.8)):
        for q in range(n_q):
            for j in range(n_samples):
                s = int(rng.choice(4, p=SHARES))
                ret = rng.random() < retrieve[s]
                ok = rng.random() < (integ if ret else 0.1)
                records.append({"arm": arm, "question_id": f"q{q:03d}", "sample_id": j, "question": "?",
                                "gold": ["Paris"], "answer": "x", "correct": bool(ok), "n_rounds": 1,
                                "steps": [make_step(query="q", observation="Paris" if ret else "none")]})
                labels.append(s)
    return from_records(records), np.array(labels)


def verdict_directions(seed: int, n_q: int = 40) -> dict[str, bool]:
    """Per clause of the reweighting and integration verdicts on one identical-policies data set:
    does it state a direction (no "not distinguishable from 0")?"""
    from test_nulls import identical

    runs, labels = identical(seed, n_q)
    rw = reweighting(runs, labels, base="base", treated="rl", n_boot=300, n_permutations=0, random_state=seed)
    ig = integration(runs, base="base", treated="rl", labels=labels, n_boot=300, random_state=seed)
    out = {}
    head = rw.verdict().split(";")[0]
    for i, name in enumerate(("reweighting: total", "reweighting: composition", "reweighting: within")):
        clause = head.split(" = ")[0] if i == 0 else head.split(" = ")[1].split(" + ")[i - 1]
        out[name] = NOT_DISTINGUISHABLE not in clause
    line = ig.verdict()
    mass, rest = line.split("; ", 1)
    out["integration: mass moved"] = NOT_DISTINGUISHABLE not in mass
    align, rest = rest.split("); moving mass", 1)
    out["integration: alignment"] = NOT_DISTINGUISHABLE not in align
    comp, rest = rest.split(" of the ", 1)
    out["integration: composition"] = NOT_DISTINGUISHABLE not in comp
    total, within = rest.split(" accuracy change; ", 1)
    out["integration: total"] = NOT_DISTINGUISHABLE not in total
    integ, retr = within.split(", retrieval", 1)
    out["integration: within integration"] = NOT_DISTINGUISHABLE not in integ
    out["integration: within retrieval"] = NOT_DISTINGUISHABLE not in retr
    q = {r["quantity"]: r for r in ig.shift.iter_rows(named=True)}
    m = q["mass_moved_above"]
    out["mass moved estimate outside its interval"] = not (m["ci_low"] <= m["estimate"] <= m["ci_high"])
    return out


def test_the_cell_model_values_a_cell_from_its_own_arm_and_falls_back_sensibly():
    n = np.array([[4., 4., 0.], [4., 0., 0.], [4., 4., 0.]])
    c = np.array([[4., 3., 0.], [1., 0., 0.], [0., 1., 0.]])
    p = additive_logit(n, c)
    assert np.all((p > 0) & (p < 1)) and np.isfinite(p).all()
    # a strategy the arm never used: its effect is 0 (the question's own level) and it leaves the
    # rest of the fit as it is
    assert np.allclose(additive_logit(n[:, :2], c[:, :2]), p[:, :2], atol=1e-9)
    assert p[0, 2] > p[2, 2]
    assert p[1, 1] < p[0, 1]  # the hard question's cell is valued low, not at another question's rate
    assert np.array_equal(p, additive_logit(n, c))  # deterministic


def test_an_empty_cell_takes_its_own_arms_rate_not_the_others():
    runs, labels, _ = execution_change(0, n_q=60)
    rw = reweighting(runs, labels, base="base", treated="rl", n_boot=200, n_permutations=0)
    assert rw.composition_bounds[0] <= rw.composition <= rw.composition_bounds[1]
    assert rw.within_bounds[0] <= rw.within <= rw.within_bounds[1]
    assert 0.1 < rw.one_arm_mass["rl"] < 0.4 and 0.1 < rw.one_arm_mass["base"] < 0.4
    assert any("never at the other arm's" in n for n in rw.notes)
    frame = rw.to_frame()
    assert {"composition_bound_low", "within_bound_high", "one_arm_mass", "success_alignment"} <= set(
        frame["quantity"].to_list())
    assert rw.alignment == rw.success_alignment  # the old name stays as an alias


@pytest.mark.slow
def test_a_pure_execution_change_stays_out_of_composition():
    comp, excl, inside = [], 0, 0
    for seed in range(40):
        runs, labels, within_truth = execution_change(seed)
        rw = reweighting(runs, labels, base="base", treated="rl", n_boot=300, n_permutations=0, random_state=seed)
        comp.append(rw.composition)
        excl += rw.composition_ci[0] > 0 or rw.composition_ci[1] < 0
        inside += (rw.composition_bounds[0] <= 0.0 <= rw.composition_bounds[1]
                   and rw.within_bounds[0] <= within_truth <= rw.within_bounds[1])
    assert abs(np.mean(comp)) < 0.01  # borrowing the other arm's rate gave +0.037
    assert excl <= 4                  # 40 data sets; the benchmark holds 200 to 0.07
    assert inside == 40


@pytest.mark.slow
def test_a_pure_integration_gain_stays_within_integration():
    parts = {"composition": [], "within_retrieval": [], "within_integration": []}
    for seed in range(16):
        runs, labels = integration_gain(seed)
        ig = integration(runs, base="base", treated="rl", labels=labels, n_boot=100, random_state=seed)
        q = {r["quantity"]: r["estimate"] for r in ig.shift.iter_rows(named=True)}
        for name in parts:
            parts[name].append(q[name])
    # borrowing sent +0.018 to composition and +0.015 to retrieval (of +0.10); 16 data sets: se about 0.005
    assert abs(np.mean(parts["composition"])) < 0.012 and abs(np.mean(parts["within_retrieval"])) < 0.012, parts
    assert np.mean(parts["within_integration"]) > 0.1


@pytest.mark.slow
def test_no_verdict_clause_states_a_direction_under_identical_policies():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    counts: dict[str, int] = {}
    for seed in range(30):
        for name, hit in verdict_directions(seed).items():
            counts[name] = counts.get(name, 0) + int(hit)
    assert counts["mass moved estimate outside its interval"] == 0
    # 30 data sets at 5 %: 1.5 expected; the benchmark (200 data sets) holds each clause to 0.07
    assert max(counts.values()) <= 4, counts
