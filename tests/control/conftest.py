"""Study files for the control-plane tests: a real Slurm cluster reached over the real sshd."""

from __future__ import annotations

import shutil
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.studies import mitdb_data, study_toml

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


def slurm_cluster_table(sshd, slurm_env: dict[str, str], **over: Any) -> dict[str, Any]:
    """The [cluster] table of a study on the test Slurm, reached over the test sshd; ``over`` keys replace its."""
    return {
        "kind": "slurm", "site": "generic", "host": "127.0.0.1", "port": sshd.port, "user": sshd.user,
        "identity_file": str(sshd.key), "known_hosts": str(sshd.known_hosts), "account": "hlm", "qos": "normal",
        "partition": slurm_env["HLM_SLURM_PARTITION"], "time_limit": "00:10:00", "expected_minutes": 1,
        "gpus_per_node": 2, "cores_per_node": 2, "max_concurrent_jobs": 2, "signal_seconds": 0,
        "python": f"{slurm_env['HLM_PYTHON_BIN']}/python3", "env": {"PYTHONPATH": str(REPO)}, **over,
    }


def study_text(*, name: str, sshd, workdir: Path, slurm_env: dict[str, str], sweep: str, steps: int = 6,
               **cluster: Any) -> str:
    """The control-plane study: real MIT-BIH record 101 on the test Slurm, reached over the test sshd.
    ``sweep`` is the [sweep] table's TOML text; ``cluster`` keys override [cluster]'s."""
    return study_toml(name, workdir, cluster=slurm_cluster_table(sshd, slurm_env, **cluster),
                      data=mitdb_data(workdir / "tokens"), train={"steps": steps, "window": 32},
                      sweep=tomllib.loads(sweep))


@pytest.fixture
def make_study(sshd_server, slurm_env, remote_workdir) -> Callable[..., Path]:
    """Write a study file into the work directory and return its path."""

    def make(name: str, sweep: str, **kw) -> Path:
        path = remote_workdir / f"{name}.toml"
        path.write_text(study_text(name=name, sshd=sshd_server, workdir=remote_workdir, slurm_env=slurm_env,
                                   sweep=sweep, **kw))
        return path

    return make
