"""Failed calls as the read decides them: the environment's "nothing happened" answers, HTTP
errors, texts repeated after many different calls (proposed as an `error_pattern`), and the
read's verdict reaching the strategy fit (through parquet too)."""
from __future__ import annotations

import json
import shutil

import polars as pl
import pytest

from mechanism.analysis.segmentation import segment
from mechanism.core.errors import InputError
from mechanism.readers import read


def _canonical(path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def _row(i, steps, arm="base", correct=True):
    return {"arm": arm, "question_id": f"q{i}", "sample_id": 0, "question": f"Where is item {i}?", "gold": ["x"],
            "answer": "x", "correct": correct, "n_rounds": len(steps),
            "steps": [{"tool": t, "arguments": json.dumps({"q": a}), "query": a, "observation": o}
                      for t, a, o in steps]}


def test_nothing_answers_fail_and_the_read_report_says_so(tmp_path):
    steps = [("lookup", "a", "None"), ("lookup", "b", ""), ("lookup", "c", "null"),
             ("act", "go north", "Nothing happens."), ("bash", "mkdir x", ""), ("lookup", "d", "Paris")]
    path = _canonical(tmp_path / "r.jsonl", [_row(0, steps)])
    runs, rep = read(path, report=True)
    failed = segment(runs).filter(pl.col("tool") != "answer")["failed"].to_list()
    # the empty output of a shell command is its success; the rest answered with nothing
    assert failed == [True, True, True, True, False, False]
    note = next(n for n in rep.notes if "answered with nothing" in n)
    assert note.startswith("4 calls answered with nothing") and "'None' 1" in note and "empty 1" in note
    assert "`lookup` 3 of 4" in next(n for n in rep.notes if n.startswith("failed calls by tool"))


def test_fireact_none_observations_are_failed_calls(tmp_path, fixtures):
    """FireAct's Llama files: `Observation: None` where the search found nothing."""
    (tmp_path / "questions").mkdir()
    (tmp_path / "trajs").mkdir()
    shutil.copy(fixtures / "agents" / "fireact_multi" / "questions" / "dev.json", tmp_path / "questions" / "dev.json")
    traj = ("Question: Were Scott Derrickson and Ed Wood of the same nationality?\n"
            "Thought: search Derrickson.\nAction: search[Scott Derrickson nationality]\nObservation: None\n"
            "Thought: again.\nAction: search[Scott Derrickson]\n"
            "Observation: Scott Derrickson is an American director.\n"
            "Thought: and Wood.\nAction: search[Ed Wood]\nObservation: None\nThought: guess.\nAction: finish[yes]\n")
    doc = {"0": {"reward": True, "em": True, "f1": 1.0, "gt": "yes", "pred": "yes", "prompt": "", "traj": traj}}
    (tmp_path / "trajs" / "hotpotqa_dev_llama-2-7b_fixture.json").write_text(json.dumps(doc))
    runs, rep = read(tmp_path / "trajs", report=True)
    assert [s["observation"] for s in runs["steps"][0]][::2] == ["None", "None"]
    moves = segment(runs).filter(pl.col("tool") == "search")
    assert moves["failed"].to_list() == [True, False, True]
    assert "`search` 2 of 3" in next(n for n in rep.notes if n.startswith("failed calls by tool"))
    assert any(n.startswith("2 calls answered with nothing ('None' 2)") for n in rep.notes)


def test_fireact_data_none_observations_are_failed(fireact_dir):
    runs, rep = read(fireact_dir / "trajs", report=True)
    observations = runs.select(pl.col("steps").explode()).unnest("steps")["observation"]
    literal_none = int((observations == "None").sum())
    assert literal_none == 38
    note = next(n for n in rep.notes if n.startswith("failed calls by tool"))
    assert "`search` 38 of 3171" in note


def test_http_errors_are_failed_calls_and_a_page_about_404_is_not(tmp_path):
    steps = [("http_get", "/orders/1",
              'HTTP/1.1 400 Bad Request\nContent-Type: application/json\n\n{"message": "bad id"}'),
             ("http_get", "/orders/2", '{"status": 404, "message": "no such order"}'),
             ("http_get", "/orders/3", '{"detail": "Not Found"}'),
             ("http_get", "/Patient/9", '{"resourceType": "OperationOutcome", "issue": [{"severity": "error"}]}'),
             ("http_get", "/wiki/404", "HTTP 404 is the status a server sends for a missing page; the code dates "
                                       "from the early web."),
             ("http_get", "/orders/4", '{"status": 200, "order": {"id": 4}}')]
    runs, rep = read(_canonical(tmp_path / "r.jsonl", [_row(0, steps)]), report=True)
    assert segment(runs).filter(pl.col("tool") != "answer")["failed"].to_list() == [True] * 4 + [False, False]
    assert any(n.startswith("4 calls answered with an HTTP error") for n in rep.notes)



def test_a_provers_errors_are_failed_calls_and_its_new_states_are_not(tmp_path):
    """The Lean REPL's answers: a tactic's error object (`{"message": "Lean error: ..."}`), a
    command's diagnostics with an error; a new proof state and warnings alone are successes."""
    diagnostics = '{"messages": [{"severity": "%s", "pos": {"line": 1, "column": 2}, "data": "x"}], "env": 0}'
    steps = [("run_tactic", "simp", '{"message": "Lean error: simp made no progress"}'),
             ("repl", "omega", '{"message": "Lean error:\\nomega could not prove the goal"}'),
             ("lean", "theorem t : 1 = 2 := rfl", diagnostics % "error"),
             ("run_tactic", "ring", '{"proofState": 2, "goals": []}'),
             ("lean", "theorem t : 1 = 1 := by sorry", diagnostics % "warning"),
             ("post", "note", '{"message": "Note saved", "code": 201}')]
    runs = read(_canonical(tmp_path / "r.jsonl", [_row(0, steps)]))
    assert segment(runs).filter(pl.col("tool") != "answer")["failed"].to_list() == [True] * 3 + [False] * 3

def _text_world(n_questions=12, fixed="You can't see any such thing.", ack="Posted."):
    """An agent acting through one `act` tool: a fixed refusal after many different commands,
    a real answer after the others, and a tool whose every call is acknowledged the same way."""
    rows = []
    for i in range(n_questions):
        steps = [("act", f"take key {i}", fixed), ("act", f"open door {i}", f"The door {i} opens."),
                 ("act", f"examine lamp {i}", fixed), ("post", f"report {i}", ack)]
        rows.append(_row(i, steps))
    return rows


def test_a_text_repeated_after_many_different_calls_is_proposed_as_a_pattern(tmp_path):
    path = _canonical(tmp_path / "r.jsonl", _text_world())
    runs, rep = read(path, report=True)
    proposals = [n for n in rep.notes if n.startswith("observation ")]
    assert len(proposals) == 1, rep.notes  # the acknowledgement of `post` is not proposed
    assert proposals[0].startswith("observation \"You can't see any such thing.\" follows 24 distinct calls of "
                                   "`act` (24 calls, 50%)")
    assert "error_pattern=\"^You can't see any such thing\\\\.$\"" in proposals[0]
    # proposed, not counted: nothing failed until the user says so
    assert not segment(runs)["failed"].any()
    pattern = "^You can't see any such thing\\.$"
    runs2, rep2 = read(path, report=True, error_pattern=pattern)
    assert int(segment(runs2)["failed"].sum()) == 24
    assert not any(n.startswith("observation ") for n in rep2.notes)


def test_too_few_distinct_calls_propose_nothing(tmp_path):
    rows = [_row(i, [("act", "look", "You can't see any such thing.")] * 3) for i in range(12)]
    _, rep = read(_canonical(tmp_path / "r.jsonl", rows), report=True)
    assert not any(n.startswith("observation ") for n in rep.notes)


def test_repeat_counting_is_bounded_on_many_distinct_texts():
    from mechanism.readers._repeats import MAX_ACTIONS, MAX_TEXTS, RepeatedReplies

    replies = RepeatedReplies()
    for i in range(30_000):
        replies.add(f"answer {i}", "act", f"cmd {i}")
        if i % 10 == 0:
            replies.add("Nothing to see.", "act", f"look {i}")
    assert len(replies._texts) <= MAX_TEXTS
    (found,) = replies.proposals()
    assert found.text == "Nothing to see." and found.calls == 3_000 and found.actions == MAX_ACTIONS
    assert all(len(entry[1]) <= MAX_ACTIONS for entry in replies._texts.values())


def _busy_world(tmp_path):
    """Two arms on 10 questions: every base episode's first lookup answers "BUSY, try later"
    (not a failure by the default reading) and is retried; rl's never are."""
    rows = []
    for arm in ("base", "rl"):
        for i in range(10):
            for s in range(2):
                steps = [("lookup", f"item {i}", "BUSY, try later")] if arm == "base" else []
                steps += [("lookup", f"item {i}", f"item {i} is in room {s}"), ("fetch", f"room {s}", "a key")]
                row = _row(i, steps, arm=arm, correct=bool(s))
                row["sample_id"] = s
                rows.append(row)
    return _canonical(tmp_path / "busy.jsonl", rows)


def _execution(runs):
    from mechanism.analysis.strategy_space import StrategySpace

    space = StrategySpace(embedder="hashing-64", n_bootstrap=0, progress=False, random_state=0).fit(runs)
    return space.execution()


def test_error_pattern_given_to_read_reaches_the_fit_and_survives_parquet(tmp_path):
    path = _busy_world(tmp_path)
    plain = _execution(read(path))
    assert plain["failure_rate"].max() == 0.0
    runs = read(path, error_pattern="^busy")
    steps = runs.select(pl.col("steps").explode()).unnest("steps")
    assert int(steps["failed"].sum()) == 20 and steps["failed"].null_count() == 0
    for table in (runs, _roundtrip(runs, tmp_path, "polars"), _roundtrip(runs, tmp_path, "mechanism")):
        ex = _execution(table)
        rates = ex.group_by("arm").agg((pl.col("failure_rate") * pl.col("n")).sum() / pl.col("n").sum())
        by_arm = dict(zip(rates["arm"].to_list(), rates["failure_rate"].to_list()))
        assert by_arm == {"base": 1.0, "rl": 0.0}, ex


def _roundtrip(runs, tmp_path, how):
    out = tmp_path / f"runs-{how}.parquet"
    runs.write_parquet(out)
    return pl.read_parquet(out) if how == "polars" else read(out)


def test_failed_flags_in_a_canonical_input_are_kept_and_checked(tmp_path):
    row = _row(0, [("lookup", "a", "BUSY"), ("lookup", "a", "found")])
    row["steps"][0]["failed"] = True
    row["steps"][1]["failed"] = False
    runs, rep = read(_canonical(tmp_path / "r.jsonl", [row]), report=True)
    assert segment(runs).filter(pl.col("tool") != "answer")["failed"].to_list() == [True, False]
    assert any("marked failed in the input" in n for n in rep.notes)
    row["steps"][0]["failed"] = "yes"
    with pytest.raises(InputError, match=r"steps\[0\]\.failed") as info:
        read(_canonical(tmp_path / "bad.jsonl", [row]))
    assert "\n" not in str(info.value)


def test_a_read_without_a_pattern_keeps_the_canonical_step_struct(tmp_path):
    from mechanism.core.schema import STEP_DTYPE

    runs = read(_canonical(tmp_path / "r.jsonl", [_row(0, [("lookup", "a", "None")])]))
    assert runs.schema["steps"] == pl.List(STEP_DTYPE)
