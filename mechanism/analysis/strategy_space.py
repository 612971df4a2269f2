"""The strategy space: trajectories -> move tokens and masked renderings -> joined space ->
strategies, saved without pickle and applied to new checkpoints without refitting.

A thin scikit-learn estimator (as ``KMeans`` over ``cluster/_kmeans.py``): ``__init__`` stores
parameters, declared with their constraints in :mod:`mechanism.analysis._strategies.params`; ``fit``
orchestrates private modules, each with one job: :mod:`~mechanism.analysis._strategies.features` (move
tokens as presence columns, the joined space), :mod:`~mechanism.analysis._strategies.reduce` (UMAP and
its disk cache), :mod:`~mechanism.analysis._strategies.clustering` (the three clusterers, k by
silhouette, renumbering, the outlier threshold), :mod:`~mechanism.analysis._strategies.stability`
(bootstrap over questions, seed agreement, the resolution sweep, all on clones),
:mod:`~mechanism.analysis._strategies.describe` (the description table, computed once per fit),
:mod:`~mechanism.analysis._strategies.fitcache` (the fit cache) and
:mod:`~mechanism.analysis._strategies.persist` (save and load). The estimator never changes its own
parameters; learned state (trailing underscore) is set only by ``fit`` (and ``load``).

Pipeline (docs/methods.md, "What it answers"):

1. :func:`mechanism.analysis.segmentation.render` describes every call by the tool-agnostic move
   grammar (tool, where its values came from, relation to earlier calls, failure and retry)
   and gives each trajectory its move tokens (:func:`~mechanism.analysis.segmentation.move_tokens`)
   and a rendering with the question's content masked.
2. Each token is a presence column (weight 1, none set by hand; the 512 most frequent
   tokens get one, rarer ones count together); distinct renderings are embedded once
   (:mod:`mechanism.analysis.embed`) and joined, times ``embedding_weight``.
3. Identical joined rows are collapsed and carry their count as a weight.
4. Clustering, by default average-linkage agglomerative clustering cut at ``resolution``
   (groups join while they differ on average by fewer than ``resolution**2`` tokens), then
   every group under ``min_share`` of the trajectories joins its nearest group (never across
   calling tools or not): the number of strategies follows from these two stated criteria,
   chosen once for all planted worlds by leaving one world out
   (``benchmarks/bench_strategies_worlds.py --lowo``, ``--min-share-lowo``). The tree is cut
   within each tool plan, the tools the question decides read as one mark
   (:func:`~mechanism.analysis._strategies.features.task_tools`), and strategies of one plan used on
   disjoint questions are one (:mod:`mechanism.analysis._strategies.tasks`), as are strategies
   that differ only in a last tool the data show swapped after other prefixes too
   (:mod:`mechanism.analysis._strategies.endings`). Where the question picks the tools and
   the strategies so found track the question, the fit is made again with every call read by
   its place, and kept where that tracks the question at most half as much
   (:mod:`mechanism.analysis._strategies.places`). Before any of it, tools used
   interchangeably are read as one and steps taken whatever the strategy are left out
   (:mod:`mechanism.analysis._strategies.alike`), and a generic request tool's path segments
   that the question decides are read as one mark
   (:func:`~mechanism.analysis._strategies.features.task_segments`).
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
``resolution``), so that it can fire on an agent unlike the fitted one: in a saved space applied
to another agent, a trajectory of two or three calls placed in a one-call strategy is far from that
strategy's medoid even where its nearest fitted row is close.
"""
from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from sklearn.base import BaseEstimator, _fit_context

from mechanism.analysis._strategies import describe as _describe
from mechanism.analysis._strategies import persist, stability
from mechanism.analysis._strategies.alike import interchangeable_tools, optional_steps
from mechanism.analysis._strategies.association import association_of
from mechanism.analysis._strategies.clustering import (  # noqa: F401 - some re-exported: tests and benchmarks reach them here
    OUTLIER_QUANTILE,
    assign_table,
    medoid_rows,
    neighbours,
    row_distances,
    umap_settings,
    weighted_silhouette,
)
from mechanism.analysis._strategies.describe import c_tf_idf_keywords  # noqa: F401  (public here since 0.1)
from mechanism.analysis._strategies.description import MAX_SHOWN_CHARS, member_examples, pick_members, step_labels  # noqa: F401  (public here: the report's explorer)
from mechanism.analysis._strategies.features import (
    TOKEN_RANK,
    FitRows,
    distinct_rows,
    embed_join,
    episodes_are_draws,
    fit_vocabulary,
    habit_reasons,
    plan_codes,
    presence_matrix,
    project_tokens,
    task_calls,
    task_plan,
    task_segments,
    task_table,
    task_tokens,
    task_tools,
    token_basis,
    tool_plan,
    untested_reasons,
)
from mechanism.analysis._strategies.fitcache import fit_cached
from mechanism.analysis._strategies.known import find_rows, known_pairs, pair_digests
from mechanism.analysis._strategies.labels import display_names, strategy_label  # noqa: F401  (public here)
from mechanism.analysis._strategies.levels import at_level, check_level, describe_families, family_table  # noqa: F401  (public here)
from mechanism.analysis._strategies.params import (
    CONSTRAINTS,
    ClusterOn,
    Families,
    Level,
    Linkage,
    Method,
    Plans,
    Refine,
    TaskCallsMode,
    check,
    model_params,
)
from mechanism.analysis._strategies.persist import FORMAT_VERSION  # noqa: F401  (the saved format's version, public)
from mechanism.analysis._strategies.places import PLACE_ASSOCIATION, prefer_places, question_association, read_by_place
from mechanism.analysis._strategies.reduce import interpolate, map_coordinates
from mechanism.analysis.embed import TextEmbedder, make_embedder
from mechanism.analysis.segmentation import (
    NO_TASK_CALLS,
    ActionField,
    Retries,
    TaskCalls,
    action_tools,
    batched_tools,
    render,
    request_paths,
)
from mechanism.core.errors import InputError, MechanismError
from mechanism.core.options import RandomState
from mechanism.core.resample import resolve_seed
from mechanism.core.schema import validate


@dataclass
class Placement:
    """Where a fitted space puts each row of a table, from one embedding pass
    (:meth:`StrategySpace.place`).

    ``assigned`` is :meth:`StrategySpace.assign`'s table; ``coordinates`` the rows' positions in
    the space the strategies live in; ``map_xy`` their 2-D strategy-map positions (or ``None``).
    """

    assigned: pl.DataFrame
    coordinates: np.ndarray
    map_xy: np.ndarray | None

    @property
    def labels(self) -> np.ndarray:
        return self.assigned["strategy"].to_numpy()


class StrategySpace(BaseEstimator):
    """Find an agent's strategies: a scikit-learn-style estimator over trajectory tables.

    Parameters
    ----------
    embedder
        ``None`` (each distinct step embedded once by all-MiniLM-L6-v2, renderings composed from
        their steps), a sentence-transformers model name or path (whole renderings), ``"hashing-<n>"``,
        or an object with ``model_id`` and ``embed(texts)``.
    embedding_weight, structure_weight, token_rank
        Multipliers of the (unit-length) embedding and of the move-token columns; the principal axes those
        columns are read on, fitted on the trajectories (``None``: every column as it is).
    method, linkage
        ``"agglomerative"`` (the tree cut at ``resolution``, ``linkage`` ``"average"``, ``"complete"`` or
        ``"single"``), ``"kmeans"`` or ``"hdbscan"``.
    resolution
        Where the tree is cut: groups whose ``linkage`` distance (square roots of numbers of differing move
        tokens) is below it are one strategy.
    min_share, min_share_tested
        Smallest share of trajectories a strategy holds (agglomerative); smaller groups join the group nearest
        on average (under ``plans="apart"`` never across calling tools or not). One under ``min_share_tested``
        joins too unless the arms take the two at different rates (chi-square p < 0.2; with one arm it joins).
    k_range, min_cluster_size
        Strategies k-means tries (smallest, largest); HDBSCAN's smallest strategy (default 1 %, at least 5).
    cluster_on, n_components, n_neighbors, min_dist, max_umap_points
        ``"features"`` (the joined space) or ``"umap"`` (its UMAP reduction, with these settings; rows
        repeated by count up to ``max_umap_points``).
    n_bootstrap
        Resamples of questions behind ``stability_`` (0: none).
    random_state
        A non-negative integer (same input, same strategies), a numpy Generator or ``None``
        (fresh entropy): seeds UMAP, k-means and the bootstrap (the fit's seed: ``seed_``;
        :func:`mechanism.core.resample.library_seed` hands UMAP and scikit-learn a 32-bit one).
    retries, families, plans, refine
        ``retries="merge"``: a failed call and the retries of its tool after it are one attempt (failure and
        retry rates are execution: :meth:`execution`); ``"keep"``: every call a move, failures and retries
        marked. ``families="merge"``: strategies one inserted step apart are one unless the arms take it at
        different rates (:mod:`mechanism.analysis._strategies.families`); ``"keep"``: the cut alone.
        ``plans="apart"``: a tree per tool plan (:func:`tool_plan`), ``"mixed"``: one. ``refine="mixture"``: each
        row then to its likeliest strategy by move-token profiles (:mod:`~mechanism.analysis._strategies.mixture`).
    error_pattern
        A regular expression (case-insensitive) for your environment's failure messages.
    action_field, ignore_tools
        ``"auto"``: a generic tool (``bash(command=)``, ``computer(action=)``) is read as verb + object
        (:mod:`mechanism.core.actions`), and handoffs to two agents or more (``transfer_to_<agent>``) as one
        verb whose object is the agent; or ``{tool: field}``, or ``None`` (by name); tools or verbs left out
        of every trajectory (bookkeeping: ``think``, ``screenshot``).
    task_calls
        ``"auto"``: calls the question decides (``search_hotels`` or ``search_flights``) are read by their
        place, not their name (``task_calls_``, :func:`tool_plan`'s module), and tools the agent uses
        interchangeably whatever its strategy (an edit by ``sed -i`` or by ``perl -pi``) as one
        (``task_calls_.alike``, :mod:`~mechanism.analysis._strategies.alike`), steps it takes or not whatever its
        strategy left out (``task_calls_.optional``), and a request tool's path segments that the question
        decides as one mark (``task_calls_.segments``); ``"keep"``: every call by its name.
    by
        A column of task kinds (``"category"``): strategies found within each kind; an unseen one is -1.
    cache_dir
        Folder of the caches (``None``: none): ``embeddings/``, ``segments/``, ``fits/`` and ``reductions/``
        (UMAP), :mod:`mechanism.core.cachefile` entries; a fit on a table seen before reads everything from
        them (nothing segmented, embedded or clustered, no model loaded).
    progress
        Show progress bars (``None``: only on a terminal).

    Attributes
    ----------
    labels_, strategies_ : numpy.ndarray, polars.DataFrame
        Strategy of each fitted row (``n_strategies_`` of them); what :meth:`describe` returns.
    train_features_, train_labels_, train_counts_, train_plans_ : numpy.ndarray, list
        The distinct training rows of the joined space, their strategies, counts and plans.
    threshold_ : float
        Distance to its strategy's medoid beyond which a new row is an outlier (the weighted
        99th percentile of the fitted members' own, at least ``resolution``).
    vocabulary_, kinds_ : list of str
        The move tokens with a column of their own; the kinds of ``by`` (none without it).
    task_tokens_ : frozenset of str
        The move tokens the question decides (:func:`~mechanism.analysis._strategies.features.task_tokens`),
        left out of the distances (none under ``task_calls="keep"``).
    task_tested_, task_test_ : bool, dict
        Whether the fit's table let it test what the question decides (10 questions, two
        trajectories a question on average, 30 beyond each question's first, and a question's
        trajectories not one policy's habit on it; ``False`` under ``task_calls="keep"``), and
        the figures that decided it (:func:`~mechanism.analysis._strategies.features.task_table`;
        none under ``"keep"``). Both absent from a space saved before they were recorded.
    stability_, seed_agreement_ : polars.DataFrame, float
        ``strategy, stability`` (mean best Jaccard over ``n_bootstrap`` question resamples);
        adjusted Rand index with the fit under the next seed.
    names_, seed_, action_tools_, task_calls_ : dict, int, dict, TaskCalls
        Names given with :meth:`rename`; the fit's integer seed (``random_state`` when an int);
        the generic tools read as verbs, ``{tool: field}``, and the task's calls (new runs alike;
        ``by_place`` where every call is read by its place).
    place_association_ : dict or None
        Where the fit read the calls by place too (:mod:`mechanism.analysis._strategies.places`):
        the strategies' association with the question read by name and by place, and the
        reading kept (``"name"`` or ``"place"``); ``None`` where it did not (fit only, not saved).

    Examples
    --------
    >>> from mechanism.datasets.simulation import simulate
    >>> runs = simulate(n_questions=20, n_samples=4, random_state=0, progress=False).runs
    >>> space = StrategySpace(embedder="hashing-64", progress=False).fit(runs)
    >>> bool((space.transform(runs) == space.labels_).all())
    True
    """

    def __init__(self, *, embedder: str | TextEmbedder | None = None, embedding_weight: float = 0.3,
                 structure_weight: float = 1.0, token_rank: int | None = TOKEN_RANK,
                 method: Method = "agglomerative", resolution: float = 1.5, refine: Refine = "mixture",
                 linkage: Linkage = "average", min_share: float = 0.07, min_share_tested: float = 0.08,
                 k_range: tuple[int, int] = (2, 12), min_cluster_size: int | None = None,
                 cluster_on: ClusterOn = "features", n_components: int = 5, n_neighbors: int = 15,
                 min_dist: float = 0.0, max_umap_points: int = 3000, n_bootstrap: int = 20,
                 random_state: RandomState = 0, retries: Retries = "merge", families: Families = "keep",
                 plans: Plans = "apart", error_pattern: str | None = None, action_field: ActionField = "auto",
                 task_calls: TaskCallsMode = "auto", by: str | None = None, cache_dir: str | os.PathLike | None = None,
                 ignore_tools: Sequence[str] | None = None, progress: bool | None = None) -> None:
        self.embedder, self.embedding_weight, self.structure_weight, self.method, self.refine = (
            embedder, embedding_weight, structure_weight, method, refine)
        self.resolution, self.linkage, self.min_share, self.k_range = resolution, linkage, min_share, k_range
        self.cluster_on, self.n_components, self.n_neighbors = cluster_on, n_components, n_neighbors
        self.min_dist, self.max_umap_points, self.min_cluster_size = min_dist, max_umap_points, min_cluster_size
        self.n_bootstrap, self.random_state, self.token_rank = n_bootstrap, random_state, token_rank
        self.retries, self.families, self.plans, self.min_share_tested = retries, families, plans, min_share_tested
        self.error_pattern, self.action_field, self.ignore_tools = error_pattern, action_field, ignore_tools
        self.task_calls, self.by, self.cache_dir, self.progress = task_calls, by, cache_dir, progress

    _parameter_constraints = CONSTRAINTS  # the one table (scikit-learn's constraint types)

    def _validate_params(self) -> None:  # the table, with the toolkit's one-line errors
        check(self.get_params(deep=False))

    def __sklearn_clone__(self) -> StrategySpace:  # parameters only: an embedder object is shared
        return type(self)(**self.get_params(deep=False))

    def _cache_path(self, kind: str) -> Path | None:
        return None if self.cache_dir is None else Path(self.cache_dir) / kind

    def _embedder(self) -> TextEmbedder:
        if getattr(self, "_embedder_obj", None) is None:  # a handle on the model, made once
            self._embedder_obj = make_embedder(self.embedder, cache_dir=self._cache_path("embeddings"),
                                               progress=self.progress)
        return self._embedder_obj

    def _render(self, runs: pl.DataFrame, task: TaskCalls | None = None) -> pl.DataFrame:
        # a fitted space reads new runs' generic tools as it read the fitted ones
        actions = getattr(self, "action_tools_", None)
        return render(runs, cache_dir=self._cache_path("segments"), error_pattern=self.error_pattern,
                      retries=self.retries, action_field=self.action_field if actions is None else actions,
                      ignore_tools=self.ignore_tools,
                      task_calls=getattr(self, "task_calls_", NO_TASK_CALLS) if task is None else task)

    def _features(self, traj: pl.DataFrame, dim: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        return _joined(self, traj, dim)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, runs: pl.DataFrame, y: Any = None) -> StrategySpace:
        """Find the strategies of ``runs`` (a canonical trajectory table); returns ``self``, fitted."""
        validate(runs, source="runs")
        if runs.height == 0:
            raise InputError("cannot fit a strategy space on an empty table", source="runs")
        for attr in ("_embedder_obj", "silhouette_", "train_space_", "map_coords_", "action_tools_", "task_calls_",
                     "task_tokens_", "task_tested_", "task_test_"):
            self.__dict__.pop(attr, None)
        self.action_tools_, self.kinds_ = action_tools(runs, self.action_field), declared_kinds(runs, self.by)
        named, first, self.task_calls_ = _read_task_calls(self, runs)
        self.seed_ = resolve_seed(self.random_state)
        work = self.__sklearn_clone__().set_params(random_state=self.seed_)  # what the private modules read
        self.embedding_model_ = self._embedder().model_id
        _fit_reading(self, runs, named, first, work)
        self.place_association_ = _reread_by_place(self, runs, named, work)
        return self._index()

    def _index(self) -> StrategySpace:  # what assigning reads, derived from the fitted state
        self.medoids_ = medoid_rows(self.train_features_, self.train_counts_, self.train_labels_)
        self._nn = neighbours(self.train_features_)
        return self

    @classmethod
    def _restore(cls, params: dict[str, Any], state: dict[str, Any]) -> StrategySpace:
        """A fitted space from its parameters and its fitted state (:data:`FITTED_STATE`: what
        :meth:`save` wrote, read back by :meth:`load`); the seed and the index are derived."""
        space = cls(**params)
        space.__dict__.update(_fitted_state(state), seed_=int(space.random_state))
        return space._index()

    def fit_transform(self, runs: pl.DataFrame, y: Any = None) -> np.ndarray:
        """Fit and return the strategy of each row (-1: outlier)."""
        return self.fit(runs).labels_.copy()

    def _check_fitted(self) -> None:
        if not hasattr(self, "train_features_"):
            raise MechanismError("this StrategySpace is not fitted yet: call `fit` or `StrategySpace.load`")

    def place(self, runs: pl.DataFrame, *, map_xy: bool = True) -> Placement:
        """Labels (the :meth:`assign` table), :meth:`coordinates` and, with ``map_xy``, strategy-map
        positions of ``runs``, from one rendering and embedding of each row (a report needs all
        three, and embedding dominates the cost)."""
        traj, x, dist, idx = _nearest(self, runs)
        assigned = assign_table(traj, x, dist, idx, train_labels=self.train_labels_, features=self.train_features_,
                                medoids=self.medoids_, threshold=self.threshold_, rule=self.threshold_rule_)
        coords = interpolate(self.train_space_, dist, idx) if self.cluster_on == "umap" else x.astype(np.float64)
        return Placement(assigned, coords, interpolate(self.map_coordinates(), dist, idx) if map_xy else None)

    def assign(self, runs: pl.DataFrame) -> pl.DataFrame:
        """Strategy of each row of ``runs``: ``arm, question_id, sample_id, strategy`` (-1: outlier),
        ``distance`` (to the nearest training row), ``medoid_distance`` (to its strategy's medoid),
        ``outlier`` (beyond ``threshold_``; a row seen at fit never is), ``rendering``, ``moves``
        (:func:`mechanism.analysis._strategies.clustering.assign_table` states the rule)."""
        return self.place(runs, map_xy=False).assigned

    def transform(self, runs: pl.DataFrame, *, level: Level = "variant") -> np.ndarray:
        """Strategy id of each row of ``runs`` (-1: outlier; ``level="family"``: its family's), without refitting."""
        return at_level(self.assign(runs)["strategy"].to_numpy(), self.strategies_, level)  # assign: "not fitted"

    predict = transform

    def coordinates(self, runs: pl.DataFrame) -> np.ndarray:
        """Each row's position in the space the strategies live in: the joined space itself with
        ``cluster_on="features"`` (exact for any row); with ``"umap"``, a seen row's fitted UMAP
        coordinates, others the inverse-distance-weighted mean of their nearest training rows'."""
        return self.place(runs, map_xy=False).coordinates

    def map_coordinates(self, runs: pl.DataFrame | None = None, *, compute: bool = True) -> np.ndarray | None:
        """2-D UMAP coordinates for the strategy map: of each row of ``runs``, or of the distinct
        training rows when ``runs`` is None; computed once per process (seeded, cached on disk),
        never stored on the estimator. ``compute=False``: only one already made (else ``None``)."""
        self._check_fitted()
        if runs is not None:
            return self.place(runs).map_xy
        saved = getattr(self, "map_coords_", None)  # a loaded space's saved map
        if saved is not None:
            return saved.astype(np.float64)
        xy = map_coordinates(self.train_features_, self.train_counts_, compute=compute,
                             **umap_settings(self, seed=self.seed_))
        return None if xy is None else xy.astype(np.float64)

    def examples(self, strategy: int, *, n: int = 5, arm: str | None = None,
                 runs: pl.DataFrame | None = None) -> pl.DataFrame:
        """``n`` unmasked member transcripts of ``strategy`` (-1: outliers), typical and atypical
        alternating, spread over arms, outcomes and questions (deterministic); only ``arm``'s with
        ``arm``; taken from ``runs`` (assigned without refitting; needed after :meth:`load`) instead
        of the fitted table. Canonical rows plus ``strategy``, ``kind``, ``moves``, ``calls``
        (:func:`mechanism.analysis._strategies.description.choose_members` states the rule)."""
        self._check_fitted()
        return _describe.examples(getattr(self, "_example_pool", None), self.strategies_, strategy, n=n, arm=arm,
                                  runs=runs, assigned=None if runs is None else self.assign(runs))

    def sweep(self, resolutions: Sequence[float] | None = None) -> pl.DataFrame:
        """How the strategies merge and split as ``resolution`` varies (agglomerative only): the
        table of :func:`mechanism.analysis._strategies.stability.sweep`, made on clones (nothing changes here)."""
        self._check_fitted()
        return stability.sweep(self, resolutions)

    def rename(self, names: dict[int, str]) -> StrategySpace:
        """Give strategies names of your own (kept by :meth:`save`, shown by :meth:`describe` and
        every table and figure built from it); unnamed ones keep their built name. Returns ``self``."""
        self._check_fitted()
        self.names_, self.strategies_ = _describe.renamed(self.strategies_, self.names_, names)
        return self

    def association(self, runs: pl.DataFrame, *, by: str = "category", n_boot: int = 200,
                    level: float = 0.95) -> pl.DataFrame:
        """How far strategies track a property of the question (``by``: ``"category"``, ``"question_id"``):
        ``strategy, <by>, n, share, cramers_v, ci_low, ci_high`` (bias-corrected Cramér's V, bootstrap
        interval over questions; :mod:`mechanism.analysis._strategies.association`)."""
        return association_of(self.transform, runs, by=by, n_boot=n_boot, level=level, random_state=self.seed_)

    def execution(self) -> pl.DataFrame:
        """How often each strategy's members fail a call and retry, per arm of the fitted table
        (execution, not strategy): ``strategy, name, arm, n, failure_rate, failure_ci_low,
        failure_ci_high, retry_rate, retry_ci_low, retry_ci_high`` (questions weighted equally)."""
        self._check_fitted()
        return _describe.execution(self.strategies_)

    def describe(self, level: Level = "variant") -> pl.DataFrame:
        """One row per strategy, made at fit (-1 first when HDBSCAN left outliers; the columns: module
        ``_strategies.describe``); ``level="family"``: one row per family (module ``_strategies.levels``)."""
        self._check_fitted()
        return self.strategies_.clone() if check_level(level) == "variant" else describe_families(self.strategies_)

    def set_params(self, **params: Any) -> StrategySpace:
        """Set constructor parameters (scikit-learn convention; checked against the table); refit afterwards."""
        unknown = sorted(set(params) - set(self.get_params(deep=False)))
        if unknown:
            raise MechanismError(f"unknown parameter `{unknown[0]}` for StrategySpace")
        check(params)
        return super().set_params(**params)

    def save(self, folder: str | os.PathLike) -> Path:
        """Write the fitted space to ``folder`` (JSON, ``.npy`` and parquet; no pickle); returns it."""
        self._check_fitted()
        return persist.save(self, folder, params=model_params(self.get_params(deep=False), self.seed_),
                            map_coords=self.map_coordinates(compute=False))

    @classmethod
    def load(cls, folder: str | os.PathLike, *, embedder: str | TextEmbedder | None = None,
             cache_dir: str | os.PathLike | None = None, progress: bool | None = None) -> StrategySpace:
        """Read a space written by :meth:`save`, every file checked as untrusted input and nothing
        executed (:mod:`mechanism.analysis._strategies.persist`; one-line :class:`InputError` naming file and
        field). ``embedder`` defaults to the model recorded at fit (another ``model_id`` is refused)."""
        return persist.load(cls._restore, folder, embedder=embedder, cache_dir=cache_dir, progress=progress)


#: Everything a fit learns that a saved space keeps (``train_space_`` with ``cluster_on="umap"``,
#: ``map_coords_`` when a map was drawn): :meth:`StrategySpace._restore` takes exactly these.
FITTED_STATE = ("train_features_", "train_labels_", "train_counts_", "labels_", "train_space_", "map_coords_",
                "strategies_", "stability_", "train_renderings_", "train_moves_", "train_plans_", "embedding_model_",
                "embedding_dim_", "vocabulary_", "threshold_", "threshold_rule_", "n_strategies_", "names_",
                "seed_agreement_", "action_tools_", "kinds_", "task_calls_", "known_pairs_", "known_rows_",
                "task_tokens_", "task_tested_", "task_test_", "token_mean_", "token_axes_")
_OPTIONAL_STATE = {"train_space_", "map_coords_", "task_calls_", "known_pairs_", "known_rows_", "task_tokens_",
                   "task_tested_", "task_test_", "token_mean_", "token_axes_"}


def _joined(space: StrategySpace, traj: pl.DataFrame, dim: int | None) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`StrategySpace._features`: the joined rows of a rendered table's distinct pairs, the
    token columns on the fitted principal axes (none before they are fitted in `_fit_reading`, in a
    space saved before them, or with ``token_rank=None``), and each row's pair."""
    rows, inverse = embed_join(traj, space._embedder(), space.vocabulary_,
                               dim=space.embedding_dim_ if dim is None else dim, n_groups=len(space.kinds_),
                               structure_weight=space.structure_weight, embedding_weight=space.embedding_weight,
                               ignore=getattr(space, "task_tokens_", frozenset()))
    mean = getattr(space, "token_mean_", None)
    return project_tokens(rows, len(space.vocabulary_), None if mean is None else (mean, space.token_axes_)), inverse


def _fitted_state(state: dict[str, Any]) -> dict[str, Any]:
    """``state`` when it holds exactly :data:`FITTED_STATE` (the optional entries aside)."""
    odd = sorted((set(state) - set(FITTED_STATE)) | (set(FITTED_STATE) - set(state) - _OPTIONAL_STATE))
    if odd:
        raise MechanismError(f"a fitted StrategySpace's state has no or an unknown `{odd[0]}`")
    return state


def _nearest(space: StrategySpace, runs: pl.DataFrame) -> tuple[pl.DataFrame, np.ndarray, np.ndarray, np.ndarray]:
    """The rendered ``runs``, their joined rows and each one's nearest training rows (distances, indices)."""
    space._check_fitted()
    validate(runs, source="runs", required=("arm", "question_id", "sample_id", "question",
                                            "answer", "n_rounds", "steps"))
    traj = space._render(runs)
    pairs, inverse = _known_or_joined(space, with_kinds(traj, runs, space.by, space.kinds_))
    if not len(pairs):
        return traj, pairs[inverse], np.zeros((0, 1)), np.zeros((0, 1), dtype=np.int64)
    # Neighbours of each distinct pair once, gathered per row. The search's distances round
    # with the BLAS blocks of the batch asked (a row seen at fit reads 0 or 1e-7), so the
    # nearest one, which the table reports and the outlier test reads, is measured again row
    # by row: the same row gets the same distance in any batch or shard.
    dist, idx = space._nn.kneighbors(pairs)
    dist[:, 0] = row_distances(pairs, space.train_features_, idx[:, 0])
    return traj, pairs[inverse], dist[inverse], idx[inverse]


def _known_or_joined(space: StrategySpace, table: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The distinct joined rows of a rendered table and each row's one (as :meth:`StrategySpace._features`),
    a pair the fit joined taken from the training rows and only the others embedded
    (:mod:`mechanism.analysis._strategies.known` says why)."""
    known = getattr(space, "known_pairs_", None)
    found = np.full(table.height, -1, dtype=np.int64) if known is None else find_rows(
        pair_digests(table["rendering"], table["tokens"]), known, space.known_rows_)
    new = found < 0
    if new.all():
        return space._features(table)
    fresh, fresh_of = space._features(table.filter(pl.Series(new))) if new.any() else (
        np.zeros((0, space.train_features_.shape[1]), np.float32), np.zeros(0, np.int64))
    seen = np.unique(found[~new])  # training rows met, then the new pairs after them
    inverse = np.empty(table.height, dtype=np.int64)
    inverse[~new] = np.searchsorted(seen, found[~new])
    inverse[new] = len(seen) + fresh_of
    return np.vstack([space.train_features_[seen], fresh]).astype(np.float32, copy=False), inverse


def declared_kinds(runs: pl.DataFrame, by: str | None) -> list[str]:
    """The distinct values of column ``by`` (sorted; a null reads as ``""``), or none."""
    if by is None:
        return []
    if not isinstance(by, str) or by not in runs.columns:
        raise InputError(f"`by` must name a column of the runs, got {str(by)[:60]!r}", field="by")
    return sorted(set(kind_of_rows(runs, by)))


def kind_of_rows(runs: pl.DataFrame, by: str) -> list[str]:
    """Each row's declared kind: column ``by`` as text, a null read as ``""``."""
    return runs[by].cast(pl.String).fill_null("").to_list()


def with_kinds(traj: pl.DataFrame, runs: pl.DataFrame, by: str | None, kinds: Sequence[str]) -> pl.DataFrame:
    """``traj`` with each row's declared kind (``by=``) in its tokens as ``G:<index>``, ``G:?``
    for a kind not among ``kinds`` (:func:`mechanism.analysis._strategies.features.group_block`)."""
    if by is None:
        return traj
    if by not in runs.columns:
        raise InputError(f"the space was fitted by `{by}`, which these runs lack", field="by")
    index = {k: i for i, k in enumerate(kinds)}
    marks = [f" G:{index.get(k, '?')}" for k in kind_of_rows(runs, by)]
    return traj.with_columns(pl.Series("tokens", [t + m for t, m in zip(traj["tokens"].to_list(), marks)]))


def _fit_reading(space: StrategySpace, runs: pl.DataFrame, named: list[str | None], first: pl.DataFrame | None,
                 work: StrategySpace) -> None:
    """The fit of ``space`` under the reading its ``task_calls_`` say (``first``: the table
    rendered before they were found, reused where there are none)."""
    # read alike where the task decides nothing but request segments (`first` was read under them)
    same = first is not None and space.task_calls_ == TaskCalls(segments=space.task_calls_.segments)
    traj = first if same else space._render(runs)
    tokens = traj["tokens"].to_list()
    # only where the tools could be tested: a habit repeats the tools more than the tokens
    # (where a call's values came from differs), so it is read on the tools
    space.task_tokens_ = (task_tokens(tokens, runs["question_id"].cast(pl.String).to_numpy()) if space.task_tested_
                          else frozenset())
    space.vocabulary_ = fit_vocabulary(tokens, ignore=space.task_tokens_)
    for attr in ("token_mean_", "token_axes_"):  # learnt again below, from these rows read as they are
        space.__dict__.pop(attr, None)
    pair_rows, pair_of_row = space._features(table := with_kinds(traj, runs, space.by, space.kinds_), dim=-1)
    basis = token_basis(pair_rows[:, :len(space.vocabulary_)], np.bincount(pair_of_row, minlength=len(pair_rows)),
                        space.token_rank)
    if basis is not None:
        space.token_mean_, space.token_axes_ = basis
        pair_rows = project_tokens(pair_rows, len(space.vocabulary_), basis)
    space.embedding_dim_ = int(pair_rows.shape[1] - len(space.vocabulary_) - 1 - len(space.kinds_))
    uniq, inverse, first = distinct_rows(pair_rows, pair_of_row)
    space.known_pairs_, space.known_rows_ = known_pairs(table["rendering"], table["tokens"], inverse)
    figures = getattr(space, "task_test_", None)  # a habit read once, on the tools as named, whatever the reading
    rows = _fit_rows(runs, traj, uniq, inverse, first, space.vocabulary_, by=space.by,
                     draws=None if figures is None else not habit_reasons(figures))
    space.train_features_, space.train_counts_ = uniq, rows.counts
    space.train_renderings_, space.train_moves_, space.train_plans_ = rows.renderings, rows.moves, rows.plans
    fitted, space.fit_cache_rebuilt_ = fit_cached(
        work, rows, folder=space._cache_path("fits"), params=model_params(space.get_params(), space.seed_),
        model=space.embedding_model_, vocabulary=space.vocabulary_)
    space.train_labels_ = labels = fitted["labels"]
    space.threshold_, space.threshold_rule_ = fitted["threshold"], "medoid"
    # what UMAP clustering and k-means learn besides the labels
    space.__dict__.update({f"{k}_": fitted[k] for k in ("train_space", "silhouette") if fitted.get(k) is not None})
    space.labels_, space.n_strategies_ = labels[inverse], int(labels.max() + 1) if (labels >= 0).any() else 0
    space.stability_ = _describe.stability_table(fitted["stability"], labels)
    space.seed_agreement_, space.names_ = float(fitted["seed_agreement"]), {}
    calls = _describe.task_call_tools(named, space.labels_, space.task_calls_.tools)
    space.strategies_ = _describe.table(runs, traj, space.labels_, fitted, space.stability_, seed=space.seed_,
                                       task_calls=calls,
                                       alike=_describe.alike_tools(named, space.labels_, space.task_calls_.alike))
    space._example_pool = _describe.example_pool(runs, traj["moves"].to_list(), space.labels_, space.strategies_)


def _reread_by_place(space: StrategySpace, runs: pl.DataFrame, named: list[str | None],
                     work: StrategySpace) -> dict[str, Any] | None:
    """Where the question picks the tools and the strategies read by name track it, the fit
    made again with every call read by its place, kept where it tracks the question at most
    half as much (:mod:`mechanism.analysis._strategies.places`); the test's record, or ``None``
    where none was made."""
    place = read_by_place(space.task_calls_, named)
    if place is None:
        return None
    questions = runs["question_id"].cast(pl.String).to_numpy()
    by_name = question_association(space.labels_, questions)
    if by_name < PLACE_ASSOCIATION:
        return None
    by_name_fit = dict(space.__dict__)
    space.task_calls_ = place
    _fit_reading(space, runs, named, None, work)
    by_place = question_association(space.labels_, questions)
    if not prefer_places(by_name, by_place):
        space.__dict__.clear()
        space.__dict__.update(by_name_fit)
    return {"by_name": by_name, "by_place": by_place, "reading": "place" if space.task_calls_.by_place else "name"}


def _read_task_calls(space: StrategySpace, runs: pl.DataFrame
                     ) -> tuple[list[str | None], pl.DataFrame | None, TaskCalls]:
    """Each row's tools as named, the table rendered before the task's calls are found (it is
    the fit's own where none are found: a render is most of a cold fit) and the task's calls
    with the tools used interchangeably and the steps taken whatever the strategy
    (:mod:`~mechanism.analysis._strategies.alike`; none, and no table, under
    ``task_calls="keep"``). Where the question decides which resource a generic
    request tool's calls name (:func:`task_segments`), the table is read with those segments
    as one mark before the rest is tested. Sets ``space.task_test_``, the figures the task test
    reads on the tools as named (:func:`task_table`; none under ``"keep"``), and
    ``space.task_tested_``, whether they let it run."""
    if space.task_calls == "keep":
        space.task_tested_ = False
        return [], None, NO_TASK_CALLS
    questions = runs["question_id"].cast(pl.String).to_numpy()
    actions = space.action_tools_
    segments = task_segments(request_paths(runs, actions), questions) if actions else frozenset()
    first = space._render(runs, TaskCalls(segments=segments))
    named = first["tools"].to_list()
    space.task_test_ = task_table(named, questions)  # the task test's figures, counted once
    space.task_tested_ = not untested_reasons(space.task_test_)
    found = dataclasses.replace(task_calls(named, questions, table=space.task_test_), segments=segments)
    arms = runs["arm"].cast(pl.String).to_list()
    alike = interchangeable_tools(named, arms, found.tools, questions)
    read_as = dataclasses.replace(found, alike=alike).alike_names()
    grouped = [" > ".join(read_as.get(t.rstrip("!"), t) for t in tl.split(" > ")) if tl else tl for tl in named]
    # a batch of one tool's calls sent in one message is a step of its own, never the single call
    optional = optional_steps([batched_tools(tl, m) for tl, m in zip(grouped, first["moves"].to_list())], arms,
                              found.tools)
    return named, first, dataclasses.replace(found, alike=alike, optional=optional)


def _fit_rows(runs: pl.DataFrame, traj: pl.DataFrame, uniq: np.ndarray, inverse: np.ndarray,
              first: np.ndarray, vocabulary: Sequence[str], *, by: str | None = None,
              draws: bool | None = None) -> FitRows:
    """What the fit clusters (:class:`~mechanism.analysis._strategies.features.FitRows`) from the rendered
    table, its distinct rows, each row's distinct row and the first row holding each, and the
    fitted vocabulary; ``draws`` whether a question's trajectories are draws (None: read on the
    rendered tools)."""
    moves = [str(m) for m in traj["moves"].gather(first).to_list()]
    arm_codes = np.unique(runs["arm"].cast(pl.String).to_numpy(), return_inverse=True)[1].ravel()
    arm_counts = np.zeros((len(uniq), int(arm_codes.max()) + 1), dtype=np.int64)
    np.add.at(arm_counts, (inverse, arm_codes), 1)
    tools = traj["tools"].gather(first).to_list()
    questions = np.unique(runs["question_id"].cast(pl.String).to_numpy(), return_inverse=True)[1].ravel()
    draws = episodes_are_draws(traj["tools"].to_list(), questions) if draws is None else draws
    # a policy's habit on a question would pass for the question's tools, and their plans be one
    task = task_tools(traj["tools"].to_list(), questions) if draws else frozenset()
    # a batch of one tool's calls sent in one message is a step of its own (the plan of a
    # planner that sends its moves four at a time is not the one-at-a-time plan of a greedy one)
    plans = [tool_plan(batched_tools(t, m)) for t, m in zip(tools, moves)]
    cut_plans = [task_plan(plan, task) for plan in plans]
    # the lines no strategy crosses: calling tools or not (the empty plan, as the cut reads it), and a declared kind
    blocks = (plan_codes(cut_plans) < 0).astype(np.int64)
    if by is not None:  # a plan is a plan of its kind: no cut, join or task test crosses kinds
        kind_of = kind_of_rows(runs, by)
        kinds = [kind_of[i] for i in first]
        plans, cut_plans = ([f"[{k}] {p}" if p else p for k, p in zip(kinds, ps)] for ps in (plans, cut_plans))
        blocks += 2 * np.unique(np.array(kinds, dtype=object), return_inverse=True)[1].ravel()
    return FitRows(
        plans=cut_plans, tool_plans=plans, task=task, features=uniq,
        presence=presence_matrix(traj["tokens"].gather(first).to_list(), vocabulary), blocks=blocks,
        counts=np.bincount(inverse, minlength=len(uniq)).astype(np.int64),
        renderings=[str(r) for r in traj["rendering"].gather(first).to_list()], moves=moves,
        questions=questions, row_of=inverse, arm_counts=arm_counts,
        draws=draws,
        steps=[tuple(step_labels(m.split(" > "), [t for t in (tl or "").split(" > ") if t]))
               for m, tl in zip(moves, tools)])


def fit_and_place(fit_rows: pl.DataFrame, runs: pl.DataFrame, *, map_xy: bool = True,
                  **params: Any) -> tuple[StrategySpace, Placement]:
    """Fit a :class:`StrategySpace` on ``fit_rows`` and :meth:`~StrategySpace.place` ``runs``
    (which may contain them), embedding every distinct trajectory once: without a ``cache_dir``
    in ``params``, a temporary one carries the fit's embeddings over to the placement and is
    removed afterwards (the returned space then has no cache)."""
    if params.get("cache_dir") is not None:
        space = StrategySpace(**params).fit(fit_rows)
        return space, space.place(runs, map_xy=map_xy)
    with tempfile.TemporaryDirectory(prefix="mechanism-cache-") as tmp:
        space = StrategySpace(**{**params, "cache_dir": tmp}).fit(fit_rows)
        placement = space.place(runs, map_xy=map_xy)
    # the space is handed over without the removed folder (its embedder pointed there)
    space.set_params(cache_dir=None).__dict__.pop("_embedder_obj", None)
    return space, placement
