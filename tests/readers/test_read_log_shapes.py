"""Reading logs in the shapes of Reflexion, FireAct and tau-bench: nothing of the
logger's bookkeeping in what the agent saw, retrieval and failures as a hand count gives, a
leaked gold line flagged, and a warning that names the field grouping questions."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl
import pytest

import mechanism as mx
from mechanism.core.errors import ReadWarning

sys.path.insert(0, str(Path(__file__).parent))
from log_shapes import REFLEXION_READ, TAU_READ, fireact_log, leaked_block, reflexion_log, tau_log


def _agent_text(runs: pl.DataFrame) -> list[str]:
    return [text for steps in runs["steps"].to_list() for st in steps
            for text in (st["thought"], st["observation"], st["user"]) if text]


def _retrieved(runs: pl.DataFrame) -> dict[str, int]:
    per = mx.integration(runs, ci=None).per_arm
    return {r["arm"]: int(r["n_retrieved"]) for r in per.iter_rows(named=True)}


def _failed(runs: pl.DataFrame) -> dict[str, int]:
    moves = mx.segment(runs).filter(pl.col("tool") != "answer")
    return {r["arm"]: int(r["failed"]) for r in moves.group_by("arm").agg(pl.col("failed").sum()).iter_rows(named=True)}


def test_reflexion_trailer_never_reaches_an_observation_and_counts_match_by_hand(tmp_path):
    path, count = reflexion_log(tmp_path)
    runs, rep = mx.read(path, report=True, **REFLEXION_READ)
    halted = runs.filter(pl.col("answer").is_null())
    assert halted.height == sum(1 for line in path.read_text().splitlines() if '"HALTED"' in line) > 0
    texts = _agent_text(runs)
    assert not any("Correct answer" in t or "BEGIN HALTED" in t or "-----" in t for t in texts)
    # the gold never appears in a halted episode's steps (it was never retrieved there)
    for row in halted.iter_rows(named=True):
        assert not any(row["gold"][0] in (st["observation"] or "") or row["gold"][0] in (st["thought"] or "")
                       for st in row["steps"])
    meta = [json.loads(m) for m in runs["meta"].to_list()]
    assert all(m["bookkeeping"].startswith("Correct answer: Town") for m in meta)
    assert any("BEGIN HALTED AGENTS" in m["bookkeeping"] for m in meta)
    assert _retrieved(runs) == count.retrieved
    assert _failed(runs) == count.failed
    assert runs.group_by("arm").agg(pl.col("n_rounds").sum()).sort("arm").rows() == sorted(count.calls.items())
    # arms named with `columns={'arm': 'run'}`: no advice to name them that way
    assert not any("name each run" in n for n in rep.notes), rep.notes
    assert not rep.warnings


def test_a_gold_line_inside_the_transcript_is_flagged_with_its_location(tmp_path):
    path, _ = reflexion_log(tmp_path, n_questions=3, trials=1)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(leaked_block()) + "\n")
    with pytest.warns(ReadWarning, match="bookkeeping line"):
        runs, rep = mx.read(path, report=True, **REFLEXION_READ)
    flagged = [w for w in rep.warnings if "bookkeeping line" in w]
    assert len(flagged) == 1 and "1 episodes" in flagged[0]
    assert f"{path} line 7, step 1 observation" in flagged[0] and "Correct answer: Town99" in flagged[0]


def test_fireact_none_observations_and_retrieval_by_hand(tmp_path):
    path, count = fireact_log(tmp_path)
    runs = mx.read(path, format="fireact", arm="llama-2-7b")
    observations = [st["observation"] for steps in runs["steps"].to_list() for st in steps]
    assert observations.count("None") == sum(count.failed.values()) > 0
    assert not any("Episode finished" in t for t in _agent_text(runs))  # the finish result is meta
    assert _retrieved(runs) == count.retrieved


def test_tau_bench_user_turns_kept_and_user_typed_ids_are_the_users(tmp_path):
    paths, count = tau_log(tmp_path)
    runs = mx.read(paths, arm=None, **{**TAU_READ, "columns": {**TAU_READ["columns"], "arm": "agent"}})
    assert runs["question_id"].n_unique() == 8
    details = mx.segment(runs).filter(pl.col("tool") == "get_user_details")
    assert details.height == count.user_typed and (details["sources"] == "user").all()
    users = [st["user"] for steps in runs["steps"].to_list() for st in steps if st["user"]]
    assert sum("Sure, it's" in u for u in users) == count.user_typed


def test_question_ids_from_text_warn_and_name_the_grouping_field(tmp_path):
    paths, _ = tau_log(tmp_path)
    columns = {"messages": "traj", "correct": "reward", "arm": "agent"}
    with pytest.warns(ReadWarning, match="`task_id`"):
        runs, rep = mx.read(paths, format="openai", columns=columns, report=True)
    assert runs["question_id"].n_unique() > 8
    (warning,) = [w for w in rep.warnings if "question ids come from the question text" in w]
    assert "`task_id` (8 values)" in warning and "question_id" in warning and "`trial`" not in warning


def test_duplicates_of_one_file_are_counted_apart_from_two_runs_that_agree(tmp_path):
    record = {"question": "Where was the founder of Magazine 1 born?", "gold": "Town1", "status": "INCORRECT",
              "model": "m", "text": "Thought 1: s\nAction 1: Search[Magazine 1]\nObservation 1: x\n"
                                    "Action 2: Finish[Paris]\n"}
    a, b = tmp_path / "run_a.jsonl", tmp_path / "run_b.jsonl"
    a.write_text(json.dumps(record) + "\n" + json.dumps(record) + "\n", encoding="utf-8")  # a logger's repeat
    b.write_text(json.dumps(record) + "\n", encoding="utf-8")  # another run, same episode
    _, rep = mx.read([a, b], format="react", columns={"arm": "model", "correct": "status:CORRECT"}, report=True)
    assert any(n.startswith("1 episodes repeat an earlier episode of their arm and question exactly in the same file")
               for n in rep.notes), rep.notes
    assert any(n.startswith("1 episodes are identical to an episode of their arm and question in another file")
               for n in rep.notes), rep.notes


def test_a_repaired_action_note_names_each_location_once():
    from mechanism.readers._build import Tally

    tally = Tally()
    for _ in range(3):
        tally.note("actions repaired", "f.jsonl line 371")
    tally.note("actions repaired", "f.jsonl line 400")
    assert tally.notes() == ["4 actions repaired; e.g. f.jsonl line 371; f.jsonl line 400"]
