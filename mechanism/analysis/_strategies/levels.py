"""Strategies on two levels: families (a core sequence of steps) and their variants.

The fitted strategies are the variants. A family is a core strategy and the strategies that
insert one step into its typical sequence (an optional look before acting, a check before
answering, a one-step-longer form), read from ``describe()`` alone, so a saved space has the
same families as the one that was fitted:

- strategies are visited shortest typical sequence first (then most trajectories, then id);
- one whose sequence equals a core's or inserts one step into it joins that core's family (the
  core with the most trajectories when several qualify); any other becomes a core;
- a variant never takes variants of its own (no chains: a family is its core plus one step);
- a strategy without tool calls takes no variants and joins none: a call where there was none is
  another plan, not an optional step;
- outliers (-1) stay -1.

Families are numbered by trajectories, largest first, and named after their core. Nothing
here uses arms or outcomes: the variant level keeps every split the fit made, and the family
level joins them only by what their sequences share (``families="merge"`` at fit, by
contrast, joins one-step-apart strategies unless the arms take the step at different rates).
Which level the toolkit shows by default is decided on the planted worlds
(``benchmarks/bench_strategies_floor.py``'s family column): the variants.
"""
from __future__ import annotations

from typing import get_args

import numpy as np
import polars as pl

from mechanism.analysis._strategies.families import one_step_apart
from mechanism.analysis.strategy_params import Level
from mechanism.core.errors import MechanismError

LEVELS: tuple[str, ...] = get_args(Level)


def check_level(level: str) -> Level:
    """``level`` itself, or a one-line error naming the levels there are."""
    if level not in LEVELS:
        raise MechanismError(f"level must be one of {', '.join(map(repr, LEVELS))}, got {level!r}")
    return level  # type: ignore[return-value]


def _sequence(typical_moves: str | None) -> tuple[str, ...]:
    return tuple(s.strip() for s in (typical_moves or "").split(">") if s.strip())


def family_table(described: pl.DataFrame) -> pl.DataFrame:
    """Each strategy's family: ``strategy, name, family, core, added_step`` (``added_step``: the
    step a variant inserts into its core's sequence; null for a core or an equal sequence).

    Parameters
    ----------
    described : polars.DataFrame
        :meth:`~mechanism.analysis.strategy_space.StrategySpace.describe`'s table (``strategy``,
        ``name``, ``size``, ``typical_moves``, ``typical_tools``).

    Returns
    -------
    polars.DataFrame
        One row per strategy, in ``described``'s order.

    Examples
    --------
    >>> t = pl.DataFrame({"strategy": [0, 1, 2, 3], "name": ["a", "b", "c", "d"], "size": [50, 30, 20, 9],
    ...                   "typical_moves": ["search > answer", "search > check > answer", "answer",
    ...                                     "search > check > check > answer"],
    ...                   "typical_tools": ["search", "search > search", "", "search > search > search"]})
    >>> family_table(t).select("strategy", "family", "core", "added_step").rows()
    [(0, 0, 0, None), (1, 0, 0, 'check'), (2, 1, 2, None), (3, 2, 3, None)]
    """
    ids = described["strategy"].to_list()
    seqs = {s: _sequence(m) for s, m in zip(ids, described["typical_moves"].to_list())}
    calls = {s: bool((t or "").strip()) for s, t in zip(ids, described["typical_tools"].to_list())}
    size = dict(zip(ids, described["size"].to_list()))
    core_of: dict[int, int] = {}
    step_of: dict[int, str | None] = {}
    cores: list[int] = []
    for s in sorted((s for s in ids if s != -1), key=lambda s: (len(seqs[s]), -size[s], s)):
        fits = [c for c in cores if calls[s] and calls[c]
                and (seqs[c] == seqs[s] or one_step_apart(seqs[c], seqs[s]) is not None)
                and len(seqs[s]) >= len(seqs[c])]
        if fits:
            core = min(fits, key=lambda c: (-size[c], c))
            core_of[s], step_of[s] = core, one_step_apart(seqs[core], seqs[s])
        else:
            cores.append(s)
            core_of[s], step_of[s] = s, None
    mass = {c: sum(size[s] for s in core_of if core_of[s] == c) for c in cores}
    number = {c: i for i, c in enumerate(sorted(cores, key=lambda c: (-mass[c], c)))} | {-1: -1}
    core_of[-1], step_of[-1] = -1, None
    return pl.DataFrame({
        "strategy": ids, "name": described["name"].to_list(),
        "family": [number[core_of[s]] for s in ids], "core": [core_of[s] for s in ids],
        "added_step": [step_of[s] for s in ids],
    }, schema={"strategy": pl.Int64, "name": pl.String, "family": pl.Int64, "core": pl.Int64,
               "added_step": pl.String})


def at_level(labels: np.ndarray, described: pl.DataFrame, level: Level) -> np.ndarray:
    """``labels`` (strategy ids, -1 outliers) as they are at ``level="variant"``, or each one's
    family at ``level="family"`` (-1 stays -1)."""
    if check_level(level) == "variant":
        return np.asarray(labels)
    table = family_table(described)
    lookup = dict(zip(table["strategy"].to_list(), table["family"].to_list()))
    labels = np.asarray(labels)
    return np.fromiter((lookup.get(int(x), -1) for x in labels), dtype=np.int64, count=labels.size)


def describe_families(described: pl.DataFrame) -> pl.DataFrame:
    """One row per family: ``family, name`` (its core's, then the steps its variants add: ``search
    (x1) [+ bridge_lookup | reformulation]``; ``alike``: a variant of the same typical sequence),
    ``strategies`` (its variants' ids, core first), ``variants`` (their names, each variant's added
    step in brackets), ``typical_moves`` and ``typical_tools`` (its core's), and ``size``, ``share``
    and ``n[<arm>]`` per arm, sums over its strategies (-1, outliers, first when present).

    Per-family success and its interval are not sums of the variants' (they weigh questions
    equally): compare arms at this level with the family labels
    (:meth:`~mechanism.analysis.strategy_space.StrategySpace.transform` with ``level="family"``)."""
    table = family_table(described).join(described.select("strategy", "typical_moves", "typical_tools"),
                                         on="strategy", how="left", maintain_order="left")
    arms = [c for c in described.columns if c.startswith("n[")]
    counts = described.select("strategy", "size", "share", *arms)
    rows = []
    for fam in sorted(set(table["family"].to_list())):
        members = table.filter(pl.col("family") == fam).sort(pl.col("strategy") != pl.col("core"), "strategy")
        core = members.row(0, named=True)
        sums = counts.filter(pl.col("strategy").is_in(members["strategy"].implode())).drop("strategy").sum()
        added = [step or "alike" for s, step in members.select("strategy", "added_step").rows()
                 if s != core["strategy"]]
        name = f"{core['name']} [+ {' | '.join(dict.fromkeys(added))}]" if added else core["name"]
        rows.append({"family": fam, "name": name, "strategies": members["strategy"].to_list(),
                     "variants": [n if step is None or s == core["strategy"] else f"{n} [+ {step}]"
                                  for s, n, step in members.select("strategy", "name", "added_step").rows()],
                     "typical_moves": core["typical_moves"], "typical_tools": core["typical_tools"],
                     **sums.row(0, named=True)})
    schema = {"family": pl.Int64, "name": pl.String, "strategies": pl.List(pl.Int64),
              "variants": pl.List(pl.String), "typical_moves": pl.String, "typical_tools": pl.String,
              "size": pl.Int64, "share": pl.Float64} | dict.fromkeys(arms, pl.Int64)
    return pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)
