"""A web-shopping agent world: ReAct actions inside chat messages, six tools.

The user asks for a product with a few attributes and a price limit ("I need a waterproof
hiking backpack, blue, under $60"). The agent acts in a shop: ``search[query]`` lists items
(ids such as ``B07K3Q9ZL2``, titles, prices), ``click[id]`` opens an item page, ``back[]``
returns to the list, ``select[option]`` picks a size or colour on the open page,
``reviews[id]`` shows an item's reviews and ``buy[id]`` buys it. The shop answers in the
user turn (the observation comes unlabelled, as chat agents' environments do), and fails
now and then: a page that timed out or an action it did not understand (``Error: ...``,
``Invalid action: ...``); the agent then retries the same action, once or twice.

Seven planted strategies; call counts overlap (2-4, 3-5, 4-6, 4-6, 4-6, 4-7, 5-7 calls with
the retries):

===================  ======================================================================
``list_buy``         search, buy an item straight from the list
``open_buy``         search, open an item, buy it; optionally pick an option first
``review_buy``       search, open an item, read its reviews, buy it
``refine_buy``       search, search again with the query narrowed (more of the request's
                     attributes), open an item, buy it
``compare_buy``      search, open an item, go back, open another, buy the second; optionally
                     pick an option first
``reviews_first``    search, read the reviews of two listed items without opening them, open
                     the second, buy it
``research_buy``     search, open an item, go back, search for something else (the request
                     in other words), open an item of the new list, buy it
===================  ======================================================================

Failures (a failed call retried by the same tool) occur inside every strategy but
``list_buy``; they are execution, not strategy. The optional step (an option picked before
buying) is part of ``open_buy`` and ``compare_buy`` whichever way it goes. Query wording
varies inside every strategy. The ``rl`` arm differs from ``base`` only in its mixture.

Written without reference to :mod:`mechanism.analysis.segmentation`, so that recovering its
strategies tests the method, not the code against itself.
"""
from __future__ import annotations

import numpy as np

from mechanism.core.options import RandomState
from mechanism.datasets.worlds._base import World, chat_world, name, pick, word, world_generator

STRATEGIES = ("list_buy", "open_buy", "review_buy", "refine_buy", "compare_buy", "reviews_first", "research_buy")
ARMS = {
    "base": {"list_buy": 0.2, "open_buy": 0.25, "review_buy": 0.1, "refine_buy": 0.15, "compare_buy": 0.1,
             "reviews_first": 0.1, "research_buy": 0.1},
    "rl": {"list_buy": 0.05, "open_buy": 0.15, "review_buy": 0.2, "refine_buy": 0.2, "compare_buy": 0.2,
           "reviews_first": 0.1, "research_buy": 0.1},
}
_PRODUCTS = ("backpack", "kettle", "desk lamp", "running shoes", "water bottle", "rain jacket", "headphones",
             "yoga mat", "coffee grinder", "phone case")
_ADJECTIVES = ("waterproof", "lightweight", "stainless", "foldable", "wireless", "insulated", "ergonomic")
_COLOURS = ("blue", "black", "green", "grey", "red", "white")
_SIZES = ("small", "medium", "large", "one size")
# what an agent types into the search box for the same request: the request's words in
# several forms (wording varies inside every strategy)
_QUERIES = ("{adj} {product}", "{adj} {product} {colour}", "{product} {adj} under {price} dollars",
            "buy {adj} {product}", "{colour} {product} {adj}", "{product} {adj}")
_NARROWED = ("{adj} {product} {colour} under {price}", "{colour} {adj} {product} price below {price}",
             "{product} {adj} {colour} cheap {price}")
_OTHER = ("{product} for {use}", "best {product} {use}", "{use} {product} recommendation")
_USES = ("travel", "hiking", "office", "gym", "kitchen", "commuting")
_THOUGHTS = {
    "search": ("Let me search the shop.", "I will look for it.", "Search first."),
    "click": ("This one looks right, let me open it.", "Open the item.", "Let me look at this item."),
    "back": ("Not quite, back to the list.", "Let me go back.", "Back to the results."),
    "select": ("Pick the option asked for.", "Choose the right option.", "Select it."),
    "reviews": ("What do buyers say?", "Check the reviews.", "Let me read the reviews."),
    "buy": ("Buy it.", "This matches, buying.", "Purchase this item."),
}
_FAILURES = ("Error: the page timed out, please try again", "Invalid action: the button is not available",
             "Error: server busy")
# chance that a call which can fail does, in the strategies whose calls can fail
_P_FAIL = 0.12


def _item_id(rng: np.random.Generator) -> str:
    letters = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"
    return "B0" + "".join(letters[int(rng.integers(len(letters)))] for _ in range(8))


def _listing(rng: np.random.Generator, request: dict) -> tuple[str, list[str]]:
    """A results page (text) and its item ids."""
    ids = [_item_id(rng) for _ in range(int(rng.integers(3, 6)))]
    lines = [f"[{i}] {name(rng)} {pick(rng, _ADJECTIVES)} {request['product']} - ${int(rng.integers(15, 99))}"
             for i in ids]
    return "Results:\n" + "\n".join(lines), ids


def _page(rng: np.random.Generator, item: str, request: dict) -> str:
    return (f"Item {item}: {name(rng)} {request['adj']} {request['product']}. Price ${int(rng.integers(15, 99))}. "
            f"Options: size [{', '.join(_SIZES[:3])}], colour [{', '.join(_COLOURS[:4])}]. "
            f"{word(rng).capitalize()} material.")


def _reviews(rng: np.random.Generator, item: str) -> str:
    return (f"Reviews of {item}: {float(rng.integers(30, 50)) / 10} stars. "
            f"\"{pick(rng, ('Great value', 'Broke after a month', 'Exactly as described'))}\" - {name(rng)}")


class _Shop:
    """One episode's chat: each action an assistant message, the shop's answer a user message."""

    def __init__(self, rng: np.random.Generator, request: dict, can_fail: bool) -> None:
        self.rng, self.request, self.can_fail = rng, request, can_fail
        self.messages = [{"role": "system", "content": "You shop for the user. Act with Thought/Action lines."},
                         {"role": "user", "content": request["text"]}]

    def act(self, tool: str, arg: str, result: str) -> None:
        """The action, retried by the same tool after each failure (at most twice)."""
        tries = 0
        while self.can_fail and tries < 2 and self.rng.random() < _P_FAIL:
            self._turn(tool, arg, pick(self.rng, _FAILURES))
            tries += 1
        self._turn(tool, arg, result)

    def _turn(self, tool: str, arg: str, result: str) -> None:
        thought = pick(self.rng, _THOUGHTS[tool])
        self.messages.append({"role": "assistant", "content": f"Thought: {thought}\nAction: {tool}[{arg}]"})
        self.messages.append({"role": "user", "content": result})

    def finish(self, item: str | None) -> None:
        said = f"I bought {item} for you." if item else "I could not find a good match."
        self.messages.append({"role": "assistant", "content": f"Thought: Done.\nAction: finish[{said}]"})


def _query(rng: np.random.Generator, forms: tuple[str, ...], request: dict) -> str:
    return pick(rng, forms).format(**request)


def _episode(rng: np.random.Generator, strategy: str, request: dict) -> _Shop:
    shop = _Shop(rng, request, can_fail=strategy != "list_buy")
    listing, ids = _listing(rng, request)
    shop.act("search", _query(rng, _QUERIES, request), listing)
    first = pick(rng, ids)
    if strategy == "list_buy":
        bought = first
    elif strategy in ("open_buy", "review_buy", "refine_buy"):
        if strategy == "refine_buy":
            listing, ids = _listing(rng, request)
            shop.act("search", _query(rng, _NARROWED, request), listing)
            first = pick(rng, ids)
        shop.act("click", first, _page(rng, first, request))
        if strategy == "review_buy":
            shop.act("reviews", first, _reviews(rng, first))
        if strategy == "open_buy" and rng.random() < 0.5:  # the optional step
            shop.act("select", pick(rng, (request["colour"], request["size"])), "Selected.")
        bought = first
    elif strategy == "compare_buy":
        shop.act("click", first, _page(rng, first, request))
        shop.act("back", "", listing)
        second = pick(rng, [i for i in ids if i != first])
        shop.act("click", second, _page(rng, second, request))
        if rng.random() < 0.5:  # the optional step
            shop.act("select", pick(rng, (request["colour"], request["size"])), "Selected.")
        bought = second
    elif strategy == "reviews_first":
        a, b = rng.choice(ids, 2, replace=False)
        shop.act("reviews", str(a), _reviews(rng, str(a)))
        shop.act("reviews", str(b), _reviews(rng, str(b)))
        shop.act("click", str(b), _page(rng, str(b), request))
        bought = str(b)
    elif strategy == "research_buy":
        shop.act("click", first, _page(rng, first, request))
        shop.act("back", "", listing)
        listing, ids = _listing(rng, request)
        shop.act("search", _query(rng, _OTHER, request), listing)
        bought = pick(rng, ids)
        shop.act("click", bought, _page(rng, bought, request))
    else:  # pragma: no cover - STRATEGIES is closed
        raise ValueError(strategy)
    shop.act("buy", bought, f"Thank you for your purchase of {bought}.")
    shop.finish(bought)
    return shop


# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"list_buy": 0.35, "open_buy": 0.55, "review_buy": 0.7, "refine_buy": 0.65, "compare_buy": 0.6,
            "reviews_first": 0.6, "research_buy": 0.45}


def webshop(*, n_questions: int = 60, n_samples: int = 4, arms: dict[str, dict[str, float]] | None = None,
            random_state: RandomState = 0) -> World:
    """Generate the web-shopping world (ReAct actions inside chat ``messages``).

    Parameters
    ----------
    n_questions, n_samples
        Shopping requests (tasks), and episodes per request and arm.
    arms
        Arm name -> strategy mixture (default: ``base`` and ``rl``, which differ only in it).
    random_state
        Seed of every random choice: int, numpy Generator or None
        (:func:`mechanism.core.options.as_generator`).

    Returns
    -------
    World
        Records in format ``react`` and the planted strategies.
    """
    rng = world_generator(random_state)
    arms = arms or ARMS
    requests = []
    for i in range(n_questions):
        r = {"product": pick(rng, _PRODUCTS), "adj": pick(rng, _ADJECTIVES), "colour": pick(rng, _COLOURS),
             "size": pick(rng, _SIZES), "price": str(int(rng.integers(3, 12)) * 10), "use": pick(rng, _USES)}
        r["text"] = pick(rng, ("I need a {adj} {product}, {colour}, under ${price}.",
                               "Find me a {colour} {adj} {product} for less than ${price}, size {size}.",
                               "Please buy a {adj} {product} in {colour}; my budget is ${price}.")).format(**r)
        requests.append((f"shop-{i:04d}", r))
    return chat_world("webshop", "react", rng, requests, arms, n_samples,
                      lambda rng, strategy, task: _episode(rng, strategy, task).messages, _SUCCESS)
