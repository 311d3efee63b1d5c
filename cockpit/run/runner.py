"""The study runner: drive a study's matrix to completion through any Backend, crash-safely.

Each tick: one poll of the backend (one ``squeue`` for Slurm), state changes into the store, one batched
final-state query for jobs that left the queue, result files collected, live files followed, then new
submissions within ``max_concurrent_jobs`` and the node-hour budget. The order of writes is what makes a
restart safe at any instant: intent committed -> sbatch -> job id committed; on start-up
:meth:`StudyRunner.reconcile` matches intents and unknown jobs with what the cluster shows (job names and
comments) and with the run directories, so nothing is submitted twice and no result is lost.

This module is the loop; each job it does per tick is a part in cockpit/run/ (listed there).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cockpit.forecast.plan import Plan
from cockpit.launch.backend import (
    AdaptiveInterval,
    Backend,
    BackendError,
    ConnectionLost,
    ConnectionState,
    JobInfo,
    JobWatch,
    SchedulerUnreachable,
    SubmitLater,
    UserLimits,
)
from cockpit.run.disk_pause import DiskPause
from cockpit.run.job_states import JobStates
from cockpit.run.live_files import LiveFiles
from cockpit.run.outage import ControllerOutage
from cockpit.run.outcome import exit_reason, parse_result
from cockpit.run.preflight_gate import PreflightFailed, PreflightGate
from cockpit.run.reservations import MaintenanceWatch
from cockpit.run.scope import RunScope
from cockpit.run.submission import BudgetExceeded, check_budget, pace, submit_more
from cockpit.store import LiveStatus, StudyStore
from cockpit.store.recorded import study_plan
from cockpit.store.snapshot import ACTIVE_STATES

if TYPE_CHECKING:
    import pandas as pd

    from cockpit.preflight.checks import PreflightReport
    from cockpit.study.spec import Configuration, Study

# the runner's names that callers catch or call, wherever their part defines them
__all__ = ["BudgetExceeded", "PreflightFailed", "StudyRunner", "TickReport", "exit_reason", "parse_result"]

MIN_BACKOFF_S, MAX_BACKOFF_S = 5.0, 120.0  # the wait after a "not now" refusal, doubling between these

@dataclass
class TickReport:
    """What one tick did (for headless progress lines and tests)."""

    submitted: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (config id, why) of submits refused this tick
    waiting: str = ""  # the site limit submissions wait for ("QOS submit limit (3 of 3 in use)"), if any
    finished: list[str] = field(default_factory=list)
    changed: bool = False
    polled: int = 0
    ingested_metrics: int = 0
    scheduler: str = ""  # while the controller is away: "Slurm not answering since 14:05"
    scheduler_back: str = ""  # the tick it answers again: how long it was away
    maintenance: str = ""  # a maintenance reservation the time limit crosses, with the time limit that fits
    disk: dict[str, Any] | None = None  # while submitting is paused on a full work directory, and the tick it ends


class StudyRunner:
    """Submits, follows and collects one study. ``hooks`` (name -> callable) run at named points."""

    def __init__(
        self,
        study: Study,
        backend: Backend,
        store: StudyStore,
        *,
        force: bool = False,
        resubmit_failed: bool = False,
        rerun_changed: bool = False,
        baseline_first: bool = False,
        interval: AdaptiveInterval | None = None,
        follow: bool = True,
        hooks: dict[str, Callable[..., Any]] | None = None,
        preflight: bool = False,
    ) -> None:
        self.study = study
        self.backend = backend
        self.store = store
        self.force = force
        self.resubmit_failed = resubmit_failed
        self.rerun_changed = rerun_changed  # run again the configurations whose settings changed since they ran
        self.baseline_first = baseline_first  # hold a group's N-worker runs until its baseline predicts them
        self.interval = interval or AdaptiveInterval()
        self.follow = follow
        self.hooks = hooks or {}
        self.preflight = preflight  # nothing is submitted before this study file's preflight has passed
        # False: follow the jobs in flight without submitting anything (no preflight, no budget check): what
        # `cockpit open` does with a resumed study until its user confirms a submit
        self.submitting = True
        self.configs: dict[str, Configuration] = {c.config_id: c for c in study.runnable()}
        self._scope = RunScope(study, backend, store, self.configs)
        self._jobs = JobStates(self._scope)
        self._live = LiveFiles(self._scope)
        self._preflight = PreflightGate()
        self._outage = ControllerOutage(self._scope)  # the controller away: nothing changes state meanwhile
        self._maintenance = MaintenanceWatch(self._scope)
        self._disk = DiskPause(self._scope)  # a full work directory pauses submitting (cockpit/run/disk_pause.py)
        self.started = False
        self.limits: UserLimits | None = None  # the site's limits and the user's jobs (start(), each wait)
        self.waiting = ""  # the limit submissions wait for, in people's words
        self._retry_at = 0.0  # no submit before this (monotonic): back-off after a "not now" refusal
        self._backoff_s = 0.0
        self.interval_s = self.interval.fast_s
        self._listening: Callable[[ConnectionState, str], None] | None = None

    @property
    def key(self) -> int:
        """The study's key in the store (0 until start() registers it)."""
        return self._scope.key

    @key.setter
    def key(self, value: int) -> None:
        self._scope.key = value

    @property
    def preflight_listeners(self) -> list[Callable[[str], None]]:
        """Who hears the preflight's progress lines (append to it)."""
        return self._preflight.listeners

    @property
    def preflight_report_listeners(self) -> list[Callable[[PreflightReport], None]]:
        """Who is shown each preflight report the runner runs (append to it)."""
        return self._preflight.report_listeners

    # -- set-up ---------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Register the study, reconcile with the cluster, check the budget (BudgetExceeded). Safe to call
        again, e.g. after a refused budget with force set."""
        c = self.study.cluster
        self.key = self.store.ensure_study(
            self.study.name, self.study.study_id, spec_path=str(self.study.path), cluster=self.backend.label,
            node_hour_budget=c.node_hour_budget,
        )
        self._watch_connection()
        total_steps = self.study.train.get("steps")
        run_dirs = self._scope.run_dirs
        rows = []
        for cfg in self.configs.values():
            run_dirs[cfg.config_id] = await self.backend.run_dir(cfg)
            rows.append({
                "config_id": cfg.config_id, "group_id": cfg.group_id, "is_baseline": cfg.is_baseline,
                "workers": cfg.workers, "nodes": cfg.nodes, "values": cfg.label_values(),
                "run_dir": run_dirs[cfg.config_id], "total_steps": total_steps,
            })
        self.store.upsert_configs(self.key, rows)
        self.limits = await self.backend.user_limits()
        await self.reconcile()
        if self.submitting:
            await self.ensure_preflight()
            self.check_budget()
        self.started = True

    async def ensure_preflight(self, plan: Plan | None = None) -> None:
        """With ``preflight`` set and something to submit (``plan``, else the study's plan now): the study
        file's passed preflight from the store, else run one now and keep it there; PreflightFailed when it
        fails (nothing is submitted). A study with nothing left to submit runs none."""
        if self.preflight and (plan if plan is not None else self.plan()).to_submit:
            await self._preflight.ensure(self._scope)

    def _watch_connection(self) -> None:
        live = self.store.live.setdefault(self.study.name, LiveStatus())
        live.cluster = self.backend.label
        conn = self.backend.connection
        if conn is None:
            live.connection = ConnectionState.LOCAL
            return

        def on_state(state: ConnectionState, detail: str) -> None:
            live.connection, live.detail = state, detail

        if self._listening is None:
            self._listening = on_state
            conn.listeners.append(on_state)
        on_state(conn.state, conn.detail)

    def plan(self) -> Plan:
        """What is still to submit and what it costs (cockpit.forecast.plan: the same as `cockpit plan` and the TUI)."""
        return study_plan(self.study, self.store, key=self.key, resubmit_failed=self.resubmit_failed,
                          rerun_changed=self.rerun_changed, cluster=self.backend.label, cores=self.backend.cores_per_node)

    def pending_configs(self) -> list[Configuration]:
        """Configurations still to submit: no valid result, no active job, not failed (unless resubmitting)."""
        return [self.configs[line.config_id] for line in self.plan().to_submit]

    def check_budget(self) -> None:
        """BudgetExceeded when what is left to submit costs more than the budget left (unless ``force``)."""
        check_budget(self.plan(), force=self.force)

    async def reconcile(self) -> None:
        """Match the store with the cluster after a (re)start: adopt jobs, settle intents, collect results."""
        await self._jobs.reconcile(self._following())

    # -- one tick -------------------------------------------------------------------------------------
    async def tick(self) -> TickReport:
        """Poll, settle, collect, follow, submit. Never raises for a dropped connection: it reports it."""
        report = TickReport()
        if not self.started:
            try:
                await self.start()
            except SchedulerUnreachable as exc:  # reconcile could not read the queue: nothing was settled
                return self._unanswered(report, exc)
        seen: dict[str, JobInfo] = {}
        asked_at = time.time()  # when the controller was asked (an unanswered poll takes up to a minute)
        try:
            if self.store.jobs(self.key, where="state = 'submitting'"):
                await self.reconcile()  # an sbatch whose answer was lost with the connection
            jobs = await self.backend.poll()
            report.scheduler_back = self._outage.answered()
            self.store.set_last_poll(self.key, time.time())
            report.polled = len(jobs)
            seen = {j.job_id: j for j in jobs}
            report.maintenance = await self._maintenance.maybe_read(seen)
            report.changed |= bool(self._jobs.adopt_unknown(seen))  # another cockpit's, on the same study
            report.changed |= self._jobs.update_queued(seen)
            report.finished = await self._jobs.settle_departed(set(seen), self._following())
            report.changed |= bool(report.finished)
            if self.follow:
                report.ingested_metrics = await self._live.follow()
            await self._check_space(report)
            if self.submitting and not self._disk.paused and time.monotonic() >= self._retry_at:
                later: list[SubmitLater] = []
                plan = self.plan()
                if not self._preflight.passed(self._scope):  # something to submit start() did not see: its preflight first
                    await self.ensure_preflight(plan)
                report.submitted = await submit_more(
                    self._scope, plan, report.refused, cap=self.pace(), later=later, force=self.force,
                    baseline_first=self.baseline_first, hooks=self.hooks, reconcile=self.reconcile,
                )
                await self._wait_or_go(later, bool(report.submitted))
            report.waiting = self.waiting
            report.changed |= bool(report.submitted or report.refused)
            self._record_problems()
        except SchedulerUnreachable as exc:  # its silence is no news of the jobs: ask again, backing off
            return self._unanswered(report, exc, asked_at)
        except (ConnectionLost, OSError) as exc:
            self.store.add_problem(self.key, "connection", str(exc))
            report.changed = True
        except BackendError as exc:  # e.g. the controller does not answer: try again next tick
            self.store.add_problem(self.key, "scheduler", str(exc))
            report.changed = True
        self.interval_s = self.interval.next(list(seen.values()), report.changed)
        return report

    async def _check_space(self, report: TickReport) -> None:
        """Pause submitting on a full work directory, resume once space is freed: after a job ended with
        exit 5, on every tick while paused, and before a round that would submit (cockpit/run/disk_pause.py)."""
        was = self._disk.paused
        ended_full = self._disk.hit(report.finished)
        if ended_full or was:
            await self._disk.check(ended_full=ended_full)
        elif time.monotonic() >= self._retry_at and len(self.store.active_jobs(self.key)) < self.pace() \
                and self.plan().to_submit:
            await self._disk.check(ended_full=False)
        live = self.store.live.setdefault(self.study.name, LiveStatus())
        if self._disk.paused:
            self.waiting = live.waiting = self._disk.line
        elif was:
            self.waiting = live.waiting = ""
        if self._disk.paused or was:
            report.disk = self._disk.event()
            report.changed = True

    def _unanswered(self, report: TickReport, exc: SchedulerUnreachable, asked_at: float | None = None) -> TickReport:
        """An unanswered poll (cockpit/run/outage.py): no state changed; the next poll after a back-off."""
        self.interval_s = self._outage.unanswered_poll(str(exc), self.interval.fast_s, asked_at)
        report.scheduler = self._outage.words
        report.waiting = self.waiting
        return report

    def pace(self) -> int:
        """The study's jobs at once: its max_concurrent_jobs, else what the site's limits allow (submission.pace)."""
        return pace(self.study.cluster.max_concurrent_jobs, self.limits, len(self.store.active_jobs(self.key)))

    async def _wait_or_go(self, later: list[SubmitLater], submitted: bool) -> None:
        """After a "not now" refusal, wait with back-off (5 s doubling to 2 min) and say for which limit, with
        the user's jobs against it; a submit that goes through ends the wait."""
        live = self.store.live.setdefault(self.study.name, LiveStatus())
        if later:
            self.limits = await self.backend.user_limits() or self.limits
            words = self.limits.words(later[0].limit) if self.limits else later[0].limit
            self._backoff_s = min(MAX_BACKOFF_S, self._backoff_s * 2 or MIN_BACKOFF_S)
            self._retry_at = time.monotonic() + self._backoff_s
            if words != self.waiting:
                self.store.add_problem(self.key, "waiting", f"{words}: submitting again in {self._backoff_s:g} s")
            self.waiting = live.waiting = words
        else:
            self.waiting = live.waiting = ""
            self._backoff_s = 0.0

    def _following(self) -> LiveFiles | None:
        """The live files to read to the end when a job departs (None when the runner does not follow)."""
        return self._live if self.follow else None

    def _record_problems(self) -> None:
        for p in self.backend.take_problems():
            self.store.add_problem(self.key, p.source, f"{p.message}: {p.line[:200]!r}")

    # -- results and control --------------------------------------------------------------------------
    def scaling_table(self) -> pd.DataFrame:
        from cockpit.forecast.analysis import scaling_table

        return scaling_table(self.store.results(self.key).values())

    def done(self) -> bool:
        return not self.store.active_jobs(self.key) and not self.pending_configs()

    async def run(self, *, timeout_s: float | None = None, on_tick: Callable[[TickReport], Any] | None = None,
                  stop: asyncio.Event | None = None) -> None:
        """Tick until every configuration has a result or a final failure (or the timeout passes); while not
        ``submitting``, until no job is in flight. ``stop``: set, the loop returns after its current tick."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with JobWatch(self.backend) as watch:
            while True:
                watch.clear()
                report = await self.tick()
                if on_tick is not None:
                    on_tick(report)
                if self.done() or (not self.submitting and not self.store.active_jobs(self.key)):
                    return
                if stop is not None and stop.is_set():
                    return
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError(f"study {self.study.name!r} not finished after {timeout_s} s")
                await watch.pause(self.interval_s, stop)

    async def cancel(self, config_id: str) -> None:
        job = self.store.latest_jobs(self.key).get(config_id)
        if job is None or not job.job_id or job.state not in ACTIVE_STATES:
            raise ValueError(f"configuration {config_id} has no active job to cancel")
        await self.backend.cancel(job.job_id)

    async def close(self) -> None:
        await self._live.close()
        await self.backend.close()
