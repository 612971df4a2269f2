"""Tools used interchangeably, whatever the strategy, read as one (mechanism.analysis._strategies.alike)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

import mechanism as mx
from mechanism.analysis._strategies.alike import interchangeable_tools, plan_of
from mechanism.analysis.segmentation import TaskCalls, render
from mechanism.core.errors import InputError
from mechanism.core.schema import from_records, make_step
from mechanism.report.study import _reading_note

FAST = "hashing-64"
EDITS = ("sed_i", "perl_i", "python_inline")
# three ways of finding the bug; the edit after it is one of three verbs, drawn at random
FINDS = {"grep_first": ("grep", "sed_n"), "list_first": ("ls", "cat"), "history": ("git_log", "git_show")}
MIXTURE = {"base": (0.5, 0.3, 0.2), "rl": (0.2, 0.3, 0.5)}


def _rows(n_questions=40, n_samples=4, seed=0, edit_rates=None):
    """Records of a terminal-like agent and the planted strategy of each (typed tools: the
    program is the tool). ``edit_rates``: arm -> the three edit verbs' rates (uniform)."""
    rng = np.random.default_rng(seed)
    records, truth = [], []
    for arm, mix in MIXTURE.items():
        rates = (edit_rates or {}).get(arm, (1 / 3, 1 / 3, 1 / 3))
        for q in range(n_questions):
            for s in range(n_samples):
                strategy = list(FINDS)[rng.choice(3, p=mix)]
                path = f"src/mod_{q}.py"
                calls = [(tool, {"target": f"{path}:{q}"}) for tool in FINDS[strategy]]
                calls += [(EDITS[rng.choice(3, p=rates)], {"file": path, "old": f"x{q}", "new": f"y{q}"}),
                          ("pytest", {"selector": f"tests/test_{q}.py"})]
                steps = [make_step(tool=t, arguments=json.dumps(a), observation=f"output {q} {i}")
                         for i, (t, a) in enumerate(calls)]
                records.append({"arm": arm, "question_id": f"q{q}", "sample_id": s, "question": f"Fix bug {q}",
                                "gold": [], "answer": "fixed", "correct": bool(rng.random() < 0.5),
                                "n_rounds": len(steps), "steps": steps})
                truth.append(strategy)
    return from_records(records), np.asarray(truth)


def _tools(runs):
    return render(runs)["tools"].to_list(), runs["arm"].to_list()


def test_plan_of_reads_runs_once_the_task_as_one_mark_and_drops_failure_marks():
    assert plan_of("ls > ls > cat! > cat > sed_i", frozenset()) == ("ls", "cat", "sed_i")
    assert plan_of("book > search > book", frozenset({"book", "search"})) == ("(task)",)
    assert plan_of(None) == ()


def test_edit_verbs_used_whatever_the_strategy_are_found_and_nothing_else():
    runs, _ = _rows()
    groups = interchangeable_tools(*_tools(runs))
    assert len(groups) == 1 and sorted(groups[0]) == sorted(EDITS)
    # the tools the question decides are never grouped, and a table of one plan has no choice to read
    tools, arms = _tools(runs)
    assert interchangeable_tools(tools, arms, task=frozenset(EDITS)) == ()
    assert interchangeable_tools(["a > b"] * 10, ["base"] * 10) == ()


def test_a_choice_rl_moved_stays_apart():
    # rl edits with sed -i nearly always: the arms take the verbs at different rates
    runs, _ = _rows(edit_rates={"rl": (0.8, 0.1, 0.1)})
    assert not any({"sed_i", "perl_i"} <= set(g) or {"sed_i", "python_inline"} <= set(g)
                   for g in interchangeable_tools(*_tools(runs)))


def test_a_choice_that_follows_the_rest_of_the_plan_stays_apart():
    # sed -i after grep, perl -pi after git, a heredoc after ls: the edit says which strategy it was
    tools = [f"{' > '.join(FINDS[f])} > {e} > pytest" for f, e in zip(FINDS, EDITS)] * 60
    assert interchangeable_tools(tools, ["base", "rl"] * 90) == ()


def test_a_choice_between_two_ways_in_before_the_same_steps_is_the_strategy():
    rng = np.random.default_rng(1)
    # the contexts holding both differ only by an optional step: the swap is what the strategies are
    tools = [f"{('search_settings', 'swipe')[i % 2]} > tap{' > back' if rng.random() < 0.3 else ''} > "
             f"{'read_screen > ' if rng.random() < 0.2 else ''}tap" for i in range(480)]
    assert interchangeable_tools(tools, ["base", "rl"] * 240) == ()


def _varied(seed: int = 0, n_questions: int = 60, n_samples: int = 8, by_question: bool = False):
    """Plans of an agent whose every slot varies at random (a first look, the window printer, the
    edit verb, the test runner, a last review) around one of three ways of finding the code:
    nearly as many plans as trajectories. ``by_question``: the edit verb is the question's."""
    rng = np.random.default_rng(seed)
    tools, questions = [], []
    for q in range(n_questions):
        for _ in range(n_samples):
            plan = [*([("pwd", "tree", "env")[rng.integers(3)]] if rng.random() < 0.5 else []),
                    *FINDS[list(FINDS)[rng.integers(3)]]]
            plan += [("head", "awk", "nl", "less")[rng.integers(4)]] if rng.random() < 0.6 else []
            plan += [("sed_i", "python_inline")[q % 2 if by_question else rng.integers(2)]]
            plan += [("pytest", "unittest", "tox")[rng.integers(3)]] if rng.random() < 0.6 else []
            plan += [("git_diff", "git_status")[rng.integers(2)]] if rng.random() < 0.5 else []
            tools.append(" > ".join(plan))
            questions.append(f"q{q}")
    return tools, ["base", "rl"] * (len(tools) // 2), questions


def test_a_choice_met_around_many_steps_is_read_on_local_contexts_where_plans_rarely_coincide():
    tools, arms, questions = _varied()
    # whole plans: the two edit verbs share too few contexts for the cover
    assert not any({"sed_i", "python_inline"} <= set(g) for g in interchangeable_tools(tools, arms))
    groups = interchangeable_tools(tools, arms, questions=questions)
    assert any({"sed_i", "python_inline"} <= set(g) for g in groups), groups
    # ways of finding the code are the strategies: never joined, however varied the rest
    assert not any(len(set(g) & {"grep", "ls", "git_log"}) > 1 for g in groups), groups
    # the question picks the verb: the question's choice, not one made whatever the strategy
    tools, arms, questions = _varied(by_question=True)
    assert not any({"sed_i", "python_inline"} <= set(g)
                   for g in interchangeable_tools(tools, arms, questions=questions))
    # two ways of a one-call plan sit between the start and the end alone: the strategy's choice
    one_call = [("restart", "scale")[i % 2] for i in range(400)]
    assert interchangeable_tools(one_call, ["base", "rl"] * 200, questions=[f"q{i % 50}" for i in range(400)]) == ()


def test_the_fit_reads_them_as_one_tool_and_finds_the_planted_strategies(tmp_path):
    runs, truth = _rows()
    space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False).fit(runs)
    assert sorted(space.task_calls_.alike[0]) == sorted(EDITS)
    assert adjusted_rand_score(truth, space.labels_) == 1.0
    names = space.describe()["name"].to_list()
    assert len(names) == 3 and all("_or_" in n for n in names), names
    by_name = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False, task_calls="keep").fit(runs)
    assert by_name.task_calls_.alike == ()
    assert adjusted_rand_score(truth, by_name.labels_) < 0.9  # each edit verb another plan
    # the report says which tools were read as one
    note = _reading_note(space)
    assert note.startswith("Tools the agents use interchangeably") and "sed_i" in note and "perl_i" in note
    assert _reading_note(by_name) == ""
    # saved with the space and applied to new runs as fitted
    loaded = mx.StrategySpace.load(space.save(tmp_path / "space"))
    assert loaded.task_calls_ == space.task_calls_
    assert (loaded.transform(runs) == space.transform(runs)).all()
    config = json.loads((tmp_path / "space" / "space.json").read_text())
    config["task_calls"]["alike"] = ["sed_i"]
    (tmp_path / "space" / "space.json").write_text(json.dumps(config))
    with pytest.raises(InputError, match="task_calls"):
        mx.StrategySpace.load(tmp_path / "space")


def test_a_group_keeps_each_calls_own_name_and_round_trips():
    calls = TaskCalls(alike=(("sed_i", "perl_i"),))
    assert calls and TaskCalls.from_dict(calls.to_dict()) == calls
    assert TaskCalls.from_dict({"tools": [], "drop": False}).alike == ()  # saved before the reading
    steps = [make_step(tool=t, arguments=json.dumps({"f": "a.py"}), observation="ok") for t in ("perl_i", "sed_i")]
    runs = from_records([{"arm": "base", "question_id": "q0", "sample_id": 0, "question": "Fix it", "gold": [],
                          "answer": "done", "correct": True, "n_rounds": 2, "steps": steps}])
    assert render(runs, task_calls=calls)["tools"][0] == "sed_i_or_perl_i > sed_i_or_perl_i"


def test_a_step_taken_whatever_the_strategy_and_one_some_strategies_take_are_not_one_tool():
    # an insert of a fact before any strategy at a fixed rate; a question to the user before three
    # of them only: they swap where both are met, but the question is missing from the others
    rng = np.random.default_rng(0)
    ways = ["archival", "recall", "by_date", "archival > recall", "recall > core_append"]
    tools = []
    for i in range(800):
        first = "ask_user" if i % 5 < 3 and rng.random() < 0.4 else ("insert" if rng.random() < 0.3 else "")
        tools.append(f"{first} > {ways[i % 5]}" if first else ways[i % 5])
    assert not any({"ask_user", "insert"} <= set(g) for g in interchangeable_tools(tools, ["base", "rl"] * 400))
