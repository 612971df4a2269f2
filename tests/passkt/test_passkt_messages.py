"""PASS@(k,T) with T counted in the model's messages (``t_source="messages"``): calls sent
together in one message (parallel function calling) are one round. Checked against the same
estimators on a table whose ``n_rounds`` was set to the message counts by hand."""
from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from mechanism._cli.main import main
from mechanism.analysis.boundaries import boundary
from mechanism.analysis.passkt import message_rounds, pass_at_kt
from mechanism.core.schema import from_records, make_step


def _episode(arm: str, q: int, sample: int, messages: list[int], correct: bool) -> dict:
    """An episode whose calls are sent ``messages[i]`` to a message."""
    steps = [make_step(tool="search", arguments=json.dumps({"q": f"{q}-{m}-{j}"}), observation="ok",
                       parallel=j > 0)
             for m, size in enumerate(messages) for j in range(size)]
    return {"arm": arm, "question_id": f"q{q}", "sample_id": sample, "question": f"question {q}", "gold": ["x"],
            "answer": "x" if correct else "y", "correct": correct, "n_rounds": len(steps), "steps": steps}


@pytest.fixture(scope="module")
def runs() -> pl.DataFrame:
    # base sends one call a message; rl sends the same calls two or three at a time, so by calls
    # rl looks deeper than base while by messages it is shallower
    rng = np.random.default_rng(0)
    records = []
    for q in range(12):
        for sample in range(6):
            calls = int(rng.integers(1, 7))
            correct = bool(rng.random() < 0.6)
            records.append(_episode("base", q, sample, [1] * calls, correct))
            batches = [min(3, calls - i) for i in range(0, calls, 3)]
            records.append(_episode("rl", q, sample, batches, bool(rng.random() < 0.6)))
    return from_records(records)


def _by_hand(runs: pl.DataFrame) -> pl.DataFrame:
    """``n_rounds`` as the number of messages, counted in Python from each episode's steps."""
    counts = [sum(1 for st in steps if not st.get("parallel")) for steps in runs["steps"].to_list()]
    return runs.with_columns(pl.Series("n_rounds", counts, dtype=pl.Int64))


def test_message_rounds_counts_a_message_once_and_changes_nothing_else(runs):
    counted = message_rounds(runs)
    assert counted["n_rounds"].to_list() == _by_hand(runs)["n_rounds"].to_list()
    assert counted.drop("n_rounds").equals(runs.drop("n_rounds"))
    assert message_rounds(counted).equals(counted)  # read from the steps: twice is once
    # a table without the flag, and a row whose rounds were given without steps, keep their counts
    plain = runs.with_columns(pl.col("steps").list.eval(pl.element().struct.field("tool")).alias("steps"))
    assert message_rounds(plain).equals(plain)
    bare = from_records([{**_episode("base", 0, 0, [2], True), "steps": [], "n_rounds": 4},
                         _episode("base", 1, 0, [2, 1], True)])
    assert message_rounds(bare)["n_rounds"].to_list() == [4, 2]


def test_pass_at_kt_by_messages_is_truncation_on_the_message_counts(runs):
    by_messages = pass_at_kt(runs, k=[1, 2, 4], t=[1, 2, 3], t_source="messages", ci=0.9, n_boot=200)
    by_hand = pass_at_kt(_by_hand(runs), k=[1, 2, 4], t=[1, 2, 3], t_source="truncation", ci=0.9, n_boot=200)
    assert np.allclose(by_messages["pass_at_kt"].to_numpy(), by_hand["pass_at_kt"].to_numpy())
    assert np.allclose(by_messages["ci_low"].to_numpy(), by_hand["ci_low"].to_numpy())
    assert set(by_messages["t_source"].to_list()) == {"messages"}
    assert any("T counted in messages" in n for n in by_messages.notes)
    # and it is not the count by calls: rl's batched calls fit under smaller T
    by_calls = pass_at_kt(runs, k=[1], t=[1, 2], t_source="truncation", ci=None)
    rl = pl.col("arm") == "rl"
    assert (by_messages.filter(rl & (pl.col("k") == 1) & pl.col("t").is_in([1, 2]))["pass_at_kt"].to_numpy()
            > by_calls.filter(rl)["pass_at_kt"].to_numpy()).all()


def test_the_boundary_by_messages_reads_every_count_in_messages(runs):
    kwargs = {"base": "base", "treated": "rl", "k": [1, 2], "t": [1, 2, 4], "ci": None, "n_permutations": 200}
    by_messages = boundary(runs, t_source="messages", **kwargs)
    by_hand = boundary(_by_hand(runs), t_source="truncation", **kwargs)
    assert by_messages.t_source == "messages"
    assert by_messages.tests.equals(by_hand.tests)
    assert by_messages.sets.equals(by_hand.sets)  # the share of episodes within T too
    assert "messages with calls" in by_messages.summary()


def test_the_command_line_counts_t_in_messages(runs, tmp_path):
    path = tmp_path / "runs.parquet"
    runs.write_parquet(path)
    out = tmp_path / "out"
    assert main(["passkt", str(path), "--k", "1", "2", "--t", "1", "2", "--t-source", "messages", "--n-boot", "50",
                 "--no-figures", "--out", str(out)]) == 0
    table = pl.read_csv(out / "pass_at_kt.csv")
    assert set(table["t_source"].to_list()) == {"messages"}
