"""A step the agent takes or not whatever its strategy (a look at the account first, a status
post at the end) is execution: its calls are left out where the plan without it is met too
(mechanism.analysis._strategies.alike.optional_steps), and kept in a strategy made of it."""
from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

import mechanism as mx
from mechanism.analysis._strategies.alike import optional_steps
from mechanism.analysis.segmentation import TaskCalls, optional_kept, render
from mechanism.core.schema import from_records, make_step

FAST = "hashing-64"
STRATEGIES = {
    "search": ["search", "get_record", "update"],
    "listing": ["list_records", "get_record", "update"],
    "walk": ["get_customer", "list_orders", "get_record", "update"],
    "batch": ["batch"],
    "post": ["post_status"],  # made of the tool that every other strategy may add at its end
}


def _runs(p_first: float = 0.3, p_last: float = 0.35, n_questions: int = 30, per_question: int = 8, seed: int = 0,
          strategies: dict[str, list[str]] = STRATEGIES, mixture: dict[str, list[float]] | None = None):
    """Every strategy but any whose tools start with `whoami` looks at the account first
    (`whoami`), and every one but `post` posts a status at the end, at fixed rates, in both arms
    alike; the arms differ in their mixture only."""
    rng, post_rng = np.random.default_rng(seed), np.random.default_rng(seed + 1)
    names = sorted(strategies)
    mixture = mixture or {"base": [0.3, 0.1, 0.2, 0.1, 0.3], "rl": [0.1, 0.3, 0.2, 0.2, 0.2]}
    records, truth = [], []
    for q in range(n_questions):
        for s in range(per_question):
            arm = ("base", "rl")[s % 2]
            strategy = names[rng.choice(len(names), p=mixture[arm])]
            tools = list(strategies[strategy])
            if strategy == "post":  # its own draws, so that the others' stay as they were
                tools = (["whoami"] if post_rng.random() < p_first else []) + tools
            elif tools[0] != "whoami":
                tools = (["whoami"] if rng.random() < p_first else []) + tools
                tools += ["post_status"] if rng.random() < p_last else []
            steps = [make_step(tool=t, arguments=json.dumps({"id": f"R{q}-{s}-{i}"}), observation="ok")
                     for i, t in enumerate(tools)]
            records.append({"arm": arm, "question_id": f"q{q}", "sample_id": s, "question": f"Fix account {q}.",
                            "gold": [], "answer": "done", "correct": bool(rng.random() < 0.5),
                            "n_rounds": len(steps), "steps": steps})
            truth.append(strategy)
    return from_records(records), np.asarray(truth)


def test_steps_taken_whatever_the_strategy_are_found_and_a_strategy_made_of_one_keeps_it():
    runs, truth = _runs()
    arms = runs["arm"].to_list()
    tools = render(runs)["tools"].to_list()
    found = dict(optional_steps(tools, arms))
    assert set(found) == {"whoami", "post_status"}
    # the plans met with and without the status post are the four strategies that may add it
    assert "batch" in found["post_status"] and "search > get_record > update" in found["post_status"]
    # left out where the plan without it is met; kept where nothing is left (a strategy made of it)
    optional = TaskCalls(optional=tuple(found.items())).optional_plans
    assert optional_kept(optional, ["whoami", "batch", "post_status"]) == [1]
    assert optional_kept(optional, ["post_status", "post_status"]) == [0, 1]
    # taken by one arm more than the other: rl's doing, never read as optional
    tilted = [("whoami > " if (i % 2 and i % 3) else "") + t for i, t in enumerate(tools)]
    assert "whoami" not in dict(optional_steps(tilted, arms))


def test_the_fit_reads_the_strategies_through_their_optional_steps():
    runs, truth = _runs()
    space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False, random_state=0).fit(runs)
    assert {t for t, _ in space.task_calls_.optional} == {"whoami", "post_status"}
    assert adjusted_rand_score(truth, space.labels_) == pytest.approx(1.0)
    # the report says which steps were left out
    from mechanism.report.study import _reading_note

    note = _reading_note(space)
    assert note.startswith("Steps the agents take or not") and "whoami" in note and "post_status" in note
    # the same episodes without the optional steps at all: the same strategies
    bare, bare_truth = _runs(p_first=0.0, p_last=0.0)
    bare_space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False, random_state=0).fit(bare)
    assert bare_space.task_calls_.optional == ()
    assert adjusted_rand_score(bare_truth, bare_space.labels_) == pytest.approx(1.0)


def test_a_saved_space_leaves_the_same_optional_calls_out_on_apply(tmp_path):
    runs, _ = _runs()
    space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False, random_state=0).fit(runs)
    folder = space.save(tmp_path / "space")
    saved = json.loads((folder / "space.json").read_text())["task_calls"]["optional"]
    assert set(saved) == {"whoami", "post_status"} and all(isinstance(p, str) for p in saved["whoami"])
    loaded = mx.StrategySpace.load(folder)
    assert loaded.task_calls_ == space.task_calls_
    assert (loaded.transform(runs[:3]) == space.labels_[:3]).all()
    assert (loaded.transform(runs) == space.labels_).all()
    assert TaskCalls.from_dict(space.task_calls_.to_dict()) == space.task_calls_




def test_a_step_taken_between_every_two_steps_is_a_way_of_working_and_stays(tmp_path):
    """`careful` checks the account before every call. Read without `whoami` it is `search`'s
    plan, which is met with and without the one optional look; but a tool called at several
    places of a plan is how the agent works, and stays."""
    strategies = {**STRATEGIES, "careful": ["whoami", "search", "whoami", "get_record", "whoami", "update"]}
    mixture = {"base": [0.25, 0.1, 0.1, 0.15, 0.1, 0.3], "rl": [0.1, 0.1, 0.3, 0.2, 0.1, 0.2]}
    runs, truth = _runs(strategies=strategies, mixture=mixture)
    optional = TaskCalls(optional=(("whoami", ("search > get_record > update",)),))
    read = dict(zip(render(runs)["tools"].to_list(), render(runs, task_calls=optional)["tools"].to_list()))
    assert read["whoami > search > get_record > update"] == "search > get_record > update"
    assert read["whoami > search > whoami > get_record > whoami > update"].count("whoami") == 3
    # the phone GUI with one sample a question: its careful strategy reads the screen between
    # every two taps, the others once at the end or not; read as its direct one before (0.72).
    # The look at the end is not read as optional either: some ways of working never take it
    from mechanism.datasets.worlds import gui

    world = gui(n_questions=120, n_samples=1, random_state=1)
    gui_runs = mx.read(world.write(tmp_path / "gui"), format=world.format)
    space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False, random_state=1).fit(gui_runs)
    assert "read_screen" not in dict(space.task_calls_.optional)
    assert adjusted_rand_score([str(t) for t in world.labels_for(gui_runs)], space.labels_) > 0.9


def test_a_step_some_strategies_take_and_others_never_is_not_optional():
    # a question to the user before three of the lookups, at one rate, never before the other two
    # strategies: met beside its absence in every context where it is met at all (each shared
    # context alone looks like an optional step), but missing from the contexts of two strategies
    rng = np.random.default_rng(0)
    ways = ["archival", "recall", "by_date", "archival > recall", "recall > core_append"]
    tools = [("ask_user > " if i % 5 < 3 and rng.random() < 0.3 else "") + ways[i % 5] for i in range(600)]
    arms = ["base", "rl"] * 300
    assert "ask_user" not in dict(optional_steps(tools, arms))
    # taken before every strategy at that rate: optional
    everywhere = [("ask_user > " if rng.random() < 0.3 else "") + ways[i % 5] for i in range(600)]
    assert "ask_user" in dict(optional_steps(everywhere, arms))
