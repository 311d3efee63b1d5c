"""Building a study's snapshot from its store: what each configuration's state, progress and ETA read.

The rules, in one place:
- state: "completed" when a valid result exists; a result that is not completed reads "failed" unless a
  newer job is active; else the latest job's state, or "not_submitted";
- progress: the latest metrics step over the run's total steps (1.0 once completed);
- ETA: the steps left times the run's seconds per step so far (train_time_s / step);
- a result row that does not parse keeps its row, with a verdict pointing at the problems line.
The numbers (speedup, efficiency, verdicts) are cockpit.forecast.analysis over the results, cached here until a
result is added or replaced (nothing derived is stored).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from cockpit.figures.run_files import unreadable, unreadable_words, with_local_run_files
from cockpit.forecast.analysis import AnalysisCache
from cockpit.launch.maintenance import Reservation, pending_words, waiting_for_maintenance
from cockpit.store.ledger import JobRecord, LiveStatus
from cockpit.store.snapshot import (
    ACTIVE_STATES,
    ConfigRow,
    GpuSeries,
    JobRow,
    MetricPoint,
    StudySnapshot,
    count_states,
)
from cockpit.store.telemetry import finite as _f
from cockpit.study.changes import Change, changes_words, run_changes

if TYPE_CHECKING:
    from cockpit.study.spec import Study

UNREADABLE_VERDICT = "result row is not valid JSON; see the problems line to re-collect it"


class SnapshotSource(Protocol):
    """What building a snapshot reads of a store (cockpit.store.StudyStore has all of it; named here so
    this module needs no import of the store, which builds its snapshots through it)."""

    live: dict[str, LiveStatus]

    def reading(self) -> AbstractContextManager[None]: ...
    def study_key(self, name: str) -> int: ...
    def study_settings(self, study: int) -> tuple[str, float | None, float | None, str]: ...
    def configs(self, study: int) -> list[dict[str, Any]]: ...
    def jobs(self, study: int, *, where: str = "", args: Sequence[Any] = ()) -> list[JobRecord]: ...
    def results(self, study: int) -> dict[str, dict[str, Any]]: ...
    def results_stamp(self, study: int) -> tuple: ...
    def unreadable_results(self, study: int) -> dict[str, str]: ...
    def result_problems(self, study: int) -> list[str]: ...
    def problems(self, study: int, limit: int = 50) -> list[str]: ...
    def node_hours_used(self, study: int) -> float: ...
    def curve(self, study: int, config_id: str, limit: int) -> list[MetricPoint]: ...
    def gpu_series(self, study: int, config_id: str, *, since: float) -> list[GpuSeries]: ...
    def log_tail(self, study: int, config_id: str, max_lines: int = 200) -> list[str]: ...


class SnapshotBuilder:
    """Builds snapshots of one store's studies, keeping the analysis of their results between builds."""

    def __init__(self) -> None:
        self.analysis = AnalysisCache()

    def build(self, store: SnapshotSource, study_name: str, *, metrics_points: int = 200,
              gpu_window_s: float = 300.0, now: float | None = None) -> StudySnapshot:
        """Everything the screens draw, as plain dataclasses (see cockpit.store.snapshot), from one look at the
        store (a browsed file is read as it is now, and every query sees the same state)."""
        now = time.time() if now is None else now
        with store.reading():
            key = store.study_key(study_name)
            cluster, budget, last_poll, _ = store.study_settings(key)
            configs = store.configs(key)
            jobs = store.jobs(key)
            results = store.results(key)
            bad = store.unreadable_results(key)
            run_dirs = {c["config_id"]: c["run_dir"] for c in configs}
            analysis = self.analysis.rows(key, store.results_stamp(key),
                                          lambda: with_local_run_files(results.values(), run_dirs))
            latest = {j.config_id: j for j in jobs}
            metrics: dict[str, list[MetricPoint]] = {}
            gpus: list[GpuSeries] = []
            rows: list[ConfigRow] = []
            for c in configs:
                cid = c["config_id"]
                job = latest.get(cid)
                points = store.curve(key, cid, metrics_points) if job is not None else []
                if points:
                    metrics[cid] = points
                if job is not None and job.state in ("running", "completing"):
                    gpus.extend(store.gpu_series(key, cid, since=now - gpu_window_s))
                row = config_row(c, job, results.get(cid), analysis.get(cid, {}), points)
                rows.append(replace(row, verdict=UNREADABLE_VERDICT) if cid in bad else row)
            private = unreadable(run_dirs)  # another account's run directories: said once, first
            problems = ([unreadable_words(private)] if private else []) + store.result_problems(key) + store.problems(key)
            used = store.node_hours_used(key)
        live = store.live.get(study_name, LiveStatus())
        return StudySnapshot(
            study=study_name,
            cluster=live.cluster or cluster,
            connection=live.connection,
            connection_detail=" · ".join(x for x in (live.scheduler, live.detail,
                                                       live.waiting and f"waiting: {live.waiting}") if x),
            scheduler=live.scheduler,
            maintenance=live.maintenance,
            waiting=live.waiting,
            taken_at=now,
            last_poll_at=last_poll,
            configs=rows,
            jobs=[maintenance_aware(job_row(j), live.reservations) for j in jobs],
            metrics=metrics,
            gpus=gpus,
            counts=count_states(rows),
            node_hours_used=used,
            node_hours_budget=budget,
            problems=problems,
            log_reader=lambda cid, n: store.log_tail(key, cid, n),
        )


def job_row(j: JobRecord) -> JobRow:
    return JobRow(
        config_id=j.config_id, job_id=j.job_id, state=j.state, submitted_at=j.submitted_at,
        started_at=j.started_at, ended_at=j.ended_at, elapsed_s=j.elapsed_s, time_limit_s=j.time_limit_s,
        nodes=j.nodes, node_list=j.nodelist, reason=j.reason, exit_code=j.exit_code, attempt=j.attempt,
        held=bool(j.held),
    )


def maintenance_aware(row: JobRow, reservations: Sequence[Reservation]) -> JobRow:
    """A job pending for a maintenance reservation reads "waiting: maintenance until 16:30 (name)", never as
    a problem (Slurm's reason "ReqNodeNotAvail, Reserved for maintenance")."""
    if row.state not in ("pending", "requeued") or not waiting_for_maintenance(row.reason):
        return row
    return replace(row, reason=f"waiting: {pending_words(reservations, None)}")


def config_row(c: dict[str, Any], job: JobRecord | None, res: dict[str, Any] | None, an: dict[str, Any],
               points: list[MetricPoint]) -> ConfigRow:
    """One configuration's row: its state, progress and ETA by the rules above, its result's figures."""
    completed = res is not None and res.get("status") == "completed"
    state = "completed" if completed else (job.state if job else "not_submitted")
    if res is not None and not completed and (job is None or job.state not in ACTIVE_STATES):
        state = "failed"
    timing = (res or {}).get("timing") or {}
    throughput = (res or {}).get("throughput") or {}
    last = points[-1] if points else None
    progress = eta = None
    total = c.get("total_steps")
    if last is not None and total and not completed:
        progress = min(1.0, last.step / total)
        if last.train_time_s and last.step > 0:
            eta = max(0.0, (total - last.step) * last.train_time_s / last.step)
    return ConfigRow(
        config_id=c["config_id"], group_id=c["group_id"], is_baseline=c["is_baseline"], values=c["values"],
        state=state, job_id=job.job_id if job else None, workers=c["workers"],
        train_time_s=_f(timing.get("train_time_s")), tokens_per_s=_f(throughput.get("tokens_per_s")),
        speedup=_f(an.get("speedup")), efficiency=_f(an.get("efficiency")), overhead_s=_f(an.get("overhead_s")),
        work_ratio=_f(an.get("work_ratio")), t_same_work_s=_f(an.get("t_same_work_s")),
        verdict=an.get("verdict") or an.get("note") or "", explanation=an.get("explanation") or "",
        quality_metric=an.get("quality_metric"), quality=_f(an.get("quality")),
        quality_change=_f(an.get("quality_change")),
        progress=1.0 if completed else progress, eta_s=eta,
        last_step=last.step if last else None, last_loss=last.loss if last else None, result=res,
        analysis=an or None,
    )


def with_changes(snapshot: StudySnapshot, study: Study,
                 cache: dict[tuple[str, str], tuple[Change, ...] | None] | None = None) -> StudySnapshot:
    """The snapshot with every completed configuration whose run ran other settings than `study` now asks
    marked "changed" (cockpit.study.changes), its verdict naming the keys: a view never shows it as done.
    ``cache``: kept by the caller between snapshots, by config id and the result's finish time."""
    cache = {} if cache is None else cache
    by_id = {cfg.config_id: cfg for cfg in study.matrix()}
    rows = []
    for row in snapshot.configs:
        cfg = by_id.get(row.config_id)
        if cfg is not None and row.state == "completed" and row.result:
            stamp = (row.config_id, str(row.result.get("finished_at")))
            if stamp not in cache:
                cache[stamp] = run_changes(study, cfg, row.result)
            found = cache[stamp]
            if found:
                words = changes_words(found)
                row = replace(row, state="changed", verdict=f"changed: {words}",
                              explanation=f"changed since it ran: {words}; `cockpit run --rerun-changed` runs it again")
        rows.append(row)
    return replace(snapshot, configs=rows, counts=count_states(rows))
