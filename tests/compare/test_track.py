"""Checkpoint series (mx.track, mechanism track): order, shares with intervals against brute
force, the split against mx.reweighting, determinism, the result protocol, figures, the CLI."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import mechanism as mx
from mechanism._cli.main import main
from mechanism.analysis.checkpoints import natural_key, order_checkpoints, weighted_shares
from mechanism.core.errors import InputError
from mechanism.datasets.simulation import training_run

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def run():
    return training_run(steps=(0, 50, 100, 200), n_questions=12, n_samples=6, random_state=3, progress=False)


@pytest.fixture(scope="module")
def series(run):
    return mx.track(run.runs, labels=run.truth["strategy"], n_boot=200, random_state=0)


def test_training_run_moves_from_base_toward_rl(run):
    fractions = run.config["training"]["fraction"]
    assert fractions[0] == 0.0 and fractions[-1] == pytest.approx(1.0)
    assert all(b > a for a, b in zip(fractions, fractions[1:]))
    policies = run.config["policies"]
    base, rl = mx.default_policies()["base"], mx.default_policies()["rl"]
    assert policies["step-0"]["mixture"] == pytest.approx(dict(zip(mx.STRATEGIES, base.probabilities)))
    assert policies["step-200"]["mixture"] == pytest.approx(dict(zip(mx.STRATEGIES, rl.probabilities)))
    with pytest.raises(mx.MechanismError, match="increasing"):
        training_run(steps=(100, 0))


def test_order_natural_step_column_and_explicit():
    runs = pl.DataFrame({"arm": ["ckpt200", "ckpt50", "ckpt1000", "ckpt50"], "s": [2, 1, 3, 1]})
    assert order_checkpoints(runs)[0] == ["ckpt50", "ckpt200", "ckpt1000"]
    assert sorted(["a10", "a9", "a100"], key=natural_key) == ["a9", "a10", "a100"]
    renamed = runs.with_columns(pl.col("arm").replace({"ckpt1000": "final"}))
    names, steps = order_checkpoints(renamed, step="s")
    assert names == ["ckpt50", "ckpt200", "final"] and steps == [1.0, 2.0, 3.0]
    assert order_checkpoints(runs, order=["ckpt1000", "ckpt50"])[0] == ["ckpt1000", "ckpt50"]
    with pytest.raises(InputError, match="`order`"):
        order_checkpoints(runs, order=["nope"])
    with pytest.raises(InputError, match="more than one value"):
        order_checkpoints(runs.with_columns(pl.Series("s", [2, 1, 3, 5])), step="s")
    with pytest.raises(InputError, match="`missing`"):
        order_checkpoints(runs, step="missing")


def test_weighted_shares_match_a_loop_over_questions():
    rng = np.random.default_rng(0)
    q = rng.integers(0, 7, 200)
    s = rng.integers(0, 4, 200)
    q[q == 6] = 5  # question 6 has no trajectory: it must not count
    expected = np.mean([np.bincount(s[q == i], minlength=4) / (q == i).sum() for i in range(6)], axis=0)
    assert weighted_shares(q, s, 7, 4) == pytest.approx(expected)
    w = rng.multinomial(7, np.full(7, 1 / 7), size=5)
    reps = weighted_shares(q, s, 7, 4, weights=w)
    for b in range(5):
        per_q = [np.bincount(s[q == i], minlength=4) / (q == i).sum() for i in range(6) for _ in range(w[b, i])]
        assert reps[b] == pytest.approx(np.mean(per_q, axis=0))


def test_shares_equal_brute_force_and_intervals_hold_them(run, series):
    labels = run.truth["strategy"].to_numpy()
    arms = run.runs["arm"].to_numpy()
    qids = run.runs["question_id"].to_numpy()
    for name in series.checkpoints:
        got = series.shares.filter(pl.col("checkpoint") == name)
        for row in got.iter_rows(named=True):
            strategy = row["name"].split(" ", 1)[1]
            per_q = [np.mean(labels[(arms == name) & (qids == qq)] == strategy) for qq in np.unique(qids)]
            assert row["share"] == pytest.approx(np.mean(per_q))
            assert row["ci_low"] <= row["share"] + 1e-12 and row["share"] <= row["ci_high"] + 1e-12
        assert got["share"].sum() == pytest.approx(1.0)


def test_split_adds_up_and_matches_reweighting(run, series):
    wide = series.split.pivot(on="part", index="checkpoint", values="estimate")
    assert (wide["composition"] + wide["within"] - wide["total"]).abs().max() < 1e-12
    base_row = series.split.filter(pl.col("checkpoint") == "step-0")
    assert base_row["estimate"].abs().max() == 0.0
    pair = run.runs.with_columns(pl.Series("label", run.truth["strategy"])).filter(
        pl.col("arm").is_in(["step-0", "step-200"]))
    rw = mx.reweighting(pair, pair["label"].to_numpy(), base="step-0", treated="step-200", n_boot=200,
                        random_state=0, n_permutations=0)
    last = {r["part"]: r for r in series.split.filter(pl.col("checkpoint") == "step-200").iter_rows(named=True)}
    assert last["composition"]["estimate"] == pytest.approx(rw.composition)
    assert last["within"]["estimate"] == pytest.approx(rw.within)
    assert (last["total"]["ci_low"], last["total"]["ci_high"]) == pytest.approx(rw.total_ci)
    js = series.divergence.filter(pl.col("checkpoint") == "step-200")["js_divergence"][0]
    assert js == pytest.approx(rw.js_divergence)


def test_passkt_and_accuracy_per_checkpoint(run, series):
    curves = mx.pass_at_kt(run.runs, k=[1], t=[5], ci=None)
    acc = dict(series.accuracy.select("checkpoint", "accuracy").iter_rows())
    for arm, value in curves.select("arm", "pass_at_kt").iter_rows():
        assert acc[arm] == pytest.approx(value)  # PASS@(1,T=cap) is question-weighted accuracy
    assert set(series.passkt["k"].to_list()) == {1, 4}  # 1 and the largest power of 2 under n = 6


def test_same_seed_same_tables_other_seed_other_intervals(run, series):
    again = mx.track(run.runs, labels=run.truth["strategy"], n_boot=200, random_state=0)
    other = mx.track(run.runs, labels=run.truth["strategy"], n_boot=200, random_state=1)
    assert again.to_frame().equals(series.to_frame())
    assert not other.shares["ci_low"].equals(series.shares["ci_low"])
    assert other.shares["share"].equals(series.shares["share"])


def test_seed_may_be_a_generator_or_none_and_accuracy_intervals_pair_with_passkt(run, series):
    """``random_state`` takes what every entry point takes: an int, a Generator (turned into
    one integer once) or None (fresh entropy); a bool is refused. Shares and accuracy resample
    the questions from the same stream as PASS@(k,T), so their intervals are paired."""
    from mechanism.core.resample import resolve_seed

    labels = run.truth["strategy"]
    by_generator = mx.track(run.runs, labels=labels, n_boot=200, random_state=np.random.default_rng(9))
    by_int = mx.track(run.runs, labels=labels, n_boot=200, random_state=resolve_seed(np.random.default_rng(9)))
    assert by_generator.to_frame().equals(by_int.to_frame())
    fresh = mx.track(run.runs, labels=labels, n_boot=50, random_state=None)
    assert fresh.shares["share"].equals(series.shares["share"]) and fresh.shares["ci_low"].is_not_null().all()
    with pytest.raises(ValueError, match="random_state"):
        mx.track(run.runs, labels=labels, random_state=True)
    curves = mx.pass_at_kt(run.runs, k=[1], t=[5], n_boot=200, random_state=0, interval="percentile")
    for row in curves.iter_rows(named=True):
        acc = series.accuracy.filter(pl.col("checkpoint") == row["arm"]).row(0, named=True)
        assert (acc["ci_low"], acc["ci_high"]) == pytest.approx((row["ci_low"], row["ci_high"]), abs=1e-12)


def test_a_space_fitted_here_takes_a_generator_or_none():
    """StrategySpace needs an integer seed in [0, 2**32): with a Generator or None the space gets
    the resolved integer modulo 2**32, and the same Generator state gives the same series."""
    small = training_run(steps=(0, 100, 200), n_questions=6, n_samples=4, random_state=1, progress=False)
    a = mx.track(small.runs, embedder="hashing-64", n_boot=20, random_state=np.random.default_rng(4), progress=False)
    b = mx.track(small.runs, embedder="hashing-64", n_boot=20, random_state=np.random.default_rng(4), progress=False)
    assert a.to_frame().equals(b.to_frame()) and a.notes[0].startswith("strategies: a space fitted")
    fresh = mx.track(small.runs, embedder="hashing-64", n_boot=20, random_state=None, progress=False)
    assert fresh.checkpoints == a.checkpoints


def test_protocol(series):
    assert repr(series).count("\n") == 0 and repr(series).startswith("<Track: 4 checkpoints")
    s = series.summary()
    assert "composition" in str(s) and str(s).count("\n") >= 4
    assert "<table" in s._repr_html_() and r"\begin{tabular}" in s.as_latex()
    frame = series.to_frame()
    assert "checkpoint" in frame.columns and frame.columns[-4:] == ["quantity", "estimate", "ci_low", "ci_high"]
    pairs = frame.filter(pl.col("quantity").is_in(["total", "composition", "within", "js_divergence_bits"]))
    assert set(pairs["base"]) == {series.base} and pairs["treated"].equals(pairs["checkpoint"])
    assert frame.filter(pl.col("quantity") == "accuracy")["base"].null_count() == len(series.checkpoints)
    json.dumps(series.to_dict())
    assert set(series.tables()) == {"estimates", "shares", "passkt", "split", "divergence", "accuracy"}


def test_track_needs_two_checkpoints_and_a_known_base(run):
    one = run.runs.filter(pl.col("arm") == "step-0")
    with pytest.raises(InputError, match="at least two checkpoints"):
        mx.track(one, labels=np.zeros(one.height, dtype=int))
    with pytest.raises(InputError, match="`base`"):
        mx.track(run.runs, labels=run.truth["strategy"], base="nope")


def test_cli_writes_shares_with_intervals_and_the_figures(tmp_path, run):
    run.write(tmp_path / "data")
    rc = main(["track", str(tmp_path / "data" / "searchr1"),
               "--labels", str(tmp_path / "data" / "truth" / "truth.parquet"),
               "--out", str(tmp_path / "out"), "--n-boot", "100", "--no-progress"])
    assert rc == 0
    shares = pl.read_csv(tmp_path / "out" / "shares.csv")
    assert shares["checkpoint"].unique(maintain_order=True).to_list() == ["step-0", "step-50", "step-100", "step-200"]
    assert shares["ci_low"].null_count() == 0 and (shares["ci_low"] <= shares["ci_high"]).all()
    for stem in ("shares_over_training", "split_over_training", "passkt_over_training"):
        assert (tmp_path / "out" / f"{stem}.png").stat().st_size > 5000


@pytest.mark.slow
def test_cli_on_five_checkpoints_of_60_questions_x_16_samples(tmp_path):
    """The issue's workload: 5 checkpoints x 60 questions x 16 samples, a space fitted with the default
    embedder, shares with intervals and the three series figures (its time is bench_track's)."""
    env = {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MPLBACKEND": "Agg",
           "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    subprocess.run([sys.executable, "-m", "mechanism", "simulate", "--training-steps", "0", "100", "200", "300",
                    "400", "--questions", "60", "--samples", "16", "--out", str(tmp_path / "run"), "--no-progress"],
                   check=True, env=env, capture_output=True)
    subprocess.run([sys.executable, "-m", "mechanism", "track", str(tmp_path / "run" / "searchr1"), "--out",
                    str(tmp_path / "out"), "--no-progress"], check=True, env=env, capture_output=True)
    shares = pl.read_csv(tmp_path / "out" / "shares.csv")
    assert shares["checkpoint"].n_unique() == 5 and shares["ci_high"].null_count() == 0
    for stem in ("shares_over_training", "split_over_training", "passkt_over_training"):
        assert (tmp_path / "out" / f"{stem}.png").is_file()
    assert not math.isnan(pl.read_csv(tmp_path / "out" / "split.csv")["estimate"].sum())


def test_training_run_moves_per_strategy_integration_skill_between_its_ends():
    from mechanism.datasets.simulation import Policy, training_run
    from mechanism.datasets.simulation.policies import STRATEGIES

    mix = dict.fromkeys(STRATEGIES, 1.0)
    start = Policy("start", mix, strategy_integration={"bridge": 0.2})
    end = Policy("end", mix, strategy_integration={"bridge": 0.8})
    sim = training_run(steps=(0, 100), n_questions=2, n_samples=1, start=start, end=end, random_state=0,
                       progress=False)
    factors = [p["strategy_integration"]["bridge"] for p in sim.config["policies"].values()]
    assert factors == pytest.approx([0.2, 0.8])
