"""The capability boundary between two arms (docs/methods.md, "What it answers").

``B_T(arm)`` is the set of problems the arm solves at least once in n samples within T
rounds (PASS@(n,T) > 0). "Solved at least once" grows with n, so the two arms are compared
on a common per-problem budget: ``m = min(n_base, n_treated)`` samples of each problem.

- **Solved sets** are judged on one fixed subsample per arm and problem: the m samples with
  the smallest keyed hash of (question, sample id). The subset is the same at every T (so
  under truncation the solved sets are nested in T) and depends on no seed. The expected
  counts from the unbiased estimator ``1 - C(n - c, m) / C(n, m)`` are reported beside them
  (``gained_expected``, ``lost_expected``).
- **The test** does not depend on which subset was judged, nor on a seed beyond Monte Carlo
  error: its statistic is the summed per-question difference of the unbiased probabilities
  of solving within the common budget, ``S = sum_q (P_t(q) - P_b(q)) = gained_expected -
  lost_expected``, and its null permutes the arm labels of the episodes *within each
  question* (under identical policies a question's episodes are exchangeable between the
  arms whatever their numbers): the base arm's successes among them are then
  hypergeometric, so each permutation is one hypergeometric draw per question, and the
  two-sided p-value is ``2 min(P(S* >= S), P(S* <= S))`` over ``n_permutations`` draws.
  The draws are keyed on the data (a digest of the counts), not on ``random_state``: the same
  data give the same p-value whatever the seed, within Monte Carlo error (standard error
  below 0.007 at the default 20,000 draws) of the exact permutation p-value. Holm-adjusted
  over the T grid. The exact two-sided binomial test of the judged gained vs lost counts (McNemar's
  exact form) is kept as ``p_discordant``.
- **The PASS@(1,T) split** into efficiency (problems both solve), expansion (problems only
  the treated arm solves) and loss (problems only the base solves) is computed on the same
  judged episodes as its total, so ``total = efficiency + expansion - loss`` exactly; the
  all-sample difference is the gap at k = 1.

A significant excess of problems solved means "more problems solved at least once in m
samples", not a new capability: it is what a higher success rate on hard problems also
gives. The module also reports the marginal gains in k and in T, the saturation depth T*,
the k where the two curves cross and the gap at large k, each difference with a paired
bootstrap interval over questions. The crossing points and T* carry intervals from the same
bootstrap replicates as the curves (one seed, one stream: :func:`mechanism.core.resample.stream`).

Under truncation-based T (no per-T runs), T is the rounds an episode happened to use: the
summary says so, reports per arm the share of episodes with at most T rounds, and points to
``t_cap`` runs for a budget claim.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import polars as pl
from scipy.stats import binom, binomtest, hypergeom, norm

from mechanism.analysis.passkt import (
    DEFAULT_T,
    TRUNCATED,
    PassEstimate,
    TSource,
    default_k,
    depth_notes,
    estimate_pass,
    message_rounds,
    ratio_table,
    small_sample_note,
    summary_table,
    within_t_shares,
)
from mechanism.core.errors import InputError
from mechanism.core.options import RandomState, check_choice, check_ci, check_seed
from mechanism.core.resample import (
    detectable_effect,
    percentile_interval,
    question_bootstrap_weights,
    resolve_seed,
    stream,
)
from mechanism.core.results import Result, by_category
from mechanism.core.schema import shared_questions
from mechanism.core.text import interval_text

STATUSES = ("both", "gained", "lost", "neither")


@dataclass(repr=False)
class Boundary(Result):
    """Result of :func:`boundary`; every table is a polars DataFrame.

    Attributes
    ----------
    base, treated
        The two arms compared.
    k, t
        The k and T grids.
    problems
        One row per shared problem and T: ``question_id``, ``t``, ``n_base``, ``c_base``,
        ``n_treated``, ``c_treated``, ``budget`` (the common number of samples ``m``),
        ``p_solved_base``/``p_solved_treated`` (unbiased probability of at least one
        success in m samples), ``base_solved``, ``treated_solved`` (solved at least once in
        the m samples judged), ``status`` (one of both, gained, lost, neither),
        ``pass1_base``, ``pass1_treated``.
    sets
        Size of ``B_T`` per arm and T at the common budget: ``arm``, ``t``, ``n_problems``,
        ``n_solved``, ``share``, and ``share_within_t`` (share of the arm's episodes that
        used at most T rounds, questions weighing equally; under truncation the episodes
        PASS@(k,T) can count at all).
    tests
        Per T: ``n_problems``, ``budget_min``/``budget_max``, ``both``, ``gained``, ``lost``,
        ``neither``, ``gained_expected``/``lost_expected`` (unbiased expected counts at the
        budget), ``statistic`` (their difference, ``sum_q P_t(q) - P_b(q)``), ``p_value``
        (two-sided within-question permutation test of it, ``n_permutations`` draws),
        ``p_holm`` (Holm-adjusted over the T grid), ``p_discordant`` (exact two-sided
        binomial test of the judged gained vs lost counts), ``expansion`` (more problems
        solved at least once in m samples by the treated arm, ``p_holm < alpha``),
        ``contraction`` (fewer, same test), and ``verdict`` in words. With one sample per problem neither is called.
    split
        Per T and component (``total``, ``efficiency``, ``expansion``, ``loss``): the
        PASS@(1,T) difference treated - base, ``total = efficiency + expansion - loss``,
        with ``ci_low``/``ci_high`` and ``detectable`` (smallest effect the design detects
        with probability 0.8, from the interval's width).
    curves
        :func:`mechanism.analysis.passkt.pass_at_kt` of both arms on the shared problems.
    gap
        Per T and k: ``base``, ``treated``, ``gap`` (treated - base), ``ci_low``, ``ci_high``.
    marginal_k
        Per arm, T and k: ``gain = Pass(k_next, T) - Pass(k, T)`` with ``k_next = 2k``.
    marginal_t
        Per arm, k and T: ``gain = Pass(k, t_next) - Pass(k, T)`` for consecutive depths of
        the grid, and ``gain_per_round``.
    saturation
        Per arm and k: ``t_star``, the smallest T from which every later step of the T grid
        gains less than ``tol`` (null when the last step still gains ``tol`` or more), its
        interval ``ci_low``/``ci_high`` over the bootstrap replicates (null: not saturated
        within the grid) and ``share_saturated``, the share of replicates saturated.
    crossings
        Every k where the treated curve crosses the base curve, per T (interpolated linearly
        on log2 k), the ``direction``, an interval ``ci_low``/``ci_high`` from the replicates
        that cross the same way (the crossing nearest the estimate) and ``share_crossing``,
        the share of replicates that do.
    notes
        What a reader should know (problems present in one arm only, unequal samples, T from
        truncation, and so on).
    by_category
        With ``by``: :meth:`to_frame` of the pooled result and of each category's, stacked,
        key column ``category`` (``"all"`` for the pooled rows).
    """

    base: str
    treated: str
    k: list[int]
    t: list[int]
    alpha: float
    tol: float
    t_source: str
    problems: pl.DataFrame
    sets: pl.DataFrame
    tests: pl.DataFrame
    split: pl.DataFrame
    curves: pl.DataFrame
    gap: pl.DataFrame
    marginal_k: pl.DataFrame
    marginal_t: pl.DataFrame
    saturation: pl.DataFrame
    crossings: pl.DataFrame
    notes: list[str] = field(default_factory=list)
    by_category: pl.DataFrame | None = None

    def gained(self, t: int) -> list[str]:
        """Question ids in ``B_t(treated)`` but not ``B_t(base)`` (at the common budget)."""
        return self._status(t, "gained")

    def lost(self, t: int) -> list[str]:
        """Question ids in ``B_t(base)`` but not ``B_t(treated)`` (at the common budget)."""
        return self._status(t, "lost")

    def crossing_k(self, t: int) -> float | None:
        """The first k at which the curves cross at depth ``t``, or None if they never do."""
        rows = self.crossings.filter(pl.col("t") == t)
        return None if rows.height == 0 else float(rows["k_cross"][0])

    @property
    def expansion(self) -> bool:
        """Whether any depth shows significantly more problems solved at least once in m samples.

        Not a claim of new capability: a higher success rate on hard problems gives it too.
        """
        return bool(self.tests["expansion"].any())

    def tables(self) -> dict[str, pl.DataFrame]:
        """Every table by a file-friendly name: ``estimates`` (:meth:`to_frame`), then each
        attribute's table by the attribute's name."""
        return {"estimates": self.to_frame(), "problems": self.problems, "sets": self.sets,
                "tests": self.tests, "split": self.split, "curves": self.curves, "gap": self.gap,
                "marginal_k": self.marginal_k, "marginal_t": self.marginal_t, "saturation": self.saturation,
                "crossings": self.crossings,
                **({"by_category": self.by_category} if self.by_category is not None else {})}

    def _summary_text(self) -> str:
        """A few plain-text lines stating the findings, with their uncertainty."""
        depth = {"truncation": "T = rounds an episode used (truncation), not a budget",
                 "messages": "T = messages with calls an episode used (truncation), not a budget"}.get(
            self.t_source, "T = the round cap episodes were run under (t_cap)")
        lines = [f"capability boundary: {self.treated} vs {self.base} "
                 f"({self.problems['question_id'].n_unique()} shared problems; {depth})"]
        for row in self.tests.iter_rows(named=True):
            budget = (f"{row['budget_min']}" if row["budget_min"] == row["budget_max"]
                      else f"{row['budget_min']}-{row['budget_max']}")
            lines.append(
                f"  T={row['t']}: solved at least once in {budget} samples: {self.base} {row['both'] + row['lost']}, "
                f"{self.treated} {row['both'] + row['gained']}; gained {row['gained']}, lost {row['lost']} "
                f"(expected {row['gained_expected']:.1f} vs {row['lost_expected']:.1f}; within-question permutation "
                f"p = {row['p_value']:.3g}, Holm {row['p_holm']:.3g}): {row['verdict']}; {_sparse_clause(row)}")
        if self.t_source in TRUNCATED:
            share = {(r["arm"], r["t"]): r["share_within_t"] for r in self.sets.iter_rows(named=True)}
            for arm in (self.base, self.treated):
                lines.append(f"  episodes with at most T rounds, {arm}: " + ", ".join(
                    f"T={tv} {share[(arm, tv)]:.2f}" for tv in self.t if (arm, tv) in share))
        def iv(row: dict) -> str:  # the interval, when one was asked for
            return interval_text(row["ci_low"], row["ci_high"])

        for row in self.split.filter(pl.col("component") == "total").iter_rows(named=True):
            lines.append(f"  T={row['t']}: PASS@(1,T) difference {row['value']:+.3f}{iv(row)}"
                         + ("" if row["detectable"] is None else f", smallest detectable {row['detectable']:.3f}"))
        kmax = max(self.k)
        for row in self.gap.filter(pl.col("k") == kmax).iter_rows(named=True):
            text = f"  T={row['t']}: gap at k={kmax} {row['gap']:+.3f}{iv(row)}"
            if len(self.k) > 1:
                crossed = self.crossings.filter(pl.col("t") == row["t"])
                text += "; curves cross at " + (", ".join(
                    f"k = {c:.2f}" + ("" if lo is None else f" [{lo:.2f}, {hi:.2f}]") + f" ({d}"
                    + ("" if sh is None else f"; {100 * sh:.0f}% of resamples cross") + ")"
                    for c, d, lo, hi, sh in crossed.select("k_cross", "direction", "ci_low", "ci_high",
                                                           "share_crossing").iter_rows())
                    if crossed.height else "no k in the grid")
            lines.append(text)
        lines.extend(f"  note: {note}" for note in self.notes)
        return "\n".join(lines)

    def _status(self, t: int, status: str) -> list[str]:
        if t not in self.t:
            raise InputError(f"`t` = {t} is not in the analysed grid {self.t}", field="t")
        return (self.problems.filter((pl.col("t") == t) & (pl.col("status") == status))
                ["question_id"].sort().to_list())

    # -- the result protocol (mechanism.core.results): summary(), to_frame(), to_dict(), a one-line repr
    def _summary_title(self) -> str:
        return self._summary_text().split("\n", 1)[0]

    def _summary_lines(self) -> list[str]:
        return [line.strip() for line in self._summary_text().split("\n")[1:]]

    def _summary_tables(self) -> dict[str, pl.DataFrame]:
        return {"tests": self.tests.drop("expansion", "contraction"), "split": self.split}

    def _headline(self) -> str:
        row = self.tests.sort("t").row(-1, named=True) if self.tests.height else None
        where = f"; T={row['t']}: gained {row['gained']}, lost {row['lost']}, p={row['p_value']:.3g}" if row else ""
        return f"{self.treated} vs {self.base}, {self.problems['question_id'].n_unique()} problems{where}"

    key_columns: ClassVar[dict[str, pl.DataType]] = {
        "base": pl.String(), "treated": pl.String(), "t": pl.Int64(), "k": pl.Int64(), "component": pl.String()}

    def _estimates(self) -> pl.DataFrame:
        """The PASS@(1,T) difference split into its ``component`` (quantity ``pass1``, with
        ``detectable``) and the gap per k (``gap``), treated - base, per T."""
        split = self.split.select(pl.lit("pass1").alias("quantity"), "component",
                                  "t", pl.lit(1, pl.Int64).alias("k"), pl.col("value").alias("estimate"),
                                  "ci_low", "ci_high", "detectable")
        gap = self.gap.select(pl.lit("gap").alias("quantity"), "t", "k", pl.col("gap").alias("estimate"),
                              "ci_low", "ci_high")
        return pl.concat([split, gap], how="diagonal_relaxed").with_columns(
            base=pl.lit(self.base), treated=pl.lit(self.treated))

    def verdict(self) -> str:
        """One sentence: gained and lost problems at the deepest T, the permutation test and its verdict."""
        deepest = self.tests.sort("t").row(-1, named=True)
        problems = f"{deepest['gained']} problem" + ("" if deepest["gained"] == 1 else "s")
        text = (f"capability boundary at T={deepest['t']}: {problems} gained, "
                f"{deepest['lost']} lost (permutation p = {deepest['p_value']:.3g}: {deepest['verdict']})")
        return text + "; " + _sparse_clause(deepest)

    def to_dict(self) -> dict:
        """JSON-ready dict: the grids, the notes and every table as a list of rows."""
        return {"base": self.base, "treated": self.treated, "k": list(self.k), "t": list(self.t),
                "alpha": self.alpha, "tol": self.tol, "t_source": self.t_source, "notes": list(self.notes),
                **{name: table.to_dicts() for name, table in self.tables().items()}}


def _sparse_clause(row: dict) -> str:
    """The sparse test's finding in words: a direction only where some question is rejected
    (its power, ``detectable_sparse``, is a column of ``tests``: the verdict stays one line)."""
    found = []
    if row.get("sparse_gained"):
        found.append(f"{row['sparse_gained']} question(s) gained")
    if row.get("sparse_lost"):
        found.append(f"{row['sparse_lost']} lost")
    what = " and ".join(found) if found else "no question beyond chance"
    return f"sparse test p = {row['p_sparse']:.3g}: {what}"


def boundary(
    runs: pl.DataFrame,
    *,
    base: str,
    treated: str,
    t: Iterable[int] = DEFAULT_T,
    k: Iterable[int] | None = None,
    ci: float | None = 0.95,
    n_boot: int = 1000,
    random_state: RandomState = 0,
    alpha: float = 0.05,
    tol: float = 0.01,
    t_source: TSource = "auto",
    n_permutations: int = 20_000,
    by: str | None = None,
    allow_few_shared: bool = False,
) -> Boundary:
    """Compare the capability boundaries of two arms.

    Parameters
    ----------
    runs
        Canonical trajectory table holding both arms (``arm``, ``question_id``,
        ``correct``, ``n_rounds``; ``t_cap`` when runs were made per T).
    base, treated
        The arm names compared (treated - base throughout).
    t
        Round budgets T.
    k
        Grid of k for the curves, gaps and marginal gains. Default: powers of two up to the
        smallest per-problem sample count.
    ci
        Level of the paired percentile bootstrap intervals over questions; ``None``: no
        intervals (no resampling; the interval columns are null).
    n_boot, random_state
        Bootstrap replicates and seed (int, Generator or None; turned into one integer once,
        so the curves, split, crossings and T* share their replicates; same seed, same output).
    alpha
        Level of the discordant-pair test (Holm-adjusted across the T grid).
    tol
        Saturation tolerance: a step in T gaining less than this is flat.
    by
        A task-type column (e.g. ``"category"``): the result also holds each category's
        headline table beside the pooled one (``by_category``, key column ``category``), on
        the same grids and seed.
    allow_few_shared
        Compare arms that share fewer than half of their questions; by default that is refused
        (:func:`mechanism.core.schema.refuse_few_shared`, an :class:`~mechanism.core.errors.InputError`
        naming ``question_key=``).
    n_permutations
        Within-question permutations of the boundary test (drawn from a stream keyed on the
        data, so the p-value does not depend on ``random_state``; its Monte Carlo error
        against the exact permutation p-value is about ``2 sqrt(p (1 - p) / n_permutations)``).
    t_source
        As in :func:`mechanism.analysis.passkt.pass_at_kt`.

    Returns
    -------
    Boundary

    Raises
    ------
    InputError
        An arm is missing, the arms share no problem, or k exceeds some problem's n.
    """
    ci = _check_options(runs, base=base, treated=treated, ci=ci, t_source=t_source, random_state=random_state,
                        alpha=alpha, n_permutations=n_permutations)
    seed = resolve_seed(random_state)
    if by is not None:
        return _boundary_by_category(runs, by, k=k, base=base, treated=treated, t=t, ci=ci, n_boot=n_boot,
                                     random_state=seed, alpha=alpha, tol=tol, t_source=t_source,
                                     n_permutations=n_permutations, allow_few_shared=allow_few_shared)
    # after the task-type split: its pooled call checks the pooled runs once, each category its own
    both, notes = _shared_runs(runs, base, treated, allow_few_shared)
    if t_source == "messages":  # every count below (solved sets, shares within T) reads rounds in messages
        both = message_rounds(both)

    if k is None:
        k = default_k(both, t, t_source=t_source)
    est = estimate_pass(both, k, t, ci=ci, n_boot=n_boot, random_state=seed, t_source=t_source)
    arm_of = est.groups["arm"].to_list()
    g_base, g_treat = arm_of.index(base), arm_of.index(treated)
    rows_b = np.flatnonzero(est.group_index == g_base)
    rows_t = np.flatnonzero(est.group_index == g_treat)
    # problems are sorted by (arm, question_id), so the two arms' rows line up question by question
    qids = est.problems["question_id"].to_numpy()[rows_b]
    ks, ts = est.k.tolist(), est.t.tolist()

    judged = _judged_successes(both, est, rows_b, rows_t, base, treated)
    problems, tests = _discordant(est, rows_b, rows_t, qids, alpha, judged, int(n_permutations))
    notes.extend(_unequal_samples_note(est, rows_b, rows_t, base, treated))
    tests = _name_verdicts(tests, est, notes)
    notes.extend(depth_notes(both, ts, est.t_source))
    split = _split(est, rows_b, problems, ci, n_boot, seed)
    curves = summary_table(est, ci=ci)
    notes.extend(small_sample_note(curves))
    sets = _solved_sets(problems, both, ts, base, treated)

    gap = _gap(est, g_base, g_treat, ci)
    marginal_k, marginal_t = _marginals(est, ci)
    saturation = _saturation(est, marginal_t, tol, ks, ci)
    crossings = _crossings(est, g_base, g_treat, ci)
    return Boundary(base=base, treated=treated, k=ks, t=ts, alpha=alpha, tol=tol, t_source=est.t_source,
                    problems=problems, sets=sets, tests=tests, split=split, curves=curves, gap=gap,
                    marginal_k=marginal_k, marginal_t=marginal_t, saturation=saturation,
                    crossings=crossings, notes=notes)


def _check_options(runs: pl.DataFrame, *, base: str, treated: str, ci: float | None, t_source: str,
                   random_state: RandomState, alpha: float, n_permutations: int) -> float | None:
    """The options of :func:`boundary` checked (each error names its parameter); the checked ``ci``."""
    if base == treated:
        raise InputError("`base` and `treated` must name different arms", field="treated")
    ci = check_ci(ci)
    check_choice(t_source, TSource, field="t_source")
    check_seed(random_state)  # one-line error for anything but a seed; the draws come from one seed
    if not 0.0 < alpha < 1.0:
        raise InputError(f"`alpha` must be in (0, 1), got {alpha}", field="alpha")
    if isinstance(n_permutations, bool) or not isinstance(n_permutations, (int, np.integer)) or n_permutations < 1:
        raise InputError(f"`n_permutations` must be a positive integer, got {n_permutations!r}",
                         field="n_permutations")
    if "arm" not in runs.columns:
        raise InputError("missing required column `arm`", field="arm")
    arms = set(runs["arm"].unique().to_list())
    for name, arm in (("base", base), ("treated", treated)):
        if arm not in arms:
            raise InputError(f"`{name}` arm {arm!r} is not in the runs (arms: {sorted(map(str, arms))})",
                             field=name)
    return ci


def _boundary_by_category(runs: pl.DataFrame, by: str, *, k: Iterable[int] | None, **opts: Any) -> Boundary:
    """The pooled boundary with each category's headline table beside it (``by_category``)."""
    pooled = boundary(runs, k=k, **opts)
    pooled.by_category, notes = by_category(
        runs, by, pooled, lambda mask: boundary(runs.filter(pl.Series(mask)), k=pooled.k, **opts))
    pooled.notes.extend(notes)
    return pooled


def _shared_runs(runs: pl.DataFrame, base: str, treated: str, allow_few_shared: bool) -> tuple[pl.DataFrame, list[str]]:
    """The two arms' runs on the questions both answered, and a note per arm on those it alone answered."""
    shared_questions(runs, [base, treated], what="boundary", allow_few=allow_few_shared)
    both = runs.filter(pl.col("arm").is_in([base, treated]))
    qsets = {a: set(both.filter(pl.col("arm") == a)["question_id"].unique().to_list()) for a in (base, treated)}
    shared = qsets[base] & qsets[treated]
    if not shared:
        raise InputError(f"arms {base!r} and {treated!r} share no `question_id`", field="question_id")
    notes = []
    for arm, other in ((base, treated), (treated, base)):
        only = len(qsets[arm] - qsets[other])
        if only:
            notes.append(f"{only} problem(s) answered only by {arm!r} are left out of the comparison")
    return both.filter(pl.col("question_id").is_in(sorted(shared))), notes


def _unequal_samples_note(est: PassEstimate, rows_b: np.ndarray, rows_t: np.ndarray, base: str,
                          treated: str) -> list[str]:
    if np.array_equal(est.n[rows_b], est.n[rows_t]):
        return []
    # B_T grows with n: an arm sampled more often solves more problems at least once
    return [f"the arms have different numbers of samples per problem ({base!r}: "
            f"{int(est.n[rows_b].min())}-{int(est.n[rows_b].max())}, {treated!r}: "
            f"{int(est.n[rows_t].min())}-{int(est.n[rows_t].max())}); solved sets are compared at a "
            "common budget of min(n_base, n_treated) samples per problem, the larger arm judged on one "
            "fixed subset of its samples per problem (the same at every T, chosen by a hash of question "
            "and sample id, no seed; expected counts from the unbiased estimator beside them); the test "
            "permutes arm labels within questions and does not depend on that subset"]


def _name_verdicts(tests: pl.DataFrame, est: PassEstimate, notes: list[str]) -> pl.DataFrame:
    """``tests`` with its ``verdict`` in words; the notes that qualify it are appended to ``notes``."""
    truncation = est.t_source in TRUNCATED
    where = " within T rounds used" if truncation else ""
    if int(est.n.max()) < 2:
        # one try per problem: "solved" is "solved on that try", so a significant difference
        # in solved sets is a difference in success rates, not evidence about the boundary
        notes.append("one sample per problem: solved sets are solved-once sets, not capability "
                     "boundaries; the exact test compares success rates (McNemar)")
        return tests.with_columns(
            verdict=pl.when(pl.col("expansion")).then(pl.lit(f"more solved on their one try{where}"))
            .when(pl.col("contraction")).then(pl.lit(f"fewer solved on their one try{where}"))
            .otherwise(pl.lit("no significant change")),
            expansion=pl.lit(False), contraction=pl.lit(False))
    budget = pl.when(pl.col("budget_min") == pl.col("budget_max")).then(
        pl.format("{} samples", pl.col("budget_min"))).otherwise(
        pl.format("{}-{} samples (common n per problem)", pl.col("budget_min"), pl.col("budget_max")))
    tests = tests.with_columns(
        verdict=pl.when(pl.col("expansion")).then(
            pl.format("more problems solved at least once in {}{}", budget, pl.lit(where)))
        .when(pl.col("contraction")).then(
            pl.format("fewer problems solved at least once in {}{}", budget, pl.lit(where)))
        .otherwise(pl.lit("no significant change")))
    if truncation and tests["contraction"].any():
        notes.append("fewer problems solved within T rounds used can mean the treated arm uses more "
                     "rounds, not that it lost ability: compare the shares of episodes with at most T "
                     "rounds, and run per-T caps (`t_cap`) for a budget claim")
    return tests


def _solved_sets(problems: pl.DataFrame, both: pl.DataFrame, ts: list[int], base: str, treated: str) -> pl.DataFrame:
    """Size of ``B_T`` per arm and T at the common budget, with the share of episodes within T."""
    sets = (problems.unpivot(index=["question_id", "t"], on=["base_solved", "treated_solved"],
                             variable_name="which", value_name="solved")
            .with_columns(arm=pl.when(pl.col("which") == "base_solved").then(pl.lit(base)).otherwise(pl.lit(treated)))
            .group_by("arm", "t").agg(n_problems=pl.len(), n_solved=pl.col("solved").sum())
            .with_columns(pl.col("n_problems", "n_solved").cast(pl.Int64),
                          share=pl.col("n_solved") / pl.col("n_problems")))
    return (sets.join(within_t_shares(both, ts), on=["arm", "t"], how="left")
            .sort(pl.col("arm") != base, "t"))


def solved_probability(n: np.ndarray, c: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Unbiased probability that m of a problem's n samples (c of them successes) hold a success.

    ``1 - C(n - c, m) / C(n, m)``, from the exact table of :func:`mechanism.analysis.passkt.ratio_table`
    once per distinct (n, m); ``m <= n`` elementwise.

    Examples
    --------
    >>> solved_probability(np.array([4, 16]), np.array([1, 4]), np.array([4, 4])).round(4).tolist()
    [1.0, 0.728]
    """
    n, c, m = (np.asarray(a, dtype=np.int64) for a in (n, c, m))
    out = np.empty(n.shape)
    pairs = np.unique(np.stack([n.reshape(-1), m.reshape(-1)], axis=1), axis=0)
    for nv, mv in pairs:
        mask = (n == nv) & (m == mv)
        out[mask] = 1.0 - ratio_table(int(nv), np.array([int(mv)]))[c[mask], 0]
    return out


def _discordant(est: PassEstimate, rows_b: np.ndarray, rows_t: np.ndarray, qids: np.ndarray,
                alpha: float, judged: tuple[np.ndarray, np.ndarray],
                n_permutations: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    n_t = est.t.size
    n_b, c_b = est.n[rows_b], est.c[rows_b]
    n_tr, c_tr = est.n[rows_t], est.c[rows_t]
    budget = np.minimum(n_b, n_tr)
    judged_b, judged_t = judged
    solved_b, solved_t = judged_b > 0, judged_t > 0
    p_b = solved_probability(n_b, c_b, budget)
    p_t = solved_probability(n_tr, c_tr, budget)
    status = np.select([solved_b & solved_t, solved_t & ~solved_b, solved_b & ~solved_t],
                       ["both", "gained", "lost"], default="neither")
    q = qids.size
    problems = pl.DataFrame({
        "question_id": np.repeat(qids, n_t).astype(str),
        "t": np.tile(est.t, q),
        "n_base": n_b.reshape(-1), "c_base": c_b.reshape(-1),
        "n_treated": n_tr.reshape(-1), "c_treated": c_tr.reshape(-1),
        "budget": budget.reshape(-1),
        "c_base_judged": judged_b.reshape(-1), "c_treated_judged": judged_t.reshape(-1),
        "p_solved_base": p_b.reshape(-1), "p_solved_treated": p_t.reshape(-1),
        "base_solved": solved_b.reshape(-1), "treated_solved": solved_t.reshape(-1),
        "status": status.reshape(-1),
        "pass1_base": (c_b / n_b).reshape(-1),
        "pass1_treated": (c_tr / n_tr).reshape(-1),
    }).with_columns(pl.col("t").cast(pl.Int64))
    counts = {s: (status == s).sum(axis=0) for s in STATUSES}
    p_discordant = np.array([
        binomtest(int(gained), int(gained + lost), 0.5, alternative="two-sided").pvalue if gained + lost else 1.0
        for gained, lost in zip(counts["gained"], counts["lost"])])
    statistic = (p_t - p_b).sum(axis=0)
    p_values = np.array([permutation_p_value(n_b[:, j], c_b[:, j], n_tr[:, j], c_tr[:, j], budget[:, j],
                                             n_permutations, data_stream(n_b[:, j], c_b[:, j], n_tr[:, j],
                                                                         c_tr[:, j], budget[:, j]))
                         for j in range(n_t)])
    p_holm = _holm(p_values)
    judged_b_, judged_t_ = judged
    sparse = [sparse_test(judged_b_[:, j], judged_t_[:, j], budget[:, j], alpha) for j in range(n_t)]
    sds = [summed_null_sd(n_b[:, j], c_b[:, j], n_tr[:, j], c_tr[:, j], budget[:, j]) for j in range(n_t)]
    tests = pl.DataFrame({
        "t": est.t.astype(np.int64), "n_problems": np.full(n_t, q, dtype=np.int64),
        "budget_min": budget.min(axis=0).astype(np.int64), "budget_max": budget.max(axis=0).astype(np.int64),
        **{s: counts[s].astype(np.int64) for s in STATUSES},
        "gained_expected": (p_t * (1.0 - p_b)).sum(axis=0), "lost_expected": (p_b * (1.0 - p_t)).sum(axis=0),
        "statistic": statistic, "p_value": p_values, "p_holm": p_holm, "p_discordant": p_discordant,
        "n_permutations": np.full(n_t, n_permutations, dtype=np.int64),
        "expansion": (statistic > 0) & (p_holm < alpha),
        "contraction": (statistic < 0) & (p_holm < alpha),
        # the sparse test: per-question exact tests, Tarone's family, Holm (few questions, high rate)
        "p_sparse": np.array([s["p_value"] for s in sparse]),
        "sparse_gained": np.array([s["gained"] for s in sparse], dtype=np.int64),
        "sparse_lost": np.array([s["lost"] for s in sparse], dtype=np.int64),
        "sparse_family": np.array([s["family"] for s in sparse], dtype=np.int64),
        "detectable_summed": np.array([summed_detectable(sds[j], budget[:, j], alpha) for j in range(n_t)]),
        "detectable_sparse": pl.Series([sparse_detectable(budget[:, j], sparse[j]["family"], alpha)
                                        for j in range(n_t)], dtype=pl.Int64),
    })
    return problems, tests


def permutation_p_value(n_b: np.ndarray, c_b: np.ndarray, n_t: np.ndarray, c_t: np.ndarray, m: np.ndarray,
                        n_permutations: int, rng: np.random.Generator, *, chunk: int = 2048) -> float:
    """Two-sided p-value of ``S = sum_q (P_t(q) - P_b(q))`` permuting arm labels within questions.

    ``P_a(q) = 1 - C(n_a - c_a, m) / C(n_a, m)`` is the unbiased probability that m of the
    arm's samples hold a success. Permuting the arm labels of a question's ``n_b + n_t``
    episodes leaves its ``c_b + c_t`` successes and makes the base arm's share of them
    hypergeometric, so one permutation is one hypergeometric draw per question; the per-
    question statistic is read from a table over the draw's support. Questions whose
    episodes all agree contribute a constant and are left out of the draws.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> n = np.full(30, 4)
    >>> p = permutation_p_value(n, np.zeros(30, int), n, np.full(30, 2), n, 2000, rng)
    >>> p < 0.001
    True
    """
    n_b, c_b, n_t, c_t, m = (np.asarray(a, dtype=np.int64) for a in (n_b, c_b, n_t, c_t, m))
    observed = float((solved_probability(n_t, c_t, m) - solved_probability(n_b, c_b, m)).sum())
    total_c, total_n = c_b + c_t, n_b + n_t
    live = (total_c > 0) & (total_c < total_n) & (m > 0)
    if not live.any():
        return 1.0
    nb, nt, mm, cc = n_b[live], n_t[live], m[live], total_c[live]
    constant = observed - float((solved_probability(nt, c_t[live], mm) - solved_probability(nb, c_b[live], mm)).sum())
    width = int(nb.max()) + 1
    support = np.arange(width)[None, :]                                  # base successes x
    ok = (support <= np.minimum(nb, cc)[:, None]) & (cc[:, None] - support <= nt[:, None])
    x = np.where(ok, support, 0)
    shape = x.shape
    rows = np.repeat(np.arange(nb.size), width)
    d = (solved_probability(nt[rows], np.clip(cc[rows] - x.reshape(-1), 0, nt[rows]), mm[rows])
         - solved_probability(nb[rows], x.reshape(-1), mm[rows])).reshape(shape)
    tol = 1e-9 * max(1.0, abs(observed))
    above = below = 0
    offset = np.arange(nb.size) * width
    for start in range(0, n_permutations, chunk):
        size = min(chunk, n_permutations - start)
        draws = rng.hypergeometric(cc, total_n[live] - cc, nb, size=(size, nb.size))
        stat = constant + d.reshape(-1)[offset[None, :] + draws].sum(axis=1)
        above += int((stat >= observed - tol).sum())
        below += int((stat <= observed + tol).sum())
    return float(min(1.0, 2.0 * min(above + 1, below + 1) / (n_permutations + 1)))


def data_stream(*arrays: np.ndarray) -> np.random.Generator:
    """A generator keyed on the data (a digest of the counts), not on any seed.

    The permutation test's draws come from it, so the same data give the same p-value
    whatever ``random_state`` is: the p-value is a fixed function of the data, within Monte
    Carlo error of the exact permutation p-value.
    """
    digest = hashlib.blake2b(digest_size=16)
    for a in arrays:
        digest.update(np.ascontiguousarray(np.asarray(a, dtype=np.int64)).tobytes())
        digest.update(b"|")
    raw = digest.digest()
    return np.random.default_rng(np.random.SeedSequence([int.from_bytes(raw[i:i + 4], "little")
                                                         for i in range(0, 16, 4)]))


def _sample_order(frame: pl.DataFrame) -> np.ndarray:
    """A fixed, seed-free pseudo-random order key per episode: splitmix64 of its sample id
    mixed with a digest of its question id (so each problem gets its own order)."""
    qids = frame["question_id"].cast(pl.String)
    uniq, inv = np.unique(qids.to_numpy().astype(str), return_inverse=True)
    q_hash = np.fromiter((int.from_bytes(hashlib.blake2b(q.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                                         "little") for q in uniq), dtype=np.uint64, count=uniq.size)
    if "sample_id" in frame.columns:
        sid = frame["sample_id"].cast(pl.Int64).to_numpy().astype(np.uint64)
    else:  # no sample ids: the episode's position within its (arm, question)
        sid = frame.select(pl.int_range(pl.len()).over("arm", "question_id"))
        sid = sid.to_series().to_numpy().astype(np.uint64)
    z = sid ^ q_hash[inv.reshape(-1)]
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _judged_successes(both: pl.DataFrame, est: PassEstimate, rows_b: np.ndarray, rows_t: np.ndarray,
                      base: str, treated: str) -> tuple[np.ndarray, np.ndarray]:
    """Successes within each T among one fixed subsample of m samples per arm and problem.

    ``m = min(n_base, n_treated)`` per problem (per T under ``t_cap``). The subsample is
    the m episodes with the smallest :func:`_sample_order` key: the same for every T, so
    under truncation the successes (and the solved sets) grow with T, and with no seed.
    Returns two ``(Q, T)`` integer arrays aligned with ``rows_b`` / ``rows_t``.
    """
    ts = est.t
    qids = est.problems["question_id"].to_numpy()[rows_b].astype(str)
    budget = np.minimum(est.n[rows_b], est.n[rows_t])
    q_pos = {q: i for i, q in enumerate(qids)}
    frame = both.select("arm", "question_id", "correct", "n_rounds",
                        *(["t_cap"] if est.t_source == "t_cap" else []))
    frame = frame.with_columns(pl.Series("_key", _sample_order(both), dtype=pl.UInt64),
                               pl.col("question_id").cast(pl.String))
    qi = np.fromiter((q_pos.get(q, -1) for q in frame["question_id"].to_list()), dtype=np.int64,
                     count=frame.height)
    frame = frame.with_columns(pl.Series("_q", qi))
    out = {arm: np.zeros((qids.size, ts.size), dtype=np.int64) for arm in (base, treated)}
    if est.t_source == "t_cap":
        depth = {int(v): j for j, v in enumerate(ts)}
        frame = frame.filter(pl.col("t_cap").is_in(list(depth)) & (pl.col("_q") >= 0)).with_columns(
            _d=pl.col("t_cap").replace_strict(depth, return_dtype=pl.Int64))
        frame = frame.with_columns(_rank=pl.col("_key").rank("ordinal").over("arm", "_q", "_d") - 1)
        m = budget[frame["_q"].to_numpy(), frame["_d"].to_numpy()]
        kept = frame.filter(pl.Series(frame["_rank"].to_numpy() < m) & pl.col("correct"))
        for arm in (base, treated):
            part = kept.filter(pl.col("arm") == arm)
            np.add.at(out[arm], (part["_q"].to_numpy(), part["_d"].to_numpy()), 1)
        return out[base], out[treated]
    frame = frame.filter(pl.col("_q") >= 0).with_columns(_rank=pl.col("_key").rank("ordinal").over("arm", "_q") - 1)
    m = budget[frame["_q"].to_numpy(), 0]
    kept = frame.filter(pl.Series(frame["_rank"].to_numpy() < m) & pl.col("correct"))
    for arm in (base, treated):
        part = kept.filter(pl.col("arm") == arm)
        first = np.searchsorted(ts, part["n_rounds"].to_numpy(), side="left")  # first T it fits under
        hist = np.zeros((qids.size, ts.size + 1), dtype=np.int64)
        np.add.at(hist, (part["_q"].to_numpy(), first), 1)
        out[arm] = np.cumsum(hist[:, :ts.size], axis=1)
    return out[base], out[treated]


def _holm(p: np.ndarray) -> np.ndarray:
    order = np.argsort(p, kind="stable")
    m = p.size
    adjusted = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return out


def _split(est: PassEstimate, rows_b: np.ndarray, problems: pl.DataFrame, ci: float | None,
           n_boot: int, seed: int) -> pl.DataFrame:
    """The PASS@(1,T) difference on the judged episodes and its split, exact per question.

    Every part is computed from the same m judged episodes per arm and problem as the
    solved sets, so ``total = efficiency + expansion - loss`` holds question by question.
    """
    shape = est.n[rows_b].shape
    m = problems["budget"].to_numpy().reshape(shape).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_b = np.where(m > 0, problems["c_base_judged"].to_numpy().reshape(shape) / m, 0.0)
        p_t = np.where(m > 0, problems["c_treated_judged"].to_numpy().reshape(shape) / m, 0.0)
    solved_b = problems["base_solved"].to_numpy().reshape(shape)
    solved_t = problems["treated_solved"].to_numpy().reshape(shape)
    parts = np.stack([
        p_t - p_b,                                   # total
        np.where(solved_b & solved_t, p_t - p_b, 0.0),  # efficiency: problems both solve
        np.where(solved_t & ~solved_b, p_t, 0.0),       # expansion: newly solved
        np.where(solved_b & ~solved_t, p_b, 0.0),       # loss: no longer solved
    ], axis=-1)  # (Q, T, 4)
    q = parts.shape[0]
    point = parts.mean(axis=0)
    if ci is None:  # no intervals asked for
        low = high = np.full(point.shape, np.nan)
    else:
        # the same question draws as the curves, so every interval here is paired with theirs
        weights = est.weights
        if weights is None or weights.shape[0] != n_boot:
            weights = question_bootstrap_weights(est.questions.size, n_boot,
                                                 stream(seed, "bootstrap")).astype(np.float64)
        w = weights[:, est.question_index[rows_b]]
        reps = (w @ parts.reshape(q, -1) / w.sum(axis=1)[:, None]).reshape(n_boot, *point.shape)
        low, high = percentile_interval(reps, ci, axis=0)
    names = ["total", "efficiency", "expansion", "loss"]
    n_t = est.t.size
    table = pl.DataFrame({
        "t": np.repeat(est.t, 4).astype(np.int64), "component": names * n_t,
        "value": point.reshape(-1), "ci_low": low.reshape(-1), "ci_high": high.reshape(-1),
        "detectable": np.asarray(detectable_effect(low.reshape(-1), high.reshape(-1), ci), dtype=float),
    })
    return _no_interval(table, ci)


def _no_interval(table: pl.DataFrame, ci: float | None) -> pl.DataFrame:
    """``table`` as computed; without intervals (``ci=None``) its interval columns are null, not NaN."""
    if ci is not None:
        return table
    return table.with_columns(pl.col(c).fill_nan(None) for c in ("ci_low", "ci_high", "detectable")
                              if c in table.columns)


def _interval(replicates: np.ndarray | None, ci: float | None,
              shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of replicate differences, NaN everywhere without intervals."""
    if ci is None or replicates is None:
        return np.full(shape, np.nan), np.full(shape, np.nan)
    return percentile_interval(replicates, ci, axis=0)


def _gap(est: PassEstimate, g_base: int, g_treat: int, ci: float | None) -> pl.DataFrame:
    diff = est.estimate[g_treat] - est.estimate[g_base]  # (T, K)
    reps = None if est.replicates is None else est.replicates[:, g_treat] - est.replicates[:, g_base]
    low, high = _interval(reps, ci, diff.shape)
    n_t, n_k = diff.shape
    table = pl.DataFrame({
        "t": np.repeat(est.t, n_k).astype(np.int64), "k": np.tile(est.k, n_t).astype(np.int64),
        "base": est.estimate[g_base].reshape(-1), "treated": est.estimate[g_treat].reshape(-1),
        "gap": diff.reshape(-1), "ci_low": low.reshape(-1), "ci_high": high.reshape(-1),
    })
    return _no_interval(table, ci)


def _marginals(est: PassEstimate, ci: float | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    arms = est.groups["arm"].to_list()
    k_list = est.k.tolist()
    pairs_k = [(i, k_list.index(2 * kv)) for i, kv in enumerate(k_list) if 2 * kv in k_list]
    rows_k, rows_t = [], []
    for g, arm in enumerate(arms):
        for i, j in pairs_k:
            gain = est.estimate[g, :, j] - est.estimate[g, :, i]
            reps = None if est.replicates is None else est.replicates[:, g, :, j] - est.replicates[:, g, :, i]
            low, high = _interval(reps, ci, gain.shape)
            for ti, tv in enumerate(est.t):
                rows_k.append((arm, int(tv), k_list[i], k_list[j], gain[ti], low[ti], high[ti]))
        for ti in range(est.t.size - 1):
            gain = est.estimate[g, ti + 1] - est.estimate[g, ti]
            reps = None if est.replicates is None else est.replicates[:, g, ti + 1] - est.replicates[:, g, ti]
            low, high = _interval(reps, ci, gain.shape)
            step = int(est.t[ti + 1] - est.t[ti])
            for ki, kv in enumerate(k_list):
                rows_t.append((arm, kv, int(est.t[ti]), int(est.t[ti + 1]), gain[ki], gain[ki] / step,
                               low[ki], high[ki]))
    marginal_k = pl.DataFrame(rows_k, schema={"arm": pl.String, "t": pl.Int64, "k": pl.Int64, "k_next": pl.Int64,
                                              "gain": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64},
                              orient="row")
    marginal_t = pl.DataFrame(rows_t, schema={"arm": pl.String, "k": pl.Int64, "t": pl.Int64, "t_next": pl.Int64,
                                              "gain": pl.Float64, "gain_per_round": pl.Float64,
                                              "ci_low": pl.Float64, "ci_high": pl.Float64}, orient="row")
    return _no_interval(marginal_k.sort("arm", "t", "k"), ci), _no_interval(marginal_t.sort("arm", "k", "t"), ci)


def saturation_depth(t_grid: list[int], gains: list[float], tol: float) -> int | None:
    """Smallest T of the grid from which every later step gains less than ``tol``.

    ``gains[i]`` is the gain of the step ``t_grid[i] -> t_grid[i + 1]``. None when the last
    step still gains ``tol`` or more (not saturated within the grid).
    """
    if len(gains) != len(t_grid) - 1:
        raise ValueError("need one gain per step of the grid")
    if not gains or gains[-1] >= tol:
        return None
    i = len(gains) - 1
    while i >= 0 and gains[i] < tol:
        i -= 1
    return t_grid[i + 1]


def _saturation(est: PassEstimate, marginal_t: pl.DataFrame, tol: float, ks: list[int],
                ci: float | None) -> pl.DataFrame:
    rows = []
    for (arm, kv), part in marginal_t.sort("arm", "k", "t").group_by("arm", "k", maintain_order=True):
        grid = part["t"].to_list() + [part["t_next"][-1]] if part.height else []
        rows.append((arm, kv, saturation_depth(grid, part["gain"].to_list(), tol) if grid else None, tol))
    table = pl.DataFrame(rows, schema={"arm": pl.String, "k": pl.Int64, "t_star": pl.Int64, "tol": pl.Float64},
                         orient="row")
    # the same rule on every bootstrap replicate of the curves
    reps = _saturation_replicates(est.replicates, est.t, tol) if est.replicates is not None else None
    arms = est.groups["arm"].to_list()
    k_at = {kv: j for j, kv in enumerate(est.k.tolist())}
    lo_col, hi_col, share_col = [], [], []
    alpha = None if ci is None else (1.0 - ci) / 2.0
    for arm, kv in table.select("arm", "k").iter_rows():
        if reps is None or alpha is None or est.t.size < 2:
            lo_col.append(None), hi_col.append(None), share_col.append(None)
            continue
        x = reps[:, arms.index(arm), k_at[kv]]  # inf: not saturated within the grid
        lo = float(np.quantile(x, alpha, method="lower"))
        hi = float(np.quantile(x, 1.0 - alpha, method="higher"))
        lo_col.append(int(lo) if np.isfinite(lo) else None)
        hi_col.append(int(hi) if np.isfinite(hi) else None)
        share_col.append(float(np.isfinite(x).mean()))
    return table.with_columns(pl.Series("ci_low", lo_col, dtype=pl.Int64), pl.Series("ci_high", hi_col, dtype=pl.Int64),
                              pl.Series("share_saturated", share_col, dtype=pl.Float64))


def _saturation_replicates(replicates: np.ndarray, t_grid: np.ndarray, tol: float) -> np.ndarray:
    """T* of every replicate, vectorised: ``(B, G, K)``, ``inf`` where the last step gains ``tol`` or more.

    Same rule as :func:`saturation_depth`: T* is ``t_grid[j]`` for the smallest j from which
    every step gains less than ``tol``.
    """
    gains = np.diff(replicates, axis=2)                 # (B, G, T-1, K)
    flat = np.nan_to_num(gains, nan=np.inf) < tol
    trailing = np.cumprod(flat[:, :, ::-1], axis=2).sum(axis=2)  # steps at the end that are flat
    steps = gains.shape[2]
    j = steps - trailing
    out = np.where(trailing > 0, np.asarray(t_grid, dtype=float)[np.minimum(j, steps)], np.inf)
    return out


def crossing_points(k: np.ndarray, diff: np.ndarray) -> list[tuple[float, str]]:
    """Where ``diff`` (treated - base over the k grid) changes sign, on a log2 k scale.

    Returns ``(k_cross, direction)`` pairs; ``direction`` is ``"treated overtakes base"``
    or ``"base overtakes treated"``. Exact zeros between opposite signs cross at the middle
    of the zero run (geometric mean of its k).
    """
    x = np.log2(np.asarray(k, dtype=np.float64))
    d = np.asarray(diff, dtype=np.float64)
    nonzero = np.flatnonzero(np.abs(d) > 1e-12)
    out = []
    for a, b in zip(nonzero[:-1], nonzero[1:]):
        if np.sign(d[a]) == np.sign(d[b]):
            continue
        if b == a + 1:
            xc = x[a] + (x[b] - x[a]) * d[a] / (d[a] - d[b])
        else:
            xc = (x[a + 1] + x[b - 1]) / 2.0
        out.append((float(2.0 ** xc), "treated overtakes base" if d[b] > 0 else "base overtakes treated"))
    return out


def _crossings(est: PassEstimate, g_base: int, g_treat: int, ci: float | None) -> pl.DataFrame:
    rows = []
    reps = est.replicates
    for ti, tv in enumerate(est.t):
        diff = est.estimate[g_treat, ti] - est.estimate[g_base, ti]
        found = crossing_points(est.k, diff)
        if not found:
            continue
        # every replicate's crossings, from the same resamples as the curves' intervals
        rep_cross = ([] if reps is None else
                     [crossing_points(est.k, d) for d in reps[:, g_treat, ti] - reps[:, g_base, ti]])
        for kc, direction in found:
            near = []
            for crossings in rep_cross:
                same = [c for c, d in crossings if d == direction]
                if same:  # the crossing of this direction nearest the estimate, on log2 k
                    near.append(min(same, key=lambda c: abs(np.log2(c) - np.log2(kc))))
            if near:
                lo, hi = percentile_interval(np.asarray(near), ci)
                rows.append((int(tv), kc, direction, float(lo), float(hi), len(near) / len(rep_cross)))
            else:
                rows.append((int(tv), kc, direction, None, None, 0.0 if rep_cross else None))
    return pl.DataFrame(rows, schema={"t": pl.Int64, "k_cross": pl.Float64, "direction": pl.String,
                                      "ci_low": pl.Float64, "ci_high": pl.Float64,
                                      "share_crossing": pl.Float64}, orient="row")


# ----------------------------------------------------------------------------- sparse gains
def fisher_two_sided(x_b: np.ndarray, x_t: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per question: Fisher's exact two-sided p-value of ``x_b`` vs ``x_t`` successes in ``m``
    samples each, and the smallest p-value its margin allows (1 when every sample agrees).

    Vectorised over questions: the support of the base successes given the total is padded to
    ``max(m) + 1``. Two-sided: the sum of the hypergeometric probabilities no larger than the
    observed one (with a relative tolerance of 1e-7 for ties).

    Examples
    --------
    >>> p, p_min = fisher_two_sided(np.array([0, 2]), np.array([8, 2]), np.array([8, 8]))
    >>> round(float(p[0]), 6), round(float(p[1]), 6), round(float(p_min[1]), 4)
    (0.000155, 1.0, 0.0769)
    """
    x_b, x_t, m = (np.asarray(a, dtype=np.int64) for a in (x_b, x_t, m))
    total = x_b + x_t
    width = int(m.max(initial=0)) + 1
    support = np.arange(width)[None, :]
    ok = (support <= np.minimum(m, total)[:, None]) & (total[:, None] - support <= m[:, None])
    pmf = np.where(ok, hypergeom.pmf(support, 2 * m[:, None], total[:, None], m[:, None]), 0.0)
    observed = np.take_along_axis(pmf, np.clip(x_b, 0, width - 1)[:, None], axis=1)
    p = np.where(pmf <= observed * (1 + 1e-7), pmf, 0.0).sum(axis=1)
    # the smallest attainable p: the sum of the probabilities at most the least likely point
    lowest = np.where(ok, pmf, np.inf).min(axis=1, keepdims=True)
    p_min = np.where(pmf <= lowest * (1 + 1e-7), pmf, 0.0).sum(axis=1)
    return np.clip(p, 0.0, 1.0), np.clip(p_min, 0.0, 1.0)


def tarone_count(p_min: np.ndarray, alpha: float) -> int:
    """Tarone's number of testable questions: the smallest K with at most K questions whose
    smallest attainable p is at most ``alpha / K`` (questions that can never reach the threshold
    do not count against the others, so the family is only as large as it can be)."""
    p_min = np.sort(np.asarray(p_min, dtype=float))
    for k in range(1, p_min.size + 1):
        if int((p_min <= alpha / k).sum()) <= k:
            return k
    return max(p_min.size, 1)


def sparse_test(x_b: np.ndarray, x_t: np.ndarray, m: np.ndarray, alpha: float) -> dict[str, Any]:
    """The test built for few questions gained (or lost) each at a high rate, on the common budget.

    Each question gets Fisher's exact two-sided test of the judged successes (``x_b`` vs ``x_t``
    in ``m`` samples each); the family is Tarone's (questions whose margin allows a p below the
    threshold); Holm's step-down over it at ``alpha``. ``p_value`` is the smallest Holm-adjusted
    p (1 when no question is testable); ``gained`` / ``lost`` count the questions it rejects in
    each direction.
    """
    p, p_min = fisher_two_sided(x_b, x_t, m)
    k = tarone_count(p_min, alpha)
    testable = p_min <= alpha / k
    adjusted = np.ones(p.size)
    if testable.any():
        idx = np.flatnonzero(testable)
        # Holm over Tarone's family of K: the i-th smallest p is multiplied by K - i
        order = np.argsort(p[idx], kind="stable")
        scaled = np.maximum.accumulate((k - np.arange(idx.size)) * p[idx][order])
        holm = np.empty(idx.size)
        holm[order] = np.minimum(scaled, 1.0)
        adjusted[idx] = holm
    reject = adjusted < alpha
    return {"p_value": float(adjusted.min(initial=1.0)), "gained": int((reject & (x_t > x_b)).sum()),
            "lost": int((reject & (x_b > x_t)).sum()), "testable": int(testable.sum()), "family": int(k)}


def sparse_detectable(m: np.ndarray, family: int, alpha: float, *, rate: float = 0.9, power: float = 0.8) -> int | None:
    """Smallest number of questions gained from base 0 to ``rate`` per sample that the sparse
    test detects with probability ``power``, for budgets ``m`` and a family of ``family``.

    A gained question is rejected when its treated successes reach the smallest count whose
    Fisher p against 0 is below ``alpha / family``; g questions are detected when one is.
    Questions take the median budget. ``None`` when no count can reach the threshold.
    """
    budget = int(np.median(np.asarray(m))) if np.size(m) else 0
    if budget < 1:
        return None
    counts = np.arange(budget + 1)
    p, _ = fisher_two_sided(np.zeros(budget + 1, dtype=np.int64), counts, np.full(budget + 1, budget))
    enough = np.flatnonzero(p < alpha / max(family, 1))
    if enough.size == 0:
        return None
    one = float(binom.sf(enough[0] - 1, budget, rate))
    if one <= 0:
        return None
    return int(np.ceil(np.log(1 - power) / np.log(1 - one))) if one < 1 else 1


def summed_detectable(sd: float, m: np.ndarray, alpha: float, *, rate: float = 0.9, power: float = 0.8) -> float:
    """The same for the summed test, from the normal approximation of its permutation null
    (standard deviation ``sd``): each gained question adds ``1 - (1 - rate)^m`` to the
    statistic, and g of them are detected with probability ``power`` when
    ``g (1 - (1 - rate)^m) = (z_{1 - alpha/2} + z_power) sd``."""
    budget = float(np.median(np.asarray(m))) if np.size(m) else 0.0
    step = 1.0 - (1.0 - rate) ** budget
    if step <= 0 or not np.isfinite(sd):
        return float("nan")
    return float(np.ceil((norm.ppf(1 - alpha / 2) + norm.ppf(power)) * sd / step))


def summed_null_sd(n_b: np.ndarray, c_b: np.ndarray, n_t: np.ndarray, c_t: np.ndarray, m: np.ndarray) -> float:
    """Exact standard deviation of the summed statistic under the within-question permutation
    null (a sum of independent per-question terms, each a function of one hypergeometric draw)."""
    n_b, c_b, n_t, c_t, m = (np.asarray(a, dtype=np.int64) for a in (n_b, c_b, n_t, c_t, m))
    cc, nn = c_b + c_t, n_b + n_t
    live = (cc > 0) & (cc < nn) & (m > 0)
    if not live.any():
        return 0.0
    nb, nt, mm, cc, nn = n_b[live], n_t[live], m[live], cc[live], nn[live]
    width = int(nb.max()) + 1
    x = np.arange(width)[None, :]
    ok = (x <= np.minimum(nb, cc)[:, None]) & (cc[:, None] - x <= nt[:, None])
    pmf = np.where(ok, hypergeom.pmf(x, nn[:, None], cc[:, None], nb[:, None]), 0.0)
    xs = np.where(ok, x, 0)
    rows = np.repeat(np.arange(nb.size), width)
    d = (solved_probability(nt[rows], np.clip(cc[rows] - xs.reshape(-1), 0, nt[rows]), mm[rows])
         - solved_probability(nb[rows], xs.reshape(-1), mm[rows])).reshape(xs.shape)
    mean = (pmf * d).sum(axis=1)
    var = (pmf * d * d).sum(axis=1) - mean * mean
    return float(np.sqrt(np.clip(var, 0.0, None).sum()))
