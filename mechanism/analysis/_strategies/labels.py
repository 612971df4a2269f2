"""Short display labels of strategies (``S1 ask part › bridge``), from their typical moves or
their names: what figures, tables and the checkpoint series label strategies by. Built from
move names only, never from trajectory text."""
from __future__ import annotations

import polars as pl

_SHORT = {
    "first_lookup": "lookup", "bridge_lookup": "bridge", "parallel_lookup": "parallel",
    "new_lookup": "new", "reformulation": "reword", "repeat": "repeat", "verification": "verify",
    "answer_with_evidence": "", "answer_without_evidence": "", "no_answer": "no answer",
}

def strategy_label(strategy: int, typical_moves: str | None, typical_member: str | None = None, *,
                   max_moves: int = 4, name: str | None = None) -> str:
    """A short name from a strategy's typical move sequence, e.g. ``S1 ask part › bridge``;
    with ``name`` (``StrategySpace.describe()["name"]``: built from tools and moves, or the
    user's own from ``space.rename``), ``S<id> <name>``.

    The first lookup is named by its scope when the typical member shows it: ``ask whole``
    (the whole question), ``ask part`` (most or part of it), else ``lookup``.

    Examples
    --------
    >>> strategy_label(1, "first_lookup > bridge_lookup > answer_with_evidence",
    ...                "1. search first_lookup: part of question [Q] | 2. search bridge_lookup: "
    ...                "no question + [OBS] | answer")
    'S1 ask part › bridge'
    >>> strategy_label(0, "answer_without_evidence")
    'S0 no search'
    """
    if name:
        return f"S{strategy} {name}"
    moves = [_SHORT.get(m.strip(), m.strip()) for m in (typical_moves or "").split(">")]
    moves = [m for m in moves if m]
    first = (typical_member or "").split("|")[0]
    if moves == ["lookup"]:
        return f"S{strategy} search once"  # one lookup is one strategy, however worded
    if moves and moves[0] == "lookup" and "first_lookup:" in first:
        moves[0] = "ask whole" if "whole question" in first else (
            "ask part" if "of question" in first else "lookup")
    if not moves:
        return f"S{strategy} no search"
    collapsed: list[str] = []
    for m in moves:  # "repeat › repeat › repeat" reads as "repeat×3"
        if collapsed and collapsed[-1].split("×")[0] == m:
            base, _, n = collapsed[-1].partition("×")
            collapsed[-1] = f"{base}×{int(n or 1) + 1}"
        else:
            collapsed.append(m)
    if len(collapsed) > max_moves:
        collapsed = collapsed[:max_moves] + ["…"]
    return f"S{strategy} " + " › ".join(collapsed)


def display_names(described: pl.DataFrame) -> dict[int, str]:
    """Display name of every strategy id (``S<id>: <typical moves>``), from ``describe()``;
    figures label points by the part before the colon and spell the rest out in a key."""
    member = "typical_member" if "typical_member" in described.columns else None
    out = {}
    for r in described.iter_rows(named=True):
        label = strategy_label(int(r["strategy"]), r.get("typical_moves"), r.get(member) if member else None,
                               name=r.get("name"))
        head, _, rest = label.partition(" ")
        out[int(r["strategy"])] = f"{head}: {rest}" if rest else head
    return out
