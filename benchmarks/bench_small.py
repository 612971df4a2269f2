"""Benchmark: the small-input path a researcher waits on, this code beside a reference commit in
the same run (ratios, since the machine is noisy).

300 trajectories (the built-in simulator: 50 questions x 2 samples x three arms, Search-R1
files). Each command runs as a fresh process, as a user runs it:

- ``report`` cold (an empty ``--cache-dir``: MiniLM is loaded and every text embedded) and warm
  (the same cache again);
- ``passkt``; ``strategies fit``; ``reweighting --space`` and ``integration --space`` cold (no
  cache: the saved space's texts are embedded again) and warm (``--cache-dir`` filled by a first call).

Numba's own cache is filled by one untimed report per implementation first (the first process
after an install compiles UMAP; ``--first-run`` times that too, with an empty numba cache).
Every output file of the warm reports is compared between the two implementations (timings
left out), so a faster path that changed a number or a figure shows here.

Run: ``python benchmarks/bench_small.py [--reference REV] [--repeat 2]``; prints a Markdown table.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from harness import report

from mechanism.report.digests import output_digests

ROOT = Path(__file__).resolve().parents[1]
# arrays a saved space holds since issue 36 (the digests of the pairs its fit joined): new
# files, named in the notes, and left out of space.json's comparison
_NEW_ARRAYS = ("known_pairs", "known_rows")


def run(impl: Path, args: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak resident GB of one fresh ``mechanism`` process (and the
    figure workers it starts)."""
    with tempfile.TemporaryFile() as err:  # a file, not a pipe: a long progress log cannot fill it
        start = os.times()
        proc = subprocess.Popen([sys.executable, "-m", "mechanism", *args], cwd=impl, env=env,
                                stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        end = os.times()
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            err.seek(0)
            raise SystemExit(f"mechanism {' '.join(args)} failed in {impl}:\n{err.read().decode()[-2000:]}")
    wall = end.elapsed - start.elapsed
    cpu = (end.children_user - start.children_user) + (end.children_system - start.children_system)
    return wall, cpu, usage.ru_maxrss / 2**20


def digests(folder: Path) -> dict[str, str]:
    """Every output file's digest, the run's own timings taken out, a space's new arrays left unlisted."""
    return output_digests(folder, ignore_arrays=_NEW_ARRAYS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", default="69004f7", help="commit to compare with (default: before issue 36)")
    parser.add_argument("--repeat", type=int, default=2, help="runs per command (the median is shown)")
    parser.add_argument("--first-run", action="store_true", help="also time a report with an empty numba cache")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ref = tmp / "reference"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(ref), args.reference],
                       check=True, capture_output=True)
        try:
            rows, same = _measure(tmp, {"reference": ref, "this code": ROOT}, args)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(ref)], check=False,
                           capture_output=True)
    report(__file__, rows, title="The small-input path: 300 trajectories, three arms, fresh processes",
           params=vars(args), notes=f"warm report outputs identical between the two: {same}")


def _measure(tmp: Path, impls: dict[str, Path], args: argparse.Namespace) -> tuple[list[dict], str]:
    base_env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MPLBACKEND": "Agg"}
    data = tmp / "runs"
    subprocess.run([sys.executable, "-m", "mechanism", "simulate", "--out", str(data), "--questions", "50",
                    "--samples", "2", "--no-progress"], check=True, stdout=subprocess.DEVNULL, env=base_env)
    runs = str(data / "searchr1")
    times: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    outputs: dict[str, dict[str, str]] = {}
    for name, impl in impls.items():
        env = {**base_env, "PYTHONPATH": str(impl), "NUMBA_CACHE_DIR": str(tmp / f"numba-{name}")}
        work = tmp / name.replace(" ", "_")
        if args.first_run:
            times[("report, first run after install (numba compiles UMAP)", name)] = [
                run(impl, ["report", runs, "--base", "base", "--out", str(work / "first"), "--cache-dir",
                           str(work / "first-cache"), "--no-progress"], env)]
        else:  # numba's cache filled, untimed
            run(impl, ["report", runs, "--base", "base", "--out", str(work / "prime"), "--no-progress"], env)
        run(impl, ["strategies", "fit", runs, "--out", str(work / "space"), "--no-progress"], env)
        for i in range(args.repeat):
            cache = work / f"cache{i}"
            steps = [
                ("report, cold (empty cache)", ["report", runs, "--base", "base", "--cache-dir", str(cache)]),
                ("report, warm (same cache)", ["report", runs, "--base", "base", "--cache-dir", str(cache)]),
                ("passkt", ["passkt", runs]),
                ("strategies fit", ["strategies", "fit", runs]),
                ("reweighting --space, no cache", ["reweighting", runs, "--base", "base", "--space",
                                                   str(work / "space")]),
                ("integration --space, no cache", ["integration", runs, "--base", "base", "--space",
                                                   str(work / "space")]),
                ("reweighting --space, warm cache", ["reweighting", runs, "--base", "base", "--space",
                                                     str(work / "space"), "--cache-dir", str(cache)]),
                ("integration --space, warm cache", ["integration", runs, "--base", "base", "--space",
                                                     str(work / "space"), "--cache-dir", str(cache)]),
            ]
            for j, (label, argv) in enumerate(steps):
                out = work / f"out{i}-{j}"
                times.setdefault((label, name), []).append(run(impl, [*argv, "--out", str(out)], env))
                if label.startswith("report, warm"):
                    outputs[name] = digests(out)
    rows = []
    labels = list(dict.fromkeys(label for label, _ in times))
    for label in labels:
        ref_t, new_t = (statistics.median(t[0] for t in times[(label, n)]) for n in impls)
        rows.append({"command": label,
                     "reference wall (s)": round(ref_t, 2), "this code wall (s)": round(new_t, 2),
                     "ratio": round(new_t / ref_t, 3),
                     "this code CPU (s)": round(statistics.median(t[1] for t in times[(label, "this code")]), 2),
                     "this code peak (GB)": round(max(t[2] for t in times[(label, "this code")]), 2)})
    ref_out, new_out = (outputs[n] for n in impls)
    both = ref_out.keys() & new_out.keys()
    differ = sorted(k for k in both if ref_out[k] != new_out[k])
    same = f"yes, all {len(both)} files both write" if not differ else f"NO: {len(differ)} of {len(both)} differ " \
        f"({', '.join(differ[:5])})"
    # files one writes and the other does not (a new artefact, say) are named, not compared
    for who, extra in (("only the reference writes", ref_out.keys() - both),
                       ("only this code writes", new_out.keys() - both)):
        if extra:
            same += f"; {who}: {', '.join(sorted(extra))}"
    return rows, same


if __name__ == "__main__":
    main()
