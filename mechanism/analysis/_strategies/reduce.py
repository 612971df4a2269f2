"""UMAP reductions of the joined space: for clustering (``cluster_on="umap"``) and for the 2-D
strategy map, seeded and cached on disk (:mod:`mechanism.core.cachefile`), and the placement of new
rows by their nearest training rows' coordinates.

Why UMAP serves the map and, on request only, the clustering: UMAP scales every point's
neighbourhood to its own nearest neighbour, so a distinct rendering far from the rest (the
no-search episodes, say) is glued to whatever lies nearest.
"""
from __future__ import annotations

import json
import sys
import warnings
from collections import OrderedDict
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from mechanism.core.cachefile import digest, read_array, write_array
from mechanism.core.progress import import_tqdm_quietly

_REDUCTION_FORMAT = 2  # 2: a mechanism.core.cachefile entry
# Map coordinates of the spaces drawn in this process, by the rows and settings they come from:
# a report draws one map several times, and the estimator never stores what it draws.
_MAP_MEMO: OrderedDict[str, np.ndarray] = OrderedDict()
_MAP_MEMO_SIZE = 8


_KEPT_COMPILED: set[str] = set()


def keep_compiled(packages: tuple[str, ...]) -> None:
    """Switch numba's on-disk cache on for the compiled functions of ``packages`` that were
    declared without it.

    Why: umap-learn compiles most of its functions without ``cache=True``, so every new process
    spent 7-8 s compiling them again for a map of 300 rows (most of a report's time on a few
    hundred episodes). Numba keys each entry by the function's source file, its modification
    time and its signature, so an upgraded package compiles afresh; where no folder can hold the
    cache (a read-only install and no ``NUMBA_CACHE_DIR``), a function stays as it was.
    """
    from numba.core.caching import NullCache  # noqa: PLC0415 - numba: imported by umap-learn, only with it
    from numba.core.dispatcher import Dispatcher  # noqa: PLC0415 - numba: as above

    for name, module in list(sys.modules.items()):
        if name in _KEPT_COMPILED or name.split(".")[0] not in packages or module is None:
            continue
        _KEPT_COMPILED.add(name)
        for obj in list(vars(module).values()):
            if isinstance(obj, Dispatcher) and isinstance(obj._cache, NullCache):
                try:
                    obj.enable_caching()
                except RuntimeError:  # numba found no writable place for this file's cache
                    continue


def umap_version() -> str:
    return version("umap-learn")


def umap_coordinates(uniq: np.ndarray, counts: np.ndarray, n_components: int, *, weighted: bool = True,
                     n_neighbors: int, min_dist: float, resolution: float, max_points: int, seed: int,
                     cache: Path | None = None) -> np.ndarray:
    """UMAP coordinates of the distinct rows (seeded; started from random or principal
    component positions because the spectral start varies between runs when the neighbour
    graph is degenerate).

    ``weighted=False`` (the map) embeds each distinct row once, started from its principal
    components, with edges longer than twice ``resolution`` cut (so a row unlike any other is
    not glued to its nearest neighbour), which shows the shape of the space. For clustering
    (``weighted=True``) counts matter: UMAP takes no weights and scales each point's
    neighbourhood to its own nearest neighbour, so a lone distinct row would be glued to
    whatever is nearest. Rows are therefore repeated by count (scaled down to at most
    ``max_points``, each at least once, with a seeded jitter of 0.001) and a row's
    coordinates are the mean over its copies.
    """
    m = len(uniq)
    scale = min(1.0, max_points / float(counts.sum()))
    reps = np.maximum(1, np.round(counts * scale)).astype(np.int64)
    if not weighted:
        reps = np.ones(m, dtype=np.int64)
    total = int(reps.sum())
    if m < 2 or total <= n_components + 2:
        # Too few points for a neighbour graph: PCA keeps the geometry linear.
        from sklearn.decomposition import PCA  # noqa: PLC0415 - scikit-learn: about a second to import, only in the steps that use it

        if m < 2:
            return np.zeros((m, n_components))
        d = min(n_components, m, uniq.shape[1])
        out = PCA(n_components=d, random_state=seed).fit_transform(uniq)
        return np.pad(out, ((0, 0), (0, n_components - d)))
    params = {"n_components": n_components, "n_neighbors": min(n_neighbors, total - 1),
              "weighted": weighted, "resolution": float(resolution),
              "min_dist": min_dist, "random_state": seed, "umap": umap_version()}
    key = digest(uniq.tobytes() + reps.tobytes() + json.dumps(params, sort_keys=True).encode())[:32]
    meta = {"format": _REDUCTION_FORMAT}
    if cache is not None:
        hit = read_array(cache / f"{key}.npy", meta, dtype=np.float64, shape=(m, n_components))
        if hit is not None:
            return hit[0]
    out = _fit_umap(uniq, reps, params, weighted=weighted, seed=seed)
    if cache is not None:
        write_array(cache / f"{key}.npy", out.astype(np.float64), meta)
    return out


def _fit_umap(uniq: np.ndarray, reps: np.ndarray, params: dict[str, Any], *, weighted: bool,
              seed: int) -> np.ndarray:
    import_tqdm_quietly()
    import umap  # noqa: PLC0415 - umap-learn and numba: seconds to import, only when a map is made

    keep_compiled(("umap", "pynndescent"))
    m, n_components = len(uniq), params["n_components"]
    expanded = np.repeat(uniq, reps, axis=0).astype(np.float64)
    owner = np.repeat(np.arange(m), reps)
    if weighted:  # copies spread by a seeded jitter far below any real difference
        expanded += np.random.default_rng(seed).normal(scale=1e-3, size=expanded.shape)
    init: Any = "random"
    if not weighted:
        # Start from the principal components so that far-apart rows (no search, say) stay
        # apart: UMAP alone ties each row to its nearest neighbour however far it is.
        from sklearn.decomposition import PCA  # noqa: PLC0415 - scikit-learn: about a second to import, only in the steps that use it

        start = PCA(n_components=n_components, svd_solver="full").fit_transform(expanded)
        init = 10.0 * start / max(float(np.abs(start).max()), 1e-12)
    extra = {} if weighted else {"disconnection_distance": 2.0 * params["resolution"]}
    reducer = umap.UMAP(n_components=n_components, n_neighbors=params["n_neighbors"],
                        min_dist=params["min_dist"] if weighted else 0.1, init=init,
                        random_state=seed, n_jobs=1, **extra)
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
    return out


def map_coordinates(uniq: np.ndarray, counts: np.ndarray, *, compute: bool = True, **settings: Any
                    ) -> np.ndarray | None:
    """The 2-D map of the distinct training rows (:func:`umap_coordinates` with
    ``weighted=False``), computed once per process for the same rows and settings; with
    ``compute=False`` only what was computed already (or ``None``)."""
    fields = {k: v for k, v in settings.items() if k != "cache"}
    key = digest(np.ascontiguousarray(uniq).tobytes() + np.ascontiguousarray(counts).tobytes()
                 + json.dumps(fields, sort_keys=True, default=str).encode())
    if key in _MAP_MEMO:
        _MAP_MEMO.move_to_end(key)
        return _MAP_MEMO[key]
    if not compute:
        return None
    out = umap_coordinates(uniq, counts, 2, weighted=False, **settings).astype(np.float32)
    out.setflags(write=False)
    _MAP_MEMO[key] = out
    while len(_MAP_MEMO) > _MAP_MEMO_SIZE:
        _MAP_MEMO.popitem(last=False)
    return out


def interpolate(coords: np.ndarray, dist: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Inverse-distance-weighted mean of neighbours' coordinates; exact for a seen row."""
    if not len(idx):
        return np.zeros((0, coords.shape[1]))
    w = 1.0 / np.maximum(dist, 1e-9)
    exact = dist[:, :1] <= 1e-6
    w = np.where(exact, (np.arange(w.shape[1]) == 0).astype(float), w)
    w = w / w.sum(axis=1, keepdims=True)
    return np.einsum("nk,nkd->nd", w, coords[idx].astype(np.float64))
