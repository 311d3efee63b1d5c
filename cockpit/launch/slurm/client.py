"""Slurm client over a command runner (the cluster's SSH connection, or a local shell).

Three rules keep a login node happy and the cockpit robust:
- one ``squeue`` per poll for all of a study's jobs, with an explicit ``--format``, never one call per job;
- jobs that left the queue are resolved in one batch: ``sacct`` where accounting exists, else
  ``scontrol show job`` while the controller remembers them; the caller falls back to run-directory files;
- output is parsed defensively: anything unexpected becomes a :class:`ParseProblem`, never an exception.

The parsers and the formats they read are cockpit.launch.slurm.parse.
"""


from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from typing import Protocol

from cockpit.launch import backend
from cockpit.launch.backend import SchedulerUnreachable
from cockpit.launch.maintenance import Reservation
from cockpit.launch.slurm.parse import (
    QUERY_TIMEOUT_S,
    SACCT_FIELDS,
    SQUEUE_FORMAT,
    Parsed,
    SlurmError,
    SubmitUnknown,
    _ids,
    _slurm_message,
    controller_unreachable,
    parse_limits,
    parse_reservations,
    parse_sacct,
    parse_sbatch,
    parse_scontrol,
    parse_squeue,
    wall_minutes,
)
from cockpit.launch.ssh import CommandResult, CommandTimedOut


class CommandRunner(Protocol):
    """What the Slurm client needs from a transport: run a shell command, write a file."""

    async def run(self, command: str, *, input: str | None = None, timeout: float | None = 60.0,
                  idempotent: bool = True) -> CommandResult: ...

    async def write_file(self, remote_path: str, data: bytes, mode: int = 0o644) -> None: ...


class SlurmClient:
    """Slurm commands over one runner. ``env_prefix`` (e.g. 'module load slurm &&') precedes every command."""

    def __init__(self, runner: CommandRunner, *, env_prefix: str = "") -> None:
        self.runner = runner
        self.env_prefix = env_prefix
        self.calls: dict[str, int] = {}

    async def _run(self, tool: str, args: Sequence[str], *, idempotent: bool = True,
                   cwd: str | None = None, prepare: str = "", timeout: float | None = 60.0) -> CommandResult:
        self.calls[tool] = self.calls.get(tool, 0) + 1
        cmd = shlex.join([tool, *args])
        if cwd:
            cmd = f"cd {shlex.quote(cwd)} && {cmd}"
        if prepare:
            cmd = f"{prepare} && {cmd}"
        if self.env_prefix:
            cmd = f"{self.env_prefix} {cmd}"
        return await self.runner.run(cmd, idempotent=idempotent, timeout=timeout)

    async def _query(self, tool: str, args: Sequence[str], *, prepare: str = "") -> CommandResult:
        """A read-only Slurm command; SchedulerUnreachable when the controller did not answer (Slurm's words,
        or no answer within QUERY_TIMEOUT_S): what it would have said is unknown, not empty."""
        try:
            result = await self._run(tool, args, prepare=prepare, timeout=QUERY_TIMEOUT_S)
        except CommandTimedOut as exc:
            raise SchedulerUnreachable(f"{tool}: no answer within {QUERY_TIMEOUT_S:g} s") from exc
        if result.exit_status != 0 and controller_unreachable(result.stderr + result.stdout):
            raise SchedulerUnreachable(f"{tool}: {_slurm_message(result.stderr + result.stdout)}")
        return result

    async def reservations(self) -> list[Reservation]:
        """Every reservation the controller shows (``scontrol show reservation``, times in epoch seconds);
        SchedulerUnreachable when the controller does not answer."""
        result = await self._query("scontrol", ["-o", "show", "reservation"], prepare="export SLURM_TIME_FORMAT=%s")
        if result.exit_status != 0:
            raise SlurmError(f"scontrol show reservation failed: {_slurm_message(result.stderr) or result.exit_status}")
        return parse_reservations(result.stdout)

    async def submit(self, script: str | bytes, remote_path: str, *, hold: bool = False,
                     extra_args: Sequence[str] = (), mode: int = 0o600, prepare: str = "") -> str:
        """Upload the script (``mode``), then ``sbatch --parsable`` it from its directory, after the shell
        line ``prepare`` (render.dirs_command: the directories' modes) in the same round trip; returns the
        job id."""
        data = script.encode() if isinstance(script, str) else script
        await self.runner.write_file(remote_path, data, mode)
        directory, _, _ = remote_path.rpartition("/")
        args = ["--parsable", *(["--hold"] if hold else []), *extra_args, remote_path]
        try:
            result = await self._run("sbatch", args, idempotent=False, cwd=directory or None, prepare=prepare)
        except CommandTimedOut as exc:
            raise SubmitUnknown(f"sbatch: no answer in time, the job may be queued: {exc}") from exc
        return parse_sbatch(result)

    async def user_limits(self, account: str | None, qos: str | None) -> backend.UserLimits:
        """The user's association and QOS limits and the user's jobs now, in one round trip; SlurmError where
        accounting cannot be asked."""
        self.calls["sacctmgr"] = self.calls.get("sacctmgr", 0) + 1
        cmd = ('sacctmgr -nP show assoc where user="$(id -un)" format=Account,QOS,MaxJobs,MaxSubmitJobs'
               " && echo @@ && sacctmgr -nP show qos format=Name,MaxJobsPerUser,MaxSubmitJobsPerUser"
               " && echo @@ && squeue --me --noheader --array --format='%t|%q|%a'")
        if self.env_prefix:
            cmd = f"{self.env_prefix} {cmd}"
        res = await self.runner.run(cmd)
        parts = res.stdout.split("@@\n")
        if res.exit_status != 0 or len(parts) != 3:
            raise SlurmError(f"sacctmgr failed: {_slurm_message(res.stderr) or res.exit_status}")
        assoc, qos_text, jobs = parts
        return parse_limits(assoc, qos_text, jobs, account, qos)

    async def squeue(self, *, name_prefix: str = "", comment: str = "") -> Parsed:
        """All of the user's jobs of one study in exactly one call (filtered by name prefix or comment)."""
        result = await self._query("squeue", ["--me", "--noheader", "--array", f"--format={SQUEUE_FORMAT}"])
        if result.exit_status != 0:
            raise SlurmError(f"squeue failed: {_slurm_message(result.stderr) or result.exit_status}")
        return parse_squeue(result.stdout, name_prefix=name_prefix, comment=comment)

    async def qos_limits(self) -> dict[str, int | None]:
        """MaxWall of every QOS in minutes (None: no MaxWall), from one ``sacctmgr``; raises SlurmError
        where accounting cannot be asked."""
        res = await self._run("sacctmgr", ["-n", "-P", "show", "qos", "format=Name,MaxWall"])
        if res.exit_status != 0:
            raise SlurmError(f"sacctmgr failed: {_slurm_message(res.stderr) or res.exit_status}")
        out: dict[str, int | None] = {}
        for line in res.stdout.splitlines():
            name, _, wall = line.strip().partition("|")
            if name:
                out[name] = wall_minutes(wall.strip()) if wall.strip() else None
        return out

    async def final_states(self, job_ids: Iterable[str]) -> Parsed:
        """Final states of jobs that left the queue: one ``sacct``; without accounting one batched
        ``scontrol`` round trip. Jobs neither remembers are simply absent from the result."""
        ids = _ids(job_ids)
        if not ids:
            return Parsed()
        res = await self._query(
            "sacct", ["-X", "-n", "-P", "-j", ",".join(ids), f"--format={','.join(SACCT_FIELDS)}"]
        )
        if res.exit_status == 0 and "accounting storage is disabled" not in (res.stderr + res.stdout).lower():
            parsed = parse_sacct(res.stdout)
            if {j.job_id for j in parsed.jobs} >= set(ids):
                return parsed
            missing = [j for j in ids if j not in {x.job_id for x in parsed.jobs}]
        else:
            parsed, missing = Parsed(), ids
        loop = "; ".join(f"scontrol -o show job {shlex.quote(j)} 2>&1" for j in missing)
        self.calls["scontrol"] = self.calls.get("scontrol", 0) + 1
        try:
            res = await self.runner.run(f"{self.env_prefix} {{ {loop}; }}".strip(), idempotent=True,
                                        timeout=QUERY_TIMEOUT_S)
        except CommandTimedOut as exc:
            raise SchedulerUnreachable(f"scontrol: no answer within {QUERY_TIMEOUT_S:g} s") from exc
        if controller_unreachable(res.stdout + res.stderr):  # not "forgotten": unknown until it answers
            raise SchedulerUnreachable(f"scontrol: {_slurm_message(res.stdout + res.stderr)}")
        more = parse_scontrol(res.stdout)
        parsed.jobs.extend(j for j in more.jobs if j.job_id in set(missing))
        parsed.problems.extend(more.problems)
        return parsed

    async def _control(self, tool: str, args: list[str], what: str) -> None:
        res = await self._run(tool, args)
        # scancel exits 0 for an unknown job and says so only with -v: an error line counts as failure too
        errors = [ln for ln in res.stderr.splitlines() if "error" in ln.lower() and "already completing" not in ln]
        if res.exit_status != 0 or errors:
            raise SlurmError(f"{what} failed: {_slurm_message(res.stderr) or res.exit_status}")

    async def cancel(self, job_ids: Iterable[str]) -> None:
        ids = _ids(job_ids)
        if ids:
            await self._control("scancel", ["--verbose", *ids], f"scancel {' '.join(ids)}")

    async def requeue(self, job_ids: Iterable[str]) -> None:
        ids = _ids(job_ids)
        if ids:
            await self._control("scontrol", ["requeue", ",".join(ids)], "requeue")

    async def hold(self, job_ids: Iterable[str]) -> None:
        ids = _ids(job_ids)
        if ids:
            await self._control("scontrol", ["hold", ",".join(ids)], "hold")

    async def release(self, job_ids: Iterable[str]) -> None:
        ids = _ids(job_ids)
        if ids:
            await self._control("scontrol", ["release", ",".join(ids)], "release")
