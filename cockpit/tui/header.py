"""The one-line status bar: study, cluster, connection state (or the recording's age), counters, node-hours.

It fits any width: the parts that matter least go first (the brand, then details, then the cluster), so
the study, whether it is live and its counters stay on screen at 80 columns.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from cockpit.launch.backend import ConnectionState
from cockpit.store.snapshot import StudySnapshot
from cockpit.tui import format as fmt

CONNECTION_STYLE = {
    ConnectionState.LOCAL: ("●", "green"),
    ConnectionState.CONNECTED: ("●", "green"),
    ConnectionState.CONNECTING: ("◌", "yellow"),
    ConnectionState.RECONNECTING: ("◌", "yellow"),
    ConnectionState.DISCONNECTED: ("○", "red"),
    ConnectionState.FAILED: ("✖", "bold red"),
}
OLD_RECORDING_S = 3600.0  # a recording older than this is flagged in yellow
STALE_POLL_S = 60.0  # a live study not polled for this long is flagged


def status_text(snapshot: StudySnapshot | None, now: float, *, live: bool = True, width: int = 0) -> Text:
    """Render the bar; pure so the benchmark and the tests can call it without an app. `width` > 0 drops
    the least useful parts until the line fits."""
    if snapshot is None:
        return Text.assemble((" HLM cockpit ", "bold reverse"), "  loading study…")
    c = snapshot.counts
    # (priority: higher stays longer, parts)
    parts: list[tuple[int, list[tuple[str, str] | str]]] = [(1, [(" HLM cockpit ", "bold reverse"), " "])]
    parts.append((9, [" ", (snapshot.study, "bold")]))
    parts.append((4, ["  on ", (snapshot.cluster, "bold")]))
    if live:
        mark, style = CONNECTION_STYLE.get(snapshot.connection, ("?", "red"))
        parts.append((8, ["  ", (f"{mark} {snapshot.connection.value}", style)]))
        if snapshot.connection_detail:
            parts.append((3, [" ", (f"({snapshot.connection_detail})", "dim")]))
        active = c.running + c.pending
        if not active and not c.not_submitted and c.done + c.failed:
            # every configuration ended: nothing is polled any more, so the poll's age says nothing
            parts.append((6, ["  ", ("✓ finished", "bold green" if not c.failed else "bold")]))
        else:
            age = None if snapshot.last_poll_at is None else now - snapshot.last_poll_at
            stale = active > 0 and age is not None and age > STALE_POLL_S  # only what is still running goes stale
            parts.append((6, ["  poll ", (fmt.ago(now, snapshot.last_poll_at) + (" (stale)" if stale else ""),
                                          "bold yellow" if stale else "")]))
    else:
        age = None if snapshot.last_poll_at is None else now - snapshot.last_poll_at
        when = "recorded, never polled" if age is None else f"recorded {fmt.duration(age)} ago"
        old = age is None or age > OLD_RECORDING_S
        parts.append((8, ["  ", (f"◉ {when}", "bold yellow" if old else "yellow")]))
        parts.append((3, [" ", (f"({snapshot.connection_detail or 'read-only: nothing is sent'})", "dim")]))
    counts: list[tuple[str, str] | str] = [
        "  │ ", (f"{c.running} running", "cyan"), " · ", (f"{c.pending} pending", "yellow"), " · ",
        (f"{c.done} done", "green"),
    ]
    if c.failed:
        counts += [" · ", (f"{c.failed} failed", "bold red")]
    if c.not_submitted:
        counts += [" · ", (f"{c.not_submitted} not submitted", "dim")]
    parts.append((7, counts))
    if snapshot.node_hours_budget is not None:
        parts.append((5, ["  │ ", f"{snapshot.node_hours_used:.2f}/{snapshot.node_hours_budget:.2f} node-h"]))
    elif snapshot.node_hours_used:
        parts.append((5, ["  │ ", f"{snapshot.node_hours_used:.2f} node-h"]))
    if width > 0:
        while sum(_length(p) for _, p in parts) > width and len(parts) > 1:
            lowest = min(range(len(parts)), key=lambda i: parts[i][0])
            del parts[lowest]
    return Text.assemble(*(piece for _, p in parts for piece in p))


def _length(pieces: list[tuple[str, str] | str]) -> int:
    return sum(len(p if isinstance(p, str) else p[0]) for p in pieces)


class StatusBar(Static):
    """Docked at the top of the main screen."""

    def __init__(self, *, live: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        self.live = live
        self._last: tuple[StudySnapshot | None, float] = (None, 0.0)

    def show(self, snapshot: StudySnapshot | None, now: float) -> None:
        # one line docked at the top (height 1 in cockpit.tcss): a new text never changes its size, so no
        # layout pass (a layout repaints the whole screen, which is most of a 1000-row refresh)
        self._last = (snapshot, now)
        self.update(status_text(snapshot, now, live=self.live, width=self.size.width), layout=False)

    def on_resize(self) -> None:
        self.show(*self._last)
