"""BM25 over one question's paragraphs (the reference study's setting: BM25 over 10 paragraphs).

Scoring is ``bm25s``' (Lucene variant, k1=1.5, b=0.75). A search returns the **top-1**
paragraph: one paragraph per tool call keeps each round's evidence attributable to its query,
which is what makes the strategies differ. Ties are broken by paragraph position, so results
are deterministic. Results are cached per query, since sampled episodes repeat queries.
"""
from __future__ import annotations

import re

import numpy as np

from mechanism.core.progress import import_tqdm_quietly

import_tqdm_quietly()  # bm25s imports tqdm.auto, which warns in a notebook

import bm25s  # noqa: E402 - after the filter above: bm25s imports tqdm.auto, which warns in some notebooks
from bm25s.stopwords import STOPWORDS_EN  # noqa: E402 - part of bm25s, after the filter for the same reason

_TOKEN = re.compile(r"[a-z0-9]+")
_STOP = frozenset(STOPWORDS_EN) | {"what", "which", "who", "where", "when", "was", "is", "did",
                                    "does", "do", "s"}


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens without English stop words."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOP]


class ParagraphRetriever:
    """BM25 over a fixed list of paragraph texts.

    Parameters
    ----------
    texts
        The paragraphs (title and body, as the index should see them).
    top_k
        How many paragraphs a search returns.
    """

    def __init__(self, texts: list[str], *, top_k: int = 1) -> None:
        self.top_k = top_k
        self.n_docs = len(texts)
        self._bm25 = bm25s.BM25()
        self._bm25.index([tokenize(t) or [""] for t in texts], show_progress=False)
        self._cache: dict[str, tuple[int, ...]] = {}

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every paragraph for ``query`` (zeros when no query word is indexed)."""
        ids = self._bm25.get_tokens_ids(tokenize(query))
        if not ids:
            return np.zeros(self.n_docs, dtype=np.float32)
        return self._bm25.get_scores_from_ids(ids)

    def search(self, query: str) -> tuple[int, ...]:
        """Indices of the ``top_k`` best paragraphs, best first; empty when nothing matches."""
        hit = self._cache.get(query)
        if hit is None:
            s = self.scores(query)
            # stable sort on -score: equal scores keep paragraph order
            order = np.argsort(-s, kind="stable")[: self.top_k]
            hit = tuple(int(i) for i in order if s[i] > 0)
            self._cache[query] = hit
        return hit
