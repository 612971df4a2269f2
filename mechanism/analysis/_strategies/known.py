"""The (rendering, move tokens) pairs a fitted space has already joined, found again by digest.

Why: a saved space is applied to the runs it was fitted on (a report, ``reweighting --space``)
or to a new checkpoint that shares most of its renderings. A pair the fit joined has its row
among the training rows already (``train_features_``), so the embedder is asked only for the
renderings that are new, and where none are the model is never loaded (importing it and
loading MiniLM took about 4 s of a 300-trajectory ``reweighting --space``).

A pair is keyed by the 16-byte BLAKE2b digest of its rendering and its tokens (the declared
kind rides in the tokens), held as two int64 (``(n, 2)``, as a saved space's ``.npy`` arrays
are), so the saved space holds 16 bytes and one row index per distinct pair, not its texts.
The row found is the row the fit computed for that pair; embedding the rendering again gives
it too (its cache holds the same vector; a fresh forward pass agrees to the 5 decimals the
joined space is rounded to).
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

DIGEST_BYTES = 16


def pair_digests(renderings: Sequence[str], tokens: Sequence[str]) -> np.ndarray:
    """One digest per pair (the rendering, a NUL, the tokens; UTF-8), as ``(n, 2)`` int64."""
    data = b"".join(hashlib.blake2b(f"{rendering}\0{toks}".encode("utf-8", "surrogatepass"),
                                    digest_size=DIGEST_BYTES).digest() for rendering, toks in zip(renderings, tokens))
    return np.frombuffer(data, dtype="<i8").reshape(-1, 2).astype(np.int64)


def _keys(digests: np.ndarray) -> np.ndarray:
    """Digests as one 16-byte value each, the order they are sorted and searched in."""
    return np.ascontiguousarray(digests, dtype="<i8").view(f"V{DIGEST_BYTES}").ravel()


def is_sorted(digests: np.ndarray) -> bool:
    """Whether ``digests`` are distinct and in :func:`known_pairs`' order (a loaded space is checked)."""
    keys = _keys(digests)
    return bool(np.array_equal(np.unique(keys), keys))


def known_pairs(renderings: Sequence[str], tokens: Sequence[str], row_of: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """The digests of a fitted table's distinct pairs (sorted) and each one's training row, from
    the rows of distinct pairs (``renderings``, ``tokens``) and the training row each joined to."""
    digests = pair_digests(renderings, tokens)
    if not len(digests):
        return digests, np.zeros(0, dtype=np.int64)
    keep = np.unique(_keys(digests), return_index=True)[1]  # sorted by digest, one per pair
    return digests[keep], np.asarray(row_of, dtype=np.int64)[keep]


def find_rows(digests: np.ndarray, known: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Each digest's training row among the ``known`` (sorted, from :func:`known_pairs`), or -1."""
    if not len(known) or not len(digests):
        return np.full(len(digests), -1, dtype=np.int64)
    keys, wanted = _keys(known), _keys(digests)
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return np.where(keys[at] == wanted, rows[at], -1).astype(np.int64)
