"""A dual-control technical-support world (tau2-bench telecom-like): the phone is the user's.

A customer of a mobile carrier writes in because something on their phone does not work: no
mobile data (the month's data is used up), no data while abroad (roaming off on the line), no
picture messages (MMS not provisioned), no service after a SIM swap (the new SIM not yet
provisioned), or Wi-Fi calling failing (not enabled on the line): :data:`KINDS`. The agent
has eleven typed tools on the carrier's side, in OpenAI ``tool_calls`` format (:data:`TOOLS`):
``get_customer(phone_number)``, ``get_line_details(line_id)``, ``get_data_usage(line_id)``,
``check_network_status(area_code)``, ``enable_roaming(line_id)``, ``refuel_data(line_id, gb)``,
``enable_feature(line_id, feature)``, ``reprovision_sim(line_id)``,
``reset_network_settings(line_id)`` (a push to the device), ``open_ticket(line_id, category,
summary)`` and ``transfer_to_human(summary)``. Results are JSON.

*Dual control*: the device is the user's. The agent asks the user to do things on the phone
and read back what it shows ("Toggle airplane mode on and off, then tell me how many signal
bars you have."); the user's replies are ordinary ``user`` messages between the assistant's
tool calls ("No bars at all. It says No service."). An episode interleaves tool calls, tool
results, requests to the user and the user's replies, and ends with the assistant's last
message (the fix confirmed or not, or a ticket / a transfer).

The kind of issue decides WHICH fix ends an episode (:data:`FIX`: ``refuel_data``,
``enable_roaming``, ``enable_feature`` with ``mms`` or ``wifi_calling``, ``reprovision_sim``);
the strategy decides the shape. Seven planted strategies (calls and user turns before
failures, optional steps, a phone number asked for, and off-script replies):

===================  ========================================================================
``account_first``    ``get_customer``, ``get_line_details``, optionally ``get_data_usage``
                     (:data:`_P_USAGE`), and only then one targeted device check with the
                     user; the fix; the user asked to restart and confirm (3-4 calls, 2 turns)
``device_first``     two to four device checks with the user (one to three of airplane mode,
                     the mobile-data switch, the APN, a restart; then the check aimed at the
                     symptom) before any tool; ``get_customer``, optionally
                     ``get_line_details`` (:data:`_P_LINE`); the fix; confirm (2-3, 3-5)
``outage_first``     ``check_network_status`` for the user's area code first; a targeted
                     device check; ``get_customer``, optionally ``get_line_details``; the fix;
                     confirm (3-4 calls, 2 turns)
``checklist``        the same long script whatever the issue: airplane mode, mobile-data
                     switch, ``get_customer``, ``get_line_details``, ``check_network_status``,
                     ``get_data_usage``, APN, restart, the fix, confirm (5 calls, 5 turns)
``quick_fix``        ``get_customer``, then a remote push at once, without diagnosis:
                     optionally ``reset_network_settings`` (:data:`_P_RESET`), the fix; the
                     user asked to restart and confirm (2-3 calls, 1 turn)
``escalate``         ``get_customer``, a minimal diagnosis (one targeted device check, or
                     ``get_line_details``: :data:`_P_ESCALATE_ASK`), then ``open_ticket``
                     (:data:`_P_TICKET`) or ``transfer_to_human``; no fix (2-3 calls, 0-1)
``hypothesis_test``  ``get_customer``, then one to three rounds of one targeted question to
                     the user and one targeted lookup (an outage: ``check_network_status``;
                     data used up: ``get_data_usage``; a line setting: ``get_line_details``),
                     wrong hypotheses first, each lookup once; the fix; confirm (3-5, 2-4)
===================  ========================================================================

Failures are execution, not strategy: every tool call fails with probability :data:`_P_FAIL`
and is followed at once by the corrected call of the same tool (a mistyped line id, ``Error:
line LN3084291 not found``; a phone number mistyped or formatted, a JSON ``{"error":
"customer_not_found", ...}`` or ``{"error": "invalid_phone_number", ...}``; an area code given
as the whole number; a data pack size that does not exist; a feature name in the wrong case;
a ticket category unknown; an empty transfer summary; or, :data:`_P_503` of failures, ``503
Service Unavailable: upstream timeout, please retry``, retried with the same arguments).
Optional steps at fixed rates whatever the arm, the issue and the strategy: a final
``get_line_details`` to confirm the line's state (:data:`_P_FINAL_LINE`), a ``get_customer``
re-check of the account's contact details (:data:`_P_RECHECK`), the user asked to rate the
help (:data:`_P_RATE`). The user gives their phone number in the first message
(:data:`_P_VOLUNTEER` of the requests) or only when asked, at the first call that needs it;
the user answers a request off-script or asks a question back (:data:`_P_OFFSCRIPT` of the
device requests), and the agent answers and asks again. Names, numbers, phones, settings
paths and the assistant's and user's words vary inside every strategy. Every strategy is used
on every kind of issue (the strategy is drawn independently of it). The ``rl`` arm differs
from ``base`` only in its mixture; success is drawn at the strategy's rate (random within it)
and only shows in the user's last reply about the device and the assistant's closing words.

The truth carries, beside ``strategy``, ``kind`` (of issue), ``n_calls`` (tool calls, failed
ones included), ``n_failures`` (failed calls), ``n_user_turns`` (user messages after the
first) and ``correct``.

Written from scratch as a held-out world, without reference to how trajectories are segmented
or clustered.
"""
from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import polars as pl

from mechanism.core.options import RandomState, as_generator
from mechanism.datasets.worlds._base import World, name, pick, planted_world

STRATEGIES = ("account_first", "device_first", "outage_first", "checklist", "quick_fix", "escalate",
              "hypothesis_test")
KINDS = ("no_data", "roaming", "mms", "sim_swap", "wifi_calling")
TOOLS = ("get_customer", "get_line_details", "get_data_usage", "check_network_status", "enable_roaming",
         "refuel_data", "enable_feature", "reprovision_sim", "reset_network_settings", "open_ticket",
         "transfer_to_human")
#: the tool whose call fixes each kind of issue
FIX = {"no_data": "refuel_data", "roaming": "enable_roaming", "mms": "enable_feature", "sim_swap": "reprovision_sim",
       "wifi_calling": "enable_feature"}
ARMS = {
    "base": {"account_first": 0.18, "device_first": 0.18, "outage_first": 0.12, "checklist": 0.15,
             "quick_fix": 0.17, "escalate": 0.12, "hypothesis_test": 0.08},
    "rl": {"account_first": 0.20, "device_first": 0.10, "outage_first": 0.08, "checklist": 0.10,
           "quick_fix": 0.10, "escalate": 0.06, "hypothesis_test": 0.36},
}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"account_first": 0.7, "device_first": 0.6, "outage_first": 0.6, "checklist": 0.75, "quick_fix": 0.45,
            "escalate": 0.2, "hypothesis_test": 0.85}
#: the chance that a tool call fails (it is followed by the corrected call of the same tool)
_P_FAIL = 0.12
#: the share of failures that are a 503 timeout (retried with the same arguments)
_P_503 = 0.3
#: optional steps, at fixed rates whatever the arm, the issue and the strategy
_P_FINAL_LINE = 0.3  # a last get_line_details to confirm the line's state
_P_RECHECK = 0.2  # a get_customer re-check of the contact details on the account
_P_RATE = 0.25  # the user asked to rate the help
_P_OFFSCRIPT = 0.12  # per device request: the user answers off-script or asks back first
_P_VOLUNTEER = 0.5  # per request (task): the phone number is in the first message
#: steps inside a strategy (part of it whichever way they go)
_P_USAGE = 0.5  # account_first: get_data_usage after the line
_P_LINE = 0.5  # device_first, outage_first: get_line_details after the customer
_P_RESET = 0.6  # quick_fix: reset_network_settings pushed before the fix
_P_ESCALATE_ASK = 0.5  # escalate: one device check (else a get_line_details)
_P_TICKET = 0.6  # escalate: a ticket (else a transfer to a human)

_FEATURE = {"mms": "mms", "wifi_calling": "wifi_calling"}
_CATEGORY = {"no_data": "mobile_data", "roaming": "roaming", "mms": "messaging", "sim_swap": "sim",
             "wifi_calling": "wifi_calling"}
_PLANS = (("Basic 5GB", 5), ("Everyday 15GB", 15), ("Plus 30GB", 30), ("Family 50GB", 50))
_PHONES = {"iPhone 13": "ios", "iPhone 15": "ios", "iPhone SE": "ios", "Pixel 7": "pixel", "Pixel 8a": "pixel",
           "Galaxy S22": "samsung", "Galaxy A54": "samsung", "Moto G Power": "pixel"}
_MOBILE_PATH = {"ios": ("Settings > Cellular", "Settings > Mobile Service"),
                "pixel": ("Settings > Network & internet > SIMs", "Settings > Network & internet > Mobile network"),
                "samsung": ("Settings > Connections > Mobile networks", "Settings > Connections > Mobile networks")}
_DATA_SWITCH = {"ios": "Cellular Data", "pixel": "Mobile data", "samsung": "Mobile data"}
_ABOUT = {"ios": "Settings > General > About", "pixel": "Settings > About phone > SIM status",
          "samsung": "Settings > About phone > Status information > SIM card status"}
_ABROAD = {"Spain": ("Movistar", "Vodafone ES"), "Portugal": ("MEO", "NOS"), "Mexico": ("Telcel", "AT&T MX"),
           "Japan": ("NTT docomo", "SoftBank"), "Italy": ("TIM", "WINDTRE"), "Canada": ("Rogers", "Bell")}
_CARRIER = "Nimbus"
_FAIL_503 = "503 Service Unavailable: upstream timeout, please retry"
_GB_PACKS = (1, 2, 5, 10)

#: the agent asking for the phone number (only when the first message did not give it)
_NUMBER_ASKS = ("Could you tell me the phone number on the account?",
                "Sure, I can help. What's the mobile number of the line with the problem?",
                "To look you up I need the phone number of the line. What is it?",
                "Which phone number is this about?")
#: the agent asking for a rating (at the end of its closing message)
_RATE_ASKS = ("Before you go: on a scale of 1 to 5, how would you rate my help today?",
              "Could you rate this conversation from 1 (poor) to 5 (great)?",
              "One last thing, how would you rate the support you got today, 1 to 5?")
#: the user's off-script replies and questions back to a device request
_OFFSCRIPT = ("Wait, will restarting delete my photos?", "Is this going to cost me anything?",
              "Hang on, my battery is at 5%, let me plug it in first.",
              "Why do I have to do all this, can't you just fix it from your side?",
              "Sorry, where do I find that? I'm not good with phones.", "I'm driving, give me a minute.",
              "Do I have to do that right now?")
_OFFSCRIPT_ANSWERS = {
    "Wait, will restarting delete my photos?": ("No, nothing on the phone is deleted.",
                                                "Not at all, your photos and apps stay where they are."),
    "Is this going to cost me anything?": ("No, checking this is free.", "No charge for any of this."),
    "Hang on, my battery is at 5%, let me plug it in first.": ("Of course, take your time.", "No problem, I'll wait."),
    "Why do I have to do all this, can't you just fix it from your side?": (
        "I understand. Some settings live only on your phone, so I need your eyes on it.",
        "Part of this is on the device, which I can't see from here."),
    "Sorry, where do I find that? I'm not good with phones.": ("No worries, I'll guide you.",
                                                               "That's fine, step by step:"),
    "I'm driving, give me a minute.": ("Please stay safe; reply whenever you've stopped.", "Sure, no rush."),
    "Do I have to do that right now?": ("It helps me find the problem faster, if you can.",
                                        "If you can, yes; it only takes a moment."),
}


def _digits(rng: np.random.Generator, n: int) -> str:
    return "".join(str(int(d)) for d in rng.integers(0, 10, size=n))


def _call_id(rng: np.random.Generator) -> str:
    return "call_" + "".join(pick(rng, tuple("abcdefghijklmnopqrstuvwxyz0123456789")) for _ in range(10))


def _mistype(rng: np.random.Generator, text: str, start: int = 0) -> str:
    """``text`` with two neighbouring different characters swapped after ``start``, or its last
    one dropped."""
    spots = [i for i in range(start, len(text) - 1) if text[i] != text[i + 1]]
    if spots and rng.random() < 0.7:
        i = spots[int(rng.integers(len(spots)))]
        return text[:i] + text[i + 1] + text[i] + text[i + 2:]
    return text[:-1]


def _formatted(number: str, style: int) -> str:
    return (f"{number[:3]}-{number[3:6]}-{number[6:]}", f"({number[:3]}) {number[3:6]}-{number[6:]}",
            f"{number[:3]} {number[3:6]} {number[6:]}", number, f"+1 {number[:3]} {number[3:6]} {number[6:]}")[style]


def _broken(rng: np.random.Generator, tool: str, args: dict) -> tuple[dict, str]:
    """A broken version of a call and the error it gets."""
    if rng.random() < _P_503:
        return dict(args), _FAIL_503
    if tool == "get_customer":
        number = args["phone_number"]
        if rng.random() < 0.5:
            bad = _formatted(number, int(rng.choice([0, 1, 4])))
            return {"phone_number": bad}, json.dumps({"error": "invalid_phone_number",
                                                      "message": f"phone_number must be 10 digits, got '{bad}'"})
        bad = _mistype(rng, number, start=3)
        return {"phone_number": bad}, json.dumps({"error": "customer_not_found",
                                                  "message": f"No customer with phone number {bad}"})
    if tool == "check_network_status":
        bad = pick(rng, (args["area_code"][:2], args["area_code"] + _digits(rng, 7)))
        return {"area_code": bad}, f"Error: invalid area_code '{bad}': expected 3 digits"
    if tool == "transfer_to_human":
        return dict(args, summary=""), json.dumps({"error": "summary is required"})
    if tool == "refuel_data" and rng.random() < 0.5:
        bad = pick(rng, (3, 4, 20))
        return dict(args, gb=bad), f"Error: gb must be one of 1, 2, 5, 10 (got {bad})"
    if tool == "enable_feature" and rng.random() < 0.5:
        bad = {"mms": pick(rng, ("MMS", "picture_messaging")),
               "wifi_calling": pick(rng, ("wifi-calling", "WiFi Calling", "wifi"))}[args["feature"]]
        return dict(args, feature=bad), json.dumps({"error": "unknown_feature",
                                                    "message": f"feature must be one of mms, wifi_calling, volte "
                                                               f"(got '{bad}')"})
    if tool == "open_ticket" and rng.random() < 0.5:
        bad = pick(rng, ("data issue", "network", "technical", "phone problem"))
        return dict(args, category=bad), (f"Error: unknown category '{bad}'; expected one of mobile_data, roaming, "
                                          "messaging, sim, wifi_calling")
    lid = args["line_id"]
    bad = lid.lower() if rng.random() < 0.25 else _mistype(rng, lid, start=2)
    return dict(args, line_id=bad), f"Error: line {bad} not found"


class _Session:
    """One conversation in OpenAI chat format: tool calls (failures retried corrected),
    requests to the user and the user's replies."""

    def __init__(self, rng: np.random.Generator, task: dict) -> None:
        self.rng, self.t = rng, task
        self.messages: list[dict] = [
            {"role": "system", "content": pick(rng, (
                f"You are a technical support agent for {_CARRIER} Mobile. Use the tools on the carrier's side and "
                "guide the customer through the checks on their own phone.",
                f"You help {_CARRIER} customers with problems on their phone line. You cannot see or touch the "
                "customer's device; ask them to check it.",
                f"You are {_CARRIER}'s tier-1 tech support. Diagnose and fix connectivity issues."))},
            {"role": "user", "content": task["text"]}]
        self.n_calls = 0
        self.failures = 0
        self.user_turns = 0
        self.number_known = task["volunteered"]
        self.fixed = False

    # -- messages ---------------------------------------------------------------------------
    def _turn(self, tool: str, args: dict, result: Any, said: str | None) -> None:
        self.n_calls += 1
        cid = _call_id(self.rng)
        self.messages.append({"role": "assistant", "content": said, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}]})
        self.messages.append({"role": "tool", "tool_call_id": cid, "name": tool,
                              "content": result if isinstance(result, str) else json.dumps(result)})

    def call(self, tool: str, args: dict, result: Any, says: tuple[str, ...]) -> Any:
        """The call (first, where it fails, a broken one answered by an error); ``says``: what
        the assistant may say with it (or nothing)."""
        said = pick(self.rng, says) if self.rng.random() < 0.7 else None
        if self.rng.random() < _P_FAIL:
            bad, err = _broken(self.rng, tool, args)
            self._turn(tool, bad, err, said)
            self.failures += 1
            said = pick(self.rng, ("Let me try that again.", "That didn't go through; retrying.", "Retrying.",
                                   "Sorry, a typo on my side.")) if self.rng.random() < 0.6 else None
        self._turn(tool, args, result, said)
        return result

    def _user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})
        self.user_turns += 1

    def say(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})

    def ask(self, request: str, reply: str, *, offscript: bool = True) -> None:
        """A request to the user and their reply; sometimes an off-script reply first, answered,
        and the request made again."""
        self.say(request)
        if offscript and self.rng.random() < _P_OFFSCRIPT:
            back = pick(self.rng, _OFFSCRIPT)
            self._user(back)
            self.say(f"{pick(self.rng, _OFFSCRIPT_ANSWERS[back])} {request}")
        self._user(reply)

    def need_number(self) -> None:
        if not self.number_known:
            t = self.t
            self.ask(pick(self.rng, _NUMBER_ASKS), pick(self.rng, (
                "It's {n}.", "{n}", "My number is {n}.", "{n}, it's under {who}.")).format(
                n=_formatted(t["number"], int(self.rng.integers(5))), who=t["who"]), offscript=False)
            self.number_known = True


# -- what the backend returns ------------------------------------------------------------------
def _customer(t: dict) -> dict:
    lines = [{"line_id": lid, "phone_number": num} for lid, num in t["lines"]]
    return {"customer_id": t["customer_id"], "name": t["who"], "phone_number": t["number"], "account_status": "active",
            "plan": t["plan"], "email": t["email"], "lines": lines}


def _line(s: _Session) -> dict:
    t, fixed = s.t, s.fixed
    kind = t["kind"]
    features = {"mms": kind != "mms" or fixed, "wifi_calling": kind != "wifi_calling" or fixed, "volte": True}
    sim = {"iccid": t["iccid"], "status": "pending_activation" if kind == "sim_swap" and not fixed else "active",
           "swapped": t["swap_date"] if kind == "sim_swap" else None}
    return {"line_id": t["line"], "phone_number": t["number"], "plan": t["plan"], "status": "active",
            "roaming_enabled": t["roams"] or (kind == "roaming" and fixed), "features": features, "sim": sim,
            "device": t["phone"]}


def _usage(s: _Session) -> dict:
    t = s.t
    limit = t["limit"]
    used = limit if t["kind"] == "no_data" and not s.fixed else round(float(t["used"]), 2)
    added = t["refuel"] if t["kind"] == "no_data" and s.fixed else 0
    return {"line_id": t["line"], "cycle_ends": t["cycle_end"], "used_gb": used, "limit_gb": limit + added,
            "remaining_gb": round(limit + added - used, 2), "throttled": used >= limit + added}


def _network(s: _Session) -> dict:
    rng, t = s.rng, s.t
    total = int(rng.integers(8, 40))
    status = pick(rng, ("normal", "normal", "normal", "degraded"))
    incidents = [] if status == "normal" else [{"id": f"INC-{_digits(rng, 5)}", "area": t["area"],
                                                 "summary": pick(rng, ("planned maintenance, one cell site",
                                                                       "fibre cut repaired, monitoring")),
                                                 "impact": "minor"}]
    return {"area_code": t["area"], "status": status, "sites_up": f"{total - (status != 'normal')}/{total}",
            "incidents": incidents}


# -- device checks: the request to the user and what their phone shows ----------------------------
def _request(s: _Session, check: str) -> tuple[str, str]:
    rng, t = s.rng, s.t
    os_, kind = t["os"], t["kind"]
    path = pick(rng, _MOBILE_PATH[os_])
    bars = int(rng.integers(2, 6))
    net = t["foreign"] if kind == "roaming" else pick(rng, ("5G", "LTE", f"{_CARRIER} 5G"))
    if check == "airplane":
        req = pick(rng, ("Toggle airplane mode on and off, then tell me how many signal bars you have.",
                         "Could you switch airplane mode on for ten seconds, then off again, and tell me what the "
                         "signal looks like?",
                         "Please turn airplane mode on and back off. How many bars do you see now?"))
        rep = (pick(rng, ("No bars at all. It says No service.", "Still nothing, the top corner says 'No service'.",
                          "Zero bars, and there's an exclamation mark on the signal icon."))
               if kind == "sim_swap" else pick(rng, (f"Done, I have {bars} bars.", f"{bars} bars, {net} at the top.",
                                                    f"Okay, toggled it. {bars} bars, same as before.")))
    elif check == "mobile_data":
        switch = _DATA_SWITCH[os_]
        req = pick(rng, (f"Please open {path} and tell me whether {switch} is on.",
                         f"Can you check in {path} that the {switch} switch is turned on?",
                         f"Go to {path}: is {switch} enabled?"))
        rep = ("The switch is there but it's greyed out." if kind == "sim_swap" else pick(rng, (
            f"It says {switch}: on.", "Yes, it's on.", "It was already on.",
            f"It says {switch}: off. I turned it on now, still the same.")))
    elif check == "apn":
        req = pick(rng, (f"In {path}, open Access Point Names and read me the APN that is selected.",
                         f"Could you look at {path} > Access Point Names and tell me what APN is set?",
                         "What does the APN setting show on your phone?"))
        rep = pick(rng, (f"APN is set to 'internet.{_CARRIER.lower()}'.",
                         f"It shows '{_CARRIER} Internet', apn {_CARRIER.lower()}.net.",
                         "There's just one, 'internet.old'. Is that right?" if kind != "sim_swap" else
                         "The list is empty.", f"APN: {_CARRIER.lower()}.net"))
    elif check == "restart":
        req = pick(rng, ("Please restart the phone and tell me if anything changes once it's back up.",
                         "Could you power the phone off, wait a few seconds, turn it back on, and let me know?",
                         "Let's try a restart. Does anything change after it boots?"))
        rep = pick(rng, ("Restarted, still the same.", "It's back on. No change.", "Did that, same problem.",
                         "Okay it rebooted. Nothing different."))
    elif check == "speed":
        req = pick(rng, ("Could you run a speed test (fast.com or the Speedtest app) on mobile data and tell me the "
                         "result?", "With Wi-Fi off, open a speed test and read me the download speed.",
                         "Turn Wi-Fi off and run a speed test, please. What does it say?"))
        rep = {"no_data": pick(rng, ("It barely loads, 0.1 Mbps.", "It says 0.08 Mbps download.",
                                     "Super slow, the test says 128 kbps.")),
               "roaming": pick(rng, ("It doesn't load at all, no connection.", "Nothing, the page won't open.")),
               "sim_swap": pick(rng, ("Nothing loads, there's no signal.", "Can't, no service."))}.get(
            kind, pick(rng, (f"About {int(rng.integers(20, 180))} Mbps, seems fine.",
                             f"{int(rng.integers(20, 180))} down, {int(rng.integers(5, 40))} up.")))
    elif check == "roaming":
        req = pick(rng, (f"Are you abroad right now? And in {path}, is Data roaming switched on?",
                         f"Quick question: are you travelling? Please check {path} > Data roaming.",
                         "Are you outside the country at the moment, and is Data roaming on on the phone?"))
        rep = (pick(rng, (f"Yes, I'm in {t['country']}. Data roaming is on.",
                          f"I'm in {t['country']} for work, roaming is switched on, network says {net}."))
               if kind == "roaming" else pick(rng, ("No, I'm at home. Data roaming is off, I never travel.",
                                                    "Not abroad, no. The roaming switch is off.")))
    elif check == "mms":
        req = pick(rng, ("Try sending a picture message to your own number and tell me exactly what the error says.",
                         "Could you send a photo by text to someone and tell me what happens?",
                         "Please try sending an MMS, a photo in a text, and read me any error."))
        rep = {"mms": pick(rng, ("'Message not sent. Tap to try again.'", "It says 'Couldn't send MMS'.",
                                 "Red exclamation mark, 'Not Delivered'.")),
               "sim_swap": "It fails, but nothing sends at all, plain texts neither."}.get(
            kind, pick(rng, ("That one went through fine.", "It sent, no problem.")))
    elif check == "sim":
        req = pick(rng, (f"Open {_ABOUT[os_]} and read me what it says for the network and the SIM state.",
                         f"Could you look at {_ABOUT[os_]} and tell me the network status?",
                         "Have you changed SIM cards recently? And what does the SIM status screen show?"))
        rep = (pick(rng, ("Network: Unknown. SIM state: Not registered.",
                          f"I put the new SIM in on {t['swap_date']}. It says Network: Unknown.",
                          "Network: not registered on network."))
               if kind == "sim_swap" else pick(rng, (f"Network: {net}. SIM state: Ready.",
                                                     f"No SIM change. It says {net}, Ready.")))
    elif check == "wifi_calling":
        req = pick(rng, ("Open Settings and search for Wi-Fi Calling: is it switched on, and what's the status "
                         "line under it?", f"In {path}, what does Wi-Fi Calling say?",
                         "Can you check Wi-Fi Calling in your settings and read me its status?"))
        rep = (pick(rng, ("It's on, but it says 'Wi-Fi Calling unavailable, contact your carrier'.",
                          "On. Under it: 'Activation failed'.", "The toggle keeps switching itself off."))
               if kind == "wifi_calling" else pick(rng, ("It's on and says Ready.",
                                                         "It was off, I turned it on, it says Ready.")))
    elif check == "outage":
        req = pick(rng, (f"Do other people near you on {_CARRIER} have the same problem?",
                         "Is anyone around you having trouble too?",
                         "Does someone else's phone work where you are?"))
        rep = pick(rng, ("Not that I know of, my partner's phone works fine.", "No idea, I'm alone here.",
                         "My colleague's phone is fine, same carrier."))
    else:  # pragma: no cover - the checks are closed
        raise ValueError(check)
    return req, rep


#: the device check aimed at each kind of issue
_TARGETED = {"no_data": "speed", "roaming": "roaming", "mms": "mms", "sim_swap": "sim", "wifi_calling": "wifi_calling"}
#: the lookup that tests each hypothesis (hypothesis_test)
_LOOKUP = {"no_data": "get_data_usage", "roaming": "get_line_details", "mms": "get_line_details",
           "sim_swap": "get_line_details", "wifi_calling": "get_line_details", "outage": "check_network_status"}


def _check(s: _Session, check: str) -> None:
    s.ask(*_request(s, check))


# -- tool calls ----------------------------------------------------------------------------------
def _get_customer(s: _Session, recheck: bool = False) -> None:
    s.need_number()
    says = (("Let me double-check the contact details on your account for the confirmation text.",
             "One more look at your account before we wrap up.") if recheck else
            ("Let me pull up your account.", "Looking you up now.", f"Checking the account for {s.t['number']}.",
             "One moment while I find your account."))
    s.call("get_customer", {"phone_number": s.t["number"]}, _customer(s.t), says)


def _lookup(s: _Session, tool: str) -> None:
    t = s.t
    if tool == "get_line_details":
        s.call(tool, {"line_id": t["line"]}, _line(s), (
            "Let me look at the line.", f"Checking line {t['line']}.", "I'll check how your line is set up.",
            "Looking at the line's settings on our side."))
    elif tool == "get_data_usage":
        s.call(tool, {"line_id": t["line"]}, _usage(s), (
            "Let me check your data usage.", "How much data is left this month?", f"Checking usage on {t['line']}."))
    elif tool == "check_network_status":
        s.need_number()
        s.call(tool, {"area_code": t["area"]}, _network(s), (
            f"Let me check for outages in the {t['area']} area.", "Is there a network problem near you? Checking.",
            f"Checking network status for area code {t['area']}.", "Any outage where you are? Checking."))
    else:  # pragma: no cover
        raise ValueError(tool)


def _fix(s: _Session) -> None:
    rng, t = s.rng, s.t
    kind, lid = t["kind"], t["line"]
    if kind == "no_data":
        args, says = {"line_id": lid, "gb": t["refuel"]}, (f"I'll add {t['refuel']} GB to your line.",
                                                           "Your data for the month is used up; adding a data pack.",
                                                           "Topping up your data.")
        result = {"line_id": lid, "added_gb": t["refuel"], "remaining_gb": float(t["refuel"]),
                  "charge_usd": {1: 5, 2: 9, 5: 20, 10: 35}[t["refuel"]]}
    elif kind == "roaming":
        args, says = {"line_id": lid}, ("Roaming is off on your line; turning it on.", "Enabling roaming now.",
                                        "I'll switch international roaming on for you.")
        result = {"line_id": lid, "roaming_enabled": True, "daily_rate_usd": int(pick(rng, (5, 10, 12)))}
    elif kind in _FEATURE:
        feature = _FEATURE[kind]
        args, says = {"line_id": lid, "feature": feature}, (f"Enabling {feature} on your line.",
                                                            "That feature isn't active on the line; turning it on.",
                                                            "I'll switch it on from our side.")
        result = {"line_id": lid, "feature": feature, "enabled": True}
    else:
        args, says = {"line_id": lid}, ("Your new SIM isn't provisioned yet; re-provisioning it now.",
                                        "I'll push the SIM activation again.", "Re-provisioning the SIM.")
        result = {"line_id": lid, "iccid": t["iccid"], "sim_status": "active",
                  "note": "device must restart to register"}
    s.fixed = True
    s.call(FIX[kind], args, result, says)


def _reset(s: _Session) -> None:
    lid = s.t["line"]
    s.call("reset_network_settings", {"line_id": lid},
           {"line_id": lid, "status": "pushed", "note": "device must restart to apply"},
           ("I'm pushing a network settings reset to your phone.", "Sending a fresh network configuration.",
            "Let me reset your network settings remotely."))


_DOES = {"no_data": "open a web page on mobile data", "roaming": "load a page over mobile data",
         "mms": "send the picture again", "sim_swap": "make a test call", "wifi_calling": "make a call over Wi-Fi"}
_WORKS = {"no_data": ("Yes! Pages load now.", "It works, thank you!", "Speed test says 40 Mbps now."),
          "roaming": ("Working now, thanks!", "Yes, I can browse again.", "It loads, great."),
          "mms": ("The picture went through!", "Sent, finally.", "Yes, it works now."),
          "sim_swap": ("I have bars now and the call worked.", "Yes! Service is back.", "Call went through, thanks."),
          "wifi_calling": ("It says Wi-Fi Calling: Ready, and the call worked.", "Yes, works now.",
                           "The call connected over Wi-Fi.")}
_FAILS = ("No, still the same.", "Restarted, still nothing.", "Hmm, it still doesn't work.",
          "Nope, no change at all.")


def _confirm(s: _Session, correct: bool) -> None:
    rng, kind = s.rng, s.t["kind"]
    req = pick(rng, (f"Done on my side. Please restart your phone, then {_DOES[kind]} and tell me if it works.",
                     f"Please restart the phone once and {_DOES[kind]}. Does it work now?",
                     f"That should do it. After a restart, try to {_DOES[kind]}: any luck?"))
    s.ask(req, pick(rng, _WORKS[kind]) if correct else pick(rng, _FAILS))


def _escalate(s: _Session) -> str:
    rng, t = s.rng, s.t
    summary = pick(rng, (f"{t['symptom']}; basic checks done",
                         f"customer reports {t['symptom']} on {t['phone']}",
                         f"{t['symptom']}, needs tier 2"))
    if rng.random() < _P_TICKET:
        tid, eta = f"TCK-{_digits(rng, 6)}", int(pick(rng, (24, 48, 72)))
        s.call("open_ticket", {"line_id": t["line"], "category": _CATEGORY[t["kind"]], "summary": summary},
               {"ticket_id": tid, "status": "open", "eta_hours": eta},
               ("I'll open a ticket with our technical team.", "Let me raise this with the network team.",
                "Opening a support ticket."))
        return pick(rng, (f"I've opened ticket {tid}; our technical team will contact you within {eta} hours.",
                          f"Ticket {tid} is open. Expect an update within {eta} hours.",
                          f"Your case is logged as {tid}; we'll text you within {eta} hours."))
    wait = int(rng.integers(2, 25))
    s.call("transfer_to_human", {"summary": summary},
           {"status": "transferred", "queue": pick(rng, ("tier2_technical", "network_specialists")),
            "estimated_wait_minutes": wait},
           ("I'll hand you over to a specialist.", "Transferring you to a colleague who can look deeper.",
            "Let me get a human specialist on this."))
    return pick(rng, (f"I've transferred you to a specialist; the wait is about {wait} minutes.",
                      f"A technician will take over in about {wait} minutes. Please stay in the chat.",
                      f"You're in the queue for our technical team, about {wait} minutes."))


def _closing(s: _Session, correct: bool) -> str:
    rng = s.rng
    if correct:
        return pick(rng, ("Glad it's working again! Anything else I can help with?",
                          "Great, you're all set.", "Perfect, the issue is resolved.",
                          "Wonderful. Have a great day!"))
    return pick(rng, ("I'm sorry it's still not working. Changes can take up to an hour to reach the phone; "
                      "if it still fails, write back and we'll escalate.",
                      "Sorry about that. Please give it an hour and restart once more; if nothing changes, "
                      "contact us again.",
                      "I apologise. The change may need some time to propagate; try again later today."))


def _episode(rng: np.random.Generator, strategy: str, t: dict, correct: bool) -> _Session:
    s = _Session(rng, t)
    kind = t["kind"]
    closing = None
    if strategy == "account_first":
        _get_customer(s)
        _lookup(s, "get_line_details")
        if rng.random() < _P_USAGE:
            _lookup(s, "get_data_usage")
        _check(s, _TARGETED[kind])
        _fix(s)
    elif strategy == "device_first":
        generic = [str(c) for c in rng.choice(["airplane", "mobile_data", "apn", "restart"],
                                              size=int(rng.integers(1, 4)), replace=False)]
        for c in [*generic, _TARGETED[kind]]:
            _check(s, c)
        _get_customer(s)
        if rng.random() < _P_LINE:
            _lookup(s, "get_line_details")
        _fix(s)
    elif strategy == "outage_first":
        _lookup(s, "check_network_status")
        _check(s, _TARGETED[kind])
        _get_customer(s)
        if rng.random() < _P_LINE:
            _lookup(s, "get_line_details")
        _fix(s)
    elif strategy == "checklist":
        _check(s, "airplane")
        _check(s, "mobile_data")
        _get_customer(s)
        for tool in ("get_line_details", "check_network_status", "get_data_usage"):
            _lookup(s, tool)
        _check(s, "apn")
        _check(s, "restart")
        _fix(s)
    elif strategy == "quick_fix":
        _get_customer(s)
        if rng.random() < _P_RESET:
            _reset(s)
        _fix(s)
    elif strategy == "escalate":
        _get_customer(s)
        if rng.random() < _P_ESCALATE_ASK:
            _check(s, _TARGETED[kind])
        else:
            _lookup(s, "get_line_details")
        closing = _escalate(s)
    elif strategy == "hypothesis_test":
        _get_customer(s)
        right = _LOOKUP[kind]
        others = [h for h in ("outage", "no_data", *KINDS[1:]) if _LOOKUP[h] != right]
        wrong: list[str] = []
        for h in [str(x) for x in rng.permutation(others)]:
            if _LOOKUP[h] not in {_LOOKUP[w] for w in wrong}:
                wrong.append(h)
        wrong = wrong[:int(rng.choice([0, 1, 2], p=[0.4, 0.4, 0.2]))]
        for h in [*wrong, kind]:
            _check(s, _TARGETED.get(h, h))
            _lookup(s, _LOOKUP[h])
        _fix(s)
    else:  # pragma: no cover - STRATEGIES is closed
        raise ValueError(strategy)
    if closing is None:
        _confirm(s, correct)
        closing = _closing(s, correct)
    # optional steps, at fixed rates whatever the arm, the issue and the strategy
    if rng.random() < _P_FINAL_LINE:
        _lookup(s, "get_line_details")
    if rng.random() < _P_RECHECK:
        _get_customer(s, recheck=True)
    if rng.random() < _P_RATE:
        s.ask(f"{closing} {pick(rng, _RATE_ASKS)}", pick(rng, ("5", "4", "5 stars", "4/5", "3, it took a while.",
                                                               "5, thanks!")), offscript=False)
        s.say(pick(rng, ("Thank you for the feedback! Have a good day.", "Thanks, and take care!",
                         "Thank you. Goodbye!")))
    else:
        s.say(closing)
    return s


_SYMPTOMS = {
    "no_data": ("no mobile data", "mobile data not working", "data extremely slow"),
    "roaming": ("no data while roaming", "data not working abroad", "roaming data fails"),
    "mms": ("cannot send MMS", "picture messages fail", "MMS not sending"),
    "sim_swap": ("no service after SIM swap", "new SIM not working", "no signal since SIM change"),
    "wifi_calling": ("Wi-Fi calling fails", "Wi-Fi calling unavailable", "cannot call over Wi-Fi"),
}
_OPENINGS = {
    "no_data": ("Hi, my mobile data stopped working this morning. Wi-Fi is fine but nothing loads outside.",
                "My internet on my {phone} is barely working unless I'm on Wi-Fi. Can you help?",
                "Hello, I have signal but no data at all since yesterday."),
    "roaming": ("Hi, I just landed in {country} and my phone has no data. Calls work over Wi-Fi only.",
                "I'm travelling in {country} and mobile data doesn't work, even with roaming on.",
                "Hello! On holiday in {country}, my {phone} shows {foreign} but nothing loads."),
    "mms": ("I can't send picture messages anymore, normal texts are fine.",
            "Hi, every time I send a photo by text it fails on my {phone}.",
            "Group texts with pictures won't send. What's wrong?"),
    "sim_swap": ("I got a new SIM card from your store on {swap_date} and since then I have no service.",
                 "Hi, I swapped my SIM into my {phone} and now it says No service.",
                 "After replacing my SIM I can't call or text at all."),
    "wifi_calling": ("Wi-Fi calling doesn't work on my {phone}. I have no signal at home so I need it.",
                     "Hello, Wi-Fi calling says unavailable and calls drop at home.",
                     "Hi, I can't make calls over Wi-Fi anymore."),
}


def _task(rng: np.random.Generator, kind: str) -> dict:
    first, last = name(rng), name(rng)
    area = str(int(rng.integers(201, 990)))
    number = area + str(int(rng.integers(200, 1000))) + _digits(rng, 4)
    phone = pick(rng, tuple(_PHONES))
    plan, limit = _PLANS[int(rng.integers(len(_PLANS)))]
    country = pick(rng, tuple(_ABROAD))
    line = f"LN{_digits(rng, 7)}"
    others = [(f"LN{_digits(rng, 7)}", area + str(int(rng.integers(200, 1000))) + _digits(rng, 4))
              for _ in range(int(rng.integers(0, 3)))]
    lines = [(line, number), *others]
    rng.shuffle(lines)
    t = {"kind": kind, "who": f"{first} {last}", "number": number, "area": area, "line": line, "lines": lines,
         "customer_id": f"C{_digits(rng, 7)}", "email": f"{first.lower()}.{last.lower()}@example.com",
         "phone": phone, "os": _PHONES[phone], "plan": plan, "limit": limit,
         "used": float(rng.uniform(0.1, 0.8) * limit), "refuel": int(pick(rng, _GB_PACKS)),
         "country": country, "foreign": pick(rng, _ABROAD[country]),
         "roams": kind != "roaming" and bool(rng.random() < 0.4),
         "iccid": "8901" + _digits(rng, 15), "swap_date": f"2025-{int(rng.integers(1, 13)):02d}-"
                                                          f"{int(rng.integers(1, 29)):02d}",
         "cycle_end": f"2025-{int(rng.integers(1, 13)):02d}-{int(rng.integers(1, 29)):02d}",
         "symptom": pick(rng, _SYMPTOMS[kind]), "volunteered": bool(rng.random() < _P_VOLUNTEER)}
    text = pick(rng, _OPENINGS[kind]).format(**t)
    bare = re.sub(r"^(Hi|Hello)[,!] ", "", text)
    bare = bare[0].upper() + bare[1:]
    if t["volunteered"]:
        shown = _formatted(number, int(rng.integers(5)))
        text = pick(rng, (f"{text} My number is {shown}.", f"{text} The line is {shown}.",
                          f"Hi, {t['who']} here, number {shown}. {bare}", f"{text} ({shown}, {t['who']})"))
    else:
        text = pick(rng, (f"{text} Thanks, {first}", f"{text} - {t['who']}", f"Hi, this is {t['who']}. {bare}",
                          f"{text} Cheers, {first}."))
    t["text"] = text
    return t


def support(*, n_questions: int = 60, n_samples: int = 4, arms: dict[str, dict[str, float]] | None = None,
            random_state: RandomState = 0) -> World:
    """Generate the dual-control technical-support world (OpenAI ``tool_calls`` records).

    Parameters
    ----------
    n_questions, n_samples
        Support requests (their kinds in turn, :data:`KINDS`), and episodes per request and arm.
    arms
        Arm name -> strategy mixture (default: :data:`ARMS`, ``base`` and ``rl``, which differ
        only in it).
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.

    Returns
    -------
    World
        Records in format ``openai``; truth ``arm, question_id, sample_id, strategy, kind,
        n_calls`` (tool calls, failed ones included), ``n_failures``, ``n_user_turns`` (user
        messages after the first) and ``correct``.

    Examples
    --------
    >>> w = support(n_questions=2, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"]))
    ('openai', 4, ['base', 'rl'])
    >>> w.runs["n_rounds"].to_list() == w.truth["n_calls"].to_list()
    True
    """
    rng = as_generator(random_state)
    arms = arms or ARMS
    tasks = [(f"support-{i:04d}", _task(rng, KINDS[i % len(KINDS)])) for i in range(n_questions)]

    def episode(rng: np.random.Generator, arm: str, qid: str, sample: int, strategy: str, t: dict
                ) -> tuple[dict, tuple]:
        correct = bool(rng.random() < _SUCCESS[strategy])
        s = _episode(rng, strategy, t, correct)
        return ({"arm": arm, "question_id": qid, "sample_id": sample, "gold": [], "correct": correct,
                 "messages": s.messages},
                (t["kind"], s.n_calls, s.failures, s.user_turns, correct))

    return planted_world("support", "openai", rng, tasks, arms, n_samples, episode, _SUCCESS,
                         truth_schema={"kind": pl.String, "n_calls": pl.Int64, "n_failures": pl.Int64,
                                       "n_user_turns": pl.Int64, "correct": pl.Boolean})
