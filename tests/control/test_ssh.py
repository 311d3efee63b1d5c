"""The one SSH connection against a real OpenSSH server: host keys, reconnects, the one-channel follower."""

from __future__ import annotations

import asyncio
import random
import subprocess
import tempfile
from pathlib import Path

import pytest

from cockpit.launch.backend import ConnectionState
from cockpit.launch.follow import FileCursor, FollowSpec, RemoteFollower
from cockpit.launch.ssh import ConnectionInterrupted, HostKeyError, SshConnection, SshError, resolve_target


def _fingerprint(pub: Path) -> str:
    return subprocess.run(["ssh-keygen", "-lf", str(pub)], capture_output=True, text=True, check=True).stdout.split()[1]


async def test_alias_from_ssh_config_and_reused_connection(sshd_server):
    target = resolve_target("hlm-test", ssh_config=sshd_server.ssh_config)
    assert (target.host, target.port, target.user) == ("127.0.0.1", sshd_server.port, sshd_server.user)
    assert target.known_hosts == str(sshd_server.known_hosts) and target.identities_only
    conn = SshConnection(target)
    try:
        outs = [await conn.run(f"echo {i}; id -un") for i in range(5)]
        assert [o.stdout.split() for o in outs] == [[str(i), sshd_server.user] for i in range(5)]
        assert conn.connects == 1 and conn.round_trips == 5 and conn.state is ConnectionState.CONNECTED
        failing = await conn.run("echo oops >&2; exit 7")
        assert (failing.exit_status, failing.stderr) == (7, "oops\n")
    finally:
        await conn.close()


async def test_unknown_host_key_is_refused_with_what_to_do(sshd_server, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    for kh in (empty, tmp_path / "missing_known_hosts"):
        conn = SshConnection(sshd_server.target(known_hosts=str(kh)))
        with pytest.raises(HostKeyError) as err:
            await conn.connection()
        msg = str(err.value)
        assert "UNKNOWN HOST KEY" in msg
        assert _fingerprint(sshd_server.state_dir / "host_ed25519.pub") in msg
        assert f"ssh-keyscan -p {sshd_server.port} 127.0.0.1 >> {kh}" in msg
        assert conn.state is ConnectionState.FAILED and conn.connects == 0


async def test_changed_host_key_is_refused(sshd_server, tmp_path):
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    kh = tmp_path / "known_hosts"
    kh.write_text(f"[127.0.0.1]:{sshd_server.port} {' '.join(other.with_suffix('.pub').read_text().split()[:2])}\n")
    conn = SshConnection(sshd_server.target(known_hosts=str(kh)))
    with pytest.raises(HostKeyError) as err:
        await conn.connection()
    msg = str(err.value)
    assert "HOST KEY CHANGED" in msg
    assert _fingerprint(other.with_suffix(".pub")) in msg  # what was on record
    assert _fingerprint(sshd_server.state_dir / "host_ed25519.pub") in msg  # what the server shows
    assert "ssh-keygen -R" in msg


async def test_wrong_client_key_is_a_clear_error(sshd_server, tmp_path):
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    conn = SshConnection(sshd_server.target(identity_files=(str(stranger),)))
    with pytest.raises(SshError, match="authentication refused"):
        await conn.connection()


async def test_no_key_at_all_says_so(sshd_server, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.ssh
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    conn = SshConnection(sshd_server.target(identity_files=(), identities_only=False), max_attempts=1)
    with pytest.raises(SshError) as err:
        await conn.connection()
    assert "no key found (~/.ssh does not exist, no IdentityFile given and no SSH agent running); make one with " \
           "ssh-keygen -t ed25519 and register its public key with the site (docs/install.md)" in str(err.value)


async def test_reconnect_after_the_server_side_is_killed(sshd_server):
    conn = SshConnection(sshd_server.target(), backoff_initial_s=0.05)
    states: list[ConnectionState] = []
    conn.listeners.append(lambda state, detail: states.append(state))
    try:
        assert (await conn.run("echo one")).stdout == "one\n"
        assert sshd_server.kill_connections() >= 1
        await asyncio.sleep(0.2)
        assert (await conn.run("echo two")).stdout == "two\n"  # idempotent: retried on a new connection
        assert conn.connects == 2
        assert ConnectionState.RECONNECTING in states and states[-1] is ConnectionState.CONNECTED
    finally:
        await conn.close()


async def test_interrupted_non_idempotent_command_is_reported(sshd_server):
    conn = SshConnection(sshd_server.target(), backoff_initial_s=0.05)
    try:
        await conn.connection()
        task = asyncio.create_task(conn.run("sleep 5; echo done", idempotent=False))
        await asyncio.sleep(0.3)
        sshd_server.kill_connections()
        with pytest.raises(ConnectionInterrupted, match="outcome is unknown"):
            await task
        assert (await conn.run("echo back")).stdout == "back\n"
    finally:
        await conn.close()


async def test_backoff_grows_with_jitter_and_gives_up():
    conn = SshConnection(resolve_target(host="127.0.0.1", port=1, ssh_config="/nonexistent"),
                         backoff_initial_s=0.01, backoff_max_s=0.04, max_attempts=4, rng=random.Random(1))
    delays = [conn.backoff_delay(a) for a in range(1, 7)]
    caps = [0.01, 0.02, 0.04, 0.04, 0.04, 0.04]
    assert all(cap / 2 <= d <= cap for d, cap in zip(delays, caps, strict=True))
    assert len(set(delays)) == len(delays)  # jittered
    with pytest.raises(SshError, match="gave up after 4 attempts"):
        await conn.connection()
    assert conn.state is ConnectionState.FAILED


async def test_follower_resumes_at_the_committed_offset(sshd_server):
    folder = Path(tempfile.mkdtemp(prefix="hlm-follow-"))
    folder.chmod(0o755)
    metrics = folder / "metrics.jsonl"
    log = folder / "slurm-1.out"
    metrics.write_text('{"step": 1, "t": 1}\n{"step": 2, "t"')
    log.write_text("")
    for f in (metrics, log):
        f.chmod(0o644)
    conn = SshConnection(sshd_server.target(), backoff_initial_s=0.05)
    follower = RemoteFollower(conn, interval_s=0.1)
    cursors = {"c/metrics.jsonl": FileCursor(), "c/slurm-1.out": FileCursor()}
    records: list[dict] = []
    lines: list[str] = []

    async def pump(seconds: float) -> None:
        for _ in range(int(seconds / 0.1)):
            await asyncio.sleep(0.1)
            for chunk in await follower.drain():
                cur = cursors[chunk.key]
                if chunk.key.endswith(".jsonl"):
                    fed = cur.feed_jsonl(chunk)
                    if fed:
                        records.extend(fed[0])
                else:
                    lines.extend(cur.feed_text(chunk) or [])
            await follower.update([FollowSpec(k, str(folder / k.split("/")[1]), c.expected)
                                   for k, c in cursors.items()])

    try:
        await pump(0.5)
        with metrics.open("a") as fh:
            fh.write(': 2}\n{broken\n{"step": 3, "t": 3}\n')
        with log.open("a") as fh:
            fh.write("hello\nwor")
        await pump(0.5)
        sshd_server.kill_connections()
        with metrics.open("a") as fh:  # written while the connection is down
            fh.write('{"step": 4, "t": 4}\n')
        with log.open("a") as fh:
            fh.write("ld\n")
        await pump(1.5)
        assert [r["step"] for r in records] == [1, 2, 3, 4]  # nothing lost, nothing twice
        assert lines == ["hello", "world"]
        assert cursors["c/metrics.jsonl"].bad_lines == 1
        assert follower.restarts >= 2 and conn.connects >= 2
    finally:
        await follower.close()
        await conn.close()


async def test_proxy_jump_is_checked_as_strictly(sshd_server, tmp_path):
    target = resolve_target("hlm-test-via-jump", ssh_config=sshd_server.ssh_config)
    assert target.jump is not None and target.jump.port == sshd_server.port
    conn = SshConnection(target)
    try:
        res = await conn.run("echo $SSH_CONNECTION")
        assert res.stdout.split()[0] == "127.0.0.1"  # the hop arrives from the jump host's forwarding
        assert conn._jump is not None and conn._jump.connected
    finally:
        await conn.close()
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    strict = resolve_target("hlm-test-via-jump", ssh_config=sshd_server.ssh_config, known_hosts=str(empty))
    assert strict.jump is not None and strict.jump.known_hosts == str(empty)
    with pytest.raises(HostKeyError, match="UNKNOWN HOST KEY"):
        await SshConnection(strict).connection()
