"""Fuzz tests over every reader: a hostile file reads, or fails with one line naming the file;
skip accounting always reconciles; time stays linear in the input size.

MECHANISM_HYPOTHESIS_EXAMPLES=2000 runs a longer hunt.
"""
from __future__ import annotations

import json
import os
import tempfile
import warnings
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mechanism.core.errors import InputError, ReadWarning
from mechanism.core.names import escape_control
from mechanism.core.schema import validate
from mechanism.readers import read
from mechanism.readers._answer import extract_answer

N = int(os.environ.get("MECHANISM_HYPOTHESIS_EXAMPLES", "40"))
FUZZ = settings(max_examples=N, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# fragments that reach every branch of the parsers, mixed with hostile text
FRAGMENTS = ["<answer>", "</answer>", "<think>", "</think>", "<search>", "</search>", "<information>",
             "</information>", "\\boxed{", "}", "Final answer:", "Answer:", "Finish[", "]", "Action:",
             "Action 1: search[", "Thought:", "Observation:", "\n", "Question:", "<|im_start|>assistant",
             "$\\frac{x$", "\x1b[31m", "\u202e", "x", "Paris", " ", "[", "\ud800", "\U0001F600"]
texts = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join) | st.text(max_size=40)
scalars = (st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | texts)
json_like = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                         | st.dictionaries(st.sampled_from(["role", "content", "tool_calls", "id", "function",
                                                            "name", "arguments", "tool_call_id", "text"]),
                                           inner, max_size=4), max_leaves=12)


def _message():
    call = st.fixed_dictionaries({"id": st.sampled_from(["a", "b", None]),
                                  "function": st.fixed_dictionaries({"name": st.sampled_from(["search", "finish",
                                                                                              "reflect", ""]),
                                                                     "arguments": texts | json_like})})
    return st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool", "system", None]),
                                  "content": texts | st.none() | json_like},
                                 optional={"tool_calls": st.lists(call, max_size=2),
                                           "tool_call_id": st.sampled_from(["a", "b", 3])})


def _mostly(good, bad):
    """Well-formed values three times in four, so fuzzing reaches the kept-row paths too."""
    return st.one_of(good, good, good, bad)


def _common():
    return {"question_id": _mostly(st.sampled_from(["1", "2"]), scalars),
            "sample_id": _mostly(st.none() | st.integers(0, 3), scalars), "arm": _mostly(st.text(max_size=6), scalars),
            "correct": _mostly(st.none() | st.booleans(), scalars),
            "status": st.sampled_from(["CORRECT", "INCORRECT", None, 1]), "trial": _mostly(st.integers(1, 2), scalars)}


def _required(**fields):
    return {"question": _mostly(texts, scalars),
            "gold": _mostly(st.lists(st.text(max_size=8), max_size=3), st.lists(scalars, max_size=3) | scalars),
            **fields}


STEP = st.fixed_dictionaries({}, optional={k: _mostly(texts, json_like) for k in
                                           ("thought", "tool", "arguments", "query", "observation")})
RECORDS = {
    "searchr1": st.fixed_dictionaries(_required(response=texts), optional=_common()),
    "openai": st.fixed_dictionaries(_required(messages=st.lists(_message(), max_size=6)), optional=_common()),
    "react": st.fixed_dictionaries(_required(text=texts), optional=_common()),
    "canonical": st.fixed_dictionaries(_required(n_rounds=_mostly(st.integers(0, 3), scalars),
                                                 steps=_mostly(st.lists(STEP, max_size=3), json_like | texts)),
                                       optional={**_common(), "answer": texts | scalars}),
    "atif": st.fixed_dictionaries({"schema_version": st.sampled_from(["ATIF-v1.4", "ATIF-v9", 3]),
                                   "steps": st.lists(st.fixed_dictionaries(
                                       {"step_id": scalars, "source": st.sampled_from(["user", "agent", "x"]),
                                        "message": texts | json_like},
                                       optional={"tool_calls": st.lists(json_like, max_size=2)}), max_size=4)},
                                  optional={"extra": st.dictionaries(st.sampled_from(["gold", "correct"]), scalars)}),
}
OPTIONS = st.fixed_dictionaries({}, optional={
    "where": st.sampled_from(["trial = 1", "status = 'CORRECT'", "trial == 1 and not arm"]),
    "round_tools": st.sampled_from(["-reflect", ["search"], "search,-think"]),
    "scorer": st.sampled_from(["em", "f1", "cover-em", "contains"]),
    "answer_pattern": st.sampled_from([r"ANS=(\w+)", r"Paris"]),
    "unanswered": st.sampled_from(["fail", "error"]),
    "columns": st.sampled_from([{"correct": "status:CORRECT"}, {"question_id": "trial"}]),
})


def _check(path: Path, **kw) -> None:
    """One read: a validated table, or one InputError line that names the file."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReadWarning)
        try:
            runs = read(path, **kw)
        except InputError as exc:
            text = str(exc)
            assert "\n" not in text and text.startswith(str(path)) or text.startswith("`"), text
            return
        validate(runs)
        # arm names are labels: kept escaped by the one rule (escaping them again changes nothing)
        assert all(escape_control(a) == a for a in runs["arm"].unique().to_list())
        try:
            runs, rep = read(path, errors="skip", report=True, **kw)
        except InputError as exc:
            assert "\n" not in str(exc)
            return
        assert rep.rows_in == rep.rows_kept + len(rep.skipped) + rep.rows_filtered
        for row in runs.iter_rows():  # everything kept is encodable text
            json.dumps(row, default=str).encode("utf-8")


def _write(records: list, suffix: str, tmp: str) -> Path:
    path = Path(tmp) / f"f{suffix}"
    if suffix == ".jsonl":
        path.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    else:
        path.write_text(json.dumps(records), encoding="utf-8")
    return path


def _fuzz(fmt):
    @FUZZ
    @given(st.lists(RECORDS[fmt], min_size=1, max_size=4), st.sampled_from([".jsonl", ".json"]), OPTIONS,
           st.booleans())
    def run(records, suffix, options, named):
        with tempfile.TemporaryDirectory() as tmp:
            path = _write(records, suffix, tmp)
            _check(path, format=fmt if named else "auto", **options)
    return run


test_fuzz_searchr1 = _fuzz("searchr1")
test_fuzz_openai = _fuzz("openai")
test_fuzz_react = _fuzz("react")
test_fuzz_canonical = _fuzz("canonical")
test_fuzz_atif = _fuzz("atif")


@FUZZ
@given(st.binary(max_size=300), st.sampled_from([b"", b"\xef\xbb\xbf", b"\x1f\x8b", b"\xff\xfe", b"PK\x03\x04",
                                                 b"PAR1", b"{\"version\": 2, \"status\": \"x\", \"eval\": "]),
       st.sampled_from([".jsonl", ".json", ".csv", ".parquet", ".eval", ".tsv", ""]))
def test_fuzz_bytes_every_container(data, head, suffix):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"f{suffix}"
        path.write_bytes(head + data)
        _check(path)


@FUZZ
@given(st.lists(st.fixed_dictionaries({"traj": texts | st.lists(_message(), max_size=3), "reward": scalars,
                                       "pred": texts | scalars}), min_size=1, max_size=3))
def test_fuzz_fireact(values):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "questions").mkdir()
        (root / "questions" / "dev.json").write_text(json.dumps([{"question": "q", "answer": "a", "type": "bridge"}]
                                                                * 3))
        (root / "trajs").mkdir()
        path = root / "trajs" / "gpt-3.5-turbo.json"
        path.write_text(json.dumps({str(i): v for i, v in enumerate(values)}))
        _check(path)


@FUZZ
@given(texts, st.integers(1, 64))
def test_answer_extraction_is_total_and_bounded(text, repeat):
    answer, rule = extract_answer(text * repeat)
    assert answer is None or len(answer) <= len(text * repeat)
    assert rule in {"pattern", "answer_tag", "boxed", "final_answer", "answer_line", "answer_is", "finish",
                    "whole_message", "none"}


# Reading time against input size (mixed fragments included) is measured in
# benchmarks/bench_hostile_read.py, not asserted here: no wall-clock assertion in a test.


_INSPECT_BASE: dict = {}


def _inspect_log_json(tmp: str) -> dict:
    """A JSON log written by inspect_ai itself (built once per session)."""
    if not _INSPECT_BASE:
        import pytest

        log_mod = pytest.importorskip("inspect_ai.log", reason="the `inspect` extra is not installed")
        from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser
        from inspect_ai.scorer import Score
        from inspect_ai.tool import ToolCall

        call = ToolCall(id="c1", function="search", arguments={"query": "x"})
        sample = log_mod.EvalSample(id="q1", epoch=1, input="q", target="Paris", scores={"m": Score(value="C")},
                                    messages=[ChatMessageUser(content="q"),
                                              ChatMessageAssistant(content="", tool_calls=[call]),
                                              ChatMessageTool(content="obs", tool_call_id="c1", function="search"),
                                              ChatMessageAssistant(content="Final answer: Paris")])
        spec = log_mod.EvalSpec(created="2026-01-01T00:00:00+00:00", task="t", dataset=log_mod.EvalDataset(name="d"),
                                model="m/x", config=log_mod.EvalConfig())
        path = Path(tmp) / "base.json"
        log_mod.write_eval_log(log_mod.EvalLog(eval=spec, samples=[sample], status="success"), str(path), format="json")
        _INSPECT_BASE["doc"] = json.loads(path.read_text())
    return json.loads(json.dumps(_INSPECT_BASE["doc"]))


INSPECT_TARGETS = [("samples", 0, "target"), ("samples", 0, "id"), ("samples", 0, "epoch"), ("samples", 0, "input"),
                   ("samples", 0, "scores"), ("samples", 0, "messages", 1, "tool_calls"),
                   ("samples", 0, "messages", 2, "tool_call_id"), ("samples", 0, "messages", 3, "content"),
                   ("samples", 0, "messages", 0, "role"), ("eval", "model"), ("samples",)]


@settings(max_examples=max(10, N // 2), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(INSPECT_TARGETS), json_like), min_size=1, max_size=3))
def test_fuzz_inspect_json_logs(edits):
    with tempfile.TemporaryDirectory() as tmp:
        doc = _inspect_log_json(tmp)
        def holds(node, key) -> bool:
            if isinstance(node, dict):
                return isinstance(key, str)
            return isinstance(node, list) and isinstance(key, int) and key < len(node)

        for target, value in edits:
            node = doc
            for key in target[:-1]:
                node = node[key] if holds(node, key) and (isinstance(node, list) or key in node) else None
            if holds(node, target[-1]):
                node[target[-1]] = value
        path = Path(tmp) / "log.json"
        path.write_text(json.dumps(doc))
        _check(path)


# ----------------------------------------------------------------------------- the one escaping rule
# escape_control (figures, tables, file-name notes) and terminal_safe (every CLI print) share it.
ESCAPED = ("Cc", "Cf", "Cs", "Zl", "Zp")
HOSTILE = ["\x1b[31m", "\x1b]0;title\x07", "\u202e", "\u2066", "\u2069", "\u200b", "\u200d", "\ufeff", "\u2028",
           "\u2029", "\x85", "\x7f", "\x00", "\r", "\n", "\t", "\ud800", "\udfff", "\U000e0001", "\\", "\\x1b",
           "\\u202e", "\\n", "é", "強化", "🚀", "\u00a0", "\U0010fffd"]
any_text = st.lists(st.text(st.characters(exclude_categories=()), max_size=8)
                    | st.text(st.characters(categories=list(ESCAPED)), max_size=4)
                    | st.sampled_from(HOSTILE), max_size=12).map("".join)
printable_text = st.text(st.characters(exclude_categories=ESCAPED), max_size=40)


def _no_literal_escape(text: str) -> bool:
    from mechanism.core.names import _ESCAPE_FORM

    return not _ESCAPE_FORM.search(text)


@FUZZ
@given(any_text)
def test_escaped_text_holds_no_control_format_surrogate_or_separator(text):
    import unicodedata

    from mechanism._cli._common import terminal_safe
    from mechanism.core.names import display_name, escape_control

    shown = escape_control(text)
    assert not [ch for ch in shown if unicodedata.category(ch) in ESCAPED], shown
    shown.encode("utf-8")  # no lone surrogate left: the text can be written anywhere
    assert escape_control(shown) == shown  # idempotent: escaping twice is escaping once
    # one rule: the terminal shows what a figure shows, save the report's own newlines and tabs
    assert terminal_safe(text) == escape_control(text, keep="\n\t")
    line = text.replace("\n", " ").replace("\t", " ")
    assert terminal_safe(line) == escape_control(line) == display_name(line, max_length=10**6, mathtext=False)


@FUZZ
@given(printable_text)
def test_text_without_escaped_characters_is_unchanged(text):
    from mechanism._cli._common import terminal_safe
    from mechanism.core.names import escape_control

    assert escape_control(text) == text and terminal_safe(text) == text


@FUZZ
@given(any_text, st.integers(0, 64), st.sampled_from(HOSTILE) | st.characters(exclude_categories=()),
       st.booleans())
def test_distinct_texts_stay_distinct_and_the_escapes_reverse(a, at, piece, replace):
    """Texts one edit apart (a character put in or swapped) get different renderings, and
    every rendering turns back into its text, whenever neither text holds a literal escape
    (``\\x1b`` as four characters): idempotence shows that one as the character it spells."""
    from hypothesis import assume

    from mechanism.core.names import _unescape_control, escape_control

    at = min(at, len(a))
    b = a[:at] + piece + a[at + (1 if replace else 0):]
    assume(_no_literal_escape(a) and _no_literal_escape(b))
    for text in (a, b):
        assert _unescape_control(escape_control(text)) == text
    assert (escape_control(a) == escape_control(b)) == (a == b)


def test_escape_examples_and_the_price_of_idempotence():
    from mechanism.core.names import escape_control

    assert escape_control("rl\x1b[31m\u202eZ\u200b\u2066x\u2069") == "rl\\x1b[31m\\u202eZ\\u200b\\u2066x\\u2069"
    assert escape_control("a\ud800b\u2028c\x85\x7f\ufeff") == "a\\ud800b\\u2028c\\x85\\x7f\\ufeff"
    assert escape_control("line\r\n\ttab") == "line\\r\\n\\ttab"
    kept = "café Ærø 強化学習 한국어 العربية 🚀🇫🇷👍🏽 1️⃣ a\u00a0b C:\\runs\\rl $x$"
    assert escape_control(kept) == kept
    # idempotent, so the literal text of an escape and the character it names render alike
    assert escape_control("\x1b") == escape_control("\\x1b") == "\\x1b"
    assert escape_control(escape_control("\x1b\u202e")) == escape_control("\x1b\u202e")
