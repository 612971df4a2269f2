"""Another look of the same tool is a move of its own: how many files an agent opens, or how
many e-mails of a listing it reads, can be the strategy (the terminal world's `read_many`); only a
failed call its retry replaces is read as one attempt with it."""
from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.analysis._strategies.features import tool_plan
from mechanism.analysis.segmentation import render, segment
from mechanism.core.schema import from_records, make_step

QUESTION = "The test test_parse_header fails with IndexError in src/pkg/parser.py; please fix it."


def _runs(steps, question=QUESTION):
    return from_records([{"arm": "a", "question_id": "q", "sample_id": 0, "question": question, "gold": [],
                          "answer": "fixed", "correct": True, "n_rounds": len(steps), "steps": steps}])


def call(tool, observation="ok", **args):
    return make_step(tool=tool, arguments=json.dumps(args), observation=observation)


def _attempt_tools(steps, **kw):
    return render(_runs(steps), **kw)["tools"][0]


def test_a_second_file_opened_before_editing_is_a_move_of_its_own():
    steps = [call("open_file", "def parse_header(rows): ...", path="src/pkg/parser.py"),
             call("open_file", "from pkg.parser import parse_header", path="src/pkg/cli.py"),
             call("edit_file", "edited", path="src/pkg/parser.py", old="rows[0]", new="rows[0] if rows else None")]
    assert _attempt_tools(steps) == "open_file > open_file > edit_file"
    assert tool_plan(_attempt_tools(steps)) == "open_file+ > edit_file"  # called again: not the plan of one look
    moves = segment(_runs(steps))
    assert moves.filter(moves["tool"] != "answer")["relation"].to_list() == ["first", "new", "switch"]
    assert "folded" not in moves.columns
    assert render(_runs(steps))["n_rounds"][0] == 3
    assert _attempt_tools(steps, retries="keep") == "open_file > open_file > edit_file"


def test_reading_many_files_is_a_plan_apart_from_reading_one():
    one = [call("cat", "def parse_header ...", path="src/pkg/parser.py"), call("sed_i", "", path="src/pkg/parser.py")]
    many = [call("cat", "def parse_header ...", path="src/pkg/parser.py"),
            call("cat", "import ...", path="src/pkg/cli.py"),
            call("cat", "def test ...", path="tests/test_parser.py"), call("sed_i", "", path="src/pkg/parser.py")]
    assert tool_plan(_attempt_tools(one)) == "cat > sed_i"
    assert tool_plan(_attempt_tools(many)) == "cat+ > sed_i"


def test_a_chain_that_carries_what_the_first_call_found_stays_two_moves():
    steps = [call("run_sql", '[{"customer_id": 48213}]', query="SELECT customer_id FROM customers WHERE name = 'Acme'"),
             call("run_sql", '[{"total": 9}]', query="SELECT COUNT(*) FROM orders WHERE customer_id = 48213")]
    assert _attempt_tools(steps) == "run_sql > run_sql"


def test_looks_at_what_another_tool_listed_are_each_a_move():
    listing = "id=m_7781 from Omar: invoice; id=m_7790 from Omar: invoice again"
    steps = [call("search_email", listing, query="Omar invoice"), call("read_email", "Hi ...", id="m_7781"),
             call("read_email", "Hello again ...", id="m_7790"),
             call("send_email", "sent", to="omar@example.com", subject="Re: invoice", body="Paid.")]
    assert _attempt_tools(steps) == "search_email > read_email > read_email > send_email"


def test_searches_revisions_and_repeats_are_never_folded():
    search = [call("search", "Dana Petrov ...", query="Glass Harbor director"),
              call("search", "Lyon ...", query="Lyon population")]
    assert _attempt_tools(search) == "search > search"
    revise = [call("open_file", "...", path="src/pkg/parser.py", start_line=1),
              call("open_file", "...", path="src/pkg/parser.py", start_line=80)]
    assert _attempt_tools(revise) == "open_file > open_file"
    repeat = [call("scroll", "rows 1-10", direction="down"), call("scroll", "rows 11-20", direction="down")]
    assert _attempt_tools(repeat) == "scroll > scroll"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["open_file", "list_events", "search"]),
                          st.sampled_from(["a.py", "b.py", "c.py", "2026-03-01", "x y"]),
                          st.booleans()), min_size=1, max_size=6))
def test_only_a_failed_call_its_retry_replaces_leaves_the_attempts(calls):
    steps = [call(tool, "Error: not found" if failed else f"result of {arg}", path=arg) for tool, arg, failed in calls]
    moves = segment(_runs(steps))
    calls_only = moves.filter(moves["tool"] != "answer")
    tools, retried = calls_only["tool"].to_list(), calls_only["retried"].to_list()
    assert len(tools) == len(steps)
    for i, (tool, _, failed) in enumerate(calls):
        # retried: failed, and the next call is the same tool (module docstring)
        assert retried[i] == (failed and i + 1 < len(calls) and calls[i + 1][0] == tool)
    kept = [t for t, r in zip(tools, retried) if not r]
    assert render(_runs(steps))["tools"][0] == " > ".join(kept)
    assert render(_runs(steps), retries="keep")["tools"][0].replace("!", "") == " > ".join(tools)
