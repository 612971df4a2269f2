"""A web-navigation agent world (WebArena-like): tasks on an internal GitLab and web shop.

The user asks for something on the company's internal sites ("Find the email of the maintainer
of project X", "How many open issues labelled bug does repo Y have?", "What is the status of
my order #N?", "Change the shipping address of my last order to Z"). The agent drives a browser
with six tools in OpenAI ``tool_calls`` format: ``goto(url)``, ``click(element_id)``,
``type(element_id, text)``, ``scroll(direction)``, ``read_page()`` (the page's accessibility
tree, with its text) and ``go_back()``. Navigation returns the new page's interactive elements;
``read_page`` returns the whole tree. The final assistant message without a tool call is the
answer.

Six planted strategies; call counts overlap (0, 3-10, 3-11, 2-8, 3-15, 3-11 calls with the
failures, the optional steps and the edit of an address task):

=================  ========================================================================
``memory``         answer from memory, no tool (a guess, or "done" without doing it)
``site_search``    [read_page] > type the query in the search box > [click a wrong result >
                   go_back] > click the result (on GitLab, then the project's tab) >
                   read_page
``menu_nav``       [read_page] > click through 2-3 menu levels (site menu, list, entry or
                   tab), [a wrong entry clicked first > go_back] > read_page
``direct_url``     [read_page] > goto a guessed URL > read_page; when the guess is a 404
                   page (40 %), one click from it (the nearest link) before the read_page
``scroll_scan``    [read_page] > goto a listing page > scroll 2-5 times, each scroll but the
                   last sometimes followed by a read_page (35 %); a last read_page half the
                   time; no search, no filter
``filter_sort``    [read_page] > goto a listing page > 1-3 filter controls (a click on a
                   filter or sort control, or text typed into the filter box) > read_page
=================  ========================================================================

An address task then ends, in every strategy but ``memory``, with ``type`` (the new address)
and ``click`` (save).

``[...]`` marks an OPTIONAL step taken at a fixed rate whatever the arm: a read_page before
the first action (30 %, every strategy that calls a tool), and a go_back and a click on
another result when the first one was the wrong page (25 %, site_search and menu_nav).

Failures are execution, not strategy: any ``goto``, ``click``, ``type`` or ``scroll`` fails
with probability 0.15 (a 404 on a mistyped URL, ``Error: element [412] is not clickable`` on a
stale element, a type into an element that is not an input, a scroll direction that does not
exist) and is followed at once by a corrected call of the SAME tool. The 404 of a wrong guess
in ``direct_url`` is the strategy's own (a page, not an ``Error:``) and is not counted as a
failure. URLs, element ids, typed text and the assistant's words vary inside every strategy.
The ``rl`` arm differs from ``base`` only in its mixture; success depends only on the strategy
(random within it).

The truth carries, beside ``strategy``, ``n_calls`` (tool calls made) and ``n_failures``
(execution failures among them).

Written from scratch as a held-out world, without reference to how trajectories are segmented
or clustered.
"""
from __future__ import annotations

import json

import numpy as np
import polars as pl

from mechanism.core.options import as_generator
from mechanism.datasets.worlds._base import World, chat_world, name, pick, word

STRATEGIES = ("memory", "site_search", "menu_nav", "direct_url", "scroll_scan", "filter_sort")
ARMS = {
    "base": {"memory": 0.12, "site_search": 0.25, "menu_nav": 0.2, "direct_url": 0.1, "scroll_scan": 0.18,
             "filter_sort": 0.15},
    "rl": {"memory": 0.03, "site_search": 0.15, "menu_nav": 0.1, "direct_url": 0.27, "scroll_scan": 0.07,
           "filter_sort": 0.38},
}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"memory": 0.05, "site_search": 0.65, "menu_nav": 0.6, "direct_url": 0.55, "scroll_scan": 0.45,
            "filter_sort": 0.8}
_P_FAIL = 0.15            # a goto / click / type / scroll fails; the same tool is called again, corrected
_P_LOOK_FIRST = 0.3       # optional: read_page before the first action
_P_WRONG_RESULT = 0.25    # optional: the first result was wrong: go_back, click another
_P_GUESS_MISSES = 0.4     # direct_url: the guessed URL is a 404 page; one click from it
_P_READ_WHILE_SCROLLING = 0.35
_GITLAB = ("http://gitlab.corp.internal", "http://git.intranet.local", "http://code.internal:8023")
_SHOP = ("http://shop.corp.internal", "http://store.intranet.local", "http://shop.internal:7770")
_LABELS = ("bug", "enhancement", "documentation", "good first issue", "regression", "security")
_STREETS = ("Harbour Road", "Elm Street", "Station Square", "Mill Lane", "Kings Avenue", "Quay Street")
_CITIES = ("Bergen", "Porto", "Leeds", "Tartu", "Ghent", "Basel", "Lyon")
_SAY = {
    "goto": ("Let me open {u}.", "I'll go to {u}.", "Opening {u}.", "Navigating to {u} directly."),
    "click": ("Clicking '{l}'.", "I'll click on '{l}'.", "Let me open '{l}'.", "'{l}' looks right; clicking it."),
    "type": ("Typing '{t}'.", "I'll enter '{t}'.", "Let me type '{t}' there.", "Entering '{t}' in the field."),
    "scroll": ("Scrolling {d}.", "Let me scroll {d} to see more.", "More rows below; scrolling {d}.",
               "Not there yet, scrolling {d}."),
    "read_page": ("Let me read the page.", "Reading the page.", "What does this page say?",
                  "Let me look at the page content.", ""),
    "go_back": ("That is not the right page; going back.", "Wrong page, back.", "Let me go back.",
                "Not this one. Back to the previous page."),
}


class _Page:
    """A page: its url, title and interactive elements (label -> fresh element id)."""

    def __init__(self, rng: np.random.Generator, url: str, title: str, elements: list[tuple[str, str]],
                 text: list[str] | None = None) -> None:
        self.url, self.title, self.text = url, title, text or []
        ids = rng.choice(np.arange(100, 1000), size=len(elements) + 1, replace=False)
        self.root = int(ids[0])
        self.elements = [(int(i), role, label) for i, (role, label) in zip(ids[1:], elements)]

    def id(self, label: str) -> int:
        return next(i for i, _, lab in self.elements if lab == label)

    def non_input(self, rng: np.random.Generator) -> int:
        """The id of an element that is not an input (a mistaken target of ``type``)."""
        others = [i for i, role, _ in self.elements if role not in ("searchbox", "textbox")]
        return int(others[int(rng.integers(len(others)))]) if others else self.root

    def summary(self) -> str:
        lines = [f"{self.url}", f"[{self.root}] RootWebArea '{self.title}' focused: True"]
        lines += [f"  [{i}] {role} '{label}'" for i, role, label in self.elements]
        return "\n".join(lines)

    def tree(self) -> str:
        lines = [f"[{self.root}] RootWebArea '{self.title}' focused: True"]
        lines += [f"  [{i}] {role} '{label}'" for i, role, label in self.elements]
        lines += [f"  StaticText '{t}'" for t in self.text]
        return "\n".join(lines)


def _typo(rng: np.random.Generator, url: str) -> str:
    """``url`` with one path segment mistyped (a character dropped or doubled)."""
    head, _, path = url.partition("://")
    host, _, rest = path.partition("/")
    if not rest:
        return f"{head}://{host}/{pick(rng, ('hom', 'index.htm', 'dashbord'))}"
    parts = rest.split("/")
    j = int(rng.integers(len(parts)))
    seg = parts[j] or "x"
    k = int(rng.integers(len(seg)))
    parts[j] = seg[:k] + seg[k + 1:] if rng.random() < 0.5 and len(seg) > 2 else seg[:k] + seg[k] + seg[k:]
    return f"{head}://{host}/" + "/".join(parts)


class _Browser:
    """One transcript in OpenAI chat format; tool calls numbered, execution failures retried."""

    def __init__(self, rng: np.random.Generator, task: dict, home: _Page) -> None:
        self.rng, self.task, self.page = rng, task, home
        self.history: list[_Page] = []
        self.messages: list[dict] = [
            {"role": "system", "content": pick(rng, (
                "You are a web agent. You control a browser through tools. The current page is "
                f"{home.url}.",
                f"You are a browsing assistant for the company intranet. The browser is open at {home.url}."))},
            {"role": "user", "content": task["text"]}]
        self.n = 0
        self.failures = 0

    def _turn(self, tool: str, args: dict, result: str, **say: str) -> None:
        self.n += 1
        cid = f"call_{pick(self.rng, ('', 'x', 'b'))}{self.n:03d}{int(self.rng.integers(10, 99))}"
        said = pick(self.rng, _SAY[tool]).format(**{"u": "", "l": "", "t": "", "d": "", **say})
        self.messages.append({"role": "assistant", "content": said, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}]})
        self.messages.append({"role": "tool", "tool_call_id": cid, "name": tool, "content": result})

    def _fails(self) -> bool:
        if self.rng.random() < _P_FAIL:
            self.failures += 1
            return True
        return False

    def _arrive(self, page: _Page) -> None:
        self.history.append(self.page)
        self.page = page

    def goto(self, page: _Page, *, result: str | None = None) -> None:
        if self._fails():
            bad = _typo(self.rng, page.url)
            self._turn("goto", {"url": bad}, f"Error: 404 Not Found: {bad}", u=bad)
        self._turn("goto", {"url": page.url}, page.summary() if result is None else result, u=page.url)
        self._arrive(page)

    def click(self, label: str, page: _Page) -> None:
        """Click ``label`` on the current page, arriving at ``page``."""
        eid = self.page.id(label)
        if self._fails():
            stale = int(self.rng.integers(100, 1000))
            while stale == eid:
                stale = int(self.rng.integers(100, 1000))
            self._turn("click", {"element_id": stale}, f"Error: element [{stale}] is not clickable", l=label)
        self._turn("click", {"element_id": eid}, page.summary(), l=label)
        self._arrive(page)

    def type(self, label: str, text: str, result: str) -> None:
        eid = self.page.id(label)
        if self._fails():
            bad = self.page.non_input(self.rng)
            self._turn("type", {"element_id": bad, "text": text},
                       f"Error: element [{bad}] is not an input field", t=text)
        self._turn("type", {"element_id": eid, "text": text}, result, t=text)

    def scroll(self, direction: str, result: str) -> None:
        if self._fails():
            bad = pick(self.rng, ("downwards", "bottom", "page_down", "more"))
            self._turn("scroll", {"direction": bad}, "Error: direction must be 'up' or 'down'", d=bad)
        self._turn("scroll", {"direction": direction}, result, d=direction)

    def read_page(self, extra: list[str] | None = None) -> None:
        tree = self.page.tree()
        if extra:
            tree += "\n" + "\n".join(f"  StaticText '{t}'" for t in extra)
        self._turn("read_page", {}, tree)

    def go_back(self) -> None:
        self.page = self.history.pop() if self.history else self.page
        self._turn("go_back", {}, self.page.summary())

    def answer(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})


def _chrome(site: str) -> list[tuple[str, str]]:
    """The elements every page of a site has (header menu and search box)."""
    if site == "gitlab":
        return [("link", "Projects"), ("link", "Groups"), ("searchbox", "Search GitLab"), ("link", "Help")]
    return [("link", "My Account"), ("link", "Catalog"), ("searchbox", "Search entire store here..."),
            ("link", "Contact Us")]


def _pages(rng: np.random.Generator, task: dict) -> dict:
    """The pages a task can visit (fresh element ids for this episode)."""
    base, site, kind = task["base"], task["site"], task["kind"]
    chrome = _chrome(site)
    search = chrome[2][1]
    if kind in ("email", "issues"):
        proj = task["project"]
        path = f"{task['group']}/{proj}"
        other = f"{task['group']}/{task['other']}"
        home = _Page(rng, f"{base}/", "Dashboard · GitLab",
                     chrome + [("link", "Your work"), ("link", path), ("link", other)])
        project = _Page(rng, f"{base}/{path}", f"{path} · GitLab",
                        chrome + [("link", "Issues"), ("link", "Members"), ("link", "Repository")])
        wrong = _Page(rng, f"{base}/{other}", f"{other} · GitLab",
                      chrome + [("link", "Issues"), ("link", "Members"), ("link", "Repository")])
        listing = _Page(rng, f"{base}/explore/projects" if kind == "email" else f"{base}/{path}/-/issues",
                        "Explore projects · GitLab" if kind == "email" else f"Issues · {path} · GitLab",
                        chrome + ([("textbox", "Filter by name"), ("link", "Sort by name"),
                                   ("link", "Sort by last updated")] if kind == "email" else
                                  [("textbox", "Search or filter results"), ("button", "Label"),
                                   ("menuitem", task.get("label", "bug")), ("link", "Open"),
                                   ("link", "Sort by created date")]))
        menu = [("Projects", _Page(rng, f"{base}/dashboard/projects", "Projects · GitLab",
                                   chrome + [("link", path), ("link", other), ("link", "Starred projects")])),
                (path, project)]
        if kind == "email":
            target = _Page(rng, f"{base}/{path}/-/project_members", f"Members · {path} · GitLab",
                           chrome + [("textbox", "Search members"), ("link", "Invite members")],
                           [f"{task['person']} @{task['handle']} Maintainer {task['email']}",
                            f"{name(rng)} @{word(rng)} Developer"])
            menu.append(("Members", target))
            guesses = (f"{base}/{path}/-/project_members", f"{base}/{path}/members", f"{base}/{path}/-/members")
            queries = (proj, f"{proj} maintainer", path, f"{proj} members")
            filters = [("type", "Filter by name", proj), ("click", "Sort by name", None)]
            content = [f"{task['person']} @{task['handle']} Maintainer {task['email']}"]
        else:
            target = _Page(rng, f"{base}/{path}/-/issues/?label_name[]={task['label']}&state=opened",
                           f"Issues · {path} · GitLab",
                           chrome + [("textbox", "Search or filter results"), ("link", "Open"), ("link", "Closed")],
                           [f"Open {task['count']}", f"Closed {int(rng.integers(3, 300))}",
                            f"label: {task['label']}"])
            menu.append(("Issues", target))
            guesses = (target.url, f"{base}/{path}/issues?label={task['label']}&state=open",
                       f"{base}/{path}/-/issues?label_name={task['label']}")
            queries = (f"{proj} {task['label']}", f"label:{task['label']} {proj}", f"{proj} issues")
            filters = [("click", "Label", None), ("click", task["label"], None),
                       ("type", "Search or filter results", f"label:{task['label']}"), ("click", "Open", None)]
            content = [f"Open {task['count']}"]
        result, wrong_result = (path, other)
    else:
        order = task["order"]
        home = _Page(rng, f"{base}/customer/account", "My Account",
                     chrome + [("link", "My Orders"), ("link", "My Wish List")])
        account = _Page(rng, f"{base}/customer/account/", "My Account",
                        chrome + [("link", "My Orders"), ("link", "Address Book"), ("link", "Account Information")])
        orders = _Page(rng, f"{base}/sales/order/history/", "My Orders",
                       chrome + [("link", f"View Order #{order}"), ("link", f"View Order #{task['prev']}"),
                                 ("combobox", "Show per page"), ("link", "Sort by date"),
                                 ("textbox", "Filter orders"), ("link", "Status: Pending")])
        listing = orders
        form = [("textbox", "Shipping address"), ("button", "Save address")] if kind == "address" else []
        target = _Page(rng, f"{base}/sales/order/view/order_id/{order}/", f"Order # {order}",
                       chrome + [("link", "Reorder"), ("link", "Print Order")] + form,
                       [f"Order # {order}", f"Status: {task['status']}",
                        f"Order Date: {task['date']}", f"Ship to: {task['old_address']}"])
        wrong = _Page(rng, f"{base}/sales/order/view/order_id/{task['prev']}/", f"Order # {task['prev']}",
                      chrome + [("link", "Reorder"), ("link", "Print Order")] + form)
        menu = [("My Account", account), ("My Orders", orders), (f"View Order #{order}", target)]
        guesses = (target.url, f"{base}/sales/order/view/{order}", f"{base}/orders/{order}")
        queries = ((f"order {order}", f"#{order}", str(order), f"my order {order}") if kind == "order" else
                   ("my orders", "last order", "recent orders", f"order {order}"))
        filters = [("type", "Filter orders", str(order)), ("click", "Sort by date", None),
                   ("click", "Status: Pending", None)]
        content = [f"Order # {order}", f"Status: {task['status']}", f"Ship to: {task['old_address']}"]
        result, wrong_result = (f"View Order #{order}", f"View Order #{task['prev']}")
    results = _Page(rng, f"{base}/search?search={task.get('project', task.get('order'))}", "Search results",
                    chrome + [("link", result), ("link", wrong_result), ("link", "Next page")])
    not_found = _Page(rng, "", "404 Not Found", chrome + [("link", "Go to homepage"), ("link", menu[-1][0])],
                      ["The page you were looking for doesn't exist."])
    return {"home": home, "menu": menu, "target": target, "wrong": wrong, "listing": listing, "results": results,
            "result": result, "wrong_result": wrong_result, "search": search, "guesses": guesses,
            "queries": queries, "filters": filters, "content": content, "not_found": not_found}


def _rows(rng: np.random.Generator, task: dict, k: int, last: bool) -> str:
    """What a scroll brings into view (the wanted row on the last scroll)."""
    ids = rng.choice(np.arange(100, 1000), size=4, replace=False)
    rows = []
    for i in ids[:3]:
        if task["kind"] in ("email", "issues"):
            rows.append(f"[{int(i)}] row '{task['group']}/{word(rng)} · {name(rng)} · updated {k + 1}d ago'")
        else:
            rows.append(f"[{int(i)}] row 'Order #{int(rng.integers(10000, 99999))} · "
                        f"{pick(rng, ('Complete', 'Canceled', 'Closed'))}'")
    if last:
        wanted = {"email": "{group}/{project} · maintainer {person} ({email})",
                  "issues": "label {label} · {count} open", "order": "Order #{order} · {status}",
                  "address": "Order #{order} · {status} · ship to {old_address}"}[task["kind"]].format(**task)
        rows.insert(int(rng.integers(len(rows) + 1)), f"[{int(ids[3])}] row '{wanted}'")
    return "\n".join(rows)


def _answer(rng: np.random.Generator, task: dict, did: bool) -> str:
    kind = task["kind"]
    if kind == "email":
        v = task["email"] if did else f"{task['handle']}@{pick(rng, ('corp.internal', 'example.com'))}"
        return pick(rng, (f"The maintainer's email is {v}.", f"{v}", f"You can reach the maintainer at {v}."))
    if kind == "issues":
        v = task["count"] if did else int(rng.integers(1, 60))
        return pick(rng, (f"There are {v} open issues labelled {task['label']}.", f"{v}",
                          f"The repository has {v} open '{task['label']}' issues."))
    if kind == "order":
        v = task["status"] if did else pick(rng, ("Shipped", "Processing"))
        return pick(rng, (f"Order #{task['order']} is {v}.", f"The status is: {v}.", f"{v}"))
    if not did:
        return pick(rng, (f"Done, the shipping address is now {task['address']}.",
                          "I can't change it from here; please use the account page.",
                          f"I've updated your last order to ship to {task['address']}."))
    return pick(rng, (f"Done: order #{task['order']} now ships to {task['address']}.",
                      f"The shipping address of order #{task['order']} has been changed to {task['address']}.",
                      "The new address is saved."))


def _episode(rng: np.random.Generator, strategy: str, task: dict, stats: list) -> list[dict]:
    p = _pages(rng, task)
    b = _Browser(rng, task, p["home"])
    if strategy == "memory":
        b.answer(_answer(rng, task, did=False))
        stats.append((0, 0))
        return b.messages
    if rng.random() < _P_LOOK_FIRST:  # the optional first look
        b.read_page()
    read_extra = None
    if strategy == "site_search":
        query = pick(rng, p["queries"])
        b.type(p["search"], query, f"Typed '{query}' and pressed Enter.\n" + p["results"].summary())
        b._arrive(p["results"])
        if rng.random() < _P_WRONG_RESULT:
            b.click(p["wrong_result"], p["wrong"])
            b.go_back()
        b.click(p["result"], p["target"] if task["site"] == "shop" else p["menu"][1][1])
        if task["site"] == "gitlab":  # a project page: the tab the task is on
            b.click(p["menu"][-1][0], p["target"])
    elif strategy == "menu_nav":
        levels = p["menu"] if rng.random() < 0.5 else p["menu"][1:]
        for label, page in levels:
            if label == p["result"] and rng.random() < _P_WRONG_RESULT:  # the neighbouring entry first
                b.click(p["wrong_result"], p["wrong"])
                b.go_back()
            b.click(label, page)
    elif strategy == "direct_url":
        if rng.random() < _P_GUESS_MISSES:
            guess = pick(rng, p["guesses"][1:])
            p["not_found"].url = guess
            b.goto(p["not_found"], result=f"{guess}\n" + p["not_found"].tree())
            b.click(p["menu"][-1][0], p["target"])  # the nearest link to what was wanted
        else:
            b.goto(p["target"])
    elif strategy == "scroll_scan":
        b.goto(p["listing"])
        k = int(rng.integers(2, 6))
        for j in range(k):
            direction = "up" if 0 < j < k - 1 and rng.random() < 0.1 else "down"
            b.scroll(direction, _rows(rng, task, j, last=j == k - 1))
            if j < k - 1 and rng.random() < _P_READ_WHILE_SCROLLING:
                b.read_page()
    elif strategy == "filter_sort":
        b.goto(p["listing"])
        ops = p["filters"]
        n = int(rng.integers(1, min(3, len(ops)) + 1))
        chosen = sorted(rng.choice(len(ops), size=n, replace=False))
        for j in chosen:
            tool, label, text = ops[int(j)]
            if tool == "type":
                b.type(label, text, f"Typed '{text}'. The list is filtered.")
            else:
                b.click(label, p["listing"])
        read_extra = p["content"]
    if strategy != "scroll_scan":
        b.read_page(read_extra)
    elif rng.random() < 0.5:
        b.read_page()
    if task["kind"] == "address":  # the edit: the new address typed and saved
        if b.page is not p["target"]:
            b.page = p["target"]
        b.type("Shipping address", task["address"], f"Typed '{task['address']}'.")
        b.click("Save address", p["target"])
    b.answer(_answer(rng, task, did=True))
    stats.append((b.n, b.failures))
    return b.messages


def _task(rng: np.random.Generator, i: int) -> dict:
    kind = pick(rng, ("email", "issues", "order", "address"))
    t: dict = {"kind": kind, "site": "gitlab" if kind in ("email", "issues") else "shop"}
    t["base"] = pick(rng, _GITLAB if t["site"] == "gitlab" else _SHOP)
    if t["site"] == "gitlab":
        t.update(group=word(rng), project=f"{word(rng)}-{pick(rng, ('api', 'core', 'web', 'cli', 'docs'))}",
                 other=word(rng), person=f"{name(rng)} {name(rng)}", handle=word(rng))
        t["email"] = f"{t['handle']}@{pick(rng, ('corp.internal', 'intranet.local'))}"
        t["label"], t["count"] = pick(rng, _LABELS), int(rng.integers(0, 80))
    else:
        t.update(order=int(rng.integers(100000, 999999)), status=pick(rng, ("Pending", "Processing", "Complete")),
                 date=f"{int(rng.integers(1, 13))}/{int(rng.integers(1, 29))}/2023",
                 old_address=f"{int(rng.integers(1, 200))} {pick(rng, _STREETS)}, {pick(rng, _CITIES)}",
                 address=f"{int(rng.integers(1, 200))} {pick(rng, _STREETS)}, {pick(rng, _CITIES)}")
        t["prev"] = t["order"] - int(rng.integers(1, 500))
    texts = {
        "email": ("Find the email of the maintainer of project {project}.",
                  "Who maintains {group}/{project}? I need their email address.",
                  "What's the e-mail of the {project} maintainer on our GitLab?"),
        "issues": ("How many open issues labelled {label} does repo {project} have?",
                   "Count the open '{label}' issues in {group}/{project}.",
                   "In {project}, how many issues with the label {label} are still open?"),
        "order": ("What is the status of my order #{order}?", "Has order {order} shipped yet?",
                  "Check order #{order} for me: what's its status?"),
        "address": ("Change the shipping address of my last order to {address}.",
                    "Please update my most recent order (#{order}) to ship to {address}.",
                    "I moved. Ship my last order to {address} instead."),
    }
    t["text"] = pick(rng, texts[kind]).format(**t)
    return t


def browser(*, n_questions: int = 60, n_samples: int = 4, arms: dict[str, dict[str, float]] | None = None,
            random_state: int | np.random.Generator | None = 0) -> World:
    """Generate the web-navigation world (OpenAI ``tool_calls`` records).

    Parameters
    ----------
    n_questions, n_samples
        Questions (tasks), and episodes per question and arm.
    arms
        Arm name -> strategy mixture (default: ``base`` and ``rl``, which differ only in it).
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.

    Returns
    -------
    World
        Records in format ``openai`` and the planted strategies; the truth also holds
        ``n_calls`` and ``n_failures`` of every trajectory.

    Examples
    --------
    >>> w = browser(n_questions=2, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"]))
    ('openai', 4, ['base', 'rl'])
    >>> sorted(w.truth.columns)
    ['arm', 'n_calls', 'n_failures', 'question_id', 'sample_id', 'strategy']
    """
    rng = as_generator(random_state)
    arms = arms or ARMS
    tasks = [(f"browser-{i:04d}", _task(rng, i)) for i in range(n_questions)]
    stats: list[tuple[int, int]] = []
    world = chat_world("browser", "openai", rng, tasks, arms, n_samples,
                       lambda r, strategy, task: _episode(r, strategy, task, stats), _SUCCESS)
    world.truth = world.truth.with_columns(n_calls=pl.Series([n for n, _ in stats], dtype=pl.Int64),
                                           n_failures=pl.Series([f for _, f in stats], dtype=pl.Int64))
    return world
