"""An agent acting through a generic request tool names the resource in the URL: which resource
(invoices, tickets) is the question's, how the agent gets to it (a search, the collection, the
record) is the strategy's. The path segments the question decides are found from the data and
read as one mark (mechanism.analysis._strategies.features.task_segments)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

import mechanism as mx
from mechanism.analysis._strategies import features
from mechanism.analysis.segmentation import TaskCalls, render, request_paths
from mechanism.core.actions import read_action, request_segments, verb_object
from mechanism.core.schema import from_records, make_step

FAST = "hashing-64"
RESOURCES = ("invoices", "tickets", "orders")
# each strategy's requests, {r} the question's resource; ids and query values vary by episode
STRATEGIES = {
    "direct": ["GET /api/v2/{r}/{id}", "PATCH /api/v2/{r}/{id}"],
    "search": ["GET /api/v2/search?q={q}", "GET /api/v2/{r}/{id}", "PATCH /api/v2/{r}/{id}"],
    "list": ["GET /api/v2/{r}?status=open&sort=created&limit=20", "PATCH /api/v2/{r}/{id}"],
    "history": ["GET /api/v2/{r}/{id}", "GET /api/v2/{r}/{id}/events", "PATCH /api/v2/{r}/{id}"],
    # the shape of `list`, asked by the record's number: told apart by the query's key names alone
    "lookup": ["GET /api/v2/{r}?number={id}", "PATCH /api/v2/{r}/{id}"],
}


def _request_runs(n_questions: int = 24, per_question: int = 6, seed: int = 0):
    """Each question names one resource; each episode draws its strategy, whatever the question."""
    rng = np.random.default_rng(seed)
    names = sorted(STRATEGIES)
    records, truth = [], []
    for q in range(n_questions):
        resource = RESOURCES[q % len(RESOURCES)]
        for s in range(per_question):
            strategy = names[rng.integers(len(names))]
            record_id = f"{resource[:3].upper()}-{rng.integers(10_000, 99_999)}"
            steps = []
            for request in STRATEGIES[strategy]:
                method, url = request.format(r=resource, id=record_id, q=f"name{q}").split(" ")
                steps.append(make_step(tool="http_request", arguments=json.dumps({"method": method, "url": url}),
                                       observation='200 OK\n\n{"ok": true}'))
            records.append({"arm": ("base", "rl")[s % 2], "question_id": f"q{q}", "sample_id": s,
                            "question": f"Close the {resource[:-1]} of customer {q}.", "gold": [],
                            "answer": "done", "correct": True, "n_rounds": len(steps), "steps": steps})
            truth.append(strategy)
    return from_records(records), np.asarray(truth)


def test_a_request_reads_the_task_s_segments_as_one_mark_and_an_id_after_a_resource():
    args = json.dumps({"method": "GET", "url": "https://x.org/api/v2/invoices/INV-7/refunds?full=1"})
    assert verb_object("http_request", "method", args, None)[:2] == ("get api/invoices/refunds", "v2 INV-7 full=1")
    task = frozenset({"invoices", "refunds"})
    assert verb_object("http_request", "method", args, None, task)[:2] == ("get {task}/{id}/{task}", "v2 INV-7 full=1")
    # written out through a text tool, or through a tool whose name says its method: the same reading
    written = "GET /api/v2/invoices/INV-7/refunds?full=1"
    assert verb_object("act", "*", None, written, task)[0] == "get {task}/{id}/{task}"
    assert request_segments({"tool": "act", "query": "PATCH /api/v2/tickets/T-1 {\"x\": 1}"}, "*") == ["api", "tickets"]
    assert request_segments({"tool": "act", "query": "go north"}, "*") == []
    # how a request asks (its query's key names) is carried beside the verb, not in it
    step = read_action({"tool": "act", "query": "GET /api/v2/tickets?page=2&Per_Page=50&page=3#x"}, "*")
    assert step["tool"] == "get api/tickets" and step["_query_keys"] == ("page", "per_page")
    assert "_query_keys" not in read_action({"tool": "act", "query": "GET /api/v2/tickets/T-1"}, "*")
    hostile = read_action({"tool": "act", "query": "GET /x?" + "&".join(f"k{i}=1" for i in range(5_000))}, "*")
    assert len(hostile["_query_keys"]) == 16


def test_the_question_s_resources_are_found_and_the_strategies_read_across_them():
    runs, truth = _request_runs()
    paths = request_paths(runs, {"http_request": "method"})
    assert set(paths[0].split(" > ")) <= {"api", "search", *RESOURCES, "events"}
    # the question fixes each path's resource and three strategies share their paths, so a
    # question's paths agree well beyond chance though its episodes are draws: the habit is read
    # on the tools once the resource is one mark
    assert features.question_agreement(paths, runs["question_id"].to_numpy()) > features.TASK_MAX_AGREEMENT
    space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False, random_state=0).fit(runs)
    assert space.task_tested_ is True
    # the resource alone is found: `api` is in every request, `search` and `events` are the strategies'
    assert space.task_calls_.segments == frozenset(RESOURCES)
    assert adjusted_rand_score(truth, space.labels_) == pytest.approx(1.0)
    from mechanism.report.study import _reading_note

    assert "Which resource a request names is the question's: invoices, orders, tickets" in _reading_note(space)
    # read by name, every resource is a strategy of its own for each way to reach it
    kept = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False, random_state=0,
                            task_calls="keep").fit(runs)
    assert adjusted_rand_score(truth, kept.labels_) < 0.8
    # one episode per question: nothing tells the question's doing from the episode's
    one = runs.filter(runs["sample_id"] == 0)
    assert mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False).fit(one).task_calls_.segments == frozenset()


def test_a_saved_space_reads_new_requests_by_the_segments_it_found(tmp_path):
    runs, _ = _request_runs()
    space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False, random_state=0).fit(runs)
    folder = space.save(tmp_path / "space")
    saved = json.loads((folder / "space.json").read_text())["task_calls"]
    assert saved["segments"] == sorted(RESOURCES)
    loaded = mx.StrategySpace.load(folder)
    assert loaded.task_calls_ == space.task_calls_
    # one new episode alone is too little to find anything: the fitted reading decides
    assert (loaded.transform(runs[:1]) == space.labels_[:1]).all()
    assert (loaded.transform(runs) == space.labels_).all()
    table = render(runs[:1], action_field={"http_request": "method"}, task_calls=loaded.task_calls_)
    assert "{" not in table["tools"][0] and "task" in table["tools"][0]
    assert TaskCalls.from_dict(space.task_calls_.to_dict()) == space.task_calls_

