"""The swap test: does an arm's gain follow its retrieval or its reasoning?

An observational split says where the gain sits; the swap test re-runs half of the agent. One
arm's retrieval (its tool calls and what they returned) is handed to another arm's model,
which writes the final answer from that context; the answers are scored like the originals.

Conventions (stated once, used everywhere below):

- **Cells.** ``acc(r, m)``: the accuracy when arm ``m``'s model (the *reasoner*) answers from
  the retrieval part of arm ``r``'s episodes (the *retrieval source*). The retrieval part of an
  episode is its steps up to its last result, or its first ``after_results`` results
  (:func:`mechanism.analysis._swap_prompts.retrieval_steps`), rendered with ``template``.
  The reasoner writes ``n`` answers per episode (seeds ``0 .. n-1``); an episode's value is
  the share of them scored correct. ``control=True`` adds the source ``none``: the question
  alone, one prompt per question.
- **Questions (the design rule).** The cells use the questions every retrieval source
  answered (the others are counted in ``notes``), and every question weighs the same within
  a source: ``acc(r, m)`` is the mean over questions of the mean over ``r``'s episodes on
  that question, so a source with more samples of some questions does not weigh them more.
- **Split.** For a ``base`` arm B and a ``treated`` arm T (first letter the retrieval source,
  second the reasoner), the treated arm's gain ``acc(T,T) - acc(B,B)`` is split exactly into
  a **retrieval** part ``acc(T,B) - acc(B,B)`` (the base reasoner handed T's retrieval), a
  **reasoning** part ``acc(B,T) - acc(B,B)`` (T's reasoner on B's retrieval) and the
  **interaction** ``acc(T,T) - acc(T,B) - acc(B,T) + acc(B,B)``; each part's **share** is
  the part over the gain.
- **Intervals.** Bootstrap over questions, every cell resampled with the same question draws
  (the cells are paired). The split's parts have the rule of :mod:`mechanism.analysis.compare`'s
  split (:func:`mechanism.core.resample.split_interval`: ``estimate +- t_{Q-1} sqrt(Q/(Q-1))``
  bootstrap standard deviations over the Q questions, which for a part is the paired t
  interval over questions); cell accuracies and shares take percentile intervals.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import polars as pl

from mechanism.analysis._swap_prompts import (
    DEFAULT_STEP_TEMPLATE,
    DEFAULT_TEMPLATE,
    check_template,
    read_answer,
    render_prompt,
    retrieval_steps,
)
from mechanism.analysis._verdicts import qualified
from mechanism.analysis.arms import check_counts, check_labels
from mechanism.core.errors import InputError
from mechanism.core.options import RandomState, check_ci
from mechanism.core.progress import progress as bar
from mechanism.core.resample import (
    detectable_effect,
    percentile_interval,
    question_bootstrap_weights,
    resolve_seed,
    split_interval,
    stream,
)
from mechanism.core.results import Result
from mechanism.core.schema import validate
from mechanism.core.scoring import exact_match
from mechanism.core.text import estimate_text

if TYPE_CHECKING:
    from mechanism.endpoints import Endpoint

__all__ = ["Swap", "swap", "NO_RETRIEVAL", "SPLIT_PARTS"]

#: The retrieval source of the control cells: the question alone.
NO_RETRIEVAL = "none"
#: The parts of the split, in order (they add to ``total``).
SPLIT_PARTS = ("total", "retrieval", "reasoning", "interaction")

_STAT_FIELDS = ("requests", "cached", "retries", "failed", "prompt_tokens", "completion_tokens")


@dataclass(frozen=True, repr=False)
class Swap(Result):
    """Result of :func:`swap`.

    Attributes
    ----------
    table
        ``retrieval_from, reasoner, accuracy, ci_low, ci_high, n_questions, n_episodes``: one
        row per cell (the control's source is ``none``).
    split
        With ``base`` and ``treated``: ``base, treated, part`` (total, retrieval, reasoning,
        interaction), ``estimate, ci_low, ci_high, detectable_effect`` and ``share,
        share_ci_low, share_ci_high`` (the part over the total); ``None`` otherwise.
    per_episode
        ``retrieval_from, reasoner, question_id, sample_id, n_samples, n_correct, accuracy,
        answers``: what each reasoner answered from each episode's retrieval.
    endpoints
        Per endpoint (the reasoners it served): the requests, cache hits, retries, failures and
        tokens this call cost.
    """

    table: pl.DataFrame
    split: pl.DataFrame | None
    per_episode: pl.DataFrame
    endpoints: pl.DataFrame
    base: str | None
    treated: str | None
    ci: float | None
    n_questions: int
    notes: tuple[str, ...] = ()

    key_columns: ClassVar[dict[str, pl.DataType]] = {
        "retrieval_from": pl.String(), "reasoner": pl.String(), "base": pl.String(), "treated": pl.String(),
        "part": pl.String()}

    def _estimates(self) -> pl.DataFrame:
        """Cell accuracies (quantity ``accuracy`` with ``retrieval_from``, ``reasoner``), the split's
        parts (quantity ``split`` with ``part`` and ``detectable``) and their shares (``share``)."""
        rows = [(r["retrieval_from"], r["reasoner"], None, None, None, "accuracy", r["accuracy"], r["ci_low"],
                 r["ci_high"], None) for r in self.table.iter_rows(named=True)]
        for r in (self.split.iter_rows(named=True) if self.split is not None else ()):
            rows.append((None, None, r["base"], r["treated"], r["part"], "split", r["estimate"], r["ci_low"],
                         r["ci_high"], r["detectable_effect"]))
        for r in (self.split.iter_rows(named=True) if self.split is not None else ()):
            if r["part"] != "total":
                rows.append((None, None, r["base"], r["treated"], r["part"], "share", r["share"], r["share_ci_low"],
                             r["share_ci_high"], None))
        schema = {"retrieval_from": pl.String, "reasoner": pl.String, "base": pl.String, "treated": pl.String,
                  "part": pl.String, "quantity": pl.String, "estimate": pl.Float64, "ci_low": pl.Float64,
                  "ci_high": pl.Float64, "detectable": pl.Float64}
        return pl.DataFrame(rows, schema=schema, orient="row").with_columns(pl.col(pl.Float64).fill_nan(None))

    def part(self, name: str) -> tuple[float, float, float]:
        """``(estimate, ci_low, ci_high)`` of one part of the split (``total``, ``retrieval``,
        ``reasoning`` or ``interaction``)."""
        if self.split is None:
            raise InputError("this swap has no split: give `base` and `treated`", field="base")
        if name not in SPLIT_PARTS:
            raise InputError(f"unknown part {name!r} (parts: {list(SPLIT_PARTS)})", field="part")
        row = self.split.filter(pl.col("part") == name).row(0, named=True)
        return row["estimate"], row["ci_low"], row["ci_high"]

    def accuracy(self, retrieval_from: str, reasoner: str) -> float:
        """The accuracy of one cell."""
        cell = self.table.filter((pl.col("retrieval_from") == retrieval_from) & (pl.col("reasoner") == reasoner))
        if cell.height == 0:
            raise InputError(f"no cell with retrieval from {retrieval_from!r} and reasoner {reasoner!r}",
                             field="retrieval_from")
        return float(cell["accuracy"][0])

    def verdict(self) -> str:
        """One line: with a split, how the treated arm's gain divides between its retrieval and its
        reasoning (each clause says "not distinguishable from 0" where its interval holds 0);
        otherwise the best cell."""
        if self.split is None:
            best = self.table.sort("accuracy", descending=True, nulls_last=True).row(0, named=True)
            return (f"best cell: {best['reasoner']} reasoning on {best['retrieval_from']}'s retrieval, accuracy "
                    f"{estimate_text(best['accuracy'], best['ci_low'], best['ci_high'])} "
                    f"over {self.n_questions} questions")
        rows = {r["part"]: r for r in self.split.iter_rows(named=True)}

        def clause(part: str) -> str:
            r = rows[part]
            share = f" ({100 * r['share']:.0f}% of the gain)" if part != "total" and math.isfinite(r["share"]) else ""
            return qualified(f"{part} {estimate_text(r['estimate'], r['ci_low'], r['ci_high'], signed=True)}{share}",
                             r["ci_low"], r["ci_high"])

        return (f"swap test, {self.treated} vs {self.base} over {self.n_questions} questions: gain {clause('total')}"
                f" = {clause('retrieval')} + {clause('reasoning')} + {clause('interaction')}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every table (non-finite numbers as ``None``)."""
        def rows(table: pl.DataFrame | None) -> list[dict[str, Any]] | None:
            if table is None:
                return None
            return [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()}
                    for r in table.iter_rows(named=True)]
        return {"base": self.base, "treated": self.treated, "ci": self.ci, "n_questions": self.n_questions,
                "table": rows(self.table), "split": rows(self.split), "endpoints": rows(self.endpoints),
                "notes": list(self.notes)}

    def tables(self) -> dict[str, pl.DataFrame]:
        """``estimates``, ``swap`` (the cells), ``split``, ``per_episode`` and ``endpoints``."""
        return {n: t for n, t in (("estimates", self.to_frame()), ("swap", self.table), ("split", self.split),
                                  ("per_episode", self.per_episode), ("endpoints", self.endpoints)) if t is not None}

    def _summary_title(self) -> str:
        return "Swap test: accuracy by retrieval source x reasoner"

    def _summary_lines(self) -> list[str]:
        lines = [self.verdict()]
        lines += [f"{r['reasoner']} on " + ("the question alone" if r["retrieval_from"] == NO_RETRIEVAL
                                            else f"{r['retrieval_from']}'s retrieval")
                  + f": {estimate_text(r['accuracy'], r['ci_low'], r['ci_high'])}"
                  for r in self.table.iter_rows(named=True)]
        return lines + [f"note: {n}" for n in self.notes]

    def _summary_tables(self) -> dict[str, pl.DataFrame]:
        return {n: t for n, t in (("swap", self.table), ("split", self.split)) if t is not None}

    def _headline(self) -> str:
        return f"{self.table.height} cells over {self.n_questions} questions"


def swap(runs: pl.DataFrame, *, reasoner: Endpoint | Mapping[str, Endpoint],
         retrieval_from: str | Sequence[str] | None = None, base: str | None = None, treated: str | None = None,
         template: str | None = None, step_template: str | None = None,
         scorer: Callable[[str | None, list[str]], bool] | None = None, n: int = 1,
         after_results: int | None = None, strategy: int | str | None = None, labels: Any = None,
         control: bool = True, max_tokens: int = 32, temperature: float = 0.0, ci: float | None = 0.95,
         n_bootstrap: int = 2000, random_state: RandomState = 0, progress: bool | None = None) -> Swap:
    """Hand one arm's retrieval to another arm's model and score its answers: accuracy by
    retrieval source x reasoner, and the split of the treated arm's gain it implies.

    Parameters
    ----------
    runs
        Canonical table (``arm``, ``question_id``, ``sample_id``, ``question``, ``gold``, ``steps``).
    reasoner
        Arm name -> the endpoint serving that arm's model; one endpoint means
        ``{endpoint.model: endpoint}``.
    retrieval_from
        Arms whose retrieval is handed over (default: every reasoner's arm present in ``runs``).
    base, treated
        Give both for the split of ``treated``'s gain; each must be a retrieval source and a reasoner.
    template
        The prompt, a format string over ``{question}`` and ``{retrieval}`` (default
        ``"Question: {question}\\n{retrieval}\\nAnswer:"``, completions stopped at a new line).
    step_template
        One block of ``{retrieval}`` per step, over ``{query}``, ``{observation}`` and ``{tool}``
        (default ``"Search: {query}\\nObservation: {observation}"``; Search-R1's is
        ``"<search> {query} </search>\\n\\n<information>{observation}</information>\\n\\n"``).
    scorer
        ``(answer, golds) -> bool`` (default: exact match after normalisation, as the originals).
        The answer is read from ``<answer>`` tags when the completion has them, else its first line.
    n
        Answers per episode (seeds ``0 .. n-1``); at ``temperature=0`` a deterministic server
        repeats itself.
    after_results
        Truncate each retrieval part after its first ``k`` results (default: up to the last).
    strategy, labels
        Swap within one strategy: ``labels`` holds one strategy id per row of ``runs``.
    control
        Add the no-retrieval cells (source ``none``: the question alone).
    max_tokens, temperature
        Passed to ``endpoint.complete``.
    ci, n_bootstrap, random_state
        Interval level (``None``: none), question-bootstrap replicates, seed.
    progress
        Progress bar over the requests batches (``None``: on a terminal only).

    Returns
    -------
    Swap
    """
    validate(runs, required=("arm", "question_id", "sample_id", "question", "gold", "steps"))
    reasoners = _reasoners(reasoner)
    sources = _sources(runs, reasoners, retrieval_from)
    _check_pair(base, treated, sources, reasoners)
    ci = check_ci(ci)
    check_counts(n_bootstrap=n_bootstrap)
    seed = resolve_seed(random_state)
    _check_counts(n=n, max_tokens=max_tokens, after_results=after_results)
    stop = ["\n"] if template is None else None
    template = check_template(DEFAULT_TEMPLATE if template is None else template, ("question", "retrieval"),
                              field="template", required=("question",))
    step_template = check_template(DEFAULT_STEP_TEMPLATE if step_template is None else step_template,
                                   ("query", "observation", "tool"), field="step_template")
    episodes, questions, notes = _episodes(runs, sources, strategy, labels)
    episodes = episodes.with_columns(pl.Series("_prompt", [
        render_prompt(q, retrieval_steps(s, after_results), template=template, step_template=step_template)
        for q, s in zip(episodes["question"].to_list(), episodes["steps"].to_list())], dtype=pl.String))
    if control:
        episodes = pl.concat([episodes, _control_rows(episodes, template, step_template)], how="diagonal_relaxed")
    before = _snapshots(reasoners)
    answers = _ask(reasoners, episodes["_prompt"].unique(maintain_order=True).to_list(), n=n, max_tokens=max_tokens,
                   temperature=temperature, stop=stop, progress=progress)
    per_episode = _score(episodes, reasoners, answers, scorer or exact_match)
    weights = None
    if ci is not None and n_bootstrap > 0:
        weights = question_bootstrap_weights(len(questions), n_bootstrap, stream(seed, "bootstrap"))
    values = _cell_values(per_episode, questions)
    table = _table(per_episode, values, weights, ci, [*sources, *([NO_RETRIEVAL] if control else [])], reasoners)
    split = None if base is None else _split(values, base, treated, weights, ci, len(questions))
    endpoints = _endpoint_counts(reasoners, before)
    notes += _notes(runs, episodes, questions, sources, endpoints, n=n, temperature=temperature,
                    after_results=after_results, strategy=strategy, control=control)
    return Swap(table=table, split=split, per_episode=per_episode, endpoints=endpoints, base=base, treated=treated,
                ci=ci, n_questions=len(questions), notes=tuple(notes))


# ----------------------------------------------------------------------------- checks
def _reasoners(reasoner: Any) -> dict[str, Any]:
    if isinstance(reasoner, Mapping):
        out = dict(reasoner)
    elif hasattr(reasoner, "complete"):
        out = {str(reasoner.model): reasoner}
    else:
        raise InputError("`reasoner` must be an endpoint or a mapping of arm name -> endpoint, got "
                         f"{type(reasoner).__name__}", field="reasoner")
    if not out:
        raise InputError("`reasoner` names no endpoint", field="reasoner")
    bad = [name for name, ep in out.items() if not hasattr(ep, "complete")]
    if bad:
        raise InputError(f"`reasoner` {bad[0]!r} is not an endpoint (it has no `complete`)", field="reasoner")
    return {str(k): v for k, v in out.items()}


def _sources(runs: pl.DataFrame, reasoners: Mapping[str, Any], retrieval_from: Any) -> list[str]:
    arms = runs["arm"].unique().sort().to_list()
    if retrieval_from is None:
        sources = [a for a in reasoners if a in arms]
        if not sources:
            raise InputError(f"no reasoner names an arm of `runs` (reasoners: {list(reasoners)}, arms: {arms}); "
                             "give `retrieval_from`", field="retrieval_from")
        return sources
    sources = [retrieval_from] if isinstance(retrieval_from, str) else list(dict.fromkeys(retrieval_from))
    for arm in sources:
        if arm not in arms:
            raise InputError(f"arm {arm!r} given as `retrieval_from` is not in `runs` (arms: {arms})",
                             field="retrieval_from")
    if not sources:
        raise InputError("`retrieval_from` names no arm", field="retrieval_from")
    if NO_RETRIEVAL in sources:
        raise InputError(f"arm {NO_RETRIEVAL!r} names the no-retrieval control; rename it", field="retrieval_from")
    return sources


def _check_pair(base: str | None, treated: str | None, sources: Sequence[str], reasoners: Mapping[str, Any]) -> None:
    if (base is None) != (treated is None):
        raise InputError("give both `base` and `treated` for the split, or neither", field="base" if base is None
                         else "treated")
    if base is None:
        return
    if base == treated:
        raise InputError("`base` and `treated` must be different arms", field="treated")
    for field, arm in (("base", base), ("treated", treated)):
        if arm not in sources:
            raise InputError(f"arm {arm!r} given as `{field}` is not a retrieval source (sources: {list(sources)})",
                             field=field)
        if arm not in reasoners:
            raise InputError(f"arm {arm!r} given as `{field}` has no endpoint in `reasoner` "
                             f"(reasoners: {list(reasoners)})", field=field)


def _check_counts(*, n: int, max_tokens: int, after_results: int | None) -> None:
    for field, value, low in (("n", n, 1), ("max_tokens", max_tokens, 1), ("after_results", after_results, 0)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise InputError(f"`{field}` must be an integer >= {low}, got {value!r}", field=field)


# ----------------------------------------------------------------------------- episodes and answers
def _episodes(runs: pl.DataFrame, sources: Sequence[str], strategy: Any,
              labels: Any) -> tuple[pl.DataFrame, list[str], list[str]]:
    """The source arms' episodes (within ``strategy``) on the questions every source answered."""
    notes: list[str] = []
    frame = runs.select("arm", "question_id", "sample_id", "question", "gold", "steps")
    if strategy is not None:
        if labels is None:
            raise InputError("`strategy` needs `labels` (one strategy id per row of `runs`)", field="labels")
        values = check_labels(runs, labels)
        keep = np.array([str(v) == str(strategy) for v in values.tolist()], dtype=bool)
        if not keep.any():
            raise InputError(f"no row of `runs` has strategy {strategy!r}", field="strategy")
        frame = frame.filter(pl.Series(keep))
    frame = frame.filter(pl.col("arm").is_in(list(sources)))
    per_source = [set(frame.filter(pl.col("arm") == a)["question_id"].cast(pl.String).to_list()) for a in sources]
    missing = [a for a, qs in zip(sources, per_source) if not qs]
    if missing:
        raise InputError(f"retrieval source {missing[0]!r} has no episode" +
                         (f" of strategy {strategy!r}" if strategy is not None else ""), field="retrieval_from")
    shared = sorted(set.intersection(*per_source))
    if not shared:
        raise InputError("the retrieval sources share no question", field="retrieval_from")
    left = len(set.union(*per_source)) - len(shared)
    if left:
        notes.append(f"{left} question(s) not answered by every retrieval source left out ({len(shared)} kept)")
    frame = frame.with_columns(pl.col("question_id").cast(pl.String)).filter(pl.col("question_id").is_in(shared))
    return frame.rename({"arm": "retrieval_from"}), shared, notes


def _control_rows(episodes: pl.DataFrame, template: str, step_template: str) -> pl.DataFrame:
    """One no-retrieval prompt per question: the question alone."""
    first = episodes.unique("question_id", keep="first", maintain_order=True)
    return first.select(pl.lit(NO_RETRIEVAL).alias("retrieval_from"), "question_id",
                        pl.lit(0, dtype=episodes.schema["sample_id"]).alias("sample_id"), "question", "gold", "steps",
                        pl.Series("_prompt", [render_prompt(q, [], template=template, step_template=step_template)
                                              for q in first["question"].to_list()], dtype=pl.String))


def _ask(reasoners: Mapping[str, Any], prompts: list[str], *, n: int, max_tokens: int, temperature: float,
         stop: list[str] | None, progress: bool | None) -> dict[str, list[list[str | None]]]:
    """Per reasoner: each prompt's ``n`` completions (one batch per seed, every prompt once)."""
    out: dict[str, list[list[str | None]]] = {name: [[] for _ in prompts] for name in reasoners}
    batches = [(name, s) for name in reasoners for s in range(n)]
    for name, s in bar(batches, enabled=progress, desc="swap", total=len(batches)):
        got = reasoners[name].complete(prompts, max_tokens=max_tokens, temperature=temperature, n=1, seed=s,
                                       stop=stop)
        if len(got) != len(prompts):
            raise InputError(f"reasoner {name!r} answered {len(got)} of {len(prompts)} prompts", field="reasoner")
        for i, texts in enumerate(got):
            out[name][i].append(texts[0] if texts else None)
    return out


def _score(episodes: pl.DataFrame, reasoners: Mapping[str, Any], answers: Mapping[str, list[list[str | None]]],
           scorer: Callable[[str | None, list[str]], bool]) -> pl.DataFrame:
    index = {p: i for i, p in enumerate(episodes["_prompt"].unique(maintain_order=True).to_list())}
    slots = [index[p] for p in episodes["_prompt"].to_list()]
    golds = [list(g or []) for g in episodes["gold"].to_list()]
    frames = []
    for name in reasoners:
        said = [[read_answer(t) for t in answers[name][i]] for i in slots]
        n_correct = [sum(bool(scorer(a, g)) for a in row) for row, g in zip(said, golds)]
        frames.append(episodes.select("retrieval_from", "question_id", "sample_id").with_columns(
            pl.lit(name).alias("reasoner"), pl.Series("n_samples", [len(r) for r in said], dtype=pl.Int64),
            pl.Series("n_correct", n_correct, dtype=pl.Int64),
            pl.Series("answers", said, dtype=pl.List(pl.String))))
    out = pl.concat(frames)
    return out.select("retrieval_from", "reasoner", "question_id", "sample_id", "n_samples", "n_correct",
                      (pl.col("n_correct") / pl.col("n_samples")).alias("accuracy"), "answers")


# ----------------------------------------------------------------------------- statistics
def _cell_values(per_episode: pl.DataFrame, questions: Sequence[str]) -> dict[tuple[str, str], np.ndarray]:
    """Per cell: each question's mean episode accuracy (questions weigh equally within a source)."""
    q_index = {q: i for i, q in enumerate(questions)}
    out = {}
    for (source, name), group in per_episode.group_by(["retrieval_from", "reasoner"], maintain_order=True):
        qi = np.array([q_index[q] for q in group["question_id"].to_list()], dtype=np.int64)
        total = np.bincount(qi, weights=group["accuracy"].to_numpy(), minlength=len(questions))
        count = np.bincount(qi, minlength=len(questions))
        out[(source, name)] = total / np.maximum(count, 1)
    return out


def _replicates(weights: np.ndarray | None, x: np.ndarray) -> np.ndarray | None:
    return None if weights is None else weights @ x / x.shape[0]


def _table(per_episode: pl.DataFrame, values: Mapping[tuple[str, str], np.ndarray], weights: np.ndarray | None,
           ci: float | None, sources: Sequence[str], reasoners: Mapping[str, Any]) -> pl.DataFrame:
    episodes = per_episode.group_by(["retrieval_from", "reasoner"]).len()
    n_ep = {(r["retrieval_from"], r["reasoner"]): r["len"] for r in episodes.iter_rows(named=True)}
    rows = []
    for source in sources:
        for name in reasoners:
            x = values[(source, name)]
            reps = _replicates(weights, x)
            low = high = math.nan
            if reps is not None:
                low, high = (float(v) for v in percentile_interval(reps, ci))
            rows.append((source, name, float(x.mean()), low, high, int(x.shape[0]), int(n_ep[(source, name)])))
    schema = {"retrieval_from": pl.String, "reasoner": pl.String, "accuracy": pl.Float64, "ci_low": pl.Float64,
              "ci_high": pl.Float64, "n_questions": pl.Int64, "n_episodes": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def split_parts(values: Mapping[tuple[str, str], np.ndarray], base: str, treated: str) -> dict[str, np.ndarray]:
    """Per question, each part of the split of ``treated``'s gain (first key the retrieval
    source, second the reasoner): ``total``, ``retrieval``, ``reasoning``, ``interaction``.

    >>> v = {("b", "b"): np.array([0.2]), ("t", "b"): np.array([0.3]), ("b", "t"): np.array([0.5]),
    ...      ("t", "t"): np.array([0.7])}
    >>> {k: round(float(x[0]), 3) for k, x in split_parts(v, "b", "t").items()}
    {'total': 0.5, 'retrieval': 0.1, 'reasoning': 0.3, 'interaction': 0.1}
    """
    bb, tb, bt, tt = (values[(base, base)], values[(treated, base)], values[(base, treated)],
                      values[(treated, treated)])
    return {"total": tt - bb, "retrieval": tb - bb, "reasoning": bt - bb, "interaction": tt - tb - bt + bb}


def _split(values: Mapping[tuple[str, str], np.ndarray], base: str, treated: str, weights: np.ndarray | None,
           ci: float | None, n_questions: int) -> pl.DataFrame:
    parts = split_parts(values, base, treated)
    est = {k: float(v.mean()) for k, v in parts.items()}
    reps = {k: _replicates(weights, v) for k, v in parts.items()}
    rows = []
    for part in SPLIT_PARTS:
        low = high = share_low = share_high = math.nan
        with np.errstate(invalid="ignore", divide="ignore"):
            share = est[part] / est["total"] if est["total"] != 0 else math.nan
        if reps[part] is not None:
            low, high = (float(v) for v in split_interval(est[part], reps[part], ci, n_questions))
            with np.errstate(invalid="ignore", divide="ignore"):
                ratio = np.where(reps["total"] != 0, reps[part] / np.where(reps["total"] != 0, reps["total"], 1),
                                 np.nan)
            share_low, share_high = (float(v) for v in percentile_interval(ratio, ci))
        rows.append((base, treated, part, est[part], low, high, float(detectable_effect(low, high, ci)), share,
                     share_low, share_high))
    schema = {"base": pl.String, "treated": pl.String, "part": pl.String, "estimate": pl.Float64,
              "ci_low": pl.Float64, "ci_high": pl.Float64, "detectable_effect": pl.Float64, "share": pl.Float64,
              "share_ci_low": pl.Float64, "share_ci_high": pl.Float64}
    return pl.DataFrame(rows, schema=schema, orient="row")


# ----------------------------------------------------------------------------- accounting
def _stats(endpoint: Any) -> dict[str, int]:
    stats = getattr(endpoint, "stats", None)
    got = stats.as_dict() if hasattr(stats, "as_dict") else {}
    return {k: int(got.get(k, 0) or 0) for k in _STAT_FIELDS}


def _snapshots(reasoners: Mapping[str, Any]) -> dict[int, dict[str, int]]:
    return {id(ep): _stats(ep) for ep in reasoners.values()}


def _endpoint_counts(reasoners: Mapping[str, Any], before: Mapping[int, dict[str, int]]) -> pl.DataFrame:
    """Per distinct endpoint: what this call cost (its counters now minus before)."""
    names: dict[int, list[str]] = {}
    for name, ep in reasoners.items():
        names.setdefault(id(ep), []).append(name)
    rows = []
    for key, served in names.items():
        ep = reasoners[served[0]]
        now = _stats(ep)
        rows.append({"reasoners": ", ".join(served), "model": str(getattr(ep, "model", "")),
                     **{k: now[k] - before[key][k] for k in _STAT_FIELDS}})
    schema = {"reasoners": pl.String, "model": pl.String, **dict.fromkeys(_STAT_FIELDS, pl.Int64)}
    return pl.DataFrame(rows, schema=schema)


def _notes(runs: pl.DataFrame, episodes: pl.DataFrame, questions: Sequence[str], sources: Sequence[str],
           endpoints: pl.DataFrame, *, n: int, temperature: float, after_results: int | None, strategy: Any,
           control: bool) -> list[str]:
    notes = ["questions weigh equally within each retrieval source (an episode counts 1 / its source's "
             "episodes on its question)"]
    if after_results is not None:
        notes.append(f"retrieval truncated after the first {after_results} result(s) of each episode")
    if strategy is not None:
        notes.append(f"within strategy {strategy!r} only")
    if control:
        notes.append(f"retrieval source `{NO_RETRIEVAL}`: the question alone (no retrieval)")
    if n > 1 and temperature == 0:
        notes.append(f"n = {n} answers at temperature 0: a deterministic server repeats one answer")
    if "correct" in runs.columns:
        logged = runs.filter(pl.col("arm").is_in(list(sources)) &
                             pl.col("question_id").cast(pl.String).is_in(list(questions)))
        # questions in one order before their mean (a float sum's last bit follows the order)
        acc = logged.group_by("arm", "question_id").agg(pl.col("correct").cast(pl.Float64).mean()) \
            .sort("arm", "question_id").group_by("arm", maintain_order=True).agg(pl.col("correct").mean())
        got = {r["arm"]: r["correct"] for r in acc.iter_rows(named=True)}
        notes.append("accuracy as logged on these questions: " + ", ".join(
            f"{a} {got[a]:.3f}" for a in sources if a in got and got[a] is not None))
    for r in endpoints.iter_rows(named=True):
        notes.append(f"endpoint for {r['reasoners']} (model `{r['model']}`): {r['requests']} requests, "
                     f"{r['cached']} cached, {r['retries']} retries, {r['failed']} failed, "
                     f"{r['prompt_tokens']} prompt + {r['completion_tokens']} completion tokens")
    return notes
