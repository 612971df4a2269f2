"""The deep-research world with parallel tool calls (mechanism.datasets.worlds.parallel): OpenAI
records read back with `mechanism.read` as a user's files are, the truth it carries, and the
planted design (parallel batches that really hold several calls, each answered by its own tool
message; each strategy's shape, the grouping of calls into messages included; failures retried
in the next message, a failed call of a batch alone; optional steps at fixed rates; every
strategy on every kind of question; arms differing only in their mixture; success set by the
strategy alone). Strategy discovery is not evaluated here."""
from __future__ import annotations

import importlib
import json
import re

import numpy as np
import polars as pl
import pytest
from world_checks import assert_arms_differ_only_in_mixture, assert_success_follows_the_strategy

import mechanism as mx
from mechanism.datasets import worlds
from mechanism.datasets.worlds import parallel
from mechanism.datasets.worlds.parallel import (
    _CLARIFY_QUERIES,
    _FAIL_429,
    _FAIL_503,
    _P_CALC,
    _P_CLARIFY,
    _P_CONFIRM,
    _P_FAIL,
    _P_READ_MORE,
    _P_REORDER,
    _P_TRANSIENT,
    _SUCCESS,
    ARMS,
    KINDS,
    STRATEGIES,
    TOOLS,
)

LETTER = {"web_search": "S", "open_page": "O", "calculator": "C", "lookup_entity": "L"}
CLARIFY = re.compile("|".join(re.escape(q).replace(re.escape("{e}"), ".+") for q in _CLARIFY_QUERIES))
ARCHIVE = "https://web.archive.org/web/2024/"
HEAD = r"(?P<head>(Q|L) )?"  # the optional clarifying call
TAIL = r"(?P<tail>( O| C| O C| C O)?)"  # the optional confirming read and calculator check


def core(strategy: str, k: int) -> str:
    """The shape of a strategy on a question of ``k`` sub-questions, one token per assistant
    message with calls (its retry merged in): a letter per tool, ``[...]`` a parallel batch."""
    return {"from_memory": "",
            "fan_out": rf"\[S{{{k}}}\]",
            "sequential": " ".join(["S"] * k),
            "fan_out_read": rf"\[S{{{k}}}\] \[O{{2,{k}}}\]",
            "broad_then_read": r"S O( O)?",
            "search_read_chain": " ".join(["S O"] * k),
            "draft_verify": rf"\[L{{{k}}}\]( S)?"}[strategy]


@pytest.fixture(scope="module")
def world():
    return parallel(n_questions=30, n_samples=3)


@pytest.fixture(scope="module")
def read(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("parallel")), format="openai", report=True)


@pytest.fixture(scope="module")
def big():
    """A larger sample for the rates (both arms, pooled over two seeds)."""
    return [parallel(n_questions=150, random_state=seed) for seed in (1, 2)]


@pytest.fixture(scope="module")
def plain():
    """The strategies alone: no failures and no optional steps."""
    module = importlib.import_module("mechanism.datasets.worlds.parallel")  # the module, not the function
    with pytest.MonkeyPatch.context() as mp:
        for rate in ("_P_FAIL", "_P_CLARIFY", "_P_CONFIRM", "_P_CALC"):
            mp.setattr(module, rate, 0.0)
        return parallel(n_questions=90, random_state=5)


def _rows(ws):
    return [(row, rec) for w in ws for row, rec in zip(w.truth.iter_rows(named=True), w.records)]


def _failed(obs: str) -> bool:
    if obs.startswith(("Error:", "HTTP 429", "503 Service Unavailable")):
        return True
    return obs.startswith("{") and "error" in json.loads(obs)


def _messages(record):
    """Every assistant message with tool calls, as (words, [(id, tool, args, observation,
    failed)], whether the results were logged in another order than the calls), checking that
    each call gets exactly one tool message, right after its assistant message."""
    msgs = record["messages"]
    out = []
    for i, m in enumerate(msgs):
        if m["role"] != "assistant" or not m.get("tool_calls"):
            continue
        results = []
        for r in msgs[i + 1:]:
            if r["role"] != "tool":
                break
            results.append(r)
        ids = [c["id"] for c in m["tool_calls"]]
        assert sorted(r["tool_call_id"] for r in results) == sorted(ids), (ids, results)  # one result per call
        assert len(set(ids)) == len(ids)
        by_id = {r["tool_call_id"]: r for r in results}
        calls = []
        for c in m["tool_calls"]:
            r = by_id[c["id"]]
            assert r["name"] == c["function"]["name"]
            calls.append((c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]), r["content"],
                          _failed(r["content"])))
        out.append((m["content"], calls, [r["tool_call_id"] for r in results] != ids))
    return out


def _batches(record):
    """The logical batches: each message's calls with its failed ones replaced by their retries
    (made in the next message, which holds nothing else)."""
    msgs = _messages(record)
    out, i = [], 0
    while i < len(msgs):
        calls = msgs[i][1]
        failed = [c for c in calls if c[4]]
        if failed:
            retry = msgs[i + 1][1]
            assert [c[1] for c in retry] == [c[1] for c in failed] and not any(c[4] for c in retry), (calls, retry)
            fixed = iter(retry)
            calls = [next(fixed) if c[4] else c for c in calls]
            i += 1
        out.append(calls)
        i += 1
    return out


def _tokens(record):
    toks = []
    for n, calls in enumerate(_batches(record)):
        letters = "".join(LETTER[c[1]] for c in calls)
        if n == 0 and len(calls) == 1 and calls[0][1] == "web_search" and CLARIFY.fullmatch(calls[0][2]["query"]):
            letters = "Q"
        toks.append(letters if len(calls) == 1 else f"[{letters}]")
    return " ".join(toks)


def _final(record) -> str:
    last = record["messages"][-1]
    assert last["role"] == "assistant" and not last.get("tool_calls") and last["content"]
    return last["content"].rsplit(": ", 1)[1]


def test_is_a_planted_world(world):
    assert isinstance(world, worlds.PlantedWorld)
    assert world.format == "openai" and world.name == "parallel"
    assert "parallel" in worlds.__all__ and "parallel" in worlds.WORLDS
    assert worlds.parallel is parallel and callable(parallel)
    assert world.truth.columns == ["arm", "question_id", "sample_id", "strategy", "kind", "n_subs", "n_calls",
                                   "n_messages", "n_parallel", "n_failures", "correct"]
    assert world.truth.height == len(world.records) == 2 * 30 * 3
    assert set(world.truth["strategy"]) == set(STRATEGIES) and set(world.truth["kind"]) == set(KINDS)
    questions = {rec["question_id"]: rec["messages"][1]["content"] for rec in world.records}
    assert len(questions) == 30 and len(set(questions.values())) == 30
    assert world.planted["shares"]["rl"] == pytest.approx(ARMS["rl"])


def test_reads_back(world, read):
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
        assert row["question"] == rec["messages"][1]["content"]
        assert row["answer"] == _final(rec) and row["gold"] == rec["gold"]
        assert (row["answer"] == row["gold"][0]) == row["correct"]  # the final answer is the gold one or a wrong one
        # every call read in order, its own result beside it (parallel results matched by id)
        calls = [c for _, cs, _ in _messages(rec) for c in cs]
        assert [(s["tool"], s["observation"]) for s in row["steps"]] == [(c[1], c[3]) for c in calls]


def test_parallel_batches_and_counts(big):
    sizes, shuffled, n_batches = {}, 0, 0
    for row, rec in _rows(big):
        msgs = _messages(rec)
        assert len(msgs) == row["n_messages"]
        assert sum(len(cs) for _, cs, _ in msgs) == row["n_calls"]
        assert sum(len(cs) > 1 for _, cs, _ in msgs) == row["n_parallel"]
        assert sum(c[4] for _, cs, _ in msgs for c in cs) == row["n_failures"]
        assert [m["role"] for m in rec["messages"][:2]] == ["system", "user"]
        # every message between two assistant messages with calls is a result of the first
        roles = [m["role"] for m in rec["messages"][2:]]
        assert roles[-1] == "assistant" and "user" not in roles
        for _, cs, order in msgs:
            if len(cs) > 1:
                sizes[len(cs)] = sizes.get(len(cs), 0) + 1
                shuffled += order
                n_batches += 1
    assert set(sizes) == {2, 3, 4}, sizes
    assert 0.03 < shuffled / n_batches < 0.2, shuffled / n_batches  # results logged as they completed, sometimes


def test_failures_are_retried_in_the_next_message(big):
    forms, transient, failures = {}, 0, 0
    for _, rec in _rows(big):
        msgs = _messages(rec)
        for i, (_, calls, _) in enumerate(msgs):
            failed = [c for c in calls if c[4]]
            if not failed:
                continue
            retry = msgs[i + 1][1]  # the failed calls alone, corrected or repeated
            assert len(retry) == len(failed) and not any(c[4] for c in retry)
            for bad, good in zip(failed, retry):
                assert bad[1] == good[1]
                obs = bad[3]
                same = obs in (_FAIL_429, _FAIL_503) or obs.startswith(("Error: timed out", '{"error": "rate_limited"'))
                assert (good[2] == bad[2]) == same, (bad, good)
                if "403 Forbidden" in obs:
                    assert good[2]["url"] == ARCHIVE + bad[2]["url"]
                transient += same
                failures += 1
                form = obs.split(":")[0] if not obs.startswith("{") else json.loads(obs)["error"]
                forms[form] = forms.get(form, 0) + 1
    assert {"HTTP 429 Too Many Requests", "503 Service Unavailable", "Error", "entity_not_found", "rate_limited",
            "query must be a non-empty string"} <= set(forms), forms
    assert abs(transient / failures - _P_TRANSIENT) < 0.05, transient / failures
    t = pl.concat([w.truth for w in big])
    for s in STRATEGIES[1:]:
        sub = t.filter(pl.col("strategy") == s)
        rate = sub["n_failures"].sum() / (sub["n_calls"].sum() - sub["n_failures"].sum())  # per first attempt
        assert abs(rate - _P_FAIL) < 0.03, (s, rate)
    assert t.filter(pl.col("strategy") == "from_memory")["n_calls"].max() == 0


def test_each_strategy_alone_has_its_shape(plain):
    calls, messages = {s: set() for s in STRATEGIES}, {s: set() for s in STRATEGIES}
    for row, rec in _rows([plain]):
        s, k = row["strategy"], row["n_subs"]
        assert row["n_failures"] == 0
        assert re.fullmatch(core(s, k), _tokens(rec)), (s, k, _tokens(rec))
        calls[s].add(row["n_calls"])
        messages[s].add(row["n_messages"])
        assert row["n_parallel"] == {"from_memory": 0, "fan_out": 1, "sequential": 0, "fan_out_read": 2,
                                     "broad_then_read": 0, "search_read_chain": 0, "draft_verify": 1}[s]
    assert calls == {"from_memory": {0}, "fan_out": {2, 3, 4}, "sequential": {2, 3, 4},
                     "fan_out_read": {4, 5, 6, 7, 8}, "broad_then_read": {2, 3}, "search_read_chain": {4, 6, 8},
                     "draft_verify": {2, 3, 4, 5}}, calls
    assert messages == {"from_memory": {0}, "fan_out": {1}, "sequential": {2, 3, 4}, "fan_out_read": {2},
                        "broad_then_read": {2, 3}, "search_read_chain": {4, 6, 8}, "draft_verify": {1, 2}}, messages
    # fan_out and sequential: the same searches, grouped otherwise
    t = plain.truth
    for k in (2, 3, 4):
        fan = t.filter((pl.col("strategy") == "fan_out") & (pl.col("n_subs") == k))
        seq = t.filter((pl.col("strategy") == "sequential") & (pl.col("n_subs") == k))
        assert set(fan["n_calls"]) == set(seq["n_calls"]) == {k}
        assert set(fan["n_messages"]) == {1} and set(seq["n_messages"]) == {k}


def test_shapes_with_failures_and_optional_steps(big):
    heads, tails, more = [], [], []
    for row, rec in _rows(big):
        s, k = row["strategy"], row["n_subs"]
        toks = _tokens(rec)
        if s == "from_memory":
            assert toks == ""
            continue
        m = re.fullmatch(HEAD + core(s, k) + TAIL, toks)
        assert m, (s, k, toks)
        tail = m["tail"].split()
        heads.append((s, row["arm"], row["kind"], m["head"] is not None))
        tails.append((s, row["arm"], row["kind"], "C" in tail, "O" in tail))
        if s == "broad_then_read":  # a second page read and the confirming read look alike
            more.append(toks.split().count("O") - 1)
    d = pl.DataFrame(heads, schema=["strategy", "arm", "kind", "clarify"], orient="row")
    e = pl.DataFrame(tails, schema=["strategy", "arm", "kind", "calc", "confirm"], orient="row")
    for frame, col, p in ((d, "clarify", _P_CLARIFY), (e, "calc", _P_CALC),
                          (e.filter(pl.col("strategy") != "broad_then_read"), "confirm", _P_CONFIRM)):
        assert abs(frame[col].mean() - p) < 0.03, (col, frame[col].mean())
        for by in ("strategy", "arm", "kind"):
            for _, n, rate in frame.group_by(by).agg(pl.len(), pl.col(col).mean()).iter_rows():
                assert abs(rate - p) < 4 * np.sqrt(p * (1 - p) / n), (col, by, rate, p)
    more_counts = np.bincount(more, minlength=3) / len(more)
    want = [(1 - _P_READ_MORE) * (1 - _P_CONFIRM), _P_READ_MORE * (1 - _P_CONFIRM) + (1 - _P_READ_MORE) * _P_CONFIRM,
            _P_READ_MORE * _P_CONFIRM]
    assert np.abs(more_counts - want).max() < 0.08, (more_counts, want)


def test_pages_opened_were_found_and_batches_reordered(big):
    reordered, batches = 0, 0
    for row, rec in _rows(big):
        shown = ""
        for _, calls, _ in _messages(rec):
            for _, tool, args, obs, failed in calls:
                if tool == "open_page" and not failed:  # a url seen in an earlier result
                    url = args["url"].removeprefix(ARCHIVE)
                    assert url in shown, (url, row["strategy"])
                    assert obs.startswith(f"URL: {args['url']}\n")
            shown += "\n".join(c[3] for c in calls)
        if row["strategy"] == "draft_verify" and row["kind"] != "multihop":
            first = next(cs for _, cs, _ in _messages(rec) if len(cs) > 1)
            names = [c[2]["name"] for c in first if not c[4]]  # the entities in the order of the question
            where = [rec["messages"][1]["content"].index(n) for n in names]
            reordered += where != sorted(where)
            batches += 1
    assert abs(reordered / batches - _P_REORDER) < 0.1, reordered / batches


def test_every_strategy_on_every_kind_of_question(big):
    t = pl.concat([w.truth for w in big])
    assert set(t.select("strategy", "kind").unique().iter_rows()) == {(s, k) for s in STRATEGIES for k in KINDS}
    for arm in ARMS:  # the strategy is drawn independently of the kind
        sub = t.filter(pl.col("arm") == arm)
        overall = dict(sub["strategy"].value_counts(normalize=True).iter_rows())
        for k in KINDS:
            got = dict(sub.filter(pl.col("kind") == k)["strategy"].value_counts(normalize=True).iter_rows())
            for s in STRATEGIES:
                assert abs(got.get(s, 0.0) - overall[s]) < 0.1, (arm, k, s)
    spans = {s: (sub["n_calls"].min(), sub["n_calls"].max()) for (s,), sub in t.group_by("strategy")
             if s != "from_memory"}
    assert all(lo <= 4 <= hi for lo, hi in spans.values()), spans  # call counts overlap


def test_arms_differ_only_in_mixture_and_success_follows_the_strategy(big):
    assert ARMS["base"] != ARMS["rl"] and set(ARMS["base"]) == set(ARMS["rl"]) == set(STRATEGIES)
    assert all(p >= 0.05 for mix in ARMS.values() for p in mix.values())
    t = pl.concat([w.truth for w in big])
    assert_arms_differ_only_in_mixture(t, ARMS, tool_free="from_memory")
    t = t.with_columns(failed=pl.col("n_failures") > 0)
    assert_success_follows_the_strategy(t, _SUCCESS, by=("arm", "kind", "failed", "n_subs"))
    for row, rec in _rows(big):
        assert rec["correct"] == row["correct"] and (_final(rec) == rec["gold"][0]) == row["correct"]


def test_wording_varies_inside_strategies(big):
    for s in STRATEGIES:
        said, words = [], []
        for row, rec in _rows(big):
            if row["strategy"] == s:
                said.append(rec["messages"][-1]["content"])
                words.extend(w for w, _, _ in _messages(rec))
        assert max(said.count(x) for x in set(said)) < 0.2 * len(said), s
        if s != "from_memory":
            assert None in words and len({w for w in words if w}) >= 4, s


def test_random_state(tmp_path):
    a, b, c = (parallel(n_questions=6, random_state=3), parallel(n_questions=6, random_state=3),
               parallel(n_questions=6, random_state=4))
    assert a.records == b.records and a.truth.equals(b.truth)
    assert a.records != c.records
    assert parallel(n_questions=6, random_state=np.random.default_rng(3)).records == a.records
    fa, fb = a.write(tmp_path / "a"), b.write(tmp_path / "b")
    assert fa.read_bytes() == fb.read_bytes()
    assert (tmp_path / "a" / "truth.csv").read_bytes() == (tmp_path / "b" / "truth.csv").read_bytes()
    assert len(parallel(n_questions=3, n_samples=2, random_state=None).records) == 2 * 3 * 2
