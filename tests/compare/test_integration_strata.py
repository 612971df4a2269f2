"""Information integration read as text, with its not-retrievable stratum, evidence-based
retrieval, the sensitivity of the split to the rule, and the splits on question strata."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from mechanism.analysis.information import gold_in_observations, integration, retrieval_status
from mechanism.core.schema import from_records, make_step


@pytest.mark.parametrize("text, gold, expected", [
    ("He told us the story.", "US", False),            # function word
    ("It may have been earlier.", "May", False),        # modal verb
    ("Released on 12 May 2003.", "12", False),          # one-token number
    ("the two brothers", "two", False),                 # number word
    ("Lincoln's second inaugural", "Lincoln", True),    # possessive
    ("a Paris-based studio", "Paris", True),            # hyphenated form
    ("a New York-born painter", "New York", True),
    ("works of Jean Paul Sartre", "Jean-Paul Sartre", True),
    ("songs by Beyonce", "Beyoncé", True),              # accents folded
    ("Released on 12 May 2003.", "12 May 2003", True),
    ("Parisian cafes", "Paris", False),                 # still whole words
])
def test_the_text_is_read_as_text(text, gold, expected):
    assert gold_in_observations([text], [gold]) is expected


def _record(arm, q, j, *, gold, ok, retrieved, category="x", evidence=None):
    obs = f"The answer is {gold[0]}." if retrieved else "Nothing about it."
    return {"arm": arm, "question_id": q, "sample_id": j, "question": "?", "gold": gold, "answer": "a",
            "correct": bool(ok), "n_rounds": 1, "steps": [make_step(query="q", observation=obs)],
            "category": category, "evidence": evidence}


def planted_yes_no(seed: int = 0, n_q: int = 200, n: int = 6, share_yes_no: float = 0.3):
    """rl integrates better by +0.20 on every question; 30 % of golds are yes/no (retrieval
    can only be seen by text on the others)."""
    rng = np.random.default_rng(seed)
    records = []
    for q in range(n_q):
        yes_no = q < share_yes_no * n_q
        gold = ["yes"] if yes_no else ["Paris"]
        for arm, lift in (("base", 0.0), ("rl", 0.2)):
            for j in range(n):
                ret = rng.random() < 0.6
                ok = rng.random() < ((0.5 + lift) if ret else 0.2)
                records.append(_record(arm, f"q{q:03d}", j, gold=gold, ok=ok, retrieved=ret and not yes_no,
                                       evidence=bool(ret)))
    evidence = [r.pop("evidence") for r in records]
    return from_records(records).with_columns(pl.Series("evidence", evidence, dtype=pl.Boolean))


def test_yes_no_golds_form_their_own_stratum_not_parametric():
    runs = planted_yes_no()
    res = integration(runs, base="base", treated="rl", n_boot=300)
    parts = {r["part"]: r for r in res.split.iter_rows(named=True)}
    # parametric is untouched; the gain on yes/no questions is reported apart (30 % x 0.6 x 0.2)
    assert parts["parametric"]["ci_low"] <= 0.0 <= parts["parametric"]["ci_high"]
    assert parts["not_retrievable"]["estimate"] == pytest.approx(0.3 * 0.6 * 0.2, abs=0.03)
    assert parts["integration"]["estimate"] == pytest.approx(0.7 * 0.6 * 0.2, abs=0.03)
    total = sum(parts[p]["estimate"] for p in ("retrieval", "integration", "parametric", "not_retrievable"))
    assert total == pytest.approx(parts["total"]["estimate"], abs=1e-12)
    row = res.per_arm.row(0, named=True)
    assert row["not_retrievable_share"] == pytest.approx(0.3)
    # the sensitivity table: counting yes/no as "not retrieved" is what put the gain in parametric
    sens = {(r["rule"], r["part"]): r["estimate"] for r in res.split_sensitivity.iter_rows(named=True)}
    assert sens[("text", "parametric")] == pytest.approx(parts["parametric"]["estimate"], abs=1e-12)
    assert sens[("text_not_retrievable_as_not_retrieved", "parametric")] > 0.02
    assert sens[("text_not_retrievable_as_not_retrieved", "not_retrievable")] == 0.0
    assert {rule for rule, _ in sens} == {"text", "text_not_retrievable_as_not_retrieved", "squad_reading"}


def test_evidence_column_decides_where_it_is_given():
    runs = planted_yes_no(n_q=60)
    status = retrieval_status(runs, evidence="evidence")
    assert set(status.tolist()) <= {0, 1}
    assert np.array_equal(status, runs["evidence"].to_numpy().astype(int))
    res = integration(runs, base="base", treated="rl", n_boot=100, evidence="evidence")
    parts = {r["part"]: r["estimate"] for r in res.split.iter_rows(named=True)}
    assert parts["not_retrievable"] == 0.0
    assert parts["integration"] == pytest.approx(0.6 * 0.2, abs=0.05)  # the whole gain, yes/no questions included
    assert any("`evidence`" in n for n in res.notes)
    partial = runs.with_columns(evidence=pl.when(pl.col("sample_id") == 0).then(None).otherwise(pl.col("evidence")))
    mixed = retrieval_status(partial, evidence="evidence")
    assert np.array_equal(mixed[partial["evidence"].is_null().to_numpy()],
                          retrieval_status(partial)[partial["evidence"].is_null().to_numpy()])


def _brute_nested(runs: pl.DataFrame, labels: np.ndarray) -> dict:
    """The nested split on (question, strategy) strata with loops, questions weighing 1/Q.

    What an arm lacks comes from its own data: a retrieval stratum it never reached in a cell
    takes its modelled rate (additive logit over question and strategy x stratum), and a cell it
    never used its modelled retrieval mix (the question's not-retrievable share, a retrieval
    rate with additive question and strategy effects) with those modelled rates."""
    from mechanism.analysis.compare import additive_logit

    status = retrieval_status(runs)
    rows = list(zip(runs["arm"], runs["question_id"], labels.tolist(), status.tolist(), runs["correct"]))
    per: dict = {}
    for arm, q, s, k, c in rows:
        per.setdefault((arm, q), []).append((s, k, c))
    questions = sorted({q for _, q in per})
    strategies = sorted(set(labels.tolist()))
    fitted, reached = {}, {}
    for arm in ("base", "rl"):
        n = np.zeros((len(questions), len(strategies), 3))
        c = np.zeros_like(n)
        for qi, q in enumerate(questions):
            for s, k, ok in per[(arm, q)]:
                n[qi, strategies.index(s), k] += 1
                c[qi, strategies.index(s), k] += ok
        fitted[arm] = additive_logit(n.reshape(len(questions), -1), c.reshape(len(questions), -1)).reshape(n.shape)
        reached[arm] = additive_logit(n[..., :2].sum(axis=-1), n[..., 1])
    sums = dict.fromkeys(("composition", "within", "retrieval", "integration", "parametric", "not_retrievable"), 0.0)
    for qi, q in enumerate(questions):
        for si, s in enumerate(strategies):
            cell = {}
            for arm in ("base", "rl"):
                items = per[(arm, q)]
                mine = [(k, c) for ss, k, c in items if ss == s]
                p = len(mine) / len(items) / len(questions)
                if mine:
                    share = [np.mean([k == j for k, _ in mine]) for j in range(3)]
                else:
                    u = np.mean([k == 2 for _, k, _ in items])
                    share = [(1 - u) * (1 - reached[arm][qi, si]), (1 - u) * reached[arm][qi, si], u]
                rate = [np.mean([c for k, c in mine if k == j]) if any(k == j for k, _ in mine)
                        else fitted[arm][qi, si, j] for j in range(3)]
                cell[arm] = (p, bool(mine), share, rate)
            (pb, ub, sb, ab), (pt, ut, st, at) = cell["base"], cell["rl"]
            if not ub and not ut:
                continue
            rb = sum(x * y for x, y in zip(sb, ab))
            rt = sum(x * y for x, y in zip(st, at))
            w = (pb + pt) / 2
            sums["composition"] += (pt - pb) * (rt + rb) / 2
            sums["within"] += w * (rt - rb)
            sums["retrieval"] += w * sum((st[j] - sb[j]) * (at[j] + ab[j]) / 2 for j in range(3))
            for j, name in enumerate(("parametric", "integration", "not_retrievable")):
                sums[name] += w * (at[j] - ab[j]) * (st[j] + sb[j]) / 2
    return sums


def test_nested_split_on_question_strategy_strata_matches_a_brute_force():
    rng = np.random.default_rng(5)
    records, labels = [], []
    for q in range(12):
        gold = ["no"] if q % 4 == 0 else ["Paris"]
        for arm in ("base", "rl"):
            for j in range(int(rng.integers(2, 7))):  # unequal samples per question and arm
                s = int(rng.integers(0, 3))
                records.append(_record(arm, f"q{q:02d}", j, gold=gold, ok=rng.random() < 0.5,
                                       retrieved=rng.random() < 0.5))
                labels.append(s)
    runs, labels = from_records(records), np.array(labels)
    res = integration(runs, base="base", treated="rl", labels=labels, n_boot=20)
    q = {r["quantity"]: r["estimate"] for r in res.shift.iter_rows(named=True)}
    brute = _brute_nested(runs, labels)
    for name in ("composition", "within"):
        assert q[name] == pytest.approx(brute[name], abs=1e-12), name
    for name in ("retrieval", "integration", "parametric", "not_retrievable"):
        assert q[f"within_{name}"] == pytest.approx(brute[name], abs=1e-12), name


def test_success_that_depends_on_the_question_only_is_not_within_strategy_change():
    # strategies moved between easy and hard questions: rl uses strategy 0 on easy questions
    covered = 0
    for seed in range(10):
        rng = np.random.default_rng(seed)
        p = rng.uniform(0.1, 0.9, 60)
        records, labels = [], []
        for arm in ("base", "rl"):
            for q in range(60):
                mix = [1 / 3] * 3 if arm == "base" or p[q] < 0.5 else [0.8, 0.1, 0.1]
                for j in range(8):
                    labels.append(int(rng.choice(3, p=mix)))
                    records.append(_record(arm, f"q{q:02d}", j, gold=["Paris"], ok=rng.random() < p[q],
                                           retrieved=rng.random() < p[q]))
        res = integration(from_records(records), base="base", treated="rl", labels=np.array(labels),
                          n_boot=200, random_state=seed)
        shift = {r["quantity"]: r for r in res.shift.iter_rows(named=True)}
        covered += all(shift[n]["ci_low"] <= 0.0 <= shift[n]["ci_high"] for n in ("composition", "within"))
    assert covered >= 8
