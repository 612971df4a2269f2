"""Figures that survive real arm names: long names sharing a prefix stay unique,
no two texts of any report figure overlap (checked from the renderer's text boxes), strategy
colours are never arm colours, and a series' x axis takes the user's label."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest
from test_report_document import ARMS, reflexion_runs

import mechanism as mx
import mechanism.plots.style as style
from mechanism.plots.background import saving_in_background
from mechanism.report import write_report


def _boxes_overlap(fig) -> list[tuple[str, str]]:
    """Overlapping texts, measured here independently of the library's own check."""
    from matplotlib.text import Text

    drawn: list = []  # only the texts the renderer really draws: a tick outside its axis's view is not
    original = Text.draw

    def recording(self, renderer):
        drawn.append(self)
        return original(self, renderer)

    Text.draw = recording
    try:
        fig.canvas.draw()
    finally:
        Text.draw = original
    renderer = fig.canvas.get_renderer()
    texts = [(t.get_text(), t.get_window_extent(renderer)) for t in dict.fromkeys(drawn)
             if t.get_visible() and t.get_text().strip()]
    bad = []
    for i, (ta, a) in enumerate(texts):
        for tb, b in texts[i + 1:]:
            if min(a.x1, b.x1) - max(a.x0, b.x0) > 1 and min(a.y1, b.y1) - max(a.y0, b.y0) > 1:
                bad.append((ta, tb))
    return bad


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """Every figure of a report on three long, shared-prefix arm names, kept open."""
    figures = {}
    save, close = style.save_figure, style.close
    mp = pytest.MonkeyPatch()
    mp.setattr(style, "save_figure",
               lambda fig, out, stem, **kw: figures.setdefault(f"{out}/{stem}", fig) and save(fig, out, stem, **kw))
    mp.setattr(style, "close", lambda fig: None)
    try:
        # saved here, not by workers: the figures checked are the ones declutter laid out
        with saving_in_background(0):
            report = write_report(reflexion_runs(), tmp_path_factory.mktemp("figures"), base=ARMS[0],
                                  embedder="hashing-128", n_boot=30, n_permutations=10, progress=False)
    finally:
        mp.undo()
    yield report, figures
    for fig in figures.values():
        close(fig)


def test_no_text_overlaps_in_any_figure(drawn):
    _, figures = drawn
    assert len(figures) >= 13  # two comparisons: their gap and boundary figures too
    for stem, fig in figures.items():
        assert _boxes_overlap(fig) == [], stem


def test_arm_labels_stay_unique_and_name_the_arms(drawn):
    _, figures = drawn
    labels = style.short_names(ARMS)
    assert len(set(labels.values())) == 3 and all(len(v) <= 28 for v in labels.values())
    (surfaces,) = [fig for key, fig in figures.items() if key.endswith("/pass_surfaces")]
    titles = [ax.get_title() for ax in surfaces.axes if ax.get_title()]
    assert sorted(t.replace("\n", "") for t in titles) == sorted(labels.values())
    # names that differ only at the end keep their ends
    many = style.short_names([f"a_very_long_shared_prefix_{i}" for i in range(12)], max_length=12)
    assert len(set(many.values())) == 12


def test_strategy_colours_are_never_arm_colours(drawn):
    from matplotlib.colors import to_hex

    _, figures = drawn
    arm = set(style.arm_colors(list(ARMS)).values()) | set(style.PALETTE)
    assert not arm & set(style.STRATEGY_PALETTE)
    (fig,) = [f for key, f in figures.items() if key.endswith("/strategy_map")]
    used = {to_hex(c) for ax in fig.axes for coll in ax.collections for c in coll.get_facecolors() if c[3] > 0.5}
    assert used and not (used & {c.lower() for c in arm if c != "#000000"})


def test_the_strategy_table_is_not_a_picture(drawn):
    report, figures = drawn
    assert not any(key.endswith("strategy_table") for key in figures)
    assert not list(report.out.glob("strategies/strategy_table.*"))


def test_track_x_axis_takes_the_users_label(tmp_path):
    from mechanism._cli.main import main

    series = mx.training_run(steps=(0, 100, 200), n_questions=6, n_samples=4, progress=False)
    result = mx.track(series.runs, n_boot=10, progress=False, embedder="hashing-64")
    from mechanism.plots.track import plot_track_divergence, plot_track_split

    for fig in (plot_track_split(result.split, base=result.base, step_label="trial"),
                plot_track_divergence(result.divergence, base=result.base, step_label="trial")):
        assert {ax.get_xlabel() for ax in fig.axes if ax.get_xlabel()} == {"trial"}
        style.close(fig)
    series.runs.write_parquet(tmp_path / "series.parquet")
    rc = main(["track", str(tmp_path / "series.parquet"), "--out", str(tmp_path / "out"), "--step-label", "trial",
               "--embedder", "hashing-64", "--n-boot", "10", "--no-progress"])
    assert rc == 0 and (tmp_path / "out" / "split_over_training.png").is_file()


def test_the_overlap_check_sees_overlapping_drawn_text_and_not_hidden_ticks():
    """The check itself: two texts drawn on top of each other are found; a tick label outside
    its axis's view (never drawn) is not."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.text(0.5, 0.5, "first label")
    ax.text(0.5, 0.5, "second label")
    assert ("first label", "second label") in _boxes_overlap(fig)
    fig2, ax2 = plt.subplots()
    ax2.set_xticks([-5.0, 0.5])  # the tick at -5 lies outside the view and is not drawn
    ax2.set_xlim(0, 1)
    ax2.text(-5.0, -0.09, "-5.0", transform=ax2.get_xaxis_transform(), visible=False)
    assert all("-5.0" not in pair for pair in _boxes_overlap(fig2))
    plt.close(fig)
    plt.close(fig2)
