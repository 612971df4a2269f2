"""The report's tables: one display frame per result, rendered by Great Tables (polars'
``DataFrame.style``) as HTML for the page and as a booktabs LaTeX table for a paper, and by
:func:`mechanism.core.text.md_table` for ``summary.md``.

A :class:`ReportTable` holds text only (every number already formatted with its interval), so
the three renderings show the same cells. Cell text may come from the input (arm and strategy
names, tool names): Great Tables escapes it for HTML and LaTeX, and control and bidirectional
characters are first written out as visible escapes (:func:`mechanism.core.names.escape_control`),
the rule every other output follows.
"""
from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import polars as pl

from mechanism.analysis.passkt import TRUNCATED
from mechanism.core.names import escape_control
from mechanism.core.results import latex_escape
from mechanism.core.text import estimate_text, md_escape, md_table


@dataclass
class ReportTable:
    """A table of the report: ``key`` (its HTML id and LaTeX label, ``tab:<key>``), ``title``
    (the caption), ``frame`` (string cells), ``note`` (shown under it) and ``links``
    (column -> ``{cell text: in-page anchor or a relative path to a page of the report}``: cells
    that open a part of the page or a page beside it)."""

    key: str
    title: str
    frame: pl.DataFrame
    note: str = ""
    links: dict[str, dict[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.frame = self.frame.with_columns(pl.col(c).cast(pl.String).fill_null("").map_elements(
            escape_control, return_dtype=pl.String) for c in self.frame.columns)
        self.frame = self.frame.rename({c: escape_control(c) for c in self.frame.columns})

    def _gt(self, *, links: bool):
        from great_tables import GT  # noqa: PLC0415 - great_tables: about a second to import, only when a table is styled

        table = GT(self.frame, id=f"gt-{self.key}")
        if links:
            for column, anchors in self.links.items():
                # the cell's text is escaped here by hand: a formatter's output is taken as HTML
                table = table.fmt(lambda v, anchors=anchors: _link(str(v), anchors.get(str(v))), columns=column)
        if self.note:
            table = table.tab_source_note(self.note)
        return table

    def html(self) -> str:
        """The table as an HTML fragment (Great Tables), its caption as the first row."""
        return self._gt(links=True).tab_header(title=self.title).as_raw_html()

    def latex(self) -> str:
        r"""A booktabs ``table`` with ``\caption`` and ``\label{tab:<key>}`` (needs ``booktabs``)."""
        body = self._gt(links=False).as_latex()
        caption = rf"\caption{{{latex_escape(self.title)}}}" + "\n" + rf"\label{{tab:{self.key}}}"
        # Great Tables writes an unnumbered ``\caption*`` only with a header; a paper cites its tables
        body = re.sub(r"\\caption\*\{.*?\n\} *\n", "", body, flags=re.S)
        body = body.replace("\\fontsize{12.0pt}{14.4pt}\\selectfont\n", "")
        # a plain tabular: a paper sets its own width (tabular* stretched to \\linewidth overflows wide tables)
        body = re.sub(r"\\begin\{tabular\*\}\{\\linewidth\}\{@\{\\extracolsep\{\\fill\}\}([^}]*)\}",
                      lambda m: "\\begin{tabular}{" + m.group(1) + "}", body)
        body = body.replace("\\end{tabular*}", "\\end{tabular}")
        return body.replace("\\begin{table}[!t]\n", "\\begin{table}[!t]\n\\centering\n" + caption + "\n", 1)

    def markdown(self) -> str:
        """The table as a Markdown pipe table, caption above and note below."""
        return "\n".join([f"**{md_escape(self.title)}**", "", md_table(self.frame.columns, self.frame.iter_rows())]
                         + (["", f"*{md_escape(self.note)}*"] if self.note else []))


def _link(text: str, anchor: str | None) -> str:
    shown = html.escape(text)
    if not anchor:
        return shown
    # an in-page anchor, or a page of the report folder (``strategies/members/...html``)
    href = anchor if ".html" in anchor or anchor.endswith(".csv") else f"#{anchor}"
    return f'<a href="{html.escape(href, quote=True)}">{shown}</a>'


def renamed(names: Mapping[str, str] | None, arm: str) -> str:
    """An arm's display name (``arm_names``), else the arm itself."""
    return (names or {}).get(arm, arm)


def arm_table(rows: Sequence[dict], columns: Sequence[str]) -> pl.DataFrame:
    """A string frame from row dicts, in ``columns`` order."""
    return pl.DataFrame([{c: str(r.get(c, "")) for c in columns} for r in rows],
                        schema=dict.fromkeys(columns, pl.String))


# ---------------------------------------------------------------------------- the report's tables
def accuracy_table(acc: Mapping[str, dict], arms: Sequence[str], *, ci: float | None) -> ReportTable:
    """Accuracy per arm with its interval, trajectories and questions."""
    rows = [{"arm": a, "accuracy": estimate_text(acc[a]["accuracy"], acc[a]["ci_low"], acc[a]["ci_high"]),
             "trajectories": f"{acc[a]['n']:,}", "questions": f"{acc[a]['questions']:,}"} for a in arms]
    return ReportTable(key="accuracy", title="Accuracy per arm", frame=pl.DataFrame(rows),
                       note="questions weigh equally within an arm"
                            + (f"; {ci:.0%} bootstrap intervals over questions" if ci is not None else ""))


def passkt_table(curves: pl.DataFrame, *, arms: Sequence[str]) -> tuple[ReportTable, str]:
    """PASS@(k,T) at the smallest and largest k, one row per (k, T) and one column per arm (in
    ``arms`` order), with intervals; and a sentence saying how T was read."""
    ks = sorted(curves["k"].unique().to_list())
    shown_k = sorted({ks[0], ks[-1]}) if ks else []
    present = [a for a in arms if a in set(curves["arm"].cast(pl.String).to_list())]
    cell = {(str(r["arm"]), r["k"], r["t"]): r for r in curves.iter_rows(named=True)}
    rows = []
    for kv in shown_k:
        for tv in sorted(curves["t"].unique().to_list()):
            row = {"k": str(kv), "T": str(tv)}
            for a in present:
                r = cell.get((a, kv, tv))
                row[a] = estimate_text(r["pass_at_kt"], r.get("ci_low"), r.get("ci_high")) if r else "n/a"
            rows.append(row)
    source = curves["t_source"][0] if "t_source" in curves.columns and curves.height else "auto"
    note = f"T read by {source}"
    if source in TRUNCATED:
        note += (": an episode counts for T if it is correct within T rounds, which measures the rounds an episode "
                 "happened to use, not a budget")
    problems = _problems(curves, present)
    # the page states the truncation caveat once, in the section's text; the table keeps a pointer
    short = f"T read by {source}" + (" (rounds used, not a budget)" if source in TRUNCATED else "")
    return ReportTable(key="passkt", title="PASS@(k,T) per round budget T (arms as columns)",
                       frame=arm_table(rows, ["k", "T", *present]),
                       note=short + "; bootstrap intervals over problems" + problems), note


def _problems(frame: pl.DataFrame, arms: Sequence[str]) -> str:
    """``; problems: a 40, b 38`` from a frame's ``n_problems`` (the largest per arm)."""
    if "n_problems" not in frame.columns or frame.height == 0:
        return ""
    most = {str(r["arm"]): int(r["n_problems"]) for r in
            frame.group_by("arm").agg(pl.col("n_problems").max()).iter_rows(named=True)}
    return "; problems: " + ", ".join(f"{a} {most[a]:,}" for a in arms if a in most)


def pass_hat_table(hat: pl.DataFrame, *, t: int, arms: Sequence[str] | None = None) -> ReportTable:
    """pass^k (all k trials succeed) at round budget ``t``: one row per k, one column per arm."""
    present = list(dict.fromkeys(hat["arm"].cast(pl.String).to_list()))
    arms = [a for a in (arms or present) if a in present] + [a for a in present if a not in (arms or present)]
    cell = {(str(r["arm"]), r["k"]): r for r in hat.iter_rows(named=True)}
    rows = []
    for kv in sorted(hat["k"].unique().to_list()):
        row = {"k": str(kv)}
        for a in arms:
            r = cell.get((a, kv))
            row[a] = estimate_text(r["pass_at_kt"], r.get("ci_low"), r.get("ci_high")) if r else "n/a"
        rows.append(row)
    return ReportTable(key="pass-hat-k", title=f"pass^k: all k trials succeed (T = {t}; arms as columns)",
                       frame=arm_table(rows, ["k", *arms]),
                       note="C(c,k)/C(n,k) per problem, averaged; bootstrap intervals over problems; n/a: k above "
                            "an arm's samples per problem" + _problems(hat, arms))


def consistency_table(by_arm: pl.DataFrame) -> ReportTable:
    """Per arm: tasks solved in every trial, in none, in some, with intervals."""
    rows = [{"arm": r["arm"], "tasks": f"{r['n_tasks']:,}",
             "solved in every trial": estimate_text(r["share_all"], r["share_all_low"], r["share_all_high"]),
             "in some": estimate_text(r["share_some"], r["share_some_low"], r["share_some_high"]),
             "in none": estimate_text(r["share_none"], r["share_none_low"], r["share_none_high"])}
            for r in by_arm.iter_rows(named=True)]
    return ReportTable(key="consistency", title="Per-task consistency", frame=pl.DataFrame(rows),
                       note="share of tasks; bootstrap intervals over tasks")


def boundary_table(boundaries: Sequence) -> ReportTable:
    """Per comparison and T: problems gained and lost, the exact test and its verdict."""
    rows = []
    for b in boundaries:
        for r in b.tests.sort("t").iter_rows(named=True):
            exact = r.get("p_discordant")
            rows.append({"comparison": f"{b.treated} vs {b.base}", "T": str(r["t"]), "gained": str(r["gained"]),
                         "lost": str(r["lost"]), "exact p": f"{exact:.3g}" if exact is not None else "n/a",
                         "permutation p": _permutation_p(r), "verdict": str(r["verdict"])})
    return ReportTable(key="boundary", title="Capability boundary: problems gained and lost", frame=pl.DataFrame(rows),
                       note="problems solved at least once on a common per-problem budget; exact p: exact two-sided "
                            "binomial test on the gained and lost counts; permutation p: arm labels permuted within "
                            "each question (the verdict's test)")


def _permutation_p(r: Mapping) -> str:
    """A permutation p, written as a bound when no permutation reached the observed statistic."""
    p, n = r.get("p_value"), r.get("n_permutations")
    if p is None:
        return "n/a"
    if n and p <= 1.0 / (n + 1) + 1e-12:
        return f"< {1.0 / n:.2g} ({n:,} permutations)"
    return f"{p:.3g}"


def split_table(results: Sequence) -> ReportTable:
    """The accuracy change split into composition and within: one row per quantity (the two
    parts, their sum, the total, JS divergence, shared mass, permutation p), one column per
    comparison."""
    columns = {f"{rw.treated} vs {rw.base}": rw for rw in results}
    quantities = [
        ("composition (reweighting)", lambda rw: estimate_text(rw.composition, *rw.composition_ci, signed=True)),
        ("within-strategy execution", lambda rw: estimate_text(rw.within, *rw.within_ci, signed=True)),
        ("sum", lambda rw: estimate_text(rw.composition + rw.within, signed=True)),
        ("accuracy change (total)", lambda rw: estimate_text(rw.total, *rw.total_ci, signed=True)),
        ("JS divergence (bits)", lambda rw: estimate_text(rw.js_divergence, *rw.js_divergence_ci)),
        ("treated mass in base strategies", lambda rw: estimate_text(rw.shared_mass, *rw.shared_mass_ci)),
        ("permutation p", lambda rw: f"{rw.permutation_p:.4f}" if rw.n_permutations else "n/a"),
        ("questions", lambda rw: f"{rw.n_questions:,}"),
    ]
    rows = [{"quantity": q, **{c: f(rw) for c, rw in columns.items()}} for q, f in quantities]
    return ReportTable(key="split", title="Accuracy change = composition (reweighting) + within-strategy execution",
                       frame=arm_table(rows, ["quantity", *columns]),
                       note="Kitagawa's symmetric split on question x strategy strata (sum = total); bootstrap "
                            "intervals over questions")


def strategy_table(described: pl.DataFrame, shares: pl.DataFrame, arms: Sequence[str], *,
                   member_pages: Mapping[int, str] | None = None) -> ReportTable:
    """Every strategy: id (a link to its explorer entry), name, fidelity, size, share and
    success per arm with intervals, and (``member_pages``: strategy -> the relative path of
    its first member page) a link to all its members."""
    share = {(r["strategy"], r["arm"]): r for r in shares.iter_rows(named=True)}
    rows, anchors, pages = [], {}, {}
    for r in described.iter_rows(named=True):
        s = int(r["strategy"])
        label = "outliers" if s == -1 else f"S{s}"
        anchors[label] = f"strategy-{str(s).replace('-', 'm')}"
        row = {"strategy": label, "name": str(r.get("name") or ""),
               "fidelity": estimate_text(r.get("fidelity"), digits=2), "size": f"{int(r['size']):,}"}
        for a in arms:
            sh = share.get((s, a))
            row[f"share {a}"] = estimate_text(sh["share"], sh.get("ci_low"), sh.get("ci_high")) if sh else "0"
            row[f"success {a}"] = estimate_text(r.get(f"success_rate[{a}]"), r.get(f"ci_low[{a}]"),
                                                r.get(f"ci_high[{a}]"))
        if member_pages is not None:
            cell = f"all {int(r['size']):,} ({label})"
            row["members"] = cell
            if s in member_pages:
                pages[cell] = member_pages[s]
        rows.append(row)
    links = {"strategy": anchors, **({"members": pages} if pages else {})}
    return ReportTable(key="strategies", title="Strategies: fidelity, size, share and success per arm",
                       frame=pl.DataFrame(rows), links=links,
                       note="fidelity: share of members whose calls contain the name's core sequence; shares and "
                            "success weigh questions equally within an arm, bootstrap intervals over questions")


def _unmeasurable(res, arm: str) -> bool:
    """Whether no trajectory of ``arm`` has a gold answer text can find (retrieval unmeasurable)."""
    row = res.per_arm.filter(pl.col("arm") == arm)
    return row.height > 0 and int(row["n_not_retrievable"][0]) >= int(row["n"][0])


NO_GOLD = "n/a (no gold answer text to find)"


def integration_table(res) -> ReportTable:
    """Per arm: retrieval, integration and parametric rates with intervals; ``n/a`` with the
    reason where no trajectory has a gold answer that text can identify."""
    def rate(r: dict, name: str) -> str:  # a rate with its interval, or why text cannot measure it
        if name != "followup_from_observation" and _unmeasurable(res, r["arm"]):
            return NO_GOLD
        return estimate_text(r.get(name), r.get(f"{name}_ci_low"), r.get(f"{name}_ci_high"))

    rows = [{"arm": r["arm"], "trajectories": f"{r['n']:,}", "retrieval": rate(r, "retrieval_rate"),
             "integration P(correct | retrieved)": rate(r, "integration_rate"),
             "parametric P(correct | not retrieved)": rate(r, "parametric_rate"),
             "not retrievable (share)": estimate_text(r.get("not_retrievable_share"),
                                                      r.get("not_retrievable_share_ci_low"),
                                                      r.get("not_retrievable_share_ci_high")),
             "follow-ups from an observation": rate(r, "followup_from_observation")}
            for r in res.per_arm.iter_rows(named=True)]
    return ReportTable(key="integration", title="Retrieval and integration rates per arm", frame=pl.DataFrame(rows),
                       note="a gold answer counts as retrieved when it appears in an observation; not retrievable: "
                            "no gold answer, or one text cannot identify (yes/no, a number), a stratum of its own")


SPLIT_PARTS = (("retrieval", "retrieval"), ("integration", "integration"), ("parametric", "parametric"),
               ("not_retrievable", "not retrievable"))


def integration_split_table(res) -> ReportTable | None:
    """The accuracy difference split into retrieval, integration, parametric and the
    not-retrievable stratum: one row per part, a ``sum`` row (equal to the total) and the
    total, one column per comparison; parts that cannot be measured are ``n/a`` with the reason."""
    if res.split is None or res.split.height == 0:
        return None
    columns = {}
    for treated in dict.fromkeys(res.split["treated"].to_list()):
        sub = {r["part"]: r for r in res.split.filter(pl.col("treated") == treated).iter_rows(named=True)}
        columns[f"{treated} vs {res.base}"] = (treated, sub)
    rows = []
    for part, shown in SPLIT_PARTS:
        row = {"part": shown}
        for c, (treated, sub) in columns.items():
            r = sub.get(part)
            blind = part != "not_retrievable" and _unmeasurable(res, treated) and _unmeasurable(res, res.base)
            row[c] = (NO_GOLD if blind else estimate_text(r["estimate"], r["ci_low"], r["ci_high"], signed=True)
                      if r else "n/a (not computed)")
        rows.append(row)
    sums = {c: estimate_text(sum(sub[p]["estimate"] for p, _ in SPLIT_PARTS if p in sub), signed=True)
            for c, (_, sub) in columns.items()}
    rows.append({"part": "sum", **sums})
    rows.append({"part": "accuracy difference (total)", **{
        c: estimate_text(sub["total"]["estimate"], sub["total"]["ci_low"], sub["total"]["ci_high"], signed=True)
        for c, (_, sub) in columns.items()}})
    rows.append({"part": "questions", **{c: f"{sub['total']['n_questions']:,}" for c, (_, sub) in columns.items()}})
    return ReportTable(key="integration-split",
                       title="Accuracy difference = retrieval + integration + parametric + not retrievable",
                       frame=arm_table(rows, ["part", *columns]),
                       note="on the questions both arms answer; the parts add up to the total (sum row); not "
                            "retrievable: episodes whose gold text cannot identify, their own stratum")


def failure_table(moves: pl.DataFrame, arms: Sequence[str]) -> ReportTable:
    """Per arm and tool: calls, the share that failed, the share that retried a failure."""
    calls = moves.filter(pl.col("tool") != "answer")
    per = (calls.group_by("arm", "tool").agg(pl.len().alias("calls"), pl.col("failed").mean().alias("failed"),
                                             pl.col("after_error").mean().alias("retry"))
           .sort("arm", "calls", "tool", descending=[False, True, False]))
    order = {a: i for i, a in enumerate(arms)}
    rows = [{"arm": r["arm"], "tool": r["tool"], "calls": f"{r['calls']:,}", "failed": estimate_text(r["failed"]),
             "retries": estimate_text(r["retry"])}
            for r in sorted(per.iter_rows(named=True), key=lambda r: order.get(r["arm"], len(order)))]
    frame = pl.DataFrame(rows, schema=dict.fromkeys(("arm", "tool", "calls", "failed", "retries"), pl.String))
    return ReportTable(key="failures", title="Failures per tool", frame=frame,
                       note="failed: the observation reports an error; retries: calls made right after a failed call")
