"""Reader options that replace preparation code: `where=`, label values, `round_tools=`,
and notes for every repaired or dropped action (on a fixture written for the purpose)."""
from __future__ import annotations

import json

import polars as pl
import pytest

from mechanism._cli.main import main
from mechanism.core.errors import InputError
from mechanism.readers import read

OPTIONS = dict(format="react", columns={"text": "traj", "question_id": "qid", "gold": "gold_answer",
                                        "correct": "status:CORRECT"},
               where="trial == 1 and not carried_over", round_tools="-reflect,-think")


def test_reflexion_style_log_reads_with_options_only(fixtures):
    path = fixtures / "options" / "react_trials.jsonl"
    runs, rep = read(path, report=True, **OPTIONS)
    assert rep.rows_in == 8 and rep.rows_filtered == 3 and rep.rows_kept == 5 and not rep.skipped
    assert rep.rows_in == rep.rows_kept + len(rep.skipped) + rep.rows_filtered
    got = {r["question_id"]: r for r in runs.to_dicts()}
    assert sorted(got) == ["q1", "q2", "q3", "q4", "q5"]
    assert {q: r["correct"] for q, r in got.items()} == {"q1": False, "q2": True, "q3": False, "q4": False,
                                                          "q5": True}
    assert {q: r["answer"] for q, r in got.items()} == {"q1": "Lyon", "q2": "Paris", "q3": None, "q4": None,
                                                         "q5": "the Seine"}
    # reflect and think are not rounds; the repaired search is one
    assert {q: r["n_rounds"] for q, r in got.items()} == {"q1": 1, "q2": 1, "q3": 3, "q4": 2, "q5": 1}
    assert got["q2"]["steps"][0]["query"] == "capital of France"
    assert got["q2"]["steps"][0]["observation"].startswith("Paris is the capital")
    assert [s["tool"] for s in got["q1"]["steps"]] == ["search"]  # the reflection came after the last round
    assert [s["tool"] for s in got["q5"]["steps"]] == ["search"]
    assert "think[rivers of France]" in got["q5"]["steps"][0]["thought"]
    assert rep.unanswered == 1  # q4: halted, no label
    notes = " | ".join(rep.notes)
    assert "left out 3 of 8 records" in notes
    assert "1 actions missing their closing `]`" in notes and f"{path} line 3" in notes
    assert "1 action lines not of the form `tool[argument]`" in notes and f"{path} line 6" in notes
    assert "1 calls of `reflect` not counted as rounds" in notes and "1 calls of `think`" in notes
    assert "1 of those calls came after an episode's last round" in notes
    assert "1 episodes ended without a final answer" in notes


def test_same_through_the_command_line(fixtures, tmp_path, capsys):
    out = tmp_path / "o.parquet"
    code = main(["read", str(fixtures / "options" / "react_trials.jsonl"), "--format", "react",
                 "--columns", "text=traj,question_id=qid,gold=gold_answer,correct=status:CORRECT",
                 "--where", "trial == 1 and not carried_over", "--round-tools=-reflect,-think", "--out", str(out)])
    assert code == 0
    assert "left out by --where 3" in capsys.readouterr().out
    expected = read(fixtures / "options" / "react_trials.jsonl", **OPTIONS)
    assert pl.read_parquet(out).equals(expected)


def test_where_forms_and_errors(fixtures):
    path = fixtures / "options" / "react_trials.jsonl"
    base = dict(OPTIONS)
    del base["where"]
    as_expr = read(path, where=(pl.col("trial") == 1) & ~pl.col("carried_over"), **base)
    assert as_expr.equals(read(path, **OPTIONS))
    assert read(path, where="trial = 2", **base).height == 3
    assert read(path, where="status = 'CORRECT'", **base)["correct"].all()
    with pytest.raises(InputError, match="`where` is not a valid filter"):
        read(path, where="trial ==", **base)
    with pytest.raises(InputError, match="`where`"):
        read(path, where="", **base)


def test_round_tools_include_list(fixtures):
    runs = read(fixtures / "options" / "react_trials.jsonl", round_tools=["search"],
                **{k: v for k, v in OPTIONS.items() if k != "round_tools"})
    got = {r["question_id"]: r["n_rounds"] for r in runs.to_dicts()}
    assert got["q3"] == 2  # the lookup is not a round when only search counts
    with pytest.raises(InputError, match="`round_tools` names no tool"):
        read(fixtures / "options" / "react_trials.jsonl", round_tools=",", format="react", columns=OPTIONS["columns"])


def test_label_value_mapping(tmp_path):
    path = tmp_path / "l.jsonl"
    rows = [{"question": "q", "gold": ["a"], "response": "<answer>b</answer>", "status": s}
            for s in ("CORRECT", "INCORRECT", "PASS", None)]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    runs = read(path, columns={"correct": "status:CORRECT|PASS"})
    # a missing label falls back to scoring ("b" vs gold "a": wrong)
    assert runs["correct"].to_list() == [True, False, True, False]
    with pytest.raises(InputError, match="expected field:VALUE"):
        read(path, columns={"correct": "status:"})


def test_fireact_repairs_are_noted(fireact_dir):
    path = next((fireact_dir / "trajs").glob("*gpt-3.5*.json"))
    runs, rep = read(path, report=True)
    assert any(n.startswith("3 actions missing their closing `]`") for n in rep.notes)
    path7 = next((fireact_dir / "trajs").glob("*llama-2-7b*.json"))
    plain, rep_plain = read(path7, report=True)
    assert any(n.startswith("26 calls of `reflect` counted as rounds") for n in rep_plain.notes)
    folded, rep7 = read(path7, report=True, round_tools="-reflect")
    assert plain["n_rounds"].sum() - folded["n_rounds"].sum() == 26
    assert any(n.startswith("26 calls of `reflect` not counted as rounds") for n in rep7.notes)


def test_rl_rollout_dump_reads_with_columns(tmp_path):
    """The README's recipe: one JSON line per rollout (prompt, response, reward)."""
    path = tmp_path / "rollouts.jsonl"
    rows = []
    for step in (300, 400):
        for _i, (answer, reward) in enumerate([("Paris", 1.0), ("Lyon", 0.0), ("Paris", 1.0)]):
            rows.append({"prompt": "Question: What is the capital of France?", "uid": "q17", "step": step,
                         "response": f"<think>look</think><search> capital France </search><information> Paris "
                                     f"</information><answer> {answer} </answer>",
                         "reward": reward, "ground_truth": ["Paris"]})
    path.write_text("\n".join(json.dumps(r) for r in rows))
    runs, rep = read(path, format="searchr1", arm="step-400", report=True, where="step = 400",
                     columns={"question": "prompt", "text": "response", "question_id": "uid",
                              "gold": "ground_truth", "correct": "reward"})
    assert runs.height == 3 and rep.rows_filtered == 3
    assert runs["correct"].to_list() == [True, False, True] and runs["sample_id"].to_list() == [0, 1, 2]
    assert runs["n_rounds"].to_list() == [1, 1, 1] and set(runs["arm"]) == {"step-400"}
    # a graded reward is a score, not a label: the answers are scored instead
    graded = [{**r, "reward": 0.7} for r in rows]
    path.write_text("\n".join(json.dumps(r) for r in graded))
    runs = read(path, format="searchr1", arm="step-400", where="step = 400", scorer="f1",
                columns={"question": "prompt", "text": "response", "question_id": "uid",
                         "gold": "ground_truth", "score": "reward"})
    assert runs["correct"].to_list() == [True, False, True]
