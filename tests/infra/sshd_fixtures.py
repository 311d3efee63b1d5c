"""pytest plugin: a real OpenSSH server on loopback (tests/infra/sshd.sh) logging in as the Slurm test user.

Fixtures: ``sshd_server`` (session) -> :class:`Sshd`. The server listens on 127.0.0.1:2222, or on a free port
when 2222 is taken (another test process), with its own host key; only the generated client key is accepted.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "sshd.sh"


@dataclass(frozen=True)
class Sshd:
    state_dir: Path
    port: int
    user: str
    key: Path
    known_hosts: Path
    pid: int
    ssh_config: Path  # `Host hlm-test` (this server) and `Host hlm-test-via-jump` (the same, through itself)

    def target(self, **overrides):
        """An SshTarget for this server (cockpit.launch.ssh), with strict host keys from its known_hosts."""
        from cockpit.launch.ssh import SshTarget

        fields = dict(host="127.0.0.1", port=self.port, user=self.user, identity_files=(str(self.key),),
                      identities_only=True, known_hosts=str(self.known_hosts), keepalive_s=2.0)
        fields.update(overrides)
        return SshTarget(**fields)

    def connection_pids(self) -> list[int]:
        """Per-connection server processes (children of the listening sshd), oldest first."""
        return sorted(pid for pid, (ppid, _) in _processes().items() if ppid == self.pid)

    def kill_connections(self) -> int:
        """Kill the server side of every open connection: the per-connection sshd (privileged monitor) and
        its sshd descendants (the unprivileged process that owns the socket). Returns how many connections."""
        procs = _processes()
        roots = [pid for pid, (ppid, _) in procs.items() if ppid == self.pid]
        doomed = list(roots)
        frontier = list(roots)
        while frontier:
            parent = frontier.pop()
            for pid, (ppid, comm) in procs.items():
                if ppid == parent and comm == "sshd":
                    doomed.append(pid)
                    frontier.append(pid)
        for pid in doomed:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return len(roots)


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command name) from /proc."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        out[int(entry.name)] = (int(stat.rsplit(")", 1)[1].split()[1]), comm)
    return out


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _pick_port() -> int:
    if _free(2222):
        return 2222
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_sshd(state_dir: Path, port: int | None = None) -> Sshd:
    if os.geteuid() != 0 or shutil.which("sshd", path="/usr/sbin:/usr/bin:" + os.environ.get("PATH", "")) is None:
        pytest.skip("a real sshd needs root and Debian's openssh-server")
    port = port or _pick_port()
    out = subprocess.run(["bash", str(SCRIPT), "start", str(state_dir), str(port)], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.fail(f"tests/infra/sshd.sh failed ({out.returncode}): {out.stderr.strip()}")
    env = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    cfg = state_dir / "ssh_config"
    cfg.write_text(
        f"Host hlm-test\n  HostName 127.0.0.1\n  Port {env['SSHD_PORT']}\n  User {env['SSHD_USER']}\n"
        f"  IdentityFile {env['SSHD_KEY']}\n  IdentitiesOnly yes\n  UserKnownHostsFile {env['SSHD_KNOWN_HOSTS']}\n"
        f"Host hlm-test-via-jump\n  HostName 127.0.0.1\n  Port {env['SSHD_PORT']}\n  User {env['SSHD_USER']}\n"
        f"  IdentityFile {env['SSHD_KEY']}\n  IdentitiesOnly yes\n  UserKnownHostsFile {env['SSHD_KNOWN_HOSTS']}\n"
        f"  ProxyJump hlm-test\n"
    )
    return Sshd(state_dir, int(env["SSHD_PORT"]), env["SSHD_USER"], Path(env["SSHD_KEY"]),
                Path(env["SSHD_KNOWN_HOSTS"]), int(env["SSHD_PID"]), cfg)


def stop_sshd(state_dir: Path) -> None:
    subprocess.run(["bash", str(SCRIPT), "stop", str(state_dir)], capture_output=True, text=True)


@pytest.fixture(scope="session")
def sshd_server():
    # Not under pytest's tmp dir: that is 0700 root, and sshd reads authorized_keys as the test user.
    state = Path(tempfile.mkdtemp(prefix="hlm-sshd-"))
    state.chmod(0o755)
    server = start_sshd(state)
    try:
        yield server
    finally:
        stop_sshd(state)
        shutil.rmtree(state, ignore_errors=True)
