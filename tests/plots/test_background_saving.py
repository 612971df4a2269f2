"""Figures saved by worker processes: the same bytes as saving in the caller, every file on disk
when the block ends, failures and warnings brought back, and the caller's saving kept where a
figure cannot travel or no worker can start."""
from __future__ import annotations

import hashlib
import warnings

import matplotlib
import matplotlib.pyplot as plt
import pytest

from mechanism.core.errors import MechanismError
from mechanism.plots import background
from mechanism.plots.background import saving_in_background
from mechanism.plots.style import paper_style, save_figure


def _figures():
    out = []
    for i in range(4):
        with paper_style():
            fig, ax = plt.subplots(figsize=(4, 3))
            ax.plot(range(10), [x * (i + 1) for x in range(10)], label=f"a long arm name number {i}")
            ax.set_title("overlapping " * 6)  # declutter has work to do
            ax.legend()
            ax.annotate("note", (3, 3))
        out.append(fig)
    return out


def _digests(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_workers_write_the_same_bytes_and_all_are_there_at_the_end(tmp_path):
    for i, fig in enumerate(_figures()):
        save_figure(fig, tmp_path / "here", f"f{i}")
        plt.close(fig)
    with saving_in_background(2):
        for i, fig in enumerate(_figures()):
            paths = save_figure(fig, tmp_path / "there", f"f{i}")
            plt.close(fig)
            assert [p.name for p in paths] == [f"f{i}.png", f"f{i}.pdf"]
    assert len(_digests(tmp_path / "here")) == 8
    assert _digests(tmp_path / "there") == _digests(tmp_path / "here")


def test_a_nested_block_waits_for_what_it_handed_over(tmp_path):
    with saving_in_background(1):
        with saving_in_background():
            fig = _figures()[0]
            save_figure(fig, tmp_path, "inner", formats=("png",))
            plt.close(fig)
        assert (tmp_path / "inner.png").is_file()
        with saving_in_background(0):  # 0: saved in the caller, at once, even inside a block
            with saving_in_background():  # and in a block inside that names no number
                fig = _figures()[0]
                save_figure(fig, tmp_path, "here", formats=("png",))
                assert (tmp_path / "here.png").is_file()
                plt.close(fig)


def test_a_figure_that_cannot_travel_is_saved_in_the_caller(tmp_path):
    fig = _figures()[0]
    fig.axes[0].xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:.0f}!"))
    with saving_in_background(1):
        save_figure(fig, tmp_path, "lambda", formats=("png",))
        assert (tmp_path / "lambda.png").is_file()  # saved at once: a lambda does not pickle
    plt.close(fig)


def test_no_worker_means_the_caller_saves_everything(tmp_path, monkeypatch):
    monkeypatch.setattr(background, "_start_worker", lambda: None)
    with saving_in_background(2):
        for i, fig in enumerate(_figures()):
            save_figure(fig, tmp_path, f"f{i}", formats=("png",))
            plt.close(fig)
    assert len(list(tmp_path.glob("*.png"))) == 4


def test_a_worker_that_dies_leaves_its_figures_to_the_caller(tmp_path, monkeypatch):
    import subprocess
    import sys

    # a "worker" that exits at once, as one killed mid-run would: every answer is missing
    monkeypatch.setattr(background, "_start_worker", lambda: subprocess.Popen(
        [sys.executable, "-c", "pass"], stdin=subprocess.PIPE, stdout=subprocess.PIPE))
    with saving_in_background(2):
        for i, fig in enumerate(_figures()):
            save_figure(fig, tmp_path, f"f{i}", formats=("png",))
            plt.close(fig)
    assert sorted(p.name for p in tmp_path.glob("*.png")) == [f"f{i}.png" for i in range(4)]


def test_a_failure_in_a_worker_is_raised_when_the_block_ends(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    fig = _figures()[0]
    # an OSError comes back as one, for the caller's handler (a command names its output folder)
    with pytest.raises(OSError, match="sub"):
        with saving_in_background(1):
            # the folder is made by the caller; the worker then finds a file where it writes
            save_figure(fig, tmp_path / "sub", "x", formats=("png",))
            (tmp_path / "sub").rename(tmp_path / "gone")
            (tmp_path / "sub").write_text("now a file")
    plt.close(fig)


def test_another_failure_in_a_worker_is_one_line(tmp_path, monkeypatch):
    fig = _figures()[0]
    fig.axes[0].set_title(r"$\frac{$")  # mathtext is parsed when the figure is drawn
    with pytest.raises(MechanismError, match=r"a figure could not be saved: .*bad: "):
        with saving_in_background(1):
            save_figure(fig, tmp_path, "bad", formats=("png",))
    plt.close(fig)


def test_an_exception_in_the_block_is_not_replaced(tmp_path):
    fig = _figures()[0]
    with pytest.raises(KeyError), saving_in_background(1):
        save_figure(fig, tmp_path, "ok", formats=("png",))
        raise KeyError("the caller's own")
    plt.close(fig)
    assert (tmp_path / "ok.png").is_file()  # what was handed over is still written


def test_a_workers_warning_is_raised_in_the_caller(tmp_path):
    with paper_style():
        fig, ax = plt.subplots()
        ax.set_title("\u6f22")  # a glyph DejaVu Sans lacks: matplotlib warns as it draws
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with saving_in_background(1):
            save_figure(fig, tmp_path, "warns", formats=("png",))
    plt.close(fig)
    assert (tmp_path / "warns.png").is_file()
    assert any("missing from font" in str(w.message) for w in caught), [str(w.message) for w in caught]


def test_the_environment_sets_the_default_number_of_workers(tmp_path, monkeypatch):
    monkeypatch.setenv("MECHANISM_FIGURE_WORKERS", "0")
    assert background.default_workers() == 0
    with saving_in_background():  # 0: saved here, at once
        fig = _figures()[0]
        save_figure(fig, tmp_path, "env", formats=("png",))
        assert (tmp_path / "env.png").is_file()
        plt.close(fig)
    monkeypatch.setenv("MECHANISM_FIGURE_WORKERS", "two")
    with pytest.raises(MechanismError, match="MECHANISM_FIGURE_WORKERS must be a whole number"):
        background.default_workers()
