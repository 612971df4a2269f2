"""Failed tool calls, read the way environments report them.

A failed call is one the environment could not carry out: a Wikipedia lookup that found no
page, a tool that returned an error, an action the environment did not understand, an id or
file that does not exist, code that could not run to its end. An observation whose
*content* is about an error is a call that worked: a test run that reports failing tests, a
page about error-correcting codes, a film called "Invalid".

:func:`is_failure` reads an observation with a default that covers what common environments
return (below), plus any regular expression the user names (``error_pattern=``). The readers
count failures per tool for the read report and the move grammar (mechanism.analysis.segmentation)
marks ``failed`` calls and their retries with it, so both say the same.

Default reading (on the observation's head, bounded, so the cost per call is constant):

- Wikipedia ReAct environments: ``Could not find [X]. Similar: [...]``, ``No Results``,
  ``No more results``, ``There were no results matching the query``, ``Invalid Action``,
  ``The last page Searched was not found`` (Reflexion's lookup after a failed search);
- tool errors: a result that opens with ``Error``/``Exception``/``ERROR`` followed by ``:``
  (or ``-``, ``!``), or with an error named by its kind (``Lean error:``, ``Runtime error:``;
  not ``No error:``), ``Error executing``/``Error calling``/``Error in``, ``Failed to``,
  ``Invalid <argument|action|input|id|...>``, ``Unknown tool``/``unknown action``,
  ``Permission denied``, ``Access denied``; an error object (``{"error": ...}``,
  ``{"status": "error"}``, ``{"success": false}``); an object that only says something
  (``{"message": ...}`` or ``{"msg": ...}``, beside at most a code, a status, a type or a name)
  read as the text it says (the Lean REPL's ``{"message": "Lean error: ..."}``); a compiler's or
  language server's diagnostics with one of severity ``error`` (the Lean REPL's ``{"messages":
  [{"severity": "error", ...}]}``; warnings alone are a success);
- a missing thing: ``... not found`` / ``does not exist`` / ``No such file or directory`` /
  ``unknown tool`` / ``generated an exception`` within the first line of a short result
  (``User not found``, ``Order #W1 does not exist``), not inside a long page;
- code tools: a ``SyntaxError``/``IndentationError`` printed without a ``Traceback`` line, a
  bare exception line (``KeyError: 'x'``), a timeout notice (``Timeout: ...``, ``timed out``,
  ``Time limit exceeded``), smolagents' ``Code execution failed at line '...' due to: ...`` on a
  line of its own, and a Python traceback
  that ends the output, before or after printed output, unless the output is a test run's
  report (pytest or unittest summary lines), whose failing tests are content;
- an environment's fixed "nothing happened" answer: an empty observation, one that reads
  ``None`` or ``null`` (a tool that returned nothing, printed), ``Nothing happens.`` (ALFWorld).
  An empty observation of a tool that runs commands or code or changes state (``bash``,
  ``run_python``, ``write_file``, ``send_email``: printing nothing is how they succeed) is not a
  failure; nor is a missing one (``None``: no result was recorded, so nothing says how the
  environment answered);
- HTTP: a status line for a 4xx or 5xx answer at the head, whatever follows it (``HTTP/1.1 400
  Bad Request``, ``HTTP 500``, ``404 Not Found``, ``Status: 404``, ``404 Client Error: ...``),
  and error bodies: ``{"status": 500}``, ``{"status_code": 404}`` (at the object's top level),
  FastAPI's ``{"detail": "..."}`` as the whole body or its list of validation errors
  (``{"detail": [{"loc": ...}]}``), a FHIR ``OperationOutcome`` with an issue of severity
  ``error`` or ``fatal``; a browser's accessibility tree whose root is an error page (WebArena:
  ``[1] RootWebArea '404 Not Found'``, after at most two lines). A page that mentions 404 in its
  text is content.

Any other text that an environment repeats verbatim after many different actions ("You can't
do that.") is found by the readers, which propose it as an ``error_pattern`` in the read report
with its count (:mod:`mechanism.readers._build`). A user's ``error_pattern`` is compiled by RE2
(:mod:`mechanism.core.patterns`): its time is linear in the observation whatever the pattern.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from mechanism.core.actions import IN_PLACE_MARK, TO_FILE_MARK
from mechanism.core.patterns import LinearPattern, compile_linear

__all__ = ["is_failure", "failure_kind", "compile_error_pattern", "failure_reader", "silent_tool", "FAILURE_KINDS"]

# what :func:`failure_kind` names: the environment answered with nothing ("nothing"), an HTTP
# error status or body ("http"), the user's pattern ("pattern"), any other default rule ("error")
FAILURE_KINDS = ("nothing", "http", "pattern", "error")

_HEAD = 300  # characters of an observation that the head rules read
_TAIL = 4_000  # characters at the end that the traceback and syntax-error rules read
_SHORT = 400  # a "not found" result is a short message, not a page that mentions one
_SHORT_LINE = 120

_WIKI = re.compile(r"^\W{0,3}(could not find\b|no results\W*$|no more results\W*$|"
                   r"there were no results matching the query|invalid action\b|"
                   r"the last page searched was not found\b)", re.I)
_TOOL_ERROR = re.compile(
    r"^\W{0,3}(?:(?:error|exception|fatal)\s*(?:\d{3}\s*)?[:!\-\]]|error \d{3,5} \(\w{5}\)|"
    r"error (?:executing|calling|in|while|running|"
    r"during|occurred)\b|(?:an )?error occurred\b|failed to\b|failure:|tool (?:error|failed)\b|"
    # an error its tool names by kind: "Lean error: unknown tactic", "Runtime error: ...", "Parse error: ..."
    r"(?!(?:no|not|without)\b)[a-z][a-z0-9_.\-]{0,24}[ _](?:error|exception)\s*:|"
    r"invalid (?:argument|arguments|action|input|id|parameter|parameters|request|command|tool|value|query|"
    r"json|format|syntax)\b|unknown (?:tool|action|command|function)\b|permission denied\b|access denied\b|"
    r"unauthorized\b|traceback \(most\b)", re.I)
# an error member that holds something: `{"error": null, "result": ...}` is a success
_JSON_ERROR = re.compile(r'^\s*\{\s*"(?:error|exception|error_message)"\s*:'
                         r'(?!\s*(?:null|false|""|\{\s*\}|\[\s*\])\s*[,}])|'
                         r'^\s*\{\s*"errors"\s*:\s*\[\s*[{"]|'
                         r'^\s*\{.{0,200}"status"\s*:\s*"(?:error|failed|failure)"|^\s*\{.{0,200}"success"\s*:\s*false\b',
                         re.I | re.S)
# HTTP error answers: a status line at the head (the code with "HTTP" before it, or a reason
# phrase after it, so "500 Days of Summer" is a film), a status member of the top-level object
# (before anything nested), FastAPI's validation errors, a FHIR OperationOutcome
_HTTP_REASONS = (r"bad request|unauthori[sz]ed|payment required|forbidden|not found|method not allowed|not acceptable|"
                 r"proxy authentication required|request time-?out|conflict|gone|length required|"
                 r"precondition (?:failed|required)|(?:payload|request entity|content) too large|"
                 r"(?:request-)?uri too long|"
                 r"unsupported media type|(?:requested )?range not satisfiable|expectation failed|i'm a teapot|"
                 r"misdirected request|unprocessable (?:entity|content)|locked|failed dependency|too early|"
                 r"upgrade required|too many requests|request header fields too large|unavailable for legal reasons|"
                 r"internal server error|not implemented|bad gateway|service (?:temporarily )?unavailable|"
                 r"gateway time-?out|http version not supported|variant also negotiates|insufficient storage|"
                 r"loop detected|not extended|network authentication required|client error|server error")
# what closes a status line: its end, punctuation, or "for url ..." (requests' message); "HTTP 404
# Not Found is the standard response ..." is prose. Runs of blanks are possessive (`*+`): a head of
# spaces is scanned once, not once per alternative
_HTTP_END = r"(?:[ \t]*+(?:$|[\n.:;,!\-(\[{<])|[ \t]++for\b)"
_HTTP = re.compile(r"^\W{0,3}(?:https?/\d(?:\.\d)?[ \t]++[45]\d\d\b|"
                   rf"(?:https?|(?:http[ _]?)?status(?:[ _]?code)?)[ \t]*+(?:[:=\-][ \t]*+)?[45]\d\d"
                   rf"(?:{_HTTP_END}|[ \t]++(?:{_HTTP_REASONS}){_HTTP_END})|"
                   rf"[45]\d\d[ \t]*+(?:[:\-][ \t]*+)?(?:page[ \t]++)?(?:{_HTTP_REASONS}){_HTTP_END}|"
                   r"(?:request[ \t]++)?failed with status(?:[ \t]++code)?[ \t]++[45]\d\d\b)|"
                   # a server's own error page (nginx, Apache): the status in its title
                   r"^\s*(?:<!doctype html>\s*)?<html[^>]{0,100}>\s*<head>\s*"
                   rf"<title>\s*[45]\d\d[ \t]++(?:{_HTTP_REASONS})|"
                   # a browser's accessibility tree of an error page (WebArena): the status as the root's
                   # name, after at most two lines (the URL, or "Tab 0 (current): ...")
                   rf"^(?:[^\n]{{0,300}}\n){{0,2}}[ \t]*+(?:\[\d+\][ \t]*+)?RootWebArea[ \t]++['\"][45]\d\d[ \t]++"
                   rf"(?:{_HTTP_REASONS})['\"]|"
                   r'^\s*\{[^{}\[\]]{0,200}"(?:status|status_?code|statuscode|http_?status(?:_?code)?)"\s*:\s*"?[45]\d\d\b|'
                   r'^\s*\{\s*"detail"\s*:\s*\[\s*\{[^{}]{0,200}"loc"\s*:\s*\[', re.I)
# FastAPI / Django REST's error body: `{"detail": "..."}` and nothing else
_DETAIL = re.compile(r'^\s*\{\s*"detail"\s*:\s*"((?:[^"\\\n]|\\.){0,300})"\s*\}\s*$')
_DETAIL_SUCCESS = re.compile(r"\b(?:success\w*|ok|done|created|deleted|updated|saved|accepted|removed)\b", re.I)
_OUTCOME = re.compile(r'^\s*\{[^{}]{0,200}"resourceType"\s*:\s*"OperationOutcome"')
# a compiler's or language server's diagnostics (the Lean REPL's `{"messages": [{"severity": "error",
# ...}], "env": 0}`): failed where one of them is an error, a success with warnings alone
_DIAGNOSTICS = re.compile(r'^\s*\{[^\[\]]{0,200}"(?:messages|diagnostics)"\s*:\s*\[\s*\{')
_DIAGNOSTIC_ERROR = re.compile(r'"severity"\s*:\s*(?:"error"|1\b)')
# an object that only says something (`{"message": "Lean error: ..."}`, `{"msg": "...", "code": 3}`):
# read as the text it holds
_MESSAGE_KEYS = ("message", "msg")
_MESSAGE_BESIDE = frozenset({"message", "msg", "code", "status", "type", "name", "kind"})
_OUTCOME_ERROR = re.compile(r'"severity"\s*:\s*"(?:error|fatal)"')
# the whole (stripped) observation: a tool that returned nothing, printed; ALFWorld's answer to
# an action that did nothing
_NOTHING = re.compile(r"^\W{0,3}(?:none|null|nothing happen(?:s|ed))\W{0,3}$", re.I)
_NOTHING_MAX = 40
# tools that succeed silently: an empty output is how a command, a script or a write ends well
_SILENT_WORDS = frozenset(("bash", "sh", "zsh", "shell", "terminal", "console", "cmd", "command", "commands", "exec",
                           "execute", "run", "runner", "python", "ipython", "py", "code", "jupyter", "notebook",
                           "cell", "script", "sql", "write", "edit", "editor", "save", "create", "update", "delete",
                           "remove", "set", "put", "post", "patch", "move", "copy", "mkdir", "touch", "send",
                           "upload", "install", "apply", "insert", "replace", "append", "rename", "chmod",
                           "rm", "mv", "cp", "ln",  # the shell's own spellings of remove, move, copy, link
                           # calls that ask nothing of the environment answer with nothing
                           "think", "reflect", "plan", "note", "notes", "scratchpad", "thought", "log"))
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# how a shell program's verb says it writes (`sed -i`, `cat to_file`)
_WRITING_MARKS = (IN_PLACE_MARK, TO_FILE_MARK)
# "User not found", "Order #W1 does not exist.", "File not found: x": the phrase closes a clause
# (a title such as "Not Found is a 2009 album" does not)
_MISSING = re.compile(r"\b(?:(?:not found|does not exist|doesn't exist|could not be found|cannot be found)"
                      r"\s*(?:[.:!,;)]|$)|no such file or directory\b|generated an exception\b|"
                      # a database's own words: SQLite's, printed without the exception's name
                      r"no such (?:table|column|function|index|view)\s*:|near \"[^\"\n]{0,80}\": syntax error|"
                      r"ambiguous column name\b|"
                      r"unknown tool(?: name)?\b)", re.I)
_TIMEOUT = re.compile(r"^\W{0,3}(?:timeout(?:error)?\s*[:!]|timeout (?:after|expired|exceeded|reached)\b|"
                      r"timed out\b|execution timed out|time ?limit exceeded|"
                      # mini-swe-agent's notice that it killed a command, the command quoted in it
                      r"the last command <command>[^\n]{0,500}?</command> timed out\b|"
                      r"(?:the )?(?:command|execution|process|cell|code|request|call|tool|query|statement) "
                      r"(?:timed out|took too long)|(?:sql|query|statement) time ?out\b)", re.I)
# a bare exception line as the whole answer of a code tool ("KeyError: 'x'", "TimeoutError: ...")
# (module-qualified too, and in SQLAlchemy's brackets: "sqlite3.OperationalError: near ...",
# "(psycopg2.errors.UndefinedColumn) column ...")
_HEAD_EXCEPTION = re.compile(r"^\s*(?:[A-Z][\w.]*(?:Error|Exception)\s*:|\(?(?:[a-z_][a-z0-9_]*\.){1,4}"
                             r"(?:[A-Z]\w*(?:Error|Exception)|(?<=errors\.)[A-Z]\w*)[):])")
_SYNTAX = re.compile(r"^\s*(?:SyntaxError|IndentationError|TabError)\b.*$", re.M)
# the anchored head rules above as one pattern: one match per observation instead of four
_HEAD_FAILURE = re.compile(f"(?i:{_WIKI.pattern})|(?is:{_JSON_ERROR.pattern})|(?i:{_TIMEOUT.pattern})|"
                           f"{_HEAD_EXCEPTION.pattern}")
_HEAD_KIND = re.compile(f"(?P<error>{_HEAD_FAILURE.pattern})|(?P<http>(?i:{_HTTP.pattern}))")
_TRACEBACK = "Traceback (most recent call last)"
# smolagents' report of a program that failed: `Code execution failed at line 'x = f(1)' due to:
# KeyError: 'W9'` (or `... failed due to: ...`), on a line of its own after the printed output
_CODE_FAILED = re.compile(r"^(?:Error:\s*)?Code execution failed\b[^\n]{0,2000}?\bdue to\b", re.M)
# A Python exception line closing a traceback: "ValueError: bad", "foo.BarError", "KeyboardInterrupt".
_LAST_EXCEPTION = re.compile(r"(?:^|\n)[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit)\b[^\n]*\s*$")
# Test runners report failing tests as their output: content, not a failed call.
_TEST_RUN = re.compile(r"^=+ .*\b(?:passed|failed|error|errors)\b.* =+\s*$|^Ran \d+ tests? in |"
                       r"^(?:FAILED|OK)(?: \(.*\))?\s*$|^FAILED \S+::", re.M)


def is_failure(observation: str | None, pattern: Any = None, *, tool: str | None = None) -> bool:
    """Whether a tool result says the call failed (see the module docstring for the default).

    Parameters
    ----------
    observation
        The environment's answer to the call.
    pattern
        A compiled user pattern (:func:`compile_error_pattern`), searched in the first
        4,000 characters; a match is a failure too.
    tool
        The tool called, when known: an empty answer of a tool that runs commands or code or
        changes state is its success (module docstring).

    Examples
    --------
    >>> is_failure("Could not find [Foo Bar]. Similar: ['Foo', 'Bar'].")
    True
    >>> is_failure("Error: user not found"), is_failure('{"error": "bad id"}'), is_failure("Paris")
    (True, True, False)
    >>> is_failure('{"error": null, "result": 3}'), is_failure('{"errors": []}')
    (False, False)
    >>> is_failure("Error correction code: in computing, ...")
    False
    >>> is_failure("The last command <command>rm -i a.py</command> timed out and has been killed.")
    True
    >>> is_failure("hello\\nTraceback (most recent call last):\\n  File \\"x.py\\", line 2\\n"
    ...            "ZeroDivisionError: division by zero")
    True
    >>> is_failure("F.\\nFAIL: test_x\\nTraceback (most recent call last):\\nAssertionError: 1 != 2\\n\\n"
    ...            "Ran 2 tests in 0.01s\\n\\nFAILED (failures=1)")
    False

    The environment answered with nothing: empty, ``None``, ``null``, ALFWorld's ``Nothing
    happens.``; not a missing observation, nor the empty output of a command or a write:

    >>> [is_failure(o) for o in ("", "  ", "None", "null", "Nothing happens.", None)]
    [True, True, True, True, True, False]
    >>> is_failure("", tool="bash"), is_failure("", tool="write_file"), is_failure("", tool="search_settings")
    (False, False, True)
    >>> is_failure("None of the above"), is_failure("Nothing happens in the second act of the play.")
    (False, False)

    HTTP status lines at the head, whatever follows; error bodies; not a page about a 404:

    >>> is_failure('HTTP/1.1 400 Bad Request\\nContent-Type: application/json\\n\\n{"message": "bad date"}')
    True
    >>> [is_failure(o) for o in ("400 Bad Request", "HTTP 500", "Status: 404", "503 Service Unavailable.",
    ...                          "404 Client Error: Not Found for url: http://x/y", "status code 429",
    ...                          "404 page not found", "Request failed with status code 502",
    ...                          "<html>\\r\\n<head><title>502 Bad Gateway</title></head>")]
    [True, True, True, True, True, True, True, True, True]
    >>> [is_failure(o) for o in ('{"status": 500, "message": "boom"}', '{"status_code": 404}', '{"status": 200}',
    ...                          '{"items": [{"status": 404}]}', '{"detail": "Not Found"}',
    ...                          '{"detail": [{"loc": ["body", "date"], "msg": "field required"}]}',
    ...                          '{"detail": "Order updated"}', '{"detail": {"name": "x"}, "id": 3}')]
    [True, True, False, False, True, True, False, False]
    >>> is_failure("The 404 error page is what a web server returns for a missing page.")
    False
    >>> is_failure("500 Days of Summer is a 2009 film."), is_failure("404 Not Found is a 2009 album by X.")
    (False, False)

    A browser's accessibility tree of an error page (WebArena), not a page that shows a 404 in its text:

    >>> page = "http://shop/orders/9\\n[274] RootWebArea '{}' focused: True\\n  [691] link 'My Account'"
    >>> shown = page.format("Order #9") + "\\n  StaticText '404 Not Found'"
    >>> is_failure(page.format("404 Not Found")), is_failure(shown)
    (True, False)
    >>> outcome = '{"resourceType": "OperationOutcome", "issue": [{"severity": "%s", "code": "not-found"}]}'
    >>> is_failure(outcome % "error"), is_failure(outcome % "information")
    (True, False)

    An error its tool names by kind; an object that only says something, read as what it says;
    a compiler's diagnostics, failed where one is an error (the Lean REPL's answers):

    >>> [is_failure(o) for o in ("Lean error: unknown tactic", "Runtime error: index out of range",
    ...                          "No error: all checks passed", '{"message": "Lean error: simp made no progress"}',
    ...                          '{"message": "Order created", "code": 201}', '{"message": "ok", "data": [1]}')]
    [True, True, False, True, False, False]
    >>> lean = '{"messages": [{"severity": "%s", "pos": {"line": 1, "column": 0}, "data": "x"}], "env": 1}'
    >>> is_failure(lean % "error"), is_failure(lean % "warning"), is_failure('{"proofState": 1, "goals": []}')
    (True, False, False)
    """
    return failure_kind(observation, pattern, tool=tool) is not None


def failure_kind(observation: str | None, pattern: Any = None, *, tool: str | None = None) -> str | None:
    """Which reading says the call failed (one of :data:`FAILURE_KINDS`), or ``None`` when none
    does: the same decision as :func:`is_failure`, with its reason, for the read report.

    Examples
    --------
    >>> failure_kind("None"), failure_kind("HTTP/1.1 503 Service Unavailable"), failure_kind("No Results")
    ('nothing', 'http', 'error')
    >>> failure_kind("BUSY", compile_error_pattern("^busy")), failure_kind("Paris") is None
    ('pattern', True)
    """
    if observation is None:
        return None
    head = observation[:_HEAD]
    if len(head) <= _NOTHING_MAX or not head[:_NOTHING_MAX].strip():
        bare = observation.strip()
        if not bare:
            return None if silent_tool(tool) else "nothing"
        if len(bare) <= _NOTHING_MAX and _NOTHING.match(bare):
            return "nothing"
    found = _HEAD_KIND.match(head)
    if found is not None:
        return found.lastgroup
    if pattern is not None and pattern.search(observation[:_TAIL]):
        return "pattern"
    if head.lstrip()[:1] == "{":
        if _OUTCOME.match(head):
            return "http" if _OUTCOME_ERROR.search(observation[:_TAIL]) else None
        if _DIAGNOSTICS.match(head):
            return "error" if _DIAGNOSTIC_ERROR.search(observation[:_TAIL]) else None
        said = _message_of(observation)
        if said is not None:
            return failure_kind(said, pattern, tool=tool)
        if len(observation) <= 2 * _HEAD:
            detail = _DETAIL.match(observation)
            if detail is not None and not _DETAIL_SUCCESS.search(detail.group(1)):
                return "http"
    # the rules below are anchored or start from a substring test, so a long page that is
    # none of these costs a few substring scans, not a regular-expression search over its tail
    if _TOOL_ERROR.match(head):
        return None if _test_run(observation) else "error"
    if len(observation) <= _SHORT:
        first_line = head.split("\n", 1)[0]
        if len(first_line) <= _SHORT_LINE and _MISSING.search(first_line):
            return "error"
    tail = observation[-_TAIL:]
    if "Code execution failed" in tail and _CODE_FAILED.search(tail):
        return "error"  # smolagents' interpreter: the program stopped at a line, whatever it printed first
    if "Error" not in tail and "Traceback" not in tail:
        return None  # most results: two substring scans of a bounded tail and done
    if _TRACEBACK in tail:
        # a traceback that closes the output (after whatever the script printed first)
        return "error" if _LAST_EXCEPTION.search(tail) is not None and not _test_run(observation) else None
    if "SyntaxError" in tail or "IndentationError" in tail or "TabError" in tail:
        # a syntax error reported without a traceback line: the code never ran
        return "error" if _SYNTAX.search(tail) is not None and not _test_run(observation) else None
    return None


def _message_of(observation: str) -> str | None:
    """The text of an object that only says something (a ``message`` or ``msg`` member, beside at
    most a code, a status, a type or a name), or ``None``; bounded: a longer answer is no such
    object."""
    if len(observation) > _TAIL or not any(f'"{k}"' in observation[:_HEAD] for k in _MESSAGE_KEYS):
        return None
    try:
        body = json.loads(observation)
    except (ValueError, RecursionError):
        return None
    if not isinstance(body, dict) or not body.keys() <= _MESSAGE_BESIDE:
        return None
    said = next((body[k] for k in _MESSAGE_KEYS if isinstance(body.get(k), str)), None)
    return said if said and said.lstrip()[:1] != "{" else None


def silent_tool(tool: str | None) -> bool:
    """Whether ``tool`` is one whose success prints nothing: its name has a word of
    :data:`_SILENT_WORDS` (``execute_bash``, ``runPython``, ``write_file``), or it is a shell
    program's verb that writes (:func:`mechanism.core.actions.verb_object` marks an edit in place
    ``sed -i`` and output sent into a file ``cat to_file``).

    >>> [silent_tool(t) for t in ("execute_bash", "write_file", "sed -i", "cat to_file", "rm", "read_file", "go")]
    [True, True, True, True, True, False, False]
    """
    if not tool:
        return False
    if tool.endswith(_WRITING_MARKS):
        return True
    return any(w.lower() in _SILENT_WORDS for w in _WORD.findall(tool[:200]))


def _test_run(observation: str) -> bool:
    """Whether the output is a test runner's report (its failing tests are content)."""
    return _TEST_RUN.search(observation[-_TAIL:]) is not None


def compile_error_pattern(pattern: Any) -> Any:
    """A user's ``error_pattern`` compiled by RE2 (:func:`mechanism.core.patterns.compile_linear`;
    case-insensitive, ``^`` and ``$`` at every line), with a one-line error naming the option
    when it is not a regular expression RE2 can run. A compiled ``re.Pattern`` (or one this
    function returned) is used as it is; ``None`` stays ``None``.

    Examples
    --------
    >>> compile_error_pattern("^busy").search("BUSY") is not None
    True
    >>> compile_error_pattern("(?<!x)busy")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    mechanism.core.errors.InputError: `error_pattern` uses a feature the linear-time engine (RE2) cannot run
    (invalid perl operator: (?<!): rewrite it without backreferences or lookaround
    """
    if pattern is None or isinstance(pattern, re.Pattern) or isinstance(pattern, LinearPattern):
        return pattern
    return compile_linear(pattern, option="error_pattern", ignore_case=True, multiline=True)


def failure_reader(pattern: Any = None) -> Callable[[str | None], bool]:
    """:func:`is_failure` with a user pattern bound (compiled once)."""
    compiled = compile_error_pattern(pattern)
    return lambda observation: is_failure(observation, compiled)
