"""Answer scoring against the official SQuAD v1.1 definitions and hand-worked cases."""
from __future__ import annotations

import json
import re
import string
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mechanism.core.scoring import contains_answer, exact_match, f1_score, normalize_answer, token_f1


def _squad_normalize(s: str) -> str:
    # the official SQuAD v1.1 evaluation script, verbatim in behaviour
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def _squad_f1(prediction: str, ground_truth: str) -> float:
    p = _squad_normalize(prediction).split()
    g = _squad_normalize(ground_truth).split()
    common = Counter(p) & Counter(g)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(p)
    recall = num_same / len(g)
    return (2 * precision * recall) / (precision + recall)


def test_normalize_examples():
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert normalize_answer("An apple a day") == "apple day"
    assert normalize_answer("  THE  ") == ""
    assert normalize_answer(None) == ""
    assert normalize_answer("theatre") == "theatre"  # article only as a whole word


def test_exact_match_cases():
    assert exact_match("the Beatles", ["Beatles", "Fab Four"])
    assert exact_match("Fab four.", ["Beatles", "Fab Four"])
    assert not exact_match("Beatles band", ["Beatles"])
    assert not exact_match(None, ["x"])
    assert not exact_match("x", [])
    assert exact_match("yes", "Yes")  # a single gold string is accepted


def test_f1_cases():
    assert f1_score("Barack Obama jr", ["Barack Obama"]) == 0.8
    assert f1_score("Barack Obama", ["Obama", "Barack Obama"]) == 1.0
    assert f1_score("cat", ["dog"]) == 0.0
    assert f1_score(None, ["dog"]) == 0.0
    assert f1_score("dog", []) == 0.0
    assert f1_score("the", ["an"]) == 1.0  # both normalise to nothing
    assert f1_score("the", ["dog"]) == 0.0


def test_contains_means_whole_words():
    """"Contains" is one test: a normalised gold as a run of whole words, never part of a word."""
    assert contains_answer("It was Paris, France.", ["Paris"])
    assert contains_answer("the answer is new york city", ["New York"])
    assert not contains_answer("nobody", ["no"])
    assert not contains_answer("Obamacare", ["Obama"])
    assert not contains_answer("Paris", ["The"])  # a gold that normalises away never matches
    assert not contains_answer(None, ["Paris"])


def test_one_containment_function_under_one_name():
    import mechanism as mx
    import mechanism.core.scoring as scoring

    assert mx.contains_answer is scoring.contains_answer
    assert not hasattr(scoring, "cover_match") and "cover_match" not in mx.__all__
    with pytest.raises(AttributeError):
        mx.cover_match  # noqa: B018


def test_the_contains_scorer_is_contains_answer(tmp_path):
    """read(scorer="contains") and its other name "cover-em" score exactly as contains_answer does."""
    from mechanism.readers import read

    answers = ["Barack Obama jr", "Obamacare", "nobody knows", "no", "the New York Times", None]
    golds = [["Barack Obama"], ["Obama"], ["no"], ["no"], ["New York"], ["x"]]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps({"question_id": f"q{i}", "question": "?", "gold": g, "answer": a,
                                          "steps": []}) for i, (a, g) in enumerate(zip(answers, golds))))
    want = [contains_answer(a, g) for a, g in zip(answers, golds)]
    assert want == [True, False, False, True, True, False]
    for scorer in ("contains", "cover-em"):
        assert read(path, format="canonical", arm="a", scorer=scorer)["correct"].to_list() == want, scorer


def test_contains_answer():
    assert contains_answer("Paris is the capital of France.", ["paris"])
    assert not contains_answer("Parisian cafes", ["Paris"])
    assert contains_answer("born in 1961 in Honolulu", ["Honolulu", "x"])
    assert not contains_answer(None, ["x"])
    assert not contains_answer("abc", [])


@given(st.text(), st.text())
def test_matches_official_squad(pred, gold):
    assert normalize_answer(pred) == _squad_normalize(pred)
    assert exact_match(pred, [gold]) == (_squad_normalize(pred) == _squad_normalize(gold))
    ref = _squad_f1(pred, gold)
    p, g = _squad_normalize(pred).split(), _squad_normalize(gold).split()
    if not p or not g:
        ref = float(p == g)
    assert f1_score(pred, [gold]) == ref


@given(st.text(), st.lists(st.text(), max_size=4))
def test_score_relations(pred, golds):
    em = exact_match(pred, golds)
    f1 = f1_score(pred, golds)
    assert 0.0 <= f1 <= 1.0
    if em and any(normalize_answer(g) for g in golds if normalize_answer(g) == normalize_answer(pred)):
        assert contains_answer(pred, golds)
        assert f1 == 1.0
    # F1 of one pair is token_f1 of the normalised tokens
    if golds:
        assert f1 == max(token_f1(normalize_answer(pred).split(), normalize_answer(g).split()) for g in golds)


@given(st.lists(st.text(alphabet="abc ,.", max_size=8), min_size=1, max_size=5),
       st.text(alphabet="abc ,.", max_size=30))
def test_contains_matches_token_brute_force(golds, text):
    toks = normalize_answer(text).split()
    want = False
    for g in golds:
        gt = normalize_answer(g).split()
        if gt and any(toks[i:i + len(gt)] == gt for i in range(len(toks) - len(gt) + 1)):
            want = True
    assert contains_answer(text, golds) == want


def test_the_retrieval_check_lives_in_scoring():
    """The simulator and the integration analysis share one text rule, in the scoring layer."""
    import mechanism.analysis.information as information
    import mechanism.core.scoring as scoring

    for name in ("gold_in_observations", "retrievable", "retrieval_normalize", "UNRETRIEVABLE_ANSWERS"):
        assert getattr(information, name) is getattr(scoring, name), name
    assert scoring.gold_in_observations(["born in New York-based Queens"], ["New York"])
    assert not scoring.gold_in_observations(["There is no record."], ["no"])
