"""Rendered batch scripts submitted to the real test Slurm, running the real trainer on CPU: 1 node x 2
workers on 2 fake GPUs (gloo) and 2 nodes x 1 worker (srun + c10d rendezvous), the time-limit signal ->
checkpoint -> requeue -> resume, and scancel."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from cockpit.forecast import prediction
from cockpit.launch.slurm.render import render_script, submit_command
from cockpit.study.spec import load_study
from runcontract.contract import CONFIG_FILE, EXIT_CHECKPOINTED, METRICS_FILE, SCHEMA_VERSION
from runcontract.files import read_jsonl
from runcontract.records import read_exit, read_result
from tests.studies import write_study
from trainer import rundir

pytestmark = pytest.mark.slurm


def _submit(cluster, name: str, steps: int, nodes: int = 1, gpus: int = 2):
    work = cluster.workdir(name)
    path = work / "study.toml"
    partition = cluster.partition if nodes == 1 else cluster.multi_partition
    fields = {"kind": "slurm", "site": "generic", "host": "localhost", "account": "hlm", "qos": "normal",
              "partition": partition, "time_limit": "00:10:00", "gpus_per_node": 2, "cores_per_node": 2,
              "signal_seconds": 60}
    write_study(path, name, work, cluster=fields, train={"steps": steps, "cpus_per_task": 1},
                sweep={"gpus_per_node": [gpus], "nodes": [nodes]})
    study = load_study(path)
    cfg = study.matrix()[0]
    script = work / f"{cfg.config_id}.sbatch"
    script.write_text(render_script(study, cfg))
    job = cluster.run(["bash", "-c", submit_command(study, cfg, str(script))]).stdout.strip()
    return study, cfg, Path(study.run_dir(cfg)), job


def _wait_for_step(cluster, job: str, run_dir: Path, step: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        records = read_jsonl(run_dir / METRICS_FILE).records
        if any(r.get("step", 0) >= step for r in records):
            return
        if cluster.state(job) is None:
            raise AssertionError(f"job {job} ended before step {step}: {_log(run_dir, job)}")
        time.sleep(0.2)
    raise AssertionError(f"job {job} did not reach step {step} in {timeout} s: {_log(run_dir, job)}")


def _log(run_dir: Path, job: str) -> str:
    parts = []
    for suffix in ("out", "err"):
        path = run_dir / f"slurm-{job}.{suffix}"
        if path.exists():
            parts.append(path.read_text()[-3000:])
    return "\n".join(parts)


@pytest.mark.parametrize(("nodes", "gpus"), [(1, 2), (2, 2)], ids=["1N2G", "2N2G"])
def test_time_limit_signal_checkpoints_requeues_and_resumes(slurm_cluster, nodes: int, gpus: int) -> None:
    """1N2G: torchrun in the batch shell. 2N2G: srun starts one torchrun (2 workers) per node, joined by
    c10d rendezvous at the head node; the signal must reach the workers through the job step, not srun."""
    if nodes > slurm_cluster.nodes:
        pytest.skip(f"the test cluster has {slurm_cluster.nodes} node(s) (HLM_SLURM_NODES)")
    steps = 300
    study, cfg, run_dir, job = _submit(slurm_cluster, f"requeue{nodes}n", steps=steps, nodes=nodes, gpus=gpus)
    _wait_for_step(slurm_cluster, job, run_dir, 10)
    # What Slurm sends `signal_seconds` before the time limit (--signal=B:USR1@S): USR1 to the batch shell.
    slurm_cluster.scancel(job, "--signal=USR1", "--batch")
    deadline = time.monotonic() + 120
    while slurm_cluster.show_job(job).get("Restarts") != "1" or slurm_cluster.state(job) != "PENDING":
        assert time.monotonic() < deadline, f"job {job} was not requeued: {_log(run_dir, job)}"
        time.sleep(0.2)
    first = read_exit(run_dir)
    assert first["code"] == EXIT_CHECKPOINTED, first
    assert 0 < first["step"] < steps
    assert (run_dir / rundir.CHECKPOINT_FILE).exists()
    assert "requeueing job" in (run_dir / f"slurm-{job}.out").read_text()
    # Slurm holds a requeued job for about two minutes; let it start sooner (not within the same second:
    # slurmd refuses credentials issued in the second the old ones were revoked).
    slurm_cluster.run(["scontrol", "update", f"JobId={job}", "StartTime=now+2"])
    info = slurm_cluster.wait(job, timeout=240)
    assert info["JobState"] == "COMPLETED", _log(run_dir, job)
    assert info["NumNodes"] == str(nodes)
    result = read_result(run_dir)
    assert result["status"] == "completed" and result["timing"]["steps"] == steps
    assert result["world_size"] == nodes * gpus and result["nodes"] == nodes
    assert result["timing"]["resumes"] == 1
    assert result["timing"]["train_time_s"] > first["train_time_s"]
    assert result["timing"]["launch_time_source"] == "HLM_LAUNCH_TIME"
    # the test Slurm's nodes are this one machine: its result says so, and a prediction from it prices their
    # ranks as sharing its cores (cockpit.forecast.prediction.shared_host)
    assert result["hostnames"] == [socket.gethostname()]
    assert prediction.measured_links([result]).shared_host == (socket.gethostname() if nodes > 1 else "")
    assert read_exit(run_dir)["code"] == 0
    config = json.loads((run_dir / CONFIG_FILE).read_text())
    assert config == {"schema_version": SCHEMA_VERSION, **study.run_config(cfg)}
    out = (run_dir / f"slurm-{job}.out").read_text()
    assert "attempt 1 " in out and "attempt 2 " in out and "trainer exit code 0" in out


def test_scancel_stops_the_job_without_requeue(slurm_cluster) -> None:
    _study, _cfg, run_dir, job = _submit(slurm_cluster, "cancel", steps=100000)
    slurm_cluster.wait(job, until="RUNNING", timeout=60)
    slurm_cluster.scancel(job)
    info = slurm_cluster.wait(job, timeout=60)
    assert info["JobState"] == "CANCELLED" and info["Restarts"] == "0", info

