"""The simulate() entry point, the Simulation result and its file writers."""
from __future__ import annotations

import json
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl

from mechanism.core.errors import MechanismError
from mechanism.core.names import safe_filename
from mechanism.core.options import RandomState
from mechanism.core.progress import progress as _progress
from mechanism.core.resample import resolve_seed
from mechanism.core.results import Result
from mechanism.core.schema import from_records
from mechanism.core.scoring import exact_match, f1_score, gold_in_observations
from mechanism.datasets.simulation.agent import retrieval_holds, run_episode
from mechanism.datasets.simulation.planted import planted_values
from mechanism.datasets.simulation.policies import REMAP, STRATEGIES, Policy, default_policies
from mechanism.datasets.simulation.retriever import ParagraphRetriever
from mechanism.datasets.simulation.world import Question, make_world
from mechanism.datasets.worlds import TruthJoin

SYSTEM_PROMPT = ("You are a research assistant. Answer the question. You may call the `search` tool, "
                 "which returns the best-matching paragraph; give the final answer in <answer> tags.")
TOP_K = 1

TRUTH_SCHEMA = {
    "arm": pl.String, "question_id": pl.String, "sample_id": pl.Int64,
    "strategy": pl.String, "planned_strategy": pl.String, "category": pl.String,
    "relation": pl.String, "n_rounds": pl.Int64, "truncated": pl.Boolean,
    "evidence": pl.Boolean, "retrieved_gold": pl.Boolean, "integrated": pl.Boolean,
    "correct": pl.Boolean, "hard": pl.Boolean, "p_correct": pl.Float64,
}


@dataclass(repr=False)
class Simulation(TruthJoin, Result):
    """A simulated experiment: trajectories, the truth behind them, and how they were made.

    A :class:`~mechanism.datasets.worlds.PlantedWorld`, as the worlds of :mod:`mechanism.datasets.worlds` are:
    ``runs``, ``truth``, ``planted`` and ``join_truth(runs)`` / ``labels_for(runs)``.

    Attributes
    ----------
    runs
        Canonical trajectory table (with ``t_cap``, ``category`` and ``score``, the answer's
        token F1); ``correct`` is exact match after SQuAD normalisation.
    truth
        One row per trajectory: ``arm, question_id, sample_id``, the executed ``strategy``,
        the ``planned_strategy`` (before remapping to the question's category), ``category``,
        ``relation``, ``n_rounds``, ``truncated`` (stopped at ``t_cap``), ``evidence`` (the
        retrieved paragraphs held what the answer needs), ``retrieved_gold`` (a gold answer
        appears in an observation), ``integrated`` (evidence used correctly), ``correct``,
        ``hard`` (the question needs a checked answer) and ``p_correct`` (the planted probability
        of a correct answer, given the strategy and the rounds made).
    planted
        The planted expected values the analyses should recover
        (:func:`mechanism.datasets.simulation.planted.planted_values`): PASS@(k,T) per arm and category,
        expected gained / lost problems, the composition / within split per treated arm.
    questions
        One row per question: id, category, relation, text, gold, the two key entities and
        the titles of the gold paragraphs.
    policies
        The arms' :class:`Policy` objects.
    config
        Everything needed to reproduce the run (JSON-ready).
    world
        The questions themselves (:class:`~mechanism.datasets.simulation.world.Question`, with
        their paragraphs and difficulty), in ``questions`` order.
    """

    runs: pl.DataFrame
    truth: pl.DataFrame
    questions: pl.DataFrame
    policies: dict[str, Policy]
    config: dict[str, Any]
    _episodes: list[dict] = field(default_factory=list, repr=False)
    planted: dict[str, Any] = field(default_factory=dict, repr=False)
    world: list[Question] = field(default_factory=list, repr=False)  # the questions with their paragraphs

    key_columns: ClassVar[dict[str, pl.DataType]] = {"arm": pl.String(), "strategy": pl.String()}

    def strategy_table(self) -> pl.DataFrame:
        """Per arm and executed strategy: count, share and success rate (the planted truth, exact)."""
        return (self.truth.group_by("arm", "strategy")
                .agg(n=pl.len(), success=pl.col("correct").mean())
                .with_columns(share=pl.col("n") / pl.col("n").sum().over("arm"))
                .sort("arm", "strategy"))

    def _estimates(self) -> pl.DataFrame:
        """Per arm and executed strategy, the observed ``share`` and ``success`` (exact: no interval)."""
        table = self.strategy_table()
        return pl.concat([table.select("arm", "strategy", pl.lit(name).alias("quantity"),
                                       pl.col(name).cast(pl.Float64).alias("estimate"))
                          for name in ("share", "success")])

    def verdict(self) -> str:
        """One line: each arm's accuracy (what the simulated arms did, not an estimate)."""
        acc = self.truth.group_by("arm", maintain_order=True).agg(pl.col("correct").mean())
        return "simulated accuracy: " + ", ".join(f"{arm} {value:.3f}" for arm, value in acc.iter_rows())

    def tables(self) -> dict[str, pl.DataFrame]:
        """``runs``, ``truth``, ``questions`` and the planted ``strategies`` table (:meth:`strategy_table`)."""
        return {"runs": self.runs, "truth": self.truth, "questions": self.questions,
                "strategies": self.strategy_table()}

    def to_dict(self) -> dict[str, Any]:
        """The configuration (JSON-ready): everything needed to reproduce the run, and what it observed."""
        return json.loads(json.dumps(self.config))

    def _summary_title(self) -> str:
        return (f"Simulation: {len(self.config['arms'])} arms x {self.config['n_questions']} questions x "
                f"{self.config['n_samples']} samples (seed {self.config['seed']}, t_cap {self.config['t_cap']})")

    def _summary_lines(self) -> list[str]:
        acc = self.truth.group_by("arm", maintain_order=True).agg(pl.col("correct").mean())
        lines = []
        for arm, accuracy in acc.iter_rows():
            top = (self.strategy_table().filter(pl.col("arm") == arm).sort("share", descending=True).head(3))
            mix = ", ".join(f"{r['strategy']} {r['share']:.0%}" for r in top.iter_rows(named=True))
            lines.append(f"{arm}: accuracy {accuracy:.3f}; largest planted strategies {mix}")
        return lines

    def _headline(self) -> str:
        return (f"arms {', '.join(self.config['arms'])}; {self.config['n_questions']} questions x "
                f"{self.config['n_samples']} samples; {self.runs.height} trajectories")

    def write(self, out_dir: str | Path) -> list[Path]:
        """Write ``searchr1/<arm>.jsonl``, ``openai/<arm>.jsonl``, ``truth/truth.parquet``,
        ``truth/config.json`` and ``truth/planted.json`` (the planted expected values) under
        ``out_dir``.

        One folder per format, so ``mechanism read out_dir/searchr1`` reads every arm once. The
        trajectory files hold no ground truth (no strategy, no correctness label); the truth
        sits apart in ``truth/``. Output is byte-identical for the same inputs.

        Returns
        -------
        list of Path
            The files written.
        """
        out = Path(out_dir)
        if out.exists() and not out.is_dir():
            raise MechanismError(f"`out_dir` {str(out)!r} exists and is not a folder")
        stems = [safe_filename(arm) for arm in self.config["arms"]]
        clash = next((a for a, st in zip(self.config["arms"], stems) if stems.count(st) > 1), None)
        if clash is not None:  # two arms in one file would overwrite each other
            same = [a for a in self.config["arms"] if safe_filename(a) == safe_filename(clash)]
            raise MechanismError(f"arm names {same} "
                                 f"give the same file name {safe_filename(clash)!r}: rename one")
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for arm in self.config["arms"]:
            rows = [e for e in self._episodes if e["arm"] == arm]
            stem = safe_filename(arm)
            for fmt, render in (("searchr1", searchr1_record), ("openai", openai_record)):
                (out / fmt).mkdir(exist_ok=True)
                path = out / fmt / f"{stem}.jsonl"
                with path.open("w", encoding="utf-8", newline="\n") as fh:
                    for e in rows:
                        fh.write(json.dumps(render(e), ensure_ascii=False) + "\n")
                written.append(path)
        (out / "truth").mkdir(exist_ok=True)
        truth_path = out / "truth" / "truth.parquet"
        self.truth.write_parquet(truth_path, statistics=False)
        written.append(truth_path)
        config_path = out / "truth" / "config.json"
        config_path.write_text(json.dumps(self.config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        written.append(config_path)
        if self.planted:
            planted_path = out / "truth" / "planted.json"
            planted_path.write_text(json.dumps(self.planted, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            written.append(planted_path)
        return written


def searchr1_record(e: dict) -> dict:
    """One episode in Search-R1's format: tagged text in ``response``."""
    parts = [f"<think>{s['thought']}</think>\n<search> {s['query']} </search>\n"
             f"<information> {s['observation']} </information>\n" for s in e["steps"]]
    parts.append(f"<think>{e['final_thought']}</think>\n<answer> {e['answer']} </answer>")
    return {"arm": e["arm"], "question_id": e["question_id"], "sample_id": e["sample_id"],
            "question": e["question"], "golden_answers": e["gold"], "category": e["category"],
            "t_cap": e["t_cap"], "response": "".join(parts)}


def openai_record(e: dict) -> dict:
    """One episode as OpenAI chat messages with ``tool_calls`` and ``tool`` results."""
    messages: list[dict] = [{"role": "system", "content": SYSTEM_PROMPT},
                            {"role": "user", "content": e["question"]}]
    for i, s in enumerate(e["steps"], start=1):
        call_id = f"call_{i}"
        messages.append({"role": "assistant", "content": s["thought"], "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "search", "arguments": s["arguments"]}}]})
        messages.append({"role": "tool", "tool_call_id": call_id, "content": s["observation"]})
    messages.append({"role": "assistant",
                     "content": f"<think>{e['final_thought']}</think><answer>{e['answer']}</answer>"})
    return {"arm": e["arm"], "question_id": e["question_id"], "sample_id": e["sample_id"],
            "question": e["question"], "gold": e["gold"], "category": e["category"],
            "t_cap": e["t_cap"], "messages": messages}


def _arm_key(arm: str) -> int:
    # stable across runs and Python versions (unlike hash()), so adding an arm leaves the others unchanged
    return zlib.crc32(arm.encode("utf-8"))


def simulate(*, n_questions: int = 100, n_samples: int = 64, arms: Sequence[str] = ("base", "rl", "sft"),
             t_cap: int = 5, random_state: RandomState = 0, policies: Mapping[str, Policy] | None = None,
             bridge_share: float = 0.6, hard_share: float = 0.3, progress: bool | None = None) -> Simulation:
    """Simulate base, RL and SFT agents answering multi-hop questions with a BM25 search tool.

    Parameters
    ----------
    n_questions
        Questions in the world (shared by all arms).
    n_samples
        Episodes per (arm, question).
    arms
        Arms to run; each needs a policy in ``policies`` (default: :func:`default_policies`,
        which defines ``base``, ``rl`` and ``sft``).
    t_cap
        Most search rounds an episode may take; an episode that would exceed it answers at
        the cap from what it has.
    random_state
        An int seeds everything (a numpy Generator or None draws that int first, and
        ``config["seed"]`` keeps it, so the run can be made again): the world, the planned
        strategies per (arm, question)
        (``SeedSequence(seed, spawn_key=(1, crc32(arm), question index))``) and each episode
        (``spawn_key=(1, crc32(arm), question index, sample index)``). The same seed gives
        identical output; an arm's episodes do not depend on which other arms run; and a
        sample run under a lower ``t_cap`` is the same episode cut at the cap, so runs made
        at several caps pair up sample by sample.
    policies
        Arm name -> :class:`Policy`; merged over the defaults.
    bridge_share
        Probability that a question is a bridge question (the rest are comparisons).
    hard_share
        Probability that a bridge question is hard: only the checking strategy (``verify``)
        answers it (see :func:`mechanism.datasets.simulation.world.make_world`); these put questions near
        the boundary.
    progress
        Show a progress bar (``None``: only on a terminal).

    Returns
    -------
    Simulation

    Examples
    --------
    >>> sim = simulate(n_questions=3, n_samples=2, random_state=1, progress=False)
    >>> sim.runs.height, sorted(sim.runs["arm"].unique())
    (18, ['base', 'rl', 'sft'])
    """
    seed = _seed(random_state)
    if n_questions < 1 or n_samples < 1:
        raise MechanismError("`n_questions` and `n_samples` must be at least 1")
    if t_cap < 0:
        raise MechanismError(f"`t_cap` must be non-negative, got {t_cap}")
    for name, value in (("bridge_share", bridge_share), ("hard_share", hard_share)):
        if not 0.0 <= value <= 1.0:
            raise MechanismError(f"`{name}` must lie in [0, 1], got {value}")
    arms = list(dict.fromkeys(arms))
    if not arms:
        raise MechanismError("`arms` is empty")
    pols = dict(default_policies())
    pols.update(policies or {})
    missing = [a for a in arms if a not in pols]
    if missing:
        raise MechanismError(f"no policy for arm `{missing[0]}` (pass it in `policies`)")
    pols = {a: pols[a] for a in arms}

    built: dict[str, ParagraphRetriever] = {}

    def accept(q: Question) -> bool:
        # every lookup a plan issues must retrieve its page, so evidence is a property of the plan
        built[q.question_id] = ParagraphRetriever([p.text for p in q.paragraphs], top_k=TOP_K)
        return retrieval_holds(q, built[q.question_id])

    world = make_world(n_questions, np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,))),
                       bridge_share=bridge_share, hard_share=hard_share, accept=accept)
    retrievers = [built[q.question_id] for q in world]
    episodes: list[dict] = []
    jobs = [(arm, qi) for arm in arms for qi in range(n_questions)]
    for arm, qi in _progress(jobs, enabled=progress, desc="simulate", total=len(jobs)):
        policy, q, retriever = pols[arm], world[qi], retrievers[qi]
        key = (1, _arm_key(arm), qi)
        planned = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key)).choice(
            len(STRATEGIES), size=n_samples, p=policy.probabilities)
        for s in range(n_samples):
            # one stream per sample: the same sample under a lower t_cap is the same episode
            # cut at the cap (then answered), so runs at different caps pair up sample by sample
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(*key, s)))
            out = run_episode(q, retriever, policy, STRATEGIES[int(planned[s])], rng, t_cap)
            episodes.append({
                "arm": arm, "question_id": q.question_id, "sample_id": s, "question": q.text,
                "gold": list(q.gold), "category": q.category, "t_cap": t_cap, "steps": out.steps,
                "answer": out.answer, "final_thought": out.final_thought,
                # truth, kept out of the trajectory files
                "_strategy": out.strategy, "_planned": STRATEGIES[int(planned[s])],
                "_relation": q.relation, "_truncated": out.truncated, "_evidence": out.evidence,
                "_integrated": out.integrated, "_hard": q.hard, "_p": out.p_correct,
            })
    runs = from_records({
        "arm": e["arm"], "question_id": e["question_id"], "sample_id": e["sample_id"],
        "question": e["question"], "gold": e["gold"], "answer": e["answer"],
        "correct": exact_match(e["answer"], e["gold"]), "score": f1_score(e["answer"], e["gold"]),
        "n_rounds": len(e["steps"]),
        "steps": e["steps"], "t_cap": e["t_cap"], "category": e["category"],
    } for e in episodes)
    truth = pl.DataFrame([{
        "arm": e["arm"], "question_id": e["question_id"], "sample_id": e["sample_id"],
        "strategy": e["_strategy"], "planned_strategy": e["_planned"], "category": e["category"],
        "relation": e["_relation"], "n_rounds": len(e["steps"]), "truncated": e["_truncated"],
        "evidence": e["_evidence"],
        "retrieved_gold": gold_in_observations([s["observation"] for s in e["steps"]], e["gold"]),
        "integrated": e["_integrated"], "correct": c, "hard": e["_hard"], "p_correct": e["_p"],
    } for e, c in zip(episodes, runs["correct"].to_list())], schema=TRUTH_SCHEMA, orient="row") \
        if episodes else pl.DataFrame(schema=TRUTH_SCHEMA)
    questions = _question_table(world)
    config = {
        "seed": int(seed), "n_questions": n_questions, "n_samples": n_samples, "t_cap": t_cap,
        "arms": arms, "bridge_share": bridge_share, "hard_share": hard_share,
        "retriever": {"method": "bm25s", "top_k": TOP_K},
        "strategies": list(STRATEGIES), "remap": REMAP,
        "policies": {a: p.to_dict() for a, p in pols.items()},
    }
    sim = Simulation(runs, truth, questions, pols, config, episodes,
                     planted=planted_values(world, pols, n_samples=n_samples, t_cap=t_cap), world=world)
    # the ground truth in brief: what each arm actually did and how well each strategy worked
    config["observed"] = {
        arm: {row["strategy"]: {"n": row["n"], "share": round(row["share"], 6), "success": round(row["success"], 6)}
              for row in sim.strategy_table().filter(pl.col("arm") == arm).iter_rows(named=True)}
        for arm in arms}
    return sim


def _seed(random_state: RandomState) -> Any:
    """The int behind every draw of a run: an int ``random_state`` itself, or one drawn from a
    Generator (or fresh entropy for None: :func:`mechanism.core.resample.resolve_seed`), so
    ``config["seed"]`` always reproduces the run; anything else is refused in one line."""
    return resolve_seed(random_state)


def training_run(*, steps: Sequence[int] = (0, 100, 200, 300, 400), n_questions: int = 60, n_samples: int = 16,
                 start: str | Policy = "base", end: str | Policy = "rl", rate: float = 3.0, prefix: str = "step-",
                 t_cap: int = 5, random_state: RandomState = 0, bridge_share: float = 0.6, hard_share: float = 0.3,
                 progress: bool | None = None) -> Simulation:
    """Simulate the checkpoints of a training run moving from a base policy toward an RL one.

    The checkpoint at step ``s`` samples strategies from ``(1 - f) * start + f * end`` with
    ``f = (1 - exp(-rate * x)) / (1 - exp(-rate))`` and ``x`` the step's position between the
    first and the last step (0 to 1): early steps move fast, late ones level off, as training
    curves do. Integration skill and wording are interpolated the same way. The truth table
    keeps the planted strategy of every trajectory; ``config["training"]`` the mixtures.

    Parameters
    ----------
    steps
        Training steps of the checkpoints (increasing); arms are named ``f"{prefix}{step}"``.
    n_questions, n_samples
        Questions (shared by every checkpoint) and samples per question and checkpoint.
    start, end
        Policies (or names of built-in ones) at the first and the last step.
    rate
        How fast the mixture moves early on (0 < rate; near 0 means linear in the step).
    prefix
        Arm name prefix.
    t_cap, random_state, bridge_share, hard_share, progress
        As :func:`simulate`.

    Returns
    -------
    Simulation

    Examples
    --------
    >>> sim = training_run(steps=(0, 50, 100), n_questions=3, n_samples=2, progress=False)
    >>> sim.config["arms"]
    ['step-0', 'step-50', 'step-100']
    >>> [round(f, 3) for f in sim.config["training"]["fraction"]]
    [0.0, 0.818, 1.0]
    """
    steps = [int(s) for s in steps]
    if len(steps) < 2 or any(b <= a for a, b in zip(steps, steps[1:])):
        raise MechanismError(f"`steps` must hold at least two increasing steps, got {steps}")
    if not rate > 0:
        raise MechanismError(f"`rate` must be positive, got {rate}")
    known = default_policies()
    ends = []
    for name, value in (("start", start), ("end", end)):
        if isinstance(value, Policy):
            ends.append(value)
        elif value in known:
            ends.append(known[value])
        else:
            raise MechanismError(f"`{name}` must be a Policy or one of {sorted(known)}, got {value!r}")
    p0, p1 = ends
    span = steps[-1] - steps[0]
    fractions = [float((1 - np.exp(-rate * (s - steps[0]) / span)) / (1 - np.exp(-rate))) for s in steps]
    f0, f1 = p0.integration_factors(), p1.integration_factors()

    def factors(f: float) -> dict[str, float] | None:
        # the ends' per-strategy integration skill, moved like the mixture (None: both default)
        if p0.strategy_integration is None and p1.strategy_integration is None:
            return None
        return {k: (1 - f) * f0[k] + f * f1[k] for k in STRATEGIES}

    policies = {}
    for s, f in zip(steps, fractions):
        name = f"{prefix}{s}"
        mix = {k: (1 - f) * a + f * b for k, a, b in zip(STRATEGIES, p0.probabilities, p1.probabilities)}
        policies[name] = Policy(name, mix, integration=(1 - f) * p0.integration + f * p1.integration,
                                wording=(1 - f) * p0.wording + f * p1.wording,
                                loop_rounds=p0.loop_rounds, query_style=p0.query_style,
                                strategy_integration=factors(f))
    sim = simulate(n_questions=n_questions, n_samples=n_samples, arms=tuple(policies), t_cap=t_cap,
                   random_state=random_state, policies=policies, bridge_share=bridge_share,
                   hard_share=hard_share, progress=progress)
    sim.config["training"] = {"steps": steps, "fraction": fractions, "rate": rate, "start": p0.name, "end": p1.name}
    return sim


def _question_table(world: list[Question]) -> pl.DataFrame:
    return pl.DataFrame({
        "question_id": [q.question_id for q in world],
        "category": [q.category for q in world],
        "relation": [q.relation for q in world],
        "question": [q.text for q in world],
        "gold": [list(q.gold) for q in world],
        "entity_1": [q.entities[0] for q in world],
        "entity_2": [q.entities[1] for q in world],
        "gold_titles": [[q.paragraphs[i].title for i in q.gold_docs] for q in world],
    }, schema={"question_id": pl.String, "category": pl.String, "relation": pl.String,
               "question": pl.String, "gold": pl.List(pl.String), "entity_1": pl.String,
               "entity_2": pl.String, "gold_titles": pl.List(pl.String)})
