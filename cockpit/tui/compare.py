"""Two runs side by side (typically a group's baseline and one of its N-worker runs): every figure of their
cockpit.forecast.analysis rows in two columns, each run's per-rank breakdown, and their loss and throughput curves
on shared axes, so what changed between them is read off one screen."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual_plotext import PlotextPlot

from cockpit.figures import explain
from cockpit.store.snapshot import ConfigRow, StudySnapshot
from cockpit.tui import explain_panel, model
from cockpit.tui import format as fmt
from cockpit.tui.bindings import COMPARE_BINDINGS, HelpContext
from cockpit.tui.channel import SnapshotView
from cockpit.tui.columns import state_word
from cockpit.tui.detail import rank0

COLORS = ("cyan", "magenta")  # left run, right run: the plots and the legend use the same two


def _num(a: dict[str, Any], key: str) -> float | None:
    value = a.get(key)
    return value if isinstance(value, int | float) and not isinstance(value, bool) and value == value else None


def _s(a: dict[str, Any], key: str, digits: int = 2) -> str:
    v = _num(a, key)
    return "-" if v is None else f"{v:.{digits}f}"


def _signed(a: dict[str, Any], key: str, digits: int = 2) -> str:
    v = _num(a, key)
    return "-" if v is None else f"{v:+.{digits}f}"


def figure_rows(a: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, value) of every figure of one analysis row, in the order both columns show them."""
    rows: list[tuple[str, str]] = [
        ("workers N", str(a.get("workers", "-"))),
        ("T s", _s(a, "train_time_s")),
        ("work ×", fmt.ratio(_num(a, "work_ratio"), "")),
        ("T/work s", _s(a, "t_same_work_s")),
        ("T1 s (baseline)", _s(a, "t1_s")),
        ("speedup ×", fmt.ratio(_num(a, "speedup"), "")),
        ("efficiency", fmt.percent(_num(a, "efficiency"))),
        ("overhead s", _s(a, "overhead_s")),
        ("Karp-Flatt e", _s(a, "karp_flatt", 3)),
        ("tokens/s (run average)", fmt.rate(_num(a, "tokens_per_s"))),
        ("samples/s (run average)", fmt.rate(_num(a, "samples_per_s"))),
    ]
    if a.get("quality_metric"):  # a scored run: what it learned, beside what it cost
        rows += [(a["quality_metric"], _s(a, "quality", 3)), ("  change vs 1×1", _signed(a, "quality_change", 3))]
    rows.append(("— breakdown of T (s, share) —", ""))
    for part in explain.PARTS:
        share = _num(a, f"{part}_share")
        rows.append((f"{explain.SHORT_LABELS[part]} s", _s(a, f"{part}_s")
                     + (f" ({fmt.percent(share)})" if share is not None else "")))
    rows.append(("— overhead by term (s over T1/N) —", ""))
    terms = [(t, v) for t in explain.TERMS if (v := _num(a, f"loss_{t}_s")) is not None]
    o = _num(a, "overhead_s")
    if terms and o is not None:  # printed, they add up to the overhead printed above
        for term, v in explain.shown_split(o, terms)[1]:
            rows.append((f"Δ {explain.TERM_LABELS[term]} s", f"{v:+.2f}"))
    rows.append(("— outside T —", ""))
    for cost in explain.FIXED_COSTS:
        rows.append((f"{cost.removesuffix('_s')} s", _s(a, cost)))
    if a.get("straggler_rank") is not None:
        rows.append(("straggler", f"rank {a['straggler_rank']} ({a.get('straggler_host')}), "
                                  f"+{_s(a, 'straggler_excess_s')} s"))
    return rows


def figures_table(left: ConfigRow, right: ConfigRow) -> Table:
    """Both runs' figures in two columns (only what their analysis rows hold)."""
    a, b = left.analysis or {}, right.analysis or {}
    table = Table(box=None, padding=(0, 2), show_edge=False, expand=False)
    table.add_column("", style="bold", no_wrap=True)
    folded = frozenset(a for a in model.FOLDABLE if left.values.get(a) == right.values.get(a))
    table.add_column(Text(model.short_label(left.values, folded), style=f"bold {COLORS[0]}"), justify="right")
    table.add_column(Text(model.short_label(right.values, folded), style=f"bold {COLORS[1]}"), justify="right")
    table.add_row("state", state_word(left.state), state_word(right.state))
    if not a and not b:
        table.add_row("", "no result yet", "no result yet")
        return table
    ra, rb = figure_rows(a) if a else [], figure_rows(b) if b else []
    labels = list(dict.fromkeys(label for label, _ in [*ra, *rb]))
    va, vb = dict(ra), dict(rb)
    for label in labels:
        if label.startswith("—"):
            table.add_row(Text(label, style="dim"), "", "")
        else:
            table.add_row(label, va.get(label, "-"), vb.get(label, "-"))
    return table


def verdicts(left: ConfigRow, right: ConfigRow) -> Text:
    out = Text()
    for row, color in zip((left, right), COLORS, strict=True):
        out.append(f"{model.config_label(row.values)}: ", style=f"bold {color}")
        out.append((row.explanation or row.verdict or state_word(row.state)) + "\n")
    return out


class CompareScreen(Screen, SnapshotView, HelpContext):
    """`c` on the scaling view: the marked run (or the group's baseline) against the selected one. It opens
    on the snapshot current then and the app hands it every new one (apply)."""

    HELP_CONTEXT = "compare"

    BINDINGS = [*COMPARE_BINDINGS]  # a copy, typed as the list of BindingType textual declares

    def __init__(self, left: str, right: str, snapshot: StudySnapshot | None = None) -> None:
        super().__init__()
        self.left, self.right = left, right
        self._snapshot = snapshot
        self._drawn: tuple | None = None

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="compare-body"):
            yield Static(id="compare-title", classes="title")
            yield Static(id="compare-figures")
            yield Static(id="compare-verdicts")
            with Horizontal(id="compare-plots"):
                yield PlotextPlot(id="compare-loss")
                yield PlotextPlot(id="compare-rate")
            yield Static(id="compare-legend", classes="caption")
            with Horizontal(id="compare-ranks"):
                yield Static(id="ranks-left")
                yield Static(id="ranks-right")
        yield Footer()

    def on_mount(self) -> None:
        if self._snapshot is not None:
            self.apply(self._snapshot)

    def action_swap(self) -> None:
        self.left, self.right = self.right, self.left
        self._drawn = None
        if self._snapshot is not None:
            self.apply(self._snapshot)

    def apply(self, snapshot: StudySnapshot) -> None:
        self._snapshot = snapshot
        left, right = snapshot.config(self.left), snapshot.config(self.right)
        if left is None or right is None:
            self.query_one("#compare-title", Static).update("one of these configurations is not in the study")
            return
        key = (left, right, len(snapshot.metrics.get(self.left, [])), len(snapshot.metrics.get(self.right, [])))
        if key == self._drawn:
            return
        self._drawn = key
        self.query_one("#compare-title", Static).update(Text.assemble(
            "Compare  ", (model.config_label(left.values), f"bold {COLORS[0]}"), "  vs  ",
            (model.config_label(right.values), f"bold {COLORS[1]}"), "   (x swaps, escape goes back)"))
        self.query_one("#compare-figures", Static).update(figures_table(left, right))
        self.query_one("#compare-verdicts", Static).update(verdicts(left, right))
        for side, row in (("left", left), ("right", right)):
            a = row.analysis or {}
            head = Text(f"per rank: {model.config_label(row.values)}\n", style=f"bold {COLORS[side == 'right']}")
            body = explain_panel.ranks_table(a) if a else Text("no result yet\n", style="dim")
            if not body.plain:
                body = Text("one rank: nothing to split\n", style="dim")
            self.query_one(f"#ranks-{side}", Static).update(head + body)
        self._curves(snapshot, left, right)

    def _curves(self, snapshot: StudySnapshot, left: ConfigRow, right: ConfigRow) -> None:
        runs = [(row, rank0(snapshot.metrics.get(row.config_id, []))) for row in (left, right)]
        for plot_id, attr, title in (("#compare-loss", "loss", "loss (rank 0)"),
                                     ("#compare-rate", "tokens_per_s", "tokens/s (rank 0, per interval)")):
            plot = self.query_one(plot_id, PlotextPlot)
            plt = plot.plt
            plt.clear_data()
            plt.clear_figure()
            plt.title(title)
            plt.xlabel("step")
            for (_row, points), color in zip(runs, COLORS, strict=True):
                pts = [p for p in points if getattr(p, attr) is not None]
                if pts:
                    plt.plot([p.step for p in pts], [getattr(p, attr) for p in pts], marker="braille", color=color)
            plot.refresh()
        legend = Text("legend: ")
        for (row, points), color in zip(runs, COLORS, strict=True):
            legend.append("━━ ", style=color)
            legend.append(model.config_label(row.values) + ("" if points else " (no metrics yet)") + "   ")
        self.query_one("#compare-legend", Static).update(legend)
