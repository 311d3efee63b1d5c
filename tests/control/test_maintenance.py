"""A maintenance reservation on the real test Slurm (``scontrol create reservation ... flags=maint``), read over
SSH: the preflight's maintenance row and `cockpit plan --maintenance` name it, when it starts and ends, and the time limit that ends before
it; a job whose time limit crosses it pends "waiting: maintenance" (never a failure); the time limit named
starts a job at once and the study completes."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest

from cockpit.launch.backend import AdaptiveInterval
from cockpit.launch.maintenance import waiting_for_maintenance
from cockpit.launch.slurm.backend import SlurmBackend
from cockpit.preflight.checks import WARN
from cockpit.run.preflight import maintenance_check
from cockpit.run.runner import StudyRunner
from cockpit.store import StudyStore
from cockpit.study.spec import load_study
from cockpit.tui.model import queue_site_line

pytestmark = [pytest.mark.slurm, pytest.mark.sshd]
FAST = AdaptiveInterval(fast_s=0.3, running_s=0.6, slow_s=1.0)
STARTS_IN_MIN = 6  # the reservation starts this long after the test's start; the study's time limit is 10 min


@pytest.fixture
def maintenance(slurm_cluster) -> Iterator[str]:
    """A maintenance reservation on the default partition's node, starting in STARTS_IN_MIN minutes for 20
    minutes, for root only (the test user sees it, cannot use it); deleted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("creating a reservation needs root (Slurm's operator)")
    env = {**os.environ, "SLURM_CONF": str(slurm_cluster.conf)}
    node = subprocess.run(["sinfo", "-h", "-p", slurm_cluster.partition, "-o", "%N"], env=env, check=True,
                          capture_output=True, text=True).stdout.strip()
    name = f"hlm-maint-{uuid.uuid4().hex[:6]}"
    subprocess.run(["scontrol", "create", "reservation", f"reservationname={name}",
                    f"starttime=now+{STARTS_IN_MIN}minutes", "duration=20", f"nodes={node}", "flags=maint",
                    "users=root"], env=env, check=True, capture_output=True, text=True)
    try:
        yield name
    finally:
        subprocess.run(["scontrol", "delete", f"reservationname={name}"], env=env, check=False)


async def test_a_maintenance_reservation_is_named_with_the_time_limit_that_fits_and_jobs_wait_for_it(
        make_study, maintenance, tmp_path):
    name = f"maint-{uuid.uuid4().hex[:6]}"
    path = make_study(name, "window = [32]", time_limit="00:10:00")
    study = load_study(path)
    backend = SlurmBackend.from_study(study)
    try:
        check = await maintenance_check(study, backend)
    finally:
        await backend.close()
    assert check.verdict == WARN, check
    assert f"time limit 00:10:00 crosses maintenance reservation {maintenance} from " in check.found, check.found
    fits = check.expected.removeprefix("time_limit <= ")
    assert fits in ("00:04:00", "00:05:00"), check  # starts in 6 min, less a minute's margin
    assert f'[cluster].time_limit = "{fits}"' in check.fix
    planned = subprocess.run([sys.executable, "-m", "cockpit", "plan", "--maintenance", str(path)],
                             capture_output=True, text=True, timeout=120)
    assert planned.returncode == 0, planned.stderr
    said = " ".join(planned.stdout.split())  # the plan says it too (rich wraps its lines)
    assert f"maintenance: warn: time limit 00:10:00 crosses maintenance reservation {maintenance} from " in said, said
    assert "or start now with a time limit of at most 00:0" in said, said

    # a job of the study's time limit pends for the maintenance: said as waiting, never as a failure
    store = StudyStore(tmp_path / "store.sqlite")
    runner = StudyRunner(study, SlurmBackend.from_study(study, follow_interval_s=0.3), store, interval=FAST)
    try:
        deadline = time.monotonic() + 120
        while True:
            report = await runner.tick()
            job = store.snapshot(name).jobs[-1] if store.snapshot(name).jobs else None
            if job is not None and job.reason.startswith("waiting: maintenance"):
                break
            assert time.monotonic() < deadline, (job, store.problems(runner.key))
            await asyncio.sleep(1.0)
        snap = store.snapshot(name)
        assert job.state == "pending" and f"({maintenance})" in job.reason, job
        assert waiting_for_maintenance(store.jobs(runner.key)[-1].reason)  # Slurm's own reason, kept in the store
        assert snap.configs[0].state == "pending" and snap.counts.failed == 0
        assert maintenance in report.maintenance and maintenance in queue_site_line(snap)
        await runner.cancel(snap.configs[0].config_id)
    finally:
        await runner.close()
        store.close()

    # the time limit it named starts the job now, and the study completes
    quick = load_study(make_study(f"{name}-fit", "window = [32]", time_limit=fits))
    store = StudyStore(tmp_path / "fit.sqlite")
    runner = StudyRunner(quick, SlurmBackend.from_study(quick, follow_interval_s=0.3), store, interval=FAST)
    try:
        await runner.run(timeout_s=180)
    finally:
        await runner.close()
    snap = store.snapshot(f"{name}-fit")
    assert [c.state for c in snap.configs] == ["completed"], snap.problems
    assert not snap.maintenance  # 4 minutes end before it starts
    store.close()
