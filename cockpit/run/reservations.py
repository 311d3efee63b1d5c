"""The scheduler's maintenance reservations read for a running study: which one its time limit crosses.

Read at start, every CHECK_S after, and whenever a job pends for maintenance; kept in the live status (the
TUI's header and queue view name it, a pending job reads "waiting: maintenance until 16:30 (name)") and said
once per change in the study's problems. A scheduler that does not answer leaves what was last read.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from cockpit.launch.backend import BackendError, JobInfo
from cockpit.launch.maintenance import advice, crossing, waiting_for_maintenance
from cockpit.store import LiveStatus

if TYPE_CHECKING:
    from cockpit.run.scope import RunScope

CHECK_S = 300.0  # how often a running study reads the reservations again


class MaintenanceWatch:
    """The reservations as last read, and when to read them again."""

    def __init__(self, scope: RunScope) -> None:
        self.scope = scope
        self._next = 0.0  # monotonic time of the next read

    async def maybe_read(self, seen: dict[str, JobInfo]) -> str:
        """Read the reservations when due or when a job pends for maintenance; returns the advice line
        ('' when no maintenance reservation is crossed)."""
        live = self.scope.store.live.setdefault(self.scope.study.name, LiveStatus())
        pending = any(waiting_for_maintenance(j.reason) for j in seen.values())
        if time.monotonic() < self._next and not (pending and not live.reservations):
            return live.maintenance
        self._next = time.monotonic() + CHECK_S
        try:
            found = await self.scope.backend.reservations()
        except BackendError:
            return live.maintenance  # asked again at the next check
        c = self.scope.study.cluster
        limit_s = c.time_limit_minutes * 60.0
        crossed = crossing(found, limit_s, c.own.get("partition"))
        words = advice(crossed[0], limit_s) if crossed else ""
        if words and words != live.maintenance:
            self.scope.store.add_problem(self.scope.key, "maintenance", words)
        live.reservations, live.maintenance = tuple(found), words
        return words
