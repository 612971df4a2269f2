"""Final answers by the conventions agents use, the `scorer=` hook and the 0 % warning."""
from __future__ import annotations

import json
import re
import warnings

import polars as pl
import pytest

from mechanism._cli.main import main
from mechanism.core.errors import InputError, ReadWarning
from mechanism.datasets.simulation.run import simulate
from mechanism.readers import read
from mechanism.readers._answer import extract_answer


@pytest.mark.parametrize("text, answer, rule", [
    ("<answer> Paris </answer>", "Paris", "answer_tag"),
    ("<think>maybe <answer>Lyon</answer></think> so <answer>Paris</answer>", "Paris", "answer_tag"),
    ("We looked it up.\nFinal answer: Paris.", "Paris", "final_answer"),
    ("**Final Answer:** *Paris*", "Paris", "final_answer"),
    ("So the final answer is \\boxed{\\frac{1}{2}}.", "\\frac{1}{2}", "final_answer"),
    ("Hence $x = \\boxed{42}$", "42", "boxed"),
    ("Reasoning...\nAnswer: Marie Curie", "Marie Curie", "answer_line"),
    ("The question asks for an answer: but first", "The question asks for an answer: but first", "whole_message"),
    ("Thought: got it.\nAction: Finish[Ron Howard]", "Ron Howard", "finish"),
    ("Adding them up, the answer is 42.", "42", "answer_is"),
    ("Paris", "Paris", "whole_message"),
    ("", None, "none"),
])
def test_conventions(text, answer, rule):
    assert extract_answer(text) == (answer, rule)


def test_user_pattern_wins_and_falls_back():
    pattern = re.compile(r"ANS=(\w+)")
    assert extract_answer("ANS=Lyon then ANS=Paris\nFinal answer: Rome", pattern=pattern) == ("Paris", "pattern")
    assert extract_answer("Final answer: Rome", pattern=pattern) == ("Rome", "final_answer")


def _openai_variant(record: dict, i: int) -> dict:
    """The same episode with its final message written in one of the usual conventions."""
    messages = record["messages"]
    last = messages[-1]["content"]
    answer = re.search(r"<answer>(.*?)</answer>", last, re.S).group(1).strip()
    thought = re.search(r"<think>(.*?)</think>", last, re.S).group(1).strip()
    styles = [f"{thought}\nFinal answer: {answer}", f"{thought}\n\n**Final Answer:** {answer}.",
              f"{thought}\nAnswer: {answer}", f"{thought} The answer is \\boxed{{{answer}}}",
              f"<think>{thought}</think>\n{answer}"]
    new = [*messages[:-1]]
    if i % 6 == 5:  # a finishing tool call instead of text
        new.append({"role": "assistant", "content": thought, "tool_calls": [
            {"id": "fin", "type": "function",
             "function": {"name": "submit", "arguments": json.dumps({"answer": answer})}}]})
    else:
        new.append({"role": "assistant", "content": styles[i % 5]})
    return {**record, "messages": new}


def test_openai_form_scores_as_the_searchr1_form(tmp_path):
    files = simulate(n_questions=30, n_samples=4, arms=("base", "rl"), random_state=3).write(tmp_path / "sim")
    reference = read(tmp_path / "sim" / "searchr1")
    out = tmp_path / "chat"
    out.mkdir()
    for path in (p for p in files if p.parent.name == "openai"):
        rows = [json.loads(x) for x in path.read_text().splitlines()]
        (out / path.name).write_text("\n".join(json.dumps(_openai_variant(r, i)) for i, r in enumerate(rows)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReadWarning)  # no arm may look misread
        chat, rep = read(out, report=True)
    key = ["arm", "question_id", "sample_id"]
    joined = reference.join(chat, on=key, suffix="_chat")
    assert joined.height == reference.height == chat.height
    assert joined["correct"].to_list() == joined["correct_chat"].to_list()
    assert joined["answer"].to_list() == joined["answer_chat"].to_list()
    acc = reference.group_by("arm").agg(pl.col("correct").mean()).sort("arm")
    assert acc["correct"].min() > 0.05  # the comparison means something
    assert any("final answers found in the last message" in n for n in rep.notes)


def _chat(answer_text: str, gold: str, qid: int) -> dict:
    return {"arm": "base", "question_id": str(qid), "question": "q?", "gold": [gold],
            "messages": [{"role": "user", "content": "q?"},
                         {"role": "assistant", "content": None, "tool_calls": [
                             {"id": "c", "function": {"name": "search", "arguments": "{\"query\": \"x\"}"}}]},
                         {"role": "tool", "tool_call_id": "c", "content": "obs"},
                         {"role": "assistant", "content": answer_text}]}


def test_zero_percent_arm_warns(tmp_path, capsys):
    path = tmp_path / "base.jsonl"
    # an answer nobody could extract: the whole message is kept and never matches
    path.write_text("\n".join(
        json.dumps(_chat(f"I am fairly sure it is Paris{i}, since the page says so", f"Paris{i}", i))
        for i in range(6)))
    with pytest.warns(ReadWarning, match=r"arm 'base' scores 0 % by `em`: none of its 6 answers"):
        runs, rep = read(path, report=True)
    assert not runs["correct"].any() and len(rep.warnings) == 1
    assert main(["read", str(path), "--out", str(tmp_path / "o.parquet")]) == 0
    out = capsys.readouterr().out
    assert "warning: arm 'base' scores 0 %" in out
    # with a pattern that finds the answer, the arm scores and nothing warns
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReadWarning)
        runs = read(path, answer_pattern=r"it is (\w+),")
    assert runs["correct"].all()
    # the cover-em scorer accepts the gold inside the long answer too
    assert read(path, scorer="cover-em")["correct"].all()


def test_scorers(tmp_path):
    path = tmp_path / "s.jsonl"
    rows = [("Barack Obama", "Barack Obama"), ("Barack Obama jr", "Barack Obama"),
            ("President Barack Obama", "Barack Obama"), ("Obamacare", "Obama"), ("Lyon", "Paris")]
    path.write_text("\n".join(json.dumps(_chat(f"<answer>{a}</answer>", g, i)) for i, (a, g) in enumerate(rows)))
    expected = {
        "em": [True, False, False, False, False],
        "f1": [True, True, True, False, False],          # F1 0.8, 0.8 pass 0.5; 0 fails
        "cover-em": [True, True, True, False, False],    # whole words only: not Obamacare
        "contains": [True, True, True, False, False],    # the same test (contains_answer): not Obamacare
    }
    for scorer, want in expected.items():
        assert read(path, scorer=scorer)["correct"].to_list() == want, scorer
    calls = []

    def first_word(answer: str, gold: list[str]) -> bool:
        calls.append((answer, tuple(gold)))
        return answer.split()[0].lower() == gold[0].split()[0].lower()

    assert read(path, scorer=first_word)["correct"].to_list() == [True, True, False, False, False]
    assert calls[0] == ("Barack Obama", ("Barack Obama",))
    with pytest.raises(InputError, match="`scorer` must be one of"):
        read(path, scorer="bleu")
    with pytest.raises(InputError, match="must return a bool"):
        read(path, scorer=lambda a, g: "yes")
    with pytest.raises(InputError, match="`answer_pattern` is not a valid regular expression"):
        read(path, answer_pattern="(")
    # a label in the file is taken as given, whatever the scorer
    labelled = tmp_path / "l.jsonl"
    labelled.write_text(json.dumps({**_chat("<answer>Lyon</answer>", "Paris", 0), "correct": True}))
    assert read(labelled, scorer="em")["correct"].to_list() == [True]
