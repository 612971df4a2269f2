"""Nearest-base-neighbour statistics: distinct points with counts against the row-wise search.

``mechanism reweighting --space`` adds each treated trajectory's distance to its nearest
base trajectory and each base trajectory's distance to its nearest other one. The old
function searched every row (scikit-learn's ``NearestNeighbors`` over the joined
strategy space of ~400 dimensions, where it falls back to brute force), so its cost grew
with the square of the rows: 10.2 s of 10.9 s at 40,000 rows, 7 min 48 s at 256,000.
The new one searches the distinct points and gathers per row. The distances agree to
rounding; the far share can differ: where most base rows repeat, the 95th percentile of
base-to-base distances is 0, and the old search's rounding (about 1e-8 for two equal points,
from ``|x|^2 - 2 x.y + |y|^2``) then decided which treated rows counted as far. The new one
computes the distance to the neighbour found from differences, so equal points are at 0.

Input: simulated trajectories (``--questions`` x ``--samples`` x 2 arms), a strategy space
fitted on them (MiniLM), and its coordinates; the smaller case is the first
``--small-samples`` samples of each question. Both functions run in this process on the
same arrays; the table shows their times and the largest difference of their outputs.

Run: ``python benchmarks/bench_scale_neighbours.py [--questions 1000] [--samples 128]
[--small-samples 20] [--skip-old-large] [--old-limit 1800]``; prints a markdown table.
"""
from __future__ import annotations

import argparse
import math
import signal
import time

import numpy as np
import polars as pl
from harness import report

from mechanism.analysis.compare import _neighbour_distances, stream
from mechanism.core.resample import percentile_interval, question_bootstrap_weights


def old_neighbour_distances(coords: np.ndarray, is_t: np.ndarray, q_idx: np.ndarray, n_q: int,
                            ci: float | None, n_boot: int, random_state: int | None) -> pl.DataFrame:
    """The reference: a nearest-neighbour search over every row, kept verbatim to time against."""
    from sklearn.neighbors import NearestNeighbors

    base_xy = coords[~is_t]
    treat_xy = coords[is_t]
    nn = NearestNeighbors(n_neighbors=2).fit(base_xy)
    d_base = nn.kneighbors(base_xy, n_neighbors=2)[0][:, 1]  # column 0 is the point itself
    d_treat = nn.kneighbors(treat_xy, n_neighbors=1)[0][:, 0]
    threshold = float(np.quantile(d_base, 0.95))
    far = (d_treat > threshold).astype(float)
    q_b, q_t = q_idx[~is_t], q_idx[is_t]
    sums = {
        "base_sum": np.bincount(q_b, weights=d_base, minlength=n_q),
        "base_n": np.bincount(q_b, minlength=n_q).astype(float),
        "treat_sum": np.bincount(q_t, weights=d_treat, minlength=n_q),
        "treat_far": np.bincount(q_t, weights=far, minlength=n_q),
        "treat_n": np.bincount(q_t, minlength=n_q).astype(float),
    }

    def stats(w: np.ndarray) -> dict[str, np.ndarray]:
        agg = {k: w @ v for k, v in sums.items()}
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_b = agg["base_sum"] / agg["base_n"]
            mean_t = agg["treat_sum"] / agg["treat_n"]
            return {"nn_distance_base_to_base": mean_b, "nn_distance_treated_to_base": mean_t,
                    "nn_distance_ratio": mean_t / mean_b, "far_share": agg["treat_far"] / agg["treat_n"]}

    point = stats(np.ones((1, n_q)))
    reps = stats(question_bootstrap_weights(n_q, n_boot, stream(random_state, "bootstrap")).astype(float)) \
        if ci is not None and n_boot > 0 else None
    rows = []
    for name, value in point.items():
        lo, hi = (percentile_interval(reps[name], ci) if reps is not None else (math.nan, math.nan))
        rows.append((name, float(value[0]), float(lo), float(hi)))
    rows.append(("far_threshold_base_q95", threshold, math.nan, math.nan))
    return pl.DataFrame(rows, schema={"quantity": pl.String, "estimate": pl.Float64,
                                      "ci_low": pl.Float64, "ci_high": pl.Float64}, orient="row")


class _TooLong(Exception):
    pass


def _stop(signum, frame):
    raise _TooLong


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=1000)
    ap.add_argument("--samples", type=int, default=128)
    ap.add_argument("--small-samples", type=int, default=20)
    ap.add_argument("--skip-old-large", action="store_true", help="do not run the old function on the large case")
    ap.add_argument("--old-limit", type=int, default=1800, help="seconds the old function may run per case")
    args = ap.parse_args()

    from mechanism.analysis.strategy_space import StrategySpace
    from mechanism.datasets.simulation import simulate

    t = time.perf_counter()
    runs = simulate(n_questions=args.questions, n_samples=args.samples, arms=("base", "rl"), random_state=0,
                    progress=False).runs
    space = StrategySpace(random_state=0, progress=False).fit(runs)
    coords = space.coordinates(runs)
    setup_s = time.perf_counter() - t

    columns = ("rows", "dims", "distinct base points", "old: search over rows (s)", "new: distinct points (s)",
               "speed-up", "max abs difference of the distances", "old far share @ threshold",
               "new far share @ threshold")
    table = []
    cases = [("small", runs["sample_id"].to_numpy() < args.small_samples), ("large", np.ones(runs.height, bool))]
    for name, keep in cases:
        sub = runs.filter(pl.Series(keep))
        xy = coords[keep]
        is_t = (sub["arm"] == "rl").to_numpy()
        _, q_idx = np.unique(sub["question_id"].to_numpy(), return_inverse=True)
        n_q = int(q_idx.max()) + 1
        t = time.perf_counter()
        new = _neighbour_distances(xy, is_t, q_idx, n_q, 0.95, 1000, 0)
        new_s = time.perf_counter() - t
        old_s, diff = math.nan, math.nan
        new_far = f"{new['estimate'][3]:.3f} @ {new['estimate'][4]:.1e}"
        old_txt, speed, diff_txt = "not run", "-", f"- | - | {new_far}"
        if not (name == "large" and args.skip_old_large):
            signal.signal(signal.SIGALRM, _stop)
            signal.alarm(args.old_limit)
            t = time.perf_counter()
            try:
                old = old_neighbour_distances(xy, is_t, q_idx, n_q, 0.95, 1000, 0)
                old_s = time.perf_counter() - t
                dist = [0, 1, 2]  # the three distance rows; far share and threshold are shown apart
                diff = float(np.nanmax(np.abs(new.select("estimate", "ci_low", "ci_high").to_numpy()[dist]
                                              - old.select("estimate", "ci_low", "ci_high").to_numpy()[dist])))
                old_far = f"{old['estimate'][3]:.3f} @ {old['estimate'][4]:.1e}"
                old_txt, speed = f"{old_s:.1f}", f"{old_s / new_s:.0f}x"
                diff_txt = f"{diff:.1e} | {old_far} | {new_far}"
            except _TooLong:
                old_txt, speed = f"> {args.old_limit} (stopped)", f"> {args.old_limit / new_s:.0f}x"
            finally:
                signal.alarm(0)
        n_distinct = len(np.unique(np.ascontiguousarray(xy[~is_t]), axis=0))
        cells = [sub.height, xy.shape[1], n_distinct, old_txt, round(new_s, 2), speed, *diff_txt.split(" | ")]
        table.append(dict(zip(columns, cells)))
    report(__file__, table, params=vars(args), title="Nearest-base-neighbour statistics",
           notes=f"setup (simulate, fit MiniLM space, coordinates): {setup_s:.1f} s")

if __name__ == "__main__":
    main()
