"""Real agents read as they ran: user turns, failed calls, multi-action turns,
duplicates, arm sources, missing fields, question keys, finishing-call results, boxed answers.

The fixtures in ``tests/fixtures/agents`` are written for the purpose in each source's shape:
tau-bench airline conversations (OpenAI messages with a simulated user), Reflexion trial logs
(Wikipedia ReAct), chat ReAct with unlabelled observations, a FireAct-like GPT-3.5 file and a
reasoning model's boxed answer (see ``tests/fixtures/README.md``).
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import polars as pl
import pytest

import mechanism as mx
from mechanism.analysis.segmentation import argument_values, segment
from mechanism.core.errors import ComparisonWarning, InputError
from mechanism.core.failures import is_failure
from mechanism.readers import read

AGENTS = Path(__file__).resolve().parents[1] / "fixtures" / "agents"
FIREACT = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "fireact-hotpotqa"
TAU = dict(columns={"messages": "traj", "question_id": "task_id"})
REFLEXION = dict(format="react", columns={"text": "scratchpad", "gold": "answer", "correct": "status:CORRECT"})
# What Reflexion's Wikipedia environment answers when it cannot carry out an action.
ENV_FAILURES = ("Could not find", "No Results", "No More Results", "No more results", "Invalid Action",
                "The last page Searched was not found")


def _calls_with_user_values(path: Path) -> list[tuple[str, int, bool]]:
    """(task, call index, typed earlier by the user and held by no earlier tool result) for every
    non-finishing call, read from the raw file without the reader."""
    out = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        user_text, tool_text, index = [], [], 0
        for msg in rec["traj"]:
            if msg["role"] == "user":
                user_text.append(msg["content"].lower())
            elif msg["role"] == "tool":
                tool_text.append(msg["content"].lower())
            elif msg["role"] == "assistant":
                for call in msg.get("tool_calls") or []:
                    if call["function"]["name"] in ("submit", "finish"):
                        continue
                    values = argument_values(call["function"]["arguments"], None)
                    typed = any(v.lower() in u for v in values for u in user_text if len(v) > 2)
                    held = any(v.lower() in t for v in values for t in tool_text if len(v) > 2)
                    out.append((str(rec["task_id"]), index, typed and not held))
                    index += 1
    return out


def test_tau_user_turns_kept_and_named_as_source():
    path = AGENTS / "tau_airline.jsonl"
    runs, rep = read(path, report=True, **TAU)
    first = runs.filter(pl.col("question_id") == "0").row(0, named=True)
    assert first["question"] == "Hi, I need to cancel a trip I booked."
    assert first["steps"][0]["user"] == "Sure, it's mia_li_3668."
    assert first["steps"][1]["user"] == "The one with code NO6JO3, please."
    # the assistant's words to the user join the next step's thought: the conversation as it happened
    assert "Could you please provide your user id?" in first["steps"][0]["thought"]
    meta = json.loads(first["meta"])
    assert meta["finish_result"] == "Submitted." and meta["user_after_last_call"] == "###STOP###"
    segmented = segment(runs)
    moves = segmented.filter(~pl.col("tool").is_in(["answer", "ask_user"]))
    truth = _calls_with_user_values(path)
    assert moves.height == len(truth)
    # each turn the user answered is a move of its own, before the call that followed it
    asked = sum(bool(st["user"]) for steps in runs["steps"].to_list() for st in steps)
    assert (segmented["tool"] == "ask_user").sum() == asked > 0
    typed = [i for i, (_, _, t) in enumerate(truth) if t]
    named = sum("user" in moves["sources"][i].split("+") for i in typed)
    assert len(typed) >= 10 and named / len(typed) >= 0.9, (named, len(typed))
    # without the user turns (a reading that sees only the question) most of them are "new"
    bare = runs.with_columns(pl.col("steps").list.eval(pl.element().struct.with_fields(
        pl.lit(None, dtype=pl.String).alias("user"))))
    old = segment(bare).filter(~pl.col("tool").is_in(["answer", "ask_user"]))
    assert sum("user" in old["sources"][i].split("+") for i in typed) / len(typed) < 0.5
    assert any("arms named by the field `model`" in n for n in rep.notes)


def test_tau_failed_calls_from_error_strings_and_objects():
    runs, rep = read(AGENTS / "tau_airline.jsonl", report=True, **TAU)
    moves = segment(runs)
    failed = moves.filter(pl.col("failed"))
    assert sorted(failed["tool"].to_list()) == ["book_reservation", "get_user_details", "update_reservation_flights"]
    # the retry after a failure is marked
    # (the user's answer in between, a corrected id, is a move of its own and leaves the retry one)
    retry = moves.filter(pl.col("question_id") == "1", pl.col("tool") == "get_user_details").row(1, named=True)
    assert retry["after_error"] and not retry["failed"]
    assert moves.filter(pl.col("question_id") == "1", pl.col("failed"))["retried"].all()
    note = next(n for n in rep.notes if n.startswith("failed calls by tool"))
    assert "`get_user_details` 1 of 6" in note and "`book_reservation` 1 of 3" in note


def test_tool_results_without_ids_and_finishing_call_results_read():
    runs = read(AGENTS / "tau_airline.jsonl", **TAU)
    legacy = runs.filter(pl.col("question_id") == "3").row(0, named=True)
    assert [s["observation"][:16] for s in legacy["steps"]] == [
        '{"reservations":', '{"reservation_id', "[]", "Error: flight HA"]
    parallel = runs.filter(pl.col("question_id") == "4").row(0, named=True)
    assert "4WQ150" in parallel["steps"][0]["observation"] and "VAAOXJ" in parallel["steps"][1]["observation"]
    # a tool result answers the call of an earlier turn, so such a record is read, not refused as
    # "`traj[15]` is a tool result with no tool call before it"
    submit = runs.filter(pl.col("question_id") == "0").row(0, named=True)
    assert submit["n_rounds"] == 3 and submit["answer"] == "cancelled NO6JO3"


def test_reflexion_failed_recall_and_precision():
    runs = read(AGENTS / "reflexion" / "run_a_trial1.jsonl", duplicates="drop", **REFLEXION)
    steps = runs.select(pl.col("steps")).explode("steps").unnest("steps")
    moves = segment(runs).filter(pl.col("tool") != "answer")
    truth = [obs.startswith(ENV_FAILURES) for obs in steps["observation"].to_list()]
    flagged = moves["failed"].to_list()
    tp = sum(t and f for t, f in zip(truth, flagged))
    assert sum(truth) >= 12
    recall, precision = tp / sum(truth), tp / max(1, sum(flagged))
    assert recall >= 0.95 and precision >= 0.95, (recall, precision)
    # pages about errors, a film called Timeout, a label called Invalid: calls that worked
    worked = [o for o, t in zip(steps["observation"].to_list(), truth) if not t]
    assert any(o.startswith("Error correction") for o in worked) and not any(map(is_failure, worked))


def test_reflexion_duplicates_arm_source_and_question_key():
    path = AGENTS / "reflexion" / "run_a_trial1.jsonl"
    runs, rep = read(path, report=True, **REFLEXION)
    assert runs.height == 15  # kept, and said
    assert any(n.startswith("3 episodes repeat an earlier episode") for n in rep.notes)
    assert any("arms named by the field `model` (15 rows)" in n for n in rep.notes)
    dropped, rep2 = read(path, report=True, duplicates="drop", **REFLEXION)
    assert dropped.height == 12 and len(rep2.skipped) == 3
    assert rep2.rows_in == rep2.rows_kept + len(rep2.skipped)
    assert all("duplicate episode" in s.reason for s in rep2.skipped)
    assert dropped["correct"].sum() == 9 and runs["correct"].sum() == 12  # 9/12, not 12/15
    # two runs of one model: one arm, and the note says which field named it
    files = [path, AGENTS / "reflexion" / "run_b_trial2.jsonl"]
    both, rep3 = read(files, report=True, **REFLEXION)
    assert both["arm"].unique().to_list() == ["gpt-3.5-turbo"]
    assert sum("arms named by the field `model`" in n for n in rep3.notes) == 2
    # trial-2 questions carry the reflection text: their derived ids drift unless keyed
    drift = set(read(files[1], **REFLEXION)["question_id"]) - set(runs["question_id"])
    assert len(drift) == 4
    key = r"(?:Question: )?([^\n]*)$"
    keyed, rep4 = read(files, report=True, question_key=key, **REFLEXION)
    assert keyed["question_id"].n_unique() == 12
    assert any(n.startswith("`question_key`: 22 rows keyed by") for n in rep4.notes)
    as_text = read(files[0], question_key="text", **REFLEXION)
    assert as_text["question_id"].n_unique() == 12
    with pytest.raises(InputError, match="`question_key`"):
        read(files, question_key="(", **REFLEXION)
    with pytest.raises(InputError, match="does not match the question"):
        read(files, question_key=r"^Trial \d+: (.*)", **REFLEXION)


def test_chat_react_unlabelled_observations():
    runs, rep = read(AGENTS / "react_chat_unlabelled.jsonl", report=True)
    assert rep.formats == {str(AGENTS / "react_chat_unlabelled.jsonl"): "react"}
    got = {r["question_id"]: r for r in runs.to_dicts()}
    assert {q: r["n_rounds"] for q, r in got.items()} == {"c1": 2, "c2": 4, "c3": 1}
    assert [s["query"] for s in got["c2"]["steps"]] == ["Milhouse", "named after", "named", "Richard Nixon middle name"]
    assert got["c2"]["steps"][1]["observation"] == "No Results"
    assert all(s["observation"] for r in got.values() for s in r["steps"])  # one observation per action
    assert runs["correct"].all()


def test_chat_react_user_turn_between_actions():
    from mechanism.readers.react import messages_text, parse_text
    text, question = messages_text([
        {"role": "user", "content": "Find the order."},
        {"role": "assistant", "content": "Thought: ask.\nAction: lookup[order]"},
        {"role": "user", "content": "order not found"},  # the environment's answer
        {"role": "user", "content": "it is #W1234"},  # then the user speaks
        {"role": "assistant", "content": "Thought: again.\nAction: lookup[#W1234]"},
        {"role": "user", "content": "found"}])
    out = parse_text(text)
    assert question == "Find the order."
    assert [(s["query"], s["observation"], s["user"]) for s in out["steps"]] == [
        ("order", "order not found", None), ("#W1234", "found", "it is #W1234")]


def _text_game(labelled: bool, last: str | None) -> list[dict]:
    """An ALFWorld-like chat: bare commands, the environment answering as the user."""
    said = [("go to countertop 1", "You arrive at countertop 1. On it, you see a mug 1."),
            ("take mug 1 from countertop 1", "You pick up the mug 1 from the countertop 1."),
            ("goto cabinet 1", "Nothing happens."), ("go to cabinet 1", "You arrive at cabinet 1.")]
    messages = [{"role": "system", "content": "You are in the middle of a room."},
                {"role": "user", "content": "Your task is to: put a mug in cabinet 1."}]
    for command, seen in said:
        messages.append({"role": "assistant", "content": f"Thought: next.\nAction: {command}"})
        messages.append({"role": "user", "content": f"Observation: {seen}" if labelled else seen})
    if last is not None:
        messages.append({"role": "assistant", "content": last})
    return messages


@pytest.mark.parametrize("last, answer", [("Thought: done.\nAction: finish[done]", "done"),
                                          ("I put the mug 1 in the cabinet 1.", "I put the mug 1 in the cabinet 1."),
                                          (None, None)])
def test_a_text_game_chat_reads_alike_with_or_without_observation_labels(tmp_path, last, answer):
    """Bare commands answered by unlabelled user messages are rounds, as labelled ones are: each
    message alone holds an action or an observation, never both (the whole episode was once one
    round, or no ReAct at all when it ended in words); a last message in words is the answer."""
    read_back = {}
    for labelled in (True, False):
        path = tmp_path / f"{labelled}.jsonl"
        path.write_text(json.dumps({"arm": "a", "question_id": "q", "messages": _text_game(labelled, last),
                                    "correct": True}) + "\n")
        runs, rep = read(path, report=True)
        assert set(rep.formats.values()) == {"react"}
        read_back[labelled] = runs
    for runs in read_back.values():
        steps = runs["steps"][0]
        assert runs["n_rounds"][0] == 4 and [s["tool"] for s in steps] == ["act"] * 4
        assert [s["query"] for s in steps][2:] == ["goto cabinet 1", "go to cabinet 1"]
        assert steps[-1]["observation"] == "You arrive at cabinet 1."  # the answer is not observed
        assert runs["answer"][0] == answer
    assert read_back[True].drop("steps").equals(read_back[False].drop("steps"))


def test_fireact_multi_action_turns_fixture():
    runs, rep = read(AGENTS / "fireact_multi" / "trajs", report=True)
    got = {r["question_id"]: r for r in runs.to_dicts()}
    assert got["0"]["n_rounds"] == 1 and got["1"]["n_rounds"] == 2
    assert "Action: search[finish]" in got["1"]["steps"][-1]["thought"] or all(
        s["query"] != "finish" for s in got["1"]["steps"])
    assert json.loads(got["1"]["meta"])["finish_result"] == "Episode finished, reward = False"
    assert any(n.startswith("2 extra actions in a turn") for n in rep.notes)
    assert any("arms named by the model in the file name" in n for n in rep.notes)
    last = read(AGENTS / "fireact_multi" / "trajs", multi_action="last")
    assert sorted(last["n_rounds"].to_list()) == [2, 3]  # the phantom search of the old reading
    with pytest.raises(InputError, match="`multi_action`"):
        read(AGENTS / "fireact_multi" / "trajs", multi_action="middle")


@pytest.mark.skipif(not (FIREACT / "trajs").is_dir(), reason="FireAct data not found at ../shared/data")
def test_fireact_gpt_questions_3291_and_407():
    path = next((FIREACT / "trajs").glob("*gpt-3.5*.json"))
    runs = read(path)
    rounds = dict(runs.filter(pl.col("question_id").is_in(["3291", "407"]))
                  .select("question_id", "n_rounds").iter_rows())
    assert rounds == {"3291": 6, "407": 3}


def test_boxed_answer_after_final_answer_line():
    runs, rep = read(AGENTS / "boxed_final.jsonl", report=True)
    assert runs["answer"].to_list() == ["3640", "12"] and runs["correct"].all()


def test_record_missing_fields_is_an_error():
    path = Path(__file__).resolve().parents[1] / "fixtures" / "bad" / "canonical_phantom.jsonl"
    with pytest.raises(InputError, match=r"line 4: record lacks `arm`.*`steps`.*which the 3 records before it"):
        read(path)
    runs, rep = read(path, errors="skip", report=True)
    assert runs.height == 3 and set(runs["arm"]) == {"base", "rl"}  # no phantom arm
    assert len(rep.skipped) == 1 and rep.skipped[0].line == 4 and rep.skipped[0].field == "arm"


def test_shared_question_warning_in_comparisons():
    runs = read(AGENTS / "reflexion" / "run_a_trial1.jsonl", duplicates="drop", **REFLEXION)
    other = read(AGENTS / "reflexion" / "run_b_trial2.jsonl", arm="trial2", **REFLEXION)
    both = pl.concat([runs, other])
    labels = both["n_rounds"].clip(0, 3).to_numpy()
    with pytest.warns(ComparisonWarning, match=r"reweighting: arms 'gpt-3.5-turbo', 'trial2' share 3 of 16 "
                                               r"questions; compared on those 3"):
        mx.reweighting(both, labels, base="gpt-3.5-turbo", treated="trial2", n_boot=10, n_permutations=0,
                       allow_few_shared=True)
    with pytest.warns(ComparisonWarning, match="integration: .* share 3 of 16 questions"):
        mx.integration(both, base="gpt-3.5-turbo", treated="trial2", n_boot=10, allow_few_shared=True)
    with pytest.warns(ComparisonWarning, match="boundary: .* share 3 of 16 questions"):
        mx.boundary(both, base="gpt-3.5-turbo", treated="trial2", k=[1], t=[1], n_boot=10, allow_few_shared=True)
    # unforced, fewer than half shared is refused, with one line naming the fix
    for name, call in (("reweighting", lambda: mx.reweighting(both, labels, base="gpt-3.5-turbo", treated="trial2",
                                                               n_boot=10, n_permutations=0)),
                       ("integration", lambda: mx.integration(both, base="gpt-3.5-turbo", treated="trial2", n_boot=10)),
                       ("boundary", lambda: mx.boundary(both, base="gpt-3.5-turbo", treated="trial2", k=[1], t=[1],
                                                        n_boot=10))):
        with pytest.raises(InputError, match=rf"^{name}: arms .* share 3 of 16 questions \(below half\).*"
                                             r"`question_key=`.*`allow_few_shared=True`") as caught:
            call()
        assert "\n" not in str(caught.value)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ComparisonWarning)  # arms on the same questions: silent
        common = set(runs["question_id"]) & set(other["question_id"])
        same = both.filter(pl.col("question_id").is_in(sorted(common)))
        mx.reweighting(same, same["n_rounds"].to_numpy(), base="gpt-3.5-turbo", treated="trial2", n_boot=10,
                       n_permutations=0)


def test_one_arm_comparison_exits_2_with_one_line(tmp_path, capsys):
    from mechanism._cli.main import main
    inputs = [str(AGENTS / "tau_airline.jsonl"), "--columns", "messages=traj,question_id=task_id"]
    code = main(["reweighting", *inputs, "--base", "gpt-4o", "--by-rounds", "--out", str(tmp_path / "rw"),
                 "--no-figures"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert "holds one arm ('gpt-4o')" in err and "at least two arms" in err
    code = main(["integration", *inputs, "--base", "gpt-4o", "--out", str(tmp_path / "in"), "--no-figures"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "one arm" in err


def test_read_cli_options(tmp_path, capsys):
    from mechanism._cli.main import main
    out = tmp_path / "r.parquet"
    code = main(["read", str(AGENTS / "reflexion" / "run_a_trial1.jsonl"), "--format", "react",
                 "--columns", "text=scratchpad,gold=answer,correct=status:CORRECT", "--duplicates", "drop",
                 "--error-pattern", "^\\(Result 2", "--question-key", "text", "--multi-action", "first",
                 "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0 and pl.read_parquet(out).height == 12
    assert "arms named by the field `model`" in printed and "`error_pattern`" in printed
    assert "`lookup` 5 of 8" in printed  # the four failures plus the pattern's "(Result 2 / 2)"


def test_error_pattern_reaches_segmentation(tmp_path):
    runs = read(AGENTS / "reflexion" / "run_a_trial1.jsonl", duplicates="drop", **REFLEXION)
    default = segment(runs)["failed"].sum()
    assert segment(runs, error_pattern=r"^\(result 2")["failed"].sum() == default + 1
    cached = mx.render(runs, cache_dir=tmp_path, error_pattern=r"^\(result 2")
    # failures are counted per trajectory whatever `retries` does to the tool sequence
    assert mx.render(runs, cache_dir=tmp_path)["n_failed"].sum() == default
    assert cached["n_failed"].sum() == default + 1
    kept = mx.render(runs, cache_dir=tmp_path, error_pattern=r"^\(result 2", retries="keep")
    assert kept["tools"].str.count_matches("!").sum() == default + 1
    with pytest.raises(InputError, match="`error_pattern`"):
        segment(runs, error_pattern="(")


@pytest.mark.parametrize("text, failed", [
    ("Could not find [Foo]. Similar: ['Foo (band)'].", True), ("No Results", True), ("No more results.", True),
    ("Invalid Action. Valid Actions are Lookup[<topic>] Search[<topic>] and Finish[<answer>].", True),
    ("Error: reservation not found", True), ('{"error": "payment declined"}', True),
    ('{"status": "error", "message": "x"}', True), ("User mia_li_3668 not found", True),
    ("cat: data.csv: No such file or directory", True), ("Invalid argument: `date` must be ISO", True),
    ("  File \"<string>\", line 1\n    print(\n         ^\nSyntaxError: '(' was never closed", True),
    ("Timeout: the command ran for more than 60 seconds", True), ("Execution timed out after 30 s", True),
    ("step 1 ok\nstep 2 ok\nTraceback (most recent call last):\n  File \"run.py\", line 9, in <module>\n"
     "    main()\nKeyError: 'total'", True),
    ("KeyError: 'total'", True),
    # a database's errors as the common stacks print them (SkyRL-SQL, SQLAlchemy, sqlite3, psycopg2, MySQL)
    ("Error executing SQL: no such column: o.total, db file: /data/shop.sqlite", True),
    ("SQL Timeout:\nSELECT * FROM orders, customers", True), ("Query timed out after 30 s", True),
    ('sqlite3.OperationalError: near "FORM": syntax error', True), ('near "FORM": syntax error', True),
    ("(sqlite3.OperationalError) no such table: order_items", True), ("no such column: o.total", True),
    ('(psycopg2.errors.UndefinedColumn) column "totl" does not exist', True), ("ambiguous column name: id", True),
    ("ERROR 1054 (42S22): Unknown column 'totl' in 'field list'", True),
    ("pandas.DataFrame: 3 rows x 2 columns", False), ("city\nLyon\nOslo", False),
    # content about errors: calls that worked
    ("Error correction code: in computing, Hamming codes are linear error-correcting codes.", False),
    ("Timeout is a 2015 American drama film.", False), ("Invalid Records is an American record label.", False),
    ("============================= test session starts ==============================\ncollected 3 items\n\n"
     "test_x.py .F.\n\nFAILED test_x.py::test_b - AssertionError: 1 != 2\n"
     "========================= 1 failed, 2 passed in 0.03s =========================", False),
    ("F.\n======\nFAIL: test_b (test_x.T)\nTraceback (most recent call last):\n  File \"test_x.py\", line 5\n"
     "AssertionError: 1 != 2\n\nRan 2 tests in 0.001s\n\nFAILED (failures=1)", False),
    ("HTTP 404 Not Found is the standard response code when a server cannot find the page that was requested, "
     "and browsers show it as a page; the name comes from room 404 in a popular story that is not true."
     + " More text." * 30, False),
    ("Paris is the capital of France.", False),
    # the environment answered with nothing (a missing observation is no answer at all)
    ("", True), ("None", True), ("null", True), ("Nothing happens.", True), (None, False),
])
def test_failure_reading(text, failed):
    assert is_failure(text) is failed


def _line_events(fn, filename: str) -> int:
    """Python line events executed in ``filename`` while ``fn`` runs: a count of operations
    that does not depend on the machine's speed or load."""
    import sys

    count = 0

    def local(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
        return local

    def tracer(frame, event, arg):
        return local if frame.f_code.co_filename == filename else None

    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(old)
    return count


def test_openai_matching_is_one_pass(load_benchmark):
    """Results without ``tool_call_id`` after calls with ids: each takes the oldest unanswered
    call. The earlier reader scanned every step per result (5k/10k/20k/40k messages: 0.9, 1.8,
    6.7, 30 s); 4x the messages must cost at most 6x the operations (benchmarks/bench_read.py
    --openai times it)."""
    from mechanism.readers import openai
    bench = load_benchmark("bench_read")
    small, large = (bench.openai_record(n)["messages"] for n in (300, 1200))
    ops = [_line_events(lambda m=m: openai.parse_messages(m), openai.__file__) for m in (small, large)]
    assert ops[1] / ops[0] <= 6, ops
    out = openai.parse_messages(large)
    assert [s["observation"] for s in out["steps"]] == [f"item_{i} links to item_{i + 1}" for i in range(1200)]


def test_atif_later_user_turns(tmp_path):
    doc = {"schema_version": "ATIF-v1.4", "session_id": "s1", "agent": {"name": "bot", "model_name": "m1"},
           "extra": {"question_id": "q1", "gold": ["ok"]},
           "steps": [{"step_id": 1, "source": "user", "message": "Cancel my order."},
                     {"step_id": 2, "source": "agent", "message": "Which order?"},
                     {"step_id": 3, "source": "user", "message": "Order #W4830391."},
                     {"step_id": 4, "source": "agent", "message": "",
                      "tool_calls": [{"tool_call_id": "t1", "function_name": "cancel_order",
                                      "arguments": {"order_id": "#W4830391"}}],
                      "observation": {"results": [{"source_call_id": "t1", "content": "cancelled"}]}},
                     {"step_id": 5, "source": "agent", "message": "ok"}]}
    path = tmp_path / "a.json"
    path.write_text(json.dumps(doc))
    runs, rep = read(path, report=True)
    step = runs["steps"][0][0]
    assert step["user"] == "Order #W4830391." and step["observation"] == "cancelled"
    moves = segment(runs)
    assert moves["tool"].to_list() == ["ask_user", "cancel_order", "answer"]  # the turn the user answered
    assert moves["sources"][1] == "user"
    assert any("arms named by `agent.model_name`" in n for n in rep.notes)


def _atif_doc(results: list[dict], calls: int = 2, finish: bool = False) -> dict:
    call = [{"tool_call_id": f"t{j}" if j else None, "function_name": "search", "arguments": {"query": f"x{j}"}}
            for j in range(calls)]
    call = [{k: v for k, v in c.items() if v is not None} for c in call]
    steps = [{"step_id": 1, "source": "user", "message": "Where?"},
             {"step_id": 2, "source": "agent", "message": "", "tool_calls": call, "observation": {"results": results}}]
    if finish:
        steps.append({"step_id": 3, "source": "agent", "message": "",
                      "tool_calls": [{"tool_call_id": "f", "function_name": "submit", "arguments": {"answer": "Oslo"}}],
                      "observation": {"results": [{"source_call_id": "f", "content": "submitted"}]}})
    return {"schema_version": "ATIF-v1.4", "session_id": "s", "agent": {"name": "bot"}, "steps": steps,
            "extra": {"question_id": "q", "gold": ["Oslo"]}}


def test_atif_results_pair_with_their_own_steps_calls(tmp_path):
    # by id where one is given, else the step's next call without a result, in order
    doc = _atif_doc([{"content": "first"}, {"source_call_id": "t1", "content": "second"}], finish=True)
    path = tmp_path / "a.json"
    path.write_text(json.dumps(doc))
    runs = read(path)
    assert [s["observation"] for s in runs["steps"][0]] == ["first", "second"]
    assert runs["answer"].to_list() == ["Oslo"] and runs["n_rounds"].to_list() == [2]
    assert json.loads(runs["meta"][0])["finish_result"] == "submitted"  # kept, not lost


def test_atif_a_result_without_a_call_is_an_error_naming_the_step(tmp_path):
    doc = _atif_doc([{"content": "a"}, {"content": "b"}, {"content": "c"}])
    path = tmp_path / "a.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"steps\[1\]\.observation\.results.*more results than the step has calls"):
        read(path)
