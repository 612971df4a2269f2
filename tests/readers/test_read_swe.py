"""Software-engineering agents' own trajectory files (``mechanism.readers.swe``): mini-swe-agent's
``<instance_id>.traj.json`` (the chat, one fenced shell command a turn, the harness's reply the
result) and SWE-agent's ``<instance_id>.traj`` (a list of thought / action / observation)."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mechanism.core.errors import InputError
from mechanism.readers import read

ISSUE = "<pr_description>\nConsider the following PR description:\nfoo() crashes on empty input\n</pr_description>"
PATCH = "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n"


def _turn(command: str, thought: str = "THOUGHT: next.", fence: str = "bash") -> dict:
    return {"role": "assistant", "content": f"{thought}\n\n```{fence}\n{command}\n```"}


def _result(output: str, code: int = 0) -> dict:
    return {"role": "user", "content": f"<returncode>{code}</returncode>\n<output>\n{output}\n</output>"}


def _mini(turns: list[dict], status: str = "Submitted", submission: str | None = PATCH, **top) -> dict:
    messages = [{"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
                {"role": "user", "content": ISSUE}, *turns]
    if status == "Submitted":
        messages += [_turn("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached",
                           "THOUGHT: done."), {"role": "user", "content": submission or ""}]
    return {"info": {"exit_status": status, "submission": submission, "model_stats": {"instance_cost": 0.2,
                                                                                        "api_calls": 6},
                     "mini_version": "1.9.0", "config": {"model": {"model_name": "anthropic/claude-sonnet-4"}}},
            "messages": messages, "trajectory_format": "mini-swe-agent-1", "instance_id": "astropy__astropy-12907",
            **top}


def _write(tmp_path, name: str, record: dict):
    path = tmp_path / name
    path.write_text(json.dumps(record, indent=2))
    return path


def test_mini_swe_agent_commands_are_rounds_and_the_patch_is_the_answer(tmp_path):
    turns = [_turn("ls -la"), _result("src\ntests"), _turn("grep -rn 'def foo' src"), _result("src/a.py:3:def foo(x):"),
             _turn("python -m pytest tests -q", fence="mswea_bash_command"), _result("F.\n1 failed, 1 passed", 1),
             _turn("cat nope.py"), _result("cat: nope.py: No such file or directory", 1)]
    path = _write(tmp_path, "astropy__astropy-12907.traj.json", _mini(turns, resolved=True))
    runs, report = read(path, report=True, columns={"correct": "resolved"})
    assert list(report.formats.values()) == ["swe"]  # found without format=
    row = runs.row(0, named=True)
    assert row["question_id"] == "astropy__astropy-12907" and row["arm"] == "anthropic/claude-sonnet-4"
    assert row["n_rounds"] == 4 and row["answer"] == PATCH and row["correct"] is True  # submitting is no round
    steps = row["steps"]
    assert [s["tool"] for s in steps] == ["bash"] * 4
    assert [s["query"] for s in steps] == ["ls -la", "grep -rn 'def foo' src", "python -m pytest tests -q",
                                           "cat nope.py"]
    assert steps[0]["observation"] == "src\ntests" and steps[0]["thought"] == "THOUGHT: next."  # unwrapped
    meta = json.loads(row["meta"])
    assert meta["returncodes"] == [0, 0, 1, 1] and meta["exit_status"] == "Submitted"  # kept, not lost
    # a failing test run is a call that worked; a missing file is a failed call
    assert any("`bash` 1 of 4" in n for n in report.notes), report.notes
    assert ISSUE.strip() in row["question"]


def test_a_refused_turn_is_no_round_and_the_harness_is_not_the_user(tmp_path):
    refused = {"role": "assistant", "content": "I will look first.\n```bash\nls\n```\nand then\n```bash\npwd\n```"}
    complaint = {"role": "user",
                 "content": "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."}
    turns = [refused, complaint, _turn("ls"), _result("src")]
    runs, report = read(_write(tmp_path, "a.traj.json", _mini(turns, correct=False)), report=True)
    step = runs["steps"][0][0]
    assert runs["n_rounds"].to_list() == [1] and step["user"] is None
    assert "I will look first." in step["thought"]  # the refused message stays with the next command
    assert any("refused by the SWE harness" in n for n in report.notes)


def test_long_outputs_and_timeouts(tmp_path):
    long_result = {"role": "user", "content": "<returncode>0</returncode>\n<warning>\nThe output of your last command "
                   "was too long.\n</warning><output_head>\nline 1\n</output_head>\n<elided_chars>\n12345 characters "
                   "elided\n</elided_chars>\n<output_tail>\nline 900\n</output_tail>"}
    timeout = {"role": "user", "content": "The last command <command>python -m pytest</command> timed out and has "
               "been killed.\nThe output of the command was:\n <output>\n\n</output>\nPlease try another command."}
    turns = [_turn("cat big.log"), long_result, _turn("python -m pytest"), timeout]
    runs, report = read(_write(tmp_path, "a.traj.json", _mini(turns, correct=False)), report=True)
    steps = runs["steps"][0]
    assert steps[0]["observation"] == "line 1\n[... 12345 characters elided ...]\nline 900"
    assert steps[1]["observation"].startswith("The last command")
    assert any("`bash` 1 of 2" in n for n in report.notes), report.notes  # the timeout failed


def test_a_run_stopped_by_its_limits_never_answered(tmp_path):
    rec = _mini([_turn("ls"), _result("src")], status="LimitsExceeded", submission=None, correct=True)
    runs, report = read(_write(tmp_path, "a.traj.json", rec), report=True)
    assert runs["answer"].to_list() == [None] and runs["n_rounds"].to_list() == [1]
    assert json.loads(runs["meta"][0])["exit_status"] == "LimitsExceeded"


def _sweagent(actions: list[tuple[str, str]], status: str = "submitted") -> dict:
    steps = [{"response": f"DISCUSSION\nstep {i}\n\n```\n{a}\n```", "thought": f"DISCUSSION\nstep {i}",
              "action": a + "\n", "observation": o, "state": "{}", "execution_time": 0.1}
             for i, (a, o) in enumerate(actions)]
    return {"environment": "swe_main", "trajectory": steps,
            "history": [{"role": "system", "content": "SETTING: ...", "agent": "primary"},
                        {"role": "user", "content": "We're currently solving the following issue:\nISSUE:\n"
                         "foo() crashes on empty input", "agent": "primary"}],
            "info": {"exit_status": status, "submission": PATCH if status.startswith("submitted") else None,
                     "model_stats": {"instance_cost": 0.4}}}


def test_swe_agent_traj_files_in_a_folder(tmp_path):
    rec = _sweagent([("find_file a.py", 'Found 1 matches for "a.py":\n/repo/src/a.py'),
                     ("open src/a.py", "[File: /repo/src/a.py (10 lines total)]"),
                     ("edit 3:3\n    return x[0] if x else None\nend_of_edit", "[File: /repo/src/a.py] updated"),
                     ("submit", PATCH)])
    (tmp_path / "runs").mkdir()
    _write(tmp_path / "runs", "astropy__astropy-12907.traj", {**rec, "resolved": False})
    runs, report = read(tmp_path / "runs", report=True, columns={"correct": "resolved"}, arm="swe-agent")
    assert list(report.formats.values()) == ["swe"]
    row = runs.row(0, named=True)
    assert row["n_rounds"] == 3 and row["answer"] == PATCH  # submit ends the episode, no round
    assert [s["query"] for s in row["steps"]][:2] == ["find_file a.py", "open src/a.py"]
    assert "foo() crashes on empty input" in row["question"]


def test_bad_swe_records_name_their_field(tmp_path):
    rec = _mini([_turn("ls"), {"role": "user", "content": {"bad": 1}}], correct=False)
    with pytest.raises(InputError, match=r"messages\[3\]\.content"):
        read(_write(tmp_path, "a.traj.json", rec))
    bad = _sweagent([("ls", "src")])
    bad["trajectory"][0]["action"] = None
    with pytest.raises(InputError, match=r"trajectory\[0\]\.action"):
        read(_write(tmp_path, "b.traj", {**bad, "correct": False}))


_COMMANDS = st.lists(st.tuples(st.from_regex(r"[a-z][a-z0-9_ ./'-]{0,30}", fullmatch=True).map(str.strip)
                               .filter(lambda c: c and "COMPLETE_TASK" not in c),
                               st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="<>"),
                                       max_size=60), st.integers(0, 2)), min_size=1, max_size=8)


@given(_COMMANDS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_every_command_and_output_is_read_back(tmp_path, turns):
    messages = [m for command, output, code in turns for m in (_turn(command), _result(output, code))]
    path = _write(tmp_path, "p.traj.json", _mini(messages, correct=False))
    runs = read(path, format="swe")
    steps = runs["steps"][0]
    assert [(s["query"], s["observation"]) for s in steps] == [(c, o) for c, o, _ in turns]
    assert json.loads(runs["meta"][0])["returncodes"] == [code for *_, code in turns]


def test_mini_swe_agent_2_tool_calls_results_extra_and_the_exit_message(tmp_path):
    def call(command: str, call_id: str) -> dict:
        fn = {"name": "bash", "arguments": json.dumps({"command": command})}
        return {"role": "assistant", "content": "Looking.", "tool_calls": [{"id": call_id, "type": "function",
                                                                            "function": fn}]}

    def tool(call_id: str, raw: str, code: int, exception: str = "") -> dict:
        content = f"<returncode>{code}</returncode>\n<output>\n{raw}\n</output>"
        return {"role": "tool", "tool_call_id": call_id, "content": content,
                "extra": {"raw_output": raw, "returncode": code, "exception_info": exception}}

    refusal = {"role": "user", "content": "No tool calls found in the response.",
               "extra": {"interrupt_type": "FormatError"}}
    messages = [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": ISSUE},
                call("grep -rn foo src", "c1"), tool("c1", "src/a.py:3:def foo(x):", 0),
                {"role": "assistant", "content": "I will run\n```bash\npytest\n```"}, refusal,  # text, not a tool call
                call("sleep 999", "c2"), tool("c2", "", -1, "An error occurred while executing the command: timeout"),
                call("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff", "c3"),
                {"role": "exit", "content": PATCH, "extra": {"exit_status": "Submitted", "submission": PATCH}}]
    rec = {"info": {"exit_status": "Submitted", "submission": PATCH}, "messages": messages,
           "trajectory_format": "mini-swe-agent-1", "instance_id": "x__y-1", "correct": True}
    runs, report = read(_write(tmp_path, "v2.traj.json", rec), report=True)
    row = runs.row(0, named=True)
    assert [s["query"] for s in row["steps"]] == ["grep -rn foo src", "sleep 999"] and row["answer"] == PATCH
    assert row["steps"][0]["observation"] == "src/a.py:3:def foo(x):"  # the raw output the harness kept
    assert "I will run" in row["steps"][1]["thought"] and row["steps"][1]["user"] is None  # refusal: no user turn
    assert json.loads(row["meta"])["returncodes"] == [0, -1]
    assert any("`bash` 1 of 2" in n for n in report.notes), report.notes  # could not run: failed
    assert any("refused by the SWE harness" in n for n in report.notes)
