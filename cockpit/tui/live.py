"""The live controller: the TUI's face of the study runner (the headless `cockpit run` is the other face)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from cockpit.forecast.plan import Plan
from cockpit.launch.backend import ConnectionState
from cockpit.launch.registry import backend_kind
from cockpit.store.recorded import study_plan
from cockpit.store.snapshot import ConfigRow, GpuSeries, StudySnapshot, count_states
from cockpit.tui.controller import JOB_ACTIONS, downsample, what_if_of

if TYPE_CHECKING:
    from cockpit.forecast.whatif import Outcome
    from cockpit.preflight.checks import PreflightReport
    from cockpit.run.session import StudySession
    from cockpit.study.spec import Study


def spec_snapshot(study: Study, cluster: str) -> StudySnapshot:
    """What the study looks like before anything was submitted: its matrix, nothing run."""
    rows = [
        ConfigRow(cfg.config_id, cfg.group_id, cfg.is_baseline, cfg.label_values(), "not_submitted", workers=cfg.workers)
        for cfg in study.runnable()
    ]
    kind = ConnectionState.LOCAL if backend_kind(study).on_this_machine else ConnectionState.DISCONNECTED
    return StudySnapshot(study.name, cluster, kind, time.time(), None, rows, [], counts=count_states(rows),
                         node_hours_budget=study.cluster.node_hour_budget)


class LiveController:
    """Reads the study's store for snapshots; submits and follows through the runner."""

    live = True
    can_submit = True

    def __init__(self, session: StudySession) -> None:
        self.session = session
        self._run_task: asyncio.Task | None = None

    @property
    def device(self) -> str | None:
        return str(self.study.train.get("device") or "") or None

    @property
    def study(self) -> Study:
        return self.session.study

    def _registered(self) -> bool:
        return self.study.name in self.session.store.study_names()

    def snapshot(self) -> StudySnapshot:
        if not self._registered():
            return spec_snapshot(self.study, self.session.backend.label)
        return self.session.store.snapshot(self.study.name)

    def plan(self) -> Plan | None:
        runner = self.session.runner
        # the backend's real cores (this machine's, for the local executor): what it would refuse is "too big"
        return study_plan(self.study, self.session.store, resubmit_failed=runner.resubmit_failed,
                          cluster=self.session.backend.label, cores=self.session.backend.cores_per_node)

    def preflight_pending(self, listener: Callable[[str], None]) -> bool:
        runner = self.session.runner
        if not runner.preflight:
            return False
        from cockpit.preflight import jobs
        from cockpit.store import preflights

        if self._registered() and preflights.passed(self.session.store, self.study.name, jobs.study_digest(self.study)):
            return False
        from cockpit.preflight.table import report_lines

        def tables(report: PreflightReport) -> None:
            for line in report_lines(report):
                listener(line)

        runner.preflight_listeners.append(listener)
        runner.preflight_report_listeners.append(tables)
        return True

    async def submit(self) -> str:
        """Start (or resume) the study and follow it to the end; returns a one-line summary."""
        runner = self.session.runner
        await runner.start()
        await runner.run()
        counts = self.session.store.snapshot(self.study.name).counts
        return f"study {self.study.name} finished: {counts.done} done, {counts.failed} failed"

    async def job_action(self, action: str, job_id: str) -> str:
        if action not in JOB_ACTIONS:
            raise ValueError(f"unknown job action {action!r}; expected one of {', '.join(JOB_ACTIONS)}")
        backend = self.session.backend
        if not backend.supports(action):
            return f"{backend.label} cannot {action} jobs"
        await backend.job_action(action, job_id)
        return f"{action}: job {job_id} done"

    def gpu_history(self, config_id: str) -> list[GpuSeries]:
        if not self._registered():
            return []
        store = self.session.store
        return downsample(store.gpu_series(store.study_key(self.study.name), config_id, since=0.0))

    def run_dir(self, config_id: str) -> str | None:
        cfg = next((c for c in self.study.matrix() if c.config_id == config_id), None)
        return self.study.run_dir(cfg) if cfg is not None else None

    @property
    def origin(self) -> Path | None:
        return self.study.path

    def what_if(self, text: str) -> Outcome:
        return what_if_of(self.study, Path(self.session.store.path), text)

    async def close(self) -> None:
        """Stop the runner (the local executor stops its jobs; Slurm jobs run on). The store stays open
        for whoever opened the session, which reads the outcome from it."""
        await self.session.runner.close()
