"""Time to result on the real test Slurm (backfill scheduler) with a busy queue: two long jobs hold the
site-shaped `gpu` partition's GPUs (all of mel2001 for 60 min, half of mel2002 for 20 min), and
`cockpit plan --full-run` asks `sbatch --test-only` over SSH when each configuration would start. The answer
carries Slurm's own start estimates (the blockers' end times), the time limit's requeues, and names the
configuration that finishes first (not the fastest run, which waits for the queue) and the cheapest."""

from __future__ import annotations

import math
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from cockpit.commands.plan import baseline_results
from cockpit.forecast.full_run import ProductionRun
from cockpit.forecast.full_run_words import clock, summary_lines, wait_words
from cockpit.run.full_run import time_to_result
from cockpit.study.spec import load_study
from tests.control.conftest import slurm_cluster_table
from tests.studies import study_toml

pytestmark = [pytest.mark.slurm, pytest.mark.sshd]
REPO = Path(__file__).resolve().parents[2]
H200 = REPO / "tests" / "fixtures" / "h200-runs" / "bf16-w256"  # a measured 1x1 bf16 baseline with NVML energy
SITE = ["-A", "p200000", "-q", "default", "-p", "gpu", "-o", "/dev/null"]


def _study(path: Path, sshd, slurm_env, workdir: Path) -> Path:
    """MeluXina-shaped GPU configurations (1 and 2 nodes x 2 and 4 GPUs) of the H200 baseline's group, on the
    test Slurm's `gpu` partition, with a 20-minute time limit."""
    cluster = slurm_cluster_table(sshd, slurm_env, site="meluxina", account="p200000", qos="default",
                                  partition="gpu", time_limit="00:20:00", expected_minutes=None, signal_seconds=60,
                                  gpus_per_node=4, cores_per_node=64, container=str(workdir / "hlm.sif"),
                                  max_concurrent_jobs=None)
    path.write_text(study_toml(
        f"ttr-{uuid.uuid4().hex[:6]}", workdir, cluster=cluster,
        data={"datasets": {"mitdb12": {"path": str(workdir / "mitdb")}}},
        model={"layers": 6, "d_model": 384, "heads": 6},
        train={"steps": 200, "batch_size": 64, "window": 256, "precision": "bf16", "cpus_per_task": 8,
               "device": "cuda", "eval": None},
        sweep={"nodes": [1, 2], "gpus_per_node": [2, 4]}))
    return path


@pytest.fixture
def busy_gpu_partition(slurm_cluster) -> Iterator[dict[str, float]]:
    """Two running jobs: all of mel2001's GPUs for 60 min, two of mel2002's for 20 min; their end times as
    Slurm states them (epoch seconds, by node). Cancelled afterwards."""
    if "gpu" not in slurm_cluster.site_partitions:
        pytest.skip("the test Slurm has no site-shaped gpu partition")
    jobs = {}
    try:
        for node, gpus, minutes in (("mel2001", 4, 60), ("mel2002", 2, 20)):
            jobs[node] = slurm_cluster.run(["sbatch", "--parsable", *SITE, "-w", node, f"--gres=gpu:{gpus}",
                                            f"--time={minutes}", "--wrap", "sleep 600"]).stdout.strip()
        ends = {}
        for node, job in jobs.items():
            record = slurm_cluster.wait(job, until="RUNNING", timeout=60)
            ends[node] = datetime.fromisoformat(record["EndTime"]).timestamp()
        yield ends
    finally:
        for job in jobs.values():
            slurm_cluster.run(["scancel", job], check=False)


def test_full_run_names_the_first_to_finish_from_the_queues_start_estimates_and_the_time_limits_requeues(
        sshd_server, slurm_env, remote_workdir, busy_gpu_partition):
    path = _study(remote_workdir / "study.toml", sshd_server, slurm_env, remote_workdir)
    study = load_study(path)
    baselines = baseline_results(H200)
    label = {c.config_id: f"{c.nodes}x{c.gpus_per_node}" for c in study.matrix()}

    # sized so the 1x2 run takes about two hours: long beside the queue's 20 and 60 minutes
    probe = time_to_result(study, ProductionRun("epochs", 1.0), baselines=baselines, queue=False)
    one_by_two = next(r for r in probe.rows if label[r.config_id] == "1x2")
    assert one_by_two.t_s is not None
    run = ProductionRun("epochs", round(7200.0 / one_by_two.t_s.value, 1))

    alone = time_to_result(study, run, baselines=baselines, queue=False)
    assert alone.first is not None and label[alone.first.config_id] == "2x4"  # no queue: the most GPUs win

    queued = time_to_result(study, run, baselines=baselines)
    rows = {label[r.config_id]: r for r in queued.rows}
    assert set(rows) == {"1x2", "1x4", "2x2", "2x4"} and not any(r.reason for r in rows.values())
    # Slurm's own estimates: two free GPUs on mel2002 now, four when its job ends, two nodes when mel2001's does
    assert rows["1x2"].queue.start is not None and rows["1x2"].queue.start < busy_gpu_partition["mel2002"]
    assert rows["1x4"].queue.start == busy_gpu_partition["mel2002"], rows["1x4"].queue
    assert rows["2x2"].queue.start == rows["2x4"].queue.start == busy_gpu_partition["mel2001"]
    assert "mel2002 in gpu" in rows["1x4"].queue.words and "sbatch --test-only" in queued.queue_words
    for r in rows.values():  # the time limit's jobs: each at most 20 min, re-paying the measured start-up
        assert r.segments is not None and r.t_s is not None and r.wall_s is not None and r.finish is not None
        per_job = 1200.0 - r.startup_s - max(60.0, r.checkpoint_s)
        assert r.segments.count == math.ceil((r.t_s.value + r.once_s) / per_job) > 1
        assert r.wall_s.value == pytest.approx(r.t_s.value + r.once_s + r.segments.count * r.startup_s
                                               + (r.segments.count - 1) * r.checkpoint_s)
        assert r.queue.start is not None and r.finish.value == pytest.approx(r.queue.start + r.wall_s.value)
        assert r.startup_s == pytest.approx(8.659, abs=0.01)  # the H200 baseline's measured start-up
    assert queued.first is not None and queued.cheapest is not None
    assert label[queued.first.config_id] == "1x4"  # 1x4 waits 20 min, then beats 2x4, which waits 60
    assert label[queued.cheapest.config_id] == "1x4"  # half the node-hours of 1x2 and 2x2; 2x4 pays two start-ups

    # the command says the same over the same function, with a deadline and prices
    first = rows["1x4"]
    assert first.finish is not None and first.queue.start is not None
    deadline = first.finish.value + 300  # five minutes after 1x4's predicted finish
    when = datetime.fromtimestamp(deadline).strftime("%Y-%m-%dT%H:%M")
    planned = subprocess.run([sys.executable, "-m", "cockpit", "plan", str(path), "--baselines", str(H200),
                              "--full-run", f"epochs={run.amount:g}", "--deadline", when,
                              "--price-node-hour", "1.2", "--price-kwh", "0.25"],
                             capture_output=True, text=True, timeout=180)
    assert planned.returncode == 0, planned.stderr
    said = " ".join(planned.stdout.split())
    assert f"first to finish: {first.label} ({first.config_id}): finishes {clock(first.finish.value)}" in said, said
    assert f"starts {wait_words(queued, first)} (" in said and "sbatch --test-only: mel2002 in gpu" in said
    assert f"cheapest (cost, finishing by {when.replace('T', ' ')}): {first.label}" in said, said
    assert "Pareto set (finish vs cost, soonest first): " in said
    assert "time limit 20 min: jobs of at most 20 min" in said


def test_a_configuration_slurm_refuses_has_no_start_and_says_slurms_words(sshd_server, slurm_env, remote_workdir,
                                                                          slurm_cluster):
    """An account the cluster does not know is refused by `sbatch --test-only` itself: each configuration keeps
    Slurm's words instead of a start, and no configuration is named first."""
    if "gpu" not in slurm_cluster.site_partitions:
        pytest.skip("the test Slurm has no site-shaped gpu partition")
    path = _study(remote_workdir / "study.toml", sshd_server, slurm_env, remote_workdir)
    path.write_text(path.read_text().replace('account = "p200000"', 'account = "p999999"', 1))
    study = load_study(path)
    outcome = time_to_result(study, ProductionRun("steps", 20000), baselines=baseline_results(H200))
    assert outcome.rows and all(r.queue.start is None and r.finish is None for r in outcome.rows)
    assert all(r.queue.words.startswith("sbatch --test-only refused the job: ") for r in outcome.rows)
    assert "Invalid account" in outcome.rows[0].queue.words, outcome.rows[0].queue
    lines = summary_lines(outcome)
    assert "no configuration has figures for the full run (below, why)" not in lines
    assert any(line.endswith(f"no start: {outcome.rows[0].queue.words}") for line in lines), lines
    assert outcome.first is None and outcome.cheapest is None
