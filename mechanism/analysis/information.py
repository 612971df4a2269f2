"""Information integration: did the agent find the answer, and did it use what it found?

Conventions (stated once, used everywhere below):

- **Retrieved, read as text.** A gold answer counts as retrieved when it appears, as whole
  words, in some observation after both are read the same way
  (:func:`retrieval_normalize`): accents folded (``Beyoncé`` = ``Beyonce``), possessive
  ``'s`` dropped (``Lincoln's`` holds ``Lincoln``), every other punctuation mark read as a
  space (``Paris-based`` holds ``Paris``, ``Jean Paul Sartre`` = ``Jean-Paul Sartre``),
  articles dropped, lower case.
- **Not retrievable by text.** Some golds no word match can identify: yes/no/true/false/none,
  golds made only of function words (``us``, ``may``, ``it``), one-token numbers (``12``,
  ``two``, ``1987``: "12 May 2003" and "the two brothers" are not retrievals) and single
  characters (:func:`retrievable`). A trajectory whose golds are all such (or that has no
  gold) falls in its own stratum, **not_retrievable**, reported apart from parametric: its
  accuracy says nothing about answering without evidence.
- **Evidence.** Where the input says what was retrieved (a boolean column named by
  ``evidence``, e.g. whether the supporting paragraphs were returned), that column decides
  retrieved / not retrieved for every row where it is not null, whatever the gold's form;
  the text rule covers the other rows.
- **Rates.** Per arm: retrieval rate ``R = P(retrieved)``, integration rate
  ``I = P(correct | retrieved)``, parametric rate ``P = P(correct | not retrieved)`` (golds
  retrievable but not found), ``U = P(not retrievable)`` and ``V = P(correct | not
  retrievable)``, so that ``accuracy = R I + (1 - R - U) P + U V`` exactly.
- **Split, on question strata (the default).** Retrieval depends on the question, so the
  accuracy difference is split within each question, over the strata
  retrieved / not retrieved / not retrievable (Kitagawa's symmetric form,
  :func:`mechanism.analysis.compare.kitagawa_split`), and the per-question parts are averaged with
  the questions' weights: a **retrieval** part (the change in the mix of strata within
  questions, valued at the strata's mean success), an **integration** part
  ``(I_t - I_b) (R_t + R_b) / 2``, a **parametric** part and a **not_retrievable** part,
  per question. They add to the total exactly. With strategy labels the same is done on
  question x strategy strata (the nested split): composition (which strategy is used on
  each question) + within, and within split again into retrieval, integration,
  parametric and not-retrievable parts. ``strata="pooled"`` pools over questions (the
  textbook form), labelled in ``notes``.
- **Strata an arm never used.** Valued from that arm's own data, never the other arm's
  (:func:`question_strata_split`): a retrieval stratum an arm never reached in a question x
  strategy cell takes its modelled rate, and a cell it never used its own modelled retrieval mix
  and rates; ``shift`` reports the assumption-free bounds of the nested composition and within
  (``composition_low/high``, ``within_low/high``: each one-arm cell at 0 and at 1) and each arm's
  mass in one-arm cells (``one_arm_mass_base/treated``). The pooled form borrows, as in
  :mod:`mechanism.analysis.compare`.
- **Sensitivity.** ``split_sensitivity`` repeats the per-arm split under the other rules
  (not-retrievable golds counted as not retrieved, as a plain word match would; the older
  SQuAD reading, which deletes punctuation without a space and keeps accents), on the same
  bootstrap draws, so a reader sees how much the parts depend on the rule.

Also: the share of follow-up queries (rounds >= 2) that carry a content word first seen in
an observation (the mark of a bridge step), and, where base-model token log-probabilities
are given, the perplexity of query tokens vs reasoning tokens.

With strategy labels the same quantities are reported per strategy, and the question the
mission asks is answered directly: did the treated arm move its mass toward the strategies
whose retrieved information leads to correct answers (``shift``), and how does the accuracy
change split into mass moved between strategies and, within them, retrieval, integration and
parametric parts (the nested split, exact)? See :func:`integration`.

Weighting: every question weighs the same within an arm (each trajectory weighted
1 / its arm's samples of that question, :func:`mechanism.core.resample.question_weighted`), so
rates are means over questions and unequal sample counts cannot make identical policies look
different; ``weighting="trajectory"`` pools trajectories instead, on request.
Intervals: bootstrap over questions (all samples of a question together; arms paired); every
part of a split (``split``, ``split_sensitivity`` and the decomposition rows of ``shift``) has
the rule of :mod:`mechanism.analysis.compare`'s split, ``estimate +- t_{Q-1} sqrt(Q/(Q-1))`` bootstrap
standard deviations over the Q shared questions, other quantities percentile intervals, and
the bands below the same small-sample calibration. Per-strategy rows are read together, so
``by_strategy`` and ``strategy_shift`` carry simultaneous bands (max-|t| bootstrap,
:func:`mechanism.core.resample.simultaneous_band`) at joint level ``ci`` (column ``ci_level``): each rate or share
column over its rows, and
``strategy_shift``'s difference columns (share change and every part of the nested split) as
one family; ``perplexity_by_strategy`` is Bonferroni-adjusted over the strategies.
Family-level quantities (``per_arm``, ``split``, ``shift``: alignments, mass moved, nested
split totals) are single intervals at ``ci``.
"""
from __future__ import annotations

import dataclasses
import math
import re
import string
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import polars as pl

from mechanism.analysis._verdicts import integration_lines, integration_title
from mechanism.analysis._verdicts import integration_verdict as integration_verdict_line
from mechanism.analysis.arms import check_arm, check_counts, check_labels, check_pair, is_outlier
from mechanism.analysis.compare import (
    WEIGHTINGS,
    Strata,
    additive_logit,
    kitagawa_split,
    one_arm_note,
    small_sample_notes,
    weighted_correlation,
    weighted_tallies,
    within_question_split,
)
from mechanism.core.errors import InputError
from mechanism.core.options import RandomState, Weighting, check_choice, check_ci, check_seed
from mechanism.core.progress import progress as bar
from mechanism.core.resample import (
    bonferroni_level,
    detectable_effect,
    percentile_interval,
    question_bootstrap_weights,
    simultaneous_band,
    split_interval,
    stream,
)
from mechanism.core.results import Result, by_category
from mechanism.core.schema import shared_questions, validate
from mechanism.core.scoring import STOPWORDS as _STOPWORDS
from mechanism.core.scoring import (
    UNRETRIEVABLE_ANSWERS,
    contains_answer,
    gold_in_observations,
    normalize_answer,
    retrievable,
    retrieval_normalize,
)

__all__ = ["Integration", "integration", "retrieval_flags", "retrievable",
           "retrievable_flags", "retrieval_status", "retrieval_normalize", "RETRIEVAL_STATUS", "question_strata_split",
           "gold_in_observations", "followup_entity_flags", "content_tokens", "token_logprobs",
           "render_segments", "render_template", "LOGPROBS_DTYPE", "UNRETRIEVABLE_ANSWERS", "WEIGHTINGS"]

#: Format of a log-probability column: one entry per token of the trajectory's text as the
#: base model scores it; ``segment`` says which part the token belongs to ("query",
#: "reasoning", or any other name, reported as given), ``logprob`` is its natural-log
#: probability under the base model.
LOGPROBS_DTYPE = pl.List(pl.Struct({"segment": pl.String, "logprob": pl.Float64}))

_TOKEN = re.compile(r"[a-z0-9]+")


def content_tokens(text: str | None) -> set[str]:
    """Lower-cased content words of ``text`` (read as :func:`retrieval_normalize` reads it, stop
    words removed).

    Examples
    --------
    >>> sorted(content_tokens("Who directed The Matrix (1999)?"))
    ['1999', 'directed', 'matrix']
    >>> sorted(content_tokens("a Paris-based firm"))
    ['based', 'firm', 'paris']
    """
    if not text:
        return set()
    return {t for t in retrieval_normalize(text).split() if t not in _STOPWORDS
            and (len(t) > 1 or t.isdigit())}


def _squad_gold_in_observations(observations: Sequence[str | None], golds: Sequence[str] | None) -> bool:
    """The earlier rule, kept for the sensitivity table: SQuAD normalisation (punctuation
    deleted without a space, accents kept); only yes/no-like and function-word golds excluded."""
    def old_retrievable(g: str) -> bool:
        norm = normalize_answer(g)
        return len(norm) > 1 and norm not in UNRETRIEVABLE_ANSWERS and any(
            t not in _STOPWORDS for t in norm.split())
    usable = [g for g in (golds or []) if g is not None and old_retrievable(g)]
    return bool(usable) and any(contains_answer(o, usable) for o in observations)


RETRIEVAL_STATUS = ("not_retrieved", "retrieved", "not_retrievable")


RetrievalRule = Literal["text", "text_lumped", "squad"]


def retrieval_status(runs: pl.DataFrame, *, evidence: str | None = None, rule: RetrievalRule = "text",
                     progress: bool | None = False) -> np.ndarray:
    """Per row: 0 not retrieved, 1 retrieved, 2 not retrievable by text (:data:`RETRIEVAL_STATUS`).

    Parameters
    ----------
    runs
        Canonical table (``gold``, ``steps``; and the ``evidence`` column when named).
    evidence
        A boolean column saying whether the evidence was retrieved; where it is not null it
        decides (1 or 0) whatever the gold's form.
    rule
        ``"text"`` (the default rule), ``"text_lumped"`` (not-retrievable golds counted as not
        retrieved) or ``"squad"`` (the earlier SQuAD reading, not-retrievable counted as not
        retrieved): the latter two only for the sensitivity table.
    """
    validate(runs, required=("gold", "steps"))
    check_choice(rule, RetrievalRule, field="rule")
    match = _squad_gold_in_observations if rule == "squad" else gold_in_observations
    out = np.zeros(runs.height, dtype=np.int64)
    rows = zip(runs["gold"].to_list(), runs["steps"].to_list())
    for i, (golds, steps) in enumerate(bar(rows, enabled=progress, desc="retrieval", total=runs.height)):
        if rule == "text" and not any(g is not None and retrievable(g) for g in (golds or [])):
            out[i] = 2
        elif golds and steps:
            out[i] = int(match([step.get("observation") for step in steps], golds))
    if evidence is not None:
        given = runs[evidence]
        known = given.is_not_null().to_numpy()
        out[known] = given.fill_null(False).to_numpy().astype(np.int64)[known]
    return out


def retrieval_flags(runs: pl.DataFrame, *, progress: bool | None = False) -> np.ndarray:
    """Per row: does any observation contain a retrievable gold answer (read as text)?

    A row with an empty ``gold`` list, or whose gold answers are all not retrievable by text
    (see :func:`retrievable`), cannot have retrieved it: False (:func:`retrieval_status`
    tells these apart from "not retrieved").
    """
    return retrieval_status(runs, progress=progress) == 1


def retrievable_flags(runs: pl.DataFrame) -> np.ndarray:
    """Per row: does the row have at least one retrievable gold answer (:func:`retrievable`)?"""
    validate(runs, required=("gold",))
    return np.fromiter((any(g is not None and retrievable(g) for g in (golds or []))
                        for golds in runs["gold"].to_list()), dtype=bool, count=runs.height)


def followup_entity_flags(runs: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per row: number of follow-up queries, and how many carry a word first seen in an observation.

    A follow-up query is the query of round 2 or later. It carries an observation-born word
    when one of its content words is absent from the question and from every earlier query
    of the trajectory but present in an earlier observation.
    """
    validate(runs, required=("question", "steps"))
    n_followup = np.zeros(runs.height, dtype=np.int64)
    n_hits = np.zeros(runs.height, dtype=np.int64)
    for i, (question, steps) in enumerate(zip(runs["question"].to_list(), runs["steps"].to_list())):
        if not steps:
            continue
        known = content_tokens(question)  # question and earlier queries
        observed: set[str] = set()
        for j, step in enumerate(steps):
            words = content_tokens(step.get("query"))
            if j >= 1:
                n_followup[i] += 1
                if (words - known) & observed:
                    n_hits[i] += 1
            known |= words
            observed |= content_tokens(step.get("observation"))
    return n_followup, n_hits


@dataclass(frozen=True, repr=False)
class Integration(Result):
    """Result of :func:`integration`.

    Attributes
    ----------
    per_trajectory
        ``arm, question_id, sample_id, retrieved, retrieval_status, correct, n_followup,
        n_followup_from_observation``
        (and ``strategy`` when labels were given).
    per_arm
        Per arm: counts, ``accuracy``, ``retrieval_rate``, ``integration_rate``,
        ``parametric_rate``, ``followup_from_observation``, each with ``_ci_low``/``_ci_high``.
    split
        Per treated arm against ``base``: ``part`` in total / retrieval / integration /
        parametric / not_retrievable (and question_mix with ``weighting="trajectory"``) with
        ``estimate, ci_low, ci_high`` and ``detectable_effect``; the parts add to the total
        exactly (within questions by default, see the Conventions).
    split_sensitivity
        The same split under each retrieval rule (``rule``: ``text``, the default;
        ``text_not_retrievable_as_not_retrieved``; ``squad_reading``, the earlier one), from
        the same bootstrap draws.
    perplexity
        Per arm and segment: tokens, mean log-probability and perplexity with intervals;
        ``None`` when no log-probabilities were given.
    by_strategy
        With labels: per strategy and arm, ``n``, ``n_questions``, ``n_retrieved`` and the
        ``share``, ``retrieval_rate``, ``integration_rate``, ``parametric_rate`` and
        ``accuracy`` (success within the strategy), each column with a simultaneous band over
        its rows (joint level in ``ci_level``).
    shift
        With labels, per treated arm against ``base`` (questions both arms answered):
        ``quantity, estimate, ci_low, ci_high, detectable_effect`` for the alignments, the mass
        in above-average-integration strategies and the nested split (see :func:`integration`).
    strategy_shift
        With labels: per treated arm and strategy, the share change, the base arm's retrieval
        and integration rates, ``above_average`` and the strategy's parts of the nested split,
        with simultaneous bands over the strategies either arm used (the difference columns as
        one family; joint level in ``ci_level``).
    perplexity_by_strategy
        With labels and log-probabilities: per arm, strategy and segment, as ``perplexity``
        (intervals Bonferroni-adjusted over the strategies, level in ``ci_level``).
    """

    base: str
    arms: tuple[str, ...]
    ci: float | None
    per_trajectory: pl.DataFrame
    per_arm: pl.DataFrame
    split: pl.DataFrame | None
    perplexity: pl.DataFrame | None = None
    notes: tuple[str, ...] = ()
    treated: tuple[str, ...] = ()
    weighting: Weighting = "question"
    by_strategy: pl.DataFrame | None = None
    shift: pl.DataFrame | None = None
    strategy_shift: pl.DataFrame | None = None
    perplexity_by_strategy: pl.DataFrame | None = None
    split_sensitivity: pl.DataFrame | None = None
    strata: Strata = "question"
    by_category: pl.DataFrame | None = None

    key_columns: ClassVar[dict[str, pl.DataType]] = {
        "base": pl.String(), "treated": pl.String(), "arm": pl.String(), "segment": pl.String(),
        "part": pl.String(), "weighting": pl.String(), "strata": pl.String()}

    def _estimates(self) -> pl.DataFrame:
        """One row per headline quantity. Per-arm rates and perplexities name their ``arm``
        (``base`` and ``treated`` null) and ``segment``; a comparison names its ``base`` and
        ``treated``: the split as quantity ``split`` with its ``part``, the shift's quantities
        by name (one per arm, such as ``mass_above``, with its ``arm``), with ``detectable``."""
        rows = []
        for row in self.per_arm.iter_rows(named=True):
            for q in ("accuracy", "retrieval_rate", "integration_rate", "parametric_rate",
                      "followup_from_observation"):
                rows.append((None, None, row["arm"], None, None, q, row[q], row[f"{q}_ci_low"],
                             row[f"{q}_ci_high"], None))
        for row in (self.split.iter_rows(named=True) if self.split is not None else ()):
            rows.append((row["base"], row["treated"], None, None, row["part"], "split", row["estimate"],
                         row["ci_low"], row["ci_high"], row["detectable_effect"]))
        for row in (self.shift.iter_rows(named=True) if self.shift is not None else ()):
            quantity, arm = _per_arm_quantity(row["quantity"], row["base"], row["treated"])
            rows.append((row["base"], row["treated"], arm, None, None, quantity, row["estimate"], row["ci_low"],
                         row["ci_high"], row["detectable_effect"]))
        for row in (self.perplexity.iter_rows(named=True) if self.perplexity is not None else ()):
            rows.append((None, None, row["arm"], row["segment"], None, "perplexity", row["perplexity"],
                         row["perplexity_ci_low"], row["perplexity_ci_high"], None))
        schema = {"base": pl.String, "treated": pl.String, "arm": pl.String, "segment": pl.String, "part": pl.String,
                  "quantity": pl.String, "estimate": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
                  "detectable": pl.Float64}
        frame = pl.DataFrame(rows, schema=schema, orient="row")
        return frame.with_columns(weighting=pl.lit(self.weighting), strata=pl.lit(self.strata))

    def verdict(self, treated: str | None = None) -> str:
        """One line: did ``treated`` (default: the first compared) move toward strategies that
        integrate well, how much of the accuracy change that explains, and what changed within.

        Needs a result computed with ``labels``.

        Examples
        --------
        A line reads like: ``rl moved 23 points of mass toward strategies whose base integration
        rate is above average (31% -> 54% [+17, +29]; alignment +0.71 [+0.52, +0.86]); moving mass
        between strategies explains +0.15 [+0.12, +0.18] of the +0.19 [+0.15, +0.23] accuracy
        change; within strategies, integration +0.03 [-0.01, +0.07] (not distinguishable from 0),
        retrieval +0.00 [-0.01, +0.01] (not distinguishable from 0)``.
        """
        return integration_verdict_line(self, treated)

    def lines(self, *, indent: str = "") -> list[str]:
        """The findings in words, one statement per line."""
        return integration_lines(self, indent=indent)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict of every table."""
        def rows(table: pl.DataFrame | None) -> list[dict[str, Any]] | None:
            if table is None:
                return None
            return [{k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                     for k, v in r.items()} for r in table.iter_rows(named=True)]
        return {"base": self.base, "arms": list(self.arms), "treated": list(self.treated), "ci": self.ci,
                "weighting": self.weighting, "per_arm": rows(self.per_arm), "split": rows(self.split),
                "perplexity": rows(self.perplexity), "by_strategy": rows(self.by_strategy),
                "shift": rows(self.shift), "strategy_shift": rows(self.strategy_shift),
                "perplexity_by_strategy": rows(self.perplexity_by_strategy),
                "split_sensitivity": rows(self.split_sensitivity), "strata": self.strata, "notes": list(self.notes)}


    # -- the result protocol (mechanism.core.results): summary(), tables(), a one-line repr
    def tables(self) -> dict[str, pl.DataFrame]:
        """Every table by a file-friendly name."""
        return {n: t for n, t in (("estimates", self.to_frame()), ("per_arm", self.per_arm), ("split", self.split),
                                  ("perplexity", self.perplexity),
                                  ("per_trajectory", self.per_trajectory), ("by_strategy", self.by_strategy),
                                  ("shift", self.shift), ("strategy_shift", self.strategy_shift),
                                  ("perplexity_by_strategy", self.perplexity_by_strategy),
                                  ("split_sensitivity", self.split_sensitivity),
                                  ("by_category", self.by_category)) if t is not None}

    def _summary_title(self) -> str:
        return integration_title(self)

    def _summary_lines(self) -> list[str]:
        return self.lines()

    def _headline(self) -> str:
        return f"{len(self.arms)} arms against {self.base}, {self.per_trajectory.height} trajectories"



def _per_arm_quantity(quantity: str, base: str, treated: str) -> tuple[str, str | None]:
    """A shift quantity held once per arm (``mass_above_base``) as its name and the arm it
    describes (``mass_above``, ``base``); any other quantity as it is, with no arm."""
    for name in PER_ARM_SHIFT:
        if quantity == f"{name}_base":
            return name, base
        if quantity == f"{name}_treated":
            return name, treated
    return quantity, None


#: Shift quantities held once per arm of the pair (``<name>_base``, ``<name>_treated`` in ``shift``).
PER_ARM_SHIFT = ("mass_above", "one_arm_mass")


def integration(runs: pl.DataFrame, *, arms: Sequence[str] | None = None, base: str | None = None,
                treated: str | Sequence[str] | None = None, labels: Any = None,
                ci: float | None = 0.95, n_boot: int = 1000, random_state: RandomState = 0,
                weighting: Weighting = "question", logprobs_column: str | None = None,
                model_path: str | Path | None = None, progress: bool | None = False,
                evidence: str | None = None, strata: Strata = "question", by: str | None = None,
                allow_few_shared: bool = False) -> Integration:
    """Retrieval, integration and parametric rates per arm (and strategy), and the splits between arms.

    Parameters
    ----------
    runs
        Canonical trajectory table.
    arms
        Arms to report, in order (default: ``base`` and ``treated`` when given, else all, in
        order of appearance).
    base
        The arm the others are split against (default: the first of ``arms``).
    treated
        Arm or arms compared with ``base`` (default: every other arm of ``arms``).
    labels
        One strategy label per row of ``runs`` (integers or strings; ``-1`` = outlier, kept as
        its own stratum and left out of the alignments and the above-average mass), e.g.
        ``StrategySpace.transform(runs)``. Adds ``by_strategy``, ``shift`` and
        ``strategy_shift``.
    ci
        Confidence level of the bootstrap intervals; ``None`` skips them. Per-strategy rows
        carry simultaneous bands that hold together at ``ci``; the per-arm, split and shift
        intervals are at ``ci``.
    n_boot, random_state
        Bootstrap replicates over questions and their seed.
    weighting
        ``"question"`` (default): every question weighs the same within an arm, each trajectory
        weighted 1 / (its arm's samples of that question). ``"trajectory"``: pooled over
        trajectories (ratio of sums), which lets a question's sample count set its weight;
        labelled as such in ``notes``.
    logprobs_column
        Name of a column of base-model token log-probabilities in the format
        :data:`LOGPROBS_DTYPE`; adds per-segment perplexities (per strategy too, with labels).
    model_path
        A local folder holding a causal language model and its fast tokenizer (loaded with
        transformers, never downloaded): the base model scores every trajectory
        (:func:`token_logprobs`) and per-segment perplexities are added. Exclusive with
        ``logprobs_column``.
    progress
        Show progress bars (retrieval check; base-model scoring).
    treated
        Arms split against ``base`` (the name every comparison uses): ``arms`` becomes
        ``[base, *treated]``; exclusive with ``arms``.
    evidence
        Name of a boolean column that says whether the evidence was retrieved (e.g. the
        supporting paragraphs); where not null it decides retrieval instead of the text rule.
    strata
        ``"question"`` (default): every split is made within questions (and, with labels, on
        question x strategy strata); ``"pooled"``: over strata pooled across questions.
    by
        A task-type column (e.g. ``"category"``): the result also holds each category's
        long table beside the pooled one (``by_category``, key column ``category``).
    allow_few_shared
        Compare arms that share fewer than half of their questions; by default that is refused
        (:func:`mechanism.core.schema.refuse_few_shared`, an :class:`~mechanism.core.errors.InputError`
        naming ``question_key=``).

    Returns
    -------
    Integration

    Notes
    -----
    With labels, per strategy ``s`` and arm: share ``p(s)``, retrieval rate ``R(s)``,
    integration rate ``I(s) = P(correct | retrieved, s)``, parametric rate
    ``P(s) = P(correct | not retrieved, s)``, success ``r(s) = R I + (1 - R) P``. Against the
    base arm (questions both answered):

    - **nested split** ``total = composition + within`` over strategies (Kitagawa), and each
      strategy's within part ``(r_t - r_b) (p_t + p_b) / 2`` split again over retrieved / not
      retrieved into ``within_retrieval = w (R_t - R_b) ((I_t + I_b) / 2 - (P_t + P_b) / 2)``,
      ``within_integration = w (I_t - I_b) (R_t + R_b) / 2`` and
      ``within_parametric = w (P_t - P_b) (2 - R_t - R_b) / 2`` with ``w = (p_t + p_b) / 2``;
      the parts sum to the total exactly. A strategy one arm never uses borrows the other
      arm's rates (its within parts are zero), as in :mod:`mechanism.analysis.compare`.
    - **alignment_integration**: weighted correlation, over the strategies with a base
      integration rate, of the share change ``p_t - p_b`` with ``I_b(s)``, weights
      ``(p_b + p_t) / 2`` (NaN with fewer than three strategies); **alignment_retrieval**
      the same with ``R_b(s)``.
    - **mass_above_base / mass_above_treated**: each arm's share in the strategies whose base
      integration rate exceeds the base arm's overall ``P(correct | retrieved)``
      (``base_integration_rate``); ``mass_moved_above`` is their difference. The set is
      fixed from the point estimate and kept in every bootstrap replicate, so the estimate sits
      inside its own interval (choosing it again in each replicate put it at the edge).

    Multiplicity: a table with one interval per strategy invites reading the one that excludes
    0; with ``S`` strategies at 95 % each, identical policies give such an interval far more
    often than 5 % of the time, and the columns of ``strategy_shift`` are read together too.
    Per-strategy rows therefore carry simultaneous max-|t| bootstrap bands (the outlier stratum
    included; in ``strategy_shift`` over the strategies either arm of the pair used, its
    difference columns as one family). The alignments, the mass moved and the nested split
    totals are one interval each, at ``ci``. With few replicates the bands' critical value
    rests on few of them: a note says so.
    """
    validate(runs)
    check_choice(strata, Strata, field="strata")
    check_choice(weighting, Weighting, field="weighting")
    ci = check_ci(ci)
    check_seed(random_state)  # one-line error for anything but a seed; the draws come from one seed
    _check_evidence(runs, evidence)
    arms, base, treated_list = _resolve_arms(runs, arms, base, treated)
    check_counts(n_boot=n_boot)
    if logprobs_column is not None and model_path is not None:
        raise InputError("give `logprobs_column` or `model_path`, not both", field="model_path")
    if logprobs_column is not None:
        _check_logprobs(runs, logprobs_column)
    values = check_labels(runs, labels) if labels is not None else None
    if by is not None:
        opts = dict(arms=arms, base=base, treated=treated_list, ci=ci, n_boot=n_boot, random_state=random_state,
                    weighting=weighting, logprobs_column=logprobs_column, model_path=model_path,
                    progress=progress, evidence=evidence, strata=strata, allow_few_shared=allow_few_shared)
        return _integration_by_category(runs, values, by, opts)
    for arm in treated_list:
        shared_questions(runs, [base, arm], what="integration", allow_few=allow_few_shared,
                         compared="the split compares on the shared "
                         "questions, the rates per arm use all of each arm's questions")
    keep = runs["arm"].is_in(arms).to_numpy()
    runs = runs.filter(pl.Series(keep))
    if values is not None:
        values = values[keep]
    if model_path is not None:
        logprobs_column = "_base_model_logprobs"
        runs = runs.with_columns(token_logprobs(runs, model_path, progress=progress).alias(logprobs_column))
    status = retrieval_status(runs, evidence=evidence, progress=progress)
    n_follow, n_hits = followup_entity_flags(runs)
    notes = _retrieval_notes(runs, status, weighting=weighting, evidence=evidence, strata=strata)
    design = _Design.of(runs, arms, values, status, weighting=weighting, ci=ci, n_boot=n_boot,
                        random_state=random_state)
    per_traj = _per_trajectory(runs, status, n_follow, n_hits, design, labelled=values is not None)
    per_arm = _per_arm(design, status, n_follow, n_hits, ci)
    rules = {"text": status, "text_not_retrievable_as_not_retrieved": np.where(status == 2, 0, status),
             "squad_reading": retrieval_status(runs, evidence=evidence, rule="squad")}
    pairs = [_pair_tables(design, base, arm, rules, strata=strata, weighting=weighting, ci=ci,
                          labelled=values is not None) for arm in treated_list]
    for pair in pairs:
        notes.extend(pair.notes)
    by_strategy = None
    strategy_ci = bonferroni_level(ci, design.n_s)  # perplexity_by_strategy (percentile intervals, Bonferroni)
    if values is not None:
        by_strategy = _by_strategy(design.N, design.C, design.a_idx, design.q_idx, design.s_idx, status, arms,
                                   design.strategies, design.weights, ci)
        if design.weights is not None and design.n_s > 1:
            levels = [pair.level for pair in pairs if pair.level is not _NO_LEVEL]
            notes.append(_multiplicity_note(design.n_s, strategy_ci, ci, n_boot,
                                            fewer=any(level != strategy_ci for level in levels),
                                            perplexity=logprobs_column is not None or model_path is not None))
    perplexity = perplexity_by_strategy = None
    if logprobs_column is not None:
        perplexity = _perplexity(runs, logprobs_column, arms, design.a_idx, design.q_idx, design.n_q, design.row_w,
                                 design.weights, ci)
        if values is not None:
            perplexity_by_strategy = _perplexity(runs, logprobs_column, arms, design.a_idx, design.q_idx, design.n_q,
                                                 design.row_w, design.weights, strategy_ci, strategy=design.s_idx,
                                                 strategies=design.strategies)
    return Integration(base=base, arms=tuple(arms), ci=ci, per_trajectory=per_traj, per_arm=per_arm,
                       split=_stack([p.split for p in pairs], SPLIT_SCHEMA), perplexity=perplexity,
                       notes=tuple(notes), treated=tuple(treated_list), weighting=weighting,
                       by_strategy=by_strategy, shift=_stack([p.shift for p in pairs], SHIFT_SCHEMA),
                       strategy_shift=pl.concat([p.strategy_shift for p in pairs if p.strategy_shift is not None])
                       if values is not None and pairs else None,
                       perplexity_by_strategy=perplexity_by_strategy,
                       split_sensitivity=_stack([p.sensitivity for p in pairs], SENSITIVITY_SCHEMA), strata=strata)


# ----------------------------------------------------------------------------- integration's stages
def _check_evidence(runs: pl.DataFrame, evidence: str | None) -> None:
    if evidence is None:
        return
    if evidence not in runs.columns:
        raise InputError(f"no column `{evidence}` for the evidence of retrieval", field=evidence)
    if runs.schema[evidence] != pl.Boolean:
        raise InputError(f"column `{evidence}` has type {runs.schema[evidence]}, expected a boolean",
                         field=evidence)


def _resolve_arms(runs: pl.DataFrame, arms: Sequence[str] | None, base: str | None,
                  treated: str | Sequence[str] | None) -> tuple[list[str], str, list[str]]:
    """The arms reported, the base and the treated arms, from what the caller named.

    ``arms`` defaults to ``base`` and ``treated`` when given, else every arm in order of
    appearance; ``base`` to the first of ``arms``; ``treated`` to every other arm.
    """
    present = runs["arm"].unique(maintain_order=True).to_list()
    treated_list = None
    if treated is not None:
        treated_list = list(dict.fromkeys([treated] if isinstance(treated, str) else treated))
        if not treated_list:
            raise InputError("`treated` is empty", field="treated")
    if arms is None:
        if treated_list is not None:
            first = base if base is not None else next((a for a in present if a not in treated_list), None)
            arms = [a for a in (first, *treated_list) if a is not None]
        else:
            arms = present
    arms = list(dict.fromkeys(arms))  # an arm named twice counts once
    for arm in arms:
        check_arm(arm, present, field="arms")
    if not arms:
        raise InputError("no arm to report", field="arms")
    base = arms[0] if base is None else base
    if treated_list is None:
        treated_list = [a for a in arms if a != base]
    check_pair(arms, base, treated_list, where="`arms`")
    return arms, base, treated_list


def _integration_by_category(runs: pl.DataFrame, values: np.ndarray | None, by: str,
                             opts: dict[str, Any]) -> Integration:
    """The pooled result with each category's long table beside it (same seed)."""
    pooled = integration(runs, labels=values, **opts)
    table, extra = by_category(runs, by, pooled, lambda mask: integration(
        runs.filter(pl.Series(mask)), labels=None if values is None else values[mask], **opts))
    return dataclasses.replace(pooled, by_category=table, notes=pooled.notes + tuple(extra))


def _retrieval_notes(runs: pl.DataFrame, status: np.ndarray, *, weighting: Weighting, evidence: str | None,
                     strata: Strata) -> list[str]:
    """What the weighting, the not-retrievable stratum, the evidence column and the strata mean here."""
    notes: list[str] = []
    if weighting == "trajectory":
        notes.append("weighting: pooled over trajectories (ratio of sums), not questions weighing equally; "
                     "a question's sample count sets its weight")
    has_gold = (runs["gold"].list.len().fill_null(0) > 0).to_numpy()
    for mask, what in ((~has_gold, "no gold answer (only a correctness label)"),
                       (has_gold & ~retrievable_flags(runs), "only golds text cannot identify (yes/no, function "
                        "words, one-token numbers)")):
        mask = mask & (status == 2)
        if mask.any():
            n_no = runs.filter(pl.Series(mask))["question_id"].n_unique()
            notes.append(f"{int(mask.sum())} trajectories ({n_no} question{'s' if n_no != 1 else ''}) have {what}: "
                         "they form their own stratum, not_retrievable, reported apart from parametric")
    if evidence is not None:
        notes.append(f"retrieval read from column `{evidence}` where it is not null "
                     f"({int(runs[evidence].is_not_null().sum())} of {runs.height} rows), from the text elsewhere")
    notes.append("splits are computed within questions (question x strategy strata with labels)" if strata == "question"
                 else "splits pool each stratum over questions (strata='pooled'): they also hold the change in which "
                      "questions each stratum is reached on")
    return notes


@dataclass(frozen=True)
class _Design:
    """Every row as (arm, question, strategy) indices, the tallies over them and the question draws."""

    arms: tuple[str, ...]
    q_idx: np.ndarray
    a_idx: np.ndarray
    s_idx: np.ndarray
    strategies: np.ndarray
    outlier: np.ndarray
    correct: np.ndarray
    samples: np.ndarray          # (A, Q) trajectories per arm and question
    row_w: np.ndarray            # per row: its weight under the weighting
    weights: np.ndarray | None   # (n_boot, Q) question draws, None without a bootstrap
    weighting: Weighting
    N: np.ndarray                # (A, Q, S, K) weighted trajectories by retrieval status
    C: np.ndarray                # (A, Q, S, K) weighted successes

    @property
    def n_q(self) -> int:
        return int(self.samples.shape[1])

    @property
    def n_a(self) -> int:
        return len(self.arms)

    @property
    def n_s(self) -> int:
        return len(self.strategies)

    @classmethod
    def of(cls, runs: pl.DataFrame, arms: Sequence[str], values: np.ndarray | None, status: np.ndarray, *,
           weighting: Weighting, ci: float | None, n_boot: int, random_state: RandomState) -> _Design:
        questions = sorted(set(runs["question_id"].to_list()))
        q_index = {q: i for i, q in enumerate(questions)}
        q_idx = np.fromiter((q_index[q] for q in runs["question_id"].to_list()), dtype=np.int64, count=runs.height)
        n_q, n_a = len(questions), len(arms)
        a_index = {a: i for i, a in enumerate(arms)}
        a_idx = np.fromiter((a_index[a] for a in runs["arm"].to_list()), dtype=np.int64, count=runs.height)
        if values is not None:
            strategies, s_idx = np.unique(values, return_inverse=True)
            s_idx = s_idx.reshape(-1)
        else:
            strategies, s_idx = np.array([0]), np.zeros(runs.height, dtype=np.int64)
        outlier = np.array([is_outlier(s) for s in strategies.tolist()])
        samples = np.bincount(a_idx * n_q + q_idx, minlength=n_a * n_q).astype(float).reshape(n_a, n_q)
        row_w = 1.0 / samples[a_idx, q_idx] if weighting == "question" else np.ones(runs.height)
        weights = (question_bootstrap_weights(n_q, n_boot, stream(random_state, "bootstrap")).astype(float)
                   if ci is not None and n_boot > 0 else None)
        empty = np.zeros(0)
        design = cls(arms=tuple(arms), q_idx=q_idx, a_idx=a_idx, s_idx=s_idx, strategies=strategies,
                     outlier=outlier, correct=runs["correct"].to_numpy().astype(bool), samples=samples,
                     row_w=row_w, weights=weights, weighting=weighting, N=empty, C=empty)
        n, c = design.tallies(status)
        return dataclasses.replace(design, N=n, C=c)

    def tallies(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Weighted tallies per (arm, question, strategy, retrieval status): every statistic is a
        function of them."""
        n_a, n_q, n_s = self.n_a, self.n_q, self.n_s
        flat = ((self.a_idx * n_q + self.q_idx) * n_s + self.s_idx) * K + codes
        size = n_a * n_q * n_s * K
        n_ = np.bincount(flat, minlength=size).astype(float).reshape(n_a, n_q, n_s * K)
        c_ = np.bincount(flat, weights=self.correct.astype(float), minlength=size).reshape(n_a, n_q, n_s * K)
        n_, c_ = weighted_tallies(n_, c_, self.weighting)
        return n_.reshape(n_a, n_q, n_s, K), c_.reshape(n_a, n_q, n_s, K)


def _per_trajectory(runs: pl.DataFrame, status: np.ndarray, n_follow: np.ndarray, n_hits: np.ndarray,
                    design: _Design, *, labelled: bool) -> pl.DataFrame:
    per_traj = runs.select("arm", "question_id", "sample_id").with_columns(
        pl.Series("retrieved", status == 1),
        pl.Series("retrieval_status", np.asarray(RETRIEVAL_STATUS, dtype=object)[status].tolist(), dtype=pl.String),
        runs["correct"],
        pl.Series("n_followup", n_follow), pl.Series("n_followup_from_observation", n_hits))
    if labelled:
        per_traj = per_traj.with_columns(pl.Series("strategy", design.strategies[design.s_idx].tolist()))
    return per_traj


def _per_arm(design: _Design, status: np.ndarray, n_follow: np.ndarray, n_hits: np.ndarray,
             ci: float | None) -> pl.DataFrame:
    """Per arm: counts and rates over all of the arm's questions, with percentile intervals."""
    n_a, n_q = design.n_a, design.n_q
    N, C, weights = design.N, design.C, design.weights
    aq = design.a_idx * n_q + design.q_idx
    per_q = {
        "n": N.sum(axis=(2, 3)), "ret": N[..., 1].sum(axis=2), "cor": C.sum(axis=(2, 3)),
        "cor_ret": C[..., 1].sum(axis=2), "unr": N[..., 2].sum(axis=2), "cor_unr": C[..., 2].sum(axis=2),
        "follow": np.bincount(aq, weights=design.row_w * n_follow, minlength=n_a * n_q).reshape(n_a, n_q),
        "hits": np.bincount(aq, weights=design.row_w * n_hits, minlength=n_a * n_q).reshape(n_a, n_q),
    }
    point = _arm_rates({k: v.sum(axis=1) for k, v in per_q.items()})
    reps = _arm_rates({k: np.einsum("bq,aq->ba", weights, v) for k, v in per_q.items()}) \
        if weights is not None else None
    rows = []
    for a, arm in enumerate(design.arms):
        m = design.a_idx == a
        row: dict[str, Any] = {"arm": arm, "n": int(m.sum()), "n_questions": int((design.samples[a] > 0).sum()),
                               "n_retrieved": int((status[m] == 1).sum()),
                               "n_not_retrievable": int((status[m] == 2).sum()), "n_followup": int(n_follow[m].sum())}
        for name, value in point.items():
            row[name] = float(value[a])
            lo, hi = (percentile_interval(reps[name][:, a], ci) if reps is not None else (math.nan, math.nan))
            row[f"{name}_ci_low"], row[f"{name}_ci_high"] = float(lo), float(hi)
        rows.append(row)
    return pl.DataFrame(rows).with_columns(pl.col(pl.Float64).fill_nan(None))


#: A pair whose per-strategy bands were not made (no labels, or no bootstrap).
_NO_LEVEL = object()


@dataclass(frozen=True)
class _PairTables:
    """The rows one base/treated pair adds to the split, sensitivity, shift and strategy tables."""

    split: list[tuple]
    sensitivity: list[tuple]
    shift: list[tuple]
    strategy_shift: pl.DataFrame | None
    notes: list[str]
    level: Any = _NO_LEVEL


def _stack(rows: list[list[tuple]], schema: dict[str, pl.DataType]) -> pl.DataFrame | None:
    """One table of every pair's rows; undefined values (no interval without a bootstrap, an
    alignment over < 3 strategies) are null."""
    flat = [row for part in rows for row in part]
    if not flat:
        return None
    return pl.DataFrame(flat, schema=schema, orient="row").with_columns(pl.col(pl.Float64).fill_nan(None))


def _part_interval(estimate: float, reps: np.ndarray | None, ci: float | None, n_questions: int) -> tuple[Any, Any]:
    """Every part of a split: one small-sample interval rule, as in compare (``resample.split_interval``)."""
    if reps is None:
        return math.nan, math.nan
    return split_interval(estimate, reps, ci, n_questions)


def _pair_tables(design: _Design, base: str, arm: str, rules: dict[str, np.ndarray], *, strata: Strata,
                 weighting: Weighting, ci: float | None, labelled: bool) -> _PairTables:
    """The split of ``arm`` against ``base`` on their shared questions, its sensitivity to the
    retrieval rule and, with labels, the shift and the per-strategy nested split."""
    b, t = design.arms.index(base), design.arms.index(arm)
    samples = design.samples
    common = (samples[b] > 0) & (samples[t] > 0)
    if not common.any():
        raise InputError(f"arms {base!r} and {arm!r} share no `question_id`", field="question_id")
    notes = []
    either = int(((samples[b] > 0) | (samples[t] > 0)).sum())
    if common.sum() < either:
        notes.append(f"{arm} vs {base}: {either - int(common.sum())} question(s) answered by only one "
                     "arm were left out of the split")
    n_common = int(common.sum())
    # the cell model weighs its ridge against raw counts: undo the question weighting for it
    pair_samples = samples[[b, t]] * common[None, :] if weighting == "question" else None
    pair_n = design.N[[b, t]] * common[None, :, None, None]
    pair_c = design.C[[b, t]] * common[None, :, None, None]
    stats, rstats = _pair_replicates(design, pair_n, pair_c, pair_samples, strata)
    sensitivity = _sensitivity_rows(design, b, t, common, rules, pair_samples, base, arm, strata, ci)
    split = []
    for part in ARM_PARTS + (("question_mix",) if weighting == "trajectory" and strata == "question" else ()):
        est = float(stats[f"arm_{part}"][0])
        lo, hi = _part_interval(est, rstats[f"arm_{part}"] if rstats else None, ci, n_common)
        split.append((base, arm, n_common, part, est, float(lo), float(hi),
                      detectable_effect(float(lo), float(hi), ci)))
    if not labelled:
        return _PairTables(split=split, sensitivity=sensitivity, shift=[], strategy_shift=None, notes=notes)
    if strata == "question":
        notes.append(f"{arm} vs {base}: " + one_arm_note(
            float(stats["one_arm_mass_base"][0]), float(stats["one_arm_mass_treated"][0]), base, arm,
            (float(stats["composition_low"][0]), float(stats["composition_high"][0])),
            what="the nested split's composition"))
    notes.extend(f"{arm} vs {base}: {n}" for n in small_sample_notes(n_common, samples[[b, t]][:, common]))
    shift = _shift_rows(stats, rstats, base, arm, n_common, ci)
    table = _strategy_shift(design, stats, rstats, pair_n, base, arm, n_common, ci)
    return _PairTables(split=split, sensitivity=sensitivity, shift=shift, strategy_shift=table, notes=notes,
                       level=ci if rstats is not None else _NO_LEVEL)


def _pair_replicates(design: _Design, pair_n: np.ndarray, pair_c: np.ndarray, pair_samples: np.ndarray | None,
                     strata: Strata) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray] | None]:
    """Every statistic of the pair at the point and in each bootstrap replicate (``None`` without one)."""
    weights = design.weights
    stats = _pair_statistics(pair_n.sum(axis=1)[None], pair_c.sum(axis=1)[None], design.outlier)
    rstats = None
    if weights is not None:
        # the above-average set is fixed from the point estimate: the mass moved is then a
        # smooth statistic whose estimate sits inside its own interval
        rstats = _pair_statistics(_replicate(weights, pair_n), _replicate(weights, pair_c), design.outlier,
                                  above=stats["above"][0])
    if strata == "question":  # the splits on question (x strategy) strata replace the pooled ones
        stats.update(question_strata_split(pair_n, pair_c, np.ones((1, design.n_q)), samples=pair_samples))
        if rstats is not None:
            rstats.update(question_strata_split(pair_n, pair_c, weights, samples=pair_samples))
    return stats, rstats


def _sensitivity_rows(design: _Design, b: int, t: int, common: np.ndarray, rules: dict[str, np.ndarray],
                      pair_samples: np.ndarray | None, base: str, arm: str, strata: Strata,
                      ci: float | None) -> list[tuple]:
    """The per-arm split under each retrieval rule, on the same question draws."""
    weights, n_common, rows = design.weights, int(common.sum()), []
    for alt_name, alt_codes in rules.items():
        an, ac = design.tallies(alt_codes)
        an, ac = an[[b, t]] * common[None, :, None, None], ac[[b, t]] * common[None, :, None, None]
        alt = (question_strata_split(an, ac, np.ones((1, design.n_q)), samples=pair_samples) if strata == "question"
               else _pair_statistics(an.sum(axis=1)[None], ac.sum(axis=1)[None], design.outlier))
        alt_r = None
        if weights is not None:
            alt_r = (question_strata_split(an, ac, weights, samples=pair_samples) if strata == "question"
                     else _pair_statistics(_replicate(weights, an), _replicate(weights, ac), design.outlier))
        for part in ARM_PARTS:
            lo, hi = _part_interval(float(alt[f"arm_{part}"][0]), alt_r[f"arm_{part}"] if alt_r else None, ci,
                                    n_common)
            rows.append((base, arm, alt_name, n_common, part, float(alt[f"arm_{part}"][0]), float(lo), float(hi)))
    return rows


def _shift_rows(stats: dict[str, np.ndarray], rstats: dict[str, np.ndarray] | None, base: str, arm: str,
                n_common: int, ci: float | None) -> list[tuple]:
    """The shift's quantities: the split's parts and bounds by the split's rule, the rest by percentiles."""
    rows = []
    for quantity in SHIFT_QUANTITIES:
        if quantity not in stats:  # the bounds exist on question x strategy strata only
            continue
        est = float(stats[quantity][0])
        reps = rstats[quantity] if rstats else None
        if quantity in DECOMPOSITION + BOUNDS:
            lo, hi = _part_interval(est, reps, ci, n_common)
        else:
            lo, hi = (math.nan, math.nan) if reps is None else percentile_interval(reps, ci)
        rows.append((base, arm, n_common, quantity, est, float(lo), float(hi),
                     detectable_effect(float(lo), float(hi), ci) if quantity in DECOMPOSITION else math.nan))
    return rows


def _strategy_shift(design: _Design, stats: dict[str, np.ndarray], rstats: dict[str, np.ndarray] | None,
                    pair_n: np.ndarray, base: str, arm: str, n_common: int, ci: float | None) -> pl.DataFrame:
    """Per strategy: the share change, the base rates and the nested split's parts, with
    simultaneous bands: each level column over the strategies, and every difference column
    (share change and the nested split's parts) together as one family."""
    n_s = design.n_s
    cols: dict[str, Any] = {"base": [base] * n_s, "treated": [arm] * n_s, "strategy": design.strategies.tolist()}
    used = ((pair_n[0] + pair_n[1]).sum(axis=(0, 2)) > 0)
    families = [(name,) for name in SHIFT_LEVEL_COLUMNS] + [SHIFT_DIFFERENCE_COLUMNS]
    for family in families:
        est = np.stack([np.where(used, np.asarray(stats[STRATEGY_SHIFT_COLUMNS[n]][0], dtype=float), np.nan)
                        for n in family])
        if rstats is not None and ci is not None:
            rep_ = np.stack([np.where(used, np.asarray(rstats[STRATEGY_SHIFT_COLUMNS[n]], dtype=float), np.nan)
                             for n in family], axis=1)
            lo, hi, _ = simultaneous_band(est, rep_, ci, n_questions=n_common)
        else:
            lo = hi = np.full(est.shape, np.nan)
        for i, name in enumerate(family):
            cols[name] = np.asarray(stats[STRATEGY_SHIFT_COLUMNS[name]][0], dtype=float)
            cols[f"{name}_ci_low"], cols[f"{name}_ci_high"] = lo[i], hi[i]
    cols = {k: cols[k] for k in ["base", "treated", "strategy"] + [
        c for name in STRATEGY_SHIFT_COLUMNS for c in (name, f"{name}_ci_low", f"{name}_ci_high")]}
    cols["above_average"] = stats["above"][0]
    cols["ci_level"] = np.full(n_s, math.nan if ci is None or rstats is None else ci)
    return pl.DataFrame(cols).with_columns(pl.col(pl.Float64).fill_nan(None))


K = len(RETRIEVAL_STATUS)  # retrieval strata: not retrieved, retrieved, not retrievable by text
ARM_PARTS = ("total", "retrieval", "integration", "parametric", "not_retrievable")
SHIFT_QUANTITIES = ("alignment_integration", "alignment_retrieval", "base_integration_rate",
                    "mass_above_base", "mass_above_treated", "mass_moved_above",
                    "total", "composition", "within", "within_retrieval", "within_integration",
                    "within_parametric", "within_not_retrievable", "composition_low", "composition_high",
                    "within_low", "within_high", "one_arm_mass_base", "one_arm_mass_treated")
DECOMPOSITION = ("total", "composition", "within", "within_retrieval", "within_integration", "within_parametric",
                 "within_not_retrievable")
#: Assumption-free bounds of the nested split (every one-arm cell at 0 and at 1) and the mass in
#: one-arm cells; the bounds take the split's interval rule.
BOUNDS = ("composition_low", "composition_high", "within_low", "within_high")
# strategy_shift column -> key of the per-strategy array in _pair_statistics
STRATEGY_SHIFT_COLUMNS = {"share_base": "share_base", "share_treated": "share_treated",
                          "share_change": "share_change", "retrieval_rate_base": "retrieval_rate_base",
                          "integration_rate_base": "integration_rate_base", "composition": "composition_s",
                          "within": "within_s", "within_retrieval": "within_retrieval_s",
                          "within_integration": "within_integration_s",
                          "within_parametric": "within_parametric_s",
                          "within_not_retrievable": "within_not_retrievable_s"}
SPLIT_SCHEMA = {"base": pl.String, "treated": pl.String, "n_questions": pl.Int64, "part": pl.String,
                "estimate": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
                "detectable_effect": pl.Float64}
SHIFT_LEVEL_COLUMNS = ("share_base", "share_treated", "retrieval_rate_base", "integration_rate_base")
SHIFT_DIFFERENCE_COLUMNS = ("share_change", "composition", "within", "within_retrieval", "within_integration",
                            "within_parametric", "within_not_retrievable")
SENSITIVITY_SCHEMA = {"base": pl.String, "treated": pl.String, "rule": pl.String, "n_questions": pl.Int64,
                      "part": pl.String, "estimate": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64}
SHIFT_SCHEMA = {"base": pl.String, "treated": pl.String, "n_questions": pl.Int64, "quantity": pl.String,
                "estimate": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
                "detectable_effect": pl.Float64}


def _multiplicity_note(n_s: int, strategy_ci: float, ci: float, n_boot: int, *, fewer: bool = False,
                       perplexity: bool = False) -> str:
    """The note that says how per-strategy intervals are adjusted (and when too few replicates
    lie in their tails)."""
    text = (f"per-strategy intervals in by_strategy and strategy_shift are simultaneous bands (max-|t| "
            f"bootstrap) at {ci:g}: each rate or share column holds together over its rows, and strategy_shift's "
            "difference columns (share change and the nested split's parts) hold together as one family")
    if perplexity:
        text += (f"; perplexity_by_strategy's are Bonferroni-adjusted over the {n_s} strategies (each at "
                 f"{strategy_ci:.4g})")
    text += f"; the alignments, mass moved and nested split totals (shift, split) are at {ci:g}"
    tail = n_boot * (1.0 - strategy_ci) / 2.0
    if tail < 5:
        text += (f"; with {n_boot} bootstrap replicates each adjusted tail rests on about {tail:.1f} of them: "
                 f"raise `n_boot` to at least {math.ceil(10 / (1.0 - strategy_ci))} for stable per-strategy bounds")
    return text


def _replicate(weights: np.ndarray, tallies: np.ndarray) -> np.ndarray:
    """Bootstrap replicates of per-question tallies: ``(B, Q) x (A, Q, ...) -> (B, A, ...)``
    (a tensordot, so BLAS does the work)."""
    return np.tensordot(weights, tallies, axes=([1], [1]))


def _arm_rates(s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "accuracy": s["cor"] / s["n"],
            "retrieval_rate": s["ret"] / s["n"],
            "integration_rate": s["cor_ret"] / s["ret"],
            "parametric_rate": (s["cor"] - s["cor_ret"] - s["cor_unr"]) / (s["n"] - s["ret"] - s["unr"]),
            "not_retrievable_share": s["unr"] / s["n"],
            "not_retrievable_accuracy": s["cor_unr"] / s["unr"],
            "followup_from_observation": s["hits"] / s["follow"],
        }


def _pair_statistics(n: np.ndarray, c: np.ndarray, outlier: np.ndarray, *,
                     above: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Every base-vs-treated statistic from (weighted) tallies of shape ``(B, 2, S, K)``:
    arm 0 = base, strategies, then the retrieval strata. ``above``: the strategies whose base
    integration rate is above average, fixed (from the point estimate) for replicates; ``None``
    chooses them from ``n``, ``c``."""
    nb, nt, cb, ct = n[:, 0], n[:, 1], c[:, 0], c[:, 1]
    out: dict[str, np.ndarray] = {}
    # split over arms (strategies pooled): strata = not retrieved / retrieved
    arm = kitagawa_split(nb.sum(axis=1), cb.sum(axis=1), nt.sum(axis=1), ct.sum(axis=1))
    out.update(arm_total=arm["total"], arm_retrieval=arm["composition_total"],
               arm_integration=arm["within"][..., 1], arm_parametric=arm["within"][..., 0],
               arm_not_retrievable=arm["within"][..., 2])
    # nested split: over strategies, then each strategy's within part over retrieved / not
    outer = kitagawa_split(nb.sum(axis=-1), cb.sum(axis=-1), nt.sum(axis=-1), ct.sum(axis=-1))
    pb, pt = outer["share_base"], outer["share_treated"]
    in_b, in_t = nb.sum(axis=-1) > 0, nt.sum(axis=-1) > 0
    # a strategy one arm never uses borrows the other arm's tallies: its within parts are zero
    nb_i, cb_i = np.where(in_b[..., None], nb, nt), np.where(in_b[..., None], cb, ct)
    nt_i, ct_i = np.where(in_t[..., None], nt, nb), np.where(in_t[..., None], ct, cb)
    inner = kitagawa_split(nb_i, cb_i, nt_i, ct_i)
    used = in_b | in_t
    w = (pb + pt) / 2.0
    out["composition_s"] = outer["composition"]
    out["within_s"] = outer["within"]
    out["within_retrieval_s"] = np.where(used, w * inner["composition_total"], 0.0)
    out["within_integration_s"] = np.where(used, w * inner["within"][..., 1], 0.0)
    out["within_parametric_s"] = np.where(used, w * inner["within"][..., 0], 0.0)
    out["within_not_retrievable_s"] = np.where(used, w * inner["within"][..., 2], 0.0)
    out["total"] = outer["total"]
    out["composition"] = outer["composition_total"]
    out["within"] = outer["within_total"]
    for part in ("retrieval", "integration", "parametric", "not_retrievable"):
        out[f"within_{part}"] = out[f"within_{part}_s"].sum(axis=-1)
    # base rates per strategy, the alignments and the above-average mass
    with np.errstate(invalid="ignore", divide="ignore"):
        ib = np.where(nb[..., 1] > 0, cb[..., 1] / np.where(nb[..., 1] > 0, nb[..., 1], 1.0), np.nan)
        rb = np.where(in_b, nb[..., 1] / np.where(in_b, nb.sum(axis=-1), 1.0), np.nan)
        ibar = cb[..., 1].sum(axis=-1) / nb[..., 1].sum(axis=-1)
    change = pt - pb
    strategy = ~outlier[None, :]
    for name, x in (("alignment_integration", ib), ("alignment_retrieval", rb)):
        weight = np.where(strategy & np.isfinite(x), w, 0.0)
        enough = (weight > 0).sum(axis=-1) >= 3
        out[name] = np.where(enough, weighted_correlation(change, x, weight), np.nan)
    if above is None:
        above = strategy & np.isfinite(ib) & (ib > ibar[:, None])
    else:
        above = np.broadcast_to(np.asarray(above, dtype=bool), ib.shape)
    out["above"] = above
    out["base_integration_rate"] = ibar
    out["mass_above_base"] = np.where(above, pb, 0.0).sum(axis=-1)
    out["mass_above_treated"] = np.where(above, pt, 0.0).sum(axis=-1)
    out["mass_moved_above"] = out["mass_above_treated"] - out["mass_above_base"]
    out.update(share_base=pb, share_treated=pt, share_change=change, retrieval_rate_base=rb,
               integration_rate_base=ib)
    return out


def question_strata_split(n: np.ndarray, c: np.ndarray, weights: np.ndarray, *,
                          samples: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The per-arm split and the nested split on question (x strategy) strata, per replicate.

    Parameters
    ----------
    n, c
        ``(2, Q, S, K)`` weighted tallies of one base/treated pair (arm 0 = base; K retrieval
        strata in the order of :data:`RETRIEVAL_STATUS`).
    weights
        ``(B, Q)`` question draws (ones for the point estimate).
    samples
        ``(2, Q)`` trajectories per (arm, question) when ``n``, ``c`` are question-weighted:
        the within-arm cell model is fitted to the raw counts ``n * samples``. ``None``: the
        tallies are the raw counts (trajectory weighting).

    Returns
    -------
    dict
        The keys of :func:`_pair_statistics` that hold splits (``arm_*``, ``composition``,
        ``within``, ``within_*`` and their per-strategy ``*_s``), each ``(B,)`` or ``(B, S)``,
        and the nested split's assumption-free bounds and one-arm masses
        (:func:`mechanism.analysis.compare.within_question_split`).

    Notes
    -----
    Within a stratum the rates do not move when its question is drawn again, only the
    stratum's weight does, so each replicate is a matrix product of per-stratum terms
    (:func:`mechanism.analysis.compare.within_question_split`). Inside a question x strategy stratum,
    ``r_t - r_b`` is split over the retrieval strata with Kitagawa's form. Every value an arm
    lacks comes from that arm's own data: a retrieval stratum it never reached in a cell gets
    its modelled rate (additive question and strategy x retrieval effects on the logit scale,
    :func:`mechanism.analysis.compare.additive_logit`, fitted per arm), and a question x strategy cell it
    never used gets the arm's own retrieval mix on that question and those modelled rates.
    """
    w = np.asarray(weights, dtype=float)
    scale = np.ones(n.shape[:2]) if samples is None else np.asarray(samples, dtype=float)

    def nested(nn: np.ndarray, cc: np.ndarray) -> dict[str, np.ndarray]:  # nn, cc: (2, Q, S, K)
        _, n_q, n_s, n_k = nn.shape
        raw_n, raw_c = nn * scale[:, :, None, None], cc * scale[:, :, None, None]
        mix, rate = [], []
        for a in range(2):
            fitted = additive_logit(raw_n[a].reshape(n_q, n_s * n_k), raw_c[a].reshape(n_q, n_s * n_k)
                                    ).reshape(n_q, n_s, n_k)
            size = nn[a].sum(axis=-1, keepdims=True)
            q_size = nn[a].sum(axis=(1, 2))
            with np.errstate(invalid="ignore", divide="ignore"):
                # a cell the arm never used: its own retrieval mix there, modelled as the question's
                # share of golds text cannot identify and a retrieval rate with additive question and
                # strategy effects (logit scale), both from the arm's own data
                unret = np.where(q_size > 0, nn[a][..., 2].sum(axis=1) / np.where(q_size > 0, q_size, 1.0), 0.0)
                reached = additive_logit(raw_n[a][..., :2].sum(axis=-1), raw_n[a][..., 1])
                own_mix = np.stack([(1.0 - unret[:, None]) * (1.0 - reached), (1.0 - unret[:, None]) * reached,
                                    np.broadcast_to(unret[:, None], reached.shape)], axis=-1)
                mix.append(np.where(size > 0, nn[a] / np.where(size > 0, size, 1.0), own_mix))
                rate.append(np.where(nn[a] > 0, cc[a] / np.where(nn[a] > 0, nn[a], 1.0), fitted))
        cell_rate = np.stack([(mix[a] * rate[a]).sum(axis=-1) for a in range(2)])
        outer = within_question_split(nn.sum(axis=-1), cc.sum(axis=-1), w, rates=cell_rate)
        (mb, mt), (rb, rt) = mix, rate
        diffs = {"retrieval": ((mt - mb) * (rt + rb) / 2.0).sum(axis=-1),
                 "integration": (rt[..., 1] - rb[..., 1]) * (mt[..., 1] + mb[..., 1]) / 2.0,
                 "parametric": (rt[..., 0] - rb[..., 0]) * (mt[..., 0] + mb[..., 0]) / 2.0,
                 "not_retrievable": (rt[..., 2] - rb[..., 2]) * (mt[..., 2] + mb[..., 2]) / 2.0}
        sb, st = nn[0].sum(axis=-1), nn[1].sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            tot_b, tot_t = (w @ sb.sum(axis=1))[:, None], (w @ st.sum(axis=1))[:, None]
            parts = {name: ((w @ (st * np.nan_to_num(d))) / tot_t + (w @ (sb * np.nan_to_num(d))) / tot_b) / 2.0
                     for name, d in diffs.items()}
        return {"outer": outer, **parts}

    strategies = nested(n, c)
    pooled = nested(n.sum(axis=2, keepdims=True), c.sum(axis=2, keepdims=True))
    outer = strategies["outer"]
    out: dict[str, np.ndarray] = {
        "composition_s": outer["composition"], "within_s": outer["within"],
        "composition": outer["composition_total"], "within": outer["within_total"]}
    for key in ("composition_low_total", "composition_high_total", "within_low_total", "within_high_total",
                "one_arm_mass_base", "one_arm_mass_treated"):
        out[key.removesuffix("_total")] = outer[key]
    out["total"] = out["composition"] + out["within"]
    for part in ("retrieval", "integration", "parametric", "not_retrievable"):
        out[f"within_{part}_s"] = strategies[part]
        out[f"within_{part}"] = strategies[part].sum(axis=-1)
        out[f"arm_{part}"] = pooled[part][:, 0]
    out["arm_question_mix"] = pooled["outer"]["composition_total"]
    out["arm_total"] = out["arm_question_mix"] + pooled["outer"]["within_total"]
    return out


def _check_logprobs(runs: pl.DataFrame, column: str) -> None:
    if column not in runs.columns:
        raise InputError(f"no column `{column}` for token log-probabilities", field=column)
    dtype = runs.schema[column]
    ok = isinstance(dtype, pl.List) and isinstance(dtype.inner, pl.Struct) and \
        {f.name for f in dtype.inner.fields} >= {"segment", "logprob"}
    if not ok:
        raise InputError(f"column `{column}` has type {dtype}, expected "
                         "list[struct{segment: str, logprob: f64}]", field=column)


def _perplexity(runs: pl.DataFrame, column: str, arms: Sequence[str], a_idx: np.ndarray, q_idx: np.ndarray,
                n_q: int, row_w: np.ndarray, weights: np.ndarray | None, ci: float | None, *,
                strategy: np.ndarray | None = None, strategies: np.ndarray | None = None) -> pl.DataFrame:
    """Per arm (and strategy) and segment: base-model perplexity of the tokens, each token
    weighted by its trajectory's weight (questions weigh equally within an arm)."""
    s_idx = np.zeros(runs.height, dtype=np.int64) if strategy is None else strategy
    tokens = runs.select(pl.Series("_q", q_idx), pl.Series("_a", a_idx), pl.Series("_s", s_idx),
                         pl.Series("_w", row_w), pl.col(column)).explode(column).unnest(column) \
        .drop_nulls(["segment", "logprob"])
    if tokens.height and not np.all(tokens["logprob"].to_numpy() <= 1e-9):
        raise InputError(f"column `{column}` holds a positive log-probability", field=column)
    rows = []
    for (a, s, segment), group in sorted(tokens.group_by(["_a", "_s", "segment"]), key=lambda kv: kv[0]):
        qi = group["_q"].to_numpy()
        w = group["_w"].to_numpy()
        lp = np.bincount(qi, weights=w * group["logprob"].to_numpy(), minlength=n_q)
        cnt = np.bincount(qi, weights=w, minlength=n_q)
        mean_lp = lp.sum() / cnt.sum()
        lo = hi = math.nan
        if weights is not None:
            with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                rep = np.exp(-(weights @ lp) / (weights @ cnt))
            lo, hi = (float(v) for v in _quiet_interval(rep, ci))
        row = {"arm": arms[a]}
        if strategies is not None:
            row["strategy"] = strategies[s].item()
        row.update(segment=segment, n_tokens=group.height, mean_logprob=float(mean_lp),
                   perplexity=float(math.exp(-mean_lp)), perplexity_ci_low=lo, perplexity_ci_high=hi)
        if strategies is not None:  # the level of per-strategy intervals (Bonferroni over strategies)
            row["ci_level"] = math.nan if weights is None or ci is None else float(ci)
        rows.append(row)
    schema = {"arm": pl.String}
    if strategies is not None:
        schema["strategy"] = pl.Int64 if strategies.dtype.kind in "iu" else pl.String
    schema.update({"segment": pl.String, "n_tokens": pl.Int64, "mean_logprob": pl.Float64,
                   "perplexity": pl.Float64, "perplexity_ci_low": pl.Float64, "perplexity_ci_high": pl.Float64})
    if strategies is not None:
        schema["ci_level"] = pl.Float64
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


def _quiet_interval(replicates: np.ndarray, level: float) -> tuple[float, float]:
    lo, hi = percentile_interval(replicates, level)
    return float(lo), float(hi)


def _by_strategy(N: np.ndarray, C: np.ndarray, a_idx: np.ndarray, q_idx: np.ndarray, s_idx: np.ndarray,
                 retrieved: np.ndarray, arms: Sequence[str], strategies: np.ndarray,
                 weights: np.ndarray | None, ci: float | None) -> pl.DataFrame:
    """Per strategy and arm (each arm over its own questions): share and conditional rates, each
    column with a simultaneous (max-|t|) band over its rows at joint level ``ci``."""
    n_a, n_q, n_s, _ = N.shape

    def rates(n: np.ndarray, c: np.ndarray) -> dict[str, np.ndarray]:  # (..., A, S, K)
        tot = n.sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return {"share": tot / tot.sum(axis=-1, keepdims=True),
                    "retrieval_rate": n[..., 1] / tot,
                    "integration_rate": c[..., 1] / n[..., 1],
                    "parametric_rate": c[..., 0] / n[..., 0],
                    "not_retrievable_share": n[..., 2] / tot,
                    "accuracy": c.sum(axis=-1) / tot}

    point = rates(N.sum(axis=1), C.sum(axis=1))
    reps = None
    if weights is not None:
        reps = rates(_replicate(weights, N), _replicate(weights, C))
    raw = np.zeros((n_a, n_s, K), dtype=np.int64)
    np.add.at(raw, (a_idx, s_idx, np.asarray(retrieved, dtype=np.int64)), 1)
    seen = np.zeros((n_a, n_s, n_q), dtype=bool)
    seen[a_idx, s_idx, q_idx] = True
    cols: dict[str, Any] = {
        "strategy": np.tile(strategies, n_a).tolist(), "arm": np.repeat(np.array(arms, dtype=object), n_s).tolist(),
        "n": raw.sum(axis=-1).reshape(-1), "n_questions": seen.sum(axis=-1).reshape(-1),
        "n_retrieved": raw[..., 1].reshape(-1)}
    for name, value in point.items():
        cols[name] = value.reshape(-1)
        if reps is not None:  # one simultaneous band per column over its (arm, strategy) rows
            lo, hi, _ = simultaneous_band(value.reshape(-1), reps[name].reshape(reps[name].shape[0], -1), ci,
                                          n_questions=n_q)
            cols[f"{name}_ci_low"], cols[f"{name}_ci_high"] = lo, hi
        else:
            cols[f"{name}_ci_low"] = cols[f"{name}_ci_high"] = np.full(n_a * n_s, np.nan)
    cols["ci_level"] = np.full(n_a * n_s, math.nan if reps is None or ci is None else ci)
    return pl.DataFrame(cols).with_columns(pl.col(pl.Float64).fill_nan(None))


# ----------------------------------------------------------------------------- base-model scoring
#: Segment of each step field of a ``step_template`` (fields not named here are context).
STEP_SEGMENTS = {"thought": "reasoning", "query": "query"}
#: The rendering :func:`render_segments` scores: ``Question:``, then per call its thought, query
#: and observation.
DEFAULT_TEMPLATE = "Question: {question}\n{steps}"
DEFAULT_STEP_TEMPLATE = "Thought: {thought}\nSearch: {query}\nObservation: {observation}\n"


def render_template(row: Mapping[str, Any], template: str,
                    step_template: str) -> tuple[str, list[tuple[int, int, str]]]:
    """One trajectory through the user's prompt format, and its segment spans.

    ``template`` is a format string over ``{question}`` and ``{steps}``; ``{steps}`` is one
    ``step_template`` block per step, over ``{thought}`` (segment "reasoning"), ``{query}``
    (segment "query"), ``{observation}`` and ``{tool}`` (context).

    >>> text, spans = render_template({"question": "Who?", "steps": [{"thought": "look", "query": "who"}]},
    ...                               "Q: {question}\\n{steps}", "<think>{thought}</think><search>{query}</search>")
    >>> text
    'Q: Who?\\n<think>look</think><search>who</search>'
    >>> [text[a:b] + "/" + s for a, b, s in spans]
    ['look/reasoning', 'who/query']
    """
    parts: list[str] = []
    spans: list[tuple[int, int, str]] = []
    pos = 0

    def put(text: str, segment: str | None = None) -> None:
        nonlocal pos
        if segment is not None and text:
            spans.append((pos, pos + len(text), segment))
        parts.append(text)
        pos += len(text)

    for literal, name, spec, _ in string.Formatter().parse(template):
        put(literal)
        if name == "question":
            put(format(row.get("question") or "", spec or ""))
        elif name == "steps":
            for step in row.get("steps") or []:
                for s_literal, field, s_spec, _ in string.Formatter().parse(step_template):
                    put(s_literal)
                    if field is not None:
                        put(format(step.get(field) or "", s_spec or ""), STEP_SEGMENTS.get(field))
    return "".join(parts), spans


def render_segments(row: dict[str, Any]) -> tuple[str, list[tuple[int, int, str]]]:
    """One trajectory as the text a base model scores, and its segments: :func:`render_template`
    with :data:`DEFAULT_TEMPLATE` and :data:`DEFAULT_STEP_TEMPLATE`.

    The text reads ``Question: ...`` then, per tool call, ``Thought: <thought>``,
    ``Search: <query>`` and ``Observation: <observation>`` lines. Returned spans are
    ``(start, end, segment)`` character ranges of the thought ("reasoning") and query
    ("query") contents; scaffold words and observations are context only.
    """
    return render_template(row, DEFAULT_TEMPLATE, DEFAULT_STEP_TEMPLATE)


def token_logprobs(runs: pl.DataFrame, model_path: str | Path, *, max_length: int | None = None,
                   progress: bool | None = False) -> pl.Series:
    """Base-model log-probabilities of every reasoning and query token, as a
    :data:`LOGPROBS_DTYPE` column.

    Parameters
    ----------
    runs
        Canonical trajectory table.
    model_path
        Local folder of a transformers causal LM with a fast tokenizer (offsets are needed
        to tell segments apart). Loaded with ``local_files_only=True``: nothing is downloaded.
    max_length
        Tokens scored per trajectory (default: the model's context size); text beyond it
        is not scored.
    progress
        Show a progress bar over trajectories.

    Notes
    -----
    A token belongs to the segment its first character falls in; the first token of a
    text has no context and is never scored.
    """
    folder = Path(model_path)
    if not folder.is_dir():
        raise InputError("model folder not found", source=str(folder), field="model_path")
    try:
        import torch  # noqa: PLC0415 - torch: optional and heavy, only when a model scores the text
        from transformers import (  # noqa: PLC0415 - transformers: optional and heavy, as torch
            AutoModelForCausalLM,
            AutoTokenizer,
        )
    except ImportError as exc:  # pragma: no cover - both come with sentence-transformers
        raise InputError(f"`model_path` needs torch and transformers: {exc}", field="model_path") from exc
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot load a causal language model: {' '.join(str(exc).split())[:300]}",
                         source=str(folder), field="model_path") from exc
    if not getattr(tokenizer, "is_fast", False):
        raise InputError("the tokenizer must be a fast tokenizer (it gives character offsets)",
                         source=str(folder), field="model_path")
    model.eval()
    limit = max_length or getattr(model.config, "max_position_embeddings", None) or \
        getattr(model.config, "n_positions", None) or 1024
    validate(runs, required=("question", "steps"))
    out: list[list[dict[str, Any]]] = []
    for row in bar(runs.select("question", "steps").iter_rows(named=True), enabled=progress,
                   desc="base-model log-probs", total=runs.height):
        text, spans = render_segments(row)
        enc = tokenizer(text, return_offsets_mapping=True, truncation=True, max_length=int(limit))
        ids = list(enc["input_ids"])
        if len(ids) < 2 or not spans:
            out.append([])
            continue
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0, :-1].float()
        logp = torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(ids[1:])[:, None])[:, 0].tolist()
        starts = [a for a, _, _ in spans]
        entries = []
        for i, (start, end) in enumerate(enc["offset_mapping"][1:], start=1):
            piece = text[start:end]
            if not piece.strip():  # special tokens and pure white space carry no segment text
                continue
            start += len(piece) - len(piece.lstrip())  # a leading space belongs to the scaffold
            j = bisect_right(starts, start) - 1
            if j >= 0 and start < spans[j][1]:
                entries.append({"segment": spans[j][2], "logprob": float(logp[i - 1])})
        out.append(entries)
    return pl.Series("logprobs", out, dtype=LOGPROBS_DTYPE)
