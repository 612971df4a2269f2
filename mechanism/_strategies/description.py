"""Readable descriptions of strategies: a name from tools and moves, the typical sequence,
an unmasked example, success per arm with intervals (questions weighted equally within an
arm, percentile bootstrap over questions)."""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

import numpy as np
import polars as pl

from mechanism.resample import (percentile_interval, question_bootstrap_weights, question_weighted, resolve_seed,
                                stream)

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


# what a relation adds to a tool's name when it is not the tool's first, plain use
_NOTE = {"repeat": "again", "return": "again", "revise": "revised", "switch": None, "new": "another",
         "first": None}
_SEARCH_NOTE = {"bridge_lookup": "bridge", "verification": "check", "reformulation": "reworded",
                "parallel_lookup": "parallel", "new_lookup": "new", "repeat": "repeat"}


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
    parts = []
    for move, tool in zip(moves, tools):
        note = _SEARCH_NOTE.get(move) if move in _SEARCH_NOTE else _NOTE.get(move)
        failed = tool.endswith("!")
        label = tool.rstrip("!") + (" (failed)" if failed else "")
        if note:
            label = label[:-1] + f", {note})" if failed else label + f" ({note})"
        parts.append(label)
    return " -> ".join(_collapse(parts))


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
    entropy) is turned into one integer once (:func:`mechanism.resample.resolve_seed`); every
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
