"""The Slurm client over the real sshd against the real Slurm: submit, one squeue, hold/release/cancel,
final states without accounting. The jobs are short shell scripts (no training result is claimed here)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from cockpit.launch.backend import JobState
from cockpit.launch.slurm.client import SlurmClient
from cockpit.launch.slurm.parse import SlurmError, SubmitRefused
from cockpit.launch.ssh import SshConnection


def _script(name: str, body: str, workdir) -> str:
    return (f"#!/bin/bash\n#SBATCH --job-name={name}\n#SBATCH --comment=hlm-test-{name}\n"
            f"#SBATCH --output={workdir}/%j.out\n#SBATCH --time=00:02:00\n{body}\n")


async def _wait_gone(client: SlurmClient, prefix: str, ids: set[str], timeout: float = 30) -> None:
    for _ in range(int(timeout / 0.2)):
        queued = {j.job_id for j in (await client.squeue(name_prefix=prefix)).jobs}
        if not queued & ids:
            return
        await asyncio.sleep(0.2)
    pytest.fail(f"jobs {ids} still queued after {timeout} s")


async def test_submit_poll_control_and_final_states(sshd_server, slurm_env, remote_workdir):
    prefix = f"ctlcli-{uuid.uuid4().hex[:6]}-"
    conn = SshConnection(sshd_server.target())
    client = SlurmClient(conn)
    try:
        ok = await client.submit(_script(prefix + "ok", f"echo ran > {remote_workdir}/ok.txt", remote_workdir),
                                 f"{remote_workdir}/ok.sh", hold=True)
        bad = await client.submit(_script(prefix + "bad", "exit 3", remote_workdir), f"{remote_workdir}/bad.sh",
                                  hold=True)
        slow = await client.submit(_script(prefix + "slow", "sleep 60", remote_workdir), f"{remote_workdir}/slow.sh",
                                   hold=True)
        calls = dict(client.calls)
        polled = await client.squeue(name_prefix=prefix)
        assert client.calls["squeue"] == calls.get("squeue", 0) + 1  # one call for all of them
        assert {j.job_id: (j.state, j.reason) for j in polled.jobs} == {
            i: (JobState.PENDING, "JobHeldUser") for i in (ok, bad, slow)
        }
        assert all(j.extra["held"] == "True" for j in polled.jobs) and polled.problems == []
        by_comment = await client.squeue(comment=f"hlm-test-{prefix}ok")
        assert [j.job_id for j in by_comment.jobs] == [ok]

        await client.release([ok, bad, slow])
        for _ in range(100):
            states = {j.job_id: j.state for j in (await client.squeue(name_prefix=prefix)).jobs}
            if states.get(slow) is JobState.RUNNING:
                break
            await asyncio.sleep(0.2)
        await client.cancel([slow])
        await _wait_gone(client, prefix, {ok, bad, slow})

        before = dict(client.calls)
        finals = await client.final_states([ok, bad, slow])
        # one sacct for all three (the test cluster keeps accounting, as the site does); a job accounting has
        # not recorded yet is asked of scontrol in at most ONE more round trip
        assert client.calls["sacct"] == before.get("sacct", 0) + 1
        assert client.calls.get("scontrol", 0) <= before.get("scontrol", 0) + 1
        got = {j.job_id: (j.state, j.exit_code) for j in finals.jobs}
        assert got[ok] == (JobState.COMPLETED, 0)
        assert got[bad] == (JobState.FAILED, 3)
        assert got[slow][0] is JobState.CANCELLED
        assert (remote_workdir / "ok.txt").read_text() == "ran\n"
        assert (await client.final_states([])).jobs == []
    finally:
        await conn.close()


async def test_refusals_and_bad_ids(sshd_server, slurm_env, remote_workdir):
    conn = SshConnection(sshd_server.target())
    client = SlurmClient(conn)
    try:
        with pytest.raises(SubmitRefused, match="Requested node configuration is not available"):
            await client.submit(_script("ctlcli-gpus", "true", remote_workdir), f"{remote_workdir}/g.sh",
                                extra_args=["--gpus-per-node=5"])
        with pytest.raises(SlurmError, match="refusing to pass '1; rm -rf ~' to Slurm"):
            await client.cancel(["1; rm -rf ~"])
        with pytest.raises(SlurmError, match="scancel"):
            await client.cancel(["999999999"])
    finally:
        await conn.close()
