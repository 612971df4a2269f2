"""The move grammar: tools, where each argument value came from, relations to earlier calls,
failed calls and retries, search readings; renderings carry no content."""
from __future__ import annotations

import json

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.analysis._strategies.naming import step_labels
from mechanism.analysis.segmentation import (
    DESCRIPTIVE_COLUMNS,
    MAX_STEPS_RENDERED,
    MOVES,
    RELATIONS,
    argument_values,
    atoms,
    is_error,
    render,
    segment,
    segment_all,
    tool_name,
)
from mechanism.core.errors import InputError
from mechanism.core.schema import from_records, make_step

QUESTION = "Where was the director of Glass Harbor born?"


def _runs(steps, answer="Lyon", question=QUESTION, n=1):
    return from_records([{"arm": "a", "question_id": f"q{i}", "sample_id": 0, "question": question,
                          "gold": ["Lyon"], "answer": answer, "correct": answer == "Lyon",
                          "n_rounds": len(steps), "steps": steps} for i in range(n)])


def s(query, observation="No results."):
    return make_step(tool="search", query=query, observation=observation)


def call(tool, observation="ok", **args):
    return make_step(tool=tool, arguments=json.dumps(args), observation=observation)


FILM = "Glass Harbor is a film directed by Dana Petrov."
BIO = "Dana Petrov was born in Lyon and works in cinema."
USER = "Hi, I'm Mia Li (mia.li@example.com). Please cancel order #W4830391, it was ordered by mistake."


def test_bridge_reformulation_repeat_verification():
    moves = segment(_runs([s("Glass Harbor director", FILM), s("Dana Petrov birthplace", BIO),
                           s("Dana Petrov born Lyon", BIO), s("Dana Petrov born Lyon", BIO)]))
    assert moves["move"].to_list() == ["first_lookup", "bridge_lookup", "verification", "repeat", "answer"]
    assert moves["sources"].to_list()[:3] == ["user", "result+new", "user+call+result"]


def test_parallel_lookups_share_no_object():
    q = "Who is older, Danny Green or James Worthy?"
    moves = segment(_runs([s("Danny Green born", "Green (born 1987)"), s("James Worthy born", "Worthy (born 1961)")],
                          question=q))
    assert moves["move"].to_list()[:2] == ["first_lookup", "parallel_lookup"]
    assert moves["relation"].to_list()[:2] == ["first", "new"]


def test_values_of_any_shape_are_traced_to_their_source():
    steps = [call("find_user_id_by_email", "mia_li_3668", email="mia.li@example.com"),
             call("get_user_details", json.dumps({"orders": ["#W4830391", "#W1111111"]}), user_id="mia_li_3668"),
             call("get_order_details", '{"status": "pending"}', order_id="#W1111111"),
             call("cancel_pending_order", '{"status": "cancelled"}', order_id="#W4830391", reason="ordered by mistake"),
             call("get_order_details", '{"status": "cancelled"}', order_id="#W4830391"),
             call("transfer_to_human_agents", "ok", summary="mia_li_3668 refund")]
    moves = segment(_runs(steps, answer="done", question=USER))
    assert moves["tool"].to_list()[:6] == ["find_user_id_by_email", "get_user_details", "get_order_details",
                                           "cancel_pending_order", "get_order_details", "transfer_to_human_agents"]
    # an id first met in a result is carried from the result, not new; an e-mail, an order
    # code and a lower-case phrase from the user turn are the user's
    assert moves["sources"].to_list()[:6] == ["user", "result", "result", "user", "user", "call+new"]
    assert moves["relation"].to_list()[:6] == ["first", "first", "first", "first", "switch", "switch"]
    assert not moves["move"].is_in(["bridge_lookup", "repeat", "new_lookup"]).any()  # not a search tool


def test_a_turn_the_user_answers_is_a_move_of_the_plan():
    # dual control: the agent asks the customer to check the phone, then looks the line up; or
    # looks it up first. The same calls, two plans: where the agent waited for the user is a move
    ask_first = [make_step(tool="get_line", arguments='{"line": "LN1"}', observation="ok",
                           user="Mobile data was off; I turned it on. My line is LN1."),
                 make_step(tool="reset_network", arguments='{"line": "LN1"}', observation="done")]
    lookup_first = [make_step(tool="get_line", arguments='{"line": "LN1"}', observation="ok"),
                    make_step(tool="reset_network", arguments='{"line": "LN1"}', observation="done",
                              user="Mobile data was off; I turned it on.")]
    first, second = (segment(_runs(steps, question="My phone has no data.")) for steps in (ask_first, lookup_first))
    assert first["tool"].to_list() == ["ask_user", "get_line", "reset_network", "answer"]
    assert second["tool"].to_list() == ["get_line", "ask_user", "reset_network", "answer"]
    # what the user said is still where the next call's values came from
    assert first["sources"].to_list()[1] == "user" and not first["failed"].any()
    tools = render(_runs(ask_first))["tools"].to_list()
    assert tools == ["ask_user > get_line > reset_network"]


def test_calls_issued_together_differ_from_a_chain_of_the_same_calls():
    # parallel function calling: three searches in one message against one per message
    cities = ("Lyon", "Nantes", "Lille")
    steps = [call("web_search", f"{c}: {n} people", query=f"population of {c}") for c, n in zip(cities, (5, 3, 2))]
    fanout = [steps[0], *({**st, "parallel": True} for st in steps[1:])]
    chain, together = (render(_runs(x, question="Which of Lyon, Nantes, Lille is largest?")) for x in (steps, fanout))
    assert chain["tools"][0] == together["tools"][0]  # the same plan of tools
    a, b = set(chain["tokens"][0].split()), set(together["tokens"][0].split())
    assert b - a == {"B:web_search/first&web_search/revise", "B:web_search/revise&web_search/revise",
                     "P:web_search/revise"}
    assert together["moves"][0] == "first_lookup > reformulation& > reformulation& > answer"
    assert step_labels(together["moves"][0].split(" > ")[:3], ["web_search"] * 3)[1:] == [
        "web_search (reworded, same message)"] * 2


def test_a_failed_call_of_a_batch_is_retried_by_a_later_message_not_by_its_sibling():
    first = call("web_search", "Error: rate limited", query="population of Lyon")
    sibling = {**call("web_search", "Nantes: 3", query="population of Nantes"), "parallel": True}
    retry = call("web_search", "Lyon: 5", query="population of Lyon")
    moves = segment(_runs([first, sibling, retry], question="Which of Lyon, Nantes is larger?"))
    assert moves["retried"].to_list() == [True, False, False, False]
    # without the mark the next call of the tool (the sibling) would have been read as the retry
    plain = segment(_runs([first, {k: v for k, v in sibling.items() if k != "parallel"}, retry],
                          question="Which of Lyon, Nantes is larger?"))
    assert plain["retried"].to_list()[0] is True and plain["failed"].to_list()[:3] == [True, False, False]


def test_a_call_cannot_carry_what_a_call_of_its_own_message_returned():
    # the second search names Vienne, which the first one's result says: sent together, the
    # agent had not seen that result; sent after it, it had
    steps = [call("web_search", "Lyon lies on the Rhone near Vienne.", query="where is Lyon"),
             call("web_search", "Vienne: 30,000", query="population of Vienne")]
    question = "How far is Lyon from the town downstream of it?"
    after = segment(_runs(steps, question=question))
    together = segment(_runs([steps[0], {**steps[1], "parallel": True}], question=question))
    assert "result" in after["sources"][1] and "result" not in together["sources"][1]


def test_a_retry_of_a_call_that_failed_in_a_batch_counts_as_sent_with_the_batch():
    ok = [call("web_search", f"{c}: {n}", query=f"population of {c}") for c, n in (("Lyon", 5), ("Nantes", 3))]
    failed = {**call("web_search", "HTTP 503 Service Unavailable", query="population of Nantes"), "parallel": True}
    clean = render(_runs([ok[0], {**ok[1], "parallel": True}], question="Lyon or Nantes?"))
    retried = render(_runs([ok[0], failed, ok[1]], question="Lyon or Nantes?"))
    assert retried["tokens"][0] == clean["tokens"][0] and retried["moves"][0] == clean["moves"][0]
    assert retried["n_failed"][0] == 1.0


def test_calls_of_a_failed_batch_are_each_retried_by_their_own_tool_in_the_next_message():
    batch = [call("web_search", "HTTP 503 Service Unavailable", query="Lyon"),
             {**call("open_page", "HTTP 503 Service Unavailable", url="x.org/lyon"), "parallel": True}]
    again = [call("web_search", "Lyon: 5", query="Lyon"),
             {**call("open_page", "ok", url="x.org/lyon"), "parallel": True}]
    moves = segment(_runs([*batch, *again], question="How big is Lyon?"))
    assert moves["retried"].to_list() == [True, True, False, False, False]


def test_read_change_read_again_is_a_return_not_a_repeat():
    steps = [call("get_order_details", "{}", order_id="#W4830391"),
             call("cancel_pending_order", "{}", order_id="#W4830391", reason="ordered by mistake"),
             call("get_order_details", "{}", order_id="#W4830391")]
    assert segment(_runs(steps, question=USER))["relation"].to_list()[:3] == ["first", "switch", "return"]


def test_failed_calls_and_retries():
    """Kept apart (retries="keep"): every call a move, failures and retries marked."""
    steps = [call("cancel_pending_order", "Error: order is locked", order_id="#W4830391"),
             call("cancel_pending_order", "Error: order is locked", order_id="#W4830391"),
             call("cancel_pending_order", '{"status": "cancelled"}', order_id="#W4830391", reason="mistake")]
    moves = segment(_runs(steps, question=USER), retries="keep")
    assert moves["failed"].to_list()[:3] == [True, True, False]
    assert moves["after_error"].to_list()[:3] == [False, True, True]
    assert moves["relation"].to_list()[:3] == ["first", "repeat", "revise"]
    assert moves["retried"].to_list()[:3] == [True, True, False]  # the same flags in either reading
    tokens = render(_runs(steps, question=USER), retries="keep")["tokens"][0].split()
    assert "T:cancel_pending_order!" in tokens and "T:cancel_pending_order" in tokens


def test_a_failed_call_and_its_retry_are_one_attempt_by_default():
    """Merged (default): the failures and the retry that went through are one attempt of the
    move, read as if it had worked the first time; the flags stay in the moves table and the
    trajectory's counts, never in what defines the strategy."""
    lookup = call("get_order_details", '{"status": "pending"}', order_id="#W4830391")
    failing = [call("cancel_pending_order", "Error: order is locked", order_id="#W4830391"),
               call("cancel_pending_order", "Error: order is locked", order_id="#W4830391"),
               call("cancel_pending_order", '{"status": "cancelled"}', order_id="#W4830391", reason="mistake")]
    clean = [call("cancel_pending_order", '{"status": "cancelled"}', order_id="#W4830391", reason="mistake")]
    failed_run, clean_run = _runs([lookup, *failing], question=USER), _runs([lookup, *clean], question=USER)
    moves = segment(failed_run)
    assert moves["retried"].to_list() == [False, True, True, False, False]
    assert moves["failed"].to_list()[:4] == [False, True, True, False]
    a, b = render(failed_run), render(clean_run)
    for column in ("tokens", "rendering", "moves", "tools"):
        assert a[column][0] == b[column][0], column
    assert "!" not in a["tokens"][0] and "error" not in a["rendering"][0]
    assert (a["n_failed"][0], a["n_retries"][0], a["n_rounds"][0]) == (2.0, 2.0, 4.0)
    assert (b["n_failed"][0], b["n_retries"][0]) == (0.0, 0.0)
    # a failed call nobody retried is the move it attempted, and an answer right after it ends
    # the episode otherwise (the agent gave up on that call); another tool after a failure is
    # a move of its own (a fallback, not a retry)
    unretried = render(_runs([lookup, failing[0]], question=USER))["tokens"][0].split()
    made = render(_runs([lookup, clean[0]], question=USER))["tokens"][0].split()
    assert unretried[:-2] == made[:-2]
    assert unretried[-2:] == ["B:cancel_pending_order/switch>answer_after_failure", "E:answer_after_failure"]
    assert made[-2:] == ["B:cancel_pending_order/switch>answer", "E:answer"]
    fallback = segment(_runs([call("find_user_id_by_email", "Error: user not found", email="a@b.c"),
                              call("find_user_id_by_name_zip", '"u_1"', first_name="mia", zip="10001")],
                             question=USER))
    assert fallback["retried"].to_list()[:2] == [False, False]
    with pytest.raises(InputError, match="`retries`"):
        render(clean_run, retries="drop")


def test_a_call_answered_by_an_http_error_and_not_retried_stays_a_move_of_its_own():
    """A guessed URL that lands on a 404 page, then a link from it: the failed goto stays a
    move, marked, beside a goto that reached its page; retried by the same tool it is one
    attempt as ever, and a traceback the agent moves on from stays unmarked (it is the
    environment's report on the work)."""
    question = "What is the status of order 560022?"
    page = "http://shop/orders/560022\n[274] RootWebArea '{}' focused: True\n  [627] link 'View Order #560022'"
    goto = call("goto", page.format("404 Not Found"), url="http://shop/orders/560022")
    listing = call("goto", page.format("My Orders"), url="http://shop/orders/560022")
    click = call("click", "Order # 560022\nStatus: shipped", element_id=627)
    missed, reached, retried = (render(_runs(steps, answer="shipped", question=question))
                                for steps in ([goto, click], [listing, click], [goto, listing, click]))
    assert missed["tools"][0] == "goto! > click" and reached["tools"][0] == "goto > click"
    assert missed["tokens"][0].split()[:4] == ["T:goto!", "R:goto!/first", "M:goto!/first/new/none",
                                               "B:start>goto!/first"]
    assert missed["rendering"][0].startswith("1. goto first failed: new | 2. click first: result")
    assert retried["tools"][0] == "goto > click" and retried["tokens"][0] == reached["tokens"][0]
    assert (missed["n_failed"][0], missed["n_retries"][0]) == (1.0, 0.0)
    traceback = call("run", "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: bad row",
                     command="python scripts/build.py")
    edit = call("edit", "ok", path="scripts/build.py")
    assert render(_runs([traceback, edit]))["tools"][0] == "run > edit"


def test_is_error_and_tool_names():
    assert is_error("Error: user not found") and is_error('{"error": "x"}') and is_error("  Traceback (most")
    assert not is_error("The error rate of the model is 3%.") and not is_error(None)
    long = "update_reservation_flights_and_baggage_allowance"
    assert tool_name(long) == long  # never truncated
    assert tool_name("Search[Wiki]") == "search_wiki"


def test_atoms_keep_ids_codes_emails_whole():
    assert atoms("user mia_li_3668 order #W4830391 mail mia.li@example.com, zip 94110.") == \
        ["user", "mia_li_3668", "order", "#w4830391", "mail", "mia.li@example.com", "zip", "94110"]
    assert atoms("The the Lyon, LYON and Graz!") == ["lyon", "graz"]
    assert atoms(None) == []
    # JSON's literals name nothing; a backslash and a letter are left as they are (a path's, LaTeX's)
    assert atoms('"x = 1" true null \\theta') == ["x", "1", "theta"]
    assert argument_values("not json", "q") == ["q"]
    assert argument_values('{"a": {"b": [1, "x y"]}, "c": true}', None) == ["1", "x y"]


def _phone_call(question, number):
    step = make_step(tool="get_customer", arguments=json.dumps({"phone_number": number}), observation="{}")
    return segment(_runs([step], question=question))["sources"][0]


@settings(max_examples=60, deadline=None)
@given(digits=st.text(alphabet="0123456789", min_size=10, max_size=10),
       style=st.sampled_from(["{a}-{b}-{c}", "({a}) {b}-{c}", "{a} {b} {c}", "+1 {a} {b} {c}", "{a}.{b}.{c}"]))
def test_a_number_written_in_groups_is_the_users_in_any_grouping(digits, style):
    # a customer writes `+1 921 602 6976`, the API takes `9216026976` (tau2-bench telecom): one value,
    # the user's, whichever side groups it; before, the call read `new`
    grouped = style.format(a=digits[:3], b=digits[3:6], c=digits[6:])
    assert _phone_call(f"My number is {grouped}, no data since Monday.", digits) == "user"
    # the other way, the number is the user's (its groups, not written by the user, are new)
    assert "user" in _phone_call(f"My number is {digits}, no data since Monday.", grouped).split("+")
    if digits != "5550109999":  # another number is no match
        assert _phone_call("My number is 555 010 9999, no data.", digits) == "new"


def test_grouped_numbers_are_not_a_codes_digits():
    # a flight code's digits and a date beside it are two values; a decimal and a count are no number
    assert "23522025" not in atoms("upgrade NW2352 2025-01-26") and "20250126" in atoms("NW2352 2025-01-26")
    assert atoms("10.5 GB, 2 bars") == ["10.5", "gb", "2", "bars"]
    # one separator throughout: a date and the time after it are two values, the date a number
    assert atoms("2026-03-13 16:30") == ["2026-03-13", "20260313", "16", "30"]
    assert "4111111111111111" in atoms("card 4111 1111 1111 1111")
    assert atoms("+1 921 602 6976") == ["1", "921", "602", "6976", "19216026976", "9216026976"]


def test_no_search_and_no_answer():
    moves = segment(_runs([], answer=None))
    assert moves["move"].to_list() == ["no_answer"]
    traj = render(_runs([], answer="Paris"))
    assert traj["rendering"][0] == "answer" and "E:no_calls_answer" in traj["tokens"][0]


def test_outcome_never_enters_the_representation():
    a = render(_runs([s("Glass Harbor director", FILM)], answer="Lyon"))
    b = render(_runs([s("Glass Harbor director", FILM)], answer="Paris"))
    assert a["tokens"].equals(b["tokens"]) and a["rendering"].equals(b["rendering"])


def test_columns_and_shares():
    moves, traj = segment_all(_runs([s("Glass Harbor director", FILM), s("Dana Petrov birthplace", BIO)], n=2))
    assert moves.height == 6 and set(moves["move"]) <= set(MOVES)
    assert set(moves["relation"]) <= set(RELATIONS) | {"answer"}
    q = moves.filter((pl.col("tool") != "answer") & (pl.col("n_atoms") > 0))
    total = q["share_user"] + q["share_result"] + q["share_call"] + q["share_new"]
    assert (total - 1).abs().max() < 1e-12
    assert set(DESCRIPTIVE_COLUMNS) <= set(traj.columns)


def test_long_untrusted_fields_are_bounded():
    huge = "Zed " * 500_000
    steps = [s(f"query {i} " + "word " * 200, huge) for i in range(40)]
    text = render(_runs(steps))["rendering"][0]
    assert text.count("search") == MAX_STEPS_RENDERED and "more calls" in text and len(text) < 4000


def test_missing_column_is_a_clear_error():
    with pytest.raises(InputError, match="`steps`"):
        segment(_runs([s(QUESTION, FILM)]).drop("steps"))


names = st.text(alphabet="bcdfghjklmnpqrstvwxz", min_size=5, max_size=9).map(str.capitalize)


@settings(max_examples=40, deadline=None)
@given(a=names, b=names, c=names, n=st.integers(0, 4))
def test_rendering_never_shows_entity_names(a, b, c, n):
    question = f"Where was the director of {a} {b} born?"
    obs = f"{a} {b} is a film directed by {c}."
    steps = [s(f"{a} {b} director", obs)] + [s(f"{c} birthplace {i}", f"{c} was born in {b}.") for i in range(n)]
    traj = render(_runs(steps, answer=c, question=question))
    for name in (a, b, c):
        assert name.lower() not in traj["rendering"][0].lower() and name.lower() not in traj["tokens"][0].lower()


text = st.one_of(st.none(), st.text(max_size=60))


@settings(max_examples=60, deadline=None)
@given(question=text, answer=text,
       steps=st.lists(st.fixed_dictionaries({"thought": text, "tool": text, "arguments": text,
                                              "query": text, "observation": text}), max_size=6))
def test_any_text_segments_without_error(question, answer, steps):
    runs = from_records([{"arm": "a", "question_id": "q", "sample_id": 0, "question": question or "",
                          "gold": [], "answer": answer, "correct": False, "n_rounds": len(steps),
                          "steps": steps}])
    moves, traj = segment_all(runs)
    assert moves.height == len(steps) + 1
    for col in ("share_user", "share_result", "share_call", "share_new", "question_coverage"):
        assert moves[col].min() >= 0 and moves[col].max() <= 1
    assert traj["rendering"][0].endswith("answer")
