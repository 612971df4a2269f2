"""Every pattern a user or a file supplies runs on RE2: time linear in the text whatever the
pattern, and a pattern RE2 cannot run is refused in one line."""
from __future__ import annotations

import json
import re
import time

import polars as pl
import pytest

from mechanism._cli.main import main
from mechanism.core.errors import InputError
from mechanism.core.failures import compile_error_pattern, is_failure
from mechanism.readers import read
from mechanism.readers._build import QuestionKey

# exponential in an almost-matching text under a backtracking engine (a 35-character text hung
# Python's `re` for more than a minute)
HOSTILE_ERROR = r"^(\w+\s?)+$"
HOSTILE_KEY = r"^(\w+\s?)+:(.*)"


def _best(fn, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _proportional(run, size: int) -> tuple[float, float]:
    """Seconds of ``run(n)`` at ``size`` and at four times ``size`` (best of five each)."""
    run(size)  # first calls compile and warm up
    return _best(lambda: run(size)), _best(lambda: run(4 * size))


def _check(t1: float, t4: float) -> None:
    assert t4 < 1.0 and t1 < 1.0, (t1, t4)
    # proportional (at most 6x for 4x the text); a floor for timer noise on a shared machine
    assert t4 <= 6 * max(t1, 5e-3), (t1, t4)


def test_error_pattern_is_linear_on_hostile_observations():
    pattern = compile_error_pattern(HOSTILE_ERROR)

    def run(n):
        text = "a" * n + "!"
        for _ in range(2_000):
            assert not is_failure(text, pattern)

    _check(*_proportional(run, 900))  # 4x stays inside the 4,000 characters the pattern reads


def test_question_key_is_linear_on_hostile_questions():
    key = QuestionKey.make(HOSTILE_KEY)

    def run(n):
        text = "a" * n + "!"
        for _ in range(200):
            with pytest.raises(InputError, match="does not match"):
                key.key(text)

    _check(*_proportional(run, 2_500))
    # the same capture as Python's engine takes (group 1: the last repetition)
    question = "Trial 2 what: Where is Paris?"
    assert key.key(question) == QuestionKey.make("text").key(re.search(HOSTILE_KEY, question).group(1))


def _write(path, n, *, field):
    rows = []
    for i in range(40):
        hostile = "a" * n + "!"
        question = hostile if field == "question" else f"Trial {i}: where is item {i}?"
        observation = hostile if field == "observation" else "found it"
        rows.append({"arm": "base", "question_id": str(i), "sample_id": 0, "question": question, "gold": ["x"],
                     "answer": "x", "correct": True, "n_rounds": 1,
                     "steps": [{"tool": "lookup", "query": "x", "observation": observation}]})
    path.write_text("\n".join(json.dumps(r) for r in rows))
    return path


@pytest.mark.parametrize("option, pattern, field", [
    ("error_pattern", HOSTILE_ERROR, "observation"), ("question_key", HOSTILE_KEY, "question")])
def test_read_with_a_hostile_pattern_takes_time_in_proportion(tmp_path, option, pattern, field):
    files = {n: _write(tmp_path / f"{n}.jsonl", n, field=field) for n in (900, 3_600)}

    def run(n):
        runs = read(files[n], errors="skip", **{option: pattern})
        assert runs.height == (0 if field == "question" else 40)  # no question matches the key: skipped

    t1 = _best(lambda: run(900), 3)
    t4 = _best(lambda: run(3_600), 3)
    _check(t1, t4)


@pytest.mark.parametrize("option", ["error_pattern", "question_key", "answer_pattern"])
@pytest.mark.parametrize("pattern, words", [(r"(\w+) \1", "cannot run"), ("(?=a)b", "cannot run"),
                                            ("(?<!a)b", "cannot run"), ("(", "not a valid")])
def test_every_pattern_option_refuses_what_re2_cannot_run_in_one_line(tmp_path, option, pattern, words):
    path = _write(tmp_path / "r.jsonl", 3, field="observation")
    with pytest.raises(InputError, match=words) as info:
        read(path, **{option: pattern})
    assert info.value.field == option and "\n" not in str(info.value)
    assert f"`{option}`" in str(info.value)


@pytest.mark.parametrize("flag", ["--error-pattern", "--question-key", "--answer-pattern"])
def test_the_cli_refuses_a_backreference_with_one_line_and_exit_2(tmp_path, capsys, flag):
    path = _write(tmp_path / "r.jsonl", 3, field="observation")
    code = main(["read", str(path), flag, r"(\w+) \1", "--out", str(tmp_path / "o.parquet")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "cannot run" in err, err
    assert not (tmp_path / "o.parquet").exists()


def test_error_pattern_keeps_its_reading_on_re2(tmp_path):
    # case-insensitive, ^ and $ at every line, searched in the first 4,000 characters
    pattern = compile_error_pattern("^busy$")
    assert is_failure("ok\nBUSY\nmore", pattern) and not is_failure("not busy today", pattern)
    assert not is_failure("x" * 5_000 + "\nbusy", pattern)
    assert compile_error_pattern(pattern) is pattern  # compiled once, passed on as it is
    # a lone surrogate in an observation is matched, not a crash
    assert is_failure("\ud800busy", compile_error_pattern("busy"))


def _tampered_space(tmp_path, small_pair, error_pattern):
    from mechanism.analysis.strategy_space import StrategySpace

    folder = tmp_path / "space"
    space = StrategySpace(embedder="hashing-64", n_bootstrap=0, progress=False, random_state=0)
    space.fit(small_pair.runs).save(folder)
    config = json.loads((folder / "space.json").read_text())
    # params are not under a checksum of their own (arrays and tables are): editing them is
    # all a tampered space needs
    config["params"]["error_pattern"] = error_pattern
    (folder / "space.json").write_text(json.dumps(config, indent=1))
    return folder


def _hostile_runs(runs: pl.DataFrame, n: int) -> pl.DataFrame:
    hostile = "a" * n + "!"
    return runs.with_columns(pl.col("steps").list.eval(
        pl.element().struct.with_fields(pl.lit(hostile).alias("observation"))))


def test_a_saved_space_pattern_runs_on_re2_when_applied(tmp_path, small_pair):
    from mechanism.analysis.strategy_space import StrategySpace

    space = StrategySpace.load(_tampered_space(tmp_path, small_pair, HOSTILE_ERROR))
    assert space.error_pattern == HOSTILE_ERROR
    runs = {n: _hostile_runs(small_pair.runs, n) for n in (900, 3_600)}
    space.transform(runs[900])  # warm (imports, embedder)
    t1 = _best(lambda: space.transform(runs[900]), 3)
    t4 = _best(lambda: space.transform(runs[3_600]), 3)
    _check(t1, t4)


@pytest.mark.parametrize("pattern", [r"(\w+) \1", "(?<=a)b"])
def test_a_saved_space_pattern_re2_cannot_run_is_refused_by_name(tmp_path, small_pair, pattern):
    from mechanism.analysis.strategy_space import StrategySpace

    with pytest.raises(InputError) as info:
        StrategySpace.load(_tampered_space(tmp_path, small_pair, pattern))
    text = str(info.value)
    assert "\n" not in text and "space.json" in text and "cannot run" in text, text
