"""The preflight's progress and tables while `cockpit open`/`run` runs it before the first submit.

Lines arrive from the runner (one per submitted, changed and ended job, then each job's table); the
screen stays open after a failure, whose FAILED lines say what to change, and closes itself after a pass.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import RichLog, Static

CLOSE_AFTER_PASS_S = 3.0


class PreflightScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,enter,q", "close", "Close")]

    def __init__(self) -> None:
        super().__init__()
        self._waiting: list[str] = []  # lines that came before the log was mounted

    def compose(self) -> ComposeResult:
        with Vertical(id="preflight-dialog"):
            yield Static("Preflight: one short job per node count before the study's first submit", classes="title")
            yield RichLog(id="preflight-log", wrap=True, markup=False, highlight=False)

    def on_mount(self) -> None:
        waiting, self._waiting = self._waiting, []
        for line in waiting:
            self.add_line(line)

    def add_line(self, line: str) -> None:
        """One progress or table line (kept until the log is mounted, if it comes earlier: under load the
        runner's first line can arrive before the screen has composed)."""
        if self.query("#preflight-log"):
            self._write(line)
        else:
            self._waiting.append(line)

    def _write(self, line: str) -> None:
        self.query_one("#preflight-log", RichLog).write(line)
        if line.startswith("preflight of ") and line.endswith(": passed"):
            self.set_timer(CLOSE_AFTER_PASS_S, self.action_close)

    def action_close(self) -> None:
        if self.is_attached and self.app.screen is self:
            self.dismiss(None)
