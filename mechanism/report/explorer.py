"""The strategy explorer: every strategy with its name, fidelity, size, share and success per
arm (with intervals), failure and retry rates, and member transcripts a reader checks the
name against (typical and atypical, :meth:`StrategySpace.examples`' choice), filterable by arm
and outcome without any script (radio buttons and CSS: the page's policy forbids scripts).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from mechanism.report.page import PageSection, render
from mechanism.report.tables import ReportTable, estimate, md_inline


def call_rates(moves: pl.DataFrame, labels: pl.DataFrame) -> pl.DataFrame:
    """Per strategy and arm: calls, the share that failed and the share that retried a failed
    call (``strategy, arm, calls, failure_rate, retry_rate``); ``moves`` is
    :func:`mechanism.segment` of the runs, ``labels`` has ``arm, question_id, sample_id, strategy``."""
    calls = moves.filter(pl.col("tool") != "answer").join(labels, on=["arm", "question_id", "sample_id"], how="inner")
    return (calls.group_by("strategy", "arm").agg(pl.len().alias("calls"),
                                                  pl.col("failed").mean().alias("failure_rate"),
                                                  pl.col("after_error").mean().alias("retry_rate"))
            .sort("strategy", "arm"))


def strategy_label(strategy: int) -> str:
    return "outliers" if strategy == -1 else f"S{strategy}"


def explorer_section(runs: pl.DataFrame, labels: np.ndarray, moves_of_rows: Sequence[str], described: pl.DataFrame,
                     shares: pl.DataFrame, moves: pl.DataFrame, *, arms: Sequence[str], n: int = 5) -> tuple[PageSection, str]:
    """The explorer as a page section and the CSS of its arm filters.

    ``labels`` and ``moves_of_rows`` give each row of ``runs`` its strategy and move
    sequence; ``shares`` is :func:`mechanism.shares.strategy_shares`' table; ``moves`` is
    :func:`mechanism.segment` of ``runs``.
    """
    from mechanism.strategy_space import member_examples

    arms = list(arms)
    arm_index = {a: i for i, a in enumerate(arms)}
    typical = dict(zip(described["strategy"].to_list(), described["typical_moves"].to_list()))
    ids = runs.select("arm", "question_id", "sample_id").with_columns(pl.Series("strategy", labels, dtype=pl.Int64))
    rates = {(r["strategy"], r["arm"]): r for r in call_rates(moves, ids).iter_rows(named=True)}
    share = {(r["strategy"], r["arm"]): r for r in shares.iter_rows(named=True)}
    blocks, md = [], []
    for row in described.iter_rows(named=True):
        s = int(row["strategy"])
        table_rows = []
        for a in arms:
            sh, rt = share.get((s, a), {}), rates.get((s, a), {})
            table_rows.append({
                "arm": a, "trajectories": f"{int(row.get(f'n[{a}]') or 0):,}",
                "share": estimate(sh.get("share"), sh.get("ci_low"), sh.get("ci_high")) if sh else "0",
                "success": estimate(row.get(f"success_rate[{a}]"), row.get(f"ci_low[{a}]"), row.get(f"ci_high[{a}]")),
                "failed calls": estimate(rt.get("failure_rate")) if rt else "no calls",
                "retries": estimate(rt.get("retry_rate")) if rt else "no calls"})
        table = ReportTable(key=f"strategy-{s}-arms".replace("--", "-m"), title=f"{strategy_label(s)} per arm",
                            frame=pl.DataFrame(table_rows),
                            note="share and success: questions weigh equally within an arm, bootstrap intervals "
                                 "over questions; failed calls and retries: share of the strategy's calls")
        chosen = member_examples(runs, labels, moves_of_rows, typical, s, n=n)
        members = [{**m, "arm_index": arm_index.get(m["arm"], 0), "outcome": "success" if m["correct"] else "failure",
                    "anchor": f"member-{s}-{j}".replace("--", "-m"), "gold": list(m.get("gold") or [])}
                   for j, m in enumerate(chosen.to_dicts())]
        fid = row.get("fidelity")
        line = (f"{int(row['size']):,} trajectories; fidelity {estimate(fid, digits=2)} (share of members whose "
                "calls contain the name's core sequence); typical moves: " + str(row.get("typical_moves") or "")
                + ("; tools the task decides: " + ", ".join(row["task_variants"]) if row.get("task_variants") else ""))
        blocks.append({"id": str(s).replace("-", "m"), "label": strategy_label(s), "name": row.get("name") or "",
                       "line": line, "table": table, "members": members})
        md += [f"### {md_inline(strategy_label(s))}: {md_inline(row.get('name') or '')}", "", md_inline(line), "",
               table.markdown(), ""]
        for m in members:
            md.append(f"- **{md_inline(m['kind'])} member**: {md_inline(m['arm'])}, question "
                      f"{md_inline(m['question_id'])}, sample {m['sample_id']}: {m['outcome']}; question: "
                      f"{md_inline(m['question'])}")
            for c in m["calls"]:
                md.append(f"    {c['index']}. `{_code(c['tool'])}` `{_code(c['arguments'])}`: {md_inline(c['relation'])}"
                          + (" **failed**" if c["failed"] else "") + (" (retry)" if c["after_error"] else "")
                          + "; values: " + ", ".join(f"`{_code(v['value'])}` from {v['source']}" for v in c["values"])
                          + f"; observation: {md_inline(c['observation'])}")
            md.append(f"    answer: {md_inline(m['answer'] if m['answer'] is not None else '(none)')}")
        md.append("")
    html = render("explorer.html.j2", arms=arms, strategies=blocks)
    css = "".join(f"#arm-{i}:checked~.strategies .member:not(.arm-{i}){{display:none}}" for i in range(len(arms)))
    section = PageSection(key="explorer", title="Strategy explorer", paragraphs=[
        "Every strategy with its members' transcripts, unmasked: typical members follow the strategy's typical "
        "move sequence, atypical ones another. Each call shows its tool, arguments, where each value came from "
        "(user: the question; call: an earlier call; result: an earlier observation; new), its relation to "
        "earlier calls and whether it failed. Filter by arm and outcome below."], html=html, markdown="\n".join(md))
    return section, css


def _code(text: object) -> str:
    """Text inside Markdown backticks: backticks and control characters cannot break out."""
    from mechanism.names import escape_control

    return " ".join(escape_control(str(text)).replace("`", "'").split())
