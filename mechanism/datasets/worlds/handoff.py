"""A multi-agent airline customer-support world with handoffs (OpenAI Agents SDK / Swarm-like).

An airline's support desk is made of several agents that speak in ONE OpenAI chat transcript:
a ``triage`` agent and four specialists, ``booking``, ``refunds``, ``baggage`` and ``loyalty``
(:data:`AGENTS`), each with its own typed tools (:data:`AGENT_TOOLS`), and a human agent at
the end of the line. Every assistant message carries ``"name": "<agent>"``, the agent that
speaks. Control passes by a *handoff*, a tool call ``transfer_to_<agent>`` (arguments ``{}``
or ``{"reason": ...}``) whose result is ``{"assistant": "<agent>"}``; the assistant messages
after it are the new agent's. Specialists can also be used as tools (*agents as tools*):
the triage agent calls ``ask_<agent>(input=...)`` and gets the specialist's final text back
as the tool result, its inner calls not logged. The customer speaks in ``user`` messages
between assistant turns (a confirmation code, a bag tag, a yes to go ahead).

The typed tools (:data:`TOOLS`; results JSON, an ``ask_`` result text): shared by every agent,
``lookup_reservation(confirmation, last_name)``, ``get_member(member_id)`` and
``faq_search(query)``; triage's ``get_flight_status(flight_number, date)``; booking's
``search_flights(origin, destination, date)``, ``change_booking(confirmation, new_flight,
date)``, ``get_fare_rules(fare_class, topic)`` and ``assign_seat(confirmation, seat)``;
refunds' ``check_refund_eligibility(confirmation)`` and ``issue_refund(confirmation, amount,
method)``; baggage's ``track_bag(tag)`` and ``file_claim(tag, confirmation, description)``;
loyalty's ``check_upgrade(confirmation, cabin)``, ``redeem_upgrade(confirmation, member_id,
cabin)`` and ``credit_miles(member_id, miles, reason)``; and the handoffs and consultations
each agent may make (:data:`AGENT_TOOLS`).

The customer's first message says which kind of request it is (:data:`KINDS`): a rebooking
after a cancellation, a refund, a lost bag, an upgrade with miles, or a policy question. The
kind decides WHICH specialist owns the request (:data:`SPECIALIST`) and which of its tools
end the episode (:data:`ACTIONS`: ``search_flights`` then ``change_booking``;
``check_refund_eligibility`` then ``issue_refund``; ``track_bag`` then ``file_claim``;
``check_upgrade`` then ``redeem_upgrade``; ``get_fare_rules``), and which specialist follows
in a chain (:data:`SECOND`, with one follow-up tool: ``credit_miles``, ``issue_refund``,
``assign_seat`` or ``check_refund_eligibility``). The strategy decides the shape of the
orchestration. Seven planted strategies (calls, handoffs included, before failures and
optional steps; one fewer on a policy question, whose action is one call):

========================  =====================================================================
``triage_solo``           triage answers alone with its own lookups, no handoff:
                          ``lookup_reservation``, optionally ``get_flight_status``
                          (:data:`_P_SOLO_STATUS`); advice rather than an action (1-2 calls)
``direct_handoff``        ``transfer_to_<specialist>`` at once; the specialist does everything:
                          ``lookup_reservation`` and the kind's actions (4 calls)
``gather_then_handoff``   triage gathers the facts first, ``lookup_reservation`` and
                          ``get_flight_status``, then hands off with them as the reason; the
                          specialist acts without looking again (5 calls)
``agents_as_tools``       triage ``lookup_reservation``, then consults the specialist as a tool
                          (``ask_<specialist>``), optionally the chain's second specialist too
                          (:data:`_P_ASK_SECOND`), and answers itself; never hands off (2-3)
``bounce_back``           a wrong first handoff to another specialist, who optionally looks up
                          the reservation (:data:`_P_BOUNCE_LOOKUP`) and hands back with
                          ``transfer_to_triage``; triage hands off again to the right
                          specialist, who does everything (6-7 calls, 3 handoffs)
``specialist_chain``      the right specialist does everything, then hands off to a second
                          specialist (:data:`SECOND`) who makes one follow-up call (6 calls)
``escalate_human``        triage ``lookup_reservation``, optionally ``get_flight_status``
                          (:data:`_P_ESCALATE_STATUS`), then ``transfer_to_human``; the human
                          agent writes the last message (2-3 calls)
========================  =====================================================================

Failures are execution, not strategy: every tool call but a handoff fails with probability
:data:`_P_FAIL` and is followed at once by the corrected call of the same tool, by the same
agent (a mistyped confirmation code, ``{"error": "reservation_not_found", ...}``; a date in
the wrong format; city names for airport codes; a bag tag with a space; a cabin name not in
the list; miles as text; an empty query or input; ...; or, :data:`_P_503` of failures,
``HTTP 503 Service Unavailable: upstream timeout``, retried with the same arguments).
Optional steps at fixed rates whatever the arm, the kind and the strategy: a ``get_member``
look at the customer's profile right after the first ``lookup_reservation``, by whoever
speaks then (:data:`_P_MEMBER`); an ``faq_search`` for the policy text just before acting
(before the kind's first action, the first ``ask_``, the answer or the transfer to a human:
:data:`_P_FAQ`); a closing "anything else?" to the customer, answered, and a short recap as
the last message (:data:`_P_ANYTHING_ELSE`). The customer gives the confirmation code (and,
for a lost bag, the bag tag) in the first message (:data:`_P_VOLUNTEER`) or when the first
agent that needs it asks. A handoff carries a reason with :data:`_P_REASON`. Names, codes,
dates, wording and the order of the arguments in every call vary inside every strategy; every
strategy is used on every kind (drawn independently of it). The ``rl`` arm differs from
``base`` only in its mixture; success (whether the final answer is right) is drawn at the
strategy's rate, random within it, and shows only in the final answer.

The truth carries, beside ``strategy``, ``kind``, ``n_calls`` (tool calls, handoffs and
failed calls included), ``n_failures`` (failed calls), ``n_handoffs`` (``transfer_to_*``
calls), ``n_user_turns`` (user messages after the first) and ``correct``.

Written from scratch as a held-out world, without reference to how trajectories are segmented
or clustered.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from mechanism.core.options import RandomState, as_generator
from mechanism.datasets.worlds._base import World, name, pick, planted_world

STRATEGIES = ("triage_solo", "direct_handoff", "gather_then_handoff", "agents_as_tools", "bounce_back",
              "specialist_chain", "escalate_human")
KINDS = ("rebook", "refund", "lost_bag", "upgrade", "policy")
AGENTS = ("triage", "booking", "refunds", "baggage", "loyalty")
SPECIALISTS = AGENTS[1:]
#: the specialist that owns each kind of request
SPECIALIST = {"rebook": "booking", "refund": "refunds", "lost_bag": "baggage", "upgrade": "loyalty",
              "policy": "booking"}
#: the kind's actions, in order (the owning specialist's tools that end the episode)
ACTIONS = {"rebook": ("search_flights", "change_booking"),
           "refund": ("check_refund_eligibility", "issue_refund"),
           "lost_bag": ("track_bag", "file_claim"), "upgrade": ("check_upgrade", "redeem_upgrade"),
           "policy": ("get_fare_rules",)}
#: the second specialist of a chain and its one follow-up tool
SECOND = {"rebook": ("loyalty", "credit_miles"), "refund": ("loyalty", "credit_miles"),
          "lost_bag": ("refunds", "issue_refund"), "upgrade": ("booking", "assign_seat"),
          "policy": ("refunds", "check_refund_eligibility")}
_SHARED = ("lookup_reservation", "get_member", "faq_search")
AGENT_TOOLS = {
    "triage": (*_SHARED, "get_flight_status", *(f"transfer_to_{a}" for a in (*SPECIALISTS, "human")),
               *(f"ask_{a}" for a in SPECIALISTS)),
    "booking": (*_SHARED, "search_flights", "change_booking", "get_fare_rules", "assign_seat",
                "transfer_to_triage", "transfer_to_loyalty", "transfer_to_refunds"),
    "refunds": (*_SHARED, "check_refund_eligibility", "issue_refund", "transfer_to_triage", "transfer_to_loyalty"),
    "baggage": (*_SHARED, "track_bag", "file_claim", "transfer_to_triage", "transfer_to_refunds"),
    "loyalty": (*_SHARED, "check_upgrade", "redeem_upgrade", "credit_miles", "transfer_to_triage",
                "transfer_to_booking"),
}
TOOLS = tuple(dict.fromkeys(t for tools in AGENT_TOOLS.values() for t in tools))
ARMS = {
    "base": {"triage_solo": 0.15, "direct_handoff": 0.24, "gather_then_handoff": 0.10, "agents_as_tools": 0.12,
             "bounce_back": 0.16, "specialist_chain": 0.08, "escalate_human": 0.15},
    "rl": {"triage_solo": 0.06, "direct_handoff": 0.20, "gather_then_handoff": 0.30, "agents_as_tools": 0.18,
           "bounce_back": 0.06, "specialist_chain": 0.14, "escalate_human": 0.06},
}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"triage_solo": 0.35, "direct_handoff": 0.75, "gather_then_handoff": 0.85, "agents_as_tools": 0.7,
            "bounce_back": 0.6, "specialist_chain": 0.8, "escalate_human": 0.25}
#: the chance that a tool call (not a handoff) fails; it is followed by the corrected call of the same tool
_P_FAIL = 0.12
#: the share of failures that are a 503 (retried with the same arguments)
_P_503 = 0.3
#: optional steps, at fixed rates whatever the arm, the kind and the strategy
_P_MEMBER = 0.3  # get_member after the first lookup_reservation, by whoever speaks
_P_FAQ = 0.25  # faq_search for the policy text just before acting
_P_ANYTHING_ELSE = 0.35  # "anything else?" after the answer, the customer's no, and a recap
_P_VOLUNTEER = 0.55  # the confirmation code (and a lost bag's tag) in the first message
_P_REASON = 0.5  # a handoff carries {"reason": ...} (else {})
_P_SAY = 0.6  # an assistant message with tool calls also has text
#: steps inside a strategy (part of it whichever way they go)
_P_SOLO_STATUS = 0.6  # triage_solo: get_flight_status after the reservation
_P_ASK_SECOND = 0.4  # agents_as_tools: the chain's second specialist consulted too
_P_BOUNCE_LOOKUP = 0.5  # bounce_back: the wrong specialist looks the reservation up before handing back
_P_ESCALATE_STATUS = 0.5  # escalate_human: get_flight_status before the transfer

_AIRLINE = "Northwind Air"
_FAIL_503 = "HTTP 503 Service Unavailable: upstream timeout"
_AIRPORTS = {"ORD": "Chicago", "SFO": "San Francisco", "JFK": "New York", "SEA": "Seattle", "DEN": "Denver",
             "BOS": "Boston", "ATL": "Atlanta", "LAX": "Los Angeles", "MIA": "Miami", "AUS": "Austin"}
_CODE_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
_FARES = ("Basic", "Main", "Main Plus", "Flex")
_CAUSES = ("crew availability", "weather at the destination", "an aircraft maintenance issue",
           "air traffic control restrictions")
_BAGS = ("black hard-shell suitcase", "navy duffel bag", "red roller bag with a green ribbon", "grey backpack",
         "large silver suitcase", "brown leather holdall")
_RULES = {
    "change_fee": ("What's the fee to change my flight", "Changes are free on {fare} fares; you pay only any "
                   "difference in fare."),
    "pets": ("Can I bring my cat in the cabin", "Small cats and dogs may travel in the cabin in an approved carrier "
             "under the seat, for a $95 fee each way."),
    "seats": ("Do I have to pay to choose a seat", "On a {fare} fare, standard seats can be chosen free of charge "
              "at booking; extra-legroom seats are extra."),
    "bags": ("How many checked bags are included", "A {fare} fare includes one checked bag up to 23 kg (50 lb); "
             "a second bag is $45."),
}
_WRONG_RULES = ("That isn't allowed on your fare, I'm afraid.", "There is a flat $200 fee for that on every fare.",
                "That's only possible for Gold members.")


def _digits(rng: np.random.Generator, n: int) -> str:
    return "".join(str(int(d)) for d in rng.integers(0, 10, size=n))


def _code(rng: np.random.Generator) -> str:
    return "".join(pick(rng, tuple(_CODE_CHARS)) for _ in range(6))


def _call_id(rng: np.random.Generator) -> str:
    return "call_" + "".join(pick(rng, tuple("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"))
                             for _ in range(24))


def _mistype(rng: np.random.Generator, text: str) -> str:
    """``text`` with two neighbouring different characters swapped, or its last one dropped."""
    spots = [i for i in range(len(text) - 1) if text[i] != text[i + 1]]
    if spots and rng.random() < 0.7:
        i = spots[int(rng.integers(len(spots)))]
        return text[:i] + text[i + 1] + text[i] + text[i + 2:]
    return text[:-1]


def _us_date(date: str) -> str:
    y, m, d = date.split("-")
    return f"{m}/{d}/{y}"


def _broken(rng: np.random.Generator, tool: str, args: dict) -> tuple[dict, str]:
    """A broken version of a call and the error it gets."""
    if rng.random() < _P_503:
        return dict(args), _FAIL_503
    if tool in ("lookup_reservation", "check_refund_eligibility"):
        bad = pick(rng, (_mistype(rng, args["confirmation"]), args["confirmation"].lower()))
        return dict(args, confirmation=bad), json.dumps({"error": "reservation_not_found", "confirmation": bad})
    if tool == "get_flight_status":
        if rng.random() < 0.5:
            bad = _us_date(args["date"])
            return dict(args, date=bad), json.dumps({"error": "invalid_date", "message": "date must be YYYY-MM-DD"})
        bad = f"{args['flight_number'][:2]} {args['flight_number'][2:]}"
        return dict(args, flight_number=bad), f"Error: unknown flight number '{bad}'"
    if tool == "search_flights":
        bad = dict(args, origin=_AIRPORTS[args["origin"]], destination=_AIRPORTS[args["destination"]])
        return bad, json.dumps({"error": "unknown_airport", "message": f"'{bad['origin']}' is not an IATA code"})
    if tool in ("faq_search", "ask_booking", "ask_refunds", "ask_baggage", "ask_loyalty"):
        key = next(iter(args))
        return dict(args, **{key: ""}), json.dumps({"error": f"{key} is required"})
    if tool == "get_member" or (tool in ("redeem_upgrade", "credit_miles") and rng.random() < 0.5):
        bad = _mistype(rng, args["member_id"])
        return dict(args, member_id=bad), json.dumps({"error": "member_not_found", "member_id": bad})
    if tool == "credit_miles":
        return dict(args, miles=f"{args['miles']:,}"), "Error: miles must be an integer"
    if tool in ("track_bag", "file_claim"):
        bad = f"{args['tag'][:2]} {args['tag'][2:]}"
        return dict(args, tag=bad), json.dumps({"error": "bag_not_found", "tag": bad})
    if tool in ("check_upgrade", "redeem_upgrade"):
        bad = pick(rng, ("Business Class", "first", "upper"))
        return dict(args, cabin=bad), json.dumps({"error": "invalid_cabin", "message": f"cabin must be one of "
                                                  f"premium_economy, business (got '{bad}')"})
    if tool == "get_fare_rules":
        bad = args["fare_class"].lower() + pick(rng, (" economy", " fare", ""))
        return dict(args, fare_class=bad), f"Error: unknown fare class '{bad}'"
    if tool == "issue_refund":
        bad = round(args["amount"] * 1.1 + 20, 2)
        return dict(args, amount=bad), json.dumps({"error": "amount_exceeds_eligible", "eligible": args["amount"]})
    if tool == "assign_seat":
        bad = f"{int(rng.integers(20, 35))}{pick(rng, tuple('ABCDEF'))}"
        return dict(args, seat=bad), json.dumps({"error": "seat_not_in_cabin", "seat": bad})
    # change_booking: a flight not on offer
    bad = args["new_flight"][:2] + _digits(rng, 4)
    return dict(args, new_flight=bad), json.dumps({"error": "flight_not_available", "flight": bad})


class _Session:
    """One conversation in OpenAI chat format, several agents speaking in it: tool calls (failures
    retried corrected), handoffs, requests to the customer and their replies."""

    def __init__(self, rng: np.random.Generator, task: dict) -> None:
        self.rng, self.t = rng, task
        self.messages: list[dict] = [
            {"role": "system", "content": pick(rng, (
                f"You are the triage agent of {_AIRLINE} customer support. Work out what the customer needs and "
                "hand off to the right specialist (booking, refunds, baggage, loyalty) or to a human.",
                f"{_AIRLINE} support. Agents: triage (you), booking, refunds, baggage, loyalty. Use transfer_to_* "
                "to hand the conversation over, or ask_* to consult a specialist.",
                f"You are a helpful {_AIRLINE} assistant at the front desk of a team of specialist agents."))},
            {"role": "user", "content": task["text"]}]
        self.agent = "triage"
        self.n_calls = self.failures = self.handoffs = self.user_turns = 0
        self.known = {"confirmation": task["volunteered"], "tag": task["volunteered"]}
        # the optional steps, drawn once per episode
        self.member = bool(rng.random() < _P_MEMBER)
        self.faq = bool(rng.random() < _P_FAQ)
        self.looked = False

    def _turn(self, tool: str, args: dict, result: Any, said: str | None) -> None:
        self.n_calls += 1
        cid = _call_id(self.rng)
        keys = list(args)
        ordered = {keys[int(i)]: args[keys[int(i)]] for i in self.rng.permutation(len(keys))}
        self.messages.append({"role": "assistant", "name": self.agent, "content": said, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": tool, "arguments": json.dumps(ordered)}}]})
        self.messages.append({"role": "tool", "tool_call_id": cid, "name": tool,
                              "content": result if isinstance(result, str) else json.dumps(result)})

    def call(self, tool: str, args: dict, result: Any, says: tuple[str, ...]) -> None:
        """The call (first, where it fails, a broken one answered by an error); ``says``: what
        the agent may say with it (or nothing)."""
        said = pick(self.rng, says) if self.rng.random() < _P_SAY else None
        if self.rng.random() < _P_FAIL:
            bad, err = _broken(self.rng, tool, args)
            self._turn(tool, bad, err, said)
            self.failures += 1
            said = pick(self.rng, ("Let me try that again.", "That didn't go through; retrying.", "Retrying.",
                                   "Sorry, let me correct that.")) if self.rng.random() < 0.5 else None
        self._turn(tool, args, result, said)

    def transfer(self, to: str, reasons: tuple[str, ...], says: tuple[str, ...]) -> None:
        """A handoff: ``transfer_to_<to>``, answered ``{"assistant": to}``; ``to`` speaks next."""
        args = {"reason": pick(self.rng, reasons)} if self.rng.random() < _P_REASON else {}
        said = pick(self.rng, says) if self.rng.random() < _P_SAY else None
        self._turn(f"transfer_to_{to}", args, {"assistant": to}, said)
        self.handoffs += 1
        self.agent = to

    def say(self, text: str) -> None:
        self.messages.append({"role": "assistant", "name": self.agent, "content": text})

    def ask(self, request: str, reply: str) -> None:
        self.say(request)
        self.messages.append({"role": "user", "content": reply})
        self.user_turns += 1

    def need(self, what: str) -> None:
        """Ask the customer for the confirmation code or the bag tag, once, if not given yet."""
        if self.known[what]:
            return
        rng, value = self.rng, self.t[what]
        if what == "confirmation":
            req = pick(rng, ("Could you give me your six-character confirmation code?",
                             "Sure. What's the booking reference on your reservation?",
                             "I can help with that. What is your confirmation number?"))
            rep = pick(rng, (f"It's {value}.", value, f"Confirmation {value.lower()}", f"Sure: {value}"))
        else:
            req = pick(rng, ("What's the number on your bag tag? It's on the sticker you got at check-in.",
                             "Could you read me the bag tag number?", "Do you have the baggage tag number?"))
            rep = pick(rng, (f"{value[:2]} {value[2:]}", f"The tag says {value}.", value))
        self.ask(req, rep)
        self.known[what] = True


# -- steps --------------------------------------------------------------------------------------------
def _reservation(t: dict) -> dict:
    status = {"rebook": "cancelled", "refund": t["disruption_status"]}.get(t["kind"], "confirmed")
    return {"confirmation": t["confirmation"], "passenger": t["who"], "member_id": t["member_id"],
            "email": t["email"], "flight_number": t["flight"], "origin": t["origin"],
            "destination": t["destination"], "date": t["date"], "departure": t["time"], "fare_class": t["fare"],
            "cabin": "economy", "segment_status": status,
            "bags": [t["tag"]] if t["kind"] == "lost_bag" else []}


def _lookup(s: _Session) -> None:
    """``lookup_reservation`` by the agent speaking; the optional ``get_member`` after the episode's first."""
    t = s.t
    s.need("confirmation")
    s.call("lookup_reservation", {"confirmation": t["confirmation"], "last_name": t["last"]}, _reservation(t),
           ("Let me pull up your reservation.", f"Looking up {t['confirmation']}.", "One moment, checking your trip.",
            "Let me find your booking."))
    if s.member and not s.looked:
        s.call("get_member", {"member_id": t["member_id"]},
               {"member_id": t["member_id"], "name": t["who"], "tier": t["tier"], "miles": t["miles"],
                "email": t["email"]},
               ("Let me check your loyalty profile too.", "Checking your member profile.",
                "One sec, looking at your account."))
    s.looked = True


def _status(s: _Session) -> None:
    t = s.t
    status = {"rebook": {"status": "cancelled", "reason": t["cause"]},
              "refund": {"status": t["disruption_status"], "reason": t["cause"],
                         "delay_minutes": t["delay"] if t["disruption_status"] == "delayed" else None},
              "lost_bag": {"status": "landed", "arrived": f"{t['date']}T{t['time']}"}}.get(
        t["kind"], {"status": "scheduled", "gate": f"{pick(s.rng, tuple('ABCDE'))}{int(s.rng.integers(1, 40))}"})
    s.call("get_flight_status", {"flight_number": t["flight"], "date": t["date"]},
           {"flight_number": t["flight"], "date": t["date"], **status},
           (f"Checking the status of {t['flight']}.", "Let me see what happened to the flight.",
            "I'll check the flight status."))


def _faq_point(s: _Session) -> None:
    """The optional ``faq_search`` for the policy text, just before acting (once)."""
    if not s.faq:
        return
    s.faq = False
    t = s.t
    query = pick(s.rng, _FAQ_QUERIES[t["kind"]]).format(**t)
    s.call("faq_search", {"query": query},
           {"results": [{"title": query.capitalize(), "url": f"https://{_AIRLINE.split()[0].lower()}.example/help/"
                         f"{t['kind']}", "snippet": _FAQ_SNIPPETS[t["kind"]]}]},
           ("Let me check the policy first.", "Checking our help articles.", "Let me confirm the rules."))


_FAQ_QUERIES = {"rebook": ("rebooking after cancellation", "cancelled flight rebooking policy",
                           "free change after {cause}"),
                "refund": ("refund after delay", "refund eligibility {fare} fare", "cancelled flight refund"),
                "lost_bag": ("delayed baggage claim", "lost luggage compensation", "bag delivery policy"),
                "upgrade": ("upgrade with miles", "mileage upgrade rules {fare}", "business upgrade award"),
                "policy": ("{topic} policy", "{topic} {fare} fare", "fare rules {topic}")}
_FAQ_SNIPPETS = {"rebook": "If we cancel your flight, you can rebook on the next available flight at no cost.",
                 "refund": "You are entitled to a refund if your flight is cancelled or delayed by more than 3 hours.",
                 "lost_bag": "Delayed bags are delivered free of charge; reasonable interim expenses are reimbursed.",
                 "upgrade": "Mileage upgrades are available on Main, Main Plus and Flex fares, subject to space.",
                 "policy": "Fare rules differ by fare class; see the fare rules of your ticket."}


def _yes(rng: np.random.Generator) -> str:
    return pick(rng, ("Yes please.", "Yes, go ahead.", "Sure, do it.", "Yes.", "OK, please do.", "Yep, thanks."))


def _act(s: _Session) -> None:
    """The kind's actions by the specialist speaking (the customer asked to go ahead before a change)."""
    rng, t = s.rng, s.t
    _faq_point(s)
    conf, kind = t["confirmation"], t["kind"]
    if kind == "rebook":
        s.call("search_flights", {"origin": t["origin"], "destination": t["destination"], "date": t["new_date"]},
               {"flights": t["options"]}, ("Let me look for other flights.", "Searching alternatives.",
                                           f"Checking {t['origin']} to {t['destination']} on {t['new_date']}."))
        s.ask(pick(rng, (f"The next available is {t['new_flight']} on {t['new_date']} at {t['new_time']}. "
                         "Shall I book it?", f"I can put you on {t['new_flight']}, departing {t['new_time']} on "
                         f"{t['new_date']}, at no cost. OK?")), _yes(rng))
        s.call("change_booking", {"confirmation": conf, "new_flight": t["new_flight"], "date": t["new_date"]},
               {"confirmation": conf, "flight_number": t["new_flight"], "date": t["new_date"],
                "departure": t["new_time"], "status": "ticketed", "fare_difference": 0},
               ("Booking it now.", "Rebooking you.", "Making the change."))
    elif kind == "refund":
        s.call("check_refund_eligibility", {"confirmation": conf},
               {"confirmation": conf, "eligible": True, "amount": t["amount"], "currency": "USD",
                "method": "original_payment", "basis": f"flight {t['disruption_status']}"},
               ("Let me check whether the ticket qualifies.", "Checking refund eligibility."))
        s.ask(pick(rng, (f"You qualify for a full refund of ${t['amount']:.2f} to your original payment. Shall I "
                         "process it?", f"The ticket is refundable: ${t['amount']:.2f}. Go ahead?")), _yes(rng))
        s.call("issue_refund", {"confirmation": conf, "amount": t["amount"], "method": "original_payment"},
               {"refund_id": t["refund_id"], "status": "processed", "amount": t["amount"], "eta_business_days": 7},
               ("Processing the refund.", "Issuing it now."))
    elif kind == "lost_bag":
        s.need("tag")
        s.call("track_bag", {"tag": t["tag"]},
               {"tag": t["tag"], "status": "delayed", "location": t["bag_at"], "forwarding_flight": t["bag_flight"],
                "last_scan": f"{t['date']}T{t['time']}"}, ("Let me trace the bag.", f"Tracking {t['tag']}."))
        s.ask(pick(rng, (f"Your bag is in {_AIRPORTS[t['bag_at']]} and goes out on {t['bag_flight']}. Shall I file "
                         "a delivery claim to your address?", f"Found it: it's at {t['bag_at']}. Want me to open a "
                         "claim so it's delivered to you?")), _yes(rng))
        s.call("file_claim", {"tag": t["tag"], "confirmation": conf, "description": t["bag"]},
               {"claim_id": t["claim_id"], "status": "open", "delivery": "within 24 hours"},
               ("Filing the claim.", "Opening a delayed-bag claim."))
    elif kind == "upgrade":
        s.call("check_upgrade", {"confirmation": conf, "cabin": "business"},
               {"available": True, "cabin": "business", "miles_required": t["cost"], "member_balance": t["miles"]},
               ("Checking upgrade space.", f"Looking at business availability on {t['flight']}."))
        s.ask(pick(rng, (f"Business is available for {t['cost']:,} miles (you have {t['miles']:,}). Go ahead?",
                         f"An upgrade costs {t['cost']:,} miles. Shall I redeem them?")), _yes(rng))
        s.call("redeem_upgrade", {"confirmation": conf, "member_id": t["member_id"], "cabin": "business"},
               {"status": "upgraded", "seat": t["seat"], "miles_debited": t["cost"],
                "new_balance": t["miles"] - t["cost"]}, ("Redeeming the miles.", "Upgrading you now."))
    else:
        s.call("get_fare_rules", {"fare_class": t["fare"], "topic": t["topic"]},
               {"fare_class": t["fare"], "topic": t["topic"], "rule": t["rule"]},
               ("Let me check the rules of your fare.", f"Checking the {t['fare']} fare rules."))


def _follow(s: _Session) -> None:
    """The chain's second specialist's one follow-up call."""
    t = s.t
    kind, conf = t["kind"], t["confirmation"]
    if kind in ("rebook", "refund"):
        s.call("credit_miles", {"member_id": t["member_id"], "miles": t["goodwill"], "reason": "service recovery"},
               {"member_id": t["member_id"], "credited": t["goodwill"], "new_balance": t["miles"] + t["goodwill"]},
               ("I'll add some miles for the trouble.", "Crediting goodwill miles."))
    elif kind == "lost_bag":
        s.call("issue_refund", {"confirmation": conf, "amount": t["interim"], "method": "original_payment"},
               {"refund_id": t["refund_id"], "status": "processed", "amount": t["interim"], "eta_business_days": 5},
               ("Reimbursing your interim expenses.", "Processing the essentials allowance."))
    elif kind == "upgrade":
        s.call("assign_seat", {"confirmation": conf, "seat": t["seat"]},
               {"confirmation": conf, "seat": t["seat"], "cabin": "business"}, ("Assigning your seat.",))
    else:
        s.call("check_refund_eligibility", {"confirmation": conf},
               {"confirmation": conf, "eligible": t["fare"] == "Flex", "amount": t["amount"], "currency": "USD"},
               ("Let me check what refund your ticket would get.", "Checking refundability."))


_ASK_INPUTS = {
    "rebook": "Rebook {confirmation} ({who}) from cancelled {flight} {origin}-{destination} onto the next flight.",
    "refund": "Refund {confirmation}: {flight} on {date} was {disruption_status}; customer wants their money back.",
    "lost_bag": "Bag {tag} on {confirmation} ({flight} to {destination}) did not arrive. Trace it, file a claim.",
    "upgrade": "Upgrade {confirmation} to business with miles; member {member_id}.",
    "policy": "{question} on a {fare} fare?",
}
_ASK_OUTPUTS = {
    "rebook": "Rebooked {confirmation} onto {new_flight} on {new_date} at {new_time}; e-ticket reissued.",
    "refund": "Refund {refund_id} of ${amount:.2f} processed to the original payment.",
    "lost_bag": "Bag {tag} is at {bag_at}, forwarded on {bag_flight}. Claim {claim_id} filed for delivery.",
    "upgrade": "Upgraded {confirmation} to business, seat {seat}; {cost} miles debited.",
    "policy": "{rule}",
}
_ASK_SECOND = {
    "rebook": ("Credit goodwill miles to {member_id} for the cancelled flight.", "Credited {goodwill} miles."),
    "refund": ("Credit goodwill miles to {member_id} for the disruption.", "Credited {goodwill} miles."),
    "lost_bag": ("Reimburse interim expenses for {confirmation}.", "Reimbursed ${interim:.2f}."),
    "upgrade": ("Assign a business seat on {confirmation}.", "Seat {seat} assigned."),
    "policy": ("Is {confirmation} refundable?", "Refundable: {refundable}."),
}


def _consult(s: _Session, second: bool) -> None:
    """``ask_<specialist>``: the specialist used as a tool; its final text comes back."""
    t = s.t
    if second:
        agent, (question, answer) = SECOND[t["kind"]][0], _ASK_SECOND[t["kind"]]
    else:
        agent, question, answer = SPECIALIST[t["kind"]], _ASK_INPUTS[t["kind"]], _ASK_OUTPUTS[t["kind"]]
        if t["kind"] == "lost_bag":
            s.need("tag")
    s.call(f"ask_{agent}", {"input": question.format(**t)}, answer.format(**t),
           (f"Let me check with our {agent} team.", f"I'll ask the {agent} specialist.", "One moment."))


# -- the seven strategies -------------------------------------------------------------------------
_TO_SPEC = {"rebook": ("flight cancelled, customer needs rebooking", "rebooking after a cancellation",
                       "customer wants another flight"),
            "refund": ("refund request after a disruption", "customer wants a refund", "disrupted flight, refund"),
            "lost_bag": ("bag did not arrive", "delayed baggage", "lost luggage report"),
            "upgrade": ("upgrade with miles", "customer wants to redeem miles for business", "mileage upgrade"),
            "policy": ("fare rules question", "policy question about the ticket", "question on fare conditions")}
_TO_SECOND = {"rebook": "goodwill miles for the cancellation", "refund": "goodwill miles for the disruption",
              "lost_bag": "reimburse interim expenses", "upgrade": "assign a business seat",
              "policy": "check whether the ticket is refundable"}


def _hand_to(s: _Session, agent: str, reasons: tuple[str, ...]) -> None:
    s.transfer(agent, reasons, (f"Let me transfer you to our {agent} team.", f"I'll hand you over to {agent}.",
                                "Connecting you with a specialist who can help.", "Transferring you now."))


def _triage_solo(s: _Session) -> str:
    _lookup(s)
    if s.rng.random() < _P_SOLO_STATUS:
        _status(s)
    _faq_point(s)
    return "advice"


def _direct_handoff(s: _Session) -> str:
    _hand_to(s, SPECIALIST[s.t["kind"]], _TO_SPEC[s.t["kind"]])
    _lookup(s)
    _act(s)
    return "done"


def _gather_then_handoff(s: _Session) -> str:
    t = s.t
    _lookup(s)
    _status(s)
    facts = f"{t['confirmation']}, {t['flight']} {t['date']}"
    _hand_to(s, SPECIALIST[t["kind"]], tuple(f"{r}; {facts}" for r in _TO_SPEC[t["kind"]]))
    _act(s)
    return "done"


def _agents_as_tools(s: _Session) -> str:
    _lookup(s)
    _faq_point(s)
    _consult(s, second=False)
    if s.rng.random() < _P_ASK_SECOND:
        _consult(s, second=True)
        return "done+"
    return "done"


def _bounce_back(s: _Session) -> str:
    rng, kind = s.rng, s.t["kind"]
    right = SPECIALIST[kind]
    wrong = pick(rng, tuple(a for a in SPECIALISTS if a != right))
    _hand_to(s, wrong, _TO_SPEC[kind])
    if rng.random() < _P_BOUNCE_LOOKUP:
        _lookup(s)
    s.transfer("triage", (f"not a {wrong} request", "wrong department", f"this is for {right}"),
               (f"Sorry, this isn't something {wrong} handles. Sending you back to the front desk.",
                "This looks like it belongs to another team; transferring you back.", "Wrong desk, my apologies."))
    _hand_to(s, right, _TO_SPEC[kind])
    _lookup(s)
    _act(s)
    return "done"


def _specialist_chain(s: _Session) -> str:
    kind = s.t["kind"]
    _hand_to(s, SPECIALIST[kind], _TO_SPEC[kind])
    _lookup(s)
    _act(s)
    second = SECOND[kind][0]
    s.transfer(second, (_TO_SECOND[kind],), (f"I'll pass you to our {second} team for one more thing.",
                                             f"Handing over to {second} to finish up.",
                                             "One more step with a colleague."))
    _follow(s)
    return "done+"


def _escalate_human(s: _Session) -> str:
    t = s.t
    _lookup(s)
    if s.rng.random() < _P_ESCALATE_STATUS:
        _status(s)
    _faq_point(s)
    s.transfer("human", ("customer asked for a person", "complex case, needs an agent",
                         f"{t['kind'].replace('_', ' ')} case needs manual handling"),
               ("I'll connect you with one of our agents.", "Let me get a colleague from customer relations.",
                "Transferring you to a human agent."))
    return "human"


_STRATEGY: dict[str, Callable[[_Session], str]] = {
    "triage_solo": _triage_solo, "direct_handoff": _direct_handoff, "gather_then_handoff": _gather_then_handoff,
    "agents_as_tools": _agents_as_tools, "bounce_back": _bounce_back, "specialist_chain": _specialist_chain,
    "escalate_human": _escalate_human}


# -- the answer ---------------------------------------------------------------------------------------
_DONE = {
    "rebook": ("You're rebooked on {new_flight} on {new_date}, departing {new_time}. The new e-ticket is on its way "
               "to {email}.", "Done: you're on {new_flight} at {new_time} on {new_date}, no fare difference. Your "
               "confirmation {confirmation} stays the same.", "All set. {new_flight} leaves {origin} at {new_time} "
               "on {new_date}, and your seat is confirmed."),
    "refund": ("Your refund of ${amount:.2f} is processed (reference {refund_id}). Allow 5-7 business days.",
               "Refund {refund_id} for ${amount:.2f} is on its way to your original card.",
               "I've refunded ${amount:.2f} for {confirmation}. The reference is {refund_id}."),
    "lost_bag": ("Your bag is at {bag_at} and will arrive on {bag_flight}. Claim {claim_id} covers delivery to your "
                 "address within 24 hours.", "Good news, we found the bag in {bag_city}. Claim {claim_id} is open "
                 "and it will be delivered within a day.", "Claim {claim_id} is filed. Your {bag} comes in on "
                 "{bag_flight} and we'll bring it to you."),
    "upgrade": ("You're upgraded to business on {flight}, seat {seat}. {cost:,} miles were deducted.",
                "Done, business class on {flight} in seat {seat}, for {cost:,} miles.",
                "Enjoy business class! Seat {seat} on {flight}, {cost:,} miles redeemed."),
    "policy": ("{rule}", "For your {fare} ticket: {rule}", "Here's the rule. {rule}"),
}
_ADVICE = {
    "rebook": ("Your flight {flight} was cancelled because of {cause}. You can rebook free of charge in the app under "
               "My Trips, or ask for a full refund.", "{flight} on {date} is cancelled ({cause}). Rebooking is free: "
               "choose any flight to {dest_city} under My Trips."),
    "refund": ("Since {flight} was {disruption_status}, your ticket qualifies for a full refund of ${amount:.2f}. "
               "Request it under My Trips > Cancel and refund.", "Your {fare} ticket is refundable because the flight "
               "was {disruption_status}: ${amount:.2f}, via My Trips."),
    "lost_bag": ("I'm sorry your bag didn't arrive. File a delayed-bag report at the baggage office or online; most "
                 "bags are delivered within 24 hours.", "Sorry about your {bag}. Please report it online with your "
                 "tag number; delayed bags are delivered free of charge."),
    "upgrade": ("Business has seats on {flight}. You can request the upgrade with miles in the app under Manage "
                "booking.", "Yes, {flight} has business seats. Upgrade with miles under Manage booking."),
    "policy": _DONE["policy"],
}
_WRONG = {
    "rebook": ("Your flight {flight} shows as operating, so there is nothing to rebook.",
               "I'm sorry, there are no seats to {dest_city} this week."),
    "refund": ("Your {fare} fare is non-refundable, so I can't issue a refund.",
               "You're eligible for a travel credit only, not a refund."),
    "lost_bag": ("Your bag shows as delivered to the carousel in {dest_city}. Please check the baggage office.",),
    "upgrade": ("There are no upgrade seats left on {flight}, sorry.", "You don't have enough miles for that upgrade."),
    "policy": _WRONG_RULES,
}
_GIVE_UP = ("I'm sorry, I wasn't able to sort this out in chat. Please call us at 1-800-555-0142.",
            "Unfortunately I can't complete this right now. Please try again later.")
_EXTRA = {"rebook": "I've also added {goodwill:,} miles to your account for the trouble.",
          "refund": "I've also added {goodwill:,} miles to your account for the trouble.",
          "lost_bag": "We've also reimbursed ${interim:.2f} for essentials.",
          "upgrade": "Seat {seat} is assigned.", "policy": "If you cancel, your ticket is {refundable_text}."}
_ELSE_ASKS = ("Is there anything else I can help you with?", "Anything else I can do for you today?",
              "Is there anything else?")
_NO_MORE = ("No, that's all. Thanks!", "Nope, that's it.", "No thank you.", "That's everything, thanks.")


def _answer(s: _Session, mode: str, correct: bool) -> tuple[str, str]:
    """The answer to the customer, and its core (without a greeting)."""
    rng, t = s.rng, s.t
    kind = t["kind"]
    if not correct:
        body = pick(rng, _GIVE_UP) if rng.random() < 0.4 else pick(rng, _WRONG[kind]).format(**t)
        if mode == "human":
            body = pick(rng, ("I'll need to look into this with the airport team and will email you within 48 hours.",
                              "I can't change this from here, I'm afraid; we'll be in touch.", body))
    else:
        body = pick(rng, (_ADVICE if mode == "advice" else _DONE)[kind]).format(**t)
        if mode == "done+":
            body = f"{body} {_EXTRA[kind].format(**t)}"
    if mode == "human":
        return f"Hi {t['first']}, this is {t['human']} from {_AIRLINE} customer relations. {body}", body
    return body, body


def _episode(rng: np.random.Generator, strategy: str, t: dict, correct: bool) -> _Session:
    s = _Session(rng, t)
    mode = _STRATEGY[strategy](s)
    text, core = _answer(s, mode, correct)
    if rng.random() < _P_ANYTHING_ELSE:  # optional, whatever the arm, the kind and the strategy
        s.ask(f"{text} {pick(rng, _ELSE_ASKS)}", pick(rng, _NO_MORE))
        recap = next((x for x in core.split(". ") if len(x.split()) >= 5), core).rstrip(".")
        s.say(f"{pick(rng, ('Thanks for contacting us.', 'Understood.', 'Alright.'))} To recap: {recap}. "
              f"{pick(rng, ('Have a good trip!', 'Take care.', 'Goodbye!'))}")
    else:
        s.say(text)
    return s


# -- the requests ------------------------------------------------------------------------------------
_OPENINGS = {
    "rebook": ("My flight {flight} from {orig_city} to {dest_city} on {date} was cancelled. Can you get me on "
               "another flight?", "Hi, {flight} got cancelled and I still need to get to {dest_city}. Please "
               "rebook me.", "Hello, I just got a text that my flight to {dest_city} is cancelled. What are my "
               "options for rebooking?"),
    "refund": ("My flight {flight} was {disruption_status} and I don't want to travel anymore. I'd like a refund.",
               "Hi, {flight} to {dest_city} was {disruption_status}. I want my money back, please.",
               "Hello, can I get a refund? My {date} flight was {disruption_status}."),
    "lost_bag": ("I landed in {dest_city} on {flight} and my suitcase never came out. It's a {bag}.",
                 "Hi, my bag didn't arrive on {flight}. It's a {bag}.",
                 "Hello, you lost my luggage on the way to {dest_city}! A {bag}."),
    "upgrade": ("Can I use my miles to upgrade to business on {flight} on {date}?",
                "Hi, I'd like to upgrade my {dest_city} flight to business with points.",
                "Hello! Is there a business seat on {flight}? I'd pay with miles."),
    "policy": ("{question} on my ticket?", "Hi, quick question: {question_l}?",
               "Hello. {question} when flying to {dest_city}?"),
}


def _flights(rng: np.random.Generator, t: dict) -> None:
    """The trip, its disruption and the alternatives offered."""
    origin, destination = (str(x) for x in rng.choice(list(_AIRPORTS), size=2, replace=False))
    month, day = int(rng.integers(1, 13)), int(rng.integers(1, 28))
    hours = sorted(int(h) for h in rng.choice(np.arange(6, 22), size=4, replace=False))
    mins = [f"{int(m):02d}" for m in rng.choice([0, 5, 15, 20, 30, 40, 45, 55], size=4)]
    t.update(origin=origin, destination=destination, orig_city=_AIRPORTS[origin], dest_city=_AIRPORTS[destination],
             flight=f"NW{int(rng.integers(100, 3000))}", date=f"2025-{month:02d}-{day:02d}",
             new_date=f"2025-{month:02d}-{day + 1:02d}", time=f"{hours[0]:02d}:{mins[0]}",
             cause=pick(rng, _CAUSES), disruption_status=pick(rng, ("cancelled", "delayed")),
             delay=int(rng.integers(190, 420)))
    options = [{"flight_number": f"NW{int(rng.integers(100, 3000))}", "departure": f"{h:02d}:{m}",
                "seats_left": int(rng.integers(1, 9))} for h, m in zip(hours[1:], mins[1:])]
    options = options[:int(rng.integers(2, 4))]
    chosen = options[int(rng.integers(len(options)))]
    t.update(options=options, new_flight=chosen["flight_number"], new_time=chosen["departure"])


def _task(rng: np.random.Generator, kind: str) -> dict:
    first, last = name(rng), name(rng)
    t: dict[str, Any] = {"kind": kind, "first": first, "last": last, "who": f"{first} {last}", "human": name(rng),
                         "email": f"{first.lower()}.{last.lower()}@example.com", "confirmation": _code(rng),
                         "member_id": f"NW{_digits(rng, 8)}", "tier": pick(rng, ("Blue", "Silver", "Gold"))}
    _flights(rng, t)
    topic = pick(rng, tuple(_RULES))
    fare = pick(rng, _FARES if kind not in ("upgrade", "refund") else _FARES[1:])
    cost = int(pick(rng, (15000, 20000, 25000, 30000)))
    t.update(fare=fare, miles=cost + int(rng.integers(1, 60)) * 1000, cost=cost, seat=f"{int(rng.integers(1, 6))}"
             f"{pick(rng, tuple('ACDF'))}", amount=round(float(rng.uniform(89, 780)), 2),
             refund_id=f"RF-{_digits(rng, 7)}", tag=f"NW{_digits(rng, 6)}", bag=pick(rng, _BAGS),
             bag_at=str(rng.choice([a for a in _AIRPORTS if a not in (t["origin"], t["destination"])])),
             bag_flight=f"NW{int(rng.integers(100, 3000))}", claim_id=f"BG-{_digits(rng, 6)}", topic=topic,
             question=_RULES[topic][0], rule=_RULES[topic][1].format(fare=fare),
             goodwill=int(pick(rng, (2500, 5000, 7500))), interim=float(pick(rng, (50, 75, 100, 150))),
             refundable=fare == "Flex", refundable_text="fully refundable" if fare == "Flex" else "not refundable",
             volunteered=bool(rng.random() < _P_VOLUNTEER))
    t["bag_city"] = _AIRPORTS[t["bag_at"]]
    t["question_l"] = t["question"][0].lower() + t["question"][1:]
    text = pick(rng, _OPENINGS[kind]).format(**t)
    if t["volunteered"]:
        text += pick(rng, (" My confirmation is {confirmation}.", " Booking ref {confirmation}.",
                           " (confirmation {confirmation})", " Reservation code: {confirmation}")).format(**t)
        if kind == "lost_bag":
            text += pick(rng, (" Tag number {tag}.", " The bag tag is {tag}.")).format(**t)
    t["text"] = text + pick(rng, ("", "", f" Thanks, {first}", f" - {t['who']}"))
    return t


def handoff(n_questions: int = 60, n_samples: int = 4, random_state: RandomState = 0, *,
            arms: dict[str, dict[str, float]] | None = None) -> World:
    """Generate the multi-agent airline-support world with handoffs (OpenAI ``tool_calls`` records).

    Parameters
    ----------
    n_questions, n_samples
        Customer requests (their kinds in turn, :data:`KINDS`), and episodes per request and arm.
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.
    arms
        Arm name -> strategy mixture (default: :data:`ARMS`, ``base`` and ``rl``, which differ
        only in it).

    Returns
    -------
    World
        Records in format ``openai`` (every assistant message names its agent); truth ``arm,
        question_id, sample_id, strategy, kind, n_calls`` (tool calls, handoffs and failed ones
        included), ``n_failures``, ``n_handoffs``, ``n_user_turns`` (user messages after the
        first) and ``correct``.

    Examples
    --------
    >>> w = handoff(n_questions=2, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"]))
    ('openai', 4, ['base', 'rl'])
    >>> w.records[0]["messages"][-1]["role"], "tool_calls" in w.records[0]["messages"][-1]
    ('assistant', False)
    """
    rng = as_generator(random_state)
    arms = arms or ARMS
    tasks = [(f"handoff-{i:04d}", _task(rng, KINDS[i % len(KINDS)])) for i in range(n_questions)]

    def episode(rng: np.random.Generator, arm: str, qid: str, sample: int, strategy: str, t: dict
                ) -> tuple[dict, tuple]:
        correct = bool(rng.random() < _SUCCESS[strategy])
        s = _episode(rng, strategy, t, correct)
        return ({"arm": arm, "question_id": qid, "sample_id": sample, "gold": [], "correct": correct,
                 "messages": s.messages},
                (t["kind"], s.n_calls, s.failures, s.handoffs, s.user_turns, correct))

    return planted_world("handoff", "openai", rng, tasks, arms, n_samples, episode, _SUCCESS,
                         truth_schema={"kind": pl.String, "n_calls": pl.Int64, "n_failures": pl.Int64,
                                       "n_handoffs": pl.Int64, "n_user_turns": pl.Int64, "correct": pl.Boolean})
