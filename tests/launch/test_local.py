"""The local executor runs the real trainer on this machine's cores (several workers under torchrun, one without
its launcher but with its environment), never oversubscribing."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.launch.backend import Backend, JobState
from cockpit.launch.local import LocalExecutor, LocalSubmitError, one_worker_env
from cockpit.study.spec import load_study
from runcontract.contract import EXIT_CHECKPOINTED, METRICS_FILE
from runcontract.files import read_jsonl
from runcontract.records import read_exit, read_result
from tests.studies import write_study
from trainer import rundir


def _study(tmp_path: Path, name: str, steps: int):
    path = write_study(tmp_path / f"{name}.toml", name, tmp_path / "work", cluster={"gpus_per_node": 2},
                       train={"steps": steps})
    study = load_study(path)
    one, two = sorted(study.matrix(), key=lambda c: c.gpus_per_node)
    return study, one, two


async def test_jobs_wait_for_cores_and_complete_with_results(tmp_path: Path) -> None:
    study, one, two = _study(tmp_path, "local-run", steps=10)
    ex = LocalExecutor(study, max_cores=2)
    assert isinstance(ex, Backend)
    first, second = await ex.submit(one), await ex.submit(two)
    states = {info.job_id: info.state for info in await ex.poll()}
    assert states == {first: JobState.RUNNING, second: JobState.PENDING}, "2 + 1 cores would oversubscribe 2"
    done = [await ex.wait(first), await ex.wait(second)]
    assert [info.state for info in done] == [JobState.COMPLETED, JobState.COMPLETED], done
    assert float(done[1].extra["started_at"]) >= float(done[0].extra["ended_at"])
    for cfg, info in zip((one, two), done, strict=True):
        run_dir = Path(info.extra["run_dir"])
        assert run_dir == Path(study.run_dir(cfg))
        result = read_result(run_dir)
        assert result["status"] == "completed" and result["world_size"] == cfg.gpus_per_node
        assert result["timing"]["launch_time_source"] == "HLM_LAUNCH_TIME"
        assert (run_dir / "stdout.log").exists() and (run_dir / "stderr.log").exists()
        assert json.loads((run_dir / "config.json").read_text())["config_id"] == cfg.config_id
        assert await ex.read_file(str(run_dir / "config.json"), 3) == (run_dir / "config.json").read_bytes()[3:]
    assert await ex.read_file("runs/none/metrics.jsonl") == b""
    assert await ex.poll() == []
    finals = await ex.final_states([first, second])
    assert set(finals) == {first, second}
    await ex.close()


async def test_a_job_larger_than_the_machine_is_refused(tmp_path: Path) -> None:
    study, _one, two = _study(tmp_path, "local-refuse", steps=1)
    ex = LocalExecutor(study, max_cores=1)
    with pytest.raises(LocalSubmitError, match=r"2 workers x 1 cores = 2 cores but this machine allows 1"):
        await ex.submit(two)


async def _wait_for_step(run_dir: Path, step: int, timeout: float = 120) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        if any(r.get("step", 0) >= step for r in read_jsonl(run_dir / METRICS_FILE).records):
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"{run_dir} did not reach step {step}")


async def test_cancel_checkpoints_and_a_resubmission_resumes(tmp_path: Path) -> None:
    study, one, two = _study(tmp_path, "local-cancel", steps=1000)
    ex = LocalExecutor(study, max_cores=2)
    running, pending = await ex.submit(one), await ex.submit(two)
    await ex.cancel(pending)
    (info,) = (await ex.final_states([pending])).values()
    assert info.state == JobState.CANCELLED and info.extra["started_at"] == ""
    run_dir = Path(study.run_dir(one))
    await _wait_for_step(run_dir, 10)
    await ex.cancel(running)
    info = await ex.wait(running)
    assert info.state == JobState.CANCELLED
    marker = read_exit(run_dir)
    assert marker["code"] == EXIT_CHECKPOINTED and 0 < marker["step"] < 1000
    assert (run_dir / rundir.CHECKPOINT_FILE).exists()
    again = await ex.wait(await ex.submit(one))
    assert again.state == JobState.COMPLETED and again.exit_code == 0
    result = read_result(run_dir)
    assert result["timing"]["steps"] == 1000 and result["timing"]["resumes"] == 1
    await ex.close()


async def test_gpus_are_reserved_per_job_and_passed_as_cuda_visible_devices(tmp_path: Path) -> None:
    """With GPUs (here a given list; NVML finds real ones) each job holds nproc of them; a job waits for
    a free GPU even when cores are free, and a job needing more GPUs than exist is refused."""
    path = write_study(tmp_path / "gpus.toml", "local-gpus", tmp_path / "work", cluster={"gpus_per_node": 2},
                       train={"steps": 100000, "device": "auto"}, sweep={"gpus_per_node": [1, 2], "window": [64, 32]})
    study = load_study(path)
    ones = [c for c in study.matrix() if c.gpus_per_node == 1]
    two = next(c for c in study.matrix() if c.gpus_per_node == 2)
    ex = LocalExecutor(study, max_cores=2, gpus=["3"])
    with pytest.raises(LocalSubmitError, match=r"needs 2 GPUs but this machine has 1"):
        await ex.submit(two)
    first, second = [await ex.submit(c) for c in ones]
    jobs = {info.job_id: info for info in await ex.poll()}
    assert jobs[first].state == JobState.RUNNING and jobs[first].extra["gpus"] == "3"
    assert jobs[second].state == JobState.PENDING, "1 + 1 cores fit, but the only GPU is taken"
    await ex.cancel(first)
    await ex.wait(first)
    jobs = {info.job_id: info for info in await ex.poll()}
    assert jobs[second].state == JobState.RUNNING and jobs[second].extra["gpus"] == "3"
    await ex.close()
    assert (await ex.final_states([second]))[second].state == JobState.CANCELLED


async def test_the_time_limit_stops_a_job_as_timeout(tmp_path: Path) -> None:
    import dataclasses

    study, one, _two = _study(tmp_path, "local-timeout", steps=100000)
    # A limit of about one second (the spec's own minimum is a minute, too slow for a test).
    study = dataclasses.replace(study, cluster=dataclasses.replace(study.cluster, time_limit_minutes=0.02))
    ex = LocalExecutor(study, max_cores=1)
    info = await ex.wait(await ex.submit(one))
    assert info.state == JobState.TIMEOUT and info.time_limit_s == pytest.approx(1.2)


def test_a_one_worker_job_gets_the_environment_torchrun_would_give_it(tmp_path: Path) -> None:
    """A job of one worker starts it without torchrun's launcher (cockpit.launch.local.one_worker_env): every
    variable torchrun sets for its one worker is set, to the same value where it is not per launch (the port,
    the run id, the error file torchrun's launcher writes its report to)."""
    script = tmp_path / "env.py"
    script.write_text("import json, os\nprint(json.dumps(dict(os.environ)))\n")
    clean = {k: v for k, v in os.environ.items() if k not in one_worker_env("x")}
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "1",
                          str(script)], env=clean, capture_output=True, text=True, check=True).stdout
    given = {k: v for k, v in json.loads(out.strip().splitlines()[-1]).items() if k not in clean}
    ours = one_worker_env("local-1")
    # per launch, or the agent's own: its store (rank 0 holds it without an agent) and the address it names
    per_launch = {"MASTER_PORT", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_ERROR_FILE", "MASTER_ADDR",
                  "TORCHELASTIC_USE_AGENT_STORE"}
    assert set(given) - {"TORCHELASTIC_ERROR_FILE"} == set(ours), (sorted(given), sorted(ours))
    assert {k: v for k, v in given.items() if k not in per_launch} == \
        {k: v for k, v in ours.items() if k not in per_launch}
    assert int(ours["MASTER_PORT"]) > 0 and ours["TORCHELASTIC_RUN_ID"] == "local-1"
