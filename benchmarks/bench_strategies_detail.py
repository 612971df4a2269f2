"""What the data-analyst world's recovery is limited by: a measured note, no default changed.

The analyst world (``mechanism.datasets.worlds.analyst``) is recovered at ARI 0.760 (seed 0) by the
defaults. Three general changes to how trajectories become clusters were tried, each on all six
worlds at seeds 0-2, every fit reproducing the default agglomerative fit (the move-token
columns beside the embedding times ``embedding_weight``, average linkage cut at ``resolution``,
then ``min_share``):

1. **Detail weight**: the provenance (``M:``), order (``B:``) and, optionally, relation (``R:``)
   token columns multiplied by ``w`` against the tool columns (``T:``, ``E:``), so that a
   provenance variant of a call or a changed neighbour weighs less than which tools are used;
   with ``resolution`` and ``min_share`` chosen together, leaving one world out.
2. **The best cut of the tree** at each detail weight, chosen by looking at the truth (any
   number of groups, average / complete / weighted linkage, four ``min_share``): the ceiling of
   any stated criterion for the number of strategies on that distance.
3. **A repeat token**: beside the detail weight, one more column per tool its trajectory calls
   twice or more (attempts), so that a second call of a tool counts even where its move tokens
   equal the first's (the token columns are presence, not counts).
4. **Family merge with a smallest core**: ``families="merge"`` where the shorter of two
   sequences one step apart must have at least ``c`` steps (an optional step is then at most a
   third of the strategy), at the arm test's level ``alpha``.

Run: ``python benchmarks/bench_strategies_detail.py [--embedder hashing-256]`` (default: the default
fit's embedder).
"""
from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_rand_score

import mechanism as mx
from mechanism.analysis._strategies.clustering import agglomerative, distances, merge_small_from
from mechanism.analysis._strategies.features import fit_vocabulary, token_matrix
from mechanism.analysis.embed import make_embedder
from mechanism.analysis.segmentation import render

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness
from bench_strategies_worlds import load

WORLDS = ("simulated", "multihop", "multihop_react", "service", "webshop", "analyst")
SEEDS = (0, 1, 2)
DEFAULT = (1.0, "R,M,B", 1.5, 0.04, False)


def with_repeats(tokens: list[str], tools: list[str | None]) -> list[str]:
    """Each trajectory's tokens plus ``T:<tool>*again`` for every tool it calls twice or more."""
    from collections import Counter

    out = []
    for tok, seq in zip(tokens, tools):
        calls = Counter(t for t in (seq or "").split(" > ") if t)
        out.append(" ".join(tok.split() + [f"T:{t}*again" for t, n in sorted(calls.items()) if n >= 2]))
    return out


def prepared(world: str, seed: int, embedder) -> dict:
    """Tokens (also with repeat tokens), embedded renderings and planted labels of one world's sample."""
    runs, truth = load(world, seed)
    traj = render(runs)
    texts = sorted(set(traj["rendering"].to_list()))
    emb = embedder.embed(texts)
    at = {t: i for i, t in enumerate(texts)}
    return {"runs": runs, "truth": np.asarray([str(t) for t in truth]), "tokens": traj["tokens"].to_list(),
            "repeats": with_repeats(traj["tokens"].to_list(), traj["tools"].to_list()),
            "emb": emb[[at[r] for r in traj["rendering"].to_list()]]}


def rows(d: dict, weight: float, kinds: str, repeats: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct joined rows (detail columns times ``weight``), each trajectory's row, counts."""
    tokens = d["repeats" if repeats else "tokens"]
    vocab = fit_vocabulary(tokens)
    scale = np.array([weight if v[0] in kinds.split(",") else 1.0 for v in vocab] + [1.0])
    x = np.round(np.hstack([token_matrix(tokens, vocab) * scale, d["emb"] * 0.3]), 5)
    uniq, inv, counts = np.unique(x, axis=0, return_inverse=True, return_counts=True)
    return uniq, inv.ravel(), counts.astype(np.float64)


def fit_labels(d: dict, weight: float, kinds: str, resolution: float, min_share: float,
               repeats: bool = False) -> np.ndarray:
    uniq, inv, counts = rows(d, weight, kinds, repeats)
    return agglomerative(distances(uniq), counts, resolution=resolution, linkage="average",
                         min_share=min_share)[inv]


def best_cut(d: dict, weight: float) -> tuple[float, str]:
    """Best ARI of any cut of the tree (k groups, three linkages, four min_share), by the truth."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    uniq, inv, counts = rows(d, weight, "R,M,B")
    dist = distances(uniq)
    best = (0.0, "")
    for method in ("average", "complete", "weighted"):
        tree = linkage(squareform(dist, checks=False), method=method)
        for k in range(2, min(30, len(uniq))):
            lab = fcluster(tree, t=k, criterion="maxclust") - 1
            for ms in (0.0, 0.02, 0.04, 0.08):
                ari = adjusted_rand_score(d["truth"], merge_small_from(dist, lab, counts, ms)[inv])
                best = max(best, (ari, f"{method}, k={k}, min_share={ms}"))
    return best


def family_merge(d: dict, embedder_name: str | None, core: int, alpha: float) -> float:
    """ARI of ``families="merge"`` with the shorter sequence at least ``core`` steps long."""
    import mechanism.analysis._strategies.families as fam

    plain, defaults = fam.one_step_apart, dict(fam.merge_families.__kwdefaults__)

    def apart(a, b):
        return None if min(len(a), len(b)) < core else plain(a, b)

    fam.one_step_apart, fam.merge_families.__kwdefaults__["alpha"] = apart, alpha
    try:
        space = mx.StrategySpace(embedder=embedder_name, families="merge", n_bootstrap=0, progress=False)
        return float(adjusted_rand_score(d["truth"], space.fit(d["runs"]).labels_))
    finally:
        fam.one_step_apart, fam.merge_families.__kwdefaults__["alpha"] = plain, defaults["alpha"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedder", default="default", help='"default" (the default fit\'s) or a name')
    args = ap.parse_args()
    embedder = make_embedder(None if args.embedder == "default" else args.embedder, progress=False)
    data = {(w, s): prepared(w, s, embedder) for w in WORLDS for s in SEEDS}
    grid = list(itertools.product((1.0, 0.85, 0.7, 0.5), ("R,M,B",), (1.0, 1.25, 1.5, 1.75, 2.0),
                                  (0.02, 0.03, 0.04, 0.06, 0.08), (False, True)))
    ari = {(g, w): [adjusted_rand_score(data[(w, s)]["truth"], fit_labels(data[(w, s)], *g)) for s in SEEDS]
           for g in grid for w in WORLDS}

    def mean(g, ws):
        return float(np.mean([np.mean(ari[(g, w)]) for w in ws]))

    out = []
    for held in WORLDS:
        others = [w for w in WORLDS if w != held]
        # ties: nearest the current resolution and min_share, then the larger weight, no repeat token
        best = max(grid, key=lambda g: (round(mean(g, others), 4), -abs(g[2] - 1.5), -abs(g[3] - 0.04), g[0], not g[4]))
        out.append({"held-out world": held, "chosen (weight, kinds, resolution, min_share, repeats)": str(best),
                    "mean ARI on the others": round(mean(best, others), 3),
                    "held-out ARI, mean seeds 0-2": round(mean(best, [held]), 3),
                    "held-out ARI, seed 0": round(ari[(best, held)][0], 3),
                    "held-out ARI at the defaults, mean": round(mean(DEFAULT, [held]), 3),
                    "held-out ARI at the defaults, seed 0": round(ari[(DEFAULT, held)][0], 3)})
    cells = [DEFAULT, (0.7, "R,M,B", 1.5, 0.02, False), (0.7, "R,M,B", 1.5, 0.03, False),
             (0.7, "R,M,B", 1.5, 0.03, True), (0.5, "R,M,B", 1.0, 0.04, True), (0.5, "R,M,B", 1.5, 0.06, True)]
    cell_rows = [{"cell (weight, kinds, resolution, min_share, repeats)": str(g),
                  **{w: f"{np.mean(ari[(g, w)]):.3f} (s0 {ari[(g, w)][0]:.3f})" for w in WORLDS}} for g in cells]
    cut_rows = []
    for weight in (1.0, 0.7, 0.5, 0.3):
        cuts = [best_cut(data[("analyst", s)], weight) for s in SEEDS]
        cut_rows.append({"detail weight": weight, **{f"seed {s}": f"{c[0]:.3f} ({c[1]})" for s, c in zip(SEEDS, cuts)}})
    name = None if args.embedder == "default" else args.embedder
    fam_rows = []
    for core, alpha in ((0, 0.01), (2, 0.01), (3, 0.01), (2, 0.1), (3, 0.1), (3, 0.3)):
        fam_rows.append({"smallest core": core, "alpha": alpha,
                         **{w: round(family_merge(data[(w, 0)], name, core, alpha), 3) for w in WORLDS}})
    notes = ("Cells of the grid (ARI, mean over seeds 0-2, seed 0 in brackets):\n\n" + harness.markdown_table(cell_rows)
             + "\n\nThe best cut of the tree on the analyst world, chosen by looking at the truth (the ceiling of any "
             "criterion for the number of strategies on this distance):\n\n" + harness.markdown_table(cut_rows)
             + "\n\nfamilies=\"merge\" with a smallest core (ARI, seed 0; the default fit keeps families apart):\n\n"
             + harness.markdown_table(fam_rows)
             + "\n\nReading (default embedder): no change tried reaches 0.85 on the analyst world without losing "
             "another world, and none was made the default. Leaving one world out does not carry a choice over: "
             "with the analyst held out, the five others choose detail weight 0.5, resolution 1.0, min_share 0.08 "
             "with the repeat token, where the analyst is at 0.678 at seed 0 (0.760 at the defaults; 0.805 against "
             "0.732 over seeds 0-2), and with the simulator held out the same cell drops it to 0.855 (0.960 at the "
             "defaults). With hashing-256 the analyst-held-out choice is weight 0.7, resolution 1.5, min_share 0.03: "
             "0.760 at seed 0. The cells that raise the analyst at seed 0 and keep every other world at or above its "
             "default there (weight 0.7 with min_share 0.02: 0.786; the repeat token with weight 0.5, resolution "
             "1.0, min_share 0.04: 0.822) are chosen for no held-out world. The cells that reach 0.88-0.92 on the "
             "analyst (weight 0.5, the repeat token, min_share 0.06) merge the multi-hop worlds' strategies (0.27): "
             "there the provenance of a lookup is the strategy, here it is a variant. The best cut of the plain "
             "token tree, chosen by the truth, stays below 0.85 at every weight and seed: the optional steps (a "
             "second describe_table, a column look before fetching) are as far apart in move tokens as two planted "
             "strategies one step apart (direct_sql and peek_sql). A family merge that joins them (smallest core 2: "
             "analyst 0.864) also joins the service world's browse_orders and cancel_direct, whose arms shift "
             "alike (service 0.490), so the arm test cannot tell an optional step from a strategy there.")
    harness.report(__file__, out, title=f"Detail weight, tree cut and family merge on six worlds, embedder "
                   f"{args.embedder}", notes=notes, params=vars(args))


if __name__ == "__main__":
    main()
