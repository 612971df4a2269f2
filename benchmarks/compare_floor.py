"""Is a change to strategy discovery larger than the worlds' draw? Two floor records compared cell by cell.

``bench_strategies_floor.py --json`` records, per world and seed, the default's ARI against
the planted strategies. Each seed draws every world anew, and the draw alone moves a world's
ARI by up to 0.1 and the sum over thirty worlds by up to 0.25 (``benchmarks/RESULTS.md``): a
change measured at one set of seeds cannot be told from the draw by its sum alone. Run the
floor benchmark before and after a change (or typed and through one ``act`` tool: the same
episodes re-logged) on the same worlds and seeds, then:

``python benchmarks/compare_floor.py BEFORE.json AFTER.json [--key default] [--name PART]``

Each cell (world, seed) present in both records gives a paired difference (after - before);
the draw is shared by the two, so it cancels inside a cell. Per seed the differences are
summed over the worlds both records hold at every common seed; the seeds' sums are the
independent replicates, and their mean gets a Student t interval (:func:`paired_interval`). The
verdict reads ``gain`` or ``loss`` only where that interval excludes zero, else ``within the
draw``. One row per world (means over seeds, and at how many seeds after is lower), then the
sum. ``--key`` compares another per-seed figure of the records (``composition_error``, read as
its absolute value, or ``ceiling_ari``). ``--name`` writes the table as
``results/compare_floor.<name>.json`` for ``RESULTS.md``; without it nothing is written.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness

#: Level of the interval on the mean per-seed sum of differences.
LEVEL = 0.95


def cell_values(record: Mapping[str, Any], key: str = "default") -> dict[tuple[str, int], float]:
    """``(world, seed) -> value`` of ``key`` in a floor record's ``per_seed`` cells
    (``composition_error`` as its absolute value: its size is what issue 31 bounds).

    Examples
    --------
    >>> cell_values({"per_seed": [{"world": "a", "seed": 0, "default": 0.5}]})
    {('a', 0): 0.5}
    """
    if "per_seed" not in record:
        raise ValueError("not a floor record: no `per_seed` cells (bench_strategies_floor.py --json writes them)")
    out = {}
    for cell in record["per_seed"]:
        value = cell.get(key)
        if value is None:
            continue
        out[(str(cell["world"]), int(cell["seed"]))] = abs(float(value)) if key == "composition_error" else float(value)
    return out


def paired_interval(diffs: Sequence[float], level: float = LEVEL) -> tuple[float, float, float]:
    """Mean of ``diffs`` and its two-sided Student t interval at ``level`` (scipy's one-sample
    t test); NaN bounds under two values, and the mean as both bounds where every value is
    the same (two identical records).

    Examples
    --------
    >>> [round(x, 3) for x in paired_interval([1.0, 2.0, 3.0])]
    [2.0, -0.484, 4.484]
    """
    from scipy.stats import ttest_1samp

    n = len(diffs)
    if n == 0:
        return math.nan, math.nan, math.nan
    mean = sum(diffs) / n
    if n < 2:
        return mean, math.nan, math.nan
    if max(diffs) == min(diffs):
        return mean, mean, mean
    ci = ttest_1samp(diffs, 0.0).confidence_interval(level)
    return mean, float(ci.low), float(ci.high)


def verdict(low: float, high: float) -> str:
    """``gain`` / ``loss`` where the interval excludes zero, else ``within the draw``."""
    if low > 0:
        return "gain"
    if high < 0:
        return "loss"
    return "within the draw"


def compare(before: Mapping[str, Any], after: Mapping[str, Any], key: str = "default",
            level: float = LEVEL) -> list[dict[str, Any]]:
    """One row per world held by both records at every seed they share, then the sum over those
    worlds: the mean per-seed sum of differences (after - before), its interval and verdict.

    Worlds missing from either record at some shared seed are left out of every row (so the
    sum compares like with like) and named in the last row.
    """
    a, b = cell_values(before, key), cell_values(after, key)
    seeds = sorted({s for _, s in a} & {s for _, s in b})
    worlds_a = {w for w, _ in a}
    worlds = [w for w in dict.fromkeys(w for w, _ in a) if all((w, s) in a and (w, s) in b for s in seeds)]
    if not seeds or not worlds:
        raise ValueError(f"the records share no world at every common seed (seeds in both: {seeds})")
    rows = []
    for w in worlds:
        before_w = [a[(w, s)] for s in seeds]
        after_w = [b[(w, s)] for s in seeds]
        rows.append({"world": w, "before": round(sum(before_w) / len(seeds), 3),
                     "after": round(sum(after_w) / len(seeds), 3),
                     "after - before": round((sum(after_w) - sum(before_w)) / len(seeds), 3),
                     "seeds lower": f"{sum(y < x for x, y in zip(before_w, after_w))} of {len(seeds)}",
                     f"{level:.0%} interval": "", "per-seed sums": "", "verdict": ""})
    sums = [sum(b[(w, s)] - a[(w, s)] for w in worlds) for s in seeds]
    mean, low, high = paired_interval(sums, level)
    left = sorted((worlds_a | {w for w, _ in b}) - set(worlds))
    rows.append({"world": f"sum over {len(worlds)} worlds" + (f" (left out: {', '.join(left)})" if left else ""),
                 # sums as text: the table's four significant digits would cut 23.985 to 23.98
                 "before": f"{sum(a[(w, s)] for w in worlds for s in seeds) / len(seeds):.3f}",
                 "after": f"{sum(b[(w, s)] for w in worlds for s in seeds) / len(seeds):.3f}",
                 "after - before": round(mean, 3),
                 "seeds lower": f"{sum(x < 0 for x in sums)} of {len(seeds)}",
                 f"{level:.0%} interval": f"[{low:+.3f}, {high:+.3f}]",
                 "per-seed sums": " ".join(f"{x:+.3f}" for x in sums),
                 "verdict": verdict(low, high)})
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before", type=Path, help="floor record before the change")
    ap.add_argument("after", type=Path, help="floor record after the change")
    ap.add_argument("--key", default="default", choices=("default", "composition_error", "ceiling_ari"),
                    help="which per-seed figure to compare")
    ap.add_argument("--name", default=None, help="write the table as results/compare_floor.<name>.json")
    args = ap.parse_args(argv)
    before, after = (json.loads(p.read_text(encoding="utf-8")) for p in (args.before, args.after))
    rows = compare(before, after, args.key)
    title = f"{args.key}: {args.after.name} against {args.before.name}, paired by world and seed"
    notes = (f"Per seed, the differences (after - before) summed over the worlds; the mean of those sums with a "
             f"Student t {LEVEL:.0%} interval over seeds. 'gain' / 'loss' only where it excludes zero.")
    if args.name:
        harness.report(__file__, rows, title=title, notes=notes, part=args.name,
                       params={"before": str(args.before), "after": str(args.after), "key": args.key})
    else:
        print(f"## {title}\n\n{harness.markdown_table(rows)}\n\n{notes}")


if __name__ == "__main__":
    main()
