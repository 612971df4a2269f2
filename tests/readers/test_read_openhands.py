"""OpenHands event histories (``mechanism.readers.openhands``): its evaluation output, one
instance a line, each episode a stream of actions and the observations that answer them."""
from __future__ import annotations

import json

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mechanism.analysis.segmentation import segment
from mechanism.core.errors import InputError
from mechanism.readers import read

ISSUE = "<uploaded_files>\n/workspace/astropy\n</uploaded_files>\nfoo() crashes on empty input"
PATCH = "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n"


class _History:
    """Events in OpenHands' own shape, numbered as its event stream numbers them."""

    def __init__(self) -> None:
        self.events: list[dict] = []

    def add(self, **event) -> int:
        event = {"id": len(self.events), "timestamp": "2025-01-01T00:00:00", **event}
        self.events.append(event)
        return event["id"]

    def user(self, text: str) -> None:
        self.add(source="user", action="message", message=text, args={"content": text, "image_urls": None,
                                                                       "wait_for_response": False})

    def harness(self) -> None:  # a recall of the workspace's knowledge and the state changes around it
        rid = self.add(source="user", action="recall", message="Retrieving content",
                       args={"recall_type": "workspace_context"})
        self.add(source="environment", observation="recall", content="Added workspace context", cause=rid, extras={})
        self.add(source="environment", observation="agent_state_changed", content="", extras={"agent_state": "running"})

    def call(self, action: str, function: str, args: dict, result: str, *, thought: str = "", exit_code: int | None = 0,
             observation: str | None = None, response: str | None = None, call_id: str | None = None) -> None:
        meta = {"function_name": function, "tool_call_id": call_id or f"toolu_{len(self.events)}",
                "model_response": {"id": response or f"chatcmpl-{len(self.events)}"}, "total_calls_in_response": 1}
        aid = self.add(source="agent", action=action, message=f"Running {function}",
                       args={**args, "thought": thought, "confirmation_state": "confirmed", "security_risk": -1},
                       tool_call_metadata=meta)
        extras = {} if exit_code is None else {"command": args.get("command"), "metadata": {"exit_code": exit_code}}
        self.add(source="agent", observation=observation or action, content=result, cause=aid, extras=extras,
                 message=f"Ran {function}")

    def finish(self, text: str) -> None:
        self.add(source="agent", action="finish", message=text, args={"final_thought": text, "outputs": {},
                                                                      "thought": ""},
                 tool_call_metadata={"function_name": "finish", "tool_call_id": "toolu_finish",
                                     "model_response": {"id": "chatcmpl-last"}})


def _failed(runs) -> list[bool]:
    """Each call's failure verdict, in order, as the move reading counts it."""
    return segment(runs).filter(~pl.col("tool").is_in(["answer", "ask_user"]))["failed"].to_list()


def _record(history: _History, **top) -> dict:
    return {"instance_id": "astropy__astropy-12907", "instruction": "Fix the issue.", "history": history.events,
            "test_result": {"git_patch": PATCH}, "metadata": {"agent_class": "CodeActAgent",
                                                              "llm_config": {"model": "litellm_proxy/claude-sonnet-4"}},
            "error": None, **top}


def _episode() -> _History:
    h = _History()
    h.user(ISSUE)
    h.harness()
    h.call("run", "execute_bash", {"command": "grep -rn 'def foo' src", "is_input": False}, "src/a.py:3:def foo(x):",
           thought="Find foo first.")
    h.call("read", "str_replace_editor", {"path": "/workspace/src/a.py", "command": "view", "view_range": [1, 20]},
           "     1\tdef foo(x):", exit_code=None)
    h.call("edit", "str_replace_editor", {"path": "/workspace/src/a.py", "command": "str_replace", "old_str": "x",
                                          "new_str": "x or []"}, "The file has been edited.", exit_code=None)
    h.call("run", "execute_bash", {"command": "python -m pytest tests -q"}, "Command timed out", exit_code=-1)
    tid = h.add(source="agent", action="think", message="Thinking", args={"thought": "The tests hang; try one file."},
                tool_call_metadata={"function_name": "think", "tool_call_id": "toolu_think"})
    h.add(source="agent", observation="think", content="Your thought has been logged.", cause=tid, extras={})
    h.call("run", "execute_bash", {"command": "python -m pytest tests/test_a.py -q"}, "1 passed")
    h.finish("Fixed foo on empty input.")
    h.add(source="environment", observation="agent_state_changed", content="", extras={"agent_state": "finished"})
    return h


def test_actions_are_calls_of_the_models_tools_and_the_patch_is_the_answer(tmp_path):
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps(_record(_episode(), report={"resolved": True})) + "\n")
    runs, report = read(path, report=True, columns={"correct": "report.resolved"})
    assert list(report.formats.values()) == ["openhands"]  # found without format=
    row = runs.row(0, named=True)
    assert row["question_id"] == "astropy__astropy-12907" and row["arm"] == "litellm_proxy/claude-sonnet-4"
    assert row["question"] == ISSUE and row["answer"] == PATCH and row["correct"] is True
    steps = row["steps"]
    assert [s["tool"] for s in steps] == ["execute_bash", "str_replace_editor", "str_replace_editor",
                                          "execute_bash", "execute_bash"]  # the harness's recall is no round
    assert row["n_rounds"] == 5  # finishing is no round
    assert json.loads(steps[1]["arguments"]) == {"path": "/workspace/src/a.py", "command": "view",
                                                 "view_range": [1, 20]}
    assert steps[0]["thought"] == "Find foo first." and steps[0]["observation"] == "src/a.py:3:def foo(x):"
    # a command the runtime killed for its time failed; the thought that followed joins the next call
    assert _failed(runs) == [False, False, False, True, False]
    assert steps[4]["thought"] == "The tests hang; try one file."
    meta = json.loads(row["meta"])
    assert meta["exit_codes"] == [0, -1, 0] and meta["agent_class"] == "CodeActAgent"


def test_error_observations_fail_calls_sent_together_are_parallel_and_the_user_speaks_again(tmp_path):
    h = _History()
    h.user("Which file defines foo?")
    h.call("run", "execute_bash", {"command": "grep -rn foo src"}, "", response="r1", call_id="c1")
    h.call("read", "str_replace_editor", {"path": "src/b.py", "command": "view"}, "ERROR: no such file",
           observation="error", exit_code=None, response="r1", call_id="c2")
    h.add(source="agent", action="message", message="Is it in src or lib?",
          args={"content": "Is it in src or lib?", "wait_for_response": True})
    h.user("lib")
    h.call("run", "execute_bash", {"command": "grep -rn foo lib"}, "lib/c.py:1:def foo", response="r2")
    h.add(source="agent", action="message", message="lib/c.py defines it.", args={"content": "lib/c.py defines it."})
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"history": h.events, "correct": True}))
    runs = read(path)
    row = runs.row(0, named=True)
    steps = row["steps"]
    assert [bool(s["parallel"]) for s in steps] == [False, True, False]
    assert _failed(runs) == [False, True, False]
    assert steps[2]["user"] == "lib"  # the user's reply before the next call
    assert row["answer"] == "lib/c.py defines it." and row["n_rounds"] == 3  # finished by speaking


def test_a_run_that_never_finished_is_a_failure_with_its_error_kept(tmp_path):
    h = _History()
    h.user(ISSUE)
    h.call("run", "execute_bash", {"command": "ls"}, "src tests")
    h.call("run", "execute_bash", {"command": "ls"}, "src tests")
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps(_record(h, error="Agent got stuck in a loop", report={"resolved": True})) + "\n")
    row = read(path).row(0, named=True)
    assert row["answer"] is None and row["correct"] is False
    meta = json.loads(row["meta"])
    assert meta["error"] == "Agent got stuck in a loop" and meta["git_patch"] == PATCH


def _sdk_call(eid: str, tool: str, args: dict, response: str, thought: str = "") -> dict:
    return {"kind": "ActionEvent", "id": eid, "source": "agent", "timestamp": "2025-11-01T00:00:00",
            "thought": [{"type": "text", "text": thought}] if thought else [], "tool_name": tool,
            "tool_call_id": f"call_{eid}", "llm_response_id": response, "security_risk": "LOW",
            "tool_call": {"id": f"call_{eid}", "name": tool, "arguments": json.dumps(args), "origin": "completion"},
            "action": {"kind": f"{tool.title()}Action", **args}}


def _sdk_result(eid: str, action: dict, text: str, **observation) -> dict:
    return {"kind": "ObservationEvent", "id": eid, "source": "environment", "tool_name": action["tool_name"],
            "tool_call_id": action["tool_call_id"], "action_id": action["id"],
            "observation": {"kind": "TerminalObservation", "content": [{"type": "text", "text": text}],
                            "is_error": False, **observation}}


def test_the_sdks_typed_events_read_as_the_same_episode(tmp_path):
    grep = _sdk_call("a1", "terminal", {"command": "grep -rn foo src"}, "resp-1", thought="Find foo.")
    view = _sdk_call("a2", "file_editor", {"command": "view", "path": "src/a.py"}, "resp-2")
    test = _sdk_call("a3", "terminal", {"command": "pytest -q"}, "resp-2")  # sent with the view
    think = _sdk_call("a4", "think", {"thought": "The test hangs."}, "resp-3")
    rerun = _sdk_call("a5", "terminal", {"command": "pytest -q tests/test_a.py"}, "resp-4")
    bogus = _sdk_call("a6", "no_such_tool", {}, "resp-5")
    bogus["action"] = None  # not executable: the SDK answers with an agent error
    finish = _sdk_call("a7", "finish", {"message": "Fixed foo."}, "resp-6")
    events = [
        {"kind": "SystemPromptEvent", "id": "s0", "source": "agent", "system_prompt": {"type": "text", "text": "You"},
         "tools": []},
        {"kind": "MessageEvent", "id": "m0", "source": "user",
         "llm_message": {"role": "user", "content": [{"type": "text", "text": ISSUE}]}},
        grep, _sdk_result("o1", grep, "src/a.py:3:def foo(x):", exit_code=0),
        view, test, _sdk_result("o2", view, "1\tdef foo(x):"),
        _sdk_result("o3", test, "timed out", exit_code=-1, timeout=True),
        think, _sdk_result("o4", think, "Your thought has been logged."),
        {"kind": "ConversationStateUpdateEvent", "id": "c0", "source": "environment", "key": "execution_status",
         "value": "running"},
        rerun, _sdk_result("o5", rerun, "1 passed", exit_code=0),
        bogus, {"kind": "AgentErrorEvent", "id": "e1", "source": "agent", "tool_name": "no_such_tool",
                "tool_call_id": bogus["tool_call_id"], "error": "Tool 'no_such_tool' not found."},
        finish, _sdk_result("o7", finish, "Fixed foo."),
    ]
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps({"instance_id": "astropy__astropy-12907", "history": events,
                                "test_result": {"git_patch": PATCH}, "report": {"resolved": False}}) + "\n")
    runs, report = read(path, report=True, columns={"correct": "report.resolved"})
    assert list(report.formats.values()) == ["openhands"]
    row = runs.row(0, named=True)
    steps = row["steps"]
    assert [s["tool"] for s in steps] == ["terminal", "file_editor", "terminal", "terminal", "no_such_tool"]
    assert [bool(s["parallel"]) for s in steps] == [False, False, True, False, False]
    assert _failed(runs) == [False, False, True, False, True]  # the timeout and the agent error
    assert steps[0]["thought"] == "Find foo." and steps[3]["thought"] == "The test hangs."
    assert json.loads(steps[1]["arguments"]) == {"command": "view", "path": "src/a.py"}
    assert steps[4]["observation"] == "Tool 'no_such_tool' not found."
    assert row["question"] == ISSUE and row["answer"] == PATCH and row["correct"] is False
    assert json.loads(row["meta"])["exit_codes"] == [0, -1, 0]


@pytest.mark.parametrize(("event", "field"), [
    ({"source": "agent", "observation": "run", "content": "x", "cause": 99}, "history[1].cause"),
    ({"source": "agent", "action": "run", "args": "ls"}, "history[1].args"),
    ({"source": "agent", "content": "x"}, "history[1]"),
    ({"source": "agent", "observation": "run", "content": ["x"], "cause": 0}, "history[1].content"),
    ({"kind": "ActionEvent", "id": "b", "thought": []}, "history[1].tool_name"),
    ({"kind": "ObservationEvent", "id": "b", "action_id": "a", "observation": "x"}, "history[1].observation"),
    ({"kind": "MessageEvent", "id": "b", "source": "user", "llm_message": {"content": 7}},
     "history[1].llm_message"),
])
def test_a_broken_event_is_a_one_line_error_naming_it(tmp_path, event, field):
    first = ({"kind": "ActionEvent", "id": "a", "source": "agent", "tool_name": "terminal", "tool_call_id": "c",
              "action": {"command": "ls"}} if "kind" in event else
             {"id": 0, "source": "agent", "action": "run", "args": {"command": "ls"}})
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"history": [first, event], "correct": True}) + "\n")
    with pytest.raises(InputError) as err:
        read(path, format="openhands")
    assert field in str(err.value) and "bad.jsonl" in str(err.value) and "\n" not in str(err.value)


_COMMANDS = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commands=st.lists(st.tuples(_COMMANDS, _COMMANDS, st.booleans()), min_size=1, max_size=6))
def test_every_command_and_output_reads_back(tmp_path, commands):
    h = _History()
    h.user(ISSUE)
    for command, output, failed in commands:
        h.call("run", "execute_bash", {"command": command}, output, observation="error" if failed else "run")
    h.finish("done")
    path = tmp_path / "prop.json"
    path.write_text(json.dumps({"history": h.events, "correct": True}))
    runs = read(path, format="openhands")
    steps = runs.row(0, named=True)["steps"]
    assert [json.loads(s["arguments"])["command"] for s in steps] == [c for c, _, _ in commands]
    assert [s["observation"] for s in steps] == [o for _, o, _ in commands]
    # the reader's own verdict (the move reading may add its own: an output of "None" is one)
    assert [bool(s.get("failed")) for s in steps] == [f for _, _, f in commands]


def _save_conversation(folder, events: list[dict], model: str | None = "anthropic/claude-sonnet-4-5",
                       status: str = "finished", shuffle_names: bool = True) -> None:
    """A conversation as the SDK saves it: ``base_state.json`` and one file per event, named
    ``event-<index>-<id>.json`` (written out of order, as a listing may return them)."""
    (folder / "events").mkdir(parents=True)
    state = {"id": folder.name, "agent": {"kind": "Agent", "llm": {"model": model} if model else {}, "tools": []},
             "workspace": {"kind": "LocalWorkspace", "working_dir": "/workspace"}, "execution_status": status,
             "max_iterations": 500}
    (folder / "base_state.json").write_text(json.dumps(state))
    order = list(reversed(range(len(events)))) if shuffle_names else list(range(len(events)))
    for i in order:
        (folder / "events" / f"event-{i:05d}-{i:08x}-aaaa-bbbb.json").write_text(json.dumps(events[i]))


def _sdk_episode(command: str, *, extra: list[dict] | None = None) -> list[dict]:
    run = _sdk_call("a1", "terminal", {"command": command}, "resp-1")
    finish = _sdk_call("a2", "finish", {"message": "Done."}, "resp-2")
    return [{"kind": "MessageEvent", "id": "m0", "source": "user",
             "llm_message": {"role": "user", "content": [{"type": "text", "text": ISSUE}]}},
            run, _sdk_result("o1", run, "ok", exit_code=0), *(extra or []), finish]


def test_a_folder_of_saved_sdk_conversations_reads_one_episode_each(tmp_path):
    root = tmp_path / "conversations"
    _save_conversation(root / "c0ffee01", _sdk_episode("grep -rn foo src"))
    # eleven events: names sort 00000 < 00010 < 00002 by text, read by their index
    many = _sdk_episode("ls", extra=[item for i in range(4) for item in (
        _sdk_call(f"b{i}", "terminal", {"command": f"pytest -k t{i}"}, f"r{i}"),
        _sdk_result(f"p{i}", {"tool_name": "terminal", "tool_call_id": f"call_b{i}", "id": f"b{i}"}, "1 passed"))])
    _save_conversation(root / "c0ffee02", many, model=None, status="stuck")
    (root / "c0ffee02" / "events" / ".DS_Store").write_text("")
    (root / "notes.txt").write_text("not a conversation")
    # a saved conversation holds no grade: here the run's own end says it
    finished = {"correct": "execution_status:finished"}
    with pytest.raises(InputError, match="cannot score"):
        read(root)
    runs, report = read(root, report=True, columns=finished)
    assert list(report.formats.values()) == ["openhands", "openhands"]
    assert runs["correct"].to_list() == [True, False]
    assert runs["question_id"].to_list() == ["c0ffee01", "c0ffee02"]
    assert [[s["tool"] for s in steps] for steps in runs["steps"].to_list()] == [["terminal"], ["terminal"] * 5]
    assert [json.loads(s["arguments"])["command"] for s in runs["steps"][1]] == ["ls", *(f"pytest -k t{i}" for i in
                                                                                        range(4))]
    assert runs["arm"].to_list() == ["anthropic/claude-sonnet-4-5", "conversations"]
    meta = json.loads(runs["meta"][1])
    assert meta["left_out_files"] == [".DS_Store"]
    assert any("no event file" in n for n in report.notes)
    # one conversation's folder reads alone too
    assert read(root / "c0ffee01", columns=finished)["question_id"].to_list() == ["c0ffee01"]


def test_unknown_sdk_events_are_said_and_a_stopped_run_keeps_why(tmp_path):
    events = _sdk_episode("ls", extra=[
        {"kind": "ACPToolCallEvent", "id": "x1", "source": "agent", "title": "Read file"},
        {"kind": "ConversationIterationLimitEvent", "id": "x2", "source": "environment", "iteration": 500,
         "max_iterations": 500, "detail": "Iteration budget spent."}])[:-1]  # no finish: it stopped
    _save_conversation(tmp_path / "c1", events, status="stuck")
    runs, report = read(tmp_path / "c1", report=True, columns={"correct": "execution_status:finished"})
    meta = json.loads(runs["meta"][0])
    assert meta["unknown_event_kinds"] == ["ACPToolCallEvent"] and meta["error"] == "Iteration budget spent."
    assert any("a kind this reader does not know" in n and "ACP" not in n for n in report.notes)
    assert runs["correct"].to_list() == [False]  # it never answered


def test_a_broken_event_file_is_named_or_skipped(tmp_path):
    _save_conversation(tmp_path / "good", _sdk_episode("ls"))
    _save_conversation(tmp_path / "bad", _sdk_episode("ls"))
    (tmp_path / "bad" / "events" / "event-00001-deadbeef.json").write_text("{not json")
    finished = {"correct": "execution_status:finished"}
    with pytest.raises(InputError) as err:
        read(tmp_path, columns=finished)
    assert "event-00001-deadbeef.json" in str(err.value) and "\n" not in str(err.value)
    runs, report = read(tmp_path, errors="skip", report=True, columns=finished)
    assert runs["question_id"].to_list() == ["good"] and len(report.skipped) == 1
