"""A mobile-phone GUI agent world: phone tasks on an Android-like device, ReAct text transcripts.

The user asks for a phone task ("Turn on Do Not Disturb until 7am", "Send Maria the photo from
yesterday", "Add milk to my shopping list in Keep", "Set an alarm for 6:30 on weekdays"). The
agent writes ``Thought`` / ``Action`` / ``Observation`` lines (AndroidWorld-like) with eight
actions: ``open_app[name]``, ``tap[element text or id]``, ``type[text]``,
``swipe[up|down|left|right]``, ``back[]``, ``home[]``, ``read_screen[]`` and
``search_settings[query]``, and ends with ``finish[...]``. Failures are ``Error: ...``
observations (``Error: element 'Save' not found on screen``, ``Error: app not installed:
Keepp``, ``Error: no text field is focused``, ``Error: no settings match 'Do Nto Disturb'``)
after which the agent corrects the call and makes it again with the same action.

Four kinds of task (``toggle``: a setting switched on or off; ``message``: a text sent to a
contact; ``note``: an item added to a list in Keep; ``alarm``: an alarm set). The kind decides
the last taps and typing that complete the task (its *completion*: for a toggle, tap the
setting and its switch; for a message, tap the contact, type, tap Send; for a note, tap the
list, tap Add item, type the item; for an alarm, tap the Alarm tab, tap Add alarm, type the
time, tap OK), whatever the strategy; the strategy decides how the agent gets there.

Seven planted strategies; call counts overlap (0, 3-9, 4-12, 4-10, 6-15, 6-15, 4-11 with the
retries and optional steps):

==================  =======================================================================
``ask_user``        no action: asks the user to clarify, or says it cannot do it
``direct``          ``open_app`` of the task's app, then the completion
``explore``         ``open_app``, one to three ``swipe`` to look around, then the completion
``settings_search`` ``search_settings`` for the setting or the app, ``tap`` the result, then
                    the completion
``careful``         ``open_app`` and every step of the completion, each preceded by a
                    ``read_screen``
``home_retry``      ``home``, ``open_app``; again ``home``, ``open_app`` (two or three
                    openings in all, the app having opened on the wrong screen), then the
                    completion
``quick_settings``  ``swipe[down]`` to pull down the notification shade (optionally a second
                    to expand it), ``tap`` a tile or notification, then the completion
==================  =======================================================================

Optional steps, at fixed rates independent of the arm and of the task, in every strategy
that acts: a popup (``_P_POPUP``) appears on the first screen the agent reaches and is
dismissed with ``back[]`` (in ``careful`` after a ``read_screen``); a final ``read_screen[]``
verifies the result (``_P_VERIFY``). Failures (``_P_FAIL`` per call that can fail:
``open_app``, ``tap``, ``type``, ``search_settings``) occur inside every strategy that acts,
each followed by a corrected call of the same action; they are execution, not strategy. The
words of the thoughts, the element given by text or by id, the apps' names and the typed
text vary inside every strategy. Every strategy is drawn on every kind of task, independently
of the task. The ``rl`` arm differs from ``base`` only in its mixture; success depends only on
the strategy (random within it).

Written from scratch as a held-out world, without reference to how trajectories are segmented
or clustered.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from mechanism.datasets.worlds._base import World, name, pick, planted_world, world_generator

STRATEGIES = ("ask_user", "direct", "explore", "settings_search", "careful", "home_retry", "quick_settings")
KINDS = ("toggle", "message", "note", "alarm")
TOOLS = ("open_app", "tap", "type", "swipe", "back", "home", "read_screen", "search_settings")
ARMS = {
    "base": {"ask_user": 0.12, "direct": 0.25, "explore": 0.15, "settings_search": 0.1, "careful": 0.1,
             "home_retry": 0.15, "quick_settings": 0.13},
    "rl": {"ask_user": 0.04, "direct": 0.12, "explore": 0.12, "settings_search": 0.17, "careful": 0.28,
           "home_retry": 0.07, "quick_settings": 0.2},
}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"ask_user": 0.05, "direct": 0.55, "explore": 0.6, "settings_search": 0.65, "careful": 0.8,
            "home_retry": 0.5, "quick_settings": 0.6}
#: the chance that a call which can fail does; a failure is followed by a corrected call of the same action
_P_FAIL = 0.15
#: the optional steps' fixed rates: a popup dismissed with back[]; a final read_screen[] to verify
_P_POPUP = 0.2
_P_VERIFY = 0.3
#: actions that can fail
CAN_FAIL = frozenset({"open_app", "tap", "type", "search_settings"})
#: the start of every failed call's observation
FAILED = "Error:"

_APPS = {"toggle": ("Settings",), "message": ("Messages", "Google Messages"),
         "note": ("Keep", "Google Keep", "Keep Notes"), "alarm": ("Clock", "Alarm & Clock")}
_TOGGLES = (("Do Not Disturb", "Sound & vibration", "switch_dnd"), ("Wi-Fi", "Network & internet", "switch_wifi"),
            ("Bluetooth", "Connected devices", "switch_bt"), ("Dark theme", "Display", "switch_dark"),
            ("Battery Saver", "Battery", "switch_saver"), ("Airplane mode", "Network & internet", "switch_airplane"))
_LISTS = ("Shopping list", "Groceries", "To do", "Packing", "Weekend")
_ITEMS = ("milk", "eggs", "batteries", "sunscreen", "oat milk", "coffee filters", "bin bags", "tomatoes")
_MESSAGES = ("the photo from yesterday", "that I'm running late", "happy birthday", "the address of the cafe",
             "that dinner is at eight")
_TIMES = ("6:30", "7:00", "5:45", "8:15", "6:00", "9:30")
_DAYS = ("on weekdays", "for tomorrow", "on Saturday", "every day", "on Monday")
_POPUPS = ("'Rate this app?' [Not now] [Rate]", "'What's new' [Got it]", "'Allow notifications?' [Allow] [Don't allow]",
           "'Sign in to back up' [Skip] [Sign in]")

_SAY = {
    "open_app": ("I'll open {x}.", "Opening {x} first.", "Let me launch {x}.", "{x} is the app for this."),
    "tap": ("Tapping {x}.", "Now I tap {x}.", "{x} is on screen; tap it.", "Select {x}."),
    "type": ("Typing the text.", "Now enter {x}.", "I type {x} into the field.", "Fill in {x}."),
    "swipe": ("Let me swipe {x} to see more.", "Scrolling {x}.", "Swipe {x} to look around.",
              "Not visible yet; swipe {x}."),
    "back": ("A popup is in the way; dismiss it.", "Close this dialog first.", "Going back to get rid of the popup."),
    "home": ("Back to the home screen.", "Let me go home first.", "Start from the home screen."),
    "read_screen": ("Let me read the screen.", "What is on screen now?", "Check the screen before the next step.",
                    "Reading the current screen."),
    "search_settings": ("I'll search the settings for {x}.", "Search settings: {x}.",
                        "Quickest is the settings search."),
}
_RETRY = ("That failed; fix it and try again.", "Wrong element; try again.", "Let me correct that.",
          "The call did not work, retrying with the right value.")


def _typo(rng: np.random.Generator, text: str) -> str:
    """``text`` misspelt: a letter doubled, or two neighbours swapped."""
    if len(text) < 3:
        return text + text[-1]
    i = int(rng.integers(1, len(text) - 1))
    if rng.random() < 0.5 and text[i] != text[i + 1]:
        return text[:i] + text[i + 1] + text[i] + text[i + 2:]
    return text[:i] + text[i] + text[i:]


def _elements(rng: np.random.Generator, *labels: str) -> str:
    """A screen's element list, with a few made-up extras."""
    extra = [name(rng) for _ in range(int(rng.integers(1, 3)))]
    return " ".join(f"[{e}]" for e in [*labels, *extra])


class _Phone:
    """One ReAct transcript: numbered thought / action / observation rounds, failures retried."""

    def __init__(self, rng: np.random.Generator, task: dict, careful: bool) -> None:
        self.rng, self.task, self.careful = rng, task, careful
        self.lines = [f"Question: {task['text']}"]
        self.n = 0
        self.failures = 0
        self.screen = "Home screen"

    def _round(self, tool: str, arg: str, observation: str, thought: str | None = None) -> None:
        self.n += 1
        said = thought or pick(self.rng, _SAY[tool]).format(x=arg or "it")
        self.lines += [f"Thought {self.n}: {said}", f"Action {self.n}: {tool}[{arg}]",
                       f"Observation {self.n}: {observation}"]

    def _broken(self, tool: str, arg: str) -> tuple[str, str]:
        """A wrong first version of the call and the error it gets."""
        rng = self.rng
        if tool == "open_app":
            bad = _typo(rng, arg)
            return bad, pick(rng, (f"Error: app not installed: {bad}", f"Error: no app named '{bad}'"))
        if tool == "tap":
            bad = pick(rng, ("Save", "Done", "OK", "Next", _typo(rng, arg)))
            bad = bad if bad != arg else _typo(rng, arg)
            return bad, pick(rng, (f"Error: element '{bad}' not found on screen", f"Error: no element matches '{bad}'",
                                   f"Error: element '{bad}' is not clickable"))
        if tool == "type":
            return arg, pick(rng, ("Error: no text field is focused", "Error: input method not ready"))
        bad = _typo(rng, arg)
        return bad, f"Error: no settings match '{bad}'"

    def act(self, tool: str, arg: str, observation: str, screen: str | None = None,
            thought: str | None = None) -> None:
        """One step of the plan: in ``careful`` a ``read_screen`` first; where the action can
        fail and does, a wrong call answered with an error, then the corrected call."""
        if self.careful:
            self.read()
        if tool in CAN_FAIL and self.rng.random() < _P_FAIL:
            bad, err = self._broken(tool, arg)
            self._round(tool, bad, err)
            self.failures += 1
            self._round(tool, arg, observation, thought=pick(self.rng, _RETRY))
        else:
            self._round(tool, arg, observation, thought=thought)
        self.screen = screen or self.screen

    def read(self) -> None:
        self._round("read_screen", "", f"{self.screen}: {_elements(self.rng, 'Back', 'Home')}")

    def popup(self) -> None:
        """The optional popup on the first screen reached, dismissed with ``back[]``."""
        if self.rng.random() < _P_POPUP:
            self.lines[-1] += f" A dialog is shown: {pick(self.rng, _POPUPS)}"
            if self.careful:
                self.read()
            self._round("back", "", f"Dialog dismissed. {self.screen}")

    def verify(self) -> None:
        if self.rng.random() < _P_VERIFY:
            self._round("read_screen", "", f"{self.screen}: {self.task['done']}",
                        thought=pick(self.rng, ("Let me check it worked.", "Verify the result on screen.",
                                                "One last look to confirm.")))

    def finish(self, text: str) -> None:
        self.n += 1
        self.lines += [f"Thought {self.n}: {pick(self.rng, ('Done.', 'That is it.', 'The task is complete.'))}",
                       f"Action {self.n}: finish[{text}]"]

    def text(self) -> str:
        return "\n".join(self.lines)


def _el(rng: np.random.Generator, text: str, rid: str) -> str:
    """An element given by its text or by its resource id (the wording varies)."""
    return text if rng.random() < 0.6 else f"id/{rid}"


def _open(p: _Phone, app: str) -> None:
    p.act("open_app", app, f"{app} opened. {_elements(p.rng, 'Search')}", screen=f"{app} main screen")


def _completion(p: _Phone) -> None:
    """The last taps and typing that complete the task; the kind decides them."""
    rng, t = p.rng, p.task
    if t["kind"] == "toggle":
        p.act("tap", _el(rng, t["setting"], "title"), f"{t['setting']} page. [{t['setting']}] switch is "
              f"{'off' if t['on'] else 'on'}", screen=f"{t['setting']} page")
        p.act("tap", _el(rng, pick(rng, (f"Use {t['setting']}", "Turn on now" if t["on"] else "Turn off now")),
                         t["switch"]), f"{t['setting']} is now {'on' if t['on'] else 'off'}")
    elif t["kind"] == "message":
        p.act("tap", _el(rng, t["contact"], "conversation"), f"Conversation with {t['contact']}. [Text message]",
              screen=f"Conversation with {t['contact']}")
        words = pick(rng, ("Here it is", "Hi", "Hey", "Quick note")) + f": {t['what']}"
        p.act("type", words, f"Text field: {words}")
        p.act("tap", _el(rng, "Send", "send_button"), "Message sent")
    elif t["kind"] == "note":
        p.act("tap", _el(rng, t["list"], "note_title"), f"{t['list']}: {_elements(rng, 'Add item')}",
              screen=f"{t['list']} note")
        p.act("tap", _el(rng, pick(rng, ("Add item", "+ List item")), "add_item"), "New list item, cursor in field")
        p.act("type", pick(rng, (t["item"], t["item"].capitalize())), f"Item added to {t['list']}")
    else:
        p.act("tap", _el(rng, "Alarm", "tab_alarm"), f"Alarms: {_elements(rng, '+')}", screen="Alarm tab")
        p.act("tap", _el(rng, pick(rng, ("+", "Add alarm")), "fab"), "Time picker. [Keyboard]")
        p.act("type", pick(rng, (f"{t['time']} AM", f"0{t['time']}" if len(t["time"]) == 4 else t["time"],
                                 t["time"])), "Time entered")
        p.act("tap", _el(rng, "OK", "ok_button"), f"Alarm set for {t['time']} AM {t['days']}")


def _episode(rng: np.random.Generator, strategy: str, task: dict) -> tuple[str, int, int]:
    """(transcript, tool calls, failed calls) of one episode."""
    p = _Phone(rng, task, careful=strategy == "careful")
    app = pick(rng, _APPS[task["kind"]])
    if strategy == "ask_user":
        p.n += 1
        thought = pick(rng, ("I cannot operate this phone myself.", "The request is ambiguous.",
                             "Better to check with the user.", f"I am not sure {app} is the right app here.",
                             "I should ask before changing anything on the phone.",
                             "There is not enough detail to act on."))
        reply = pick(rng, ("Which one do you mean exactly? Please confirm and I will do it.",
                           f"I am not able to change this on your phone; you can do it in {app}.",
                           "Could you tell me more before I start?",
                           f"Do you want me to use {app} for this?",
                           "Sorry, I can't do that from here."))
        p.lines += [f"Thought 1: {thought}", f"Action 1: finish[{reply}]"]
        return p.text(), 0, 0
    if strategy in ("direct", "explore", "careful"):
        _open(p, app)
        p.popup()
        if strategy == "explore":
            for _ in range(int(rng.choice([1, 2, 3], p=[0.4, 0.35, 0.25]))):
                d = pick(rng, ("down", "up", "left", "right") if task["kind"] == "alarm" else ("down", "up"))
                p.act("swipe", d, f"Scrolled {d}. {_elements(rng)}")
    elif strategy == "settings_search":
        query = task["setting"] if task["kind"] == "toggle" else pick(rng, (app, f"{app} app", f"apps {app}"))
        if rng.random() < 0.4:
            query = query.lower()
        hit = task["setting"] if task["kind"] == "toggle" else app
        p.act("search_settings", query, f"Results: {_elements(rng, hit)}",
              screen="Settings search results")
        target = task["setting"] if task["kind"] == "toggle" else f"Open {app}"
        p.act("tap", target, f"{app} opened", screen=f"{app} main screen")
        p.popup()
    elif strategy == "home_retry":
        for k in range(int(rng.choice([2, 3], p=[0.6, 0.4]))):
            p.act("home", "", "Home screen", screen="Home screen")
            last = "main screen" if k else pick(rng, ("Archive", "Trash", "an old draft", "the About page"))
            p.act("open_app", app, f"{app} opened on {last}. {_elements(rng)}", screen=f"{app} {last}")
        p.popup()
    else:  # quick_settings: the notification shade
        p.act("swipe", "down", f"Notification shade. {_elements(rng, 'Internet', 'Bluetooth')}",
              screen="Notification shade", thought=pick(rng, ("Pull down the notification shade.",
                                                              "The shortcut is in the shade; swipe down.",
                                                              "Open the quick settings from the top.")))
        if rng.random() < 0.5:
            p.act("swipe", "down",
                  f"Quick settings expanded. {_elements(rng, 'Do Not Disturb', 'Dark theme', 'Alarm')}")
        tile = {"toggle": task.get("setting", ""), "message": f"{task.get('contact', '')}: new message",
                "note": "Keep reminder", "alarm": "Next alarm"}[task["kind"]]
        p.act("tap", tile, f"{app} opened from the shade", screen=f"{app} main screen")
        p.popup()
    _completion(p)
    p.verify()
    p.finish(pick(rng, (task["done"], f"Done: {task['done'].lower()}", "Finished the task on the phone.")))
    return p.text(), p.n - 1, p.failures


def _task(rng: np.random.Generator, kind: str) -> dict:
    t: dict = {"kind": kind}
    if kind == "toggle":
        t["setting"], t["section"], t["switch"] = _TOGGLES[int(rng.integers(len(_TOGGLES)))]
        t["on"] = bool(rng.random() < 0.7)
        state = "on" if t["on"] else "off"
        t["text"] = pick(rng, (f"Turn {state} {t['setting']} until {pick(rng, _TIMES)}am.",
                               f"Please switch {t['setting']} {state}.",
                               f"Can you set {t['setting']} to {state} for me?"))
        t["done"] = f"{t['setting']} is {state}"
    elif kind == "message":
        t["contact"], t["what"] = name(rng), pick(rng, _MESSAGES)
        t["text"] = pick(rng, (f"Send {t['contact']} {t['what']}.", f"Text {t['contact']} {t['what']}, please.",
                               f"Message {t['contact']} on Messages: {t['what']}."))
        t["done"] = f"Message sent to {t['contact']}"
    elif kind == "note":
        t["list"], t["item"] = pick(rng, _LISTS), pick(rng, _ITEMS)
        t["text"] = pick(rng, (f"Add {t['item']} to my {t['list'].lower()} in Keep.",
                               f"Put {t['item']} on the {t['list']} note.",
                               f"In Keep, add {t['item']} to {t['list']}."))
        t["done"] = f"Added {t['item']} to {t['list']}"
    else:
        t["time"], t["days"] = pick(rng, _TIMES), pick(rng, _DAYS)
        t["text"] = pick(rng, (f"Set an alarm for {t['time']} {t['days']}.", f"Wake me at {t['time']} {t['days']}.",
                               f"I need an alarm at {t['time']} am {t['days']}."))
        t["done"] = f"Alarm set for {t['time']} {t['days']}"
    return t


def gui(*, n_questions: int = 60, n_samples: int = 4, arms: dict[str, dict[str, float]] | None = None,
        random_state: int | np.random.Generator | None = 0) -> World:
    """Generate the mobile-phone GUI agent world (ReAct text records).

    Parameters
    ----------
    n_questions, n_samples
        Phone tasks (each of a kind drawn at random), and episodes per task and arm.
    arms
        Arm name -> strategy mixture (default: ``base`` and ``rl``, which differ only in it).
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.

    Returns
    -------
    World
        Records in format ``react`` (``arm, question_id, sample_id, gold, correct, text``) and
        the truth ``arm, question_id, sample_id, strategy, kind, n_calls, n_failures, correct``.

    Examples
    --------
    >>> w = gui(n_questions=2, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"]))
    ('react', 4, ['base', 'rl'])
    >>> w.runs["n_rounds"].to_list() == w.join_truth()["n_calls"].to_list()
    True
    """
    rng = world_generator(random_state)
    tasks = []
    for i in range(n_questions):
        t = _task(rng, pick(rng, KINDS))
        tasks.append((f"gui-{i:04d}", t))

    def record(rng: np.random.Generator, arm: str, qid: str, s: int, strategy: str, task: dict) -> tuple[dict, tuple]:
        text, n_calls, n_failures = _episode(rng, strategy, task)
        correct = bool(rng.random() < _SUCCESS[strategy])
        return ({"arm": arm, "question_id": qid, "sample_id": s, "gold": [task["done"]], "correct": correct,
                 "text": text}, (task["kind"], n_calls, n_failures, correct))

    return planted_world("gui", "react", rng, tasks, arms or ARMS, n_samples, record, _SUCCESS,
                         truth_schema={"kind": pl.String, "n_calls": pl.Int64, "n_failures": pl.Int64,
                                       "correct": pl.Boolean})
