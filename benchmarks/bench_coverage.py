"""Coverage and level of the small-sample intervals and tests, measured on simulated data
whose truth is known.

1. PASS@(k,T) intervals at few problems: the percentile bootstrap, the studentized interval,
   the Wilson-type interval and ``interval="auto"`` (Wilson below 30 problems and at the
   bounds), coverage of the true mean over problems, on skewed and on symmetric difficulty.
2. Per-strategy rows under identical policies with an unequal design (base 2-10, treated
   4-16 samples per question): the share of data sets in which *some* strategy's composition
   or within interval excludes 0, for separate 95 % percentile intervals, Bonferroni and the
   simultaneous max-|t| bands; and ``strategy_shift``'s difference columns likewise.
3. The boundary test: type I error under identical policies with 4 vs 32 samples, power when
   the treated arm's success is raised, and the spread of the p-value over seeds 0-4.
4. The split on question x strategy strata when success depends on the question only and
   the treated arm moves strategies between easy and hard questions: how often ``within``'s
   interval contains 0 (strata vs pooled).

Run: ``python benchmarks/bench_coverage.py [--reps 200] [--sections passkt strategy ...]``; prints
Markdown tables through ``benchmarks/harness.py`` and writes ``benchmarks/results/bench_coverage_<section>.json``.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

from mechanism.analysis.boundaries import boundary
from mechanism.analysis.compare import reweighting
from mechanism.analysis.information import integration
from mechanism.analysis.passkt import pass_at_kt
from mechanism.core.resample import bonferroni_level, percentile_interval

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness


def passkt_coverage(reps: int) -> list[dict]:
    rows = []
    n, ks = 16, [1, 4, 16]
    # skewed difficulty (many hard problems), and a symmetric one where many problems are solved
    # in all 16 samples (per-problem PASS@16 values of exactly 1)
    for a, b in ((0.3, 1.5), (2.0, 2.0)):
        rows += _passkt_world(reps, a, b, n, ks)
    return rows


def _passkt_world(reps: int, a: float, b: float, n: int, ks: list[int]) -> list[dict]:
    from scipy.special import betaln

    rows = []
    # the estimand: PASS@k over the population of problems, E[1 - (1 - p)^k] for p ~ Beta(a, b)
    truth = np.array([1.0 - np.exp(betaln(a, b + k) - betaln(a, b)) for k in ks])
    for n_q in (5, 10, 20, 30, 50):
        hits = {m: np.zeros(len(ks)) for m in ("percentile", "studentized", "wilson", "auto")}
        for r in range(reps):
            rng = np.random.default_rng(1000 * n_q + r + (0 if a == 0.3 else 10**6))
            p = rng.beta(a, b, n_q)
            ok = rng.random((n_q, n)) < p[:, None]
            runs = pl.DataFrame({"arm": "a", "question_id": np.repeat([f"q{i}" for i in range(n_q)], n),
                                 "correct": ok.reshape(-1), "n_rounds": 1})
            for method in hits:
                got = pass_at_kt(runs, k=ks, t=[1], n_boot=300, random_state=r, interval=method).sort("k")
                hits[method] += (got["ci_low"].to_numpy() <= truth) & (truth <= got["ci_high"].to_numpy())
        for method, h in hits.items():
            rows.append({"difficulty": f"Beta({a:g}, {b:g})", "problems": n_q, "interval": method,
                         **{f"k = {k}": round(float(v), 4) for k, v in zip(ks, h / reps)},
                         "MC se at 0.95": round(float(np.sqrt(0.95 * 0.05 / reps)), 4)})
    return rows


def _identical(seed: int, n_q: int) -> tuple[pl.DataFrame, np.ndarray]:
    """The null world of ``tests/test_nulls.py`` (identical policies, base 2-10 and treated
    4-16 samples per question, 5 strategies, a fifth of the golds yes/no)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "compare"))
    from test_nulls import identical

    return identical(seed, n_q)


def strategy_rows_null(reps: int, sizes: tuple[int, ...] = (20, 50)) -> list[dict]:
    rows = []
    for n_q in sizes:
        separate = bonf = band = shift_band = 0
        for r in range(reps):
            runs, labels = _identical(r, n_q)
            rw = reweighting(runs, labels, base="base", treated="rl", n_boot=400, n_permutations=0, random_state=r)
            t = rw.strategies
            band += bool(((t["composition_ci_low"] > 0) | (t["composition_ci_high"] < 0)
                          | (t["within_ci_low"] > 0) | (t["within_ci_high"] < 0)).any())
            for level, name in ((0.95, "sep"), (bonferroni_level(0.95, t.height), "bonf")):
                lo_c, hi_c = percentile_interval(rw.replicates["composition"], level)
                lo_w, hi_w = percentile_interval(rw.replicates["within"], level)
                hit = bool(((lo_c > 0) | (hi_c < 0) | (lo_w > 0) | (hi_w < 0)).any())
                separate += hit and name == "sep"
                bonf += hit and name == "bonf"
            ig = integration(runs, base="base", treated="rl", labels=labels, n_boot=400, random_state=r)
            cols = ["share_change", "composition", "within", "within_retrieval", "within_integration",
                    "within_parametric"]
            ss = ig.strategy_shift
            shift_band += bool(any(((ss[f"{c}_ci_low"] > 1e-12) | (ss[f"{c}_ci_high"] < -1e-12)).any() for c in cols))
        se = float(np.sqrt(0.05 * 0.95 / reps))
        rows.append({"questions": n_q, "data sets": reps, "separate 95 %": separate / reps,
                     "Bonferroni": bonf / reps, "simultaneous band": band / reps,
                     "strategy_shift band (6 columns)": shift_band / reps, "MC se at 0.05": round(se, 4)})
    return rows


def boundary_level_and_power(reps: int) -> tuple[list[tuple], list[tuple]]:
    rows = []
    for lift in (0.0, 0.1):
        rejected = 0
        for r in range(reps):
            rng = np.random.default_rng(5000 + r)
            p = rng.beta(0.4, 2.0, 100)
            frames = []
            for arm, n, extra in (("base", 4, 0.0), ("rl", 32, lift)):
                ok = rng.random((100, n)) < np.clip(p + extra * (p < 0.3), 0, 1)[:, None]
                frames.append(pl.DataFrame({"arm": arm, "question_id": np.repeat([f"q{i}" for i in range(100)], n),
                                            "sample_id": np.tile(np.arange(n), 100), "correct": ok.reshape(-1),
                                            "n_rounds": 1}))
            b = boundary(pl.concat(frames), base="base", treated="rl", t=[1], k=[1], n_boot=20,
                         random_state=r, n_permutations=4000)
            rejected += bool(b.tests["p_value"].item() < 0.05)
        rows.append((lift, rejected / reps))
    # the spread of p over seeds 0-4 on fixed data sets
    spread = []
    for r in range(5):
        rng = np.random.default_rng(9000 + r)
        p = rng.beta(0.4, 2.0, 100)
        frames = []
        for arm, n in (("base", 4), ("rl", 32)):
            ok = rng.random((100, n)) < p[:, None]
            frames.append(pl.DataFrame({"arm": arm, "question_id": np.repeat([f"q{i}" for i in range(100)], n),
                                        "sample_id": np.tile(np.arange(n), 100), "correct": ok.reshape(-1),
                                        "n_rounds": 1}))
        data = pl.concat(frames)
        ps = [boundary(data, base="base", treated="rl", t=[1], k=[1], n_boot=20, random_state=s)
              .tests["p_value"].item() for s in range(5)]
        spread.append((r, min(ps), max(ps), max(ps) - min(ps)))
    return rows, spread


def strata_coverage(reps: int) -> list[tuple]:
    out = []
    counts = {"question": 0, "pooled": 0}
    for r in range(reps):
        rng = np.random.default_rng(r)
        p = rng.uniform(0.05, 0.95, 60)
        rows, labels = [], []
        for arm in ("base", "rl"):
            for q in range(60):
                mix = np.full(3, 1 / 3) if arm == "base" or p[q] <= 0.5 else np.array([0.8, 0.1, 0.1])
                for s in range(8):
                    labels.append(int(rng.choice(3, p=mix)))
                    rows.append({"arm": arm, "question_id": f"q{q}", "sample_id": s,
                                 "correct": bool(rng.random() < p[q])})
        runs = pl.DataFrame(rows)
        for strata in counts:
            rw = reweighting(runs, np.array(labels), base="base", treated="rl", n_boot=300, n_permutations=0,
                             random_state=r, strata=strata)
            counts[strata] += rw.within_ci[0] <= 0.0 <= rw.within_ci[1]
    for strata, c in counts.items():
        out.append((strata, c / reps))
    return out


def passk_coverage(reps: int) -> list[dict]:
    """pass^k (all k of k succeed) at k = 4 of n = 16: coverage of the population pass^k, E[p^4]."""
    from scipy.special import betaln

    rows, n, k = [], 16, 4
    for a, b in ((0.3, 1.5), (1.0, 1.0)):
        truth = float(np.exp(betaln(a + k, b) - betaln(a, b)))
        for n_q in (5, 10, 20, 40):
            hits = dict.fromkeys(("percentile", "wilson", "bootstrap-t", "auto"), 0)
            for r in range(reps):
                rng = np.random.default_rng(31 * n_q + r + (0 if a == 0.3 else 10**6))
                ok = rng.random((n_q, n)) < rng.beta(a, b, n_q)[:, None]
                runs = pl.DataFrame({"arm": "a", "question_id": np.repeat([f"q{i}" for i in range(n_q)], n),
                                     "correct": ok.reshape(-1), "n_rounds": 1})
                for method in hits:
                    got = pass_at_kt(runs, k=[k], t=[1], n_boot=400, random_state=r, interval=method,
                                     metric="pass^k")
                    hits[method] += bool(got["ci_low"][0] <= truth <= got["ci_high"][0])
            rows += [{"difficulty": f"Beta({a:g}, {b:g})", "problems": n_q, "interval": m, "k = 4": h / reps,
                      "MC se at 0.95": round(float(np.sqrt(0.95 * 0.05 / reps)), 4)} for m, h in hits.items()]
    return rows


def empty_cells(reps: int) -> list[dict]:
    """Issue 33: a pure execution change (identical shares 55/25/12/8 %, rl +0.15 on every cell),
    4 samples per question, 100 questions: composition's mean and how often its interval
    excludes 0; whether the assumption-free bounds contain the truth (composition 0, within the
    planted gain); and the nested integration split under a pure integration gain."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "compare"))
    from test_empty_cells import execution_change, integration_gain

    comp, excl, inside, mass = [], 0, 0, []
    for r in range(reps):
        runs, labels, within_truth = execution_change(r)
        rw = reweighting(runs, labels, base="base", treated="rl", n_boot=300, n_permutations=0, random_state=r)
        comp.append(rw.composition)
        excl += rw.composition_ci[0] > 0 or rw.composition_ci[1] < 0
        inside += (rw.composition_bounds[0] <= 0 <= rw.composition_bounds[1]
                   and rw.within_bounds[0] <= within_truth <= rw.within_bounds[1])
        mass.append(rw.one_arm_mass["rl"])
    rows = [{"split": "reweighting, execution change", "data sets": reps, "composition mean": float(np.mean(comp)),
             "composition se": float(np.std(comp) / np.sqrt(reps)), "interval excludes 0": excl / reps,
             "bounds contain truth": inside / reps, "rl mass in one-arm cells": float(np.mean(mass))}]
    n_int = max(reps // 4, 10)
    parts = {"composition": [], "within_retrieval": [], "within_integration": []}
    excl = 0
    for r in range(n_int):
        runs, labels = integration_gain(r)
        ig = integration(runs, base="base", treated="rl", labels=labels, n_boot=200, random_state=r)
        q = {row["quantity"]: row for row in ig.shift.iter_rows(named=True)}
        for name in parts:
            parts[name].append(q[name]["estimate"])
        excl += q["composition"]["ci_low"] > 0 or q["composition"]["ci_high"] < 0
    rows.append({"split": "integration, pure integration gain", "data sets": n_int,
                 "composition mean": float(np.mean(parts["composition"])),
                 "composition se": float(np.std(parts["composition"]) / np.sqrt(n_int)),
                 "interval excludes 0": excl / n_int, "retrieval part mean": float(np.mean(parts["within_retrieval"])),
                 "integration part mean": float(np.mean(parts["within_integration"]))})
    return rows


def verdict_null(reps: int) -> list[dict]:
    """Identical policies, unequal design (tests/compare/test_nulls.py's world): the share of data
    sets in which each verdict clause states a direction (its interval excludes 0)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "compare"))
    from test_empty_cells import verdict_directions

    counts: dict[str, int] = {}
    for r in range(reps):
        for name, hit in verdict_directions(r).items():
            counts[name] = counts.get(name, 0) + int(hit)
    return [{"clause": name, "data sets": reps, "states a direction": c / reps} for name, c in sorted(counts.items())]


def sparse_boundary(reps: int) -> list[dict]:
    """5 of 100 questions from base 0 to rl 0.9 per sample (8 samples each); and the null with
    identical policies, base 4 vs rl 32 samples: rejection rates of the summed and sparse tests."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "passkt"))
    from test_sparse_boundary import sparse_world

    rows = []
    for label, kw in (("5 of 100 gained at 0.9", {}), ("5 of 100 gained at 0.4", {"rate": 0.4}),
                      ("identical, 4 vs 32 samples", {"n_gained": 0, "n_base": 4, "n_treated": 32})):
        summed = sparse = 0
        for r in range(reps):
            row = boundary(sparse_world(r, **kw), base="base", treated="rl", t=[1], k=[1], ci=None,
                           n_permutations=4000).tests.row(0, named=True)
            summed += row["p_value"] < 0.05
            sparse += row["p_sparse"] < 0.05
        rows.append({"design": label, "data sets": reps, "summed test rejects": summed / reps,
                     "sparse test rejects": sparse / reps, "detectable (summed)": row["detectable_summed"],
                     "detectable (sparse)": row["detectable_sparse"]})
    return rows


SECTIONS = ("passkt", "strategy", "boundary", "strata", "passk", "empty_cells", "verdict_null", "sparse")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=200, help="data sets per cell (boundary, strata: reps / 2)")
    parser.add_argument("--passkt-reps", type=int, default=400, help="data sets per PASS@(k,T) cell")
    parser.add_argument("--strategy-reps", type=int, default=200, help="null data sets per size, per-strategy rows")
    parser.add_argument("--strategy-sizes", type=int, nargs="+", default=[20, 50])
    parser.add_argument("--sections", nargs="+", default=list(SECTIONS), choices=SECTIONS)
    args = parser.parse_args()
    params = vars(args)

    def report(section: str, rows: list[dict], title: str, notes: str, began: float) -> None:
        harness.report(__file__, rows, title=title, params=params,
                       notes=f"{notes} ({time.perf_counter() - began:.0f} s)",
                       out=harness.RESULTS / f"bench_coverage_{section}.json")

    if "passkt" in args.sections:
        began = time.perf_counter()
        report("passkt", passkt_coverage(args.passkt_reps), "PASS@(k,T) interval coverage (n = 16 samples, "
               "success p ~ Beta, nominal 0.95)",
               f"{args.passkt_reps} data sets per row; interval='auto' (the default) uses wilson below 30 problems "
               "and where every problem's value is 0 or 1, percentile otherwise.", began)
    if "strategy" in args.sections:
        began = time.perf_counter()
        report("strategy", strategy_rows_null(args.strategy_reps, tuple(args.strategy_sizes)),
               "Per-strategy rows under identical policies, unequal design (share of data sets with any row "
               "excluding 0; 5 strategies; level 0.05)",
               "separate / Bonferroni: percentile intervals of the module's replicates; simultaneous band: "
               "reweighting's composition and within rows as one family; strategy_shift: integration's six "
               "difference columns as one family (bands calibrated for the questions resampled).", began)
    if "boundary" in args.sections:
        began = time.perf_counter()
        level, spread = boundary_level_and_power(args.reps)
        report("boundary", [{"treated lift on hard problems": lift, "rejection rate at 0.05": rate}
                            for lift, rate in level],
               "Boundary test, 100 questions, base 4 vs treated 32 samples", f"{args.reps} data sets per row.",
               began)
        report("boundary_seeds", [{"data set": r, "min p over seeds 0-4": lo, "max p": hi, "spread": d}
                                  for r, lo, hi, d in spread],
               "Boundary p-value over seeds 0-4", "five fixed data sets.", began)
    for name, fn, title in (
            ("passk", passk_coverage, "pass^k interval coverage at k = 4 (n = 16 samples, nominal 0.95)"),
            ("empty_cells", empty_cells, "Empty question x strategy cells valued within their own arm"),
            ("verdict_null", verdict_null, "Verdict clauses stating a direction under identical policies"),
            ("sparse", sparse_boundary, "Boundary tests on sparse gains (100 questions)")):
        if name in args.sections:
            began = time.perf_counter()
            report(name, fn(args.reps), title, f"{args.reps} data sets per row (issue 33).", began)
    if "strata" in args.sections:
        began = time.perf_counter()
        n = max(args.reps // 2, 20)
        report("strata", [{"strata": strata, "within contains 0": share} for strata, share in strata_coverage(n)],
               "Within interval contains 0 (success by question only, strategies moved between easy and hard)",
               f"{n} data sets.", began)


if __name__ == "__main__":
    main()
