"""The Slurm controller away mid-study (stopped, then started again from its saved state), on the real test
Slurm over SSH: while squeue cannot answer, no job changes state in the store, the views say "Slurm not
answering since HH:MM", the polls back off; once it answers the study completes, every configuration run
exactly once (sacct), none lost, the job that was running and ended meanwhile counted once.

HLM_OUTAGE_S sets how long the controller stays away (default 20 s: several unanswered polls and their
back-off; the controller stays away at least until the job that was running has ended; bench/faults.py runs
the two-minute case)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from cockpit.commands.progress import PlainProgress
from cockpit.launch.backend import AdaptiveInterval
from cockpit.launch.slurm.backend import SlurmBackend
from cockpit.run.outage import MAX_POLL_S
from cockpit.run.runner import StudyRunner, TickReport
from cockpit.store import StudyStore
from cockpit.study.spec import load_study
from cockpit.tui.model import queue_site_line
from runcontract.contract import RESULT_FILE
from tests.infra.slurm_fixtures import SLURM_SH

pytestmark = [pytest.mark.slurm, pytest.mark.sshd]
FAST = AdaptiveInterval(fast_s=0.3, running_s=0.6, slow_s=1.0)
FOUR = "window = [32, 40, 48, 56]"
OUTAGE_S = float(os.environ.get("HLM_OUTAGE_S", "20"))


def ctld(action: str) -> None:
    """Stop, start, pause or resume the test Slurm's controller alone (tests/infra/slurm.sh ctld)."""
    subprocess.run(["bash", str(SLURM_SH), "ctld", action], check=True, timeout=60)


def job_states(store: StudyStore, key: int) -> list[tuple]:
    """Every job row as the store has it, and every state change it recorded."""
    rows = [(j.config_id, j.attempt, j.job_id, j.state, j.reason, j.ended_at) for j in store.jobs(key)]
    changes = store.db.execute("SELECT COUNT(*) FROM job_states").fetchone()[0]
    return [*rows, ("state changes", changes)]


def sacct_jobs(slurm_cluster, job_name: str, since: float) -> list[str]:
    """The jobs Slurm's accounting has under this name since `since` (each submit is one)."""
    start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(since - 60))
    out = slurm_cluster.run(["sacct", "-X", "-n", "-P", "-S", start, "--name", job_name, "-o", "JobID,State"]).stdout
    return [line for line in out.splitlines() if line.strip()]


async def test_the_controller_away_mid_study_changes_nothing_and_the_study_completes(
        make_study, slurm_cluster, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("stopping the test Slurm's controller needs root")
    t0 = time.time()
    name = f"away-{uuid.uuid4().hex[:6]}"
    study = load_study(make_study(name, FOUR, steps=40, max_concurrent_jobs=2, cores_per_node=2))
    store = StudyStore(tmp_path / "store.sqlite")
    runner = StudyRunner(study, SlurmBackend.from_study(study, follow_interval_s=0.3), store, interval=FAST)
    reports: list[TickReport] = []
    try:
        for _ in range(600):  # until jobs are queued or running and others not yet submitted
            reports.append(await runner.tick())
            active = store.active_jobs(runner.key)
            if len(active) == 2 and any(j.state == "running" for j in active):
                break
            await asyncio.sleep(runner.interval_s)
        else:
            pytest.fail("the study never had two jobs in the queue")
        before = job_states(store, runner.key)
        running = [j.config_id for j in store.active_jobs(runner.key) if j.state == "running"]
        run_dirs = {c["config_id"]: Path(c["run_dir"]) for c in store.configs(runner.key)}
        results = [run_dirs[cid] / RESULT_FILE for cid in running]  # the cluster's disk is this one
        ctld("stop")
        away: list[TickReport] = []
        waits: list[float] = []
        try:
            end = time.monotonic() + OUTAGE_S
            # away for OUTAGE_S, and at least until the job that was running has ended (its result.json)
            while time.monotonic() < end or not all(p.exists() for p in results):
                assert time.monotonic() < end + 240, f"{running} did not end within 240 s of the outage"
                away.append(await runner.tick())
                waits.append(runner.interval_s)
                assert job_states(store, runner.key) == before  # nothing read as gone, nothing resubmitted
                snap = store.snapshot(name)
                assert snap.scheduler.startswith("Slurm not answering since "), snap.scheduler
                assert snap.scheduler in snap.connection_detail and snap.scheduler in queue_site_line(snap)
                await asyncio.sleep(min(runner.interval_s, max(0.5, end - time.monotonic())))
        finally:
            ctld("start")
        assert len(away) >= 2 and all(r.scheduler.startswith("Slurm not answering since ") for r in away)
        assert not any(r.submitted or r.finished for r in away)
        assert waits == sorted(waits) and waits[-1] <= MAX_POLL_S and waits[-1] > waits[0]  # backed off, bounded
        reports += away
        await runner.run(timeout_s=400, on_tick=reports.append)
    finally:
        await runner.close()
    back = [r.scheduler_back for r in reports if r.scheduler_back]
    assert len(back) == 1 and back[0].startswith("Slurm answering again after "), back
    snap = store.snapshot(name)
    assert not snap.scheduler
    assert [c.state for c in snap.configs] == ["completed"] * 4, snap.problems
    assert not [j for j in store.jobs(runner.key) if j.state == "lost"]
    assert len(store.results(runner.key)) == 4
    finished_away = [cid for cid in running if store.results(runner.key).get(cid)]
    assert finished_away == running  # ended while the controller was away, counted once below
    for cfg in study.runnable():  # each configuration submitted once: one job in Slurm's accounting
        jobs = sacct_jobs(slurm_cluster, f"{name}-{cfg.config_id}", t0)
        assert len(jobs) == 1 and jobs[0].endswith("|COMPLETED"), (cfg.config_id, jobs)
    said = [p for p in snap.problems if p.startswith("scheduler: Slurm")]
    assert len(said) == 2, said  # once when it went away, once when it came back
    store.close()


def test_the_headless_line_says_the_controller_is_away_once_and_when_it_is_back(tmp_path):
    """PlainProgress's words for the reports of an outage: said when it starts, on each line while it lasts,
    and once when it ends (the real reports come from the test above)."""
    progress = PlainProgress.__new__(PlainProgress)
    progress._scheduler, progress._maintenance = "", ""
    away = TickReport(scheduler="Slurm not answering since 14:05")
    assert progress.site_changes(away) == [("away", "Slurm not answering since 14:05: no job changes state "
                                                    "until it answers")]
    assert progress.site_changes(away) == []
    back = TickReport(scheduler_back="Slurm answering again after 120 s not answering (5 polls unanswered): "
                                     "following resumed")
    assert progress.site_changes(back) == [("back", back.scheduler_back)]
