"""The faster paths of the read give what the plain ones gave: the leak-line test and the list
columns built through Arrow string views (behaviour only; no timing here)."""
from __future__ import annotations

import itertools
import json

import polars as pl
import pytest

from mechanism.core.errors import ReadWarning
from mechanism.readers import read
from mechanism.readers._build import _LEAK_LINE, Tally, _has_leak_line, _list_series

_PIECES = ("", " ", "\t", "\n", "\r\n", "x", "Gold", "gold answer", "GROUND truth", "ground-truth",
           "Correct Answer", ":", " : ", "Paris", "\u017f")  # the long s matches "s" case-insensitively


def test_leak_line_test_is_the_search():
    # every text of four pieces: the line start, the break before it, case and blanks all vary
    for combo in itertools.product(_PIECES, repeat=4):
        text = "".join(combo)
        assert _has_leak_line(text) == (_LEAK_LINE.search(text) is not None), repr(text)


def test_leak_found_in_every_agent_visible_text():
    tally = Tally()
    steps = [{"thought": "t", "observation": "Doc 1 about it", "user": None},
             {"thought": "t", "observation": "Doc 2\n  gold answer : Paris\nmore", "user": None}]
    tally.leak(["Paris"], "Where?", steps, "f line 1")
    assert tally.gold_leaks == 1
    assert tally.gold_leak_examples == ["f line 1, step 2 observation: 'gold answer : Paris'"]
    tally.leak(["Paris"], "Ground truth: Paris", [], "f line 2")  # the question's first line
    tally.leak(["Paris"], "Where?", [{"thought": None, "observation": None, "user": "x\nGOLD:paris"}], "f line 3")
    assert tally.gold_leaks == 3
    tally.leak(["Paris"], "The gold: Paris", steps[:1], "f line 4")  # not at a line's start
    tally.leak(["Paris"], "Where?", [{"thought": "Correct answer: Rome", "observation": None}], "f line 5")
    tally.leak([], "Gold: Paris", [], "f line 6")  # no gold: nothing to leak
    assert tally.gold_leaks == 3


def test_searchr1_read_reports_a_leak(tmp_path):
    response = ("<think>look</think><search> capital </search><information>Doc 1\nCorrect answer: Paris"
                "</information><answer> Paris </answer>")
    path = tmp_path / "a.searchr1.jsonl"
    path.write_text(json.dumps({"arm": "a", "question_id": "q", "question": "Capital?", "golden_answers": ["Paris"],
                                "response": response}) + "\n", encoding="utf-8")
    with pytest.warns(ReadWarning, match="bookkeeping line"):
        _, rep = read(path, format="searchr1", report=True)
    assert any("bookkeeping line" in w and "step 1 observation" in w for w in rep.warnings)


def test_list_series_keeps_values_nulls_and_empty_rows():
    rows = [[{"a": "x", "b": None}], [], [{"a": None, "b": "é" * 40}, {"a": "z", "b": ""}]]
    flat = pl.DataFrame({"a": [s["a"] for r in rows for s in r], "b": [s["b"] for r in rows for s in r]},
                        schema={"a": pl.String, "b": pl.String}).select(pl.struct(["a", "b"])).to_series()
    got = _list_series("steps", flat, [len(r) for r in rows])
    want = pl.Series("steps", rows, dtype=pl.List(pl.Struct({"a": pl.String, "b": pl.String})))
    assert got.dtype == want.dtype
    assert got.to_list() == want.to_list()
    gold = _list_series("gold", pl.Series(["p", "q", "r"], dtype=pl.String), [2, 0, 1])
    assert gold.to_list() == [["p", "q"], [], ["r"]]
