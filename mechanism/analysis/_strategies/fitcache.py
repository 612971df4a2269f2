"""A fit's clustering, and its cache (``cache_dir/fits``): one :mod:`mechanism.core.cachefile` JSON
entry per clustering, keyed by the distinct rows (move tokens and embedding), their counts, first
renderings and move sequences, the questions and arms behind them, the parameters, the embedding
model, and the code and library versions that cluster them. An entry shared through
``--cache-dir`` is untrusted: any bad one is deleted and rebuilt.
"""
from __future__ import annotations

import functools
import json
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from mechanism.analysis._strategies.clustering import (
    cluster,
    core,
    distances,
    families,
    medoid_rows,
    medoid_threshold,
    reduced,
    renumber,
)
from mechanism.analysis._strategies.describe import summaries
from mechanism.analysis._strategies.endings import endings
from mechanism.analysis._strategies.features import FitRows, plan_codes, plan_profiles
from mechanism.analysis._strategies.mixture import refine_fit
from mechanism.analysis._strategies.stability import fit_stability
from mechanism.analysis._strategies.tasks import task_variants
from mechanism.core.cachefile import code_id, digest, discard, parse_json, read_checked, write_checked

FORMAT = 1


def fit_clusters(p: Any, rows: FitRows) -> dict[str, Any]:
    """Cluster the distinct training rows: labels, outlier threshold, what describes each
    strategy (medoid and keywords), stability and seed agreement - everything that depends
    only on them. ``p`` holds the parameters, ``random_state`` the fit's int seed."""
    uniq, counts = rows.features, rows.counts
    out: dict[str, Any] = {}
    space = reduced(p, uniq, counts)
    if p.cluster_on == "umap":
        out["train_space"] = space.astype(np.float32)
    core_dist = None
    if p.method == "agglomerative" and p.cluster_on == "features" and len(space) >= 2:
        # the clustering and the stability resamples use the same matrix: compute it once
        core_dist = distances(space[core(counts)])
    cut: dict[str, Any] = {}

    def join(labels: np.ndarray, index: np.ndarray) -> np.ndarray:
        # one strategy on two kinds of task, joined before min_share absorbs small strategies
        cut["index"], cut["labels"] = index, labels
        joined, cut["variants"] = task_variants(labels, counts[index], rows, index)
        return joined

    # only the tree joins small strategies across plans (k-means and HDBSCAN never read them)
    profiles = plan_profiles(rows.plans) if p.plans == "apart" and p.method == "agglomerative" else None
    raw, silhouette = cluster(p, space, counts, core_dist, plans=plan_codes(rows.plans), join=join, profiles=profiles,
                              arms=rows.arm_counts)
    family, merges = families(p, raw, counts, rows)
    # and again once min_share and the families have gathered each strategy's variants (more
    # trajectories per strategy: a test that can see what the cut's fragments could not)
    merged, after = task_variants(family, counts, rows)
    # strategies that differ only in a last action the agent picks on what it saw
    ended, swaps = endings(merged, counts, rows)
    # each trajectory to the strategy whose token profile makes it likeliest
    labels = renumber(refine_fit(p, ended, counts, rows), space, counts, np.array(rows.renderings, dtype=object))
    out["optional_steps"] = _by_final(merges, labels, raw, counts, "joined", "step")
    tasks: dict[int, list[str]] = {}
    # each join's final strategy: where most of its kept strategy went, as held when it was tested
    tested = ([(labels[cut["index"]], cut["labels"], counts[cut["index"]], cut["variants"])] if "variants" in cut
              else [])
    for final_of, held, weights, records in [*tested, (labels, family, counts, after)]:
        for rec in records:
            if rec["merged"] and all(rec["blocks"]):  # fragments of one plan swap no tool
                final = _final(final_of, held == rec["kept"], weights)
                tasks.setdefault(final, []).append(" / ".join(rec["blocks"]))
    out["task_variants"] = {c: sorted(set(v)) for c, v in tasks.items()}
    out["endings"] = _by_final(swaps, labels, merged, counts, "kept", "endings")
    if silhouette is not None:
        out["silhouette"] = silhouette
    out["labels"] = labels
    out["threshold"] = medoid_threshold(uniq, counts, labels, medoid_rows(uniq, counts, labels),
                                        resolution=p.resolution)
    out["summaries"] = summaries(rows.renderings, counts, labels, space)
    out["stability"], out["seed_agreement"] = fit_stability(p, rows, labels, core_dist, profiles)
    return out


def _by_final(records: list[dict], labels: np.ndarray, held: np.ndarray, counts: np.ndarray, side: str,
              field: str) -> dict[int, list[str]]:
    """The distinct ``field`` of the joins made (``records`` with ``merged``), under each final
    strategy (``labels``): where most of the record's ``side`` strategy went (``held``: the
    labels the join was made on)."""
    out: dict[int, set[str]] = {}
    for rec in records:
        if rec["merged"]:
            out.setdefault(_final(labels, held == rec[side], counts), set()).add(rec[field])
    return {c: sorted(v) for c, v in out.items()}


def _final(labels: np.ndarray, members: np.ndarray, counts: np.ndarray) -> int:
    """The final strategy holding most of ``members``' trajectories (the lowest on ties): the
    mixture refinement may move some members of a joined strategy elsewhere."""
    finals, index = np.unique(labels[members], return_inverse=True)
    return int(finals[np.bincount(index.ravel(), weights=counts[members]).argmax()])


@functools.lru_cache(maxsize=4)
def source_id(folder: Path = Path(__file__).parent) -> str:
    """Digest of the estimator's module and of every module of :mod:`mechanism.analysis._strategies`
    (features, clustering, stability, descriptions): a cached clustering is valid only for the
    code that made it."""
    return code_id([folder.parent / "strategy_space.py", *sorted(folder.glob("*.py"))])


def fit_key(p: Any, rows: FitRows, *, params: dict[str, Any], model: str, vocabulary: list[str]) -> str:
    """Identity of a clustering (see the module docstring)."""
    libs = {"scikit-learn": version("scikit-learn"), "numpy": np.__version__}
    if p.cluster_on == "umap":
        libs["umap-learn"] = version("umap-learn")
    header = {"format": FORMAT, "params": params, "model": model, "code": source_id(), "libs": libs,
              "shape": list(rows.features.shape), "vocabulary": vocabulary}
    parts = [json.dumps(header, sort_keys=True).encode(),
             np.ascontiguousarray(rows.features, dtype=np.float32).tobytes(),
             np.ascontiguousarray(rows.counts, dtype=np.int64).tobytes(),
             np.ascontiguousarray(rows.questions, dtype=np.int64).tobytes(),
             np.ascontiguousarray(rows.row_of, dtype=np.int64).tobytes(),
             json.dumps([rows.renderings, rows.moves]).encode("utf-8", "surrogatepass"),
             json.dumps(rows.steps).encode("utf-8", "surrogatepass"),
             json.dumps(rows.plans).encode("utf-8", "surrogatepass"),
             np.ascontiguousarray(rows.arm_counts, dtype=np.int64).tobytes(),
             np.ascontiguousarray(rows.presence.indptr, dtype=np.int64).tobytes(),
             np.ascontiguousarray(rows.presence.indices, dtype=np.int64).tobytes(),
             np.ascontiguousarray(rows.blocks, dtype=np.int64).tobytes()]
    return digest(b"\0".join(len(part).to_bytes(8, "little") + part for part in parts))[:40]


def fit_cached(p: Any, rows: FitRows, *, folder: Path | None, **key: Any) -> tuple[dict[str, Any], bool]:
    """:func:`fit_clusters`, served from ``folder`` when this exact clustering was done before;
    and whether a corrupt or inconsistent entry was deleted and recomputed."""
    if folder is None:
        return fit_clusters(p, rows), False
    path = folder / f"{fit_key(p, rows, **key)}.json"
    data = read_checked(path, {"format": FORMAT})
    rebuilt = False
    if data is not None:
        try:  # a cache shared through --cache-dir is untrusted: any bad entry is rebuilt
            return decode(parse_json(data, name=path.name), len(rows.features), p.n_components), False
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError):
            discard(path)
            rebuilt = True
    fitted = fit_clusters(p, rows)
    record = {"labels": fitted["labels"].tolist(), "threshold": fitted["threshold"],
              "summaries": fitted["summaries"],
              "stability": {str(k): v for k, v in fitted["stability"].items()},
              "seed_agreement": fitted["seed_agreement"],
              "silhouette": ({str(k): v for k, v in fitted["silhouette"].items()}
                             if "silhouette" in fitted else None),
              "train_space": fitted["train_space"].tolist() if "train_space" in fitted else None,
              "optional_steps": {str(k): v for k, v in fitted.get("optional_steps", {}).items()},
              "task_variants": {str(k): v for k, v in fitted.get("task_variants", {}).items()},
              "endings": {str(k): v for k, v in fitted.get("endings", {}).items()}}
    write_checked(path, json.dumps(record).encode("utf-8", "surrogatepass"), {"format": FORMAT})
    return fitted, rebuilt


def _finite(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
        raise ValueError("a cached number is not a finite number")
    return float(value)


def decode(record: dict[str, Any], m: int, n_components: int) -> dict[str, Any]:
    """A cached clustering, checked against the ``m`` distinct rows it must describe (any failure
    is a :class:`ValueError`, :class:`TypeError` or :class:`KeyError`, and the entry is rebuilt)."""
    if not isinstance(record["labels"], list) or not all(type(v) is int for v in record["labels"]):
        raise ValueError("cached labels are not integers")
    labels = np.asarray(record["labels"], dtype=np.int64)
    if labels.shape != (m,):
        raise ValueError("cached labels do not match the distinct rows")
    described = [{"strategy": int(d["strategy"]), "typical_member": str(d["typical_member"]),
                  "keywords": [str(k) for k in d["keywords"]]} for d in record["summaries"]]
    found = sorted(set(labels.tolist()) - {-1})
    if found != list(range(len(found))) or sorted(d["strategy"] for d in described) != sorted(set(labels.tolist())):
        raise ValueError("cached summaries do not match the labels")
    out: dict[str, Any] = {"labels": labels, "threshold": _finite(record["threshold"]), "summaries": described,
                           "stability": {int(k): _finite(v) for k, v in dict(record["stability"]).items()},
                           "seed_agreement": _finite(record["seed_agreement"])}
    out["optional_steps"] = {int(k): [str(x) for x in v] for k, v in dict(record["optional_steps"]).items()}
    out["task_variants"] = {int(k): [str(x) for x in v] for k, v in dict(record["task_variants"]).items()}
    out["endings"] = {int(k): [str(x) for x in v] for k, v in dict(record["endings"]).items()}
    if not set(out["optional_steps"]) | set(out["task_variants"]) | set(out["endings"]) <= set(found):
        raise ValueError("cached optional steps, task variants or endings name unknown strategies")
    if record.get("silhouette") is not None:
        out["silhouette"] = {int(k): _finite(v) for k, v in dict(record["silhouette"]).items()}
    if record.get("train_space") is not None:
        space = np.asarray(record["train_space"], dtype=np.float32)
        if space.shape != (m, n_components) or not np.isfinite(space).all():
            raise ValueError("cached UMAP coordinates do not match the distinct rows")
        out["train_space"] = space
    return out
