"""A tool-integrated math-reasoning world: one ``python`` tool on competition-style word problems
(ToRL / ReTool / SimpleTIR-like).

The user asks a math word problem with an integer answer: counting and combinatorics, number
theory, algebra, probability (the answer is ``m + n`` for a probability ``m/n`` in lowest
terms), sequences, or geometry on lattice points (:data:`KINDS`; several templates each, with
random numbers). The agent has ONE tool, ``python(code)``, in OpenAI ``tool_calls`` format; the
tool's result (role ``tool``) is the program's stdout, a Python traceback ending in its error
line (``NameError: name 'comb' is not defined``), or ``TimeoutError: execution exceeded 10
seconds``. The text of an assistant message before a tool call is its reasoning (sometimes
empty); the last assistant message, without a tool call, gives the answer
(``The answer is \\boxed{42}.``).

Seven planted strategies (programs without failures and optional steps):

================  =========================================================================
``no_code``       reasons in words and answers; no tool call at all
``calculate``     the method in words, then one short program that only evaluates the final
                  arithmetic (``print(comb(10, 3) - comb(8, 1))``)
``brute_force``   one program that enumerates the candidates (loops, ``itertools``) and
                  counts, sums or finds them; optionally (:data:`_P_SECOND_RUN`) a first run
                  with a bound off by one, then the run with the bound fixed
``symbolic``      one ``sympy`` program (symbols, ``solve``, ``summation``, ``binomial``,
                  ``expand``, number-theory functions); optionally (:data:`_P_SUBSTITUTE`) a
                  second one substituting the result back
``simulate``      a Monte Carlo program (``random`` or ``numpy.random``) printing an
                  estimate; optionally (:data:`_P_MORE_TRIALS`) again with ten times the
                  trials; the answer is the exact value near the estimate
``verify``        the answer derived in words first (the text states it), then a program
                  that checks it (an ``assert`` of the closed form, or an enumeration
                  compared with it); optionally (:data:`_P_SECOND_CHECK`) the other check
``stepwise``      three to five small programs (as many as the problem has intermediate
                  quantities), each computing one, a later one typing in the numbers an
                  earlier one printed
================  =========================================================================

Failures are execution, not strategy: any program fails with probability :data:`_P_FAIL` (a
missing import, ``NameError``; a misspelt module, ``import sympi``; an unclosed parenthesis,
``SyntaxError``; a misspelt variable; a ``TypeError`` from joining a string and a number or a
float loop bound; a ``ZeroDivisionError``; a loop made too large, ``TimeoutError``) and is
followed at once by the corrected program. The optional steps happen at fixed rates whatever
the arm, the problem and the strategy: a first exploratory program printing small cases
(:data:`_P_EXPLORE`) and a final program re-checking the answer's arithmetic
(:data:`_P_RECHECK`), in every strategy that calls the tool; and an empty reasoning text
(:data:`_P_EMPTY`, every assistant message before a tool call). Variable names, import styles
(``import math``, ``from math import comb``, ``import sympy as sp``, ``from sympy import *``),
print formats, numbers and the assistant's words vary inside every strategy. The ``rl`` arm
differs from ``base`` only in its mixture; success is drawn at the strategy's rate (random
within it), and a wrong answer is a number near the right one. Every program without
randomness is run when the world is generated, so the tool's result is what it prints; a
simulation's estimate is drawn around the exact value, and a sympy program's output is written
as sympy prints it.

The truth carries, beside ``strategy``, ``kind`` (the kind of problem), ``n_calls`` (python
calls), ``n_failures`` (programs that failed) and ``correct``.

Written from scratch as a held-out world, without reference to how trajectories are segmented
or clustered.
"""
from __future__ import annotations

import contextlib
import io
import json
import keyword
import re
from dataclasses import dataclass, field, replace
from fractions import Fraction
from math import comb, factorial, gcd, isqrt, lcm
from typing import Any

import numpy as np
import polars as pl

from mechanism.core.options import RandomState, as_generator
from mechanism.datasets.worlds._base import World, name, pick, planted_world

STRATEGIES = ("no_code", "calculate", "brute_force", "symbolic", "simulate", "verify", "stepwise")
KINDS = ("counting", "number_theory", "algebra", "probability", "sequences", "geometry")
ARMS = {
    "base": {"no_code": 0.2, "calculate": 0.14, "brute_force": 0.2, "symbolic": 0.08, "simulate": 0.16,
             "verify": 0.1, "stepwise": 0.12},
    "rl": {"no_code": 0.06, "calculate": 0.14, "brute_force": 0.1, "symbolic": 0.22, "simulate": 0.06,
           "verify": 0.22, "stepwise": 0.2},
}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"no_code": 0.35, "calculate": 0.6, "brute_force": 0.65, "symbolic": 0.7, "simulate": 0.45,
            "verify": 0.75, "stepwise": 0.6}
#: the chance that a program fails (the same for every program, strategy and arm)
_P_FAIL = 0.15
#: the optional steps' rates (the same in every arm)
_P_EXPLORE = 0.2  # a first program printing small cases, every strategy that calls the tool
_P_RECHECK = 0.25  # a last program re-checking the answer's arithmetic, idem
_P_EMPTY = 0.2  # an assistant message before a tool call without text
_P_SECOND_RUN = 0.4  # brute_force
_P_SUBSTITUTE = 0.4  # symbolic
_P_MORE_TRIALS = 0.6  # simulate
_P_SECOND_CHECK = 0.5  # verify
TIMEOUT = "TimeoutError: execution exceeded 10 seconds"

_MODULES = {"M": "math", "F": "fractions", "IT": "itertools", "R": "random", "S": "sympy"}
# import styles: (import line, prefix); a prefix of "" binds the names used, "§" is numpy's Generator
_STYLES = {"M": (("import math", "math."), ("from math import {names}", ""), ("from math import *", "")),
           "F": (("from fractions import Fraction", ""), ("import fractions", "fractions.")),
           "IT": (("import itertools", "itertools."), ("from itertools import {names}", ""),
                  ("import itertools as it", "it.")),
           "R": (("import random", "random."), ("from random import {names}", ""), ("import random as rnd", "rnd."),
                 ("import numpy as np", "§")),
           "S": (("import sympy as sp", "sp."), ("from sympy import *", ""), ("from sympy import {names}", ""),
                 ("import sympy", "sympy."))}
_MISSPELT = {"math": ("maths", "mth"), "fractions": ("fraction", "fractons"), "itertools": ("itertool", "itertols"),
             "random": ("randon", "ramdom"), "numpy": ("numpi", "nupmy"), "sympy": ("sympi", "simpy", "sypmy")}
_NAMES = {"vi": ("i", "x", "a", "m", "u"), "vj": ("j", "y", "b", "k", "v"), "vc": ("c", "combo", "sel", "draw", "tup"),
          "sa": ("x", "n", "t", "k", "z"), "sb": ("y", "m", "u", "r", "w"),
          "ve": ("expr", "res", "ans", "val", "result", "value"), "A": ("count", "cnt", "total", "n_ok", "acc"),
          "G": ("good", "fav", "wins", "hit"), "T": ("trials", "n_trials", "T", "runs", "n_sim"),
          "H": ("hits", "success", "tally", "s_hits"), "gen": ("rng", "gen")}
_LABELS = ("answer", "result", "count", "value", "total", "ans")
_SYSTEM = ("Solve the following math problem. You may run Python code with the `python` tool; it returns the "
           "program's output. Put the final answer within \\boxed{}.",
           "Please integrate natural language reasoning with programs to solve the problem below, and put your "
           "final answer within \\boxed{}.",
           "You are a careful competition mathematician with access to a Python interpreter (tool `python`). "
           "End with the answer in \\boxed{}.")
_SAY = {
    "calculate": ("Let me evaluate this.", "Now the number.", "Computing it:", "Let me get the final value."),
    "brute": ("Let me count by brute force.", "I'll enumerate every case directly.", "A direct enumeration is safest.",
              "Let me just check all candidates.", "Let me compute this."),
    "brute2": ("The bound is off by one; fixing the range.", "Let me rerun with the full range.",
               "Wait, the range should include the endpoint.", "Let me widen the bound to be sure."),
    "sym": ("Let me set this up in sympy.", "Solving it symbolically.", "Let sympy do the algebra.",
            "Let me compute this.", "Symbolic computation:"),
    "sym2": ("Substituting back to check.", "Let me plug the result back in.", "Check the solution.",
             "Verify by substitution."),
    "sim": ("Let me estimate it with a simulation.", "A Monte Carlo estimate first.", "Simulating random trials.",
            "Let me compute this.", "Let me sample at random."),
    "sim2": ("More trials for a tighter estimate.", "Let me rerun with more samples.",
             "The estimate is noisy; more trials.", "Again with a larger sample."),
    "verify": ("So the answer should be {v}. Let me check it.", "That gives {v}; verifying with code.",
               "I get {v}. Let me confirm.", "Candidate: {v}. Checking it independently."),
    "verify2": ("And a second check.", "Let me also check it another way.", "One more check.", "Cross-checking."),
    "step": ("Next quantity.", "Now the next piece.", "Using {prev}:", "Plugging in {prev}.", "Let me compute this."),
    "explore": ("Let me look at small cases first.", "Quick exploration:", "First some small values.",
                "Let me get a feel for the numbers."),
    "recheck": ("Double-checking the arithmetic.", "Let me recompute the final number.",
                "Quick check of the arithmetic.", "Re-evaluating to be safe."),
    "retry": ("Let me fix that.", "Fixing the error.", "Oops.", "Corrected version:", "That failed; trying again.",
              "Let me fix the code and rerun."),
    "so": ("So the value is {v}.", "This gives {v}.", "We get {v}.", "Hence {v}.", ""),
    "final": ("The answer is $\\boxed{{{a}}}$.", "Therefore, the answer is \\boxed{{{a}}}.",
              "**Final answer:** \\boxed{{{a}}}", "\\boxed{{{a}}}"),
}


def _signed(v: int) -> str:
    return f"({v})" if v < 0 else str(v)


def _ints(rng: np.random.Generator, *bounds: tuple[int, int]) -> list[int]:
    return [int(rng.integers(lo, hi)) for lo, hi in bounds]


def _two_names(rng: np.random.Generator) -> dict[str, str]:
    a = name(rng)
    return {"P1": a, "P2": next(b for b in iter(lambda: name(rng), None) if b != a)}


def _problem(rng: np.random.Generator, kind: str, texts: tuple[str, ...], p: dict, method: str, closed: str,
             steps: list[str], brute: tuple, sim: tuple, sym: list[str], symnum: str, explore: str,
             **extra: Any) -> dict:
    """A problem: its text and numbers (``p``, and ``c`` as code writes them), what each
    strategy's programs are made of, the value of its closed form and its answer.

    ``brute``: (mode, loops, condition, summand), mode ``count``, ``sum``, ``prob`` (a
    probability) or ``find`` (print the solutions); ``sim``: (random draws, size of the space).
    """
    c = {k: _signed(v) if isinstance(v, int) else v for k, v in p.items()}
    ns = {"comb": comb, "factorial": factorial, "gcd": gcd, "lcm": lcm, "isqrt": isqrt, "Fraction": Fraction}
    value = eval(closed.format(**c, **{k: v[0] for k, v in _NAMES.items()}, **dict.fromkeys(_MODULES, "")), ns)
    mode, loops, cond, acc = (*brute, "1")[:4]
    return dict(kind=kind, text=pick(rng, texts).format(**p), method=method.format(**p), p=p, c=c, closed=closed,
                steps=steps, mode=mode, loops=loops, cond=cond, acc=acc, draws=sim[0], scale=sim[-1], sym=sym,
                symnum=symnum, explore=explore, value=value, **extra,
                answer=value.numerator + value.denominator if isinstance(value, Fraction) else value)


def _committee(rng: np.random.Generator) -> dict:
    n, k = _ints(rng, (9, 16), (3, 7))
    return _problem(
        rng, "counting", ("A club has {n} members, among them {P1} and {P2}. In how many ways can a committee of {k} "
                          "be chosen if {P1} and {P2} refuse to serve together?",
                          "A team of {k} is formed from {n} students, including {P1} and {P2}, who cannot both be on "
                          "it. How many teams are possible?"), dict(n=n, k=k, n2=n - 2, k2=k - 2, **_two_names(rng)),
        "There are C({n}, {k}) teams in all; a team with both {P1} and {P2} picks its other {k2} members from the "
        "other {n2}, in C({n2}, {k2}) ways, and these are excluded.",
        "{M}comb({n}, {k}) - {M}comb({n2}, {k2})", ["{M}comb({n}, {k})", "{M}comb({n2}, {k2})", "{s0} - {s1}"],
        ("count", ["for {vc} in {IT}combinations(range({n}), {k}):"], "not (0 in {vc} and 1 in {vc})"),
        (["{vc} = {R}sample(range({n}), {k})"], "{M}comb({n}, {k})"),
        ["{sa}, {sb} = {S}symbols('{sa} {sb}', integer=True, positive=True)",
         "{ve} = {S}binomial({sa}, {sb}) - {S}binomial({sa} - 2, {sb} - 2)",
         "print({ve}.subs({{{sa}: {n}, {sb}: {k}}}))"],
        "{S}binomial({n}, {k}) - {S}binomial({n2}, {k2})", "[{M}comb({n}, {vj}) for {vj} in range(6)]")


def _gaps(rng: np.random.Generator) -> dict:
    n, k = _ints(rng, (9, 17), (3, 6))
    return _problem(
        rng, "counting", ("How many {k}-element subsets of {{1, 2, ..., {n}}} contain no two consecutive integers?",
                          "In how many ways can {k} of {n} chairs in a row be chosen so that no two chosen chairs are "
                          "adjacent?"), dict(n=n, k=k, n1=n + 1, m=n - k + 1),
        "Removing the {k} - 1 forced gaps maps such choices one to one onto {k}-subsets of {m} items, so the count "
        "is C({m}, {k}).", "{M}comb({n} - {k} + 1, {k})",
        ["{n} - {k} + 1", "{M}factorial({s0})", "{M}factorial({k}) * {M}factorial({s0} - {k})", "{s1} // {s2}"],
        ("count", ["for {vc} in {IT}combinations(range(1, {n1}), {k}):"],
         "all({vc}[{vj} + 1] - {vc}[{vj}] > 1 for {vj} in range({k} - 1))"),
        (["{vc} = sorted({R}sample(range(1, {n1}), {k}))"], "{M}comb({n}, {k})"),
        ["{sa}, {sb} = {S}symbols('{sa} {sb}', integer=True)", "{ve} = {S}binomial({sa} - {sb} + 1, {sb})",
         "print({ve}.subs({{{sa}: {n}, {sb}: {k}}}))"],
        "{S}binomial({m}, {k})", "[{M}comb({vj}, 2) - {vj} + 1 for {vj} in range(2, 9)]")


def _shelf(rng: np.random.Generator) -> dict:
    n, = _ints(rng, (5, 8))
    return _problem(
        rng, "counting", ("In how many ways can {n} different books be arranged in a row if two particular books "
                          "must stand next to each other?",
                          "{n} people, including {P1} and {P2}, line up for a photo. In how many orders do {P1} and "
                          "{P2} stand side by side?"), dict(n=n, n1=n + 1, m=n - 1, **_two_names(rng)),
        "Glue the pair into one block: {m}! orders of the {m} blocks, times 2 orders inside the pair.",
        "2 * {M}factorial({n} - 1)", ["{n} - 1", "{M}factorial({s0})", "2 * {s1}"],
        ("count", ["for {vc} in {IT}permutations(range({n})):"], "abs({vc}.index(0) - {vc}.index(1)) == 1"),
        (["{vc} = list(range({n}))", "{R}shuffle({vc})"], "{M}factorial({n})"),
        ["{sa} = {S}symbols('{sa}', integer=True, positive=True)", "{ve} = 2 * {S}factorial({sa} - 1)",
         "print({ve}.subs({sa}, {n}))"], "2 * {S}factorial({m})", "[{M}factorial({vj}) for {vj} in range(1, {n1})]")


def _multiples(rng: np.random.Generator) -> dict:
    a, b = sorted(int(x) for x in rng.choice(np.arange(2, 14), 2, replace=False))
    N, = _ints(rng, (300, 2001))
    return _problem(
        rng, "number_theory", ("How many positive integers not exceeding {N} are divisible by {a} or by {b}?",
                               "How many integers from 1 to {N} inclusive are multiples of {a} or {b} (or both)?"),
        dict(N=N, a=a, b=b, N1=N + 1, l=lcm(a, b)),
        "Inclusion-exclusion: floor({N}/{a}) multiples of {a}, floor({N}/{b}) of {b}, less the floor({N}/{l}) "
        "multiples of both (lcm({a}, {b}) = {l}).", "{N} // {a} + {N} // {b} - {N} // {M}lcm({a}, {b})",
        ["{N} // {a}", "{N} // {b}", "{M}lcm({a}, {b})", "{N} // {s2}", "{s0} + {s1} - {s3}"],
        ("count", ["for {vi} in range(1, {N1}):"], "{vi} % {a} == 0 or {vi} % {b} == 0"),
        (["{vi} = {R}randint(1, {N})"], "{N}"),
        ["{sa} = {S}Integer({N})",
         "print({S}floor({sa} / {a}) + {S}floor({sa} / {b}) - {S}floor({sa} / {S}ilcm({a}, {b})))"],
        "{N} // {a} + {N} // {b} - {N} // {S}ilcm({a}, {b})",
        "[{vj} for {vj} in range(1, 40) if {vj} % {a} == 0 or {vj} % {b} == 0]")


def _coprime(rng: np.random.Generator) -> dict:
    p, q = sorted(int(x) for x in rng.choice([2, 3, 5, 7, 11], 2, replace=False))
    e, = _ints(rng, (1, 3))
    m = p ** e * q
    t, = _ints(rng, (2, max(3, 1500 // m)))
    return _problem(
        rng, "number_theory", ("How many integers between 1 and {N} inclusive are relatively prime to {m}?",
                               "Count the positive integers n <= {N} with gcd(n, {m}) = 1."),
        dict(N=m * t, m=m, p=p, q=q, t=t, N1=m * t + 1, pq=p * q),
        "The primes dividing {m} are {p} and {q}; remove the multiples of {p} and of {q} from 1..{N} and add back "
        "the multiples of {pq}.", "{N} * ({p} - 1) * ({q} - 1) // ({p} * {q})",
        ["{N} // {p}", "{N} // {q}", "{N} // ({p} * {q})", "{N} - {s0} - {s1} + {s2}"],
        ("count", ["for {vi} in range(1, {N1}):"], "{M}gcd({vi}, {m}) == 1"), (["{vi} = {R}randint(1, {N})"], "{N}"),
        ["{ve} = {S}factorint({m})", "print({ve})", "print({N} * {S}prod(1 - {S}Rational(1, {vj}) for {vj} in {ve}))"],
        "{S}totient({m}) * {t}", "[{vj} for {vj} in range(1, 30) if {M}gcd({vj}, {m}) == 1]",
        symout=[f"{{{p}: {e}, {q}: 1}}"])


def _divisor_sum(rng: np.random.Generator) -> dict:
    while True:
        powers = [(int(p), int(rng.integers(1, 4))) for p in sorted(rng.choice([2, 3, 5, 7], int(rng.integers(2, 4)),
                                                                                 replace=False))]
        N = int(np.prod([p ** e for p, e in powers]))
        if N <= 3000:
            break
    terms = [f"({p}**{e + 1} - 1) // ({p} - 1)" for p, e in powers]
    return _problem(
        rng, "number_theory", ("What is the sum of all positive divisors of {N}?",
                               "Find the sum of the positive divisors of {N}."),
        dict(N=N, N1=N + 1, fac=" * ".join(f"{p}^{e}" if e > 1 else str(p) for p, e in powers)),
        "{N} = {fac}, and the divisor sum is multiplicative: (p^(e+1) - 1)/(p - 1) for each prime power.",
        " * ".join(f"({t})" for t in terms), [*terms, " * ".join(f"{{s{i}}}" for i in range(len(terms)))],
        ("sum", ["for {vi} in range(1, {N1}):"], "{N} % {vi} == 0", "{vi}"), (["{vi} = {R}randint(1, {N})"], "{N}"),
        ["print({S}divisors({N}))", "print({S}divisor_sigma({N}))"], "{S}divisor_sigma({N})",
        "[{vj} for {vj} in range(1, 30) if {N} % {vj} == 0]", symout=[str([d for d in range(1, N + 1) if N % d == 0])])


def _power_sum(rng: np.random.Generator) -> dict:
    x0, y0 = sorted(int(x) for x in rng.choice([v for v in range(-9, 13) if v], 2, replace=False))
    e, extra = _ints(rng, (2, 4), (2, 9))
    v = x0 ** e + y0 ** e
    cube = e == 3
    return _problem(
        rng, "algebra", ("Real numbers x and y satisfy x + y = {s} and xy = {p}. What is x^{e} + y^{e}?",
                         "If a + b = {s} and ab = {p}, find a^{e} + b^{e}."),
        dict(s=x0 + y0, p=x0 * y0, e=e, B=max(-x0, y0) + extra, B1=max(-x0, y0) + extra + 1, x0=x0, y0=y0),
        ("Use x^3 + y^3 = (x + y)^3 - 3xy(x + y)" if cube else "Use x^2 + y^2 = (x + y)^2 - 2xy") +
        " with x + y = {s} and xy = {p}.", "{s}**3 - 3 * {p} * {s}" if cube else "{s}**2 - 2 * {p}",
        ["{s}**3", "3 * {p} * {s}", "{s0} - {s1}"] if cube else ["{s}**2", "2 * {p}", "{s0} - {s1}"],
        ("find", ["for {vi} in range(-{B}, {B1}):", "for {vj} in range(-{B}, {B1}):"],
         "{vi} + {vj} == {s} and {vi} * {vj} == {p}", "{vi}**{e} + {vj}**{e}"),
        (["{vi} = {R}randint(-{B}, {B})", "{vj} = {R}randint(-{B}, {B})"], None),
        ["{sa}, {sb} = {S}symbols('{sa} {sb}')",
         "{ve} = {S}solve([{sa} + {sb} - {s}, {sa} * {sb} - {p}], [{sa}, {sb}])", "print(sorted({ve}))",
         "print({S}expand({ve}[0][0]**{e} + {ve}[0][1]**{e}))"],
        "{S}Integer({x0})**{e} + {S}Integer({y0})**{e}",
        "[({vj}, {s} - {vj}, {vj} * ({s} - {vj})) for {vj} in range(-3, 4)]",
        symout=[f"[({x0}, {y0}), ({y0}, {x0})]"], hits=[(x0, y0, v), (y0, x0, v)])


def _poly(b: int, c: int) -> str:
    """``x^2 - bx + c`` as written."""
    text = "x^2" + ((" - " if b > 0 else " + ") + ("" if abs(b) == 1 else str(abs(b))) + "x" if b else "")
    return text + ((" + " if c > 0 else " - ") + str(abs(c)) if c else "")


def _between_roots(rng: np.random.Generator) -> dict:
    r1, gap, extra = _ints(rng, (-12, 6), (3, 17), (5, 31))
    r2 = r1 + gap
    B = max(abs(r1), abs(r2)) + extra
    return _problem(
        rng, "algebra", ("How many integers x satisfy {poly} < 0?",
                         "Find the number of integer solutions of the inequality {poly} < 0."),
        dict(b=r1 + r2, c=r1 * r2, r1=r1, r2=r2, B=B, B1=B + 1, poly=_poly(r1 + r2, r1 * r2)),
        "The quadratic factors as (x - ({r1}))(x - ({r2})), so it is negative exactly for {r1} < x < {r2}.",
        "{r2} - {r1} - 1",
        ["{b}**2 - 4 * {c}", "{M}isqrt({s0})", "({b} - {s1}) // 2", "({b} + {s1}) // 2", "{s3} - {s2} - 1"],
        ("count", ["for {vi} in range(-{B}, {B1}):"], "{vi}**2 - {b} * {vi} + {c} < 0"),
        (["{vi} = {R}randint(-{B}, {B})"], "2 * {B} + 1"),
        ["{sa} = {S}symbols('{sa}')", "{ve} = {S}solve({sa}**2 - {b} * {sa} + {c}, {sa})", "print({ve})",
         "print({ve}[1] - {ve}[0] - 1)"], "{S}Integer({r2}) - {r1} - 1",
        "[({vj}, {vj}**2 - {b} * {vj} + {c}) for {vj} in range(-2, 6)]", symout=[f"[{r1}, {r2}]"])


_PROB = " The probability is m/n in lowest terms. Find m + n."


def _dice(rng: np.random.Generator) -> dict:
    s, = _ints(rng, (3, 12))
    return _problem(
        rng, "probability", ("Two fair six-sided dice are rolled. What is the probability that the sum is {s}?" + _PROB,
                             "Two fair dice are thrown. The chance that they total {s} is m/n in lowest terms. Find "
                             "m + n."), dict(s=s, cnt=6 - abs(s - 7)),
        "Of the 36 equally likely outcomes, 6 - |{s} - 7| = {cnt} give a sum of {s}.",
        "{F}Fraction(6 - abs({s} - 7), 36)",
        ["6 - abs({s} - 7)", "6 * 6", "{F}Fraction({s0}, {s1})", "{s2.numerator} + {s2.denominator}"],
        ("prob", ["for {vi}, {vj} in {IT}product(range(1, 7), repeat=2):"], "{vi} + {vj} == {s}"),
        (["{vi}, {vj} = {R}randint(1, 6), {R}randint(1, 6)"], None),
        ["{sa} = {S}symbols('{sa}')", "{ve} = {S}expand(sum({sa}**{vj} for {vj} in range(1, 7))**2)",
         "print({S}Rational({ve}.coeff({sa}, {s}), 36))"],
        "{S}Rational({cnt}, 36)", "[{vi} + {vj} for {vi} in range(1, 4) for {vj} in range(1, 4)]")


def _marbles(rng: np.random.Generator) -> dict:
    r, bb = _ints(rng, (3, 10), (3, 10))
    return _problem(
        rng, "probability", ("A bag holds {r} red and {bb} blue marbles. Two are drawn at random without replacement. "
                             "What is the probability that they have the same colour?" + _PROB,
                             "Two socks are taken at random from a drawer with {r} black and {bb} white socks. Find "
                             "the probability that they match." + _PROB), dict(r=r, bb=bb, n=r + bb, n1=r + bb + 1),
        "There are C({n}, 2) pairs, of which C({r}, 2) + C({bb}, 2) have one colour.",
        "{F}Fraction({M}comb({r}, 2) + {M}comb({bb}, 2), {M}comb({n}, 2))",
        ["{M}comb({r}, 2)", "{M}comb({bb}, 2)", "{M}comb({n}, 2)", "{F}Fraction({s0} + {s1}, {s2})",
         "{s3.numerator} + {s3.denominator}"],
        ("prob", ["for {vi}, {vj} in {IT}combinations(range({n}), 2):"], "({vi} < {r}) == ({vj} < {r})"),
        (["{vi}, {vj} = {R}sample(range({n}), 2)"], None),
        ["print(({S}binomial({r}, 2) + {S}binomial({bb}, 2)) / {S}binomial({n}, 2))"],
        "({S}binomial({r}, 2) + {S}binomial({bb}, 2)) / {S}binomial({n}, 2)",
        "[{M}comb({vj}, 2) for {vj} in range(2, {n1})]")


def _coins(rng: np.random.Generator) -> dict:
    n, = _ints(rng, (5, 13))
    k, = _ints(rng, (2, n))
    return _problem(
        rng, "probability", ("A fair coin is tossed {n} times. What is the probability of at least {k} heads?" + _PROB,
                             "{n} fair coins are flipped. Find the probability that {k} or more land heads." + _PROB),
        dict(n=n, k=k, n1=n + 1),
        "Each of the 2^{n} sequences is equally likely; those with at least {k} heads number C({n}, {k}) + ... + "
        "C({n}, {n}).", "{F}Fraction(sum({M}comb({n}, {vj}) for {vj} in range({k}, {n1})), 2**{n})",
        ["sum({M}comb({n}, {vj}) for {vj} in range({k}, {n1}))", "2**{n}", "{F}Fraction({s0}, {s1})",
         "{s2.numerator} + {s2.denominator}"],
        ("prob", ["for {vc} in {IT}product((0, 1), repeat={n}):"], "sum({vc}) >= {k}"),
        (["{vc} = [{R}randint(0, 1) for _ in range({n})]"], None),
        ["{sa} = {S}symbols('{sa}', integer=True)",
         "print({S}summation({S}binomial({n}, {sa}), ({sa}, {k}, {n})) / 2**{n})"],
        "{S}Rational(sum({S}binomial({n}, {vj}) for {vj} in range({k}, {n1})), 2**{n})",
        "[{M}comb({n}, {vj}) for {vj} in range({n1})]")


def _arithmetic(rng: np.random.Generator) -> dict:
    a, d, n = _ints(rng, (-15, 31), (2, 10), (10, 51))
    return _problem(
        rng, "sequences", ("An arithmetic sequence has first term {a} and common difference {d}. What is the sum of "
                           "its first {n} terms?",
                           "The sequence {a}, {a2}, {a3}, ... increases by a constant step. Find the sum of its first "
                           "{n} terms."), dict(a=a, d=d, n=n, n1=n + 1, a2=a + d, a3=a + 2 * d),
        "Term {n} is {a} + ({n} - 1)*{d}; the sum is {n} times the mean of the first and last terms.",
        "{n} * (2 * {a} + ({n} - 1) * {d}) // 2", ["{a} + ({n} - 1) * {d}", "{a} + {s0}", "{n} * {s1} // 2"],
        ("sum", ["for {vi} in range(1, {n1}):"], None, "{a} + ({vi} - 1) * {d}"),
        (["{vi} = {R}randint(1, {n})"], "{n}"),
        ["{sa} = {S}symbols('{sa}', integer=True)", "print({S}summation({a} + ({sa} - 1) * {d}, ({sa}, 1, {n})))"],
        "{n} * (2 * {S}Integer({a}) + ({n} - 1) * {d}) / 2", "[{a} + {vj} * {d} for {vj} in range(6)]")


def _square_sum(rng: np.random.Generator) -> dict:
    c, n = _ints(rng, (1, 10), (8, 41))
    return _problem(
        rng, "sequences", ("Let a_k = k^2 + {c}k. Compute a_1 + a_2 + ... + a_{n}.",
                           "Find the sum of k^2 + {c}k over k = 1, 2, ..., {n}."), dict(c=c, n=n, n1=n + 1),
        "Split it: the sum of squares n(n + 1)(2n + 1)/6 plus {c} times n(n + 1)/2, with n = {n}.",
        "{n} * ({n} + 1) * (2 * {n} + 1) // 6 + {c} * {n} * ({n} + 1) // 2",
        ["{n} * ({n} + 1) * (2 * {n} + 1) // 6", "{n} * ({n} + 1) // 2", "{c} * {s1}", "{s0} + {s2}"],
        ("sum", ["for {vi} in range(1, {n1}):"], None, "{vi}**2 + {c} * {vi}"), (["{vi} = {R}randint(1, {n})"], "{n}"),
        ["{sa} = {S}symbols('{sa}', integer=True)", "print({S}summation({sa}**2 + {c} * {sa}, ({sa}, 1, {n})))"],
        "{S}Rational({n} * ({n} + 1) * (2 * {n} + 1), 6) + {c} * {S}Rational({n} * ({n} + 1), 2)",
        "[{vj}**2 + {c} * {vj} for {vj} in range(1, 7)]")


def _disk(rng: np.random.Generator) -> dict:
    r, = _ints(rng, (4, 15))
    return _problem(
        rng, "geometry", ("How many points with integer coordinates lie inside or on the circle x^2 + y^2 = {r2}?",
                          "Count the lattice points (x, y) with x^2 + y^2 <= {r2}."), dict(r=r, r1=r + 1, r2=r * r),
        "For each x from -{r} to {r} there are 2*floor(sqrt({r2} - x^2)) + 1 admissible y.",
        "sum(2 * {M}isqrt({r2} - {vj}**2) + 1 for {vj} in range(-{r}, {r1}))",
        ["{r}**2", "[{M}isqrt({s0} - {vj}**2) for {vj} in range(1, {r1})]", "{r} + 2 * sum({s1})",
         "2 * {s2} + 2 * {r} + 1"],
        ("count", ["for {vi} in range(-{r}, {r1}):", "for {vj} in range(-{r}, {r1}):"], "{vi}**2 + {vj}**2 <= {r2}"),
        (["{vi} = {R}randint(-{r}, {r})", "{vj} = {R}randint(-{r}, {r})"], "(2 * {r} + 1)**2"),
        ["print(sum(2 * {S}floor({S}sqrt({r2} - {vj}**2)) + 1 for {vj} in range(-{r}, {r1})))"],
        "sum(2 * {S}floor({S}sqrt({r2} - {vj}**2)) + 1 for {vj} in range(-{r}, {r1}))",
        "[{M}isqrt({r2} - {vj}**2) for {vj} in range({r1})]")


def _segment(rng: np.random.Generator) -> dict:
    g, x1, y1 = _ints(rng, (1, 8), (-10, 11), (-10, 11))
    u, v = next(uv for uv in iter(lambda: _ints(rng, (1, 5), (1, 5)), None) if gcd(*uv) == 1)
    x2, y2 = x1 + g * u * int(pick(rng, (1, -1))), y1 + g * v * int(pick(rng, (1, -1)))
    return _problem(
        rng, "geometry", ("How many lattice points lie on the line segment from ({x1}, {y1}) to ({x2}, {y2}), "
                          "endpoints included?",
                          "Count the points with integer coordinates on the segment joining ({x1}, {y1}) and ({x2}, "
                          "{y2})."),
        dict(x1=x1, y1=y1, x2=x2, y2=y2, dx=g * u, dy=g * v, xl=min(x1, x2), xh=max(x1, x2), xh1=max(x1, x2) + 1,
             yl=min(y1, y2), yh=max(y1, y2), yh1=max(y1, y2) + 1, box=(g * u + 1) * (g * v + 1)),
        "Lattice points on a segment are evenly spaced: gcd(|dx|, |dy|) + 1 of them, with dx = {dx} and dy = {dy}.",
        "{M}gcd({dx}, {dy}) + 1", ["abs({x2} - {x1})", "abs({y2} - {y1})", "{M}gcd({s0}, {s1})", "{s2} + 1"],
        ("count", ["for {vi} in range({xl}, {xh1}):", "for {vj} in range({yl}, {yh1}):"],
         "({vi} - {x1}) * ({y2} - {y1}) == ({vj} - {y1}) * ({x2} - {x1})"),
        (["{vi} = {R}randint({xl}, {xh})", "{vj} = {R}randint({yl}, {yh})"], "{box}"),
        ["{sa}, {sb} = {S}Point({x1}, {y1}), {S}Point({x2}, {y2})",
         "print({S}gcd({sb}.x - {sa}.x, {sb}.y - {sa}.y) + 1)"],
        "{S}igcd({dx}, {dy}) + 1", "[{M}gcd({vj}, {dy}) for {vj} in range(1, {dx} + 2)]")


def _triangle(rng: np.random.Generator) -> dict:
    a, b = _ints(rng, (4, 21), (4, 21))
    return _problem(
        rng, "geometry", ("How many lattice points lie strictly inside the triangle with vertices (0, 0), ({a}, 0) "
                          "and (0, {b})?",
                          "Find the number of points (x, y) with positive integer coordinates such that {b}x + {a}y "
                          "< {ab}."), dict(a=a, b=b, ab=a * b, am=a - 1, bm=b - 1),
        "The {am} x {bm} grid of interior points of the rectangle is halved by the diagonal, which passes through "
        "gcd({a}, {b}) - 1 of them (Pick's theorem gives the same).",
        "(({a} - 1) * ({b} - 1) - {M}gcd({a}, {b}) + 1) // 2",
        ["({a} - 1) * ({b} - 1)", "{M}gcd({a}, {b})", "({s0} - {s1} + 1) // 2"],
        ("count", ["for {vi} in range(1, {a}):", "for {vj} in range(1, {b}):"], "{b} * {vi} + {a} * {vj} < {ab}"),
        (["{vi} = {R}randint(1, {am})", "{vj} = {R}randint(1, {bm})"], "{am} * {bm}"),
        ["print(sum({S}ceiling({S}Rational({b} * ({a} - {vj}), {a})) - 1 for {vj} in range(1, {a})))"],
        "sum({S}ceiling({S}Rational({b} * ({a} - {vj}), {a})) - 1 for {vj} in range(1, {a}))",
        "[{b} * ({a} - {vj}) / {a} for {vj} in range(1, {a})]")


_TEMPLATES = {"counting": (_committee, _gaps, _shelf), "number_theory": (_multiples, _coprime, _divisor_sum),
              "algebra": (_power_sum, _between_roots), "probability": (_dice, _marbles, _coins),
              "sequences": (_arithmetic, _square_sum), "geometry": (_disk, _segment, _triangle)}


@dataclass
class _Prog:
    """A program: its lines, its output, and what its failed versions need."""

    lines: list[str]
    output: str = ""
    imports: list[tuple[int, str, list[str]]] = field(default_factory=list)  # (line, module, names bound)
    loop: int | None = None  # the line whose bound a timeout inflates
    var: str | None = None  # the variable the last line prints
    vtype: str | None = None
    value: Any = None
    zero: tuple[list[str], int, str] | None = None  # a version dividing by zero: lines, line, error
    trials: tuple[int, int, int] | None = None  # simulations: trials line, loop line, trials
    styles: dict = field(default_factory=dict)

    @property
    def code(self) -> str:
        return "\n".join(self.lines)


def _names(rng: np.random.Generator) -> dict[str, str]:
    used: set[str] = set()
    out = {}
    for key, pool in _NAMES.items():
        out[key] = pick(rng, [p for p in pool if p not in used])
        used.add(out[key])
    return out


def _run(code: str) -> tuple[str, dict]:
    """What the program prints (and its variables); only programs without randomness run."""
    buf, ns = io.StringIO(), {"__name__": "__main__"}
    with contextlib.redirect_stdout(buf):
        exec(code, ns)
    return buf.getvalue().rstrip("\n"), ns


def _program(rng: np.random.Generator, body: list[str], fill: dict, *, output: str | None = None,
             styles: dict | None = None, loop: int | None = None, var: str | None = None,
             trials: tuple[int, int, int] | None = None) -> _Prog:
    """The program of ``body`` (templates filled with ``fill`` and the modules' prefixes), the
    imports it needs in a style drawn here (or ``styles``), and its output (run unless given)."""
    text = "\n".join(body)
    styles = dict(styles or {})
    heads, prefix, extra = [], {}, []
    for key, module in _MODULES.items():
        prefix[key] = ""
        if "{" + key + "}" not in text:
            continue
        names = sorted(set(re.findall(r"\{" + key + r"\}(\w+)", text)))
        head, pre = _STYLES[key][styles.setdefault(key, int(rng.integers(len(_STYLES[key]))))]
        heads.append((head.format(names=", ".join(names)), "numpy" if pre == "§" else module, names if pre == "" else
                      ["np" if pre == "§" else pre.rstrip(".")]))
        prefix[key] = pre
        if pre == "§":
            extra.append(f"{fill['gen']} = np.random.default_rng()")
    heads = [heads[i] for i in rng.permutation(len(heads))]
    lines = [h for h, _, _ in heads] + extra + [line.format(**fill, **prefix) for line in body]
    g = fill["gen"]
    for i, line in enumerate(lines):
        line = re.sub(r"§randint\(((?:\([^()]*\)|[^,()])+), ((?:\([^()]*\)|[^()])+)\)",
                      rf"int({g}.integers(\1, \2 + 1))", line)
        line = re.sub(r"§sample\((range\([^()]*\)), ([^()]+)\)", rf"{g}.choice(\1, \2, replace=False).tolist()", line)
        lines[i] = line.replace("§shuffle(", f"{g}.shuffle(")
    off = len(heads) + len(extra)
    prog = _Prog(lines, imports=[(i, m, b) for i, (_, m, b) in enumerate(heads)], styles=styles,
                 loop=None if loop is None else loop + off, var=var,
                 trials=None if trials is None else (trials[0] + off, trials[1] + off, trials[2]))
    if output is None:
        prog.output, ns = _run(prog.code)
        if var is not None:
            prog.value = ns[fill[var.strip("{}")] if var.startswith("{") else var]
            prog.vtype = type(prog.value).__name__
    else:
        prog.output = output
    if var is not None and var.startswith("{"):
        prog.var = fill[var.strip("{}")]
    return prog


def _show(rng: np.random.Generator, expr: str) -> str:
    """A template line printing ``expr`` in one of several formats."""
    label = pick(rng, _LABELS)
    return pick(rng, (f"print({expr})", f"print({expr})", f"print('{label}:', {expr})",
                      f'print(f"{label} = {{{{{expr}}}}}")'))


def _tb(line: int, error: str) -> str:
    return f'Traceback (most recent call last):\n  File "<stdin>", line {line}, in <module>\n{error}'


def _bump(line: str, by: int = 0, times: int = 1) -> str:
    """``line`` with the largest number literal of its loops (before any ``if``) times ``times``
    plus ``by``."""
    head, sep, tail = line.partition(" if ")
    m = max(re.finditer(r"(?<![\w.])\d[\d_]*(?![\w.])", head), key=lambda h: int(h.group()))
    return head[:m.start()] + str(int(m.group()) * times + by) + head[m.end():] + sep + tail


def _broken(rng: np.random.Generator, prog: _Prog) -> tuple[str, str]:
    """A failed version of ``prog``: its code and the error it ends with."""
    lines = list(prog.lines)
    kinds = ["syntax"] + ["import", "module"] * bool(prog.imports) + ["name"] * bool(prog.var)
    kinds += ["type"] * (prog.vtype in ("int", "Fraction", "list")) + ["zero"] * bool(prog.zero)
    kinds += ["timeout"] * (prog.loop is not None) + ["float"] * bool(prog.trials)
    kind = pick(rng, kinds)
    if kind == "import":
        i, _, bound = prog.imports[int(rng.integers(len(prog.imports)))]
        lines.pop(i)
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, bound)) + r")\b")
        for j, line in enumerate(lines):
            hit = None if line.startswith(("import ", "from ")) else pattern.search(line)
            if hit:
                return "\n".join(lines), _tb(j + 1, f"NameError: name '{hit.group(1)}' is not defined")
        kind, lines = "syntax", list(prog.lines)
    if kind == "module":
        i, module, _ = prog.imports[int(rng.integers(len(prog.imports)))]
        bad = pick(rng, _MISSPELT[module])
        lines[i] = re.sub(rf"\b{module}\b", bad, lines[i], count=1)
        return "\n".join(lines), _tb(i + 1, f"ModuleNotFoundError: No module named '{bad}'")
    if kind == "name":
        typo = prog.var[:-1] if len(prog.var) > 3 else prog.var + "s"
        typo = prog.var.upper() if keyword.iskeyword(typo) else typo
        last = list(re.finditer(rf"\b{prog.var}\b", lines[-1]))[-1]
        lines[-1] = lines[-1][:last.start()] + typo + lines[-1][last.end():]
        return "\n".join(lines), _tb(len(lines), f"NameError: name '{typo}' is not defined")
    if kind == "type":
        lines[-1] = f'print("{pick(rng, _LABELS)}: " + {prog.var})'
        return "\n".join(lines), _tb(len(lines), f'TypeError: can only concatenate str (not "{prog.vtype}") to str')
    if kind == "zero":
        bad, line, error = prog.zero
        return "\n".join(bad), _tb(line, error)
    if kind == "timeout":
        lines[prog.loop] = _bump(lines[prog.loop], times=int(pick(rng, (1000, 10 ** 5))))
        return "\n".join(lines), TIMEOUT
    if kind == "float":
        i, j, t = prog.trials
        exp = len(str(t)) - 1
        lines[i] = lines[i].split("=")[0] + f"= {t // 10 ** exp}e{exp}"
        return "\n".join(lines), _tb(j + 1, "TypeError: 'float' object cannot be interpreted as an integer")
    last = lines[-1]
    cut = last.rfind(")")
    lines[-1] = last[:cut] + last[cut + 1:]
    bare = lines[-1].strip()
    return "\n".join(lines), (f'  File "<stdin>", line {len(lines)}\n    {bare}\n    {" " * bare.find("(")}^\n'
                              "SyntaxError: '(' was never closed")


def _fill(rng: np.random.Generator, pr: dict, **extra: Any) -> dict:
    return {**pr["c"], **_names(rng), **extra}


def _lit(value: Any, mod: str = "F") -> str:
    if isinstance(value, Fraction):
        return f"{{{mod}}}Fraction({value.numerator}, {value.denominator})" if mod == "F" else \
            f"{{S}}Rational({value.numerator}, {value.denominator})"
    return str(value)


def _brute(rng: np.random.Generator, pr: dict, *, compare: str | None = None) -> _Prog:
    """An enumeration; ``compare``: print whether it agrees with this literal instead."""
    fill, mode, loops, cond, acc = _fill(rng, pr), pr["mode"], pr["loops"], pr["cond"], pr["acc"]
    body: list[str] = []
    if mode != "find" and rng.random() < 0.4:  # one line
        gen = " ".join(lp.rstrip(":") for lp in loops)
        body.append(f"{{A}} = sum({acc if mode == 'sum' else '1'} {gen}{f' if {cond}' if cond else ''})")
        if mode == "prob":
            body.insert(0, f"{{G}} = sum(1 {gen} if {cond})")
            body[1] = f"{{A}} = sum(1 {gen})"
        total = None
    else:
        body.append("{G} = {A} = 0" if mode == "prob" else "{A} = 0" if mode != "find" else "")
        body += ["    " * d + lp for d, lp in enumerate(loops)]
        ind = "    " * len(loops)
        if mode == "prob":
            body.append(ind + "{A} += 1")
        total = len(body) - 1
        if cond:
            body.append(ind + f"if {cond}:")
            ind += "    "
        shown = f"{acc} == {compare}" if compare else f"{{vi}}, {{vj}}, {acc}"
        body.append(ind + {"count": "{A} += 1", "sum": f"{{A}} += {acc}", "prob": "{G} += 1",
                           "find": f"print({shown})"}[mode])
        if body[0] == "":
            body.pop(0)
            total -= 1
    result = "{F}Fraction({G}, {A})" if mode == "prob" else "{A}"
    if mode != "find":
        body.append(f"print({result} == {compare})" if compare else _show(rng, result))
    loop = next(i for i, line in enumerate(body) if " for " in f" {line}")
    prog = _program(rng, body, fill, loop=loop, var=None if mode in ("find", "prob") or compare else "{A}")
    body_at = len(prog.lines) - len(body)
    if mode == "prob" and total is not None:
        good = _run("\n".join(prog.lines[:-1]) + f"\nprint({fill['G']})")[0]
        bad = prog.lines[:body_at + total] + prog.lines[body_at + total + 1:]
        prog.zero = (bad, len(bad), f"ZeroDivisionError: Fraction({good}, 0)")
    zero_at = next((i for i, line in enumerate(prog.lines) if re.search(rf"% {fill['vi']}\b", line)), None)
    if zero_at is not None and "range(1, " in prog.lines[prog.loop]:
        bad = list(prog.lines)
        bad[prog.loop] = bad[prog.loop].replace("range(1, ", "range(0, ", 1)
        prog.zero = (bad, zero_at + 1, "ZeroDivisionError: integer modulo by zero")
    return prog


def _simulate(rng: np.random.Generator, pr: dict, trials: int, like: _Prog | None = None
              ) -> tuple[_Prog, str]:
    """A Monte Carlo program and its estimate (as the words quote it); ``like``: the same style."""
    fill = _fill(rng, pr) if like is None else like.styles["fill"]
    mode, cond, acc = pr["mode"], pr["cond"], pr["acc"]
    body = [f"{{T}} = {trials:_}" if rng.random() < 0.3 else f"{{T}} = {trials}", "{H} = 0", "for _ in range({T}):",
            *("    " + d for d in pr["draws"])]
    ind = "    "
    if cond:
        body.append(ind + f"if {cond}:")
        ind += "    "
    if mode == "find":
        body += [ind + f"print({{vi}}, {{vj}}, {acc})", ind + "break"]
        hit = pr["hits"][int(rng.integers(len(pr["hits"])))]
        out, quoted = " ".join(map(str, hit)), str(hit[-1])
    else:
        body.append(ind + ("{H} += 1" if mode != "sum" else f"{{H}} += {acc}"))
        scale = 1 if mode == "prob" else eval(pr["scale"].format(**pr["c"], **dict.fromkeys(_MODULES, "")),
                                               {"comb": comb, "factorial": factorial})
        f = float(pr["value"]) / scale
        if mode == "sum":
            hits = round(trials * f * (1 + rng.normal(0, 0.5 / np.sqrt(trials))))
        else:
            hits = int(np.clip(round(trials * f + rng.normal(0, np.sqrt(trials * f * (1 - f)))), 0, trials))
        est = hits / trials if mode == "prob" else hits / trials * scale
        expr = "{H} / {T}" + ("" if mode == "prob" else f" * {pr['scale']}")
        style = int(rng.integers(3))
        body.append((f"print({expr})", f"print(round({expr}, 4))", f'print(f"estimate: {{{{{expr}:.4f}}}}")')[style])
        out = (repr(est), repr(round(est, 4)), f"estimate: {est:.4f}")[style]
        quoted = f"{est:.4f}" if mode == "prob" else f"{est:.1f}"
    prog = _program(rng, body, fill, output=out, styles=None if like is None else like.styles,
                    loop=0, trials=(0, 2, trials))
    prog.styles["fill"] = fill
    return prog, quoted


def _sympy(rng: np.random.Generator, pr: dict, like: _Prog | None = None, *, check: bool = False) -> _Prog:
    fill = _fill(rng, pr)
    styles = None if like is None else like.styles
    if not check:
        out = [*pr.get("symout", []), str(pr["value"])]
        return _program(rng, pr["sym"], fill, output="\n".join(out), styles=styles)
    lit = _lit(pr["value"], "S")
    body, out = pick(rng, ((f"print({{S}}simplify({pr['symnum']} - {lit}))", "0"),
                           (f"print({pr['symnum']} == {lit})", "True")))
    return _program(rng, [body], fill, output=out, styles=styles)


def _math(rng: np.random.Generator, pr: dict, expr: str, *, extra: dict | None = None,
          var: str | None = None) -> _Prog:
    """A short program evaluating ``expr`` (into ``var``, or a drawn name half the time)."""
    fill = _fill(rng, pr, **(extra or {}))
    if var is None and rng.random() < 0.5:
        return _program(rng, [_show(rng, expr)], fill)
    fill["V"] = var or fill["ve"]
    return _program(rng, ["{V} = " + expr, _show(rng, "{V}")], fill, var="{V}")


def _check(rng: np.random.Generator, pr: dict) -> _Prog:
    """An assert that the closed form gives the candidate answer."""
    fill = _fill(rng, pr)
    ok = pick(rng, ('"ok"', '"verified"', "'check passed'", "True"))
    lit = _lit(pr["value"])
    if rng.random() < 0.5:
        return _program(rng, [f"assert {pr['closed']} == {lit}", f"print({ok})"], fill)
    return _program(rng, ["{ve} = " + pr["closed"], f"assert {{ve}} == {lit}, {{ve}}", f"print({ok})"], fill)


class _Chat:
    """One transcript in OpenAI chat format: python calls, counted, with failures fixed."""

    def __init__(self, rng: np.random.Generator, pr: dict) -> None:
        self.rng, self.pr = rng, pr
        self.messages: list[dict] = [{"role": "system", "content": pick(rng, _SYSTEM)},
                                     {"role": "user", "content": pr["text"]}]
        self.n_calls = self.n_failures = 0

    def say(self, key: str, **fill: Any) -> str:
        return pick(self.rng, _SAY[key]).format(**fill)

    def _call(self, text: str, code: str, output: str) -> None:
        self.n_calls += 1
        cid = f"call_{self.n_calls:02d}{int(self.rng.integers(16 ** 8)):08x}"
        content = "" if self.rng.random() < _P_EMPTY else text
        self.messages.append({"role": "assistant", "content": content, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": "python", "arguments": json.dumps({"code": code})}}]})
        self.messages.append({"role": "tool", "tool_call_id": cid, "name": "python", "content": output})

    def run(self, text: str, prog: _Prog) -> str:
        """The program; where it fails (:data:`_P_FAIL`), first a broken version of it."""
        if self.rng.random() < _P_FAIL:
            self.n_failures += 1
            self._call(text, *_broken(self.rng, prog))
            text = self.say("retry")
        self._call(text, prog.code, prog.output)
        return prog.output

    def answer(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})


def _episode(rng: np.random.Generator, strategy: str, pr: dict, correct: bool) -> _Chat:
    ch = _Chat(rng, pr)
    value = str(pr["value"])
    said = ""
    if strategy != "no_code" and rng.random() < _P_EXPLORE:
        ch.run(ch.say("explore"), _math(rng, pr, pr["explore"]))
    if strategy == "no_code":
        said = pr["method"]
    elif strategy == "calculate":
        ch.run(f"{pr['method']} {ch.say('calculate')}", _math(rng, pr, pr["closed"]))
    elif strategy == "brute_force":
        prog = _brute(rng, pr)
        if rng.random() < _P_SECOND_RUN:
            flawed = replace(prog, zero=None, lines=list(prog.lines))
            flawed.lines[prog.loop] = _bump(prog.lines[prog.loop], by=-1)
            flawed.output = _run(flawed.code)[0]
            ch.run(ch.say("brute"), flawed)
            ch.run(ch.say("brute2"), prog)
        else:
            ch.run(ch.say("brute"), prog)
    elif strategy == "symbolic":
        prog = _sympy(rng, pr)
        ch.run(ch.say("sym"), prog)
        if rng.random() < _P_SUBSTITUTE:
            ch.run(ch.say("sym2"), _sympy(rng, pr, prog, check=True))
    elif strategy == "simulate":
        trials = int(pick(rng, (10_000, 20_000, 50_000, 100_000, 200_000)))
        prog, est = _simulate(rng, pr, trials)
        ch.run(ch.say("sim"), prog)
        if rng.random() < _P_MORE_TRIALS:
            prog, est = _simulate(rng, pr, trials * 10, prog)
            ch.run(ch.say("sim2"), prog)
        said = pick(rng, (f"The estimate {est} is close to {value}.", f"About {est}, so the exact value is {value}.",
                          f"{est} is nearest to {value}."))
    elif strategy == "verify":
        checks = [lambda: _check(rng, pr), lambda: _brute(rng, pr, compare=_lit(pr["value"]))]
        if rng.random() < 0.5:
            checks.reverse()
        ch.run(f"{pr['method']} {ch.say('verify', v=value)}", checks[0]())
        if rng.random() < _P_SECOND_CHECK:
            ch.run(ch.say("verify2"), checks[1]())
    elif strategy == "stepwise":
        style = pick(rng, ("x{i}", "v{i}", "part{i}", "r{i}", "abcde"))
        got: dict[str, Any] = {}
        out = ""
        for i, step in enumerate(pr["steps"]):
            var = style[i] if style == "abcde" else style.format(i=i + 1)
            prog = _math(rng, pr, step, extra=got, var=var)
            text = ch.say("step", prev=out.split()[-1]) if i else pick(rng, ("First, one piece.", "Step one.", ""))
            out = ch.run(text, prog)
            v = prog.value
            got[f"s{i}"] = _signed(v) if isinstance(v, int) else str(v) if isinstance(v, list) else v
    else:  # pragma: no cover - STRATEGIES is closed
        raise ValueError(strategy)
    if strategy != "no_code" and rng.random() < _P_RECHECK:
        v = pr["value"]
        ch.run(ch.say("recheck"), _math(rng, pr, f"{v.numerator} + {v.denominator}" if isinstance(v, Fraction)
                                        else pr["closed"]))
    answer = pr["answer"]
    if not correct:
        delta = int(pick(rng, (-3, -2, -1, 1, 2, 3, 10)))
        answer += delta if answer + delta > 0 else abs(delta)
    so = ch.say("so", v=value) if strategy != "simulate" else ""
    ch.answer(" ".join(t for t in (said, so, ch.say("final", a=answer)) if t))
    return ch


def interpreter(*, n_questions: int = 60, n_samples: int = 4, arms: dict[str, dict[str, float]] | None = None,
                random_state: RandomState = 0) -> World:
    """Generate the tool-integrated math world (one ``python`` tool; OpenAI ``tool_calls`` records).

    Parameters
    ----------
    n_questions, n_samples
        Problems (their kinds in turn, :data:`KINDS`), and episodes per problem and arm.
    arms
        Arm name -> strategy mixture (default: ``base`` and ``rl``, which differ only in it).
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.

    Returns
    -------
    World
        Records in format ``openai``; truth ``arm, question_id, sample_id, strategy, kind,
        n_calls, n_failures, correct``.

    Examples
    --------
    >>> w = interpreter(n_questions=2, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"]))
    ('openai', 4, ['base', 'rl'])
    >>> w.runs["n_rounds"].to_list() == w.truth["n_calls"].to_list()
    True
    """
    rng = as_generator(random_state)
    arms = arms or ARMS
    problems = []
    for i in range(n_questions):
        kind = KINDS[i % len(KINDS)]
        templates = _TEMPLATES[kind]
        problems.append((f"interpreter-{i:04d}", templates[int(rng.integers(len(templates)))](rng)))

    def episode(rng: np.random.Generator, arm: str, qid: str, sample: int, strategy: str, pr: dict
                ) -> tuple[dict, tuple]:
        correct = bool(rng.random() < _SUCCESS[strategy])
        ch = _episode(rng, strategy, pr, correct)
        return ({"arm": arm, "question_id": qid, "sample_id": sample, "gold": [str(pr["answer"])],
                 "correct": correct, "messages": ch.messages},
                (pr["kind"], ch.n_calls, ch.n_failures, correct))

    return planted_world("interpreter", "openai", rng, problems, arms, n_samples, episode, _SUCCESS,
                         truth_schema={"kind": pl.String, "n_calls": pl.Int64, "n_failures": pl.Int64,
                                       "correct": pl.Boolean})
