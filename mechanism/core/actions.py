"""Moves from any action interface: a generic tool read as verb + object.

Many agents act through one tool whose argument names the action: ``computer(action=
"left_click", coordinate=[..])`` (computer use), ``bash(command="grep -n foo src")`` (the
program is the verb), ``execute(code=...)``, a text game's ``act(command="go north")``,
request tools such as ``http_get(url)`` or ``request(method, url)`` (method and resource
are the verb, ids in the path the object). Read by tool name alone, every such trajectory is
``act > act > act`` and every strategy collapses into one. So a call of a generic tool is
read as the call of a tool named by its *verb*, with the rest of the argument as the
object, and the move grammar (:mod:`mechanism.analysis.segmentation`) applies to it unchanged.

Which tools are generic is decided from the table, never from a list of tool names
(:func:`detect_action_tools`): a tool whose calls carry an action field (``action``,
``command``, ``cmd``, ``code``, ``method``, ``url`` ...; or its whole text argument) is
generic when the verbs that field starts with form a small vocabulary shared across
questions: the verbs met in at least :data:`MIN_VERB_QUESTIONS` questions cover at least
:data:`MIN_VERB_COVERAGE` of the tool's calls, at most :data:`MAX_VERBS` of the commonest of
them do, and there are at least two. A field of another name is looked at where it is the
call's only text (a Lean prover's ``run_tactic(proof_state=3, tactic="rw [h] at h2")``) and
read where it holds a command line, an object after its verb on at least
:data:`MIN_OBJECT_SHARE` of the calls: a parameter chosen from a few words
(``move(direction="up")``) is a typed tool's. A typed tool re-logged through a generic one, its
name first (``act(command='run_tactic 3 "simp [h]"')``), is read likewise: a verb of a generic
tool whose one text argument holds a command line by the same tests is read by that command
(:func:`read_nested`; the detection names it :data:`NESTED_FIELD`). A search query's
first word is an entity of its question, and a tool named like a search is never generic; ``go``, ``take``,
``grep``, ``left_click`` recur on every question. Verbs that occur only on a question or two
are no part of that shared vocabulary: their calls count against the tool when it is judged,
and each is still read as its own verb once it is. A key
press is named by its key (``key return``, ``key escape``, ``key ctrl+s``), as a program by
its subcommand (``git log``): pressing Return and pressing Escape are two actions. A program
given through a ``code`` field, or written out in any field, is named by what it does
(:func:`_code_verb`: the libraries it imports, whether it loops or asserts), not by the first
function it happens to call. Any other action is read as a shell reads a command line
(:func:`_shell_verb`) whatever its field is called (``bash(command=...)``, ``step(action=...)``,
``env(input=...)``, a bare ReAct action): a field's name is the harness's choice, and a
vocabulary of plain actions (``go to sofa 1``, ``left_click``) reads the same either way.

A *dispatcher* runs the tool it names with that tool's arguments beside: an MCP client's
``call_tool(name="search", arguments={"query": "Paris"})``, Cline's ``use_mcp_tool(server_name,
tool_name, arguments)``. Its calls carry one word naming a tool and one object (or JSON text of
one) of arguments; it is read as a dispatcher where the tools named take their own arguments
(:data:`DISPATCH_SCHEMA_SHARE` of the calls take the commonest argument names of their tool, and
two tools at least take different ones: a typed tool's word parameter beside an object of fields,
``update(status="closed", fields={...})``, leaves the fields as varied whatever the word), or
where it always names one tool. Each call is then read as the call of the tool it names
(:func:`dispatched_arguments`), and a tool it runs that is generic in turn (``call_tool(name=
"bash", arguments={"command": "pytest -q"})``) is found and read as it would be typed.

A multi-agent system passes control by a handoff, a call named after the agent it hands to
(``transfer_to_refunds``, ``transfer_back_to_triage``: the OpenAI Agents SDK, Swarm, LangGraph's
supervisor, AutoGen). Where a table hands to two agents or more, every such call (a typed tool, or
a generic tool's verb: ``act(command="transfer_to_refunds")``) is read as one verb,
``transfer_to``, whose object is the agent (:func:`read_handoff`): which agent the question
needs is then the call's object, not another tool. One alone (``transfer_to_human_agents``) keeps
its name. In such a table an agent consulted as a tool, its answer coming back (the Agents SDK's
``agent.as_tool``, AutoGen's ``AgentTool`` named after its agent, a tool ``ask_<agent>``), is read
likewise as one verb, ``consult``, whose object is the agent (:func:`read_consult`).

``action_field=`` of :class:`~mechanism.StrategySpace` and :func:`mechanism.analysis.segmentation.render`
sets the reading by hand (``{"bash": "command"}``) or turns it off (``None``).
"""
from __future__ import annotations

import ast
import builtins
import functools
import json
import keyword
import re
import shlex
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from mechanism.core.errors import InputError

# How generic tools are read: detected ("auto"), named ({tool: field}) or not at all (None).
ActionField = Literal["auto"] | Mapping[str, str] | None

__all__ = ["ACTION_FIELDS", "AGENT_FIELDS", "ActionField", "CONSULT_FIELD", "CONSULT_VERB", "DISPATCHED",
           "GENERIC_TOOL", "HANDOFF_FIELD", "HANDOFF_VERB", "IN_PLACE_MARK", "MARK_FIELDS", "MAX_AGENTS",
           "MAX_AGENT_TOOLS", "MAX_VERB_CHARS", "NESTED_FIELD", "QUERY_KEYS", "TO_FILE_MARK", "check_action_field",
           "consulted_agent", "detect_action_tools", "dispatched_arguments", "dispatched_call", "handoff_agent",
           "main_text", "mend_typos", "nested_text", "one_typo_apart", "read_action", "read_agent_call", "read_consult",
           "read_handoff", "read_nested", "tool_name", "verb_object"]

# Argument names that carry the action of a generic tool, in the order they are tried. A
# request's `url`/`path` comes after `method` so that `request(method, url)` is read by both.
ACTION_FIELDS = ("action", "command", "cmd", "code", "method", "operation", "op", "url", "path", "endpoint",
                 "input", "keys", "text", "sql", "statement", "sql_query", "query")
# Fields whose value is what an agent asks about, never an action (a search query's first word
# is an entity of the question), unless it is a SQL statement (`read_query(query="SELECT ...")`).
_CONTENT_FIELDS = frozenset({"query", "q", "question", "search", "search_query", "prompt", "message", "content"})
_NAMED_FIELDS = frozenset(ACTION_FIELDS) | _CONTENT_FIELDS
# The tool a reader gives actions written without one (ReAct's `Action: go north`).
GENERIC_TOOL = "act"
MIN_VERB_QUESTIONS = 3  # a verb is a verb when agents use it on several questions
MIN_VERB_COVERAGE = 0.8  # of the tool's calls whose verb is such a shared one
MAX_VERBS = 40  # a vocabulary whose commonest verbs this many do not cover is free text, not actions
MIN_TOOL_SHARE = 0.2  # a generic tool carries a real part of the calls
# A table naming more agents than this in its `transfer_to_<x>` calls is no multi-agent system
# (those are 2-10 agents): its handoffs are read by name. It also bounds what a saved space
# records (:data:`MAX_AGENT_TOOLS`).
MAX_AGENTS = 64
MAX_VERB_CHARS = 40
# A field of another name (`run_tactic(tactic="rw [h] at h2")`, `env(step="go north")`) is read
# as the action where its text is a command line: a verb met across questions, and an object
# after it on at least this share of the calls. A value chosen from a few words (`direction="up"`,
# `order="asc"`, `table="orders"`) is a parameter of a typed tool, never its action: read as
# verbs, the Sokoban agent's directions gave 0.225 against 0.562 by the tool's name.
MIN_OBJECT_SHARE = 0.3
MAX_OTHER_FIELDS = 32  # fields of other names tracked per tool (bounds the memory of the detection)
#: Marks a read call that runs a SQL statement (:func:`mend_typos` reads its failed attempts).
STATEMENT = "_statement"
#: A call read as the call a dispatcher runs (:func:`read_action`): the tool it runs may be
#: generic itself, and is then read again.
DISPATCHED = "_dispatched"
#: Marks a call read from the text a generic tool was given (:func:`read_action`) whose values
#: were quoted, several of them written out (`Edit a.py "x = 1" "x = 2"`): their order is the
#: writer's, so two such calls are the same call where they hold the same words, as two typed
#: calls are where they hold the same values in any order. Not a statement, whose words' order
#: is what it asks, nor a plain action (`take plate 2 from cabinet 1`).
WRITTEN = "_written"
TEXT_FIELD = "*"  # the call's whole text argument (no JSON fields): `act[go north]`, `Action: go north`

# Verbs of a key press, named by the key they press (`_pressed`), and what a key name is: a
# key or a combination of keys (`Return`, `ctrl+shift+s`, `F2`).
_KEY_VERBS = frozenset({"key", "press", "key_press", "keypress", "press_key", "hotkey"})
_KEY_NAME = re.compile(r"[A-Za-z0-9_]{1,20}(?:\+[A-Za-z0-9_]{1,20}){0,4}")
# Programs whose first word after them is the command (`git diff`, `pip install`).
_SUBCOMMAND_PROGRAMS = frozenset({"git", "pip", "pip3", "npm", "yarn", "pnpm", "cargo", "go", "docker", "kubectl",
                                  "apt", "apt-get", "conda", "uv", "poetry", "gh", "brew", "systemctl", "make"})
# Programs whose name is also a word of plain commands (a text game's `go to sofa 1`, `go north`):
# a subcommand only when it is one of theirs, so `go to` stays the verb `go` whatever field holds it
_CLOSED_SUBCOMMANDS = {"go": frozenset({"bug", "build", "clean", "doc", "env", "fix", "fmt", "generate", "get",
                                        "install", "list", "mod", "run", "telemetry", "test", "tool", "version",
                                        "vet", "work"})}
_SHELL_PREFIXES = frozenset({"sudo", "env", "time", "nohup", "timeout", "exec", "command"})
# Runners that run a program in a project's environment (`uv run pytest`, `poetry run pytest`,
# `conda run -n env pytest`, `npx eslint`): the program they run is the action, as after `sudo`.
_RUNNERS = frozenset({("uv", "run"), ("poetry", "run"), ("pipenv", "run"), ("pdm", "run"), ("hatch", "run"),
                      ("rye", "run"), ("conda", "run"), ("mamba", "run"), ("micromamba", "run"), ("pipx", "run"),
                      ("pnpm", "exec"), ("npm", "exec"), ("yarn", "exec"), ("bundle", "exec")})
_RUNNER_PROGRAMS = frozenset({"npx", "uvx", "bunx", "pnpx"})
# A runner's options that take a value as the next word (`conda run -n env`, `uv run --with x`).
_RUNNER_VALUED = frozenset({"-n", "--name", "-p", "--prefix", "--with", "--python", "-e", "--env", "--package",
                            "--directory", "--project", "--env-file", "--group", "--extra"})
# Programs that print a file unless told to edit it in place (`sed -n 10,30p` reads, `sed -i`
# and `perl -pi -e` write): the flag makes another action of them.
_IN_PLACE_PROGRAMS = frozenset({"sed", "perl"})
# a short cluster holding `i` (`-i`, `-pi`, `-Ei`, `-i.bak`), never a longer option that
# happens to hold one (`perl -Mstrict`)
_IN_PLACE_FLAG = re.compile(r"-[A-Za-z]{0,3}i[A-Za-z]{0,2}(\.\S*)?|-i\S*|--in-place(=\S*)?")
# Interpreters run a file (`python scripts/run.py`: the agent runs what is there) or code the
# agent writes in the call (`python3 - <<'EOF'`, `python -c`, `node -e`, `bash -c`): two actions,
# as an edit and a check are; asking their version (`python --version`) is a third.
_INTERPRETERS = frozenset({"python", "node", "ruby", "perl", "php", "lua", "bash", "sh", "zsh", "rscript"})
_INLINE_FLAGS = frozenset({"-", "-c", "-e"})
# A shell given a command rather than a script (`bash "git status -s"`, `bash uv run pytest`: a
# harness that logs every call through one tool writes the shell tool's name before its command)
# runs that command: its program is the verb, as in the shell tool's own call. A script is a path
# or a file name (`bash run.sh`, `sh ./configure`), and stays the shell's.
SHELLS = frozenset({"bash", "sh", "zsh"})
_SCRIPT_WORD = re.compile(r"[/.]")
_VERSION_FLAGS = frozenset({"--version", "-V"})
# `python3.11`, `pip3`, `node18` are one program whatever version the agent typed
_VERSIONED = re.compile(r"^(python|pip|perl|ruby|node|php|lua|java|gcc|clang)[0-9.]+$")
_SHELL_SETUP = frozenset({"cd", "export", "source", ".", "set", "pushd", "popd", "true"})
# Programs that print what they are given: with their output sent into a file (`cat <<'EOF' >
# src/a.py`, `echo x >> notes.txt`) they write it, another action than printing (`cat src/a.py`).
_PRINTERS = frozenset({"cat", "echo", "printf"})
#: What a shell program's verb ends with where it writes: a stream editor told to edit in place
#: (`sed -i`), a printer whose output goes into a file (`cat to_file`). An empty answer is how
#: these succeed (:func:`mechanism.core.failures.silent_tool`).
IN_PLACE_MARK, TO_FILE_MARK = " -i", " to_file"
_NOT_A_FILE = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_SHELL_SPLIT = re.compile(r"&&|\|\||;|\||\n")
_QUOTING = re.compile(r"['\"\\]")
# A tool named like a search takes a query, whose first word is content however often it recurs
# (the move grammar reads such calls as lookups).
RETRIEVAL_TOOL = re.compile(r"search|retriev|wiki|bm25|web|browse|google|bing|lookup_doc")
_VERB = re.compile(r"[a-z][a-z0-9_+.\-]*")
_CALL = re.compile(r"([A-Za-z_][\w.]*)\s*\(")
_SCHEME = r"[a-z][a-z0-9+.\-]*://"
_URL = re.compile(rf"^(?:{_SCHEME}[^/\s]*)?(/[^\s?#]*)?", re.I)
_ID_SEGMENT = re.compile(r"\d|^[0-9a-f\-]{12,}$|^.{25,}$", re.I)
_HTTP_METHODS = frozenset({"get", "post", "put", "patch", "delete", "head", "options"})
_URL_FIELDS = ("url", "path", "endpoint")


_TOOL_NAME = re.compile(r"[^a-z0-9_.]+")
MAX_TOOL_CHARS = 200


def tool_name(tool: str | None) -> str:
    """A tool's name as read: lower case, runs of other characters as ``_``, never truncated
    (only bounded at 200 characters against untrusted input).

    Examples
    --------
    >>> tool_name("update_reservation_flights")
    'update_reservation_flights'
    >>> tool_name("Search Wikipedia")
    'search_wikipedia'
    """
    label = _TOOL_NAME.sub("_", (tool or "tool")[:MAX_TOOL_CHARS].lower()).strip("_.")
    return label or "tool"


# argument names that hold a tool call's main text, tried in order
QUERY_KEYS = ("query", "q", "search_query", "keywords", "question", "entity", "input", "text", "url")


def main_text(args: dict[str, Any] | None, raw: str, keys: tuple[str, ...] = QUERY_KEYS) -> str | None:
    """The main text argument of a tool call.

    Parameters
    ----------
    args
        The parsed arguments object, or ``None`` when the arguments were not a JSON object.
    raw
        The arguments as given (returned when ``args`` is ``None``).
    keys
        Argument names tried first, in order.

    Returns
    -------
    str or None
        The first of ``keys`` holding a string, else the first string argument, else
        ``None`` (no string argument at all).
    """
    if args is None:
        return raw
    for key in keys:
        if isinstance(args.get(key), str):
            return args[key]
    for value in args.values():
        if isinstance(value, str):
            return value
    return None


def _parse(arguments: str | None) -> dict[str, Any] | None:
    """``arguments`` parsed where they are a JSON object (their first 20,000 characters), else ``None``."""
    value = _json_value(arguments[:20_000]) if arguments else None
    return value if isinstance(value, dict) else None


def _past_runner(words: list[str]) -> list[str]:
    """``words`` from the program an environment runner runs (``uv run``, ``poetry run``,
    ``conda run -n env``, ``npx``), its own options skipped; as they are where none leads."""
    head = words[0].rsplit("/", 1)[-1].lower() if words else ""
    if head in _RUNNER_PROGRAMS:
        rest = words[1:]
    elif len(words) > 1 and (head, words[1].lower()) in _RUNNERS:
        rest = words[2:]
    else:
        return words
    while rest and rest[0].startswith("-") and rest[0] != "--":
        rest = rest[2:] if rest[0] in _RUNNER_VALUED else rest[1:]
    if rest and rest[0] == "--":
        rest = rest[1:]
    return rest or words


def _writes_file(words: list[str]) -> bool:
    """Whether a command's words send its standard output into a file (``> f``, ``>> f``,
    ``>f``; not ``2> f``, ``>&2`` or ``> /dev/null``)."""
    for i, w in enumerate(words):
        if w in (">", ">>"):
            target = words[i + 1] if i + 1 < len(words) else ""
        elif w.startswith(">") and not w.startswith(">&"):
            target = w.lstrip(">")
        else:
            continue
        if target and target not in _NOT_A_FILE:
            return True
    return False


def _shell_command(rest: list[str]) -> tuple[str, list[str]] | None:
    """(command, other values) a shell is given to run (:data:`SHELLS`): its first word when
    that holds a whole command (``"git status -s"``), else its words from a program's name on;
    ``None`` for a script, an option or nothing."""
    if not rest or rest[0].startswith(("-", "<")):
        return None
    if any(c.isspace() for c in rest[0].strip()):
        return rest[0], rest[1:]
    if _SCRIPT_WORD.search(rest[0]) or not _VERB.fullmatch(rest[0].lower()):
        return None
    return " ".join(rest), []


def _shell_verb(command: str, nested: bool = False) -> tuple[str, str]:
    """(program, rest) of a shell command line: set-up segments (``cd x &&``) and prefixes
    (``sudo``, ``VAR=1``) skipped, ``python -m pytest`` read as ``pytest``, a program with
    subcommands as ``git diff``, a stream editor told to edit in place as ``sed -i``, an
    interpreter given code in the call as ``python inline``, a printer whose output goes into a
    file as ``cat to_file``, a shell given a command (``bash "git status"``, not a script) as
    that command's program (one level: ``nested``); the rest of the line after the program's
    segment stays in the object."""
    head = command.lstrip()[:2_000]
    if not nested and head.split(" ", 1)[0].rsplit("/", 1)[-1].lower() in SHELLS:
        try:  # the whole line's words: the command a shell is given may hold `&&` in its quotes
            inner = _shell_command(shlex.split(head, posix=True)[1:])
        except ValueError:
            inner = None
        if inner is not None:
            program, inner_rest = _shell_verb(inner[0], nested=True)
            if program:
                return program, " ".join(w for w in (inner_rest, *inner[1]) if w)
    segments = _SHELL_SPLIT.split(command[:2_000])
    for i, segment in enumerate(segments):
        try:  # without quotes or escapes a shell's words are the whitespace's (shlex is slow)
            words = shlex.split(segment, posix=True) if _QUOTING.search(segment) else segment.split()
        except ValueError:  # an unclosed quote: the words as written
            words = segment.split()
        while words and (words[0] in _SHELL_PREFIXES or re.match(r"^[A-Za-z_]\w*=", words[0])):
            words = words[1:]
        words = _past_runner(words)
        if not words or words[0] in _SHELL_SETUP:
            continue
        program = _VERSIONED.sub(r"\1", words[0].rsplit("/", 1)[-1].lower())
        rest = words[1:]
        sub = rest[0].lower() if rest else ""
        if program == "python" and len(rest) >= 2 and rest[0] == "-m":
            program, rest = rest[1].lower(), rest[2:]
        elif (program in _SUBCOMMAND_PROGRAMS and _VERB.fullmatch(sub)
              and (program not in _CLOSED_SUBCOMMANDS or sub in _CLOSED_SUBCOMMANDS[program])):
            program, rest = f"{program} {sub}", rest[1:]
        elif program in _IN_PLACE_PROGRAMS and any(_IN_PLACE_FLAG.fullmatch(w) for w in rest):
            program = f"{program}{IN_PLACE_MARK}"
        elif program in _INTERPRETERS and (not rest or rest[0] in _INLINE_FLAGS or rest[0].startswith("<<")):
            program = f"{program} inline"
        elif program in _INTERPRETERS and rest[0] in _VERSION_FLAGS:
            program = f"{program} --version"
        elif program in _PRINTERS and _writes_file(rest):
            program = f"{program}{TO_FILE_MARK}"
        # what follows on the line (`; print(...)`, a heredoc's lines) is part of the object: the
        # values it carries are where its provenance is read
        after = " ".join(s.strip() for s in segments[i + 1:] if s.strip())
        return program, " ".join([*rest, after] if after else rest)
    return "", command


#: What a path segment the task decides (:func:`request_segments`, saved with a strategy space)
#: and an id after a resource are read as in a request's verb where the task decides segments.
TASK_SEGMENT, ID_SEGMENT = "{task}", "{id}"


def _path_of(url: str) -> str:
    m = _URL.match(url.strip())
    return (m.group(1) if m else None) or ""


def _request_verb(url: str, method: str | None, task: frozenset[str] = frozenset()) -> tuple[str, str]:
    """(method + resource, ids) of a request: path segments holding digits or long codes are
    the object (``/patients/123/labs`` -> ``get patients/labs``, object ``123``).

    Where the task decides some segments (``task``: which resource a request names is the
    question's, :func:`mechanism.analysis._strategies.features.task_segments`), each is read as
    :data:`TASK_SEGMENT` and an id after a resource as :data:`ID_SEGMENT`, so the shape stays
    (a record, its sub-resource, the collection) and which resource it was goes:
    ``/invoices/7/refunds`` -> ``get {task}/{id}/{task}``.

    >>> _request_verb("/api/invoices/7/refunds", "GET", frozenset({"invoices", "refunds"}))
    ('get {task}/{id}/{task}', '7')
    """
    resource, ids = [], []
    for seg in (s for s in _path_of(url).split("/") if s):
        if _ID_SEGMENT.search(seg):
            ids.append(seg)
            if task and resource and resource[-1] != ID_SEGMENT:
                resource.append(ID_SEGMENT)
        else:
            resource.append(TASK_SEGMENT if seg.lower() in task else seg.lower())
    query = url.split("?", 1)[1] if "?" in url else ""
    verb = " ".join(v for v in ((method or "").lower(), "/".join(resource[-3:])) if v)
    return verb, " ".join(ids + ([query] if query else []))


def _method_of(name: str) -> str | None:
    """The HTTP method a name says (``http_get``, ``POST``), or ``None``."""
    return next((w for w in re.split(r"[^a-z]+", name.lower()) if w in _HTTP_METHODS), None)


def _written_request(text: str) -> tuple[str, str, str] | None:
    """(URL, method, what follows) of a request written out as a command, or ``None``: a
    method then a URL or path (``GET /api/orders/7``, ``http_request POST /api/refunds {...}``),
    or a name that says its method then one (``http_get /api/orders/7``). A path must start with
    ``/`` or a scheme, so a text game's ``get apple`` stays the verb ``get``."""
    words = text.split(maxsplit=3)
    for i in range(min(2, len(words) - 1)):
        method = _method_of(words[i]) if i == 0 or words[i].lower() in _HTTP_METHODS else None
        target = words[i + 1]
        if method and (target.startswith("/") or re.match(_SCHEME, target, re.I)):
            return target, method, " ".join(words[i + 2:])
    return None


def _call_text(field: str, arguments: str | None, query: str | None
               ) -> tuple[dict[str, Any] | None, str, dict[str, Any]]:
    """(parsed arguments, the text ``field`` holds, the other fields) of one call."""
    parsed = _parse(arguments)
    if field == TEXT_FIELD or parsed is None:
        text = (query if query is not None else arguments) or ""
        if parsed is not None and field != TEXT_FIELD:
            text = str(parsed.get(field, text))
        return parsed, text.strip(), {}
    raw = parsed.get(field)
    text = raw if isinstance(raw, str) else json.dumps(raw) if raw is not None else ""
    return parsed, text.strip(), {k: v for k, v in parsed.items() if k != field}


def _request(tool: str, field: str, parsed: dict[str, Any] | None, text: str) -> tuple[str, str | None, str] | None:
    """(URL, method, what follows) of a call that makes a request, else ``None``: a method field
    beside a URL, a URL field (its method what the tool's name says: ``http_get``), or a request
    written out through a text tool."""
    if field == "method" and parsed is not None:
        return next((str(parsed[k]) for k in _URL_FIELDS if k in parsed), ""), text, ""
    if field in _URL_FIELDS:
        return text, _method_of(tool), ""
    return _written_request(text)


#: A request's query parameter names kept as move tokens at most (a hostile URL's thousand
#: parameters would otherwise make a thousand tokens of one call).
MAX_QUERY_KEYS = 16


def _query_keys(url: str) -> tuple[str, ...]:
    """The names of a URL's query parameters, lower case, sorted, each once
    (``?page=2&per_page=50`` -> ``('page', 'per_page')``)."""
    query = url.split("?", 1)[1].split("#", 1)[0] if "?" in url else ""
    keys = sorted({k.split("=", 1)[0].strip().lower()[:MAX_VERB_CHARS] for k in query[:2_000].split("&")} - {""})
    return tuple(keys[:MAX_QUERY_KEYS])


def request_segments(step: Mapping[str, Any], field: str) -> list[str]:
    """The resource segments of the path a call of a generic tool read through ``field``
    requests (ids left out, lower case), ``[]`` where it makes no request.

    >>> request_segments({"tool": "http_get", "arguments": '{"url": "/api/v2/Orders/W1/refunds"}'}, "url")
    ['api', 'orders', 'refunds']
    """
    if field in AGENT_FIELDS or field == NESTED_FIELD:
        return []
    parsed, text, _ = _call_text(field, step.get("arguments"), step.get("query"))
    request = _request(tool_name(step.get("tool")), field, parsed, text)
    if request is None:
        return []
    return [seg.lower() for seg in _path_of(request[0]).split("/") if seg and not _ID_SEGMENT.search(seg)]


def verb_object(tool: str, field: str, arguments: str | None, query: str | None,
                task: frozenset[str] = frozenset()) -> tuple[str, str, dict[str, Any]]:
    """(verb, object, other fields) of one call of a generic tool read through ``field``; a
    request's path segments in ``task`` read as the task's (:func:`_request_verb`).

    Examples
    --------
    >>> verb_object("bash", "command", '{"command": "cd repo && grep -n foo src/a.py"}', None)[:2]
    ('grep', '-n foo src/a.py')
    >>> verb_object("bash", "command", '{"command": "python3.11 -m pytest -x tests"}', None)[:2]
    ('pytest', '-x tests')
    >>> [verb_object("bash", "command", json.dumps({"command": c}), None)[0]
    ...  for c in ("uv run pytest -x", "poetry run python -m pytest", "conda run -n dev pytest", "npx eslint .",
    ...            "uv pip install -e .")]
    ['pytest', 'pytest', 'pytest', 'eslint', 'uv pip']
    >>> [verb_object("bash", "command", json.dumps({"command": c}), None)[0]
    ...  for c in ("sed -n 10,30p a.py", "sed -i 's/x/y/' a.py", "perl -pi -e 's/x/y/' a.py")]
    ['sed', 'sed -i', 'perl -i']
    >>> [verb_object("bash", "command", json.dumps({"command": c}), None)[0]
    ...  for c in ("python3 scripts/run.py data.csv", "python3 - <<'EOF'\\nprint(1)\\nEOF", "python -c 'print(1)'",
    ...            "python3 --version", "bash -c 'ls'")]
    ['python', 'python inline', 'python inline', 'python --version', 'bash inline']
    >>> verb_object("computer", "action", '{"action": "left_click", "coordinate": [10, 20]}', None)
    ('left_click', '', {'coordinate': [10, 20]})
    >>> verb_object("act", "*", None, "go north")[:2]
    ('go', 'north')
    >>> [verb_object("act", "command", json.dumps({"command": c}), None)[:2] for c in ("go to sofa 1", "go test ./...")]
    [('go', 'to sofa 1'), ('go test', './...')]
    >>> verb_object("request", "method", '{"method": "GET", "url": "https://x.org/api/patients/123/labs"}', None)[:2]
    ('get api/patients/labs', '123')
    >>> verb_object("http_get", "url", '{"url": "/orders/W1?full=1"}', None)[:2]
    ('get orders', 'W1 full=1')
    """
    return _read_call(tool, field, arguments, query, task)[:3]


def _read_call(tool: str, field: str, arguments: str | None, query: str | None, task: frozenset[str] = frozenset()
               ) -> tuple[str, str, dict[str, Any], tuple[str, ...], bool, dict[str, Any] | None, bool]:
    """:func:`verb_object`'s (verb, object, other fields), a request's query parameter names
    (:func:`_query_keys`) or a statement's clauses (:func:`_sql_verb`; ``()`` for any other
    call), whether the call runs a SQL statement, the parsed arguments (what
    :func:`read_action` reads a dispatcher's call by), and whether the text quotes its values
    (:data:`WRITTEN`): one parse of the call for all."""
    parsed, text, rest_fields = _call_text(field, arguments, query)
    quoted = _QUOTING.search(text) is not None
    request = _request(tool, field, parsed, text)
    if request is not None:  # a request, typed or written out through a text tool
        url, method, after = request
        verb, obj = _request_verb(url, method, task)
        if field == "method":
            rest_fields = {k: v for k, v in rest_fields.items() if k not in _URL_FIELDS}
        body = _json_value(after) if after else None
        if body is not None:
            # a JSON body written after the URL is the body a typed request sends: its values,
            # not its keys and quotes run together with the object
            rest_fields, after = {**rest_fields, "body": body}, ""
        obj = " ".join(v for v in (obj, after) if v)
        return verb[:MAX_VERB_CHARS], obj, rest_fields, _query_keys(url), False, parsed, quoted
    statement = _statement(text)
    if statement is not None:  # a statement, whatever field holds it: read by what it does
        verb, obj, keys = _sql_verb(statement)
        return verb, obj, rest_fields, keys, True, parsed, quoted
    # A program or a command line is read as one whatever the field holding it is called: the
    # name is the harness's (`bash(command=...)`, `step(action=...)`, `env(input=...)`, a bare
    # ReAct action), and a vocabulary of plain actions (`go to sofa 1`, `left_click`) reads the
    # same as a command line as it does by its first word.
    if field == "code" or _PYTHON_START.match(text):
        return _code_verb(text)[:MAX_VERB_CHARS], text, rest_fields, (), False, parsed, quoted
    head, _, after = text.partition(" ")
    if _json_value(after) is not None:
        # a typed tool's structured argument written out after its name (`TodoWrite [{...}]`):
        # JSON, whose quotes a shell's reading would strip, keys and values run together
        return head.lower()[:MAX_VERB_CHARS], after.strip(), rest_fields, (), False, parsed, quoted
    program, rest = _shell_verb(text)
    if program:
        program, rest = _pressed(program, rest, rest_fields)
        return program[:MAX_VERB_CHARS], rest, rest_fields, (), False, parsed, quoted
    head, rest = _pressed(*(part.strip() for part in text.partition(" ")[::2]), rest_fields)
    return head.lower()[:MAX_VERB_CHARS], rest, rest_fields, (), False, parsed, quoted


# A program's verb (`_code_verb`): the names it calls that say nothing of what it does (Python's
# built-in functions), the modules it imports (`from a.b import c`, `import a, b as c`), and
# whether it loops (a `for` / `while` statement, or a comprehension's `for x in`: bounded, so a
# line of a thousand `for`s is one linear read) or asserts
_BUILTINS = frozenset(dir(builtins))
_MODULE = r"[A-Za-z_][\w.]*"
_IMPORT = re.compile(rf"^[ \t]*(?:from[ \t]+({_MODULE})[ \t]+import\b"
                     rf"|import[ \t]+({_MODULE}(?:[ \t]*,[ \t]*{_MODULE})*))", re.M)
# A command that is a Python program, not a shell line: it begins with an import, a definition,
# an `assert`, a `print(...)`, a block opener ending in `:` or an assignment with a space before
# its `=` (a shell's `VAR=1 cmd` has none): a program logged through one `act(command=...)` tool
_PYTHON_START = re.compile(r"\s*(?:#[^\n]*\n\s*)*(?:import[ \t]+[A-Za-z_]|from[ \t]+[\w.]+[ \t]+import\b"
                           r"|(?:def|class|assert)[ \t]|print[ \t]*\(|(?:for|while|if|with|try)\b[^\n]*:[ \t]*(?:\n|$)"
                           r"|[A-Za-z_]\w*(?:[ \t]*,[ \t]*[A-Za-z_]\w*)*[ \t]+[-+*/%]?=[^=])")
_LOOP = re.compile(r"^[ \t]*(?:for|while)\b|\bfor\s+[\w, ()]{1,80}?\s+in\b", re.M)
_ASSERT = re.compile(r"^[ \t]*assert\b", re.M)


def _json_value(text: str) -> dict[str, Any] | list[Any] | None:
    """``text`` parsed where it is a JSON object or array, else ``None``."""
    text = text.strip()
    if not text.startswith(("{", "[")) or len(text) > PROGRAM_MAX_CHARS:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, (dict, list)) else None


def _code_verb(code: str) -> str:
    """What a program does, as the verb of a call that runs it: the agent's tool it calls
    (:func:`program_calls`: CodeAct), or :data:`PROGRAM_OF_TOOLS` where it calls several (which
    one runs first is the data's order, the question's; that one program bundles several tools
    is the way of working); else the libraries it imports (their top-level names, sorted:
    ``sympy``, ``itertools math``), else the first function it calls that is not a built-in
    (``read_csv``), else ``code``; then ``loop`` where it iterates and ``assert`` where it
    asserts.

    Examples
    --------
    >>> _code_verb("from sympy import symbols, solve\\nx = symbols('x')\\nprint(solve(x**2 - 4))")
    'sympy'
    >>> _code_verb("import math\\nprint(sum(1 for n in range(1, 100) if math.gcd(n, 12) == 1))")
    'math loop'
    >>> _code_verb('df = pd.read_csv("x.csv")'), _code_verb("print(2 ** 10)"), _code_verb("x = 1")
    ('read_csv', 'code', 'code')
    >>> _code_verb("s = check_stock(sku='S1')\\nprint(quote_shipping(units=s))"), _code_verb("print(get_price('S1'))")
    ('several_tools', 'get_price')
    """
    code = code[:20_000]
    modules = sorted({name.strip().split(".")[0] for m in _IMPORT.finditer(code)
                      for name in (m.group(1) or m.group(2) or "").split(",") if name.strip()} - {"__future__"})
    if modules:
        head = " ".join(modules)
    else:
        head = next((c for c in (c.rsplit(".", 1)[-1] for c in _CALL.findall(code))
                     if c not in _BUILTINS and not keyword.iskeyword(c)), "code")
    marks = [w for w, pattern in (("loop", _LOOP), ("assert", _ASSERT)) if pattern.search(code)]
    tools = _program_tools(code)
    if tools:  # it calls the agent's tools (CodeAct): by them, not by the first function met
        head = tools[0] if len(tools) == 1 else PROGRAM_OF_TOOLS
    return " ".join([head.lower(), *marks])


# A program that calls the agent's tools as Python functions (CodeAct, smolagents' CodeAgent):
# the functions it calls that it neither defines, assigns nor imports, and Python does not provide
_FINISHING = frozenset({"final_answer"})  # what a program ends with, never a tool's call
#: The longest program read for its calls (a bounded parse: a longer one is read by its text).
PROGRAM_MAX_CHARS = 20_000
#: The verb of a program that calls several of the agent's tools (:func:`_code_verb`).
PROGRAM_OF_TOOLS = "several_tools"
# what runs its body again and again: a call inside one is made for each item
_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


# A name called as a function, not as a method (`x.f(`), and a name a program gives a meaning to
# itself (imports, definitions, assignments): read first, so that the programs whose every call is
# Python's, a method or one of their own (most programs) are never parsed
_BARE_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)[ \t]*\(")
_OWN_NAME = re.compile(r"\b(?:def|class)[ \t]+([A-Za-z_]\w*)|\bimport[ \t]+([^\n]*)|^[ \t]*([A-Za-z_]\w*)[ \t]*=[^=]",
                       re.M)


def _free_call_candidates(code: str) -> bool:
    """Whether a program may call a function it does not define, assign or import (cheap, by
    text; :func:`program_calls` decides by parsing)."""
    called = set(_BARE_CALL.findall(code)) - _BUILTINS - _FINISHING
    called = {n for n in called if not keyword.iskeyword(n)}
    if not called:
        return False
    own: set[str] = set()
    for defined, imported, assigned in _OWN_NAME.findall(code):
        own.update(re.findall(r"[A-Za-z_]\w*", imported) if imported else [defined or assigned])
    return bool(called - own)


@functools.lru_cache(maxsize=1024)  # one program is read for its verb by the detection and by the reading
def _program_tools(code: str) -> tuple[str, ...]:
    """The distinct tools :func:`program_calls` finds, in the order first called."""
    return tuple(dict.fromkeys(name for name, _ in program_calls(code)))


def program_calls(code: str) -> list[tuple[str, bool]]:
    """The agent's tools a program calls as Python functions (CodeAct), in the order they run:
    (function, whether a loop runs it). A tool is a function the program calls but neither
    defines, assigns nor imports, and that Python does not provide; none where the program does
    not parse, imports with ``*`` or is longer than :data:`PROGRAM_MAX_CHARS`. Read with
    :mod:`ast`, never run.

    Examples
    --------
    >>> program_calls("ws = list_warehouses(country='DE')\\nfor w in ws:\\n    print(check_stock(warehouse=w))")
    [('list_warehouses', False), ('check_stock', True)]
    >>> program_calls("quote(units=stock(sku='S1'))")  # the argument's call runs first
    [('stock', False), ('quote', False)]
    >>> program_calls("from math import comb\\nprint(comb(5, 2))"), program_calls("x = sorted([2, 1])")
    ([], [])
    """
    if len(code) > PROGRAM_MAX_CHARS or not _free_call_candidates(code):
        return []
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    bound: set[str] = set()
    calls: list[tuple[int, int, str, bool]] = []
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:  # iterative: a deeply nested program costs no recursion
        node, looped = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return []
                bound.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            # ordered by where the call ends: an argument's call runs before the call it is given to
            calls.append((node.end_lineno or 0, node.end_col_offset or 0, node.func.id, looped))
        inner = looped or isinstance(node, _LOOPS)
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
    return [(name, looped) for _, _, name, looped in sorted(calls)
            if name not in bound and name not in _BUILTINS and name not in _FINISHING]


# A SQL statement (`_sql_verb`): how one begins (a comment or two, then a statement keyword in
# a form plain words do not take: `select` with a `from`, a star, a number or a function call,
# `insert into`, `update x set`, ...), and what it is made of once string literals and comments
# are out of the way (every search below runs on a bounded text, each pattern linear)
_SQL_START = re.compile(
    r"\s*(?:--[^\n]*\n\s*|/\*[^*]{0,500}\*/\s*)*\(?\s*(?:"
    r"select\s+(?:distinct\s+)?(?:\*|\d|[A-Za-z_][\w.]*\s*\(|[^;]{0,2000}?\bfrom\s+[\w\"`\[])"
    r"|with\s+(?:recursive\s+)?[\w\"`]+\s*(?:\([^)]{0,500}\)\s*)?as\s*\("
    r"|insert\s+(?:or\s+\w+\s+)?into\s|update\s+[\w.\"`\[]+\s+set\s|delete\s+from\s"
    r"|(?:create|drop)\s+(?:temp(?:orary)?\s+)?(?:table|view|index|unique\s+index)\b|alter\s+table\s"
    r"|pragma\s+\w|explain\s+(?:query\s+plan\s+)?select\b|show\s+(?:full\s+)?(?:tables|columns|databases|create)\b"
    r"|desc(?:ribe)?\s+[\w.\"`]+\s*;?\s*$)",
    re.I)
_SQL_MAX = 20_000
_SQL_NOISE = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|--[^\n]*|/\*.*?\*/", re.S)
_SQL_WORD = re.compile(r"[A-Za-z_][\w$]*(?:\.[A-Za-z_*][\w$]*)*|\d+(?:\.\d+)?")
_SQL_CATALOG = re.compile(r"\b(?:sqlite_master|sqlite_schema|sqlite_temp_master|information_schema|pg_catalog|"
                          r"pg_tables|pragma_table_info|sys\.tables|sys\.columns)\b", re.I)
_SQL_ALIAS = re.compile(r"\b(?:from|join)\s+[\w.]+\s+(?:as\s+)?([A-Za-z_]\w*)|\bas\s+([A-Za-z_]\w*)", re.I)
_SQL_PAGE = re.compile(r"\b(?:limit|offset|top)\s+\d+(?:\s*,\s*\d+)?", re.I)
_SQL_COUNT_ROWS = re.compile(r"\s*\(?\s*select\s+count\s*\(\s*(?:\*|1)\s*\)(?:\s+(?:as\s+)?\w+)?\s+from\s+[\w.]+"
                             r"(?:\s+(?:as\s+)?\w+)?\s*;?\s*$", re.I)
_SQL_AGGREGATE = frozenset({"count", "sum", "avg", "min", "max", "total", "group_concat", "string_agg", "median"})
_SQL_WRITES = frozenset({"insert", "update", "delete", "create", "drop", "alter", "replace"})
# The words of SQL itself (with the aggregates): what is left of a statement without them is its
# object, the tables, columns and values it names
_SQL_KEYWORDS = frozenset(
    "select from where join inner left right outer full cross natural on using and or not in is null like ilike "
    "glob between group by order having limit offset as distinct all union intersect except case when then else "
    "end asc desc with recursive insert into values update set delete create table view index drop alter add "
    "column pragma explain query plan show tables columns describe exists cast true false over partition window "
    "rows range unbounded preceding following current row collate escape nulls first last fetch next only top "
    "temp temporary if unique primary key references default replace table_info table_xinfo table_list "
    "index_list index_info foreign_key_list database_list".split()) | _SQL_AGGREGATE
# How a statement asks, each a move token beside its verb (`K:select?join`): which clauses it uses
_SQL_MARKS = (("join", re.compile(r"\bjoin\b|\bfrom\s+[\w.]+(?:\s+(?:as\s+)?\w+)?\s*,\s*[\w.]", re.I)),
              ("where", re.compile(r"\bwhere\b", re.I)),
              ("group", re.compile(r"\bgroup\s+by\b|\bhaving\b", re.I)),
              ("aggregate", re.compile(r"\b(?:count|sum|avg|min|max|total|group_concat|string_agg|median)\s*\(", re.I)),
              ("distinct", re.compile(r"\bdistinct\b", re.I)),
              ("order", re.compile(r"\border\s+by\b", re.I)),
              ("limit", re.compile(r"\blimit\b|\bfetch\s+first\b|\bselect\s+top\b", re.I)),
              ("subquery", re.compile(r"(?:\b(?:in|exists|from|join|select|any|all|some)|[=<>,(+\-*/])\s*\(\s*select\b",
                                       re.I)),  # not a CTE's `as (select`
              ("cte", re.compile(r"^\s*\(?\s*with\b", re.I)),
              ("union", re.compile(r"\b(?:union|intersect|except)\b", re.I)),
              ("star", re.compile(r"\bselect\s+(?:distinct\s+)?(?:[\w.]+\.)?\*", re.I)))


# the words a statement begins with (`_SQL_START`), and those a slip of which is mended
_SQL_STARTERS = frozenset({"select", "with", "insert", "update", "delete", "create", "drop", "alter", "pragma",
                           "explain", "show", "describe", "desc"})
_SQL_OPENERS = ("select", "with", "insert", "update", "delete", "create", "pragma")
_FIRST_WORD = re.compile(r"\s*([A-Za-z]{3,8})\b")
_TOOL_WORD = re.compile(r"[A-Za-z_][\w.\-]{0,60}\s+")


def _statement(text: str) -> str | None:
    """The SQL statement ``text`` runs, or ``None``: the text itself, the text with a slip in
    its keyword mended (:func:`_mended_statement`), or what follows the name of the tool that
    runs it where a harness writes the call out as one command (``run_sql SELECT ...``).

    >>> _statement("run_sql SELECT * FROM t"), _statement("go to sofa 1")
    ('SELECT * FROM t', None)
    """
    found = _mended_statement(text)
    if found is not None:
        return found
    named = _TOOL_WORD.match(text)
    return _mended_statement(text[named.end():]) if named is not None else None


def _mended_statement(text: str) -> str | None:
    """``text`` where it is a statement; or ``text`` with its first word put right where that is
    one typing slip from a statement's keyword and the rest then reads as a statement (``SELEC
    name FROM t``: the failed call is an attempt of the statement its retry runs, as ``gerp`` is
    of ``grep``); else ``None``. Only a text whose first word is a statement's (or a slip of
    one) is matched: a shell line or a game command costs a word's look-up.

    >>> _mended_statement("SELEC name FROM sqlite_master"), _mended_statement("selct the blue one")
    ('select name FROM sqlite_master', None)
    """
    first = _FIRST_WORD.match(text)
    if first is None:  # a statement may open with a comment or a bracket
        return text if text.lstrip()[:1] in ("(", "-", "/") and _SQL_START.match(text) else None
    word = first.group(1).lower()
    if word in _SQL_STARTERS:
        return text if _SQL_START.match(text) else None
    opener = _slipped_opener(word)
    if opener is None:
        return None
    mended = text[:first.start(1)] + opener + text[first.end(1):]
    return mended if _SQL_START.match(mended) else None


@functools.lru_cache(maxsize=4096)  # a log's commands begin with few words (ls, cat, go, take): each read once
def _slipped_opener(word: str) -> str | None:
    """The statement keyword ``word`` is one typing slip from (``selec`` -> ``select``), else ``None``."""
    return next((opener for opener in _SQL_OPENERS if one_typo_apart(word, opener)), None)


def _sql_verb(statement: str) -> tuple[str, str, tuple[str, ...]]:
    """(verb, object, marks) of a SQL statement, read by what it does: ``schema`` where it reads
    the catalog (``sqlite_master``, ``information_schema``, ``PRAGMA table_info``, ``DESCRIBE``,
    ``SHOW TABLES``); over a whole table (no filter, join or subquery), ``sample`` where it reads
    its rows as they are (``SELECT *``), ``count`` where it counts them, ``values`` where it asks
    what values a column takes or their range (``DISTINCT``, ``MIN`` / ``MAX``, ``GROUP BY``);
    ``select`` for any other query; a write by its keyword
    (``insert``, ``update``, ``create`` ...). The object is what it names, its tables, columns
    and values, without the words of SQL, table aliases or string quotes; the marks say how it
    asks (:data:`_SQL_MARKS`: ``join``, ``where``, ``group``, ``aggregate``, ``distinct``,
    ``order``, ``limit``, ``subquery``, ``cte``, ``union``, ``star``).

    Examples
    --------
    >>> _sql_verb("SELECT name FROM sqlite_master WHERE type='table'")[0]
    'schema'
    >>> _sql_verb("PRAGMA table_info(orders)")[:2], _sql_verb("select * from orders limit 5")
    (('schema', 'orders'), ('sample', 'orders', ('limit', 'star')))
    >>> _sql_verb("SELECT COUNT(*) FROM orders o JOIN customers c ON o.cust_id = c.id WHERE c.city = 'Lyon'")
    ('select', 'orders customers cust_id id city Lyon', ('join', 'where', 'aggregate'))
    >>> _sql_verb("INSERT INTO t (a) VALUES (1)")[0], _sql_verb("with x as (select 1) select * from x")[2]
    ('insert', ('cte', 'star'))

    Over a whole table, without a filter or a join, ``count`` asks how many rows it has and
    ``values`` what values a column takes or their range:

    >>> [_sql_verb(q)[0] for q in ("SELECT COUNT(*) FROM plays", "SELECT MIN(day), MAX(day) FROM plays",
    ...                            "SELECT DISTINCT city FROM users", "SELECT COUNT(*) FROM plays WHERE day > 3")]
    ['count', 'values', 'values', 'select']
    """
    text = statement[:_SQL_MAX]
    literals: list[str] = []

    def quiet(m: re.Match[str]) -> str:  # comments go, quoted names and values become `'`; values are kept
        if m.group(0)[:1] == "'":
            literals.append(m.group(0)[1:-1].replace("''", "'").strip())
        return " " if m.group(0)[:1] in "-/" else "'"

    bare = _SQL_NOISE.sub(quiet, text)  # one scan: an apostrophe inside a comment opens no value
    first = bare.lstrip(" \t\n(").split(None, 1)[0].lower() if bare.strip(" \t\n(") else ""
    marks = tuple(name for name, pattern in _SQL_MARKS if pattern.search(bare))
    marked = set(marks)
    bare = _SQL_PAGE.sub(" ", bare)  # how many rows it shows is no value it carries
    aliases = {(m.group(1) or m.group(2) or "").lower() for m in _SQL_ALIAS.finditer(bare)}
    names = []
    for word in _SQL_WORD.findall(bare):
        word = word.rsplit(".", 1)[-1] if "." in word and not word[0].isdigit() else word
        if word.lower() not in _SQL_KEYWORDS and word.lower() not in aliases and word != "*":
            names.append(word)
    obj = " ".join(dict.fromkeys(n for n in [*names, *literals] if n))
    if first in ("pragma", "show", "describe", "desc") or _SQL_CATALOG.search(bare):
        verb = "schema"
    elif first in _SQL_WRITES:
        verb = first
    elif first == "explain":
        verb = "explain"
    elif {"where", "join", "subquery", "union"} & marked:
        verb = "select"  # a filter or a join: a question of the data, the answer's or a step's
    elif "star" in marked and not {"group", "aggregate"} & marked:
        verb = "sample"
    elif _SQL_COUNT_ROWS.match(bare):
        verb = "count"  # how many rows a table has
    elif {"distinct", "group", "aggregate"} & marked:
        verb = "values"  # what values a column takes, or their range, over the whole table
    else:
        verb = "select"
    return verb, obj, marks


def _pressed(verb: str, obj: str, fields: Mapping[str, Any]) -> tuple[str, str]:
    """A key press named by its key, as a program by its subcommand (``key Return`` confirms,
    ``key Escape`` closes, ``key ctrl+s`` saves: xdotool's key names, which computer-use tools
    take); the key from the call's ``text``/``key`` field or from the object. Any other verb, or
    an object that is no key name, is left as it is.

    >>> _pressed("key", "", {"text": "Return"}), _pressed("key", "ctrl+shift+s", {})
    (('key return', ''), ('key ctrl+shift+s', ''))
    >>> _pressed("type", "hello", {}), _pressed("key", "some words", {})
    (('type', 'hello'), ('key', 'some words'))
    """
    if verb.lower() not in _KEY_VERBS:
        return verb, obj
    field = next((str(fields[k]) for k in ("text", "key", "keys") if isinstance(fields.get(k), str)), None)
    key = (field if field is not None else obj).strip()
    if not _KEY_NAME.fullmatch(key):
        return verb, obj
    return f"{verb} {key.lower()}", obj if field is not None else ""


def _candidate_fields(parsed: dict[str, Any] | None) -> list[str]:
    """The fields of one call that may carry its action: the named ones (:data:`ACTION_FIELDS`)
    holding text, then a field of another name where it is the call's only text that is no
    content (``run_tactic(proof_state=3, tactic="simp")``; a call holding several texts, such as
    an edit's old and new code or a mail's subject and body, is a typed tool's), or, beside an
    object of arguments, each text that is one word (a dispatcher's ``name`` or ``tool_name``:
    :func:`dispatched_arguments`)."""
    if parsed is None:
        return [TEXT_FIELD]
    named = [f for f in ACTION_FIELDS if isinstance(parsed.get(f), str) and parsed.get(f)
             and (f not in _CONTENT_FIELDS or _SQL_START.match(parsed[f]))]
    other = [f for f, v in parsed.items() if isinstance(v, str) and v and f not in _NAMED_FIELDS]
    if len(other) == 1 and len(other[0]) <= MAX_VERB_CHARS:
        return named + other
    if len(other) > 1 and _object_field(parsed) is not None:
        return named + [f for f in other if len(f) <= MAX_VERB_CHARS and _WORD.fullmatch(parsed[f])]
    return named


# One word naming what a dispatcher runs (`search`, `github.create_issue`, `tools/call`)
_WORD = re.compile(r"[A-Za-z_][\w.\-/:]{0,79}")


def _object_field(parsed: Mapping[str, Any] | None) -> str | None:
    """The one field of a call holding an object (a mapping, or a text that is a JSON object:
    the arguments of the tool a dispatcher runs), or ``None``: none, or several."""
    found = None
    for field, value in (parsed or {}).items():
        if isinstance(value, Mapping) or (isinstance(value, str) and _parse(value) is not None):
            if found is not None:
                return None
            found = field
    return found


def dispatched_arguments(parsed: Mapping[str, Any] | None, field: str) -> dict[str, Any] | None:
    """The arguments of the tool a dispatcher's call runs, where ``field`` names that tool with
    one word and one other field holds an object (``call_tool(name="search", arguments={"q":
    "Paris"})``, MCP's ``tools/call``, Cline's ``use_mcp_tool(server_name, tool_name,
    arguments)``): the object, with the call's other plain values beside it (a server's name);
    else ``None``.

    >>> dispatched_arguments({"name": "search", "arguments": '{"q": "Paris"}'}, "name")
    {'q': 'Paris'}
    >>> dispatched_arguments({"action": "left_click", "coordinate": [5, 9]}, "action") is None
    True
    """
    if not parsed or not isinstance(parsed.get(field), str) or not _WORD.fullmatch(parsed[field]):
        return None
    holder = _object_field(parsed)
    if holder is None or holder == field:
        return None
    value = parsed[holder]
    inner = dict(value) if isinstance(value, Mapping) else _parse(value) or {}
    plain = {k: v for k, v in parsed.items() if k not in (field, holder) and k not in inner
             and (v is None or isinstance(v, (str, int, float, bool)))}
    return {**inner, **plain}


#: Least share of a dispatcher's calls whose argument names are the ones its tool takes most
#: often: a dispatcher's tools each take their own arguments (a search a query, a booking a
#: flight and a date), while a typed tool's word parameter beside an object of fields
#: (``update(status="closed", fields={...})``) leaves the fields as varied whatever the word.
DISPATCH_SCHEMA_SHARE = 0.5
#: The most (verb, argument names) pairs counted per tool and field (bounds the detection's memory).
MAX_SCHEMAS = 4096


def _schema_follows_verb(schemas: Counter[tuple[str, frozenset[str]]]) -> bool:
    """Whether the argument names of a dispatcher's calls follow the tool each names
    (:data:`DISPATCH_SCHEMA_SHARE` of the calls take their tool's commonest names, and two tools
    at least take different ones)."""
    modal: dict[str, tuple[int, frozenset[str]]] = {}
    for (verb, keys), n in schemas.items():
        if n > modal.get(verb, (0, frozenset()))[0]:
            modal[verb] = (n, keys)
    total = sum(schemas.values())
    matched = sum(n for n, _ in modal.values())
    return total > 0 and matched >= DISPATCH_SCHEMA_SHARE * total and len({k for _, k in modal.values()}) >= 2


_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def nested_text(obj: str | None) -> str | None:
    """The one text argument of a generic tool's verb, numbers left out (``3 "simp [h]"`` ->
    ``simp [h]``, ``3 omega`` -> ``omega``), or ``None``: none, or several
    (``a.py "x = 1" "x = 2"``).

    >>> nested_text('3 "rw [h] at h2"'), nested_text("3 omega"), nested_text('a.py "x = 1" "x = 2"')
    ('rw [h] at h2', 'omega', None)
    """
    return _nested_parts(obj)[0]


def _nested_parts(obj: str | None) -> tuple[str | None, list[str]]:
    """(:func:`nested_text`, the numbers beside it): the numbers are the call's other values (a
    proof state, a line), as a typed call's other fields are."""
    if not obj or len(obj) > PROGRAM_MAX_CHARS:
        return None, []
    try:  # a line without quotes or escapes is its words (shlex costs five times as much)
        words = shlex.split(obj) if _QUOTING.search(obj) else obj.split()
    except ValueError:  # an unclosed quote: no argument list
        return None, []
    numbers = [w for w in words if _NUMBER.fullmatch(w)]
    texts = [w for w in words if not _NUMBER.fullmatch(w)]
    return (texts[0], numbers) if len(texts) == 1 else (None, [])


def _count_verb(questions_of: dict[str, set[Any]], calls_of: Counter[str], verb: str, question: Any) -> None:
    """One call of ``verb`` on ``question`` counted: its calls, and the questions it is met on
    up to :data:`MIN_VERB_QUESTIONS`; past ``4 * MAX_VERBS + 100`` verbs a new one is not
    tracked (free text: memory bounded)."""
    qs = questions_of.get(verb)
    if qs is None:
        if len(questions_of) > 4 * MAX_VERBS + 100:
            return
        qs = questions_of[verb] = set()
    if len(qs) < MIN_VERB_QUESTIONS:
        qs.add(question)
    calls_of[verb] += 1


def _is_vocabulary(questions_of: Mapping[str, set[Any]], calls_of: Counter[str], n: int) -> bool:
    """Whether the verbs of ``n`` calls form a small vocabulary shared across questions (module
    docstring): at least two verbs met on :data:`MIN_VERB_QUESTIONS` questions, at most
    :data:`MAX_VERBS` of the commonest covering :data:`MIN_VERB_COVERAGE` of the calls."""
    shared = sorted((calls_of[v] for v, qs in questions_of.items() if len(qs) >= MIN_VERB_QUESTIONS), reverse=True)
    # free text shares many words across questions: past 4 x MAX_VERBS it is never a vocabulary
    return 2 <= len(shared) <= 4 * MAX_VERBS and _vocabulary(shared, MIN_VERB_COVERAGE * n) <= MAX_VERBS


def _verb_argument(field: str, step: Mapping[str, Any], verb: str) -> tuple[str | None, list[str]]:
    """The one text argument of a generic tool's call written as its ``verb`` and arguments
    (``run_tactic 3 "simp [h]"``), read from the text as written (the verb's object has lost its
    quotes), and the numbers beside it; ``None`` where the text does not open with the verb or
    holds no such argument."""
    head, _, after = _call_text(field, step.get("arguments"), step.get("query"))[1].partition(" ")
    return _nested_parts(after) if head.lower() == verb else (None, [])


def _nested_verbs(steps_by_row: list, questions: list, generic: Mapping[str, str], total: int,
                  verbs: Mapping[tuple[str, str], Counter[str]]) -> dict[str, str]:
    """The verbs of the generic tools ``generic`` that themselves run a command line given as
    their one text argument (:func:`nested_text`), read by the tests a generic tool's field is
    read by (a vocabulary shared across questions, an object after its verb on at least
    :data:`MIN_OBJECT_SHARE` of the calls): a typed tool re-logged through a generic one, its
    name first (`act(command='run_tactic 3 "simp [h]"')`). Only the verbs the detection tracked
    (``verbs``: per tool and field, bounded) are read, so memory stays bounded."""
    fields = {t: f for t, f in generic.items() if f not in MARK_FIELDS}
    if not fields:
        return {}
    verb_calls: Counter[str] = Counter()
    texts: Counter[str] = Counter()
    with_object: Counter[str] = Counter()
    nested_questions: dict[str, dict[str, set[Any]]] = defaultdict(dict)
    nested_calls: dict[str, Counter[str]] = defaultdict(Counter)
    for steps, question in zip(steps_by_row, questions):
        for step in steps or ():
            tool = tool_name(step.get("tool")) if step else None
            if tool not in fields:
                continue
            verb = verb_object(tool, fields[tool], step.get("arguments"), step.get("query"))[0]
            text = _verb_argument(fields[tool], step, verb)[0]
            if verb not in verbs[tool, fields[tool]]:
                continue
            verb_calls[verb] += 1
            nested, rest = _shell_verb(text) if text else ("", "")
            if not nested or not _VERB.match(nested):
                continue
            texts[verb] += 1
            with_object[verb] += bool(rest)
            _count_verb(nested_questions[verb], nested_calls[verb], nested, question)
    out: dict[str, str] = {}
    for verb, n in verb_calls.items():
        if n < MIN_TOOL_SHARE * total or texts[verb] < 0.9 * n or with_object[verb] < MIN_OBJECT_SHARE * n:
            continue
        if _is_vocabulary(nested_questions[verb], nested_calls[verb], n):
            out[verb] = NESTED_FIELD
    return out


def detect_action_tools(steps_by_row: Iterable[Sequence[Mapping[str, Any] | None] | None],
                        questions: Iterable[Any]) -> dict[str, str]:
    """The generic tools of a table and the field each is read through (module docstring).

    ``steps_by_row`` holds each trajectory's steps (``tool``, ``arguments``, ``query``), and
    ``questions`` each trajectory's question identity. Returns ``{tool: field}`` (``"*"``: the
    whole text argument; :data:`NESTED_FIELD` for a generic tool's verb read by the command it
    runs); empty when no tool is generic. Linear in the calls (the generic tools' calls read a
    second time for their verbs); memory bounded by the distinct (tool, field, verb) triples.

    Examples
    --------
    >>> rows = [[{"tool": "act", "arguments": None, "query": q}] for q in ("go north", "take key", "go west")]
    >>> detect_action_tools(rows * 3, range(9))
    {'act': '*'}
    >>> rows = [[{"tool": "search", "arguments": None, "query": q}] for q in ("Jaws film", "Paris", "Obama")]
    >>> detect_action_tools(rows * 3, range(9))
    {}
    """
    steps_by_row, questions = list(steps_by_row), list(questions)  # read twice: the nested verbs below
    out, dispatchers, calls, verb_calls = _detect_fields(steps_by_row, questions)
    if dispatchers:
        # the tools a dispatcher runs may themselves be generic (`call_tool(name="bash",
        # arguments={"command": "pytest -q"})`): read again with each call as the call it runs
        runs = [[dispatched_call(st, out) for st in steps or ()] for steps in steps_by_row]
        inner, _, _, _ = _detect_fields(runs, questions)
        # one that always names one tool is that tool only where it is generic in turn: else
        # it is a typed tool's constant parameter (`calendar="primary"` beside the event)
        for tool, one in dispatchers.items():
            if one and not set(verb_calls[tool, out[tool]]) & set(inner):
                del out[tool]
        out.update({t: f for t, f in inner.items() if t not in out})
    out.update(_nested_verbs(steps_by_row, questions, out, sum(calls.values()), verb_calls))
    # handoffs of a multi-agent system: control passed to two agents or more (one alone, such as
    # tau-bench's transfer_to_human_agents, is a tool like any other and keeps its name), as typed
    # tools or as the verbs of a generic tool (`act(command="transfer_to_refunds")`), each read so
    names = {t for t in calls if t not in out} | {v for key in out.items() for v in verb_calls[key]}
    handoffs = {t for t in names if handoff_agent(t) is not None}
    agents = {handoff_agent(t) for t in handoffs}
    if 2 <= len(agents) <= MAX_AGENTS:
        # an agent the system hands to, also consulted as a tool (`ask_refunds`): one verb, too
        consults = {t for t in names - handoffs if consulted_agent(t) in agents}
        out.update({**dict.fromkeys(sorted(handoffs), HANDOFF_FIELD), **dict.fromkeys(sorted(consults), CONSULT_FIELD)})
    return out


def dispatched_call(step: Mapping[str, Any] | None, fields: Mapping[str, str]) -> Mapping[str, Any] | None:
    """``step`` as the call it runs where its tool is a dispatcher read through ``fields``
    (:func:`dispatched_arguments`; ``step`` itself otherwise)."""
    if not step:
        return step
    field = fields.get(tool_name(step.get("tool")))
    if field is None or field in MARK_FIELDS:
        return step
    return _run_call(_parse(step.get("arguments")), field) or step


def _run_call(parsed: Mapping[str, Any] | None, field: str) -> dict[str, Any] | None:
    """The call a dispatcher's call (its arguments ``parsed``, the tool named in ``field``) runs:
    that tool, its arguments and their main text; ``None`` where it is no dispatcher's call."""
    inner = dispatched_arguments(parsed, field)
    if inner is None:
        return None
    return {"tool": tool_name(parsed[field]), "arguments": json.dumps(inner, ensure_ascii=False, default=str),
            "query": main_text(inner, "")}


def _detect_fields(steps_by_row: list, questions: list
                   ) -> tuple[dict[str, str], dict[str, bool], Counter[str], dict[tuple[str, str], Counter[str]]]:
    """The generic tools found by their fields (:func:`detect_action_tools`' first pass): ``{tool:
    field}``, the tools among them read as dispatchers (:func:`dispatched_arguments`), each with
    whether it always names one tool, the calls per tool and the verbs counted per (tool, field)."""
    calls: Counter[str] = Counter()
    names: dict[Any, str] = {}
    verb_questions: dict[tuple[str, str], dict[str, set[Any]]] = defaultdict(dict)
    verb_calls: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    field_calls: Counter[tuple[str, str]] = Counter()
    with_object: Counter[tuple[str, str]] = Counter()  # calls whose field holds more than its verb
    dispatched: Counter[tuple[str, str]] = Counter()  # calls naming a tool, its arguments beside
    schemas: dict[tuple[str, str], Counter[tuple[str, frozenset[str]]]] = defaultdict(Counter)
    other_fields: dict[str, Counter[str]] = defaultdict(Counter)
    for steps, question in zip(steps_by_row, questions):
        for step in steps or ():
            if not step:
                continue
            raw_tool = step.get("tool")
            tool = names.get(raw_tool) or names.setdefault(raw_tool, tool_name(raw_tool))
            calls[tool] += 1
            if RETRIEVAL_TOOL.search(tool):  # never generic (below): nothing to count
                continue
            parsed = _parse(step.get("arguments"))
            if (parsed is not None and len(parsed) == 1 and any(k in _CONTENT_FIELDS for k in parsed)
                    and not _SQL_START.match(str(next(iter(parsed.values()))))):
                if tool != GENERIC_TOOL:  # a query is content; a reader's generic tool holds the action there
                    continue
                parsed = None
            for field in _candidate_fields(parsed):
                unnamed = field not in _NAMED_FIELDS and field != TEXT_FIELD
                if unnamed and field not in other_fields[tool] and len(other_fields[tool]) >= MAX_OTHER_FIELDS:
                    continue  # a tool whose calls name ever new fields: no action field among them
                verb, obj, _ = verb_object(tool, field, step.get("arguments"), step.get("query"))
                # a key press is one action of the vocabulary whatever its key: a shortcut is the
                # request's, met on a question or two, and would count against the tool
                verb = verb.split(" ", 1)[0] if verb.split(" ", 1)[0] in _KEY_VERBS else verb
                inner = None if obj else dispatched_arguments(parsed, field)
                if inner is not None:  # the tool a dispatcher runs, named as a tool is
                    verb = tool_name(parsed[field])
                if not verb or not _VERB.match(verb):
                    continue
                key = (tool, field)
                field_calls[key] += 1
                with_object[key] += bool(obj)
                if inner is not None:
                    dispatched[key] += 1
                    entry = (verb, frozenset(inner))
                    if entry in schemas[key] or len(schemas[key]) < MAX_SCHEMAS:
                        schemas[key][entry] += 1
                if unnamed:
                    other_fields[tool][field] += 1
                _count_verb(verb_questions[key], verb_calls[key], verb, question)
    total = sum(calls.values())
    out: dict[str, str] = {}
    dispatchers: dict[str, bool] = {}
    for tool, n in calls.most_common():
        if total == 0 or n < MIN_TOOL_SHARE * total or RETRIEVAL_TOOL.search(tool):
            continue
        # the field naming the most verbs first: a dispatcher's tool name before its server's name
        others = [f for f, _ in sorted(other_fields[tool].items(),
                                       key=lambda kv: (-kv[1], -len(verb_calls[tool, kv[0]]), kv[0]))]
        for field in (*ACTION_FIELDS, TEXT_FIELD, *others):
            key = (tool, field)
            # a dispatcher names the tool it runs and passes that tool's arguments beside: tools
            # that each take their own arguments, or one tool always (an MCP client of one shell)
            runs_one = dispatched[key] >= 0.9 * n and verb_calls[key].most_common(1)[0][1] >= 0.9 * n
            dispatcher = dispatched[key] >= 0.9 * n and (runs_one or _schema_follows_verb(schemas[key]))
            if field_calls[key] < 0.9 * n or (field in others and with_object[key] < MIN_OBJECT_SHARE * n
                                              and not dispatcher):
                continue
            if runs_one or _is_vocabulary(verb_questions[key], verb_calls[key], n):
                out[tool] = field
                if with_object[key] < MIN_OBJECT_SHARE * n and dispatcher:
                    dispatchers[tool] = runs_one
                break
    return out, dispatchers, calls, verb_calls


def _vocabulary(calls: Sequence[int], need: float) -> float:
    """How many of the shared verbs (``calls``: each one's calls, most first) it takes to cover
    ``need`` calls; ``inf`` where all of them do not.

    The size of a vocabulary is that of its common part: the rare verbs that reach a few
    questions (a mistyped program, ``cta``, ``grpe``) grow in number with the table, and counting
    them made a terminal agent of 120 questions read as free text (41 shared verbs, 10 of them
    covering 80 % of its calls).

    Examples
    --------
    >>> _vocabulary([50, 30, 10, 1, 1], 80), _vocabulary([5, 5], 11)
    (2, inf)
    """
    total = 0
    for i, c in enumerate(calls):
        total += c
        if total >= need:
            return i + 1
    return float("inf")


def check_action_field(value: Any) -> None:
    """A one-line error naming ``action_field`` unless it is ``"auto"``, ``None`` or a mapping
    of tool names to field names."""
    if value is None or value == "auto":
        return
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) and k and v
                                                 for k, v in value.items()):
        raise InputError("`action_field` must be 'auto', None or a mapping {tool: field}, got "
                         f"{str(value)[:60]!r}", field="action_field")


def read_action(step: Mapping[str, Any], field: str, task: frozenset[str] = frozenset()) -> dict[str, Any]:
    """``step`` with its generic tool replaced by its verb and its arguments by the object
    (the other argument fields kept as they were); ``task``: the request path segments the
    task decides (:func:`_request_verb`)."""
    tool = tool_name(step.get("tool"))
    verb, obj, rest, keys, statement, parsed, quoted = _read_call(tool, field, step.get("arguments"),
                                                                  step.get("query"), task)
    verb = verb or tool
    run = None if (obj or statement) else _run_call(parsed, field)
    if run is not None:  # a dispatcher's call: the call of the tool it names, with its arguments
        return {**step, **run, "via": tool, DISPATCHED: True}
    # an object written as JSON holds values under keys, read as a typed call's are (its values)
    value = _json_value(obj) if obj else None
    arguments = (json.dumps({"object": obj if value is None else value, **rest}, ensure_ascii=False, default=str)
                 if (obj or rest) else None)
    # `via`: the tool that ran the call (whether an empty result is a failure depends on it);
    # `_query_keys`: a request's query parameter names (how it asks: by page, by a filter, by a
    # number), which the move tokens carry while the verb and the plan stay the resource's
    read = {**step, "tool": verb, "arguments": arguments, "query": obj or None, "via": tool,
            **({"_query_keys": keys} if keys else {}), **({STATEMENT: True} if statement else {})}
    read.pop(WRITTEN, None)  # a nested command's own text says whether it quotes values, not the call's
    return {**read, WRITTEN: True} if quoted and not statement else read


# A handoff between agents (multi-agent frameworks' own tool names: the OpenAI Agents SDK, Swarm,
# LangGraph's supervisor and AutoGen name the call that passes control `transfer_to_<agent>`, or
# `transfer_back_to_<agent>`): one move, passing control, whose object is the agent.
_HANDOFF_PREFIXES = ("transfer_to", "transfer_back_to", "handoff_to", "hand_off_to")
_HANDOFF = re.compile(rf"^(?:{'|'.join(_HANDOFF_PREFIXES)})_([a-z0-9][a-z0-9_.]*)$")
# An agent consulted as a tool, its answer coming back (`ask_refunds`, `consult_billing_agent`,
# or the agent's own name, as AutoGen's AgentTool names it): the prefix read off. Prefixes that
# also name plain tools (`query_database`, `call_api`) are not among them.
_CONSULT_PREFIXES = ("ask", "consult", "delegate_to", "delegate", "invoke")
_CONSULT = re.compile(rf"^(?:{'|'.join(_CONSULT_PREFIXES)})_(?=[a-z0-9])")
#: The most tool names :func:`detect_action_tools` reads as handoffs and consults: each of at
#: most :data:`MAX_AGENTS` agents under every handoff prefix, every consult prefix or none, each
#: with or without ``_agent`` (what a saved space's check allows, beside the generic tools).
MAX_AGENT_TOOLS = MAX_AGENTS * (len(_HANDOFF_PREFIXES) + len(_CONSULT_PREFIXES) + 1) * 2
#: The verb a handoff is read as (:func:`read_handoff`).
HANDOFF_VERB = "transfer_to"
#: The verb an agent consulted as a tool is read as (:func:`read_consult`).
CONSULT_VERB = "consult"
#: The "fields" :func:`detect_action_tools` names for a handoff tool and for an agent consulted
#: as a tool: the call is read by its name.
HANDOFF_FIELD = "@handoff"
CONSULT_FIELD = "@consult"
AGENT_FIELDS = (HANDOFF_FIELD, CONSULT_FIELD)
#: The "field" :func:`detect_action_tools` names for a generic tool's verb that itself runs a
#: command line given as its one text argument (`act(command='run_tactic 3 "simp [h]"')`): the
#: call is read by that command (:func:`read_nested`).
NESTED_FIELD = "@nested"
#: Every mark a detection names instead of a field: the call is read by its name, not a field.
MARK_FIELDS = (*AGENT_FIELDS, NESTED_FIELD)


def _agent_name(name: str) -> str:
    """An agent's name as the calls read it: ``refunds_agent`` and ``refunds`` are one agent."""
    return name[: -len("_agent")] if name.endswith("_agent") and len(name) > len("_agent") else name


@functools.lru_cache(maxsize=4096)
def handoff_agent(tool: str) -> str | None:
    """The agent a tool named as a handoff (:func:`read_handoff`) hands to, else ``None``.

    >>> handoff_agent("transfer_back_to_triage_agent"), handoff_agent("transfer_funds")
    ('triage', None)
    """
    found = _HANDOFF.match(tool)
    return _agent_name(found.group(1)) if found else None


@functools.lru_cache(maxsize=4096)
def consulted_agent(tool: str) -> str:
    """The agent a tool would consult, were it an agent consulted as a tool: its name with a
    consulting prefix (``ask_``, ``consult_``, ``delegate_to_``, ...) and an ``_agent`` suffix
    read off. Whether it is one is the table's to say (:func:`detect_action_tools`: an agent
    its handoffs name).

    >>> consulted_agent("ask_refunds"), consulted_agent("consult_billing_agent"), consulted_agent("refunds")
    ('refunds', 'billing', 'refunds')
    >>> consulted_agent("query_database")  # a plain tool's prefix: never an agent named `database`
    'query_database'
    """
    found = _CONSULT.match(tool)
    return _agent_name(tool[found.end():] if found else tool)


def _agent_call(step: Mapping[str, Any], tool: str, verb: str, agent: str) -> dict[str, Any]:
    """``step`` read as ``verb`` with the agent as its object, its other arguments kept."""
    rest = _parse(step.get("arguments")) or {}
    if "object" in rest:  # a generic tool's call read as a verb already: the rest of its command
        rest["detail"] = rest.pop("object")
    arguments = json.dumps({"object": agent, **rest}, ensure_ascii=False, default=str)
    return {**step, "tool": verb, "arguments": arguments, "query": agent, "via": step.get("via") or tool}


def read_handoff(step: Mapping[str, Any], tool: str) -> dict[str, Any] | None:
    """``step`` read as a handoff to another agent where its tool (``tool``, as
    :func:`tool_name` reads it) is named as the multi-agent frameworks name one
    (``transfer_to_<agent>``, ``transfer_back_to_<agent>``, ``handoff_to_<agent>``): the verb
    :data:`HANDOFF_VERB` with the agent as its object, its other arguments kept (a reason);
    else ``None``. Read by name, every agent handed to is another tool, and the agent the
    question needs splits one way of working into as many plans as there are agents.

    Examples
    --------
    >>> read_handoff({"tool": "transfer_to_refunds", "arguments": "{}"}, "transfer_to_refunds")["query"]
    'refunds'
    >>> read_handoff({"tool": "transfer_back_to_supervisor", "arguments": '{"reason": "done"}'},
    ...              "transfer_back_to_supervisor")["arguments"]
    '{"object": "supervisor", "reason": "done"}'
    >>> read_handoff({"tool": "transfer_funds", "arguments": "{}"}, "transfer_funds") is None
    True
    """
    agent = handoff_agent(tool)
    return None if agent is None else _agent_call(step, tool, HANDOFF_VERB, agent)


def read_consult(step: Mapping[str, Any], tool: str) -> dict[str, Any]:
    """``step``, a call of an agent consulted as a tool (``tool``, as :func:`tool_name` reads
    it; :func:`detect_action_tools` says which are), read as the verb :data:`CONSULT_VERB` with
    the agent as its object, its other arguments kept (what it is asked). Read by name, the
    specialist the question needs would make each question's consultation another plan.

    >>> read_consult({"tool": "ask_refunds", "arguments": '{"input": "eligible?"}'}, "ask_refunds")["arguments"]
    '{"object": "refunds", "input": "eligible?"}'
    """
    return _agent_call(step, tool, CONSULT_VERB, consulted_agent(tool))


def read_agent_call(step: Mapping[str, Any], tool: str, field: str) -> dict[str, Any]:
    """``step`` read as what ``field`` (one of :data:`AGENT_FIELDS`) says its tool is: a
    handoff (:func:`read_handoff`) or an agent consulted (:func:`read_consult`)."""
    if field == CONSULT_FIELD:
        return read_consult(step, tool)
    return read_handoff(step, tool) or dict(step)


def read_nested(step: Mapping[str, Any], field: str, read: Mapping[str, Any]) -> dict[str, Any]:
    """A generic tool's call ``step`` (read through ``field``: ``read``) whose verb runs a command
    line given as its one text argument (:data:`NESTED_FIELD`), read as that command (the
    generic tool ``via``); ``read`` where it gives none.

    >>> call = {"tool": "act", "arguments": json.dumps({"command": 'run_tactic 3 "rw [h] at h2"'})}
    >>> read_nested(call, "command", read_action(call, "command"))["tool"]
    'rw'
    """
    text, numbers = _verb_argument(field, step, str(read.get("tool")))  # the call as `read` already read it
    if text is None:
        return dict(read)
    nested = read_action({**read, "arguments": None, "query": text}, TEXT_FIELD)
    if numbers:  # the numbers beside the command (`run_tactic 3 ...`: the proof state) stay its values
        values = json.loads(nested["arguments"]) if nested["arguments"] else {}
        nested["arguments"] = json.dumps({**values, "numbers": numbers}, ensure_ascii=False)
    return {**nested, "via": tool_name(step.get("tool"))}


def one_typo_apart(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ by exactly one typing slip: a character inserted, dropped,
    replaced, or two neighbours swapped (optimal string alignment distance 1).

    Examples
    --------
    >>> one_typo_apart("pytohn", "python"), one_typo_apart("gerp", "grep"), one_typo_apart("cta", "cat")
    (True, True, True)
    >>> one_typo_apart("find_user_id_by_email", "find_user_id_by_name_zip"), one_typo_apart("ls", "ls")
    (False, False)
    """
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]]
                                  and a[diff[1]] == b[diff[0]])
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    i = next((k for k, (x, y) in enumerate(zip(short, long_)) if x != y), len(short))
    return short[i:] == long_[i + 1:]


def mend_typos(steps: list[dict[str, Any]], raw_tools: Sequence[str], failed: Sequence[bool]) -> list[dict[str, Any]]:
    """``steps`` with a failed call of a generic tool whose verb is one typing slip from the
    next call's verb (``gerp`` then ``grep``: "command not found") read as that verb, so that
    the pair is one attempt of one move like any failed call and its retry; ``raw_tools`` are
    the calls' tools before they were read as verbs.

    Examples
    --------
    >>> steps = [{"tool": "pytohn"}, {"tool": "python"}, {"tool": "cat"}]
    >>> [s["tool"] for s in mend_typos(steps, ["bash"] * 3, [True, False, False])]
    ['python', 'python', 'cat']

    The slip may be in a program with a subcommand or a version (``gti log`` then ``git log``,
    ``pthon3`` then ``python3``):

    >>> steps = [{"tool": "gti"}, {"tool": "git log"}, {"tool": "pthon3"}, {"tool": "python"}]
    >>> [s["tool"] for s in mend_typos(steps, ["bash"] * 4, [True, False, True, False])]
    ['git log', 'git log', 'python', 'python']

    A failed SQL statement is the attempt of the statement run next on a table or column it
    named, whatever each reads as: a statement that errs changes nothing, and its fix may read
    otherwise (``SELECT SUM(x) FORM t``, a whole table's aggregate, then the filtered query):

    >>> steps = [{"tool": "values", "query": "x FORM t", STATEMENT: True},
    ...          {"tool": "select", "query": "x t y 3", STATEMENT: True}]
    >>> [s["tool"] for s in mend_typos(steps, ["sql"] * 2, [True, False])]
    ['select', 'select']
    """
    out = list(steps)
    for i in range(len(out) - 2, -1, -1):  # from the end: a run of slips all reads as the call that worked
        slip, fixed = str(out[i].get("tool")), str(out[i + 1].get("tool"))
        if failed[i] and raw_tools[i] == raw_tools[i + 1] and (one_typo_apart(slip, fixed)
                                                                or one_typo_apart(_program(slip), _program(fixed))
                                                                or _same_statement(out[i], out[i + 1])):
            out[i] = {**out[i], "tool": out[i + 1].get("tool")}
    return out


def _same_statement(failed: Mapping[str, Any], fixed: Mapping[str, Any]) -> bool:
    """Whether two calls are SQL statements naming a table or column in common (words of their
    objects that hold a letter)."""
    if not (failed.get(STATEMENT) and fixed.get(STATEMENT)):
        return False
    named = {w for w in str(failed.get("query") or "").lower().split() if not w.isdigit()}
    return any(w in named for w in str(fixed.get("query") or "").lower().split() if not w.isdigit())


def _program(verb: str) -> str:
    """The program of a verb, without its subcommand or version: a slip in the program's name
    (``gti`` for ``git log``, ``pthon3`` for ``python``) is one slip whatever follows it.

    Examples
    --------
    >>> _program("git log"), _program("pthon3"), _program("python3.11"), _program("sed -i")
    ('git', 'pthon', 'python', 'sed')
    """
    return re.sub(r"[0-9.]+$", "", verb.split(" ", 1)[0])
