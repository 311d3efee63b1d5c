"""Run a study's preflight through its Backend: submit each job, wait for all, read what they wrote.

Works the same over Slurm (sbatch over the one SSH connection) and on this machine (the local executor
runs the same `hlm-train preflight` under torchrun in seconds). `on_event` receives one line per step, for
the TUI's progress and the headless lines.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from cockpit.forecast.disk import footprint
from cockpit.launch import maintenance
from cockpit.launch.backend import BackendError, JobWatch
from cockpit.launch.registry import backend_kind
from cockpit.preflight import checks, jobs
from cockpit.preflight.checks import JobFindings, JobOutcome, PreflightReport
from cockpit.run.submission import pace, running_at_once
from cockpit.store.recorded import study_plan
from cockpit.study.sites import site_for
from runcontract.contract import PREFLIGHT_ENV_FILE, PREFLIGHT_FILE

if TYPE_CHECKING:
    from cockpit.launch.backend import Backend, JobInfo
    from cockpit.study.spec import Study

LOG_TAIL_LINES = 3


class PreflightTimeout(TimeoutError):
    """The preflight's jobs did not end in time (they are cancelled; the message says which)."""


async def run_preflight(study: Study, backend: Backend, *, on_event: Callable[[str], None] | None = None,
                        poll_s: float = 2.0, timeout_s: float | None = None) -> PreflightReport:
    """Submit every preflight job, wait until each has ended, and judge what they found."""
    say = on_event or (lambda _line: None)
    wanted = jobs.preflight_jobs(study)
    qos_minutes, qos_source = await backend.qos_limits()
    limits = await backend.user_limits()
    found: dict[int, JobFindings] = {}
    for job in wanted:
        config = jobs.job_config(study, job, await backend.study_dir())
        f = JobFindings(qos_minutes=qos_minutes, qos_source=qos_source)
        try:
            f.job_id, f.directory, f.log_paths = await backend.submit_preflight(job, config)
            say(f"preflight {job.name}: submitted job {f.job_id}")
        except Exception as exc:  # every refusal is the finding of this job, the others still run
            f.submit_error = str(exc) or type(exc).__name__
            say(f"preflight {job.name}: not submitted: {f.submit_error}")
        found[job.nodes] = f
    await _wait(backend, wanted, found, say, poll_s, timeout_s)
    outcomes = []
    gpus, laptop, figures = expects_gpus(study), jobs.laptop_versions(), _site_figures(study)  # once for all jobs
    fp = footprint(study)
    need = checks.Need(fp.total_bytes, fp.words())
    for job in wanted:
        f = found[job.nodes]
        if f.job_id and f.directory:
            await _collect(backend, f)
        rows = checks.evaluate(study, job, f, expect_gpus=gpus, laptop=laptop, link_figures=figures, need=need,
                               place=backend.place_words)
        outcomes.append(JobOutcome(job.name, job.nodes, job.gpus_per_node, f.job_id, f.state, f.log_paths, rows))
    if outcomes:  # the site's pace is the study's, not a job's: once, in the first table
        plan = study_plan(study, cores=backend.cores_per_node)
        speed = pace(study.cluster.max_concurrent_jobs, limits, 0)
        running = running_at_once(speed, limits)
        site = None if limits is None else checks.SiteLimits(limits.max_submit, limits.max_running, limits.queued)
        outcomes[0].checks.append(checks.pace_check(study, site, speed, running, plan.duration_words(running),
                                                    len(plan.to_submit)))
        outcomes[0].checks.append(await _space(need, backend))
        if backend.has_scheduler:
            outcomes[0].checks.append(await maintenance_check(study, backend))
    report = PreflightReport(study.name, jobs.study_digest(study), time.time(), outcomes, _links(found),
                             _shared_host(found))
    say(f"preflight {'passed' if report.passed else 'FAILED'}: {len(outcomes)} job(s)")
    return report


async def _space(need: checks.Need, backend: Backend) -> checks.Check:
    """The work directory's space (the site's storage_tool) against the study's footprint."""
    try:
        storage = await backend.storage()
    except BackendError as exc:
        return checks.space_check(need, None, f"could not be read: {exc}")
    if storage is None:
        return checks.space_check(need, None, "the site profile reads none (storage_tool = none)")
    return checks.space_check(need, storage.free_bytes, storage.words())


async def maintenance_check(study: Study, backend: Backend, now: float | None = None) -> checks.Check:
    """The maintenance reservations (``scontrol show reservation``, MAINT flag) that the study's time limit
    crosses: when each starts and ends, and the time limit that ends before it (a warning: the jobs still
    run, after it)."""
    now = time.time() if now is None else now
    try:
        found = await backend.reservations()
    except BackendError as exc:
        return checks.Check("maintenance", checks.NOT_RUN, f"reservations could not be read: {exc}")
    c = study.cluster
    crossed = maintenance.crossing(found, c.time_limit_minutes * 60.0, c.own.get("partition"), now)
    if not crossed:
        ahead = [r for r in found if r.maintenance and r.end > now]
        later = (f"; later: {', '.join(maintenance.window_words(r, now) for r in ahead)}") if ahead else ""
        return checks.Check("maintenance", checks.PASS, f"no maintenance reservation within time limit "
                            f"{c.time_limit}{later}")
    first = crossed[0]
    fits = maintenance.fitting_minutes(first, now)
    return checks.Check("maintenance", checks.WARN, maintenance.advice(first, c.time_limit_minutes * 60.0, now),
                        f"time_limit <= {maintenance.minutes_words(fits)}" if fits else "",
                        f"set [cluster].time_limit = \"{maintenance.minutes_words(fits)}\" if the runs fit in it, "
                        "or leave it: the jobs wait for the maintenance to end (never a failure)" if fits else
                        "leave it: the jobs wait for the maintenance to end (never a failure)")


async def _wait(backend: Backend, wanted: list[jobs.PreflightJob], found: dict[int, JobFindings],
                say: Callable[[str], None], poll_s: float, timeout_s: float | None) -> None:
    pending = {f.job_id: n for n, f in found.items() if f.job_id}
    names = {job.nodes: job.name for job in wanted}
    seen: dict[str, str] = {}
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    with JobWatch(backend) as watch:
        while pending:
            watch.clear()
            if await _settle(backend, pending, names, seen, found, say):
                return
            if deadline is not None and time.monotonic() > deadline:
                for job_id in pending:
                    await backend.cancel(job_id)
                raise PreflightTimeout(f"preflight jobs {', '.join(pending)} did not end within {timeout_s:g} s "
                                       "(cancelled); the queue may be long: run `cockpit preflight` again later")
            await watch.pause(poll_s)


async def _settle(backend: Backend, pending: dict[str, int], names: dict[int, str], seen: dict[str, str],
                  found: dict[int, JobFindings], say: Callable[[str], None]) -> bool:
    """One look at the pending jobs: a line per change of state, the final ones taken out; True when none is left."""
    states: dict[str, JobInfo] = await backend.final_states(list(pending))
    for job_id, info in states.items():
        nodes = pending[job_id]
        if seen.get(job_id) != str(info.state):  # one line per change of state
            seen[job_id] = str(info.state)
            say(f"preflight {names[nodes]}: job {job_id} {info.state}")
        if info.state.is_final:
            found[nodes].state = str(info.state)
            del pending[job_id]
    return not pending


async def _collect(backend: Backend, f: JobFindings) -> None:
    """The job's env and preflight files, and the last lines of its error log for a failure's message."""
    f.env, _ = checks.parse_json(await backend.read_file(f"{f.directory}/{PREFLIGHT_ENV_FILE}"), "env")
    f.facts, _ = checks.parse_json(await backend.read_file(f"{f.directory}/{PREFLIGHT_FILE}"), "facts")
    tails = []
    for path in f.log_paths:
        text = (await backend.read_file(path)).decode("utf-8", "replace")
        lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith(("*", "hlm: job"))]
        tails += lines[-LOG_TAIL_LINES:]
    f.log_tail = " / ".join(tails[-LOG_TAIL_LINES:])


def expects_gpus(study: Study) -> bool:
    """Whether the study's workers are GPUs: [train].device says so, or "auto" on a GPU partition."""
    device = study.train.get("device", "auto")
    if device in ("cpu", "cuda"):
        return device == "cuda"
    if not backend_kind(study).has_scheduler:
        return False
    site = site_for(study)
    return (study.cluster.own.get("partition") or site.default_partition or "") in site.gpu_partitions


def _site_figures(study: Study) -> dict[str, float]:
    """The site profile's bus bandwidth per link kind in GB/s (0 where the profile has none)."""
    if not backend_kind(study).has_scheduler:
        return {}
    site = site_for(study)
    return {"intra_node": site.intra_node_busbw_gbs, "inter_node": site.inter_node_busbw_gbs}


def _shared_host(found: dict[int, JobFindings]) -> str:
    """A host that carried several nodes of one preflight job (checks.shared_host), else ""."""
    return next((host for f in found.values() if (host := checks.shared_host((f.facts or {}).get("ranks") or []))), "")


def _links(found: dict[int, JobFindings]) -> dict[str, float]:
    """The measured bus bandwidth per link kind (bytes/s), for the prediction."""
    out: dict[str, float] = {}
    for f in found.values():
        comm = (f.facts or {}).get("comm") or {}
        for kind, link in (comm.get("links") or {}).items():
            bw = link.get("busbw_bytes_per_s")
            if isinstance(bw, int | float) and bw > 0:
                out[kind] = float(bw)
    return out
