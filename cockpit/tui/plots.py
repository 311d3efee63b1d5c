"""The study's four figures as terminal plots, from live data (the same figures `cockpit report` draws).

1. training time vs CPUs per task, one line per GPU count; 2. training-time bars per GPU count with the
measured speedup against the ideal; 3. parallel efficiency vs GPUs; 4. overhead vs GPUs.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Grid
from textual_plotext import PlotextPlot

from cockpit.snapshot import StudySnapshot
from cockpit.tui import model

MARKER = "braille"


def draw_time_vs_cpus(plot: PlotextPlot, snapshot: StudySnapshot) -> None:
    plt = plot.plt
    plt.clear_data()
    plt.clear_figure()
    plt.title("Training time vs CPUs per task")
    plt.xlabel("CPUs per task")
    plt.ylabel("T (s)")
    series = model.time_vs_cpus(snapshot)
    for s in series:
        plt.plot(s.x, s.y, label=s.label, marker=MARKER)
    if series:
        xs = sorted({x for s in series for x in s.x})
        plt.xticks(xs, [str(int(x)) for x in xs])
    plot.refresh()


def draw_time_bars(plot: PlotextPlot, snapshot: StudySnapshot) -> None:
    plt = plot.plt
    plt.clear_data()
    plt.clear_figure()
    ns, times, speedups = model.time_by_gpus(snapshot)
    plt.title("Training time per GPU count (speedup measured / ideal)")
    plt.ylabel("T (s)")
    if ns:
        labels = [
            f"{n} GPU {s:.2f}x/{n}x" if s == s else f"{n} GPU" for n, s in zip(ns, speedups, strict=True)
        ]
        plt.bar(labels, times, width=0.4)
    plot.refresh()


def draw_efficiency(plot: PlotextPlot, snapshot: StudySnapshot) -> None:
    plt = plot.plt
    plt.clear_data()
    plt.clear_figure()
    plt.title("Parallel efficiency vs GPUs")
    plt.xlabel("GPUs")
    s = model.efficiency_vs_gpus(snapshot)
    if s.x:
        plt.plot(s.x, s.y, label="measured", marker=MARKER)
        plt.plot(s.x, [1.0] * len(s.x), label="ideal", marker=MARKER)
        plt.xticks(s.x, [str(int(x)) for x in s.x])
        plt.ylim(0, 1.1)
    plot.refresh()


def draw_overhead(plot: PlotextPlot, snapshot: StudySnapshot) -> None:
    plt = plot.plt
    plt.clear_data()
    plt.clear_figure()
    plt.title("Overhead TN - T1/N vs GPUs")
    plt.xlabel("GPUs")
    plt.ylabel("s")
    s = model.overhead_vs_gpus(snapshot)
    if s.x:
        plt.plot(s.x, s.y, label="overhead", marker=MARKER)
        plt.xticks(s.x, [str(int(x)) for x in s.x])
    plot.refresh()


FIGURES = (
    ("fig-time-cpus", draw_time_vs_cpus),
    ("fig-time-bars", draw_time_bars),
    ("fig-efficiency", draw_efficiency),
    ("fig-overhead", draw_overhead),
)


class PlotsView(Grid):
    """A 2x2 grid of the four figures; redrawn only when the finished results change."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._drawn_key: tuple | None = None

    def compose(self) -> ComposeResult:
        for fig_id, _ in FIGURES:
            yield PlotextPlot(id=fig_id)

    def apply(self, snapshot: StudySnapshot) -> None:
        key = tuple(
            (c.config_id, c.train_time_s, c.speedup) for c in snapshot.configs if c.train_time_s is not None
        )
        if key == self._drawn_key:
            return
        self._drawn_key = key
        for fig_id, draw in FIGURES:
            draw(self.query_one(f"#{fig_id}", PlotextPlot), snapshot)
