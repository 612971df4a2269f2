"""The Lean 4 theorem-proving world (mechanism.datasets.worlds.leanprover): OpenAI records read back
with `mechanism.read` as a user's files are, the truth it carries, and the planted design (every tool
call answered by its own tool message, proof states numbered as the REPL numbers them and goals
carried over from the state acted on, each strategy's shape, the optional steps at fixed rates
whatever the strategy, execution failures followed at once by the corrected tactic on the same
state, arms differing only in their mixture, success set by the strategy alone). Strategy discovery
is not evaluated here."""
from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from world_checks import (
    assert_arms_differ_only_in_mixture,
    assert_reads_back,
    assert_success_follows_the_strategy,
    openai_calls,
)

import mechanism as mx
from mechanism.datasets import worlds
from mechanism.datasets.worlds.leanprover import (
    _P_CHECK_FIRST,
    _P_CONFIRM,
    _P_DETOUR,
    _P_FAIL,
    _P_SEARCH,
    _SUCCESS,
    ARMS,
    EXECUTION_ERRORS,
    LEMMAS,
    STRATEGIES,
    TEMPLATES,
    TOOL_SCHEMA,
    TOOLS,
    leanprover,
)


@pytest.fixture(scope="module")
def world():
    return leanprover(n_questions=20)


@pytest.fixture(scope="module")
def read(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("leanprover")), format="openai", report=True)


@pytest.fixture(scope="module")
def big():
    """A larger sample for the rates and the arms (both arms, pooled over two seeds)."""
    return [leanprover(n_questions=75, n_samples=10, random_state=seed) for seed in (1, 2)]


@pytest.fixture(scope="module")
def replayed(big):
    """Every episode of ``big`` replayed on the test's own REPL: (truth row, record, calls, problems)."""
    return [(row, rec, *_replay(rec)) for w in big for row, rec in zip(w.truth.iter_rows(named=True), w.records)]


def _replay(rec):
    """Each call as a dict (tool, args, obs, state acted on, error, goals after, whether it went back to an
    earlier state, whether the proof was already done), replayed on the test's own table of proof states;
    the observations that do not follow from it."""
    user = rec["messages"][1]["content"]
    first = user[user.rindex(":\n") + 2:]
    states, top, latest, problems, out, done = {0: [first]}, 0, 0, [], [], False
    for tool, args, obs in openai_calls(rec):
        c = {"tool": tool, "args": args, "obs": obs, "error": None, "back": False, "done": done}
        if tool == "run_tactic":
            ps = args["proof_state"]
            c["state"], c["back"] = ps, ps != latest
            latest = ps
            if ps not in states:
                problems.append(("unknown state", ps))
            res = json.loads(obs)
            if "message" in res:
                c["error"] = res["message"]
                if not res["message"].startswith("Lean error: "):
                    problems.append(("error form", obs))
            else:
                top += 1
                if res["proofState"] != top:  # the next number, whatever state it acted on
                    problems.append(("numbering", res["proofState"], top))
                before, after = states.get(ps, []), res["goals"]
                if len(before) > 1 and after[len(after) - (len(before) - 1):] != before[1:]:
                    problems.append(("goals not carried over", ps))  # a tactic acts on the first goal only
                if args["tactic"] == "apply?" and after != before:
                    problems.append(("apply? changed the goals", ps))
                states[top], c["goals"], latest = after, after, top
                done = done or after == []
        out.append(c)
    return out, problems


def _exec_failure(c):
    return c["error"] is not None and any(e in c["error"] for e in EXECUTION_ERRORS)


def _design_error(c):
    return c["error"] is not None and not _exec_failure(c)


def _tactics(calls):
    """The successful tactics of the proof: not a detour (a success the next tactic goes back from), not
    the confirming re-run."""
    tac = [c for c in calls if c["tool"] == "run_tactic"]
    return [c["args"]["tactic"] for c, nxt in zip(tac, [*tac[1:], None])
            if c["error"] is None and not c["done"] and not (nxt is not None and nxt["back"] and not nxt["done"])]


# -- the world ---------------------------------------------------------------------------------------------
def test_is_a_planted_world(world):
    assert isinstance(world, worlds.PlantedWorld)
    assert world.format == "openai" and world.name == "leanprover"
    assert "leanprover" in worlds.__all__ and "leanprover" in worlds.WORLDS and worlds.leanprover is leanprover
    assert world.truth.columns == ["arm", "question_id", "sample_id", "strategy", "template", "n_calls", "n_tactics",
                                   "n_failures", "n_design_errors", "n_backtracks", "ending", "correct"]
    assert world.truth.height == len(world.records) == 2 * 20 * 4
    assert set(world.truth["arm"]) == set(ARMS) and set(world.truth["strategy"]) == set(STRATEGIES)
    assert set(world.truth["template"]) == set(TEMPLATES)
    assert [t["function"]["name"] for t in TOOL_SCHEMA] == list(TOOLS)
    statements = {rec["question_id"]: rec["messages"][1]["content"].split("```lean\n")[1].split(":= by")[0]
                  for rec in world.records}
    assert len(set(statements.values())) == 20  # each question its own theorem
    assert world.planted["shares"]["rl"] == pytest.approx(ARMS["rl"])
    assert world.planted["success"] == pytest.approx(_SUCCESS)
    assert all(rec["gold"] == [] for rec in world.records)


def test_reads_back(world, read):
    assert_reads_back(world, read, TOOLS)


def test_transcripts_are_well_formed(big):
    keys = {"run_tactic": ["proof_state", "tactic"], "search_lemmas": ["query"], "check": ["term"]}
    for w in big:
        for rec in w.records:
            msgs = rec["messages"]
            assert [m["role"] for m in msgs[:2]] == ["system", "user"]
            last = msgs[-1]
            assert last["role"] == "assistant" and not last.get("tool_calls") and last["content"]
            ids = set()
            for i in range(2, len(msgs) - 1, 2):  # one call a message, answered by the next message
                m, res = msgs[i], msgs[i + 1]
                assert m["role"] == "assistant" and len(m["tool_calls"]) == 1
                c = m["tool_calls"][0]
                assert res["role"] == "tool" and res["tool_call_id"] == c["id"] and c["id"] not in ids
                ids.add(c["id"])
                tool = c["function"]["name"]
                assert res["name"] == tool and tool in TOOLS and res["content"]
                assert list(json.loads(c["function"]["arguments"])) == keys[tool]
            assert len(msgs) % 2 == 1


def test_proof_states_and_goals_follow_the_repl(replayed):
    for row, rec, calls, problems in replayed:
        assert problems == [], problems[:2]
        goal0 = rec["messages"][1]["content"].rsplit(":\n", 1)[1]
        assert goal0.endswith(rec["messages"][1]["content"].split(":\n    ")[1].split(" := by")[0])  # ⊢ the statement
        proved = any(c.get("goals") == [] for c in calls)
        assert proved == row["correct"] == (row["ending"] == "proved")
        assert row["ending"] in ("proved", "gave_up", "unfinished")
        if row["correct"]:  # the final proof lists the tactics that closed it
            body = rec["messages"][-1]["content"]
            assert all(t in body for t in _tactics(calls) if not t == "apply?")
        else:
            assert "sorry" in rec["messages"][-1]["content"] or row["ending"] == "gave_up"
            last = max((i for i, c in enumerate(calls) if c.get("goals") is not None), default=-1)
            assert _design_error(calls[-1]) and sum(_design_error(c) for c in calls[last + 1:]) >= 2  # tries, then stop
        # a check answers a lemma's signature or the statement's type
        for c in calls:
            if c["tool"] == "check":
                assert c["obs"] == f"{c['args']['term']} {LEMMAS.get(c['args']['term'], ': Prop')}"
            if c["tool"] == "search_lemmas":
                assert all(line.split(" ", 2)[1] in LEMMAS for line in c["obs"].splitlines())


def test_counts_match_the_records_and_failures_are_corrected(replayed):
    forms = dict.fromkeys(EXECUTION_ERRORS, 0)
    for row, _, calls, _ in replayed:
        tactics = [c for c in calls if c["tool"] == "run_tactic"]
        assert len(calls) == row["n_calls"] and len(tactics) == row["n_tactics"]
        failures = [i for i, c in enumerate(calls) if _exec_failure(c)]
        assert len(failures) == row["n_failures"]
        assert sum(_design_error(c) for c in calls) == row["n_design_errors"]
        for i in failures:  # the corrected tactic at once, on the same state
            nxt = calls[i + 1]
            assert nxt["tool"] == "run_tactic" and nxt["state"] == calls[i]["state"]
            assert nxt["args"]["tactic"] != calls[i]["args"]["tactic"] and not _exec_failure(nxt)
            forms[next(e for e in EXECUTION_ERRORS if e in calls[i]["error"])] += 1
        assert sum(c["back"] and not c["done"] for c in tactics) == row["n_backtracks"]
    assert min(forms.values()) > 30, forms


def test_each_strategy_has_its_shape(replayed):
    seen = dict.fromkeys(STRATEGIES, 0)
    for row, _, calls, _ in replayed:
        s = row["strategy"]
        seen[s] += 1
        core = calls[1:] if calls[0]["tool"] == "check" and calls[0]["obs"].endswith(": Prop") else calls
        done = _tactics(calls)
        heads = [t.split()[0] for t in done]
        firsts = [c for c in core if c["tool"] == "run_tactic" and not _exec_failure(c)]
        assert ("induction'" in heads) == (s == "induction"), s
        assert ("have" in heads) == (s == "have_steps"), s
        assert bool({"rcases", "by_cases"} & set(heads)) == (s == "cases"), s
        if s == "rewrite":  # a chain of rewrites, on the goal or a hypothesis
            assert sum(h == "rw" for h in heads) >= 2
        if s == "automation":  # automation tactics failing by design first, then the closer
            proof = [c for c in firsts if c["error"] is None and c["args"]["tactic"] in done]
            design = [c for c in firsts if _design_error(c)]
            assert len(design) >= 2 and (not proof or firsts.index(proof[0]) >= 2)
            assert {c["args"]["tactic"].split()[0] for c in design} <= {
                "omega", "decide", "simp", "norm_num", "aesop", "positivity", "tauto", "exact?", "linarith",
                "nlinarith", "exact"}
        elif s == "induction":
            induct = next(c for c in firsts if c["args"]["tactic"].startswith("induction'"))
            assert done[0] == induct["args"]["tactic"] and [g.split("\n")[0] for g in induct["goals"][:2]] in (
                ["case zero", "case succ"], ["case nil", "case cons"])
        elif s == "cases":
            split = next(c for c in firsts if c["args"]["tactic"] == done[0])
            assert heads[0] in ("rcases", "by_cases") and len(split["goals"]) == 2
        elif s == "backward":
            assert heads[0] == "apply" and all(h in ("apply", "exact", "ring") for h in heads)
            assert (heads[-1] == "exact") == row["correct"] or heads[-1] == "exact"
        elif s == "search":  # a search or apply? first, then a check of the lemma found, then its use
            opener = core[0]
            assert opener["tool"] == "search_lemmas" or opener["args"]["tactic"] == "apply?" or (
                _exec_failure(opener) and core[1]["args"].get("tactic") == "apply?")
            checks = [c for c in core if c["tool"] == "check"]
            assert checks and checks[0]["args"]["term"] in LEMMAS
        elif s == "have_steps":
            assert heads[:2] == ["have", "have"]
            if row["correct"]:
                assert len(heads) == 3 or len(heads) == 3 + ("apply?" in heads)
    assert min(seen.values()) > 100, seen


def test_tactics_depend_on_the_theorem(replayed):
    tactics, seen = {}, {}
    for row, _, calls, _ in replayed:
        tactics.setdefault(row["strategy"], set()).add(tuple(c["args"]["tactic"] for c in calls
                                                             if c["tool"] == "run_tactic" and not _exec_failure(c)))
        seen.setdefault(row["strategy"], []).append(tuple(c["obs"] for c in calls))
    for s in STRATEGIES:
        assert len(tactics[s]) > 2 * len(TEMPLATES), s  # the template and its constants shape the tactics
        assert len(set(seen[s])) > 0.6 * len(seen[s]), s  # ... and the goals


def test_lengths_vary_inside_strategies_and_overlap_between_them(big):
    t = pl.concat([w.truth for w in big])
    spans = {}
    for (s,), sub in t.group_by("strategy"):
        assert sub["n_calls"].n_unique() >= 5, s
        spans[s] = (sub["n_calls"].quantile(0.1), sub["n_calls"].quantile(0.9))
    for s, (lo, hi) in spans.items():
        overlapping = [o for o, (lo2, hi2) in spans.items() if o != s and lo2 <= hi and lo <= hi2]
        assert len(overlapping) >= 3, (s, spans)


def test_optional_steps_at_fixed_rates_in_every_strategy(replayed):
    rows = []
    for row, _, calls, _ in replayed:
        opening = calls[0]["tool"] == "check" and calls[0]["obs"].endswith(": Prop")
        searched = any(c["tool"] == "search_lemmas" for c in calls)
        confirmed = any(c["done"] and c["tool"] == "run_tactic" for c in calls)
        rows.append((row["strategy"], row["arm"], opening, searched, row["n_backtracks"] > 0, row["correct"],
                     confirmed))
    d = pl.DataFrame(rows, schema=["strategy", "arm", "opening", "searched", "detour", "correct", "confirmed"],
                     orient="row")

    def close(rate, p, n):
        return abs(rate - p) < 4 * np.sqrt(p * (1 - p) / n)

    for (s,), sub in d.group_by("strategy"):
        ok = sub.filter(pl.col("correct"))
        assert close(sub["opening"].mean(), _P_CHECK_FIRST, sub.height), s
        assert close(sub["detour"].mean(), _P_DETOUR, sub.height), s
        assert close(ok["confirmed"].mean(), _P_CONFIRM, ok.height), s
        if s != "search":  # search's own opener may be a search_lemmas
            assert close(sub["searched"].mean(), _P_SEARCH, sub.height), s
    for _, sub in d.group_by("arm"):
        assert close(sub["opening"].mean(), _P_CHECK_FIRST, sub.height)


def test_failures_at_the_planted_rate_in_every_strategy(replayed):
    for s in STRATEGIES:
        failed = n = 0
        for row, *_ in replayed:
            if row["strategy"] == s:
                failed += row["n_failures"]
                n += row["n_tactics"] - row["n_failures"]  # one draw per intended tactic, its correction none
        assert abs(failed / n - _P_FAIL) < 4 * np.sqrt(_P_FAIL * (1 - _P_FAIL) / n), (s, failed / n)


def test_arms_differ_only_in_mixture_and_success_follows_the_strategy(big):
    assert ARMS["base"] != ARMS["rl"] and set(ARMS["base"]) == set(ARMS["rl"]) == set(STRATEGIES)
    assert all(p >= 0.1 for mix in ARMS.values() for p in mix.values())
    t = pl.concat([w.truth for w in big])
    assert_arms_differ_only_in_mixture(t, ARMS, tool_free="(none)")
    t = t.with_columns(failed=pl.col("n_failures") > 0)
    assert_success_follows_the_strategy(t, _SUCCESS, by=("arm", "template", "failed"))


def test_wording_varies_inside_strategies(big):
    rows = [(row["strategy"], rec) for w in big for row, rec in zip(w.truth.iter_rows(named=True), w.records)]
    for s in STRATEGIES:
        said = [m["content"] for strategy, rec in rows if strategy == s for m in rec["messages"][2:-1]
                if m["role"] == "assistant" and m["content"]]
        assert len(set(said)) >= 8 and max(said.count(x) for x in set(said)) < 0.3 * len(said), s
    assert len({rec["messages"][0]["content"] for w in big for rec in w.records}) == 3


def test_random_state(tmp_path):
    a, b, c = (leanprover(n_questions=6, random_state=3), leanprover(n_questions=6, random_state=3),
               leanprover(n_questions=6, random_state=4))
    assert a.records == b.records and a.truth.equals(b.truth)
    assert a.records != c.records
    assert leanprover(n_questions=6, random_state=np.random.default_rng(3)).records == a.records
    fa, fb = a.write(tmp_path / "a"), b.write(tmp_path / "b")
    assert fa.read_bytes() == fb.read_bytes()
    assert (tmp_path / "a" / "truth.csv").read_bytes() == (tmp_path / "b" / "truth.csv").read_bytes()
    assert a.runs.equals(b.runs)
    assert len(leanprover(n_questions=3, random_state=None).records) == 2 * 3 * 4
