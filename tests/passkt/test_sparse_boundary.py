"""The boundary test built for few questions gained at a high rate, pass^k intervals
that hold, the Result that pass_at_kt returns, and the message for a T that no cap was run at."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import mechanism as mx
from mechanism.analysis.boundaries import boundary, fisher_two_sided, tarone_count
from mechanism.core.errors import InputError


def sparse_world(seed: int, n_q: int = 100, n_gained: int = 5, rate: float = 0.9, n_base: int = 8,
                 n_treated: int = 8) -> pl.DataFrame:
    """``n_gained`` of ``n_q`` questions go from base 0 to rl ``rate`` per sample; the rest share
    one success rate (Beta(0.4, 2)) in both arms."""
    rng = np.random.default_rng(seed)
    p = rng.beta(0.4, 2.0, n_q)
    pb, pt = p.copy(), p.copy()
    pb[:n_gained], pt[:n_gained] = 0.0, rate
    frames = []
    for arm, n, pr in (("base", n_base, pb), ("rl", n_treated, pt)):
        ok = rng.random((n_q, n)) < pr[:, None]
        frames.append(pl.DataFrame({"arm": arm, "question_id": np.repeat([f"q{i:03d}" for i in range(n_q)], n),
                                    "sample_id": np.tile(np.arange(n), n_q), "correct": ok.reshape(-1),
                                    "n_rounds": 1}))
    return pl.concat(frames)


def test_fisher_and_tarone_pieces():
    p, p_min = fisher_two_sided(np.array([0, 3, 0]), np.array([8, 3, 0]), np.array([8, 8, 8]))
    assert p[0] == pytest.approx(2 / 12870) and p[1] == pytest.approx(1.0) and p_min[2] == 1.0
    assert tarone_count(np.array([1e-5, 0.5, 1.0, 1.0]), 0.05) == 1


def test_the_boundary_reports_the_sparse_test_and_what_each_test_can_detect():
    b = boundary(sparse_world(0), base="base", treated="rl", t=[1], k=[1], ci=None, n_permutations=2000)
    row = b.tests.row(0, named=True)
    assert row["p_sparse"] < 0.05 and row["sparse_gained"] >= 1 and row["sparse_lost"] == 0
    assert row["detectable_sparse"] is not None and row["detectable_sparse"] < row["detectable_summed"]
    assert "sparse test" in b.verdict() and "question(s) gained" in b.verdict()


@pytest.mark.slow
def test_sparse_gains_are_found_and_identical_policies_are_not():
    power = sum(boundary(sparse_world(s), base="base", treated="rl", t=[1], k=[1], ci=None, n_permutations=1000)
                .tests["p_sparse"].item() < 0.05 for s in range(40))
    null = sum(boundary(sparse_world(s, n_gained=0, n_base=4, n_treated=32), base="base", treated="rl", t=[1], k=[1],
                        ci=None, n_permutations=1000).tests["p_sparse"].item() < 0.05 for s in range(50))
    assert power >= 32  # 0.8 of 40 (the summed test: about 0.2)
    assert null <= 3    # 0.06 of 50


def test_pass_at_kt_is_a_dataframe_with_notes():
    rng = np.random.default_rng(0)
    runs = pl.DataFrame({"arm": "a", "question_id": np.repeat([f"q{i}" for i in range(8)], 4),
                         "correct": rng.random(32) < 0.5, "n_rounds": 1})
    table = mx.pass_at_kt(runs, k=[1, 2], t=[1], n_boot=100)
    assert isinstance(table, pl.DataFrame)
    assert table.columns[:6] == ["arm", "k", "t", "pass_at_kt", "ci_low", "ci_high"]
    assert table.filter(pl.col("k") == 1).height == 1 and pl.DataFrame(table).equals(table)
    long = table.to_frame()  # the result protocol's long form
    assert long.columns[-4:] == ["quantity", "estimate", "ci_low", "ci_high"]
    assert long["estimate"].to_list() == table["pass_at_kt"].to_list()
    assert any(n.startswith("small sample") for n in table.notes)
    assert "small sample" in str(table.summary())


def test_pass_hat_k_uses_the_bootstrap_t():
    rng = np.random.default_rng(1)
    runs = pl.DataFrame({"arm": "a", "question_id": np.repeat([f"q{i}" for i in range(20)], 16),
                         "correct": (rng.random((20, 16)) < rng.beta(0.3, 1.5, 20)[:, None]).reshape(-1),
                         "n_rounds": 1})
    table = mx.pass_at_kt(runs, k=[4], t=[1], n_boot=200, metric="pass^k")
    assert table["interval"].item() in ("bootstrap-t", "wilson")
    assert table["ci_low"].item() <= table["pass_at_kt"].item() <= table["ci_high"].item()


@pytest.mark.slow
def test_pass_hat_k_intervals_cover_on_skewed_values():
    from scipy.special import betaln

    truth = float(np.exp(betaln(0.3 + 4, 1.5) - betaln(0.3, 1.5)))
    hits = 0
    for r in range(100):
        rng = np.random.default_rng(500 + r)
        ok = rng.random((10, 16)) < rng.beta(0.3, 1.5, 10)[:, None]
        runs = pl.DataFrame({"arm": "a", "question_id": np.repeat([f"q{i}" for i in range(10)], 16),
                             "correct": ok.reshape(-1), "n_rounds": 1})
        got = mx.pass_at_kt(runs, k=[4], t=[1], n_boot=300, random_state=r, metric="pass^k")
        hits += got["ci_low"].item() <= truth <= got["ci_high"].item()
    assert hits >= 90  # percentile and Wilson: about 0.6 here


def test_a_t_no_cap_was_run_at_is_named():
    runs = pl.DataFrame({"arm": "a", "question_id": ["q1"] * 4, "sample_id": [0, 1, 2, 3],
                         "correct": [True, False, True, False], "n_rounds": 1, "t_cap": [1, 1, 3, 3]})
    with pytest.raises(InputError, match="no episode was run with `t_cap` == 2"):
        mx.pass_at_kt(runs, k=[1], t=[1, 2, 3], ci=None)
