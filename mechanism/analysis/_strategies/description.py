"""Readable descriptions of strategies: a name from tools and moves (the rule:
:mod:`mechanism.analysis._strategies.naming`), the typical sequence, an unmasked example, success per arm with
intervals (questions weighted equally within an arm, percentile bootstrap over questions)."""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

import numpy as np
import polars as pl

from mechanism.analysis._strategies.naming import NAME_COVERAGE, shared_core, step_labels, strategy_names  # noqa: F401  (public here)
from mechanism.analysis.segmentation import SOURCES, USER_TURN, argument_values, atoms, segment
from mechanism.core.resample import (
    percentile_interval,
    question_bootstrap_weights,
    question_weighted,
    resolve_seed,
    stream,
)

MAX_EXAMPLE_CHARS = 1200


def _collapse(items: list[str]) -> list[str]:
    """Runs of one item as ``item x3``."""
    out: list[str] = []
    for it in items:
        if out and (out[-1] == it or out[-1].startswith(it + " x")):
            n = int(out[-1].rsplit(" x", 1)[1]) + 1 if " x" in out[-1] and out[-1].startswith(it + " x") else 2
            out[-1] = f"{it} x{n}"
        else:
            out.append(it)
    return out


def strategy_name(moves: Sequence[str], tools: Sequence[str]) -> str:
    """A name built from a typical sequence's tools and moves, e.g.
    ``get_order_details -> cancel_pending_order -> get_order_details (again)``.

    Examples
    --------
    >>> strategy_name(["first", "switch", "return", "answer"],
    ...               ["get_order_details", "cancel_pending_order", "get_order_details"])
    'get_order_details -> cancel_pending_order -> get_order_details (again)'
    >>> strategy_name(["first_lookup", "bridge_lookup", "answer"], ["search", "search"])
    'search -> search (bridge)'
    >>> strategy_name(["answer"], [])
    'answer without tools'
    """
    if not tools:
        return "answer without tools"
    return " -> ".join(_collapse(step_labels(moves, tools)))


def example_text(question: str | None, steps: list[dict] | None, answer: str | None) -> str:
    """One trajectory as text with its content (for a paper's example), bounded in length."""
    lines = [f"Q: {(question or '')[:200]}"]
    for i, st in enumerate(steps or [], start=1):
        st = st or {}
        args = st.get("arguments") or st.get("query") or ""
        obs = " ".join(str(st.get("observation") or "").split())
        lines.append(f"{i}. {st.get('tool')}({str(args)[:160]}) -> {obs[:120]}")
    lines.append(f"A: {answer}")
    return "\n".join(lines)[:MAX_EXAMPLE_CHARS]


def success_by_arm(frame: pl.DataFrame, strategies: Sequence[int], *, n_boot: int = 200, level: float = 0.95,
                   random_state: int | np.random.Generator | None = 0) -> pl.DataFrame:
    """Per strategy and arm: ``n``, question-weighted success rate and its bootstrap interval.

    ``frame`` has ``arm, question_id, strategy, correct``. Within an arm every question
    weighs 1 (each trajectory 1 / its question's samples in the arm); the bootstrap
    resamples questions. ``random_state`` (int, ``numpy.random.Generator`` or None: fresh
    entropy) is turned into one integer once (:func:`mechanism.core.resample.resolve_seed`); every
    arm's resamples come from its ``"strategy-success"`` stream, so arms answering the same
    questions draw the same resamples.
    """
    seed = resolve_seed(random_state)
    strategies = list(strategies)
    s_index = {s: i for i, s in enumerate(strategies)}
    rows = []
    for arm in sorted(frame["arm"].unique().to_list()):
        sub = frame.filter(pl.col("arm") == arm)
        qcodes, qinv = np.unique(sub["question_id"].to_numpy().astype(str), return_inverse=True)
        sidx = np.array([s_index[int(s)] for s in sub["strategy"].to_list()], dtype=np.int64)
        n = np.zeros((len(qcodes), len(strategies)))
        c = np.zeros_like(n)
        np.add.at(n, (qinv, sidx), 1.0)
        np.add.at(c, (qinv, sidx), sub["correct"].cast(pl.Float64).fill_null(0.0).to_numpy())
        wn, wc = question_weighted(n, c)
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = wc.sum(0) / wn.sum(0)
            draws = question_bootstrap_weights(len(qcodes), n_boot, stream(seed, "strategy-success"))
            reps = (draws @ wc) / (draws @ wn)
        lo, hi = percentile_interval(reps, level)
        for s, i in s_index.items():
            rows.append((s, arm, int(n[:, i].sum()), float(rate[i]), float(lo[i]), float(hi[i])))
    return pl.DataFrame(rows, schema={"strategy": pl.Int64, "arm": pl.String, "n": pl.Int64,
                                      "success_rate": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64},
                        orient="row")


def typical(values: Sequence[str]) -> str:
    """Most common value (ties: the smallest)."""
    counts = Counter(values)
    return min(counts, key=lambda v: (-counts[v], v)) if counts else ""


def dumps_names(names: dict[int, str]) -> str:
    return json.dumps({str(k): v for k, v in sorted(names.items())})


# ---------------------------------------------------------------------------- the explorer
def choose_members(members: pl.DataFrame, n: int, typical_moves: str | None) -> pl.DataFrame:
    """``n`` members of one strategy to read: typical ones (the typical move sequence) and
    atypical ones (the rarest other sequences first), alternating; each group is taken
    round-robin over (arm, outcome) and over questions not yet shown, so a reader sees the
    family and its edges in every arm. Deterministic: ties broken by arm, question and sample.

    ``members`` has ``arm, question_id, sample_id, correct, moves``; a ``kind`` column
    (``typical``/``atypical``) is added.

    >>> m = pl.DataFrame({"arm": ["a"] * 4, "question_id": ["q1", "q1", "q2", "q3"], "sample_id": [0, 1, 0, 0],
    ...                   "correct": [True, True, False, True], "moves": ["x", "x", "x", "y"]})
    >>> choose_members(m, 3, "x").select("question_id", "kind").rows()
    [('q1', 'typical'), ('q3', 'atypical'), ('q2', 'typical')]
    """
    frame = members.with_row_index("_i")
    if frame.height == 0 or n <= 0:
        return members.head(0).with_columns(pl.lit("typical").alias("kind"))
    rarity = Counter(frame["moves"].to_list())

    def ordered(rows: list[dict], *, rare_first: bool) -> list[int]:
        rows = sorted(rows, key=lambda r: ((rarity[r["moves"]] if rare_first else 0), r["arm"],
                                           str(r["question_id"]), r["sample_id"]))
        buckets: dict[tuple, list[dict]] = {}
        for r in rows:
            buckets.setdefault((r["arm"], not bool(r["correct"])), []).append(r)
        order, shown = [], set()
        while any(buckets.values()):
            for key in sorted(buckets):
                queue = buckets[key]
                if queue:
                    fresh = next((j for j, r in enumerate(queue) if r["question_id"] not in shown), 0)
                    r = queue.pop(fresh)
                    shown.add(r["question_id"])
                    order.append(r["_i"])
        return order

    rows = frame.select("_i", "arm", "question_id", "sample_id", "correct", "moves").to_dicts()
    a = ordered([r for r in rows if r["moves"] == (typical_moves or "")], rare_first=False)
    b = ordered([r for r in rows if r["moves"] != (typical_moves or "")], rare_first=True)
    picked: list[tuple[str, int]] = []
    while len(picked) < n and (a or b):
        if a:
            picked.append(("typical", a.pop(0)))
        if b and len(picked) < n:
            picked.append(("atypical", b.pop(0)))
    kinds = pl.DataFrame({"_i": [i for _, i in picked], "kind": [k for k, _ in picked]},
                         schema={"_i": pl.UInt32, "kind": pl.String})
    return kinds.join(frame, on="_i", how="left", maintain_order="left").select(*members.columns, "kind")


def value_sources(question: str | None, steps: list[dict] | None) -> list[list[tuple[str, str]]]:
    """For every call, each argument value with where it came from: ``user`` (the question),
    ``call`` (an earlier call's arguments), ``result`` (first seen in an earlier observation)
    or ``new``, by the precedence :mod:`mechanism.analysis.segmentation` counts atoms with; a value of
    several atoms takes its atoms' sources joined by ``+``.
    """
    user = set(atoms(question))
    calls: set[str] = set()
    results: set[str] = set()
    out = []
    for step in steps or ():
        step = step or {}
        values = argument_values(step.get("arguments"), step.get("query"))
        shown = []
        for v in values:
            found = set()
            for a in atoms(v):
                found.add("user" if a in user else "call" if a in calls else "result" if a in results else "new")
            shown.append((v, "+".join(s for s in SOURCES if s in found) or "none"))
        out.append(shown)
        for v in values:
            calls.update(atoms(v))
        results.update(atoms(step.get("observation")))
    return out


MAX_SHOWN_CHARS = 600  # an observation or argument shown in a transcript (the full text stays in the data)


def transcripts(rows: pl.DataFrame, moves: pl.DataFrame) -> list[dict]:
    """Member transcripts as plain data for a page: per row of ``rows`` (canonical columns plus
    ``strategy`` and ``kind``) its question, answer, outcome and every call with its tool,
    arguments, where each value came from, its relation to earlier calls, its move and whether
    it failed or followed a failure; ``moves`` is :func:`mechanism.segment` of ``rows``.
    Text is unmasked and cut to :data:`MAX_SHOWN_CHARS`, never escaped here (the renderer does)."""
    by_key: dict[tuple, list[dict]] = {}
    for m in moves.iter_rows(named=True):
        by_key.setdefault((m["arm"], str(m["question_id"]), int(m["sample_id"])), []).append(m)

    def cut(text: object) -> str:
        text = "" if text is None else str(text)
        return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS] + f"... ({len(text):,} characters)"

    out = []
    for r in rows.iter_rows(named=True):
        key = (r["arm"], str(r["question_id"]), int(r["sample_id"]))
        # the calls' moves, one per step (the user's turns, moves of their own, are the steps' `user`)
        segs = [m for m in by_key.get(key, []) if m["tool"] not in ("answer", USER_TURN)]
        steps = r.get("steps") or []
        calls = []
        for i, (st, values) in enumerate(zip(steps, value_sources(r.get("question"), steps))):
            st = st or {}
            seg = segs[i] if i < len(segs) else {}
            calls.append({"index": i + 1, "tool": cut(st.get("tool")),
                          "arguments": cut(st.get("arguments") or st.get("query")),
                          "values": [(cut(v), s) for v, s in values], "relation": seg.get("relation", ""),
                          "move": seg.get("move", ""), "sources": seg.get("sources", ""),
                          "failed": bool(seg.get("failed", False)), "after_error": bool(seg.get("after_error", False)),
                          "thought": cut(st.get("thought")), "observation": cut(st.get("observation"))})
        out.append({"strategy": int(r["strategy"]), "kind": r.get("kind", ""), "arm": r["arm"],
                    "question_id": str(r["question_id"]), "sample_id": int(r["sample_id"]),
                    "correct": bool(r.get("correct")), "question": cut(r.get("question")),
                    "answer": cut(r.get("answer")) if r.get("answer") is not None else None,
                    "gold": [cut(g) for g in (r.get("gold") or [])], "moves": r.get("moves", ""), "calls": calls})
    return out


def pick_members(runs: pl.DataFrame, labels: np.ndarray, moves: Sequence[str], typical_moves: dict[int, str],
                 strategy: int, *, n: int = 5, arm: str | None = None) -> pl.DataFrame:
    """:func:`choose_members` of ``strategy`` from a canonical table, its labels and move
    sequences: the chosen rows of ``runs`` plus ``strategy``, ``moves`` and ``kind``."""
    keep = np.asarray(labels) == strategy
    if arm is not None:
        keep &= runs["arm"].to_numpy() == arm
    idx = np.flatnonzero(keep)
    members = runs[idx].with_columns(pl.Series("moves", [moves[i] for i in idx], dtype=pl.String),
                                     pl.lit(int(strategy), dtype=pl.Int64).alias("strategy"))
    return choose_members(members, n, typical_moves.get(int(strategy)))


def with_calls(chosen: pl.DataFrame) -> pl.DataFrame:
    """``chosen`` members with a ``calls`` column (per call: tool, arguments, each value with
    its source, relation, move, sources, failed, after_error, thought, observation), from
    :func:`mechanism.segment` of those rows only."""
    if chosen.height == 0:
        return chosen.with_columns(pl.lit(None, dtype=pl.List(pl.Struct(_CALL_SCHEMA))).alias("calls"))
    shown = transcripts(chosen, segment(chosen))
    calls = [[{**c, "values": [{"value": v, "source": s} for v, s in c["values"]]} for c in t["calls"]] for t in shown]
    return chosen.with_columns(pl.Series("calls", calls, dtype=pl.List(pl.Struct(_CALL_SCHEMA))))


def member_examples(runs: pl.DataFrame, labels: np.ndarray, moves: Sequence[str], typical_moves: dict[int, str],
                    strategy: int, *, n: int = 5, arm: str | None = None) -> pl.DataFrame:
    """``n`` unmasked member transcripts of ``strategy``: :func:`pick_members` with
    :func:`with_calls`."""
    return with_calls(pick_members(runs, labels, moves, typical_moves, strategy, n=n, arm=arm))


_CALL_SCHEMA = {"index": pl.Int64, "tool": pl.String, "arguments": pl.String,
                "values": pl.List(pl.Struct({"value": pl.String, "source": pl.String})), "relation": pl.String,
                "move": pl.String, "sources": pl.String, "failed": pl.Boolean, "after_error": pl.Boolean,
                "thought": pl.String, "observation": pl.String}
