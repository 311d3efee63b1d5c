"""The study runner: drive a study's matrix to completion through any Backend, crash-safely.

Each tick: one poll of the backend (one ``squeue`` for Slurm), state changes into the store, one batched
final-state query for jobs that left the queue, result files collected, live files followed, then new
submissions within ``max_concurrent_jobs`` and the node-hour budget. The order of writes is what makes a
restart safe at any instant: intent committed -> sbatch -> job id committed; on start-up
:meth:`StudyRunner.reconcile` matches intents and unknown jobs with what the cluster shows (job names and
comments) and with the run directories, so nothing is submitted twice and no result is lost.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cockpit.backend import (
    AdaptiveInterval,
    Backend,
    BackendError,
    ConnectionLost,
    ConnectionState,
    JobInfo,
    OutcomeUnknown,
)
from cockpit.follow import Chunk, FileCursor, Follower, FollowSpec
from cockpit.plan import Plan, study_plan
from cockpit.snapshot import ACTIVE_STATES
from cockpit.store import JobRecord, LiveStatus, StudyStore
from trainer import rundir

if TYPE_CHECKING:
    import pandas as pd

    from cockpit.preflight.checks import PreflightReport
    from cockpit.spec import Configuration, Study

log = logging.getLogger(__name__)

class BudgetExceeded(Exception):
    """The study's estimate exceeds the node-hours left; the message says by how much."""


class PreflightFailed(Exception):
    """The study file's preflight failed: nothing is submitted. ``report`` holds every job's table."""

    def __init__(self, report: PreflightReport) -> None:
        from cockpit.preflight.table import failure_summary

        super().__init__(failure_summary(report))
        self.report = report


@dataclass
class TickReport:
    """What one tick did (for headless progress lines and tests)."""

    submitted: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (config id, why) of submits refused this tick
    finished: list[str] = field(default_factory=list)
    changed: bool = False
    polled: int = 0
    ingested_metrics: int = 0


def _config_of_name(name: str, prefix: str) -> str | None:
    return name[len(prefix):] if name.startswith(prefix) and len(name) > len(prefix) else None


def parse_result(data: bytes, where: str) -> dict[str, Any] | None:
    """A result.json read from a backend, validated like trainer.rundir.read_result (None if unusable)."""
    try:
        res = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        log.warning("%s: result.json is not valid JSON", where)
        return None
    if not isinstance(res, dict) or not isinstance((res.get("timing") or {}).get("train_time_s"), int | float):
        log.warning("%s: result.json lacks timing.train_time_s", where)
        return None
    return res


def _requeue_aware(before: str, polled: str, reason: str) -> tuple[str, str]:
    """A job Slurm put back in the queue (node failure, preemption, its own time-limit checkpoint) is
    `pending` again under the same id: show it as `requeued`, with why, until it runs again."""
    if polled == "pending" and before in ("running", "completing", "requeued"):
        why = "requeued by Slurm after it had started" + (f"; now waiting: {reason}" if reason else "")
        return "requeued", why
    return polled, reason


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
        self.baseline_first = baseline_first  # hold a group's N-worker runs until its baseline predicts them
        self.interval = interval or AdaptiveInterval()
        self.follow = follow
        self.hooks = hooks or {}
        self.preflight = preflight  # start() submits only once this study file's preflight has passed
        self.preflight_listeners: list[Callable[[str], None]] = []  # its progress lines
        self.preflight_report_listeners: list[Callable[[PreflightReport], None]] = []  # each one it runs
        self.preflight_report: PreflightReport | None = None
        self.key = 0
        self.configs: dict[str, Configuration] = {c.config_id: c for c in study.runnable()}
        self.name_prefix = f"{study.name}-"
        self._run_dirs: dict[str, str] = {}
        self._cursors: dict[str, FileCursor] = {}
        self._follower: Follower | None = None
        self.started = False
        self.interval_s = self.interval.fast_s
        self._listening: Callable[[ConnectionState, str], None] | None = None

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
        rows = []
        for cfg in self.configs.values():
            self._run_dirs[cfg.config_id] = await self.backend.run_dir(cfg)
            rows.append({
                "config_id": cfg.config_id, "group_id": cfg.group_id, "is_baseline": cfg.is_baseline,
                "workers": cfg.workers, "nodes": cfg.nodes, "values": cfg.values(),
                "run_dir": self._run_dirs[cfg.config_id], "total_steps": total_steps,
            })
        self.store.upsert_configs(self.key, rows)
        await self.reconcile()
        await self.ensure_preflight()
        self.check_budget()
        self.started = True

    async def ensure_preflight(self) -> None:
        """With ``preflight`` set: the study file's passed preflight from the store, else run one now and
        keep it there; PreflightFailed when it fails (nothing is submitted)."""
        if not self.preflight:
            return
        from cockpit.preflight import jobs, record
        from cockpit.preflight.run import run_preflight

        digest = jobs.study_digest(self.study)
        kept = record.latest(self.store, self.study.name, digest)
        if kept is not None and kept.passed:
            self.preflight_report = kept
            self._preflight_event(f"preflight of this study file ({digest}) passed before: not run again")
            return
        report = await run_preflight(self.study, self.backend, on_event=self._preflight_event)
        record.save(self.store, self.key, report)
        self.preflight_report = report
        for show in self.preflight_report_listeners:
            show(report)
        if not report.passed:
            raise PreflightFailed(report)

    def _preflight_event(self, line: str) -> None:
        for listener in self.preflight_listeners:
            listener(line)

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
        """What is still to submit and what it costs (cockpit.plan: the same as `cockpit plan` and the TUI)."""
        return study_plan(self.study, self.store, key=self.key, resubmit_failed=self.resubmit_failed,
                          cluster=self.backend.label, cores=self.backend.cores_per_node)

    def pending_configs(self) -> list[Configuration]:
        """Configurations still to submit: no valid result, no active job, not failed (unless resubmitting)."""
        return [self.configs[line.config_id] for line in self.plan().to_submit]

    def check_budget(self) -> None:
        plan = self.plan()
        if plan.over_budget and not self.force:
            raise BudgetExceeded(plan.budget_message())

    # -- reconciliation -------------------------------------------------------------------------------
    async def reconcile(self) -> None:
        """Match the store with the cluster after a (re)start: adopt jobs, settle intents, collect results."""
        jobs = await self.backend.poll()
        ours = {j.job_id: j for j in jobs if self._config_of(j) in self.configs}
        known = {j.job_id for j in self.store.jobs(self.key) if j.job_id}
        by_config: dict[str, list[JobInfo]] = {}
        for j in ours.values():
            by_config.setdefault(self._config_of(j) or "", []).append(j)
        # intents whose sbatch answer was never recorded
        for row in self.store.jobs(self.key, where="state = 'submitting'"):
            candidates = [j for j in by_config.get(row.config_id, []) if j.job_id not in known]
            if candidates:
                job = candidates[0]
                self.store.adopt(row.id, job.job_id, job.state.value)
                known.add(job.job_id)
                self.store.add_problem(self.key, "reconcile",
                                       f"{row.config_id}: adopted job {job.job_id} submitted before a restart")
            else:
                # not queued: either sbatch never ran, or the job already ended; the run directory decides
                exit_rec = await self._read_exit(row.config_id) if row.config_id in self._run_dirs else None
                ended_at = exit_rec.get("time") if exit_rec is not None else None
                fresh = isinstance(ended_at, int | float) and ended_at >= row.intent_at
                if exit_rec is not None and fresh:
                    self.store.set_job_state(row.id, "failed", reason=f"ended while the cockpit was down: exit.json "
                                             f"code {exit_rec.get('code')}", exit_code=exit_rec.get("code"), ended=True)
                else:
                    self.store.set_job_state(row.id, "lost", reason="submission not found on the cluster", ended=True)
        # jobs on the cluster the store never heard of (store lost or older cockpit)
        for job in ours.values():
            if job.job_id not in known:
                cid = self._config_of(job)
                if cid is not None:
                    self.store.add_adopted_job(self.key, cid, job.job_id, job.state.value)
        # jobs the store thinks active but the cluster no longer queues: resolved by the normal tick path
        await self._settle_departed(set(ours))
        # results on disk the store lacks (a crash between the job's end and the collection)
        await self._collect_missing_results()

    def _config_of(self, job: JobInfo) -> str | None:
        cid = job.extra.get("config_id") if job.extra else None
        return cid or _config_of_name(job.name, self.name_prefix)

    async def _collect_missing_results(self) -> None:
        latest = self.store.latest_jobs(self.key)
        todo = [
            cid for cid in self.configs
            if not self.store.has_valid_result(self.key, cid)
            and not (cid in latest and latest[cid].state in ACTIVE_STATES)
        ]
        listed = await self.backend.list_run_dirs() if todo else None
        if listed is not None:  # one round trip instead of one failed read per configuration
            existing = set(listed)
            todo = [cid for cid in todo if cid in existing]
        gate = asyncio.Semaphore(32)  # bounded: an sftp-server limits open handles

        async def read(cid: str) -> dict[str, Any] | None:
            async with gate:
                return await self._read_result(cid)

        found = await asyncio.gather(*(read(cid) for cid in todo))
        for cid, res in zip(todo, found, strict=True):
            if res is not None:
                job = latest.get(cid)
                self.store.put_result(self.key, cid, res, job.job_id if job else None)
                if job is not None and res.get("status") == "completed":
                    self.store.set_job_state(job.id, "completed", ended=True)

    async def _read_result(self, cid: str) -> dict[str, Any] | None:
        path = f"{self._run_dirs[cid]}/{rundir.RESULT_FILE}"
        data = await self.backend.read_file(path, 0)
        return parse_result(data, path) if data else None

    async def _read_exit(self, cid: str) -> dict[str, Any] | None:
        data = await self.backend.read_file(f"{self._run_dirs[cid]}/{rundir.EXIT_FILE}", 0)
        try:
            value = json.loads(data) if data else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None
        return value if isinstance(value, dict) else None

    # -- one tick -------------------------------------------------------------------------------------
    async def tick(self) -> TickReport:
        """Poll, settle, collect, follow, submit. Never raises for a dropped connection: it reports it."""
        if not self.started:
            await self.start()
        report = TickReport()
        seen: dict[str, JobInfo] = {}
        try:
            if self.store.jobs(self.key, where="state = 'submitting'"):
                await self.reconcile()  # an sbatch whose answer was lost with the connection
            jobs = await self.backend.poll()
            self.store.set_last_poll(self.key, time.time())
            report.polled = len(jobs)
            seen = {j.job_id: j for j in jobs}
            with self.store.tx():  # one commit for the whole queue
                for row in self.store.active_jobs(self.key):
                    if row.job_id and row.job_id in seen:
                        j = seen[row.job_id]
                        state, reason = _requeue_aware(row.state, j.state.value, j.reason)
                        changed = self.store.set_job_state(
                            row.id, state, reason=reason, elapsed_s=j.elapsed_s,
                            time_limit_s=j.time_limit_s, nodes=j.nodes, nodelist=j.nodelist,
                            held=j.extra.get("held") == "True" if j.extra else False,
                        )
                        report.changed |= changed
            report.finished = await self._settle_departed(set(seen))
            report.changed |= bool(report.finished)
            if self.follow:
                report.ingested_metrics = await self._follow()
            report.submitted = await self._submit_more(report.refused)
            report.changed |= bool(report.submitted or report.refused)
            self._record_problems()
        except (ConnectionLost, OSError) as exc:
            self.store.add_problem(self.key, "connection", str(exc))
            report.changed = True
        except BackendError as exc:  # e.g. the controller does not answer: try again next tick
            self.store.add_problem(self.key, "scheduler", str(exc))
            report.changed = True
        self.interval_s = self.interval.next(list(seen.values()), report.changed)
        return report

    async def _settle_departed(self, queued: set[str]) -> list[str]:
        """Jobs active in the store but absent from the queue: final state in one batch, then results."""
        departed = [r for r in self.store.active_jobs(self.key) if r.job_id and r.job_id not in queued]
        if not departed:
            return []
        finals = await self.backend.final_states([r.job_id for r in departed if r.job_id])
        finished = []
        for row in departed:
            info = finals.get(row.job_id or "")
            cid = row.config_id
            if self.follow:
                await self._final_follow(cid, row.job_id or "")
            res = await self._read_result(cid) if cid in self._run_dirs else None
            if res is not None:
                self.store.put_result(self.key, cid, res, row.job_id)
            if info is not None and info.state.is_final:
                state, reason = info.state.value, info.reason
                if state == "completed" and (res is None or res.get("status") != "completed"):
                    state, reason = "failed", "job completed but left no valid result.json"
                if state != "completed" and cid in self._run_dirs:
                    exit_rec = await self._read_exit(cid)
                    if exit_rec is not None:
                        reason = "; ".join(filter(None, [reason, exit_reason(exit_rec)]))
                self.store.set_job_state(row.id, state, reason=reason, elapsed_s=info.elapsed_s, nodes=info.nodes,
                                         nodelist=info.nodelist, exit_code=info.exit_code, ended=True)
            elif info is not None and info.state.is_active:
                continue  # the controller still has it (e.g. requeued between squeue and scontrol)
            else:
                exit_rec = await self._read_exit(cid)
                if res is not None and res.get("status") == "completed":
                    state, reason = "completed", "from result.json"
                elif exit_rec is not None:
                    state, reason = "failed", exit_reason(exit_rec)
                else:
                    state, reason = "lost", "left the queue; no accounting record and no run-directory files"
                self.store.set_job_state(row.id, state, reason=reason, ended=True,
                                         exit_code=exit_rec.get("code") if exit_rec else None)
            finished.append(cid)
        return finished

    async def _submit_more(self, refused: list[tuple[str, str]]) -> list[str]:
        """Submit what the plan and the limits allow; returns the submitted config ids and appends each
        refused one with its reason to ``refused``."""
        cap = self.study.cluster.max_concurrent_jobs
        active = len(self.store.active_jobs(self.key))
        plan = self.plan()
        budget = plan.budget
        committed = plan.committed  # spent, plus what the queued and running jobs will spend
        submitted = []
        latest = self.store.latest_jobs(self.key)
        for line in plan.to_submit:
            cfg = self.configs[line.config_id]
            if active >= cap:
                break
            if self._foundation_unfinished(cfg, latest):
                continue  # a fine-tune starts from its foundation run's weights: wait for them
            if self.baseline_first and not cfg.is_baseline and self._unfinished(self.study.baseline_of(cfg), latest):
                continue  # --baseline-first: submitted once the baseline's result predicts its cost
            if budget is not None and not self.force:
                if committed + line.node_hours > budget + 1e-9:
                    self.store.add_problem(self.key, "budget", f"{cfg.config_id}: not submitted, node-hour budget reached")
                    break
            row = self.store.record_intent(self.key, cfg.config_id)
            self._hook("before_submit", cfg)
            try:
                job_id = await self.backend.submit(cfg)
            except OutcomeUnknown as exc:
                # outcome unknown: leave the intent; reconcile() resolves it by job name
                self.store.add_problem(self.key, "submit", f"{cfg.config_id}: {exc}")
                await self.reconcile()
                active = len(self.store.active_jobs(self.key))
                committed += line.node_hours  # it may be queued: count it
                continue
            except (BackendError, ValueError) as exc:
                # sbatch refused, or the upload failed before sbatch ran: nothing was queued
                self.store.record_submit_failed(row, str(exc))
                self.store.add_problem(self.key, "submit", f"{cfg.config_id}: {exc}")
                refused.append((cfg.config_id, str(exc)))
                continue
            self._hook("after_submit", cfg, job_id)
            self.store.record_submitted(row, job_id)
            submitted.append(cfg.config_id)
            active += 1
            committed += line.node_hours
        return submitted

    def _foundation_unfinished(self, cfg: Configuration, latest: dict[str, JobRecord]) -> bool:
        """True while the foundation run this fine-tune initialises from is in the study and still to come.

        A foundation run that ended without a result does not block: the fine-tune then starts from random
        weights and its result.json says so.
        """
        foundation = self.study.foundation_of(cfg)
        return foundation is not None and self._unfinished(foundation, latest)

    def _unfinished(self, cfg: Configuration, latest: dict[str, JobRecord]) -> bool:
        """True while `cfg` is in the study and still to come (not finished, not ended without a result)."""
        if cfg.config_id not in self.configs or self.store.has_valid_result(self.key, cfg.config_id):
            return False
        job = latest.get(cfg.config_id)
        return job is None or job.state in ACTIVE_STATES or job.state == "lost"

    def _hook(self, name: str, *args: Any) -> None:
        fn = self.hooks.get(name)
        if fn is not None:
            fn(*args)

    def _record_problems(self) -> None:
        for p in self.backend.take_problems():
            self.store.add_problem(self.key, p.source, f"{p.message}: {p.line[:200]!r}")

    # -- following ------------------------------------------------------------------------------------
    def _files_of(self, job_id: str) -> list[str]:
        return [rundir.METRICS_FILE, rundir.GPU_FILE, rundir.LOG_FILE, *self.backend.log_files(job_id)]

    def _cursor(self, cid: str, name: str) -> FileCursor:
        key = f"{cid}/{name}"
        cur = self._cursors.get(key)
        if cur is None:
            offset, bad = self.store.get_offset(self.key, cid, name)
            cur = self._cursors[key] = FileCursor(committed=offset, bad_lines=bad)
        return cur

    async def _follow(self) -> int:
        if self._follower is None:
            self._follower = self.backend.follower()
        specs = []
        for row in self.store.active_jobs(self.key):
            if row.state not in ("running", "completing") or not row.job_id or row.config_id not in self._run_dirs:
                continue
            for name in self._files_of(row.job_id):
                cur = self._cursor(row.config_id, name)
                specs.append(FollowSpec(f"{row.config_id}/{name}", f"{self._run_dirs[row.config_id]}/{name}",
                                        cur.expected))
        chunks = await self._follower.drain()
        n = self._ingest(chunks)
        await self._follower.update(specs)
        return n

    async def _final_follow(self, cid: str, job_id: str) -> None:
        """Read what the follower had not delivered yet once a job has ended, so no metrics are lost."""
        if self._follower is not None:
            self._ingest([c for c in await self._follower.drain()])
        for name in self._files_of(job_id):
            cur = self._cursor(cid, name)
            data = await self.backend.read_file(f"{self._run_dirs[cid]}/{name}", cur.expected)
            if data:
                self._ingest([Chunk(f"{cid}/{name}", cur.expected, data)])

    def _ingest(self, chunks: list[Chunk]) -> int:
        n = 0
        for ch in chunks:
            cid, _, name = ch.key.partition("/")
            cur = self._cursor(cid, name)
            if name.endswith(".jsonl"):
                fed = cur.feed_jsonl(ch)
                if fed is None:
                    continue
                records, bad = fed
                self.store.ingest(self.key, cid, name, records, cur.committed, bad)
                if bad:
                    self.store.add_problem(self.key, "follow", f"{cid}/{name}: skipped {bad} corrupt line(s) "
                                           f"({cur.bad_lines} so far)")
                if name == rundir.METRICS_FILE:
                    n += len(records)
            else:
                lines = cur.feed_text(ch)
                if lines is None:
                    continue
                self.store.add_log_lines(self.key, cid, lines)
                self.store.set_offset(self.key, cid, name, cur.committed, 0)
        return n

    # -- results and control --------------------------------------------------------------------------
    def scaling_table(self) -> pd.DataFrame:
        from cockpit.analysis import scaling_table

        return scaling_table(self.store.results(self.key).values())

    def done(self) -> bool:
        return not self.store.active_jobs(self.key) and not self.pending_configs()

    async def run(self, *, timeout_s: float | None = None, on_tick: Callable[[TickReport], Any] | None = None) -> None:
        """Tick until every configuration has a result or a final failure (or the timeout passes)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            report = await self.tick()
            if on_tick is not None:
                on_tick(report)
            if self.done():
                return
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"study {self.study.name!r} not finished after {timeout_s} s")
            await asyncio.sleep(self.interval_s)

    async def cancel(self, config_id: str) -> None:
        job = self.store.latest_jobs(self.key).get(config_id)
        if job is None or not job.job_id or job.state not in ACTIVE_STATES:
            raise ValueError(f"configuration {config_id} has no active job to cancel")
        await self.backend.cancel(job.job_id)

    async def close(self) -> None:
        if self._follower is not None:
            await self._follower.close()
        await self.backend.close()


def exit_reason(record: dict[str, Any]) -> str:
    """The trainer's own account of how it ended (exit.json), for the job's reason column."""
    detail = record.get("message") or record.get("reason") or ""
    return f"exit {record.get('code')}: {detail}".strip().rstrip(":")
