"""Another look of the same tool is one attempt: a call of a tool that does not
retrieve, right after an attempt of that tool, on another object and carrying nothing that
attempt found, is folded into it; chains, revisions, repeats and searches stay moves."""
from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

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


def test_a_second_file_opened_before_editing_is_one_look():
    steps = [call("open_file", "def parse_header(rows): ...", path="src/pkg/parser.py"),
             call("open_file", "from pkg.parser import parse_header", path="src/pkg/cli.py"),
             call("edit_file", "edited", path="src/pkg/parser.py", old="rows[0]", new="rows[0] if rows else None")]
    assert _attempt_tools(steps) == "open_file > edit_file"
    moves = segment(_runs(steps))
    assert moves.filter(moves["tool"] != "answer")["folded"].to_list() == [False, True, False]
    # every call is still a round and a move of the table; only the attempts change
    assert render(_runs(steps))["n_rounds"][0] == 3
    assert _attempt_tools(steps, retries="keep") == "open_file > open_file > edit_file"


def test_a_chain_that_carries_what_the_first_call_found_stays_two_moves():
    steps = [call("run_sql", '[{"customer_id": 48213}]', query="SELECT customer_id FROM customers WHERE name = 'Acme'"),
             call("run_sql", '[{"total": 9}]', query="SELECT COUNT(*) FROM orders WHERE customer_id = 48213")]
    assert _attempt_tools(steps) == "run_sql > run_sql"


def test_looks_at_what_another_tool_listed_are_one_look():
    listing = "id=m_7781 from Omar: invoice; id=m_7790 from Omar: invoice again"
    steps = [call("search_email", listing, query="Omar invoice"), call("read_email", "Hi ...", id="m_7781"),
             call("read_email", "Hello again ...", id="m_7790"),
             call("send_email", "sent", to="omar@example.com", subject="Re: invoice", body="Paid.")]
    assert _attempt_tools(steps) == "search_email > read_email > send_email"


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
                          st.sampled_from(["a.py", "b.py", "c.py", "2026-03-01", "x y"])), min_size=1, max_size=6))
def test_folding_only_removes_calls_that_follow_their_own_tool(calls):
    steps = [call(tool, f"result of {arg}", path=arg) for tool, arg in calls]
    moves = segment(_runs(steps))
    calls_only = moves.filter(moves["tool"] != "answer")
    tools, folded = calls_only["tool"].to_list(), calls_only["folded"].to_list()
    assert len(tools) == len(steps) and not folded[0]
    for i in range(1, len(tools)):
        if folded[i]:
            assert tools[i] == tools[i - 1] and tools[i] != "search"
    kept = [t for t, f in zip(tools, folded) if not f]
    assert render(_runs(steps))["tools"][0] == " > ".join(kept)
