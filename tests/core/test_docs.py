"""The documentation holds together: a README a newcomer reads in a minute, links that lead
somewhere inside the repository, and benchmark tables generated from what was measured."""
from __future__ import annotations

import importlib.util
import json
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _links(path: Path) -> list[str]:
    text = path.read_text("utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # code blocks hold no links
    return LINK.findall(text)


def test_readme_is_short_and_starts_with_the_library():
    lines = README.read_text("utf-8").splitlines()
    assert len(lines) <= 150, len(lines)
    assert any("import mechanism" in line for line in lines[:80])


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_points_to_a_file(path):
    broken = []
    for target in _links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL or an anchor in the same page; the README has none of the first kind
        resolved = (path.parent / target.split("#")[0]).resolve()
        if not resolved.exists() or ROOT not in resolved.parents:
            broken.append(target)
    assert not broken, broken


def test_the_readme_links_nowhere_outside_the_repository():
    outside = [t for t in _links(README) if re.match(r"^[a-z][a-z0-9+.-]*:", t)]
    assert not outside and "http://" not in README.read_text("utf-8") and "https://" not in README.read_text("utf-8")


def test_docs_exist_for_each_topic_the_readme_moved_out():
    names = {p.name for p in DOCS}
    assert {"methods.md", "reading.md", "validation.md", "scale.md", "design.md"} <= names
    readme_links = {Path(t).name for t in _links(README)}
    assert names <= readme_links, names - readme_links


def test_ci_runs_the_readme_test_command():
    """.ci/run takes the second fenced block of the Quick start; it must be exactly the pytest command."""
    script = (ROOT / ".ci" / "run").read_text("utf-8")
    awk = re.search(r"\$\((awk .*README\.md)\)", script).group(1)
    out = subprocess.run(["bash", "-c", awk], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    quick = README.read_text("utf-8").split("## Quick start", 1)[1]
    blocks = re.findall(r"```[a-z]*\n(.*?)```", quick, flags=re.S)
    assert out == blocks[1] and "pytest" in out and len(out.strip().splitlines()) == 1


def test_results_and_validation_are_what_make_results_generates():
    """No table in RESULTS.md or docs/validation.md is edited by hand: both are exactly what
    ``benchmarks/make_results.py`` produces from ``benchmarks/results/*.json``."""
    spec = importlib.util.spec_from_file_location("make_results", ROOT / "benchmarks" / "make_results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    built = module.build()
    assert set(built) == {ROOT / "benchmarks" / "RESULTS.md", ROOT / "docs" / "validation.md"}
    for path, text in built.items():
        assert path.read_text("utf-8") == text, f"{path.name} differs: run python benchmarks/make_results.py"


def test_make_results_renders_a_harness_record_and_lists_unplaced_ones(tmp_path):
    spec = importlib.util.spec_from_file_location("make_results", ROOT / "benchmarks" / "make_results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    template = tmp_path / "T.md"
    template.write_text("# Title\n\n@@ bench_x\n")
    record = {"benchmark": "bench_x", "title": "Speed", "notes": "Fast.", "argv": ["--n", "10"],
              "date": "2026-12-01", "machine": {"cpus": 2, "load_1min": 1.5},
              "rows": [{"n": 10, "seconds": 0.25}]}
    text = module.render(template, {"bench_x": record, "bench_y": {**record, "title": "Other"}},
                         unplaced=["bench_y"])
    assert "| n | seconds |\n|---:|---:|\n| 10 | 0.25 |" in text
    assert "`python benchmarks/bench_x.py --n 10`, 2026-12-01, 2 CPUs, load 1.5" in text
    assert "**Other**" in text.split("## Other results")[1]
    template.write_text("@@ missing\n")
    with pytest.raises(SystemExit, match="missing"):
        module.render(template, {})


def test_the_readme_quotes_recovery_and_fidelity_as_recorded():
    """The README's strategy section quotes the benchmarks' records, not numbers of its own."""
    results = ROOT / "benchmarks" / "results"
    typed = {r["world"]: r for r in json.loads((results / "bench_strategies_floor.json").read_text())["rows"]}
    generic = {r["world"]: r for r in json.loads((results / "bench_strategies_floor_generic.json").read_text())["rows"]}
    earlier = json.loads((results / "bench_strategies_worlds.failures-optional-steps-names-outliers-agents-no.json")
                         .read_text())
    section = README.read_text("utf-8").split("## Strategies: how well they are recovered", 1)[1].split("\n## ", 1)[0]
    quoted = [tuple(c.strip().strip("*") for c in line.strip("|").split("|")) for line in section.splitlines()
              if line.startswith("| ") and not line.startswith("| world")]
    # the verdict holds for both readings: a world that meets the bar typed only says so
    measured = sorted((f"{r['rounds']:.3f}", f"{r['tfidf']:.3f}", f"{r['default']:.3f}", f"{r['ceiling ARI']:.3f}",
                       f"{generic[w]['default']:.3f}",
                       "meets bar typed only" if r["verdict"] == "meets bar" != generic[w]["verdict"] else r["verdict"])
                      for w, r in typed.items())
    assert len(quoted) == len(measured) == 30
    assert sorted(row[1:] for row in quoted) == measured
    below = [w for w, r in typed.items() if r["verdict"] == "below floor"]
    count = {0: "No world falls", 1: "One world falls", 2: "Two worlds fall", 3: "Three worlds fall",
             4: "Four worlds fall"}[len(below)]
    assert f"**Where it is weakest.** {count} below the better baseline" in section
    for w in below:
        assert f"{typed[w]['default']:.3f} against" in section, w
    # over six seeds, typed and through one act tool: no world under its floor on the mean, nor at
    # any single seed
    six = json.loads((results / "bench_strategies_floor.seeds-0-5.json").read_text())
    six_act = json.loads((results / "bench_strategies_floor.generic-seeds-0-5.json").read_text())
    seeds = six["params"]["seeds"]
    assert seeds == six_act["params"]["seeds"] == [0, 1, 2, 3, 4, 5] and six_act["params"]["generic"]
    weakest = " ".join(section.split("**Where it is weakest.**", 1)[1].split("\n\n", 1)[0].split())
    assert not any(r["verdict"] == "below floor" for r in six["rows"] + six_act["rows"])
    assert "No world falls below the better baseline on the mean at seeds 0-2 or 0-5, typed or through `act`" in weakest
    assert all(r["seeds below floor"].startswith("0 of ") for r in six["rows"] + six_act["rows"])
    assert "nor at any single seed of the six" in weakest
    # the typed and act readings compared as compare_floor.py pairs them, and todo's two means
    paired = json.loads((results / "compare_floor.generic-seeds-0-5.json").read_text())["rows"][-1]
    means = {r["world"]: r["default"] for r in six["rows"]}, {r["world"]: r["default"] for r in six_act["rows"]}
    side = "below" if paired["after - before"] < 0 else "above"
    assert f"the sum of ARIs is {abs(paired['after - before']):.3f} a seed {side} typed, {paired['verdict']}" in weakest
    assert f"(todo {means[1]['todo']:.3f} against {means[0]['todo']:.3f})" in weakest
    text = earlier["intro"] + earlier["notes"]
    for figure in ("0.868 (0.848-0.883)", "0.560", "0.727 and 0.709 at seeds 1 and 2"):
        assert figure in text, figure
    # the FireAct paragraph quotes the record of bench_strategies_fireact.py, figure by figure
    fireact = json.loads((results / "bench_strategies_fireact.json").read_text())
    found = re.search(r"(\d+) strategies; fidelity (\S+), (\S+) weighted by size; Cramér's V with the HotpotQA "
                      r"category (\S+) \(95 % interval (\S+)\)", fireact["notes"])
    assert found and int(found[1]) == len(fireact["rows"])
    paragraph = " ".join(section.split("**On the FireAct agents**", 1)[1].split())
    for figure in (f"{found[1]} strategies with distinct names", f"{found[2]}, {found[3]} weighted by size",
                   f"category {found[4]}, 95 % interval {found[5]}"):
        assert figure in paragraph, figure


def test_the_verdict_example_in_methods_is_the_committed_record():
    """docs/methods.md quotes the integration verdict of the committed run, word for word."""
    record = (ROOT / "figures" / "integration" / "simulated" / "summary.txt").read_text("utf-8")
    line = next(x.strip()[len("verdict: "):] for x in record.splitlines() if x.strip().startswith("verdict: rl"))
    methods = " ".join((ROOT / "docs" / "methods.md").read_text("utf-8").split())
    assert f'reads, verbatim: "{line}"' in methods
