"""The Sokoban grid-puzzle world (mechanism.datasets.worlds.sokoban): OpenAI records read back with
`mechanism.read` as a user's files are, the truth it carries, and the planted design (every tool
call answered by its own tool message, every observation replayed on the test's own board, each
strategy's shape, the optional steps at fixed rates whatever the strategy, execution failures
followed at once by the corrected move, blocked pushes by design that are not failures, arms
differing only in their mixture, success set by the strategy alone). Strategy discovery is not
evaluated here."""
from __future__ import annotations

import json
import re

import numpy as np
import polars as pl
import pytest
from world_checks import assert_arms_differ_only_in_mixture, assert_reads_back, assert_success_follows_the_strategy

import mechanism as mx
from mechanism.datasets import worlds
from mechanism.datasets.worlds.sokoban import (
    _P_FAIL,
    _P_LOOK,
    _P_OPEN_LOOK,
    _P_WASTE,
    _SUCCESS,
    ARMS,
    BLOCKED,
    DIRECTIONS,
    INVALID,
    LIMIT,
    SOLVED,
    STRATEGIES,
    TOOL_SCHEMA,
    TOOLS,
    sokoban,
)

STEP = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
BACK = {"up": "down", "down": "up", "left": "right", "right": "left"}
BOARD_LINE = re.compile(r"^[#_PXO√S]{3,}$")
# the tools each strategy may call (an optional look is open to all)
ALLOWED = {"plan_batch": {"move", "look"}, "greedy": {"move", "look"}, "survey": {"move", "look", "valid_moves"},
           "undo_heavy": {"move", "look", "undo"}, "wall_hug": {"move", "look"}, "push_look": {"move", "look"},
           "reset_retry": {"move", "look", "reset"}}


@pytest.fixture(scope="module")
def world():
    return sokoban(n_questions=20)


@pytest.fixture(scope="module")
def read(world, tmp_path_factory):
    return mx.read(world.write(tmp_path_factory.mktemp("sokoban")), format="openai", report=True)


@pytest.fixture(scope="module")
def big():
    """A larger sample for the rates and the arms (both arms, pooled over two seeds)."""
    return [sokoban(n_questions=75, n_samples=10, random_state=seed) for seed in (1, 2)]


@pytest.fixture(scope="module")
def replayed(big):
    """Every episode of ``big`` replayed on the test's own board: (truth row, record, messages, problems)."""
    return [(row, rec, *_replay(rec)) for w in big for row, rec in zip(w.truth.iter_rows(named=True), w.records)]


# -- the test's own Sokoban ------------------------------------------------------------------------------
class Board:
    """The board of the user's message, and the moves on it."""

    def __init__(self, text: str) -> None:
        rows = [line for line in text.splitlines() if BOARD_LINE.match(line)]
        self.h, self.w = len(rows), len(rows[0])
        cells = {(r, c): ch for r, row in enumerate(rows) for c, ch in enumerate(row)}
        self.walls = {p for p, ch in cells.items() if ch == "#"}
        self.targets = {p for p, ch in cells.items() if ch in "O√S"}
        self.boxes = frozenset(p for p, ch in cells.items() if ch in "X√")
        self.player = next(p for p, ch in cells.items() if ch in "PS")
        self.start = (self.player, self.boxes)
        self.budget = int(re.search(r"(?:You have|step budget|Max steps:) (\d+)", text).group(1))
        self.steps, self.history = 0, []

    def ahead(self, d: str, k: int = 1) -> tuple[int, int]:
        return self.player[0] + k * STEP[d][0], self.player[1] + k * STEP[d][1]

    def free(self, p) -> bool:
        return p not in self.walls and p not in self.boxes

    def wall_side(self, p) -> bool:
        return any((p[0] + dr, p[1] + dc) in self.walls for dr, dc in STEP.values())

    def blocked(self, d: str) -> bool:
        nxt = self.ahead(d)
        return nxt in self.walls or (nxt in self.boxes and not self.free(self.ahead(d, 2)))

    def text(self) -> str:
        rows = []
        for r in range(self.h):
            row = ""
            for c in range(self.w):
                p = (r, c)
                row += ("#" if p in self.walls else ("S" if p in self.targets else "P") if p == self.player
                        else ("√" if p in self.targets else "X") if p in self.boxes else "O" if p in self.targets
                        else "_")
            rows.append(row)
        return "\n".join(rows)

    def status(self) -> str:
        on = len(self.boxes & self.targets)
        return f"Boxes on target: {on}/{len(self.targets)}. Steps used: {self.steps}/{self.budget}."

    def solved(self) -> bool:
        return self.boxes == self.targets

    def move(self, d: str) -> str:
        """Play ``d``; the kind of move (walk, push, blocked, invalid) and the observation expected."""
        if d not in STEP:
            return "invalid", INVALID
        if self.blocked(d):
            return "blocked", BLOCKED
        nxt, kind = self.ahead(d), "walk"
        self.history.append((self.player, self.boxes))
        if nxt in self.boxes:
            self.boxes, kind = (self.boxes - {nxt}) | {self.ahead(d, 2)}, "push"
        self.player, self.steps = nxt, self.steps + 1
        end = f"\n{SOLVED}" if self.solved() else f"\n{LIMIT}" if self.steps >= self.budget else ""
        return kind, f"{self.text()}\n{self.status()}{end}"

    def valid(self) -> str:
        lines = []
        for d in DIRECTIONS:
            nxt = self.ahead(d)
            what = ("blocked (wall)" if nxt in self.walls else "walk" if nxt not in self.boxes
                    else f"push box to {self.ahead(d, 2)}" if self.free(self.ahead(d, 2))
                    else "blocked (box cannot move)")
            lines.append(f"{d}: {what}")
        return "\n".join(lines)


def _replay(rec):
    """The assistant messages with calls, each a dict (content, calls: tool, args, obs, kind, player
    after), replayed on the test's own board; the observations that do not follow from it."""
    board, msgs, problems = Board(rec["messages"][1]["content"]), [], []
    results = {m["tool_call_id"]: m["content"] for m in rec["messages"] if m["role"] == "tool"}
    for m in rec["messages"]:
        if m["role"] != "assistant" or not m.get("tool_calls"):
            continue
        calls = []
        for c in m["tool_calls"]:
            tool, args, obs = c["function"]["name"], json.loads(c["function"]["arguments"]), results[c["id"]]
            kind, ok = tool, True
            if tool == "move":
                kind, want = board.move(args["direction"])
                ok = obs == want
            elif tool == "look":
                ok = obs.startswith(board.text() + "\n") and f"Player: {board.player}." in obs
                ok = ok and obs.endswith(board.status())
            elif tool == "valid_moves":
                ok = obs == board.valid()
            elif tool == "undo":
                board.player, board.boxes = board.history.pop()
                ok = obs == f"Undid the last move.\n{board.text()}\n{board.status()}"
            elif tool == "reset":
                (board.player, board.boxes), board.steps, board.history = board.start, 0, []
                ok = obs.startswith("Level reset") and obs.endswith(f"{board.text()}\n{board.status()}")
            if not ok:
                problems.append((rec["question_id"], tool, args, obs))
            calls.append({"tool": tool, "args": args, "obs": obs, "kind": kind, "at": board.player,
                          "side": board.wall_side(board.player)})
        msgs.append({"content": m["content"], "calls": calls})
    return msgs, problems, board


def _flat(msgs):
    return [c for m in msgs for c in m["calls"]]


def _label(msgs):
    """Mark every blocked or invalid move: ``by_design`` (a push of the box it just pushed, again in
    the same direction) or an execution ``failure``."""
    calls = _flat(msgs)
    for i, c in enumerate(calls):
        if c["kind"] not in ("blocked", "invalid"):
            continue
        prev = calls[i - 1] if i else None
        same = prev is not None and prev["tool"] == "move" and prev["args"]["direction"] == c["args"]["direction"]
        design = c["kind"] == "blocked" and same and (prev["kind"] == "push" or prev.get("label") == "by_design")
        c["label"] = "by_design" if design else "failure"
    return calls


def _wasted(calls):
    """The wasted steps: a walking move followed by the opposite walking move (failed calls, looks
    and checks in between; an undo or a reset starts afresh)."""
    n, prev = 0, None
    for c in calls:
        if c["tool"] in ("undo", "reset"):
            prev = None
        if c["tool"] != "move" or c["kind"] not in ("walk", "push"):
            continue
        d = c["args"]["direction"]
        if c["kind"] == "walk" and prev is not None and prev == BACK[d]:
            n += 1
        prev = d if c["kind"] == "walk" else None
    return n


def _without_waste(calls):
    """The directions of the moves made, the wasted steps (see :func:`_wasted`) left out."""
    out, prev = [], None
    for c in calls:
        if c["tool"] in ("undo", "reset"):
            prev = None
        if c["tool"] != "move" or c["kind"] not in ("walk", "push"):
            continue
        d = c["args"]["direction"]
        if c["kind"] == "walk" and prev is not None and prev == BACK[d]:
            out.pop()
            prev = None
            continue
        out.append(d)
        prev = d if c["kind"] == "walk" else None
    return out


def _moved(calls):
    return [c["args"]["direction"] for c in calls if c["tool"] == "move" and c["kind"] in ("walk", "push")]


def _is_moves(m):
    return all(c["tool"] == "move" for c in m["calls"])


def _opening(msgs):
    """Whether the episode opens with a look alone (the optional one)."""
    return len(msgs[0]["calls"]) == 1 and msgs[0]["calls"][0]["tool"] == "look"


# -- the world ---------------------------------------------------------------------------------------------
def test_is_a_planted_world(world):
    assert isinstance(world, worlds.PlantedWorld)
    assert world.format == "openai" and world.name == "sokoban"
    assert "sokoban" in worlds.__all__ and "sokoban" in worlds.WORLDS and worlds.sokoban is sokoban
    assert world.truth.columns == ["arm", "question_id", "sample_id", "strategy", "n_boxes", "n_calls", "n_moves",
                                   "n_failures", "n_wasted", "n_walks", "ending", "correct"]
    assert world.truth.height == len(world.records) == 2 * 20 * 4
    assert set(world.truth["arm"]) == set(ARMS) and set(world.truth["strategy"]) == set(STRATEGIES)
    assert set(world.truth["n_boxes"]) == {1, 2}
    assert [t["function"]["name"] for t in TOOL_SCHEMA] == list(TOOLS)
    assert len({rec["messages"][1]["content"].split("\n", 1)[1] for rec in world.records}) >= 20  # one level a question
    assert world.planted["shares"]["rl"] == pytest.approx(ARMS["rl"])
    assert world.planted["success"] == pytest.approx(_SUCCESS)
    assert all(rec["gold"] == [] for rec in world.records)


def test_reads_back(world, read):
    assert_reads_back(world, read, TOOLS)


def test_transcripts_are_well_formed(big):
    for w in big:
        for rec in w.records:
            msgs = rec["messages"]
            assert [m["role"] for m in msgs[:2]] == ["system", "user"]
            last = msgs[-1]
            assert last["role"] == "assistant" and not last.get("tool_calls") and last["content"]
            ids, i = set(), 2
            while i < len(msgs) - 1:
                m = msgs[i]
                assert m["role"] == "assistant" and m["tool_calls"]
                answers = msgs[i + 1:i + 1 + len(m["tool_calls"])]  # each call answered by its own message, in order
                for c, res in zip(m["tool_calls"], answers):
                    assert res["role"] == "tool" and res["tool_call_id"] == c["id"] and c["id"] not in ids
                    ids.add(c["id"])
                    tool, args = c["function"]["name"], json.loads(c["function"]["arguments"])
                    assert res["name"] == tool and tool in TOOLS and res["content"]
                    assert list(args) == (["direction"] if tool == "move" else [])
                tools = [c["function"]["name"] for c in m["tool_calls"]]
                assert len(tools) == 1 or set(tools) == {"move"} or tools == ["look", "valid_moves"]  # parallel calls
                i += 1 + len(m["tool_calls"])


def test_every_observation_follows_from_the_board(replayed):
    for row, _, msgs, problems, board in replayed:
        assert problems == [], problems[:2]
        obs = [c["obs"] for c in _flat(msgs)]
        assert board.solved() == row["correct"] == (row["ending"] == "solved")
        assert (obs[-1].endswith(SOLVED)) == row["correct"] and sum(o.endswith(SOLVED) for o in obs) == row["correct"]
        assert row["ending"] in ("solved", "gave_up") and not any(LIMIT in o for o in obs)  # the budget never runs out
        assert board.steps < board.budget


def test_counts_match_the_records_and_failures_are_corrected(replayed):
    forms = {"blocked": 0, "invalid": 0}
    for row, _, msgs, _, _ in replayed:
        calls = _label(msgs)
        failures = [i for i, c in enumerate(calls) if c.get("label") == "failure"]
        assert len(calls) == row["n_calls"] and sum(c["tool"] == "move" for c in calls) == row["n_moves"]
        assert len(failures) == row["n_failures"] and _wasted(calls) == row["n_wasted"]
        assert (row["strategy"] == "reset_retry") == any(c.get("label") == "by_design" for c in calls)
        ends = np.cumsum([len(m["calls"]) for m in msgs])
        for i in failures:
            assert i + 1 in ends  # the last call of its message, nothing after it in the message
            nxt = calls[i + 1]  # ... and the next message starts with the corrected move
            assert nxt["tool"] == "move" and nxt["kind"] in ("walk", "push"), (row["strategy"], calls[i], nxt)
            assert nxt["args"]["direction"] != calls[i]["args"]["direction"]
            forms[calls[i]["kind"]] += 1
    assert min(forms.values()) > 50, forms


def test_each_strategy_has_its_shape(replayed):
    seen = dict.fromkeys(STRATEGIES, 0)
    lap, hug_sizes, batch_sizes = {}, [], []
    for row, _, msgs, _, _ in replayed:
        s = row["strategy"]
        calls = _label(msgs)
        core = msgs[1:] if _opening(msgs) else msgs
        moves = [m for m in msgs if _is_moves(m)]
        sizes = [len(m["calls"]) for m in moves]
        assert {c["tool"] for c in calls} <= ALLOWED[s], s
        seen[s] += 1
        first = [c for c in calls if c["tool"] == "move" and c["kind"] in ("walk", "push")][:3]
        lap.setdefault(s, []).append(all(c["kind"] == "walk" and c["side"] for c in first))  # 3 steps by the walls
        if s == "plan_batch":  # the whole sequence first, then batches of several moves
            plan = re.search(r"Full move sequence \((\d+) moves\): ([A-Za-z, ]+)\.", core[0]["content"])
            assert plan and core[0]["calls"][0]["tool"] == "move"
            planned = plan.group(2).lower().split(", ")
            assert len(planned) == int(plan.group(1))
            first = core[0]["calls"]
            assert len(first) >= min(4, len(planned)) or first[-1].get("label") == "failure"
            batch_sizes += sizes
            done = _without_waste(calls)
            assert done == planned if row["correct"] else done[:len(planned)] == planned  # the plan is what it did
        elif s in ("greedy", "undo_heavy", "reset_retry"):  # one move a message
            assert set(sizes) == {1}, s
            if s == "greedy":
                assert all(m["content"] for m in moves)
        elif s == "survey":  # a look and the legal moves together first, then valid_moves before every push
            assert [c["tool"] for c in core[0]["calls"]] == ["look", "valid_moves"]
            assert max(sizes) <= 3
            for j, m in enumerate(msgs):
                pushes = [c for c in m["calls"] if c["kind"] == "push"]
                if pushes and msgs[j - 1]["calls"][-1].get("label") != "failure":
                    assert [c["tool"] for c in msgs[j - 1]["calls"]] == ["valid_moves"]
        elif s == "wall_hug":  # a lap along the walls first, then moves 2-4 a message
            assert max(sizes) <= 4
            hug_sizes += sizes
        elif s == "push_look":  # a walk whole, a push alone, and a look after every push
            for j, m in enumerate(msgs):
                kinds = [c["kind"] for c in m["calls"]]
                if "push" in kinds:
                    assert kinds == ["push"]
                    if not m["calls"][-1]["obs"].endswith(SOLVED):
                        assert [c["tool"] for c in msgs[j + 1]["calls"]] == ["look"]
        if s == "undo_heavy":  # at least one move taken back, right after it was made
            undos = [j for j, m in enumerate(msgs) if m["calls"][0]["tool"] == "undo"]
            assert undos and all(msgs[j - 1]["calls"][-1]["kind"] in ("walk", "push") for j in undos)
        if s == "reset_retry":  # stuck (blocked pushes by design), reset, and again
            resets = [j for j, m in enumerate(msgs) if m["calls"][0]["tool"] == "reset"]
            assert len(resets) == 1
            design = [j for j, m in enumerate(msgs) if m["calls"][0].get("label") == "by_design"]
            assert design and design[0] < resets[0]
            assert any(j > resets[0] for j in design) == (not row["correct"])
    assert min(seen.values()) > 150, seen
    assert np.mean(hug_sizes) > 2 and np.mean(batch_sizes) > 3.5, (np.mean(hug_sizes), np.mean(batch_sizes))
    by_walls = {s: np.mean(x) for s, x in lap.items()}
    assert by_walls["wall_hug"] > 0.6 and max(x for s, x in by_walls.items() if s != "wall_hug") < 0.3, by_walls


def test_lengths_vary_inside_strategies_and_overlap_between_them(big):
    t = pl.concat([w.truth for w in big])
    spans = {}
    for (s,), sub in t.group_by("strategy"):
        assert sub["n_calls"].n_unique() >= 8, s
        a, b = (sub.filter(pl.col("correct") == x)["n_calls"].mean() for x in (True, False))
        assert abs(a - b) < 2.5, (s, a, b)  # an incorrect episode about as long as a correct one
        spans[s] = (sub["n_calls"].quantile(0.1), sub["n_calls"].quantile(0.9))
    for s, (lo, hi) in spans.items():
        overlapping = [o for o, (lo2, hi2) in spans.items() if o != s and lo2 <= hi and lo <= hi2]
        assert len(overlapping) >= 3, (s, spans)


def test_moves_depend_on_the_level(replayed):
    by = {}
    for row, _, msgs, _, _ in replayed:
        by.setdefault(row["strategy"], []).append(tuple(_moved(_flat(msgs))))
    for s, seqs in by.items():
        assert len(set(seqs)) > 0.6 * len(seqs), s


def test_optional_steps_at_fixed_rates_in_every_strategy(replayed):
    rows = []
    for row, _, msgs, _, _ in replayed:
        eligible = looked = 0
        for j in range(1, len(msgs)):
            if not _is_moves(msgs[j]):
                continue
            prev = msgs[j - 1]
            if [c["tool"] for c in prev["calls"]] == ["look"] and j >= 2:
                before = msgs[j - 2]
                if _is_moves(before) and before["calls"][-1]["kind"] == "walk":
                    eligible, looked = eligible + 1, looked + 1
            elif _is_moves(prev) and prev["calls"][-1]["kind"] == "walk":
                eligible += 1
        rows.append((row["strategy"], row["arm"], _opening(msgs), eligible, looked, row["n_wasted"], row["n_walks"]))
    d = pl.DataFrame(rows, schema=["strategy", "arm", "opening", "gaps", "looked", "wasted", "walks"], orient="row")
    for (s,), sub in d.group_by("strategy"):
        for rate, n, p in ((sub["opening"].mean(), sub.height, _P_OPEN_LOOK),
                           (sub["looked"].sum() / sub["gaps"].sum(), sub["gaps"].sum(), _P_LOOK),
                           (sub["wasted"].sum() / sub["walks"].sum(), sub["walks"].sum(), _P_WASTE)):
            assert abs(rate - p) < 4 * np.sqrt(p * (1 - p) / n), (s, rate, p, n)
    for _, sub in d.group_by("arm"):
        assert abs(sub["opening"].mean() - _P_OPEN_LOOK) < 4 * np.sqrt(_P_OPEN_LOOK * (1 - _P_OPEN_LOOK) / sub.height)
    assert d["wasted"].max() >= 2 and d["looked"].max() >= 2


def test_failures_at_the_planted_rate_in_every_strategy(replayed):
    tried = {s: [0, 0] for s in STRATEGIES}
    for row, _, msgs, _, _ in replayed:
        calls = _label(msgs)
        tried[row["strategy"]][0] += sum(c.get("label") == "failure" for c in calls)
        tried[row["strategy"]][1] += len(_moved(calls))  # one draw per intended move, its correction none
    for s, (failed, n) in tried.items():
        assert abs(failed / n - _P_FAIL) < 4 * np.sqrt(_P_FAIL * (1 - _P_FAIL) / n), (s, failed / n)


def test_arms_differ_only_in_mixture_and_success_follows_the_strategy(big):
    assert ARMS["base"] != ARMS["rl"] and set(ARMS["base"]) == set(ARMS["rl"]) == set(STRATEGIES)
    assert all(p >= 0.1 for mix in ARMS.values() for p in mix.values())
    t = pl.concat([w.truth for w in big])
    assert_arms_differ_only_in_mixture(t, ARMS, tool_free="(none)")
    t = t.with_columns(failed=pl.col("n_failures") > 0)
    assert_success_follows_the_strategy(t, _SUCCESS, by=("arm", "n_boxes", "failed"))


def test_wording_varies_inside_strategies(big):
    rows = [(row["strategy"], rec) for w in big for row, rec in zip(w.truth.iter_rows(named=True), w.records)]
    for s in STRATEGIES:
        said = [rec["messages"][-1]["content"] for strategy, rec in rows if strategy == s]
        assert max(said.count(x) for x in set(said)) < 0.3 * len(said), s
    assert len({rec["messages"][0]["content"] for w in big for rec in w.records}) == 3


def test_random_state(tmp_path):
    a, b, c = (sokoban(n_questions=6, random_state=3), sokoban(n_questions=6, random_state=3),
               sokoban(n_questions=6, random_state=4))
    assert a.records == b.records and a.truth.equals(b.truth)
    assert a.records != c.records
    assert sokoban(n_questions=6, random_state=np.random.default_rng(3)).records == a.records
    fa, fb = a.write(tmp_path / "a"), b.write(tmp_path / "b")
    assert fa.read_bytes() == fb.read_bytes()
    assert (tmp_path / "a" / "truth.csv").read_bytes() == (tmp_path / "b" / "truth.csv").read_bytes()
    assert a.runs.equals(b.runs)
    assert len(sokoban(n_questions=3, random_state=None).records) == 2 * 3 * 4
