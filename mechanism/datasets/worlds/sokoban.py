"""A grid-puzzle agent trained with multi-turn RL (RAGEN / verl-agent Sokoban-like), through tool calls.

One Sokoban level per question: a small walled room (6-7 by 6-8 cells, up to three inner walls),
one or two boxes and as many targets, drawn by playing the puzzle backwards from the solved
position (boxes pulled off their targets, as gym-sokoban generates levels) and solved with a
push-level breadth-first search, so that a correct episode has a real solution to follow
(levels are kept to solutions of 2-5 pushes and 8-12 moves). The board is text, one character a
cell: ``#`` wall, ``_`` floor, ``P`` player, ``X`` box, ``O`` target, ``√`` box on a target,
``S`` player on a target; coordinates are ``(row, col)`` from the top-left corner, walls
included. Each episode is ONE OpenAI chat transcript: a system prompt, the user's task with the
initial board and the step budget, assistant messages carrying one or several calls in
``tool_calls`` (several calls in one message are parallel calls, executed in order), each call
answered by its own ``role: tool`` message with the matching ``tool_call_id``, and a last
assistant message without tool calls (solved, or giving up). Every move is simulated on the
board, so each observation follows from the ones before it.

The tool schema (:data:`TOOL_SCHEMA`, as the harness declares it to the model):

=====================  =====================================================================
``move(direction)``    ``direction`` one of ``up``, ``down``, ``left``, ``right``: one cell,
                       pushing a box in front of the player. Answer: the new board and
                       ``Boxes on target: k/n. Steps used: u/N.``, then :data:`SOLVED` when
                       the last box lands on a target (or :data:`LIMIT` when the last step is
                       spent). A move into a wall or against a box that cannot move is answered
                       by the fixed :data:`BLOCKED`, a direction outside the four by the fixed
                       :data:`INVALID`; neither changes anything nor costs a step.
``look()``             The board, the positions of the player, boxes and targets, the status.
``valid_moves()``      For each direction: ``walk``, ``push box to (r, c)``, ``blocked
                       (wall)`` or ``blocked (box cannot move)``.
``undo()``             Takes back the last move that changed the board (its step is not
                       refunded); ``Undid the last move.`` and the board.
``reset()``            Restarts the level: the initial board and a fresh step budget.
=====================  =====================================================================

The step budget (the solution's moves + 16, rounded up to a multiple of 5) is never what ends
an episode here: a correct episode fits in it by construction (its extra moves are at most the
lap's 6, two per walk for wasted steps and one per walk for undone mistakes, over at most five
walks), and an incorrect one gives up first.

Seven planted strategies, each a way of playing a person would name (the walks between pushes
are shortest paths on the real board that never step straight back, so the moves depend on the
puzzle):

=================  ==============================================================================
``plan_batch``     the whole solution worked out in its first move message (positions, which box
                   goes where, the full move sequence), then executed in batches of 4-9 parallel
                   ``move`` calls per message
``greedy``         one ``move`` per message, each with a short reactive thought about the box it
                   heads for or pushes; never looks, checks or undoes
``survey``         opens with ``look`` and ``valid_moves`` in one message, walks in messages of
                   1-3 moves, and calls ``valid_moves`` before every push
``undo_heavy``     one move per message, trial and error: on some walks (:data:`_P_MISTAKE`, at
                   least one per episode where the board allows) a step the wrong way, or a push
                   one cell too far, taken back with ``undo``
``wall_hug``       first a lap of 3-4 walking moves along the walls (no push; of the ways round,
                   the longest costing at most :data:`_LAP_EXTRA` extra moves), then walks that
                   keep to wall-side cells where it costs nothing, in messages of 2-4 moves
``push_look``      each walk sent whole in one message, each push alone, and a ``look`` after
                   every push to re-check the board
``reset_retry``    acts at once: pushes one of the nearest boxes the wrong way and on until it
                   sticks, tries it once or twice more (answered :data:`BLOCKED`, by design),
                   ``reset``, then plays the level one move per message
=================  ==============================================================================

Optional steps, at fixed rates whatever the arm, the level and the strategy: a ``look`` as the
very first call (:data:`_P_OPEN_LOOK`); a ``look`` alone in a message between two move messages
when the first ended with a walking move (:data:`_P_LOOK` per such gap); a wasted step at the
start of a walk to a push, a step aside and straight back (:data:`_P_WASTE` per walk where a
side step is possible; the only time a walking move is followed by its reverse).

Execution failures, at a fixed rate per intended move (:data:`_P_FAIL`), whatever the strategy:
the agent sends a move that is blocked (into a wall or a box that cannot move, answered
:data:`BLOCKED`; :data:`_P_FAIL_BLOCKED` where one is possible, never the box it has just pushed
pushed again the same way) or a direction the tool does not know (``north``, ``Left``, answered
:data:`INVALID`); the failed call is the last of its
message, nothing comes between it and the next message, which starts with the corrected move
(that one does not fail). A blocked push by design (``reset_retry``) is not a failure: it is
followed by the same push again or by ``reset``, or starts the wandering end.

The arms ``base`` and ``rl`` differ only in their mixture (:data:`ARMS`); whether an episode is
correct is drawn at its strategy's rate (:data:`_SUCCESS`), random within it, before it is
played: a correct episode follows the solution to the solved board; an incorrect one follows it
for a random number of pushes, then pushes a box the wrong way (``reset_retry``: gets stuck
again after its reset) and wanders, in the strategy's own style, for about as many moves as the
rest of the solution would have taken, then gives up; it never makes a move that would solve the
puzzle. Lengths vary within every strategy (the level, the optional steps, the failures, the
strategy's own draws) but an incorrect episode is about as long as a correct one.

The truth carries, beside ``strategy``, ``n_boxes``, ``n_calls`` (tool calls, failed ones
included), ``n_moves`` (``move`` calls, failed ones included), ``n_failures`` (execution
failures), ``n_wasted`` (wasted steps), ``n_walks`` (walks where a wasted step was possible),
``ending`` (``solved`` or ``gave_up``; ``step_limit`` if the budget ever ran out) and
``correct``.

Written from scratch as a held-out world, without reference to how trajectories are segmented
or clustered.
"""
from __future__ import annotations

import heapq
import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from mechanism.core.options import RandomState
from mechanism.datasets.worlds._base import World, pick, planted_world, world_generator

Pos = tuple[int, int]

STRATEGIES = ("plan_batch", "greedy", "survey", "undo_heavy", "wall_hug", "push_look", "reset_retry")
TOOLS = ("move", "look", "valid_moves", "undo", "reset")
DIRECTIONS = ("up", "down", "left", "right")
ARMS = {
    "base": {"plan_batch": 0.10, "greedy": 0.24, "survey": 0.12, "undo_heavy": 0.12, "wall_hug": 0.16,
             "push_look": 0.12, "reset_retry": 0.14},
    "rl": {"plan_batch": 0.20, "greedy": 0.10, "survey": 0.12, "undo_heavy": 0.16, "wall_hug": 0.10,
           "push_look": 0.20, "reset_retry": 0.12},
}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"plan_batch": 0.7, "greedy": 0.35, "survey": 0.55, "undo_heavy": 0.6, "wall_hug": 0.3,
            "push_look": 0.75, "reset_retry": 0.45}
#: optional steps, whatever the arm, the level and the strategy
_P_OPEN_LOOK = 0.25  # a look as the very first call
_P_LOOK = 0.1  # a look alone between two move messages, the first ending with a walking move
_P_WASTE = 0.12  # a step aside and back at the start of a walk (where a side step is possible)
#: execution failures
_P_FAIL = 0.07  # an intended move sent wrong first (then corrected at once)
_P_FAIL_BLOCKED = 0.6  # ... as a blocked move, where one is possible (else an unknown direction)
#: the look of the transcript
_P_SAY = 0.45  # a move message also has text (greedy's and the core messages always have)
#: inside strategies
_P_MISTAKE = 0.45  # undo_heavy: a mistake taken back on a walk (at least one per episode)
_P_SECOND_BLOCK = 0.4  # reset_retry: the stuck box pushed a second time before the reset
_P_FLAIL_UNDO = 0.4  # undo_heavy, wandering: a push taken back
_LAP_EXTRA = 6  # wall_hug: the most moves its opening lap may add on the way to the first push
_HUG_COST = 1.01  # wall_hug: a step onto a cell with no wall beside it costs this much

BLOCKED = "Invalid move: the way is blocked (a wall, or a box that cannot be pushed). Nothing changed."
INVALID = 'Error: invalid value for "direction". Expected one of "up", "down", "left", "right".'
SOLVED = "All boxes are on targets. Puzzle solved!"
LIMIT = "Step limit reached. The episode is over."
TOOL_SCHEMA: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "move", "description": ("Move the player one cell; walking into a box pushes it. Costs one step "
                                        "(a blocked move costs none)."),
        "parameters": {"type": "object", "properties": {"direction": {
            "type": "string", "enum": list(DIRECTIONS)}}, "required": ["direction"]}}},
    {"type": "function", "function": {
        "name": "look", "description": "Show the board, the positions and the status. Free.",
        "parameters": {"type": "object", "properties": {}}}},
    {"type": "function", "function": {
        "name": "valid_moves", "description": "What each direction would do from here. Free.",
        "parameters": {"type": "object", "properties": {}}}},
    {"type": "function", "function": {
        "name": "undo", "description": "Take back the last move that changed the board (steps are not refunded).",
        "parameters": {"type": "object", "properties": {}}}},
    {"type": "function", "function": {
        "name": "reset", "description": "Restart the level: the initial board and a fresh step budget.",
        "parameters": {"type": "object", "properties": {}}}},
]

_STEP = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
_BACK = {"up": "down", "down": "up", "left": "right", "right": "left"}
_WRONG_NAMES = ("north", "south", "east", "west", "forward", "backward", "Left", "Right", "Up", "Down", "l", "r")
_B62 = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def _add(p: Pos, d: str, k: int = 1) -> Pos:
    return p[0] + k * _STEP[d][0], p[1] + k * _STEP[d][1]


def _dist(a: Pos, b: Pos) -> int:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


# -- levels ---------------------------------------------------------------------------------------------
def _region(walls: frozenset[Pos], boxes: frozenset[Pos], start: Pos) -> set[Pos]:
    """The cells the player reaches from ``start`` without pushing."""
    seen, stack = {start}, [start]
    while stack:
        r, c = stack.pop()
        for q in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
            if q not in seen and q not in walls and q not in boxes:
                seen.add(q)
                stack.append(q)
    return seen


def _corner(p: Pos, walls: frozenset[Pos]) -> bool:
    vertical = _add(p, "up") in walls or _add(p, "down") in walls
    return vertical and (_add(p, "left") in walls or _add(p, "right") in walls)


def _solve(walls: frozenset[Pos], targets: frozenset[Pos], boxes: frozenset[Pos], player: Pos,
           cap: int = 12_000) -> list[tuple[Pos, str]] | None:
    """The fewest pushes ``(box, direction)`` that put every box on a target (None past ``cap`` states)."""
    region = _region(walls, boxes, player)
    start = (boxes, min(region))
    parent: dict[tuple, tuple | None] = {start: None}
    queue = deque([(start, region)])
    while queue:
        key, region = queue.popleft()
        bx = key[0]
        for b in sorted(bx):
            for d in DIRECTIONS:
                dest = _add(b, d)
                if _add(b, d, -1) not in region or dest in walls or dest in bx:
                    continue
                if dest not in targets and _corner(dest, walls):
                    continue
                nb = (bx - {b}) | {dest}
                after = _region(walls, nb, b)
                child = (nb, min(after))
                if child in parent:
                    continue
                parent[child] = (key, (b, d))
                if nb == targets:
                    pushes = []
                    while parent[child] is not None:
                        child, push = parent[child]
                        pushes.append(push)
                    return pushes[::-1]
                if len(parent) > cap:
                    return None
                queue.append((child, after))
    return None


def _room(rng: np.random.Generator) -> tuple[frozenset[Pos], list[Pos], int, int]:
    h, w = int(rng.integers(6, 8)), int(rng.integers(6, 9))
    walls = {(r, c) for r in range(h) for c in range(w) if r in (0, h - 1) or c in (0, w - 1)}
    inner = [(r, c) for r in range(1, h - 1) for c in range(1, w - 1)]
    for i in rng.choice(len(inner), size=int(rng.integers(0, 4)), replace=False):
        walls.add(inner[int(i)])
    return frozenset(walls), [p for p in inner if p not in walls], h, w


def _reverse_play(rng: np.random.Generator, walls: frozenset[Pos], floor: list[Pos], n_boxes: int
                  ) -> tuple[frozenset[Pos], frozenset[Pos], Pos]:
    """Targets, then boxes pulled off them by a player walking backwards (on until no box is left
    on a target, within a limit); the player's last cell."""
    cells = rng.choice(len(floor), size=n_boxes + 1, replace=False)
    targets = frozenset(floor[int(i)] for i in cells[:n_boxes])
    player, boxes = floor[int(cells[-1])], set(targets)
    steps = int(rng.integers(20, 60))
    for i in range(steps + 200):
        if i >= steps and not boxes & targets:
            break
        d = DIRECTIONS[int(rng.integers(4))]
        nxt, behind = _add(player, d), _add(player, d, -1)
        if nxt in walls or nxt in boxes:
            continue
        if behind in boxes and rng.random() < 0.9:
            boxes.discard(behind)
            boxes.add(player)
        player = nxt
    return targets, frozenset(boxes), player


def _pushes_at_least(boxes: frozenset[Pos], targets: frozenset[Pos]) -> int:
    """A lower bound on the pushes: the cheapest matching of boxes to targets by grid distance."""
    a, b = sorted(boxes), sorted(targets)
    if len(a) == 1:
        return _dist(a[0], b[0])
    return min(_dist(a[0], b[0]) + _dist(a[1], b[1]), _dist(a[0], b[1]) + _dist(a[1], b[0]))


def _level(rng: np.random.Generator) -> dict[str, Any]:
    """One solvable level: walls, targets, boxes, player, the pushes that solve it, the step budget."""
    for _ in range(5000):
        walls, floor, h, w = _room(rng)
        n_boxes = 1 + int(rng.random() < 0.45)
        if len(floor) < n_boxes + 6:
            continue
        targets, boxes, player = _reverse_play(rng, walls, floor, n_boxes)
        if boxes & targets or not 2 <= _pushes_at_least(boxes, targets) <= 11:
            continue
        plan = _solve(walls, targets, boxes, player)
        if plan is None or not 2 <= len(plan) <= 5:
            continue
        level = {"walls": walls, "targets": targets, "boxes": boxes, "player": player, "h": h, "w": w,
                 "plan": plan, "budget": 10_000}
        env, legs = _Env(level), []
        for b, d in plan:
            legs.append(len(_path(rng, env, _add(b, d, -1)) or []) + 1)
            env.teleport_push(b, d)
        if not 8 <= sum(legs) <= 12 or not _wrong_pushes(_Env(level), plan[0], slide=True):  # reset_retry's start
            continue
        level["leg_moves"], level["n_moves"] = legs, sum(legs)
        level["budget"] = 5 * int(np.ceil((sum(legs) + 16) / 5))
        return level
    raise RuntimeError("no Sokoban level could be generated")  # pragma: no cover


# -- the environment and the harness ---------------------------------------------------------------------
class _Env:
    """The puzzle's state and the harness's answers to each tool."""

    def __init__(self, level: dict[str, Any]) -> None:
        self.walls, self.targets = level["walls"], level["targets"]
        self.h, self.w, self.budget = level["h"], level["w"], level["budget"]
        self.base = ["".join("#" if (r, c) in self.walls else "O" if (r, c) in self.targets else "_"
                             for c in range(self.w)) for r in range(self.h)]
        self.start: tuple[Pos, frozenset[Pos]] = (level["player"], level["boxes"])
        self.player, self.boxes = self.start
        self.steps = 0
        self.history: list[tuple[Pos, frozenset[Pos]]] = []

    def copy(self) -> _Env:
        other = object.__new__(_Env)
        other.__dict__.update(self.__dict__)
        other.history = list(self.history)
        return other

    def free(self, p: Pos) -> bool:
        return p not in self.walls and p not in self.boxes

    def blocked(self, d: str) -> bool:
        nxt = _add(self.player, d)
        return nxt in self.walls or (nxt in self.boxes and not self.free(_add(nxt, d)))

    def is_push(self, d: str) -> bool:
        return _add(self.player, d) in self.boxes

    def solves(self, d: str) -> bool:
        nxt = _add(self.player, d)
        return (not self.blocked(d) and nxt in self.boxes
                and (self.boxes - {nxt}) | {_add(nxt, d)} == self.targets)

    def solved(self) -> bool:
        return self.boxes == self.targets

    def left(self) -> int:
        return self.budget - self.steps

    def over(self) -> bool:
        return self.solved() or self.steps >= self.budget

    def apply(self, d: str) -> None:
        nxt = _add(self.player, d)
        self.history.append((self.player, self.boxes))
        if nxt in self.boxes:
            self.boxes = (self.boxes - {nxt}) | {_add(nxt, d)}
        self.player = nxt

    def teleport_push(self, b: Pos, d: str) -> None:
        self.player, self.boxes = b, (self.boxes - {b}) | {_add(b, d)}

    def board(self) -> str:
        grid = [list(row) for row in self.base]
        for r, c in self.boxes:
            grid[r][c] = "√" if (r, c) in self.targets else "X"
        r, c = self.player
        grid[r][c] = "S" if self.player in self.targets else "P"
        return "\n".join("".join(row) for row in grid)

    def status(self) -> str:
        on = len(self.boxes & self.targets)
        return f"Boxes on target: {on}/{len(self.targets)}. Steps used: {self.steps}/{self.budget}."

    def answer(self, name: str, args: dict[str, Any]) -> str:
        """Execute one call and return the harness's answer."""
        if name == "move":
            d = args.get("direction")
            if d not in _STEP:
                return INVALID
            if self.blocked(d):
                return BLOCKED
            self.steps += 1
            self.apply(d)
            out = f"{self.board()}\n{self.status()}"
            return out + (f"\n{SOLVED}" if self.solved() else f"\n{LIMIT}" if self.steps >= self.budget else "")
        if name == "look":
            listed = ", ".join(f"({r}, {c})" for r, c in sorted(self.boxes))
            goals = ", ".join(f"({r}, {c})" for r, c in sorted(self.targets))
            return (f"{self.board()}\nPlayer: ({self.player[0]}, {self.player[1]}). Boxes: {listed}. "
                    f"Targets: {goals}.\n{self.status()}")
        if name == "valid_moves":
            return "\n".join(f"{d}: {self._what(d)}" for d in DIRECTIONS)
        if name == "undo":
            if not self.history:
                return "Nothing to undo."
            self.player, self.boxes = self.history.pop()
            return f"Undid the last move.\n{self.board()}\n{self.status()}"
        if name != "reset":
            raise ValueError(f"sokoban: no tool {name!r}")
        self.player, self.boxes = self.start
        self.history, self.steps = [], 0
        return f"Level reset to its initial board, with a fresh step budget.\n{self.board()}\n{self.status()}"

    def _what(self, d: str) -> str:
        nxt = _add(self.player, d)
        if nxt in self.walls:
            return "blocked (wall)"
        if nxt in self.boxes:
            dest = _add(nxt, d)
            return f"push box to ({dest[0]}, {dest[1]})" if self.free(dest) else "blocked (box cannot move)"
        return "walk"


def _path(rng: np.random.Generator, env: _Env, goal: Pos, *, hug: bool = False, came: str | None = None
          ) -> list[str] | None:
    """The cheapest walk from the player to ``goal`` that never steps straight back (the first
    step not back along ``came``, the player's last walking move), ties broken at random; with
    ``hug``, cells with no wall beside them cost a little more. None when there is none."""
    start = (env.player, came)
    if env.player == goal:
        return []
    best: dict[tuple[Pos, str | None], float] = {start: 0.0}
    prev: dict[tuple[Pos, str | None], tuple[Pos, str | None]] = {}
    heap: list[tuple[float, float, tuple[Pos, str | None]]] = [(0.0, 0.0, start)]
    end = None
    while heap:
        cost, _, state = heapq.heappop(heap)
        p, last = state
        if p == goal:
            end = state
            break
        if cost > best[state]:
            continue
        for d in DIRECTIONS:
            q = _add(p, d)
            if not env.free(q) or (last is not None and d == _BACK[last]):
                continue
            step = 1.0 if not hug or any(_add(q, e) in env.walls for e in DIRECTIONS) else _HUG_COST
            if cost + step < best.get((q, d), float("inf")):
                best[(q, d)], prev[(q, d)] = cost + step, state
                heapq.heappush(heap, (cost + step, float(rng.random()), (q, d)))
    if end is None:
        return None
    out = []
    while end != start:
        out.append(end[1])
        end = prev[end]
    return out[::-1]


def _walk_lengths(env: _Env, came: str | None) -> dict[Pos, int]:
    """The length of the shortest walk from the player to every cell it reaches without ever
    stepping straight back (the first step not back along ``came``). Without ``came`` that is
    the plain distance: a shortest walk never steps straight back."""
    walls, boxes, moves = env.walls, env.boxes, tuple((d, *_STEP[d]) for d in DIRECTIONS)
    out = {env.player: 0}
    if came is None:
        queue = deque([env.player])
        while queue:
            p = queue.popleft()
            for _, dr, dc in moves:
                q = (p[0] + dr, p[1] + dc)
                if q not in out and q not in walls and q not in boxes:
                    out[q] = out[p] + 1
                    queue.append(q)
        return out
    start = (env.player, came)
    seen, states = {start}, deque([(start, 0)])
    while states:
        (p, last), n = states.popleft()
        back = _BACK[last] if last else None
        for d, dr, dc in moves:
            q = (p[0] + dr, p[1] + dc)
            if d == back or q in walls or q in boxes or (q, d) in seen:
                continue
            seen.add((q, d))
            out.setdefault(q, n + 1)
            states.append(((q, d), n + 1))
    return out


def _wrong_pushes(env: _Env, plan_push: tuple[Pos, str] | None, *, slide: bool,
                  came: str | None = None) -> list[tuple[Pos, str, int]]:
    """Pushes the plan does not make next, ``(box, direction, pushes)``: legal from here, the
    walk to them possible (never stepping straight back, after the walking move ``came``), never
    solving the puzzle; with ``slide`` the box pushed on until it sticks (``pushes`` of them)."""
    region = _walk_lengths(env, came)
    out = []
    for b in sorted(env.boxes):
        for d in DIRECTIONS:
            stand, dest = _add(b, d, -1), _add(b, d)
            if (b, d) == plan_push or stand not in region or not env.free(dest):
                continue
            boxes, at, n = env.boxes, b, 0
            while True:
                nxt = _add(at, d)
                if nxt in env.walls or nxt in boxes:
                    break
                boxes = (boxes - {at}) | {nxt}
                if boxes == env.targets:
                    n = 0  # the push would solve the puzzle
                    break
                at, n = nxt, n + 1
                if not slide:
                    break
            if n:
                out.append((b, d, n))
    return out


def _open_moves(env: _Env, prev: str | None) -> list[str]:
    """The moves a wandering agent may make: not blocked, not solving, not straight back after ``prev``."""
    return [d for d in DIRECTIONS if not env.blocked(d) and not env.solves(d) and not (prev and d == _BACK[prev])]


def _after(env: _Env, *moves: str) -> _Env:
    other = env.copy()
    for d in moves:
        other.apply(d)
    return other


# -- the episode ---------------------------------------------------------------------------------------
@dataclass
class _Style:
    """How a strategy groups its moves into messages and what it says."""

    take: Callable[[_Session, list[str]], int]  # moves in the next message
    say: Callable[[_Session, list[str]], str]  # its text
    always_say: bool = False
    check_push: bool = False  # valid_moves before every push (survey)
    look_after_push: bool = False  # look after every push (push_look)


class _Session:
    """One episode in OpenAI chat format: the agent's calls on the environment, the noise, the
    failures and the counts of the truth."""

    def __init__(self, rng: np.random.Generator, level: dict[str, Any], strategy: str, correct: bool) -> None:
        self.rng, self.level, self.strategy, self.correct = rng, level, strategy, correct
        self.env = _Env(level)
        self.plan: list[tuple[Pos, str]] = level["plan"]
        self.k = 0  # the plan's next push
        self.hug = strategy == "wall_hug"
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": _system(rng)},
                                               {"role": "user", "content": _task_text(rng, self.env)}]
        self.n_calls = self.n_moves = self.failures = self.wasted = self.walks = 0
        self.last = "start"  # what the previous assistant message did: walk, push, failed, look, info, ...
        self.last_walk: str | None = None  # the last successful move, when it was a walking move
        self.last_push: str | None = None  # the last successful move, when it was a push
        self.no_fail = False
        self.note: str | None = None  # the text of the next move message, where set
        self.pending: list[tuple[dict[str, Any], dict[str, Any]]] = []

    # -- messages -----------------------------------------------------------------------------------
    def call(self, name: str, args: dict[str, Any]) -> str:
        """Execute one call now; it goes into the message being built."""
        cid = "call_" + "".join(map(_B62.__getitem__, self.rng.integers(0, 62, size=24).tolist()))
        result = self.env.answer(name, args)
        self.n_calls += 1
        self.n_moves += name == "move"
        self.pending.append(({"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}},
                             {"role": "tool", "tool_call_id": cid, "name": name, "content": result}))
        if name in ("undo", "reset"):
            self.last_walk = self.last_push = None
        return result

    def flush(self, say: str | None, last: str) -> None:
        self.messages.append({"role": "assistant", "content": say, "tool_calls": [c for c, _ in self.pending]})
        self.messages += [r for _, r in self.pending]
        self.pending = []
        self.last = last

    def single(self, name: str, say: str | None, last: str) -> None:
        self.call(name, {})
        self.flush(say, last)

    def move_msg(self, dirs: list[str], say: str | None, *, design: bool = False) -> int:
        """One message of parallel ``move`` calls (the first ``dirs`` that fit in the budget); a
        failed call ends it. Returns how many of ``dirs`` were done."""
        rng, env = self.rng, self.env
        if self.last == "walk" and rng.random() < _P_LOOK:
            self.single("look", self.said(("Let me look at the board again.", "Quick check of the board.",
                                           "Where is everything now?")), "look")
        done, last = 0, self.last
        for d in dirs:
            if env.over():
                break
            if not design and not self.no_fail and rng.random() < _P_FAIL:
                self._fail(d)
                last = "failed"
                break
            self.no_fail = False
            pushing = env.is_push(d)
            if design:
                self.call("move", {"direction": d})
                last = "blocked"
                break
            self.call("move", {"direction": d})
            done += 1
            last = "push" if pushing else "walk"
            self.last_walk, self.last_push = (None, d) if pushing else (d, None)
        self.flush(say, last)
        return done

    def _fail(self, d: str) -> None:
        """The intended move ``d`` sent wrong: a blocked direction, or one the tool does not know."""
        rng, env = self.rng, self.env
        # never the box it has just pushed, pushed on the same way: that is reset_retry's push by design
        blocked = [e for e in DIRECTIONS if e != d and e != self.last_push and env.blocked(e)]
        if blocked and rng.random() < _P_FAIL_BLOCKED:
            self.call("move", {"direction": pick(rng, blocked)})
        else:
            self.call("move", {"direction": pick(rng, _WRONG_NAMES)})
        self.failures += 1
        self.no_fail = True

    def said(self, says: tuple[str, ...]) -> str | None:
        return pick(self.rng, says) if self.rng.random() < _P_SAY else None

    # -- emitting moves in a strategy's style ----------------------------------------------------------
    def emit(self, dirs: list[str], style: _Style) -> None:
        """Send ``dirs`` as the style groups them, a failed move corrected first thing in the next message."""
        queue = list(dirs)
        while queue and not self.env.over():
            n = max(1, min(style.take(self, queue), len(queue)))
            pushing = self.env.is_push(queue[0])
            if style.check_push and pushing and self.last != "failed":
                self.single("valid_moves", self.said(("Checking the push is possible before I commit.",
                                                      "Let me verify which moves are legal here.",
                                                      "Is the push free?")), "info")
            if self.last == "failed":
                say = _correction(self, queue[0]) if style.always_say or self.rng.random() < 0.5 else None
            elif self.note:
                say, self.note = self.note, None
            else:
                text = style.say(self, queue[:n])
                say = text if style.always_say or self.rng.random() < _P_SAY else None
            done = self.move_msg(queue[:n], say)
            queue = queue[done:]
            if style.look_after_push and self.last == "push" and not self.env.over():
                self.single("look", self.said(("Re-checking the board after the push.", "Let me see where it went.",
                                               "Checking the board.")) or "Let me look at the board.", "look")

    # -- planning on a copy of the board --------------------------------------------------------------
    def walk(self, env: _Env, goal: Pos, prev: str | None) -> tuple[list[str], bool]:
        """The walk to ``goal`` from ``env``'s player (never starting straight back after the
        walking move ``prev``), a wasted step first where drawn; and whether it was."""
        path = _path(self.rng, env, goal, hug=self.hug, came=prev)
        if path is None:
            raise RuntimeError("sokoban: no walk to the next push")  # pragma: no cover - excluded by construction
        avoid = _BACK[prev] if prev else None
        sides = [d for d in DIRECTIONS if path and d != path[0] and d != avoid and env.free(_add(env.player, d))]
        if not sides:
            return path, False
        self.walks += 1
        if self.rng.random() >= _P_WASTE:
            return path, False
        self.wasted += 1
        d = pick(self.rng, sides)
        return [d, _BACK[d], *path], True

    def legs(self, n: int | None = None) -> tuple[list[str], list[str]]:
        """The moves of the plan's next ``n`` pushes (all: None) from the board as it is, and the
        same without the wasted steps."""
        env, moves, clean = self.env.copy(), [], []
        prev = self.last_walk
        stop = len(self.plan) if n is None else min(len(self.plan), self.k + n)
        while self.k < stop:
            b, d = self.plan[self.k]
            walk, wasted = self.walk(env, _add(b, d, -1), prev)
            for m in [*walk, d]:
                env.apply(m)
            moves += [*walk, d]
            clean += [*walk[2 * wasted:], d]
            prev = None
            self.k += 1
        return moves, clean

    def deviation(self) -> int:
        """Where an incorrect episode leaves the plan: before a random push with at least three
        moves of the solution left."""
        legs = self.level["leg_moves"]
        points = [k for k in range(len(self.plan)) if sum(legs[k:]) >= 3]
        return points[int(self.rng.integers(len(points)))]

    def wrong(self, *, slide: bool) -> tuple[list[str], list[str]] | None:
        """The walk to a push the plan does not make and that push (slid on until stuck with
        ``slide``), and the same without a wasted step; or None where there is none. The push is
        one of the nearest, and where possible one that takes fewer moves than the rest of the
        solution."""
        env = self.env
        cands = _wrong_pushes(env, self.plan[self.k] if self.k < len(self.plan) else None, slide=slide,
                              came=self.last_walk)
        if not cands:
            return None
        far = _walk_lengths(env, self.last_walk)
        fit = sum(self.level["leg_moves"][self.k:]) - 1
        cands = [c for c in cands if far[_add(c[0], c[1], -1)] + c[2] <= fit] or cands
        near = min(far[_add(b, d, -1)] for b, d, _ in cands)
        cands = [c for c in cands if far[_add(c[0], c[1], -1)] <= near + 1]
        b, d, n = cands[int(self.rng.integers(len(cands)))]
        walk, wasted = self.walk(env, _add(b, d, -1), self.last_walk)
        return [*walk, *([d] * n)], [*walk[2 * wasted:], *([d] * n)]

    def flail(self, n: int) -> list[str]:
        """Up to ``n`` wandering moves: never blocked, never solving, never straight back, and
        not into a dead end where another way is open."""
        env, out, prev = self.env.copy(), [], self.last_walk
        for _ in range(min(n, env.left())):
            options = _open_moves(env, prev)
            if not options:
                break
            onward = [d for d in options if _open_moves(_after(env, d), None if env.is_push(d) else d)]
            d = pick(self.rng, onward or options)
            prev = None if env.is_push(d) else d
            env.apply(d)
            out.append(d)
        return out

    def give_up(self, style: _Style, k: int, used: int) -> None:
        """The end of an incorrect episode that left the plan before its push ``k`` after ``used``
        moves of its own: wandering for about as long as the rest of the solution would have
        taken, then giving up."""
        rng = self.rng
        remaining = sum(self.level["leg_moves"][k:])
        n = max(1, remaining - used + int(rng.integers(-1, 2)))
        while n > 0 and not self.env.over():
            moves = self.flail(min(n, 12))
            if not moves:
                break
            self.emit(moves, style)
            n -= len(moves)


# -- words ---------------------------------------------------------------------------------------------
def _at(rng: np.random.Generator, p: Pos) -> str:
    return pick(rng, (f"({p[0]}, {p[1]})", f"row {p[0]}, col {p[1]}", f"({p[0]},{p[1]})"))


def _nearest_box(env: _Env) -> Pos:
    loose = sorted(env.boxes - env.targets) or sorted(env.boxes)
    return min(loose, key=lambda b: abs(b[0] - env.player[0]) + abs(b[1] - env.player[1]))


def _rel(a: Pos, b: Pos) -> str:
    v = "above me" if b[0] < a[0] else "below me" if b[0] > a[0] else ""
    h = "to my left" if b[1] < a[1] else "to my right" if b[1] > a[1] else ""
    return " and ".join(x for x in (v, h) if x) or "right here"


_SIDE = {"up": "above me", "down": "below me", "left": "to my left", "right": "to my right"}


def _seq(dirs: list[str]) -> str:
    return ", ".join(d.capitalize() for d in dirs)


def _system(rng: np.random.Generator) -> str:
    legend = ("Symbols: # wall, _ floor, P player, X box, O target, √ box on target, S player on target. "
              "Coordinates are (row, col) from the top-left corner.")
    return pick(rng, (
        "You are playing Sokoban. Push every box (X) onto a target (O). You can push a box but never pull it, "
        f"and you cannot push two boxes at once. {legend} Use the tools to act; each move costs one step.",
        f"You are an agent solving grid puzzles with tools. Goal: all boxes on targets within the step budget. "
        f"{legend} Tools: move(direction), look(), valid_moves(), undo(), reset().",
        f"Sokoban environment.\n{legend}\nActions are tool calls. Several move calls in one message are "
        "executed in order. Boxes can only be pushed."))


def _task_text(rng: np.random.Generator, env: _Env) -> str:
    n, board = len(env.targets), env.board()
    return pick(rng, (
        f"Solve this Sokoban level. You have {env.budget} steps.\n\n{board}",
        f"Here is the puzzle ({n} box{'es' * (n > 1)}, step budget {env.budget}):\n{board}\n"
        "Get every box onto a target.",
        f"New level.\n```\n{board}\n```\nPush all {n} box{'es' * (n > 1)} onto the targets. "
        f"Max steps: {env.budget}."))


def _correction(s: _Session, d: str) -> str:
    return pick(s.rng, (f"That didn't work; I meant {d}.", f"Wrong call. Moving {d}.",
                        f"Oops. {d.capitalize()} is the move I wanted."))


def _say_walk_or_push(s: _Session, dirs: list[str]) -> str:
    rng, env = s.rng, s.env
    box = _nearest_box(env)
    if env.is_push(dirs[0]):
        dest = _add(_add(env.player, dirs[0]), dirs[0])
        return pick(rng, (f"Pushing the box {dirs[0]} to {_at(rng, dest)}.", f"Push {dirs[0]}.",
                          f"The box is {_SIDE[dirs[0]]}; pushing it toward {_at(rng, dest)}."))
    return pick(rng, (f"The box at {_at(rng, box)} is {_rel(env.player, box)}; moving {dirs[0]}.",
                      f"Heading {dirs[0]} toward the box at {_at(rng, box)}.", f"{dirs[0].capitalize()}.",
                      f"Getting into position behind the box at {_at(rng, box)}: {dirs[0]}."))


def _say_batch(s: _Session, dirs: list[str]) -> str:
    return pick(s.rng, (f"Next batch: {_seq(dirs)}.", "Continuing with the plan.",
                        f"Executing the next {len(dirs)} moves of the plan."))


def _say_group(s: _Session, dirs: list[str]) -> str:
    rng = s.rng
    if len(dirs) == 1:
        return _say_walk_or_push(s, dirs)
    return pick(rng, (f"Moving {_seq(dirs)}.", f"Next: {_seq(dirs)}.",
                      f"Walking to the box at {_at(rng, _nearest_box(s.env))}."))


def _plan_text(s: _Session, clean: list[str]) -> str:
    """The first message of plan_batch: the board read, which box goes where, the whole sequence."""
    rng, env = s.rng, s.env
    sim, moved = env.copy(), {b: b for b in env.boxes}
    for d in clean:
        nxt = _add(sim.player, d)
        if nxt in sim.boxes:
            origin = next(o for o, now in moved.items() if now == nxt)
            moved[origin] = _add(nxt, d)
        sim.apply(d)
    routes = "; ".join(f"box {_at(rng, o)} -> {_at(rng, moved[o])}" for o in sorted(moved) if moved[o] != o)
    head = pick(rng, ("Let me plan the whole solution before moving.", "First, a complete plan.",
                      "I'll work out every move up front."))
    return (f"{head}\nPlayer at {_at(rng, env.player)}. Boxes: {', '.join(_at(rng, b) for b in sorted(env.boxes))}. "
            f"Targets: {', '.join(_at(rng, t) for t in sorted(env.targets))}.\nRoutes: {routes}.\n"
            f"Full move sequence ({len(clean)} moves): {_seq(clean)}.\n"
            + pick(rng, ("I'll execute it in batches.", "Executing in chunks now.", "Sending the moves in batches.")))


def _say_lap(s: _Session, dirs: list[str]) -> str:
    return pick(s.rng, ("Following the wall around the room first.", f"Along the wall: {_seq(dirs)}.",
                        "Keeping to the wall to map the room."))


def _count(n: int) -> str:
    return "The box is" if n == 1 else f"All {n} boxes are"


def _final(s: _Session) -> tuple[str, str]:
    rng, env = s.rng, s.env
    if env.solved():
        return "solved", pick(rng, (
            f"Solved! {_count(len(env.targets))} on target after {env.steps} steps.",
            f"Done: the puzzle is solved ({env.steps}/{env.budget} steps used).",
            "Every box is on a target. Finished."))
    if env.steps >= env.budget:
        return "step_limit", pick(rng, (f"I ran out of steps ({env.budget}) before all boxes were on targets.",
                                        "Out of steps; the puzzle is not solved.",
                                        "The step budget is spent and the level is unsolved."))
    box = _nearest_box(env)
    return "gave_up", pick(rng, (
        f"I can't find a way to finish: the box at {_at(rng, box)} can't reach a target any more. Stopping here.",
        "I'm giving up on this level; I don't see a solution from this position.",
        f"Stuck. With the box at {_at(rng, box)} where it is, I can't solve it, so I'll stop."))


# -- strategies ----------------------------------------------------------------------------------------
def _sizes(lo: int, hi: int) -> Callable[[_Session, list[str]], int]:
    return lambda s, queue: int(s.rng.integers(lo, hi + 1))


def _walk_run(s: _Session, queue: list[str]) -> int:
    """How many of ``queue``'s first moves walk (1 when the first pushes)."""
    p, n = s.env.player, 0
    for d in queue:
        p = _add(p, d)
        if p in s.env.boxes:
            break
        n += 1
    return max(n, 1)


def _survey_take(s: _Session, queue: list[str]) -> int:
    return 1 if s.env.is_push(queue[0]) else min(_walk_run(s, queue), int(s.rng.integers(1, 4)))


def _push_look_take(s: _Session, queue: list[str]) -> int:
    return 1 if s.env.is_push(queue[0]) else _walk_run(s, queue)


_STYLES = {
    "plan_batch": _Style(_sizes(4, 9), _say_batch),
    "greedy": _Style(_sizes(1, 1), _say_walk_or_push, always_say=True),
    "survey": _Style(_survey_take, _say_group, check_push=True),
    "undo_heavy": _Style(_sizes(1, 1), _say_walk_or_push),
    "wall_hug": _Style(_sizes(2, 4), _say_group),
    "push_look": _Style(_push_look_take, _say_group, look_after_push=True),
    "reset_retry": _Style(_sizes(1, 1), _say_walk_or_push),
}


def _plain(s: _Session) -> None:
    """greedy, survey, push_look and wall_hug after its lap: the plan push by push (an incorrect
    episode: up to a random push, then a wrong push and the end)."""
    style = _STYLES[s.strategy]
    stop = len(s.plan) if s.correct else s.deviation()
    while s.k < stop and not s.env.over():
        s.emit(s.legs(1)[0], style)
    if not s.correct:
        wrong = s.wrong(slide=False)
        s.emit(wrong[0] if wrong else [], style)
        s.give_up(style, stop, len(wrong[0]) if wrong else 0)


def _survey(s: _Session) -> None:
    s.call("look", {})
    s.call("valid_moves", {})
    s.flush(pick(s.rng, ("Before moving anything, let me study the board and check which moves are open.",
                         "Let me get the full picture first: the board and my legal moves.",
                         "Surveying first.")), "info")
    _plain(s)


def _lap(s: _Session) -> list[str]:
    """A walk along the walls from the start (to the nearest wall-side cell first), no push, never
    straight back, 3-4 moves where the room allows: of the ways round (either hand, any first
    step), the longest that adds at most :data:`_LAP_EXTRA` moves on the way to the first push."""
    rng, env = s.rng, s.env

    def side(p: Pos) -> bool:
        return any(_add(p, e) in env.walls for e in DIRECTIONS)

    lead: list[str] = []
    if not side(env.player):
        goals = sorted(p for p in _region(env.walls, env.boxes, env.player) if side(p))
        lead = _path(rng, env, min(goals, key=lambda p: _dist(p, env.player))) or []
    length, (b, d) = int(rng.integers(3, 5)), s.plan[0]
    stand = _add(b, d, -1)
    base = _walk_lengths(env, s.last_walk)[stand]
    options: list[tuple[int, int, float, list[str]]] = []
    for hand in ("left", "right"):
        for first in DIRECTIONS:
            lap = _trace(env, lead, hand, length, first, side)
            for n in range(1, len(lap) + 1):
                extra = _lap_extra(env, lap[:n], stand, base)
                if extra is not None and extra <= _LAP_EXTRA and lap[:n] not in [o[3] for o in options]:
                    options.append((-n, abs(extra - _LAP_EXTRA // 2), float(rng.random()), lap[:n]))
    for *_, lap in sorted(options):  # the longest, then the one costing nearest the middle, at random
        if s.correct or _wrong_pushes(_after(env, *lap), s.plan[0], slide=False, came=lap[-1]):
            return lap
    return []


def _lap_extra(env: _Env, lap: list[str], stand: Pos, base: int) -> int | None:
    """The moves ``lap`` adds on the way to ``stand`` (``base`` moves without it; the walk after it
    never stepping straight back), or None when that walk is out of reach."""
    after = _walk_lengths(_after(env, *lap), lap[-1]).get(stand)
    return None if after is None else len(lap) + after - base


def _trace(env: _Env, lead: list[str], hand: str, length: int, first: str, side: Callable[[Pos], bool]
           ) -> list[str]:
    """Follow the wall on the ``hand`` side after the walk ``lead``, to ``length`` moves in all."""
    turn = {"left": {"up": "left", "left": "down", "down": "right", "right": "up"},
            "right": {"up": "right", "right": "down", "down": "left", "left": "up"}}[hand]
    out, p, seen = list(lead), env.player, {env.player}
    for m in out:
        p = _add(p, m)
        seen.add(p)
    while len(out) < length:
        prev = out[-1] if out else first
        order = [turn[prev], prev, _BACK[turn[prev]]] if out else [prev, turn[prev], _BACK[turn[prev]], _BACK[prev]]
        step = next((e for e in order if env.free(_add(p, e)) and side(_add(p, e)) and _add(p, e) not in seen), None)
        if step is None:
            break
        p = _add(p, step)
        seen.add(p)
        out.append(step)
    return out


def _wall_hug(s: _Session) -> None:
    lap = _lap(s)
    queue = list(lap)
    while queue and not s.env.over():
        n = min(int(s.rng.integers(2, 5)), len(queue))
        if s.last == "failed":
            say = _correction(s, queue[0]) if s.rng.random() < 0.5 else None
        else:
            say = _say_lap(s, queue[:n]) if len(queue) == len(lap) or s.rng.random() < _P_SAY else None
        queue = queue[s.move_msg(queue[:n], say):]
    _plain(s)


def _plan_batch(s: _Session) -> None:
    """The whole plan in the first message, then batches of 4-9 moves (an incorrect episode: the
    plan holds a wrong push, and the rest is improvised in batches)."""
    style = _STYLES["plan_batch"]
    if s.correct:
        moves, clean = s.legs()
        stop, used = len(s.plan), 0
    else:  # the plan is wrong: a wrong push after a random number of the right ones
        moves, clean = s.legs(s.deviation())
        stop = s.k
        saved, s.env = s.env, s.env.copy()
        for m in moves:
            s.env.apply(m)
        wrong = s.wrong(slide=False)
        s.env = saved
        used = len(wrong[0]) if wrong else 0
        if wrong:
            moves, clean = moves + wrong[0], clean + wrong[1]
    n = min(int(s.rng.integers(4, 10)), len(moves))
    done = s.move_msg(moves[:n], _plan_text(s, clean))
    s.emit(moves[done:], style)
    if not s.correct:
        s.note = pick(s.rng, ("That plan didn't work: a box is off its target and I pushed it the wrong way. "
                              "Improvising.", "The plan failed. Let me try other moves.",
                              "Not solved after the plan. New moves:"))
        s.give_up(style, stop, used)


def _mistake_at(s: _Session, moves: list[str]) -> tuple[int, str] | None:
    """Where in the walk ``moves`` (before its move ``j``) a wrong step ``e`` can be taken: onto a
    free cell, not the move meant next, not straight back; a random one, or None."""
    env, spots = s.env.copy(), []
    prev = s.last_walk
    for j, d in enumerate(moves):
        if not (prev and d == _BACK[prev]):  # never between a wasted step and its way back
            spots += [(j, e) for e in DIRECTIONS
                      if e != d and not (prev and e == _BACK[prev]) and env.free(_add(env.player, e))]
        prev = None if env.is_push(d) else d
        env.apply(d)
    return spots[int(s.rng.integers(len(spots)))] if spots else None


def _overshoot_ok(s: _Session, moves: list[str]) -> bool:
    """Whether one more push after the leg ``moves`` is legal, does not solve, and is not the plan's next push."""
    if not moves:
        return False
    env = s.env.copy()
    for m in moves:
        env.apply(m)
    d = moves[-1]
    box = _add(env.player, d)
    nxt = s.plan[s.k] if s.k < len(s.plan) else None
    return (not env.solved() and not env.blocked(d) and env.is_push(d) and not env.solves(d)
            and nxt != (box, d))


def _undo_heavy(s: _Session) -> None:
    """The plan push by push, one move a message; on some walks (at least one per episode, where
    possible) a wrong step or a push one cell too far, taken back with undo."""
    rng, style = s.rng, _STYLES["undo_heavy"]
    stop = len(s.plan) if s.correct else s.deviation()
    n_legs = stop if s.correct else stop + 1  # an incorrect episode: the wrong push last
    owed, used = sum(rng.random() < _P_MISTAKE for _ in range(n_legs)) or 1, 0
    for i in range(n_legs):
        if s.env.over():
            break
        if i < stop:
            moves = s.legs(1)[0]
        else:
            wrong = s.wrong(slide=False)
            moves = wrong[0] if wrong else []
            used = len(moves)
        if not owed or rng.random() >= owed / (n_legs - i):
            s.emit(moves, style)
            continue
        spot, over = _mistake_at(s, moves), i < stop and _overshoot_ok(s, moves)
        if over and (spot is None or rng.random() < 0.5):
            s.emit(moves, style)
            s.emit([moves[-1]], style)
            s.single("undo", pick(rng, ("Pushed it one too far. Undo.", "Overshot; undoing.", "Too far, undo.")),
                     "undo")
            owed -= 1
            continue
        if spot is None:
            s.emit(moves, style)
            continue
        j, e = spot
        s.emit(moves[:j], style)
        s.emit([e], style)
        s.single("undo", pick(rng, ("Wrong way. Undo.", "That was a mistake; undoing it.", "Undo that.")), "undo")
        owed -= 1
        s.emit(moves[j:], style)
    if not s.correct:
        _wander_undo(s, style, stop, used, owed)


def _wander_undo(s: _Session, style: _Style, k: int, used: int, owed: int) -> None:
    """undo_heavy's end of an incorrect episode: wandering one move a message, pushes sometimes
    taken back (and the first move, when no mistake was taken back before)."""
    rng = s.rng
    remaining = sum(s.level["leg_moves"][k:])
    n = max(1, remaining - used + int(rng.integers(-1, 2)))
    while n > 0 and not s.env.over():
        moves = s.flail(1)
        if not moves:
            break
        s.emit(moves, style)
        n -= 1
        if s.last in ("push", "walk") and (owed or s.last == "push" and rng.random() < _P_FLAIL_UNDO):
            s.single("undo", s.said(("Hmm, no. Undo.", "Taking that back.")) or "Undo.", "undo")
            owed = 0


def _stuck(s: _Session, style: _Style) -> int:
    """From the initial board, push one of the nearest boxes the wrong way and on until it sticks,
    then try it once or twice more (blocked, by design). Returns the moves of its own."""
    rng = s.rng
    moves = (s.wrong(slide=True) or ([], []))[0]
    s.emit(moves, style)
    d = moves[-1] if moves else None
    for i in range(1 + (rng.random() < _P_SECOND_BLOCK)):
        if d is None or s.env.over():
            break
        s.move_msg([d], pick(rng, (f"Push it {d} once more.", f"Trying to push the box {d}.",
                                   f"{d.capitalize()} again.")) if i == 0 else "Again.", design=True)
    return len(moves)


def _reset_retry(s: _Session) -> None:
    """Stuck at once, reset, and the level again: solved, or stuck once more and the end."""
    rng, style = s.rng, _STYLES["reset_retry"]
    _stuck(s, style)
    s.single("reset", pick(rng, ("The box is stuck against the wall. Let me reset the level and start over.",
                                 "That box can't move any more; resetting.", "Dead end. Reset and try again.")),
             "reset")
    if s.correct:
        while s.k < len(s.plan) and not s.env.over():
            s.emit(s.legs(1)[0], style)
        return
    s.give_up(style, 0, _stuck(s, style))


_STRATEGY: dict[str, Callable[[_Session], None]] = {
    "plan_batch": _plan_batch, "greedy": _plain, "survey": _survey, "undo_heavy": _undo_heavy,
    "wall_hug": _wall_hug, "push_look": _plain, "reset_retry": _reset_retry}


def _episode(rng: np.random.Generator, level: dict[str, Any], strategy: str, correct: bool) -> tuple[_Session, str]:
    s = _Session(rng, level, strategy, correct)
    if rng.random() < _P_OPEN_LOOK:  # optional, whatever the strategy
        s.single("look", s.said(("Let me look at the board first.", "First, the board.")), "look")
    _STRATEGY[strategy](s)
    ending, text = _final(s)
    if (ending == "solved") != correct:
        raise RuntimeError(f"sokoban: a {strategy} episode meant {'correct' * correct or 'incorrect'} ended {ending}")
    s.messages.append({"role": "assistant", "content": text})
    return s, ending


def sokoban(n_questions: int = 60, n_samples: int = 4, random_state: RandomState = 0, *,
            arms: dict[str, dict[str, float]] | None = None) -> World:
    """Generate the Sokoban grid-puzzle world (OpenAI ``tool_calls`` records).

    Parameters
    ----------
    n_questions, n_samples
        Levels (each drawn at random: room, walls, one or two boxes), and episodes per level and arm.
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.
    arms
        Arm name -> strategy mixture (default: :data:`ARMS`, ``base`` and ``rl``, which differ
        only in it).

    Returns
    -------
    World
        Records in format ``openai``; truth ``arm, question_id, sample_id, strategy, n_boxes,
        n_calls`` (failed calls included), ``n_moves``, ``n_failures``, ``n_wasted``, ``n_walks``,
        ``ending`` and ``correct``.

    Examples
    --------
    >>> w = sokoban(n_questions=2, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"]))
    ('openai', 4, ['base', 'rl'])
    >>> w.records[0]["messages"][-1]["role"], "tool_calls" in w.records[0]["messages"][-1]
    ('assistant', False)
    """
    rng = world_generator(random_state)
    tasks = [(f"sokoban-{i:04d}", _level(rng)) for i in range(n_questions)]

    def episode(rng: np.random.Generator, arm: str, qid: str, sample: int, strategy: str, level: dict[str, Any]
                ) -> tuple[dict[str, Any], tuple]:
        correct = bool(rng.random() < _SUCCESS[strategy])
        s, ending = _episode(rng, level, strategy, correct)
        return ({"arm": arm, "question_id": qid, "sample_id": sample, "gold": [], "correct": correct,
                 "messages": s.messages},
                (len(level["targets"]), s.n_calls, s.n_moves, s.failures, s.wasted, s.walks, ending, correct))

    return planted_world("sokoban", "openai", rng, tasks, arms or ARMS, n_samples, episode, _SUCCESS,
                         truth_schema={"n_boxes": pl.Int64, "n_calls": pl.Int64, "n_moves": pl.Int64,
                                       "n_failures": pl.Int64, "n_wasted": pl.Int64, "n_walks": pl.Int64,
                                       "ending": pl.String, "correct": pl.Boolean})
