"""pass^k (tau-bench's "all k of k trials succeed") and per-task consistency: checked against
brute force over every k-subset, on a fixture shaped like tau-bench's GPT-4o airline runs."""
from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

import mechanism as mx
from mechanism.core.errors import InputError

# tau-bench's published GPT-4o airline pass^k (50 tasks, 4 trials): 0.42, 0.273, 0.22, 0.20.
# The per-task success counts that give exactly these (mean C(c,k)/C(4,k)) are the unique
# integer solution: 14 tasks solved 0 times, 12 once, 10 twice, 4 three times, 10 every time.
AIRLINE_COUNTS = {0: 14, 1: 12, 2: 10, 3: 4, 4: 10}
AIRLINE_PASS_HAT_K = {1: 0.42, 2: 82 / 300, 3: 0.22, 4: 0.20}


def airline_runs() -> pl.DataFrame:
    rng = np.random.default_rng(7)
    rows, task = [], 0
    for c, n_tasks in AIRLINE_COUNTS.items():
        for _ in range(n_tasks):
            wins = set(rng.choice(4, size=c, replace=False).tolist())  # which trials succeed varies
            rows += [{"arm": "gpt-4o", "question_id": f"task{task:02d}", "sample_id": s,
                      "correct": s in wins, "n_rounds": int(rng.integers(1, 9))} for s in range(4)]
            task += 1
    return pl.DataFrame(rows).sample(fraction=1.0, shuffle=True, seed=3)  # any row order


def brute_all_succeed(hits: list[bool], k: int) -> float:
    subsets = list(itertools.combinations(range(len(hits)), k))
    return sum(all(hits[i] for i in sub) for sub in subsets) / len(subsets)


def test_pass_hat_k_reproduces_tau_bench_airline_numbers_and_brute_force():
    runs = airline_runs()
    got = mx.pass_at_kt(runs, k=[1, 2, 3, 4], t=[100], ci=None, metric="pass^k")
    assert got["metric"].unique().to_list() == ["pass^k"]
    per_task = {q: g.sort("sample_id")["correct"].to_list()
                for (q,), g in runs.group_by("question_id")}
    assert len(per_task) == 50 and all(len(v) == 4 for v in per_task.values())
    for row in got.iter_rows(named=True):
        brute = np.mean([brute_all_succeed(h, row["k"]) for h in per_task.values()])
        assert row["pass_at_kt"] == pytest.approx(brute, abs=1e-12)
        assert row["pass_at_kt"] == pytest.approx(AIRLINE_PASS_HAT_K[row["k"]], abs=1e-12)
    assert [round(v, 3) for v in got.sort("k")["pass_at_kt"]] == [0.42, 0.273, 0.22, 0.20]


def test_pass_hat_k_on_the_t_axis_equals_brute_force_with_intervals():
    rng = np.random.default_rng(4)
    rows = [{"arm": arm, "question_id": f"q{q}", "sample_id": s, "correct": bool(rng.random() < 0.6),
             "n_rounds": int(rng.integers(0, 5))} for arm in ("a", "b") for q in range(15) for s in range(6)]
    runs = pl.DataFrame(rows)
    got = mx.pass_at_kt(runs, k=[1, 2, 3, 6], t=[0, 2, 4], ci=0.9, n_boot=200, metric="pass^k")
    assert got.columns == ["arm", "k", "t", "pass_at_kt", "ci_low", "ci_high", "interval", "n_problems",
                           "t_source", "metric"]
    for row in got.iter_rows(named=True):
        sub = runs.filter(pl.col("arm") == row["arm"])
        vals = [brute_all_succeed([ok and r <= row["t"] for ok, r in zip(g["correct"], g["n_rounds"])], row["k"])
                for _, g in sub.group_by("question_id")]
        assert row["pass_at_kt"] == pytest.approx(np.mean(vals), abs=1e-12)
        assert row["ci_low"] <= row["pass_at_kt"] + 1e-12 and row["pass_at_kt"] <= row["ci_high"] + 1e-12
    # pass^k never exceeds pass@k, equals it at k = 1, and falls with k
    at = mx.pass_at_kt(runs, k=[1, 2, 3, 6], t=[0, 2, 4], ci=None)
    hat = got.sort("arm", "k", "t")["pass_at_kt"].to_numpy()
    assert np.all(hat <= at.sort("arm", "k", "t")["pass_at_kt"].to_numpy() + 1e-12)
    k1 = got.filter(pl.col("k") == 1).sort("arm", "t")["pass_at_kt"].to_numpy()
    assert np.allclose(k1, at.filter(pl.col("k") == 1).sort("arm", "t")["pass_at_kt"].to_numpy())
    assert all(np.all(np.diff(g.sort("k")["pass_at_kt"].to_numpy()) <= 1e-12)
               for _, g in got.group_by("arm", "t"))
    per_problem = mx.pass_at_kt_per_problem(runs, k=[2], t=[4], metric="pass^k")
    assert per_problem["metric"].unique().to_list() == ["pass^k"]


def test_default_metric_is_pass_at_k_and_bad_metric_is_an_input_error():
    runs = airline_runs()
    assert mx.pass_at_kt(runs, k=[4], t=[100], ci=None)["metric"].item() == "pass@k"
    assert mx.pass_at_kt(runs, k=[4], t=[100], ci=None)["pass_at_kt"].item() == pytest.approx(36 / 50)
    with pytest.raises(InputError, match="`metric`"):
        mx.pass_at_kt(runs, k=[1], t=[1], ci=None, metric="pass^^k")


def test_consistency_table_counts_all_none_some_per_task():
    runs = airline_runs()
    res = mx.consistency(runs, n_boot=200)
    assert res.per_task.height == 50
    assert res.per_task.columns == ["arm", "question_id", "n", "successes", "success_rate", "consistency"]
    kinds = res.per_task["consistency"].value_counts().sort("consistency")
    assert dict(kinds.iter_rows()) == {"all": 10, "none": 14, "some": 26}
    row = res.by_arm.row(0, named=True)
    assert row["n_tasks"] == 50
    assert (row["share_all"], row["share_none"], row["share_some"]) == (0.2, 0.28, 0.52)
    assert row["success_rate"] == pytest.approx(0.42)
    for name in ("share_all", "share_none", "share_some", "success_rate"):
        assert row[f"{name}_low"] <= row[name] <= row[f"{name}_high"]
    # share_all is pass^n: the summary and pass^k agree
    assert row["share_all"] == pytest.approx(mx.pass_at_kt(runs, k=[4], t=[100], ci=None,
                                                           metric="pass^k")["pass_at_kt"].item())
    assert {"estimates", "per_task", "by_arm"} <= set(res.tables()) and "50 tasks" in str(res.summary())
    assert res.to_dict()["by_arm"][0]["n_tasks"] == 50


def test_consistency_within_t_and_by_several_columns():
    runs = pl.DataFrame({"arm": ["a"] * 4 + ["b"] * 4, "question_id": ["q1", "q1", "q2", "q2"] * 2,
                         "category": ["x", "x", "y", "y"] * 2,
                         "correct": [True, True, True, False, True, True, False, False],
                         "n_rounds": [1, 3, 1, 1, 0, 0, 0, 0]})
    res = mx.consistency(runs, t=1, ci=None)
    got = {(r["arm"], r["question_id"]): r["consistency"] for r in res.per_task.iter_rows(named=True)}
    assert got == {("a", "q1"): "some", ("a", "q2"): "some", ("b", "q1"): "all", ("b", "q2"): "none"}
    by_cat = mx.consistency(runs, by=("arm", "category"), ci=None)
    assert by_cat.by_arm.height == 4 and by_cat.by_arm["share_all_low"].null_count() == 4


def test_small_samples_get_a_wilson_type_interval_and_a_note():
    from scipy.stats import t as student

    from mechanism.analysis.passkt import small_sample_note

    rng = np.random.default_rng(2)
    rows = [{"arm": arm, "question_id": f"q{q}", "sample_id": s, "correct": bool(rng.random() < 0.3 + 0.1 * q),
             "n_rounds": 1} for arm, n_q in (("few", 6), ("many", 40)) for q in range(n_q) for s in range(8)]
    runs = pl.DataFrame(rows)
    got = mx.pass_at_kt(runs, k=[1, 4], t=[1], n_boot=200)
    method = dict(got.select("arm", "interval").unique().iter_rows())
    assert method == {"few": "wilson", "many": "percentile"}
    per = mx.pass_at_kt_per_problem(runs.filter(pl.col("arm") == "few"), k=[4], t=[1])["pass_at_kt"].to_numpy()
    crit = student.ppf(0.975, per.size - 1)
    se = per.std(ddof=1) / np.sqrt(per.size)
    # brute force: the Wilson score interval solved for mu, |mean - mu| = crit sqrt(mu (1 - mu) / n_eff)
    m = per.mean()
    n_eff = m * (1 - m) / se ** 2
    a, b, c = 1 + crit ** 2 / n_eff, -(2 * m + crit ** 2 / n_eff), m * m
    roots = sorted(np.roots([a, b, c]).real)
    row = got.filter((pl.col("arm") == "few") & (pl.col("k") == 4)).row(0, named=True)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(roots, abs=1e-12)
    assert m > 0.5 and row["ci_high"] - m < m - row["ci_low"]  # shorter toward the nearer bound, 1
    student_row = mx.pass_at_kt(runs.filter(pl.col("arm") == "few"), k=[4], t=[1], n_boot=200,
                                interval="studentized").row(0, named=True)
    assert student_row["interval"] == "studentized"
    assert (student_row["ci_low"], student_row["ci_high"]) == pytest.approx(
        (max(m - crit * se, 0.0), min(m + crit * se, 1.0)), abs=1e-12)
    (note,) = small_sample_note(got)
    assert "fewer than 30 problems (fewest 6)" in note and "Wilson-type" in note
    assert small_sample_note(got.filter(pl.col("arm") == "many")) == []
    plain = mx.pass_at_kt(runs, k=[1, 4], t=[1], n_boot=200, interval="percentile")
    assert plain["interval"].unique().to_list() == ["percentile"]
    assert "under-cover" in small_sample_note(plain)[0]
    b = mx.boundary(runs.with_columns(arm=pl.when(pl.col("question_id").is_in(["q0", "q1", "q2"]))
                                      .then(pl.lit("x")).otherwise(pl.col("arm"))),
                    base="few", treated="many", t=[1], k=[1], n_boot=50, n_permutations=200, allow_few_shared=True)
    assert any(n.startswith("small sample") for n in b.notes)
    with pytest.raises(InputError, match="`interval`"):
        mx.pass_at_kt(runs, k=[1], t=[1], interval="bca")


def test_the_report_writes_pass_hat_k_and_consistency_tables(tmp_path):
    from mechanism.report.passkt import analyse_passkt, write_passkt

    section = write_passkt(analyse_passkt(airline_runs(), k=[1, 2, 4], t=[100], n_boot=50), tmp_path, figures=False)
    hat = pl.read_csv(tmp_path / "pass_hat_k.csv").sort("k")
    assert [round(v, 3) for v in hat["pass_at_kt"]] == [0.42, 0.273, 0.20]
    per_task = pl.read_csv(tmp_path / "consistency.csv")
    assert per_task.height == 50 and set(per_task["consistency"]) == {"all", "none", "some"}
    assert pl.read_csv(tmp_path / "consistency_summary.csv")["share_all"].item() == pytest.approx(0.2)
    assert "pass^4" in section.text and "50 tasks" in section.text
