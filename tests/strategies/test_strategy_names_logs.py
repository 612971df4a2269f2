"""Names on real-shaped logs: tau-bench conversations and Reflexion trial logs,
generated here in the exact shape of those sources (the FireAct agents, real data, are in
test_strategy_fireact.py). On each: names distinct once ids are dropped; a "without tools"
strategy holds only tool-free episodes; the tools a name mentions are used by the members
holding at least 0.9 of the strategy's trajectories.

The logs carry what the issue saw go wrong on the real ones: tau-bench episodes that only talk
(ask for the user id, refuse, transfer in words) beside episodes of 1 to 9 calls; Reflexion
trials that halt in search loops beside ones that answer at once or find the answer in one or two
searches or a search and a lookup, with the reflections of earlier trials in the question.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from test_strategy_fireact import assert_names_describe_their_members

import mechanism as mx

TAU = dict(columns={"messages": "traj", "question_id": "task_id", "sample_id": "trial", "correct": "reward"})
REFLEXION = dict(format="react", columns={"text": "scratchpad", "gold": "answer", "correct": "status:CORRECT",
                                          "sample_id": "trial"})
_NAMES = ("mia_li_3668", "ava_kim_1203", "noah_lee_8812", "liam_roy_4410", "emma_ito_2291", "zoe_park_7753")


def _code(rng: np.random.Generator) -> str:
    return "".join("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"[int(i)] for i in rng.integers(0, 34, 6))


def _tau_episode(rng: np.random.Generator, task: int, trial: int) -> dict:
    """One tau-bench airline record: ``task_id, trial, reward, traj`` (OpenAI messages with the
    simulated user's turns, tool calls, tool results and ``###STOP###``)."""
    user = _NAMES[task % len(_NAMES)]
    codes = [_code(rng) for _ in range(int(rng.integers(1, 4)))]
    traj = [{"role": "system", "content": "# Airline Agent Policy\nYou can help users book, modify, or cancel "
                                          "flight reservations."},
            {"role": "user", "content": rng.choice(["Hi, I need to cancel a trip I booked.",
                                                    "I want to change my flight to a later date.",
                                                    "Can I get a refund on my basic economy ticket?"])}]
    n_call = [0]

    def call(name: str, args: dict, result: str) -> None:
        n_call[0] += 1
        cid = f"call_{task}_{trial}_{n_call[0]}"
        traj.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]})
        traj.append({"role": "tool", "tool_call_id": cid, "name": name, "content": result})

    def talk(agent: str, reply: str) -> None:
        traj.append({"role": "assistant", "content": agent})
        traj.append({"role": "user", "content": reply})

    kind = rng.choice(["talk", "cancel", "modify", "transfer", "browse"], p=[0.2, 0.25, 0.25, 0.1, 0.2])
    if kind == "talk":  # policy answers in words only, however long the conversation
        for _ in range(int(rng.integers(1, 4))):
            talk(str(rng.choice(["Could you please provide your user id?", "I am sorry, basic economy tickets "
                                 "cannot be refunded.", "Per our policy I cannot change that booking."])),
                 str(rng.choice([f"Sure, it's {user}.", "Are you sure?", "That is disappointing."])))
        traj.append({"role": "assistant", "content": "Is there anything else I can help with?"})
        traj.append({"role": "user", "content": "###STOP###"})
        return {"task_id": task, "trial": trial, "reward": 0.0, "model": "gpt-4o", "traj": traj}
    talk("I can help with that. Could you please provide your user id?", f"Sure, it's {user}.")
    call("get_user_details", {"user_id": user}, json.dumps({"user_id": user, "reservations": codes}))
    if kind == "browse":  # reads every reservation before acting
        for c in codes:
            call("get_reservation_details", {"reservation_id": c},
                 json.dumps({"reservation_id": c, "origin": "JFK", "destination": "SEA", "cabin": "economy"}))
    else:
        talk("Which reservation is it about?", f"The one with code {codes[0]}, please.")
        call("get_reservation_details", {"reservation_id": codes[0]},
             json.dumps({"reservation_id": codes[0], "origin": "JFK", "destination": "SEA", "cabin": "economy"}))
    if kind == "cancel" or kind == "browse":
        talk("Shall I cancel it?", "Yes, the reason is change of plan.")
        call("cancel_reservation", {"reservation_id": codes[0]}, json.dumps({"status": "cancelled"}))
    elif kind == "modify":
        for _ in range(int(rng.integers(1, 4))):  # searches on other dates until one suits
            date = f"2024-05-{int(rng.integers(10, 29))}"
            call("search_direct_flight", {"origin": "JFK", "destination": "SEA", "date": date},
                 json.dumps([{"flight_number": f"HAT{int(rng.integers(100, 999))}", "date": date}]))
        call("think", {"thought": "The user wants the later flight; the fare difference applies."}, "")
        call("update_reservation_flights", {"reservation_id": codes[0], "cabin": "economy"},
             json.dumps({"reservation_id": codes[0], "status": "updated"}))
    else:
        call("transfer_to_human_agents", {"summary": f"{user} asks for a refund outside policy"},
             "Transfer successful")
    traj.append({"role": "assistant", "content": "Done. Have a nice day."})
    traj.append({"role": "user", "content": "###STOP###"})
    return {"task_id": task, "trial": trial, "reward": float(rng.random() < 0.6), "model": "gpt-4o", "traj": traj}


_ENTITIES = ("Arthur's Magazine", "Oberoi family", "Invalid Records", "Milhouse", "Nicholas Ray", "Kiss and Tell")


def _reflexion_trial(rng: np.random.Generator, q: int, trial: int) -> dict:
    """One Reflexion HotpotQA record: ``model, trial, question, answer, status, is_halted,
    is_correct, scratchpad, reflections`` (the Wikipedia ReAct scratchpad)."""
    a, b = _ENTITIES[q % len(_ENTITIES)] + f" {q}", f"Person {q} Smith"
    question = f"Where was the founder of {a} born?"
    reflections = [f"- I searched too broadly in trial {t}." for t in range(1, trial)]
    if reflections:
        question = ("You have attempted to answer the following question before and failed. Reflections:\n"
                    + "\n".join(reflections) + "\nQuestion: " + question.split("Question: ")[-1])
    lines = [f"Question: {question.splitlines()[-1].removeprefix('Question: ')}"]
    kind = rng.choice(["direct", "one", "bridge", "lookup", "halted"], p=[0.1, 0.25, 0.25, 0.2, 0.2])
    steps = [("Search", a, f"{a} was founded by {b} in 1901.")]
    if kind == "direct":  # answers from memory at once
        steps = []
    elif kind == "bridge":
        steps.append(("Search", b, f"{b} was born in Town{q}."))
    elif kind == "lookup":
        steps.append(("Lookup", "born", f"(Result 1/1) {b} was born in Town{q}."))
    elif kind == "halted":  # searches that find nothing until the step limit
        steps = [("Search", str(rng.choice([a, f"{a} founder", f"founder of {a}", b])),
                  str(rng.choice(["Could not find [x]. Similar: [].", f"{a} is a name."])))
                 for _ in range(int(rng.integers(4, 7)))]
    for i, (tool, arg, obs) in enumerate(steps, start=1):
        lines += [f"Thought {i}: I need to search next.", f"Action {i}: {tool}[{arg}]", f"Observation {i}: {obs}"]
    halted = kind == "halted"
    correct = not halted and bool(rng.random() < 0.7)
    if not halted:
        n = len(steps) + 1
        lines += [f"Thought {n}: I have the answer.", f"Action {n}: Finish[{'Town' + str(q) if correct else 'Paris'}]"]
    return {"model": "gpt-3.5-turbo", "trial": trial, "question": question, "answer": f"Town{q}",
            "status": "CORRECT" if correct else ("HALTED" if halted else "INCORRECT"), "is_halted": halted,
            "is_correct": correct, "scratchpad": "\n".join(lines), "reflections": reflections}


def _write(path, records) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _tau_runs(folder):
    rng = np.random.default_rng(0)
    path = folder / "tau_airline_runs.jsonl"
    _write(path, [_tau_episode(rng, t, k) for t in range(40) for k in range(4)])
    return mx.read(path, format="openai", **TAU)


def _reflexion_runs(folder):
    rng = np.random.default_rng(1)
    path = folder / "reflexion_hotpotqa.jsonl"
    _write(path, [_reflexion_trial(rng, q, t) for q in range(50) for t in (1, 2, 3)])
    return mx.read(path, **REFLEXION)


_SOURCES = {"tau-bench": _tau_runs, "reflexion": _reflexion_runs}
_FITS: dict = {}


@pytest.fixture(params=[pytest.param((s, e), id=f"{s}-{e or 'default'}",
                                      marks=[pytest.mark.slow] if e is None else [])
                         for s in _SOURCES for e in ("hashing-256", None)])
def fitted(request, tmp_path_factory):
    source, embedder = request.param
    if request.param not in _FITS:
        runs = _SOURCES[source](tmp_path_factory.mktemp(source))
        _FITS[request.param] = runs, mx.StrategySpace(embedder=embedder, random_state=0, progress=False).fit(runs)
    return _FITS[request.param]


def test_the_logs_are_read_in_their_shape(fitted):
    runs, _ = fitted
    rounds = runs["n_rounds"].to_numpy()
    assert runs.height in (150, 160) and (rounds == 0).any() and rounds.max() >= 5


def test_names_describe_their_members_on_real_shaped_logs(fitted):
    # both logs plant tool-free episodes (tau-bench's talking turns, Reflexion's answers from
    # memory): exactly one strategy says "without tools"
    assert assert_names_describe_their_members(*fitted) == 1, fitted[1].describe()["built_name"].to_list()
