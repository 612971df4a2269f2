"""A household text-game agent world (ALFWorld / TextWorld-like): a ReAct agent in a room.

The user message describes the room ("You are in the middle of a room. Looking quickly around
you, you see a cabinet 1, a countertop 1, ...") and gives the task ("Your task is to: put a
clean mug in coffeemachine."). Six kinds of task: pick-and-place, clean-then-place,
heat-then-place, cool-then-place, examine an object under the desklamp, and pick two objects and
place them. Each assistant message is ``Thought: ...`` (sometimes left out) and ``Action:``
with a plain text command, no brackets: ``go to X``, ``open X``, ``close X``, ``take O from X``,
``put O in/on X``, ``clean O with sinkbasin 1``, ``heat O with microwave 1``, ``cool O with
fridge 1``, ``use desklamp 1``, ``examine O`` (or a receptacle), ``look`` and ``inventory``. The
game answers in the next user message, ``Observation: You arrive at countertop 1. On the
countertop 1, you see a mug 2, and a knife 1.``. The episode ends with ``Action: finish[done]``
(or ``finish[I could not find the <object>.]`` when the agent gives up), which is not a command.

Seven planted strategies; command counts overlap (about 2-30 commands with the failures, the
optional steps and the pick-two tasks, which repeat the search for the second object):

=================  ========================================================================
``guess_act``      no exploration: go to 1-3 guessed receptacles (the first one usually a
                   likely type), take the object where it happens to be, skip the clean /
                   heat / cool step, put it (only one of two); gives up after 2-3 misses
``sweep``          visit the receptacles in the order the room lists them (cabinet 1,
                   cabinet 2, ...), opening the closed ones, until the object is found
``look_first``     ``look`` first, then straight to the likeliest receptacle types for the
                   object (commonsense prior), found at the first to third one
``check_heavy``    prior-guided search, then ``inventory`` after the take, and ``examine`` or
                   ``inventory`` after the clean / heat / cool step and after the put (80 %)
``examine_first``  prior-guided search; at the receptacle holding several candidates
                   (mug 1, mug 3, ...), ``examine`` one or two of them before taking one
``backtrack``      search that goes back and forth: revisits a receptacle already seen
                   (once or more) before finding the object at a new one
``plan_execute``   a plan in the first thought, then a fixed subgoal order: go to the
                   destination (or the desklamp) first and open it, then a prior-guided
                   search, take, transform, put
=================  ========================================================================

Optional steps, at fixed rates whatever the arm, task or strategy: a ``look`` before the first
command (25 %, every strategy but ``look_first``, which always looks), a ``close`` of an opened
receptacle that did not hold the object (20 %), and a final ``examine`` of the object before
finishing (30 %, every completed episode).

Failures are execution, not strategy: every command but ``look`` and ``inventory`` is first
written wrong with probability 0.12 (a receptacle or object number that does not exist, a
missing ``from`` / ``with``, ``put O in X`` for ``put O in/on X``, ``pick up`` for ``take``, a
type without its number) and answered ``Nothing happens.``; the corrected command follows at
once. ``Nothing happens.`` answers nothing else. Rooms, receptacle and object numbers, the
objects seen and the assistant's words vary inside every strategy. The ``rl`` arm differs from
``base`` only in its mixture; success depends only on the strategy (random within it).

The truth carries, beside ``strategy``, ``n_calls`` (commands issued, the finishing action
excluded) and ``n_failures`` (commands answered ``Nothing happens.``).

Written from scratch as a held-out world, without reference to how trajectories are segmented
or clustered.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from mechanism.core.options import as_generator
from mechanism.datasets.worlds._base import World, chat_world, pick

STRATEGIES = ("guess_act", "sweep", "look_first", "check_heavy", "examine_first", "backtrack", "plan_execute")
ARMS = {
    "base": {"guess_act": 0.2, "sweep": 0.2, "look_first": 0.1, "check_heavy": 0.15, "examine_first": 0.1,
             "backtrack": 0.15, "plan_execute": 0.1},
    "rl": {"guess_act": 0.05, "sweep": 0.1, "look_first": 0.25, "check_heavy": 0.1, "examine_first": 0.1,
           "backtrack": 0.1, "plan_execute": 0.3},
}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"guess_act": 0.15, "sweep": 0.7, "look_first": 0.75, "check_heavy": 0.65, "examine_first": 0.6,
            "backtrack": 0.5, "plan_execute": 0.8}
_P_FAIL = 0.12        # a command is first written wrong ("Nothing happens."), then corrected
_P_LOOK = 0.25        # optional: look before the first command
_P_CLOSE = 0.2        # optional: close an opened receptacle that did not hold the object
_P_EXAMINE_END = 0.3  # optional: examine the object before finishing
_NOTHING = "Nothing happens."
_OPENABLE = {"cabinet", "drawer", "fridge", "microwave", "safe"}
_KINDS = ("pick", "clean", "heat", "cool", "examine", "two")
_APPLIANCE = {"clean": ("clean", "sinkbasin 1"), "heat": ("heat", "microwave 1"), "cool": ("cool", "fridge 1")}
# room -> receptacle type -> (least, most) instances
_ROOMS = {
    "kitchen": {"cabinet": (3, 8), "countertop": (1, 3), "drawer": (2, 5), "fridge": (1, 1), "microwave": (1, 1),
                "sinkbasin": (1, 1), "stoveburner": (2, 4), "coffeemachine": (1, 1), "diningtable": (1, 1),
                "garbagecan": (1, 1), "toaster": (1, 1), "shelf": (0, 3)},
    "bedroom": {"bed": (1, 1), "desk": (1, 2), "drawer": (2, 6), "dresser": (1, 1), "shelf": (2, 5),
                "sidetable": (1, 2), "garbagecan": (1, 1), "safe": (0, 1), "laundryhamper": (0, 1),
                "armchair": (0, 1)},
    "livingroom": {"sofa": (1, 1), "armchair": (1, 2), "coffeetable": (1, 1), "sidetable": (1, 2),
                   "drawer": (1, 4), "cabinet": (1, 4), "shelf": (1, 4), "tvstand": (1, 1), "garbagecan": (1, 1),
                   "dresser": (0, 1)},
    "bathroom": {"countertop": (1, 1), "cabinet": (2, 4), "sinkbasin": (1, 2), "toilet": (1, 1),
                 "towelholder": (1, 1), "handtowelholder": (1, 1), "bathtubbasin": (1, 1), "garbagecan": (1, 1),
                 "drawer": (1, 4), "shelf": (0, 2)},
}
_ROOMS_TYPES = {t for room in _ROOMS.values() for t in room}
_DESTS = {"kitchen": ("countertop", "diningtable", "cabinet", "fridge", "shelf", "garbagecan", "drawer"),
          "bedroom": ("desk", "drawer", "shelf", "sidetable", "dresser", "bed", "safe", "garbagecan"),
          "livingroom": ("sofa", "armchair", "coffeetable", "sidetable", "drawer", "cabinet", "shelf", "dresser"),
          "bathroom": ("countertop", "cabinet", "toilet", "garbagecan", "shelf", "drawer")}
# object -> (rooms, likely receptacle types in order, the tasks it suits: c(lean) h(eat) k (cool))
_OBJECTS = {
    "mug": ("kitchen", ("countertop", "cabinet", "coffeemachine", "sinkbasin"), "chk"),
    "cup": ("kitchen", ("cabinet", "countertop", "diningtable"), "chk"),
    "apple": ("kitchen", ("fridge", "countertop", "diningtable", "garbagecan"), "chk"),
    "egg": ("kitchen", ("fridge", "countertop", "diningtable"), "hk"),
    "potato": ("kitchen", ("fridge", "countertop", "diningtable"), "chk"),
    "tomato": ("kitchen", ("fridge", "countertop", "diningtable"), "chk"),
    "lettuce": ("kitchen", ("fridge", "countertop", "diningtable"), "ck"),
    "bread": ("kitchen", ("countertop", "diningtable", "fridge"), "hk"),
    "plate": ("kitchen", ("cabinet", "countertop", "diningtable"), "chk"),
    "bowl": ("kitchen", ("cabinet", "countertop", "diningtable"), "ck"),
    "pan": ("kitchen", ("stoveburner", "cabinet", "countertop"), "ck"),
    "knife": ("kitchen", ("drawer", "countertop", "diningtable"), "c"),
    "spatula": ("kitchen", ("drawer", "countertop", "diningtable"), "c"),
    "spoon": ("kitchen", ("drawer", "diningtable", "countertop"), "c"),
    "pencil": ("bedroom", ("desk", "drawer", "sidetable", "shelf"), ""),
    "book": ("bedroom livingroom", ("desk", "shelf", "bed", "sidetable", "sofa"), ""),
    "cellphone": ("bedroom", ("bed", "desk", "sidetable", "dresser"), ""),
    "keychain": ("bedroom livingroom", ("sidetable", "drawer", "dresser", "coffeetable"), ""),
    "cd": ("bedroom", ("desk", "drawer", "shelf"), ""),
    "creditcard": ("bedroom livingroom", ("desk", "sidetable", "drawer", "coffeetable"), ""),
    "alarmclock": ("bedroom", ("desk", "sidetable", "shelf"), ""),
    "pillow": ("bedroom livingroom", ("bed", "armchair", "sofa"), ""),
    "remotecontrol": ("livingroom", ("sofa", "coffeetable", "sidetable", "tvstand"), ""),
    "newspaper": ("livingroom", ("sofa", "coffeetable", "sidetable"), ""),
    "statue": ("livingroom", ("shelf", "coffeetable", "sidetable"), ""),
    "vase": ("livingroom", ("shelf", "coffeetable", "tvstand"), ""),
    "watch": ("livingroom", ("sidetable", "drawer", "coffeetable"), ""),
    "soapbar": ("bathroom", ("countertop", "cabinet", "bathtubbasin", "sinkbasin"), "c"),
    "cloth": ("bathroom", ("countertop", "cabinet", "drawer"), "c"),
    "spraybottle": ("bathroom", ("cabinet", "countertop", "toilet"), ""),
    "toiletpaper": ("bathroom", ("toilet", "cabinet", "countertop"), ""),
    "candle": ("bathroom", ("countertop", "shelf", "toilet"), ""),
    "soapbottle": ("bathroom", ("countertop", "cabinet", "shelf"), ""),
}
_TASK_TEXT = {
    "pick": ("put a {o} in {d}.", "put some {o} on {d}.", "put a {o} in/on {d}."),
    "clean": ("put a clean {o} in {d}.", "clean some {o} and put it in {d}.", "wash the {o} and put it on {d}."),
    "heat": ("put a hot {o} in {d}.", "heat some {o} and put it in {d}.", "warm up a {o} and put it on {d}."),
    "cool": ("put a cool {o} in {d}.", "cool some {o} and put it in {d}.", "chill a {o} and put it on {d}."),
    "examine": ("examine the {o} with the desklamp.", "look at {o} under the desklamp.",
                "examine a {o} under the desklamp."),
    "two": ("find two {o} and put them in {d}.", "put two {o} in {d}.", "place two {o} on {d}."),
}
_SAY = {
    "look": ("Let me look around first.", "First, what is in this room?", "I'll look around.", ""),
    "go": ("Let me go to {r}.", "I'll check {r}.", "{r} may have it.", "Going to {r}.", ""),
    "go_prior": ("A {o} is most likely in or on a {t}; let me try {r}.", "{t} is where a {o} usually is.",
                 "I'd expect the {o} at {r}.", "The likeliest place for a {o} is {r}."),
    "go_sweep": ("Next in order: {r}.", "Let me check {r} next.", "I'll go through the receptacles one by one.",
                 "Continuing with {r}.", ""),
    "go_back": ("Maybe I missed it at {r}; going back.", "Let me go back to {r} and check again.", "Back to {r}.",
                "I should double-check {r}."),
    "go_guess": ("The {o} is probably at {r}.", "I'll just try {r}.", "Let me guess {r}.", ""),
    "go_to": ("Now I go to {r}.", "Next, {r}.", "I'll go to {r}.", ""),
    "open": ("{r} is closed; let me open it.", "Open {r}.", "I'll open {r}.", ""),
    "close": ("Not here; I'll close {r}.", "Close it again.", ""),
    "take": ("There is the {o}. Let me take it.", "Found it; I'll take {o}.", "Take {o}.", ""),
    "examine": ("Let me examine {o}.", "Is {o} the right one?", "Let me check {o} closely.", ""),
    "inventory": ("Let me check what I am carrying.", "Do I hold it?", "Check the inventory.", ""),
    "put": ("Now put the {o} in/on {r}.", "Put it there.", "I'll put {o} in/on {r}.", ""),
    "transform": ("Now {v} the {o} with {r}.", "I'll {v} it.", "Use {r} to {v} the {o}.", ""),
    "use": ("Turn on the desklamp.", "Now I use the desklamp.", ""),
    "retry": ("That did not work. Let me try again.", "Wrong command; correcting it.", "Let me fix the command.",
              ""),
}


def _listing(objects: list[str]) -> str:
    if not objects:
        return "nothing"
    items = [f"a {o}" for o in objects]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + ", and " + items[-1]


class _Game:
    """One episode's chat: each command an assistant message, the game's answer a user message."""

    def __init__(self, rng: np.random.Generator, task: dict) -> None:
        self.rng, self.task = rng, task
        self.o = task["obj"]
        self.closed = {r for r in task["receptacles"] if r.split()[0] in _OPENABLE}
        self.contents: dict[str, list[str]] = {}
        self.at: str | None = None
        self.holding: list[str] = []
        self.found: list[str] = []  # where the objects taken were
        self.used: dict[str, set[int]] = {}  # object type -> the numbers given out (unique in a room)
        self.n = self.failures = 0
        self.messages: list[dict] = [
            {"role": "system", "content": pick(rng, (
                "Interact with a household to solve a task. Write a Thought and one Action per turn; "
                "end with Action: finish[...].",
                "You are an agent in a text game. Each turn, think, then give one command as 'Action: ...'. "
                "When the task is done, write Action: finish[done]."))},
            {"role": "user", "content": task["text"]}]

    # -- the chat ---------------------------------------------------------------------------
    def _turn(self, say: str, command: str, observation: str, **fmt: str) -> None:
        self.n += 1
        thought = pick(self.rng, _SAY[say]).format(**{"o": self.o, "r": "", "t": "", "v": "", **fmt})
        head = f"Thought: {thought[0].upper() + thought[1:]}\n" if thought else ""
        self.messages.append({"role": "assistant", "content": f"{head}Action: {command}"})
        self.messages.append({"role": "user", "content": f"Observation: {observation}"})

    def _do(self, say: str, command: str, wrong: tuple[str, ...], observation: str, **fmt: str) -> None:
        """``command``, first written as one of ``wrong`` (answered "Nothing happens.") now and then."""
        if wrong and self.rng.random() < _P_FAIL:
            self.failures += 1
            self._turn(say, pick(self.rng, wrong), _NOTHING, **fmt)
            say = "retry"
        self._turn(say, command, observation, **fmt)

    def _wrong_number(self, thing: str) -> str:
        kind, num = thing.rsplit(" ", 1)
        return f"{kind} {int(num) + int(self.rng.integers(5, 9))}"

    def finish(self, done: bool) -> None:
        if done:
            thought, answer = pick(self.rng, ("I have completed the task.", "The task is done.", "Done.")), "done"
        else:
            thought = pick(self.rng, ("I cannot find it anywhere I tried.", "I give up.", "It is not here."))
            answer = f"I could not find the {self.o}."
        self.messages.append({"role": "assistant", "content": f"Thought: {thought}\nAction: finish[{answer}]"})

    # -- the commands -----------------------------------------------------------------------
    def _seen(self, r: str) -> list[str]:
        """What ``r`` holds: drawn on first sight (never the task's object unless placed)."""
        if r not in self.contents:
            others = [o for o in self.task["others"] if o != self.o]
            k = int(self.rng.integers(0, 4))
            self.contents[r] = [self.fresh(str(o)) for o in self.rng.choice(others, k, replace=False)]
            if r == self.task["lamp"]:
                self.contents[r].insert(0, "desklamp 1")
        return self.contents[r]

    def fresh(self, kind: str) -> str:
        """An object of type ``kind`` with a number no other object of that type has."""
        used = self.used.setdefault(kind, set())
        free = [i for i in range(1, 10) if i not in used]
        number = free[int(self.rng.integers(min(len(free), 5)))]
        used.add(number)
        return f"{kind} {number}"

    def look(self) -> None:
        where = (f"You are facing the {self.at}. Next to it, you see nothing." if self.at else
                 "You are in the middle of a room. Looking quickly around you, you see "
                 f"{_listing(self.task['receptacles'])}.")
        self._turn("look", "look", where)

    def inventory(self) -> None:
        self._turn("inventory", "inventory", f"You are carrying: {_listing(self.holding)}." if self.holding else
                   "You are not carrying anything.")

    def go(self, r: str, say: str = "go") -> None:
        if self.at == r:
            return
        self.at = r
        if r in self.closed:
            obs = f"You arrive at {r}. The {r} is closed."
        else:
            prep = "In it" if r.split()[0] in _OPENABLE else f"On the {r}"
            obs = f"You arrive at {r}. {prep}, you see {_listing(self._seen(r))}."
        self._do(say, f"go to {r}", (f"go to {self._wrong_number(r)}", f"goto {r}", f"go {r}"), obs, r=r,
                 t=r.split()[0])
        if r in self.closed:
            self.open(r)

    def open(self, r: str) -> None:
        self.closed.discard(r)
        self._do("open", f"open {r}", (f"open {r.split()[0]}", f"open {self._wrong_number(r)}"),
                 f"You open the {r}. The {r} is open. In it, you see {_listing(self._seen(r))}.", r=r)

    def close(self, r: str) -> None:
        self.closed.add(r)
        self._do("close", f"close {r}", (f"close {r.split()[0]}",), f"You close the {r}.", r=r)

    def place(self, obj: str, r: str, extra: list[str] | None = None) -> None:
        """Put ``obj`` (and ``extra`` candidates of its type) into ``r`` before it is seen."""
        self._seen(r)
        for x in [obj, *(extra or [])]:
            self.contents[r].insert(int(self.rng.integers(len(self.contents[r]) + 1)), x)

    def examine(self, thing: str) -> None:
        if thing.split()[0] in _ROOMS_TYPES:
            obs = f"On the {thing}, you see {_listing(self._seen(thing))}."
        else:
            obs = pick(self.rng, (f"There's nothing special about {thing}.", f"This is a normal {thing}."))
        self._do("examine", f"examine {thing}", (f"examine {thing.split()[0]}", f"look at {thing}"), obs, o=thing)

    def take(self, obj: str) -> None:
        r = self.at or ""
        self.contents[r].remove(obj)
        self.holding.append(obj)
        self._do("take", f"take {obj} from {r}",
                 (f"take {obj}", f"pick up {obj}", f"take {self._wrong_number(obj)} from {r}"),
                 f"You pick up the {obj} from the {r}.", o=obj, r=r)

    def put(self, obj: str, r: str) -> None:
        self.holding.remove(obj)
        self._seen(r).append(obj)
        self._do("put", f"put {obj} in/on {r}", (f"put {obj} in {r}", f"put {obj} on {r}", f"place {obj} in/on {r}"),
                 f"You put the {obj} in/on the {r}.", o=obj, r=r)

    def transform(self, obj: str) -> None:
        verb, r = _APPLIANCE[self.task["kind"]]
        self.go(r, "go_to")
        self._do("transform", f"{verb} {obj} with {r}",
                 (f"{verb} {obj}", f"{verb} {obj} in {r}", f"{verb} {obj} with {r.split()[0]}"),
                 f"You {verb} the {obj} using the {r}.", o=obj, r=r, v=verb)

    def use_lamp(self) -> None:
        self.go(self.task["lamp"], "go_to")
        self._do("use", "use desklamp 1", ("use desklamp", "turn on desklamp 1", "use lamp 1"),
                 "You turn on the desklamp 1.")



def _likely(rng: np.random.Generator, task: dict) -> list[str]:
    """The room's receptacles in the order of the commonsense prior for the object (likely types
    first, instances of a type shuffled), then the rest shuffled."""
    recs = task["receptacles"]
    ordered = []
    for t in task["prior"]:
        inst = [r for r in recs if r.split()[0] == t]
        ordered += [inst[int(i)] for i in rng.permutation(len(inst))]
    rest = [r for r in recs if r not in ordered]
    return [r for r in ordered + [rest[int(i)] for i in rng.permutation(len(rest))] if r != task["dest"]]


def _k(rng: np.random.Generator, lo: int, hi: int) -> int:
    return int(rng.integers(lo, hi + 1))


def _path(rng: np.random.Generator, strategy: str, task: dict, g: _Game, second: bool, sweep_at: int) -> list[str]:
    """The receptacles a search visits, the object found at the last one."""
    recs = [r for r in task["receptacles"] if r != task["dest"] and r not in g.found]
    if strategy == "sweep":
        k = _k(rng, 1, 3) if second else _k(rng, 2, 7)
        order = [r for r in task["receptacles"] if r != task["dest"]]
        return order[sweep_at:sweep_at + k] or order[-1:]
    likely = [r for r in _likely(rng, task) if r in recs]
    if strategy == "backtrack":
        m = _k(rng, 2, 3) if second else _k(rng, 2, 4)
        new = likely[:1] + [recs[int(i)] for i in rng.permutation(len(recs))]
        fresh = list(dict.fromkeys(new))[:m + 1]
        path = [fresh[0]]
        for i in range(1, m):
            path.append(fresh[i])
            if rng.random() < 0.6 or (i == m - 1 and len(path) == len(set(path))):
                path.append(fresh[int(rng.integers(i))])
        return path + [fresh[m]]
    k = int(rng.choice([1, 2, 3], p=[0.5, 0.35, 0.15]))
    return likely[:k]


def _episode(rng: np.random.Generator, strategy: str, task: dict, stats: list) -> list[dict]:
    g = _Game(rng, task)
    kind, o = task["kind"], task["obj"]
    dest = task["dest"]
    if strategy == "look_first" or rng.random() < _P_LOOK:
        g.look()
    if strategy == "plan_execute":
        steps = {"pick": "find the {o}, take it, put it in/on {d}",
                 "clean": "find the {o}, take it, clean it with sinkbasin 1, put it in/on {d}",
                 "heat": "find the {o}, take it, heat it with microwave 1, put it in/on {d}",
                 "cool": "find the {o}, take it, cool it with fridge 1, put it in/on {d}",
                 "examine": "find the {o}, take it, use the desklamp on {d}",
                 "two": "find a {o}, put it in/on {d}, then find another and put it there too"}[kind]
        first = dest if kind != "examine" else task["lamp"]
        _plan_go(g, first, f"Plan: {steps.format(o=o, d=first)}. First I check {first}.")
    n_objects = 2 if kind == "two" and strategy != "guess_act" else 1
    sweep_at, done = 0, True
    for j in range(n_objects):
        obj = g.fresh(o)
        if strategy == "guess_act":
            found = rng.random() < 0.5  # where it happens to be; else it gives up after 2-3 misses
            n = int(rng.choice([1, 2, 3], p=[0.5, 0.3, 0.2])) if found else _k(rng, 2, 3)
            likely = _likely(rng, task)
            first_guess = likely[0] if rng.random() < 0.7 else likely[int(rng.integers(len(likely)))]
            rest = [r for r in likely if r != first_guess]
            path = [first_guess] + [rest[int(i)] for i in rng.choice(len(rest), n - 1, replace=False)]
        else:
            path = _path(rng, strategy, task, g, j > 0, sweep_at)
            found = True
        if found:
            extra = []
            if strategy == "examine_first":
                extra = [g.fresh(o) for _ in range(_k(rng, 1, 2))]
            g.place(obj, path[-1], extra)
        say = {"sweep": "go_sweep", "guess_act": "go_guess"}.get(strategy, "go_prior")
        seen: set[str] = set()
        for i, r in enumerate(path):
            back = r in seen
            g.go(r, "go_back" if back else say if strategy != "backtrack" or i == 0 else "go")
            seen.add(r)
            if r in task["receptacles"] and r.split()[0] in _OPENABLE and r != path[-1] and not back \
                    and rng.random() < _P_CLOSE:
                g.close(r)
        if strategy == "sweep":
            order = [r for r in task["receptacles"] if r != dest]
            sweep_at = order.index(path[-1]) + 1 if path[-1] in order else 0
        if not found:
            done = False
            break
        if strategy == "examine_first":
            cands = [x for x in g.contents[path[-1]] if x.rsplit(" ", 1)[0] == o]
            looked = [cands[int(i)] for i in rng.permutation(len(cands))][:_k(rng, 1, 2)]
            for x in looked:
                g.examine(x)
            obj = looked[-1]
        g.take(obj)
        if strategy == "check_heavy":
            g.inventory()
        if kind in _APPLIANCE and strategy != "guess_act":
            g.transform(obj)
            if strategy == "check_heavy" and rng.random() < 0.8:
                _check(g, obj)
        if kind == "examine":
            g.use_lamp()
        else:
            g.go(dest, "go_to")
            g.put(obj, dest)
            if strategy == "check_heavy" and rng.random() < 0.8:
                _check(g, dest)
        g.found.append(path[-1])
    if done and rng.random() < _P_EXAMINE_END:
        g.examine(obj)
    g.finish(done)
    stats.append((g.n, g.failures))
    return g.messages


def _check(g: _Game, thing: str) -> None:
    """check_heavy's check after a key step: examine ``thing`` or the inventory, evenly."""
    if g.rng.random() < 0.5:
        g.examine(thing)
    else:
        g.inventory()


def _plan_go(g: _Game, r: str, plan: str) -> None:
    """plan_execute's first command: to the destination (or the desklamp), its plan the thought."""
    start = len(g.messages)
    g.go(r, "go_to")
    for m in g.messages[start:]:
        if m["role"] == "assistant":
            m["content"] = f"Thought: {plan}\n" + m["content"].split("\n")[-1]
            break


def _task(rng: np.random.Generator) -> dict:
    kind = pick(rng, _KINDS)
    rooms = {"clean": ("kitchen", "bathroom"), "heat": ("kitchen",), "cool": ("kitchen",),
             "examine": ("bedroom", "livingroom")}.get(kind, tuple(_ROOMS))
    room = pick(rng, rooms)
    flag = {"clean": "c", "heat": "h", "cool": "k"}.get(kind, "")
    objs = [o for o, (where, _, f) in _OBJECTS.items() if room in where.split() and flag in f]
    obj = pick(rng, objs)
    counts = {t: _k(rng, lo, hi) for t, (lo, hi) in _ROOMS[room].items()}
    types = [list(_ROOMS[room])[int(i)] for i in rng.permutation(len(_ROOMS[room]))]
    receptacles = [f"{t} {i}" for t in types for i in range(1, counts[t] + 1)]
    present = {r.split()[0] for r in receptacles}
    dests = [d for d in _DESTS[room] if d in present and not (kind == "cool" and d == "fridge")]
    if obj in ("mug", "cup") and kind != "two":
        dests += ["coffeemachine"] * 2
    dtype = pick(rng, dests)
    dest_inst = [r for r in receptacles if r.split()[0] == dtype]
    lamp_at = [r for r in receptacles if r.split()[0] in ("desk", "sidetable", "dresser")]
    prior = [t for t in _OBJECTS[obj][1] if t in present]
    text = pick(rng, _TASK_TEXT[kind]).format(o=obj + ("s" if kind == "two" else ""), d=dtype)
    intro = pick(rng, ("You are in the middle of a room. Looking quickly around you, you see {}.",
                       "You are in the middle of a room. Looking around you, you see {}."))
    return {"kind": kind, "room": room, "obj": obj, "receptacles": receptacles, "prior": prior or [types[0]],
            "dest": pick(rng, dest_inst) if kind != "examine" else "", "dtype": dtype,
            "lamp": lamp_at[0] if kind == "examine" else "",
            "others": [o for o, (where, _, _) in _OBJECTS.items() if room in where.split() and o != obj],
            "text": intro.format(", ".join(f"a {r}" for r in receptacles)) + f"\n\nYour task is to: {text}"}


def textgame(*, n_questions: int = 60, n_samples: int = 4, arms: dict[str, dict[str, float]] | None = None,
             random_state: int | np.random.Generator | None = 0) -> World:
    """Generate the household text-game world (ReAct commands inside chat ``messages``).

    Parameters
    ----------
    n_questions, n_samples
        Games (tasks), and episodes per game and arm.
    arms
        Arm name -> strategy mixture (default: ``base`` and ``rl``, which differ only in it).
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.

    Returns
    -------
    World
        Records in format ``react`` and the planted strategies; the truth also holds
        ``n_calls`` and ``n_failures`` of every trajectory.

    Examples
    --------
    >>> w = textgame(n_questions=2, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"]))
    ('react', 4, ['base', 'rl'])
    >>> sorted(w.truth.columns)
    ['arm', 'n_calls', 'n_failures', 'question_id', 'sample_id', 'strategy']
    """
    rng = as_generator(random_state)
    arms = arms or ARMS
    tasks = [(f"textgame-{i:04d}", _task(rng)) for i in range(n_questions)]
    stats: list[tuple[int, int]] = []
    world = chat_world("textgame", "react", rng, tasks, arms, n_samples,
                       lambda r, strategy, task: _episode(r, strategy, task, stats), _SUCCESS)
    world.truth = world.truth.with_columns(n_calls=pl.Series([n for n, _ in stats], dtype=pl.Int64),
                                           n_failures=pl.Series([f for _, f in stats], dtype=pl.Int64))
    return world
