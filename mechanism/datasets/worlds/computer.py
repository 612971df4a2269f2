"""A computer-use agent world: one ``computer`` tool on a Linux desktop (Anthropic computer-use
style), ATIF documents.

The user asks for one thing in a desktop application ("Save the open document as
``q3_budget.odt``", "Bookmark this page as *Release notes*", "Rename ``draft.txt`` to
``notes.txt``"). The agent has ONE tool, ``computer``, whose ``action`` field names the action:
``screenshot``, ``left_click`` (``coordinate``), ``mouse_move`` (``coordinate``), ``type``
(``text``), ``key`` (``text``: ``ctrl+shift+s``, ``Return``, ``Escape``), ``scroll``
(``coordinate``, ``scroll_direction``, ``scroll_amount``) and ``wait`` (``duration``). Every
trajectory is one ATIF v1.4 document (Harbor RFC 0001) with the arm in ``agent.model_name`` and
the question id, sample id, gold and correctness in the root ``extra`` object. A screenshot's
result is a text part (what is on the screen, with the coordinates of its controls) and an
image part; any other action's result says what changed (a menu opened with its items, a
dialog with its fields, a tooltip); an action that had no effect is answered with one fixed
text, :data:`NOTHING`.

Seven planted strategies (actions without failures and optional steps; *fill* is a click on
the dialog's field, ``type`` of the value, and a click on its button):

======================  ===================================================================
``keyboard_shortcuts``  the feature's shortcut (``key``), ``type`` the value, ``key Return``
                        (optionally a screenshot first)
``menu_navigation``     screenshot, click the menu, click its item, fill
``search_commands``     screenshot, click the application's search box, ``type`` the
                        feature's name, ``key Return``, fill
``explore_menus``       screenshot, one or two wrong menus opened and closed (click,
                        ``key Escape``), the right menu, its item, fill
``hover_toolbar``       screenshot, ``mouse_move`` over one to three toolbar icons reading
                        their tooltips, click the right one, fill
``verify_each``         the menu path and fill with a screenshot after every action
``blind_wait``          no screenshot at all: click the menu, ``wait``, click the item,
                        ``wait``, click the field, ``type``, ``key Return``, ``wait``
======================  ===================================================================

Failures are execution, not strategy: a click may miss its target (a coordinate off by tens
of pixels) and a key press may land nowhere (a shortcut the application does not bind, a
``Return`` while the focus is elsewhere), each with probability :data:`_P_FAIL`; the answer
is :data:`NOTHING`, and the same action follows, corrected (the right coordinate, the right
shortcut; a ``Return`` pressed again). The optional steps happen at fixed rates whatever the
arm: ``key ctrl+a`` before typing the value (:data:`_P_SELECT_ALL`, every strategy), a
``scroll`` down a long menu before clicking its item (:data:`_P_SCROLL`, the strategies that
open the menu), a final screenshot to check the result (:data:`_P_FINAL_SHOT`, every
strategy that takes screenshots but ``verify_each``, which always ends on one) and the first
screenshot of ``keyboard_shortcuts`` (:data:`_P_FIRST_SHOT`). Applications, features, values,
coordinates and the assistant's words vary inside every strategy. The ``rl`` arm differs
from ``base`` only in its mixture; success is drawn at the strategy's rate (random within it).

The truth carries, beside ``strategy``, ``kind`` (the application), ``n_calls`` (computer
calls), ``n_failures`` (actions answered :data:`NOTHING`), ``n_screenshots`` and ``correct``.

Written from scratch as a held-out world, without reference to how trajectories are segmented
or clustered.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from mechanism.core.options import RandomState, as_generator
from mechanism.datasets.worlds._base import World, pick, planted_world, word

STRATEGIES = ("keyboard_shortcuts", "menu_navigation", "search_commands", "explore_menus", "hover_toolbar",
              "verify_each", "blind_wait")
ARMS = {
    "base": {"keyboard_shortcuts": 0.1, "menu_navigation": 0.24, "search_commands": 0.1, "explore_menus": 0.18,
             "hover_toolbar": 0.12, "verify_each": 0.08, "blind_wait": 0.18},
    "rl": {"keyboard_shortcuts": 0.24, "menu_navigation": 0.14, "search_commands": 0.16, "explore_menus": 0.06,
           "hover_toolbar": 0.08, "verify_each": 0.24, "blind_wait": 0.08},
}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"keyboard_shortcuts": 0.7, "menu_navigation": 0.6, "search_commands": 0.55, "explore_menus": 0.45,
            "hover_toolbar": 0.5, "verify_each": 0.75, "blind_wait": 0.3}
#: the environment's answer to an action that had no effect (always this text)
NOTHING = "The action produced no visible change."
#: the chance that a click or a key press has no effect (every strategy and arm)
_P_FAIL = 0.12
_P_SELECT_ALL = 0.35
_P_SCROLL = 0.3
_P_FINAL_SHOT = 0.4
_P_FIRST_SHOT = 0.6
_P_SECOND_WRONG_MENU = 0.5
_P_MORE_HOVER = 0.5

_MENUS = {"writer": ("File", "Edit", "View", "Insert", "Format", "Styles", "Table", "Tools", "Help"),
          "calc": ("File", "Edit", "View", "Insert", "Format", "Sheet", "Data", "Tools", "Help"),
          "firefox": ("File", "Edit", "View", "History", "Bookmarks", "Tools", "Help"),
          "files": ("Files", "Edit", "View", "Go", "Bookmarks", "Help"),
          "thunderbird": ("File", "Edit", "View", "Go", "Message", "Tools", "Help")}
_TITLES = {"writer": "{doc}.odt - LibreOffice Writer", "calc": "{doc}.ods - LibreOffice Calc",
           "firefox": "{page} - Mozilla Firefox", "files": "{folder} - Files", "thunderbird": "Inbox - Thunderbird"}
_OTHER_ITEMS = ("New", "Open...", "Recent Documents", "Close", "Save", "Export...", "Print...", "Properties...",
                "Undo", "Redo", "Cut", "Copy", "Paste", "Select All", "Zoom", "Toolbars", "Full Screen",
                "Preferences...", "Options...", "Show History", "Page Style...", "Character...", "Paragraph...")
_TOOLTIPS = ("New", "Open", "Save", "Print", "Undo", "Redo", "Cut", "Copy", "Paste", "Find", "Zoom", "Insert Image",
             "Insert Table", "Spelling", "Reload", "Home", "Downloads")
# the features: app, feature name (tooltip, search term), menu, item, shortcut, a shortcut the
# app does not bind, dialog, field, the value's template, the button and what the status says
_FEATURES = (
    ("writer", "Save As", "File", "Save As...", "ctrl+shift+s", "ctrl+alt+s", "Save As", "File name",
     "{w}_{n}.odt", "Save", "Saved {value}"),
    ("writer", "Find & Replace", "Edit", "Find & Replace...", "ctrl+h", "ctrl+r", "Find & Replace", "Replace",
     "{w}", "Replace All", "{n} replacements made"),
    ("writer", "Go to Page", "Edit", "Go to Page...", "ctrl+g", "ctrl+shift+g", "Go to Page", "Page", "{n}", "OK",
     "Page {value} of {m}"),
    ("calc", "Format Cells", "Format", "Cells...", "ctrl+1", "ctrl+shift+1", "Format Cells", "Decimal places",
     "{d}", "OK", "Cells formatted"),
    ("calc", "Insert Comment", "Insert", "Comment", "ctrl+alt+c", "ctrl+shift+m", "Comment", "Comment text",
     "Check {w} total", "OK", "Comment added to {cell}"),
    ("calc", "Rename Sheet", "Sheet", "Rename Sheet...", "alt+shift+r", "ctrl+shift+r", "Rename Sheet", "Name",
     "{W}{n}", "OK", "Sheet renamed to {value}"),
    ("firefox", "Bookmark Current Tab", "Bookmarks", "Bookmark Current Tab...", "ctrl+d", "ctrl+b",
     "Add Bookmark", "Name", "{W} notes", "Save", "Bookmark '{value}' saved"),
    ("firefox", "Find in Page", "Edit", "Find in Page...", "ctrl+f", "ctrl+shift+f", "Find in page", "Find",
     "{w}", "Highlight All", "{n} matches"),
    ("files", "Rename", "Edit", "Rename...", "F2", "ctrl+F2", "Rename File", "File Name", "{w}_{n}.txt", "Rename",
     "Renamed to {value}"),
    ("files", "New Folder", "Files", "New Folder...", "ctrl+shift+n", "ctrl+alt+n", "New Folder", "Folder name",
     "{W} {n}", "Create", "Folder '{value}' created"),
    ("thunderbird", "Find Messages", "Edit", "Find...", "ctrl+shift+k", "ctrl+alt+k", "Quick Filter",
     "Filter these messages", "{W}", "Search", "{n} messages match"),
)
KINDS = tuple(dict.fromkeys(f[0] for f in _FEATURES))
_SYSTEM = ("You control a Linux desktop through the `computer` tool (screen 1280x800). Complete the user's "
           "request, then say what you did.",
           "You are a computer-use agent. Use computer(action=...) to look at the screen and act on it. "
           "Stop when the task is done and report.",
           "Operate the desktop with the computer tool: screenshot, clicks, typing, key presses. Finish with a "
           "short report.")
_ASK = ("In {app_name}, {verb} {value!r}.", "Please {verb} {value!r} ({app_name} is open).",
        "{app_name} is open on the screen. Could you {verb} {value!r}?")
_VERBS = {"Save As": "save the open document as", "Find & Replace": "replace every '{old}' with",
          "Go to Page": "go to page", "Format Cells": "set the selected cells' decimal places to",
          "Insert Comment": "add a comment to the selected cell reading",
          "Rename Sheet": "rename the current sheet to", "Bookmark Current Tab": "bookmark this page as",
          "Find in Page": "highlight every occurrence on the page of", "Rename": "rename the selected file to",
          "New Folder": "create a new folder named", "Find Messages": "show only the messages matching"}
_APP_NAMES = {"writer": "LibreOffice Writer", "calc": "LibreOffice Calc", "firefox": "Firefox", "files": "Files",
              "thunderbird": "Thunderbird"}
_SAY = {
    "screenshot": ("Let me take a screenshot.", "Let me see the screen.", "Checking the screen.",
                   "Taking a screenshot to see where things are."),
    "menu": ("Opening the {menu} menu.", "Clicking {menu}.", "The option should be under {menu}.",
             "Let me open {menu}."),
    "wrong_menu": ("Maybe it is under {menu}.", "Let me try the {menu} menu.", "Checking {menu}.",
                   "Is it in {menu}?"),
    "escape": ("Not here; closing the menu.", "Not in this one.", "Closing it.", "Wrong menu."),
    "item": ("Clicking {item}.", "There it is: {item}.", "Selecting {item}.", "Choosing {item}."),
    "scroll": ("The menu is long; scrolling down.", "Scrolling to see more items.", "Let me scroll the menu.",
               "Scrolling down."),
    "field": ("Clicking the {field} field.", "Focusing {field}.", "Clicking into {field}.", "Selecting the field."),
    "select_all": ("Selecting the existing text.", "Select all first.", "Clearing the field.", "Ctrl+A first."),
    "type": ("Typing the value.", "Entering {value}.", "Typing it in.", "Now the value."),
    "button": ("Clicking {button}.", "Confirming with {button}.", "Pressing the {button} button.", "{button}."),
    "return": ("Pressing Enter.", "Confirming.", "Enter to confirm.", "Submitting with Return."),
    "shortcut": ("Using the keyboard shortcut.", "{shortcut} should open it.", "Pressing {shortcut}.",
                 "Shortcut: {shortcut}."),
    "search": ("Clicking the search box.", "Let me search for the command.", "Using the search field.",
               "Searching for the feature."),
    "search_type": ("Typing the feature's name.", "Searching '{term}'.", "Typing {term}.", "Looking for {term}."),
    "hover": ("Hovering over this icon to see what it does.", "What is this button?", "Let me check the tooltip.",
              "Hovering here."),
    "icon": ("That's the one; clicking it.", "Clicking the {feature} icon.", "Found it.", "Clicking the icon."),
    "wait": ("Waiting for the window.", "Giving it a second.", "Waiting.", "Let it load."),
    "verify": ("Let me check the result.", "Verifying with a screenshot.", "Did it work?", "Checking."),
    "retry": ("Nothing happened; trying again.", "That missed. Again.", "No effect; retrying.",
              "Let me try that again."),
}


def _jitter(rng: np.random.Generator, x: int, y: int, d: int = 3) -> list[int]:
    return [int(x + rng.integers(-d, d + 1)), int(y + rng.integers(-d, d + 1))]


class _Desktop:
    """One ATIF document being written: steps numbered, actions answered, failures retried."""

    def __init__(self, rng: np.random.Generator, task: dict, session: str) -> None:
        self.rng, self.task, self.session = rng, task, session
        self.steps: list[dict[str, Any]] = [{"step_id": 1, "source": "system", "message": pick(rng, _SYSTEM)},
                                            {"step_id": 2, "source": "user", "message": task["text"]}]
        self.n_calls = self.n_failures = self.n_screenshots = 0
        self.state = "start"

    def _say(self, key: str, menu: str | None = None) -> str:
        t = self.task
        return pick(self.rng, _SAY[key]).format(menu=menu or t["menu"], item=t["item"], field=t["field"],
                                                value=t["value"], button=t["button"], shortcut=t["shortcut"],
                                                term=t["term"], feature=t["feature"])

    def _act(self, message: str, args: dict[str, Any], result: Any) -> None:
        self.n_calls += 1
        cid = f"toolu_{self.n_calls:02d}{int(self.rng.integers(16 ** 10)):010x}"
        self.steps.append({"step_id": len(self.steps) + 1, "source": "agent", "message": message,
                           "tool_calls": [{"tool_call_id": cid, "function_name": "computer", "arguments": args}],
                           "observation": {"results": [{"source_call_id": cid, "content": result}]}})

    def act(self, key: str, args: dict[str, Any], result: Any, *, miss: dict[str, Any] | None = None,
            menu: str | None = None) -> None:
        """The action; where it can fail (``miss``: the arguments it was first made with) and does
        (:data:`_P_FAIL`), first that attempt answered :data:`NOTHING`, then the action
        (``menu``: the menu the assistant's words name, default the task's)."""
        message = self._say(key, menu)
        if miss is not None and self.rng.random() < _P_FAIL:
            self.n_failures += 1
            self._act(message, dict(args, **miss), NOTHING)
            message = self._say("retry")
        self._act(message, args, result)

    def click(self, key: str, at: list[int], result: str, *, menu: str | None = None) -> None:
        rng = self.rng
        dx = int(pick(rng, (-1, 1))) * int(rng.integers(25, 70))
        dy = int(pick(rng, (-1, 1))) * int(rng.integers(15, 40))
        self.act(key, {"action": "left_click", "coordinate": at},
                 result, miss={"coordinate": [max(0, at[0] + dx), max(0, at[1] + dy)]}, menu=menu)

    def key(self, key: str, combo: str, result: str, *, wrong: str | None = None) -> None:
        self.act(key, {"action": "key", "text": combo}, result, miss={"text": wrong or combo})

    # the moves -----------------------------------------------------------------------------------

    def screenshot(self, key: str = "screenshot") -> None:
        self.n_screenshots += 1
        self.act(key, {"action": "screenshot"},
                 [{"type": "text", "text": _screen(self.rng, self.task, self.state)},
                  {"type": "image", "source": {"media_type": "image/png",
                                               "path": f"screenshots/{self.session}/{self.n_calls + 1:03d}.png"}}])

    def open_menu(self, menu: str, key: str = "menu") -> None:
        t = self.task
        self.click(key, _jitter(self.rng, *t["menu_xy"][menu]), _menu_text(t, menu), menu=menu)
        self.state = "menu"

    def escape(self) -> None:
        self.key("escape", "Escape", "Menu closed.")
        self.state = "start"

    def scroll_menu(self) -> None:
        t = self.task
        x, y = t["item_xy"]
        self.act("scroll", {"action": "scroll", "coordinate": _jitter(self.rng, x, y - 60),
                            "scroll_direction": "down", "scroll_amount": int(pick(self.rng, (2, 3, 5)))},
                 f"Menu '{t['menu']}' scrolled down: {t['item']} ({x}, {y}) and "
                 f"{pick(self.rng, _OTHER_ITEMS)} ({x}, {y + 22}) now visible.")

    def open_item(self) -> None:
        t = self.task
        self.click("item", _jitter(self.rng, *t["item_xy"]), _dialog_text(t))
        self.state = "dialog"

    def fill(self, *, confirm: str = "button", after: str | None = None) -> None:
        """Click the field, (optionally) select all, type the value, then the button or Return
        (``after``: a move between the typing and the confirmation)."""
        t, rng = self.task, self.rng
        self.click("field", _jitter(rng, *t["field_xy"]), f"Focus: text field '{t['field']}' {tuple(t['field_xy'])}.")
        self.value()
        if after == "screenshot":
            self.screenshot("verify")
        elif after == "wait":
            self.wait()
        self.confirm(confirm)

    def value(self) -> None:
        t = self.task
        if self.rng.random() < _P_SELECT_ALL:
            self.key("select_all", "ctrl+a", f"Selected all text in '{t['field']}'.")
        self.act("type", {"action": "type", "text": t["value"]}, f"Typed {len(t['value'])} characters into "
                                                                  f"'{t['field']}'.")
        self.state = "typed"

    def confirm(self, how: str) -> None:
        t = self.task
        done = f"Dialog '{t['dialog']}' closed. Status bar: {t['status']}."
        if how == "button":
            self.click("button", _jitter(self.rng, *t["button_xy"]), done)
        else:
            self.key("return", "Return", done)
        self.state = "done"

    def wait(self) -> None:
        d = int(pick(self.rng, (1, 1, 2, 3)))
        self.act("wait", {"action": "wait", "duration": d}, f"Waited {d} s.")


def _screen(rng: np.random.Generator, t: dict, state: str) -> str:
    """The text part of a screenshot: the window and the controls visible in ``state``."""
    menus = ", ".join(f"{m} {tuple(xy)}" for m, xy in t["menu_xy"].items())
    head = f"Window: {t['title']} (maximised, 1280x800). Menu bar: {menus}."
    bar = (f" Toolbar: {len(t['icons'])} icons at y=48, x={t['icons'][0][1]}..{t['icons'][-1][1]}. "
           f"Search box {tuple(t['search_xy'])}.")
    if state == "start":
        return head + bar + f" {pick(rng, ('Document area in focus.', 'Nothing selected.', 'Main view in focus.'))}"
    if state == "menu":
        return head + f" Open menu: {_menu_text(t, t['menu'])}"
    if state in ("dialog", "typed"):
        filled = f" '{t['field']}' contains {t['value']!r}." if state == "typed" else ""
        return head + f" Dialog on top: {_dialog_text(t)}{filled}"
    return head + bar + f" Status bar: {t['status']}."


def _menu_text(t: dict, menu: str) -> str:
    x, _ = t["menu_xy"][menu]
    items = t["menu_items"][menu]
    return (f"Menu '{menu}' opened: " +
            ", ".join(f"{item} ({x + 40}, {40 + 22 * i})" for i, item in enumerate(items)) + ".")


def _dialog_text(t: dict) -> str:
    return (f"Dialog '{t['dialog']}' opened. Fields: {t['field']} {tuple(t['field_xy'])}; buttons: Cancel "
            f"{tuple(t['cancel_xy'])}, {t['button']} {tuple(t['button_xy'])}.")


def _episode(rng: np.random.Generator, strategy: str, task: dict, session: str) -> _Desktop:
    d = _Desktop(rng, task, session)
    t = task
    final_shot = True  # the optional final screenshot (verify_each always, blind_wait never)
    if strategy == "keyboard_shortcuts":
        if rng.random() < _P_FIRST_SHOT:
            d.screenshot()
        d.key("shortcut", t["shortcut"], _dialog_text(t), wrong=t["wrong_shortcut"])
        d.state = "dialog"
        d.value()
        d.confirm("return")
    elif strategy == "menu_navigation":
        d.screenshot()
        d.open_menu(t["menu"])
        if rng.random() < _P_SCROLL:
            d.scroll_menu()
        d.open_item()
        d.fill()
    elif strategy == "search_commands":
        d.screenshot()
        d.click("search", _jitter(rng, *t["search_xy"]), f"Focus: search box {tuple(t['search_xy'])}.")
        d.act("search_type", {"action": "type", "text": t["term"]},
              f"Search results: {t['feature']} ({t['search_xy'][0] - 80}, {t['search_xy'][1] + 30}).")
        d.key("return", "Return", _dialog_text(t))
        d.state = "dialog"
        d.fill()
    elif strategy == "explore_menus":
        d.screenshot()
        wrong = [m for m in t["menu_xy"] if m != t["menu"]]
        wrong = [wrong[i] for i in rng.permutation(len(wrong))]
        for menu in wrong[:1 + int(rng.random() < _P_SECOND_WRONG_MENU)]:
            d.open_menu(menu, "wrong_menu")
            d.escape()
        d.open_menu(t["menu"])
        if rng.random() < _P_SCROLL:
            d.scroll_menu()
        d.open_item()
        d.fill()
    elif strategy == "hover_toolbar":
        d.screenshot()
        n = 1 + int(rng.random() < _P_MORE_HOVER)
        n += int(n == 2 and rng.random() < _P_MORE_HOVER)
        others = [icon for icon in t["icons"] if icon[0] != t["feature"]]
        for tip, x in (others[i] for i in rng.choice(len(others), size=n - 1, replace=False)):
            d.act("hover", {"action": "mouse_move", "coordinate": _jitter(rng, x, 48)},
                  f"Tooltip at ({x}, 48): '{tip}'.")
        x = t["feature_icon_x"]
        d.act("hover", {"action": "mouse_move", "coordinate": _jitter(rng, x, 48)},
              f"Tooltip at ({x}, 48): '{t['feature']}'.")
        d.click("icon", _jitter(rng, x, 48), _dialog_text(t))
        d.state = "dialog"
        d.fill()
    elif strategy == "verify_each":
        d.screenshot()
        d.open_menu(t["menu"])
        d.screenshot("verify")
        if rng.random() < _P_SCROLL:
            d.scroll_menu()
            d.screenshot("verify")
        d.open_item()
        d.screenshot("verify")
        d.fill(after="screenshot")
        d.screenshot("verify")
        final_shot = False
    elif strategy == "blind_wait":
        d.open_menu(t["menu"])
        d.wait()
        if rng.random() < _P_SCROLL:
            d.scroll_menu()
        d.open_item()
        d.wait()
        d.fill(confirm="return")
        d.wait()
        final_shot = False
    else:  # pragma: no cover - STRATEGIES is closed
        raise ValueError(strategy)
    if final_shot and rng.random() < _P_FINAL_SHOT:
        d.screenshot("verify")
    d.steps.append({"step_id": len(d.steps) + 1, "source": "agent", "message": pick(rng, (
        f"Done: {t['status']}.", f"I used {t['feature']} and entered {t['value']!r}.",
        f"The task is complete ({t['status'].lower()}).", f"{t['feature']} applied with {t['value']!r}."))})
    return d


def _task(rng: np.random.Generator) -> dict:
    app, feature, menu, item, shortcut, wrong, dialog, field, value, button, status = _FEATURES[
        int(rng.integers(len(_FEATURES)))]
    fill = {"w": word(rng), "W": word(rng).capitalize(), "n": int(rng.integers(2, 60)), "d": int(rng.integers(0, 5)),
            "m": int(rng.integers(60, 200)), "cell": f"{pick(rng, tuple('ABCDEFG'))}{int(rng.integers(1, 40))}"}
    value = value.format(**fill)
    menus = _MENUS[app]
    x0 = int(rng.integers(16, 30))
    menu_xy, x = {}, x0
    for m in menus:
        menu_xy[m] = [x + 4 * len(m), 12]
        x += 8 * len(m) + 22
    items = {}
    for m in menus:
        k = int(rng.integers(6, 12))
        pool = [o for o in _OTHER_ITEMS if o != item]
        chosen = [pool[i] for i in rng.choice(len(pool), size=k, replace=False)]
        if m == menu:
            chosen.insert(int(rng.integers(3, k)), item)
        items[m] = chosen
    pos = items[menu].index(item)
    icons_tips = [tip for tip in _TOOLTIPS if tip != feature]
    icons = [icons_tips[i] for i in rng.choice(len(icons_tips), size=int(rng.integers(9, 14)), replace=False)]
    icons.insert(int(rng.integers(2, len(icons))), feature)
    ix0 = int(rng.integers(14, 30))
    icon_xy = [(tip, ix0 + 34 * i) for i, tip in enumerate(icons)]
    dx, dy = int(rng.integers(-120, 120)), int(rng.integers(-80, 80))
    t = {"app": app, "feature": feature, "menu": menu, "item": item, "shortcut": shortcut, "wrong_shortcut": wrong,
         "dialog": dialog, "field": field, "value": value, "button": button,
         "status": status.format(value=value, **fill), "menu_xy": menu_xy, "menu_items": items,
         "item_xy": [menu_xy[menu][0] + 40, 40 + 22 * pos], "icons": icon_xy,
         "feature_icon_x": dict(icon_xy)[feature], "search_xy": [int(rng.integers(1060, 1200)), 48],
         "field_xy": [560 + dx, 360 + dy], "cancel_xy": [680 + dx, 470 + dy], "button_xy": [780 + dx, 470 + dy],
         "term": pick(rng, (feature.lower(), feature, feature.split()[0].lower()))}
    t["title"] = _TITLES[app].format(doc=fill["w"], page=f"{fill['W']} {word(rng)}", folder=fill["W"])
    verb = _VERBS[feature].format(old=word(rng))
    t["text"] = pick(rng, _ASK).format(app_name=_APP_NAMES[app], verb=verb, value=value)
    return t


def computer(*, n_questions: int = 60, n_samples: int = 4, arms: dict[str, dict[str, float]] | None = None,
             random_state: RandomState = 0) -> World:
    """Generate the computer-use world (one ``computer`` tool; ATIF v1.4 documents).

    Parameters
    ----------
    n_questions, n_samples
        Requests (tasks), and episodes per request and arm.
    arms
        Arm name -> strategy mixture (default: ``base`` and ``rl``, which differ only in it).
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.

    Returns
    -------
    World
        Records in format ``atif``; truth ``arm, question_id, sample_id, strategy, kind``
        (the application), ``n_calls, n_failures, n_screenshots, correct``.

    Examples
    --------
    >>> w = computer(n_questions=2, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"]))
    ('atif', 4, ['base', 'rl'])
    >>> w.runs["n_rounds"].to_list() == w.truth["n_calls"].to_list()
    True
    """
    rng = as_generator(random_state)
    arms = arms or ARMS
    tasks = [(f"computer-{i:04d}", _task(rng)) for i in range(n_questions)]

    def episode(rng: np.random.Generator, arm: str, qid: str, sample: int, strategy: str, task: dict
                ) -> tuple[dict, tuple]:
        session = f"{arm}-{qid}-{sample}"
        d = _episode(rng, strategy, task, session)
        correct = bool(rng.random() < _SUCCESS[strategy])
        return ({"schema_version": "ATIF-v1.4", "session_id": session,
                 "agent": {"name": "computer-use-agent", "version": "1.0", "model_name": arm}, "steps": d.steps,
                 "extra": {"question_id": qid, "sample_id": sample, "correct": correct, "gold": []}},
                (task["app"], d.n_calls, d.n_failures, d.n_screenshots, correct))

    return planted_world("computer", "atif", rng, tasks, arms, n_samples, episode, _SUCCESS,
                         truth_schema={"kind": pl.String, "n_calls": pl.Int64, "n_failures": pl.Int64,
                                       "n_screenshots": pl.Int64, "correct": pl.Boolean})
