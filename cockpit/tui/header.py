"""The one-line status bar: cluster, connection state, last poll and the study's counters."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from cockpit.snapshot import ConnectionState, StudySnapshot
from cockpit.tui import format as fmt

CONNECTION_STYLE = {
    ConnectionState.LOCAL: ("●", "green"),
    ConnectionState.CONNECTED: ("●", "green"),
    ConnectionState.CONNECTING: ("◌", "yellow"),
    ConnectionState.RECONNECTING: ("◌", "yellow"),
    ConnectionState.DISCONNECTED: ("○", "red"),
    ConnectionState.FAILED: ("✖", "bold red"),
}


def status_text(snapshot: StudySnapshot | None, now: float) -> Text:
    """Render the bar; pure so the benchmark and the tests can call it without an app."""
    if snapshot is None:
        return Text.assemble((" HLM cockpit ", "bold reverse"), "  loading study…")
    mark, style = CONNECTION_STYLE.get(snapshot.connection, ("?", "red"))
    c = snapshot.counts
    parts: list[tuple[str, str] | str] = [
        (" HLM cockpit ", "bold reverse"),
        "  ",
        (snapshot.study, "bold"),
        "  on ",
        (snapshot.cluster, "bold"),
        "  ",
        (f"{mark} {snapshot.connection.value}", style),
    ]
    if snapshot.connection_detail:
        parts += [" ", (f"({snapshot.connection_detail})", "dim")]
    parts += [
        "  poll ",
        fmt.ago(now, snapshot.last_poll_at),
        "  │ ",
        (f"{c.running} running", "cyan"),
        " · ",
        (f"{c.pending} pending", "yellow"),
        " · ",
        (f"{c.done} done", "green"),
    ]
    if c.failed:
        parts += [" · ", (f"{c.failed} failed", "bold red")]
    if c.not_submitted:
        parts += [" · ", (f"{c.not_submitted} not submitted", "dim")]
    if snapshot.node_hours_budget is not None:
        parts += ["  │ ", f"{snapshot.node_hours_used:.2f}/{snapshot.node_hours_budget:.2f} node-h"]
    return Text.assemble(*parts)


class StatusBar(Static):
    """Docked at the top of the main screen."""

    def show(self, snapshot: StudySnapshot | None, now: float) -> None:
        # one line docked at the top (height 1 in cockpit.tcss): a new text never changes its size, so no
        # layout pass (a layout repaints the whole screen, which is most of a 1000-row refresh)
        self.update(status_text(snapshot, now), layout=False)
