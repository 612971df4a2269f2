"""The reference study reproduced on a planted world: its table, each estimate beside the
value the world planted, and one line per finding saying whether the toolkit recovered it.

The study's verdicts are per task type, so every number is computed on the runs of one
category at a time by the toolkit's own analyses (:func:`mechanism.analysis.passkt.pass_at_kt`,
:func:`mechanism.analysis.boundaries.boundary`, :func:`mechanism.analysis.compare.reweighting`); ``"all"`` pools
the categories. The planted values come from :attr:`mechanism.datasets.simulation.Simulation.planted`
(closed forms, no sampling), so a finding is "recovered" when the estimate says what the world
planted: the sign and significance the finding names, and, for the composition / within
split, an interval that contains the planted value.
"""
from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import polars as pl

from mechanism.analysis.boundaries import boundary
from mechanism.analysis.compare import reweighting
from mechanism.analysis.passkt import pass_at_kt
from mechanism.core.options import RandomState
from mechanism.core.resample import resolve_seed
from mechanism.core.results import Result, frame_to_html, frame_to_markdown
from mechanism.core.text import md_escape

COMPOSITIONAL = "bridge"
SIMPLER = "comparison"
#: The study's names of the quantities that are not PASS@(k,T), and their names in ``to_frame()``
#: (:func:`mechanism.reweighting`'s where it computes the same thing).
_QUANTITY = {"boundary p (permutation)": "p_value", "boundary p (exact, discordant)": "p_discordant",
             "unique query sequences / problem": "unique_query_sequences",
             "overlap with base": "query_overlap_with_base"}
#: Quantities of one arm (the others compare a treated arm with the base).
_PER_ARM = frozenset({"unique query sequences / problem"})


@dataclass(repr=False)
class Reproduction(Result):
    """The study's table on a planted world, with the planted values and the findings.

    Attributes
    ----------
    table
        One row per estimate: ``quantity, arm, category, estimate, ci_low, ci_high, planted``.
    findings
        One row per finding: ``finding``, ``recovered`` (bool), ``evidence`` (the numbers).
    """

    table: pl.DataFrame
    findings: pl.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)

    key_columns: ClassVar[dict[str, pl.DataType]] = {
        "base": pl.String(), "treated": pl.String(), "arm": pl.String(), "category": pl.String(),
        "k": pl.Int64(), "t": pl.Int64()}
    extra_columns: ClassVar[dict[str, pl.DataType]] = {"planted": pl.Float64()}

    def _estimates(self) -> pl.DataFrame:
        """The study's table with the planted value beside each estimate, in the shared schema:
        a comparison of a treated arm with the base has ``base``/``treated`` (``arm`` null), a
        per-arm estimate ``arm``; PASS@(k,T) is quantity ``pass_at_kt`` with ``k`` and ``t``."""
        pass_kt = pl.col("quantity").str.extract_groups(r"^PASS@\((?P<k>\d+),(?P<t>\d+)\)$")
        per_arm = pl.col("quantity").str.starts_with("PASS@") | pl.col("quantity").is_in(list(_PER_ARM))
        return (self.table.with_columns(pass_kt.alias("_kt"))
                .with_columns(base=pl.when(per_arm).then(None).otherwise(pl.lit(self.meta.get("base"))),
                              treated=pl.when(per_arm).then(None).otherwise(pl.col("arm")),
                              arm=pl.when(per_arm).then(pl.col("arm")),
                              k=pl.col("_kt").struct.field("k").cast(pl.Int64),
                              t=pl.col("_kt").struct.field("t").cast(pl.Int64),
                              quantity=pl.when(pl.col("_kt").struct.field("k").is_not_null())
                              .then(pl.lit("pass_at_kt")).otherwise(pl.col("quantity").replace(_QUANTITY)))
                .drop("_kt"))

    def verdict(self) -> str:
        """One line: how many of the study's findings the planted world recovered."""
        return self._headline()

    def tables(self) -> dict[str, pl.DataFrame]:
        """``estimates`` (:meth:`to_frame`), ``table`` (the study's table as read, quantities
        named as the study names them) and ``findings``."""
        return {"estimates": self.to_frame(), "table": self.table, "findings": self.findings}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the table's rows, the findings and the settings."""
        return {"table": self.table.to_dicts(), "findings": self.findings.to_dicts(), **self.meta}

    def _summary_title(self) -> str:
        return "The reference study, reproduced on the planted world"

    def _summary_lines(self) -> list[str]:
        return self.lines()

    def _summary_tables(self) -> dict[str, pl.DataFrame]:
        return {"estimates": self.display()}

    def _headline(self) -> str:
        n = self.findings.height
        return f"{int(self.findings['recovered'].sum())} of {n} findings recovered"

    def lines(self) -> list[str]:
        """One sentence per finding: recovered or not, with its numbers."""
        return [f"{'recovered' if r['recovered'] else 'NOT recovered'}: {r['finding']} ({r['evidence']})"
                for r in self.findings.iter_rows(named=True)]

    def display(self) -> pl.DataFrame:
        """The table as read: estimate with its interval, and the planted value, as text."""
        def fmt(v: float | None, d: int = 3) -> str:
            return "" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{v:.{d}f}"

        rows = []
        for r in self.table.iter_rows(named=True):
            d = 0 if r["quantity"] in ("gained", "lost") else (1 if r["quantity"].startswith("unique") else 3)
            est = fmt(r["estimate"], d)
            if r["ci_low"] is not None and not np.isnan(r["ci_low"]):
                est += f" [{fmt(r['ci_low'], d)}, {fmt(r['ci_high'], d)}]"
            planted = fmt(r["planted"], 1 if r["quantity"] in ("gained", "lost") else d)
            rows.append({"quantity": r["quantity"], "arm": r["arm"], "category": r["category"],
                         "estimate [95% CI]": est, "planted": planted})
        return pl.DataFrame(rows, schema={"quantity": pl.String, "arm": pl.String, "category": pl.String,
                                          "estimate [95% CI]": pl.String, "planted": pl.String})

    def as_markdown(self) -> str:
        """The findings as a list, then the table (Markdown)."""
        # arm names come from the input: markup characters are escaped as the Summary does
        items = ["- " + md_escape(line) for line in self.lines()]
        return "\n".join(items + ["", frame_to_markdown(self.display(), max_rows=None)])

    def as_html(self) -> str:
        """The findings as a list, then the table (HTML, every string escaped)."""
        items = "".join(f"<li>{html.escape(line)}</li>" for line in self.lines())
        return f"<ul class='findings'>{items}</ul>" + frame_to_html(self.display(), max_rows=None)


def _row(quantity: str, arm: str, category: str, estimate: float, lo: float | None = None,
         hi: float | None = None, planted: float | None = None) -> dict[str, Any]:
    return {"quantity": quantity, "arm": arm, "category": category, "estimate": float(estimate),
            "ci_low": None if lo is None else float(lo), "ci_high": None if hi is None else float(hi),
            "planted": None if planted is None else float(planted)}


def reproduce_study(runs: pl.DataFrame, planted: Mapping[str, Any], labels: np.ndarray, *, base: str = "base",
                    treated: Sequence[str] = ("rl", "sft"), rl: str = "rl", sft: str = "sft",
                    ks: Sequence[int] = (1, 64), t_max: int | None = None, n_boot: int = 1000,
                    random_state: RandomState = 0) -> Reproduction:
    """Compute the study's table on ``runs`` and check each finding against ``planted``.

    Parameters
    ----------
    runs
        Canonical trajectory table with a ``category`` column.
    planted
        The planted expected values (:attr:`mechanism.datasets.simulation.Simulation.planted`).
    labels
        One strategy id per row of ``runs`` (the fitted space's; -1 = outlier).
    base, treated
        The base arm and the arms compared with it.
    rl, sft
        Which treated arms the findings name (the RL arm and the SFT arm).
    ks
        The k of the table's PASS@(k, T) columns (the study's 1 and 64).
    t_max
        The round budget of the table (default: the planted ``t_cap``).
    n_boot, random_state
        Bootstrap replicates and seed of every interval (int, numpy Generator or None: turned
        into one integer once, so every finding's intervals draw the same question resamples).

    Returns
    -------
    Reproduction
    """
    random_state = resolve_seed(random_state)
    t_max = int(planted["t_cap"] if t_max is None else t_max)
    ks = [k for k in ks if k <= int(planted["n_samples"])]
    cats = [c for c in (COMPOSITIONAL, SIMPLER) if c in set(runs["category"].drop_nulls().to_list())]
    opts = {"n_boot": n_boot, "random_state": random_state}
    rows, tests = _category_rows(runs, planted, base=base, treated=treated, cats=cats, ks=ks, t_max=t_max, **opts)
    split_rows, splits = _reweighting_rows(runs, planted, np.asarray(labels), base=base, treated=treated, **opts)
    table = pl.DataFrame(rows + split_rows, schema=_TABLE_SCHEMA)
    findings = _findings(table, tests, splits, planted, base=base, treated=treated, rl=rl, sft=sft, cats=cats,
                         ks=ks, t_max=t_max)
    frame = pl.DataFrame({"finding": [f[0] for f in findings], "recovered": [bool(f[1]) for f in findings],
                          "evidence": [f[2] for f in findings]},
                         schema={"finding": pl.String, "recovered": pl.Boolean, "evidence": pl.String})
    return Reproduction(table, frame, {"base": base, "treated": list(treated), "t_max": t_max, "ks": ks,
                                       "categories": cats})


_TABLE_SCHEMA = {"quantity": pl.String, "arm": pl.String, "category": pl.String, "estimate": pl.Float64,
                 "ci_low": pl.Float64, "ci_high": pl.Float64, "planted": pl.Float64}


def _category_rows(runs: pl.DataFrame, planted: Mapping[str, Any], *, base: str, treated: Sequence[str],
                   cats: list[str], ks: list[int], t_max: int, n_boot: int,
                   random_state: int) -> tuple[list[dict[str, Any]], dict[tuple[str, str], dict[str, Any]]]:
    """Per category and pooled: PASS@(k,T) per arm, and each treated arm's boundary test against
    ``base``; the rows of the table and each (arm, category)'s test row."""
    arms = [base, *treated]
    want = {(r["arm"], r["category"], r["k"], r["t"]): r["pass_at_kt"] for r in planted["pass_at_kt"]}
    rows: list[dict[str, Any]] = []
    tests: dict[tuple[str, str], dict[str, Any]] = {}
    for cat in [*cats, "all"]:
        mask = np.ones(runs.height, bool) if cat == "all" else (runs["category"] == cat).to_numpy()
        sub = runs.filter(pl.Series(mask))
        est = pass_at_kt(sub, k=ks, t=[t_max], ci=0.95, n_boot=n_boot, random_state=random_state)
        for r in est.filter(pl.col("arm").is_in(arms)).iter_rows(named=True):
            rows.append(_row(f"PASS@({r['k']},{t_max})", r["arm"], cat, r["pass_at_kt"], r["ci_low"], r["ci_high"],
                             want.get((r["arm"], cat, r["k"], t_max))))
        for arm in treated:
            b = boundary(sub, base=base, treated=arm, t=[t_max], k=ks, n_boot=n_boot, random_state=random_state)
            row = b.tests.row(0, named=True)
            exp = planted["boundary"].get(arm, {}).get(cat, {})
            tests[arm, cat] = row
            rows.append(_row("gained", arm, cat, row["gained"], planted=exp.get("gained")))
            rows.append(_row("lost", arm, cat, row["lost"], planted=exp.get("lost")))
            rows.append(_row("boundary p (permutation)", arm, cat, row["p_value"]))
            rows.append(_row("boundary p (exact, discordant)", arm, cat, row["p_discordant"]))
    return rows, tests


def _reweighting_rows(runs: pl.DataFrame, planted: Mapping[str, Any], labels: np.ndarray, *, base: str,
                      treated: Sequence[str], n_boot: int,
                      random_state: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Pooled over categories, per treated arm against ``base``: query diversity and overlap, and
    the composition / within split; the rows of the table and each arm's reweighting."""
    rows: list[dict[str, Any]] = []
    splits: dict[str, Any] = {}
    for arm in treated:
        rw = reweighting(runs, labels, base=base, treated=arm, n_boot=n_boot, random_state=random_state)
        q = rw.query_sequences
        for r in q.iter_rows(named=True):
            if r["arm"] == base and arm != treated[0]:
                continue
            rows.append(_row("unique query sequences / problem", r["arm"], "all", r["unique_at_common_n"],
                             r["unique_at_common_n_ci_low"], r["unique_at_common_n_ci_high"]))
        tr = q.filter(pl.col("arm") == arm).row(0, named=True)
        rows.append(_row("overlap with base", arm, "all", tr["overlap_with_base"], tr["overlap_with_base_ci_low"],
                         tr["overlap_with_base_ci_high"]))
        want_split = planted["split"].get(arm, {}).get("all", {})
        for part in ("total", "composition", "within"):
            lo, hi = getattr(rw, f"{part}_ci")
            rows.append(_row(part, arm, "all", getattr(rw, part), lo, hi, want_split.get(part)))
        splits[arm] = rw
    return rows, splits


def _findings(table: pl.DataFrame, tests: dict[tuple[str, str], dict[str, Any]], splits: dict[str, Any],
              planted: Mapping[str, Any], *, base: str, treated: Sequence[str], rl: str, sft: str, cats: list[str],
              ks: list[int], t_max: int) -> list[tuple[str, bool, str]]:
    """One (finding, recovered, evidence) per finding of the study the runs can speak to."""
    def get(quantity: str, arm: str, cat: str = "all", col: str = "estimate") -> float:
        hit = table.filter((pl.col("quantity") == quantity) & (pl.col("arm") == arm) & (pl.col("category") == cat))
        return float(hit[col][0]) if hit.height else float("nan")

    k_hi, k_lo = max(ks), min(ks)
    hi, lo = f"PASS@({k_hi},{t_max})", f"PASS@({k_lo},{t_max})"
    findings = []
    if COMPOSITIONAL in cats and (rl, COMPOSITIONAL) in tests:
        t = tests[rl, COMPOSITIONAL]
        rl_hi, base_hi = get(hi, rl, COMPOSITIONAL), get(hi, base, COMPOSITIONAL)
        ok = rl_hi > base_hi and t["gained"] > t["lost"] and t["p_value"] < 0.05
        findings.append((f"on {COMPOSITIONAL} questions {rl}'s PASS@({k_hi},{t_max}) is above {base}'s and its "
                         "boundary gains significantly more problems than it loses", ok,
                         f"{rl_hi:.3f} vs {base_hi:.3f}; gained {t['gained']}, "
                         f"lost {t['lost']}, p = {t['p_value']:.2g}"))
    if SIMPLER in cats and (rl, SIMPLER) in tests:
        t = tests[rl, SIMPLER]
        # a gain at k=1: rl's interval lies above base's estimate; converged: no significant boundary change
        ok = get(lo, rl, SIMPLER, "ci_low") > get(lo, base, SIMPLER) and not t["p_value"] < 0.05
        findings.append((f"on {SIMPLER} questions {rl} gains at k={k_lo} and the curves converge (no significant "
                         "boundary gain)", ok,
                         f"PASS@({k_lo},{t_max}) {get(lo, rl, SIMPLER):.3f} vs {get(lo, base, SIMPLER):.3f}; "
                         f"PASS@({k_hi},{t_max}) {get(hi, rl, SIMPLER):.3f} vs {get(hi, base, SIMPLER):.3f}; "
                         f"gained {t['gained']}, lost {t['lost']}, p = {t['p_value']:.2g}"))
    if COMPOSITIONAL in cats and sft in treated:
        ok = get(hi, sft, COMPOSITIONAL) < get(hi, base, COMPOSITIONAL)
        t = tests[sft, COMPOSITIONAL]
        findings.append((f"{sft} falls below {base} at k={k_hi} on {COMPOSITIONAL} questions", ok,
                         f"{get(hi, sft, COMPOSITIONAL):.3f} vs {get(hi, base, COMPOSITIONAL):.3f}; lost {t['lost']}, "
                         f"gained {t['gained']}"))
    if rl in treated and sft in treated:
        u = {a: get("unique query sequences / problem", a) for a in (base, rl, sft)}
        ok = u[rl] >= u[base] - _half_width(table, base) and u[sft] < 0.5 * u[base]
        findings.append((f"unique query sequences per problem: {rl} >= {base} >> {sft}", ok,
                         ", ".join(f"{a} {v:.1f}" for a, v in u.items())))
        o = {a: get("overlap with base", a) for a in (rl, sft)}
        ok = o[rl] > 2 * o[sft] and o[rl] >= 0.4
        findings.append((f"query overlap with {base}: high for {rl}, low for {sft}", ok,
                         ", ".join(f"{a} {v:.0%}" for a, v in o.items())))
    if rl in splits:
        rw = splits[rl]
        want_split = planted["split"].get(rl, {}).get("all", {})
        w_lo, w_hi = rw.within_ci
        c_lo, c_hi = rw.composition_ci
        pw, pc = want_split.get("within", np.nan), want_split.get("composition", np.nan)
        ok = w_lo <= pw <= w_hi and c_lo > 0
        findings.append((f"{rl}'s gain is reweighting: composition > 0 and the within-strategy part's interval "
                         f"contains the planted {pw:+.3f}", ok,
                         f"composition {rw.composition:+.3f} [{c_lo:+.3f}, {c_hi:+.3f}] (planted {pc:+.3f}), within "
                         f"{rw.within:+.3f} [{w_lo:+.3f}, {w_hi:+.3f}]"))
    return findings


def _half_width(table: pl.DataFrame, arm: str) -> float:
    hit = table.filter((pl.col("quantity") == "unique query sequences / problem") & (pl.col("arm") == arm))
    if not hit.height or hit["ci_low"][0] is None:
        return 0.0
    return float(hit["ci_high"][0] - hit["ci_low"][0]) / 2
