"""Two studies side by side (`cockpit open STUDY --compare OTHER`, or the palette's "Compare with another
study"): what `cockpit compare STUDY OTHER` prints, the same rich tables (cockpit.report.comparison), read in a
thread worker. Not to be confused with cockpit.tui.compare, two runs of one study."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from cockpit.tui.bindings import STUDY_COMPARE_BINDINGS, HelpContext
from cockpit.tui.latest import LatestRequest

if TYPE_CHECKING:
    from rich.table import Table

    from cockpit.forecast.compare import Comparison

Side = tuple[Path, str | None]  # a study file or a store, and the study's name in a store holding several


class StudyCompareScreen(Screen[None], HelpContext):
    """A = the study the cockpit shows (`origin`), B = `other` (asked for on the screen when None)."""

    HELP_CONTEXT = "study-compare"

    BINDINGS = [*STUDY_COMPARE_BINDINGS]

    def __init__(self, origin: Path, study: str | None = None, other: Path | None = None) -> None:
        super().__init__()
        self.sides: tuple[Side, Side | None] = ((origin, study), (other, None) if other is not None else None)
        self.comparison: Comparison | None = None
        self.items: list[str | Table] = []  # what is shown, as `cockpit compare` prints it
        self.error = ""
        self.requests: LatestRequest[tuple[Side, Side]] = LatestRequest(lambda sides: self._compare(*sides))

    def compose(self) -> ComposeResult:
        yield Static(id="study-compare-title")
        yield Input(placeholder="other study: its study file (.toml) or a store (.sqlite), then enter",
                    id="other-study")
        yield Static(id="study-compare-error")
        yield VerticalScroll(id="study-compare-body")
        yield Footer()

    def on_mount(self) -> None:
        a, b = self.sides
        self._title()
        if b is None:
            self.query_one("#other-study", Input).focus()
        else:
            self.query_one("#other-study", Input).value = str(b[0])
            self.query_one("#study-compare-body").focus()
            self.load(a, b)

    def _title(self) -> None:
        a, b = self.sides
        words = f"A = {a[0]}" + (f"  ·  B = {b[0]}" if b is not None else "  ·  B = ?")
        self.query_one("#study-compare-title", Static).update(Text(f"Two studies: {words}", style="bold"))

    def action_other(self) -> None:
        self.query_one("#other-study", Input).focus()

    def action_swap(self) -> None:
        a, b = self.sides
        if b is not None:
            self.sides = (b, a)
            self._title()
            self.load(b, a)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if not text:
            return
        a, b = self.sides[0], (Path(text).expanduser(), None)
        self.sides = (a, b)
        self._title()
        self.query_one("#study-compare-body").focus()
        self.load(a, b)

    def load(self, a: Side, b: Side) -> None:
        """Compare in a thread worker, one at a time: a request made meanwhile runs after it (the latest)."""
        self.requests.ask((a, b))

    @work(thread=True, group="study-compare")
    def _compare(self, a: Side, b: Side) -> None:
        from cockpit.report.comparison import compare_loaded, load, renderables
        from cockpit.report.source import ReportError

        comparison, items, error = None, [], ""
        try:
            comparison = compare_loaded(load(*a), load(*b))
            items = renderables(comparison)
        except ReportError as exc:
            error = str(exc)
        except Exception as exc:  # said on the screen, which stays up
            error = f"{b[0]}: {exc}"
        self.app.call_from_thread(self._done, (a, b), comparison, items, error)

    def _done(self, asked: tuple[Side, Side], comparison: Comparison | None, items: list[str | Table],
              error: str) -> None:
        if not self.requests.done(asked):
            return
        line = self.query_one("#study-compare-error", Static)
        line.update(Text(error, style="bold red"))
        line.display = bool(error)
        self.error = error
        if comparison is None:
            return
        self.comparison, self.items = comparison, items
        body = self.query_one("#study-compare-body", VerticalScroll)
        body.remove_children()
        body.mount_all([Static(Text(item) if isinstance(item, str) else item, classes="study-compare-item")
                        for item in items])
