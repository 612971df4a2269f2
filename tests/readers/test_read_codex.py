"""Codex CLI session rollouts (``mechanism.readers.codex``): one JSONL file a session, one line
an event, the model's calls and their outputs as OpenAI Responses items."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mechanism.analysis.segmentation import render, segment
from mechanism.core.errors import InputError
from mechanism.readers import detect_format, read

MODEL = "gpt-5-codex"
GRADE = {"correct": "git_branch:fixed"}  # a session holds no grade: the tests name one


class _Rollout:
    """A rollout's lines as Codex writes them."""

    def __init__(self, sid: str = "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5", branch: str = "fixed",
                 model: str = MODEL) -> None:
        self.sid = sid
        self.lines: list[dict] = []
        self._line("session_meta", {"id": sid, "timestamp": "2025-10-29T00:59:38.308Z", "cwd": "/repo",
                                    "originator": "codex_cli_rs", "cli_version": "0.46.0", "instructions": None,
                                    "source": "cli", "git": {"commit_hash": "0e36", "branch": branch}})
        self.item({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"}]})
        self._line("turn_context", {"cwd": "/repo", "approval_policy": "never", "model": model, "effort": "high"})

    def _line(self, kind: str, payload: dict) -> None:
        self.lines.append({"timestamp": "2025-10-29T00:59:39.000Z", "type": kind, "payload": payload})

    def item(self, payload: dict) -> None:
        self._line("response_item", payload)

    def user(self, text: str) -> None:
        self.item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        self._line("event_msg", {"type": "user_message", "message": text, "images": []})  # the UI's copy

    def say(self, text: str) -> None:
        self.item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})

    def think(self, text: str) -> None:
        self.item({"type": "reasoning", "summary": [{"type": "summary_text", "text": text}], "content": None,
                   "encrypted_content": "gAAAA"})

    def shell(self, cid: str, command: str) -> None:
        self.item({"type": "function_call", "name": "shell", "call_id": cid, "arguments": json.dumps(
            {"command": ["bash", "-lc", command], "workdir": "/repo", "timeout_ms": 120000})})

    def output(self, cid: str, text: str, exit_code: int = 0) -> None:
        self.item({"type": "function_call_output", "call_id": cid, "output": json.dumps(
            {"output": text, "metadata": {"exit_code": exit_code, "duration_seconds": 0.1}})})
        self._line("event_msg", {"type": "token_count", "info": None})

    def write(self, path) -> None:
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))


def _episode(sid: str = "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5") -> _Rollout:
    r = _Rollout(sid)
    r.user("parse() crashes on an empty file; fix it")
    r.think("**Looking for parse**")
    r.shell("c1", "rg -n 'def parse' src")
    r.shell("c2", "ls tests")  # sent with the search
    r.output("c1", "src/p.py:3:def parse(x):")
    r.output("c2", "test_p.py")
    r.shell("c3", "cat src/missing.py")
    r.output("c3", "cat: src/missing.py: No such file or directory", exit_code=1)
    r.item({"type": "custom_tool_call", "status": "completed", "call_id": "c4", "name": "apply_patch",
            "input": "*** Begin Patch\n*** Update File: src/p.py\n@@\n-    x\n+    x or ''\n*** End Patch"})
    r.item({"type": "custom_tool_call_output", "call_id": "c4",
            "output": "Success. Updated the following files:\nM src/p.py"})
    r.item({"type": "ghost_snapshot", "ghost_commit": {"id": "dac0", "parent": "b92c"}})
    r.item({"type": "mystery_call", "call_id": "c9"})
    r.user("run the tests too")
    r.shell("c5", "pytest -q")
    r.output("c5", "1 failed, 2 passed", exit_code=1)
    r.say("Fixed: parse() returns [] on an empty file.")
    return r


def test_a_rollout_is_one_episode_read_as_its_calls_and_outputs(tmp_path):
    path = tmp_path / "rollout-2025-10-29T00-59-38-019a2d7a.jsonl"
    _episode().write(path)
    assert detect_format(path) == "codex"
    runs, report = read(path, report=True, columns=GRADE)
    assert runs.height == 1 and list(report.formats.values()) == ["codex"]
    row = runs.row(0, named=True)
    steps = row["steps"]
    assert [s["tool"] for s in steps] == ["shell", "shell", "shell", "apply_patch", "shell"]
    assert [bool(s["parallel"]) for s in steps] == [False, True, False, False, False]
    assert [json.loads(s["arguments"]).get("command") for s in steps] == [
        "rg -n 'def parse' src", "ls tests", "cat src/missing.py", None, "pytest -q"]
    assert steps[0]["thought"] == "**Looking for parse**" and steps[1]["observation"] == "test_p.py"
    assert steps[4]["user"] == "run the tests too"
    moves = segment(runs)
    # the missing file failed; a test run that reports failing tests is content (exit code 1 both)
    assert moves.filter(~moves["tool"].is_in(["answer", "ask_user"]))["failed"].to_list() == [False, False, True,
                                                                                                False, False]
    # read by their programs (one session is too few for the shell to be found generic by itself)
    tools = render(runs, action_field={"shell": "command"})["tools"][0]
    assert tools == "rg > ls > cat > apply_patch > ask_user > pytest"
    assert row["question"] == "parse() crashes on an empty file; fix it" and row["correct"] is True
    assert row["answer"] == "Fixed: parse() returns [] on an empty file."
    assert row["arm"] == MODEL and row["question_id"] == "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5"
    meta = json.loads(row["meta"])
    assert meta["exit_codes"] == [0, 0, 1, 1] and meta["unknown_items"] == ["mystery_call"]
    assert meta["cwd"] == "/repo" and meta["cli_version"] == "0.46.0"
    assert any("does not know" in n for n in report.notes)


def test_a_folder_of_rollouts_and_a_broken_line(tmp_path):
    for sid in ("aaaa", "bbbb"):
        _episode(sid).write(tmp_path / f"rollout-{sid}.jsonl")
    assert read(tmp_path, columns=GRADE)["question_id"].to_list() == ["aaaa", "bbbb"]
    text = (tmp_path / "rollout-bbbb.jsonl").read_text().splitlines()
    text[6] = text[6][:30]
    (tmp_path / "rollout-bbbb.jsonl").write_text("\n".join(text) + "\n")
    with pytest.raises(InputError) as err:
        read(tmp_path, columns=GRADE)
    assert "rollout-bbbb.jsonl, line 7" in str(err.value) and "\n" not in str(err.value)
    runs, report = read(tmp_path, columns=GRADE, errors="skip", report=True)
    assert runs["question_id"].to_list() == ["aaaa"] and len(report.skipped) == 1


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=st.lists(st.tuples(_TEXT, _TEXT, st.integers(-1, 2)), min_size=1, max_size=6))
def test_every_command_output_and_exit_code_reads_back(tmp_path, calls):
    r = _Rollout()
    r.user("fix it")
    for i, (command, output, code) in enumerate(calls):
        r.shell(f"c{i}", command)
        r.output(f"c{i}", output, exit_code=code)
    r.say("done")
    path = tmp_path / "r.jsonl"
    r.write(path)
    row = read(path, columns=GRADE).row(0, named=True)
    assert [json.loads(s["arguments"])["command"] for s in row["steps"]] == [c for c, *_ in calls]
    assert [s["observation"] for s in row["steps"]] == [o for _, o, _ in calls]
    assert json.loads(row["meta"])["exit_codes"] == [c for *_, c in calls] and row["answer"] == "done"


def test_the_todo_world_logged_as_rollouts_reads_as_its_chat_records(tmp_path):
    from mechanism.datasets.worlds import todo

    world = todo(n_questions=12, random_state=0)
    chat = read(world.write(tmp_path / "chat"), format=world.format)
    (tmp_path / "rollouts").mkdir()
    for k, rec in enumerate(world.records):
        r = _Rollout(f"s{k:04d}", branch="fixed" if rec["correct"] else "no", model=rec["arm"])
        for m in rec["messages"]:
            if m["role"] == "user":
                r.user(m["content"])
            elif m["role"] == "tool":
                r.output(m["tool_call_id"], m["content"])
            elif m["role"] == "assistant":
                if m.get("content"):
                    r.say(m["content"])
                for c in m.get("tool_calls") or []:
                    args = json.loads(c["function"]["arguments"])
                    if "command" in args:  # a shell command as Codex gives it, an argument list
                        args["command"] = ["bash", "-lc", args["command"]]
                    r.item({"type": "function_call", "name": c["function"]["name"], "call_id": c["id"],
                            "arguments": json.dumps(args)})
        r.write(tmp_path / "rollouts" / f"rollout-{k:04d}.jsonl")
    rollouts = read(tmp_path / "rollouts", columns=GRADE, question_key="text")
    assert render(rollouts)["tools"].to_list() == render(chat)["tools"].to_list()
    assert rollouts["arm"].to_list() == chat["arm"].to_list()
    assert rollouts["correct"].to_list() == chat["correct"].to_list()


def test_a_rollout_where_nothing_was_said_is_skipped_by_name(tmp_path):
    _episode().write(tmp_path / "a.jsonl")
    empty = _Rollout("cccc")
    empty.lines = empty.lines[:1]  # its session_meta alone
    empty.write(tmp_path / "b.jsonl")
    runs, report = read(tmp_path, columns=GRADE, errors="skip", report=True)
    assert runs.height == 1 and [(s.source.rsplit("/", 1)[-1], s.reason) for s in report.skipped] == [
        ("b.jsonl", "a codex session with no message (only its bookkeeping lines)")]
