"""Section writers take result objects and only format them; ``write_report`` computes every
analysis once and hands the results to the writers, so data never climb back up the layers."""
from __future__ import annotations

import importlib
import pkgutil
import sys
from collections import Counter

import polars as pl
import pytest

import mechanism as mx
import mechanism.analysis.boundaries
import mechanism.analysis.compare
import mechanism.analysis.information
import mechanism.analysis.parallel
import mechanism.analysis.passkt
import mechanism.analysis.segmentation
from mechanism.datasets.simulation import simulate

FAST = "hashing-64"

# every analysis a report shows, by the module that defines it (the report layer's modules that
# import it by name are patched as well, see _count)
ANALYSES = [(mechanism.analysis.passkt, "pass_at_kt"), (mechanism.analysis.passkt, "pass_at_kt_per_problem"),
            (mechanism.analysis.passkt, "consistency"), (mechanism.analysis.boundaries, "boundary"),
            (mechanism.analysis.compare, "reweighting"), (mechanism.analysis.information, "integration"),
            (mechanism.analysis.parallel, "strategy_shares"), (mechanism.analysis.segmentation, "segment")]
try:  # the one implementation of strategy shares, in the module that holds it
    import mechanism.analysis.shares

    ANALYSES.append((mechanism.analysis.shares, "strategy_shares"))
except ImportError:  # pragma: no cover - a tree without mechanism.analysis.shares
    pass


@pytest.fixture(scope="module")
def fitted():
    sim = simulate(n_questions=8, n_samples=4, arms=("base", "rl", "sft"), random_state=2, progress=False)
    space = mx.StrategySpace(embedder=FAST, random_state=0, progress=False).fit(sim.runs)
    return sim.runs, space


def _count(monkeypatch, calls: Counter, *, forbid: bool = False, n_rows: int | None = None) -> None:
    """Wrap every analysis so each call is counted, or refused with ``forbid``. The strategy
    explorer segments the few member transcripts it shows (not the runs): with ``n_rows``,
    segmenting a table of another size is counted apart."""
    for module, name in ANALYSES:
        real = getattr(module, name)

        def wrapper(*args, _real=real, _name=name, **kwargs):
            if forbid:
                raise AssertionError(f"a writer computed {_name}")
            key = f"{_name}[{kwargs['metric']}]" if _name == "pass_at_kt" and "metric" in kwargs else _name
            if _name == "segment" and n_rows is not None and args[0].height != n_rows:
                key = "segment[examples shown]"
            calls[key] += 1
            return _real(*args, **kwargs)

        for holder, attribute in _holders(module, name, real):
            monkeypatch.setattr(holder, attribute, wrapper)


def _holders(module, name: str, real) -> list[tuple[object, str]]:
    """``module`` and every report or demo module that imported ``name`` from it, under any name
    (a module-level ``from x import f as g`` holds its own reference, which patching ``module``
    alone would miss)."""
    import mechanism.report

    for info in pkgutil.walk_packages(mechanism.report.__path__, "mechanism.report."):
        importlib.import_module(info.name)
    users = [(m, attribute) for key, m in sorted(sys.modules.items())
             if key.startswith(("mechanism.report", "mechanism.demo"))
             for attribute, value in sorted(vars(m).items()) if value is real]
    return [(module, name), *users]


@pytest.mark.slow
def test_one_report_computes_each_analysis_once(fitted, tmp_path, monkeypatch):
    runs, space = fitted
    calls: Counter = Counter()
    _count(monkeypatch, calls, n_rows=runs.height)
    describe = space.describe
    monkeypatch.setattr(space, "describe", lambda: calls.update(["describe"]) or describe())
    report = mx.report.write_report(runs, tmp_path, base="base", space=space, t=(0, 5), n_boot=20,
                                    n_permutations=10, progress=False)
    # one call per analysis; the pairwise ones once per treated arm (rl and sft)
    assert calls.pop("segment[examples shown]", 0) <= space.n_strategies_
    assert calls == Counter({"pass_at_kt": 1, "pass_at_kt[pass^k]": 1, "pass_at_kt_per_problem": 1,
                             "consistency": 1, "boundary": 2, "reweighting": 2, "integration": 1,
                             "strategy_shares": 1, "segment": 1, "describe": 1}), calls
    assert len(report.verdicts) == 2 and report.summary_html.is_file()


def test_section_writers_accept_results_and_compute_nothing(fitted, tmp_path, monkeypatch):
    from mechanism.report import (
        analyse_passkt,
        analyse_reweighting,
        analyse_strategies,
        write_integration,
        write_passkt,
        write_reweighting,
        write_strategies,
    )

    runs, space = fitted
    passkt = analyse_passkt(runs, k=[1, 2], t=[0, 1, 5], n_boot=20)
    found = analyse_strategies(space, runs, map_xy=False, n_boot=20)
    rws = analyse_reweighting(runs, found.placement.labels, base="base", treated=["rl"], n_boot=20,
                              n_permutations=0)
    integ = mx.integration(runs, base="base", treated="rl", labels=found.placement.labels, n_boot=20)
    assert [b.treated for b in passkt.boundaries] == ["rl", "sft"] and passkt.base == "base"
    _count(monkeypatch, Counter(), forbid=True)
    monkeypatch.setattr(space, "describe", lambda: pytest.fail("a writer described the space"))
    sections = {"passkt": write_passkt(passkt, tmp_path / "p", figures=False),
                "strategies": write_strategies(found, runs, tmp_path / "s", figures=False),
                "reweighting": write_reweighting(rws, tmp_path / "r", n_boot=20, figures=False),
                "integration": write_integration(integ, tmp_path / "i", figures=False)}
    assert sections["passkt"].results == passkt.boundaries
    assert sections["reweighting"].results == rws and sections["integration"].results == [integ]
    assert sections["strategies"].frames["shares"].equals(found.shares)
    for section in sections.values():
        assert section.text and all(p.is_file() for p in section.written)
    # the tables written are the results' own
    assert pl.read_csv(tmp_path / "p" / "pass_at_kt.csv")["pass_at_kt"].to_list() == pytest.approx(
        passkt.curves["pass_at_kt"].to_list())
    assert (tmp_path / "r" / "rl_vs_base" / "reweighting.json").is_file()
    assert f"{rws[0].total:+.3f}" in sections["reweighting"].text
