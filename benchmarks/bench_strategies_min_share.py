"""Which ``min_share``: the default fit at several minimum strategy shares, world by world,
against the floor, chosen leaving one world out (``--parameter min_share_tested``: the same for
the upper end of the tested band, where a group joins its nearest only if the arms take the two
alike; a value at ``min_share`` turns the band off).

For every world and seed of ``bench_strategies_floor.py`` (the same loader, baselines and
seeds), the adjusted Rand index of ``mx.StrategySpace`` with its defaults but ``min_share``
against the planted strategies, and the floor (the better of rounds alone and TF-IDF of
tool-name n-grams, k-means at the planted k). Each world's ``min_share`` is then chosen on the
other worlds alone, by the rule of ``bench_strategies_methods.py``: the value with the fewest
other worlds below their floor, ties by mean ARI on them. The value every fold chooses most
often is the default's.

Run: ``python benchmarks/bench_strategies_min_share.py [--parameter min_share|min_share_tested]
[--values 0.05 0.07 0.08 0.09 0.1] [--embedder None] [--seeds 0 1 2] [--worlds a b ...] [--n 60]``.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_rand_score

import mechanism as mx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness
from bench_strategies_floor import baseline_rounds, baseline_tfidf, load_world, worlds
from bench_strategies_methods import add_world_arguments, leave_one_out_rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parameter", choices=["min_share", "min_share_tested"], default="min_share")
    ap.add_argument("--values", nargs="*", type=float, default=[0.05, 0.07, 0.08, 0.09, 0.1])
    add_world_arguments(ap)
    args = ap.parse_args(argv)
    embedder = None if args.embedder in (None, "None", "none") else args.embedder
    names = args.worlds or worlds()
    columns = {v: f"{args.parameter} {v:g}" for v in args.values}
    t0 = time.perf_counter()
    table: dict[str, dict[str, float]] = {c: {} for c in columns.values()}
    floors: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as cache:  # one embedding cache: each rendering embedded once
        for world in names:
            cells: dict[str, list[float]] = {c: [] for c in (*columns.values(), "floor")}
            for seed in args.seeds:
                runs, truth = load_world(world, seed=seed, n=args.n)
                cells["floor"].append(max(baseline_rounds(runs, truth, seed), baseline_tfidf(runs, truth, seed)))
                for v, c in columns.items():
                    space = mx.StrategySpace(random_state=seed, n_bootstrap=0, progress=False, embedder=embedder,
                                             cache_dir=cache, **{args.parameter: v})
                    cells[c].append(float(adjusted_rand_score(truth, space.fit(runs).labels_)))
            floors[world] = float(np.mean(cells["floor"]))
            for c in columns.values():
                table[c][world] = float(np.mean(cells[c]))
            print(world, {c: round(t[world], 3) for c, t in table.items()}, flush=True)
    rows = leave_one_out_rows(table, floors, names)
    folds = Counter(r["chosen leaving it out"] for r in rows[:len(names)])
    wall = time.perf_counter() - t0
    notes = (f"ARI means over seeds {' '.join(map(str, args.seeds))}, {args.n} questions per world, every other "
             f"parameter the default; floor as in bench_strategies_floor.py. 'chosen leaving it out': the value with "
             f"the fewest other worlds below their floor, ties by mean ARI on them. Folds: "
             f"{', '.join(f'{c} in {k}' for c, k in folds.most_common())}. Wall time {wall:.0f} s.")
    harness.report(__file__, rows,
                   title=f"The default at several {args.parameter}, world by world, embedder {embedder or 'MiniLM'}",
                   notes=notes, params={**vars(args), "embedder": embedder},
                   part=None if args.parameter == "min_share" else args.parameter)


if __name__ == "__main__":
    main()
