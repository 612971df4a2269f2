"""``mechanism passkt`` end to end, on simulated files and on the FireAct data, and the
issue's acceptance statement on simulated base vs rl."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import mechanism as mx
from mechanism._cli.main import main
from mechanism.analysis.boundaries import boundary
from mechanism.analysis.passkt import pass_at_kt


@pytest.fixture(scope="module")
def simulation():
    from mechanism.datasets.simulation import simulate
    return simulate(n_questions=40, n_samples=16, random_state=0, progress=False)


def test_cli_writes_tables_and_figures(simulation, tmp_path, capsys):
    simulation.write(tmp_path / "sim")
    out = tmp_path / "out"
    code = main(["passkt", str(tmp_path / "sim" / "searchr1" / "base.jsonl"),
                 str(tmp_path / "sim" / "openai" / "rl.jsonl"),
                 "--k", "1", "2", "4", "16", "--t", "0", "2", "5", "--n-boot", "100", "--out", str(out)])
    assert code == 0
    table = pl.read_csv(out / "pass_at_kt.csv")
    assert table.columns == ["arm", "k", "t", "pass_at_kt", "ci_low", "ci_high", "interval", "n_problems",
                             "t_source", "metric"]
    assert table.height == 2 * 4 * 3
    # the table read back from files equals the estimate from the simulator's own table
    direct = pass_at_kt(simulation.runs.filter(pl.col("arm").is_in(["base", "rl"])), k=[1, 2, 4, 16],
                        t=[0, 2, 5], n_boot=100)
    assert np.allclose(table.sort("arm", "k", "t")["pass_at_kt"].to_numpy(),
                       direct.sort("arm", "k", "t")["pass_at_kt"].to_numpy(), atol=1e-12)
    for name in ("pass_curves.png", "pass_curves.pdf", "pass_surfaces.png", "pass_at_kt_per_problem.parquet",
                 "rl_vs_base/boundary_tests.csv", "rl_vs_base/gap_surface.png", "rl_vs_base/boundary.pdf",
                 "rl_vs_base/summary.txt", "rl_vs_base/crossings.csv"):
        assert (out / name).is_file(), name
    assert "capability boundary: rl vs base" in capsys.readouterr().out


def test_cli_k_above_n_exits_2_with_one_line(simulation, tmp_path, capsys):
    simulation.write(tmp_path / "sim")
    code = main(["passkt", str(tmp_path / "sim" / "searchr1" / "base.jsonl"), "--k", "1", "32",
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert "k = 32 is larger than the 16 samples" in err and len(err.strip().splitlines()) == 1


def test_cli_unknown_base_exits_2(simulation, tmp_path, capsys):
    simulation.write(tmp_path / "sim")
    code = main(["passkt", str(tmp_path / "sim" / "searchr1" / "base.jsonl"), "--base", "nope", "--k", "1",
                 "--no-figures", "--out", str(tmp_path / "out")])
    assert code == 2 and "`--base` arm 'nope'" in capsys.readouterr().err


def test_simulated_rl_leads_at_k1_and_gap_at_large_k_has_an_interval(simulation):
    b = boundary(simulation.runs, base="base", treated="rl", t=[0, 1, 2, 3, 5], k=[1, 2, 4, 8, 16], n_boot=300)
    at1 = b.gap.filter((pl.col("k") == 1) & (pl.col("t") == 5)).row(0, named=True)
    assert at1["gap"] > 0 and at1["ci_low"] > 0  # rl leads at k = 1 with the full budget
    large = b.gap.filter((pl.col("k") == 16) & (pl.col("t") == 5)).row(0, named=True)
    assert large["ci_low"] <= large["gap"] <= large["ci_high"]
    assert "gap at k=16" in b.summary()


@pytest.mark.slow
def test_simulated_noise_only_arms_are_not_called_expansion():
    from mechanism.datasets.simulation import default_policies, simulate
    base = default_policies()["base"]
    calls = 0
    for seed in range(8):
        sim = simulate(n_questions=40, n_samples=8, arms=("base", "twin"), policies={"twin": base}, random_state=seed,
                       progress=False)
        calls += boundary(sim.runs, base="base", treated="twin", t=[0, 2, 5], n_boot=50).expansion
    assert calls == 0


@pytest.mark.slow
def test_fireact_one_sample(fireact_dir, tmp_path, capsys):
    code = main(["passkt", str(fireact_dir / "trajs"), "--format", "fireact", "--base", "llama-2-7b",
                 "--t", "0", "1", "2", "5", "--n-boot", "200", "--out", str(tmp_path)])
    assert code == 0
    table = pl.read_csv(tmp_path / "pass_at_kt.csv")
    assert table["k"].unique().to_list() == [1]  # n = 1: only k = 1 exists
    assert (tmp_path / "pass_over_t.png").is_file()
    tests = pl.read_csv(tmp_path / "llama-2-13b_vs_llama-2-7b" / "boundary_tests.csv")
    assert not tests["expansion"].any()  # one sample never supports a boundary claim
    assert "one sample per problem" in capsys.readouterr().out
    assert main(["passkt", str(fireact_dir / "trajs"), "--format", "fireact", "--k", "2",
                 "--out", str(tmp_path / "x")]) == 2


def test_treated_arms_that_sanitise_alike_get_distinct_folders(tmp_path):
    """``x y`` and ``x_y`` render alike as file names: each gets a short hash of its own name,
    so neither overwrites the other; an arm without a clash keeps its plain name."""
    from mechanism._cli.passkt import write_outputs
    from mechanism.core.names import pair_folders

    rows = [{"arm": arm, "question_id": f"q{q}", "sample_id": s, "correct": (q + s) % 2 == 0, "n_rounds": 1}
            for arm in ("base", "x y", "x_y", "rl") for q in range(3) for s in range(2)]
    runs = pl.DataFrame(rows)
    write_outputs(runs, tmp_path / "out", k=[1, 2], t=[1], n_boot=20, figures=False)
    folders = pair_folders(["x y", "x_y", "rl"], "base")
    assert folders["rl"] == "rl_vs_base" and folders["x y"] != folders["x_y"]
    assert folders["x y"].startswith("x_y-") and folders["x_y"].startswith("x_y-")
    for arm, name in folders.items():
        assert (tmp_path / "out" / name / "summary.txt").is_file()
        assert arm in (tmp_path / "out" / name / "summary.txt").read_text()


@pytest.mark.parametrize("command", [["passkt", "--base", "base"], ["integration", "--base", "base"],
                                     ["reweighting", "--base", "base", "--by-rounds", "--n-permutations", "0"]])
def test_arms_sharing_few_questions_are_refused_unless_the_flag_says_so(command, tmp_path, capsys):
    import polars as pl

    sim = mx.simulate(n_questions=12, n_samples=2, arms=("base", "rl"), random_state=0, progress=False)
    renamed = pl.when((pl.col("arm") == "rl") & pl.col("question_id").str.contains("[0-7]$"))
    runs = sim.runs.with_columns(renamed.then(pl.concat_str(pl.lit("x"), pl.col("question_id")))
                                 .otherwise(pl.col("question_id")).alias("question_id"))
    runs.write_parquet(tmp_path / "runs.parquet")
    args = [*command[:1], str(tmp_path / "runs.parquet"), *command[1:], "--out", str(tmp_path / "out"),
            "--n-boot", "20"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "share 2 of 22 questions" in err[0] and "--allow-few-shared" in err[0]
    assert main([*args, "--allow-few-shared"]) == 0
