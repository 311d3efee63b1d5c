"""What the app drives. The app never talks to a store, a runner or SSH directly: it gets a Controller.

`RecordedController` serves a fixed snapshot (recorded stores, snapshot tests); the live controller in
`cockpit.tui.live` wraps the study runner. Keeping this seam is what lets tests render a fixture with a
fixed clock while the real app follows a study.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from cockpit.backend import JOB_ACTIONS
from cockpit.plan import Plan, PlanLine  # noqa: F401  (the submit flow's content, cockpit.plan)
from cockpit.snapshot import StudySnapshot


class Controller(Protocol):
    """The app's only way to read and act on a study."""

    def snapshot(self) -> StudySnapshot:
        """The study now. Called from a worker thread, never concurrently with itself."""

    def plan(self) -> Plan | None:
        """What a submit would do, or None when there is nothing to submit (or no spec)."""

    async def submit(self) -> str:
        """Start the study (after the user confirmed the plan); returns a message for the user."""

    async def job_action(self, action: str, job_id: str) -> str:
        """cancel / requeue / hold / release one job; returns a message for the user."""

    async def close(self) -> None:
        """Release what the controller holds (connections, runner tasks)."""


@dataclass
class RecordedController:
    """Serves a recorded snapshot; actions are refused with a message (nothing live to act on)."""

    source: Callable[[], StudySnapshot]
    plan_value: Plan | None = None
    actions: list[tuple[str, str]] = field(default_factory=list)
    submitted: int = 0

    def snapshot(self) -> StudySnapshot:
        return self.source()

    def plan(self) -> Plan | None:
        return self.plan_value

    async def submit(self) -> str:
        self.submitted += 1
        return "recorded study: nothing to submit"

    async def job_action(self, action: str, job_id: str) -> str:
        if action not in JOB_ACTIONS:
            raise ValueError(f"unknown job action {action!r}; expected one of {', '.join(JOB_ACTIONS)}")
        self.actions.append((action, job_id))
        return f"{action} {job_id}: recorded study, nothing sent"

    async def close(self) -> None:
        return None
