"""The text-to-SQL world (mechanism.datasets.worlds.sql): OpenAI records with ONE `sql_db_query` tool
read back with `mechanism.read` as a user's files are, the truth it carries, every statement
returning what the tool says it returned on the world's databases, and the planted design (failed
statements in every strategy that queries, each followed by the corrected one; optional steps at
fixed rates; every strategy on every database; arms differing only in their mixture; success set by
the strategy alone). Strategy discovery is not evaluated here."""
from __future__ import annotations

import json
import re
import sqlite3

import numpy as np
import polars as pl
import pytest
from world_checks import assert_arms_differ_only_in_mixture, openai_calls

import mechanism as mx
from mechanism.datasets import worlds
from mechanism.datasets.worlds import sql
from mechanism.datasets.worlds.sql import (
    _P_COUNT,
    _P_EMPTY,
    _P_FAIL,
    _P_LIMIT,
    _SUCCESS,
    ARMS,
    DATABASES,
    STRATEGIES,
    TOOL,
    databases,
)

QUERYING = STRATEGIES[1:]  # every strategy but no_query
_BACKGROUND = "(Background on this error at: https://sqlalche.me/e/20/e3q8)"


@pytest.fixture(scope="module")
def world():
    return sql()  # the default size: 60 questions, 4 samples, two arms


@pytest.fixture(scope="module")
def read(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("sql")), format="openai", report=True)


@pytest.fixture(scope="module")
def big():
    """A larger sample for the rates (both arms, pooled over two seeds)."""
    return [sql(n_questions=120, n_samples=5, random_state=seed) for seed in (1, 2)]


def _rows(ws):
    return [(row, rec) for w in ws for row, rec in zip(w.truth.iter_rows(named=True), w.records)]


def _failed(output: str) -> bool:
    return output.startswith("Error: (sqlite3.")


def _calls(record):
    """(statement, result, what the assistant said) of every call."""
    said = [m["content"] for m in record["messages"] if m["role"] == "assistant" and m.get("tool_calls")]
    return [(args["query"], out, s) for (_, args, out), s in zip(openai_calls(record), said)]


def _norm(statement: str) -> str:
    return re.sub(r"\s+", " ", statement).strip().rstrip(";").strip()


def _unlimited(statement: str) -> str:
    return re.sub(r" limit \d+$", "", _norm(statement), flags=re.I)


_COUNT = re.compile(r"select count\((?:\*|1)\)(?: as \w+)? from \w+", re.I)


def _parts(record):
    """(whether a COUNT(*) sanity check came first, whether the final query was re-run with a
    LIMIT last, the other statements that ran, with their results)."""
    ok = [(q, out) for q, out, _ in _calls(record) if not _failed(out)]
    count = bool(ok) and bool(_COUNT.fullmatch(_norm(ok[0][0])))
    ok = ok[count:]
    rerun = (len(ok) >= 2 and bool(re.search(r" limit \d+$", _norm(ok[-1][0]), re.I))
             and _unlimited(ok[-1][0]) in {_unlimited(q) for q, _ in ok[:-1]})
    return count, rerun, ok[:len(ok) - rerun]


def _first_row(output: str) -> list[str]:
    return output.splitlines()[1].split("|")


def _answer(record) -> str | None:
    m = re.search(r"\*\*(.+?)\*\*", record["messages"][-1]["content"])
    return m.group(1) if m else None


def test_is_a_planted_world(world):
    assert isinstance(world, worlds.PlantedWorld)
    assert world.format == "openai" and world.name == "sql"
    assert "sql" in worlds.__all__ and "sql" in worlds.WORLDS and "interpreter" in worlds.WORLDS
    assert world.truth.columns == ["arm", "question_id", "sample_id", "strategy", "database", "n_calls",
                                   "n_failures", "correct"]
    # every strategy and every database at the default size, and every strategy on every database
    assert set(world.truth["strategy"]) == set(STRATEGIES) and set(world.truth["database"]) == set(DATABASES)
    assert world.truth.group_by("strategy", "database").len().height == len(STRATEGIES) * len(DATABASES)
    questions = {rec["question_id"]: rec["messages"][1]["content"] for rec in world.records}
    assert len(questions) == 60 and len(set(questions.values())) == 60
    # the databases in turn; the system prompt names the database but none of its tables
    for row, rec in _rows([world]):
        assert row["database"] == DATABASES[int(row["question_id"].split("-")[1]) % len(DATABASES)]
        system = rec["messages"][0]["content"]
        assert f"`{row['database']}`" in system and TOOL in system
        tables = r"\b(customers|orders|flights|airports|students|takes|plays|tracks)\b"
        assert not re.search(tables, system.replace(f"`{row['database']}`", ""))


def test_reads_back_one_row_per_trajectory_with_one_tool(world, read):
    runs, report = read
    assert report.skipped == [] and runs.height == len(world.records) == world.truth.height
    assert not any(label is None for label in world.labels_for(runs))
    t = world.join_truth(runs)
    assert runs["n_rounds"].to_list() == t["n_calls"].to_list()
    assert world.runs["n_rounds"].to_list() == world.truth["n_calls"].to_list()
    assert {s["tool"] for steps in runs["steps"].to_list() for s in steps} == {TOOL}
    got = runs.join(world.truth, on=["arm", "question_id", "sample_id"])
    assert got["correct"].to_list() == got["correct_right"].to_list()
    assert all(a for a in runs["answer"].to_list())


def test_truth_counts_and_failures_followed_by_the_corrected_statement(big):
    kinds: dict[str, int] = {}
    for row, rec in _rows(big):
        calls = _calls(rec)
        assert len(calls) == row["n_calls"]
        assert sum(_failed(out) for _, out, _ in calls) == row["n_failures"]
        for tool, args, _ in openai_calls(rec):
            assert tool == TOOL and list(args) == ["query"]
        for i, (statement, out, _) in enumerate(calls):
            if _failed(out):
                assert i + 1 < len(calls) and not _failed(calls[i + 1][1]), out  # the corrected statement at once
                assert calls[i + 1][0] != statement
                first, echoed, background = out.split("\n[SQL: ")[0], out.split("\n[SQL: ", 1)[1], out.splitlines()[-1]
                assert first.startswith("Error: (sqlite3.OperationalError) ") and background == _BACKGROUND
                assert echoed == f"{statement}]\n{_BACKGROUND}"  # the statement as sent
                message = first.split(") ", 1)[1]
                kind = next((k for k in ("no such column", "no such table", "syntax error", "ambiguous column name",
                                         "no such function", "interrupted", "incomplete input") if k in message),
                            message)
                kinds[kind] = kinds.get(kind, 0) + 1
        last = rec["messages"][-1]
        assert last["role"] == "assistant" and not last.get("tool_calls") and last["content"]
    assert set(kinds) == {"no such column", "no such table", "syntax error", "ambiguous column name",
                          "no such function", "interrupted", "incomplete input"}, kinds
    assert min(kinds.values()) >= 10, kinds


def test_statements_return_what_the_tool_says(world):
    """Every statement, run again on the world's databases (built again from the seed), returns
    the rows the tool printed (a header line, ``|`` between values) or raises the error it
    reported; a timed-out statement is its correction with a join's ON left out."""
    dbs = databases(0)
    checked = timeouts = 0
    for row, rec in _rows([world]):
        conn = dbs[row["database"]].conn
        calls = _calls(rec)
        for i, (statement, out, _) in enumerate(calls):
            if _failed(out) and out.startswith("Error: (sqlite3.OperationalError) interrupted\n"):
                fixed = calls[i + 1][0]
                ons = [len(re.findall(r"\bON\b", s, re.I)) for s in (statement, fixed)]
                assert ons[0] == ons[1] - 1 and len(re.findall(r"\bJOIN\b", statement, re.I)) >= 1
                conn.execute("EXPLAIN " + statement)  # a statement that compiles: a cross join
                timeouts += 1
                continue
            try:
                cur = conn.execute(statement)
                header, rows = [d[0] for d in cur.description], cur.fetchall()
            except sqlite3.OperationalError as e:
                assert _failed(out) and out.split("\n")[0] == f"Error: (sqlite3.OperationalError) {e}", (statement, out)
                checked += 1
                continue
            assert not _failed(out) and rows, (statement, out)
            lines = out.split("\n")
            assert lines[0] == "|".join(header)
            printed = [line.split("|") for line in lines[1:]]
            if any("\n" in str(v) for r in rows for v in r):  # a CREATE statement in the catalog
                assert "\n".join(lines[1:]) == "\n".join("|".join(map(str, r)) for r in rows)
                continue
            assert len(printed) == len(rows)
            for cells, values in zip(printed, rows):
                for cell, v in zip(cells, values, strict=True):
                    if isinstance(v, float):
                        assert float(cell) == pytest.approx(v, rel=1e-13) and "." in cell
                    else:
                        assert cell == ("" if v is None else str(v)), (statement, cell, v)
            checked += 1
    assert checked > 1000 and timeouts >= 3


def test_no_query_alone_calls_no_tool_and_call_counts_overlap(big):
    t = pl.concat([w.truth for w in big])
    assert (t.filter(pl.col("strategy") == "no_query")["n_calls"] == 0).all()
    assert (t.filter(pl.col("strategy") != "no_query")["n_calls"] >= 1).all()
    spans = {s: (sub["n_calls"].min(), sub["n_calls"].max()) for (s,), sub in t.group_by("strategy")}
    assert sum(lo <= 3 <= hi for lo, hi in spans.values()) == len(QUERYING), spans  # no count tells a strategy
    assert sum(lo <= 2 <= hi for lo, hi in spans.values()) == len(QUERYING) - 1, spans  # all but sample_rows


def test_every_strategy_fails_at_the_planted_rate(big):
    t = pl.concat([w.truth for w in big])
    for s in QUERYING:
        sub = t.filter(pl.col("strategy") == s)
        rate = sub["n_failures"].sum() / (sub["n_calls"].sum() - sub["n_failures"].sum())  # per first attempt
        assert abs(rate - _P_FAIL) < 0.04, (s, rate)


def _literals(text: str) -> set[str]:
    """The numbers and quoted strings a statement or a question holds."""
    quoted = {m.strip("'") for m in re.findall(r"'[^']*'", text)}
    return quoted | set(re.findall(r"(?<![\w.'-])\d+(?:\.\d+)?(?![\w.'-])", re.sub(r"'[^']*'", " ", text)))


def test_each_strategy_does_what_it_is(big):
    """What each strategy's statements are, once the failed ones and the optional steps are left
    out: the final query alone; the catalog first; sample rows first; single-table probes of
    values first; small steps typing in values earlier ones returned; the final query, then a
    differently written one. The final query returns the gold answer in every one."""
    n_typed = []
    for row, rec in _rows(big):
        s = row["strategy"]
        _, _, ok = _parts(rec)
        statements = [_norm(q).lower() for q, _ in ok]
        gold = rec["gold"][0]
        if s == "no_query":
            assert ok == [] and row["n_calls"] == 0
            continue
        catalog = ["sqlite_master" in q or "table_info" in q for q in statements]
        samples = [bool(re.fullmatch(r"select \* from \w+ limit \d+", q)) for q in statements]
        assert any(catalog) == (s == "schema_first") and any(samples) == (s == "sample_rows"), (s, statements)
        final = ok[0][1] if s == "verify" else ok[-1][1]
        assert gold in _first_row(final), (s, gold, final)
        if s == "direct":
            assert len(ok) == 1
        elif s == "schema_first":
            assert catalog[0] and all(catalog[:-1]) and not catalog[-1] and 2 <= len(ok) <= 7
        elif s == "sample_rows":
            assert all(samples[:-1]) and not samples[-1] and 2 <= len(ok) <= 4
        elif s == "probe_values":
            probes = statements[:-1]
            assert 1 <= len(probes) <= 3 and not any(" join " in q for q in probes)
            assert all(re.search(r"distinct|min\(|max\(|count\(", q) for q in probes), probes
        elif s == "verify":
            assert len(ok) == 2 and statements[0] != statements[1] and " join " in statements[0]
        elif s == "decompose":
            assert 2 <= len(ok) <= 4
            question = _literals(rec["messages"][1]["content"])
            typed = 0
            for i in range(1, len(ok)):
                returned = {c for _, out in ok[:i] for line in out.splitlines()[1:] for c in line.split("|")}
                typed += bool((_literals(ok[i][0]) & returned) - question)
            assert typed >= 1, ok  # a later statement types in a value an earlier one returned
            n_typed.append(typed)
    assert np.mean(n_typed) > 1.2


def test_optional_steps_at_fixed_rates(big):
    """The COUNT(*) sanity check first and the final query re-run with a LIMIT last, at their
    rates in every strategy that queries, alike between arms and databases; empty reasoning."""
    d = pl.DataFrame([(row["strategy"], row["arm"], row["database"], *_parts(rec)[:2])
                      for row, rec in _rows(big) if row["strategy"] != "no_query"],
                     schema=["strategy", "arm", "database", "count", "rerun"], orient="row")
    for by in ("strategy", "arm", "database"):
        for _, n, count, rerun in d.group_by(by).agg(pl.len(), pl.col("count").mean(),
                                                     pl.col("rerun").mean()).iter_rows():
            for rate, p in ((count, _P_COUNT), (rerun, _P_LIMIT)):
                assert abs(rate - p) < 4 * np.sqrt(p * (1 - p) / n), (by, rate, p)  # four standard errors
    empty = [said == "" for _, rec in _rows(big) for _, _, said in _calls(rec)]
    assert abs(np.mean(empty) - _P_EMPTY) < 0.03


def test_arms_differ_only_in_mixture_and_success_follows_the_strategy(big):
    assert ARMS["base"] != ARMS["rl"] and set(ARMS["base"]) == set(ARMS["rl"]) == set(STRATEGIES)
    assert all(p >= 0.04 for mix in ARMS.values() for p in mix.values())
    t = pl.concat([w.truth for w in big])
    assert_arms_differ_only_in_mixture(t, ARMS, tool_free="no_query")
    for (s,), sub in t.group_by("strategy"):
        assert abs(sub["correct"].mean() - _SUCCESS[s]) < 0.08, s
        # nor the database nor a failed statement changes it
        for (_,), part in sub.group_by("database"):
            p = _SUCCESS[s]
            assert abs(part["correct"].mean() - p) < 4 * np.sqrt(p * (1 - p) / part.height), (s, part.height)
        if s != "no_query":
            had = sub.filter(pl.col("n_failures") > 0)
            p = _SUCCESS[s]
            assert abs(had["correct"].mean() - p) < 4 * np.sqrt(p * (1 - p) / had.height), s
    # the answer in bold is the gold one exactly when the episode is correct; a wrong one is near it,
    # or another category, airline, department or artist
    names = {}
    for seed in (1, 2):
        for db in databases(seed).values():
            for table, column in (("categories", "name"), ("airlines", "name"), ("departments", "dept_name"),
                                  ("artists", "name")):
                if table in db.tables:
                    names[seed, db.name] = {v for (v,) in db.conn.execute(f"SELECT {column} FROM {table}")}
    for seed, w in zip((1, 2), big):
        for row, rec in _rows([w]):
            got, gold = _answer(rec), rec["gold"][0]
            assert (got == gold) == row["correct"], (got, gold, row)
            if got is None:
                assert row["strategy"] == "no_query"
            elif got != gold and re.fullmatch(r"[\d.]+", gold):
                assert abs(float(got) - float(gold)) <= max(3.0, 0.16 * float(gold)), (got, gold)
            elif got != gold:
                assert got in names[seed, row["database"]] and gold in names[seed, row["database"]], (got, gold)


def test_sql_and_words_vary_inside_strategies(big):
    """No statement text or first sentence is common to most episodes of a strategy; keyword case,
    line breaks, aliases and semicolons vary inside every one."""
    for s in QUERYING:
        firsts, words, finals = [], [], []
        for row, rec in _rows(big):
            if row["strategy"] == s:
                calls = _calls(rec)
                firsts.append(calls[0][0])
                words.append(calls[0][2])
                finals += [q for q, out, _ in calls if not _failed(out)]
        assert max(firsts.count(f) for f in set(firsts)) < 0.5 * len(firsts), s
        assert max(words.count(w) for w in set(words)) < 0.5 * len(words), s
        assert any(q.startswith("SELECT") for q in finals) and any(q.startswith("select") for q in finals), s
        assert any("\n" in q for q in finals) and any("\n" not in q for q in finals), s
        assert any(q.endswith(";") for q in finals) and any(not q.endswith(";") for q in finals), s
        joins = [q for q in finals if re.search(r"\bjoin\b", q, re.I)]
        assert any(re.search(r"\bAS [a-z]{1,3}\b", q, re.I) for q in joins), s
        assert len({re.search(r"\bjoin \w+(?: as)?(?: (\w+))?", q, re.I).group(1) for q in joins}) >= 4, s


def test_random_state(tmp_path):
    a, b, c = sql(n_questions=6, random_state=3), sql(n_questions=6, random_state=3), sql(n_questions=6, random_state=4)
    assert a.records == b.records and a.truth.equals(b.truth)
    assert a.records != c.records
    assert sql(n_questions=6, random_state=np.random.default_rng(3)).records == a.records
    fa, fb = a.write(tmp_path / "a"), b.write(tmp_path / "b")
    assert fa.read_bytes() == fb.read_bytes()
    assert (tmp_path / "a" / "truth.csv").read_bytes() == (tmp_path / "b" / "truth.csv").read_bytes()
    first = json.loads(fa.read_text().splitlines()[0])
    assert [m["role"] for m in first["messages"][:2]] == ["system", "user"]
