"""The long-term-memory assistant world (mechanism.datasets.worlds.memory, Letta-like): OpenAI records
read back with `mechanism.read` as a user's files are, the truth it carries, and the planted design
(Letta-shaped transcripts where the agent speaks only through send_message, every tool call answered
by its own tool message, each strategy's shape of calls, search results that follow where the facts
live, answers that hold the facts exactly when correct, failures followed by the corrected call of
the same tool, optional steps at fixed rates, every strategy on every source, arms differing only
in their mixture, success set by the strategy alone). Strategy discovery is not evaluated here."""
from __future__ import annotations

import json
import re
from datetime import datetime

import numpy as np
import polars as pl
import pytest
from world_checks import assert_arms_differ_only_in_mixture, assert_success_follows_the_strategy

import mechanism as mx
from mechanism.datasets import worlds
from mechanism.datasets.worlds.memory import (
    _ASIDES,
    _P_ASIDE,
    _P_FAIL,
    _P_INSERT,
    _P_PAGE,
    _P_THOUGHT,
    _P_TRAILING,
    _P_TRANSIENT,
    _SUCCESS,
    ARMS,
    NO_RESULTS,
    SOURCES,
    STRATEGIES,
    TOOLS,
    TRANSIENT,
    memory,
)

ABBREV = {"send_message": "SM", "archival_memory_search": "AS", "conversation_search": "CS",
          "conversation_search_date": "CD", "core_memory_append": "CA", "core_memory_replace": "CR"}
# the shape of each strategy (successful calls, the optional steps left out; U: the user's reply;
# k: the question's facts)
SHAPES = {
    "answer_from_core": "SM",
    "archival_lookup": "(AS ){k}SM",
    "recall_lookup": "(CS ){k}SM",
    "date_range_recall": "(CD ){k}SM",
    "search_both_stores": "(AS CS ){k}SM",
    "consolidate_to_core": "((AS ){k}|(CS ){k})(CA|CR) SM",
    "clarify_then_search": "SM U ((AS ){k}|(CS ){k}|(CD ){k})SM",
}
#: the errors of a failed call that is not transient
ERRORS = {"empty query": r"ValueError: query must be a non-empty string",
          "list query": r"TypeError: query must be str, not list",
          "page": r"ValueError: page \d+ is out of range \(results have 2 pages\)",
          "date format": r"ValueError: Invalid date format\. Expected format: YYYY-MM-DD",
          "date order": r"ValueError: start_date must be on or before end_date",
          "old content": r"ValueError: Old content '.+' not found in memory block 'human'",
          "label": r"ValueError: No memory section named '\w+' \(available sections: persona, human\)",
          "empty insert": r"ValueError: content must be a non-empty string"}
STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [AP]M [A-Z]{3,4}[+-]\d{4}"


@pytest.fixture(scope="module")
def world():
    return memory()  # the default size: 60 questions, 4 samples, two arms


@pytest.fixture(scope="module")
def read(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("memory")), format=world.format, report=True)


@pytest.fixture(scope="module")
def big():
    """A larger sample for the rates (both arms, pooled over two seeds)."""
    return [memory(n_questions=60, n_samples=8, random_state=seed) for seed in (1, 2)]


@pytest.fixture(scope="module")
def alone():
    """Each strategy alone in both arms, for the rates of the optional steps inside it."""
    return {s: memory(n_questions=60, random_state=11 + i, arms={"base": {s: 1.0}, "rl": {s: 1.0}})
            for i, s in enumerate(STRATEGIES)}


def _rows(ws):
    return [(row, rec) for w in ws for row, rec in zip(w.truth.iter_rows(named=True), w.records)]


def _events(record):
    """The episode after the first message: ("call", tool, args, status, message, thought) for
    every tool call, ("thought", text) for an assistant message without a call, ("user", text)."""
    msgs = record["messages"][2:]
    results = {m["tool_call_id"]: json.loads(m["content"]) for m in msgs if m["role"] == "tool"}
    out = []
    for m in msgs:
        if m["role"] == "user":
            out.append(("user", m["content"]))
        elif m["role"] == "assistant" and m.get("tool_calls"):
            (c,) = m["tool_calls"]
            res = results[c["id"]]
            out.append(("call", c["function"]["name"], json.loads(c["function"]["arguments"]), res["status"],
                        res["message"], m["content"]))
        elif m["role"] == "assistant":
            out.append(("thought", m["content"]))
    return out


def _calls(record, ok_only=False):
    return [e for e in _events(record) if e[0] == "call" and (not ok_only or e[3] == "OK")]


def _answer(record) -> str:
    return [e for e in _calls(record) if e[1] == "send_message"][-1][2]["message"]


def _tokens(record):
    """The shape's tokens: successful calls and user replies, the optional steps left out
    (archival_memory_insert, a page-1 call)."""
    toks = []
    for e in _events(record):
        if e[0] == "user":
            toks.append("U")
        elif e[0] == "call" and e[3] == "OK" and e[1] != "archival_memory_insert" and e[2].get("page") != 1:
            toks.append(ABBREV[e[1]])
    return toks


def _golds(record) -> list[str]:
    return record["gold"][0].split("; ")


def _names(text: str, value: str) -> bool:
    """``value`` in ``text`` as whole words (a dog called Chais is not in Chaisgoth)."""
    return re.search(rf"\b{re.escape(value)}\b", text) is not None


def test_is_a_planted_world(world):
    assert isinstance(world, worlds.PlantedWorld)
    assert world.format == "openai" and world.name == "memory"
    assert world.truth.columns == ["arm", "question_id", "sample_id", "strategy", "source", "n_facts", "n_calls",
                                   "n_failures", "n_send_messages", "n_user_turns", "correct"]
    assert world.truth.height == len(world.records) == 2 * 60 * 4
    assert set(world.truth["arm"]) == set(ARMS)
    assert set(world.truth["strategy"]) == set(STRATEGIES) and set(world.truth["source"]) == set(SOURCES)
    assert set(world.truth["n_facts"]) == {1, 2}
    questions = {rec["question_id"]: rec["messages"][1]["content"] for rec in world.records}
    assert len(questions) == 60 and len(set(questions.values())) == 60
    assert world.planted["shares"]["rl"] == pytest.approx(ARMS["rl"])
    assert world.planted["success"] == pytest.approx(_SUCCESS)
    for row, rec in _rows([world]):  # the record carries the outcome and the facts' values
        assert rec["correct"] == row["correct"] and len(_golds(rec)) == row["n_facts"]


def test_reads_back(world, read):
    runs, report = read
    assert report.skipped == [] and runs.height == len(world.records)
    assert not any(label is None for label in world.labels_for(runs))
    t = world.join_truth(runs)
    # a message to the user (send_message) is the agent's words, not a round (mechanism.readers.openai)
    assert runs["n_rounds"].to_list() == (t["n_calls"] - t["n_send_messages"]).to_list()
    assert runs["correct"].to_list() == t["correct"].to_list()
    assert world.runs["n_rounds"].to_list() == (world.truth["n_calls"] - world.truth["n_send_messages"]).to_list()
    assert {s["tool"] for steps in runs["steps"].to_list() for s in steps} == set(TOOLS) - {"send_message"}
    by_key = {(r["arm"], r["question_id"], r["sample_id"]): r for r in world.records}
    for row in runs.iter_rows(named=True):
        rec = by_key[(row["arm"], row["question_id"], row["sample_id"])]
        assert row["question"] == rec["messages"][1]["content"]
        assert row["gold"] == rec["gold"]
        calls = [c for c in _calls(rec) if c[1] != "send_message"]
        assert [s["tool"] for s in row["steps"]] == [c[1] for c in calls]
        replies = [e[1] for e in _events(rec) if e[0] == "user"]
        assert [s["user"] for s in row["steps"] if s["user"]] == replies  # the clarifying answer, on the next call


def test_the_answer_read_is_the_last_send_message(world, read):
    # the reading fault this world found: the answer was read from the last message (a trailing
    # inner thought, or none where the transcript ends on send_message's tool result)
    runs, _ = read
    by_key = {(r["arm"], r["question_id"], r["sample_id"]): r for r in world.records}
    got = [row["answer"] == _answer(by_key[(row["arm"], row["question_id"], row["sample_id"])])
           for row in runs.iter_rows(named=True)]
    assert all(got), f"{len(got) - sum(got)} of {len(got)} answers differ"


def test_transcripts_are_letta_shaped(big):
    uuid = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{5}")
    for _, rec in _rows(big):
        msgs = rec["messages"]
        assert [m["role"] for m in msgs[:2]] == ["system", "user"]
        assert "<persona" in msgs[0]["content"] and "<human" in msgs[0]["content"]
        ids, times = set(), []
        for i, m in enumerate(msgs[2:], start=2):
            if m["role"] == "assistant":
                assert m["content"] is None or isinstance(m["content"], str)
                for c in m.get("tool_calls") or []:
                    assert len(m["tool_calls"]) == 1  # one call per step
                    res = msgs[i + 1]  # answered at once, by the matching id
                    assert res["role"] == "tool" and res["tool_call_id"] == c["id"] and c["id"] not in ids
                    assert uuid.fullmatch(c["id"]) and res["name"] == c["function"]["name"] in TOOLS
                    ids.add(c["id"])
                    out = json.loads(res["content"])
                    assert list(out) == ["status", "message", "time"] and out["status"] in ("OK", "Failed")
                    assert re.fullmatch(STAMP, out["time"])
                    times.append(datetime.strptime(out["time"][:22], "%Y-%m-%d %I:%M:%S %p"))
                    args = json.loads(c["function"]["arguments"])
                    hb = args.get("request_heartbeat")
                    assert hb is None or hb is (c["function"]["name"] != "send_message"), args
                    if out["status"] == "OK" and c["function"]["name"] in ("send_message", "core_memory_append",
                                                                           "core_memory_replace",
                                                                           "archival_memory_insert"):
                        assert out["message"] == "None"
            elif m["role"] == "user":  # the user speaks again only after a send_message
                assert msgs[i - 1]["role"] == "tool" and msgs[i - 1]["name"] == "send_message"
        assert times == sorted(times)
        calls = _calls(rec)
        assert calls[-1][1] == "send_message" and calls[-1][3] == "OK"
        last = msgs[-1]  # no plain final text: the send_message result, or an inner thought after it
        assert (last["role"] == "tool" and last["name"] == "send_message") or (
            last["role"] == "assistant" and not last.get("tool_calls") and msgs[-2]["name"] == "send_message")
        answer = _answer(rec)  # said only through send_message, never in the inner monologue
        assert all(answer not in (m.get("content") or "") for m in msgs if m["role"] == "assistant")


def test_counts_match_the_records_and_failures_are_corrected(big):
    forms = {}
    for row, rec in _rows(big):
        calls = _calls(rec)
        assert len(calls) == row["n_calls"] and sum(c[3] == "Failed" for c in calls) == row["n_failures"]
        assert sum(c[1] == "send_message" for c in calls) == row["n_send_messages"]
        assert row["n_send_messages"] == (2 if row["strategy"] == "clarify_then_search" else 1)
        assert sum(m["role"] == "user" for m in rec["messages"]) - 1 == row["n_user_turns"]
        for i, (_, tool, args, status, message, _) in enumerate(calls):
            if tool == "send_message":
                assert status == "OK"  # speaking never fails
            if status == "Failed":  # the corrected call of the same tool, at once
                _, tool2, args2, status2, _, _ = calls[i + 1]
                assert tool2 == tool and status2 == "OK", (tool, message)
                assert message.startswith(f"Error calling function {tool}: ")
                error = message.removeprefix(f"Error calling function {tool}: ")
                transient = error == TRANSIENT[tool]
                assert (args2 == args) == transient, (args, args2, message)
                form = "transient" if transient else [f for f, pattern in ERRORS.items()
                                                      if re.fullmatch(pattern, error)]
                assert transient or len(form) == 1, error
                form = form if transient else form[0]
                forms[form] = forms.get(form, 0) + 1
    assert set(forms) == {"transient", *ERRORS}, forms
    assert abs(forms["transient"] / sum(forms.values()) - _P_TRANSIENT) < 0.06, forms


def test_each_strategy_has_its_shape(big):
    counts = {s: set() for s in STRATEGIES}
    for row, rec in _rows(big):
        s, k = row["strategy"], row["n_facts"]
        toks = _tokens(rec)
        assert re.fullmatch(SHAPES[s].replace("{k}", f"{{{k}}}"), " ".join(toks)), (s, k, toks)
        if s == "clarify_then_search":  # the first message is a question to the user, before any search
            first = _calls(rec, ok_only=True)
            first = [c for c in first if c[1] != "archival_memory_insert"][0]
            assert first[1] == "send_message" and first[2]["message"].rstrip().endswith("?")
        counts[s].add(len([x for x in toks if x != "U"]))
    assert counts == {"answer_from_core": {1}, "archival_lookup": {2, 3}, "recall_lookup": {2, 3},
                      "date_range_recall": {2, 3}, "search_both_stores": {3, 5}, "consolidate_to_core": {3, 4},
                      "clarify_then_search": {3, 4}}, counts
    # call counts overlap between strategies, with the optional steps and failures too
    t = pl.concat([w.truth for w in big])
    spans = {s: (sub["n_calls"].min(), sub["n_calls"].max()) for (s,), sub in t.group_by("strategy")}
    for s, (lo, hi) in spans.items():
        overlapping = [o for o, (lo2, hi2) in spans.items() if o != s and lo2 <= hi and lo <= hi2]
        assert len(overlapping) >= 4, (s, spans)


def test_search_results_follow_where_the_facts_live(big):
    seen = {"AS": set(), "CS": set(), "CD": set()}
    for row, rec in _rows(big):
        golds, source = _golds(rec), row["source"]
        human = rec["messages"][0]["content"].split("<human")[1]
        inside = [_names(human, g) for g in golds]
        assert all(inside) == (source == "core") and (source == "core" or not any(inside)), (source, golds)
        calls = _calls(rec, ok_only=True)
        for i, (_, tool, args, _, message, _) in enumerate(calls):
            if tool not in ("archival_memory_search", "conversation_search", "conversation_search_date"):
                continue
            paged = i + 1 < len(calls) and calls[i + 1][1] == tool and calls[i + 1][2].get("page") == 1
            held = paged and args.get("page") != 1  # a first page shown before its page 1: nothing relevant
            found = any(_names(message, g) for g in golds)
            if tool == "archival_memory_search":
                assert message == NO_RESULTS or isinstance(json.loads(message), list)
                if held:
                    assert not found
                else:
                    assert found == (source == "archival"), (source, message)
                seen["AS"].add((source, found))
            else:
                assert message == NO_RESULTS or re.match(r"Showing \d+ of \d+ results \(page \d/\d\): \[", message)
                assert found != held, (tool, held, message)  # recall memory holds every past message
                seen["CS" if tool == "conversation_search" else "CD"].add((source, found))
            if tool == "conversation_search_date":  # every message shown lies in the range asked for
                shown = json.loads(message.split("): ", 1)[1])
                days = [re.match(r"timestamp: (\d{4}-\d\d-\d\d)", x).group(1) for x in shown]
                assert all(args["start_date"] <= d <= args["end_date"] for d in days), (args, days)
    assert seen["AS"] == {("archival", True), ("archival", False), ("core", False), ("conversation", False)}
    assert {s for s, f in seen["CS"] if f} == {s for s, f in seen["CD"] if f} == set(SOURCES)


def test_the_answer_holds_the_facts_exactly_when_correct(big):
    wrong = {"forgot": 0, "value": 0}
    for row, rec in _rows(big):
        answer, golds = _answer(rec), _golds(rec)
        assert all(_names(answer, g) for g in golds) == row["correct"], (row["correct"], golds, answer)
        if not row["correct"]:
            wrong["forgot" if "?" in answer or answer.startswith("No,") else "value"] += 1
    assert min(wrong.values()) > 0.3 * sum(wrong.values()), wrong


def test_every_strategy_on_every_source(big):
    t = pl.concat([w.truth for w in big])
    assert set(t.select("strategy", "source", "n_facts").unique().iter_rows()) == {
        (s, src, k) for s in STRATEGIES for src in SOURCES for k in (1, 2)}
    for arm in ARMS:  # the strategy is drawn independently of the question
        sub = t.filter(pl.col("arm") == arm)
        overall = dict(sub["strategy"].value_counts(normalize=True).iter_rows())
        for src in SOURCES:
            got = dict(sub.filter(pl.col("source") == src)["strategy"].value_counts(normalize=True).iter_rows())
            for s in STRATEGIES:
                assert abs(got.get(s, 0.0) - overall[s]) < 0.08, (arm, src, s)


def test_failures_at_the_planted_rate_in_every_strategy(big):
    t = pl.concat([w.truth for w in big])
    for s in STRATEGIES:
        sub = t.filter(pl.col("strategy") == s)
        first = sub["n_calls"].sum() - sub["n_send_messages"].sum() - sub["n_failures"].sum()  # first attempts
        rate = sub["n_failures"].sum() / first
        assert abs(rate - _P_FAIL) < 4 * np.sqrt(_P_FAIL * (1 - _P_FAIL) / first), (s, rate, first)


def test_arms_differ_only_in_mixture_and_success_follows_the_strategy(big):
    assert ARMS["base"] != ARMS["rl"] and set(ARMS["base"]) == set(ARMS["rl"]) == set(STRATEGIES)
    assert all(p >= 0.05 for mix in ARMS.values() for p in mix.values())
    t = pl.concat([w.truth for w in big])
    assert_arms_differ_only_in_mixture(t, ARMS, tool_free="(none)")
    t = t.with_columns(failed=pl.col("n_failures") > 0)
    assert_success_follows_the_strategy(t, _SUCCESS, by=("arm", "source", "n_facts", "failed"))


def test_optional_steps_at_fixed_rates_in_every_strategy(alone):
    rows, asides, pages = [], [], []
    for s, w in alone.items():
        for row, rec in _rows([w]):
            ev = _events(rec)
            calls = [e for e in ev if e[0] == "call"]
            ok = [c for c in calls if c[3] == "OK"]
            inserts = [c for c in ok if c[1] == "archival_memory_insert"]
            if inserts:  # the episode's first call, the aside the user just mentioned
                assert calls[0][1] == "archival_memory_insert" and len(inserts) == 1
            if any(rec["messages"][1]["content"].endswith(a) for a, _ in _ASIDES):  # the user mentioned one
                asides.append((s, row["arm"], row["source"], bool(inserts)))
            else:
                assert not inserts
            text = [c for c in ok if c[1] in ("archival_memory_search", "conversation_search")]
            first = next((c for c in ok if c[1] in ("archival_memory_search", "conversation_search",
                                                    "conversation_search_date")), None)
            paged = [c for c in ok if c[2].get("page") == 1]
            assert len(paged) <= 1
            if paged:  # right after the first page of the episode's first search, the same query
                i = ok.index(paged[0])
                assert ok[i - 1] is text[0] and ok[i - 1][1] == paged[0][1]
                assert ok[i - 1][2]["query"] == paged[0][2]["query"]
            if first is not None and first[1] != "conversation_search_date":
                pages.append((s, row["arm"], row["source"], bool(paged)))
            mid = sum(e[0] == "thought" for e in ev[:-1])
            trailing = ev[-1][0] == "thought"
            rows.append((s, row["arm"], row["source"], mid, trailing))
    d = pl.DataFrame(rows, schema=["strategy", "arm", "source", "thought", "trailing"], orient="row")
    checks = [(d, "thought", _P_THOUGHT), (d, "trailing", _P_TRAILING),
              (pl.DataFrame(pages, schema=["strategy", "arm", "source", "page"], orient="row"), "page", _P_PAGE)]
    ins = pl.DataFrame(asides, schema=["strategy", "arm", "source", "insert"], orient="row")
    checks.append((ins, "insert", _P_INSERT))
    assert abs(ins.height / d.height - _P_ASIDE) < 0.1  # about half the questions carry an aside
    for frame, col, p in checks:
        assert frame[col].cast(pl.Int64).max() == 1
        assert abs(frame[col].mean() - p) < 3.5 * np.sqrt(p * (1 - p) / frame.height), (col, frame[col].mean())
        for by in ("strategy", "arm", "source"):
            for _, n, rate in frame.group_by(by).agg(pl.len(), pl.col(col).mean()).iter_rows():
                assert abs(rate - p) < 4.5 * np.sqrt(p * (1 - p) / n), (col, by, rate, p)
    # paging only where the strategy's first search is a text search (never in date_range_recall)
    assert "date_range_recall" not in set(pl.DataFrame(pages, schema=["strategy", "arm", "source", "page"],
                                                       orient="row")["strategy"])


def test_wording_and_values_vary_inside_strategies(big):
    for s in STRATEGIES:
        said, thoughts, queries = [], set(), set()
        for row, rec in _rows(big):
            if row["strategy"] == s:
                said.append(_answer(rec))
                thoughts.update(c[5] for c in _calls(rec) if c[5])
                queries.update(c[2]["query"] for c in _calls(rec) if isinstance(c[2].get("query"), str))
        assert max(said.count(x) for x in set(said)) < 0.2 * len(said), s
        assert len(thoughts) >= 10, s
        assert s == "answer_from_core" or len(queries) >= 10 or s == "date_range_recall", s
    orders = set()  # the same call with its arguments in another order
    for _, rec in _rows(big):
        orders.update((c[1], tuple(c[2])) for c in _calls(rec) if c[1] == "conversation_search_date")
    assert len(orders) >= 2


def test_random_state(tmp_path):
    a, b, c = (memory(n_questions=6, random_state=3), memory(n_questions=6, random_state=3),
               memory(n_questions=6, random_state=4))
    assert a.records == b.records and a.truth.equals(b.truth)
    assert a.records != c.records
    assert memory(n_questions=6, random_state=np.random.default_rng(3)).records == a.records
    fa, fb = a.write(tmp_path / "a"), b.write(tmp_path / "b")
    assert fa.read_bytes() == fb.read_bytes()
    assert (tmp_path / "a" / "truth.csv").read_bytes() == (tmp_path / "b" / "truth.csv").read_bytes()
    assert a.runs.equals(b.runs)
    assert len(memory(n_questions=3, random_state=None).records) == 2 * 3 * 4
