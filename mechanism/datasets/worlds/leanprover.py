"""A Lean 4 theorem-proving agent trained with multi-turn RL, through tool calls on a tactic-mode REPL.

One competition-style theorem per question (mini-F2F-like), drawn at random from six templates,
each with its own constants and name: a polynomial identity over ℕ (``ring``), a linear system
over ℕ (``omega``), a divisibility fact (``omega``), a congruence ``[MOD m]`` (unfolded, then
``omega``), an AM-GM style inequality over ℝ (``nlinarith`` with square hints) and a list-length
lemma (``simp``). The template decides which tactics close the goal and which fail, as in a real
prover. Each episode is ONE OpenAI chat transcript: a system prompt, the user's message with the
theorem in Lean 4 syntax and proof state 0, assistant messages with one call each in
``tool_calls`` (a short thought in ``content`` beside most), each answered by its own ``role:
tool`` message with the matching ``tool_call_id``, and a last assistant message without tool
calls: the finished proof, or giving up (with the partial proof ending in ``sorry``).

The tool schema (:data:`TOOL_SCHEMA`, as the harness declares it to the model):

=================================  ==================================================================
``run_tactic(proof_state, tactic)`` one tactic on a proof state, answered in the REPL's JSON:
                                    ``{"proofState": k, "goals": [...]}`` (each goal the context and
                                    ``⊢ target``, ``case ...`` first where Lean tags it; an empty list
                                    when the proof is done) or ``{"message": "Lean error: ..."}``.
                                    ``apply?`` answers with a ``Try this:`` suggestion beside the
                                    unchanged goals. Every success gets the next state number; a
                                    later tactic may go back to an earlier number (backtracking).
``search_lemmas(query)``            LeanSearch-like: a few lemma names with their types.
``check(term)``                     ``#check``: the term's type (a lemma's signature; ``: Prop``
                                    for a statement).
=================================  ==================================================================

Every goal text follows from the theorem and the tactics applied: the templates carry the goals
each tactic leaves (substitutions after ``induction'`` / ``subst`` as Lean prints them, hypotheses
that mention the induction variable generalised into ``ih``, ``rw ... at h`` changing the
hypothesis), and the session replays them on a stack of goals, the first goal the one a tactic acts
on.

Seven planted strategies, each a way of proving a person would name; the tactics and goals are the
theorem's own:

=================  ==============================================================================
``automation``     two to four automation tactics of the template's failing pool (``omega``,
                   ``simp``, ``decide``, ``aesop``, ``norm_num``, ``positivity``, ...) one after another,
                   each answered by its Lean error (by design), then the template's closing tactic
``induction``      ``induction'`` on the theorem's ℕ or list variable, then the base case and the
                   step case closed in turn (``push_cast`` / ``simp at ih ⊢`` where needed)
``rewrite``        a chain of two or three ``rw [...]`` (on the goal, or ``at h₀``), then a closer
``cases``          ``rcases`` / ``by_cases`` into two branches (``subst`` where the branch names the
                   variable), each closed
``backward``       ``apply`` lemma after lemma (``Nat.dvd_add``, ``Nat.le_antisymm``,
                   ``Nat.ModEq.trans``, ``le_add_of_le_of_nonneg``, ``Eq.trans`` ...), ``exact`` at the end
``search``         ``search_lemmas`` (or ``apply?``) first, a ``check`` of the lemma found, then the
                   lemma used (``exact`` / ``apply`` / ``rw``) and what is left closed
``have_steps``     two intermediate facts stated with ``have ... := by ...``, then one combining tactic
=================  ==============================================================================

Optional steps, at fixed rates whatever the arm, the theorem and the strategy: a ``check`` of the
statement as the very first call (:data:`_P_CHECK_FIRST`); a ``search_lemmas`` before a random
tactic (:data:`_P_SEARCH`); a detour, a tactic that succeeds but does not help (``symm``,
``revert h``, ``revert x``) followed by a return to the state before it (:data:`_P_DETOUR`: the
only backtracking); and, in a finished proof, the closing tactic run again on the state before it
to confirm (:data:`_P_CONFIRM` of the correct episodes).

Execution failures, at a fixed rate per intended tactic (:data:`_P_FAIL`), whatever the strategy: the
tactic sent with a wrong lemma name (``unknown identifier '...'``), a misspelt tactic (``unknown
tactic``) or a missing bracket (``unexpected token``), then the intended tactic right after on the
same proof state (that one never fails so). Failures by design are the automation pool's errors
and an incorrect episode's last tries (``omega could not prove the goal``, ``linarith failed to find
a contradiction``, ``simp made no progress``, ``failed to synthesize Decidable``, ``type mismatch``,
...); their texts never overlap with the execution failures'.

The arms ``base`` and ``rl`` differ only in their mixture (:data:`ARMS`); whether an episode is
correct is drawn at its strategy's rate (:data:`_SUCCESS`), random within it, before it is played:
a correct episode closes every goal; an incorrect one follows its strategy up to the last closing
tactic, tries two or three tactics of the template's failing pool there instead, and gives up
(``gave_up``) or hands in the proof with ``sorry`` (``unfinished``).

The truth carries, beside ``strategy``, ``template``, ``n_calls`` (tool calls, failed ones included),
``n_tactics`` (``run_tactic`` calls), ``n_failures`` (execution failures), ``n_design_errors``
(errors by design), ``n_backtracks``, ``ending`` (``proved``, ``gave_up`` or ``unfinished``) and
``correct``.

Written from scratch as a held-out world, without reference to how trajectories are segmented or
clustered.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from mechanism.core.options import RandomState
from mechanism.datasets.worlds._base import World, pick, planted_world, world_generator

STRATEGIES = ("automation", "induction", "rewrite", "cases", "backward", "search", "have_steps")
TOOLS = ("run_tactic", "search_lemmas", "check")
TEMPLATES = ("nat_ring", "nat_linear", "divisibility", "congruence", "real_amgm", "list_length")
ARMS = {
    "base": {"automation": 0.24, "induction": 0.12, "rewrite": 0.14, "cases": 0.12, "backward": 0.12,
             "search": 0.14, "have_steps": 0.12},
    "rl": {"automation": 0.10, "induction": 0.12, "rewrite": 0.12, "cases": 0.14, "backward": 0.16,
           "search": 0.12, "have_steps": 0.24},
}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"automation": 0.45, "induction": 0.55, "rewrite": 0.6, "cases": 0.5, "backward": 0.65,
            "search": 0.7, "have_steps": 0.75}
#: optional steps, whatever the arm, the theorem and the strategy
_P_CHECK_FIRST = 0.25  # a check of the statement as the very first call
_P_SEARCH = 0.15  # a search_lemmas before a random tactic
_P_DETOUR = 0.15  # a tactic that does not help, then back to the state before it
_P_CONFIRM = 0.2  # a finished proof: the closing tactic run again on the state before it
#: execution failures
_P_FAIL = 0.08  # an intended tactic sent wrong first (then corrected at once)
#: the look of the transcript
_P_SAY = 0.7  # a tool message has a thought beside it (the first one always)
_P_APPLY_Q = 0.35  # search: apply? on the goal instead of search_lemmas

TOOL_SCHEMA: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "run_tactic", "description": ("Apply one Lean 4 tactic to a proof state of the REPL. Returns the "
                                              "new proof state and its goals, or the Lean error."),
        "parameters": {"type": "object", "properties": {
            "proof_state": {"type": "integer", "description": "The proof state to act on."},
            "tactic": {"type": "string", "description": "The tactic, as Lean takes it."}},
            "required": ["proof_state", "tactic"]}}},
    {"type": "function", "function": {
        "name": "search_lemmas", "description": "Natural-language search of Mathlib (LeanSearch): lemma names "
                                                "with their types.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}},
    {"type": "function", "function": {
        "name": "check", "description": "#check a term or a lemma name: its type.",
        "parameters": {"type": "object", "properties": {"term": {"type": "string"}}, "required": ["term"]}}},
]

#: the Mathlib lemmas the world's searches and checks know: name -> signature as #check prints it
LEMMAS = {
    "add_mul": "{α : Type u_1} [Mul α] [Add α] [RightDistribClass α] (a b c : α) : (a + b) * c = a * c + b * c",
    "mul_add": "{α : Type u_1} [Mul α] [Add α] [LeftDistribClass α] (a b c : α) : a * (b + c) = a * b + a * c",
    "add_sq": "{α : Type u_1} [CommSemiring α] (a b : α) : (a + b) ^ 2 = a ^ 2 + 2 * a * b + b ^ 2",
    "sq": "{M : Type u_1} [Monoid M] (a : M) : a ^ 2 = a * a",
    "Nat.eq_of_mul_eq_mul_left": "{m k n : ℕ} (hn : 0 < n) (h : n * m = n * k) : m = k",
    "Nat.le_antisymm": "{n m : ℕ} (h₁ : n ≤ m) (h₂ : m ≤ n) : n = m",
    "Nat.sub_eq_of_eq_add": "{a b c : ℕ} (h : a = c + b) : a - b = c",
    "Nat.dvd_add": "{k m n : ℕ} (h₁ : k ∣ m) (h₂ : k ∣ n) : k ∣ m + n",
    "Nat.dvd_add_right": "{k m : ℕ} (h : k ∣ m) {n : ℕ} : k ∣ m + n ↔ k ∣ n",
    "Dvd.dvd.mul_left": "{α : Type u_1} [CommMonoid α] {a b : α} (h : a ∣ b) (c : α) : a ∣ c * b",
    "Nat.dvd_mul_right": "(a b : ℕ) : a ∣ a * b",
    "Nat.ModEq.mul_left": "{n a b : ℕ} (c : ℕ) (h : a ≡ b [MOD n]) : c * a ≡ c * b [MOD n]",
    "Nat.ModEq.add_right": "{n a b : ℕ} (c : ℕ) (h : a ≡ b [MOD n]) : a + c ≡ b + c [MOD n]",
    "Nat.ModEq.trans": "{n a b c : ℕ} : a ≡ b [MOD n] → b ≡ c [MOD n] → a ≡ c [MOD n]",
    "Nat.add_mod": "(a b n : ℕ) : (a + b) % n = (a % n + b % n) % n",
    "Nat.mul_mod": "(a b n : ℕ) : a * b % n = a % n * (b % n) % n",
    "two_mul_le_add_sq": "{α : Type u_1} [LinearOrderedCommRing α] (a b : α) : 2 * a * b ≤ a ^ 2 + b ^ 2",
    "sq_nonneg": "{α : Type u_1} [LinearOrderedRing α] (a : α) : 0 ≤ a ^ 2",
    "Nat.cast_nonneg": "{α : Type u_1} [OrderedSemiring α] (n : ℕ) : 0 ≤ ↑n",
    "le_add_of_le_of_nonneg": "{α : Type u_1} [OrderedAddCommMonoid α] {a b c : α} (hbc : b ≤ c) (ha : 0 ≤ a) : "
                              "b ≤ c + a",
    "List.length_append": "{α : Type u_1} (as bs : List α) : (as ++ bs).length = as.length + bs.length",
    "List.length_reverse": "{α : Type u_1} (as : List α) : as.reverse.length = as.length",
    "two_mul": "{α : Type u_1} [NonAssocSemiring α] (a : α) : 2 * a = a + a",
    "Nat.even_or_odd": "(n : ℕ) : Even n ∨ Odd n",
}
_B62 = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
#: the beginnings of an execution failure's error (never those of a failure by design)
EXECUTION_ERRORS = ("unknown identifier", "unknown tactic", "unexpected token")


# -- goals ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Goal:
    """One goal: the hypotheses ``(name, type)`` in order, the target, Lean's case tag."""

    hyps: tuple[tuple[str, str], ...]
    target: str
    case: str | None = None

    def text(self) -> str:
        lines = [f"case {self.case}"] if self.case else []
        i = 0
        while i < len(self.hyps):  # consecutive hypotheses of one type share a line, as Lean prints them
            j = i
            while j + 1 < len(self.hyps) and self.hyps[j + 1][1] == self.hyps[i][1]:
                j += 1
            lines.append(f"{' '.join(n for n, _ in self.hyps[i:j + 1])} : {self.hyps[i][1]}")
            i = j + 1
        return "\n".join([*lines, f"⊢ {self.target}"])

    def add(self, name: str, typ: str) -> Goal:
        return Goal((*self.hyps, (name, typ)), self.target, self.case)

    def to(self, target: str) -> Goal:
        return Goal(self.hyps, target, self.case)


_LEFT_OK = re.compile(r"(^|\(|= |≤ |≡ |∣ |< |→ )$")
_RIGHT_OK = re.compile(r"^($|\)| \+| -| =| ≤| <| ≡| \[| →)")


def _sub(text: str, var: str, value: str) -> str:
    """``text`` with the variable ``var`` replaced by ``value``, parenthesised where Lean would print
    parentheses (a compound value inside a product, a power, a cast, a right operand of ``+``)."""
    simple = re.fullmatch(r"[\w₀-₉]+|\[\]", value) is not None
    out, last = [], 0
    for m in re.finditer(rf"(?<![\w.']){re.escape(var)}(?![\w'₀-₉])", text):
        before, after = text[:m.start()], text[m.end():]
        if simple:
            rep = value
        elif before.endswith("↑") or after.startswith("."):
            rep = f"({value})"
        elif value.startswith(("x ::", "j ::")) and before.endswith("++ "):
            rep = value
        else:
            rep = value if _LEFT_OK.search(before) and _RIGHT_OK.match(after) else f"({value})"
        out += [text[last:m.start()], rep]
        last = m.end()
    return "".join([*out, text[last:]])


def _mentions(text: str, var: str) -> bool:
    return re.search(rf"(?<![\w.']){re.escape(var)}(?![\w'₀-₉])", text) is not None


# -- theorems ------------------------------------------------------------------------------------------
Step = tuple[str, Any, Any]  # (kind, tactic alternatives | query | term, the goals replacing the first)


@dataclass
class _Theorem:
    """One question: the statement, its goal, and how each strategy proves it."""

    template: str
    name: str
    binders: str
    goal: Goal
    var: str  # the induction variable
    closer: tuple[str, ...]  # tactics that close the goal at once
    pool: tuple[str, ...]  # tactics that fail on it (automation's tries)
    giveup: tuple[str, ...]  # tactics an incorrect episode tries last (they fail wherever it stops)
    queries: tuple[str, ...]
    found: tuple[str, ...]  # what a search returns (the key lemma first)
    plans: dict[str, list[Step]] = field(default_factory=dict)

    @property
    def statement(self) -> str:
        return f"theorem {self.name} {self.binders} :\n    {self.goal.target} := by"

    @property
    def prop(self) -> str:
        return f"∀ {self.binders}, {self.goal.target}"


def _vars(*pairs: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(pairs)


def _induct(g: Goal, var: str, zero: str, succ: str, step_vars: tuple[tuple[str, str], ...],
            cases: tuple[str, str]) -> list[Goal]:
    """The goals ``induction' var with ...`` leaves: hypotheses mentioning ``var`` generalised into ``ih``."""
    dep = [(n, t) for n, t in g.hyps if n != var and _mentions(t, var)]
    keep = [(n, t) for n, t in g.hyps if n != var and (n, t) not in dep]
    prev = step_vars[-1][0]
    ih_t = " → ".join([*(_sub(t, var, prev) for _, t in dep), _sub(g.target, var, prev)])
    base = Goal((*keep, *((n, _sub(t, var, zero)) for n, t in dep)), _sub(g.target, var, zero), cases[0])
    step = Goal((*keep, *step_vars, ("ih", ih_t), *((n, _sub(t, var, succ)) for n, t in dep)),
                _sub(g.target, var, succ), cases[1])
    return [base, step]


def _name(rng: np.random.Generator, kind: str) -> str:
    year = int(rng.integers(2000, 2022))
    return pick(rng, (f"mathd_{kind}_{int(rng.integers(10, 760))}", f"amc12a_{year}_p{int(rng.integers(2, 25))}",
                      f"aime_{year}_p{int(rng.integers(1, 15))}", f"induction_{kind}_{int(rng.integers(1, 99))}",
                      f"imo_{year}_p{int(rng.integers(1, 6))}_{kind}"))


def _nat_ring(rng: np.random.Generator) -> _Theorem:
    a, b = (int(x) for x in rng.choice(np.arange(1, 10), size=2, replace=False))
    s, p = a + b, a * b
    t = f"(n + {a}) * (n + {b}) = n ^ 2 + {s} * n + {p}"
    g = Goal(_vars(("n", "ℕ")), t)
    th = _Theorem("nat_ring", _name(rng, "algebra"), "(n : ℕ)", g, "n", ("ring", "ring_nf"),
                  ("omega", "decide", "positivity", "aesop", "tauto", "exact?"), ("decide", "positivity", "tauto",
                                                                                   "exact?", "aesop"),
                  ("product of two sums expand", "(a + b) * c = a * c + b * c", "distribute multiplication over "
                   "addition"), ("add_mul", "mul_add", "add_sq", "sq"))
    z, su = _induct(g, "n", "0", "k + 1", (("k", "ℕ"),), ("zero", "succ"))
    lhs1 = f"n * (n + {b}) + {a} * (n + {b}) = n ^ 2 + {s} * n + {p}"
    lhs2 = f"n * n + n * {b} + ({a} * n + {a} * {b}) = n ^ 2 + {s} * n + {p}"
    lhs3 = f"n * n + n * {b} + ({a} * n + {a} * {b}) = n * n + {s} * n + {p}"
    ev, od = g.add("j", "ℕ").add("hj", "n = j + j"), g.add("j", "ℕ").add("hj", "n = 2 * j + 1")
    mid = f"(n + {a}) * n + (n + {a}) * {b}"
    h1 = f"(n + {a}) * (n + {b}) = n * n + {s} * n + {p}"
    th.plans = {
        "induction": [("induct", ("induction' n with k ih",), [z, su]), ("base", ("norm_num", "simp"), []),
                      ("step", ("ring",), [])],
        "rewrite": [("rw", ("rw [add_mul]",), [g.to(lhs1)]), ("rw", ("rw [mul_add, mul_add]",), [g.to(lhs2)]),
                    ("rw", ("rw [sq]",), [g.to(lhs3)]), ("close", ("ring", "omega"), [])],
        "cases": [("split", ("rcases Nat.even_or_odd n with ⟨j, hj⟩ | ⟨j, hj⟩",),
                   [Goal(ev.hyps, t, "inl"), Goal(od.hyps, t, "inr")]),
                  ("subst", ("subst hj",), [Goal(_vars(("j", "ℕ")), _sub(t, "n", "j + j"), "inl")]),
                  ("branch", ("ring",), []),
                  ("subst", ("subst hj",), [Goal(_vars(("j", "ℕ")), _sub(t, "n", "2 * j + 1"), "inr")]),
                  ("branch", ("ring",), [])],
        "backward": [("apply", ("apply Eq.symm",), [g.to(f"n ^ 2 + {s} * n + {p} = (n + {a}) * (n + {b})")]),
                     ("apply", (f"apply Eq.trans (b := {mid})",),
                      [g.to(f"n ^ 2 + {s} * n + {p} = {mid}"), g.to(f"{mid} = (n + {a}) * (n + {b})")]),
                     ("close", ("ring",), []), ("exact", (f"exact (mul_add (n + {a}) n {b}).symm",), [])],
        "search": [("use", ("rw [add_mul, mul_add, mul_add]",), [g.to(lhs2)]), ("close", ("ring",), [])],
        "have_steps": [("have", (f"have h2 : {h1} := by ring",), [g.add("h2", h1)]),
                       ("have", ("have h3 : n ^ 2 = n * n := by ring", "have h3 : n ^ 2 = n * n := sq n"),
                        [g.add("h2", h1).add("h3", "n ^ 2 = n * n")]),
                       ("combine", ("rw [h2, h3]",), [])],
    }
    return th


def _nat_linear(rng: np.random.Generator) -> _Theorem:
    n_, d = int(rng.integers(2, 30)), int(rng.integers(1, 20))
    s = 2 * n_ + d
    h0, h1 = f"x + n = {s}", f"x = n + {d}"
    g = Goal(_vars(("x", "ℕ"), ("n", "ℕ"), ("h₀", h0), ("h₁", h1)), f"n = {n_}")
    th = _Theorem("nat_linear", _name(rng, "algebra"), f"(x n : ℕ) (h₀ : {h0}) (h₁ : {h1})", g, "n",
                  ("omega", "linarith"), ("decide", "simp", "norm_num", "positivity", "aesop", "exact?"),
                  ("decide", "simp", "norm_num", "positivity", "exact h₀"),
                  ("cancel multiplication by a positive natural", "a * b = a * c implies b = c nat",
                   "equality from two inequalities natural numbers"),
                  ("Nat.eq_of_mul_eq_mul_left", "Nat.le_antisymm", "Nat.sub_eq_of_eq_add"))
    z, su = _induct(g, "n", "0", "k + 1", (("k", "ℕ"),), ("zero", "succ"))
    gw = Goal(_vars(("x", "ℕ"), ("n", "ℕ"), ("h₀", f"n + {d} + n = {s}"), ("h₁", h1)), g.target)
    g2 = Goal(_vars(("x", "ℕ"), ("n", "ℕ"), ("h₀", f"n + n + {d} = {s}"), ("h₁", h1)), g.target)
    g3 = Goal(_vars(("x", "ℕ"), ("n", "ℕ"), ("h₀", f"2 * n + {d} = {s}"), ("h₁", h1)), g.target)
    hh = f"n + {d} + n = {s}"
    th.plans = {
        "induction": [("induct", ("induction' n with k ih",), [z, su]), ("base", ("omega",), []),
                      ("step", ("omega",), [])],
        "rewrite": [("rw", ("rw [h₁] at h₀",), [gw]), ("rw", ("rw [Nat.add_right_comm] at h₀",), [g2]),
                    ("rw", ("rw [← two_mul] at h₀",), [g3]), ("close", ("omega",), [])],
        "cases": [("split", (f"rcases Nat.lt_or_ge n {n_} with h | h",),
                   [Goal(g.add("h", f"n < {n_}").hyps, g.target, "inl"),
                    Goal(g.add("h", f"n ≥ {n_}").hyps, g.target, "inr")]),
                  ("branch", ("omega",), []), ("branch", ("omega",), [])],
        "backward": [("apply", ("apply Nat.le_antisymm",), [g.to(f"n ≤ {n_}"), g.to(f"{n_} ≤ n")]),
                     ("apply", ("apply Nat.le_of_lt_succ",), [g.to(f"n < {n_} + 1")]),
                     ("exact", ("exact Nat.lt_succ_of_le (by omega)",), []),
                     ("exact", ("exact Nat.le_of_eq (by omega)",), [])],
        "search": [("use", ("apply Nat.eq_of_mul_eq_mul_left (show 0 < 2 by norm_num)",), [g.to(f"2 * n = 2 * {n_}")]),
                   ("close", ("omega",), [])],
        "have_steps": [("have", (f"have h2 : {hh} := by rw [h₁] at h₀; exact h₀", f"have h2 : {hh} := by omega"),
                        [g.add("h2", hh)]),
                       ("have", (f"have h3 : 2 * n = {s - d} := by omega",),
                        [g.add("h2", hh).add("h3", f"2 * n = {s - d}")]),
                       ("combine", ("omega",), [])],
    }
    return th


def _divisibility(rng: np.random.Generator) -> _Theorem:
    m, b, c = int(rng.integers(3, 12)), int(rng.integers(2, 10)), int(rng.integers(2, 10))
    t = f"{m} ∣ {b} * n + {m} * {c}"
    g = Goal(_vars(("n", "ℕ"), ("h₀", f"{m} ∣ n")), t)
    th = _Theorem("divisibility", _name(rng, "numbertheory"), f"(n : ℕ) (h₀ : {m} ∣ n)", g, "n", ("omega",),
                  ("decide", "linarith", "positivity", "norm_num", "simp", "nlinarith"),
                  ("linarith", "positivity", "nlinarith", "exact h₀"),
                  ("divides sum if divides both terms", "k ∣ m → k ∣ n → k ∣ m + n", "dvd of sum natural"),
                  ("Nat.dvd_add", "Dvd.dvd.mul_left", "Nat.dvd_add_right", "Nat.dvd_mul_right"))
    z, su = _induct(g, "n", "0", "k + 1", (("k", "ℕ"),), ("zero", "succ"))
    g1 = g.to(f"{m} ∣ n * {b} + {m} * {c}")
    th.plans = {
        "induction": [("induct", ("induction' n with k ih",), [z, su]), ("base", ("simp", "norm_num"), []),
                      ("step", ("omega",), [])],
        "rewrite": [("rw", (f"rw [mul_comm {b} n]",), [g1]),
                    ("rw", (f"rw [Nat.dvd_add_right (Dvd.dvd.mul_right h₀ {b})]",), [g.to(f"{m} ∣ {m} * {c}")]),
                    ("close", (f"exact Nat.dvd_mul_right {m} {c}", "simp"), [])],
        "cases": [("split", ("by_cases hn : n = 0",), [Goal(g.add("hn", "n = 0").hyps, t, "pos"),
                                                     Goal(g.add("hn", "¬n = 0").hyps, t, "neg")]),
                  ("branch", ("simp [hn]",), []), ("branch", ("omega",), [])],
        "backward": [("apply", ("apply Nat.dvd_add",), [g.to(f"{m} ∣ {b} * n"), g.to(f"{m} ∣ {m} * {c}")]),
                     ("apply", ("apply Dvd.dvd.mul_left",), [g.to(f"{m} ∣ n")]),
                     ("exact", ("exact h₀",), []), ("exact", (f"exact Nat.dvd_mul_right {m} {c}",), [])],
        "search": [("use", (f"exact Nat.dvd_add (Dvd.dvd.mul_left h₀ {b}) (Nat.dvd_mul_right {m} {c})",), [])],
        "have_steps": [("have", (f"have h2 : {m} ∣ {b} * n := by exact Dvd.dvd.mul_left h₀ {b}",),
                        [g.add("h2", f"{m} ∣ {b} * n")]),
                       ("have", (f"have h3 : {m} ∣ {m} * {c} := by exact Nat.dvd_mul_right {m} {c}",),
                        [g.add("h2", f"{m} ∣ {b} * n").add("h3", f"{m} ∣ {m} * {c}")]),
                       ("combine", ("exact Nat.dvd_add h2 h3",), [])],
    }
    return th


def _congruence(rng: np.random.Generator) -> _Theorem:
    m = int(rng.integers(5, 14))
    r, s, t_ = int(rng.integers(1, m)), int(rng.integers(2, 9)), int(rng.integers(1, 20))
    u = (s * r + t_) % m
    t = f"{s} * n + {t_} ≡ {u} [MOD {m}]"
    g = Goal(_vars(("n", "ℕ"), ("h₀", f"n ≡ {r} [MOD {m}]")), t)
    close = "unfold Nat.ModEq at *; omega"
    th = _Theorem("congruence", _name(rng, "numbertheory"), f"(n : ℕ) (h₀ : n ≡ {r} [MOD {m}])", g, "n",
                  (close, "simp only [Nat.ModEq] at *; omega"),
                  ("omega", "decide", "simp", "linarith", "aesop", "norm_num"),
                  ("omega", "linarith", "decide", "exact h₀"),
                  ("congruence multiply both sides mod", "a ≡ b [MOD n] → c * a ≡ c * b [MOD n]",
                   "modular arithmetic add constant"),
                  ("Nat.ModEq.mul_left", "Nat.ModEq.add_right", "Nat.ModEq.trans", "Nat.add_mod"))
    z, su = _induct(g, "n", "0", "k + 1", (("k", "ℕ"),), ("zero", "succ"))
    g1 = Goal(_vars(("n", "ℕ"), ("h₀", f"n % {m} = {r} % {m}")), f"({s} * n + {t_}) % {m} = {u} % {m}")
    g2 = g1.to(f"({s} % {m} * ({r} % {m}) % {m} + {t_} % {m}) % {m} = {u} % {m}")
    mid = f"{s} * {r} + {t_}"
    h2, h3 = f"{s} * n ≡ {s} * {r} [MOD {m}]", f"{s} * n + {t_} ≡ {mid} [MOD {m}]"
    th.plans = {
        "induction": [("induct", ("induction' n with k ih",), [z, su]), ("base", (close,), []),
                      ("step", (close,), [])],
        "rewrite": [("rw", ("rw [Nat.ModEq] at h₀ ⊢",), [g1]), ("rw", ("rw [Nat.add_mod, Nat.mul_mod, h₀]",), [g2]),
                    ("close", ("norm_num", "rfl"), [])],
        "cases": [("split", (f"by_cases h : n < {m}",), [Goal(g.add("h", f"n < {m}").hyps, t, "pos"),
                                                         Goal(g.add("h", f"¬n < {m}").hyps, t, "neg")]),
                  ("branch", (close,), []), ("branch", (close,), [])],
        "backward": [("apply", (f"apply Nat.ModEq.trans (b := {mid})",),
                      [g.to(f"{s} * n + {t_} ≡ {mid} [MOD {m}]"), g.to(f"{mid} ≡ {u} [MOD {m}]")]),
                     ("apply", ("apply Nat.ModEq.add_right",), [g.to(h2)]),
                     ("apply", ("apply Nat.ModEq.mul_left",), [g.to(f"n ≡ {r} [MOD {m}]")]),
                     ("exact", ("exact h₀",), []), ("exact", ("exact rfl",), [])],
        "search": [("use", (f"exact (Nat.ModEq.add_right {t_} (Nat.ModEq.mul_left {s} h₀)).trans rfl",), [])],
        "have_steps": [("have", (f"have h2 : {h2} := by exact Nat.ModEq.mul_left {s} h₀",), [g.add("h2", h2)]),
                       ("have", (f"have h3 : {h3} := by exact Nat.ModEq.add_right {t_} h2",),
                        [g.add("h2", h2).add("h3", h3)]),
                       ("combine", ("exact h3.trans rfl",), [])],
    }
    return th


def _real_amgm(rng: np.random.Generator) -> _Theorem:
    k = int(rng.integers(1, 8))
    rhs = f"{k} * a ^ 2 + {k} * b ^ 2"
    t = f"{2 * k} * a * b ≤ {rhs} + ↑n"
    g = Goal(_vars(("a", "ℝ"), ("b", "ℝ"), ("n", "ℕ")), t)
    hint = "nlinarith [sq_nonneg (a - b), sq_nonneg (a + b), (Nat.cast_nonneg n : (0 : ℝ) ≤ ↑n)]"
    th = _Theorem("real_amgm", _name(rng, "algebra"), "(a b : ℝ) (n : ℕ)", g, "n",
                  (hint, "nlinarith [sq_nonneg (a - b), (Nat.cast_nonneg n : (0 : ℝ) ≤ ↑n)]"),
                  ("omega", "linarith", "nlinarith", "norm_num", "decide", "simp"),
                  ("omega", "linarith", "decide", "simp"),
                  ("two a b less than a squared plus b squared", "2 * a * b ≤ a ^ 2 + b ^ 2",
                   "square nonnegative real"), ("two_mul_le_add_sq", "sq_nonneg", "Nat.cast_nonneg"))
    z, su = _induct(g, "n", "0", "k + 1", (("k", "ℕ"),), ("zero", "succ"))
    su_c = su.to(f"{2 * k} * a * b ≤ {rhs} + (↑k + 1)")
    rw1 = f"0 ≤ {rhs} + ↑n - {2 * k} * a * b"
    sq = f"{k} * (a - b) ^ 2 + ↑n"
    h2, h3 = "0 ≤ (a - b) ^ 2", "(0 : ℝ) ≤ ↑n"
    th.plans = {
        "induction": [("induct", ("induction' n with k ih",), [z, su]),
                      ("base", ("simp only [Nat.cast_zero, add_zero]",), [z.to(f"{2 * k} * a * b ≤ {rhs}")]),
                      ("base", ("nlinarith [sq_nonneg (a - b)]",), []),
                      ("step", ("push_cast",), [su_c]), ("step", ("linarith [ih]",), [])],
        "rewrite": [("rw", ("rw [← sub_nonneg]",), [g.to(rw1)]),
                    ("rw", (f"rw [show {rhs} + ↑n - {2 * k} * a * b = {sq} by ring]",), [g.to(f"0 ≤ {sq}")]),
                    ("close", ("positivity",), [])],
        "cases": [("split", ("rcases le_total a b with h | h",),
                   [Goal(g.add("h", "a ≤ b").hyps, t, "inl"), Goal(g.add("h", "b ≤ a").hyps, t, "inr")]),
                  ("branch", (hint,), []), ("branch", (hint,), [])],
        "backward": [("apply", ("apply le_add_of_le_of_nonneg",), [g.to(f"{2 * k} * a * b ≤ {rhs}"), g.to("0 ≤ ↑n")]),
                     ("apply", ("apply le_of_sub_nonneg",), [g.to(f"0 ≤ {rhs} - {2 * k} * a * b")]),
                     ("exact", ("exact by nlinarith [sq_nonneg (a - b)]",), []),
                     ("exact", ("exact Nat.cast_nonneg n",), [])],
        "search": [("use", ("nlinarith [two_mul_le_add_sq a b, (Nat.cast_nonneg n : (0 : ℝ) ≤ ↑n)]",), [])],
        "have_steps": [("have", (f"have h2 : {h2} := by positivity", f"have h2 : {h2} := sq_nonneg _"),
                        [g.add("h2", h2)]),
                       ("have", (f"have h3 : {h3} := by positivity",), [g.add("h2", h2).add("h3", "0 ≤ ↑n")]),
                       ("combine", ("nlinarith [h2, h3]",), [])],
    }
    return th


def _list_length(rng: np.random.Generator) -> _Theorem:
    elem = pick(rng, ("ℕ", "ℤ", "ℚ"))
    t = "(l.reverse ++ l).length = 2 * l.length"
    g = Goal(_vars(("l", f"List {elem}")), t)
    th = _Theorem("list_length", _name(rng, "lists"), f"(l : List {elem})", g, "l", ("simp [two_mul]",),
                  ("omega", "decide", "linarith", "positivity", "norm_num", "tauto"),
                  ("decide", "linarith", "positivity", "tauto"),
                  ("length of append", "length of reversed list", "(as ++ bs).length"),
                  ("List.length_append", "List.length_reverse", "two_mul"))
    z, su = _induct(g, "l", "[]", "x :: xs", (("x", elem), ("xs", f"List {elem}")), ("nil", "cons"))
    cons = g.to(t)
    nil_g = Goal((), _sub(t, "l", "[]"), "nil")
    cons_g = Goal(_vars(("x", elem), ("xs", f"List {elem}")), _sub(t, "l", "x :: xs"), "cons")
    h2 = "(l.reverse ++ l).length = l.reverse.length + l.length"
    h3 = "l.reverse.length = l.length"
    th.plans = {
        "induction": [("induct", ("induction' l with x xs ih",), [z, su]), ("base", ("simp", "rfl"), []),
                      ("step", ("simp at ih ⊢; omega",), [])],
        "rewrite": [("rw", ("rw [List.length_append]",), [cons.to("l.reverse.length + l.length = 2 * l.length")]),
                    ("rw", ("rw [List.length_reverse]",), [cons.to("l.length + l.length = 2 * l.length")]),
                    ("close", ("omega", "ring"), [])],
        "cases": [("split", ("rcases l with _ | ⟨x, xs⟩",), [nil_g, cons_g]), ("branch", ("simp", "rfl"), []),
                  ("branch", ("simp; omega",), [])],
        "backward": [("apply", ("apply Eq.trans (List.length_append _ _)",),
                      [cons.to("l.reverse.length + l.length = 2 * l.length")]),
                     ("apply", ("apply Eq.trans (congrArg (· + l.length) (List.length_reverse l))",),
                      [cons.to("l.length + l.length = 2 * l.length")]),
                     ("exact", ("exact (two_mul l.length).symm",), [])],
        "search": [("use", ("rw [List.length_append, List.length_reverse]",),
                    [cons.to("l.length + l.length = 2 * l.length")]), ("close", ("omega",), [])],
        "have_steps": [("have", (f"have h2 : {h2} := by exact List.length_append _ _",), [g.add("h2", h2)]),
                       ("have", (f"have h3 : {h3} := by exact List.length_reverse l",),
                        [g.add("h2", h2).add("h3", h3)]),
                       ("combine", ("omega",), [])],
    }
    return th


_TEMPLATES: dict[str, Callable[[np.random.Generator], _Theorem]] = {
    "nat_ring": _nat_ring, "nat_linear": _nat_linear, "divisibility": _divisibility, "congruence": _congruence,
    "real_amgm": _real_amgm, "list_length": _list_length}


def _theorem(rng: np.random.Generator, i: int) -> _Theorem:
    th = _TEMPLATES[TEMPLATES[i % len(TEMPLATES)] if i < len(TEMPLATES) else pick(rng, TEMPLATES)](rng)
    th.name = f"{th.name}_{i}" if not th.name[-1].isdigit() else f"{th.name}_v{i}"
    th.plans["automation"] = [("close", th.closer, [])]
    return th


# -- Lean's answers -----------------------------------------------------------------------------------
def _design_error(tac: str, g: Goal) -> str:
    """The error of a tactic that fails on ``g`` by design (never an execution failure's text)."""
    head = tac.split()[0]
    if head == "omega":
        if "ℝ" in g.text() or "List" in g.text() or "[MOD" in g.target:
            return "omega could not prove the goal:\nNo usable constraints found for the hypotheses and goal"
        return ("omega could not prove the goal:\na possible counterexample may satisfy the constraints\n"
                "  b - a ≤ -1\nwhere\n a := ↑n * ↑n\n b := ↑n ^ 2")
    if head == "decide":
        return (f"failed to synthesize\n  Decidable ({g.target})\nAdditional diagnostic information may be "
                "available using the `set_option diagnostics true` command.")
    if head in ("simp", "norm_num", "simp_all"):
        return "simp made no progress"
    if head in ("linarith", "nlinarith"):
        return f"linarith failed to find a contradiction\n{g.text()}\n⊢ False failed"
    if head == "positivity":
        return "not a positivity goal"
    if head == "aesop":
        return "aesop: failed to prove the goal after exhaustive search."
    if head == "tauto":
        return "tauto failed to solve some goals."
    if head == "exact?":
        return "exact? could not close the goal. Try `apply?` to see partial suggestions."
    if head == "exact":  # exact h₀ on a goal it does not fit
        hyp = dict(g.hyps).get(tac.split()[1], "?")
        return (f"type mismatch\n  {tac.split()[1]}\nhas type\n  {hyp} : Prop\nbut is expected to have type\n"
                f"  {g.target} : Prop")
    raise ValueError(f"leanprover: no error for {tac!r}")  # pragma: no cover


_IDENT = re.compile(r"(?<![\w.'])((?:[A-Z][\w']*\.)+[\w'.]*\w|[a-z][a-z]*_[\w']+)")
_TACTIC_TYPOS = {"omega": "omgea", "simp": "smip", "ring": "rign", "linarith": "linarit", "nlinarith": "nlinarth",
                 "norm_num": "norm_nm", "exact": "exct", "apply": "aply", "rw": "rwa_", "have": "hvae",
                 "induction'": "induciton'", "rcases": "rcaes", "by_cases": "by_case", "positivity": "postivity",
                 "decide": "decied", "aesop": "aeosp", "tauto": "taut", "subst": "susbt", "push_cast": "push_cats",
                 "unfold": "unfld", "symm": "smym", "revert": "revret", "rfl": "rlf", "apply?": "aply?",
                 "exact?": "exatc?", "ring_nf": "rign_nf", "simp_all": "simp_al"}


def _typo(rng: np.random.Generator, tac: str) -> tuple[str, str]:
    """The intended tactic ``tac`` sent wrong, and Lean's error."""
    names = [m for m in _IDENT.finditer(tac) if m.group(1) in LEMMAS or "." in m.group(1)]
    r = rng.random()
    if names and r < 0.55:
        m = names[int(rng.integers(len(names)))]
        good = m.group(1)
        bad = pick(rng, (good + "'", good.replace("_", "", 1) if "_" in good else good + "_left",
                         good.rsplit(".", 1)[0] + ".foo" if "." in good else "Nat." + good))
        return tac[:m.start()] + bad + tac[m.end():], f"unknown identifier '{bad}'"
    if "]" in tac and r < 0.8:
        cut = tac.rindex("]")
        bad = tac[:cut] + tac[cut + 1:]
        return bad, f"<input>:1:{len(bad)}: unexpected token; expected ',' or ']'"
    head = tac.split()[0]
    bad = _TACTIC_TYPOS.get(head, head + "x") + tac[len(head):]
    return bad, "<input>:1:0: unknown tactic"


def _detours(g: Goal) -> list[tuple[str, Goal]]:
    """Tactics that succeed on ``g`` but do not help, with the goal they leave."""
    out = []
    if g.target.count(" = ") == 1 and "≡" not in g.target:
        lhs, rhs = g.target.split(" = ")
        out.append(("symm", g.to(f"{rhs} = {lhs}")))
    if " ≡ " in g.target:
        lhs, rest = g.target.split(" ≡ ")
        rhs, mod = rest.split(" [MOD ")
        out.append(("symm", g.to(f"{rhs} ≡ {lhs} [MOD {mod}")))
    props = [(n, t) for n, t in g.hyps if n.startswith("h") or n == "ih"]
    if props:
        n, t = props[-1]
        if not any(_mentions(t2, n) for _, t2 in g.hyps):
            out.append((f"revert {n}", Goal(tuple(h for h in g.hyps if h[0] != n), f"{t} → {g.target}", g.case)))
    var = next(((n, t) for n, t in reversed(g.hyps) if not (n.startswith("h") or n == "ih")), None)
    if var and not any(_mentions(t, var[0]) for n, t in g.hyps if n != var[0]):
        out.append((f"revert {var[0]}", Goal(tuple(h for h in g.hyps if h[0] != var[0]),
                                             f"∀ ({var[0]} : {var[1]}), {g.target}", g.case)))
    return out


# -- the episode --------------------------------------------------------------------------------------
class _Session:
    """One episode: the REPL's proof states, the calls, the noise, the counts of the truth."""

    def __init__(self, rng: np.random.Generator, th: _Theorem, strategy: str, correct: bool) -> None:
        self.rng, self.th, self.strategy, self.correct = rng, th, strategy, correct
        self.states: dict[int, list[Goal]] = {0: [th.goal]}
        self.cur, self.top = 0, 0
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": _system(rng)},
                                               {"role": "user", "content": _task(rng, th)}]
        self.n_calls = self.n_tactics = self.failures = self.design = self.backtracks = 0
        self.proof: list[str] = []  # the tactics of the proof, in order
        self.last_from = 0  # the state the last successful tactic acted on

    @property
    def goals(self) -> list[Goal]:
        return self.states[self.cur]

    def call(self, name: str, args: dict[str, Any], result: str, say: str | None) -> None:
        cid = "call_" + "".join(map(_B62.__getitem__, self.rng.integers(0, 62, size=24).tolist()))
        self.n_calls += 1
        self.messages.append({"role": "assistant", "content": say, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args,
                                                                                              ensure_ascii=False)}}]})
        self.messages.append({"role": "tool", "tool_call_id": cid, "name": name, "content": result})

    def say(self, options: tuple[str, ...], *, always: bool = False) -> str | None:
        return pick(self.rng, options) if always or self.rng.random() < _P_SAY else None

    def tactic(self, tac: str, new: list[Goal] | None, say: str | None, *, error: str | None = None,
               info: str | None = None, record: bool = True) -> None:
        """Run ``tac`` on the current state: ``new`` replaces its first goal, or ``error`` answers it.
        An execution failure first, at :data:`_P_FAIL`."""
        if self.rng.random() < _P_FAIL:
            bad, err = _typo(self.rng, tac)
            self.n_tactics += 1
            self.failures += 1
            self.call("run_tactic", {"proof_state": self.cur, "tactic": bad},
                      json.dumps({"message": f"Lean error: {err}"}, ensure_ascii=False), say)
            say = self.say((f"Typo on my side; the tactic is `{tac}`.", "Let me fix that and resend.",
                            "Wrong name. Corrected:", f"Retrying as `{tac}`."))
        self.n_tactics += 1
        if error is not None:
            self.design += 1
            self.call("run_tactic", {"proof_state": self.cur, "tactic": tac},
                      json.dumps({"message": f"Lean error: {error}"}, ensure_ascii=False), say)
            return
        assert new is not None
        self.top += 1
        self.states[self.top] = [*new, *self.goals[1:]]
        out: dict[str, Any] = {"proofState": self.top, "goals": [g.text() for g in self.states[self.top]]}
        if info:
            out["messages"] = [{"severity": "info", "data": info}]
        self.call("run_tactic", {"proof_state": self.cur, "tactic": tac}, json.dumps(out, ensure_ascii=False), say)
        self.last_from, self.cur = self.cur, self.top
        if record:
            self.proof.append(tac)


_SAY: dict[str, tuple[str, ...]] = {
    "close": ("This should close it.", "Finishing with `{t}`.", "Closing the goal.", "Now `{t}` should do it."),
    "induct": ("Induction on `{v}`.", "Let me do induction on {v}.", "Proceed by induction on `{v}`."),
    "base": ("Base case.", "The base case is easy.", "First the zero case.", "Handle the base case."),
    "step": ("Inductive step, using ih.", "Now the step case.", "Step case: the hypothesis ih should do it."),
    "rw": ("Rewrite with `{t}`.", "Let me rewrite.", "Next rewrite.", "Rewriting to normalise the goal."),
    "split": ("Split into cases.", "Case analysis here.", "Two cases to handle."),
    "subst": ("Substitute.", "Eliminate n with the case hypothesis.", "Substituting."),
    "branch": ("Close this branch.", "This branch is easy.", "Next branch.", "Handling this case."),
    "apply": ("Work backwards: apply a lemma.", "Reduce the goal with `{t}`.", "Apply and see what is left."),
    "exact": ("This is exactly what is needed.", "Close it with an exact term.", "Exact term."),
    "use": ("Use the lemma I found.", "Apply the found lemma.", "Now use it."),
    "have": ("First an intermediate fact.", "State a helper fact.", "Introduce a `have`.",
             "Build it step by step."),
    "combine": ("Combine the facts.", "Put the pieces together.", "Now combine."),
}


def _thought(s: _Session, kind: str, tac: str) -> str | None:
    return s.say(tuple(x.format(t=tac, v=s.th.var) for x in _SAY[kind]))


def _search_result(th: _Theorem, rng: np.random.Generator, *, key_first: bool) -> str:
    names = list(th.found)
    rest = names[1:]
    rng.shuffle(rest)
    names = [names[0], *rest] if key_first else rest + [names[0]]
    return "\n".join(f"{i + 1}. {n} {LEMMAS[n]}" for i, n in enumerate(names[:int(rng.integers(3, len(names) + 1))]))


def _episode(rng: np.random.Generator, th: _Theorem, strategy: str, correct: bool) -> tuple[_Session, str]:
    s = _Session(rng, th, strategy, correct)
    if rng.random() < _P_CHECK_FIRST:  # optional, whatever the strategy
        s.call("check", {"term": th.prop}, f"{th.prop} : Prop",
               s.say(("Let me check the statement first.", "Type-check the statement.", "First, #check it."),
                     always=True))
    steps = [(kind, pick(rng, alts), new) for kind, alts, new in th.plans[strategy]]
    tried: list[str] = []
    if strategy == "automation":
        tried = [th.pool[int(i)] for i in rng.choice(len(th.pool), size=int(rng.integers(2, 5)), replace=False)]
        steps = [("auto", t, None) for t in tried] + steps
    n_core = len(steps) - (0 if correct else 1)  # an incorrect episode stops before the last closing tactic
    search_at = int(rng.integers(len(steps))) if rng.random() < _P_SEARCH else -1
    detour_at = int(rng.integers(len(steps))) if rng.random() < _P_DETOUR else -1
    if strategy == "search":
        _lemma_search(s)
    for i, (kind, tac, new) in enumerate(steps):
        if i == search_at:  # optional
            q = pick(rng, th.queries)
            s.call("search_lemmas", {"query": q}, _search_result(th, rng, key_first=False),
                   s.say(("Maybe there is a lemma for this.", "Let me search Mathlib.", f"Searching: {q}")))
        if i == detour_at:  # optional
            _detour(s)
        if i == n_core:
            _give_up(s, tried)
        elif kind == "auto":
            s.tactic(tac, None, s.say(("Try automation first.", f"Maybe `{tac}` just works.", f"Trying {tac}.",
                                       "Let me see if a decision procedure gets it.")),
                     error=_design_error(tac, s.goals[0]))
        else:
            s.tactic(tac, new, _thought(s, kind, tac))
    if not correct:
        return s, "gave_up" if rng.random() < 0.5 else "unfinished"
    if s.goals:
        raise RuntimeError(f"leanprover: a {strategy} proof of {th.template} left goals")  # pragma: no cover
    if rng.random() < _P_CONFIRM:  # optional: the closing tactic again, on the state before it
        s.cur = s.last_from
        s.tactic(s.proof[-1], [], s.say(("Re-run the last step to confirm.", "Let me confirm the proof closes.",
                                         "Double-check the final step.")), record=False)
    return s, "proved"


def _give_up(s: _Session, tried: list[str]) -> None:
    """An incorrect episode's last tries on the goal it cannot close (failing by design)."""
    rng, th = s.rng, s.th
    left = [t for t in th.giveup if t not in tried]
    left = left if len(left) >= 2 else list(th.giveup)
    for i in rng.choice(len(left), size=min(len(left), int(rng.integers(2, 4))), replace=False):
        t = left[int(i)]
        if t.startswith("exact h₀") and (dict(s.goals[0].hyps).get("h₀") in (None, s.goals[0].target)):
            t = "exact?"
        s.tactic(t, None, s.say(("Try this instead.", f"Maybe `{t}`.", "Another attempt.",
                                 "Hmm, trying something else.")), error=_design_error(t, s.goals[0]))


def _lemma_search(s: _Session) -> None:
    rng, th = s.rng, s.th
    key = th.found[0]
    if rng.random() < _P_APPLY_Q:
        s.tactic("apply?", [s.goals[0]], s.say(("Ask Lean for applicable lemmas.", "Let me try apply? first.",
                                                "Search with apply?."), always=True),
                 info=f"Try this: refine {key} ?_" if "." in key else f"Try this: rw [{key}]", record=False)
    else:
        q = pick(rng, th.queries)
        s.call("search_lemmas", {"query": q}, _search_result(th, rng, key_first=True),
               s.say((f"Search Mathlib for: {q}.", "Look for a lemma that does this.", "First find the right lemma."),
                     always=True))
    s.call("check", {"term": key}, f"{key} {LEMMAS[key]}",
           s.say((f"Check the signature of {key}.", f"What does {key} say exactly?", "Check it.")))


def _detour(s: _Session) -> None:
    """A tactic that succeeds but does not help, then back to the state before it."""
    options = _detours(s.goals[0])
    if not options:  # pragma: no cover - every goal here has one
        return
    tac, g = options[int(s.rng.integers(len(options)))]
    back = s.cur
    s.tactic(tac, [g], s.say((f"Maybe `{tac}` helps.", f"Try `{tac}`.", "Let me reshape the goal.")), record=False)
    s.cur = back
    s.backtracks += 1


def _final(s: _Session, ending: str) -> str:
    rng, th = s.rng, s.th
    body = "\n  ".join(s.proof)
    if ending == "proved":
        head = pick(rng, ("The proof is complete:", "Done. Final proof:", "All goals closed. Here is the proof:",
                          "Proved."))
        return f"{head}\n```lean\n{th.statement}\n  {body}\n```"
    if ending == "unfinished":
        return (pick(rng, ("I could not close the last goal; partial proof:", "Incomplete proof, one goal left:",
                           "Best attempt (the remaining goal is left as sorry):"))
                + f"\n```lean\n{th.statement}\n  {body + chr(10) + '  ' if body else ''}sorry\n```")
    return pick(rng, ("I was not able to prove this theorem. Giving up.", "None of my attempts closes the goal; "
                      "I'll stop here.", f"I can't finish the proof of {th.name}."))


# -- words ---------------------------------------------------------------------------------------------
def _system(rng: np.random.Generator) -> str:
    return pick(rng, (
        "You are a Lean 4 theorem prover with Mathlib. Prove the theorem by calling run_tactic on proof states of "
        "the REPL; you may search for lemmas with search_lemmas and check terms with check. When every goal is "
        "closed, give the full proof.",
        "You are an expert in Lean 4 and Mathlib. Tools: run_tactic(proof_state, tactic), search_lemmas(query), "
        "check(term). Each successful tactic returns a new proof state number. Finish with the complete proof.",
        "Interactive theorem proving (Lean 4, Mathlib). Work in tactic mode through the REPL tools and report the "
        "final proof, or say that you cannot prove it."))


def _task(rng: np.random.Generator, th: _Theorem) -> str:
    return pick(rng, (
        f"Prove the following theorem.\n\n```lean\n{th.statement}\n  sorry\n```\n\nInitial proof state 0:\n"
        f"{th.goal.text()}",
        f"```lean\n{th.statement}\n  sorry\n```\nThe REPL has proof state 0 with goal:\n{th.goal.text()}",
        f"Theorem to prove ({th.name}):\n```lean\n{th.statement}\n```\nproofState 0:\n{th.goal.text()}"))


def leanprover(n_questions: int = 60, n_samples: int = 4, random_state: RandomState = 0, *,
               arms: dict[str, dict[str, float]] | None = None) -> World:
    """Generate the Lean 4 theorem-proving world (OpenAI ``tool_calls`` records).

    Parameters
    ----------
    n_questions, n_samples
        Theorems (each drawn from a template with its own constants; the first six one of each
        template), and episodes per theorem and arm.
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.
    arms
        Arm name -> strategy mixture (default: :data:`ARMS`, ``base`` and ``rl``, which differ
        only in it).

    Returns
    -------
    World
        Records in format ``openai``; truth ``arm, question_id, sample_id, strategy, template,
        n_calls`` (failed calls included), ``n_tactics``, ``n_failures``, ``n_design_errors``,
        ``n_backtracks``, ``ending`` and ``correct``.

    Examples
    --------
    >>> w = leanprover(n_questions=2, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"]))
    ('openai', 4, ['base', 'rl'])
    >>> w.records[0]["messages"][-1]["role"], "tool_calls" in w.records[0]["messages"][-1]
    ('assistant', False)
    """
    rng = world_generator(random_state)
    tasks = [(f"lean-{i:04d}", _theorem(rng, i)) for i in range(n_questions)]

    def episode(rng: np.random.Generator, arm: str, qid: str, sample: int, strategy: str, th: _Theorem
                ) -> tuple[dict[str, Any], tuple]:
        correct = bool(rng.random() < _SUCCESS[strategy])
        s, ending = _episode(rng, th, strategy, correct)
        s.messages.append({"role": "assistant", "content": _final(s, ending)})
        return ({"arm": arm, "question_id": qid, "sample_id": sample, "gold": [], "correct": correct,
                 "messages": s.messages},
                (th.template, s.n_calls, s.n_tactics, s.failures, s.design, s.backtracks, ending, correct))

    return planted_world("leanprover", "openai", rng, tasks, arms or ARMS, n_samples, episode, _SUCCESS,
                         truth_schema={"template": pl.String, "n_calls": pl.Int64, "n_tactics": pl.Int64,
                                       "n_failures": pl.Int64, "n_design_errors": pl.Int64,
                                       "n_backtracks": pl.Int64, "ending": pl.String, "correct": pl.Boolean})
