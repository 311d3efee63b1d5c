"""The test Slurm with the test sshd in front of it, for the benches that run real jobs: what the Slurm tests
start through their fixtures (tests/infra), started here without pytest. Needs root, as they do."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class TestCluster:
    env: dict[str, str]  # HLM_SLURM_DIR, HLM_SLURM_PARTITION, HLM_PYTHON_BIN, HLM_TEST_USER (tests/infra/slurm.sh up)
    sshd: Any  # tests.infra.sshd_fixtures.Sshd
    work: Path  # a work directory the test user owns, removed afterwards


def slurm_env() -> dict[str, str]:
    up = subprocess.run(["bash", str(ROOT / "tests" / "infra" / "slurm.sh"), "up"], capture_output=True, text=True,
                        check=True)
    return dict(line.split("=", 1) for line in up.stdout.splitlines() if "=" in line)


@contextlib.contextmanager
def test_cluster(script: str, prefix: str) -> Iterator[TestCluster]:
    """The test Slurm up, an sshd in front of it and a work directory; the sshd stopped and both directories
    removed afterwards. ``script`` names the caller in the refusal without root."""
    if os.geteuid() != 0:
        sys.exit(f"{script}: needs root (the test Slurm and sshd run as root; jobs run as the test user)")
    from tests.infra.sshd_fixtures import start_sshd, stop_sshd

    # the jobs run the interpreter that runs the bench (its torch and this project), whatever PATH says
    env = {**slurm_env(), "HLM_PYTHON_BIN": str(Path(sys.executable).parent)}
    state = Path(tempfile.mkdtemp(prefix="hlm-sshd-"))
    state.chmod(0o755)
    sshd = start_sshd(state)
    work = Path(env["HLM_SLURM_DIR"]) / "work" / f"{prefix}-{os.getpid()}"
    work.mkdir(parents=True)
    subprocess.run(["chown", f"{env['HLM_TEST_USER']}:", str(work)], check=True)
    try:
        yield TestCluster(env, sshd, work)
    finally:
        stop_sshd(state)
        subprocess.run(["rm", "-rf", str(state), str(work)], check=False)
