"""Segmentation: moves, provenance of query words, masking, bounds on untrusted input."""
from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.errors import InputError
from mechanism.schema import from_records, make_step
from mechanism.segmentation import (DESCRIPTIVE_COLUMNS, FEATURE_COLUMNS, MAX_STEPS_RENDERED, MOVES,
                               content_tokens, render, segment, segment_all)

QUESTION = "Where was the director of Glass Harbor born?"


def _runs(steps, answer="Lyon", question=QUESTION, n=1):
    return from_records([{"arm": "a", "question_id": f"q{i}", "sample_id": 0, "question": question,
                          "gold": ["Lyon"], "answer": answer, "correct": answer == "Lyon",
                          "n_rounds": len(steps), "steps": steps} for i in range(n)])


def s(query, observation="No results."):
    return make_step(tool="search", query=query, observation=observation)


FILM = "Glass Harbor is a film directed by Dana Petrov."
BIO = "Dana Petrov was born in Lyon and works in cinema."


def test_bridge_moves_and_provenance():
    runs = _runs([s("Glass Harbor director", FILM), s("Dana Petrov birthplace", BIO)])
    moves = segment(runs)
    assert moves["move"].to_list() == ["first_lookup", "bridge_lookup", "answer_with_evidence"]
    second = moves.row(1, named=True)
    # "dana", "petrov" were first named by a result; "birthplace" is new
    assert second["share_observation"] == pytest.approx(2 / 3)
    assert second["share_new"] == pytest.approx(1 / 3)
    assert second["share_question"] == 0
    first = moves.row(0, named=True)
    assert first["share_question"] == 1.0
    assert first["question_coverage"] == pytest.approx(3 / 4)  # director, glass, harbor of 4


def test_generic_words_seen_in_results_are_not_carried_over():
    # "cinema" appears in the result but is not a name: a later query using it is not a bridge
    runs = _runs([s(QUESTION, BIO), s("cinema", BIO)])
    moves = segment(runs)
    assert moves["move"][1] == "new_lookup"
    assert moves["share_new"][1] == 1.0


def test_earlier_query_words_are_previous_not_observation():
    runs = _runs([s("Glass Harbor film", FILM), s("film Petrov", FILM)])
    row = segment(runs).row(1, named=True)
    assert row["share_previous"] == 0.5 and row["share_observation"] == 0.5


def test_repeat_reformulation_verification_parallel():
    runs = _runs([s(QUESTION, BIO), s("where was the director of glass harbor born", BIO),
                  s("Glass Harbor director hometown born", BIO), s("Lyon Dana Petrov", BIO),
                  s("Glass Harbor", FILM)])
    assert segment(runs)["move"].to_list() == [
        "first_lookup", "repeat", "reformulation", "verification", "parallel_lookup",
        "answer_with_evidence"]


def test_no_search_and_no_answer():
    runs = _runs([], answer="Paris")
    moves, traj = segment_all(runs)
    assert moves["move"].to_list() == ["answer_without_evidence"]
    assert traj["rendering"].to_list() == ["answer"]
    assert traj["searched"][0] == 0.0
    runs = _runs([s(QUESTION, BIO)], answer=None)
    moves, traj = segment_all(runs)
    assert moves["move"][-1] == "no_answer"
    assert traj["rendering"][0].endswith("no answer")
    assert traj["gives_answer"][0] == 0.0


def test_rendering_masks_names_and_keeps_structure():
    runs = _runs([s("Glass Harbor director", FILM), s("Dana Petrov birthplace", BIO)])
    text = render(runs)["rendering"][0]
    assert text == ("1. search first_lookup: most of question [Q] | "
                    "2. search bridge_lookup: no question + [OBS] [NEW] | answer")


def test_descriptors_match_moves():
    runs = _runs([s(QUESTION, FILM), s("Dana Petrov birthplace", BIO)])
    row = render(runs).row(0, named=True)
    assert row["opens_whole"] == 1.0 and row["carries_over"] == 1.0 and row["branches"] == 0.0
    assert row["n_rounds"] == 2 and row["n_bridge_lookup"] == 1
    assert set(FEATURE_COLUMNS) | set(DESCRIPTIVE_COLUMNS) <= set(render(runs).columns)


def test_shares_sum_to_one_and_rows_per_step():
    runs = _runs([s(QUESTION, FILM), s("Dana Petrov birthplace", BIO), s("", BIO)], n=3)
    moves = segment(runs)
    assert moves.height == 3 * (3 + 1)
    q = moves.filter((pl.col("tool") != "answer") & (pl.col("n_tokens") > 0))
    total = q["share_question"] + q["share_observation"] + q["share_previous"] + q["share_new"]
    assert (total - 1).abs().max() < 1e-12
    assert set(moves["move"]) <= set(MOVES)


def test_long_untrusted_fields_are_bounded():
    huge = "Zed " * 500_000
    steps = [s(f"query {i} " + "word " * 200, huge) for i in range(40)]
    traj = render(_runs(steps))
    text = traj["rendering"][0]
    assert text.count("search") == MAX_STEPS_RENDERED
    assert "more lookups" in text
    assert len(text) < 4000


def test_missing_column_is_a_clear_error():
    runs = _runs([s(QUESTION, FILM)]).drop("steps")
    with pytest.raises(InputError, match="`steps`"):
        segment(runs)


def test_content_tokens_drop_stop_words_and_repeat():
    assert content_tokens("The the Lyon, LYON and Graz!") == ["lyon", "graz"]
    assert content_tokens(None) == []


names = st.text(alphabet="bcdfghjklmnpqrstvwxz", min_size=5, max_size=9).map(str.capitalize)


@settings(max_examples=60, deadline=None)
@given(a=names, b=names, c=names, n=st.integers(0, 4))
def test_rendering_never_shows_entity_names(a, b, c, n):
    """Property: whatever the names, the rendering holds none of them (only placeholders)."""
    question = f"Where was the director of {a} {b} born?"
    obs = f"{a} {b} is a film directed by {c}."
    steps = [s(f"{a} {b} director", obs)] + [s(f"{c} birthplace {i}", f"{c} was born in {b}.") for i in range(n)]
    text = render(_runs(steps, answer=c, question=question))["rendering"][0].lower()
    for name in (a, b, c):
        assert name.lower() not in text


text = st.one_of(st.none(), st.text(max_size=60))


@settings(max_examples=80, deadline=None)
@given(question=text, answer=text,
       steps=st.lists(st.fixed_dictionaries({"thought": text, "tool": text, "arguments": text,
                                              "query": text, "observation": text}), max_size=6))
def test_any_text_segments_without_error(question, answer, steps):
    """Property: arbitrary (untrusted) text never breaks segmentation; shares stay in [0, 1]."""
    runs = from_records([{"arm": "a", "question_id": "q", "sample_id": 0, "question": question or "",
                          "gold": [], "answer": answer, "correct": False, "n_rounds": len(steps),
                          "steps": steps}])
    moves, traj = segment_all(runs)
    assert moves.height == len(steps) + 1
    for col in ("share_question", "share_observation", "share_previous", "share_new", "question_coverage"):
        assert moves[col].min() >= 0 and moves[col].max() <= 1
    assert traj["rendering"][0].endswith("answer")


def test_lowercased_results_still_mark_bridges():
    runs = _runs([s("glass harbor director", "glass harbor is a film directed by dana petrov."),
                  s("dana petrov birthplace", "dana petrov was born in lyon.")])
    assert segment(runs)["move"].to_list()[1] == "bridge_lookup"
