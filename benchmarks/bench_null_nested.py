"""Where the nested integration split's ``within_parametric`` part stands under the
identical-policies, unequal-design null of ``tests/test_nulls.py`` (issue 21).

For every data set of ``identical`` (40 questions, base 2-10 and treated 4-16 samples, 5
strategies) the script records each nested part's estimate and 95 % percentile interval
(``n_boot=300``, as the test runs it). Over the data sets it reports the mean estimate (a
bias?), the standard deviation of the estimates against the root mean square bootstrap
standard deviation (interval too narrow?), and the share of intervals that exclude 0. For
``within_parametric`` on question x strategy strata it also gives the per-question terms the
estimate averages (the estimate is their mean exactly under question weighting): their
standard error, a t interval on it, and a studentised bootstrap.

Run: ``python benchmarks/bench_null_nested.py --seeds 1000 1200`` (``--seeds 0 30`` for the
test's own data sets, ``--n-boot 2000 --strata question`` for the percentile endpoints' own
noise); prints markdown.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from harness import report
from scipy import stats

import mechanism.information as mi

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "compare"))
from test_nulls import identical  # noqa: E402  (the test's own generator)

PARTS = ("within", "within_retrieval", "within_integration", "within_parametric", "within_not_retrievable")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", nargs=2, type=int, default=(1000, 1200))
    ap.add_argument("--n-boot", type=int, default=300)
    ap.add_argument("--strata", nargs="+", default=["question", "pooled"])
    args = ap.parse_args()
    seeds = range(*args.seeds)
    captured: list[tuple] = []
    split = mi.question_strata_split

    def spy(n, c, w):  # the tallies and question draws integration() uses
        captured.append((n, c, w))
        return split(n, c, w)

    for strata in args.strata:
        mi.question_strata_split = spy
        rows, extra = [], {"t": 0, "boot-t": 0, "se": [], "nonzero": []}
        for seed in seeds:
            captured.clear()
            runs, labels = identical(seed)
            ig = mi.integration(runs, base="base", treated="rl", labels=labels, n_boot=args.n_boot,
                                random_state=seed, strata=strata)
            d = {r["quantity"]: (r["estimate"], r["ci_low"], r["ci_high"]) for r in ig.shift.iter_rows(named=True)}
            rows.append([d[p] for p in PARTS])
            if strata != "question":
                continue
            n, c, _ = captured[0]
            draws = captured[1][2]
            q = n.shape[1]
            one = np.eye(q) * q  # question j drawn q times: the part is question j's own term
            u = np.array([split(n, c, one[j:j + 1])["within_parametric"][0] for j in range(q)])
            est = float(split(n, c, np.ones((1, q)))["within_parametric"][0])
            assert abs(u.mean() - est) < 1e-12
            se = u.std(ddof=1) / np.sqrt(q)
            extra["se"].append(se)
            extra["nonzero"].append(int((np.abs(u) > 1e-12).sum()))
            extra["t"] += abs(est) > stats.t.ppf(0.975, q - 1) * se
            m = draws @ u / q
            se_b = np.sqrt(np.maximum(draws @ u ** 2 / q - m ** 2, 0) / (q - 1))
            ok = se_b > 0
            lo_t, hi_t = np.percentile((m[ok] - est) / se_b[ok], [2.5, 97.5])
            extra["boot-t"] += (est - hi_t * se > 0) or (est - lo_t * se < 0)
        mi.question_strata_split = split
        a = np.array(rows)  # (data sets, parts, 3)
        table = []
        for i, p in enumerate(PARTS):
            e, lo, hi = a[:, i].T
            boot_sd = np.sqrt((((hi - lo) / (2 * 1.959964)) ** 2).mean())
            exc = int(((lo > 1e-12) | (hi < -1e-12)).sum())
            table.append({"part": p, "mean estimate (se)": f"{e.mean():+.4f} ({e.std() / np.sqrt(len(e)):.4f})",
                          "sd of estimates": round(float(e.std()), 4), "rms bootstrap sd": round(float(boot_sd), 4),
                          "ratio": round(float(e.std() / boot_sd), 2), "excludes 0": f"{exc} of {len(e)}"})
        notes = ""
        if strata == "question":
            notes = (f"within_parametric from its per-question terms: mean standard error "
                     f"{np.mean(extra['se']):.4f}, {np.mean(extra['nonzero']):.1f} of 40 terms non-zero; "
                     f"t interval excludes 0 in {extra['t']} of {len(seeds)}, studentised bootstrap in "
                     f"{extra['boot-t']} of {len(seeds)}")
        report(__file__, table, part=strata, notes=notes, params=vars(args),
               title=f"strata = {strata}, seeds {seeds.start}-{seeds.stop - 1} ({len(seeds)} data sets), "
                     f"n_boot = {args.n_boot}")

if __name__ == "__main__":
    main()
