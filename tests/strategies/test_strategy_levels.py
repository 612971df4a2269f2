"""Strategies on two levels (issue 31): families of a core sequence and the strategies one step
longer, from ``describe()`` alone; ``level=`` in ``describe``, ``transform``, a saved space's
labels and the comparison commands."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import mechanism as mx
from mechanism._cli.main import main
from mechanism.analysis._strategies.levels import at_level, describe_families, family_table
from mechanism.analysis.labels import labels_from_space
from mechanism.core.errors import MechanismError
from mechanism.datasets.simulation import simulate


def _described(rows: list[tuple[int, str, int, str, str]]) -> pl.DataFrame:
    """A describe()-like table from (strategy, name, size, typical_moves, typical_tools)."""
    frame = pl.DataFrame(rows, schema=["strategy", "name", "size", "typical_moves", "typical_tools"], orient="row")
    total = frame["size"].sum()
    return frame.with_columns(share=pl.col("size") / total, **{"n[base]": pl.col("size") // 2},
                              **{"n[rl]": pl.col("size") - pl.col("size") // 2})


def _families(rows) -> dict[int, tuple[int, int, str | None]]:
    t = family_table(_described(rows))
    return {s: (f, c, step) for s, f, c, step in t.select("strategy", "family", "core", "added_step").rows()}


def test_a_one_step_longer_strategy_is_a_variant_of_its_core():
    fam = _families([(0, "look", 40, "a > answer", "t"), (1, "look+check", 30, "a > check > answer", "t > t"),
                     (2, "other", 20, "b > c > answer", "u > u")])
    assert fam[0] == (0, 0, None) and fam[1] == (0, 0, "check")
    assert fam[2] == (1, 2, None)  # two steps from the core: a family of its own


def test_families_do_not_chain_and_a_variant_takes_no_variants():
    # c is one step longer than b, b one step longer than a: c is two steps from a, so its own core
    fam = _families([(0, "a", 10, "x > answer", "t"), (1, "b", 30, "x > y > answer", "t > t"),
                     (2, "c", 50, "x > y > z > answer", "t > t > t")])
    assert fam[1][1] == 0 and fam[1][2] == "y"
    assert fam[2][1] == 2 and fam[2][2] is None
    # numbered by trajectories: c's family (50) before a's (10 + 30 = 40)
    assert fam[2][0] == 0 and fam[0][0] == fam[1][0] == 1


def test_the_largest_core_takes_a_variant_that_fits_two():
    fam = _families([(0, "ab", 10, "a > b", "t > u"), (1, "ac", 30, "a > c", "t > v"),
                     (2, "abc", 5, "a > b > c", "t > u > v")])
    assert fam[2][1] == 1 and fam[2][2] == "b"


def test_a_call_added_to_no_call_is_another_plan_and_outliers_stay_out():
    fam = _families([(-1, "outliers", 7, "x > answer", "t"), (0, "no tools", 40, "answer", ""),
                     (1, "one call", 30, "x > answer", "t"), (2, "same as 1", 5, "x > answer", "t")])
    assert fam[0][1] == 0 and fam[1][1] == 1  # "answer" + one call is not a variant
    assert fam[2] == (fam[1][0], 1, None)  # the same typical sequence: one family, no added step
    assert fam[-1] == (-1, -1, None)
    table = describe_families(_described([(-1, "outliers", 7, "x > answer", "t"), (0, "no tools", 40, "answer", ""),
                                          (1, "one call", 30, "x > answer", "t"),
                                          (2, "same as 1", 5, "x > answer", "t")]))
    assert table["family"].to_list() == [-1, 0, 1]
    assert table.filter(pl.col("family") == 1)["name"].item() == "one call [+ alike]"


@pytest.fixture(scope="module")
def fitted():
    runs = simulate(n_questions=40, n_samples=4, random_state=0, progress=False).runs
    return runs, mx.StrategySpace(embedder="hashing-64", n_bootstrap=0, random_state=0, progress=False).fit(runs)


def test_family_labels_coarsen_the_strategies_and_describe_sums_them(fitted):
    runs, space = fitted
    variants, families = space.labels_, space.transform(runs, level="family")
    np.testing.assert_array_equal(space.transform(runs), variants)
    np.testing.assert_array_equal(families, at_level(variants, space.describe(), "family"))
    for s in set(variants.tolist()):  # every strategy in exactly one family
        assert len(set(families[variants == s].tolist())) == 1
    by_family = space.describe(level="family")
    assert by_family["size"].sum() == runs.height
    for row in by_family.iter_rows(named=True):
        assert row["size"] == int((families == row["family"]).sum())
        members = np.isin(variants, row["strategies"])
        assert set(families[members].tolist()) == {row["family"]}
        for arm in ("base", "rl", "sft"):
            assert row[f"n[{arm}]"] == int((members & (runs["arm"].to_numpy() == arm)).sum())
    # the simulator plants bridge and reworded searches as one-step variants of one search
    assert by_family.height < space.describe().height
    assert any(len(v) > 1 and "[+" in n for v, n in by_family.select("strategies", "name").rows())


def test_a_level_that_is_not_one_is_a_one_line_error(fitted):
    runs, space = fitted
    with pytest.raises(MechanismError, match="level must be one of 'variant', 'family'"):
        space.describe(level="families")
    with pytest.raises(MechanismError, match="level must be one of"):
        space.transform(runs, level="core")


def test_a_saved_space_has_the_families_of_the_fitted_one(fitted, tmp_path):
    runs, space = fitted
    space.save(tmp_path / "space")
    loaded = mx.StrategySpace.load(tmp_path / "space", progress=False)
    assert loaded.describe(level="family").equals(space.describe(level="family"))
    labels, _, names = labels_from_space(runs, tmp_path / "space", level="family")
    np.testing.assert_array_equal(labels, space.transform(runs, level="family"))
    assert set(names) == set(space.describe(level="family")["family"].to_list())


def test_identical_policies_compared_by_family_under_an_unbalanced_design_find_nothing():
    # one policy: each question's first sample is arm "a", the other three arm "b"
    sim = simulate(n_questions=60, n_samples=4, random_state=3, progress=False)
    runs = sim.runs.filter(pl.col("arm") == "base").with_columns(
        arm=pl.when(pl.col("sample_id") == pl.col("sample_id").min().over("question_id"))
        .then(pl.lit("a")).otherwise(pl.lit("b")))
    space = mx.StrategySpace(embedder="hashing-64", n_bootstrap=0, random_state=0, progress=False).fit(runs)
    labels = space.transform(runs, level="family")
    rw = mx.reweighting(runs, labels, base="a", treated="b", n_boot=300, n_permutations=0, random_state=0)
    for name in ("composition", "within", "total"):
        low, high = getattr(rw, f"{name}_ci")
        assert low <= 0.0 <= high, (name, low, high)


def test_family_shares_are_sums_of_their_variants_shares(fitted):
    runs, space = fitted
    variants, families = space.labels_, space.transform(runs, level="family")
    by_variant = mx.reweighting(runs, variants, base="base", treated="rl", ci=None, n_permutations=0).strategies
    by_family = mx.reweighting(runs, families, base="base", treated="rl", ci=None, n_permutations=0).strategies
    share_cols = [c for c in by_variant.columns if c.startswith("share") and "_ci_" not in c]
    assert share_cols
    family_of = dict(zip(space.describe(level="family")["family"].to_list(),
                         space.describe(level="family")["strategies"].to_list()))
    for row in by_family.iter_rows(named=True):
        members = by_variant.filter(pl.col("strategy").cast(pl.Int64).is_in(family_of[int(row["strategy"])]))
        for col in share_cols:
            assert row[col] == pytest.approx(members[col].sum(), abs=1e-12), col


def test_the_comparison_commands_take_a_level(fitted, tmp_path, capsys):
    runs, space = fitted
    space.save(tmp_path / "space")
    runs.write_parquet(tmp_path / "runs.parquet")
    out = tmp_path / "rw"
    capsys.readouterr()
    assert main(["reweighting", str(tmp_path / "runs.parquet"), "--space", str(tmp_path / "space"), "--level",
                 "family", "--base", "base", "--treated", "rl", "--out", str(out), "--n-boot", "30",
                 "--n-permutations", "0", "--no-figures"]) == 0
    strategies = pl.read_csv(next(out.rglob("strategies.csv")))
    assert set(strategies["strategy"].to_list()) <= set(space.describe(level="family")["family"].to_list())
    assert "strata: families of the strategies of the saved space" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["reweighting", str(tmp_path / "runs.parquet"), "--space", str(tmp_path / "space"), "--level",
              "core", "--base", "base", "--out", str(tmp_path / "x")])
