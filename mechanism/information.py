"""Information integration: did the agent find the answer, and did it use what it found?

Per trajectory: was a gold answer retrieved (it appears, as whole words after SQuAD
normalisation, in some observation: :func:`mechanism.scoring.contains_answer`), and was the
episode answered correctly. Per arm:

- retrieval rate ``R = P(retrieved)``,
- integration rate ``I = P(correct | retrieved)``,
- parametric rate ``P = P(correct | not retrieved)``,

so that ``accuracy = R I + (1 - R) P`` exactly. Between two arms the accuracy difference
splits exactly (Kitagawa's symmetric form over the two strata, see
:func:`mechanism.compare.kitagawa_split`) into a **retrieval** part
``(R_t - R_b) ((I_t + I_b) / 2 - (P_t + P_b) / 2)``, an **integration** part
``(I_t - I_b) (R_t + R_b) / 2`` and a **parametric** part
``(P_t - P_b) (2 - R_t - R_b) / 2``. A stratum that one arm never reaches borrows the other
arm's rate (its within part is zero), as in :mod:`mechanism.compare`.

Also: the share of follow-up queries (rounds >= 2) that carry a content word first seen in
an observation (the mark of a bridge step), and, where base-model token log-probabilities
are given, the perplexity of query tokens vs reasoning tokens.

Intervals: percentile bootstrap over questions (all samples of a question together; arms
paired). Rates are pooled over trajectories (ratio of sums).
"""
from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from mechanism.errors import InputError
from mechanism.results import ResultMixin
from mechanism.resample import percentile_interval, question_bootstrap_weights
from mechanism.compare import kitagawa_split, stream
from mechanism.schema import validate
from mechanism.scoring import contains_answer, normalize_answer

__all__ = ["Integration", "integration", "retrieval_flags", "followup_entity_flags",
           "content_tokens", "token_logprobs", "render_segments", "LOGPROBS_DTYPE"]

#: Format of a log-probability column: one entry per token of the trajectory's text as the
#: base model scores it; ``segment`` says which part the token belongs to ("query",
#: "reasoning", or any other name, reported as given), ``logprob`` is its natural-log
#: probability under the base model.
LOGPROBS_DTYPE = pl.List(pl.Struct({"segment": pl.String, "logprob": pl.Float64}))

# Function words that carry no entity: a follow-up query re-using "the" from an observation
# is not a bridge step.
_STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being
below between both but by can did do does doing down during each few for from further had has
have having he her here hers herself him himself his how i if in into is it its itself just me
more most my myself no nor not now of off on once only or other our ours ourselves out over
own same she should so some such than that the their theirs them themselves then there these
they this those through to too under until up very was we were what when where which while
who whom why will with you your yours yourself yourselves also many much one first name named
known called did does which year years born
""".split())
_TOKEN = re.compile(r"[a-z0-9]+")


def content_tokens(text: str | None) -> set[str]:
    """Lower-cased content words of ``text`` (SQuAD-normalised, stop words removed).

    Examples
    --------
    >>> sorted(content_tokens("Who directed The Matrix (1999)?"))
    ['1999', 'directed', 'matrix']
    """
    if not text:
        return set()
    return {t for t in _TOKEN.findall(normalize_answer(text)) if t not in _STOPWORDS
            and (len(t) > 1 or t.isdigit())}


def retrieval_flags(runs: pl.DataFrame, *, progress: bool | None = False) -> np.ndarray:
    """Per row: does any observation contain a gold answer (whole words, normalised)?

    A row with an empty ``gold`` list cannot have retrieved it: False.
    """
    from mechanism.progress import progress as bar

    validate(runs, required=("gold", "steps"))
    out = np.zeros(runs.height, dtype=bool)
    rows = zip(runs["gold"].to_list(), runs["steps"].to_list())
    for i, (golds, steps) in enumerate(bar(rows, enabled=progress, desc="retrieval", total=runs.height)):
        if not golds or not steps:
            continue
        out[i] = any(contains_answer(step.get("observation"), golds) for step in steps)
    return out


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
class Integration(ResultMixin):
    """Result of :func:`integration`.

    Attributes
    ----------
    per_trajectory
        ``arm, question_id, sample_id, retrieved, correct, n_followup, n_followup_from_observation``.
    per_arm
        Per arm: counts, ``accuracy``, ``retrieval_rate``, ``integration_rate``,
        ``parametric_rate``, ``followup_from_observation``, each with ``_ci_low``/``_ci_high``.
    split
        Per treated arm against ``base``: ``part`` in total / retrieval / integration /
        parametric with ``estimate, ci_low, ci_high``; retrieval + integration + parametric
        equals total exactly.
    perplexity
        Per arm and segment: tokens, mean log-probability and perplexity with intervals;
        ``None`` when no log-probabilities were given.
    """

    base: str
    arms: tuple[str, ...]
    ci: float | None
    per_trajectory: pl.DataFrame
    per_arm: pl.DataFrame
    split: pl.DataFrame | None
    perplexity: pl.DataFrame | None = None
    notes: tuple[str, ...] = ()

    def to_frame(self) -> pl.DataFrame:
        """Long table ``arm, quantity, estimate, ci_low, ci_high`` of the per-arm rates and splits."""
        rows = []
        for row in self.per_arm.iter_rows(named=True):
            for q in ("accuracy", "retrieval_rate", "integration_rate", "parametric_rate",
                      "followup_from_observation"):
                rows.append((row["arm"], q, row[q], row[f"{q}_ci_low"], row[f"{q}_ci_high"]))
        if self.split is not None:
            for row in self.split.iter_rows(named=True):
                rows.append((row["treated"], f"split_{row['part']}_vs_{row['base']}", row["estimate"],
                             row["ci_low"], row["ci_high"]))
        if self.perplexity is not None:
            for row in self.perplexity.iter_rows(named=True):
                rows.append((row["arm"], f"perplexity_{row['segment']}", row["perplexity"],
                             row["perplexity_ci_low"], row["perplexity_ci_high"]))
        return pl.DataFrame(rows, schema={"arm": pl.String, "quantity": pl.String, "estimate": pl.Float64,
                                          "ci_low": pl.Float64, "ci_high": pl.Float64}, orient="row")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict of every table."""
        def rows(table: pl.DataFrame | None) -> list[dict[str, Any]] | None:
            if table is None:
                return None
            return [{k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                     for k, v in r.items()} for r in table.iter_rows(named=True)]
        return {"base": self.base, "arms": list(self.arms), "ci": self.ci,
                "per_arm": rows(self.per_arm), "split": rows(self.split),
                "perplexity": rows(self.perplexity), "notes": list(self.notes)}

    # -- the result protocol (mechanism.results): summary(), tables(), a one-line repr
    def tables(self) -> dict[str, pl.DataFrame]:
        """Every table by a file-friendly name."""
        return {n: t for n, t in (("per_arm", self.per_arm), ("split", self.split), ("perplexity", self.perplexity),
                                  ("per_trajectory", self.per_trajectory)) if t is not None}

    def _summary_title(self) -> str:
        from mechanism.report.integration import integration_title
        return integration_title(self)

    def _summary_lines(self) -> list[str]:
        from mechanism.report.integration import integration_lines
        return integration_lines(self)

    def _headline(self) -> str:
        return f"{len(self.arms)} arms against {self.base}, {self.per_trajectory.height} trajectories"


def integration(runs: pl.DataFrame, *, arms: Sequence[str] | None = None, base: str | None = None,
                ci: float | None = 0.95, n_boot: int = 1000, random_state: int | None = 0,
                logprobs_column: str | None = None, model_path: str | Path | None = None,
                progress: bool | None = False, treated: Sequence[str] | None = None) -> Integration:
    """Retrieval, integration and parametric rates per arm, and the split between arms.

    Parameters
    ----------
    runs
        Canonical trajectory table.
    arms
        Arms to report, in order (default: all, in order of appearance).
    base
        The arm the others are split against (default: the first of ``arms``).
    ci
        Confidence level of the bootstrap intervals; ``None`` skips them.
    n_boot, random_state
        Bootstrap replicates over questions and their seed.
    logprobs_column
        Name of a column of base-model token log-probabilities in the format
        :data:`LOGPROBS_DTYPE`; adds per-segment perplexities.
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

    Returns
    -------
    Integration
    """
    if treated is not None:
        if arms is not None or base is None:
            raise InputError("`treated` needs `base` and replaces `arms`", field="treated")
        arms = [base, *treated]
    validate(runs)
    present = runs["arm"].unique(maintain_order=True).to_list()
    arms = list(dict.fromkeys(present if arms is None else arms))  # an arm named twice counts once
    for arm in arms:
        if arm not in present:
            raise InputError(f"arm {arm!r} is not in `runs` (arms: {sorted(present)})", field="arms")
    if not arms:
        raise InputError("no arm to report", field="arms")
    base = arms[0] if base is None else base
    if base not in arms:
        raise InputError(f"`base` {base!r} is not among `arms` {arms}", field="base")
    if ci is not None and not 0.0 < ci < 1.0:
        raise InputError(f"`ci` must be in (0, 1) or None, got {ci}", field="ci")
    if n_boot < 0:
        raise InputError(f"`n_boot` must be >= 0, got {n_boot}", field="n_boot")
    if logprobs_column is not None and model_path is not None:
        raise InputError("give `logprobs_column` or `model_path`, not both", field="model_path")
    if logprobs_column is not None:
        _check_logprobs(runs, logprobs_column)

    runs = runs.filter(pl.col("arm").is_in(arms))
    if model_path is not None:
        logprobs_column = "_base_model_logprobs"
        runs = runs.with_columns(token_logprobs(runs, model_path, progress=progress).alias(logprobs_column))
    retrieved = retrieval_flags(runs, progress=progress)
    n_follow, n_hits = followup_entity_flags(runs)
    per_traj = runs.select("arm", "question_id", "sample_id").with_columns(
        pl.Series("retrieved", retrieved), runs["correct"],
        pl.Series("n_followup", n_follow), pl.Series("n_followup_from_observation", n_hits))

    questions = sorted(set(runs["question_id"].to_list()))
    q_index = {q: i for i, q in enumerate(questions)}
    q_idx = np.fromiter((q_index[q] for q in runs["question_id"].to_list()), dtype=np.int64,
                        count=runs.height)
    n_q = len(questions)
    weights = (question_bootstrap_weights(n_q, n_boot, stream(random_state, "bootstrap")).astype(float)
               if ci is not None and n_boot > 0 else None)
    arm_col = runs["arm"].to_numpy()
    correct = runs["correct"].to_numpy().astype(bool)

    per_arm_rows = []
    for arm in arms:
        m = arm_col == arm
        sums = {
            "n": np.bincount(q_idx[m], minlength=n_q).astype(float),
            "ret": np.bincount(q_idx[m], weights=retrieved[m], minlength=n_q),
            "cor": np.bincount(q_idx[m], weights=correct[m], minlength=n_q),
            "cor_ret": np.bincount(q_idx[m], weights=correct[m] & retrieved[m], minlength=n_q),
            "follow": np.bincount(q_idx[m], weights=n_follow[m], minlength=n_q),
            "hits": np.bincount(q_idx[m], weights=n_hits[m], minlength=n_q),
        }
        point = _arm_rates({k: v.sum(keepdims=True) for k, v in sums.items()})
        reps = _arm_rates({k: weights @ v for k, v in sums.items()}) if weights is not None else None
        row: dict[str, Any] = {"arm": arm, "n": int(m.sum()),
                               "n_questions": int((sums["n"] > 0).sum()),
                               "n_retrieved": int(sums["ret"].sum()),
                               "n_followup": int(sums["follow"].sum())}
        for name, value in point.items():
            row[name] = float(value[0])
            lo, hi = _quiet_interval(reps[name], ci) if reps is not None else (math.nan, math.nan)
            row[f"{name}_ci_low"], row[f"{name}_ci_high"] = float(lo), float(hi)
        per_arm_rows.append(row)
    per_arm = pl.DataFrame(per_arm_rows).with_columns(pl.col(pl.Float64).fill_nan(None))

    notes: list[str] = []
    split_rows = []
    for arm in arms:
        if arm == base:
            continue
        split_rows.extend(_split(arm_col, q_idx, retrieved, correct, base, arm, n_q, weights, ci, notes))
    split = pl.DataFrame(split_rows, schema={
        "base": pl.String, "treated": pl.String, "n_questions": pl.Int64, "part": pl.String,
        "estimate": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64}, orient="row") \
        if split_rows else None

    perplexity = None
    if logprobs_column is not None:
        perplexity = _perplexity(runs, logprobs_column, arms, arm_col, q_idx, n_q, weights, ci)
    return Integration(base=base, arms=tuple(arms), ci=ci, per_trajectory=per_traj, per_arm=per_arm,
                       split=split, perplexity=perplexity, notes=tuple(notes))


def _arm_rates(s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "accuracy": s["cor"] / s["n"],
            "retrieval_rate": s["ret"] / s["n"],
            "integration_rate": s["cor_ret"] / s["ret"],
            "parametric_rate": (s["cor"] - s["cor_ret"]) / (s["n"] - s["ret"]),
            "followup_from_observation": s["hits"] / s["follow"],
        }


def _split(arm_col: np.ndarray, q_idx: np.ndarray, retrieved: np.ndarray, correct: np.ndarray,
           base: str, treated: str, n_q: int, weights: np.ndarray | None, ci: float | None,
           notes: list[str]) -> list[tuple]:
    qb = set(q_idx[arm_col == base].tolist())
    qt = set(q_idx[arm_col == treated].tolist())
    common = np.zeros(n_q, dtype=bool)
    common[list(qb & qt)] = True
    if not common.any():
        raise InputError(f"arms {base!r} and {treated!r} share no `question_id`", field="question_id")
    if common.sum() < len(qb | qt):
        notes.append(f"split {treated} vs {base}: {len(qb | qt) - int(common.sum())} question(s) "
                     "answered by only one arm were left out")
    # strata: 0 = not retrieved, 1 = retrieved; counts per (arm, question, stratum)
    n = np.zeros((2, n_q, 2))
    c = np.zeros((2, n_q, 2))
    for a, arm in enumerate((base, treated)):
        m = (arm_col == arm) & common[q_idx]
        np.add.at(n[a], (q_idx[m], retrieved[m].astype(int)), 1.0)
        np.add.at(c[a], (q_idx[m], retrieved[m].astype(int)), correct[m].astype(float))

    def parts(nn: np.ndarray, cc: np.ndarray) -> dict[str, np.ndarray]:
        out = kitagawa_split(nn[..., 0, :], cc[..., 0, :], nn[..., 1, :], cc[..., 1, :])
        return {"total": out["total"], "retrieval": out["composition_total"],
                "integration": out["within"][..., 1], "parametric": out["within"][..., 0]}

    point = parts(n.sum(axis=1), c.sum(axis=1))
    reps = None
    if weights is not None:
        reps = parts(np.einsum("bq,aqs->bas", weights * common[None, :], n),
                     np.einsum("bq,aqs->bas", weights * common[None, :], c))
    rows = []
    for part in ("total", "retrieval", "integration", "parametric"):
        lo, hi = _quiet_interval(reps[part], ci) if reps is not None else (math.nan, math.nan)
        rows.append((base, treated, int(common.sum()), part, float(point[part]), float(lo), float(hi)))
    return rows


def _check_logprobs(runs: pl.DataFrame, column: str) -> None:
    if column not in runs.columns:
        raise InputError(f"no column `{column}` for token log-probabilities", field=column)
    dtype = runs.schema[column]
    ok = isinstance(dtype, pl.List) and isinstance(dtype.inner, pl.Struct) and \
        {f.name for f in dtype.inner.fields} >= {"segment", "logprob"}
    if not ok:
        raise InputError(f"column `{column}` has type {dtype}, expected "
                         "list[struct{segment: str, logprob: f64}]", field=column)


def _perplexity(runs: pl.DataFrame, column: str, arms: Sequence[str], arm_col: np.ndarray,
                q_idx: np.ndarray, n_q: int, weights: np.ndarray | None, ci: float | None) -> pl.DataFrame:
    tokens = runs.select(pl.Series("_q", q_idx), pl.col("arm"), pl.col(column)).explode(column).unnest(column) \
        .drop_nulls(["segment", "logprob"])
    if tokens.height and not np.all(tokens["logprob"].to_numpy() <= 1e-9):
        raise InputError(f"column `{column}` holds a positive log-probability", field=column)
    rows = []
    for arm in arms:
        sub = tokens.filter(pl.col("arm") == arm)
        for segment in sorted(set(sub["segment"].to_list())):
            seg = sub.filter(pl.col("segment") == segment)
            qi = seg["_q"].to_numpy()
            lp = np.bincount(qi, weights=seg["logprob"].to_numpy(), minlength=n_q)
            cnt = np.bincount(qi, minlength=n_q).astype(float)
            mean_lp = lp.sum() / cnt.sum()
            lo = hi = math.nan
            if weights is not None:
                with np.errstate(invalid="ignore", divide="ignore"):
                    rep = np.exp(-(weights @ lp) / (weights @ cnt))
                lo, hi = (float(v) for v in _quiet_interval(rep, ci))
            rows.append((arm, segment, int(cnt.sum()), float(mean_lp), float(math.exp(-mean_lp)), lo, hi))
    return pl.DataFrame(rows, schema={"arm": pl.String, "segment": pl.String, "n_tokens": pl.Int64,
                                      "mean_logprob": pl.Float64, "perplexity": pl.Float64,
                                      "perplexity_ci_low": pl.Float64, "perplexity_ci_high": pl.Float64},
                        orient="row")


def _quiet_interval(replicates: np.ndarray, level: float) -> tuple[float, float]:
    lo, hi = percentile_interval(replicates, level)
    return float(lo), float(hi)


# ----------------------------------------------------------------------------- base-model scoring
def render_segments(row: dict[str, Any]) -> tuple[str, list[tuple[int, int, str]]]:
    """One trajectory as the text a base model scores, and its segments.

    The text reads ``Question: ...`` then, per tool call, ``Thought: <thought>``,
    ``Search: <query>`` and ``Observation: <observation>`` lines. Returned spans are
    ``(start, end, segment)`` character ranges of the thought ("reasoning") and query
    ("query") contents; scaffold words and observations are context only.
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

    put(f"Question: {row.get('question') or ''}\n")
    for step in row.get("steps") or []:
        put("Thought: ")
        put(step.get("thought") or "", "reasoning")
        put("\nSearch: ")
        put(step.get("query") or "", "query")
        put(f"\nObservation: {step.get('observation') or ''}\n")
    return "".join(parts), spans


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
    from mechanism.progress import progress as bar

    folder = Path(model_path)
    if not folder.is_dir():
        raise InputError("model folder not found", source=str(folder), field="model_path")
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
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
