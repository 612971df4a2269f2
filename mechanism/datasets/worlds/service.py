"""A customer-service tool-use world in OpenAI ``tool_calls`` format.

The user asks to cancel an order, giving their name, e-mail, zip code, the order id and a
reason. Tools look things up (``find_user_id_by_email``, ``find_user_id_by_name_zip``,
``get_user_details``, ``get_order_details``) or change state (``cancel_pending_order``,
``transfer_to_human_agents``). Arguments are JSON objects carrying ids (``mia_li_3668``,
``#W4830391``), e-mails, zip codes and lower-case phrases; results are JSON, errors are
``Error: ...`` observations.

Six planted strategies, call counts overlapping (3, 4, 4-5, 3, 4, 3-4 calls):

====================  ========================================================================
``cancel_direct``     find the user by e-mail, read the order, cancel it
``cancel_confirm``    ``cancel_direct``, then read the order again to confirm the cancellation
``browse_orders``     find the user, read their profile, read the orders listed there (ids
                      carried from the profile, in parallel calls), cancel the one asked for
``escalate``          find the user, read the order, hand over to a human agent
``fallback_lookup``   the e-mail lookup fails; look the user up by name and zip instead, read
                      the order, cancel it
``blind_retry``       find the user and cancel at once; the cancellation fails and is retried
                      verbatim, once or twice
====================  ========================================================================

Written from scratch, without reference to :mod:`mechanism.analysis.segmentation`.
"""
from __future__ import annotations

import json

import numpy as np

from mechanism.core.options import RandomState
from mechanism.datasets.worlds._base import World, chat_world, name, pick, word, world_generator

STRATEGIES = ("cancel_direct", "cancel_confirm", "browse_orders", "escalate", "fallback_lookup", "blind_retry")
ARMS = {
    "base": {"cancel_direct": 0.25, "cancel_confirm": 0.05, "browse_orders": 0.15, "escalate": 0.2,
             "fallback_lookup": 0.1, "blind_retry": 0.25},
    "rl": {"cancel_direct": 0.2, "cancel_confirm": 0.25, "browse_orders": 0.2, "escalate": 0.05,
           "fallback_lookup": 0.2, "blind_retry": 0.1},
}
_REASONS = ("no longer needed", "ordered by mistake")
_ITEMS = ("kettle", "desk lamp", "backpack", "water bottle", "headphones", "t-shirt", "office chair")
_SUCCESS = {"cancel_direct": 0.75, "cancel_confirm": 0.85, "browse_orders": 0.7, "escalate": 0.3,
            "fallback_lookup": 0.65, "blind_retry": 0.2}


def _order_id(rng: np.random.Generator) -> str:
    return f"#W{int(rng.integers(1_000_000, 9_999_999))}"


class _Chat:
    """Builds one OpenAI chat transcript, numbering tool calls."""

    def __init__(self, system: str, user: str) -> None:
        self.messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        self.n = 0

    def call(self, content: str, calls: list[tuple[str, dict, str]]) -> None:
        """One assistant turn with ``calls`` (tool, arguments, observation), in parallel."""
        ids = []
        tool_calls = []
        for tool, args, _ in calls:
            self.n += 1
            ids.append(f"call_{self.n}")
            tool_calls.append({"id": ids[-1], "type": "function",
                               "function": {"name": tool, "arguments": json.dumps(args)}})
        self.messages.append({"role": "assistant", "content": content, "tool_calls": tool_calls})
        for cid, (tool, _, obs) in zip(ids, calls):
            self.messages.append({"role": "tool", "tool_call_id": cid, "name": tool, "content": obs})

    def say(self, content: str) -> None:
        self.messages.append({"role": "assistant", "content": content})


def _episode(rng: np.random.Generator, strategy: str, u: dict) -> _Chat:
    chat = _Chat("You are a retail customer-service agent. Authenticate the user before acting.", u["message"])
    order = {"order_id": u["order"], "user_id": u["user_id"], "status": "pending",
             "items": [{"name": it, "item_id": str(int(rng.integers(10**9, 10**10))),
                        "price": round(float(rng.uniform(5, 300)), 2)} for it in u["items"]]}
    profile = {"user_id": u["user_id"], "name": {"first_name": u["first"], "last_name": u["last"]},
               "email": u["email"], "address": {"zip": u["zip"], "city": u["city"]},
               "orders": u["orders"]}
    cancelled = dict(order, status="cancelled")
    find_email = ("find_user_id_by_email", {"email": u["email"]}, u["user_id"])
    get_order = ("get_order_details", {"order_id": u["order"]}, json.dumps(order))
    cancel = ("cancel_pending_order", {"order_id": u["order"], "reason": u["reason"]}, json.dumps(cancelled))
    if strategy == "fallback_lookup":
        chat.call("Let me find your account.", [("find_user_id_by_email", {"email": u["email"]},
                                                  "Error: user not found")])
        chat.call("I could not find that e-mail; trying your name and zip code.",
                  [("find_user_id_by_name_zip", {"first_name": u["first"].lower(), "last_name": u["last"].lower(),
                                                 "zip": u["zip"]}, u["user_id"])])
    else:
        chat.call(pick(rng, ("Let me find your account.", "First I will authenticate you.")), [find_email])
    if strategy == "browse_orders":
        chat.call("Let me look at your profile.",
                  [("get_user_details", {"user_id": u["user_id"]}, json.dumps(profile))])
        others = [o for o in u["orders"] if o != u["order"]][: int(rng.integers(1, 3))]
        chat.call("Checking your orders.",
                  [("get_order_details", {"order_id": o},
                    json.dumps(dict(order, order_id=o, status=pick(rng, ("delivered", "pending")))))
                   for o in others])
        chat.call("Cancelling the order you asked for.", [cancel])
    elif strategy in ("cancel_direct", "cancel_confirm", "fallback_lookup"):
        chat.call("Let me check the order.", [get_order])
        chat.call("The order is pending; cancelling it.", [cancel])
        if strategy == "cancel_confirm":
            chat.call("Let me confirm the cancellation.", [get_order[:2] + (json.dumps(cancelled),)])
    elif strategy == "escalate":
        chat.call("Let me check the order.", [get_order])
        chat.call("I will transfer you to a human agent.",
                  [("transfer_to_human_agents", {"summary": f"user {u['user_id']} wants to cancel {u['order']}"},
                    "Transfer successful")])
    elif strategy == "blind_retry":
        err = pick(rng, ("Error: order cannot be cancelled right now", "Error: service temporarily unavailable"))
        for _ in range(int(rng.integers(2, 4))):
            chat.call("Cancelling your order.", [cancel[:2] + (err,)])
    chat.say(pick(rng, ("Your request has been handled.", "Is there anything else I can help with?",
                        "Done. Have a nice day.")))
    return chat


def service(*, n_questions: int = 60, n_samples: int = 4, arms: dict[str, dict[str, float]] | None = None,
            random_state: RandomState = 0) -> World:
    """Generate the customer-service world (OpenAI ``tool_calls`` records).

    Parameters
    ----------
    n_questions, n_samples
        Users (tasks), and episodes per task and arm.
    arms
        Arm name -> strategy mixture (default: ``base`` and ``rl``).
    random_state
        Seed of every random choice: int, numpy Generator or None
        (:func:`mechanism.core.options.as_generator`).

    Returns
    -------
    World
        Records in format ``openai`` and the planted strategies.
    """
    rng = world_generator(random_state)
    arms = arms or ARMS
    users = []
    for i in range(n_questions):
        first, last = name(rng), name(rng)
        digits = int(rng.integers(1000, 9999))
        orders = [_order_id(rng) for _ in range(int(rng.integers(2, 5)))]
        u = {"first": first, "last": last, "user_id": f"{first.lower()}_{last.lower()}_{digits}",
             "email": f"{first.lower()}.{last.lower()}{digits % 100}@example.com",
             "zip": str(int(rng.integers(10000, 99999))),
             "city": word(rng).capitalize(), "orders": orders, "order": orders[int(rng.integers(len(orders)))],
             "reason": pick(rng, _REASONS), "items": [pick(rng, _ITEMS) for _ in range(int(rng.integers(1, 3)))]}
        u["message"] = (f"Hi, I'm {first} {last} ({u['email']}, zip {u['zip']}). Please cancel order {u['order']}, "
                        f"it is {u['reason']}.")
        users.append((f"task-{i:04d}", u))
    return chat_world("service", "openai", rng, users, arms, n_samples,
                      lambda rng, strategy, task: _episode(rng, strategy, task).messages, _SUCCESS)
