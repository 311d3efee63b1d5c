"""A job Slurm requeues (here `scontrol requeue`, as after a node failure) reads `requeued`, with why,
not `pending` as if it had never run; the real Slurm over the real sshd."""

from __future__ import annotations

import asyncio
import uuid

from cockpit.launch.backend import AdaptiveInterval
from cockpit.launch.slurm.backend import SlurmBackend
from cockpit.run.runner import StudyRunner
from cockpit.store import StudyStore
from cockpit.study.spec import load_study

FAST = AdaptiveInterval(fast_s=0.3, running_s=0.6, slow_s=1.0)


async def test_a_requeued_job_reads_requeued(make_study, slurm_cluster, tmp_path):
    name = f"ctlrq-{uuid.uuid4().hex[:6]}"
    study = load_study(make_study(name, "window = [32]", steps=100000))
    store = StudyStore(tmp_path / "cockpit.sqlite")
    runner = StudyRunner(study, SlurmBackend.from_study(study), store, interval=FAST)
    key = None
    try:
        for _ in range(200):
            await runner.tick()
            key = runner.key
            jobs = store.jobs(key)
            if jobs and jobs[-1].state == "running":
                break
            await asyncio.sleep(0.2)
        (job,) = store.jobs(key)
        assert job.state == "running", job
        slurm_cluster.run(["scontrol", "requeue", job.job_id])
        for _ in range(100):
            await runner.tick()
            if store.jobs(key)[-1].state not in ("running", "completing"):
                break
            await asyncio.sleep(0.2)
        (job,) = store.jobs(key)
        assert job.state == "requeued" and job.reason.startswith("requeued by Slurm after it had started"), job
        history = [s for (s,) in store.db.execute("SELECT state FROM job_states WHERE job=? ORDER BY rowid",
                                                  (job.id,))]
        assert "running" in history and history[-1] == "requeued", history
    finally:
        if key is not None:
            for j in store.jobs(key):
                if j.job_id:
                    slurm_cluster.run(["scancel", j.job_id], check=False)
        await runner.close()
        store.close()
