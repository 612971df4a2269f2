"""Answer scoring: SQuAD normalisation, exact match, token F1, cover match, retrieval check.

The normalisation is the official SQuAD v1.1 one (lower case, drop ASCII punctuation, drop
the articles ``a``/``an``/``the``, collapse white space), so exact match and F1 agree with
the numbers published for HotpotQA and Search-R1 style agents.

``cover_match`` and ``contains_answer`` match a gold answer as a run of whole words in the
normalised text: a gold ``"no"`` is not found inside ``"nobody"``, which a plain substring
test (Search-R1's ``subem``) would accept.
"""
from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable

__all__ = ["normalize_answer", "exact_match", "f1_score", "cover_match", "contains_answer"]

_PUNCT_TABLE = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(s: str | None) -> str:
    """Normalise an answer the SQuAD v1.1 way.

    Lower case, remove ASCII punctuation, remove the articles ``a``, ``an``, ``the``, and
    collapse white space.

    Parameters
    ----------
    s
        The text; ``None`` normalises to the empty string.

    Returns
    -------
    str

    Examples
    --------
    >>> normalize_answer("The  Eiffel-Tower!")
    'eiffeltower'
    >>> normalize_answer("An apple a day")
    'apple day'
    """
    if s is None:
        return ""
    # punctuation before articles, as SQuAD's order (lower, punc, articles, whitespace) has it
    text = str(s).lower().translate(_PUNCT_TABLE)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _gold_list(golds: str | Iterable[str] | None) -> list[str]:
    if golds is None:
        return []
    if isinstance(golds, str):
        return [golds]
    return [g for g in golds if g is not None]


def exact_match(pred: str | None, golds: str | Iterable[str] | None) -> bool:
    """Whether the normalised prediction equals any normalised gold answer.

    Parameters
    ----------
    pred
        The predicted answer; ``None`` (no answer) never matches.
    golds
        One accepted answer or several.

    Returns
    -------
    bool

    Examples
    --------
    >>> exact_match("the Beatles", ["Beatles", "The Fab Four"])
    True
    >>> exact_match(None, ["x"])
    False
    """
    if pred is None:
        return False
    p = normalize_answer(pred)
    return any(p == normalize_answer(g) for g in _gold_list(golds))


def _f1(pred_tokens: list[str], gold_tokens: list[str]) -> float:
    if not pred_tokens or not gold_tokens:
        # SQuAD 2.0 convention: both empty is a match, one empty is not
        return float(pred_tokens == gold_tokens)
    common = Counter(pred_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def f1_score(pred: str | None, golds: str | Iterable[str] | None) -> float:
    """Token-level F1 between the prediction and the best-matching gold answer.

    Parameters
    ----------
    pred
        The predicted answer; ``None`` scores 0.
    golds
        One accepted answer or several; no gold answers scores 0.

    Returns
    -------
    float
        In [0, 1]: the maximum over gold answers of the harmonic mean of token precision
        and recall after normalisation.

    Examples
    --------
    >>> round(f1_score("Barack Obama jr", ["Barack Obama"]), 3)
    0.8
    """
    gl = _gold_list(golds)
    if pred is None or not gl:
        return 0.0
    pt = normalize_answer(pred).split()
    return max(_f1(pt, normalize_answer(g).split()) for g in gl)


def _contains_words(haystack_norm: str, needle_norm: str) -> bool:
    if not needle_norm:  # a gold that normalises away ("The") would match everything
        return False
    return f" {needle_norm} " in f" {haystack_norm} "


def cover_match(pred: str | None, golds: str | Iterable[str] | None) -> bool:
    """Cover exact match: a normalised gold answer appears, as whole words, in the answer.

    Parameters
    ----------
    pred
        The predicted answer; ``None`` never matches.
    golds
        One accepted answer or several. Golds that normalise to the empty string are
        ignored.

    Returns
    -------
    bool

    Examples
    --------
    >>> cover_match("It was Paris, France.", ["Paris"])
    True
    >>> cover_match("nobody", ["no"])
    False
    """
    if pred is None:
        return False
    p = normalize_answer(pred)
    return any(_contains_words(p, normalize_answer(g)) for g in _gold_list(golds))


def contains_answer(text: str | None, golds: str | Iterable[str] | None) -> bool:
    """Whether a normalised gold answer appears, as whole words, in a (long) text.

    Used for "was the answer retrieved": ``text`` is an observation or several joined.
    The text is normalised once, so this is linear in its length.

    Parameters
    ----------
    text
        The text searched; ``None`` contains nothing.
    golds
        One accepted answer or several. Golds that normalise to the empty string are
        ignored.

    Returns
    -------
    bool

    Examples
    --------
    >>> contains_answer("Paris is the capital of France.", ["paris"])
    True
    >>> contains_answer("Parisian cafes", ["Paris"])
    False
    """
    if text is None:
        return False
    gl = [normalize_answer(g) for g in _gold_list(golds)]
    gl = [g for g in gl if g]
    if not gl:
        return False
    t = f" {normalize_answer(text)} "
    return any(f" {g} " in t for g in gl)
