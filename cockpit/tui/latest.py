"""One request at a time, the latest winning: the rule of every TUI thread worker that answers what the user
typed (the plan dialog's what-if, the two-studies screen), so a worker never overlaps its own runs and a
request made meanwhile is not lost but replaces any other waiting one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class LatestRequest(Generic[T]):
    """`ask` starts a request unless one runs; `done` (called when it ends) says whether its answer is still
    the one wanted, and otherwise starts the request asked for meanwhile."""

    def __init__(self, start: Callable[[T], object]) -> None:
        self._start = start
        self.running = False
        self.wanted: T | None = None

    def ask(self, request: T | None) -> None:
        """Ask for `request` (None: nothing, e.g. the plan again instead of a what-if)."""
        self.wanted = request
        if request is not None and not self.running:
            self.running = True
            self._start(request)

    def done(self, request: T) -> bool:
        """The request ended: True to show its answer, False when another was asked for meanwhile."""
        self.running = False
        if self.wanted == request:
            return True
        self.ask(self.wanted)
        return False
