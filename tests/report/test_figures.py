"""The report's figures, checked on what they draw: the numbers written on a figure follow from its bars,
worker counts are integer ticks, titles are words, nothing is cut off, and the group counts under the
figures are the headline's."""

from __future__ import annotations

import re
import shutil
import statistics
from pathlib import Path

import matplotlib
import pytest

from cockpit.figures import series
from cockpit.forecast.analysis import analyse
from cockpit.report import figures, tables
from cockpit.report.source import load_input
from cockpit.report.write import write_report
from cockpit.store import StudyStore
from tests.report.test_report import markdown_rows

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "recorded-store"


@pytest.fixture
def recorded(tmp_path: Path):
    """(analysis rows, configurations without a result, store path) of the recorded store: 4 groups
    (window x CPUs per task), 3 of them finished at 1 and 2 workers, the fourth still running."""
    shutil.copy(FIXTURE / "store.sqlite", tmp_path / "store.sqlite")
    StudyStore(tmp_path / "store.sqlite").close()  # brought to this cockpit's schema, as a copy
    inp = load_input(tmp_path / "store.sqlite")
    return analyse(inp.results), inp.pending, tmp_path / "store.sqlite"


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _drawn(name: str, rows, pending):  # noqa: ANN001, ANN202
    fig, ax = figures.draw_figure(name, rows, pending)
    fig.canvas.draw()
    return fig, ax


def test_time_bars_write_the_headlines_speedup(recorded):
    """Above each bar the headline's S for that N, as the headline table prints it (the median of the groups'
    S, which the ratio of two median bars is not), and the legend says so; the ideal is the 1-worker bar / N."""
    rows, pending, _ = recorded
    fig, ax = _drawn("time_bars", rows, pending)
    heights = [p.get_height() for p in ax.patches]
    assert len(heights) == 2
    labels = [t.get_text() for t in ax.texts if t.get_text().startswith("S = ")]
    headline = {row[0]: row[2] for row in tables.headline_body(rows, pending)[1]}
    assert labels == [f"S = {headline[n]} (ideal {n})" for n in ("1", "2")]
    assert "S: median of the groups' S (headline)" in ax.get_legend_handles_labels()[1]
    # the ideal drawn on each bar is the 1-worker bar / N
    ideals = [seg[0][1] for coll in ax.collections for seg in coll.get_segments()]
    assert ideals == [pytest.approx(heights[0] / n) for n in (1, 2)]
    # each group's own value is drawn on its bar (a dot), and the bar is their median
    assert len(ax.lines) == len(heights) + 1  # and the legend's entry for S, which draws nothing
    for bar, dots in zip(heights, ax.lines, strict=False):
        assert len(dots.get_ydata()) == 3 and bar == pytest.approx(statistics.median(dots.get_ydata()))
    assert "Median" in ax.get_title() and "median over 3 groups" in ax.get_legend_handles_labels()[1][-1]


def test_each_figure_writes_the_cells_of_a_table(recorded):
    """The numbers written on the figures are figures.printed's, which are the headline's cells; a waterfall
    writes T1/N, each term, O and T/work as the attribution table prints them."""
    rows, pending, _ = recorded
    headers, body = tables.headline_body(rows, pending)
    cells = [dict(zip(headers, row, strict=True)) for row in body]
    for name, column, template in (("efficiency", "efficiency", "{}"), ("overhead", "overhead (s)", "{} s")):
        _, ax = _drawn(name, rows, pending)
        written = [t.get_text() for t in ax.texts]
        assert written == [template.format(c[column]) for c in cells]
        assert figures.printed(name, rows, pending) == [{headers[0]: c[headers[0]], column: c[column]} for c in cells]
    assert figures.printed("time_vs_cpus", rows, pending) == []
    headers, body = tables.attribution_body(rows)
    table = [dict(zip(headers, row, strict=True)) for row in body]
    for runs in figures._groups(rows).values():
        fig, ax = figures.draw_waterfall(runs)
        fig.canvas.draw()
        for r in runs:
            values = figures.waterfall_printed(r)
            assert any(all(row.get(h) == v for h, v in values.items()) for row in table), values
            ends = {t.get_text().strip() for t in ax.texts}
            assert {f"{values['T1/N (s)']} s", f"{values['T/work (s)']} s"} <= ends


def test_worker_ticks_are_integers_and_titles_words(recorded):
    rows, pending, _ = recorded
    for name in ("efficiency", "overhead", "time_bars"):
        _, ax = _drawn(name, rows, pending)
        ticks = [t.get_text() for t in ax.get_xticklabels()]
        assert ticks and all(re.fullmatch(r"\d+", t) for t in ticks), (name, ticks)
        if name != "time_bars":  # bars sit at positions 0, 1, ...; lines at the worker counts themselves
            assert all(float(x).is_integer() for x in ax.get_xticks())
        assert ax.get_xlabel() == "workers N"  # a CPU study: its workers are processes, not GPUs
        assert "TN'" not in ax.get_title() and not re.search(r"[A-Z0-9]'", ax.get_title())
        assert ax.get_title() == series.titles("cpu")[name]


def _inside(fig, ax) -> None:  # noqa: ANN001
    """Every bar within the axis limits and every text within the figure."""
    x0, x1 = sorted(ax.get_xlim())
    y0, y1 = sorted(ax.get_ylim())
    for p in ax.patches:
        bx = sorted((p.get_x(), p.get_x() + p.get_width()))
        by = sorted((p.get_y(), p.get_y() + p.get_height()))
        assert x0 <= bx[0] and bx[1] <= x1 and y0 <= by[0] and by[1] <= y1, (p, ax.get_xlim(), ax.get_ylim())
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    for text in [*ax.texts, ax.title]:
        if text.get_text():
            extent = text.get_window_extent(renderer)
            assert box.x0 <= extent.x0 and extent.x1 <= box.x1 + 0.5 and extent.y1 <= box.y1 + 0.5, text.get_text()
    for line in ax.lines:
        for y in line.get_ydata():
            assert y0 <= y <= y1


def test_nothing_is_cut_off(recorded):
    rows, pending, _ = recorded
    for name in series.NAMES:
        fig, ax = _drawn(name, rows, pending)
        _inside(fig, ax)
    groups = figures._groups(rows)
    assert len(groups) == 3
    for runs in groups.values():
        fig, ax = figures.draw_waterfall(runs)
        fig.canvas.draw()
        _inside(fig, ax)
        # the label of the bar that ends furthest right is inside the axes, not on the frame
        right = max(p.get_x() + max(p.get_width(), 0) for p in ax.patches)
        assert right < ax.get_xlim()[1] * 0.9


def test_the_efficiency_axis_is_in_percent(recorded):
    """E is printed as a percent everywhere, the efficiency figure's axis too: its ticks `0%` .. `100%`, the
    ideal line at 100%."""
    rows, pending, _ = recorded
    fig, ax = _drawn("efficiency", rows, pending)
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    assert ticks and all(re.fullmatch(r"\d+%", t) for t in ticks), ticks
    assert "100%" in ticks and ax.get_ylabel().endswith("(%)")
    assert "ideal (100%)" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_efficiency_above_one_stays_on_the_figure(recorded):
    rows, pending, _ = recorded
    rows = [dict(r, efficiency=1.4) if r["workers"] == 2 else r for r in rows]  # superlinear
    fig, ax = _drawn("efficiency", rows, pending)
    _inside(fig, ax)


def test_headline_and_figures_say_the_same_group_counts(recorded, tmp_path):
    rows, pending, store = recorded
    md = write_report(load_input(store), tmp_path / "report").markdown.read_text()
    headline = markdown_rows(md, "Headline")
    assert [(r[0], r[1]) for r in headline] == [("1", "3 of 4"), ("2", "3 of 4")]
    counts = series.group_counts(rows, pending)
    assert {str(n): f"{a} of {b}" for n, (a, b) in counts.items()} == dict((r[0], r[1]) for r in headline)
    for figure in (series.efficiency, series.overhead):
        assert figure(rows, pending).note == ("median over 1 worker: 3 of 4 groups; 2 workers: 3 of 4 groups "
                                              "(the others have not finished)")
    assert series.time_bars(rows, pending).note.startswith("median over 3 of 4 groups")
    assert "| N (workers) |" in md and "nodes×workers" in md and "nodes×GPUs" not in md


def test_a_gpu_study_says_gpus():
    from tests.foundation.test_analysis import result

    rows = analyse([result(1, 100, device="cuda"), result(2, 60, device="cuda")])
    fig, ax = figures.draw_figure("efficiency", rows, [])
    assert ax.get_xlabel() == "GPUs N" and "GPUs" in ax.get_title()
    assert "nodes×GPUs" in tables.scaling_body(rows)[0] and tables.headline_body(rows)[0][0] == "N (GPUs)"


def test_the_waterfall_reads_on_a_phone_and_its_hatching_is_explained(recorded):
    """Bar names and values at 9 points or more; where a bar is hatched (seconds saved), a legend says what
    the hatching and the plain bars mean."""
    rows, _, _ = recorded
    hatched_groups = 0
    for runs in figures._groups(rows).values():
        fig, ax = figures.draw_waterfall(runs)
        fig.canvas.draw()
        texts = [*ax.get_yticklabels(), *(t for t in ax.texts)]
        assert texts and min(t.get_fontsize() for t in texts) >= 9
        hatched = [p for p in ax.patches if p.get_hatch()]
        legend = ax.get_legend()
        if hatched:
            hatched_groups += 1
            assert legend is not None
            assert [t.get_text() for t in legend.get_texts()] == ["seconds lost (to the right)",
                                                                 "hatched: seconds saved (to the left)"]
            assert all(p.get_width() < 0 for p in hatched)
        else:
            assert legend is None
    assert hatched_groups >= 1, "the recorded study has a group with a saving, so the legend is drawn somewhere"
