"""Answer scoring against the official SQuAD v1.1 definitions and hand-worked cases."""
from __future__ import annotations

import re
import string
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from mechanism.scoring import contains_answer, cover_match, exact_match, f1_score, normalize_answer


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


def test_cover_match_whole_words():
    assert cover_match("It was Paris, France.", ["Paris"])
    assert cover_match("the answer is new york city", ["New York"])
    assert not cover_match("nobody", ["no"])
    assert not cover_match("Paris", ["The"])  # a gold that normalises away never matches
    assert not cover_match(None, ["Paris"])


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
        assert cover_match(pred, golds)
        assert f1 == 1.0
    # cover match of the answer is the same test as containment in a text
    assert cover_match(pred, golds) == contains_answer(pred, golds)


@given(st.lists(st.text(alphabet="abc ,.", max_size=8), min_size=1, max_size=5), st.text(alphabet="abc ,.", max_size=30))
def test_contains_matches_token_brute_force(golds, text):
    toks = normalize_answer(text).split()
    want = False
    for g in golds:
        gt = normalize_answer(g).split()
        if gt and any(toks[i:i + len(gt)] == gt for i in range(len(toks) - len(gt) + 1)):
            want = True
    assert contains_answer(text, golds) == want
