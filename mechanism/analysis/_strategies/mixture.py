"""The cut's strategies refined as a mixture of move-token profiles (latent class analysis).

The tree and its joins (:mod:`mechanism.analysis._strategies.clustering`) read distances, in
which every token one trajectory has and the other lacks counts alike. A strategy is better
read as a profile: the chance that its members hold each token. A step a strategy always takes
(an ``ask_user`` first) or never takes then decides where a trajectory belongs, while a choice
its members make at random (which of two search tools) hardly counts, however often it differs
between two of them. That is the mixture model of behaviour sequences (a mixture of
independent Bernoulli profiles over the moves, a bag-of-moves form of the mixtures of Markov
chains of Cadez et al. 2003), fitted here by classification EM started from the cut's
strategies: each strategy's profile is estimated from its members (scikit-learn's
``BernoulliNB``, count-weighted, the Jeffreys prior ``alpha=0.5``), every trajectory goes to the
strategy under which its tokens are likeliest (times the strategy's share), and the two steps
repeat until no trajectory moves.

It repairs a cut that is mostly right; it finds no strategy the cut missed. The profiles are
estimated from the cut's members, so where many of one strategy's members sit with another the
profiles carry the error, and the rounds can settle on it or spread it (a toy of two strategies
whose defining step is one token against a choice of store that is two: a sixth of one
strategy's members misplaced is repaired at nine seeds of ten, a third at four). The tokens of one
call (its tool, move, relation, bigrams) count as separate evidence, so a choice of tool weighs
as many tokens as it makes.

The cut keeps its say where it draws a line no profile may cross: a trajectory never moves
into a strategy of another block (a declared kind under ``by=``, calling tools or not), and an
outlier (-1) stays one. The number of strategies never grows; one whose every member is
likelier elsewhere is gone.

Measured on the thirty planted worlds (typed, default embedder; benchmarks/RESULTS.md): at seeds
0-2 the sum of mean ARIs 24.159 -> 24.310, todo 0.689 -> 0.758, handoff 0.529 -> 0.570, Lean
0.559 -> 0.587, the SWE agent 0.863 -> 0.884; Sokoban 0.764 -> 0.739 and the parallel research
agent 0.924 -> 0.909 the largest falls; paired over seeds 0-5, +0.123 a seed (95 % interval
+0.038 to +0.209, ``compare_floor.mixture``). ``alpha`` 1.0 and 0.1 gave 24.263 and 24.307 at
seeds 0-2.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from scipy.sparse import spmatrix

#: The Beta prior's pseudo-count on each token's presence and absence in a strategy (Jeffreys)
MIXTURE_ALPHA = 0.5
#: Rounds of classification EM at most (todo, handoff, Lean, the text game, the parallel research
#: agent and Sokoban at seed 0 stop moving after 1 to 6)
MIXTURE_MAX_ITER = 30


def refine(presence: np.ndarray | spmatrix, counts: np.ndarray, labels: np.ndarray, blocks: np.ndarray, *,
           alpha: float = MIXTURE_ALPHA, max_iter: int = MIXTURE_MAX_ITER) -> np.ndarray:
    """Labels of the distinct rows once each has gone to the strategy whose token profile
    makes it likeliest, profiles and assignments updated in turn (module docstring).

    Parameters
    ----------
    presence
        Rows x tokens, 1 where the row holds the token (dense or sparse).
    counts
        Each row's trajectories: the weight of its tokens in the profiles and shares.
    labels
        The cut's strategies (integers; -1 an outlier, kept as it is).
    blocks
        An integer code per row: no row moves to a strategy none of whose members, as cut, lay
        in its block.
    alpha, max_iter
        The prior's pseudo-count; the most rounds.

    Returns
    -------
    numpy.ndarray
        The refined labels, with the codes of ``labels`` (a strategy left empty is not used).

    Examples
    --------
    ``ask_user`` first defines strategy 1, whose members pick either search tool; the cut put
    a member that searched the archive with strategy 0, the archive's. The profile moves it:

    >>> x = np.array([[0, 1, 0], [1, 1, 0], [1, 0, 1], [1, 1, 0]])  # ask_user, archive, conversation
    >>> refine(x, np.array([5, 1, 3, 3]), np.array([0, 0, 1, 1]), np.zeros(4, int)).tolist()
    [0, 1, 1, 1]
    """
    from sklearn.naive_bayes import BernoulliNB  # noqa: PLC0415 - scikit-learn: about a second to import, only in the steps that use it

    labels = np.asarray(labels, dtype=np.int64)
    inside = np.flatnonzero(labels >= 0)
    ids = np.unique(labels[inside])
    if len(ids) < 2:
        return labels.copy()
    x = presence[inside]
    w = np.asarray(counts, dtype=np.float64)[inside]
    block_ids, block = np.unique(np.asarray(blocks)[inside], return_inverse=True)
    # allowed[b, c]: strategy c held a row of block b as cut
    allowed = np.zeros((len(block_ids), len(ids)), dtype=bool)
    current = np.searchsorted(ids, labels[inside])
    allowed[block.ravel(), current] = True
    for _ in range(max_iter):
        model = BernoulliNB(alpha=alpha, binarize=None).fit(x, current, sample_weight=w)
        fitted = model.classes_.astype(np.int64)  # the strategies still holding members
        score = np.full((len(inside), len(ids)), -np.inf)
        score[:, fitted] = model.predict_joint_log_proba(x)
        score[~allowed[block.ravel()]] = -np.inf
        moved = score.argmax(axis=1)  # ties: the lowest code, as the cut numbered them
        if (moved == current).all():
            break
        current = moved
    out = labels.copy()
    out[inside] = ids[current]
    return out


def refine_fit(p: Any, labels: np.ndarray, counts: np.ndarray, rows: Any, index: np.ndarray | None = None
               ) -> np.ndarray:
    """:func:`refine` of the strategies ``labels`` of the distinct rows ``index`` (all by default)
    of a fit's rows (:class:`~mechanism.analysis._strategies.features.FitRows`) with counts
    ``counts`` (a resample's), where the parameters ``p`` say ``refine="mixture"``; ``labels``
    as they are under ``"none"``."""
    if p.refine != "mixture":
        return np.asarray(labels)
    index = np.arange(len(rows.blocks)) if index is None else np.asarray(index)
    return refine(rows.presence[index], counts, labels, rows.blocks[index])
