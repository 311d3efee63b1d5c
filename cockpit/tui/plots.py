"""The study's four figures as terminal plots: the series of cockpit.series, which the PNGs of
`cockpit report` draw too, so both show the same numbers (a note under a figure flags medians over
fewer groups than the study has). Each series has a fixed colour and the legend is a line under its
figure: plotext would draw it over the data."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Grid, Vertical
from textual.widgets import Static
from textual_plotext import PlotextPlot

from cockpit import series
from cockpit.snapshot import StudySnapshot
from cockpit.tui import model

MARKER = "braille"
COLORS = ("cyan", "magenta", "yellow", "green", "red", "blue")
IDEAL = "white"


def legend(entries: list[tuple[str, str]]) -> Text:
    """`━━ label` per (label, colour), in the series' colours."""
    out = Text()
    for label, color in entries:
        out.append("━━ ", style=color)
        out.append(f"{label}   ")
    return out


def _start(plot: PlotextPlot, title: str) -> object:
    plt = plot.plt
    plt.clear_data()
    plt.clear_figure()
    plt.title(title)
    return plt


def _note(plt, note: str) -> None:  # noqa: ANN001 - plotext's module-like object
    if note:
        plt.xlabel(note)


def draw_time_vs_cpus(plot: PlotextPlot, snapshot: StudySnapshot) -> Text:
    plt = _start(plot, series.TITLES["time_vs_cpus"])
    plt.xlabel("CPUs per task")
    plt.ylabel(series.T_LABEL)
    lines = series.time_vs_cpus(*model.analysis_rows(snapshot))
    for s, color in zip(lines, COLORS * 4, strict=False):
        plt.plot(s.x, s.y, marker=MARKER, color=color)
    if lines:
        xs = sorted({x for s in lines for x in s.x})
        plt.xticks(xs, [str(int(x)) for x in xs])
        _note(plt, lines[0].note)
    plot.refresh()
    return legend([(s.label, color) for s, color in zip(lines, COLORS * 4, strict=False)])


def draw_time_bars(plot: PlotextPlot, snapshot: StudySnapshot) -> Text:
    """Bars: T at the baseline's work (what S = T1/T divides); the ideal T1/N as a second bar beside it."""
    plt = _start(plot, series.TITLES["time_bars"])
    plt.ylabel(series.T_LABEL)
    bars = series.time_bars(*model.analysis_rows(snapshot))
    if bars.x:
        labels = [f"{int(n)}: S={s:.2f}x/{int(n)}x" if s == s else f"{int(n)}: no baseline"
                  for n, s in zip(bars.x, bars.speedup, strict=True)]
        ideal = [i if i == i else 0.0 for i in bars.ideal]
        plt.multiple_bar(labels, [bars.y, ideal], width=0.4, color=[COLORS[0], IDEAL])
        _note(plt, bars.note)
    plot.refresh()
    return legend([("measured", COLORS[0]), ("ideal T1/N", IDEAL)])


def draw_efficiency(plot: PlotextPlot, snapshot: StudySnapshot) -> Text:
    plt = _start(plot, series.TITLES["efficiency"])
    plt.xlabel("workers")
    s = series.efficiency(*model.analysis_rows(snapshot))
    if s.x:
        plt.plot(s.x, s.y, marker=MARKER, color=COLORS[0])
        plt.plot(s.x, [1.0] * len(s.x), marker=MARKER, color=IDEAL)
        plt.xticks(s.x, [str(int(x)) for x in s.x])
        plt.ylim(0, 1.1)
        _note(plt, s.note)
    plot.refresh()
    return legend([("measured", COLORS[0]), ("ideal 1", IDEAL)])


def draw_overhead(plot: PlotextPlot, snapshot: StudySnapshot) -> Text:
    plt = _start(plot, series.TITLES["overhead"])
    plt.xlabel("workers")
    plt.ylabel("s")
    s = series.overhead(*model.analysis_rows(snapshot))
    if s.x:
        plt.plot(s.x, s.y, marker=MARKER, color=COLORS[0])
        plt.plot(s.x, [0.0] * len(s.x), marker=MARKER, color=IDEAL)
        plt.xticks(s.x, [str(int(x)) for x in s.x])
        _note(plt, s.note)
    plot.refresh()
    return legend([("overhead", COLORS[0]), ("ideal 0", IDEAL)])


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
            with Vertical(classes="figure"):
                yield PlotextPlot(id=fig_id)
                yield Static(id=f"{fig_id}-legend", classes="caption")

    def apply(self, snapshot: StudySnapshot) -> None:
        key = tuple(
            (c.config_id, c.state, c.train_time_s, c.speedup) for c in snapshot.configs
        )
        if key == self._drawn_key:
            return
        self._drawn_key = key
        for fig_id, draw in FIGURES:
            key = draw(self.query_one(f"#{fig_id}", PlotextPlot), snapshot)
            self.query_one(f"#{fig_id}-legend", Static).update(key)
