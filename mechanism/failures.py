"""Failed tool calls, read the way environments report them.

A failed call is one the environment could not carry out: a Wikipedia lookup that found no
page, a tool that returned an error, an action the environment did not understand, an id or
file that does not exist, code that could not run to its end. An observation whose
*content* is about an error is a call that worked: a test run that reports failing tests, a
page about error-correcting codes, a film called "Invalid".

:func:`is_failure` reads an observation with a default that covers what common environments
return (below), plus any regular expression the user names (``error_pattern=``). The readers
count failures per tool for the read report and the move grammar (mechanism.segmentation)
marks ``failed`` calls and their retries with it, so both say the same.

Default reading (on the observation's head, bounded, so the cost per call is constant):

- Wikipedia ReAct environments: ``Could not find [X]. Similar: [...]``, ``No Results``,
  ``No more results``, ``There were no results matching the query``, ``Invalid Action``,
  ``The last page Searched was not found`` (Reflexion's lookup after a failed search);
- tool errors: a result that opens with ``Error``/``Exception``/``ERROR`` followed by ``:``
  (or ``-``, ``!``), ``Error executing``/``Error calling``/``Error in``, ``Failed to``,
  ``Invalid <argument|action|input|id|...>``, ``Unknown tool``/``unknown action``,
  ``Permission denied``, ``Access denied``; an error object (``{"error": ...}``,
  ``{"status": "error"}``, ``{"success": false}``);
- a missing thing: ``... not found`` / ``does not exist`` / ``No such file or directory`` /
  ``unknown tool`` / ``generated an exception`` within the first line of a short result
  (``User not found``, ``Order #W1 does not exist``), not inside a long page;
- code tools: a ``SyntaxError``/``IndentationError`` printed without a ``Traceback`` line, a
  bare exception line (``KeyError: 'x'``), a timeout notice (``Timeout: ...``, ``timed out``,
  ``Time limit exceeded``), and a Python traceback
  that ends the output, before or after printed output, unless the output is a test run's
  report (pytest or unittest summary lines), whose failing tests are content.
"""
from __future__ import annotations

import re
from collections.abc import Callable

from mechanism.errors import InputError

__all__ = ["is_failure", "compile_error_pattern", "failure_reader"]

_HEAD = 300  # characters of an observation that the head rules read
_TAIL = 4_000  # characters at the end that the traceback and syntax-error rules read
_SHORT = 400  # a "not found" result is a short message, not a page that mentions one
_SHORT_LINE = 120

_WIKI = re.compile(r"^\W{0,3}(could not find\b|no results\W*$|no more results\W*$|"
                   r"there were no results matching the query|invalid action\b|"
                   r"the last page searched was not found\b)", re.I)
_TOOL_ERROR = re.compile(
    r"^\W{0,3}(?:(?:error|exception|fatal)\s*(?:\d{3}\s*)?[:!\-\]]|error (?:executing|calling|in|while|running|"
    r"during|occurred)\b|(?:an )?error occurred\b|failed to\b|failure:|tool (?:error|failed)\b|"
    r"invalid (?:argument|arguments|action|input|id|parameter|parameters|request|command|tool|value|query|"
    r"json|format|syntax)\b|unknown (?:tool|action|command|function)\b|permission denied\b|access denied\b|"
    r"unauthorized\b|traceback \(most\b)", re.I)
_JSON_ERROR = re.compile(r'^\s*\{\s*"(?:error|exception|error_message)"\s*:|^\s*\{.{0,200}"status"\s*:\s*"(?:error|'
                         r'failed|failure)"|^\s*\{.{0,200}"success"\s*:\s*false\b', re.I | re.S)
# "User not found", "Order #W1 does not exist.", "File not found: x": the phrase closes a clause
# (a title such as "Not Found is a 2009 album" does not)
_MISSING = re.compile(r"\b(?:(?:not found|does not exist|doesn't exist|could not be found|cannot be found)"
                      r"\s*(?:[.:!,;)]|$)|no such file or directory\b|generated an exception\b|"
                      r"unknown tool(?: name)?\b)", re.I)
_TIMEOUT = re.compile(r"^\W{0,3}(?:timeout(?:error)?\s*[:!]|timeout (?:after|expired|exceeded|reached)\b|"
                      r"timed out\b|execution timed out|time ?limit exceeded|"
                      r"(?:the )?(?:command|execution|process|cell|code|request|call|tool) "
                      r"(?:timed out|took too long))", re.I)
# a bare exception line as the whole answer of a code tool ("KeyError: 'x'", "TimeoutError: ...")
_HEAD_EXCEPTION = re.compile(r"^\s*[A-Z][\w.]*(?:Error|Exception)\s*:")
_SYNTAX = re.compile(r"^\s*(?:SyntaxError|IndentationError|TabError)\b.*$", re.M)
# the anchored head rules above as one pattern: one match per observation instead of four
_HEAD_FAILURE = re.compile(f"(?i:{_WIKI.pattern})|(?is:{_JSON_ERROR.pattern})|(?i:{_TIMEOUT.pattern})|"
                           f"{_HEAD_EXCEPTION.pattern}")
_TRACEBACK = "Traceback (most recent call last)"
# A Python exception line closing a traceback: "ValueError: bad", "foo.BarError", "KeyboardInterrupt".
_LAST_EXCEPTION = re.compile(r"(?:^|\n)[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit)\b[^\n]*\s*$")
# Test runners report failing tests as their output: content, not a failed call.
_TEST_RUN = re.compile(r"^=+ .*\b(?:passed|failed|error|errors)\b.* =+\s*$|^Ran \d+ tests? in |"
                       r"^(?:FAILED|OK)(?: \(.*\))?\s*$|^FAILED \S+::", re.M)


def is_failure(observation: str | None, pattern: "re.Pattern[str] | None" = None) -> bool:
    """Whether a tool result says the call failed (see the module docstring for the default).

    Parameters
    ----------
    observation
        The environment's answer to the call.
    pattern
        A compiled user pattern (:func:`compile_error_pattern`), searched in the first
        4,000 characters; a match is a failure too.

    Examples
    --------
    >>> is_failure("Could not find [Foo Bar]. Similar: ['Foo', 'Bar'].")
    True
    >>> is_failure("Error: user not found"), is_failure('{"error": "bad id"}'), is_failure("Paris")
    (True, True, False)
    >>> is_failure("Error correction code: in computing, ...")
    False
    >>> is_failure("hello\\nTraceback (most recent call last):\\n  File \\"x.py\\", line 2\\nZeroDivisionError: division by zero")
    True
    >>> is_failure("F.\\nFAIL: test_x\\nTraceback (most recent call last):\\nAssertionError: 1 != 2\\n\\nRan 2 tests in 0.01s\\n\\nFAILED (failures=1)")
    False
    """
    if not observation:
        return False
    head = observation[:_HEAD]
    if _HEAD_FAILURE.match(head):
        return True
    if pattern is not None and pattern.search(observation[:_TAIL]):
        return True
    # the rules below are anchored or start from a substring test, so a long page that is
    # none of these costs a few substring scans, not a regular-expression search over its tail
    if _TOOL_ERROR.match(head):
        return not _test_run(observation)
    if len(observation) <= _SHORT:
        first_line = head.split("\n", 1)[0]
        if len(first_line) <= _SHORT_LINE and _MISSING.search(first_line):
            return True
    tail = observation[-_TAIL:]
    if "Error" not in tail and "Traceback" not in tail:
        return False  # most results: two substring scans of a bounded tail and done
    if _TRACEBACK in tail:
        # a traceback that closes the output (after whatever the script printed first)
        return _LAST_EXCEPTION.search(tail) is not None and not _test_run(observation)
    if "SyntaxError" in tail or "IndentationError" in tail or "TabError" in tail:
        # a syntax error reported without a traceback line: the code never ran
        return _SYNTAX.search(tail) is not None and not _test_run(observation)
    return False


def _test_run(observation: str) -> bool:
    """Whether the output is a test runner's report (its failing tests are content)."""
    return _TEST_RUN.search(observation[-_TAIL:]) is not None


def compile_error_pattern(pattern: "str | re.Pattern[str] | None") -> "re.Pattern[str] | None":
    """A user's ``error_pattern`` compiled (case-insensitive, multi-line), with a one-line
    error naming the option when it is not a regular expression."""
    if pattern is None or isinstance(pattern, re.Pattern):
        return pattern
    if not isinstance(pattern, str) or not pattern:
        raise InputError("`error_pattern` must be a non-empty regular expression", field="error_pattern")
    try:
        return re.compile(pattern, re.I | re.M)
    except re.error as exc:
        raise InputError(f"`error_pattern` is not a valid regular expression ({exc})", field="error_pattern") from None


def failure_reader(pattern: "str | re.Pattern[str] | None" = None) -> Callable[[str | None], bool]:
    """:func:`is_failure` with a user pattern bound (compiled once)."""
    compiled = compile_error_pattern(pattern)
    return lambda observation: is_failure(observation, compiled)
