"""Study files for the control-plane tests: a real Slurm cluster reached over the real sshd."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def slurm_env(slurm_cluster) -> dict[str, str]:
    """The facts of the shared test Slurm (fixture slurm_cluster of tests/infra) that a study file needs."""
    return {
        "HLM_SLURM_DIR": str(slurm_cluster.state_dir),
        "HLM_SLURM_PARTITION": slurm_cluster.partition,
        "HLM_PYTHON_BIN": slurm_cluster.python_bin,
        "HLM_TEST_USER": slurm_cluster.user,
    }


@pytest.fixture
def remote_workdir(slurm_cluster):
    """A work directory the test user (who runs the jobs) owns; removed afterwards."""
    path = slurm_cluster.workdir("ctl")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def study_text(*, name: str, sshd, workdir: Path, slurm_env: dict[str, str], sweep: str, steps: int = 6,
               gpus_per_node: int = 2, cores_per_node: int = 2, extra_cluster: str = "", budget: str = "",
               max_concurrent: int = 2) -> str:
    physionet = REPO.parent / "shared" / "data" / "physionet" / "mitdb"
    python = f"{slurm_env['HLM_PYTHON_BIN']}/python3"
    return f"""
[study]
name = "{name}"

[cluster]
kind = "slurm"
site = "generic"
host = "127.0.0.1"
port = {sshd.port}
user = "{sshd.user}"
identity_file = "{sshd.key}"
known_hosts = "{sshd.known_hosts}"
account = "hlm"
qos = "normal"
partition = "{slurm_env['HLM_SLURM_PARTITION']}"
time_limit = "00:10:00"
expected_minutes = 1
workdir = "{workdir}"
gpus_per_node = {gpus_per_node}
cores_per_node = {cores_per_node}
max_concurrent_jobs = {max_concurrent}
signal_seconds = 0
python = "{python}"
{budget}
{extra_cluster}

[cluster.env]
PYTHONPATH = "{REPO}"

[data]
token_cache = "{workdir}/tokens"

[data.datasets.mitdb]
path = "{physionet}"

[data.tokenizer]
name = "samples"
vocab = 64
records = ["100"]

[model]
layers = 1
d_model = 16
heads = 2

[train]
steps = {steps}
batch_size = 4
window = 32
device = "cpu"
metrics_interval_s = 0.2
eval = false

[sweep]
{sweep}
"""


@pytest.fixture
def make_study(sshd_server, slurm_env, remote_workdir) -> Callable[..., Path]:
    """Write a study file into the work directory and return its path."""

    def make(name: str, sweep: str, **kw) -> Path:
        path = remote_workdir / f"{name}.toml"
        path.write_text(study_text(name=name, sshd=sshd_server, workdir=remote_workdir, slurm_env=slurm_env,
                                   sweep=sweep, **kw))
        return path

    return make
