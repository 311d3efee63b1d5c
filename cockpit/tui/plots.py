"""The study's four figures as terminal plots: the series of cockpit.figures.series, which the PNGs of
`cockpit report` draw too, so both show the same numbers (a note under a figure flags medians over
fewer groups than have a configuration there). Each series has a fixed colour and the legend is a line
under its figure: plotext would draw it over the data. Efficiency and overhead give their values in the
legend, and their y limits keep the measured line and the ideal on different character rows even
at 80x24."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Grid, Vertical
from textual.widgets import Static
from textual_plotext import Plot, PlotextPlot

from cockpit.figures import labels, series, units
from cockpit.store.snapshot import StudySnapshot
from cockpit.tui import model
from cockpit.tui.channel import SnapshotView

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


def _start(plot: PlotextPlot, title: str) -> Plot:
    plt = plot.plt
    plt.clear_data()
    plt.clear_figure()
    plt.title(title)
    return plt


def _note(plt: Plot, note: str) -> None:
    if note:
        plt.xlabel(note)


def separated_limits(values: list[float], ideal: float) -> tuple[float, float]:
    """y limits around the measured values and the ideal that keep them on different character rows even
    when the plot is 4 rows high (80x24): the span between them is 2/3 of the axis, so any two values
    that differ by more than a row's worth (a sixth of the span at 4 rows) land on different rows."""
    lo, hi = min([*values, ideal]), max([*values, ideal])
    span = hi - lo
    pad = span * 0.25 if span > 0 else max(abs(ideal) * 0.1, 0.1)
    return lo - pad, hi + pad


def _values(ys: list[float]) -> str:
    """The measured numbers for the legend, so a reader need not estimate them from the character rows."""
    return ", ".join(f"{y:.2f}" for y in ys)


def _device(rows: list[dict]) -> str:
    return labels.device_of_rows(rows)


def draw_time_vs_cpus(plot: PlotextPlot, snapshot: StudySnapshot) -> Text:
    rows, pending = model.analysis_rows(snapshot)
    plt = _start(plot, series.short_titles(_device(rows))["time_vs_cpus"])
    plt.xlabel("CPUs per task")
    plt.ylabel(series.T_LABEL)
    lines = series.time_vs_cpus(rows, pending)
    for s, color in zip(lines, COLORS * 4, strict=False):
        plt.plot(s.x, s.y, marker=MARKER, color=color)
    if lines:
        xs = sorted({x for s in lines for x in s.x})
        plt.xticks(xs, [str(int(x)) for x in xs])
        _note(plt, lines[0].note)
    plot.refresh()
    return legend([(s.label, color) for s, color in zip(lines, COLORS * 4, strict=False)])


def draw_time_bars(plot: PlotextPlot, snapshot: StudySnapshot) -> Text:
    """Bars: the median over groups of T at the baseline's work (what S = T1/T divides); the ideal (the
    1-worker bar / N) as a second bar beside it; S = the 1-worker bar / this bar under each pair."""
    rows, pending = model.analysis_rows(snapshot)
    plt = _start(plot, series.short_titles(_device(rows))["time_bars"])
    plt.ylabel(series.T_LABEL)
    bars = series.time_bars(rows, pending)
    if bars.x:
        labels_ = [f"{int(n)}: S={s:.2f}x/{int(n)}x" if s == s else f"{int(n)}: no 1x1"
                   for n, s in zip(bars.x, bars.speedup, strict=True)]
        ideal = [i if i == i else 0.0 for i in bars.ideal]
        # textual-plotext annotates one colour; plotext's multiple_bar takes one per series (color[i])
        plt.multiple_bar(labels_, [bars.y, ideal], width=0.4, color=[COLORS[0], IDEAL])  # type: ignore[arg-type]
        _note(plt, bars.note)
    plot.refresh()
    return legend([(bars.label.replace("median over", "median of") if bars.x else "median", COLORS[0]),
                   ("ideal T1/N", IDEAL)])


def draw_efficiency(plot: PlotextPlot, snapshot: StudySnapshot) -> Text:
    rows, pending = model.analysis_rows(snapshot)
    device = _device(rows)
    plt = _start(plot, series.short_titles(device)["efficiency"])
    plt.xlabel(labels.worker_word(device))
    plt.ylabel("%")  # the axis in percent of the ideal, as every view prints E
    s = series.efficiency(rows, pending)
    if s.x:
        pct = [y * 100 for y in s.y]
        plt.plot(s.x, [100.0] * len(s.x), marker=MARKER, color=IDEAL)
        plt.plot(s.x, pct, marker=MARKER, color=COLORS[0])
        plt.xticks(s.x, [str(int(x)) for x in s.x])
        plt.ylim(*separated_limits(pct, 100.0))
        _note(plt, s.note)
    plot.refresh()
    return legend([(f"measured {', '.join(units.percent(y) for y in s.y)}".strip(), COLORS[0]), ("ideal 100%", IDEAL)])


def draw_overhead(plot: PlotextPlot, snapshot: StudySnapshot) -> Text:
    rows, pending = model.analysis_rows(snapshot)
    device = _device(rows)
    plt = _start(plot, series.short_titles(device)["overhead"])
    plt.xlabel(labels.worker_word(device))
    plt.ylabel("s")
    s = series.overhead(rows, pending)
    if s.x:
        plt.plot(s.x, [0.0] * len(s.x), marker=MARKER, color=IDEAL)
        plt.plot(s.x, s.y, marker=MARKER, color=COLORS[0])
        plt.xticks(s.x, [str(int(x)) for x in s.x])
        plt.ylim(*separated_limits(s.y, 0.0))
        _note(plt, s.note)
    plot.refresh()
    return legend([(f"overhead {_values(s.y)} s" if s.y else "overhead", COLORS[0]), ("ideal 0", IDEAL)])


FIGURES = (
    ("fig-time-cpus", draw_time_vs_cpus),
    ("fig-time-bars", draw_time_bars),
    ("fig-efficiency", draw_efficiency),
    ("fig-overhead", draw_overhead),
)


class PlotsView(Grid, SnapshotView):
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
            caption = draw(self.query_one(f"#{fig_id}", PlotextPlot), snapshot)
            self.query_one(f"#{fig_id}-legend", Static).update(caption)
