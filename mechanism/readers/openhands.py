"""OpenHands event histories: its evaluation output (``output.jsonl``, one SWE-bench or other
instance a line) and trajectories exported as ``{"history": [...]}``.

OpenHands logs an episode as a stream of events, each an *action* (``"action": "run"``, with
``args``) or an *observation* (``"observation": "run"``, with ``content`` and ``extras``, its
``cause`` the id of the action it answers), each with its ``source`` (``user``, ``agent`` or
``environment``). Read by the chat reader's rules (:class:`~mechanism.readers.openai.ChatTurns`):

- the user's first message is the question (else the record's ``instruction``), a later one a
  user turn;
- an agent action is a call of the tool the model called (``tool_call_metadata.function_name``:
  ``execute_bash``, ``str_replace_editor``, ``execute_ipython_cell``, ``browser``, ...), else of
  the action (``run``, ``read``, ``edit``, ...); its ``args`` but the bookkeeping ones are the
  arguments and ``args.thought`` its thought; actions from one model response
  (``tool_call_metadata.model_response.id``) are calls sent together;
- ``think`` is the agent's thought, joined to its next call's; ``message`` from the agent is its
  words, the last one after every call the answer where it never called ``finish``;
- ``finish`` is the finishing call (``args.final_thought`` or ``args.outputs`` the answer);
- the events the harness adds (``recall``, ``system``, ``agent_state_changed``, ``condensation``,
  ``null``) are no round, and their observations no result, nor the harness's notes on a thought
  or a message (``think``'s "Your thought has been logged.");
- an observation is its action's result: ``error`` and ``user_rejected`` observations failed,
  and a command the runtime killed for its time (exit code ``-1``) too; exit codes go to ``meta``
  as ``exit_codes``.

The OpenHands software-agent SDK (V1) logs the same episode as typed events, each with its
``kind``: ``MessageEvent`` (``llm_message.content``), ``ActionEvent`` (``tool_name``,
``tool_call_id``, ``tool_call.arguments``, ``thought``, ``llm_response_id``), ``ObservationEvent``
(``observation.content``, ``is_error``, ``exit_code``; ``action_id``), ``UserRejectObservation``
and ``AgentErrorEvent`` (both failed results). Each is read as the event of the first shape that
says the same (:func:`_from_sdk`); the SDK's own bookkeeping (``SystemPromptEvent``,
``ConversationStateUpdateEvent``, condensation, pauses, token counts) is the harness's.

A conversation the SDK saved (``persistence_dir``: a folder holding ``base_state.json`` and
``events/event-<index>-<id>.json``, one event a file) is one record: its events in the order of
their index, its id the question id, ``agent.llm.model`` the arm and ``execution_status`` in
``meta`` (:func:`conversation_record`); :func:`mechanism.read` reads such a folder, or a folder of
them (``~/.openhands/conversations``), each conversation as one episode. A file in ``events/``
that is no event file is left out and said in the read report, and so are events of a kind this
reader does not know (read as the harness's bookkeeping: no round).

Where ``test_result.git_patch`` holds the patch (SWE-bench evaluation), it is the answer, as
mini-swe-agent's submission is; ``instance_id`` is the question id, ``metadata.llm_config.model``
the arm, and a top-level ``error`` (the run stopped: stuck in a loop, out of budget) goes to
``meta``: an episode that never finished is a failure. Whether the patch resolved the issue is
the evaluation's: ``columns={"correct": "report.resolved"}`` (or a ``resolved`` field).
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mechanism.core.errors import InputError
from mechanism.readers._fields import FieldMap
from mechanism.readers._io import load_json
from mechanism.readers._shapes import content_text
from mechanism.readers.openai import ChatTurns

FORMAT = "openhands"

#: the events' list, by the names OpenHands' outputs give it
HISTORY_KEYS = ("history", "trajectory")
#: actions the harness adds, not the agent's: no round, and their observations no result
HARNESS_ACTIONS = frozenset({"recall", "system", "change_agent_state", "condensation", "condensation_request", "null",
                             "task_tracking_observation"})
#: observations that say the action failed
FAILED_OBSERVATIONS = frozenset({"error", "user_rejected"})
#: ``args`` that say how the harness ran an action, not what the agent asked
_BOOKKEEPING_ARGS = frozenset({"thought", "confirmation_state", "security_risk", "blocking", "hidden", "is_input",
                               "impl_source", "keep_prompt", "wait_for_response", "is_confirmed", "include_extra"})
#: a command the runtime stopped for its time (OpenHands' ``CmdOutputMetadata.exit_code``)
TIMEOUT_EXIT_CODE = -1


#: the SDK's event kinds read (any other kind is the harness's bookkeeping)
SDK_EVENTS = frozenset({"MessageEvent", "ActionEvent", "ObservationEvent", "UserRejectObservation", "AgentErrorEvent",
                        "SystemPromptEvent", "ConversationStateUpdateEvent", "Condensation", "CondensationRequest",
                        "CondensationSummaryEvent", "PauseEvent", "InterruptEvent", "TokenEvent", "HookExecutionEvent",
                        "LLMCompletionLogEvent", "ConversationErrorEvent", "ConversationIterationLimitEvent"})
#: the SDK's events that say the run stopped (its error, its iteration budget spent): to ``meta``
SDK_STOPS = frozenset({"ConversationErrorEvent", "ConversationIterationLimitEvent"})


#: a conversation the SDK saved: its state, and a folder of its events one a file
#: (``openhands.sdk.conversation.persistence_const``: ``event-{idx:05d}-{event_id}.json``)
CONVERSATION_STATE = "base_state.json"
EVENTS_FOLDER = "events"
_EVENT_FILE = re.compile(r"^event-(\d{1,18})-[0-9A-Za-z\-]*\.json$")
#: the record's field that lists what a conversation folder held besides its events
LEFT_OUT_FIELD = "_left_out_files"
UNKNOWN_KINDS_NOTE = ("records with OpenHands events of a kind this reader does not know, read as the harness's "
                      "(no round)")
LEFT_OUT_NOTE = "OpenHands conversations whose `events/` folder holds files that are no event file, left out"
MAX_NAMED = 8  # kinds or files named in a record's meta at most


def is_conversation(folder: Path) -> bool:
    """Whether ``folder`` is a conversation the SDK saved: an ``events/`` folder beside its
    ``base_state.json``, or holding event files."""
    events = folder / EVENTS_FOLDER
    if not events.is_dir():
        return False
    return (folder / CONVERSATION_STATE).is_file() or any(_EVENT_FILE.match(p.name) for p in events.iterdir())


def conversation_record(folder: Path) -> dict[str, Any]:
    """One saved conversation as a record of this format: ``history`` its events in the order of
    their index, ``instance_id`` its id (else the folder's name), ``metadata.llm_config.model`` the
    agent's model and ``execution_status`` as ``base_state.json`` says them.

    Raises
    ------
    InputError
        An event file or the state that is no JSON object, naming the file.
    """
    state: Any = {}
    path = folder / CONVERSATION_STATE
    if path.is_file():
        state = load_json(path)
        if not isinstance(state, Mapping):
            raise InputError("must be a JSON object (the conversation's state)", source=str(path))
    numbered, left_out = [], []
    for path in (folder / EVENTS_FOLDER).iterdir():
        m = _EVENT_FILE.match(path.name)
        if m is None or not path.is_file():
            left_out.append(path.name)
        else:
            numbered.append((int(m.group(1)), path.name, path))
    history = []
    for _, _, path in sorted(numbered):
        event = load_json(path)
        if not isinstance(event, Mapping):
            raise InputError("must be a JSON object (an OpenHands event)", source=str(path))
        history.append(event)
    agent = state.get("agent") if isinstance(state.get("agent"), Mapping) else {}
    llm = agent.get("llm") if isinstance(agent.get("llm"), Mapping) else {}
    record: dict[str, Any] = {"instance_id": str(state.get("id") or folder.name), "history": history}
    if isinstance(llm.get("model"), str) and llm["model"]:
        record["metadata"] = {"llm_config": {"model": llm["model"]}}
    if isinstance(state.get("execution_status"), str):
        record["execution_status"] = state["execution_status"]
    if left_out:
        record[LEFT_OUT_FIELD] = sorted(left_out)
    return record


def detect(record: Mapping[str, Any], fields: FieldMap) -> bool:
    _, events = _events(record)
    if not events:
        return False
    first = events[0]
    if not isinstance(first, Mapping):
        return False
    if first.get("kind") in SDK_EVENTS:
        return True
    return "source" in first and isinstance(first.get("action"), str) != isinstance(first.get("observation"), str)


def _events(record: Mapping[str, Any]) -> tuple[str, list[Any] | None]:
    """(the field, the events' list) of a record: the first of :data:`HISTORY_KEYS` holding a list."""
    for key in HISTORY_KEYS:
        value = record.get(key)
        if isinstance(value, list):
            return key, value
    return HISTORY_KEYS[0], None


def parse(record: Mapping[str, Any], fields: FieldMap) -> dict[str, Any]:
    key, events = _events(record)
    if events is None:
        raise InputError("no `history` list of OpenHands events", field="history")
    unknown: list[str] = []
    stopped: str | None = None
    if events and isinstance(events[0], Mapping) and "kind" in events[0]:
        events, unknown, stopped = _from_sdk(events, key)
    out = _read_events(events, key, record.get("instruction"))
    test_result = record.get("test_result")
    patch = test_result.get("git_patch") if isinstance(test_result, Mapping) else None
    meta = out.setdefault("meta_extra", {})
    if isinstance(patch, str) and out["final"]:  # a SWE-bench run that finished: its patch is its answer
        out["answer"], out["answer_rule"] = patch, "git_patch"
    elif isinstance(patch, str):
        meta["git_patch"] = patch  # kept; an episode that never finished answered nothing
    if isinstance(record.get("error"), str) and record["error"]:
        meta["error"] = record["error"]
    elif stopped:
        meta["error"] = stopped
    metadata = record.get("metadata") if isinstance(record.get("metadata"), Mapping) else {}
    llm = metadata.get("llm_config") if isinstance(metadata.get("llm_config"), Mapping) else {}
    if isinstance(llm.get("model"), str) and llm["model"]:
        out["arm_default"], out["arm_source"] = llm["model"], "`metadata.llm_config.model`"
    if isinstance(metadata.get("agent_class"), str):
        meta["agent_class"] = metadata["agent_class"]
    notes = []
    if unknown:
        meta["unknown_event_kinds"], notes = unknown[:MAX_NAMED], [UNKNOWN_KINDS_NOTE]
    left_out = record.get(LEFT_OUT_FIELD)
    if isinstance(left_out, list) and left_out:
        meta["left_out_files"], notes = [str(f) for f in left_out[:MAX_NAMED]], [*notes, LEFT_OUT_NOTE]
    if not meta:
        out.pop("meta_extra")
    return {**out, **({"notes": notes} if notes else {}),
            "_consumed": {key, "instruction", "test_result", "metadata", "error", LEFT_OUT_FIELD}}


def _read_events(events: list[Any], key: str, instruction: Any) -> dict[str, Any]:
    """Steps, question and answer from an event list (module docstring), in one pass after one
    that groups the actions of each model response (their observations come between them)."""
    turns = ChatTurns()
    question: str | None = None
    call_of: dict[Any, str] = {}  # an action's event id -> its call's id, for its observation
    not_calls: set[Any] = set()  # the ids of actions that are no call (the harness's, thoughts, words)
    codes: list[int] = []
    last_words: str | None = None  # the agent's last message since its last call
    members = _responses(events, key)
    handed: set[int] = set()  # the calls of a response, handed over at its first
    for i, event in enumerate(events):
        where = f"{key}[{i}]"
        action, observation = event.get("action"), event.get("observation")
        if isinstance(action, str) and _tool_call(event, action):
            if i in handed:  # handed over with the first call of its response
                continue
            group = members.get(_response_id(event), [i])
            handed.update(group)
            calls = [_call(events[j], events[j]["action"], f"{key}[{j}]", j) for j in group]
            for j, call in zip(group, calls):
                call_of[events[j].get("id", f"@{j}")] = call["id"]
            thought = calls[0]["_thought"]
            turns.calls([{k: v for k, v in c.items() if k != "_thought"} for c in calls], thought, where)
            last_words = None
        elif isinstance(action, str):
            not_calls.add(event.get("id", f"@{i}"))
            text = _text(event)
            if action in HARNESS_ACTIONS:
                continue
            if event.get("source") == "user" and action == "message":
                if question is None:
                    question = text
                elif text:
                    turns.user_turns.append(text)
            elif action == "think" or (action == "message" and event.get("source") == "agent"):
                turns.said += [text] if text else []
                last_words = text if action == "message" and text else last_words
        elif isinstance(observation, str):
            cause = event.get("cause")
            if observation in HARNESS_ACTIONS or cause is None or cause in not_calls:
                continue  # the harness's own, or its note that a thought was logged
            if cause not in call_of:
                raise InputError(f"`{where}.cause` = {cause!r} answers no action before it that is still unanswered",
                                 field=f"{where}.cause")
            failed, code = _verdict(event, observation)
            codes += [code] if code is not None else []
            turns.result({"tool_call_id": call_of.pop(cause), "content": _content(event, where),
                          "_failed": failed}, where)
        else:
            raise InputError(f"`{where}` is neither an action nor an observation (no `action` / `observation`)",
                             field=where)
    out = turns.outcome(question if question is not None else
                        (instruction.strip() if isinstance(instruction, str) else None))
    if not out["final"] and last_words is not None:  # finished by speaking, not by `finish`
        out["answer"], out["final"], out["answer_rule"] = last_words, True, "last_message"
    if codes:
        out.setdefault("meta_extra", {})["exit_codes"] = codes
    return out


def _responses(events: list[Any], key: str) -> dict[Any, list[int]]:
    """Each model response's id -> the indices of the calls it made (a response that made one
    call is left out); every event checked to be an object on the way."""
    members: dict[Any, list[int]] = {}
    for i, event in enumerate(events):
        if not isinstance(event, Mapping):
            raise InputError(f"`{key}[{i}]` must be an object (an OpenHands event)", field=f"{key}[{i}]")
        action = event.get("action")
        if isinstance(action, str) and _tool_call(event, action):
            rid = _response_id(event)
            if rid is not None:
                members.setdefault(rid, []).append(i)
    return {rid: group for rid, group in members.items() if len(group) > 1}


def _tool_call(event: Mapping[str, Any], action: str) -> bool:
    """Whether an action event is a call of the agent's (a round, or its finishing call)."""
    return (event.get("source") == "agent" and action not in HARNESS_ACTIONS
            and action not in ("message", "think"))


def _response_id(event: Mapping[str, Any]) -> Any:
    meta = event.get("tool_call_metadata")
    response = meta.get("model_response") if isinstance(meta, Mapping) else None
    rid = response.get("id") if isinstance(response, Mapping) else None
    return rid if isinstance(rid, str) and rid else None


def _call(event: Mapping[str, Any], action: str, where: str, index: int) -> dict[str, Any]:
    """An action as a chat tool call (``id``, ``function.name``, ``function.arguments``, thought)."""
    args = event.get("args", {})
    if not isinstance(args, Mapping):
        raise InputError(f"`{where}.args` must be an object", field=f"{where}.args")
    meta = event.get("tool_call_metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    name = meta.get("function_name") if isinstance(meta.get("function_name"), str) and meta["function_name"] else action
    if action == "finish":
        name = "finish"
        answer = args.get("final_thought") or args.get("outputs") or args.get("message") or ""
        arguments = {"answer": answer if isinstance(answer, str) else json.dumps(answer, sort_keys=True)}
    else:
        arguments = {k: v for k, v in args.items() if k not in _BOOKKEEPING_ARGS}
    call_id = meta.get("tool_call_id") if isinstance(meta.get("tool_call_id"), str) else f"@{event.get('id', index)}"
    thought = args.get("thought") if isinstance(args.get("thought"), str) else ""
    return {"id": call_id, "function": {"name": name, "arguments": json.dumps(arguments, sort_keys=True)},
            "_thought": thought}


def _verdict(event: Mapping[str, Any], observation: str) -> tuple[bool, int | None]:
    """Whether an observation says its action failed, and the command's exit code (or None)."""
    extras = event.get("extras")
    extras = extras if isinstance(extras, Mapping) else {}
    metadata = extras.get("metadata") if isinstance(extras.get("metadata"), Mapping) else {}
    code = metadata.get("exit_code", extras.get("exit_code"))
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    return observation in FAILED_OBSERVATIONS or code == TIMEOUT_EXIT_CODE, code


def _text(event: Mapping[str, Any]) -> str:
    """An action's words: ``args.content`` (a message), ``args.thought`` (a thought), else its ``message``."""
    args = event.get("args")
    args = args if isinstance(args, Mapping) else {}
    for value in (args.get("content"), args.get("thought"), event.get("message")):
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def _content(event: Mapping[str, Any], where: str) -> str:
    content = event.get("content", "")
    if content is None:
        return ""
    if not isinstance(content, str):
        raise InputError(f"`{where}.content` must be text", field=f"{where}.content")
    return content


def _from_sdk(events: list[Any], key: str) -> tuple[list[dict[str, Any]], list[str], str | None]:
    """The SDK's typed events (module docstring) as events of the first shape, in one pass; the
    kinds met that this reader does not know (each once, in order, the first :data:`MAX_NAMED`);
    and why the run stopped where an event says so (:data:`SDK_STOPS`: the last one's detail)."""
    out: list[dict[str, Any]] = []
    unknown: list[str] = []
    stopped: str | None = None
    action_of: dict[Any, Any] = {}  # a tool call's id -> its action's event id (for an agent error)
    for i, event in enumerate(events):
        where = f"{key}[{i}]"
        if not isinstance(event, Mapping):
            raise InputError(f"`{where}` must be an object (an OpenHands event)", field=where)
        kind, eid, source = event.get("kind"), event.get("id", f"@{i}"), event.get("source")
        if kind == "MessageEvent":
            message = event.get("llm_message")
            text = _sdk_text(message.get("content") if isinstance(message, Mapping) else None, f"{where}.llm_message")
            out.append({"id": eid, "source": source or "agent", "action": "message", "args": {"content": text}})
        elif kind == "ActionEvent":
            out.append(_sdk_action(event, eid, where))
            action_of[event.get("tool_call_id")] = eid
        elif kind in ("ObservationEvent", "UserRejectObservation", "AgentErrorEvent"):
            cause = event.get("action_id", action_of.get(event.get("tool_call_id")))
            out.append({"id": eid, "source": "environment", "cause": cause, **_sdk_result(event, kind, where)})
        else:  # the SDK's bookkeeping, or a kind this reader does not know: no round, no result
            if kind not in SDK_EVENTS and len(unknown) < MAX_NAMED and str(kind)[:80] not in unknown:
                unknown.append(str(kind)[:80])
            elif kind in SDK_STOPS:
                stopped = " ".join(str(event.get(f)) for f in ("code", "detail") if event.get(f) is not None) or kind
            out.append({"id": eid, "source": "environment", "action": "system", "args": {}})
    return out, unknown, stopped


def _sdk_action(event: Mapping[str, Any], eid: Any, where: str) -> dict[str, Any]:
    """An ``ActionEvent`` as an action of the first shape: a call of ``tool_name`` (``finish``
    and ``think`` as the first shape names them), its arguments the model's own."""
    name = event.get("tool_name")
    if not isinstance(name, str) or not name:
        raise InputError(f"`{where}.tool_name` is missing", field=f"{where}.tool_name")
    call = event.get("tool_call") if isinstance(event.get("tool_call"), Mapping) else {}
    try:
        args = json.loads(call["arguments"]) if isinstance(call.get("arguments"), str) else None
    except ValueError:
        args = None
    if not isinstance(args, Mapping):  # the arguments as the SDK parsed them
        action = event.get("action")
        args = {k: v for k, v in action.items() if k != "kind"} if isinstance(action, Mapping) else {}
    thought = _sdk_text(event.get("thought"), f"{where}.thought")
    if name.lower() in ("finish", "think"):
        action_name = name.lower()
        args = {"final_thought": args.get("message", ""), "thought": thought} if action_name == "finish" else \
            {"thought": "\n".join(t for t in (thought, str(args.get("thought", ""))) if t)}
    else:
        action_name, args = name, {**args, "thought": thought}
    response = event.get("llm_response_id")
    return {"id": eid, "source": "agent", "action": action_name, "args": args,
            "tool_call_metadata": {"function_name": name, "tool_call_id": event.get("tool_call_id"),
                                   "model_response": {"id": response}}}


def _sdk_result(event: Mapping[str, Any], kind: str, where: str) -> dict[str, Any]:
    """A result event's observation of the first shape: its kind, text and exit code."""
    if kind == "UserRejectObservation":
        return {"observation": "user_rejected", "content": str(event.get("rejection_reason", ""))}
    if kind == "AgentErrorEvent":
        return {"observation": "error", "content": str(event.get("error", ""))}
    obs = event.get("observation")
    if not isinstance(obs, Mapping):
        raise InputError(f"`{where}.observation` must be an object", field=f"{where}.observation")
    content = obs.get("content", obs.get("output", ""))
    text = content if isinstance(content, str) else _sdk_text(content, f"{where}.observation.content")
    code = obs.get("exit_code")
    if code is None and isinstance(obs.get("metadata"), Mapping):
        code = obs["metadata"].get("exit_code")
    failed = obs.get("is_error") is True or obs.get("timeout") is True
    return {"observation": "error" if failed else str(obs.get("kind") or "run"), "content": text,
            "extras": {"metadata": {"exit_code": code}} if isinstance(code, int) else {}}


def _sdk_text(content: Any, where: str) -> str:
    """The text of the SDK's content blocks (``[{"type": "text", "text": ...}]``, or a string),
    as :func:`~mechanism.readers._shapes.content_text` reads any message's content."""
    if content is not None and not isinstance(content, (str, list)):
        raise InputError(f"`{where}` must be a list of content blocks", field=where)
    return content_text(content)
