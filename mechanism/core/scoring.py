"""Answer scoring: SQuAD normalisation, exact match, token F1, containment, retrieval check.

The normalisation is the official SQuAD v1.1 one (lower case, drop ASCII punctuation, drop
the articles ``a``/``an``/``the``, collapse white space), so exact match and F1 agree with
the numbers published for HotpotQA and Search-R1 style agents.

"Contains" means one thing everywhere: a normalised gold answer appears as a run of **whole
words** in the normalised text (:func:`contains_answer`; ``read(scorer="contains")`` and
its other name ``scorer="cover-em"``, Search-R1's cover exact match, use it). A gold
``"no"`` is not found inside ``"nobody"``, which a plain substring test (Search-R1's
``subem``) would accept.

The retrieval check (:func:`gold_in_observations`) reads text differently, for finding an
answer in retrieved pages rather than grading one: accents folded, punctuation read as a
space, and only golds that a word match can identify (:func:`retrievable`) count.
"""
from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence

__all__ = ["normalize_answer", "exact_match", "f1_score", "token_f1", "contains_answer", "retrieval_normalize",
           "retrievable", "gold_in_observations", "STOPWORDS", "UNRETRIEVABLE_ANSWERS"]

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


def token_f1(pred_tokens: list[str], gold_tokens: list[str]) -> float:
    """Token F1 between two token lists already normalised (:func:`f1_score` for one pair).

    >>> round(token_f1(["barack", "obama", "jr"], ["barack", "obama"]), 3)
    0.8
    """
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
    return max(token_f1(pt, normalize_answer(g).split()) for g in gl)


def contains_answer(text: str | None, golds: str | Iterable[str] | None) -> bool:
    """Whether a normalised gold answer appears, as whole words, in a text: what "contains" means.

    Both are normalised the SQuAD way (:func:`normalize_answer`); a gold matches a run of
    whole words, never part of a word (``"no"`` is not in ``"nobody"``). This is the scorer
    ``read(scorer="contains")`` (also named ``"cover-em"``, cover exact match: the answer
    covers a gold) and the agreement check of given labels. The text is normalised once,
    so this is linear in its length.

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
    >>> contains_answer("It was Paris, France.", ["Paris"]), contains_answer("nobody", ["no"])
    (True, False)
    """
    if text is None:
        return False
    gl = [normalize_answer(g) for g in _gold_list(golds)]
    gl = [g for g in gl if g]
    if not gl:
        return False
    t = f" {normalize_answer(text)} "
    return any(f" {g} " in t for g in gl)


#: Function words that carry no entity (a follow-up query re-using "the" from an observation
#: is not a bridge step; a gold made only of them is not retrievable).
STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being
below between both but by can did do does doing down during each few for from further had has
have having he her here hers herself him himself his how i if in into is it its itself just me
more most my myself no nor not now of off on once only or other our ours ourselves out over
own same she should so some such than that the their theirs them themselves then there these
they this those through to too under until up very was we were what when where which while
who whom why will with you your yours yourself yourselves also many much one first name named
known called did does which year years born
""".split())
#: Gold answers that a word match cannot find in a text: a polar (or "none") answer is never
#: stated as such by a retrieved page ("There is no record" does not retrieve "no").
UNRETRIEVABLE_ANSWERS = frozenset({"yes", "no", "true", "false", "none"})
#: Words that occur in ordinary prose whatever the page is about: a gold made only of these
#: ("US" in "told us", "May" in "may have been") is not identified by finding it.
_FUNCTION_WORDS = STOPWORDS | frozenset("""
us may might must can could would shall should will ought also yet still even ever never
""".split())
#: Number words: "two" occurs in "the two brothers" on pages that have nothing to do with the answer.
_NUMBER_WORDS = frozenset("""
zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen
sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred
thousand million billion first second third fourth fifth sixth seventh eighth ninth tenth once
twice half dozen
""".split())
_POSSESSIVE = re.compile(r"(?<=\w)['\u2019\u02bc]s\b")
_NON_WORD = re.compile(r"[\W_]+")
_ORDINAL_NUMBER = re.compile(r"^\d+(st|nd|rd|th|s)?$")


def retrieval_normalize(text: str | None) -> str:
    """``text`` as the retrieval check reads it: accents folded, possessives dropped,
    punctuation read as space, articles dropped, lower case, white space collapsed.

    Examples
    --------
    >>> retrieval_normalize("Beyoncé's Paris-based label")
    'beyonce paris based label'
    >>> retrieval_normalize("Jean-Paul Sartre (1905–1980)")
    'jean paul sartre 1905 1980'
    """
    if not text:
        return ""
    folded = unicodedata.normalize("NFKD", str(text))
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch)).casefold()
    folded = _NON_WORD.sub(" ", _POSSESSIVE.sub("", folded))
    return " ".join(_ARTICLES.sub(" ", folded).split())


def retrievable(gold: str | None) -> bool:
    """Whether a gold answer can be identified by finding it, as words, in an observation.

    Not retrievable by text: yes, no, true, false, none (:data:`UNRETRIEVABLE_ANSWERS`);
    golds made only of function words (``"us"``, ``"may"``, ``"the"``); one-token numbers
    (``"12"``, ``"two"``, ``"1987"``, ``"3rd"``); single characters. Such a gold is judged
    only through ``correct``, in the stratum of its own that :func:`mechanism.integration` reports.

    Examples
    --------
    >>> [retrievable(g) for g in ("Paris", "no", "Yes.", "None", "7", "1987", "the", "US", "May", "two")]
    [True, False, False, False, False, False, False, False, False, False]
    >>> [retrievable(g) for g in ("12 May 2003", "Jean-Paul Sartre", "Beyoncé")]
    [True, True, True]
    """
    norm = retrieval_normalize(gold)
    tokens = norm.split()
    if not tokens or len(norm) < 2 or norm in UNRETRIEVABLE_ANSWERS:
        return False
    if len(tokens) == 1 and (tokens[0] in _NUMBER_WORDS or _ORDINAL_NUMBER.match(tokens[0])):
        return False
    return any(t not in _FUNCTION_WORDS and (len(t) > 1 or t.isdigit()) for t in tokens)


def gold_in_observations(observations: Sequence[str | None], golds: Sequence[str] | None) -> bool:
    """Does some observation contain a retrievable gold answer, as whole words, read as text?

    See :func:`retrieval_normalize` for how both are read and :func:`retrievable` for which
    gold answers can count.

    Examples
    --------
    >>> gold_in_observations(["He was told us about it."], ["US"])
    False
    >>> gold_in_observations(["Lincoln's address"], ["Lincoln"]), gold_in_observations(["Beyonce sang"], ["Beyoncé"])
    (True, True)
    >>> gold_in_observations(["a New York-born writer"], ["New York"])
    True
    """
    usable = {retrieval_normalize(g) for g in (golds or []) if g is not None and retrievable(g)}
    if not usable:
        return False
    for text in observations:
        if text:
            padded = f" {retrieval_normalize(text)} "
            if any(f" {g} " in padded for g in usable):
                return True
    return False
