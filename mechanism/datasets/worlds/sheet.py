"""A spreadsheet / office agent world: questions and edits on a workbook, in ATIF v1.4 documents.

The user asks about a workbook: a lookup ("What was Q3 revenue for the EMEA region?"), a
computed column ("Add a column with the margin and tell me the best product"), error fixing
("Fix the #REF! errors in the Summary sheet") or a chart ("Make a chart of monthly signups").
The agent has nine tools with JSON arguments: ``list_sheets()``, ``read_range(sheet, range)``,
``find(sheet, text)``, ``write_range(sheet, range, values)``, ``set_formula(sheet, cell,
formula)``, ``sort(sheet, range, by)``, ``filter(sheet, range, condition)``,
``create_chart(sheet, range, kind)`` and ``run_macro(code)``; results are JSON or text,
failures are observations starting ``Error:`` (an unknown sheet name, an invalid range such as
``A1:Z``, a formula parse error, a locked sheet, a macro that raised), after which the agent
fixes the call and makes it again with the same tool.

Seven planted strategies; call counts overlap (0, 3-7, 2-6, 2-7, 1-4, 2-6, 2-8 calls before
failures, with the optional steps):

===============  ===========================================================================
``from_prompt``  answer from the prompt alone, no tool (a guess, advice, or a refusal)
``read_all``     list the sheets, then read a large range of every sheet (two to four
                 sheets), then the task's finishing step
``find_read``    ``find`` the label in the main sheet (once, or again with other words),
                 then read the row or block around it, then the finishing step
``formula``      ``set_formula`` in one to three helper cells, then read the helper range
                 back, then the finishing step
``macro``        ``run_macro`` does the work (one script, sometimes a second one that
                 follows up on the first); no finishing step of its own
``sort_filter``  ``sort`` or ``filter`` the main table (sometimes filter then sort), then
                 read the top rows, then the finishing step
``windowed``     ``read_range`` in small windows moving down the main sheet (two to five
                 times), then the finishing step
===============  ===========================================================================

The finishing step depends on the kind of task, not on the strategy: none for a lookup,
``write_range`` of the new column for a computed column, ``set_formula`` of the repaired cell
for error fixing, ``create_chart`` for a chart. Optional steps at fixed rates, independent of
the arm and of the task: a ``list_sheets`` at the start (``_P_LIST``, in every tool-using
strategy but ``read_all``, which always lists), and a final ``read_range`` that checks the
result (``_P_CHECK``, in every tool-using strategy). Every call can fail (``_P_FAIL``) and is
then made again, corrected, with the same tool. The strategy is drawn independently of the
kind of task; sheet names, ranges, formulas, macro code and the agent's words vary inside every
strategy. The ``rl`` arm differs from ``base`` only in its mixture; success depends only on the
strategy (random within it).

Written from scratch as a held-out world, without reference to how trajectories are
segmented or clustered.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import polars as pl

from mechanism.core.options import RandomState
from mechanism.datasets.worlds._base import World, name, pick, planted_world, word, world_generator

STRATEGIES = ("from_prompt", "read_all", "find_read", "formula", "macro", "sort_filter", "windowed")
ARMS = {
    "base": {"from_prompt": 0.14, "read_all": 0.2, "find_read": 0.16, "formula": 0.1, "macro": 0.08,
             "sort_filter": 0.12, "windowed": 0.2},
    "rl": {"from_prompt": 0.04, "read_all": 0.08, "find_read": 0.22, "formula": 0.2, "macro": 0.16,
           "sort_filter": 0.18, "windowed": 0.12},
}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"from_prompt": 0.1, "read_all": 0.55, "find_read": 0.7, "formula": 0.75, "macro": 0.6,
            "sort_filter": 0.65, "windowed": 0.5}
KINDS = ("lookup", "column", "fix", "chart")
_P_FAIL = 0.15   # a call that errs (execution), then made again, corrected, with the same tool
_P_LIST = 0.3    # the optional list_sheets at the start
_P_CHECK = 0.35  # the optional read_range at the end that checks the result
TRUTH_SCHEMA = {"kind": pl.String, "n_calls": pl.Int64, "n_failures": pl.Int64, "correct": pl.Boolean}

_MAIN = {"lookup": ("Revenue", "Sales", "Regions", "Q3"), "column": ("Products", "Catalog", "Pricing"),
         "fix": ("Summary", "Totals", "Rollup"), "chart": ("Signups", "Monthly", "Growth")}
_OTHER = ("Data", "Raw", "Notes", "Lookup", "Config", "Archive", "Inputs", "Budget", "Staff")
_REGIONS = ("EMEA", "APAC", "LATAM", "North America", "DACH", "Nordics")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_COLS = "ABCDEFGH"

_SAY = {
    "list_sheets": ("Let me see which sheets the workbook has.", "First, the sheets.", "Which tabs are there?",
                    "Listing the sheets before I start."),
    "read_range": ("Reading {sheet}!{range}.", "Let me look at {range} on {sheet}.", "Pulling {range} from {sheet}.",
                   "Checking the values in {sheet}."),
    "find": ("Searching {sheet} for '{text}'.", "Where is '{text}' in {sheet}?", "Let me locate '{text}'."),
    "write_range": ("Writing the new values to {sheet}!{range}.", "Filling in {range}.", "Adding the column."),
    "set_formula": ("Putting a formula in {sheet}!{cell}.", "Setting {cell} to compute it.",
                    "A formula in {cell} will do it."),
    "sort": ("Sorting {sheet} by {by}.", "Let me order the rows by {by}.", "Sorting first."),
    "filter": ("Filtering {sheet} to {condition}.", "Only the rows where {condition}.", "Applying a filter."),
    "create_chart": ("Creating a {kind} chart of {range}.", "Now the chart.", "Drawing the {kind} chart."),
    "run_macro": ("I'll script this.", "A short macro will do the whole thing.", "Running a script over the sheet.",
                  "Let me automate it."),
}
_THINK = ("", "", "The workbook should have what I need.", "Let me work through the sheet step by step.",
          "I need to be careful about the ranges.", "")


def _range(rng: np.random.Generator, start: int, rows: int, width: int | None = None) -> str:
    width = width or int(rng.integers(3, 9))
    return f"A{start}:{_COLS[width - 1]}{start + rows - 1}"


def _table(rng: np.random.Generator, task: dict, n: int) -> str:
    """``n`` rows of the task's main table as JSON."""
    rows = []
    for _ in range(n):
        if task["kind"] == "lookup":
            rows.append([pick(rng, _REGIONS), pick(rng, ("Q1", "Q2", "Q3", "Q4")), int(rng.integers(10_000, 900_000))])
        elif task["kind"] == "column":
            price = round(float(rng.uniform(5, 400)), 2)
            rows.append([name(rng), price, round(price * float(rng.uniform(0.3, 0.9)), 2)])
        elif task["kind"] == "fix":
            rows.append([word(rng).capitalize(), pick(rng, ("#REF!", int(rng.integers(100, 9000)), "#REF!"))])
        else:
            rows.append([pick(rng, _MONTHS), int(rng.integers(50, 5000))])
    return json.dumps(rows)


class _Episode:
    """One ATIF document being written: one tool call per agent step; a call that fails is
    followed by the corrected call of the same tool."""

    def __init__(self, rng: np.random.Generator, task: dict) -> None:
        self.rng, self.task = rng, task
        self.steps: list[dict[str, Any]] = [
            {"step_id": 1, "source": "system",
             "message": pick(rng, ("You are a spreadsheet assistant with access to the user's workbook.",
                                   "You help with Excel-style workbooks using the tools provided.",
                                   "You are an office assistant. Use the workbook tools when needed."))},
            {"step_id": 2, "source": "user", "message": task["text"]}]
        self.n_calls = self.n_failures = 0

    def _step(self, tool: str, args: dict, result: str) -> None:
        self.n_calls += 1
        cid = f"call_{self.n_calls:03d}_{word(self.rng, 1)}"
        fmt = {"sheet": "the sheet", "range": "the range", "text": "it", "cell": "the cell", "by": "the key",
               "condition": "the condition", "kind": "", **{k: v for k, v in args.items() if isinstance(v, str)}}
        step: dict[str, Any] = {"step_id": len(self.steps) + 1, "source": "agent",
                                "message": pick(self.rng, _SAY[tool]).format(**fmt),
                                "tool_calls": [{"tool_call_id": cid, "function_name": tool, "arguments": args}],
                                "observation": {"results": [{"source_call_id": cid, "content": result}]}}
        think = pick(self.rng, _THINK)
        if think:
            step["reasoning_content"] = think
        self.steps.append(step)

    def call(self, tool: str, args: dict, result: str) -> None:
        """The call; first, where it fails, a broken version of it answered with an error."""
        if self.rng.random() < _P_FAIL:
            bad, err = self._broken(tool, args)
            self.n_failures += 1
            self._step(tool, bad, err)
        self._step(tool, args, result)

    def _broken(self, tool: str, args: dict) -> tuple[dict, str]:
        rng, bad = self.rng, dict(args)
        sheet = args.get("sheet", "")
        options = []
        if "sheet" in args:
            typo = pick(rng, (sheet.lower() + "s", sheet[:-1], sheet + " ", "Sheet1"))
            options.append(({"sheet": typo}, f"Error: unknown sheet '{typo}'"))
        if "range" in args:
            broken = pick(rng, ("A1:Z", "A0:C10", "B:", "A1-C20"))
            options.append(({"range": broken}, f"Error: invalid range '{broken}'"))
        if tool in ("write_range", "set_formula", "sort", "filter") and sheet:
            options.append(({}, f"Error: sheet '{sheet}' is locked (another user is editing); try again"))
        if tool == "set_formula":
            f = args["formula"]
            broken = f.replace(")", "", 1) if ")" in f else f + "("
            options.append(({"formula": broken}, f"Error: formula parse error at position {len(broken)}"))
        if tool == "filter":
            options.append(({"condition": args["condition"].replace(">", "=>", 1) + " AND"},
                            "Error: could not parse condition"))
        if tool == "run_macro":
            options.append(({"code": args["code"].replace("ws", "wsheet", 1)},
                            pick(rng, ("Error: NameError: name 'wsheet' is not defined",
                                       "Error: macro raised AttributeError: 'Range' object has no attribute 'vals'"))))
        if tool == "list_sheets":
            options.append(({}, pick(rng, ("Error: workbook is still loading",
                                           "Error: connection to workbook timed out"))))
        if tool == "create_chart":
            options.append(({"kind": "pi"}, "Error: unknown chart kind 'pi'"))
        change, err = options[int(rng.integers(len(options)))]
        bad.update(change)
        return bad, err

    def answer(self, text: str) -> None:
        self.steps.append({"step_id": len(self.steps) + 1, "source": "agent", "message": text})


def _finish(e: _Episode, task: dict) -> None:
    """The task's finishing step (the same in every strategy that has one)."""
    rng, sheet, kind = e.rng, task["main"], task["kind"]
    n = task["rows"]
    if kind == "column":
        col = pick(rng, ("D", "E", "F"))
        values = [[pick(rng, ("Margin", "margin", "Margin %"))]] + [[round(float(rng.uniform(0.05, 0.7)), 3)]
                                                                    for _ in range(int(rng.integers(3, 7)))]
        e.call("write_range", {"sheet": sheet, "range": f"{col}1:{col}{n + 1}", "values": values},
               json.dumps({"updated": n + 1}))
    elif kind == "fix":
        cell = f"B{int(rng.integers(2, n + 2))}"
        src = pick(rng, task["sheets"][1:] or ("Data",))
        formula = pick(rng, (f"=SUM({src}!B2:B{n + 1})", f"=SUMIF({src}!A:A,A{cell[1:]},{src}!B:B)",
                             f"=IFERROR(VLOOKUP(A{cell[1:]},{src}!A:B,2,FALSE),0)"))
        e.call("set_formula", {"sheet": sheet, "cell": cell, "formula": formula},
               json.dumps({"cell": cell, "value": int(rng.integers(100, 90_000))}))
    elif kind == "chart":
        e.call("create_chart", {"sheet": sheet, "range": f"A1:B{n + 1}", "kind": pick(rng, ("line", "bar", "column"))},
               json.dumps({"chart_id": f"chart{int(rng.integers(1, 40))}", "anchor": pick(rng, ("D2", "E3", "H1"))}))


def _episode(rng: np.random.Generator, arm: str, qid: str, sample: int, strategy: str, task: dict
             ) -> tuple[dict[str, Any], tuple]:
    e = _Episode(rng, task)
    sheet, kind, n = task["main"], task["kind"], task["rows"]
    if strategy == "from_prompt":
        e.answer(pick(rng, (
            "I can't open the workbook from here, but it is usually in the totals row of the sheet.",
            f"Without the data I'd guess about {int(rng.integers(2, 90)) * 1000}.",
            "You can do this with a formula such as =B2-C2 copied down, then sort by it.",
            "Select the range and use Insert > Chart; a line chart suits monthly data.",
            "The #REF! errors usually mean a deleted sheet; point the formulas at the right range.")))
        return _record(e, arm, qid, sample, strategy, task)
    if strategy == "read_all" or rng.random() < _P_LIST:  # read_all always lists; elsewhere optional
        e.call("list_sheets", {}, json.dumps(list(task["sheets"])))

    if strategy == "read_all":
        k = int(rng.integers(2, min(4, len(task["sheets"])) + 1))
        for sh in [sheet, *[s for s in task["sheets"] if s != sheet][:k - 1]]:
            e.call("read_range", {"sheet": sh, "range": _range(rng, 1, pick(rng, (200, 500, 1000)))},
                   _table(rng, task, 6))
    elif strategy == "find_read":
        text = task["label"]
        found = int(rng.integers(2, n + 2))
        if rng.random() < 0.4:  # not found under the first words; searched again
            e.call("find", {"sheet": sheet, "text": text.lower() + pick(rng, ("s", " total", ""))}, json.dumps([]))
        e.call("find", {"sheet": sheet, "text": text}, json.dumps([f"A{found}"]))
        e.call("read_range", {"sheet": sheet, "range": _range(rng, found, pick(rng, (1, 3, 10)))}, _table(rng, task, 2))
    elif strategy == "formula":
        helper = pick(rng, ("H", "J", "Z"))
        k = int(rng.integers(1, 4))
        for i in range(k):
            formula = pick(rng, (f"=SUMIFS(C:C,A:A,\"{task['label']}\")", f"=MAX(C2:C{n + 1})",
                                 "=INDEX(A:A,MATCH(MAX(C:C),C:C,0))", "=COUNTIF(B:B,\"#REF!\")",
                                 f"=AVERAGE(B2:B{n + 1})"))
            e.call("set_formula", {"sheet": sheet, "cell": f"{helper}{i + 1}", "formula": formula},
                   json.dumps({"cell": f"{helper}{i + 1}", "value": int(rng.integers(1, 90_000))}))
        e.call("read_range", {"sheet": sheet, "range": f"{helper}1:{helper}{k}"},
               json.dumps([[int(rng.integers(1, 90_000))] for _ in range(k)]))
    elif strategy == "macro":
        code = pick(rng, (f"ws = wb['{sheet}']\nfor row in ws.iter_rows(min_row=2):\n    ...",
                          f"ws = workbook.sheets['{sheet}']\nvals = ws.range('A1:D{n + 1}').value\nprint(vals)",
                          f"import openpyxl\nws = wb['{sheet}']\nresult = [c.value for c in ws['B']]\nprint(result)"))
        e.call("run_macro", {"code": code}, pick(rng, ("Macro finished. Output: " + _table(rng, task, 3),
                                                       "OK (ran in 0.4 s)")))
        if rng.random() < 0.45:  # a second script that follows up on what the first printed
            follow = pick(rng, (f"ws = wb['{sheet}']\nws['D1'] = 'done'", f"ws = wb['{sheet}']\nprint(ws.max_row)",
                                f"ws = wb['{sheet}']\nws.auto_fit()"))
            e.call("run_macro", {"code": follow}, "Macro finished.")
    elif strategy == "sort_filter":
        rng_ = f"A1:{pick(rng, ('C', 'D', 'F'))}{n + 1}"
        how = pick(rng, ("sort", "filter", "both"))
        if how in ("filter", "both"):
            cond = pick(rng, (f"A = '{task['label']}'", "C > 0", f"B > {int(rng.integers(1, 500))}"))
            e.call("filter", {"sheet": sheet, "range": rng_, "condition": cond},
                   json.dumps({"rows": int(rng.integers(1, n + 1))}))
        if how in ("sort", "both"):
            by = pick(rng, ("C", "B", "C desc", "B descending"))
            e.call("sort", {"sheet": sheet, "range": rng_, "by": by}, json.dumps({"sorted": n}))
        e.call("read_range", {"sheet": sheet, "range": _range(rng, 1, pick(rng, (3, 5, 10)))}, _table(rng, task, 3))
    elif strategy == "windowed":
        size = pick(rng, (10, 15, 20))
        width = int(rng.integers(3, 7))
        for i in range(int(rng.integers(2, 6))):
            e.call("read_range", {"sheet": sheet, "range": _range(rng, 1 + i * size, size, width)},
                   _table(rng, task, 4))

    if strategy != "macro":
        _finish(e, task)
    if rng.random() < _P_CHECK:  # the optional check of the result
        e.call("read_range", {"sheet": sheet, "range": pick(rng, (f"A1:F{n + 1}", f"D1:D{n + 1}", "A1:H5"))},
               _table(rng, task, 3))
    e.answer(pick(rng, _DONE[kind]).format(**task, value=int(rng.integers(1000, 900_000)), best=name(rng)))
    return _record(e, arm, qid, sample, strategy, task)


_DONE = {
    "lookup": ("{label} was {value}.", "The figure for {label} is {value}.", "Found it: {value} for {label}."),
    "column": ("Added the margin column; the best product is {best}.", "Done. {best} has the highest margin.",
               "The new column is in place, and {best} comes out on top."),
    "fix": ("Fixed the #REF! errors in {main}.", "The broken references in {main} now point at the right range.",
            "All #REF! cells on {main} are repaired."),
    "chart": ("The chart is on {main}.", "Created the chart of {label}.", "Here is your chart, next to the data."),
}


def _record(e: _Episode, arm: str, qid: str, sample: int, strategy: str, task: dict) -> tuple[dict[str, Any], tuple]:
    correct = bool(e.rng.random() < _SUCCESS[strategy])
    doc = {"schema_version": "ATIF-v1.4", "session_id": f"{qid}-{arm}-{sample}",
           "agent": {"name": "sheet-agent", "version": "1.0", "model_name": arm},
           "steps": e.steps,
           "extra": {"question_id": qid, "sample_id": sample, "gold": [], "correct": correct}}
    return doc, (task["kind"], e.n_calls, e.n_failures, correct)


def _task(rng: np.random.Generator, kind: str) -> dict:
    main = pick(rng, _MAIN[kind])
    others = [s for s in _OTHER if rng.random() < 0.5][:3] or [pick(rng, _OTHER)]
    t: dict[str, Any] = {"kind": kind, "main": main, "sheets": (main, *others),
                         "rows": int(rng.integers(8, 60)), "who": word(rng).capitalize()}
    if kind == "lookup":
        t["label"] = f"{pick(rng, ('Q1', 'Q2', 'Q3', 'Q4'))} {pick(rng, _REGIONS)}"
        t["text"] = pick(rng, ("What was {label} revenue in the {main} sheet?",
                               "Can you look up the {label} figure for me? It should be in {main}.",
                               "I need the revenue for {label}. Thanks, {who}.")).format(**t)
    elif kind == "column":
        t["label"] = pick(rng, ("margin", "unit margin", "gross margin"))
        t["text"] = pick(rng, ("Add a column with the {label} and tell me the best product.",
                               "On {main}, compute the {label} per product in a new column; which one is best?",
                               "Please add {label} next to price and cost, then tell me the top product.")).format(**t)
    elif kind == "fix":
        t["label"] = "#REF!"
        t["text"] = pick(rng, ("Fix the #REF! errors in the {main} sheet.",
                               "{main} is full of #REF! after I deleted a tab. Can you repair it?",
                               "Some totals on {main} show #REF!; please fix them. {who}")).format(**t)
    else:
        t["label"] = pick(rng, ("monthly signups", "signups by month", "new users per month"))
        t["text"] = pick(rng, ("Make a chart of {label}.", "Can you chart the {label} from {main}?",
                               "I'd like a graph of {label} for the board deck. {who}")).format(**t)
    return t


def sheet(*, n_questions: int = 60, n_samples: int = 4, arms: dict[str, dict[str, float]] | None = None,
          random_state: RandomState = 0) -> World:
    """Generate the spreadsheet-agent world (ATIF v1.4 documents).

    Parameters
    ----------
    n_questions, n_samples
        Tasks (their kinds in turn: lookup, column, fix, chart), and episodes per task and arm.
    arms
        Arm name -> strategy mixture (default: ``base`` and ``rl``, which differ only in it).
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.

    Returns
    -------
    World
        Records in format ``atif`` (the arm in ``agent.model_name``; question id, sample id and
        the success label in ``extra``) and the truth: ``strategy``, ``kind``, ``n_calls``
        (tool calls, failures included), ``n_failures`` and ``correct``.

    Examples
    --------
    >>> w = sheet(n_questions=4, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"])), sorted(set(w.truth["kind"]))
    ('atif', 8, ['base', 'rl'], ['chart', 'column', 'fix', 'lookup'])
    """
    rng = world_generator(random_state)
    arms = arms or ARMS
    tasks = [(f"sheet-{i:04d}", _task(rng, KINDS[i % len(KINDS)])) for i in range(n_questions)]
    return planted_world("sheet", "atif", rng, tasks, arms, n_samples, _episode, _SUCCESS, truth_schema=TRUTH_SCHEMA)
