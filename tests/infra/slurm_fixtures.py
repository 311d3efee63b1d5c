"""Pytest plugin: a real Slurm on loopback (tests/infra/slurm.sh) as the session fixture `slurm_cluster`: this
host's nodes, MeluXina-shaped nodes in partitions cpu and gpu, and accounting through slurmdbd that refuses
a wrong account, a wrong QOS or a --time over the QOS's limit (tests/infra/accounting.sh).

Jobs are submitted and run as the unprivileged test user named in tests/infra/env.sh. The cluster is left
running after the session (other test sessions on the same machine may share it); set HLM_SLURM_DOWN=1 to
stop it at the end when this session started it.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

INFRA = Path(__file__).resolve().parent
REPO = INFRA.parent.parent
SLURM_SH = INFRA / "slurm.sh"


@dataclass
class SlurmCluster:
    """Client-side handle on the test cluster: every command runs as the test user."""

    conf: Path
    state_dir: Path
    user: str
    partition: str
    multi_partition: str  # partition with every node ("" when the cluster has one node)
    nodes: int
    gpus: int
    python_bin: str
    site_partitions: tuple[str, ...] = ()  # MeluXina-shaped partitions (cpu, gpu)
    accounting: str = ""  # "slurmdbd" when accounts and QOSs are enforced
    peer: str = ""  # another unprivileged account on the machine (no login)
    group: str = ""  # a Unix group both the test user and the peer belong to

    def as_peer(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        """Run a command as the other account (root only): what any other user of the machine could do."""
        return subprocess.run(["runuser", "-u", self.peer, "--", *args], capture_output=True, text=True, timeout=60)

    @property
    def env(self) -> dict[str, str]:
        """A clean environment for the test user (root's PATH holds pyenv shims it cannot use)."""
        home = pwd.getpwnam(self.user).pw_dir
        return {
            "PATH": f"{self.python_bin}:/usr/local/bin:/usr/bin:/bin",
            "HOME": home,
            "USER": self.user,
            "LOGNAME": self.user,
            "LANG": "C.UTF-8",
            "SLURM_CONF": str(self.conf),
            "PYTHONPATH": str(REPO),
        }

    def run(self, args: list[str], *, cwd: str | Path | None = None, check: bool = True, timeout: float = 60):
        """Run a command as the test user (via runuser when this process is root)."""
        prefix = ["runuser", "-u", self.user, "--"] if os.geteuid() == 0 and self.user != "root" else []
        result = subprocess.run(
            [*prefix, "env", "-i", *(f"{k}={v}" for k, v in self.env.items()), *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}")
        return result

    def workdir(self, name: str) -> Path:
        """A fresh directory the test user owns (pytest's tmp_path is private to root)."""
        path = self.state_dir / "work" / f"{name}-{uuid.uuid4().hex[:8]}"
        path.mkdir(parents=True)
        for p in (path.parent, path):
            shutil.chown(p, self.user, self.user)
        return path

    def sbatch(self, script: Path, *options: str, cwd: str | Path | None = None) -> str:
        """Submit with `sbatch --parsable`; returns the job id (AssertionError with Slurm's message)."""
        out = self.run(["sbatch", "--parsable", *options, str(script)], cwd=cwd or script.parent).stdout.strip()
        return out.split(";")[0]

    def state(self, job_id: str) -> str | None:
        """The job's state while squeue lists it, else None."""
        out = self.run(["squeue", "-h", "-j", job_id, "-o", "%T"], check=False).stdout.strip()
        return out or None

    def show_job(self, job_id: str) -> dict[str, str]:
        """`scontrol show job` as a dict (the controller remembers finished jobs for MinJobAge seconds)."""
        out = self.run(["scontrol", "show", "job", "-o", job_id], check=False).stdout
        return dict(re.findall(r"(\w+)=(\S*)", out))

    def wait(self, job_id: str, until: str = "gone", timeout: float = 120, poll: float = 0.25) -> dict[str, str]:
        """Wait until the job leaves the queue (until="gone") or reaches a squeue state; returns its
        `scontrol show job` record."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.state(job_id)
            if (until == "gone" and state is None) or state == until:
                return self.show_job(job_id)
            time.sleep(poll)
        raise AssertionError(f"job {job_id} still {self.state(job_id)} after {timeout} s (waiting for {until})")

    def scancel(self, job_id: str, *options: str) -> None:
        self.run(["scancel", *options, job_id])


def _env_lines(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    """The real Slurm on loopback, brought up once per session (about 2.5 s, 10 s the first time on a machine;
    a no-op when already up)."""
    missing = [b for b in ("slurmctld", "slurmd", "sbatch", "munged", "slurmdbd", "mariadbd") if not shutil.which(b)]
    if missing:
        pytest.skip(f"Slurm is not installed ({', '.join(missing)} missing; tests/infra/install.sh installs it)")
    was_up = subprocess.run(["bash", str(SLURM_SH), "status"], capture_output=True).returncode == 0
    if not was_up and os.geteuid() != 0:
        pytest.skip("the test Slurm is not running and starting it needs root (tests/infra/slurm.sh up)")
    up = subprocess.run(["bash", str(SLURM_SH), "up" if os.geteuid() == 0 else "env"], capture_output=True, text=True)
    if up.returncode != 0:
        pytest.fail(f"tests/infra/slurm.sh up failed: {up.stderr.strip()}")
    env = _env_lines(up.stdout)
    cluster = SlurmCluster(
        conf=Path(env["SLURM_CONF"]),
        state_dir=Path(env["HLM_SLURM_DIR"]),
        user=env["HLM_TEST_USER"],
        partition=env["HLM_SLURM_PARTITION"],
        multi_partition=env.get("HLM_SLURM_MULTI_PARTITION", ""),
        nodes=int(env.get("HLM_SLURM_NODES", "1")),
        gpus=int(env["HLM_SLURM_GPUS"]),
        python_bin=env["HLM_PYTHON_BIN"],
        site_partitions=tuple(p for p in env.get("HLM_SLURM_SITE_PARTITIONS", "").split(",") if p),
        accounting=env.get("HLM_SLURM_ACCOUNTING", ""),
        peer=env.get("HLM_TEST_PEER", ""),
        group=env.get("HLM_TEST_GROUP", ""),
    )
    yield cluster
    if not was_up and os.environ.get("HLM_SLURM_DOWN") == "1":
        subprocess.run(["bash", str(SLURM_SH), "down"], check=False)
