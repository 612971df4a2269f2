"""The multi-agent airline-support world with handoffs (mechanism.datasets.worlds.handoff): OpenAI
records read back with `mechanism.read` as a user's files are, the truth it carries, and the
planted design (every tool call answered by its own tool message, handoffs naming the agent that
speaks next, each strategy's shape of orchestration, the kind's actions by the kind's
specialist, failures followed by the corrected call of the same tool, optional steps at fixed
rates, every strategy on every kind, arms differing only in their mixture, success set by the
strategy alone). Strategy discovery is not evaluated here."""
from __future__ import annotations

import json
import re

import numpy as np
import polars as pl
import pytest
from world_checks import assert_arms_differ_only_in_mixture, assert_reads_back, assert_success_follows_the_strategy

import mechanism as mx
from mechanism.datasets import worlds
from mechanism.datasets.worlds.handoff import (
    _ELSE_ASKS,
    _FAIL_503,
    _P_503,
    _P_ANYTHING_ELSE,
    _P_FAIL,
    _P_FAQ,
    _P_MEMBER,
    _P_VOLUNTEER,
    _SUCCESS,
    ACTIONS,
    AGENT_TOOLS,
    AGENTS,
    ARMS,
    KINDS,
    SECOND,
    SPECIALIST,
    STRATEGIES,
    TOOLS,
    handoff,
)

OPTIONAL = ("get_member", "faq_search")
ABBREV = {"lookup_reservation": "LR", "get_flight_status": "FS"}
# the shape of each strategy (successful calls, the optional steps left out; role.TOOL for a call,
# a>b for a handoff from a to b, a?b for b consulted as a tool; t: triage, s: the kind's
# specialist, 2: the chain's second specialist, w: a wrong specialist, h: the human; ACT: the
# kind's actions, FOLLOW: the second specialist's follow-up call)
SHAPES = {
    "triage_solo": r"t\.LR( t\.FS)?",
    "direct_handoff": r"t>s s\.LR s\.ACT",
    "gather_then_handoff": r"t\.LR t\.FS t>s s\.ACT",
    "agents_as_tools": r"t\.LR t\?s( t\?2)?",
    "bounce_back": r"t>w( w\.LR)? w>t t>s s\.LR s\.ACT",
    "specialist_chain": r"t>s s\.LR s\.ACT s>2 2\.FOLLOW",
    "escalate_human": r"t\.LR( t\.FS)? t>h",
}
# the call that follows the optional faq_search in each strategy (None: the answer)
AFTER_FAQ = {"triage_solo": lambda k: None, "direct_handoff": lambda k: ACTIONS[k][0],
             "gather_then_handoff": lambda k: ACTIONS[k][0], "bounce_back": lambda k: ACTIONS[k][0],
             "specialist_chain": lambda k: ACTIONS[k][0], "agents_as_tools": lambda k: f"ask_{SPECIALIST[k]}",
             "escalate_human": lambda k: "transfer_to_human"}


@pytest.fixture(scope="module")
def world():
    return handoff()  # the default size: 60 requests, 4 samples, two arms


@pytest.fixture(scope="module")
def read(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("handoff")), format="openai", report=True)


@pytest.fixture(scope="module")
def big():
    """A larger sample for the rates (both arms, pooled over two seeds)."""
    return [handoff(n_questions=150, random_state=seed) for seed in (1, 2)]


@pytest.fixture(scope="module")
def alone():
    """Each strategy alone in both arms, for the rates of the optional steps inside it."""
    return {s: handoff(n_questions=60, random_state=11 + i, arms={"base": {s: 1.0}, "rl": {s: 1.0}})
            for i, s in enumerate(STRATEGIES)}


def _rows(ws):
    return [(row, rec) for w in ws for row, rec in zip(w.truth.iter_rows(named=True), w.records)]


def _failed(obs: str) -> bool:
    if obs.startswith(("Error:", "HTTP 503")):
        return True
    return obs.startswith("{") and "error" in json.loads(obs)


def _events(record):
    """The episode after the first message: ("call", agent, tool, args, obs, failed) for every
    tool call, ("ask", agent, request, reply) for every message to the customer answered, and
    ("final", agent, text) for the closing message."""
    msgs = record["messages"][2:]
    results = {m["tool_call_id"]: m["content"] for m in msgs if m["role"] == "tool"}
    out = []
    for i, m in enumerate(msgs):
        if m["role"] != "assistant":
            continue
        if m.get("tool_calls"):
            for c in m["tool_calls"]:
                obs = results[c["id"]]
                out.append(("call", m["name"], c["function"]["name"], json.loads(c["function"]["arguments"]), obs,
                            _failed(obs)))
        elif i + 1 < len(msgs):
            assert msgs[i + 1]["role"] == "user", m  # an agent speaks to the customer only to ask
            out.append(("ask", m["name"], m["content"], msgs[i + 1]["content"]))
        else:
            out.append(("final", m["name"], m["content"]))
    return out


def _role(agent: str, kind: str, strategy: str) -> str:
    if agent in ("triage", "human"):
        return agent[0]
    if agent == SPECIALIST[kind]:
        return "s"
    if strategy in ("specialist_chain", "agents_as_tools") and agent == SECOND[kind][0]:
        return "2"
    return "w"


def _tokens(record, kind, strategy):
    """The shape's tokens (successful calls, the optional steps left out; the kind's actions
    in a row as one ACT) and the kind's actions in order."""
    toks, acts = [], []
    for e in _events(record):
        if e[0] != "call" or e[5] or e[2] in OPTIONAL:
            continue
        who, tool = _role(e[1], kind, strategy), e[2]
        if tool.startswith("transfer_to_"):
            tok = f"{who}>{_role(tool.removeprefix('transfer_to_'), kind, strategy)}"
        elif tool.startswith("ask_"):
            tok = f"{who}?{_role(tool.removeprefix('ask_'), kind, strategy)}"
        elif who == "s" and tool in ACTIONS[kind]:
            tok = "s.ACT"
            acts.append(tool)
        elif who == "2" and tool == SECOND[kind][1]:
            tok = "2.FOLLOW"
        else:
            tok = f"{who}.{ABBREV.get(tool, tool)}"
        if not (tok == "s.ACT" and toks[-1:] == ["s.ACT"]):
            toks.append(tok)
    return toks, acts


def test_is_a_planted_world(world):
    assert isinstance(world, worlds.PlantedWorld)
    assert world.format == "openai" and world.name == "handoff"
    assert world.truth.columns == ["arm", "question_id", "sample_id", "strategy", "kind", "n_calls", "n_failures",
                                   "n_handoffs", "n_user_turns", "correct"]
    assert world.truth.height == len(world.records) == 2 * 60 * 4
    assert set(world.truth["arm"]) == set(ARMS)
    # every strategy and every kind at the default size
    assert set(world.truth["strategy"]) == set(STRATEGIES) and set(world.truth["kind"]) == set(KINDS)
    questions = {rec["question_id"]: rec["messages"][1]["content"] for rec in world.records}
    assert len(questions) == 60 and len(set(questions.values())) == 60
    assert world.planted["shares"]["rl"] == pytest.approx(ARMS["rl"])
    assert world.planted["success"] == pytest.approx(_SUCCESS)


def test_reads_back(world, read):
    assert_reads_back(world, read, TOOLS)
    assert world.runs["n_rounds"].to_list() == world.truth["n_calls"].to_list()


def test_transcripts_are_well_formed_and_handoffs_name_the_next_agent(big):
    for row, rec in _rows(big):
        msgs = rec["messages"]
        assert [m["role"] for m in msgs[:2]] == ["system", "user"]
        last = msgs[-1]
        assert last["role"] == "assistant" and not last.get("tool_calls") and last["content"]
        speaker, ids, handoffs = "triage", set(), 0
        for i, m in enumerate(msgs[2:], start=2):
            if m["role"] != "assistant":
                continue
            assert m["name"] == speaker, (i, m)  # every assistant message names its agent
            for j, c in enumerate(m.get("tool_calls") or []):
                res = msgs[i + 1 + j]  # answered at once, by the matching id
                assert res["role"] == "tool" and res["tool_call_id"] == c["id"] and c["id"] not in ids
                ids.add(c["id"])
                tool = c["function"]["name"]
                assert res["name"] == tool and tool in TOOLS
                assert speaker == "human" or tool in AGENT_TOOLS[speaker], (speaker, tool)
                if tool.startswith("transfer_to_"):
                    to = tool.removeprefix("transfer_to_")
                    assert json.loads(res["content"]) == {"assistant": to}
                    args = json.loads(c["function"]["arguments"])
                    assert args == {} or (set(args) == {"reason"} and args["reason"]), args
                    speaker, handoffs = to, handoffs + 1
        assert speaker in (*AGENTS, "human") and last["name"] == speaker
        assert handoffs == row["n_handoffs"]
        assert (speaker == "human") == (row["strategy"] == "escalate_human")


def test_counts_match_the_records_and_failures_are_corrected(big):
    forms = {}
    for row, rec in _rows(big):
        calls = [e for e in _events(rec) if e[0] == "call"]
        assert len(calls) == row["n_calls"] and sum(c[5] for c in calls) == row["n_failures"]
        assert sum(m["role"] == "user" for m in rec["messages"]) - 1 == row["n_user_turns"]
        assert sum(c[2].startswith("transfer_to_") for c in calls) == row["n_handoffs"]
        for i, (_, agent, tool, args, obs, failed) in enumerate(calls):
            if tool.startswith("transfer_to_"):
                assert not failed  # a handoff never fails
            if failed:  # the corrected call of the same tool, by the same agent, at once
                _, agent2, tool2, args2, _, failed2 = calls[i + 1]
                assert tool2 == tool and agent2 == agent and not failed2, (tool, obs)
                assert (args2 == args) == (obs == _FAIL_503), (args, args2, obs)
                form = ("503" if obs == _FAIL_503 else "Error:" if obs.startswith("Error:")
                        else json.loads(obs)["error"])
                forms[form] = forms.get(form, 0) + 1
    assert {"503", "Error:", "reservation_not_found", "invalid_date", "unknown_airport", "member_not_found",
            "bag_not_found", "invalid_cabin", "amount_exceeds_eligible", "flight_not_available",
            "input is required", "query is required"} <= set(forms), forms
    assert abs(forms["503"] / sum(forms.values()) - _P_503) < 0.05, forms


def test_each_strategy_has_its_shape_and_the_kind_decides_the_actions(big):
    counts = {s: set() for s in STRATEGIES}
    for row, rec in _rows(big):
        s, kind = row["strategy"], row["kind"]
        toks, acts = _tokens(rec, kind, s)
        assert re.fullmatch(SHAPES[s], " ".join(toks)), (s, kind, toks)
        if "s.ACT" in toks:  # exactly the kind's actions, in order, by the kind's specialist
            assert tuple(acts) == ACTIONS[kind], (s, kind, acts)
        counts[s].add(len(toks) - ("s.ACT" in toks) + len(acts))
    assert counts == {"triage_solo": {1, 2}, "direct_handoff": {3, 4}, "gather_then_handoff": {4, 5},
                      "agents_as_tools": {2, 3}, "bounce_back": {5, 6, 7}, "specialist_chain": {5, 6},
                      "escalate_human": {2, 3}}, counts
    # call counts overlap between strategies, with the optional steps and failures too
    t = pl.concat([w.truth for w in big])
    spans = {s: (sub["n_calls"].min(), sub["n_calls"].max()) for (s,), sub in t.group_by("strategy")}
    for s, (lo, hi) in spans.items():
        overlapping = [o for o, (lo2, hi2) in spans.items() if o != s and lo2 <= hi and lo <= hi2]
        assert len(overlapping) >= 3, (s, spans)


def test_every_strategy_on_every_kind(big):
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
        first = sub["n_calls"].sum() - sub["n_handoffs"].sum() - sub["n_failures"].sum()  # first attempts
        rate = sub["n_failures"].sum() / first
        assert abs(rate - _P_FAIL) < 4 * np.sqrt(_P_FAIL * (1 - _P_FAIL) / first), (s, rate)


def test_arms_differ_only_in_mixture_and_success_follows_the_strategy(big):
    assert ARMS["base"] != ARMS["rl"] and set(ARMS["base"]) == set(ARMS["rl"]) == set(STRATEGIES)
    assert all(p >= 0.05 for mix in ARMS.values() for p in mix.values())
    t = pl.concat([w.truth for w in big])
    assert_arms_differ_only_in_mixture(t, ARMS, tool_free="(none)")
    t = t.with_columns(failed=pl.col("n_failures") > 0)
    assert_success_follows_the_strategy(t, _SUCCESS, by=("arm", "kind", "failed"))
    for (s,), sub in t.group_by("strategy"):
        a, b = (sub.filter(pl.col("arm") == x) for x in ARMS)  # the same handoffs within the strategy in both arms
        assert abs(a["n_handoffs"].mean() - b["n_handoffs"].mean()) < 0.2, s


def test_optional_steps_at_fixed_rates_in_every_strategy(alone):
    rows = []
    for s, w in alone.items():
        for row, rec in _rows([w]):
            ev = _events(rec)
            calls = [e for e in ev if e[0] == "call" and not e[5]]
            tools = [c[2] for c in calls]
            kind = row["kind"]
            if "get_member" in tools:  # right after the first lookup_reservation, by whoever speaks
                i = tools.index("get_member")
                assert tools.index("lookup_reservation") == i - 1 and calls[i][1] == calls[i - 1][1]
            if "faq_search" in tools:  # just before acting
                i = tools.index("faq_search")
                assert (tools[i + 1] if i + 1 < len(tools) else None) == AFTER_FAQ[s](kind), (s, tools)
            asks = [e for e in ev if e[0] == "ask"]
            rows.append((s, row["arm"], kind, tools.count("get_member"), tools.count("faq_search"),
                         sum(a[2].endswith(_ELSE_ASKS) for a in asks)))
    d = pl.DataFrame(rows, schema=["strategy", "arm", "kind", "member", "faq", "else"], orient="row")
    for col, p in (("member", _P_MEMBER), ("faq", _P_FAQ), ("else", _P_ANYTHING_ELSE)):
        assert d[col].max() == 1
        assert abs(d[col].mean() - p) < 0.03, (col, d[col].mean())
        for by in ("strategy", "arm", "kind"):
            for _, n, rate in d.group_by(by).agg(pl.len(), pl.col(col).mean()).iter_rows():
                assert abs(rate - p) < 4 * np.sqrt(p * (1 - p) / n), (col, by, rate, p)


def test_the_customer_gives_the_codes_once(alone):
    volunteered = []
    for w in alone.values():
        for _, rec in _rows([w]):
            ev = _events(rec)
            first = rec["messages"][1]["content"]
            code = next(e[3]["confirmation"] for e in ev if e[0] == "call" and e[2] == "lookup_reservation"
                        and not e[5])
            asked = [i for i, e in enumerate(ev) if e[0] == "ask" and code.lower() in e[3].lower()]
            assert len(asked) <= 1 and (not asked) == (code in first)
            if asked:  # asked before the first lookup_reservation
                assert asked[0] < next(i for i, e in enumerate(ev) if e[0] == "call"
                                       and e[2] == "lookup_reservation")
            volunteered.append(code in first)
    assert abs(np.mean(volunteered) - _P_VOLUNTEER) < 0.05


def test_wording_and_argument_order_vary_inside_strategies(big):
    for s in STRATEGIES:
        said, orders = [], set()
        for row, rec in _rows(big):
            if row["strategy"] == s:
                said.append(rec["messages"][-1]["content"])
                for m in rec["messages"]:
                    for c in m.get("tool_calls") or []:
                        keys = tuple(json.loads(c["function"]["arguments"]))
                        if len(keys) > 1:
                            orders.add((c["function"]["name"], keys))
        assert max(said.count(x) for x in set(said)) < 0.2 * len(said), s
        multi = {}
        for tool, keys in orders:
            multi.setdefault(tool, set()).add(keys)
        assert any(len(v) > 1 for v in multi.values()), s  # the same call with its arguments in another order


def test_random_state(tmp_path):
    a, b, c = (handoff(n_questions=6, random_state=3), handoff(n_questions=6, random_state=3),
               handoff(n_questions=6, random_state=4))
    assert a.records == b.records and a.truth.equals(b.truth)
    assert a.records != c.records
    assert handoff(n_questions=6, random_state=np.random.default_rng(3)).records == a.records
    fa, fb = a.write(tmp_path / "a"), b.write(tmp_path / "b")
    assert fa.read_bytes() == fb.read_bytes()
    assert (tmp_path / "a" / "truth.csv").read_bytes() == (tmp_path / "b" / "truth.csv").read_bytes()
    assert a.runs.equals(b.runs)
    assert len(handoff(n_questions=3, random_state=None).records) == 2 * 3 * 4
