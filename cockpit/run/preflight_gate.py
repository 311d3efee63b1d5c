"""No submission before the study file's preflight has passed: a passed one kept in the store (by the
study file's digest) is enough, else one is run now through the study's backend and kept."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from cockpit.preflight import jobs
from cockpit.preflight.table import failure_summary
from cockpit.run.preflight import run_preflight
from cockpit.store import preflights

if TYPE_CHECKING:
    from cockpit.preflight.checks import PreflightReport
    from cockpit.run.scope import RunScope


class PreflightFailed(Exception):
    """The study file's preflight failed: nothing is submitted. ``report`` holds every job's table."""

    def __init__(self, report: PreflightReport) -> None:
        super().__init__(failure_summary(report))
        self.report = report


class PreflightGate:
    """The preflight of one runner, with whoever listens to its progress lines and its reports."""

    def __init__(self) -> None:
        self.listeners: list[Callable[[str], None]] = []  # its progress lines
        self.report_listeners: list[Callable[[PreflightReport], None]] = []  # each one it runs
        self.report: PreflightReport | None = None

    def passed(self, scope: RunScope) -> bool:
        """Whether this gate has already seen the study file's preflight pass (nothing to ask the store)."""
        return self.report is not None and self.report.passed and self.report.digest == jobs.study_digest(scope.study)

    async def ensure(self, scope: RunScope) -> None:
        """The study file's passed preflight from the store, else run one now and keep it there;
        PreflightFailed when it fails (nothing is submitted)."""
        digest = jobs.study_digest(scope.study)
        kept = preflights.latest(scope.store, scope.study.name, digest)
        if kept is not None and kept.passed:
            self.report = kept
            self._event(f"preflight of this study file ({digest}) passed before: not run again")
            return
        report = await run_preflight(scope.study, scope.backend, on_event=self._event)
        preflights.save(scope.store, scope.key, report)
        self.report = report
        for show in self.report_listeners:
            show(report)
        if not report.passed:
            raise PreflightFailed(report)

    def _event(self, line: str) -> None:
        for listener in self.listeners:
            listener(line)
