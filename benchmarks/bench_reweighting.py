"""Speed of the reweighting statistics against straightforward reference implementations.

Compared side by side in one run, on the same synthetic table and the same random draws:

- **bootstrap of the Kitagawa split**: ``mechanism.analysis.compare.reweighting`` (per-question
  count arrays, all replicates in one ``einsum``) vs a reference that, per replicate,
  gathers the resampled questions' rows with polars and recomputes shares, rates and the
  split over question x strategy strata (what one writes without the count trick). Both use the same bootstrap weights,
  and the script checks that their replicate values agree to 1e-9.
- **within-question permutation test**: ``permutation_test`` (all permutations of a batch
  by one ``argsort`` of question index + uniform noise) vs a reference that shuffles each
  question's arm labels with ``rng.permutation`` in a Python loop per permutation.

Run: ``python benchmarks/bench_reweighting.py [--questions 1000] [--samples 16]``; prints a
markdown table.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import polars as pl
from harness import report

from mechanism.analysis.compare import js_divergence, kitagawa_split, permutation_test, reweighting, stream
from mechanism.core.resample import question_bootstrap_weights


def make_table(n_questions: int, n_samples: int, n_strategies: int, seed: int) -> tuple[pl.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    rows = 2 * n_questions * n_samples
    arm = np.repeat(np.array(["base", "rl"]), n_questions * n_samples)
    q = np.tile(np.repeat(np.arange(n_questions), n_samples), 2)
    labels = np.where(arm == "base", rng.integers(0, n_strategies, rows),
                      np.minimum(rng.integers(0, n_strategies, rows), rng.integers(0, n_strategies, rows)))
    correct = rng.random(rows) < 0.2 + 0.6 * labels / n_strategies
    runs = pl.DataFrame({"arm": arm, "question_id": [f"q{i:06d}" for i in q], "correct": correct})
    return runs, labels


def reference_bootstrap(runs: pl.DataFrame, labels: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per replicate: repeat each question's rows by its draw count, weigh each trajectory
    1 / its arm's samples of its question, and split over (question, strategy) strata."""
    frame = runs.with_columns(pl.Series("s", labels), (1.0 / pl.len().over("arm", "question_id")).alias("u"))
    questions = sorted(frame["question_id"].unique().to_list())
    cells = frame.select("question_id", "s").unique().sort("question_id", "s").with_row_index("cell")
    out = np.empty((weights.shape[0], 2))
    for b, w in enumerate(weights):
        draw = pl.DataFrame({"question_id": questions, "w": w}).filter(pl.col("w") > 0)
        sample = frame.join(draw, on="question_id").join(cells, on=["question_id", "s"])
        agg = sample.group_by("arm", "cell").agg(n=(pl.col("w") * pl.col("u")).sum(),
                                                 c=(pl.col("w") * pl.col("u") * pl.col("correct")).sum())
        n = np.zeros((2, cells.height))
        c = np.zeros((2, cells.height))
        for row in agg.iter_rows(named=True):
            a = 0 if row["arm"] == "base" else 1
            n[a, row["cell"]], c[a, row["cell"]] = row["n"], row["c"]
        split = kitagawa_split(n[0], c[0], n[1], c[1])
        out[b] = split["composition_total"], split["within_total"]
    return out


def reference_permutation(q_idx: np.ndarray, labels: np.ndarray, treated: np.ndarray, n_permutations: int,
                          seed: int) -> float:
    rng = np.random.default_rng(seed)
    n_s = int(labels.max()) + 1
    groups = [np.flatnonzero(q_idx == q) for q in np.unique(q_idx)]
    observed = float(js_divergence(np.bincount(labels[~treated], minlength=n_s).astype(float),
                                   np.bincount(labels[treated], minlength=n_s).astype(float)))
    exceed = 0
    for _ in range(n_permutations):
        perm = treated.copy()
        for g in groups:
            perm[g] = treated[g][rng.permutation(g.size)]
        stat = js_divergence(np.bincount(labels[~perm], minlength=n_s).astype(float),
                             np.bincount(labels[perm], minlength=n_s).astype(float))
        exceed += stat >= observed - 1e-12
    return (1 + exceed) / (1 + n_permutations)


def timed(fn, repeat: int = 1):
    best = float("inf")
    value = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t0)
    return best, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--strategies", type=int, default=8)
    parser.add_argument("--n-boot", type=int, default=200)
    parser.add_argument("--n-permutations", type=int, default=200)
    args = parser.parse_args()
    runs, labels = make_table(args.questions, args.samples, args.strategies, seed=0)
    rows = []

    # bootstrap: the module (with its permutation test off) vs the reference on the same weights
    t_mod, rw = timed(lambda: reweighting(runs, labels, base="base", treated="rl", n_boot=args.n_boot,
                                          n_permutations=0, random_state=0), repeat=3)
    weights = question_bootstrap_weights(args.questions, args.n_boot, stream(0, "bootstrap"))
    t_ref, ref = timed(lambda: reference_bootstrap(runs, labels, weights))
    diff = max(np.abs(ref[:, 0] - rw.replicates["composition_total"]).max(),
               np.abs(ref[:, 1] - rw.replicates["within_total"]).max())
    assert diff < 1e-9, diff
    rows.append(("bootstrap of composition/within", f"{args.n_boot} replicates", t_ref, t_mod,
                 f"max |diff| {diff:.1e}"))

    # permutation test
    q_idx = np.tile(np.repeat(np.arange(args.questions), args.samples), 2)
    treated = np.repeat([False, True], args.questions * args.samples)
    t_mod, p_mod = timed(lambda: permutation_test(q_idx, labels, treated, n_permutations=args.n_permutations,
                                                  random_state=0), repeat=3)
    t_ref, p_ref = timed(lambda: reference_permutation(q_idx, labels, treated, args.n_permutations, seed=0))
    rows.append(("within-question permutation test", f"{args.n_permutations} permutations", t_ref, t_mod,
                 f"p = {p_mod:.4f} (module), {p_ref:.4f} (reference; different draws)"))

    report(__file__, [{"task": task, "size": size, "reference (s)": round(ref_s, 3),
                       "mechanism (s)": round(mod_s, 3), "speed-up": f"{ref_s / mod_s:.1f}x", "check": check}
                      for task, size, ref_s, mod_s, check in rows],
           title="Reweighting: measured speed", params=vars(args),
           notes=f"{runs.height} trajectories ({args.questions} questions x {args.samples} samples x 2 arms), "
                 f"{args.strategies} strategies; best of 3 for the module, 1 run for the reference.")

if __name__ == "__main__":
    main()
