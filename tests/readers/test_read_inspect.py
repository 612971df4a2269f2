"""Inspect AI logs (`.eval` and `.json`), written by inspect_ai itself in the test (no network)."""
from __future__ import annotations

import json

import pytest

from mechanism._cli.main import main
from mechanism.core.errors import InputError
from mechanism.readers import read

inspect_log = pytest.importorskip("inspect_ai.log", reason="the `inspect` extra (inspect_ai) is not installed")
model_mod = pytest.importorskip("inspect_ai.model")
scorer_mod = pytest.importorskip("inspect_ai.scorer")
tool_mod = pytest.importorskip("inspect_ai.tool")


def _sample(qid: str, epoch: int, question: str, target: str, queries: list[str], final: str, value):
    M = model_mod
    msgs = [M.ChatMessageSystem(content="Use the search tool."), M.ChatMessageUser(content=question)]
    for i, q in enumerate(queries):
        call = tool_mod.ToolCall(id=f"c{epoch}{i}", function="search", arguments={"query": q})
        msgs.append(M.ChatMessageAssistant(content=f"I will search {q}.", tool_calls=[call]))
        msgs.append(M.ChatMessageTool(content=f"results for {q}", tool_call_id=call.id, function="search"))
    if final is not None:
        msgs.append(M.ChatMessageAssistant(content=final))
    scores = {"match": scorer_mod.Score(value=value)} if value is not None else {}
    return inspect_log.EvalSample(id=qid, epoch=epoch, input=question, target=target, messages=msgs, scores=scores,
                                  metadata={"level": "easy"})


def _log(samples, model="mockllm/model"):
    spec = inspect_log.EvalSpec(created="2026-01-01T00:00:00+00:00", task="qa",
                                dataset=inspect_log.EvalDataset(name="d"), model=model,
                                config=inspect_log.EvalConfig())
    return inspect_log.EvalLog(eval=spec, samples=samples, status="success")


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inspect")
    samples = [
        _sample("q1", 1, "What is the capital of France?", "Paris", ["capital of France"], "Final answer: Paris", "C"),
        _sample("q1", 2, "What is the capital of France?", "Paris", ["France", "capital"], "Final answer: Lyon", "I"),
        _sample("q2", 1, "Who wrote Hamlet?", "Shakespeare", [], "<answer>William Shakespeare</answer>", None),
        _sample("q2", 2, "Who wrote Hamlet?", "Shakespeare", ["Hamlet author"], None, "N"),  # hit the limit
    ]
    log = _log(samples)
    inspect_log.write_eval_log(log, str(folder / "run.eval"), format="eval")
    inspect_log.write_eval_log(log, str(folder / "run.json"), format="json")
    return folder


def test_eval_and_json_logs_read_the_same(logs):
    runs, rep = read(logs / "run.eval", report=True)
    assert rep.formats[str(logs / "run.eval")] == "inspect"
    as_json, rep_json = read(logs / "run.json", report=True)
    assert rep_json.formats[str(logs / "run.json")] == "inspect"
    assert runs.equals(as_json)
    got = {(r["question_id"], r["sample_id"]): r for r in runs.to_dicts()}
    assert sorted(got) == [("q1", 0), ("q1", 1), ("q2", 0), ("q2", 1)]
    assert set(runs["arm"]) == {"mockllm/model"}
    first = got[("q1", 0)]
    assert first["question"] == "What is the capital of France?" and first["gold"] == ["Paris"]
    assert first["answer"] == "Paris" and first["correct"] is True and first["n_rounds"] == 1
    assert first["steps"][0]["query"] == "capital of France"
    assert first["steps"][0]["observation"] == "results for capital of France"
    assert json.loads(first["meta"])["level"] == "easy"
    assert got[("q1", 1)]["correct"] is False and got[("q1", 1)]["n_rounds"] == 2
    # no score: scored here (exact match of the extracted answer)
    assert got[("q2", 0)]["answer"] == "William Shakespeare" and got[("q2", 0)]["correct"] is False
    assert got[("q2", 0)]["n_rounds"] == 0
    # never answered, scored N: kept as a failure with no answer
    assert got[("q2", 1)]["answer"] is None and got[("q2", 1)]["correct"] is False


def test_folder_and_command_line(logs, tmp_path, capsys):
    runs = read(logs / "run.eval", format="inspect", scorer="cover-em")
    assert runs.height == 4
    assert main(["read", str(logs / "run.eval"), "--out", str(tmp_path / "o.parquet")]) == 0
    assert "format inspect" in capsys.readouterr().out


def test_broken_log_is_one_line(tmp_path):
    path = tmp_path / "bad.eval"
    path.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(InputError) as info:
        read(path)
    assert "\n" not in str(info.value) and str(info.value).startswith(str(path))
    assert "Inspect AI log" in str(info.value)


def test_lone_surrogate_in_a_json_log_is_reported(tmp_path):
    log = _log([_sample("q1", 1, "What?", "Paris", [], "Final answer: Paris", "C"),
                _sample("q2", 1, "Who?", "Ann", [], "Final answer: Ann", "C")])
    path = tmp_path / "s.json"
    inspect_log.write_eval_log(log, str(path), format="json")
    text = path.read_text()
    assert '"Who?"' in text
    path.write_text(text.replace('"Who?"', '"Who\\ud800?"'))
    try:  # inspect_ai's own JSON parser refuses the file, or the record is skipped and reported
        runs, rep = read(path, errors="skip", report=True)
    except InputError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(str(path))
        return
    assert runs.height == 1 and rep.skipped and "surrogate" in rep.skipped[0].reason
