"""The dual-control technical-support world (mechanism.datasets.worlds.support): OpenAI records
read back with `mechanism.read` as a user's files are (the user's replies between the tool
calls kept), the truth it carries, and the planted design (each strategy's shape, the fix set
by the kind of issue, failures followed by the corrected call of the same tool, optional steps
at fixed rates, every strategy on every kind of issue, arms differing only in their mixture,
success set by the strategy alone). Strategy discovery is not evaluated here."""
from __future__ import annotations

import json
import re

import numpy as np
import polars as pl
import pytest
from world_checks import assert_arms_differ_only_in_mixture, assert_success_follows_the_strategy

import mechanism as mx
from mechanism.core.schema import USER_TURNS_JOIN
from mechanism.datasets import worlds
from mechanism.datasets.worlds import support
from mechanism.datasets.worlds.support import (
    _FAIL_503,
    _NUMBER_ASKS,
    _OFFSCRIPT,
    _P_503,
    _P_FAIL,
    _P_FINAL_LINE,
    _P_OFFSCRIPT,
    _P_RATE,
    _P_RECHECK,
    _P_VOLUNTEER,
    _RATE_ASKS,
    _SUCCESS,
    _WORKS,
    ARMS,
    FIX,
    KINDS,
    STRATEGIES,
    TOOLS,
)

ACTIONS = {*FIX.values(), "open_ticket", "transfer_to_human"}
FEATURE = {"mms": "mms", "wifi_calling": "wifi_calling"}
LOOKUP = {"no_data": "get_data_usage", "roaming": "get_line_details", "mms": "get_line_details",
          "sim_swap": "get_line_details", "wifi_calling": "get_line_details"}
ABBREV = {"get_customer": "GC", "get_line_details": "GLD", "get_data_usage": "GDU", "check_network_status": "CNS",
          "reset_network_settings": "RESET", "open_ticket": "TICKET", "transfer_to_human": "HUMAN"}
# the shape of each strategy, from its first event to its closing action (F: the kind's fix;
# ASK: a request to the user about the device; a number asked for, off-script turns and the
# optional steps left out)
SHAPES = {
    "account_first": r"GC GLD (GDU )?ASK F",
    "device_first": r"ASK ASK (ASK ){0,2}GC (GLD )?F",
    "outage_first": r"CNS ASK GC (GLD )?F",
    "checklist": r"ASK ASK GC GLD CNS GDU ASK ASK F",
    "quick_fix": r"GC (RESET )?F",
    "escalate": r"GC (ASK|GLD) (TICKET|HUMAN)",
    "hypothesis_test": r"GC (ASK (CNS|GDU|GLD) ){1,3}F",
}


@pytest.fixture(scope="module")
def world():
    return support()  # the default size: 60 requests, 4 samples, two arms


@pytest.fixture(scope="module")
def read(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("support")), format="openai", report=True)


@pytest.fixture(scope="module")
def big():
    """A larger sample for the rates (both arms, pooled over two seeds)."""
    return [support(n_questions=150, random_state=seed) for seed in (1, 2)]


@pytest.fixture(scope="module")
def alone():
    """Each strategy alone in both arms, for the rates of the optional steps inside it."""
    return {s: support(n_questions=60, arms={"base": {s: 1.0}, "rl": {s: 1.0}}, random_state=7 + i)
            for i, s in enumerate(STRATEGIES)}


def _rows(ws):
    return [(row, rec) for w in ws for row, rec in zip(w.truth.iter_rows(named=True), w.records)]


def _failed(obs: str) -> bool:
    if obs.startswith(("Error:", "503 Service Unavailable")):
        return True
    return obs.startswith("{") and "error" in json.loads(obs)


def _events(record):
    """The episode after the first message: ("call", tool, args, failed) for every tool call,
    ("ask", what, request, reply) for every request to the user and its reply (what: number,
    rate, offscript or device), ("final", text) for the closing message."""
    msgs = record["messages"][2:]
    results = {m["tool_call_id"]: m["content"] for m in msgs if m["role"] == "tool"}
    out = []
    for i, m in enumerate(msgs):
        if m["role"] != "assistant":
            continue
        if m.get("tool_calls"):
            for c in m["tool_calls"]:
                obs = results[c["id"]]
                out.append(("call", c["function"]["name"], json.loads(c["function"]["arguments"]), obs, _failed(obs)))
        elif i + 1 < len(msgs):
            reply = msgs[i + 1]
            assert reply["role"] == "user", m  # the assistant speaks to the user only to ask
            req, text = m["content"], reply["content"]
            what = ("number" if req in _NUMBER_ASKS else "rate" if req.endswith(_RATE_ASKS)
                    else "offscript" if text in _OFFSCRIPT else "device")
            out.append(("ask", what, req, text))
        else:
            out.append(("final", m["content"]))
    return out


def _tokens(record, kind):
    """The shape's tokens (successful calls and device requests), the optional tail apart."""
    toks = []
    for e in _events(record):
        if e[0] == "call" and not e[4]:
            toks.append("F" if e[1] == FIX[kind] else ABBREV[e[1]])
        elif e[0] == "ask" and e[1] == "device":
            toks.append("ASK")
    last = max(i for i, t in enumerate(toks) if t in ("F", "TICKET", "HUMAN"))
    core, tail = toks[:last + 1], toks[last + 1:]
    if core[-1] == "F":  # the user asked to restart and confirm
        assert tail[:1] == ["ASK"], toks
        tail = tail[1:]
    return core, tail


def test_is_a_planted_world(world):
    assert isinstance(world, worlds.PlantedWorld)
    assert world.format == "openai" and world.name == "support"
    assert "support" in worlds.__all__ and "support" in worlds.WORLDS
    assert worlds.support is support
    assert world.truth.columns == ["arm", "question_id", "sample_id", "strategy", "kind", "n_calls", "n_failures",
                                   "n_user_turns", "correct"]
    assert world.truth.height == len(world.records) == 2 * 60 * 4
    # every strategy and every kind at the default size, and every strategy on every kind
    assert set(world.truth["strategy"]) == set(STRATEGIES) and set(world.truth["kind"]) == set(KINDS)
    assert world.truth.group_by("strategy", "kind").len().height == len(STRATEGIES) * len(KINDS)
    questions = {rec["question_id"]: rec["messages"][1]["content"] for rec in world.records}
    assert len(questions) == 60 and len(set(questions.values())) == 60
    assert world.planted["shares"]["rl"] == pytest.approx(ARMS["rl"])


def test_reads_back_with_the_users_replies(world, read):
    runs, report = read
    assert report.skipped == [] and runs.height == len(world.records)
    assert not any(label is None for label in world.labels_for(runs))
    t = world.join_truth(runs)
    assert runs["n_rounds"].to_list() == t["n_calls"].to_list()
    assert world.runs["n_rounds"].to_list() == world.truth["n_calls"].to_list()
    assert {s["tool"] for steps in runs["steps"].to_list() for s in steps} == set(TOOLS)
    got = runs.join(world.truth, on=["arm", "question_id", "sample_id"])
    assert got["correct"].to_list() == got["correct_right"].to_list()
    by_key = {(r["arm"], r["question_id"], r["sample_id"]): r for r in world.records}
    for row in runs.iter_rows(named=True):
        rec = by_key[(row["arm"], row["question_id"], row["sample_id"])]
        later = [m["content"] for m in rec["messages"][2:] if m["role"] == "user"]
        assert row["question"] == rec["messages"][1]["content"]
        # every later user turn is kept: in the step of the next call, or after the last call
        kept = [s["user"] for s in row["steps"] if s["user"] is not None]
        tail = json.loads(row["meta"]).get("user_after_last_call") if row["meta"] else None
        assert USER_TURNS_JOIN.join(kept + ([tail] if tail else [])) == USER_TURNS_JOIN.join(later)
        assert row["answer"] == rec["messages"][-1]["content"]


def test_counts_match_the_records_and_failures_are_corrected(big):
    forms = {}
    for row, rec in _rows(big):
        calls = [e for e in _events(rec) if e[0] == "call"]
        assert len(calls) == row["n_calls"] and sum(c[4] for c in calls) == row["n_failures"]
        assert sum(m["role"] == "user" for m in rec["messages"]) - 1 == row["n_user_turns"]
        assert [m["role"] for m in rec["messages"][:2]] == ["system", "user"]
        last = rec["messages"][-1]
        assert last["role"] == "assistant" and not last.get("tool_calls") and last["content"]
        for i, (_, tool, args, obs, failed) in enumerate(calls):
            if failed:  # the corrected call of the same tool at once
                _, tool2, args2, obs2, failed2 = calls[i + 1]
                assert tool2 == tool and not failed2, (tool, obs)
                assert (args2 == args) == (obs == _FAIL_503), (args, args2, obs)
                form = ("503" if obs == _FAIL_503 else "Error:" if obs.startswith("Error:")
                        else json.loads(obs)["error"])
                forms[form] = forms.get(form, 0) + 1
    assert {"503", "Error:", "customer_not_found", "invalid_phone_number", "unknown_feature",
            "summary is required"} <= set(forms), forms
    assert abs(forms["503"] / sum(forms.values()) - _P_503) < 0.05, forms


def test_each_strategy_has_its_shape_and_the_kind_decides_the_fix(big):
    counts, turns = {s: set() for s in STRATEGIES}, {s: set() for s in STRATEGIES}
    for row, rec in _rows(big):
        s, kind = row["strategy"], row["kind"]
        core, tail = _tokens(rec, kind)
        assert re.fullmatch(SHAPES[s], " ".join(core)), (s, core)
        assert tail in ([], ["GLD"], ["GC"], ["GLD", "GC"]), (s, tail)
        counts[s].add(sum(t != "ASK" for t in core))
        turns[s].add(core.count("ASK") + (core[-1] == "F"))
        calls = [e for e in _events(rec) if e[0] == "call" and not e[4]]
        fixes = [c for c in calls if c[1] in FIX.values()]
        if s == "escalate":
            assert fixes == []
        else:  # exactly one fix, the kind's, with the kind's feature
            assert [c[1] for c in fixes] == [FIX[kind]]
            if kind in FEATURE:
                assert fixes[0][2]["feature"] == FEATURE[kind]
        if s == "hypothesis_test":  # the last hypothesis is the right one, each lookup once
            looked = [t for t in core if t in ("CNS", "GDU", "GLD")]
            assert looked[-1] == ABBREV[LOOKUP[kind]] and len(set(looked)) == len(looked)
        if s == "device_first":  # the user asked about the device before any tool call
            first = next(i for i, e in enumerate(_events(rec)) if e[0] == "call")
            assert sum(e[0] == "ask" and e[1] == "device" for e in _events(rec)[:first]) >= 2
    assert counts == {"account_first": {3, 4}, "device_first": {2, 3}, "outage_first": {3, 4}, "checklist": {5},
                      "quick_fix": {2, 3}, "escalate": {2, 3}, "hypothesis_test": {3, 4, 5}}, counts
    assert turns == {"account_first": {2}, "device_first": {3, 4, 5}, "outage_first": {2}, "checklist": {5},
                     "quick_fix": {1}, "escalate": {0, 1}, "hypothesis_test": {2, 3, 4}}, turns
    # call counts overlap between strategies, with the optional steps and failures too
    t = pl.concat([w.truth for w in big])
    spans = {s: (sub["n_calls"].min(), sub["n_calls"].max()) for (s,), sub in t.group_by("strategy")}
    assert all(lo <= 5 <= hi for lo, hi in spans.values()), spans


def test_every_strategy_on_every_kind_of_issue(big):
    t = pl.concat([w.truth for w in big])
    assert set(t.select("strategy", "kind").unique().iter_rows()) == {(s, k) for s in STRATEGIES for k in KINDS}
    for arm in ARMS:  # the strategy is drawn independently of the kind
        sub = t.filter(pl.col("arm") == arm)
        overall = dict(sub["strategy"].value_counts(normalize=True).iter_rows())
        for k in KINDS:
            got = dict(sub.filter(pl.col("kind") == k)["strategy"].value_counts(normalize=True).iter_rows())
            for s in STRATEGIES:
                assert abs(got.get(s, 0.0) - overall[s]) < 0.1, (arm, k, s)


def test_failures_at_the_planted_rate_in_every_strategy(big):
    t = pl.concat([w.truth for w in big])
    for s in STRATEGIES:
        sub = t.filter(pl.col("strategy") == s)
        rate = sub["n_failures"].sum() / (sub["n_calls"].sum() - sub["n_failures"].sum())  # per first attempt
        assert abs(rate - _P_FAIL) < 0.04, (s, rate)


def test_arms_differ_only_in_mixture_and_success_follows_the_strategy(big):
    assert ARMS["base"] != ARMS["rl"] and set(ARMS["base"]) == set(ARMS["rl"]) == set(STRATEGIES)
    assert all(p >= 0.05 for mix in ARMS.values() for p in mix.values())
    t = pl.concat([w.truth for w in big])
    assert_arms_differ_only_in_mixture(t, ARMS, tool_free="(none)")
    t = t.with_columns(failed=pl.col("n_failures") > 0, volunteered=pl.Series(
        [not any(e[0] == "ask" and e[1] == "number" for e in _events(rec)) for _, rec in _rows(big)]))
    assert_success_follows_the_strategy(t, _SUCCESS, by=("arm", "kind", "failed", "volunteered"))
    # the user's last word about the device says whether it worked
    for row, rec in _rows(big):
        if row["strategy"] != "escalate":
            confirm = [e for e in _events(rec) if e[0] == "ask" and e[1] == "device"][-1][3]
            assert (confirm in _WORKS[row["kind"]]) == row["correct"], confirm


def test_optional_steps_at_fixed_rates_in_every_strategy(alone):
    rows = []
    for s, w in alone.items():
        for row, rec in _rows([w]):
            _, tail = _tokens(rec, row["kind"])
            asks = [e for e in _events(rec) if e[0] == "ask"]
            rows.append((s, row["arm"], row["kind"], "GLD" in tail, "GC" in tail,
                         any(e[1] == "rate" for e in asks)))
    d = pl.DataFrame(rows, schema=["strategy", "arm", "kind", "line", "recheck", "rate"], orient="row")
    for col, p in (("line", _P_FINAL_LINE), ("recheck", _P_RECHECK), ("rate", _P_RATE)):
        assert abs(d[col].mean() - p) < 0.03, (col, d[col].mean())
        for by in ("strategy", "arm", "kind"):
            for _, n, rate in d.group_by(by).agg(pl.len(), pl.col(col).mean()).iter_rows():
                assert abs(rate - p) < 4 * np.sqrt(p * (1 - p) / n), (col, by, rate, p)


def test_the_user_gives_the_number_once_and_answers_off_script(alone):
    volunteered, offscript, device = [], 0, 0
    for w in alone.values():
        for _, rec in _rows([w]):
            ev = _events(rec)
            asked = [i for i, e in enumerate(ev) if e[0] == "ask" and e[1] == "number"]
            first = next(i for i, e in enumerate(ev) if e[0] == "call")
            assert len(asked) <= 1 and all(i < first for i in asked)  # asked once, before it is needed
            number = next(e[2]["phone_number"] for e in ev if e[0] == "call" and e[1] == "get_customer"
                          and not e[4])
            assert (not asked) == (number in re.sub(r"\D", "", rec["messages"][1]["content"]))
            if asked:
                assert number in re.sub(r"\D", "", ev[asked[0]][3])
            volunteered.append(not asked)
            for i, e in enumerate(ev):
                if e[0] == "ask" and e[1] == "offscript":  # answered, then asked again
                    offscript += 1
                    assert ev[i + 1][0] == "ask" and ev[i + 1][1] == "device" and ev[i + 1][2].endswith(e[2])
                device += e[0] == "ask" and e[1] == "device"
    assert abs(np.mean(volunteered) - _P_VOLUNTEER) < 0.08
    assert abs(offscript / device - _P_OFFSCRIPT) < 0.02, offscript / device


def test_wording_varies_inside_strategies(big):
    for s in STRATEGIES:
        said, asks = [], []
        for row, rec in _rows(big):
            if row["strategy"] == s:
                said.append(rec["messages"][-1]["content"])
                asks.extend(e[2] for e in _events(rec) if e[0] == "ask" and e[1] == "device")
        assert max(said.count(x) for x in set(said)) < 0.5 * len(said), s
        if asks:
            assert len(set(asks)) >= 3, s


def test_random_state(tmp_path):
    a, b, c = (support(n_questions=6, random_state=3), support(n_questions=6, random_state=3),
               support(n_questions=6, random_state=4))
    assert a.records == b.records and a.truth.equals(b.truth)
    assert a.records != c.records
    assert support(n_questions=6, random_state=np.random.default_rng(3)).records == a.records
    fa, fb = a.write(tmp_path / "a"), b.write(tmp_path / "b")
    assert fa.read_bytes() == fb.read_bytes()
    assert (tmp_path / "a" / "truth.csv").read_bytes() == (tmp_path / "b" / "truth.csv").read_bytes()
    assert len(support(n_questions=3, random_state=None).records) == 2 * 3 * 4
