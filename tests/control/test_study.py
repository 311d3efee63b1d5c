"""Whole studies over the real sshd against the real Slurm, with the real trainer on real MIT-BIH data.

The connection is killed mid-study, the cockpit process is SIGKILLed right after an sbatch, sbatch refusals
and the node-hour budget are exercised; the store must end with one job per configuration and every metric.
"""

from __future__ import annotations

import asyncio
import math
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from cockpit.forecast.analysis import scaling_table
from cockpit.launch.backend import AdaptiveInterval, ConnectionState
from cockpit.launch.slurm.backend import SlurmBackend
from cockpit.run.runner import BudgetExceeded, StudyRunner
from cockpit.store import StudyStore
from cockpit.study.spec import load_study
from runcontract.files import read_jsonl
from runcontract.records import read_result

REPO = Path(__file__).resolve().parents[2]
FAST = AdaptiveInterval(fast_s=0.3, running_s=0.6, slow_s=1.0)
THREE = "gpus_per_node = [1, 2]\ncpus_per_task = [1, 2]"  # (2 GPUs x 2 cores) does not fit the 2-core node


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def _jobcomp_ids(slurm_env: dict[str, str], job_name: str) -> set[str]:
    path = Path(slurm_env["HLM_SLURM_DIR"]) / "log" / "jobcomp.txt"
    text = path.read_text() if path.exists() else ""
    return set(re.findall(rf"JobId=(\d+) \S+ \S+ Name={re.escape(job_name)} ", text))


async def test_three_configurations_over_ssh_with_a_dropped_connection(make_study, sshd_server, slurm_env, tmp_path):
    name = _name("ctl3")
    study = load_study(make_study(name, THREE, steps=120))
    assert len(study.runnable()) == 3
    store = StudyStore(tmp_path / "cockpit.sqlite")
    backend = SlurmBackend.from_study(study, follow_interval_s=0.3)
    runner = StudyRunner(study, backend, store, interval=FAST)
    states: list[ConnectionState] = []
    backend.connection.listeners.append(lambda state, detail: states.append(state))
    ticks = 0
    killed_at_metrics = None

    def on_tick(report) -> None:
        nonlocal ticks, killed_at_metrics
        ticks += 1
        if killed_at_metrics is None and store.metric_count(runner.key) > 0:
            killed_at_metrics = store.metric_count(runner.key)
            assert sshd_server.kill_connections() >= 1

    try:
        await runner.run(timeout_s=240, on_tick=on_tick)
    finally:
        await runner.close()
    assert killed_at_metrics is not None, "the connection was never killed while metrics streamed"
    assert backend.connection.connects >= 2
    assert ConnectionState.RECONNECTING in states  # what the header showed during the gap

    snap = store.snapshot(name)
    assert [c.state for c in snap.configs] == ["completed"] * 3, snap.problems
    assert snap.counts.done == 3 and snap.counts.failed == 0
    # one job per configuration, in the store and in Slurm's own completion log
    assert sorted(j.config_id for j in snap.jobs) == sorted(c.config_id for c in study.runnable())
    for cfg in study.runnable():
        assert len(_jobcomp_ids(slurm_env, f"{name}-{cfg.config_id}")) == 1
    # the same table as computed straight from the result files on disk
    on_disk = [read_result(study.run_dir(cfg)) for cfg in study.runnable()]
    expected = scaling_table(on_disk).set_index("config_id")
    got = runner.scaling_table().set_index("config_id")
    assert sorted(got.index) == sorted(expected.index)
    for cid in expected.index:
        for col in ("train_time_s", "speedup", "efficiency", "overhead_s"):
            a, b = got.loc[cid, col], expected.loc[cid, col]
            assert (math.isnan(a) and math.isnan(b)) or a == b, (cid, col, a, b)
    two = next(c for c in snap.configs if c.workers == 2)
    assert two.speedup is not None and two.speedup == expected.loc[two.config_id, "speedup"]
    # every metrics line that reached the disk reached the store once (the reconnect gap lost nothing)
    for cfg in study.runnable():
        lines = read_jsonl(Path(study.run_dir(cfg)) / "metrics.jsonl", final=True).records
        assert store.metric_count(runner.key, cfg.config_id) == len(lines) > 0
        assert any("launcher exit code 0" in line for line in snap.log_tail(cfg.config_id, 50))
    # polling stayed one squeue per tick (plus the start-up reconcile and one per reconnect at most)
    assert backend.slurm.calls["squeue"] <= ticks + 3
    store.close()


CHILD = """
import asyncio, sys, time
sys.path.insert(0, {repo!r})
from pathlib import Path
from cockpit.run.runner import StudyRunner
from cockpit.launch.slurm.backend import SlurmBackend
from cockpit.launch.backend import ConnectionState
from cockpit.study.spec import load_study
from cockpit.store import StudyStore

def after_submit(cfg, job_id):
    Path({flag!r}).write_text(job_id)
    time.sleep(600)  # the parent SIGKILLs us here: sbatch done, job id not yet recorded

async def main():
    study = load_study({study!r})
    runner = StudyRunner(study, SlurmBackend.from_study(study, hold=True), StudyStore({store!r}),
                         hooks={{"after_submit": after_submit}})
    await runner.tick()

asyncio.run(main())
"""


async def test_cockpit_killed_right_after_sbatch_adopts_the_job(make_study, slurm_env, tmp_path):
    name = _name("ctlkill")
    path = make_study(name, "window = [32]", max_concurrent_jobs=4)
    flag, store_path = tmp_path / "job_id", tmp_path / "cockpit.sqlite"
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(repo=str(REPO), flag=str(flag), study=str(path),
                                                                 store=str(store_path))])
    try:
        deadline = time.monotonic() + 60
        while not flag.exists() and child.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert flag.exists(), f"the child never reached sbatch (exit {child.poll()})"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    job_id = flag.read_text()

    store = StudyStore(store_path)
    study = load_study(path)
    (cfg,) = study.runnable()
    key = store.study_key(name)
    assert [(j.state, j.job_id) for j in store.jobs(key)] == [("submitting", None)]  # intent only
    backend = SlurmBackend.from_study(study, hold=True)
    runner = StudyRunner(study, backend, store, interval=FAST)
    try:
        await runner.start()
        jobs = store.jobs(key)
        assert [(j.job_id, j.state, j.attempt) for j in jobs] == [(job_id, "pending", 1)]
        report = await runner.tick()
        assert report.submitted == []
        queued = [j for j in await backend.poll() if j.name == f"{name}-{cfg.config_id}"]
        assert [j.job_id for j in queued] == [job_id] and queued[0].reason == "JobHeldUser"
        assert any("adopted job" in p for p in store.problems(key))
        await runner.cancel(cfg.config_id)
        for _ in range(50):
            await runner.tick()
            if store.jobs(key)[-1].state == "cancelled":
                break
            await asyncio.sleep(0.2)
        assert [(j.job_id, j.state) for j in store.jobs(key)] == [(job_id, "cancelled")]
    finally:
        await runner.close()
        store.close()


@pytest.mark.parametrize(
    "sweep, cluster, message",
    [
        # the study believes in 8-GPU nodes; the test node has 4 (fake) GPUs and 2 cores: refused at submit
        ("gpus_per_node = [8]", {"gpus_per_node": 8, "cores_per_node": 16}, "More processors requested than permitted"),
        ("window = [32]", {"partition": "nosuch"}, "Invalid partition name specified"),
    ],
    ids=["gpus-beyond-node", "unknown-partition"],
)
async def test_sbatch_refusal_is_surfaced_with_slurms_message(make_study, tmp_path, sweep, cluster, message):
    name = _name("ctlrefuse")
    study = load_study(make_study(name, sweep, **cluster))
    store = StudyStore(tmp_path / "cockpit.sqlite")
    runner = StudyRunner(study, SlurmBackend.from_study(study), store, interval=FAST)
    try:
        report = await runner.tick()
    finally:
        await runner.close()
    assert report.submitted == []
    snap = store.snapshot(name)
    (job,) = snap.jobs
    assert job.state == "failed" and job.job_id is None
    assert job.reason.startswith("sbatch refused the job: ") and message in job.reason
    assert any(message in p for p in snap.problems)
    assert runner.pending_configs() == []  # a refused configuration is not retried in a loop
    store.close()


async def test_node_hour_budget_refuses_the_start_unless_forced(make_study, tmp_path):
    name = _name("ctlbudget")
    study = load_study(make_study(name, THREE, node_hour_budget=0.02))  # 3 runs x 1 min > 1.2 min
    store = StudyStore(tmp_path / "cockpit.sqlite")
    runner = StudyRunner(study, SlurmBackend.from_study(study), store)
    with pytest.raises(BudgetExceeded, match=r"needs an estimated 0\.1 node-hours for 3 configurations but only 0\.0"):
        await runner.start()
    assert store.jobs(runner.key) == []
    await runner.close()
    forced = StudyRunner(study, SlurmBackend.from_study(study), store, force=True)
    await forced.start()
    assert forced.plan().estimate == pytest.approx(3 / 60)
    await forced.close()
    store.close()
