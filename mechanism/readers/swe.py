"""Software-engineering agents' trajectory files: mini-swe-agent and SWE-agent.

**mini-swe-agent** (``trajectory_format: "mini-swe-agent-1"``, ``<instance_id>.traj.json``): the
whole chat in ``messages``. The agent acts by writing exactly one fenced shell command in its
message (```` ```bash ```` or, in later versions, ```` ```mswea_bash_command ````), its
reasoning around it; the harness answers in the next user message (``<returncode>0</returncode>``
then ``<output>...</output>``, or ``<output_head>`` / ``<elided_chars>`` / ``<output_tail>`` for a
long output, or ``Observation: ...``). Each such command is a call of ``bash`` with a
``command`` field, its result the output (the return codes kept in ``meta`` as ``returncodes``).
A message with no command or several is refused by the harness, which says so in the next user
message: that turn is no round, and the complaint is no user turn (counted in a note).
mini-swe-agent 2 logs the same chat with more said: an agent may call a ``bash`` tool instead
(``tool_calls``, each answered by a ``tool`` message), a result's ``extra`` holds the raw
output, the return code and any ``exception_info`` (a command that could not run: failed), a
refusal's ``extra.interrupt_type`` is ``FormatError``, and the run ends with an ``exit``
message holding the submission. The
command that prints ``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`` (or ``MINI_SWE_AGENT_FINAL_OUTPUT``)
submits: it is the finishing call, not a round, and the answer is ``info.submission`` (the
patch), else the submitted text. ``info.exit_status`` is kept in ``meta``; an episode that
stopped on a limit or an error never answered, so it is a failure. The question id is the
top-level ``instance_id``, the arm (without an ``arm`` field or ``arm=``) the model,
``info.config.model.model_name``.

**SWE-agent** (``<instance_id>.traj``): ``trajectory`` holds one object per step with the
``thought``, the ``action`` (a command line of the agent-computer interface: ``open``,
``edit``, ``find_file``, ``str_replace_editor view ...``, shell commands) and its
``observation``; the question is the first user message of ``history``. An action ``submit``
is the finishing call; where ``info.exit_status`` says the run was submitted (``submitted``,
``submitted (exit_cost)``, ...), the answer is ``info.submission``.

Neither format records whether the patch resolved the issue: give it with ``columns=`` (or a
field the evaluation added, ``resolved``).
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from mechanism.core.errors import InputError
from mechanism.core.schema import USER_TURNS_JOIN, make_step
from mechanism.readers._fields import FieldMap
from mechanism.readers._shapes import content_text, message_role

FORMAT = "swe"

SHELL_TOOL = "bash"
#: commands that end a mini-swe-agent episode: the first line they print is one of these
SUBMIT_MARKS = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")
_OPEN = re.compile(r"```(?:bash|mswea_bash_command)[ \t]*\n")
_CLOSE = "\n```"
_RETURNCODE = re.compile(r"^\s*<returncode>\s*(-?\d+)\s*</returncode>", re.S)
_OBSERVATION = re.compile(r"^\s*Observation:[ \t]*\n?", re.S)
# the harness's own notice that it killed a command: its verdict, the call failed
_TIMED_OUT = re.compile(r"^\s*The last command <command>.*?</command> timed out", re.S)

HARNESS_REPLIES = ("agent messages refused by the SWE harness (no fenced command, or several) and its "
                   "reply to them: neither a round nor a user turn, the message kept in the next "
                   "step's thought")


def detect(record: Mapping[str, Any], fields: FieldMap) -> bool:
    fmt = record.get("trajectory_format")
    if isinstance(fmt, str) and fmt.lower().startswith("mini-swe-agent"):
        return isinstance(record.get("messages"), list)
    steps = record.get("trajectory")
    return (isinstance(steps, list) and isinstance(record.get("info"), Mapping)
            and (not steps or (isinstance(steps[0], Mapping) and "action" in steps[0] and "observation" in steps[0])))


def parse(record: Mapping[str, Any], fields: FieldMap) -> dict[str, Any]:
    info = record.get("info")
    info = info if isinstance(info, Mapping) else {}
    status = info.get("exit_status")
    status = status if isinstance(status, str) else None
    submission = info.get("submission") if isinstance(info.get("submission"), str) else None
    if isinstance(record.get("messages"), list) and "trajectory" not in record:
        out = _mini(record["messages"], submission)
        consumed = {"messages", "trajectory_format", "info"}
    else:
        out = _sweagent(record, submission, status)
        consumed = {"trajectory", "history", "info"}
    if status is not None:
        out.setdefault("meta_extra", {})["exit_status"] = status
    config = info.get("config") if isinstance(info.get("config"), Mapping) else {}
    model = config.get("model") if isinstance(config.get("model"), Mapping) else {}
    if isinstance(model.get("model_name"), str) and model["model_name"]:  # mini-swe-agent's model: the arm
        out["arm_default"], out["arm_source"] = model["model_name"], "`info.config.model.model_name`"
    return {**out, "_consumed": consumed}


class _MiniTurns:
    """What :func:`_mini` has read of one chat so far: its steps, the calls waiting for their
    results (by id where the calls are tool calls, else the next result), the agent's words and
    the user's since the last command, and how it ended."""

    def __init__(self, submission: str | None) -> None:
        self.steps: list[dict[str, Any]] = []
        self.question: str | None = None
        self.thoughts: list[str] = []
        self.users: list[str] = []
        self.codes: list[int] = []
        self.pending: dict[str | None, dict[str, Any]] = {}  # call id (None: a fenced command) -> step
        self.refused = self.submitted = False
        self.answer: str | None = None
        self.submission = submission
        self.notes: list[str] = []

    def agent(self, msg: Mapping[str, Any], text: str, where: str) -> None:
        """An agent message: its tool calls of ``bash`` or its one fenced command, else refused."""
        calls = msg.get("tool_calls")
        if isinstance(calls, list) and calls:
            commands = [(_call_command(c, f"{where}.tool_calls[{j}]"), c.get("id")) for j, c in enumerate(calls)]
            said = text.strip()
        else:
            fenced, said = _commands(text)
            commands = [(fenced[0], None)] if len(fenced) == 1 else []
        if not commands:  # refused by the harness: its reply follows
            self.refused, self.notes = True, [HARNESS_REPLIES]
            self.thoughts += [text.strip()] if text.strip() else []
            return
        self.refused = False
        thought = "\n".join([*self.thoughts, said]).strip() or None
        self.thoughts = []
        for j, (command, call_id) in enumerate(commands):
            if any(mark in command for mark in SUBMIT_MARKS):
                self.submitted, self.answer = True, self.submission
                continue
            step = make_step(thought=thought if j == 0 else None, tool=SHELL_TOOL, arguments=_json_command(command),
                             query=command, user=USER_TURNS_JOIN.join(self.users) if self.users and j == 0 else None,
                             parallel=j > 0)
            self.users = []
            self.steps.append(step)
            self.pending[call_id if isinstance(call_id, str) else None] = step
            self.submitted, self.answer = False, None

    def reply(self, msg: Mapping[str, Any], text: str, role: str) -> None:
        """A user, tool or exit message: the question, a command's result, the harness's words, or the user's."""
        extra = msg.get("extra") if isinstance(msg.get("extra"), Mapping) else {}
        call_id = msg.get("tool_call_id") if role == "tool" else None
        step = self.pending.pop(call_id if isinstance(call_id, str) else None, None)
        if step is not None and extra.get("interrupt_type") == "FormatError":
            self._unrun(step)  # a fenced command in a message the harness refused (it wanted a tool call)
            step = None
        if role == "exit" or (self.submitted and step is None and role != "tool"):
            self.answer = self.answer if self.answer is not None else text.strip()  # the submitted patch
        elif step is not None:
            self._result(step, text, extra)
        elif role == "user" and self.question is None:
            self.question = text.strip()
        elif self.refused or extra.get("interrupt_type"):
            self.refused = False  # the harness's complaint: not the user's words
        elif role == "user" and text.strip():
            self.users.append(text.strip())

    def _unrun(self, step: dict[str, Any]) -> None:
        """A step the harness never ran: left out, its words kept for the next command."""
        if self.steps and self.steps[-1] is step:  # it is the last one read: constant time
            self.steps.pop()
        else:
            self.steps = [st for st in self.steps if st is not step]
        self.thoughts += [step["thought"]] if step.get("thought") else []
        self.notes = [HARNESS_REPLIES]

    def _result(self, step: dict[str, Any], text: str, extra: Mapping[str, Any]) -> None:
        """A command's result: the output as the harness logged it (``extra.raw_output``) or unwrapped
        from its template; failed where the harness says it could not run it."""
        observation, code = _observation(text)
        if isinstance(extra.get("raw_output"), str):
            observation = extra["raw_output"]
        if isinstance(extra.get("returncode"), int):
            code = extra["returncode"]
        step["observation"] = observation
        if _TIMED_OUT.match(text) or (isinstance(extra.get("exception_info"), str) and extra["exception_info"]):
            step["failed"] = True
        if code is not None:
            self.codes.append(code)

    def outcome(self) -> dict[str, Any]:
        extra: dict[str, Any] = {"returncodes": self.codes} if self.codes else {}
        if self.users:
            extra["user_after_last_call"] = USER_TURNS_JOIN.join(self.users)
        final = self.submitted and self.answer is not None
        return {"steps": self.steps, "answer": self.answer if final else None, "final": final,
                "question": self.question, "answer_rule": "finish_tool" if final else None,
                **({"meta_extra": extra} if extra else {}), **({"notes": self.notes} if self.notes else {})}


def _mini(messages: list[Any], submission: str | None) -> dict[str, Any]:
    """A mini-swe-agent chat read into steps (module docstring)."""
    turns = _MiniTurns(submission)
    for i, msg in enumerate(messages):
        where = f"messages[{i}]"
        role = message_role(msg, where)
        try:
            text = content_text(msg.get("content"))
        except InputError:
            raise InputError(f"`{where}.content` must be text", field=f"{where}.content") from None
        if role == "assistant":
            turns.agent(msg, text, where)
        elif role in ("user", "tool", "exit"):
            if role == "exit":
                turns.submitted = turns.submitted or _exit_status(msg) == "Submitted"
            turns.reply(msg, text, role)
    return turns.outcome()


def _exit_status(msg: Mapping[str, Any]) -> str | None:
    extra = msg.get("extra")
    status = extra.get("exit_status") if isinstance(extra, Mapping) else None
    return status if isinstance(status, str) else None


def _call_command(call: Any, where: str) -> str:
    """The command of a tool call of ``bash`` (mini-swe-agent 2's tool-calling agents)."""
    fn = call.get("function") if isinstance(call, Mapping) else None
    raw = fn.get("arguments") if isinstance(fn, Mapping) else None
    try:
        args = json.loads(raw) if isinstance(raw, str) else raw
    except (ValueError, RecursionError):
        args = None
    if not isinstance(args, Mapping) or not isinstance(args.get("command"), str):
        raise InputError(f"`{where}.function.arguments` must hold a `command`", field=f"{where}.function.arguments")
    return args["command"].strip()


def _sweagent(record: Mapping[str, Any], submission: str | None, status: str | None) -> dict[str, Any]:
    """A SWE-agent ``.traj`` read into steps (module docstring)."""
    trajectory = record.get("trajectory")
    if not isinstance(trajectory, list):
        raise InputError("missing `trajectory` array", field="trajectory")
    steps: list[dict[str, Any]] = []
    submitted = False
    for i, st in enumerate(trajectory):
        where = f"trajectory[{i}]"
        if not isinstance(st, Mapping) or not isinstance(st.get("action"), str):
            raise InputError(f"`{where}.action` must be text", field=f"{where}.action")
        command = st["action"].strip()
        observation = st.get("observation")
        if observation is not None and not isinstance(observation, str):
            raise InputError(f"`{where}.observation` must be text", field=f"{where}.observation")
        if command == "submit" or command.startswith("submit "):
            submitted = True
            continue
        thought = st.get("thought") if isinstance(st.get("thought"), str) else None
        steps.append(make_step(thought=(thought or "").strip() or None, tool=SHELL_TOOL,
                               arguments=_json_command(command), query=command, observation=observation))
    submitted = submitted or (status is not None and status.lower().startswith("submitted"))
    answer = submission if submitted else None
    return {"steps": steps, "answer": answer, "final": answer is not None, "question": _first_user(record),
            "answer_rule": "finish_tool" if answer is not None else None}


def _first_user(record: Mapping[str, Any]) -> str | None:
    """The first user message of a SWE-agent ``history`` (the issue, in the instance template)."""
    history = record.get("history")
    for i, msg in enumerate(history if isinstance(history, list) else []):
        if isinstance(msg, Mapping) and msg.get("role") == "user":
            try:
                text = content_text(msg.get("content")).strip()
            except InputError:
                raise InputError(f"`history[{i}].content` must be text", field=f"history[{i}].content") from None
            if text:
                return text
    return None


def _commands(text: str) -> tuple[list[str], str]:
    """The fenced commands of an agent message, as mini-swe-agent finds them (```` ```bash ````
    up to the next line opening with ```` ``` ````), and the words around them; in one pass
    (``str.find`` from where the last fence closed: linear, however many fences are left open)."""
    commands: list[str] = []
    words: list[str] = []
    at = 0
    while (opening := _OPEN.search(text, at)) is not None:
        close = text.find(_CLOSE, opening.end() - 1)
        if close < 0:
            break  # no fence closes after this one, so none after any later one either
        words.append(text[at:opening.start()])
        commands.append(text[opening.end():close].strip())
        at = close + len(_CLOSE)
    words.append(text[at:])
    return commands, "".join(words).strip()


def _between(text: str, start: str, end: str, at: int = 0) -> tuple[str, int] | None:
    """The text between the first ``start`` from ``at`` and the next ``end`` (one newline
    trimmed at either side), and where it ends; ``None`` where either is missing."""
    i = text.find(start, at)
    j = text.find(end, i + len(start)) if i >= 0 else -1
    if j < 0:
        return None
    inner = text[i + len(start):j]
    return inner.removeprefix("\n").removesuffix("\n"), j + len(end)


def _observation(text: str) -> tuple[str, int | None]:
    """A mini-swe-agent result: the command's output unwrapped from the harness's template (a
    long output's head and tail joined by the count of characters left out), and its return
    code; a text in no known template (a timeout notice) as it is."""
    code_match = _RETURNCODE.match(text)
    code = int(code_match.group(1)) if code_match else None
    if code_match:
        head = _between(text, "<output_head>", "</output_head>")
        elided = head and _between(text, "<elided_chars>", "</elided_chars>", head[1])
        tail = elided and _between(text, "<output_tail>", "</output_tail>", elided[1])
        if head and elided and tail:
            return f"{head[0]}\n[... {elided[0].strip()} ...]\n{tail[0]}", code
        out = _between(text, "<output>", "</output>")
        if out:
            return out[0], code
    if _OBSERVATION.match(text):
        return _OBSERVATION.sub("", text, count=1), code
    return text, code


def _json_command(command: str) -> str:
    return json.dumps({"command": command}, ensure_ascii=False)
