"""Checkpoint series: how a training run moves the agent, checkpoint by checkpoint.

A training run leaves checkpoints (``step-0``, ``step-100``, ...). :func:`track` puts every
checkpoint's trajectories into one strategy space (a fitted one, a saved one, or one fitted on
the base checkpoint plus a chosen one) and reports, per checkpoint in training order:

- strategy shares with bootstrap intervals (questions weigh equally within a checkpoint);
- PASS@(k,T) with intervals;
- the accuracy change against the base checkpoint split into composition (reweighting) and
  within-strategy execution (Kitagawa's symmetric split, :func:`mechanism.reweighting`);
- the Jensen-Shannon divergence of its strategy distribution from the base one (bits).

Order: an explicit ``order``, else a numeric ``step`` column, else the checkpoint names sorted
naturally (``ckpt50`` before ``ckpt200``; :func:`natural_key`).

Every bootstrap resamples questions with one seed, so the same ``random_state`` gives the
same tables: the seed is turned into one integer once (:func:`mechanism.core.resample.resolve_seed`)
and every stage derives its stream from it (:func:`mechanism.core.resample.stream`). The shares
and accuracy intervals use the ``"bootstrap"`` stream over the series' questions, the same
resamples as its PASS@(k,T) intervals, so the two are paired.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl

from mechanism.analysis._verdicts import qualified
from mechanism.analysis.compare import reweighting
from mechanism.analysis.labels import given_space
from mechanism.analysis.passkt import TRUNCATED, TSource, default_k, pass_at_kt, small_sample_note
from mechanism.analysis.shares import weighted_shares
from mechanism.core.errors import InputError
from mechanism.core.names import natural_key
from mechanism.core.options import RandomState, check_choice, check_ci, check_seed
from mechanism.core.resample import percentile_interval, question_bootstrap_weights, question_mean, resolve_seed, stream
from mechanism.core.results import Result, by_category
from mechanism.core.schema import shared_questions
from mechanism.core.text import interval_text

__all__ = ["Track", "track", "natural_key", "order_checkpoints", "weighted_shares"]


def order_checkpoints(runs: pl.DataFrame, *, order: Sequence[str] | None = None,
                      step: str | None = None) -> tuple[list[str], list[float | None]]:
    """The checkpoints (arms) of ``runs`` in training order, and each one's step (or None).

    Parameters
    ----------
    runs
        Canonical table; its ``arm`` column names the checkpoints.
    order
        Explicit order (every name must be an arm of ``runs``; arms left out are dropped).
    step
        Name of a numeric column giving each row's training step (one value per arm).

    Examples
    --------
    >>> runs = pl.DataFrame({"arm": ["ckpt200", "ckpt50", "ckpt1000"]})
    >>> order_checkpoints(runs)
    (['ckpt50', 'ckpt200', 'ckpt1000'], [50.0, 200.0, 1000.0])
    """
    arms = runs["arm"].unique(maintain_order=True).to_list()
    if order is not None:
        order = list(dict.fromkeys(order))
        missing = [a for a in order if a not in arms]
        if missing:
            raise InputError(f"checkpoint {missing[0]!r} in `order` is not in the input (arms: {sorted(arms)})",
                             field="order")
        names = order
    elif step is not None:
        if step not in runs.columns:
            raise InputError(f"step column `{step}` is not in the input", field="step")
        if not runs.schema[step].is_numeric():
            raise InputError(f"step column `{step}` must be numeric, got {runs.schema[step]}", field="step")
        steps = runs.group_by("arm").agg(pl.col(step).min().alias("lo"), pl.col(step).max().alias("hi"))
        mixed = steps.filter(pl.col("lo") != pl.col("hi"))
        if mixed.height:
            raise InputError(f"checkpoint {mixed['arm'][0]!r} has more than one value in step column `{step}`",
                             field="step")
        if steps["lo"].null_count():
            raise InputError(f"step column `{step}` has missing values", field="step")
        by_step = dict(steps.select("arm", "lo").iter_rows())
        names = sorted(arms, key=lambda a: (by_step[a], natural_key(a)))
        return names, [float(by_step[a]) for a in names]
    else:
        names = sorted(arms, key=natural_key)
    return names, [_step_from_name(a) for a in names]


def _step_from_name(name: str) -> float | None:
    """The last number in a checkpoint name (``step-400`` -> 400), or None."""
    numbers = re.findall(r"\d+(?:\.\d+)?", str(name))
    return float(numbers[-1]) if numbers else None


@dataclass(repr=False)
class Track(Result):
    """Result of :func:`track`: one row per checkpoint (and strategy, k, T) in training order.

    Attributes
    ----------
    checkpoints
        Checkpoint names in training order; ``steps`` their steps (None where unknown).
    base
        The reference checkpoint of the split and the divergence.
    shares
        ``checkpoint, step, order, strategy, name, share, ci_low, ci_high`` (questions weigh
        equally within a checkpoint; ``strategy`` -1 = outlier).
    passkt
        ``checkpoint, step, order, k, t, pass_at_kt, ci_low, ci_high, t_source``.
    split
        ``checkpoint, step, order, part`` (total, composition, within) ``, estimate, ci_low, ci_high,
        detectable``: the accuracy change against ``base``; composition + within == total;
        ``detectable`` the smallest effect the design detects with probability 0.8 (null for the
        base itself and without intervals).
    divergence
        ``checkpoint, step, order, js_divergence, ci_low, ci_high`` (bits, against ``base``).
    accuracy
        ``checkpoint, step, order, n, n_questions, accuracy, ci_low, ci_high``.
    names
        Strategy id -> display name.
    notes
        What a reader should know (how the space was obtained, how T was counted, ...).
    """

    checkpoints: list[str]
    steps: list[float | None]
    base: str
    shares: pl.DataFrame
    passkt: pl.DataFrame
    split: pl.DataFrame
    divergence: pl.DataFrame
    accuracy: pl.DataFrame
    names: dict[int, str] = field(default_factory=dict)
    ci: float | None = 0.95
    notes: list[str] = field(default_factory=list)
    by_category: pl.DataFrame | None = None

    def tables(self) -> dict[str, pl.DataFrame]:
        """Every table by a file-friendly name: ``estimates`` (:meth:`to_frame`), then each
        attribute's table by the attribute's name."""
        out = {"estimates": self.to_frame(), "shares": self.shares, "passkt": self.passkt, "split": self.split,
               "divergence": self.divergence, "accuracy": self.accuracy}
        if self.by_category is not None:
            out["by_category"] = self.by_category
        return out

    key_columns: ClassVar[dict[str, pl.DataType]] = {
        "checkpoint": pl.String(), "step": pl.Float64(), "order": pl.Int64(), "base": pl.String(),
        "treated": pl.String(), "strategy": pl.Int64(), "k": pl.Int64(), "t": pl.Int64()}

    def _estimates(self) -> pl.DataFrame:
        """Per checkpoint: ``accuracy``; against the base (``base``, ``treated`` the checkpoint)
        the accuracy change ``total`` and its parts ``composition`` and ``within`` (as
        :func:`mechanism.reweighting` names them) and ``js_divergence_bits``; ``share`` per
        ``strategy`` and ``pass_at_kt`` per ``k`` and ``t``; in training order."""
        key = ["checkpoint", "step", "order"]
        pair = [pl.lit(self.base).alias("base"), pl.col("checkpoint").alias("treated")]
        parts = [
            self.accuracy.select(*key, pl.lit("accuracy").alias("quantity"), pl.col("accuracy").alias("estimate"),
                                 "ci_low", "ci_high"),
            self.split.select(*key, *pair, pl.col("part").alias("quantity"), "estimate",
                              "ci_low", "ci_high", "detectable"),
            self.divergence.select(*key, *pair, pl.lit("js_divergence_bits").alias("quantity"),
                                   pl.col("js_divergence").alias("estimate"), "ci_low", "ci_high"),
            self.shares.select(*key, "strategy", pl.lit("share").alias("quantity"),
                               pl.col("share").alias("estimate"), "ci_low", "ci_high"),
            self.passkt.select(*key, "k", "t", pl.lit("pass_at_kt").alias("quantity"),
                               pl.col("pass_at_kt").alias("estimate"),
                               *[c for c in ("ci_low", "ci_high") if c in self.passkt.columns]),
        ]
        return pl.concat(parts, how="diagonal_relaxed").sort("order", maintain_order=True)

    def verdict(self) -> str:
        """One line: the last checkpoint against the base, its accuracy change split into
        composition (reweighting) and within-strategy execution, and its JS divergence."""
        last = self.checkpoints[-1] if self.checkpoints[-1] != self.base else self.checkpoints[0]
        part = {r["part"]: r for r in self.split.filter(pl.col("checkpoint") == last).iter_rows(named=True)}
        js = self.divergence.filter(pl.col("checkpoint") == last).row(0, named=True)

        def iv(row: dict) -> str:
            return qualified(f"{row['estimate']:+.3f}" + interval_text(row["ci_low"], row["ci_high"]),
                             row["ci_low"], row["ci_high"])

        return (f"{last} vs {self.base}: accuracy change {iv(part['total'])} = composition (reweighting) "
                f"{iv(part['composition'])} + within-strategy execution {iv(part['within'])}; "
                f"JS divergence {js['js_divergence']:.3f} bits")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of the series and every table."""
        return {"checkpoints": list(self.checkpoints), "steps": list(self.steps), "base": self.base,
                "ci": self.ci, "names": {str(k): v for k, v in self.names.items()}, "notes": list(self.notes),
                **{name: table.to_dicts() for name, table in self.tables().items()}}

    def _summary_title(self) -> str:
        return (f"Checkpoint series: {len(self.checkpoints)} checkpoints against {self.base}"
                + (f"; {int(round(self.ci * 100))}% bootstrap intervals over questions" if self.ci else ""))

    def _summary_lines(self) -> list[str]:
        def iv(row: dict, name: str = "estimate") -> str:
            return f"{row[name]:+.3f}" + interval_text(row["ci_low"], row["ci_high"])

        split = {(r["checkpoint"], r["part"]): r for r in self.split.iter_rows(named=True)}
        js = {r["checkpoint"]: r for r in self.divergence.iter_rows(named=True)}
        acc = {r["checkpoint"]: r for r in self.accuracy.iter_rows(named=True)}
        lines = []
        for name in self.checkpoints:
            a = acc[name]
            text = f"{name}: accuracy {a['accuracy']:.3f}"
            if a["ci_low"] is not None:
                text += f" [{a['ci_low']:.3f}, {a['ci_high']:.3f}]"
            top = (self.shares.filter(pl.col("checkpoint") == name).sort("share", descending=True).head(2))
            largest = []
            for r in top.iter_rows(named=True):
                label = self.names.get(r["strategy"], f"S{r['strategy']:d}")
                largest.append(f"{label} {r['share']:.0%}")
            text += "; largest " + ", ".join(largest)
            if name != self.base:
                text += (f"; vs {self.base}: total {iv(split[(name, 'total')])} = composition "
                         f"{iv(split[(name, 'composition')])} + within {iv(split[(name, 'within')])}; "
                         f"JS {js[name]['js_divergence']:.3f} bits")
            lines.append(text)
        return lines + [f"note: {n}" for n in self.notes]

    def _summary_tables(self) -> dict[str, pl.DataFrame]:
        wide = (self.split.select("checkpoint", "part", "estimate")
                .pivot(on="part", index="checkpoint", values="estimate"))
        table = (self.accuracy.select("checkpoint", "step", "accuracy")
                 .join(wide, on="checkpoint", how="left")
                 .join(self.divergence.select("checkpoint", pl.col("js_divergence").alias("js_bits")),
                       on="checkpoint", how="left"))
        return {"checkpoints": table}

    def _headline(self) -> str:
        return (f"{len(self.checkpoints)} checkpoints ({self.checkpoints[0]} .. {self.checkpoints[-1]}), "
                f"base {self.base}")


def track(runs: pl.DataFrame, *, space: Any = None, labels: Any = None, order: Sequence[str] | None = None,
          step: str | None = None, base: str | None = None, fit_on: str | None = None,
          k: Sequence[int] | None = None, t: Sequence[int] = (0, 1, 2, 3, 5), ci: float | None = 0.95,
          n_boot: int = 1000, random_state: RandomState = 0, t_source: TSource = "auto",
          embedder: Any = None, cache_dir: str | Path | None = None, progress: bool | None = None,
          by: str | None = None) -> Track:
    """Follow strategies, PASS@(k,T) and the reweighting split across a series of checkpoints.

    Parameters
    ----------
    runs
        Canonical table; each arm is one checkpoint.
    space
        A fitted :class:`~mechanism.analysis.strategy_space.StrategySpace` or the folder of a saved
        one. ``None`` (and no ``labels``) fits one on the ``base`` checkpoint plus ``fit_on``.
    labels
        Strategy label per row of ``runs`` instead of a space (e.g. planted strategies).
    order, step
        Training order: an explicit list of checkpoints, or a numeric step column; default:
        natural sort of the names.
    base
        Reference checkpoint (default: the first in order).
    fit_on
        With no space: the checkpoint fitted together with ``base`` (default: the last).
    k, t
        PASS@(k,T) grids (``k`` default: 1 and the largest power of 2 every checkpoint allows).
    ci, n_boot, random_state
        Interval level (``None``: no intervals), bootstrap replicates over questions, and seed
        (int, ``numpy.random.Generator`` or None: fresh entropy), turned into one integer once
        (:func:`mechanism.core.resample.resolve_seed`) that every stage derives its stream from; the
        same int gives the same tables. A space fitted here gets that integer modulo ``2**32``
        when ``random_state`` is a Generator or None (an int is passed on as it is).
    t_source
        How T is counted (:func:`mechanism.pass_at_kt`).
    embedder, cache_dir, progress
        For a space fitted or loaded here (``progress=None``: bars only on a terminal).
    by
        A task-type column (e.g. ``"category"``): the result also holds each category's long
        table beside the pooled one (``by_category``, key column ``category``). Needs
        ``labels`` or a fitted ``space``, so that every category is read in one strategy space.

    Returns
    -------
    Track

    Examples
    --------
    >>> import mechanism as mx
    >>> sim = mx.simulation.training_run(steps=(0, 200, 400), n_questions=8, n_samples=4, random_state=0,
    ...                                  progress=False)
    >>> tr = mx.track(sim.runs, labels=sim.truth["strategy"], n_boot=50)
    >>> tr.checkpoints
    ['step-0', 'step-200', 'step-400']
    >>> bool((tr.split.filter(pl.col("part") == "total")["estimate"].abs() < 1).all())
    True
    """
    if runs.height == 0:
        raise InputError("no trajectories in the input", field="runs")
    ci = check_ci(ci)
    check_choice(t_source, TSource, field="t_source")
    check_seed(random_state)  # one-line error for anything but a seed; the draws come from one seed
    if by is not None:
        return _track_by_category(runs, by, labels=labels, space=space, order=order, step=step, base=base,
                                  fit_on=fit_on, k=k, t=t, ci=ci, n_boot=n_boot,
                                  random_state=resolve_seed(random_state), t_source=t_source, embedder=embedder,
                                  cache_dir=cache_dir, progress=progress)
    names, steps = order_checkpoints(runs, order=order, step=step)
    if len(names) < 2:
        raise InputError(f"a series needs at least two checkpoints, got {names}", field="arm")
    base = names[0] if base is None else base
    if base not in names:
        raise InputError(f"`base` checkpoint {base!r} is not in the series {names}", field="base")
    runs = runs.filter(pl.col("arm").is_in(names))
    shared_questions(runs, names, what="track", compared="each split against the base compares on the questions "
                     "both answered, while accuracy and PASS@(k,T) per checkpoint use all of its questions")
    seed = resolve_seed(random_state)  # once: every stage below derives its stream from it
    codes, strategy_names, note = _strategy_codes(
        runs, labels=labels, space=space, names=names, base=base, fit_on=fit_on, seed=seed,
        seeded=isinstance(random_state, (int, np.integer)), embedder=embedder, cache_dir=cache_dir,
        progress=progress)
    notes: list[str] = [note]
    series = _Series(names=names, step_of=dict(zip(names, steps)), order_of={n: i for i, n in enumerate(names)})
    shares, accuracy = _shares_and_accuracy(runs, codes, series, strategy_names, ci=ci, n_boot=n_boot, seed=seed)
    split, divergence = _split_and_divergence(runs, codes, series, base, notes, ci=ci, n_boot=n_boot, seed=seed)
    passkt = _track_passkt(runs, series, notes, k=k, t=t, ci=ci, n_boot=n_boot, seed=seed, t_source=t_source)
    return Track(checkpoints=names, steps=steps, base=base, shares=shares, passkt=passkt, split=split,
                 divergence=divergence, accuracy=accuracy, names=strategy_names, ci=ci, notes=notes)


@dataclass(frozen=True)
class _Series:
    """The checkpoints in training order, each one's step and position."""

    names: list[str]
    step_of: dict[str, float | None]
    order_of: dict[str, int]

    def key(self, name: str) -> tuple[str, float | None, int]:
        """The key columns ``checkpoint, step, order`` of checkpoint ``name``."""
        return name, self.step_of[name], self.order_of[name]


_KEY_SCHEMA = {"checkpoint": pl.String, "step": pl.Float64, "order": pl.Int64}


def _track_by_category(runs: pl.DataFrame, by: str, *, labels: Any, space: Any, k: Sequence[int] | None,
                       **opts: Any) -> Track:
    """The pooled series with each category's long table beside it (``by_category``)."""
    if labels is None and space is None:
        raise InputError("`by` needs `labels` or a fitted `space`: every category must be read in one "
                         "strategy space", field="by")
    lab_all = None if labels is None else np.asarray(labels.to_numpy() if isinstance(labels, pl.Series)
                                                       else labels)
    opts["space"] = space
    pooled = track(runs, labels=lab_all, k=k, **opts)
    opts["k"] = sorted(pooled.passkt["k"].unique().to_list())  # the pooled grid in every category
    table, extra = by_category(runs, by, pooled, lambda mask: track(
        runs.filter(pl.Series(mask)), labels=None if lab_all is None else lab_all[mask], **opts))
    pooled.by_category = table
    pooled.notes.extend(extra)
    return pooled


def _strategy_codes(runs: pl.DataFrame, *, labels: Any, space: Any, names: list[str], base: str,
                    fit_on: str | None, seed: int, seeded: bool, embedder: Any, cache_dir: str | Path | None,
                    progress: bool | None) -> tuple[np.ndarray, dict[int, str], str]:
    """One integer strategy per row of ``runs`` (from ``labels``, a space, or one fitted here),
    the strategies' display names, and the note saying where they came from."""
    if labels is not None:
        lab = np.asarray(labels.to_numpy() if isinstance(labels, pl.Series) else labels)
        if len(lab) != runs.height:
            raise InputError(f"`labels` has {len(lab)} entries for {runs.height} rows", field="labels")
        uniq = sorted(set(lab.tolist()), key=lambda v: (str(type(v)), v))
        if all(isinstance(v, (int, np.integer)) for v in uniq):
            return np.asarray(lab, dtype=np.int64), {}, "strategies: the labels given"
        # string labels: numbered in sorted order, named by the label itself
        index = {v: i for i, v in enumerate(uniq)}
        codes = np.array([index[v] for v in lab.tolist()], dtype=np.int64)
        return codes, {i: f"S{i} {v}" for v, i in index.items()}, "strategies: the labels given"
    from mechanism.analysis.strategy_space import (  # noqa: PLC0415 - scikit-learn, UMAP, the embedder: only when no labels are given
        display_names,
        fit_and_place,
    )

    if space is None:
        fit_on = names[-1] if fit_on is None else fit_on
        if fit_on not in names:
            raise InputError(f"`fit_on` checkpoint {fit_on!r} is not in the series {names}", field="fit_on")
        space_seed = seed if seeded else seed % 2**32
        space, placement = fit_and_place(runs.filter(pl.col("arm").is_in([base, fit_on])), runs, map_xy=False,
                                         embedder=embedder, random_state=space_seed, cache_dir=cache_dir,
                                         progress=progress)
        note = f"strategies: a space fitted on {base} and {fit_on}, every checkpoint assigned to it"
    else:
        space, where = given_space(space, cache_dir=cache_dir, progress=progress)
        note = f"strategies: {where}"
        placement = space.place(runs, map_xy=False)
    return np.asarray(placement.labels, dtype=np.int64), display_names(space.describe()), note


def _shares_and_accuracy(runs: pl.DataFrame, codes: np.ndarray, series: _Series, strategy_names: dict[int, str],
                         *, ci: float | None, n_boot: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per checkpoint: strategy shares and accuracy, questions weighing equally, with intervals
    from the ``"bootstrap"`` stream over the series' questions."""
    qids, q_idx = np.unique(runs["question_id"].to_numpy().astype(str), return_inverse=True)
    strata, s_idx = np.unique(codes, return_inverse=True)
    arm_col = runs["arm"].to_numpy()
    n_q, n_s = len(qids), len(strata)
    weights = (question_bootstrap_weights(n_q, n_boot, stream(seed, "bootstrap"))
               if ci is not None and n_boot > 0 else None)
    correct = runs["correct"].to_numpy().astype(float)
    share_rows, acc_rows = [], []
    for name in series.names:
        rows = arm_col == name
        point = weighted_shares(q_idx[rows], s_idx[rows], n_q, n_s)
        lo = hi = [None] * n_s
        if weights is not None:
            reps = weighted_shares(q_idx[rows], s_idx[rows], n_q, n_s, weights=weights)
            lo, hi = (v.tolist() for v in percentile_interval(reps, ci))
        for j, s in enumerate(strata.tolist()):
            share_rows.append((*series.key(name), int(s), strategy_names.get(int(s), f"S{s}"),
                               float(point[j]), lo[j], hi[j]))
        a_mean, a_lo, a_hi, a_questions = question_mean(q_idx[rows], correct[rows], n_q, weights=weights, level=ci)
        acc_rows.append((*series.key(name), int(rows.sum()), a_questions, a_mean, a_lo, a_hi))
    shares = pl.DataFrame(share_rows, orient="row", schema={
        **_KEY_SCHEMA, "strategy": pl.Int64, "name": pl.String, "share": pl.Float64,
        "ci_low": pl.Float64, "ci_high": pl.Float64})
    accuracy = pl.DataFrame(acc_rows, orient="row", schema={
        **_KEY_SCHEMA, "n": pl.Int64, "n_questions": pl.Int64, "accuracy": pl.Float64,
        "ci_low": pl.Float64, "ci_high": pl.Float64})
    return shares, accuracy


def _split_and_divergence(runs: pl.DataFrame, codes: np.ndarray, series: _Series, base: str, notes: list[str],
                          *, ci: float | None, n_boot: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per checkpoint against ``base``: the reweighting split and the JS divergence; the small-sample
    notes of each comparison are appended to ``notes``."""
    arm_col = runs["arm"].to_numpy()
    split_rows, js_rows = [], []
    for name in series.names:
        if name == base:  # the base against itself: zero by definition, exactly
            split_rows += [(*series.key(name), part, 0.0, 0.0, 0.0, None)
                           for part in ("total", "composition", "within")]
            js_rows.append((*series.key(name), 0.0, 0.0, 0.0))
            continue
        pair = (arm_col == name) | (arm_col == base)
        rw = reweighting(runs.filter(pl.Series(pair)), codes[pair], base=base, treated=name, ci=ci,
                         n_boot=n_boot, random_state=seed, n_permutations=0,
                         allow_few_shared=True)  # the series was checked (and warned of) by the caller
        notes.extend(f"{name} vs {base}: {n}" for n in rw.notes if n.startswith(("small sample", "one sample")))
        for part in ("total", "composition", "within"):
            lo, hi = getattr(rw, f"{part}_ci") if ci is not None else (None, None)
            split_rows.append((*series.key(name), part, float(getattr(rw, part)),
                               _finite(lo), _finite(hi), _finite(rw.detectable.get(part))))
        lo, hi = rw.js_divergence_ci if ci is not None else (None, None)
        js_rows.append((*series.key(name), float(rw.js_divergence), _finite(lo), _finite(hi)))
    split = pl.DataFrame(split_rows, orient="row", schema={
        **_KEY_SCHEMA, "part": pl.String, "estimate": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
        "detectable": pl.Float64})
    divergence = pl.DataFrame(js_rows, orient="row", schema={
        **_KEY_SCHEMA, "js_divergence": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64})
    return split, divergence


def _track_passkt(runs: pl.DataFrame, series: _Series, notes: list[str], *, k: Sequence[int] | None,
                  t: Sequence[int], ci: float | None, n_boot: int, seed: int, t_source: str) -> pl.DataFrame:
    """PASS@(k,T) per checkpoint in training order; how T was counted and small samples go to ``notes``."""
    ks = list(k) if k else _default_track_k(runs, t, t_source)
    # percentile intervals: paired with the accuracy column's replicates (a note says when few problems)
    curves = pass_at_kt(runs, k=ks, t=t, ci=ci, n_boot=n_boot, random_state=seed, t_source=t_source,
                        interval="percentile")
    passkt = (curves.rename({"arm": "checkpoint"})
              .with_columns(pl.col("checkpoint").replace_strict(series.step_of, return_dtype=pl.Float64).alias("step"),
                            pl.col("checkpoint").replace_strict(series.order_of, return_dtype=pl.Int64).alias("order"))
              .select("checkpoint", "step", "order", "k", "t", "pass_at_kt",
                      *[c for c in ("ci_low", "ci_high") if c in curves.columns], "t_source")
              .sort("order", "k", "t"))
    if passkt.height and passkt["t_source"][0] in TRUNCATED:
        notes.append("T by truncation: an episode counts for T if it is correct and used at most T rounds "
                     "(the rounds it happened to use, not a budget)")
    if ci is not None:
        notes.extend(small_sample_note(curves))
    return passkt


def _default_track_k(runs: pl.DataFrame, t: Sequence[int], t_source: str) -> list[int]:
    grid = default_k(runs, t, t_source=t_source)
    return sorted({grid[0], grid[-1]})


def _finite(value: Any) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)
