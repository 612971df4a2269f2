"""Adjusted Rand index of StrategySpace against the planted strategies of every world.

Worlds: the built-in simulator (``mechanism.datasets.simulation``; its strategies differ in moves since
issue 20, so it is held to the same bar as the others) and the independently written
planted worlds (``mechanism.datasets.worlds``: multi-hop search in Search-R1 tags and in ReAct text,
customer service in OpenAI tool_calls, web shopping in ReAct inside chat messages with
failures retried inside strategies and optional steps, and a data-analyst agent with SQL and
Python tools in OpenAI tool_calls, both written for issue 19). Each is written to its native
file and read back with ``mechanism.read``, as a user would. Prints one table row per world: ARI of the fit,
ARI between two seeds' fits, ARI of the saved space applied to a fresh sample of the same
arms, the number of strategies found / planted, and the ceiling: the ARI of an oracle that
sees only each trajectory's structure (:func:`ceiling`).

Run: ``python benchmarks/bench_strategies_worlds.py [--embedder hashing-256] [--param k=v ...]``;
``--lowo`` prints the leave-one-world-out choice of ``resolution`` and ``min_share``;
``--ceilings`` the ceiling at three grains and the best cut of the fitted tree, seeds 0-2;
``--grains`` the ceiling of the exact call sequence at four grains of a call's description
(what is identifiable at each), mean over seeds 0-2.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_rand_score

import mechanism as mx
from mechanism.datasets.simulation import simulate
from mechanism.datasets.worlds import (
    analyst,
    assistant,
    browser,
    coder,
    gui,
    multihop,
    research,
    service,
    sheet,
    sre,
    toolbench,
    travel,
    webshop,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness


def load(world: str, seed: int, n: int = 60):
    """(runs, planted labels) of one world, read from its native file."""
    if world == "simulated":
        sim = simulate(n_questions=n, n_samples=4, random_state=seed, progress=False)
        return sim.runs, sim.labels_for()
    gen = {"multihop": lambda: multihop(n_questions=n, random_state=seed),
           "multihop_react": lambda: multihop(n_questions=n, random_state=seed, react=True),
           "service": lambda: service(n_questions=n, random_state=seed),
           "webshop": lambda: webshop(n_questions=n, random_state=seed),
           "analyst": lambda: analyst(n_questions=n, random_state=seed),
           "coder": lambda: coder(n_questions=n, random_state=seed),
           "browser": lambda: browser(n_questions=n, random_state=seed),
           "assistant": lambda: assistant(n_questions=n, random_state=seed),
           "travel": lambda: travel(n_questions=n, random_state=seed),
           "research": lambda: research(n_questions=n, random_state=seed),
           "gui": lambda: gui(n_questions=n, random_state=seed),
           "sre": lambda: sre(n_questions=n, random_state=seed),
           "sheet": lambda: sheet(n_questions=n, random_state=seed),
           "toolbench": lambda: toolbench(n_questions=n, random_state=seed)}[world]
    w = gen()
    with tempfile.TemporaryDirectory() as d:
        runs = mx.read(w.write(d), format=w.format)
    return runs, w.labels_for(runs)


def ceiling(runs, truth, by: tuple[str, ...] = ("rendering", "tokens")) -> float:
    """ARI of the best labelling any method that sees only the trajectories' structure can give.

    Trajectories are grouped by their exact masked rendering and move tokens (what
    :func:`mechanism.analysis.segmentation.render` shows of them: two trajectories in one group are
    indistinguishable to :class:`~mechanism.StrategySpace`), and every group gets its majority
    planted strategy (ties by name). Where one group holds trajectories of several planted
    strategies, no method on this input can separate them. ``by`` names the columns of the
    rendered table that define the groups (``("tokens",)``: what the token columns alone show;
    ``("moves",)``: the sequence of move names).
    """
    import polars as pl

    from mechanism.analysis.segmentation import render

    traj = render(runs)
    df = pl.DataFrame({"g": traj.select(pl.concat_str(list(by), separator="\x00"))[:, 0].to_list(),
                       "t": [str(t) for t in truth]})
    majority = (df.group_by("g", "t").len().sort(["g", "len", "t"], descending=[False, True, False])
                .group_by("g", maintain_order=True).first())
    lookup = dict(zip(majority["g"].to_list(), majority["t"].to_list()))
    return float(adjusted_rand_score(df["t"].to_list(), [lookup[g] for g in df["g"].to_list()]))


def best_tree_cut(runs, truth, embedder: str | None) -> tuple[float, int]:
    """(ARI, number of groups) of the best cut of the fit's average-linkage tree over the
    distinct joined rows, the number of groups chosen by looking at the truth: what the
    default distance can give at any resolution, before ``min_share``."""
    from scipy.cluster.hierarchy import fcluster, linkage

    from mechanism.analysis.segmentation import render

    space = mx.StrategySpace(embedder=embedder, n_bootstrap=0, progress=False).fit(runs)
    pair_rows, pair_of_row = space._features(render(runs))
    uniq, inv = np.unique(pair_rows, axis=0, return_inverse=True)
    inv = inv.ravel()[pair_of_row]
    tree = linkage(uniq.astype(np.float64), method="average")
    return max((adjusted_rand_score(truth, fcluster(tree, t=k, criterion="maxclust")[inv]), k)
               for k in range(2, len(uniq)))


def ceilings(embedder: str | None, worlds: list[str], n: int, seeds=(0, 1, 2)) -> None:
    """Per world and seed: the ceiling at three grains and the best cut of the fit's tree."""
    print("| world | seed | distinct renderings | ceiling (rendering + tokens) | ceiling (tokens) | "
          "ceiling (move names) | best tree cut (k) |")
    print("|---|---|---|---|---|---|---|")
    for world in worlds:
        for seed in seeds:
            runs, truth = load(world, seed=seed, n=n)
            from mechanism.analysis.segmentation import render

            distinct = render(runs)["rendering"].n_unique()
            cut, k = best_tree_cut(runs, truth, embedder)
            print(f"| {world} | {seed} | {distinct} | {ceiling(runs, truth):.3f} | "
                  f"{ceiling(runs, truth, ('tokens',)):.3f} | {ceiling(runs, truth, ('moves',)):.3f} | "
                  f"{cut:.3f} ({k}) |", flush=True)


# Grains of one call's description, finest first. "new words" is whether the call adds words
# that are in neither the question nor anything seen before (a rewording with synonyms);
# the scope in three levels tells "most of the question" from "part of it". The move tokens
# (mechanism.analysis.segmentation.move_tokens) keep neither: both vary within strategies in the
# planted multi-hop world.
GRAINS = {
    "every attribute": (True, True),
    "without new words": (False, True),
    "scope whole / partial": (True, False),
    "the move tokens' grain": (False, False),
}


def grain_keys(runs, new_words: bool, three_scopes: bool) -> list[str]:
    """Each trajectory's exact sequence of calls, each described by tool, failure, relation,
    sources and scope at the given grain (the final move last)."""
    import polars as pl

    from mechanism.analysis.segmentation import segment

    moves = segment(runs)
    sources = pl.col("sources")
    if not new_words:
        carried = sources.str.split("+").list.eval(pl.element().filter(pl.element() != "new")).list.join("+")
        sources = pl.when(carried == "").then(sources).otherwise(carried)
    scope = pl.col("scope") if three_scopes else pl.col("scope").replace({"most": "partial", "part": "partial"})
    desc = pl.concat_str([pl.col("tool"), pl.when(pl.col("failed")).then(pl.lit("!")).otherwise(pl.lit("")),
                          pl.lit("/"), pl.col("relation"), pl.lit("/"), sources, pl.lit("/"), scope])
    keys = ["arm", "question_id", "sample_id"]
    seqs = (moves.with_columns(desc.alias("d")).group_by(keys, maintain_order=True)
            .agg(pl.col("d").str.join(" | ")))
    return runs.select(keys).join(seqs, on=keys, how="left")["d"].to_list()


def majority_ari(keys: list[str], truth) -> float:
    """ARI of labelling every group of equal keys with its majority planted strategy."""
    import polars as pl

    df = pl.DataFrame({"g": keys, "t": [str(t) for t in truth]})
    majority = (df.group_by("g", "t").len().sort(["g", "len", "t"], descending=[False, True, False])
                .group_by("g", maintain_order=True).first())
    lookup = dict(zip(majority["g"].to_list(), majority["t"].to_list()))
    return float(adjusted_rand_score(df["t"].to_list(), [lookup[g] for g in keys]))


def grains(embedder: str | None, worlds: list[str], n: int, seeds=(0, 1, 2)) -> None:
    """Per world: the ceiling of the exact call sequence at each grain of :data:`GRAINS`, the
    ceiling of the move-token set (what the distance sees) and the default fit's ARI, each the
    mean over ``seeds``."""
    print("| world | " + " | ".join(f"sequence: {g}" for g in GRAINS) + " | token set | default fit |")
    print("|---|" + "---|" * (len(GRAINS) + 2))
    for world in worlds:
        cells: dict[str, list[float]] = {}
        for seed in seeds:
            runs, truth = load(world, seed=seed, n=n)
            for g, (new_words, three) in GRAINS.items():
                cells.setdefault(g, []).append(majority_ari(grain_keys(runs, new_words, three), truth))
            cells.setdefault("tokens", []).append(ceiling(runs, truth, ("tokens",)))
            space = mx.StrategySpace(embedder=embedder, n_bootstrap=0, random_state=0, progress=False).fit(runs)
            cells.setdefault("fit", []).append(adjusted_rand_score(truth, space.labels_))
        print(f"| {world} | " + " | ".join(f"{np.mean(v):.3f}" for v in cells.values()) + " |", flush=True)


def leave_one_world_out(embedder: str | None, worlds: list[str], n: int) -> None:
    """Choose (resolution, min_share) on all worlds but one, report the held-out world's ARI."""
    grid = [(r, m) for r in (1.0, 1.5, 2.0, 2.5, 3.0) for m in (0.0, 0.02, 0.04, 0.08)]
    data = {w: load(w, seed=0, n=n) for w in worlds}
    ari = {}
    for r, m in grid:
        for w, (runs, truth) in data.items():
            sp = mx.StrategySpace(embedder=embedder, resolution=r, min_share=m, n_bootstrap=0,
                                  progress=False).fit(runs)
            ari[(r, m, w)] = adjusted_rand_score(truth, sp.labels_)
    rows = []
    for held in worlds:
        others = [w for w in worlds if w != held]
        best = max(grid, key=lambda g: (np.mean([ari[(*g, w)] for w in others]), -abs(g[0] - 2.0), -g[1]))
        rows.append({"held-out world": held, "chosen on the others (resolution, min_share)": str(best),
                     "mean ARI on the others": round(float(np.mean([ari[(*best, w)] for w in others])), 3),
                     "held-out ARI": round(ari[(*best, held)], 3)})
    grid_rows = [{"resolution": r, "min_share": m, **{w: round(ari[(r, m, w)], 3) for w in worlds}} for r, m in grid]
    notes = "Every cell of the grid (ARI, seed 0):\n\n" + harness.markdown_table(grid_rows)
    harness.report(__file__, rows, title=f"Leave one world out, embedder {embedder or 'default'}", notes=notes,
                   params={"embedder": embedder, "worlds": worlds, "n": n, "grid": grid_rows},
                   out=harness.RESULTS / "bench_strategies_worlds_lowo.json")


MIN_SHARES = (0.04, 0.05, 0.06, 0.07, 0.08)


def min_share_lowo(embedder: str | None, worlds: list[str], n: int) -> None:
    """``min_share`` chosen leaving one world out: every world at every value (mean ARI over
    seeds 0-2, default parameters otherwise), and for each world the value that is best on
    the others, with the held-out world's ARI at it."""
    ari = {}
    for world in worlds:
        for seed in (0, 1, 2):
            runs, truth = load(world, seed=seed, n=n)
            for m in MIN_SHARES:
                labels = mx.StrategySpace(embedder=embedder, random_state=0, n_bootstrap=0, min_share=m,
                                          progress=False).fit(runs).labels_
                ari.setdefault((world, m), []).append(adjusted_rand_score(truth, labels))
        print(world, {m: round(float(np.mean(ari[(world, m)])), 3) for m in MIN_SHARES}, flush=True)
    mean = {k: float(np.mean(v)) for k, v in ari.items()}
    rows = []
    for world in worlds:
        others = [w for w in worlds if w != world]
        # ties: the smaller share (fewer strategies lost to it)
        best = max(MIN_SHARES, key=lambda m: (round(np.mean([mean[(w, m)] for w in others]), 4), -m))
        rows.append({"world": world, **{f"min_share {m}": round(mean[(world, m)], 3) for m in MIN_SHARES},
                     "chosen without it": best, "ARI held out": round(mean[(world, best)], 3)})
    rows.append({"world": "mean", **{f"min_share {m}": round(float(np.mean([mean[(w, m)] for w in worlds])), 3)
                                     for m in MIN_SHARES},
                 "chosen without it": "", "ARI held out": round(float(np.mean([r["ARI held out"] for r in rows])), 3)})
    harness.report(__file__, rows, title=f"min_share chosen leaving one world out (mean ARI, seeds 0-2), embedder "
                   f"{embedder or 'default'}", params={"embedder": embedder, "worlds": worlds, "n": n,
                                                       "min_shares": MIN_SHARES}, part="min-share-lowo")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedder", default=None)
    ap.add_argument("--worlds", default="simulated,multihop,multihop_react,service,webshop,analyst,coder,browser,"
                    "assistant,travel,research,gui,sre,sheet,toolbench")
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--param", nargs="*", default=[])
    ap.add_argument("--lowo", action="store_true", help="leave-one-world-out choice of the defaults")
    ap.add_argument("--min-share-lowo", action="store_true", help="leave-one-world-out choice of min_share")
    ap.add_argument("--ceilings", action="store_true",
                    help="ceilings at three grains and the best cut of the tree, seeds 0-2")
    ap.add_argument("--grains", action="store_true",
                    help="ceiling of the exact call sequence at four grains, mean over seeds 0-2")
    args = ap.parse_args()
    if args.grains:
        grains(args.embedder, args.worlds.split(","), args.n)
        return
    if args.ceilings:
        ceilings(args.embedder, args.worlds.split(","), args.n)
        return
    if args.lowo:
        leave_one_world_out(args.embedder, args.worlds.split(","), args.n)
        return
    if args.min_share_lowo:
        min_share_lowo(args.embedder, args.worlds.split(","), args.n)
        return
    params = {}
    for p in args.param:
        k, v = p.split("=")
        try:
            params[k] = float(v) if "." in v else int(v)
        except ValueError:
            params[k] = v
    rows = []
    for world in args.worlds.split(","):
        runs, truth = load(world, seed=0, n=args.n)
        t0 = time.perf_counter()
        space = mx.StrategySpace(embedder=args.embedder, random_state=0, progress=False, **params).fit(runs)
        fit_s = time.perf_counter() - t0
        other = mx.StrategySpace(embedder=args.embedder, random_state=1, progress=False, **params).fit(runs)
        fresh, fresh_truth = load(world, seed=1, n=args.n)
        with tempfile.TemporaryDirectory() as d:
            space.save(Path(d) / "s")
            loaded = mx.StrategySpace.load(Path(d) / "s", progress=False)
            fresh_labels = loaded.transform(fresh)
        # the world drawn again under seeds 1 and 2 (fits without bootstrap: same labels)
        by_seed = [adjusted_rand_score(truth, space.labels_)]
        for seed in (1, 2):
            r, t = load(world, seed=seed, n=args.n)
            refit = mx.StrategySpace(embedder=args.embedder, random_state=0, n_bootstrap=0, progress=False,
                                     **params).fit(r)
            by_seed.append(adjusted_rand_score(t, refit.labels_))
        rows.append({"world": world, "n": runs.height, "ARI fit": round(adjusted_rand_score(truth, space.labels_), 3),
                     "ARI seeds": round(adjusted_rand_score(space.labels_, other.labels_), 3),
                     "ARI worlds 0-2": " / ".join(f"{a:.3f}" for a in by_seed),
                     "ARI mean 0-2": round(float(np.mean(by_seed)), 3),
                     "ARI saved->fresh": round(adjusted_rand_score(fresh_truth, fresh_labels), 3),
                     "found / planted": f"{space.n_strategies_} / {len(set(truth))}",
                     "ceiling": round(ceiling(runs, truth), 3),
                     "composition found - planted": round(composition_error(runs, truth, space.labels_), 4),
                     "fit s": round(fit_s, 1)})
        print(rows[-1], flush=True)
    harness.report(__file__, rows, title=f"Strategies against the planted ones, embedder {args.embedder or 'default'}"
                   f" {params or ''}".rstrip(), params=vars(args))


def composition_error(runs, truth, labels) -> float:
    """Composition part of the base -> rl accuracy change with the found strategies minus the
    one with the planted strategies (nan when the world has no such pair of arms)."""
    if not {"base", "rl"} <= set(runs["arm"].unique().to_list()):
        return float("nan")
    codes = {s: i for i, s in enumerate(sorted(set(truth)))}
    planted = np.array([codes[t] for t in truth])
    found = mx.reweighting(runs, labels, base="base", treated="rl").composition
    return found - mx.reweighting(runs, planted, base="base", treated="rl").composition


if __name__ == "__main__":
    main()
