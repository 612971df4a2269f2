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
patch), else the submitted text (the harness's reply to it kept in ``meta`` as ``finish_result``, as
for any finishing call). ``info.exit_status`` is kept in ``meta``; an episode that
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
from mechanism.core.schema import make_step
from mechanism.readers._fields import FieldMap
from mechanism.readers._shapes import content_text, message_role
from mechanism.readers.openai import ChatTurns

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


def _mini(messages: list[Any], submission: str | None) -> dict[str, Any]:
    """A mini-swe-agent chat read by the chat reader's rules (:class:`~mechanism.readers.openai.ChatTurns`:
    thoughts, user turns, calls sent together, a finishing call), each command handed over as a
    call of ``bash`` and the harness's reply as its result (module docstring)."""
    turns = ChatTurns()
    question: str | None = None
    codes: list[int] = []
    notes: list[str] = []
    waiting: str | None = None  # the fenced command whose result is the next user message
    complaint = False  # the next user message is the harness's reply to a refused turn
    for i, msg in enumerate(messages):
        where = f"messages[{i}]"
        role = message_role(msg, where)
        try:
            text = content_text(msg.get("content"))
        except InputError:
            raise InputError(f"`{where}.content` must be text", field=f"{where}.content") from None
        after = messages[i + 1] if i + 1 < len(messages) and isinstance(messages[i + 1], Mapping) else {}
        if role == "assistant":
            calls, said = _agent_calls(msg, text, where, _extra(after).get("interrupt_type") is not None)
            waiting = None
            if not calls:  # refused by the harness: its reply follows
                notes, complaint = [HARNESS_REPLIES], True
                turns.said += [text.strip()] if text.strip() else []
                continue
            reply = after.get("content") if isinstance(after.get("content"), str) else None
            calls = [_submitting(c, submission, reply) for c in calls]
            turns.calls(calls, said, where)
            waiting = None if msg.get("tool_calls") else calls[0]["id"]
        elif role == "tool" or (role == "user" and waiting is not None):
            observation, code, failed = _result(text, _extra(msg))
            codes += [code] if code is not None else []
            turns.result({"tool_call_id": msg.get("tool_call_id") if role == "tool" else waiting,
                          "content": observation, "_failed": failed}, where)
            waiting = None
        elif role == "user" and question is None:
            question = text.strip()
        elif role == "user" and (complaint or _extra(msg).get("interrupt_type")):
            complaint = False  # the harness's complaint: not the user's words
        elif role == "user" and text.strip():
            turns.user_turns.append(text.strip())
        elif role == "exit" and _extra(msg).get("exit_status") == "Submitted" and not turns.final:
            turns.calls([_submit_call(f"@exit{i}", submission if submission is not None else text.strip())], "", where)
    out = turns.outcome(question)
    if out["answer"] is None:  # submitted nothing that can be read: no answer
        out["final"], out["answer_rule"] = False, None
    if codes:
        out.setdefault("meta_extra", {})["returncodes"] = codes
    return {**out, **({"notes": notes} if notes else {})}


def _extra(msg: Mapping[str, Any]) -> Mapping[str, Any]:
    """A mini-swe-agent 2 message's ``extra`` (the harness's own record of it), or nothing."""
    extra = msg.get("extra")
    return extra if isinstance(extra, Mapping) else {}


def _agent_calls(msg: Mapping[str, Any], text: str, where: str, refused: bool
                 ) -> tuple[list[dict[str, Any]], str]:
    """An agent message's calls in the chat reader's shape and its words: its tool calls of
    ``bash``, else its one fenced command (none where it writes none or several, or where the
    harness refused it: ``refused``, it wanted a tool call)."""
    calls = msg.get("tool_calls")
    if isinstance(calls, list) and calls:
        return [_bash_call(_call_command(c, f"{where}.tool_calls[{j}]"), c.get("id"), f"{where}.{j}")
                for j, c in enumerate(calls)], text
    fenced, said = _commands(text)
    if len(fenced) != 1 or refused:
        return [], text
    return [_bash_call(fenced[0], None, where)], said


def _bash_call(command: str, call_id: Any, where: str) -> dict[str, Any]:
    return {"id": call_id if isinstance(call_id, str) else f"@{where}",
            "function": {"name": SHELL_TOOL, "arguments": {"command": command}}}


def _submit_call(call_id: str, answer: str | None) -> dict[str, Any]:
    """A finishing call (:data:`~mechanism.readers.openai.FINISH_TOOLS`) whose answer is the submission."""
    return {"id": call_id, "function": {"name": "submit", "arguments": {} if answer is None else {"answer": answer}}}


def _submitting(call: dict[str, Any], submission: str | None, reply: str | None) -> dict[str, Any]:
    """``call``, or the finishing call it is where its command submits: its answer ``info.submission``,
    else the harness's reply to it (what the command printed after the mark)."""
    if not any(mark in call["function"]["arguments"]["command"] for mark in SUBMIT_MARKS):
        return call
    return _submit_call(call["id"], submission if submission is not None else (reply or "").strip() or None)


def _result(text: str, extra: Mapping[str, Any]) -> tuple[str, int | None, bool]:
    """A command's result: the output as the harness logged it (``extra.raw_output``) or unwrapped
    from its template, its return code, and whether the harness says it could not run it."""
    observation, code = _observation(text)
    if isinstance(extra.get("raw_output"), str):
        observation = extra["raw_output"]
    if isinstance(extra.get("returncode"), int):
        code = extra["returncode"]
    exception = extra.get("exception_info")
    return observation, code, bool(_TIMED_OUT.match(text) or (isinstance(exception, str) and exception))


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
