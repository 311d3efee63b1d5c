"""The scheduler's controller away (maintenance, a restart, a failover): its silence read as silence.

While squeue, sacct or scontrol cannot reach the controller (SchedulerUnreachable), the runner changes no
job's state: a job missing from a queue that could not be read has not left it. This part keeps when the
silence began, says it once ("Slurm not answering since 14:05") in the store's problems, the live status
(the TUI's header and queue view) and the tick report (the headless line), backs the polls off (doubling up
to MAX_POLL_S), and says once when the controller answers again; the next tick then settles every job that
ended meanwhile through the normal path, once.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from cockpit.store import LiveStatus

if TYPE_CHECKING:
    from cockpit.run.scope import RunScope

MAX_POLL_S = 60.0  # the longest wait between two polls while the controller is away


class ControllerOutage:
    """When the scheduler last stopped answering, and the back-off of the polls meanwhile."""

    def __init__(self, scope: RunScope, scheduler: str = "Slurm") -> None:
        self.scope = scope
        self.scheduler = scheduler
        self.since: float | None = None  # wall-clock time of the first unanswered poll
        self.unanswered = 0  # polls unanswered since
        self._wait_s = 0.0

    @property
    def words(self) -> str:
        """'Slurm not answering since 14:05' while it is away, else ''."""
        if self.since is None:
            return ""
        return f"{self.scheduler} not answering since {time.strftime('%H:%M', time.localtime(self.since))}"

    def unanswered_poll(self, why: str, first_wait_s: float, asked_at: float | None = None) -> float:
        """Record one unanswered poll, asked at ``asked_at`` (a Slurm command takes up to a minute to give up);
        returns the wait before the next (first_wait_s, doubling to MAX_POLL_S)."""
        live = self.scope.store.live.setdefault(self.scope.study.name, LiveStatus())
        self.unanswered += 1
        if self.since is None:
            self.since = time.time() if asked_at is None else asked_at
            self._wait_s = max(first_wait_s, 0.1)
            self.scope.store.add_problem(
                self.scope.key, "scheduler", f"{self.words} ({why}): no job changes state until it answers; "
                f"asking again with back-off up to {MAX_POLL_S:g} s")
        else:
            self._wait_s = min(MAX_POLL_S, self._wait_s * 2)
        live.scheduler = self.words
        return self._wait_s

    def answered(self) -> str:
        """The controller answered: '' if it had not been away, else the line that says it is back."""
        if self.since is None:
            return ""
        away = time.time() - self.since
        line = (f"{self.scheduler} answering again after {away:.0f} s not answering ({self.unanswered} polls "
                "unanswered): following resumed")
        self.scope.store.add_problem(self.scope.key, "scheduler", line)
        self.scope.store.live.setdefault(self.scope.study.name, LiveStatus()).scheduler = ""
        self.since, self.unanswered, self._wait_s = None, 0, 0.0
        return line
