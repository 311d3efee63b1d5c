"""The test Slurm behaves like a real site where the launch code depends on it: fake GPUs as gres,
refusals at submit time, the job's environment."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slurm


def _script(workdir, body: str, name: str = "probe.sh"):
    path = workdir / name
    path.write_text(f"#!/bin/bash -l\n#SBATCH --output={workdir}/%x-%j.out\n{body}\n")
    return path


def test_gpus_are_scheduled_as_gres_and_seen_by_the_job(slurm_cluster) -> None:
    work = slurm_cluster.workdir("gres")
    script = _script(work, 'echo "CVD=$CUDA_VISIBLE_DEVICES CPT=$SLURM_CPUS_PER_TASK USER=$(id -un)"')
    job = slurm_cluster.sbatch(script, "--gpus-per-node=2", "--ntasks-per-node=2", "--cpus-per-task=1")
    info = slurm_cluster.wait(job)
    assert info["JobState"] == "COMPLETED", info
    out = (work / f"probe.sh-{job}.out").read_text()
    assert f"CVD=0,1 CPT=1 USER={slurm_cluster.user}" in out


def test_more_gpus_than_the_node_has_is_refused_at_submit(slurm_cluster) -> None:
    work = slurm_cluster.workdir("refuse")
    script = _script(work, "true")
    with pytest.raises(AssertionError, match="Requested node configuration is not available"):
        slurm_cluster.sbatch(script, f"--gpus-per-node={slurm_cluster.gpus + 1}")


def test_the_test_user_runs_the_projects_python(slurm_cluster) -> None:
    work = slurm_cluster.workdir("python")
    script = _script(work, 'python3 -c "import cockpit.launch, trainer.rundir, sys; print(sys.executable)"')
    job = slurm_cluster.sbatch(script)
    info = slurm_cluster.wait(job)
    out = (work / f"probe.sh-{job}.out").read_text()
    assert info["JobState"] == "COMPLETED", out
    assert out.strip().startswith(slurm_cluster.python_bin)
