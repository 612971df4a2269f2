"""The description table of a fit, computed once when the space is fitted (what
:meth:`StrategySpace.describe` returns), and the members :meth:`StrategySpace.examples` reads.

Columns: ``strategy``, ``name`` (your :meth:`~StrategySpace.rename`, else ``built_name``),
``built_name`` (from what the members share, with the tools the task decides last, e.g.
``get_order_details -> cancel_pending_order -> get_order_details (again)``: the steps the
members holding 90 % of the strategy take in order, distinct within the space;
:func:`mechanism.analysis._strategies.naming.strategy_names` states the rule), ``fidelity`` (the
share of members the name describes), ``size``, ``share``, ``stability`` (bootstrap over
questions), ``keywords`` (c-TF-IDF over renderings, as in BERTopic), ``typical_member`` (the
medoid's masked rendering), ``typical_moves`` and ``typical_tools`` (the most common sequence),
``example`` (an unmasked trajectory with that rendering), ``success_rate`` (pooled),
``mean_rounds``, ``no_search_share``, ``failure_rate`` and ``retry_rate`` (share of members with
a failed call, with a retry), ``failed_call_share`` (failed calls over calls),
``retry_loop_share`` (share of members that are fail-and-retry loops: at least two failed calls,
each retried by the next call of its tool; a strategy at least half loops says so in its name),
``optional_steps`` (what ``families="merge"`` joined), ``task_variants`` (tools that took one
another's place on different kinds of task, ``"create_event / send_email"``:
:mod:`mechanism.analysis._strategies.tasks`), ``endings`` (last tools that took one another's
place after the same steps, ``"restart / scale"``: :mod:`mechanism.analysis._strategies.endings`)
and, per arm of the fitted table,
``n[arm]``, ``success_rate[arm]`` (questions weighted equally) and its bootstrap interval
``ci_low[arm]``, ``ci_high[arm]``, and ``failure_rate[arm]``, ``retry_rate[arm]`` with theirs
(``..._ci_low[arm]``, ``..._ci_high[arm]``; :meth:`StrategySpace.execution` gives them as a long
table).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from mechanism.analysis._strategies.clustering import medoid
from mechanism.analysis._strategies.description import (
    choose_members,
    example_text,
    member_examples,
    pick_members,
    strategy_names,
    success_by_arm,
    with_calls,
)
from mechanism.analysis._strategies.naming import loop_share
from mechanism.analysis.segmentation import ALIKE_JOIN, TASK_TOOL
from mechanism.core.errors import InputError, MechanismError

_SCOPES = (("whole question", "whole_question"), ("most of question", "most_of_question"),
           ("part of question", "part_of_question"), ("no question", "no_question"),
           ("no answer", "no_answer"))


def _keyword_text(rendering: str) -> str:
    """A rendering as keyword units: multi-word scopes joined, step numbers dropped."""
    text = rendering
    for phrase, unit in _SCOPES:
        text = text.replace(phrase, unit)
    return text


def c_tf_idf_keywords(documents: Sequence[str], weights: np.ndarray, labels: np.ndarray,
                      *, top_n: int = 6) -> dict[int, list[str]]:
    """Class-based TF-IDF (as in BERTopic) over renderings: the top terms of each class.

    ``W[t, c] = tf[t, c] * log(1 + A / f[t])`` with ``tf`` the class's L1-normalised term
    counts, ``A`` the mean number of terms per class and ``f[t]`` the term's count over all
    classes. Terms are move names, tools, query scopes and provenance tags.
    """
    from scipy import sparse  # noqa: PLC0415 - scipy: loaded by the steps that use it, not at import
    from sklearn.feature_extraction.text import CountVectorizer  # noqa: PLC0415 - scikit-learn: about a second to import, only in the steps that use it

    classes = sorted({int(c) for c in labels})
    if not documents:
        return {c: [] for c in classes}
    vec = CountVectorizer(token_pattern=r"\[[A-Z]+\]|[a-z][a-z_]*", lowercase=False)
    counts = vec.fit_transform([_keyword_text(d) for d in documents])
    index = {c: i for i, c in enumerate(classes)}
    rows = np.array([index[int(c)] for c in labels])
    assign = sparse.csr_matrix((np.asarray(weights, dtype=np.float64), (rows, np.arange(len(documents)))),
                               shape=(len(classes), len(documents)))
    per_class = np.asarray((assign @ counts).todense())
    totals = per_class.sum(axis=1, keepdims=True)
    tf = per_class / np.maximum(totals, 1e-300)
    avg = totals.mean()
    idf = np.log(1.0 + avg / np.maximum(per_class.sum(axis=0), 1e-300))
    score = tf * idf[None, :]
    terms = vec.get_feature_names_out()
    out = {}
    for c, i in index.items():
        order = np.lexsort((terms, -score[i]))  # ties broken alphabetically: stable output
        out[c] = [str(terms[j]) for j in order[:top_n] if score[i, j] > 0]
    return out


def summaries(renderings: list[str], counts: np.ndarray, labels: np.ndarray, space: np.ndarray
              ) -> list[dict[str, Any]]:
    """Each strategy's medoid rendering and c-TF-IDF keywords (from the distinct rows only)."""
    keywords = c_tf_idf_keywords(renderings, counts, labels)
    out = []
    for c in sorted(set(labels.tolist())):
        idx = np.flatnonzero(labels == c)
        med = idx[medoid(space[idx], counts[idx])]
        out.append({"strategy": c, "typical_member": renderings[med], "keywords": keywords.get(c, [])})
    return out


def task_call_tools(tools: Sequence[str | None], labels: np.ndarray, task: frozenset[str]) -> dict[int, list[str]]:
    """For each strategy whose members call the task's tools (read as ``task_call_1``, ... or
    left out by the move reading), those tools in order of use, ``" / "``-joined.

    Examples
    --------
    >>> task_call_tools(["look > book", "cancel", "look"], np.array([0, 0, 1]), frozenset({"book", "cancel"}))
    {0: ['book / cancel']}
    """
    return {c: [" / ".join(sorted(tally, key=lambda t: (-tally[t], t)))]
            for c, tally in _calls_of(tools, labels, task).items()}


def _calls_of(tools: Sequence[str | None], labels: np.ndarray, wanted: Sequence[str] | frozenset[str]
              ) -> dict[int, dict[str, int]]:
    """For each strategy (outliers left out), how many calls its members make to each tool
    of ``wanted`` (a failed call, marked ``!``, counted as its tool)."""
    wanted = frozenset(wanted)
    used: dict[int, dict[str, int]] = {}
    if not wanted:
        return used
    for c, tl in zip(labels.tolist(), tools):
        for t in (tl or "").split(" > "):
            t = t.rstrip("!")
            if t in wanted and c >= 0:
                tally = used.setdefault(int(c), {})
                tally[t] = tally.get(t, 0) + 1
    return used


#: A name lists at most this many of the tools its task calls stand for, then how many more.
MAX_TASK_TOOLS_NAMED = 4
#: A tool of a group read as one (:class:`~mechanism.analysis.segmentation.TaskCalls` ``alike``)
#: that a strategy's name lists: at least this share of the strategy's calls to the group.
ALIKE_NAMED_SHARE = 0.1


def alike_tools(tools: Sequence[str | None], labels: np.ndarray, alike: Sequence[Sequence[str]]
                ) -> dict[int, dict[str, str]]:
    """For each strategy whose members call a group of tools read as one, the group's name
    -> what the strategy's name says instead: the members of the group making at least
    :data:`ALIKE_NAMED_SHARE` of its calls to the group, most called first, joined as the group
    is (a strategy that only restarts is named ``restart``, not ``restart_or_scale``).

    Examples
    --------
    >>> alike_tools(["restart", "get > scale", "get > restart"], np.array([0, 1, 1]), [("restart", "scale")])
    {0: {'restart_or_scale': 'restart'}, 1: {'restart_or_scale': 'restart_or_scale'}}
    """
    out: dict[int, dict[str, str]] = {}
    for c, tally in sorted(_calls_of(tools, labels, [t for group in alike for t in group]).items()):
        for group in alike:
            total = sum(tally.get(t, 0) for t in group)
            if total:
                shown = [t for t in group if tally.get(t, 0) >= ALIKE_NAMED_SHARE * total]
                out.setdefault(c, {})[ALIKE_JOIN.join(group)] = ALIKE_JOIN.join(shown)
    return out


def _listed(tools: Sequence[str]) -> str:
    """The tools a strategy's task calls stand for, as a name says them: all of a few, else
    the first :data:`MAX_TASK_TOOLS_NAMED` - 1 and how many more (an agent read by place calls
    every tool of a benchmark; the full list is the ``task_variants`` column).

    >>> _listed(["book", "cancel"]), _listed(["a", "b", "c", "d", "e", "f"])
    ('book or cancel', 'a, b, c or 3 more')
    """
    if len(tools) <= MAX_TASK_TOOLS_NAMED:
        return " or ".join(tools)
    shown = MAX_TASK_TOOLS_NAMED - 1
    return f"{', '.join(tools[:shown])} or {len(tools) - shown} more"


def _say_alike(names: pl.DataFrame, alike: dict[int, dict[str, str]]) -> pl.DataFrame:
    """``names`` (``strategy, built_name, ...``) with each group read as one named by the
    tools of it the strategy calls (:func:`alike_tools`)."""
    def say(row: dict[str, Any]) -> str:
        name = row["built_name"]
        for group, said in alike.get(row["strategy"], {}).items():
            name = name.replace(group, said)
        return name

    if not alike:
        return names
    return names.with_columns(pl.struct("strategy", "built_name").map_elements(say, return_dtype=pl.String)
                              .alias("built_name"))


def table(runs: pl.DataFrame, traj: pl.DataFrame, labels: np.ndarray, fitted: dict[str, Any],
          stability: pl.DataFrame, *, seed: int, task_calls: dict[int, list[str]] | None = None,
          alike: dict[int, dict[str, str]] | None = None) -> pl.DataFrame:
    """The description table (:meth:`StrategySpace.describe` documents its columns) of the
    fitted ``runs``, rendered as ``traj``, with strategies ``labels`` and the clustering's record
    ``fitted`` (:func:`~mechanism.analysis._strategies.fitcache.fit_clusters`: its ``summaries``,
    ``optional_steps``, ``task_variants`` and ``endings``, strategy -> ``"restart / scale"``, the
    last tools joined, named after the steps); ``task_calls`` (:func:`task_call_tools`) joins
    ``task_variants`` and is named where the name shows a task call; ``alike``
    (:func:`alike_tools`) says which tools of a group read as one each name lists."""
    summaries, optional_steps = fitted["summaries"], fitted["optional_steps"]
    task_variants, endings = fitted.get("task_variants"), fitted.get("endings")
    frame = traj.select("arm", "question_id", "moves", "tools", "tokens", "rendering").with_columns(
        pl.Series("strategy", labels, dtype=pl.Int64), runs["correct"].alias("correct"),
        runs["n_rounds"].alias("n_rounds"), pl.Series("row", np.arange(traj.height), dtype=pl.Int64),
        (traj["n_failed"] > 0).alias("failed"), (traj["n_retries"] > 0).alias("retried"),
        traj["n_failed"].alias("n_failed"), traj["n_retries"].fill_null(0).cast(pl.Int64).alias("n_retries"),
        traj["n_repeat"].fill_null(0).cast(pl.Int64).alias("n_repeat"))
    total = frame.height
    base = (frame.group_by("strategy")
            .agg(pl.len().cast(pl.Int64).alias("size"), pl.col("correct").mean().alias("success_rate"),
                 pl.col("n_rounds").mean().alias("mean_rounds"),
                 (pl.col("n_rounds") == 0).mean().alias("no_search_share"),
                 pl.col("failed").mean().alias("failure_rate"), pl.col("retried").mean().alias("retry_rate"),
                 (pl.col("n_failed").sum() / pl.col("n_rounds").sum().cast(pl.Float64).clip(1.0, None))
                 .alias("failed_call_share"), loop_share(pl.col("n_retries")).alias("retry_loop_share"))
            .with_columns((pl.col("size") / total).alias("share")))
    typical = (frame.group_by("strategy", "moves", "tools").agg(pl.len().alias("n"))
               .sort(["strategy", "n", "moves", "tools"], descending=[False, True, False, False])
               .group_by("strategy", maintain_order=True).first()
               .select("strategy", pl.col("moves").alias("typical_moves"), pl.col("tools").alias("typical_tools")))
    names = strategy_names(frame.select("strategy", "moves", "tools", "tokens", "n_rounds", "n_retries", "n_repeat"))
    names = _say_alike(names, alike or {})
    meds = pl.DataFrame(summaries, schema={"strategy": pl.Int64, "typical_member": pl.String,
                                         "keywords": pl.List(pl.String)})
    # an unmasked example: the first trajectory whose rendering is the typical member's
    ex = (frame.join(meds.select("strategy", "typical_member"), on="strategy")
          .filter(pl.col("rendering") == pl.col("typical_member"))
          .group_by("strategy").agg(pl.col("row").min()))
    rows = dict(zip(ex["strategy"].to_list(), ex["row"].to_list()))
    examples = pl.DataFrame({"strategy": list(rows), "example": [
        example_text(runs["question"][r], runs.row(r, named=True)["steps"], runs["answer"][r])
        for r in rows.values()]},
        schema={"strategy": pl.Int64, "example": pl.String})
    out = (base.join(meds, on="strategy", how="left").join(typical, on="strategy", how="left")
           .join(names, on="strategy", how="left")
           .join(examples, on="strategy", how="left")
           .join(stability, on="strategy", how="left"))
    # a strategy on two kinds of task names the tools the task decides, which its shared core
    # leaves out ("list_events (by task: create_event or send_email)")
    by_task = {c: sorted({t for v in vs for block in v.split(" / ") for t in block.split(" > ") if t})
               for c, vs in (task_variants or {}).items() if vs}
    # a task call the name shows says which tools it stands for; one left out of every
    # sibling's name alike would tell none of them apart
    calls = {c: sorted({t for v in vs for t in v.split(" / ")}) for c, vs in (task_calls or {}).items()}
    shown = set(out.filter(pl.col("built_name").str.contains(TASK_TOOL, literal=True))["strategy"].to_list())
    for c in shown & set(calls):
        by_task[c] = sorted({*by_task.get(c, ()), *calls[c]})
    # a strategy whose last action varies says which actions end it ("query_metrics (then
    # restart or scale)"): a name from what 90 % of the members share leaves them out
    ends = {c: sorted({t for v in vs for t in v.split(" / ")}) for c, vs in (endings or {}).items() if vs}
    out = out.with_columns(pl.struct("strategy", "built_name").map_elements(
        lambda r: r["built_name"] + (f" (then {' or '.join(ends[r['strategy']])})" if r["strategy"] in ends else "")
        + (f" (by task: {_listed(by_task[r['strategy']])})" if r["strategy"] in by_task else ""),
        return_dtype=pl.String).alias("built_name"))
    task_variants = {c: sorted({*(task_variants or {}).get(c, ()), *(task_calls or {}).get(c, ())})
                     for c in {*(task_variants or {}), *(task_calls or {})}}
    out = out.with_columns(pl.col("built_name").alias("name"))
    arms = sorted(frame["arm"].unique().to_list())
    ids = sorted(set(labels.tolist()))
    per_arm = success_by_arm(frame.select("arm", "question_id", "strategy", "correct"), ids, random_state=seed)
    # how often members fail a call and retry: execution, per arm (questions weighted equally)
    fails = success_by_arm(frame.select("arm", "question_id", "strategy", pl.col("failed").alias("correct")),
                           ids, random_state=seed)
    retries = success_by_arm(frame.select("arm", "question_id", "strategy", pl.col("retried").alias("correct")),
                             ids, random_state=seed)
    for arm in arms:
        sub = per_arm.filter(pl.col("arm") == arm).select(
            "strategy", pl.col("n").alias(f"n[{arm}]"), pl.col("success_rate").alias(f"success_rate[{arm}]"),
            pl.col("ci_low").alias(f"ci_low[{arm}]"), pl.col("ci_high").alias(f"ci_high[{arm}]"))
        out = out.join(sub, on="strategy", how="left").with_columns(pl.col(f"n[{arm}]").fill_null(0))
        for what, rates in (("failure_rate", fails), ("retry_rate", retries)):
            sub = rates.filter(pl.col("arm") == arm).select(
                "strategy", pl.col("success_rate").alias(f"{what}[{arm}]"),
                pl.col("ci_low").alias(f"{what}_ci_low[{arm}]"), pl.col("ci_high").alias(f"{what}_ci_high[{arm}]"))
            out = out.join(sub, on="strategy", how="left")
    out = out.sort("strategy").select(
        "strategy", "name", "built_name", "fidelity", "size", "share", "stability", "keywords", "typical_member",
        "typical_moves", "typical_tools", "example", "success_rate", "mean_rounds", "no_search_share",
        "failure_rate", "retry_rate", "failed_call_share", "retry_loop_share",
        *[c for arm in arms for c in (f"n[{arm}]", f"success_rate[{arm}]", f"ci_low[{arm}]", f"ci_high[{arm}]",
                                      *(f"{w}{x}[{arm}]" for w in ("failure_rate", "retry_rate")
                                        for x in ("", "_ci_low", "_ci_high")))])
    ids = [int(c) for c in out["strategy"].to_list()]
    return out.with_columns(
        pl.Series("optional_steps", [optional_steps.get(c, []) for c in ids], dtype=pl.List(pl.String)),
        pl.Series("task_variants", [(task_variants or {}).get(c, []) for c in ids], dtype=pl.List(pl.String)),
        pl.Series("endings", [(endings or {}).get(c, []) for c in ids], dtype=pl.List(pl.String)))


def example_pool(runs: pl.DataFrame, moves: list[str], labels: np.ndarray, described: pl.DataFrame
                 ) -> pl.DataFrame:
    """The members :meth:`StrategySpace.examples` reads from: up to 8 per strategy and arm
    (bounded memory); their calls are segmented only when asked for, so a fit whose
    segmentation came from the cache segments nothing."""
    typical = dict(zip(described["strategy"].to_list(), described["typical_moves"].to_list()))
    parts = [pick_members(runs, labels, moves, typical, s, n=8, arm=a)
             for s in sorted(set(labels.tolist())) for a in sorted(runs["arm"].unique().to_list())]
    return pl.concat([p for p in parts if p.height], how="diagonal_relaxed")


def execution(described: pl.DataFrame) -> pl.DataFrame:
    """The failure and retry rates of ``described`` as a long table (a space saved before they
    were kept is refused)."""
    arms = [c[2:-1] for c in described.columns if c.startswith("n[")]
    frames = []
    for arm in arms:
        if f"failure_rate[{arm}]" not in described.columns:
            continue
        frames.append(described.select(
            "strategy", "name", pl.lit(arm).alias("arm"), pl.col(f"n[{arm}]").alias("n"),
            pl.col(f"failure_rate[{arm}]").alias("failure_rate"),
            pl.col(f"failure_rate_ci_low[{arm}]").alias("failure_ci_low"),
            pl.col(f"failure_rate_ci_high[{arm}]").alias("failure_ci_high"),
            pl.col(f"retry_rate[{arm}]").alias("retry_rate"),
            pl.col(f"retry_rate_ci_low[{arm}]").alias("retry_ci_low"),
            pl.col(f"retry_rate_ci_high[{arm}]").alias("retry_ci_high")))
    if not frames:
        raise MechanismError("this space was saved without failure and retry rates: refit it")
    return pl.concat(frames).sort("strategy", "arm")


def stability_table(stability: dict[int, float], labels: np.ndarray) -> pl.DataFrame:
    """``strategy, stability`` of every strategy of ``labels`` (NaN where no resample had it)."""
    ids = sorted(int(c) for c in np.unique(labels) if c >= 0)
    return pl.DataFrame({"strategy": ids, "stability": [stability.get(c, float("nan")) for c in ids]},
                        schema={"strategy": pl.Int64, "stability": pl.Float64})


def renamed(described: pl.DataFrame, names: dict[int, str], new: Any) -> tuple[dict[int, str], pl.DataFrame]:
    """The names after :meth:`StrategySpace.rename` adds ``new`` to ``names``, and the
    description table showing them (unnamed strategies keep their built name)."""
    known = set(described["strategy"].to_list())
    clean: dict[int, str] = {}
    for k, v in dict(new).items():
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or int(k) not in known:
            raise MechanismError(f"`names` has no strategy {k!r} (strategies: {sorted(known)})")
        if not isinstance(v, str) or not v.strip():
            raise MechanismError(f"`names` must map to non-empty text, got {v!r} for strategy {k}")
        clean[int(k)] = v.strip()
    names = {**names, **clean}
    return names, described.with_columns(pl.struct("strategy", "built_name").map_elements(
        lambda r: names.get(r["strategy"], r["built_name"]), return_dtype=pl.String).alias("name"))


def pooled_examples(pool: pl.DataFrame | None, described: pl.DataFrame, strategy: int, *, n: int,
                    arm: str | None) -> pl.DataFrame:
    """:meth:`StrategySpace.examples` from the fit's pool of members."""
    if pool is None:
        raise InputError("this space keeps no transcripts (it was loaded): pass `runs=`", field="runs")
    typical = dict(zip(described["strategy"].to_list(), described["typical_moves"].to_list()))
    pool = pool.filter(pl.col("strategy") == int(strategy))
    if arm is not None:
        pool = pool.filter(pl.col("arm") == arm)
    return with_calls(choose_members(pool.drop("kind"), n, typical.get(int(strategy))))


def examples(pool: pl.DataFrame | None, described: pl.DataFrame, strategy: int, *, n: int, arm: str | None,
             runs: pl.DataFrame | None, assigned: pl.DataFrame | None) -> pl.DataFrame:
    """:meth:`StrategySpace.examples`: from the fit's pool of members, or from ``runs`` and
    their :meth:`~StrategySpace.assign` table ``assigned``."""
    if runs is None or assigned is None:
        return pooled_examples(pool, described, strategy, n=n, arm=arm)
    typical = dict(zip(described["strategy"].to_list(), described["typical_moves"].to_list()))
    return member_examples(runs, assigned["strategy"].to_numpy(), assigned["moves"].to_list(), typical,
                           int(strategy), n=n, arm=arm)
