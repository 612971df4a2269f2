"""The CLI offers the library's own Literal choices (mechanism.core.options.choices), so a flag and the
parameter it sets can never disagree."""
from __future__ import annotations

import argparse

from mechanism._cli.main import build_parser
from mechanism.analysis.segmentation import Retries
from mechanism.core.options import Weighting, choices
from mechanism.report.passkt import TSource


def _option(command: str, flag: str, action: str | None = None) -> argparse.Action:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    if action is not None:
        sub = next(a for a in sub._actions if isinstance(a, argparse._SubParsersAction)).choices[action]
    return next(a for a in sub._actions if flag in a.option_strings)


def test_cli_choices_are_the_library_literals():
    assert tuple(_option("passkt", "--t-source").choices) == choices(TSource) == ("auto", "t_cap", "truncation",
                                                                                  "messages")
    assert tuple(_option("integration", "--weighting").choices) == choices(Weighting)
    assert tuple(_option("strategies", "--retries", "fit").choices) == choices(Retries)


def test_library_refuses_a_choice_outside_the_literal_naming_the_parameter():
    import polars as pl
    import pytest

    from mechanism.core.errors import InputError
    from mechanism.report.passkt import analyse_passkt

    runs = pl.DataFrame({"arm": ["a"], "question_id": ["q"], "correct": [True], "n_rounds": [1]})
    with pytest.raises(InputError, match="`t_source` must be one of 'auto', 't_cap', 'truncation'"):
        analyse_passkt(runs, k=[1], t=[1], t_source="budget")
    with pytest.raises(InputError, match="`ci`"):
        analyse_passkt(runs, k=[1], t=[1], ci=95)


def test_seed_flag_accepts_the_seeds_the_library_accepts():
    import pytest

    from mechanism.core.options import check_seed

    seed = _option("passkt", "--seed").type
    for value in (0, 2**32 - 1, 2**32, 2**33, 2**70):
        assert seed(str(value)) == check_seed(value) == value
    for text in ("-1", "1.5", "one"):
        with pytest.raises(argparse.ArgumentTypeError):
            seed(text)
