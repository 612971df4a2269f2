"""Small logs in the shapes of three published ones, written here for the purpose,
each with the hand count a reader checks the toolkit against.

- **Reflexion** (HotpotQA, Wikipedia ReAct): one record per block of the logger's text log, the
  block ending with its ``Correct answer: <gold>`` trailer; HALTED blocks have no Finish step,
  so the trailer follows their last observation; some blocks keep the logger's banner lines.
- **FireAct** (HotpotQA, one web-search snippet per call): the published file layout
  (``trajs/<file>.json`` keyed by question index, ``questions/dev.json``), Llama-style
  transcripts in which some observations are literally ``None``.
- **tau-bench** (airline): OpenAI messages whose simulated user types an id in a later turn,
  ``task_id`` and ``trial`` fields, the first user message rewritten per trial.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

REFLEXION_READ = dict(format="react", columns={"text": "block", "question_id": "qid", "gold": "gold_answer",
                                               "correct": "status:CORRECT", "arm": "run", "sample_id": "trial"})
TAU_READ = dict(format="openai", columns={"messages": "traj", "question_id": "task_id", "sample_id": "trial",
                                          "correct": "reward"})


@dataclass
class HandCount:
    """What a reader counts by hand, per arm: episodes whose gold is in an observation, failed
    calls, calls; and (tau-bench) the calls whose id the user typed."""

    retrieved: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    episodes: dict[str, int] = field(default_factory=dict)
    user_typed: int = 0

    def add(self, arm: str, *, retrieved: bool, failed: int, calls: int) -> None:
        for name, v in (("retrieved", int(retrieved)), ("failed", failed), ("calls", calls), ("episodes", 1)):
            d = getattr(self, name)
            d[arm] = d.get(arm, 0) + v


# --------------------------------------------------------------------------------- Reflexion
def _reflexion_block(q: int, trial: int, arm: str, count: HandCount) -> dict:
    """One block: question ``q``'s trial under run ``arm``; its kind cycles so every kind occurs in
    every arm (answered after a bridge search, answered wrong, halted after failures)."""
    gold = f"Town{q}"
    founder = f"Person {q} Smith"
    lines = [f"Question: Where was the founder of Magazine {q} born?"]
    kind = ("found", "wrong", "halted")[(q + trial + (arm == "reflexion")) % 3]
    steps: list[tuple[str, str, str]]
    if kind == "found":
        steps = [("Search", f"Magazine {q}", f"Magazine {q} was founded by {founder} in 1901."),
                 ("Search", founder, f"{founder} was born in {gold}, a river port.")]
    elif kind == "wrong":
        steps = [("Search", f"Magazine {q}", f"Magazine {q} was founded by {founder} in 1901."),
                 ("Lookup", "born", "No Results")]
    else:  # halted at the step limit: failures only, then the logger's trailer
        steps = [("Search", f"founder of Magazine {q}", f"Could not find [founder of Magazine {q}]. Similar: []."),
                 ("Search", f"Magazine {q}", f"Magazine {q} was founded by {founder} in 1901."),
                 ("Lookup", "born", "No Results"),
                 ("Lookup", "birthplace", "No Results")]
    for i, (tool, arg, obs) in enumerate(steps, start=1):
        lines += [f"Thought {i}: I need to {tool.lower()} {arg}.", f"Action {i}: {tool}[{arg}]",
                  f"Observation {i}: {obs}"]
    n = len(steps) + 1
    if kind == "found":
        lines += [f"Thought {n}: The founder was born in {gold}.", f"Action {n}: Finish[{gold}]",
                  f"Observation {n}: Answer is CORRECT"]
    elif kind == "wrong":
        lines += [f"Thought {n}: I guess Paris.", f"Action {n}: Finish[Paris]", f"Observation {n}: Answer is INCORRECT"]
    lines.append(f"Correct answer: {gold}")
    if kind == "halted" and q % 2 == 0:  # the next section's banner stays glued to the block
        lines += ["", "------------- BEGIN HALTED AGENTS -----------", ""]
    count.add(arm, retrieved=kind == "found",
              failed=sum("No Results" in o or "Could not find" in o for _, _, o in steps), calls=len(steps))
    status = {"found": "CORRECT", "wrong": "INCORRECT", "halted": "HALTED"}[kind]
    return {"run": arm, "qid": f"hotpot-{q}", "trial": trial, "gold_answer": gold, "status": status,
            "block": "\n".join(lines) + "\n"}


def reflexion_log(folder: Path, *, n_questions: int = 12, trials: int = 3) -> tuple[Path, HandCount]:
    """``folder/reflexion_blocks.jsonl``: two runs (``react``, ``reflexion``), ``trials`` blocks per question."""
    count = HandCount()
    records = [_reflexion_block(q, t, arm, count) for arm in ("react", "reflexion")
               for q in range(n_questions) for t in range(trials)]
    path = folder / "reflexion_blocks.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path, count


def leaked_block() -> dict:
    """A block in which the logger's gold line sits inside the transcript (not at its end)."""
    text = ("Question: Where was the founder of Magazine 99 born?\nThought 1: search\nAction 1: Search[Magazine 99]\n"
            "Observation 1: Magazine 99 was founded in 1901.\nCorrect answer: Town99\nThought 2: search\n"
            "Action 2: Search[founder]\nObservation 2: No Results\n")
    return {"run": "react", "qid": "hotpot-99", "trial": 0, "gold_answer": "Town99", "status": "HALTED", "block": text}


# --------------------------------------------------------------------------------- FireAct
def fireact_log(folder: Path, *, n_questions: int = 10) -> tuple[Path, HandCount]:
    """``folder/trajs/hotpotqa_dev_llama-2-7b.json`` and ``folder/questions/dev.json``; every
    third question's second search returns ``None``."""
    count = HandCount()
    questions, doc = [], {}
    for q in range(n_questions):
        gold = f"{1900 + q}"
        a, b = f"Band {q}", f"Singer {q}"
        questions.append({"question": f"When was the singer of {a} born?", "answer": f"Born {gold}",
                          "type": "bridge"})
        obs2 = "None" if q % 3 == 0 else f"{b} was born in {gold} in Ohio ({gold} Born {gold})."
        found = q % 3 != 0
        traj = ("Below is an instruction.\n\n### Instruction:\nAnswer the question.\n\n### Input:\n"
                f"When was the singer of {a} born?\n\n### Response:\n"
                f"Thought: I need to search {a}.\nAction: search[{a}]\nObservation: {a} is fronted by {b}.\n"
                f"Thought: I need to search {b}.\nAction: search[{b} birth]\nObservation: {obs2}\n"
                f"Thought: I have it.\nAction: finish[{'Born ' + gold if found else 'unknown'}]\n"
                f"Observation: Episode finished, reward = {found}\n")
        doc[str(q)] = {"reward": found, "em": found, "f1": float(found), "gt": f"Born {gold}",
                       "pred": ("born " + gold) if found else "unknown", "prompt": "", "traj": traj}
        count.add("llama-2-7b", retrieved=found, failed=int(obs2 == "None"), calls=2)
    (folder / "trajs").mkdir(parents=True, exist_ok=True)
    (folder / "questions").mkdir(parents=True, exist_ok=True)
    (folder / "questions" / "dev.json").write_text(json.dumps(questions), encoding="utf-8")
    path = folder / "trajs" / "hotpotqa_dev_llama-2-7b.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path, count


# --------------------------------------------------------------------------------- tau-bench
USERS = ("mia_li_3668", "ava_kim_1203", "noah_lee_8812", "liam_roy_4410")
OPENINGS = ("Hi, I need to cancel a trip I booked.", "Hello! I'd like to cancel one of my reservations.",
            "I want to cancel my flight, please.", "Can you help me cancel a booking?")


def _tau_episode(task: int, trial: int, arm: str, count: HandCount) -> dict:
    user = USERS[task % len(USERS)]
    code = f"R{task:02d}X{trial}"
    traj = [{"role": "system", "content": "# Airline Agent Policy"},
            # the simulated user words its first message anew in every trial
            {"role": "user", "content": f"{OPENINGS[(task + trial) % len(OPENINGS)]} It is the trip of May "
                                        f"{10 + task + 9 * trial}."}]

    def call(i: int, name: str, args: dict, result: str) -> None:
        cid = f"call_{task}_{trial}_{i}"
        traj.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]})
        traj.append({"role": "tool", "tool_call_id": cid, "name": name, "content": result})

    traj += [{"role": "assistant", "content": "Could you please provide your user id?"},
             {"role": "user", "content": f"Sure, it's {user}."}]
    call(1, "get_user_details", {"user_id": user}, json.dumps({"user_id": user, "reservations": [code]}))
    count.user_typed += 1
    call(2, "get_reservation_details", {"reservation_id": code}, json.dumps({"reservation_id": code, "cabin": "basic"}))
    ok = (task + trial + (arm == "gpt-4o")) % 2 == 0
    if ok:
        traj += [{"role": "assistant", "content": "Shall I cancel it?"}, {"role": "user", "content": "Yes please."}]
        call(3, "cancel_reservation", {"reservation_id": code}, json.dumps({"status": "cancelled"}))
    traj += [{"role": "assistant", "content": "Done. Anything else?"}, {"role": "user", "content": "###STOP###"}]
    count.add(arm, retrieved=False, failed=0, calls=3 if ok else 2)
    return {"task_id": task, "trial": trial, "reward": float(ok), "agent": arm, "traj": traj}


def tau_log(folder: Path, *, n_tasks: int = 8, trials: int = 4) -> tuple[list[Path], HandCount]:
    """One file per agent (``gpt-4o-mini``, ``gpt-4o``), ``trials`` conversations per task."""
    count = HandCount()
    paths = []
    for arm in ("gpt-4o-mini", "gpt-4o"):
        path = folder / f"tau_airline_{arm}.jsonl"
        path.write_text("".join(json.dumps(_tau_episode(t, k, arm, count)) + "\n"
                                for t in range(n_tasks) for k in range(trials)), encoding="utf-8")
        paths.append(path)
    return paths, count
