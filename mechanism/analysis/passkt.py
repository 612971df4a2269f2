"""PASS@(k,T): the chance that at least one of k episodes, each allowed at most T tool-use
rounds, ends with a correct answer (docs/methods.md, "What it answers").

With n samples of a problem of which c_T succeed within T rounds, the unbiased estimator
(Chen et al. 2021) is ``1 - C(n - c_T, k) / C(n, k)``, averaged over problems. Everything
here is vectorised over problems, k and T: successes are counted for every depth in one
polars group-by, and the ratio ``C(n - c, k) / C(n, k)`` is read from an exact table built
once per distinct n (cumulative products of ``(n - c - j) / (n - j)``), never looped over
problems and never through ``lgamma`` differences.

``metric="pass^k"`` gives tau-bench's reliability measure instead: the chance that *all* k
of k episodes succeed, ``C(c_T, k) / C(n, k)`` per problem, averaged, on the same T axis
and with the same intervals. It is read from the same exact table: ``C(c, k) / C(n, k)`` is
``C(n - c', k) / C(n, k)`` with ``c' = n - c`` failures. :func:`consistency` gives the
per-task view behind it (solved in all, none or some trials).

Counting starts from the table. When each (arm, question) is one contiguous block of rows
(how tables are usually written), one pass comparing neighbouring rows finds the blocks and
proves ``(arm, question_id, sample_id)`` unique, and one ``bincount`` counts every depth;
otherwise a hash group-by counts them and its distinct sample ids per group prove the keys
unique. Either way the duplicate-key check costs a fraction of the counting, not a hash of
every key (see ``benchmarks/bench_passkt.py``).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal, get_args

import numpy as np
import polars as pl

from mechanism.core.errors import InputError
from mechanism.core.options import RandomState, TSource, check_choice, check_ci, check_seed
from mechanism.core.resample import percentile_interval, question_bootstrap_weights, resolve_seed, stream
from mechanism.core.results import Result, TableResult
from mechanism.core.schema import PARALLEL, check_unique_keys, validate

DEFAULT_K: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
DEFAULT_T: tuple[int, ...] = (0, 1, 2, 3, 5)
T_SOURCES: tuple[str, ...] = get_args(TSource)
Metric = Literal["pass@k", "pass^k"]
METRICS: tuple[str, ...] = get_args(Metric)
Interval = Literal["auto", "percentile", "studentized", "wilson", "bootstrap-t"]
INTERVALS: tuple[str, ...] = get_args(Interval)
#: Below this many problems in a curve the percentile bootstrap under-covers (worst at large
#: k, see benchmarks/RESULTS.md): ``interval="auto"`` then uses the Wilson-type interval, and
#: :func:`small_sample_note` gives the sentence results and reports print.
SMALL_SAMPLE = 30


def small_sample_note(curves: pl.DataFrame) -> list[str]:
    """The warning a reader needs when some curve of ``curves`` (a :func:`pass_at_kt` table)
    rests on fewer than :data:`SMALL_SAMPLE` problems; empty otherwise.

    Returned, not printed (nothing prints unasked): result objects and reports show it.
    """
    if "n_problems" not in curves.columns or curves.height == 0:
        return []
    fewest = int(curves["n_problems"].min())
    if fewest >= SMALL_SAMPLE:
        return []
    used = set(curves["interval"].to_list()) if "interval" in curves.columns else set()
    if "wilson" in used:
        how = ("Wilson-type (a score interval on the problems' effective sample size, t with P - 1 degrees of "
               "freedom), since the percentile bootstrap and the studentized interval under-cover there")
    elif "studentized" in used:
        how = "studentized (t with P - 1 degrees of freedom), since the percentile bootstrap under-covers there"
    else:
        how = "percentile bootstrap intervals, which under-cover there"
    return [f"small sample: some PASS@(k,T) curves rest on fewer than {SMALL_SAMPLE} problems (fewest {fewest}); "
            f"their intervals are {how}: read them as approximate"]


@dataclass(repr=False)
class PassEstimate(Result):
    """Per-problem PASS@(k,T) values and their group means, with bootstrap replicates.

    The common core of :func:`pass_at_kt`, :func:`pass_at_kt_per_problem` and the boundary
    analysis, so that every downstream difference is computed from the same replicates.

    Attributes
    ----------
    problems
        One row per (group, question): the ``by`` columns and ``question_id``.
    groups
        One row per group (the ``by`` columns), in output order.
    k, t
        The grids, ascending.
    n, c
        Integer arrays ``(P, len(t))``: samples available at each depth and successes
        within it, per problem.
    values
        ``(P, len(t), len(k))`` per-problem PASS@(k,T).
    group_index
        ``(P,)`` index of each problem's group in ``groups``.
    question_index
        ``(P,)`` index of each problem's question in ``questions``.
    questions
        Sorted distinct question ids: the units the bootstrap resamples.
    estimate
        ``(G, len(t), len(k))`` mean over each group's problems.
    replicates
        ``(B, G, len(t), len(k))`` bootstrap replicate means, or ``None`` without intervals.
    t_source
        ``"t_cap"``, ``"truncation"`` or ``"messages"``.
    metric
        ``"pass@k"`` (at least one of k succeeds) or ``"pass^k"`` (all k succeed).
    weights
        ``(B, len(questions))`` the bootstrap's question weights (``None`` without intervals):
        later stages on the same questions reuse them instead of drawing them again.
    ci
        The intervals' level (``None``: no intervals).
    by
        The grouping columns (the key columns of :meth:`to_frame`, before ``metric, k, t``).
    """

    problems: pl.DataFrame
    groups: pl.DataFrame
    k: np.ndarray
    t: np.ndarray
    n: np.ndarray
    c: np.ndarray
    values: np.ndarray
    group_index: np.ndarray
    question_index: np.ndarray
    questions: np.ndarray
    estimate: np.ndarray
    replicates: np.ndarray | None
    t_source: str
    weights: np.ndarray | None = None
    metric: Metric = "pass@k"
    ci: float | None = None
    by: tuple[str, ...] = ("arm",)

    key_columns: ClassVar[dict[str, pl.DataType]] = {"metric": pl.String(), "k": pl.Int64(), "t": pl.Int64()}

    def _keys(self) -> dict[str, pl.DataType | None]:
        return {**dict.fromkeys(self.by), **self.key_columns}

    def curves(self) -> pl.DataFrame:
        """The table :func:`pass_at_kt` returns for this estimate."""
        return summary_table(self, ci=self.ci)

    def _estimates(self) -> pl.DataFrame:
        """PASS@(k,T) (or pass^k: ``metric``) per group, k and T, quantity ``pass_at_kt``."""
        curves = self.curves()
        return curves.select(*self.by, "metric", "k", "t", pl.lit("pass_at_kt").alias("quantity"),
                             pl.col("pass_at_kt").alias("estimate"),
                             *[c for c in ("ci_low", "ci_high") if c in curves.columns])

    def tables(self) -> dict[str, pl.DataFrame]:
        """``estimates`` (:meth:`to_frame`), ``curves`` and ``per_problem``."""
        n_p, n_t, n_k = self.values.shape
        per_problem = self.problems[np.repeat(np.arange(n_p), n_t * n_k)].with_columns(
            pl.Series("t", np.tile(np.repeat(self.t, n_k), n_p), dtype=pl.Int64),
            pl.Series("k", np.tile(self.k, n_p * n_t), dtype=pl.Int64),
            pl.Series("pass_at_kt", self.values.reshape(-1), dtype=pl.Float64))
        return {"estimates": self.to_frame(), "curves": self.curves(), "per_problem": per_problem}

    def to_dict(self) -> dict:
        """JSON-ready dict: the grids, the settings and the curves as a list of rows."""
        return {"by": list(self.by), "k": self.k.tolist(), "t": self.t.tolist(), "t_source": self.t_source,
                "metric": self.metric, "ci": self.ci, "pass_at_kt": self.curves().to_dicts()}

    def verdict(self) -> str:
        """One line: each curve's value at the largest k and T, with its interval."""
        curves = self.curves().filter((pl.col("k") == int(self.k.max())) & (pl.col("t") == int(self.t.max())))
        name = "PASS" if self.metric == "pass@k" else "pass^k"
        parts = []
        for row in curves.iter_rows(named=True):
            who = ", ".join(str(row[c]) for c in self.by) or "all"
            text = f"{who} {row['pass_at_kt']:.3f}"
            if row.get("ci_low") is not None:
                text += f" [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
            parts.append(text)
        return f"{name}@({int(self.k.max())},{int(self.t.max())}): " + "; ".join(parts)

    def _summary_title(self) -> str:
        return (f"{'PASS@(k,T)' if self.metric == 'pass@k' else 'pass^k'} of {max(self.groups.height, 1)} "
                f"group(s) on {self.problems.height} problems (T from {self.t_source})")

    def _summary_lines(self) -> list[str]:
        return [self.verdict(), *small_sample_note(self.curves())]

    def _headline(self) -> str:
        return f"{self.metric}, {max(self.groups.height, 1)} group(s), k={self.k.tolist()}, t={self.t.tolist()}"


def pass_at_kt(
    runs: pl.DataFrame,
    k: Iterable[int] = DEFAULT_K,
    t: Iterable[int] = DEFAULT_T,
    *,
    ci: float | None = 0.95,
    n_boot: int = 1000,
    random_state: RandomState = 0,
    by: Sequence[str] = ("arm",),
    t_source: TSource = "auto",
    metric: Metric = "pass@k",
    interval: Interval = "auto",
) -> PassTable:
    """PASS@(k,T) per arm (or other grouping), with bootstrap intervals over problems.

    Parameters
    ----------
    runs
        Canonical trajectory table. Needs ``question_id``, ``correct``, ``n_rounds`` and the
        ``by`` columns; ``t_cap`` is used when present (see ``t_source``).
    k
        Numbers of sampled episodes. Every problem needs at least ``max(k)`` samples.
    t
        Round budgets T (tool calls allowed).
    ci
        Confidence level of the percentile bootstrap interval, or ``None`` for no interval
        columns (then no resampling is done).
    n_boot
        Bootstrap replicates.
    random_state
        Seed of the bootstrap (int, ``numpy.random.Generator`` or None); the same seed gives
        the same intervals, and the same question resamples as every other stage given it.
    by
        Columns that define the curves (default one per arm).
    t_source
        ``"t_cap"``: an episode counts for T when it was run with ``t_cap == T``;
        ``"truncation"``: it counts for T when correct with ``n_rounds <= T``;
        ``"messages"``: the same, with the rounds counted in the model's messages that made
        calls, calls sent together in one message (parallel function calling, the steps'
        ``parallel`` flag) one round (:func:`message_rounds`); ``"auto"`` (default) counts
        by ``t_cap`` when that column holds more than one cap (runs made per T), else by
        truncation.
    metric
        ``"pass@k"`` (default): at least one of k episodes succeeds, ``1 - C(n - c, k) /
        C(n, k)``; ``"pass^k"`` (tau-bench's reliability measure): all k succeed,
        ``C(c, k) / C(n, k)``. Both are averaged over problems, on the same T axis and with
        the same intervals.
    interval
        ``"percentile"``: percentile bootstrap over problems; ``"studentized"``: the mean's
        studentized interval, ``estimate +- t_{P-1} s / sqrt(P)`` over the P problems of the
        curve, clipped to [0, 1] (the percentile bootstrap under-covers with few problems:
        it ignores that the spread is estimated); ``"wilson"``: a Wilson score interval with
        the curve's effective sample size ``m (1 - m) / se^2`` and ``t_{P-1}``
        (:func:`wilson_interval`: asymmetric, pulled away from 0 and 1, where skewed
        per-problem values make the studentized interval miss); ``"bootstrap-t"``: the
        studentized bootstrap (:func:`bootstrap_t_interval`, Wilson where every value is 0 or
        1); ``"auto"`` (default): for pass@k, Wilson for a curve with fewer than 30 problems
        (:func:`small_sample_note` words it for a reader) and for a point where every
        problem's value is 0 or every one is 1 (the percentile interval would be that point),
        percentile otherwise; for pass^k, whose per-problem values are far more skewed, the
        bootstrap-t at every size (Wilson at the bounds).

    Returns
    -------
    PassTable
        A ``polars.DataFrame`` that is also a result (``notes``, ``summary()``, ``tables()`` and
        the long ``to_frame()``, see :class:`PassTable`): the ``by`` columns, then ``k``, ``t``,
        ``pass_at_kt`` (the value of ``metric``), ``ci_low``, ``ci_high`` and ``interval`` (the
        method; left out when ``ci=None``), ``n_problems``, ``t_source`` and ``metric``; sorted by group, k, t.

    Raises
    ------
    InputError
        Missing columns, empty grids, or a problem with fewer samples than ``max(k)``
        (the message names the problem; it is never dropped silently).

    Examples
    --------
    >>> import polars as pl
    >>> runs = pl.DataFrame({"arm": ["a"] * 4, "question_id": ["q1", "q1", "q2", "q2"],
    ...                      "correct": [True, False, False, False], "n_rounds": [1, 2, 0, 3]})
    >>> pass_at_kt(runs, k=[1, 2], t=[0, 1], ci=None)["pass_at_kt"].to_list()
    [0.0, 0.25, 0.0, 0.5]
    >>> pass_at_kt(runs, k=[1, 2], t=[1], ci=None, metric="pass^k")["pass_at_kt"].to_list()
    [0.25, 0.0]
    """
    check_choice(interval, Interval, field="interval")
    est = estimate_pass(runs, k, t, ci=ci, n_boot=n_boot, random_state=random_state, by=by,
                        t_source=t_source, metric=metric)
    table = summary_table(est, ci=ci, interval=interval)
    notes = list(small_sample_note(table))
    if int(est.n.max()) < 2:
        notes.append("one sample per problem: PASS@(1,T) is the success rate, and no larger k is estimable")
    if est.t_source in TRUNCATED:
        notes.append("T by truncation: an episode counts for T if it is correct and used at most T rounds "
                     "(the rounds it happened to use, not a budget)")
    if est.t_source == "messages":
        notes.append(MESSAGES_NOTE)
    return PassTable.with_notes(table, notes, by=est.by)


class PassTable(TableResult):
    """What :func:`pass_at_kt` returns: a ``polars.DataFrame`` (every DataFrame method and
    ``isinstance(x, pl.DataFrame)`` hold; derived frames are plain DataFrames, and it prints as
    the table it is) that is also a :class:`~mechanism.core.results.Result`
    (:class:`~mechanism.core.results.TableResult`): ``notes`` (small samples, how T was counted),
    ``summary()``, ``verdict()``, ``tables()``, ``to_dict()`` and ``to_frame()``, the long form of
    the shared schema (keys ``by`` columns, ``metric``, ``k``, ``t``; quantity ``pass_at_kt``).
    ``pl.DataFrame(table)`` is the wide table as a plain frame.

    Examples
    --------
    >>> runs = pl.DataFrame({"arm": ["a"] * 4, "question_id": ["q1", "q1", "q2", "q2"],
    ...                      "correct": [True, False, False, False], "n_rounds": [1, 2, 0, 3]})
    >>> table = pass_at_kt(runs, k=[1], t=[1], ci=None)
    >>> isinstance(table, pl.DataFrame), table.notes[-1][:29]
    (True, 'T by truncation: an episode c')
    >>> table.to_frame().columns
    ['arm', 'metric', 'k', 't', 'detectable', 'quantity', 'estimate', 'ci_low', 'ci_high']
    >>> type(pl.DataFrame(table)).__name__, sorted(table.tables())
    ('DataFrame', ['curves', 'estimates'])
    """

    #: The key columns before ``metric, k, t`` (None: every column that is not a value).
    by: tuple[str, ...] | None = None

    key_columns: ClassVar[dict[str, pl.DataType]] = {"metric": pl.String(), "k": pl.Int64(), "t": pl.Int64()}
    value_column: ClassVar[str] = "pass_at_kt"
    quantity: ClassVar[str] = "pass_at_kt"
    table_name: ClassVar[str] = "curves"

    @classmethod
    def with_notes(cls, frame: pl.DataFrame, notes: Iterable[str] = (), *,
                   by: Sequence[str] | None = None) -> PassTable:
        """``frame`` as a :class:`PassTable` holding ``notes``; ``by`` its key columns (default:
        every column that is not a value)."""
        out = super().with_notes(frame, notes)
        out.by = None if by is None else tuple(by)
        return out

    def _by(self) -> list[str]:
        if self.by is not None:
            return list(self.by)
        return [c for c in self.columns if c not in _VALUE_COLUMNS]

    def _keys(self) -> dict[str, pl.DataType | None]:
        return {**dict.fromkeys(self._by()), **self.key_columns}

    def _wide(self) -> pl.DataFrame:
        """The curves, with ``metric`` (``pass@k`` unless the table names it)."""
        frame = pl.DataFrame(self)
        return frame if "metric" in frame.columns else frame.with_columns(metric=pl.lit("pass@k"))

    def verdict(self) -> str:
        """One line: each curve's value at the largest k and T, with its interval."""
        if not {"k", "t", "pass_at_kt"} <= set(self.columns) or self.height == 0:
            return "PASS@(k,T): no curves"
        k_max, t_max = int(self["k"].max()), int(self["t"].max())
        name = "pass^k" if "metric" in self.columns and self["metric"][0] == "pass^k" else "PASS"
        parts = []
        for row in self.filter((pl.col("k") == k_max) & (pl.col("t") == t_max)).iter_rows(named=True):
            parts.append(f"{', '.join(str(row[c]) for c in self._by()) or 'all'} {_value_text(row)}")
        return f"{name}@({k_max},{t_max}): " + "; ".join(parts)

    def _summary_title(self) -> str:
        return "PASS@(k,T)"

    def _summary_lines(self) -> list[str]:
        """One line per curve at its largest k, and the notes."""
        lines = []
        if {"k", "t", "pass_at_kt"} <= set(self.columns) and self.height:
            keys = self._by()
            for row in self.filter(pl.col("k") == pl.col("k").max()).iter_rows(named=True):
                who = ", ".join(f"{key} {row[key]}" for key in keys) or "all"
                lines.append(f"{who}: {row.get('metric', 'pass@k')} at k={row['k']}, T={row['t']} {_value_text(row)}")
        return lines + super()._summary_lines()


def _value_text(row: dict) -> str:
    """A curve's value at one k and T, with its interval when one was computed."""
    text = f"{row['pass_at_kt']:.3f}"
    if row.get("ci_low") is not None:
        text += f" [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
    return text


_VALUE_COLUMNS = frozenset({"k", "t", "pass_at_kt", "ci_low", "ci_high", "interval", "n_problems", "t_source",
                            "metric"})


def default_k(runs: pl.DataFrame, t: Iterable[int] = DEFAULT_T, *, t_source: TSource = "auto") -> list[int]:
    """Powers of two up to the smallest number of samples any problem has at any depth in ``t``.

    Parameters
    ----------
    runs
        Canonical table (arm, question_id, correct, n_rounds; t_cap when present).
    t
        Round budgets.
    t_source
        As in :func:`pass_at_kt`.

    Returns
    -------
    list of int
        ``[1, 2, 4, ...]``; ``[1]`` at least, so a problem without samples is reported by name.
    """
    n_min = int(estimate_pass(runs, [1], t, ci=None, t_source=t_source).n.min())
    return [2 ** i for i in range(max(n_min, 1).bit_length())]


def pass_at_kt_per_problem(
    runs: pl.DataFrame,
    k: Iterable[int] = DEFAULT_K,
    t: Iterable[int] = DEFAULT_T,
    *,
    by: Sequence[str] = ("arm",),
    t_source: TSource = "auto",
    metric: Metric = "pass@k",
) -> PassTable:
    """PASS@(k,T) (or pass^k) of every problem.

    Parameters
    ----------
    runs, k, t, by, t_source, metric
        As in :func:`pass_at_kt`.

    Returns
    -------
    PassTable
        A ``polars.DataFrame`` (and a result, as :func:`pass_at_kt`'s, keyed by the ``by``
        columns and ``question_id``): the ``by`` columns, ``question_id``, ``n`` (samples
        counted at that depth), ``t``, ``c`` (successes within T), ``k``, ``pass_at_kt``,
        ``t_source`` and ``metric``; one row per problem, T and k.
    """
    est = estimate_pass(runs, k, t, ci=None, by=by, t_source=t_source, metric=metric)
    n_p, n_t, n_k = est.values.shape
    idx_p = np.repeat(np.arange(n_p), n_t * n_k)
    idx_t = np.tile(np.repeat(np.arange(n_t), n_k), n_p)
    idx_k = np.tile(np.arange(n_k), n_p * n_t)
    table = est.problems[idx_p].with_columns(
        pl.Series("n", est.n[idx_p, idx_t], dtype=pl.Int64),
        pl.Series("t", est.t[idx_t], dtype=pl.Int64),
        pl.Series("c", est.c[idx_p, idx_t], dtype=pl.Int64),
        pl.Series("k", est.k[idx_k], dtype=pl.Int64),
        pl.Series("pass_at_kt", est.values.reshape(-1), dtype=pl.Float64),
        pl.Series("t_source", [est.t_source] * idx_p.size, dtype=pl.String),
        pl.Series("metric", [est.metric] * idx_p.size, dtype=pl.String),
    )
    return PassTable.with_notes(table, (), by=[*by, "question_id"])


CONSISTENCY = ("all", "none", "some")


@dataclass(repr=False)
class Consistency(Result):
    """Per-task consistency: was each task solved in all, none or some of its trials.

    tau-bench's reliability view. A task solved in some trials only is the one a single
    run's accuracy hides: pass^k falls with k exactly because of them.

    Attributes
    ----------
    per_task
        One row per (group, question): the ``by`` columns, ``question_id``, ``n`` (trials),
        ``successes``, ``success_rate`` and ``consistency`` (``"all"``, ``"none"`` or ``"some"``).
    by_arm
        One row per group: ``n_tasks``, ``share_all``, ``share_none``, ``share_some`` and
        ``success_rate`` (tasks weighing equally), each with a percentile bootstrap interval
        over tasks (``*_low``, ``*_high``; null without intervals).
    by
        The grouping columns.
    t
        The round budget (``None``: every episode as it ended).
    """

    per_task: pl.DataFrame
    by_arm: pl.DataFrame
    by: tuple[str, ...]
    t: int | None
    ci: float | None

    key_columns: ClassVar[dict[str, pl.DataType]] = {"t": pl.Int64()}

    def _keys(self) -> dict[str, pl.DataType | None]:
        return {**dict.fromkeys(self.by), **self.key_columns}

    def tables(self) -> dict[str, pl.DataFrame]:
        """``estimates`` (:meth:`to_frame`), ``per_task`` and ``by_arm`` (per group)."""
        return {"estimates": self.to_frame(), "per_task": self.per_task, "by_arm": self.by_arm}

    def _estimates(self) -> pl.DataFrame:
        """Per group: the shares of tasks solved in all, none and some trials, and the success
        rate (tasks weighing equally), quantities ``share_all``, ``share_none``, ``share_some``,
        ``success_rate``; ``t`` the round budget (null: every episode as it ended)."""
        names = [*(f"share_{kind}" for kind in CONSISTENCY), "success_rate"]
        frames = [self.by_arm.select(*self.by, pl.lit(name).alias("quantity"), pl.col(name).alias("estimate"),
                                     pl.col(f"{name}_low").alias("ci_low"), pl.col(f"{name}_high").alias("ci_high"))
                  for name in names]
        return pl.concat(frames).with_columns(t=pl.lit(self.t, dtype=pl.Int64))

    def verdict(self) -> str:
        """One line: per group, the share of tasks solved in some trials only (what pass^k falls on)."""
        parts = []
        for row in self.by_arm.iter_rows(named=True):
            who = ", ".join(str(row[c]) for c in self.by) or "all"
            lo, hi = row["share_some_low"], row["share_some_high"]
            parts.append(f"{who} {row['share_some']:.2f}" + ("" if lo is None else f" [{lo:.2f}, {hi:.2f}]"))
        return "tasks solved in some trials only (inconsistent): " + "; ".join(parts)

    def to_dict(self) -> dict:
        """JSON-ready dict of the settings and the ``per_task`` and ``by_arm`` tables."""
        return {"by": list(self.by), "t": self.t, "ci": self.ci,
                "per_task": self.per_task.to_dicts(), "by_arm": self.by_arm.to_dicts()}

    def _summary_title(self) -> str:
        within = "" if self.t is None else f" within T = {self.t} rounds"
        return f"per-task consistency{within}"

    def _summary_lines(self) -> list[str]:
        lines = []
        for row in self.by_arm.iter_rows(named=True):
            who = ", ".join(str(row[c]) for c in self.by) or "all"
            parts = []
            for kind in CONSISTENCY:
                v, lo, hi = row[f"share_{kind}"], row[f"share_{kind}_low"], row[f"share_{kind}_high"]
                parts.append(f"{kind} {v:.2f}" + ("" if lo is None else f" [{lo:.2f}, {hi:.2f}]"))
            lines.append(f"{who}: {row['n_tasks']} tasks solved in " + ", ".join(parts) + " of their trials")
        return lines

    def _summary_tables(self) -> dict[str, pl.DataFrame]:
        return {"by_arm": self.by_arm}

    def _headline(self) -> str:
        return f"{self.by_arm.height} group(s), {self.per_task.height} tasks"


def consistency(
    runs: pl.DataFrame,
    *,
    by: Sequence[str] = ("arm",),
    t: int | None = None,
    ci: float | None = 0.95,
    n_boot: int = 1000,
    random_state: RandomState = 0,
    t_source: TSource = "auto",
) -> Consistency:
    """Per-task consistency table (solved in all, none or some trials) and its per-group summary.

    Parameters
    ----------
    runs
        Canonical trajectory table (``question_id``, ``correct``, the ``by`` columns; and
        ``n_rounds`` or ``t_cap`` when ``t`` is given).
    by
        Grouping columns (default one group per arm).
    t
        Round budget: a trial succeeds when correct within ``t`` rounds (counted as in
        :func:`pass_at_kt`, by truncation or by ``t_cap``); ``None`` (default) takes every
        episode as it ended.
    ci, n_boot, random_state
        Level, replicates and seed of the percentile bootstrap over tasks (``ci=None``: no
        intervals).
    t_source
        As in :func:`pass_at_kt` (used only with ``t``).

    Returns
    -------
    Consistency
        ``per_task`` and ``by_arm`` tables.

    Examples
    --------
    >>> import polars as pl
    >>> runs = pl.DataFrame({"arm": ["a"] * 6, "question_id": ["q1", "q1", "q2", "q2", "q3", "q3"],
    ...                      "correct": [True, True, True, False, False, False]})
    >>> consistency(runs, ci=None).per_task["consistency"].to_list()
    ['all', 'some', 'none']
    """
    by = list(by)
    ci = check_ci(ci)
    check_seed(random_state)  # one-line error for anything but a seed; the draws come from one seed
    if t is None:
        validate(runs, required=list(dict.fromkeys([*by, "question_id", "correct"])))
        per_task = (runs.group_by([*by, "question_id"])
                    .agg(pl.len().cast(pl.Int64).alias("n"), pl.col("correct").sum().cast(pl.Int64).alias("successes"))
                    .sort([*by, "question_id"]))
    else:
        est = estimate_pass(runs, [1], [t], ci=None, by=by, t_source=t_source)
        per_task = est.problems.with_columns(pl.Series("n", est.n[:, 0], dtype=pl.Int64),
                                             pl.Series("successes", est.c[:, 0], dtype=pl.Int64))
    if per_task.height == 0:
        raise InputError("no trajectories to measure consistency on", field="question_id")
    per_task = per_task.with_columns(
        success_rate=pl.col("successes") / pl.col("n"),
        consistency=pl.when(pl.col("successes") == pl.col("n")).then(pl.lit("all"))
        .when(pl.col("successes") == 0).then(pl.lit("none")).otherwise(pl.lit("some")))
    succ, n = per_task["successes"].to_numpy(), per_task["n"].to_numpy()
    values = np.column_stack([succ == n, succ == 0, (succ > 0) & (succ < n), succ / n]).astype(float)
    names = [*(f"share_{kind}" for kind in CONSISTENCY), "success_rate"]
    if by:
        groups = per_task.select(by).unique(maintain_order=True)
        gidx = per_task.select(by).with_row_index("_r").join(
            groups.with_row_index("_g"), on=by, how="left", nulls_equal=True).sort("_r")["_g"].to_numpy()
    else:
        groups, gidx = pl.DataFrame(), np.zeros(per_task.height, dtype=np.int64)
    questions, qidx = np.unique(per_task["question_id"].to_numpy().astype(str), return_inverse=True)
    weights = (question_bootstrap_weights(questions.size, n_boot,
                                          stream(resolve_seed(random_state), "bootstrap")).astype(float)
               if ci is not None else None)
    rows = []
    for g in range(max(groups.height, 1)):
        mask = gidx == g
        est_g = values[mask].mean(axis=0)
        low = high = [None] * len(names)
        if weights is not None:
            w = weights[:, qidx[mask]]
            with np.errstate(invalid="ignore", divide="ignore"):
                reps = (w @ values[mask]) / w.sum(axis=1, keepdims=True)
            lo, hi = percentile_interval(reps, ci, axis=0)
            low, high = [float(v) for v in lo], [float(v) for v in hi]
        row = dict(groups.row(g, named=True)) if by else {}
        row["n_tasks"] = int(mask.sum())
        for i, name in enumerate(names):
            row[name], row[f"{name}_low"], row[f"{name}_high"] = float(est_g[i]), low[i], high[i]
        rows.append(row)
    schema = {**dict(groups.schema), "n_tasks": pl.Int64,
              **{f"{name}{suffix}": pl.Float64 for name in names for suffix in ("", "_low", "_high")}}
    return Consistency(per_task=per_task, by_arm=pl.DataFrame(rows, schema=schema), by=tuple(by), t=t, ci=ci)


def summary_table(est: PassEstimate, *, ci: float | None, interval: Interval = "auto") -> pl.DataFrame:
    """The long table of :func:`pass_at_kt` from an estimate (``interval`` as there)."""
    n_g, n_t, n_k = est.estimate.shape
    idx_g = np.repeat(np.arange(n_g), n_k * n_t)
    idx_k = np.tile(np.repeat(np.arange(n_k), n_t), n_g)
    idx_t = np.tile(np.arange(n_t), n_g * n_k)
    n_problems = np.bincount(est.group_index, minlength=n_g)
    cols = [
        pl.Series("k", est.k[idx_k], dtype=pl.Int64),
        pl.Series("t", est.t[idx_t], dtype=pl.Int64),
        pl.Series("pass_at_kt", est.estimate[idx_g, idx_t, idx_k], dtype=pl.Float64),
    ]
    if ci is not None and est.replicates is not None:
        low, high = percentile_interval(est.replicates, ci, axis=0)
        small = n_problems < SMALL_SAMPLE
        method = np.full(est.estimate.shape, interval, dtype=object)
        at_bound = (est.estimate <= 0.0) | (est.estimate >= 1.0)
        if interval == "auto" and est.metric == "pass^k":
            # pass^k per problem is C(c,k)/C(n,k): most problems near 0, a few near 1. Percentile and
            # Wilson intervals covered 0.43-0.84 at k = 4 on skewed values; the bootstrap-t holds
            # 0.935-0.995 at 5-40 problems (benchmarks/bench_coverage.py, section passk)
            method = np.where(at_bound, "wilson", "bootstrap-t").astype(object)
        elif interval == "auto":
            # Wilson below 30 problems, and wherever every problem's value sits at 0 or at 1: the
            # percentile interval is then the point itself (PASS@16 of 16 samples on easy problems
            # covered 0.42-0.55 at 30-50 problems, benchmarks/bench_coverage.py)
            method = np.where(small[:, None, None] | at_bound, "wilson", "percentile").astype(object)
        elif interval == "bootstrap-t":  # no spread to studentize at a bound: Wilson's there
            method = np.where(at_bound, "wilson", "bootstrap-t").astype(object)
        for name, rule in (("studentized", studentized_interval), ("wilson", wilson_interval),
                           ("bootstrap-t", bootstrap_t_interval)):
            if (method == name).any():
                s_low, s_high = rule(est, ci)
                low = np.where(method == name, s_low, low)
                high = np.where(method == name, s_high, high)
        cols += [pl.Series("ci_low", low[idx_g, idx_t, idx_k], dtype=pl.Float64),
                 pl.Series("ci_high", high[idx_g, idx_t, idx_k], dtype=pl.Float64),
                 pl.Series("interval", method[idx_g, idx_t, idx_k].astype(str), dtype=pl.String)]
    cols += [pl.Series("n_problems", n_problems[idx_g], dtype=pl.Int64),
             pl.Series("t_source", [est.t_source] * idx_g.size, dtype=pl.String),
             pl.Series("metric", [est.metric] * idx_g.size, dtype=pl.String)]
    if est.groups.width == 0:
        return pl.DataFrame(cols)
    return est.groups[idx_g].with_columns(cols)


def studentized_interval(est: PassEstimate, ci: float) -> tuple[np.ndarray, np.ndarray]:
    """Per group, T and k: ``mean +- t_{P-1, (1+ci)/2} s / sqrt(P)`` over the group's P problems.

    The mean's studentized interval, clipped to [0, 1]; a group of one problem gets [0, 1].

    Examples
    --------
    >>> import polars as pl
    >>> runs = pl.DataFrame({"arm": ["a"] * 6, "question_id": ["q1", "q1", "q2", "q2", "q3", "q3"],
    ...                      "correct": [True, True, True, False, False, False], "n_rounds": [1] * 6})
    >>> lo, hi = studentized_interval(estimate_pass(runs, [1], [1], ci=None), 0.95)
    >>> round(float(lo[0, 0, 0]), 3), round(float(hi[0, 0, 0]), 3)
    (0.0, 1.0)
    """
    sizes, mean, var, crit = _group_moments(est, ci)
    with np.errstate(invalid="ignore"):
        half = crit[:, None] * np.sqrt(var / sizes[:, None])
    half = np.where(sizes[:, None] > 1, half, np.inf)
    shape = est.estimate.shape
    return (np.clip(mean - half, 0.0, 1.0).reshape(shape), np.clip(mean + half, 0.0, 1.0).reshape(shape))


def bootstrap_t_interval(est: PassEstimate, ci: float) -> tuple[np.ndarray, np.ndarray]:
    """Per group, T and k: the studentized bootstrap (bootstrap-t) interval of the mean.

    Each replicate's ``t* = (m* - m) / se*`` (``se*`` the standard error of the resampled
    problems' values, divisor P - 1) gives the interval ``[m - q_hi se, m - q_lo se]`` with
    ``q`` the quantiles of ``t*``: it follows the skewness of the per-problem values, which
    symmetric and percentile intervals do not. A replicate with no spread above the estimate
    counts as ``t* = +inf`` (below: ``-inf``), so replicates of all-zero problems widen the
    interval instead of vanishing. Clipped to [0, 1]; a group of one problem gets [0, 1].
    Uses the replicates' own question draws (``est.weights``).

    Examples
    --------
    >>> import polars as pl
    >>> runs = pl.DataFrame({"arm": ["a"] * 12, "question_id": [f"q{i // 4}" for i in range(12)],
    ...                      "correct": [True] * 4 + [True, False] * 2 + [False] * 4, "n_rounds": [1] * 12})
    >>> lo, hi = bootstrap_t_interval(estimate_pass(runs, [2], [1], n_boot=200, metric="pass^k"), 0.95)
    >>> bool(0.0 <= lo[0, 0, 0] < 0.39 < hi[0, 0, 0] <= 1.0)
    True
    """
    n_g = est.estimate.shape[0]
    flat = est.values.reshape(est.values.shape[0], -1)
    low = np.zeros((n_g, flat.shape[1]))
    high = np.ones((n_g, flat.shape[1]))
    alpha = (1.0 - ci) / 2.0
    for g in range(n_g):
        rows = np.flatnonzero(est.group_index == g)
        size = rows.size
        if size < 2 or est.weights is None:
            continue
        v = flat[rows]
        m = v.mean(axis=0)
        se = v.std(axis=0, ddof=1) / np.sqrt(size)
        w = est.weights[:, est.question_index[rows]]
        count = w.sum(axis=1)[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            mb = (w @ v) / count
            var = np.clip((w @ (v * v)) / count - mb * mb, 0.0, None) * count / np.maximum(count - 1.0, 1.0)
            sb = np.sqrt(var / count)
            t_star = np.where(sb > 0, (mb - m) / np.where(sb > 0, sb, 1.0),
                              np.where(mb > m + 1e-15, np.inf, np.where(mb < m - 1e-15, -np.inf, 0.0)))
        with np.errstate(invalid="ignore"):  # a quantile between two infinite t's is nan: the bound below
            q_lo = np.quantile(t_star, alpha, axis=0)
            q_hi = np.quantile(t_star, 1.0 - alpha, axis=0)
            lo = np.where(se > 0, m - q_hi * se, m)
            hi = np.where(se > 0, m - q_lo * se, m)
        low[g] = np.clip(np.nan_to_num(lo, nan=0.0, neginf=0.0, posinf=0.0), 0.0, 1.0)
        high[g] = np.clip(np.nan_to_num(hi, nan=1.0, posinf=1.0, neginf=1.0), 0.0, 1.0)
    shape = est.estimate.shape
    return low.reshape(shape), high.reshape(shape)


def wilson_interval(est: PassEstimate, ci: float) -> tuple[np.ndarray, np.ndarray]:
    """Per group, T and k: Wilson's score interval for the mean ``m`` of the group's P
    per-problem values (each in [0, 1]), on the effective sample size ``m (1 - m) / se^2``
    (``se^2 = s^2 / P``) and with ``t_{P-1, (1+ci)/2}`` for the normal quantile.

    Why: per-problem PASS@(k,T) values are skewed (many hard problems near 0), and with 5-10
    problems the symmetric studentized interval covered 0.84-0.89 at k = 1 where 0.95 was
    asked; the score interval's asymmetry (wider away from the nearer bound) gives 0.93-0.95
    there (``benchmarks/bench_coverage.py``). At 0/1 values (large k) the effective size is P
    - 1 and the interval is Wilson's with a t quantile, conservative with few problems. All
    values 0 (or all 1): Wilson's on P problems, ``[0, t^2 / (P + t^2)]``, not the point; one
    problem: [0, 1].

    Examples
    --------
    >>> import polars as pl
    >>> runs = pl.DataFrame({"arm": ["a"] * 10, "question_id": [f"q{i // 2}" for i in range(10)],
    ...                      "correct": [False] * 10, "n_rounds": [1] * 10})
    >>> lo, hi = wilson_interval(estimate_pass(runs, [1], [1], ci=None), 0.95)
    >>> round(float(lo[0, 0, 0]), 3), round(float(hi[0, 0, 0]), 3)   # 2.776^2 / (5 + 2.776^2)
    (0.0, 0.607)
    """
    sizes, mean, var, crit = _group_moments(est, ci)
    z2 = (crit * crit)[:, None]
    spread = mean * (1.0 - mean)
    with np.errstate(invalid="ignore", divide="ignore"):
        # d = z^2 / n_eff; at a bound (all values 0 or all 1) n_eff is the P problems themselves
        d = np.where(spread > 1e-15, z2 * (var / sizes[:, None]) / np.where(spread > 1e-15, spread, 1.0),
                     z2 / sizes[:, None])
        centre = (mean + d / 2.0) / (1.0 + d)
        half = np.sqrt(np.clip(d * spread + d * d / 4.0, 0.0, None)) / (1.0 + d)
    half = np.where(sizes[:, None] > 1, half, np.inf)
    centre = np.where(sizes[:, None] > 1, centre, 0.5)
    shape = est.estimate.shape
    return (np.clip(centre - half, 0.0, 1.0).reshape(shape), np.clip(centre + half, 0.0, 1.0).reshape(shape))


def _group_moments(est: PassEstimate, ci: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per group: problems P, the mean and variance (divisor P - 1) of the per-problem values
    (flattened over T and k), and ``t_{P-1, (1+ci)/2}``."""
    from scipy.stats import t as student  # noqa: PLC0415 - scipy: loaded by the t interval that uses it, not at import

    n_g = est.estimate.shape[0]
    flat = est.values.reshape(est.values.shape[0], -1)
    sizes = np.bincount(est.group_index, minlength=n_g).astype(float)
    sums = np.zeros((n_g, flat.shape[1]))
    squares = np.zeros((n_g, flat.shape[1]))
    np.add.at(sums, est.group_index, flat)
    np.add.at(squares, est.group_index, flat * flat)
    mean = sums / sizes[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.clip(squares - sizes[:, None] * mean * mean, 0.0, None) / (sizes[:, None] - 1.0)
    return sizes, mean, var, student.ppf((1.0 + ci) / 2.0, np.maximum(sizes - 1.0, 1.0))


def estimate_pass(
    runs: pl.DataFrame,
    k: Iterable[int] = DEFAULT_K,
    t: Iterable[int] = DEFAULT_T,
    *,
    ci: float | None = 0.95,
    n_boot: int = 1000,
    random_state: RandomState = 0,
    by: Sequence[str] = ("arm",),
    t_source: TSource = "auto",
    metric: Metric = "pass@k",
) -> PassEstimate:
    """Per-problem values, group means and (when ``ci`` is set) bootstrap replicates.

    Parameters are those of :func:`pass_at_kt`. The bootstrap draws whole questions from the
    union of all groups' questions, the same draw for every group, so differences between
    arms are paired.
    """
    ks = _grid(k, "k", minimum=1)
    ts = _grid(t, "t", minimum=0)
    by = list(by)
    check_choice(t_source, TSource, field="t_source")
    check_choice(metric, Metric, field="metric")
    ci = check_ci(ci)
    check_seed(random_state)  # one-line error for anything but a seed; the draws come from one seed
    if ci is not None and n_boot < 1:
        raise InputError(f"`n_boot` must be at least 1, got {n_boot}", field="n_boot")
    source = _resolve_source(runs, t_source)
    if source == "messages":
        runs = message_rounds(runs)
    needed = [*by, "question_id", "correct", "n_rounds"] + (["t_cap"] if source == "t_cap" else [])
    # the duplicate-key check rides on the counting below (see _count_blocks)
    validate(runs, required=list(dict.fromkeys(needed)), check_keys=False)

    keys = [*by, "question_id"]
    counts = _count_blocks(runs, ts) if source in TRUNCATED and by == ["arm"] else None
    if counts is not None:  # counted from contiguous blocks, keys proven unique on the way
        n = np.repeat(counts["n"].to_numpy().astype(np.int64)[:, None], ts.size, axis=1)
    else:
        # grouped by (arm, question): distinct sample ids per group, counted in the same
        # group-by, prove the keys unique; the exact check then runs only to name a repeat
        fold = by == ["arm"] and "sample_id" in runs.columns
        if source in TRUNCATED:
            counts = _count_truncation(runs, keys, ts, distinct=fold)
            n = np.repeat(counts["n"].to_numpy().astype(np.int64)[:, None], ts.size, axis=1)
        else:
            counts, n = _count_t_cap(runs, keys, ts, distinct=fold)
        if not fold or not (counts["_distinct"] == counts["_rows"]).all():
            check_unique_keys(runs, n_groups=counts.height if by == ["arm"] else None)
    c = counts.select([f"c{i}" for i in range(ts.size)]).to_numpy().astype(np.int64)
    problems = counts.select(keys)
    _check_enough(problems, n, ks, ts, source, chosen=t_source == "auto")

    values = _pass_values(n, c, ks) if metric == "pass@k" else _all_pass_values(n, c, ks)

    if by:
        groups = problems.select(by).unique(maintain_order=True)
        group_index = problems.select(by).with_row_index("_r").join(
            groups.with_row_index("_g"), on=by, how="left", nulls_equal=True
        ).sort("_r")["_g"].to_numpy().astype(np.int64)
    else:
        groups = pl.DataFrame()
        group_index = np.zeros(problems.height, dtype=np.int64)
    n_groups = max(groups.height, 1)
    flat = values.reshape(values.shape[0], -1)
    sizes = np.bincount(group_index, minlength=n_groups).astype(np.float64)
    # problems are sorted by their group's keys, so each group is one contiguous block
    starts = np.concatenate([[0], np.cumsum(sizes[:-1])]).astype(np.int64)
    sums = np.add.reduceat(flat, starts, axis=0)
    estimate = (sums / sizes[:, None]).reshape(n_groups, ts.size, ks.size)

    questions, question_index = np.unique(problems["question_id"].to_numpy().astype(str),
                                          return_inverse=True)
    replicates = weights = None
    if ci is not None:
        # the toolkit's one stream policy: every stage resampling these questions with this
        # seed draws the same replicates (see mechanism.core.resample.stream)
        weights = question_bootstrap_weights(questions.size, n_boot,
                                             stream(resolve_seed(random_state), "bootstrap")).astype(np.float64)
        replicates = np.empty((n_boot, n_groups, ts.size, ks.size))
        for g in range(n_groups):
            rows = np.flatnonzero(group_index == g)
            w = weights[:, question_index[rows]]
            with np.errstate(invalid="ignore", divide="ignore"):
                replicates[:, g] = ((w @ flat[rows]) / w.sum(axis=1)[:, None]).reshape(
                    n_boot, ts.size, ks.size)
    return PassEstimate(problems=problems, groups=groups, k=ks, t=ts, n=n, c=c, values=values,
                        group_index=group_index, question_index=question_index.reshape(-1),
                        questions=questions, estimate=estimate, replicates=replicates,
                        t_source=source, weights=weights, metric=metric, ci=ci, by=tuple(by))


def depth_notes(runs: pl.DataFrame, t: Iterable[int], t_source: str) -> list[str]:
    """What a reader must know about where T came from, as plain sentences.

    Under truncation, T is the number of rounds an episode happened to use, not a budget it
    was given: an arm that chooses to search more loses PASS at small T without losing any
    ability. When a single ``t_cap`` limits every episode, a T above it repeats the value at
    the cap (no episode could use more rounds), so saturation there says nothing.

    Parameters
    ----------
    runs
        The canonical table analysed.
    t
        The T grid.
    t_source
        ``"t_cap"``, ``"truncation"`` or ``"messages"`` (as resolved; ``"auto"`` is resolved here).
    """
    ts = sorted(int(v) for v in t)
    source = _resolve_source(runs, t_source)
    notes = [MESSAGES_NOTE] if source == "messages" else []
    if source in TRUNCATED:
        notes.append("T from truncation: an episode counts at T when it used at most T rounds; T is the "
                     "rounds an episode happened to use, not a budget it was given, so an arm that chooses "
                     "to search more loses PASS at small T without losing ability. For a budget claim, run "
                     "episodes under each round cap and record it in `t_cap`")
        if "t_cap" in runs.columns and runs["t_cap"].drop_nulls().len():
            cap = int(runs["t_cap"].max())
            beyond = [v for v in ts if v > cap]
            if beyond:
                notes.append(f"T = {', '.join(map(str, beyond))} exceeds the largest round cap in `t_cap` ({cap}): "
                             f"no episode could use more than {cap} rounds, so PASS@(k,T) there equals "
                             f"PASS@(k,{cap}) and a saturation depth T* at or above {cap} comes from the cap")
    return notes


#: The sources of T that count the rounds an episode used (``"messages"`` counts them in messages).
TRUNCATED: tuple[str, ...] = ("truncation", "messages")
MESSAGES_NOTE = ("T counted in messages: calls the model sent together in one message (parallel function calling) "
                 "are one round")


def message_rounds(runs: pl.DataFrame) -> pl.DataFrame:
    """``runs`` with ``n_rounds`` counted in the model's messages that made calls: every call
    flagged ``parallel`` (sent in the same message as the call before it, as the readers mark
    OpenAI ``tool_calls`` lists, Hermes blocks and ATIF steps) joins the round of the call
    before it. Rows without recorded steps, or a table without the flag, keep their
    ``n_rounds``; read from the steps each time, so applying it twice changes nothing.

    Examples
    --------
    >>> from mechanism.core.schema import from_records, make_step
    >>> calls = [make_step(tool="search", arguments="a"), make_step(tool="search", arguments="b", parallel=True),
    ...          make_step(tool="open", arguments="c")]
    >>> runs = from_records([{"arm": "a", "question_id": "q", "sample_id": 0, "question": "?", "gold": ["x"],
    ...                       "answer": "x", "correct": True, "n_rounds": 3, "steps": calls}])
    >>> message_rounds(runs)["n_rounds"].to_list()
    [2]
    """
    steps = runs.schema.get("steps")
    fields = {f.name for f in steps.inner.fields} if isinstance(steps, pl.List) and isinstance(
        steps.inner, pl.Struct) else set()
    if PARALLEL not in fields:
        return runs
    together = pl.col("steps").list.eval(pl.element().struct.field(PARALLEL).fill_null(False).cast(pl.Int64)).list.sum()
    return runs.with_columns(n_rounds=pl.when(pl.col("steps").list.len() > 0)
                             .then(pl.col("steps").list.len() - together.fill_null(0))
                             .otherwise(pl.col("n_rounds")).cast(pl.Int64))


def within_t_shares(runs: pl.DataFrame, t: Iterable[int], *, by: Sequence[str] = ("arm",)) -> pl.DataFrame:
    """Per group and T: the share of episodes that used at most T rounds, questions weighing equally.

    Under truncation this is the share of an arm's episodes PASS@(k,T) can count at all: a
    drop in PASS at small T alongside a drop in this share says the arm uses more rounds,
    not that it solves less.

    Returns
    -------
    polars.DataFrame
        The ``by`` columns, ``t``, ``share_within_t``.
    """
    ts = _grid(t, "t", minimum=0)
    by = list(by)
    validate(runs, required=[*by, "question_id", "n_rounds"])
    # questions in one order before their mean: a group_by hands them over in any order, and a
    # float sum in another order differs in its last bit (same input, same output)
    per_q = runs.group_by([*by, "question_id"]).agg(
        [(pl.col("n_rounds") <= int(v)).mean().alias(f"s{i}") for i, v in enumerate(ts)]).sort(*by, "question_id")
    means = per_q.group_by(by, maintain_order=True).agg([pl.col(f"s{i}").mean() for i in range(ts.size)]).sort(by)
    return (means.unpivot(index=by, variable_name="_i", value_name="share_within_t")
            .with_columns(t=pl.col("_i").replace_strict({f"s{i}": int(v) for i, v in enumerate(ts)},
                                                        return_dtype=pl.Int64))
            .select(*by, "t", "share_within_t").sort(*by, "t"))


def ratio_table(n: int, ks: np.ndarray) -> np.ndarray:
    """Exact ``C(n - c, k) / C(n, k)`` for ``c = 0..n`` (rows) and each k in ``ks`` (columns).

    It is ``prod_{i<c} (n - k - i) / (n - i)``, a running product over c: every factor lies
    in [0, 1], so it never overflows or cancels (unlike ``lgamma`` differences), and it is
    exactly 0 once ``c > n - k`` (a success is then certain among k draws). The table costs
    ``n x len(ks)`` operations, once per distinct n.
    """
    i = np.arange(n, dtype=np.float64)[:, None]
    factors = np.clip(n - ks[None, :].astype(np.float64) - i, 0.0, None) / (n - i)
    table = np.ones((n + 1, ks.size))
    np.cumprod(factors, axis=0, out=table[1:])
    return table


def _pass_values(n: np.ndarray, c: np.ndarray, ks: np.ndarray) -> np.ndarray:
    out = np.empty((*n.shape, ks.size))
    for n_value in np.unique(n):  # a handful of distinct sample counts, not one per problem
        mask = n == n_value
        out[mask] = 1.0 - ratio_table(int(n_value), ks)[c[mask]]
    return out


def _all_pass_values(n: np.ndarray, c: np.ndarray, ks: np.ndarray) -> np.ndarray:
    # pass^k: C(c, k) / C(n, k) is the table's C(n - f, k) / C(n, k) at f = n - c failures
    out = np.empty((*n.shape, ks.size))
    for n_value in np.unique(n):
        mask = n == n_value
        out[mask] = ratio_table(int(n_value), ks)[n_value - c[mask]]
    return out


def _count_blocks(runs: pl.DataFrame, ts: np.ndarray) -> pl.DataFrame | None:
    """Per-problem counts without a hash group-by, when the table is laid out in blocks.

    Tables are usually written one (arm, question) after another. One polars pass finds
    where ``question_id`` changes, where ``arm`` changes and where ``sample_id`` fails to
    increase, each as its own expression so they run on separate threads; the union of the
    first two gives every problem's rows. One ``numpy.bincount`` over (block, rounds used)
    and a cumulative sum over rounds count samples and successes within each depth. With
    sample ids increasing within every block and the blocks' keys all distinct, no ``(arm,
    question_id, sample_id)`` can repeat, so the duplicate-key check costs nothing extra.
    Returns None (the caller then groups by hash and checks keys exactly) when an (arm,
    question) is split over several blocks or sample ids do not increase.
    """
    if runs.height == 0:
        return None
    arm, qid = pl.col("arm"), pl.col("question_id")
    beyond = int(ts.max()) + 1  # a failure, or a success after the largest T: counted at no depth
    exprs = [(qid != qid.shift()).fill_null(True).arg_true().implode().alias("q"),
             (arm != arm.shift()).fill_null(True).arg_true().implode().alias("a"),
             pl.when(pl.col("correct") & (pl.col("n_rounds") < beyond)).then(pl.col("n_rounds"))
             .otherwise(beyond).implode().alias("r")]
    if "sample_id" in runs.columns:
        sid = pl.col("sample_id")
        exprs.append((sid <= sid.shift()).fill_null(False).arg_true().implode().alias("s"))
    probe = runs.select(exprs)  # one pass over the table, one thread per expression
    changes = [probe[name].explode().to_numpy().astype(np.int64) for name in ("q", "a")]
    if 2 * max(c.size for c in changes) > runs.height:  # mostly one-row blocks (shuffled rows): hash instead
        return None
    # the union of two ascending runs: a stable sort merges them in linear time
    starts = np.sort(np.concatenate(changes), kind="stable")
    starts = starts[np.append(True, starts[1:] != starts[:-1])]
    if "s" in probe.columns:  # a sample id that does not increase is allowed only where a block starts
        drops = probe["s"].explode().to_numpy().astype(np.int64)
        at = np.minimum(np.searchsorted(starts, drops), starts.size - 1)
        if not (starts[at] == drops).all():
            return None
    blocks = runs.select("arm", "question_id")[starts]
    if blocks.is_duplicated().any():  # an (arm, question) in several blocks: not this layout
        return None
    # One bincount over (block, rounds used, capped past the grid) and a cumulative sum over
    # rounds give the successes within every T for every problem at once. A grid reaching a
    # large T would make that histogram wide: rounds are then mapped to their depth index
    # first (a lookup per row, which a dense grid saves).
    rounds = probe["r"].explode().to_numpy()
    width, columns = beyond + 1, ts
    if starts.size * width > 4 * runs.height + (1 << 16):
        rounds = np.searchsorted(ts, rounds, side="left")
        width, columns = ts.size + 1, np.arange(ts.size)
    n = np.diff(np.append(starts, runs.height))
    cell = np.repeat(np.arange(starts.size, dtype=np.int64) * width, n)
    cell += rounds
    hist = np.bincount(cell, minlength=starts.size * width).reshape(starts.size, width)
    within = np.cumsum(hist[:, :width - 1], axis=1)[:, columns]
    cols = {"n": n, **{f"c{i}": within[:, i] for i in range(ts.size)}}
    return blocks.with_columns(**{k: pl.Series(v, dtype=pl.Int64) for k, v in cols.items()}).sort("arm", "question_id")


def _count_truncation(runs: pl.DataFrame, keys: list[str], ts: np.ndarray, *, distinct: bool = False) -> pl.DataFrame:
    # One pass over the table counts successes at every depth: each correct episode adds to
    # the depths it fits under.
    within = [(pl.col("correct") & (pl.col("n_rounds") <= int(d))).sum().alias(f"c{i}")
              for i, d in enumerate(ts)]
    return runs.group_by(keys).agg(pl.len().alias("n"), *within, *_distinct_aggs(distinct)).sort(keys)


def _distinct_aggs(distinct: bool) -> list[pl.Expr]:
    return ([pl.len().alias("_rows"), pl.col("sample_id").n_unique().alias("_distinct")] if distinct else [])


def _count_t_cap(runs: pl.DataFrame, keys: list[str], ts: np.ndarray, *,
                 distinct: bool = False) -> tuple[pl.DataFrame, np.ndarray]:
    if runs["t_cap"].null_count():
        row = int(runs["t_cap"].is_null().arg_max())
        raise InputError("null value in column `t_cap` while episodes are counted by their cap; "
                         "pass t_source=\"truncation\" to ignore it", line=row + 1, field="t_cap")
    cap_in = [pl.col("t_cap") == int(d) for d in ts]
    agg = [e.sum().alias(f"n{i}") for i, e in enumerate(cap_in)]
    agg += [(e & pl.col("correct")).sum().alias(f"c{i}") for i, e in enumerate(cap_in)]
    counts = runs.group_by(keys).agg(*agg, *_distinct_aggs(distinct)).sort(keys)
    n = counts.select([f"n{i}" for i in range(ts.size)]).to_numpy().astype(np.int64)
    return counts, n


def _check_enough(problems: pl.DataFrame, n: np.ndarray, ks: np.ndarray, ts: np.ndarray, source: str,
                  *, chosen: bool = True) -> None:
    if problems.height == 0:
        raise InputError("no trajectories to estimate PASS@(k,T) from", field="question_id")
    if source == "t_cap":
        absent = np.flatnonzero(n.sum(axis=0) == 0)
        if absent.size:  # a T no episode was run under: say so, not "0 samples with t_cap == T"
            raise InputError(f"no episode was run with `t_cap` == {int(ts[absent[0]])}: the requested T "
                             f"{[int(ts[j]) for j in absent]} are not among the caps in the runs; ask only for "
                             "the caps that were run, or pass t_source=\"truncation\" to count by `n_rounds`",
                             field="t")
    short = n < ks.max()
    if not short.any():
        return
    row, col = np.argwhere(short)[0]
    who = ", ".join(f"{name} {value!r}" for name, value in problems.row(int(row), named=True).items())
    where = f" with `t_cap` == {int(ts[col])}" if source == "t_cap" else ""
    if source != "t_cap":
        hint = ""
    elif chosen:  # auto picked t_cap mode: say why, and how to count by rounds instead
        hint = ("; episodes are counted per `t_cap` because it holds several caps (t_source=\"truncation\" "
                "counts by `n_rounds` instead)")
    else:
        hint = "; episodes are counted per `t_cap` (t_source=\"truncation\" counts by `n_rounds` instead)"
    raise InputError(
        f"k = {int(ks.max())} is larger than the {int(n[row, col])} samples{where} of problem "
        f"({who}); {int(short.any(axis=1).sum())} problem(s) have too few samples: lower `k` "
        f"or drop them explicitly{hint}", field="k")


def _resolve_source(runs: pl.DataFrame, t_source: str) -> str:
    if t_source != "auto":
        return t_source
    # A single cap shared by every episode is the environment's limit, not a sweep over T:
    # only runs made under several caps are counted per cap.
    per_t = (isinstance(runs, pl.DataFrame) and "t_cap" in runs.columns
             and runs["t_cap"].drop_nulls().n_unique() > 1)
    return "t_cap" if per_t else "truncation"


def _grid(values: Iterable[int] | int, name: str, *, minimum: int) -> np.ndarray:
    if isinstance(values, (int, np.integer)):
        values = [values]
    try:
        items = list(values)
    except TypeError:
        raise InputError(f"`{name}` must be a list of integers, got {values!r}", field=name) from None
    if not items:
        raise InputError(f"`{name}` is empty", field=name)
    out = []
    for v in items:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) and not (
                isinstance(v, float) and v.is_integer()):
            raise InputError(f"`{name}` must hold integers, got {v!r}", field=name)
        if int(v) < minimum:
            raise InputError(f"`{name}` values must be at least {minimum}, got {v}", field=name)
        if int(v) > 2**62:  # far beyond any sample count or round budget; keeps int64 arithmetic exact
            raise InputError(f"`{name}` values must be at most 2**62, got {v}", field=name)
        out.append(int(v))
    return np.unique(np.asarray(out, dtype=np.int64))
