"""Any planted world re-logged through one generic action tool (mechanism.datasets.worlds.generic):
``act(command="<tool> <values>")`` read back with `mechanism.read`, the same episodes (rounds,
observations, answers, labels) and the same truth, for worlds in OpenAI tool_calls, ATIF,
ReAct and Search-R1 formats and for the simulator."""
from __future__ import annotations

import json

import polars as pl
import pytest

import mechanism as mx
from mechanism.core.errors import InputError
from mechanism.datasets.simulation import simulate
from mechanism.datasets.worlds import (
    World,
    as_generic_action,
    assistant,
    coder,
    computer,
    multihop,
    service,
    terminal,
    textgame,
    webshop,
)
from mechanism.datasets.worlds.generic import command_text

KEYS = ["arm", "question_id", "sample_id"]
GENERATORS = {
    "service": (lambda: service(n_questions=8, random_state=1), "openai"),
    "coder": (lambda: coder(n_questions=8, random_state=1), "openai"),
    "assistant": (lambda: assistant(n_questions=8, random_state=1), "atif"),
    "webshop": (lambda: webshop(n_questions=8, random_state=1), "openai"),  # ReAct in chat, re-logged
    "multihop": (lambda: multihop(n_questions=8, random_state=1), "openai"),  # Search-R1, re-logged
    "terminal": (lambda: terminal(n_questions=8, random_state=1), "openai"),
    "computer": (lambda: computer(n_questions=8, random_state=1), "atif"),
    # bare ReAct commands (`Action: go to sofa 1`), read as the generic tool: re-logged as they were
    "textgame": (lambda: textgame(n_questions=8, random_state=1), "openai"),
    "simulation": (lambda: simulate(n_questions=6, n_samples=2, arms=("base", "rl"), random_state=0,
                                    progress=False), "openai"),
}
ONE_COMMAND_TOOL = {"terminal", "computer", "textgame"}


@pytest.fixture(scope="module", params=sorted(GENERATORS))
def pair(request, tmp_path_factory):
    make, fmt = GENERATORS[request.param]
    world = make()
    generic = as_generic_action(world)
    runs, report = mx.read(generic.write(tmp_path_factory.mktemp(request.param)), format=generic.format,
                           report=True)
    return request.param, fmt, world, generic, runs, report


def test_reads_back_with_one_tool_and_the_same_labels(pair):
    name, fmt, world, generic, runs, report = pair
    assert isinstance(generic, World) and generic.format == fmt
    assert generic.name == f"{name}_act"
    assert report.skipped == [] and runs.height == world.truth.height
    assert {s["tool"] for steps in runs["steps"].to_list() for s in steps} == {"act"}
    labels = generic.labels_for(runs)
    assert not any(label is None for label in labels)
    assert labels.tolist() == world.labels_for(runs).tolist()
    assert generic.truth.equals(world.truth) and generic.planted == world.planted


def test_the_same_episodes(pair):
    """Rounds, observations, thoughts, answers and labels of every episode are the original's."""
    name, _, world, _, runs, _ = pair
    original = dict(zip(world.runs.select(KEYS).iter_rows(), world.runs.iter_rows(named=True)))
    for key, row in zip(runs.select(KEYS).iter_rows(), runs.iter_rows(named=True)):
        old = original[key]
        assert row["n_rounds"] == old["n_rounds"] and row["correct"] == old["correct"]
        assert row["answer"] == old["answer"] and row["question"] == old["question"]
        assert [s["observation"] or "" for s in row["steps"]] == [s["observation"] or "" for s in old["steps"]]
        assert [s["thought"] or "" for s in row["steps"]] == [s["thought"] or "" for s in old["steps"]]


def test_commands_are_the_tool_and_its_values(pair):
    name, _, world, _, runs, _ = pair
    original = {k: row["steps"] for k, row in zip(world.runs.select(KEYS).iter_rows(),
                                                   world.runs.iter_rows(named=True))}
    n_single = 0
    for key, steps in zip(runs.select(KEYS).iter_rows(), runs["steps"].to_list()):
        for new, old in zip(steps, original[key]):
            args = json.loads(new["arguments"])
            assert list(args) == ["command"]
            command = args["command"]
            values = [v for v in json.loads(old["arguments"]).values() if v is not None]
            if name in ONE_COMMAND_TOOL:
                assert command == command_text(None, old["arguments"])
                assert command.split()[0] == str(values[0]).split()[0]  # the program / the action is the verb
            else:
                assert command == command_text(old["tool"], old["arguments"])
                assert command.split()[0] == old["tool"]
            if len(values) == 1 and isinstance(values[0], str):
                n_single += 1
                expected = values[0] if name in ONE_COMMAND_TOOL else f"{old['tool']} {values[0]}".rstrip()
                assert command == expected  # search[Paris] -> "search Paris"; back[] -> "back"
    assert n_single > 0


def test_command_text_reads_like_a_harness_log():
    assert command_text("search", {"query": "Paris"}) == "search Paris"
    assert command_text("search", '{"query": "Paris France"}') == "search Paris France"
    assert command_text("get_order_details", {"order_id": "W1"}) == "get_order_details W1"
    assert command_text("modify", {"order_id": "W1", "reason": "too big", "n": 2, "ok": True}) == \
        'modify W1 "too big" 2 true'
    assert command_text("click", {"x": None, "label": "Buy Now"}) == "click Buy Now"
    assert command_text(None, {"action": "scroll", "coordinate": [5, 9], "scroll_direction": "down"}) == \
        "scroll 5 9 down"
    assert command_text("list_tables", {}) == "list_tables"
    assert command_text("run", "not json{") == "run not json{"
    assert command_text("f", {"a": "x", "b": ""}) == 'f x ""'
    assert command_text("f", {"a": "x", "b": {"k": [1, 2]}}) == 'f x {"k":[1,2]}'
    # the value that writes the action out comes first, wherever the call put it
    assert command_text("Bash", {"description": "Run the tests", "command": "pytest -q"}) == \
        'Bash "pytest -q" "Run the tests"'


def test_a_tools_arguments_are_written_in_one_order_whatever_order_the_model_gave():
    # a model gives a call's keys in any order; a harness writes a tool's arguments in one
    world = simulate(n_questions=1, n_samples=1, arms=("base",), random_state=0, progress=False)
    steps = [{"tool": "Read", "arguments": json.dumps(a), "observation": "x", "query": None, "thought": None,
              "user": None} for a in ({"file_path": "a.py", "limit": 40, "offset": 7},
                                      {"offset": 7, "file_path": "a.py", "limit": 40},
                                      {"limit": 40, "file_path": "b.py"})]
    world.runs = world.runs.with_columns(pl.Series("steps", [steps], dtype=world.runs["steps"].dtype))
    messages = as_generic_action(world).records[0]["messages"]
    commands = [json.loads(c["function"]["arguments"])["command"] for m in messages for c in m.get("tool_calls") or []]
    assert commands == ["Read a.py 40 7", "Read a.py 40 7", "Read b.py 40"]


def test_finishing_calls_stay_and_other_names(tmp_path):
    world = coder(n_questions=4, random_state=2)
    generic = as_generic_action(world, tool="step", field="action", with_tool=True)
    names = {c["function"]["name"] for rec in generic.records for m in rec["messages"]
             for c in m.get("tool_calls") or []}
    assert names <= {"step", "submit"} and "submit" in names
    runs = mx.read(generic.write(tmp_path), format="openai")
    assert {s["tool"] for steps in runs["steps"].to_list() for s in steps} == {"step"}
    assert all(list(json.loads(s["arguments"])) == ["action"] for steps in runs["steps"].to_list() for s in steps)
    assert world.records[0] != generic.records[0] and world.records[0]["messages"][0] == generic.records[0][
        "messages"][0]
    one = as_generic_action(terminal(n_questions=2, random_state=0), with_tool=True)
    assert all(json.loads(s["arguments"])["command"].startswith("bash ") for steps in one.runs["steps"].to_list()
               for s in steps)


def test_bad_tool_names():
    world = service(n_questions=2, n_samples=1)
    with pytest.raises(InputError, match="finishing"):
        as_generic_action(world, tool="submit")
    with pytest.raises(InputError, match="named"):
        as_generic_action(world, field="")
