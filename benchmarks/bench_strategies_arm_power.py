"""What the arms can tell apart: the power of the fit's arm test on every pair of planted strategies.

The strategy space uses the arms in one place: a group in the tested band (``min_share`` to
``min_share_tested``) stands apart from its nearest strategy only when the arm test
(:func:`mechanism.analysis._strategies.families.arm_test`, chi-square of the 2 x arms table, Yates
corrected) finds that the arms take the two at different rates, ``p <``
:data:`~mechanism.analysis._strategies.clustering.VARIANT_ALPHA`. Any rule that lets the arms decide
which strategies are one (a join kept only where the arms agree, a fragment sent to the candidate
the arms take alike) can only be as good as that test's power.

For every world with planted mixtures (``planted["shares"]``; the built-in simulator has none and
is left out) and every pair of its planted strategies, this draws each arm's trajectories from its
planted mixture (``n_questions x 4`` per arm, as the worlds are sampled), keeps the pair's two
counts per arm, and counts how often the test separates them, at several table sizes. Whole
strategies are the best case: a fragment of one (what the fit actually tests) has fewer
trajectories and less power. The table lists the pairs the test separates less than half the
time at 60 questions (the size of every recovery figure), with the smallest size at which it
would separate them 80 % of the time.

Run: ``python benchmarks/bench_strategies_arm_power.py [--draws 400] [--seed 0]``
(about a minute on two cores).
"""
from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np

from mechanism.analysis._strategies.clustering import VARIANT_ALPHA
from mechanism.analysis._strategies.families import arm_test
from mechanism.core.progress import progress

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness
from bench_strategies_floor import planted_world, worlds

#: Questions per table; every world is sampled with 4 episodes per question and arm.
SIZES = (30, 60, 120, 240, 480, 960)
SAMPLES = 4
#: The size every recovery figure is measured at.
BENCH_SIZE = 60


def separation_power(shares_a: np.ndarray, shares_b: np.ndarray, n_questions: int, *, draws: int,
                     rng: np.random.Generator) -> float:
    """How often :func:`arm_test` finds two strategies' arm rates apart at ``p < VARIANT_ALPHA``.

    ``shares_a``, ``shares_b``: each strategy's planted share in each arm. Each draw samples every
    arm's ``n_questions * SAMPLES`` trajectories from a multinomial over (a, b, the rest) and tests
    the 2 x arms table of the pair's counts.
    """
    n = n_questions * SAMPLES
    rest = 1.0 - shares_a - shares_b
    separated = 0
    for _ in range(draws):
        table = np.array([rng.multinomial(n, [pa, pb, pr])[:2]
                          for pa, pb, pr in zip(shares_a, shares_b, rest)], dtype=np.float64).T
        separated += arm_test(table) < VARIANT_ALPHA
    return separated / draws


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, default=400, help="simulated tables per pair and size")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    rows, counted = [], {}
    # each world's planted mixtures (a two-question world is enough to hold them)
    mixtures = {w: p["shares"] for w in worlds() if "shares" in (p := planted_world(w, 0, 2).planted)}
    for world in progress(mixtures, desc="worlds", enabled=False if args.no_progress else None):
        shares = mixtures[world]
        arms = list(shares)
        rng = np.random.default_rng(args.seed)
        pairs = list(itertools.combinations(shares[arms[0]], 2))
        weak = 0
        for a, b in pairs:
            sa = np.array([shares[arm][a] for arm in arms])
            sb = np.array([shares[arm][b] for arm in arms])
            at_bench = separation_power(sa, sb, BENCH_SIZE, draws=args.draws, rng=rng)
            if at_bench >= 0.5:
                continue
            weak += 1
            power = {n: (at_bench if n == BENCH_SIZE else
                         separation_power(sa, sb, n, draws=args.draws, rng=rng)) for n in SIZES}
            enough = next((n for n in SIZES if power[n] >= 0.8), None)
            rows.append({"world": world, "pair": f"{a} / {b}",
                         "shares": " / ".join(f"{x:.2f}->{y:.2f}" for x, y in ((sa[0], sa[-1]), (sb[0], sb[-1]))),
                         **{f"power at {n} q": round(power[n], 2) for n in SIZES},
                         "questions for 0.8": enough if enough is not None else f"> {SIZES[-1]}"})
        counted[world] = (weak, len(pairs))
    summary = ", ".join(f"{w} {k}/{n}" for w, (k, n) in counted.items())
    notes = (f"Power: the share of {args.draws} simulated tables per pair and size in which the arm test "
             f"separates the pair at p < {VARIANT_ALPHA} (its level: two strategies the arms take alike are "
             f"separated {VARIANT_ALPHA:.0%} of the time). Shares: each strategy's planted share, "
             f"{arms[0]} -> {arms[-1]}. Pairs listed of all pairs, per world: {summary}.")
    harness.report(__file__, rows, title="Pairs of planted strategies the arm test cannot tell apart at 60 questions",
                   notes=notes, params=vars(args))


if __name__ == "__main__":
    main()
