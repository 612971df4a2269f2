"""output_digests: two runs differing only in their timings agree; any other change shows."""
from __future__ import annotations

import json

import pytest

from mechanism.report.digests import output_digests


def _folder(root, seconds, value, timings="pass@(k,T) 1.2 s, strategies 3.4 s, figures 0.5 s"):
    root.mkdir()
    (root / "numbers.json").write_text(json.dumps({"seconds": seconds, "value": value}))
    (root / "index.html").write_text(f"<p>{timings}</p><p>{value}</p>")
    (root / "space.json").write_text(json.dumps({"arrays": {"labels": "labels.npy", "known_rows": "k.npy"}}))
    (root / ".mechanism-complete").write_text(str(seconds))
    return root


def test_timings_are_all_that_is_taken_out(tmp_path):
    a = _folder(tmp_path / "a", 1.0, 0.5)
    b = _folder(tmp_path / "b", 9.0, 0.5, timings="pass@(k,T) 7.0 s, strategies 0.1 s")
    c = _folder(tmp_path / "c", 1.0, 0.6)
    assert output_digests(a) == output_digests(b)
    assert sorted(output_digests(a)) == ["index.html", "numbers.json", "space.json"]
    changed = {k for k in output_digests(a) if output_digests(a)[k] != output_digests(c)[k]}
    assert changed == {"index.html", "numbers.json"}


def test_ignored_arrays_are_left_out_of_a_spaces_listing(tmp_path):
    a = _folder(tmp_path / "a", 1.0, 0.5)
    b = _folder(tmp_path / "b", 1.0, 0.5)
    (b / "space.json").write_text(json.dumps({"arrays": {"labels": "labels.npy"}}))
    assert output_digests(a)["space.json"] != output_digests(b)["space.json"]
    assert output_digests(a, ignore_arrays=["known_rows"]) == output_digests(b, ignore_arrays=["known_rows"])


def test_more_than_the_runs_timings_is_refused(tmp_path):
    two_lines = "pass@(k,T) 1 s, strategies 2 s\npass@(k,T) 3 s, strategies 4 s"
    twice = _folder(tmp_path / "twice", 1.0, 0.5, timings=two_lines)
    with pytest.raises(ValueError, match="2 lines of phase times"):
        output_digests(twice)
    untimed = _folder(tmp_path / "untimed", 1.0, 0.5)
    (untimed / "numbers.json").write_text(json.dumps({"value": 0.5}))
    with pytest.raises(ValueError, match="numbers.json holds no `seconds`"):
        output_digests(untimed)
