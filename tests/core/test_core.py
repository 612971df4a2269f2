"""The shared core: canonical schema validation, error messages, resampling, plot style, CLI."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.core.errors import InputError, ReadReport, SkippedRecord
from mechanism.core.resample import percentile_interval, question_bootstrap_weights
from mechanism.core.schema import empty, from_records, make_step, validate
from mechanism.plots.style import arm_colors, paper_style, safe_filename


def _record(**over):
    rec = dict(arm="base", question_id="q1", sample_id=0, question="Who?", gold=["x"], answer="x",
               correct=True, n_rounds=1, steps=[make_step(tool="search", query="who", observation="x")])
    rec.update(over)
    return rec


def test_from_records_builds_a_valid_table():
    runs = from_records([_record(), _record(sample_id=1, t_cap=3)])
    assert runs.height == 2
    assert runs.schema["steps"].inner.fields[0].name == "thought"
    assert "t_cap" in runs.columns and runs["t_cap"].to_list() == [None, 3]


def test_validate_names_the_missing_column():
    runs = from_records([_record()]).drop("gold")
    with pytest.raises(InputError, match=r"missing required column `gold`"):
        validate(runs, source="runs.parquet")


def test_validate_rejects_duplicate_keys_naming_the_row():
    with pytest.raises(InputError) as info:
        from_records([_record(), _record(answer="y")])
    message = str(info.value)
    assert "duplicate (arm, question_id, sample_id)" in message and "line 2" in message


def test_validate_rejects_wrong_type_and_negative_rounds():
    runs = from_records([_record()])
    with pytest.raises(InputError, match="`n_rounds`"):
        validate(runs.with_columns(pl.lit(-1).alias("n_rounds")))
    with pytest.raises(InputError, match="column `correct` has type"):
        validate(runs.with_columns(pl.lit("yes").alias("correct")))


def test_validate_only_the_columns_a_caller_needs():
    runs = pl.DataFrame({"arm": ["a"], "question_id": ["q"], "correct": [True], "n_rounds": [0]})
    assert validate(runs, required=["arm", "question_id", "correct", "n_rounds"]) is runs
    assert empty().height == 0


def test_input_error_is_one_line_and_names_file_line_field():
    err = InputError("bad value\nacross lines", source="a.jsonl", line=7, field="gold")
    assert str(err) == "a.jsonl, line 7, field `gold`: bad value across lines"
    assert str(SkippedRecord("a.jsonl", 3, None, "truncated json")) == "a.jsonl, line 3: truncated json"
    report = ReadReport(rows_in=2, rows_kept=1, skipped=[SkippedRecord("a", 1, None, "x")])
    report.merge(ReadReport(rows_in=1, rows_kept=1))
    assert report.rows_in == report.rows_kept + len(report.skipped)


@settings(max_examples=50, deadline=None)
@given(q=st.integers(1, 40), b=st.integers(1, 30), seed=st.integers(0, 2**32 - 1))
def test_bootstrap_weights_resample_whole_questions(q, b, seed):
    w = question_bootstrap_weights(q, b, seed)
    assert w.shape == (b, q) and (w.sum(axis=1) == q).all() and (w >= 0).all()
    assert np.array_equal(w, question_bootstrap_weights(q, b, seed))


def test_bootstrap_weights_are_uniform_over_questions():
    w = question_bootstrap_weights(5, 20000, 1)
    assert np.allclose(w.mean(axis=0), 1.0, atol=0.03)


def test_percentile_interval_matches_numpy():
    reps = np.random.default_rng(0).normal(size=(1000, 3))
    low, high = percentile_interval(reps, 0.9)
    assert np.allclose(low, np.quantile(reps, 0.05, axis=0))
    assert np.allclose(high, np.quantile(reps, 0.95, axis=0))
    with pytest.raises(ValueError):
        percentile_interval(reps, 1.5)


def test_paper_style_does_not_leak_and_names_are_safe():
    import matplotlib
    before = matplotlib.rcParams["font.size"]
    with paper_style():
        assert matplotlib.rcParams["font.size"] == 9
    assert matplotlib.rcParams["font.size"] == before
    assert safe_filename("../../etc/passwd") == "etc_passwd"
    assert safe_filename("<script>") == "script"
    colors = arm_colors(["base", "rl", "step-400", "step-800"])
    assert colors["base"] != colors["rl"] and colors["step-400"] != colors["step-800"]


def test_cli_help_lists_commands(capsys):
    from mechanism._cli.main import main
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    assert "mechanism" in capsys.readouterr().out


def test_cli_output_escapes_control_characters():
    from mechanism._cli._common import terminal_safe
    assert terminal_safe("rl\x1b[2J\nok\tτ") == "rl\\x1b[2J\nok\tτ"
