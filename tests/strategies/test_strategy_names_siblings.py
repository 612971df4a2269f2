"""Names that tell siblings apart, on logs in the shapes of Reflexion, tau-bench and
FireAct: no two names alike once ids are dropped, no two names giving overlapping counts of one
tool, the tools a name mentions used by members holding at least 0.9 of the strategy's
trajectories, and a strategy at least half of whose members are fail-and-retry loops saying so
(its ``retry_loop_share`` recounted here from the per-call ``retried`` of ``segment``).

The Reflexion and tau-bench logs are written here in those sources' shapes (the reader options
of ``tests/readers/log_shapes.py``) with what the issue saw on the real ones: Reflexion trials
that search one entity again and again, answered ``Could not find [X]. Similar: [...]``, some
HALTED; tau-bench conversations in which every member calls ``get_user_details`` once, then
cancels in a loop of refusals, chains flight searches, or retries a failing update. FireAct is
the real data (skipped with a reason where it is absent).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import mechanism as mx
from mechanism.analysis._strategies.naming import SIBLING_OVERLAP, strategy_names
from mechanism.analysis.segmentation import render, segment

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "readers"))
from log_shapes import REFLEXION_READ, TAU_READ

FAST = {"embedder": "hashing-64", "n_bootstrap": 0, "progress": False}
_COUNT = re.compile(r"\((?:(?P<tool>[^()\s]+) )?x(?P<lo>\d+)(?:-(?P<hi>\d+))?\)")


# ---------------------------------------------------------------------------- the logs
def _reflexion_block(rng: np.random.Generator, q: int, trial: int, arm: str) -> dict:
    """One Reflexion block (the logger's text, ``Correct answer:`` trailer) of one kind."""
    gold, a, b = f"Town{q}", f"Magazine {q}", f"Person {q} Smith"
    kind = rng.choice(["direct", "one", "bridge", "flail", "halted"], p=[0.1, 0.25, 0.25, 0.2, 0.2])
    miss = f"Could not find [{a}]. Similar: ['{a} (film)', '{a} Records', 'The {a}']."
    steps = {"direct": [],
             "one": [("Search", a, f"{a} was founded by {b}, born in {gold}.")],
             "bridge": [("Search", a, f"{a} was founded by {b} in 1901."), ("Search", b, f"{b} was born in {gold}.")],
             # the same entity searched and failing, then found
             "flail": [("Search", a, miss)] * int(rng.integers(2, 5))
             + [("Search", f"{a} magazine", f"{a} was founded by {b}, born in {gold}.")],
             # six failed searches of one entity until the step limit
             "halted": [("Search", a, miss)] * 6}[str(kind)]
    lines = [f"Question: Where was the founder of {a} born?"]
    for i, (tool, arg, obs) in enumerate(steps, start=1):
        lines += [f"Thought {i}: I need to search {arg}.", f"Action {i}: {tool}[{arg}]", f"Observation {i}: {obs}"]
    n = len(steps) + 1
    correct = kind != "halted" and bool(rng.random() < 0.7)
    if kind != "halted":
        lines += [f"Thought {n}: I have it.", f"Action {n}: Finish[{gold if correct else 'Paris'}]",
                  f"Observation {n}: Answer is {'CORRECT' if correct else 'INCORRECT'}"]
    lines.append(f"Correct answer: {gold}")
    status = "HALTED" if kind == "halted" else ("CORRECT" if correct else "INCORRECT")
    return {"run": arm, "qid": f"hotpot-{q}", "trial": trial, "gold_answer": gold, "status": status,
            "block": "\n".join(lines) + "\n"}


def reflexion_runs(folder: Path) -> pl.DataFrame:
    rng = np.random.default_rng(3)
    records = [_reflexion_block(rng, q, t, arm) for arm in ("react", "reflexion") for q in range(40) for t in range(3)]
    path = folder / "reflexion_blocks.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return mx.read(path, **REFLEXION_READ)


_USERS = ("mia_li_3668", "ava_kim_1203", "noah_lee_8812", "liam_roy_4410")


def _tau_episode(rng: np.random.Generator, task: int, trial: int, arm: str) -> dict:
    """One tau-bench conversation: the user's id, ``get_user_details`` once, then one of a
    cancel loop (refused, asked again), a chain of flight searches, an update retried after
    errors, or a plain cancellation."""
    user, code = _USERS[task % len(_USERS)], f"R{task:02d}X{trial}"
    traj = [{"role": "system", "content": "# Airline Agent Policy"},
            {"role": "user", "content": f"Hi, I need help with my trip of May {10 + task}."}]
    n = [0]

    def call(name: str, args: dict, result: str) -> None:
        n[0] += 1
        cid = f"call_{task}_{trial}_{n[0]}"
        traj.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]})
        traj.append({"role": "tool", "tool_call_id": cid, "name": name, "content": result})

    traj += [{"role": "assistant", "content": "Could you please provide your user id?"},
             {"role": "user", "content": f"Sure, it's {user}."}]
    call("get_user_details", {"user_id": user}, json.dumps({"user_id": user, "reservations": [code]}))
    kind = rng.choice(["cancel_loop", "search_chain", "update_retry", "cancel"], p=[0.25, 0.25, 0.25, 0.25])
    if kind in ("cancel_loop", "cancel"):
        call("get_reservation_details", {"reservation_id": code},
             json.dumps({"reservation_id": code, "cabin": "basic"}))
        for _ in range(int(rng.integers(2, 5)) if kind == "cancel_loop" else 0):
            call("cancel_reservation", {"reservation_id": code},
                 f"Error: reservation {code} cannot be cancelled: basic economy outside 24 hours")
        call("cancel_reservation", {"reservation_id": code}, json.dumps({"status": "cancelled"}))
    else:
        for d in range(int(rng.integers(2, 5)) if kind == "search_chain" else 1):
            date = f"2024-05-{11 + d + task % 9:02d}"
            call("search_direct_flight", {"origin": "JFK", "destination": "SEA", "date": date},
                 json.dumps([{"flight_number": f"HAT{100 + d}", "date": date}]))
        for _ in range(int(rng.integers(2, 4)) if kind == "update_retry" else 0):
            call("update_reservation_flights", {"reservation_id": code, "flight": "HAT100"},
                 "Error: not enough seats on flight HAT100")
        call("update_reservation_flights", {"reservation_id": code, "flight": "HAT100"},
             json.dumps({"reservation_id": code, "status": "updated"}))
    traj += [{"role": "assistant", "content": "Done. Anything else?"}, {"role": "user", "content": "###STOP###"}]
    return {"task_id": task, "trial": trial, "reward": float(rng.random() < 0.5), "agent": arm, "traj": traj}


def tau_runs(folder: Path) -> pl.DataFrame:
    rng = np.random.default_rng(4)
    paths = []
    for arm in ("gpt-4o-mini", "gpt-4o"):
        path = folder / f"tau_airline_{arm}.jsonl"
        path.write_text("".join(json.dumps(_tau_episode(rng, t, k, arm)) + "\n" for t in range(30) for k in range(4)),
                        encoding="utf-8")
        paths.append(path)
    return mx.read(paths, arm=None, **{**TAU_READ, "columns": {**TAU_READ["columns"], "arm": "agent"}})


# ---------------------------------------------------------------------------- the criteria
def _mentions(name: str, vocabulary: set[str]) -> tuple[set[str], list[tuple[str, int, int]]]:
    """The tools a built name says its members call (core steps, ``with <tool>``, counts; not
    what a ``without`` clause names), and its counts as (tool, low, high)."""
    core = re.sub(r"^answer with no call, or |^varied: ", "", re.sub(r"\s*\[S\d+\]$", "", name))
    tools = {step.split(" (")[0].strip() for step in core.split(" -> ")}
    counts = []
    for m in _COUNT.finditer(name):
        tool = m["tool"] or next(iter(tools))
        counts.append((tool, int(m["lo"]), int(m["hi"] or m["lo"])))
        tools.add(tool)
    for clause in re.findall(r"\(with ([^()]+)\)", name):
        first = clause.split()[0]
        if first in vocabulary:
            tools.add(first)
    return tools & vocabulary | {t for t in tools if t not in vocabulary and t != "answer without tools"}, counts


def assert_names_tell_siblings_apart(runs: pl.DataFrame, space: mx.StrategySpace) -> pl.DataFrame:
    d = space.describe()
    names = d["built_name"].to_list()
    stripped = [re.sub(r"\s*\[S\d+\]$", "", n) for n in names]
    assert len(set(stripped)) == len(stripped), names
    assert not any(re.search(r"\d+(?:-\d+)? calls?\)", n) for n in names), names  # counts name their tool
    traj = render(runs)
    tools = [[t for t in s.split(" > ") if t] for s in traj["tools"].to_list()]
    vocabulary = {t for ts in tools for t in ts}
    # per trajectory: failed calls retried by the next call of their tool, counted call by call
    calls = segment(runs).filter(pl.col("tool") != "answer")
    per_run = calls.group_by("arm", "question_id", "sample_id").agg(pl.col("retried").sum().alias("r"))
    loops = (runs.select("arm", "question_id", "sample_id")
             .join(per_run, on=["arm", "question_id", "sample_id"], how="left", maintain_order="left")
             ["r"].fill_null(0).to_numpy() >= 2)
    ranges: dict[str, list[tuple[int, int, str]]] = {}
    for s, name, share in zip(d["strategy"].to_list(), names, d["retry_loop_share"].to_list()):
        idx = np.flatnonzero(space.labels_ == s)
        assert share == pytest.approx(loops[idx].mean()), name
        assert (LOOP in name) == (share >= 0.5), (name, share)
        if name == "answer without tools":
            assert all(not tools[i] for i in idx)
            continue
        mentioned, counts = _mentions(name, vocabulary)
        assert mentioned and mentioned <= vocabulary, (name, mentioned)
        for t in mentioned:
            held = np.mean([t in tools[i] for i in idx])
            assert held >= 0.9, (name, t, held)
        for t, lo, hi in counts:
            within = np.mean([lo <= tools[i].count(t) <= hi for i in idx])
            assert within >= 0.8, (name, t, within)  # the count counts the tool it names
            for olo, ohi, other in ranges.get(t, []):
                assert hi < olo or ohi < lo, (name, other)
            ranges.setdefault(t, []).append((lo, hi, name))
    # no two names each describe more than half of the other's members (rule 5 of strategy_names)
    read = space._render(runs)  # the reading the fit made (task calls, generic tools)
    frame = read.select("moves", "tools", "tokens").with_columns(
        pl.Series("strategy", space.labels_, dtype=pl.Int64), runs["n_rounds"],
        read["n_retries"].fill_null(0).cast(pl.Int64), read["n_repeat"].fill_null(0).cast(pl.Int64))
    named = strategy_names(frame, sibling_overlap=True)
    assert named["fidelity"].to_list() == pytest.approx(d.sort("strategy")["fidelity"].to_list())
    assert named["sibling_overlap"].max() <= SIBLING_OVERLAP, named.rows()
    return d


LOOP = "fail-and-retry loop"
_FITS: dict = {}


def _fitted(key: str, make, folder_factory):
    if key not in _FITS:
        runs = make(folder_factory.mktemp(key))
        _FITS[key] = runs, mx.StrategySpace(**FAST).fit(runs)
    return _FITS[key]


def test_reflexion_names(tmp_path_factory):
    runs, space = _fitted("reflexion", reflexion_runs, tmp_path_factory)
    d = assert_names_tell_siblings_apart(runs, space)
    # the six failed searches of one entity are not hidden by merging retries into one attempt
    halted = (runs["correct"].is_null() | ~runs["correct"]).to_numpy() & (runs["n_rounds"].to_numpy() == 6)
    s = int(np.bincount(space.labels_[halted]).argmax())
    assert LOOP in d.filter(pl.col("strategy") == s)["built_name"][0], d["built_name"].to_list()
    assert sum(LOOP in n for n in d["built_name"]) >= 1


def test_tau_bench_names(tmp_path_factory):
    runs, space = _fitted("tau", tau_runs, tmp_path_factory)
    d = assert_names_tell_siblings_apart(runs, space)
    # every member calls get_user_details once: no name counts it
    assert not any("get_user_details x" in n for n in d["built_name"]), d["built_name"].to_list()
    # the update retried after errors is a loop in every member, and its name says so
    retried = [any(t == "update_reservation_flights" for t in s.split(" > ")) and r >= 2
               for s, r in zip(render(runs)["tools"].to_list(), render(runs)["n_retries"].to_list())]
    s = int(np.bincount(space.labels_[np.asarray(retried)]).argmax())
    assert LOOP in d.filter(pl.col("strategy") == s)["built_name"][0], d["built_name"].to_list()


def test_fireact_names(fireact_dir):
    from mechanism.readers import read

    if "fireact" not in _FITS:
        runs = read(fireact_dir / "trajs", format="fireact")
        _FITS["fireact"] = runs, mx.StrategySpace(**FAST).fit(runs)
    assert_names_tell_siblings_apart(*_FITS["fireact"])


def test_a_loop_share_in_the_name_and_fidelity_counts_it():
    from mechanism.analysis._strategies.naming import strategy_names

    rows = []
    for strategy, n_retries, n in ((0, 3, 6), (0, 0, 4), (1, 0, 10)):
        rows += [{"strategy": strategy, "tools": "search", "moves": "first_lookup > answer",
                  "tokens": "T:search E:answer", "n_rounds": 1 + n_retries, "n_retries": n_retries, "n_repeat": 0}] * n
    names = strategy_names(pl.DataFrame(rows))
    assert names["built_name"].to_list() == [f"search ({LOOP})", "search"]
    assert names["fidelity"].to_list() == pytest.approx([0.6, 1.0])


def test_siblings_are_told_apart_by_what_only_one_does():
    from mechanism.analysis._strategies.naming import strategy_names

    def member(strategy, tools, moves, n, repeat=0):
        return [{"strategy": strategy, "tools": " > ".join(tools), "moves": " > ".join([*moves, "answer"]),
                 "tokens": " ".join(f"T:{t}" for t in tools), "n_rounds": len(tools), "n_retries": 0,
                 "n_repeat": repeat}] * n

    # 0 and 1 share the core "get_user -> cancel"; 1 also reads the order, before or after
    # cancelling (so that no order of it is a shared step), 0 never
    rows = (member(0, ["get_user", "cancel"], ["first", "first"], 10)
            + member(1, ["get_user", "get_order", "cancel"], ["first", "first", "first"], 5)
            + member(1, ["get_user", "cancel", "get_order"], ["first", "first", "first"], 5)
            # 2 and 3: one search, or three to four
            + member(2, ["search"], ["first_lookup"], 10)
            + member(3, ["search", "search", "search"], ["first_lookup", "first_lookup", "first_lookup"], 6)
            + member(3, ["search"] * 4, ["first_lookup"] * 4, 4))
    got = dict(zip(*strategy_names(pl.DataFrame(rows)).select("strategy", "built_name").to_dict(as_series=False)
                   .values()))
    assert got[1] == "get_user -> cancel (with get_order)" and got[0] == "get_user -> cancel (without get_order)"
    assert {got[2], got[3]} == {"search (x1)", "search (x3-4)"}


def test_tools_only_one_strategy_uses_are_named_as_alternatives():
    """The spreadsheet world's sort_filter sorts, filters or both, then reads the top rows: no
    one tool is called by 0.9 of it, so its core is `read_range`, which says nothing a sibling
    that only reads lacks; the tools only it calls, together, do."""
    from mechanism.analysis._strategies.naming import strategy_names

    def member(strategy, tools, n):
        return [{"strategy": strategy, "tools": " > ".join(tools),
                 "moves": " > ".join(["first"] * len(tools) + ["answer"]),
                 "tokens": " ".join(f"T:{t}" for t in tools), "n_rounds": len(tools), "n_retries": 0,
                 "n_repeat": 0}] * n

    rows = (member(0, ["sort", "read_range"], 5) + member(0, ["filter", "read_range"], 3)
            + member(0, ["filter", "sort", "read_range"], 2)
            + member(1, ["read_range", "read_range"], 9) + member(1, ["list_sheets", "read_range"], 1)
            # 2: a tool only it uses, but by too few of it to name (0.4 + 0.2 < 0.9)
            + member(2, ["find", "read_range"], 4) + member(2, ["macro", "read_range"], 2)
            + member(2, ["set_formula", "read_range"], 4) + member(1, ["set_formula"], 1))
    names = strategy_names(pl.DataFrame(rows)).sort("strategy")
    built = names["built_name"].to_list()
    assert built[0] == "read_range (with sort or filter)"
    assert "sort" not in built[1] and "with find" not in built[2] and "macro" not in built[2]
    assert names["fidelity"][0] == 1.0


def test_no_two_names_carry_overlapping_counts_of_one_tool():
    from mechanism.analysis._strategies.naming import strategy_names

    def member(strategy, tools, n):
        return [{"strategy": strategy, "tools": " > ".join(tools), "moves": " > ".join(["first_lookup"] * len(tools)
                                                                                      + ["answer"]),
                 "tokens": "E:answer", "n_rounds": len(tools), "n_retries": 0, "n_repeat": 0}] * n

    rows = (member(0, ["search"], 10) + member(1, ["search"] * 2, 6) + member(1, ["search"] * 3, 4)
            # a second pair told apart by its searches too, which the first pair's counts already hold
            # (alphabetically its first choice), so that it is told apart by its visits
            + member(2, ["search", "visit"], 10) + member(3, ["search", "search", "visit", "visit"], 10))
    got = strategy_names(pl.DataFrame(rows))["built_name"].to_list()
    assert got == ["search (x1)", "search (x2-3)", "search -> visit (visit x1)", "search -> visit (visit x2)"]
