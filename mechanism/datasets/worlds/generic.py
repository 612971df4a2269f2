"""Any planted world's episodes re-logged through one generic action tool.

Many harnesses log every action through one tool whose argument is the action written out:
``act(command="search Paris")``, ``act(command="get_order_details W1")``.
:func:`as_generic_action` rewrites a world that way and keeps its truth, so the same planted
strategies can be recovered from the generic log (``labels_for`` still works: the ids do not
change).

The command is the tool's name, a space, then the call's argument values in the order a
harness writes that tool's (the order of the tool's first call in the world: a model gives the
same call's keys in any order, a harness writes them as the tool declares them), its main
argument first (as tools declare it; a value that writes the action
out, ``command``, ``code``, ``action``, first wherever the call put it, so
``Bash(description=..., command="pytest -q")`` -> ``Bash "pytest -q" ...``, and the reading sees
the shell tool's command as the call's, :mod:`mechanism.core.actions`): one value is written as it is
(``search[Paris France]`` -> ``search Paris France``); with several, a text value holding
spaces or quotes (or empty) is JSON-quoted (``edit_file src/a.py "x = 1" "x = 2"``); a number
or a boolean is JSON; a list of plain values is its items with spaces
(``coordinate=[512, 384]`` -> ``512 384``); anything nested is compact JSON. A world that calls
one tool only, whose first argument already writes the action out (``bash(command=...)``,
``computer(action=...)``), is written without that tool's name by default
(``bash(command="ls -la")`` -> ``act(command="ls -la")``,
``computer(action="left_click", coordinate=[5, 9])`` -> ``act(command="left_click 5 9")``). Finishing calls (``submit``,
``finish``, ...: the final answer, not a round) and the calls the agent speaks to the user through
(``send_message``: its words, not a round) are left as they are.

Formats: ``openai`` and ``atif`` worlds are rewritten in their own records and format (their
system prompts, user turns, thoughts and results kept). Any other world (``react``,
``searchr1``, or a planted world without native records such as the simulator) is re-logged
from its canonical ``runs`` as OpenAI ``tool_calls`` records (question, each step's user turn,
thought, call and observation, then the final answer, with the given ``correct``).
"""
from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any

from mechanism.core.actions import GENERIC_TOOL
from mechanism.core.errors import InputError
from mechanism.datasets.worlds._base import PlantedWorld, World
from mechanism.readers.openai import FINISH_TOOLS, MESSAGE_TOOLS

#: the formats rewritten in their own records (the others are re-logged as ``openai``)
NATIVE_FORMATS = ("openai", "atif")
# the harness's own tools, left as they are: the readers' finishing tools, whose calls carry the
# answer, and those the agent speaks to the user through (Letta's `send_message`: its words, not a round)
_FINISH = FINISH_TOOLS | MESSAGE_TOOLS
# argument names that hold an action already written out (the program, the action's name)
_COMMAND_KEYS = frozenset({"command", "cmd", "action", "code", "script"})


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _plain(value: Any) -> str:
    """One argument value as command text (unquoted)."""
    if isinstance(value, str):
        return value
    if _scalar(value):
        return json.dumps(value)
    if isinstance(value, list) and all(_scalar(v) for v in value):
        return " ".join(_plain(v) for v in value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _quoted(value: Any) -> str:
    text = _plain(value)
    if isinstance(value, str) and (text == "" or any(c.isspace() or c in "\"'" for c in text)):
        return json.dumps(text, ensure_ascii=False)
    return text


def command_text(tool: str | None, arguments: Any) -> str:
    """A call written as one command: ``tool`` (``None``: left out) and its argument values.

    Parameters
    ----------
    tool
        The tool's name, or ``None`` to write the values alone.
    arguments
        The call's arguments: an object (its values in order; ``None`` values left out), a
        JSON text of one, or any other text (written as it is).

    Returns
    -------
    str
        ``"<tool> <values>"`` (see the module's description of how values are written).

    Examples
    --------
    >>> command_text("search", {"query": "Paris"})
    'search Paris'
    >>> command_text("get_order_details", '{"order_id": "W1"}')
    'get_order_details W1'
    >>> command_text("edit_file", {"path": "a.py", "old": "x = 1", "new": "x = 2"})
    'edit_file a.py "x = 1" "x = 2"'
    >>> command_text(None, {"action": "left_click", "coordinate": [512, 384]})
    'left_click 512 384'
    >>> command_text("Bash", {"description": "Run the tests", "command": "pytest -q"})
    'Bash "pytest -q" "Run the tests"'
    """
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except (ValueError, RecursionError):
            parsed = arguments
        arguments = parsed if isinstance(parsed, Mapping) else arguments
    if isinstance(arguments, Mapping):
        # the main argument first: a value that writes the action out (a command), wherever the
        # call put it (a model writes `{"description": ..., "command": ...}` as often as not)
        main = [k for k in arguments if k in _COMMAND_KEYS][:1]
        values = [arguments[k] for k in (*main, *(k for k in arguments if k not in main)) if arguments[k] is not None]
        body = _plain(values[0]) if len(values) == 1 else " ".join(_quoted(v) for v in values)
    elif arguments is None:
        body = ""
    else:
        body = _plain(arguments)
    return " ".join(p for p in (tool, body) if p)


def _openai_calls(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c["function"] for m in record.get("messages") or [] if isinstance(m, Mapping)
            for c in m.get("tool_calls") or [] if isinstance(c, Mapping) and isinstance(c.get("function"), Mapping)]


def _atif_calls(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [{"name": c.get("function_name"), "arguments": c.get("arguments")} for st in record.get("steps") or []
            if isinstance(st, Mapping) for c in st.get("tool_calls") or [] if isinstance(c, Mapping)]


def _first_key(arguments: Any) -> str | None:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return None
    return next(iter(arguments), None) if isinstance(arguments, Mapping) else None


def _one_command_tool(world: PlantedWorld) -> bool:
    """Whether every non-finishing call of the world is to one tool whose first argument
    already writes the action out (``bash(command=...)``, ``computer(action=...)``, or the
    reader's own :data:`~mechanism.core.actions.GENERIC_TOOL` for a ReAct action written without
    brackets, ``Action: go north``)."""
    if isinstance(world, World) and world.format in NATIVE_FORMATS:
        calls = _openai_calls if world.format == "openai" else _atif_calls
        pairs = [(str(c.get("name")), _first_key(c.get("arguments"))) for rec in world.records for c in calls(rec)]
    else:
        pairs = [(s["tool"], _first_key(s["arguments"])) for steps in world.runs["steps"].to_list()
                 for s in steps or [] if s["tool"] is not None]
    pairs = [(n, k) for n, k in pairs if n.lower() not in _FINISH]
    names = {n for n, _ in pairs}
    return len(names) == 1 and (names == {GENERIC_TOOL} or all(k in _COMMAND_KEYS for _, k in pairs))


class _HarnessOrder:
    """A call's arguments in the order a harness writes its tool's: the order of the tool's first
    call (a harness writes a tool's arguments as the tool declares them, whatever order the model
    gave them in), any key that call lacked after them in the call's own order."""

    def __init__(self) -> None:
        self._keys: dict[str, list[str]] = {}

    def __call__(self, name: Any, arguments: Any) -> Any:
        parsed = _arguments_object(arguments)
        if not isinstance(parsed, Mapping):
            return arguments
        known = self._keys.setdefault(str(name), [])
        known.extend(k for k in parsed if k not in known)
        return {k: parsed[k] for k in known if k in parsed}


# How one call is re-logged: its tool's name and arguments (as given) -> the new call's arguments object
CallRewrite = Callable[[Any, Any], dict[str, Any]]


def _rewrite_openai(record: Mapping[str, Any], tool: str, arguments_of: CallRewrite) -> dict[str, Any]:
    """An ``openai`` record with every call but the harness's own (:data:`_FINISH`) made a call of
    ``tool`` with ``arguments_of(name, arguments)``, and the results of those calls named ``tool``."""
    rec = copy.deepcopy(dict(record))
    rewritten: set[str] = set()
    for m in rec.get("messages") or []:
        if not isinstance(m, dict):
            continue
        for call in m.get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict) or str(fn.get("name")).lower() in _FINISH:
                continue
            fn["arguments"] = json.dumps(arguments_of(fn.get("name"), fn.get("arguments")), ensure_ascii=False)
            fn["name"] = tool
            if isinstance(call.get("id"), str):
                rewritten.add(call["id"])
        fc = m.get("function_call")
        if isinstance(fc, dict) and str(fc.get("name")).lower() not in _FINISH:  # the legacy single call
            fc["arguments"] = json.dumps(arguments_of(fc.get("name"), fc.get("arguments")), ensure_ascii=False)
            fc["name"] = tool
        if m.get("role") in ("tool", "function") and "name" in m and (
                m.get("tool_call_id") in rewritten or str(m.get("name")).lower() not in _FINISH):
            m["name"] = tool
    return rec


def _rewrite_atif(record: Mapping[str, Any], tool: str, arguments_of: CallRewrite) -> dict[str, Any]:
    """An ``atif`` record rewritten as :func:`_rewrite_openai` rewrites an ``openai`` one."""
    rec = copy.deepcopy(dict(record))
    for st in rec.get("steps") or []:
        if not isinstance(st, dict):
            continue
        for call in st.get("tool_calls") or []:
            if not isinstance(call, dict) or str(call.get("function_name")).lower() in _FINISH:
                continue
            call["arguments"] = arguments_of(call.get("function_name"), call.get("arguments"))
            call["function_name"] = tool
    return rec


def _from_runs(world: PlantedWorld, tool: str, field: str, with_tool: bool) -> list[dict[str, Any]]:
    """OpenAI records of the world's canonical runs, every step one ``tool`` call."""
    records = []
    ordered = _HarnessOrder()
    for i, row in enumerate(world.runs.iter_rows(named=True)):
        messages: list[dict[str, Any]] = [{"role": "user", "content": row["question"] or ""}]
        for j, step in enumerate(row["steps"] or []):
            if step.get("user"):
                messages.append({"role": "user", "content": step["user"]})
            cid = f"call_{i}_{j}"
            messages.append({"role": "assistant", "content": step.get("thought") or "", "tool_calls": [
                {"id": cid, "type": "function",
                 "function": {"name": tool, "arguments": json.dumps(
                     {field: command_text(step["tool"] if with_tool else None,
                                          ordered(step["tool"], step.get("arguments")))},
                     ensure_ascii=False)}}]})
            messages.append({"role": "tool", "tool_call_id": cid, "name": tool,
                             "content": step.get("observation") or ""})
        if row["answer"] is not None:
            messages.append({"role": "assistant", "content": row["answer"]})
        rec = {"arm": row["arm"], "question_id": row["question_id"], "sample_id": row["sample_id"],
               "gold": list(row["gold"] or []), "correct": row["correct"], "messages": messages}
        for optional in ("category", "t_cap", "score"):  # the canonical optional columns the readers take back
            if row.get(optional) is not None:
                rec[optional] = row[optional]
        records.append(rec)
    return records


def _check_not_harness(tool: str) -> None:
    """A one-line error where ``tool``, the tool re-logged calls go through, is one of the
    harness's own (:data:`_FINISH`): its calls would be read as the answer or the agent's words."""
    if tool.lower() in _FINISH:
        raise InputError(f"`{tool}` is a finishing or message tool's name (its calls would be read as the answer)",
                         field="tool")


def as_generic_action(world: PlantedWorld, tool: str = "act", field: str = "command", *,
                      with_tool: bool | None = None) -> World:
    """The world's episodes logged through one generic tool, ``tool(field="<tool> <values>")``.

    Parameters
    ----------
    world
        A planted world: a :class:`~mechanism.datasets.worlds.World` in any format, or any
        :class:`~mechanism.datasets.worlds.PlantedWorld` (its ``runs`` are re-logged).
    tool, field
        The generic tool's name and its one argument.
    with_tool
        Write each call's tool name at the start of the command; ``None`` (default): unless
        the world calls one tool only and that tool's first argument writes the action out
        (``command``, ``cmd``, ``action``, ``code``, ``script``: ``bash``, ``computer``), whose
        command is then its argument values alone.

    Returns
    -------
    World
        Named ``<name>_<tool>``, with the same ``truth`` and ``planted``; in the world's format
        for ``openai`` and ``atif`` worlds (:data:`NATIVE_FORMATS`), else in ``openai``.

    Raises
    ------
    InputError
        When ``tool`` or ``field`` is empty, or ``tool`` is a finishing or message tool's name.

    Examples
    --------
    >>> from mechanism.datasets.worlds import service
    >>> w = as_generic_action(service(n_questions=2, n_samples=1))
    >>> w.name, w.format, sorted({s["tool"] for steps in w.runs["steps"] for s in steps})
    ('service_act', 'openai', ['act'])
    """
    if not tool or not field:
        raise InputError("the generic tool and its field must be named", field="tool" if not tool else "field")
    _check_not_harness(tool)
    if with_tool is None:
        with_tool = not _one_command_tool(world)
    name = f"{getattr(world, 'name', None) or type(world).__name__.lower()}_{tool}"
    if isinstance(world, World) and world.format in NATIVE_FORMATS:
        rewrite = _rewrite_openai if world.format == "openai" else _rewrite_atif
        ordered = _HarnessOrder()
        records = [rewrite(rec, tool, lambda name, raw: {field: command_text(name if with_tool else None,
                                                                             ordered(name, raw))})
                   for rec in world.records]
        fmt = world.format
    else:
        records, fmt = _from_runs(world, tool, field, with_tool), "openai"
    return World(name=name, format=fmt, records=records, truth=world.truth.clone(),
                 planted=copy.deepcopy(world.planted))


def _arguments_object(raw: Any) -> Any:
    """A call's arguments as an object where they are one (JSON text parsed), else as given."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def as_dispatched(world: World, tool: str = "call_tool", name_field: str = "name",
                  arguments_field: str = "arguments", *, arguments_as_text: bool = False) -> World:
    """The world's episodes logged through one dispatcher, ``tool(name_field=<tool>,
    arguments_field={...})``, as MCP clients and plugin harnesses log calls
    (``call_tool(name="search", arguments={"query": "Paris"})``; Cline's ``use_mcp_tool``).

    Parameters
    ----------
    world
        A planted world in ``openai`` or ``atif`` format (:data:`NATIVE_FORMATS`).
    tool, name_field, arguments_field
        The dispatcher's name, the field naming the tool it runs and the field holding that
        tool's arguments.
    arguments_as_text
        Write the arguments as JSON text (as Cline does) rather than as an object.

    Returns
    -------
    World
        Named ``<name>_<tool>``, in the world's format, with the same ``truth`` and ``planted``.

    Raises
    ------
    InputError
        When a name is empty or the two fields are one, ``tool`` is a finishing or message tool's name, or
        the world is in another format.

    Examples
    --------
    >>> from mechanism.datasets.worlds import service
    >>> w = as_dispatched(service(n_questions=2, n_samples=1))
    >>> w.name, sorted({s["tool"] for steps in w.runs["steps"] for s in steps})
    ('service_call_tool', ['call_tool'])
    """
    if not tool or not name_field or not arguments_field or name_field == arguments_field:
        raise InputError("the dispatcher, its name field and its arguments field must be named, the two fields apart",
                         field="tool" if not tool else "name_field")
    _check_not_harness(tool)
    if world.format not in NATIVE_FORMATS:
        raise InputError(f"as_dispatched rewrites {' and '.join(NATIVE_FORMATS)} worlds, not {world.format!r}",
                         field="world")

    def dispatch(name: Any, raw: Any) -> dict[str, Any]:
        args = _arguments_object(raw)
        return {name_field: name, arguments_field: json.dumps(args, ensure_ascii=False) if arguments_as_text else args}

    rewrite = _rewrite_openai if world.format == "openai" else _rewrite_atif
    records = [rewrite(rec, tool, dispatch) for rec in world.records]
    return World(name=f"{world.name}_{tool}", format=world.format, records=records, truth=world.truth.clone(),
                 planted=copy.deepcopy(world.planted))
