"""Run detail: loss curve, step-time breakdown over time, throughput and the job's log followed live.

Two throughputs exist for a run and both are labelled: the run average (result.json, the scaling table's
`tok/s avg`) and rank 0's latest metrics interval (the sparkline)."""

from __future__ import annotations

from rich.highlighter import Highlighter
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, Log, Sparkline, Static
from textual_plotext import PlotextPlot

from cockpit.forecast.analysis import comm_words, memory_words
from cockpit.store.snapshot import MetricPoint, StudySnapshot
from cockpit.tui import explain_panel, model, quality_panel
from cockpit.tui import format as fmt
from cockpit.tui.bindings import DETAIL_BINDINGS, HelpContext
from cockpit.tui.channel import SnapshotView
from cockpit.tui.columns import RUNNING, state_word
from cockpit.tui.files import CopyRunDir, OpenPager

LOG_LINES = 2000  # bounded buffer: the screen never holds more of a log than this
LOG_TAIL = 500  # lines asked of the snapshot per refresh


def summary_text(snapshot: StudySnapshot, config_id: str, live: bool = True) -> Text:
    row = snapshot.config(config_id)
    if row is None:
        return Text(f"configuration {config_id} is not part of this study", style="bold red")
    parts: list[tuple[str, str] | str] = [
        (model.config_label(row.values), "bold"),
        "  ",
        (row.state.replace("_", " "), fmt.state_style(row.state)),
    ]
    if row.job_id:
        parts += [f"  job {row.job_id}"]
    if row.progress is not None and row.state in RUNNING and live:
        parts += [f"  {row.progress * 100:.0f}% done, eta {fmt.duration(row.eta_s)}"]
    elif row.state in RUNNING and not live:
        parts += [("  (running when recorded)", "dim")]
    if row.train_time_s is not None:
        parts += [f"  T = {row.train_time_s:.2f} s"]
    a = row.analysis or {}
    if row.speedup is not None and row.t_same_work_s is not None:
        parts += [f"  S = T1/(T/work) = {a['t1_s']:.2f}/{row.t_same_work_s:.2f} = {fmt.ratio(row.speedup)}",
                  f"  E = S/{row.workers} = ", (fmt.percent(row.efficiency), fmt.efficiency_style(row.efficiency))]
    if row.tokens_per_s is not None:
        parts += [f"  tokens/s run average {fmt.rate(row.tokens_per_s)}"]
    if memory := memory_words(a):
        parts += [f"  {memory}"]
    if comm := comm_words(a):
        parts += [f"  comm {comm} s"]
    if row.last_loss is not None:
        parts += [f"  loss {row.last_loss:.3f} @ step {row.last_step}"]
    jobs = snapshot.jobs_of(config_id)
    if jobs and row.state not in ("completed", "running", "completing"):
        last = jobs[-1]
        why = [f"exit code {last.exit_code}"] if last.exit_code is not None else []
        why += [last.reason] if last.reason else []
        if why:
            parts += ["  ", (" · ".join(why), "yellow")]
    return Text.assemble(*parts)


def rank0(points: list[MetricPoint]) -> list[MetricPoint]:
    return [p for p in points if p.rank == 0]


PARTS = (("data_wait_s", "data wait"), ("compute_s", "compute"), ("comm_s", "comm"), ("optimizer_s", "optimizer"))
# plotext draws a legend over the data, so the series get fixed colours and the legend is a line below
PART_COLORS = {"data wait": "magenta", "compute": "red", "comm": "yellow", "optimizer": "cyan"}


class MatchHighlighter(Highlighter):
    """Marks every occurrence of the log search's term (case-insensitive)."""

    def __init__(self) -> None:
        self.term = ""

    def highlight(self, text: Text) -> None:
        if self.term:
            text.highlight_words([self.term], style="bold black on yellow", case_sensitive=False)


class SearchLog(Log):
    """The log with the search term highlighted on every line that has it."""

    highlighter: MatchHighlighter

    def __init__(self, **kwargs) -> None:
        super().__init__(highlight=True, **kwargs)
        self.highlighter = MatchHighlighter()

    def set_term(self, term: str) -> None:
        self.highlighter.term = term
        self._render_line_cache.clear()  # lines cached before the search carry no highlight
        self.refresh()



def breakdown_series(points: list[MetricPoint]) -> list[tuple[str, str, list[tuple[int, float]]]]:
    """Per metrics interval, each part's share (%) of the accounted time (sums over the interval)."""
    out: list[tuple[str, str, list[tuple[int, float]]]] = [(attr, label, []) for attr, label in PARTS]
    for p in points:
        values = [getattr(p, attr) for attr, _ in PARTS]
        total = sum(v for v in values if v is not None)
        if total <= 0:
            continue
        for (_, _, series), v in zip(out, values, strict=True):
            if v is not None:
                series.append((p.step, 100.0 * v / total))
    return out


class RunDetailScreen(Screen, SnapshotView, HelpContext):
    """One run; it opens on the snapshot current then and the app hands it every new one (apply)."""

    HELP_CONTEXT = "detail"

    BINDINGS = [*DETAIL_BINDINGS]  # a copy, typed as the list of BindingType textual declares

    def __init__(self, config_id: str, live: bool = True, snapshot: StudySnapshot | None = None) -> None:
        super().__init__()
        self.config_id = config_id
        self.live = live
        self._snapshot = snapshot
        self.auto_scroll = True
        self._tail: list[str] = []
        self._metrics_key: tuple | None = None
        self._matches: list[int] = []
        self._match_index = -1

    def compose(self) -> ComposeResult:
        yield Static(id="detail-summary")
        with VerticalScroll(id="detail-body"):
            yield Static(id="detail-explain")
            yield Static(id="detail-quality")
            yield Static(id="no-metrics", classes="caption")
            with Horizontal(id="detail-plots"):
                yield PlotextPlot(id="loss-plot")
                yield PlotextPlot(id="breakdown-plot")
            yield Static(id="breakdown-legend", classes="caption")
            with Horizontal(id="throughput-row"):
                yield Static("tokens/s", id="throughput-label")
                yield Sparkline([], id="throughput")
        with Vertical(id="log-box"):
            yield Static(id="log-caption", classes="caption")
            yield SearchLog(max_lines=LOG_LINES, id="log", auto_scroll=True)
            yield Input(placeholder="search the log (Enter; n = next match)", id="log-search")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#log-search", Input).cursor_blink = False
        self._caption()
        if self._snapshot is not None:
            self.apply(self._snapshot)
        self.query_one("#log", Log).focus()

    def apply(self, snapshot: StudySnapshot) -> None:
        self._snapshot = snapshot
        self.query_one("#detail-summary", Static).update(summary_text(snapshot, self.config_id, self.live))
        row = snapshot.config(self.config_id)
        self.query_one("#detail-explain", Static).update(explain_panel.panel(row.analysis if row else None))
        quality = quality_panel.panel(row.analysis if row else None)
        box = self.query_one("#detail-quality", Static)
        box.display = bool(quality.plain)
        box.update(quality)
        points = rank0(snapshot.metrics.get(self.config_id, []))
        key = (len(points), points[-1].step if points else None)
        if key != self._metrics_key:
            self._metrics_key = key
            self._draw_metrics(points, row.state if row else "")
        tail = snapshot.log_tail(self.config_id, LOG_TAIL)
        fresh = model.new_lines(self._tail, tail)
        self._tail = tail
        if fresh:
            self.query_one("#log", Log).write_lines(fresh, scroll_end=self.auto_scroll)
            self._caption()

    def _draw_metrics(self, points: list[MetricPoint], state: str) -> None:
        """The curves, or, before the first metrics record, one line saying so instead of empty axes."""
        empty = not points
        for widget_id in ("#detail-plots", "#breakdown-legend", "#throughput-row"):
            self.query_one(widget_id).display = not empty
        notice = self.query_one("#no-metrics", Static)
        notice.display = empty
        if empty:
            notice.update(f"no metrics yet: the run is {state_word(state) or 'unknown'}; the loss, the step "
                          "time breakdown and tokens/s appear with its first metrics record")
            return
        loss = self.query_one("#loss-plot", PlotextPlot)
        plt = loss.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title("Loss (rank 0)")
        plt.xlabel("step")
        pts = [p for p in points if p.loss is not None]
        if pts:
            plt.plot([p.step for p in pts], [p.loss for p in pts], marker="braille", color="cyan")
        loss.refresh()
        brk = self.query_one("#breakdown-plot", PlotextPlot)
        plt = brk.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title("Step time breakdown (% of accounted time)")
        plt.xlabel("step")
        legend = Text("breakdown: ")
        for _attr, label, series in breakdown_series(points):
            if series:
                plt.plot([s for s, _ in series], [v for _, v in series], marker="braille", color=PART_COLORS[label])
                legend.append("━━ ", style=PART_COLORS[label])
                legend.append(f"{label}   ")
        brk.refresh()
        self.query_one("#breakdown-legend", Static).update(legend)
        rates = [p.tokens_per_s for p in points if p.tokens_per_s is not None]
        self.query_one("#throughput", Sparkline).data = rates
        last = f"tokens/s, rank 0, last interval: {fmt.rate(rates[-1])}" if rates else "tokens/s: no metrics yet"
        self.query_one("#throughput-label", Static).update(last)

    def _caption(self) -> None:
        log = self.query_one("#log", Log)
        scroll = "on" if self.auto_scroll else "off"
        text = f"log ({log.line_count} lines, last {LOG_LINES} kept) · auto-scroll {scroll} (a)"
        if self._matches:
            line = self._matches[self._match_index] + 1 if self._match_index >= 0 else 0
            term = self.query_one("#log", SearchLog).highlighter.term
            text += f" · {term!r}: match {self._match_index + 1}/{len(self._matches)} (line {line}, highlighted; n next)"
        self.query_one("#log-caption", Static).update(text)

    def action_toggle_scroll(self) -> None:
        self.auto_scroll = not self.auto_scroll
        log = self.query_one("#log", Log)
        log.auto_scroll = self.auto_scroll
        if self.auto_scroll:
            log.scroll_end(animate=False)
        self._caption()

    def action_search(self) -> None:
        box = self.query_one("#log-search", Input)
        box.add_class("shown")
        box.focus()

    def search(self, term: str) -> int:
        """Find lines containing `term`; jumps to the first and stops auto-scroll. Returns the match count."""
        log = self.query_one("#log", SearchLog)
        log.set_term(term)
        term = term.lower()
        self._matches = [i for i, line in enumerate(log.lines) if term and term in line.lower()]
        self._match_index = -1
        if self._matches:
            if self.auto_scroll:
                self.action_toggle_scroll()
            self.action_next_match()
        else:
            self._caption()
        return len(self._matches)

    def action_next_match(self) -> None:
        if not self._matches:
            return
        self._match_index = (self._match_index + 1) % len(self._matches)
        log = self.query_one("#log", Log)
        log.scroll_to(y=max(0, self._matches[self._match_index] - 2), animate=False)
        self._caption()

    def action_pager(self) -> None:
        self.post_message(OpenPager(self.config_id))

    def action_copy_path(self) -> None:
        self.post_message(CopyRunDir(self.config_id))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "log-search":
            event.input.remove_class("shown")  # the caption says what matched; the log gets the room back
            count = self.search(event.value)
            if not count and event.value:
                self.notify(f"no line matches {event.value!r}", severity="warning")
            self.query_one("#log", Log).focus()
