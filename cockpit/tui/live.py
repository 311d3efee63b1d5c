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
from cockpit.store.snapshot_build import with_changes
from cockpit.study.changes import Change
from cockpit.tui.controller import JOB_ACTIONS, downsample, what_if_of

if TYPE_CHECKING:
    from cockpit.forecast.full_run import FullRunPlan
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
        self._loop = asyncio.Lock()  # one runner loop at a time: following, or submitting
        self._stop_following = asyncio.Event()
        self._changes: dict[tuple[str, str], tuple[Change, ...] | None] = {}  # with_changes' cache

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
        return with_changes(self.session.store.snapshot(self.study.name), self.study, self._changes)

    def plan(self) -> Plan | None:
        runner = self.session.runner
        # the backend's real cores (this machine's, for the local executor): what it would refuse is "too big"
        return study_plan(self.study, self.session.store, resubmit_failed=runner.resubmit_failed,
                          rerun_changed=runner.rerun_changed,
                          cluster=self.session.backend.label, cores=self.session.backend.cores_per_node)

    def rerun_changed(self) -> None:
        self.session.runner.rerun_changed = True

    def preflight_words(self) -> str | None:
        """What a confirmed submit runs first, in one line: the preflight's jobs and what they may cost, or
        that the study file's passed one is kept; None when no preflight runs (--skip-preflight)."""
        if not self.session.runner.preflight:
            return None
        from cockpit.preflight import jobs
        from cockpit.store import preflights

        digest = jobs.study_digest(self.study)
        if self._registered() and preflights.passed(self.session.store, self.study.name, digest):
            return f"preflight: this study file's ({digest}) passed before and is kept; none runs"
        return jobs.cost_words(self.study)

    def in_flight(self) -> bool:
        """Whether the store knows jobs of this study still queued or running (a resumed study)."""
        store = self.session.store
        return self._registered() and bool(store.active_jobs(store.study_key(self.study.name)))

    async def follow(self) -> str:
        """Follow the jobs a resumed study has in flight (states, results, live files) without submitting
        anything, until they have all ended or a confirmed submit takes over; "" at once when there are none."""
        if not self.in_flight():
            return ""
        runner = self.session.runner
        async with self._loop:
            if self._stop_following.is_set():  # a submit came first: it follows them
                return ""
            runner.submitting = False
            await runner.start()
            await runner.run(stop=self._stop_following)
        if self._stop_following.is_set():
            return ""
        return f"study {self.study.name}: no job in flight any more; nothing is submitted until you confirm (p)"

    def preflight_pending(self, listener: Callable[[str], None]) -> bool:
        runner = self.session.runner
        if not runner.preflight or not self._to_submit():
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
        self._stop_following.set()  # the follow loop ends after its tick; this one follows from here
        async with self._loop:
            runner.submitting = True
            await runner.start()
            await runner.run()
        counts = self.session.store.snapshot(self.study.name).counts
        return f"study {self.study.name} finished: {counts.done} done, {counts.failed} failed"

    def _to_submit(self) -> bool:
        plan = self.plan()
        return plan is not None and bool(plan.to_submit)

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

    def full_run(self, text: str) -> FullRunPlan:
        from cockpit.run.full_run import full_run_of

        return full_run_of(self.study, text)

    async def close(self) -> None:
        """Stop the runner (the local executor stops its jobs; Slurm jobs run on). The store stays open
        for whoever opened the session, which reads the outcome from it."""
        await self.session.runner.close()
