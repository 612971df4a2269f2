"""ReAct transcripts: ``Thought``/``Action``/``Observation`` lines, numbered
(``Action 2: Search[x]``) or not (``Action: search[x]``), as one string or spread over
chat-message contents.

An ``Action`` is executed when an ``Observation`` follows it; when a model writes several
actions before one observation, the first one is the one the environment ran, as ReAct
environments parse the first action of a turn (``multi_action="last"`` for environments that
run the last); the others stay in the thought text and are counted in a note. In chat
messages an observation may come unlabelled: after an action, bracketed or a text game's bare
command (``Action: go to cabinet 1``), the next message that is not the assistant's is its
observation. A finishing action (``finish``, ``answer``, ...) gives the final answer and is not
a round; so does a chat's last assistant message when it writes no ReAct line (the answer in
words, as the reader of chat transcripts takes it). Tool names are lower-cased.

A log's own bookkeeping before the first or after the last ReAct line (Reflexion's
``Correct answer: <gold>`` trailer, trial banners such as ``BEGIN TRIAL 1`` or rows of
``#``/``-``) is not what the agent saw: it goes to ``meta`` as ``bookkeeping``, never into
an observation or a thought (a halted episode has no finishing action, so without this the
trailer would join its last observation and put the gold into what was "retrieved").
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from mechanism.core.actions import GENERIC_TOOL, main_text
from mechanism.core.errors import InputError
from mechanism.core.failures import is_failure
from mechanism.core.schema import USER_TURNS_JOIN, make_step
from mechanism.readers._fields import FieldMap, as_str
from mechanism.readers._shapes import content_text
from mechanism.readers.openai import FINISH_TOOLS, final_from_content

FORMAT = "react"

# a user turn in a chat transcript is marked with a control character no model writes at a line start
_USER_MARK = "\x1eUser"
_USER_KIND = _USER_MARK.lower()
# and so is a chat's last assistant message that writes no ReAct line: the final answer in words
_ANSWER_MARK = "\x1eAnswer"
_ANSWER_KIND = _ANSWER_MARK.lower()
_MARKER = re.compile(r"^[ \t]*(Thought|Action[ \t]+Input|Action|Observation|Question|Final[ \t]+Answer|Code|"
                     r"\x1eUser|\x1eAnswer)(?:[ \t]*\d+)?[ \t]*:[ \t]?", re.M | re.I)
# smolagents' code actions (CodeAct): `Code:` then a fenced program, ended by `<end_code>`; the
# program is a call of the interpreter, and `final_answer(...)` in it ends the episode
CODE_TOOL = "python_interpreter"
_CODE_START = re.compile(r"^[ \t]*Code[ \t]*:[ \t]*\n?[ \t]*```", re.M | re.I)
# LangChain's JSON agents write the action as a blob: `Action:` then ```{"action": ...}``` or {...}
_JSON_ACTION = re.compile(r"^[ \t]*Action[ \t]*:[ \t]*\n?[ \t]*(?:```[A-Za-z]*[ \t]*\n[ \t]*)?\{", re.M | re.I)
_FINAL_CALL = re.compile(r"^[ \t]*final_answer[ \t]*\(", re.M)
# LangChain's ReAct (MRKL) lines: `Action: search` then `Action Input: ...` is search(...), and
# `Final Answer: ...` ends the episode
_TOOL_NAME = re.compile(r"[A-Za-z_][\w\-.]*")
# heads only: the argument is cut with str.rfind, so no pattern backtracks over untrusted text
_ACTION_HEAD = re.compile(r"[ \t]*([A-Za-z_][\w\-]*)[ \t]*\[")
_INLINE_HEAD = re.compile(r"Action(?:[ \t]*\d+)?[ \t]*:[ \t]*([A-Za-z_][\w\-]*)[ \t]*\[")
REPAIRED = "actions missing their closing `]` read to the end of the line (repaired)"
DROPPED = "action lines not of the form `tool[argument]` kept as thought text, not as rounds (dropped)"
# a text environment's actions (`Action: go north`): no action of the transcript has brackets
BARE_TOOL = GENERIC_TOOL
BARE = (f"actions without brackets (`Action: go north`, no `tool[...]` in the transcript) read as calls of one "
        f"generic tool `{BARE_TOOL}`, whose verb the strategy space reads")
EXTRA = ("extra actions in a turn that the environment did not run (the turn's first action is the step; "
         "`multi_action='last'` for environments that run the last) kept as thought text")
# a logger's line, not the agent's: a gold-answer trailer or a banner (only at the transcript's ends)
BOOKKEEPING = re.compile(r"[ \t]*(?:correct answer|gold(?: answer)?|ground[ _-]?truth|reference answer|"
                         r"expected answer)[ \t]*:", re.I)
_BANNER = re.compile(r"[ \t]*(?:[#=*~-]{5,}|(?:BEGIN|END) (?:TRIAL|OF)\b|Trial summary[ \t]*:|"
                     r"-*[ \t]*BEGIN (?:CORRECT|INCORRECT|HALTED) AGENTS\b)", re.I)
_DETECT = re.compile(r"^[ \t]*Action(?:[ \t]*\d+)?[ \t]*:[ \t]*[A-Za-z_][\w\-]*[ \t]*\[", re.M | re.I)


# a text environment's transcript: bare `Action:` lines answered by `Observation:` lines
_BARE_ACTION = re.compile(r"^[ \t]*Action(?:[ \t]*\d+)?[ \t]*:[ \t]*[A-Za-z]", re.M | re.I)
_OBSERVATION = re.compile(r"^[ \t]*Observation(?:[ \t]*\d+)?[ \t]*:", re.M | re.I)


def _inside_fence(block: str) -> tuple[str, bool]:
    """(the text inside a block that opens with a code fence, whether a closing fence ends it):
    from the line after the opening fence up to the last fence, else to the end."""
    inner = block.split("\n", 1)[1] if "\n" in block else ""
    close = inner.rfind("```")
    return (inner[:close], True) if close >= 0 else (inner, False)


def _program(body: str) -> tuple[str, str | None] | None:
    """(program, final answer or None) of a ``Code:`` block written as a fenced program, else
    ``None``; the answer is what ``final_answer(...)`` is given (quotes taken off a string), and
    the program is what runs before it."""
    body = body.strip()
    if not body.startswith("```"):
        return None
    code, closed = _inside_fence(body)
    code = (code if closed else code.replace("<end_code>", "")).strip()
    final = _FINAL_CALL.search(code)
    if final is None:
        return code, None
    line_end = code.find("\n", final.end())
    line_end = len(code) if line_end < 0 else line_end
    inner = code[final.end():line_end]
    inner = inner[:inner.rfind(")")] if ")" in inner else inner
    return code[:final.start()].strip(), inner.strip()


def _literal(argument: str) -> str | None:
    """What ``final_answer(argument)`` gives where the argument is a literal (a quoted string,
    quotes taken off; a number), else ``None`` (an expression: its value is the program's)."""
    if len(argument) >= 2 and argument[0] == argument[-1] and argument[0] in "'\"":
        return argument[1:-1]
    return argument if re.fullmatch(r"-?\d+(?:\.\d+)?", argument) else None


# smolagents' observation of a program: what it printed, then the value of its last line (for a
# program that ends in `final_answer(...)`, the answer it gave)
_LAST_OUTPUT = re.compile(r"^Last output from code snippet:[ \t]*\n?(.*)\Z", re.M | re.S)


def _given(argument: str, observation: str | None) -> str:
    """The answer a program's ``final_answer(argument)`` gave: the literal, else the value its
    observation reports (smolagents' ``Last output from code snippet:``), else the expression."""
    literal = _literal(argument)
    if literal is not None:
        return literal
    value = _LAST_OUTPUT.search(observation[-20_000:]) if observation else None
    return value.group(1).strip() if value and value.group(1).strip() else argument


def _read_code(body: str, turn: list[tuple[str, str]], thoughts: list[str]) -> str | None:
    """A ``Code:`` block: its program joins ``turn`` (a fenced program) or its words ``thoughts``
    (anything else); returns what ``final_answer(...)`` is given, else ``None``."""
    program = _program(body)
    if program is None:
        thoughts.append(f"Code: {body}")
        return None
    code, said = program
    if code:
        turn.append((CODE_TOOL, code))
    return said


def _mrkl_input(text: str, marks: list[re.Match[str]], kinds: list[str], i: int) -> str | None:
    """The ``Action Input`` of mark ``i`` where it is an ``Action: tool`` line followed by one
    (LangChain's ReAct), else ``None``."""
    if kinds[i] != "action" or i + 1 == len(marks) or kinds[i + 1] != "action input":
        return None
    if not _TOOL_NAME.fullmatch(text[marks[i].end(): marks[i + 1].start()].strip()):
        return None
    end = marks[i + 2].start() if i + 2 < len(marks) else len(text)
    return text[marks[i + 1].end(): end].strip()


def _read_thought(body: str, last_before_observation: bool, thoughts: list[str], turn: list[tuple[str, str]]) -> None:
    """A ``Thought`` line: its words, and an action written inline (``Thought: ... Action:
    finish[x]`` on one line) where nothing but an observation follows."""
    action = None
    if "ction" in body and last_before_observation:
        body, action = _thought_and_action(body)
    if body:
        thoughts.append(body)
    if action is not None:
        turn.append(action)


def _step(tool: str, arg: str, thoughts: list[str], users: list[str], observation: str | None) -> dict[str, Any]:
    """The step of an action that ran: ``Action Input: {"entity": "Paris"}`` gives the call's own
    arguments, a program its code."""
    args = {"code": arg} if tool == CODE_TOOL else _json_object(arg)
    return make_step(thought="\n".join(thoughts) or None, tool=tool,
                     arguments=json.dumps(args if args is not None else {"query": arg}, ensure_ascii=False),
                     query=arg if args is None else main_text(args, arg), observation=observation,
                     user=USER_TURNS_JOIN.join(users) or None)


def _json_object(text: str) -> dict[str, Any] | None:
    """``text`` parsed, where it is a JSON object; else ``None``."""
    if not text.startswith("{"):
        return None
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, dict) else None


# a marker as written -> its kind; bounded (case and spacing vary little in one log)
_KINDS: dict[str, str] = {}


def _kind(marker: str) -> str:
    """A marker's kind, lower case, one space inside (``"action input"``), remembered."""
    # spaces and tabs only: str.split() would also take the user and answer marks' \x1e for a space
    kind = re.sub(r"[ \t]+", " ", marker.lower())
    if len(_KINDS) < 256:
        _KINDS[marker] = kind
    return kind


def detect_text(text: Any) -> bool:
    if not isinstance(text, str):
        return False
    return (_DETECT.search(text) is not None or _CODE_START.search(text) is not None
            or (_JSON_ACTION.search(text) is not None and _OBSERVATION.search(text) is not None)
            or (_BARE_ACTION.search(text) is not None and _OBSERVATION.search(text) is not None))


def detect(record: Mapping[str, Any], fields: FieldMap) -> bool:
    if detect_text(fields.get(record, "text")):
        return True
    messages = fields.get(record, "messages")
    if not isinstance(messages, list):
        return False
    try:
        # joined as the reader joins them: a text game's environment answers a bare action as the
        # user, unlabelled, so no one message holds both an action and an observation
        return detect_text(messages_text(messages)[0])
    except InputError:
        return False


def _action(body: str) -> tuple[str, str, bool] | None:
    """(tool, argument, repaired) of an action body, or ``None`` when it is not ``tool[...]``.

    The argument runs to the last ``]`` of the action's first line (answers may hold
    brackets); without any ``]`` it runs to the end of the line, and ``repaired`` says so.
    """
    line = body.strip().split("\n", 1)[0]
    m = _ACTION_HEAD.match(line)
    if m is None:
        return None
    inner = line[m.end():]
    close = inner.rfind("]")
    if close < 0:
        return m.group(1).lower(), inner.strip(), True
    return m.group(1).lower(), inner[:close].strip(), False


def _inline_action(body: str) -> tuple[int, str, str] | None:
    """(start, tool, argument) of the first complete ``Action: tool[...]`` written inside a
    thought; one forward pass (a line without ``]`` is passed over whole)."""
    pos = 0
    while True:
        m = _INLINE_HEAD.search(body, pos)
        if m is None:
            return None
        line_end = body.find("\n", m.end())
        line_end = len(body) if line_end < 0 else line_end
        close = body.rfind("]", m.end(), line_end)
        if close >= 0:
            return m.start(), m.group(1).lower(), body[m.end():close].strip()
        pos = line_end


def _thought_and_action(body: str) -> tuple[str, tuple[str, str] | None]:
    """(thought, (tool, argument)) of a thought that writes its action inline, else (thought, None)."""
    inline = _inline_action(body)
    if inline is None:
        return body, None
    return body[: inline[0]].strip(), (inline[1], inline[2])


def _json_action(body: str) -> tuple[str, str] | None:
    """(tool, argument) of an action written as a JSON blob (LangChain's structured-chat and JSON
    agents: ``{"action": "search", "action_input": ...}``, fenced or not; ``"Final Answer"`` is the
    finishing action), else ``None``."""
    text = body.strip()
    if text.startswith("```"):
        text = _inside_fence(text)[0]
    blob = _json_object(text.strip())
    if blob is None or not isinstance(blob.get("action"), str):
        return None
    tool, arg = blob["action"].strip(), blob.get("action_input", "")
    arg = arg if isinstance(arg, str) else json.dumps(arg, ensure_ascii=False)
    return ("finish" if tool.lower() == "final answer" else tool.lower()), arg


def _read_action(body: str, bare: bool, notes: list[str]) -> tuple[str, str] | None:
    """(tool, argument) of an ``Action`` line's body (a bare command read as the generic tool's
    where ``bare``), or ``None`` when it is no action, the line then kept as thought text; what
    was inferred is noted in ``notes``."""
    blob = _json_action(body) if body[:1] in ("{", "`") else None
    if blob is not None:  # LangChain's JSON agents: {"action": tool, "action_input": ...}
        return blob
    found = _action(body)
    if found is None and bare and body:
        found = (BARE_TOOL, body.split("\n", 1)[0].strip(), False)
        notes.append(BARE)
    if found is None:
        if body:
            notes.append(DROPPED)
        return None
    tool, arg, repaired = found
    if repaired:
        notes.append(REPAIRED)
    return tool, arg


def _bare_actions(text: str, marks: list[re.Match[str]]) -> bool:
    """Whether ``Action:`` lines are read without brackets: only where the transcript writes no
    action in brackets but finishing ones (else a bare line is a slip)."""
    return not any(m.group(1).lower() == "action" and (a := _action(text[m.end():m.end() + 400])) is not None
                   and a[0] not in FINISH_TOOLS for m in marks)


def split_bookkeeping(text: str) -> tuple[str, list[str]]:
    """(transcript, bookkeeping lines): the runs of bookkeeping and blank lines at the start and
    the end of ``text`` taken out (:data:`BOOKKEEPING` trailers, :data:`_BANNER` banners).

    >>> split_bookkeeping("Thought 1: x\\nAction 1: Search[a]\\nObservation 1: b\\nCorrect answer: Paris\\n")
    ('Thought 1: x\\nAction 1: Search[a]\\nObservation 1: b', ['Correct answer: Paris'])
    """
    if "\n" not in text.strip():
        return text, []
    lines = text.split("\n")

    def kept(line: str) -> bool:
        return bool(line.strip()) and BOOKKEEPING.match(line) is None and _BANNER.match(line) is None

    start = next((i for i, line in enumerate(lines) if kept(line)), len(lines))
    end = next((i + 1 for i in range(len(lines) - 1, start - 1, -1) if kept(lines[i])), start)
    taken = [line.strip() for line in lines[:start] + lines[end:] if line.strip()]
    if not taken:
        return text, []
    return "\n".join(lines[start:end]), taken


def _chosen(turn: list[tuple[str, str]], multi_action: str, thoughts: list[str], notes: list[str]
            ) -> tuple[str, str]:
    """The action of a turn the environment ran (``turn`` emptied): the first or the last; the
    others written but not run are kept as text in ``thoughts`` and counted in ``notes``."""
    chosen = 0 if multi_action == "first" else len(turn) - 1
    for i, (other_tool, other_arg) in enumerate(turn):
        if i != chosen:
            thoughts.append(f"Action: {other_tool}[{other_arg}]")
            notes.append(EXTRA)
    tool_arg = turn[chosen]
    turn.clear()
    return tool_arg


def parse_text(text: str, *, field: str = "text", multi_action: str = "first") -> dict[str, Any]:
    """Steps, answer and (when a ``Question:`` line gives it) the question from a transcript.

    The actions written between two observations are one turn. The environment ran one of
    them: the first (``multi_action="first"``, as ReAct environments do: they parse the first
    ``Action`` and stop) or the last (``"last"``); it is the step, and the others stay in the
    step's thought and are counted in a note. A finishing action ends the episode there.
    Bookkeeping lines at the transcript's ends (:func:`split_bookkeeping`) go to
    ``meta_extra["bookkeeping"]``.
    """
    text, bookkeeping = split_bookkeeping(text)
    marks = list(_MARKER.finditer(text))
    question: str | None = None
    steps: list[dict[str, str | None]] = []
    thoughts: list[str] = []
    users: list[str] = []
    turn: list[tuple[str, str]] = []  # actions written since the last observation
    answer: str | None = None
    final = False
    rule = "finish"
    notes: list[str] = []
    finish_results: list[str] = []
    giving: str | None = None  # a program's `final_answer(...)` argument, until its observation

    def run_turn(observation: str | None) -> None:
        """The action of the turn the environment ran, with its observation."""
        nonlocal answer, final, rule
        if not turn:
            return
        tool, arg = _chosen(turn, multi_action, thoughts, notes)
        if tool in FINISH_TOOLS:
            answer, final, rule = arg, True, "finish"
            if observation is not None:
                finish_results.append(observation)
            return
        steps.append(_step(tool, arg, thoughts, users, observation))
        thoughts.clear()
        users.clear()
        if observation is not None:
            answer, final = None, False  # the episode went on after any earlier finish

    bare = _bare_actions(text, marks)
    kinds = [_KINDS.get(g) or _kind(g) for g in [m.group(1) for m in marks]]
    for i, m in enumerate(marks):
        kind = kinds[i]
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[m.end(): end].strip()
        if kind == "question":
            question = body if question is None else question
        elif kind == _USER_KIND:
            if body:
                users.append(body)
        elif kind == _ANSWER_KIND:
            run_turn(None)
            answer, rule = final_from_content(body)
            final = answer is not None
        elif kind in ("final answer", "code"):
            said = body if kind == "final answer" else _read_code(body, turn, thoughts)
            if said is not None and kind == "code" and i + 1 < len(marks) and kinds[i + 1] == "observation":
                giving = said  # the program ran: its observation says whether it got to the answer
            elif said is not None:  # `Final Answer:`, or a program's `final_answer(...)`
                run_turn(None)
                answer, final, rule = (said if kind == "final answer" else _given(said, None)), True, "final_answer"
        elif kind == "action input":
            if body and (i == 0 or _mrkl_input(text, marks, kinds, i - 1) is None):  # not after `Action: tool`
                thoughts.append(f"Action Input: {body}")
        elif kind == "thought":
            _read_thought(body, i + 1 == len(marks) or kinds[i + 1] == "observation", thoughts, turn)
        elif kind == "action":
            mrkl = _mrkl_input(text, marks, kinds, i) if i + 1 < len(marks) and kinds[i + 1] == "action input" else None
            if mrkl is not None:  # `Action: tool` + `Action Input: argument`: the named tool's call
                turn.append((body.lower(), mrkl))
                continue
            found = _read_action(body, bare, notes)
            if found is not None:
                turn.append(found)
            elif body:
                thoughts.append(f"Action: {body}")
        else:  # observation
            run_turn(body)
            if giving is not None and not is_failure(body, tool=CODE_TOOL):  # it got to its `final_answer`
                answer, final, rule = _given(giving, body), True, "final_answer"
            giving = None
    run_turn(None)  # a last turn with no observation (the episode stopped there)
    if final and steps and answer is None:
        final = False
    out: dict[str, Any] = {"steps": steps, "answer": answer, "final": final, "question": question,
                           "notes": notes, "answer_rule": rule if final else None}
    extra = _kept_beside(finish_results, users, bookkeeping)
    if extra:
        out["meta_extra"] = extra
    return out


def _kept_beside(finish_results: list[str], users: list[str], bookkeeping: list[str]) -> dict[str, str]:
    """What a transcript holds beside its steps, for ``meta``: the last finishing action's
    result, user turns after the last call, and the log's bookkeeping lines."""
    extra: dict[str, str] = {}
    if finish_results:
        extra["finish_result"] = finish_results[-1]
    if users:
        extra["user_after_last_call"] = "\n".join(users)
    if bookkeeping:
        extra["bookkeeping"] = "\n".join(bookkeeping)
    return extra


def messages_text(messages: Any, *, field: str = "messages") -> tuple[str, str | None]:
    """(ReAct transcript, question) from chat messages: the first user message that is not a
    ReAct line is the question; every other content joins the transcript.

    After an action, the next message that is not the assistant's is its observation, with
    or without an ``Observation:`` label (chat agents whose environment answers as the
    user); any other user message is a user turn, kept for the next step's ``user``. The last
    message, when the assistant's and free of ReAct lines, is the final answer.
    """
    if not isinstance(messages, list):
        raise InputError(f"`{field}` must be a list of messages, got {type(messages).__name__}", field=field)
    parts: list[str] = []
    question: str | None = None
    acted = False  # the assistant wrote an action since the last message of another role
    for index, msg in enumerate(messages):
        if not isinstance(msg, Mapping):
            raise InputError(f"`{field}[{index}]` must be an object, got {type(msg).__name__}",
                             field=f"{field}[{index}]")
        role = msg.get("role")
        try:
            text = content_text(msg.get("content"))
        except InputError:
            raise InputError(f"`{field}[{index}].content` must be text", field=f"{field}[{index}].content") from None
        if role == "system":
            continue
        if role == "assistant":
            if index == len(messages) - 1 and parts and not acted and _MARKER.search(text) is None:
                parts.append(f"{_ANSWER_MARK}: {text}")  # the last word, after the last observation
                continue
            acted = (acted or _DETECT.search(text) is not None or _INLINE_HEAD.search(text) is not None
                     or _BARE_ACTION.search(text) is not None)
            parts.append(text)
            continue
        labelled = _MARKER.match(text) is not None
        if role == "user" and question is None and not labelled:
            question = text.strip()
        elif labelled:
            parts.append(text)
        elif acted:
            parts.append(f"Observation: {text}")
        else:
            parts.append(f"{_USER_MARK}: {text}")
        acted = False
    return "\n".join(parts), question


def parse(record: Mapping[str, Any], fields: FieldMap) -> dict[str, Any]:
    name, text = fields.find(record, "text")
    if name is not None and isinstance(text, str):
        return {**parse_text(text, field=name, multi_action=fields.multi_action), "_consumed": {name}}
    mname, messages = fields.find(record, "messages")
    if mname is not None:
        transcript, question = messages_text(messages, field=mname)
        parsed = parse_text(transcript, field=mname, multi_action=fields.multi_action)
        parsed["question"] = parsed["question"] or question
        return {**parsed, "_consumed": {mname}}
    if name is not None:
        as_str(text, name, allow_number=False)
    want = " or ".join(f"`{p}`" for p in fields.paths("text") + fields.paths("messages"))
    raise InputError(f"missing transcript field {want}", field=fields.paths("text")[0])
