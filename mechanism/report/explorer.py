"""The strategy explorer: every strategy with its name, fidelity, size, share and success per
arm (with intervals), failure and retry rates, and member transcripts a reader checks the
name against (typical and atypical, :meth:`StrategySpace.examples`' choice), filterable by arm,
outcome and failure without any script (radio buttons and CSS: the page's policy forbids
scripts); and every member of every strategy on pages of its own with a CSV list
(:func:`write_member_pages`). User turns stand in their place, and each argument value shows
where it came from.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from mechanism.analysis.segmentation import USER_TURN, argument_values, atoms
from mechanism.core.names import escape_control, write_csv
from mechanism.core.schema import PARALLEL
from mechanism.core.text import estimate_text, md_escape
from mechanism.report.page import PageSection, render
from mechanism.report.tables import ReportTable


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


def strategy_stem(strategy: int) -> str:
    """A strategy's file stem and HTML id part (``S0``, ``outliers``)."""
    return strategy_label(int(strategy))


def value_provenance(question: str | None, steps: Sequence[dict] | None) -> list[list[tuple[str, str]]]:
    """For every call, each argument value with where its words came from, as
    :func:`mechanism.segment` reads them: ``user`` (the question or any user turn before the
    call: an id the user typed in reply), else ``call`` (an earlier call), else ``result``
    (an earlier observation), else ``new``. A value of several atoms takes its atoms'
    sources joined by ``+``.

    >>> steps = [{"tool": "get_user", "arguments": '{"user_id": "mia_li_3668"}', "user": "my id is mia_li_3668"},
    ...          {"tool": "search", "query": "Paris", "observation": "Paris"}]
    >>> value_provenance("Change my flight", steps)
    [[('mia_li_3668', 'user')], [('Paris', 'new')]]
    """
    asked = set(atoms(question))
    said: set[str] = set()
    calls: set[str] = set()
    results: set[str] = set()
    order = ("user", "call", "result", "new")
    out = []
    for step in steps or ():
        step = step or {}
        if step.get("user"):
            said |= set(atoms(step["user"]))
        values = argument_values(step.get("arguments"), step.get("query"))
        shown = []
        for v in values:
            found = {"user" if a in asked or a in said else "call" if a in calls
                     else "result" if a in results else "new" for a in atoms(v)}
            shown.append((v, "+".join(o for o in order if o in found) or "none"))
        out.append(shown)
        for v in values:
            calls.update(atoms(v))
        results.update(atoms(step.get("observation")))
    return out


def member_transcript(row: dict, segs: Sequence[dict], *, arm_index: int = 0, kind: str = "",
                      anchor: str = "") -> dict:
    """One member as plain data for the page: question, every user turn in its place, every
    call (tool, arguments, each value with its provenance, relation and move, the call's
    sources as :func:`mechanism.segment` gives them, failure, thought, observation) and the
    answer. ``row`` is a canonical row, ``segs`` its calls' rows of :func:`mechanism.segment`
    in order. Text is unmasked and cut to a readable length, never escaped here."""
    from mechanism.analysis.strategy_space import MAX_SHOWN_CHARS  # noqa: PLC0415 - scikit-learn (strategy_space): only when strategies are shown

    def cut(text: object) -> str:
        text = "" if text is None else str(text)
        return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS] + f"... ({len(text):,} characters)"

    steps = [st or {} for st in (row.get("steps") or [])]
    calls = []
    for i, (st, values) in enumerate(zip(steps, value_provenance(row.get("question"), steps))):
        seg = segs[i] if i < len(segs) else {}
        calls.append({"index": i + 1, "tool": cut(st.get("tool")),
                      "arguments": cut(st.get("arguments") or st.get("query")),
                      "values": [{"value": cut(v), "source": src} for v, src in values],
                      "relation": seg.get("relation", ""), "move": seg.get("move", ""),
                      "sources": seg.get("sources", ""), "failed": bool(seg.get("failed", False)),
                      "after_error": bool(seg.get("after_error", False)), "thought": cut(st.get("thought")),
                      "together": st.get(PARALLEL) is True,
                      "observation": cut(st.get("observation")), "user": cut(st.get("user")) if st.get("user") else ""})
    user_after = ""
    if row.get("meta"):
        try:
            meta = json.loads(row["meta"])
        except ValueError:
            meta = None
        if isinstance(meta, dict) and isinstance(meta.get("user_after_last_call"), str):
            user_after = cut(meta["user_after_last_call"])
    correct = bool(row.get("correct"))
    return {"kind": kind, "arm": row["arm"], "arm_index": arm_index, "question_id": str(row["question_id"]),
            "sample_id": int(row["sample_id"]), "correct": correct, "outcome": "success" if correct else "failure",
            "question": cut(row.get("question")),
            "answer": cut(row.get("answer")) if row.get("answer") is not None else None,
            "gold": [cut(g) for g in (row.get("gold") or [])], "calls": calls, "user_after": user_after,
            "n_failed": sum(c["failed"] for c in calls), "anchor": anchor}


def _segments_by_key(moves: pl.DataFrame) -> dict[tuple, list[dict]]:
    by_key: dict[tuple, list[dict]] = {}
    # one move per call (the user's turns, moves of their own, are shown as the user's words)
    calls = moves.filter(~pl.col("tool").is_in(["answer", USER_TURN])).sort("arm", "question_id", "sample_id", "step")
    for m in calls.iter_rows(named=True):
        by_key.setdefault((m["arm"], str(m["question_id"]), int(m["sample_id"])), []).append(m)
    return by_key


def _question_anchor(question_id: str) -> str:
    return "q-" + hashlib.sha1(str(question_id).encode("utf-8")).hexdigest()[:12]


FILTER_CSS = ("#failed-yes:checked~.strategies .member:not(.has-failure){display:none}"
              "#failed-no:checked~.strategies .member:not(.no-failure){display:none}")


def write_member_pages(runs: pl.DataFrame, labels: np.ndarray, moves_of_rows: Sequence[str], moves: pl.DataFrame,
                       *, arms: Sequence[str], folder: Path, root: Path, per_page: int = 50,
                       style: str = "") -> dict[int, dict]:
    """Every member of every strategy, reachable: for each strategy, pages of ``per_page``
    member transcripts (sorted by question, then arm and sample; an index of the page's
    questions; filters by arm, outcome and failure) and a CSV of all its members, under
    ``folder``. Returns ``{strategy: {"pages": [(label, path relative to root)], "csv": path,
    "written": [Path], "size": n}}``."""
    if per_page < 1:
        raise ValueError("`members_per_page` must be at least 1")
    folder.mkdir(parents=True, exist_ok=True)
    arms = list(arms)
    arm_index = {a: i for i, a in enumerate(arms)}
    by_key = _segments_by_key(moves)
    labels = np.asarray(labels)
    frame = runs.with_columns(pl.Series("_strategy", labels, dtype=pl.Int64),
                              pl.Series("_moves", list(moves_of_rows), dtype=pl.String))
    out: dict[int, dict] = {}
    css = style + FILTER_CSS + "".join(f"#arm-{i}:checked~.strategies .member:not(.arm-{i}){{display:none}}"
                                       for i in range(len(arms)))
    for s in sorted(set(labels.tolist())):
        members = (frame.filter(pl.col("_strategy") == s)
                   .with_columns(pl.col("arm").replace_strict(arm_index, default=len(arm_index)).alias("_arm_order"))
                   .sort("question_id", "_arm_order", "sample_id"))
        stem = strategy_stem(s)
        n_pages = max(1, -(-members.height // per_page))
        names = [f"strategy-{stem}-{p + 1}.html" for p in range(n_pages)]
        rel = [str((folder / n).relative_to(root)) for n in names]
        listing, written = [], []
        rows = members.to_dicts()
        for p in range(n_pages):
            chunk = rows[p * per_page:(p + 1) * per_page]
            groups: dict[str, dict] = {}
            for r in chunk:
                key = (r["arm"], str(r["question_id"]), int(r["sample_id"]))
                anchor = f"m-{arm_index.get(r['arm'], 0)}-{r['sample_id']}-{_question_anchor(r['question_id'])[2:]}"
                m = member_transcript(r, by_key.get(key, []), arm_index=arm_index.get(r["arm"], 0), anchor=anchor)
                g = groups.setdefault(m["question_id"], {"question_id": m["question_id"],
                                                         "anchor": _question_anchor(m["question_id"]), "members": []})
                g["members"].append(m)
                listing.append({"strategy": int(s), "label": strategy_label(s), "arm": r["arm"],
                                "question_id": str(r["question_id"]), "sample_id": int(r["sample_id"]),
                                "correct": bool(r["correct"]), "n_rounds": int(r["n_rounds"]),
                                "failed_calls": m["n_failed"], "moves": r["_moves"],
                                "page": rel[p], "anchor": anchor})
            pages = [(str(i + 1), names[i], i == p) for i in range(n_pages)]
            html = render("members.html.j2", title=f"{strategy_label(s)}: all {members.height:,} members, page "
                          f"{p + 1} of {n_pages}", back=f"{'../' * (len(folder.relative_to(root).parts))}summary.html"
                          f"#strategy-{str(s).replace('-', 'm')}", line=f"members {p * per_page + 1:,} to "
                          f"{p * per_page + len(chunk):,}, sorted by question, then arm and sample",
                          pages=pages, csv=f"strategy-{stem}-members.csv",
                          questions=[(g["question_id"], f"#{g['anchor']}") for g in groups.values()],
                          arms=arms, groups=list(groups.values()), style=css)
            path = folder / names[p]
            path.write_text(str(html) + "\n", encoding="utf-8")
            written.append(path)
        csv_path = folder / f"strategy-{stem}-members.csv"
        schema = {"strategy": pl.Int64, "label": pl.String, "arm": pl.String, "question_id": pl.String,
                  "sample_id": pl.Int64, "correct": pl.Boolean, "n_rounds": pl.Int64, "failed_calls": pl.Int64,
                  "moves": pl.String, "page": pl.String, "anchor": pl.String}
        write_csv(pl.DataFrame(listing, schema=schema), csv_path)
        written.append(csv_path)
        out[int(s)] = {"pages": [(f"page {i + 1}", r_) for i, r_ in enumerate(rel)],
                       "csv": str(csv_path.relative_to(root)), "written": written, "size": members.height}
    return out


def explorer_section(runs: pl.DataFrame, labels: np.ndarray, moves_of_rows: Sequence[str], described: pl.DataFrame,
                     shares: pl.DataFrame, moves: pl.DataFrame, *, arms: Sequence[str], n: int = 5,
                     pages: dict[int, dict] | None = None) -> tuple[PageSection, str]:
    """The explorer as a page section and the CSS of its arm filters.

    ``labels`` and ``moves_of_rows`` give each row of ``runs`` its strategy and move
    sequence; ``shares`` is :func:`mechanism.analysis.shares.strategy_shares`' table; ``moves`` is
    :func:`mechanism.segment` of ``runs``; ``pages`` is :func:`write_member_pages`' answer
    (each strategy then links to all its members).
    """
    from mechanism.analysis.strategy_space import pick_members  # noqa: PLC0415 - scikit-learn (strategy_space): only when strategies are shown

    arms = list(arms)
    arm_index = {a: i for i, a in enumerate(arms)}
    typical = dict(zip(described["strategy"].to_list(), described["typical_moves"].to_list()))
    ids = runs.select("arm", "question_id", "sample_id").with_columns(pl.Series("strategy", labels, dtype=pl.Int64))
    rates = {(r["strategy"], r["arm"]): r for r in call_rates(moves, ids).iter_rows(named=True)}
    share = {(r["strategy"], r["arm"]): r for r in shares.iter_rows(named=True)}
    by_key = _segments_by_key(moves)
    blocks, md = [], []
    for row in described.iter_rows(named=True):
        s = int(row["strategy"])
        table_rows = []
        for a in arms:
            sh, rt = share.get((s, a), {}), rates.get((s, a), {})
            table_rows.append({
                "arm": a, "trajectories": f"{int(row.get(f'n[{a}]') or 0):,}",
                "share": estimate_text(sh.get("share"), sh.get("ci_low"), sh.get("ci_high")) if sh else "0",
                "success": estimate_text(row.get(f"success_rate[{a}]"), row.get(f"ci_low[{a}]"),
                                         row.get(f"ci_high[{a}]")),
                "failed calls": estimate_text(rt.get("failure_rate")) if rt else "no calls",
                "retries": estimate_text(rt.get("retry_rate")) if rt else "no calls"})
        table = ReportTable(key=f"strategy-{s}-arms".replace("--", "-m"), title=f"{strategy_label(s)} per arm",
                            frame=pl.DataFrame(table_rows),
                            note="share and success: questions weigh equally within an arm, bootstrap intervals "
                                 "over questions; failed calls and retries: share of the strategy's calls")
        chosen = pick_members(runs, labels, moves_of_rows, typical, s, n=n)
        members = [member_transcript(m, by_key.get((m["arm"], str(m["question_id"]), int(m["sample_id"])), []),
                                     arm_index=arm_index.get(m["arm"], 0), kind=m["kind"],
                                     anchor=f"member-{s}-{j}".replace("--", "-m"))
                   for j, m in enumerate(chosen.to_dicts())]
        fid = row.get("fidelity")
        line = (f"{int(row['size']):,} trajectories; fidelity {estimate_text(fid, digits=2)} (share of members whose "
                "calls contain the name's core sequence); typical moves: " + str(row.get("typical_moves") or "")
                + ("; tools the task decides: " + ", ".join(row["task_variants"]) if row.get("task_variants") else "")
                + ("; last actions that take each other's place: " + ", ".join(row["endings"])
                   if row.get("endings") else ""))
        listed = (pages or {}).get(s)
        blocks.append({"id": str(s).replace("-", "m"), "label": strategy_label(s), "name": row.get("name") or "",
                       "line": line, "table": table, "members": members,
                       "pages": listed["pages"] if listed else [], "csv": listed["csv"] if listed else "",
                       "size": f"{listed['size']:,}" if listed else ""})
        md += [f"### {md_escape(strategy_label(s))}: {md_escape(row.get('name') or '')}", "", md_escape(line), "",
               table.markdown(), ""]
        for m in members:
            md.append(f"- **{md_escape(m['kind'])} member**: {md_escape(m['arm'])}, question "
                      f"{md_escape(m['question_id'])}, sample {m['sample_id']}: {m['outcome']}; question: "
                      f"{md_escape(m['question'])}")
            for c in m["calls"]:
                if c["user"]:
                    md.append(f"    - user: {md_escape(c['user'])}")
                md.append(f"    {c['index']}. `{_code(c['tool'])}` `{_code(c['arguments'])}`: "
                          f"{md_escape(c['relation'])}"
                          + (" (same message as the call before)" if c["together"] else "")
                          + (" **failed**" if c["failed"] else "") + (" (retry)" if c["after_error"] else "")
                          + "; values: " + ", ".join(f"`{_code(v['value'])}` from {v['source']}" for v in c["values"])
                          + f"; observation: {md_escape(c['observation'])}")
            if m["user_after"]:
                md.append(f"    - user: {md_escape(m['user_after'])}")
            md.append(f"    answer: {md_escape(m['answer'] if m['answer'] is not None else '(none)')}")
        if listed:
            md.append(f"- all {listed['size']:,} members: " + ", ".join(
                f"[{md_escape(lab)}]({href})" for lab, href in listed["pages"]) + f"; [CSV]({listed['csv']})")
        md.append("")
    html = render("explorer.html.j2", arms=arms, strategies=blocks)
    css = "".join(f"#arm-{i}:checked~.strategies .member:not(.arm-{i}){{display:none}}" for i in range(len(arms)))
    section = PageSection(key="explorer", title="Strategy explorer", paragraphs=[
        "Every strategy with members' transcripts, unmasked: typical members follow the strategy's typical "
        "move sequence, atypical ones another; each strategy links to all its members (pages and a CSV). The "
        "user's turns stand in their place. Each call shows its tool, arguments, where each value came from "
        "as mx.segment reads it (user: the question or a user turn before the call, such as an id the user "
        "typed; call: an earlier call; result: an earlier observation; new), its relation to earlier calls and "
        "whether it failed. Filter by arm, outcome and "
        "failure below."], html=html, markdown="\n".join(md))
    return section, css + FILTER_CSS


def _code(text: object) -> str:
    """Text inside Markdown backticks: backticks and control characters cannot break out."""
    return " ".join(escape_control(str(text)).replace("`", "'").split())
