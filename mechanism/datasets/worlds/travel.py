"""A travel-booking agent world (tau-bench airline / hotel-like): change, book, cancel, add.

A user of a travel agency writes in with a request that names their user id and a reservation
id ("I'm sara_kim_4821, please move my flight on reservation ZFA04Y to the 14th"). Four kinds
of task: change a flight's date, book a hotel for a trip, cancel a trip, add a hotel to an
existing booking. The agent has seven tools in OpenAI ``tool_calls`` format: ``get_user``,
``get_reservation``, ``search_flights``, ``search_hotels``, ``book``, ``change_reservation``
and ``cancel_reservation``; results are JSON, failures are ``Error: ...`` observations (an id
mistyped, a date in the wrong format, a city misspelt, a payment method not on file), after
which the agent fixes the call and makes it again with the same tool.

The *core* of a task is what fulfils it: ``search_flights`` then ``change_reservation``
(change a date), ``search_hotels`` then ``book`` (book a hotel), ``cancel_reservation``
(cancel), ``search_hotels`` then ``change_reservation`` (add a hotel to the booking).

Seven planted strategies; call counts overlap (0, 1-2, 2-3, 2-3, 3-6, 4-6, 2-4 calls before
retries, with the optional steps):

=====================  ====================================================================
``no_tools``           no tool at all: a refusal, or directions to the website / a phone line
``act_now``            the core at once, with a payment method guessed from the message
``profile_first``      ``get_user`` (payment methods on file), then the core
``reservation_first``  ``get_reservation`` (the trip's dates and cities), then the core
``broad_search``       optionally ``get_reservation`` first (35%), then 2-4 searches of the
                       core's kind over different dates (or nights), then the core's action
``survey_trips``       ``get_user``, then ``get_reservation`` of each of 2-3 trips on the
                       profile, then the core
``verify_after``       optionally ``get_user`` first (40%), the core, then ``get_reservation``
                       again to confirm the change took
=====================  ====================================================================

Failures (a call that errs, followed by a corrected call of the same tool) occur at
:data:`_P_FAIL` per call inside every strategy that calls a tool; they are execution, not
strategy. The optional steps belong to their strategy whichever way they go, at rates fixed
whatever the arm and the task. Every strategy is used on every kind of task (the strategy is
drawn from the arm's mixture, independently of the task). Ids, dates, cities, payment methods
and the assistant's words vary inside every strategy. The ``rl`` arm differs from ``base``
only in its mixture; success is random within a strategy at its fixed rate.

Written from scratch, without reference to how trajectories are segmented or clustered.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import polars as pl

from mechanism.core.options import as_generator
from mechanism.datasets.worlds._base import World, chat_world, name, pick

STRATEGIES = ("no_tools", "act_now", "profile_first", "reservation_first", "broad_search", "survey_trips",
              "verify_after")
KINDS = ("change_date", "book_hotel", "cancel_trip", "add_hotel")
ARMS = {
    "base": {"no_tools": 0.10, "act_now": 0.25, "profile_first": 0.15, "reservation_first": 0.15,
             "broad_search": 0.12, "survey_trips": 0.08, "verify_after": 0.15},
    "rl": {"no_tools": 0.03, "act_now": 0.10, "profile_first": 0.17, "reservation_first": 0.12,
           "broad_search": 0.18, "survey_trips": 0.15, "verify_after": 0.25},
}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"no_tools": 0.05, "act_now": 0.45, "profile_first": 0.65, "reservation_first": 0.6,
            "broad_search": 0.6, "survey_trips": 0.7, "verify_after": 0.8}
#: the chance that a call which can fail does; a failure is retried (fixed) by the same tool
_P_FAIL = 0.15
#: optional steps, at fixed rates whatever the arm and the task
_P_LOOKUP_FIRST = 0.35  # broad_search: the reservation looked up before searching
_P_PROFILE_FIRST = 0.4  # verify_after: the profile looked up before acting

_CITIES = {"LIS": "Lisbon", "JFK": "New York", "ORD": "Chicago", "SFO": "San Francisco", "LHR": "London",
           "CDG": "Paris", "NRT": "Tokyo", "MEX": "Mexico City", "SEA": "Seattle", "ATL": "Atlanta"}
_MONTHS = ("03", "04", "05", "06", "09", "10")
_GENERIC_PAY = ("credit_card", "card", "visa", "default")

_SAY = {
    "get_user": ("Let me pull up your profile.", "First, your account details.", "Looking up user {u}.",
                 "I'll check the payment methods on your account."),
    "get_reservation": ("Let me look at reservation {r}.", "Checking the booking {r}.", "Fetching the reservation.",
                        "One moment, I'm opening {r}."),
    "search_flights": ("Searching flights {o} to {d} on {day}.", "Let me see what flies on {day}.",
                       "Looking for flights.", "Checking availability for {day}."),
    "search_hotels": ("Searching hotels in {c}.", "Let me find a hotel from {day}.", "Looking at hotels.",
                      "Checking rooms in {c} for {n} nights."),
    "book": ("Booking it now.", "I'll reserve {i} for you.", "Placing the booking.", "Confirming {i}."),
    "change_reservation": ("Updating your reservation.", "I'll apply the change to {r}.", "Switching to {i}.",
                           "Making the change now."),
    "cancel_reservation": ("Cancelling {r}.", "I'll cancel the trip now.", "Processing the cancellation.",
                           "Going ahead with the cancellation of {r}."),
}


def _date(month: str, day: int) -> str:
    return f"2025-{month}-{max(1, min(28, day)):02d}"


def _mistype(rng: np.random.Generator, text: str) -> str:
    """``text`` with two neighbouring characters swapped (a typo), or its last one dropped."""
    if len(text) > 3 and rng.random() < 0.6:
        i = int(rng.integers(0, len(text) - 1))
        return text[:i] + text[i + 1] + text[i] + text[i + 2:] if text[i] != text[i + 1] else text[:-1]
    return text[:-1]


class _Session:
    """One transcript in OpenAI chat format; tool calls numbered, failures retried."""

    def __init__(self, rng: np.random.Generator, task: dict, can_fail: bool) -> None:
        self.rng, self.task, self.can_fail = rng, task, can_fail
        self.messages: list[dict] = [
            {"role": "system", "content": pick(rng, (
                "You are a travel agency assistant. Help the user with flights and hotels.",
                "You are a booking agent for a travel company; use the tools to act on the user's behalf.",
                "You help customers manage their travel reservations."))},
            {"role": "user", "content": task["text"]}]
        self.n = 0
        self.failures = 0

    def _turn(self, tool: str, args: dict, result: Any) -> None:
        self.n += 1
        cid = f"call_{_call_id(self.rng)}"
        t = self.task
        said = pick(self.rng, _SAY[tool]).format(
            u=args.get("user_id", t["user"]), r=args.get("reservation_id", t["res"]), o=args.get("origin", t["origin"]),
            d=args.get("destination", t["dest"]), day=args.get("date", args.get("check_in", t["day"])),
            c=args.get("city", t["city"]), n=args.get("nights", t["nights"]), i=args.get("item_id", args.get(
                "new_item_id", "it")))
        content = said if self.rng.random() < 0.7 else None
        self.messages.append({"role": "assistant", "content": content, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}]})
        self.messages.append({"role": "tool", "tool_call_id": cid, "name": tool,
                              "content": result if isinstance(result, str) else json.dumps(result)})

    def call(self, tool: str, args: dict, result: Any) -> Any:
        """The call; first, where it can fail and does, a broken version of it, answered with
        an error. Returns ``result``."""
        if self.can_fail and self.rng.random() < _P_FAIL:
            bad, err = _broken(self.rng, tool, args)
            self._turn(tool, bad, err)
            self.failures += 1
        self._turn(tool, args, result)
        return result

    def answer(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})


def _call_id(rng: np.random.Generator) -> str:
    return "".join(pick(rng, tuple("abcdefghijklmnopqrstuvwxyz0123456789")) for _ in range(8))


def _broken(rng: np.random.Generator, tool: str, args: dict) -> tuple[dict, str]:
    """A broken version of a call and the error it gets."""
    if tool == "get_user":
        bad = _mistype(rng, args["user_id"])
        return {"user_id": bad}, pick(rng, (f"Error: user not found: {bad}", f"Error: no user with id '{bad}'"))
    if tool in ("get_reservation", "cancel_reservation"):
        rid = args["reservation_id"]
        bad = rid.lower() if rid.lower() != rid and rng.random() < 0.5 else _mistype(rng, rid)
        return dict(args, reservation_id=bad), pick(rng, (f"Error: reservation {bad} not found",
                                                          "Error: reservation_id must be 6 upper-case characters"))
    if tool == "search_flights":
        y, m, d = args["date"].split("-")
        bad = pick(rng, (f"{d}/{m}/{y}", f"{m}/{d}", f"{y}{m}{d}"))
        return dict(args, date=bad), f"Error: invalid date '{bad}', expected YYYY-MM-DD"
    if tool == "search_hotels":
        if rng.random() < 0.5:
            bad = _mistype(rng, args["city"])
            return dict(args, city=bad), f"Error: unknown city '{bad}'"
        return dict(args, nights=0), "Error: nights must be at least 1"
    if tool == "book":
        bad = pick(rng, _GENERIC_PAY + ("paypal", "mastercard"))
        if bad == args["payment_method"]:
            bad = "paypal"
        return dict(args, payment_method=bad), f"Error: payment method '{bad}' is not on file for this user"
    if tool == "change_reservation":
        bad = _mistype(rng, args["new_item_id"])
        return dict(args, new_item_id=bad), pick(rng, (f"Error: item {bad} does not exist",
                                                       "Error: service temporarily unavailable, try again"))
    raise ValueError(tool)


def _flights(rng: np.random.Generator, task: dict, date: str) -> list[dict]:
    out = []
    for _ in range(int(rng.integers(1, 4))):
        hour = int(rng.integers(6, 22))
        out.append({"flight_id": f"{pick(rng, ('HAT', 'ZX', 'AO', 'BR'))}{int(rng.integers(100, 999))}",
                    "origin": task["origin"], "destination": task["dest"], "date": date,
                    "depart": f"{hour:02d}:{pick(rng, ('05', '20', '35', '50'))}",
                    "price": int(rng.integers(90, 900)), "seats_left": int(rng.integers(1, 12))})
    return out


def _hotels(rng: np.random.Generator, task: dict, check_in: str, nights: int) -> list[dict]:
    out = []
    for _ in range(int(rng.integers(1, 4))):
        out.append({"hotel_id": f"HTL-{task['dest']}-{int(rng.integers(1000, 9999))}",
                    "name": f"{pick(rng, ('Hotel', 'Casa', 'The', 'Inn'))} {name(rng)}", "city": task["city"],
                    "check_in": check_in, "nights": nights, "price_per_night": int(rng.integers(60, 420)),
                    "stars": int(rng.integers(2, 6))})
    return out


def _user(rng: np.random.Generator, task: dict) -> dict:
    return {"user_id": task["user"], "name": task["who"], "payment_methods": task["pays"],
            "reservations": task["trips"], "membership": pick(rng, ("regular", "silver", "gold"))}


def _reservation(rng: np.random.Generator, task: dict, rid: str, status: str = "confirmed",
                 items: list[str] | None = None) -> dict:
    own = rid == task["res"]
    return {"reservation_id": rid, "user_id": task["user"], "status": status,
            "origin": task["origin"] if own else pick(rng, tuple(_CITIES)),
            "destination": task["dest"] if own else pick(rng, tuple(_CITIES)),
            "date": task["day"] if own else _date(pick(rng, _MONTHS), int(rng.integers(1, 29))),
            "items": items if items is not None else [task["flight"]], "cabin": pick(rng, ("economy", "business"))}


def _search(s: _Session, date: str, nights: int) -> str:
    """One search of the task's kind (flights for a date change or a cancellation, hotels for
    the hotel tasks); the id of the option chosen."""
    rng, t = s.rng, s.task
    if t["kind"] in ("change_date", "cancel_trip"):
        res = s.call("search_flights", {"origin": t["origin"], "destination": t["dest"], "date": date},
                     _flights(rng, t, date))
        return pick(rng, [r["flight_id"] for r in res])
    res = s.call("search_hotels", {"city": t["city"], "check_in": date, "nights": nights},
                 _hotels(rng, t, date, nights))
    return pick(rng, [r["hotel_id"] for r in res])


def _act(s: _Session, item: str | None, pay: str) -> None:
    """The action that fulfils the task (after its search, where it has one)."""
    rng, t = s.rng, s.task
    conf = f"CNF{int(rng.integers(10000, 99999))}"
    if t["kind"] == "cancel_trip":
        s.call("cancel_reservation", {"reservation_id": t["res"]},
               {"reservation_id": t["res"], "status": "cancelled", "refund": int(rng.integers(0, 800))})
    elif t["kind"] == "book_hotel":
        s.call("book", {"item_id": item, "payment_method": pay},
               {"booking_id": conf, "item_id": item, "status": "booked"})
    else:
        s.call("change_reservation", {"reservation_id": t["res"], "new_item_id": item},
               {"reservation_id": t["res"], "status": "updated", "items": [item] if t["kind"] == "change_date"
                else [t["flight"], item]})


def _core(s: _Session, pay: str) -> str | None:
    """The core of the task: its search (none for a cancellation), then its action."""
    item = None if s.task["kind"] == "cancel_trip" else _search(s, s.task["target"], s.task["nights"])
    _act(s, item, pay)
    return item


def _episode(rng: np.random.Generator, strategy: str, task: dict) -> tuple[list[dict], int, int]:
    s = _Session(rng, task, can_fail=strategy != "no_tools")
    t = task
    guessed = pick(rng, _GENERIC_PAY) if rng.random() < 0.5 else t["pays"][0]
    on_file = pick(rng, t["pays"])
    item = None
    if strategy == "no_tools":
        s.answer(pick(rng, (
            "I'm sorry, I can't make changes to bookings here. Please use the Manage Booking page on our website.",
            f"For reservation {t['res']} you'll need to call our support line; I can't modify it from this chat.",
            "I'm unable to help with that request right now.",
            f"Changes like this usually cost a fee; please contact the airline directly about {t['res']}.")))
        return s.messages, s.n, s.failures
    if strategy == "act_now":
        item = _core(s, guessed)
    elif strategy == "profile_first":
        s.call("get_user", {"user_id": t["user"]}, _user(rng, t))
        item = _core(s, on_file)
    elif strategy == "reservation_first":
        s.call("get_reservation", {"reservation_id": t["res"]}, _reservation(rng, t, t["res"]))
        item = _core(s, guessed)
    elif strategy == "broad_search":
        if rng.random() < _P_LOOKUP_FIRST:
            s.call("get_reservation", {"reservation_id": t["res"]}, _reservation(rng, t, t["res"]))
        month, day = t["target"][5:7], int(t["target"][8:])
        offsets = [0] + list(rng.choice([-3, -2, -1, 1, 2, 3], size=int(rng.integers(1, 4)), replace=False))
        rng.shuffle(offsets)
        found = []
        for k, off in enumerate(offsets):  # other dates; for hotels, other stays too
            nights = t["nights"] if k == 0 or rng.random() < 0.5 else max(1, t["nights"] + int(off))
            found.append(_search(s, _date(month, day + int(off)), nights))
        item = None if t["kind"] == "cancel_trip" else pick(rng, found)
        _act(s, item, guessed)
    elif strategy == "survey_trips":
        s.call("get_user", {"user_id": t["user"]}, _user(rng, t))
        for rid in t["trips"]:
            s.call("get_reservation", {"reservation_id": rid}, _reservation(rng, t, rid))
        item = _core(s, on_file)
    elif strategy == "verify_after":
        pay = guessed
        if rng.random() < _P_PROFILE_FIRST:
            s.call("get_user", {"user_id": t["user"]}, _user(rng, t))
            pay = on_file
        item = _core(s, pay)
        after = {"cancel_trip": ("cancelled", [t["flight"]]), "change_date": ("confirmed", [item]),
                 "book_hotel": ("confirmed", [t["flight"], item]), "add_hotel": ("confirmed", [t["flight"], item])}
        status, items = after[t["kind"]]
        s.call("get_reservation", {"reservation_id": t["res"]}, _reservation(rng, t, t["res"], status, items))
    else:
        raise ValueError(strategy)
    done = {"change_date": f"Your flight on {t['res']} now leaves on {t['target']}.",
            "book_hotel": f"I booked {item} in {t['city']} for {t['nights']} nights.",
            "cancel_trip": f"Reservation {t['res']} is cancelled.",
            "add_hotel": f"I added hotel {item} to reservation {t['res']}."}[t["kind"]]
    s.answer(pick(rng, (done, f"All done! {done}", f"{done} Anything else?", "Done: your request went through.",
                        f"{done} You'll receive a confirmation e-mail.")))
    return s.messages, s.n, s.failures


def _res_id(rng: np.random.Generator) -> str:
    return "".join(pick(rng, tuple("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789")) for _ in range(6))


def _task(rng: np.random.Generator) -> dict:
    kind = pick(rng, KINDS)
    first, last = name(rng), name(rng)
    origin, dest = (str(c) for c in rng.choice(list(_CITIES), size=2, replace=False))
    month, day = pick(rng, _MONTHS), int(rng.integers(3, 26))
    res = _res_id(rng)
    trips = [res] + [_res_id(rng) for _ in range(int(rng.integers(1, 3)))]
    rng.shuffle(trips)
    t = {"kind": kind, "user": f"{first.lower()}_{last.lower()}_{int(rng.integers(1000, 9999))}",
         "who": f"{first} {last}", "res": res, "trips": trips, "origin": origin, "dest": dest,
         "city": _CITIES[dest], "day": _date(month, day), "nights": int(rng.integers(1, 8)),
         "flight": f"{pick(rng, ('HAT', 'ZX', 'AO', 'BR'))}{int(rng.integers(100, 999))}",
         "pays": [f"{pick(rng, ('credit_card', 'gift_card', 'certificate'))}_{int(rng.integers(1000000, 9999999))}"
                  for _ in range(int(rng.integers(1, 3)))]}
    shift = int(rng.integers(1, 4)) * pick(rng, (-1, 1))
    t["target"] = _date(month, day + shift) if kind == "change_date" else t["day"]
    templates = {
        "change_date": ("Hi, I'm {user}. Please move my flight on reservation {res} to {target}.",
                        "User id {user} here. Can you change reservation {res} from {origin} to {dest} so I fly "
                        "on {target} instead?",
                        "My reservation {res} needs a new date: {target}. My id is {user}. Thanks, {who}."),
        "book_hotel": ("I'm flying to {city} on {day} (reservation {res}). Book me a hotel for {nights} nights, "
                       "user {user}.",
                       "Hello, {who} ({user}). I need a hotel in {city} from {day}, {nights} nights; my trip is {res}.",
                       "Can you find and book a hotel for my trip {res}? {nights} nights in {city}. I'm {user}."),
        "cancel_trip": ("Please cancel my trip, reservation {res}. User id: {user}.",
                        "Hi, this is {who} ({user}). I can't travel to {city} anymore; cancel {res} please.",
                        "I want to cancel reservation {res}, my user id is {user}."),
        "add_hotel": ("Could you add a hotel to my booking {res}? {nights} nights. I'm {user}.",
                      "I'm {user}; please add {nights} hotel nights in {city} to reservation {res}.",
                      "Hi, {who} here ({user}). Attach a hotel stay to {res}, {nights} nights from arrival."),
    }
    t["text"] = pick(rng, templates[kind]).format(**t)
    return t


def travel(*, n_questions: int = 60, n_samples: int = 4, arms: dict[str, dict[str, float]] | None = None,
           random_state: int | np.random.Generator | None = 0) -> World:
    """Generate the travel-booking world (OpenAI ``tool_calls`` records).

    Parameters
    ----------
    n_questions, n_samples
        Requests (tasks, of the four kinds), and episodes per request and arm.
    arms
        Arm name -> strategy mixture (default: :data:`ARMS`, ``base`` and ``rl``, which differ
        only in it).
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.

    Returns
    -------
    World
        Records in format ``openai``; the truth has ``strategy``, ``kind`` (of task),
        ``n_calls`` (tool calls, failed ones included) and ``n_failures``.

    Examples
    --------
    >>> w = travel(n_questions=2, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"]))
    ('openai', 4, ['base', 'rl'])
    >>> sorted(w.truth.columns)
    ['arm', 'kind', 'n_calls', 'n_failures', 'question_id', 'sample_id', 'strategy']
    """
    rng = as_generator(random_state)
    arms = arms or ARMS
    tasks = [(f"travel-{i:04d}", _task(rng)) for i in range(n_questions)]

    def episode(rng: np.random.Generator, strategy: str, task: dict) -> tuple[list[dict], tuple]:
        messages, n_calls, n_failures = _episode(rng, strategy, task)
        return messages, (task["kind"], n_calls, n_failures)

    return chat_world("travel", "openai", rng, tasks, arms, n_samples, episode, _SUCCESS,
                      truth_schema={"kind": pl.String, "n_calls": pl.Int64, "n_failures": pl.Int64})
