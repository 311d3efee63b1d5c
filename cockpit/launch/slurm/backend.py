"""The Backend of a Slurm cluster reached over SSH: render, upload, sbatch, one squeue per poll.

Paths: the study's work directory may be written for the cluster (``$SCRATCH/hlm``, ``~/hlm``); it is
expanded once by the remote shell and then used literally for SFTP uploads and reads.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cockpit.launch.backend import JOB_ACTIONS, Backend, JobInfo, StartEstimate, UserLimits
from cockpit.launch.follow import RemoteFollower
from cockpit.launch.maintenance import Reservation
from cockpit.launch.slurm.client import SlurmClient
from cockpit.launch.slurm.kind import SlurmKeys
from cockpit.launch.slurm.parse import ParseProblem, SlurmError
from cockpit.launch.slurm.quoting import path_expr
from cockpit.launch.slurm.render import (
    check_scripts,
    dirs_command,
    job_comment,
    job_name,
    render_preflight_script,
    render_script,
    render_study_scripts,
    script_mode,
)
from cockpit.launch.slurm.start import request_of, test_only
from cockpit.launch.ssh import SshConnection, resolve_target
from cockpit.launch.ssh_keys import SshKeys
from cockpit.launch.storage import Storage, parse_probe, probe_command
from cockpit.preflight.jobs import preflight_dir
from cockpit.study.cluster_kinds import own_keys
from cockpit.study.sites import site_for
from runcontract.contract import JOB_SCRIPT_FILE, slurm_log_files

if TYPE_CHECKING:
    from cockpit.preflight.jobs import PreflightJob
    from cockpit.study.spec import Configuration, Study


class SlurmBackend(Backend):
    """A Backend over one SshConnection. ``problems`` collects parse problems until the runner takes them."""

    actions = frozenset(JOB_ACTIONS)
    connection: SshConnection  # never None here
    has_scheduler = True

    @classmethod
    def open(cls, study: Study, **kwargs: Any) -> SlurmBackend:
        return cls.from_study(study, **kwargs)

    @classmethod
    def check_scripts(cls, study: Study) -> None:
        check_scripts(study)

    @classmethod
    def render_scripts(cls, study: Study, out_dir: str | Path) -> list[Path]:
        return render_study_scripts(study, out_dir)

    def __init__(self, study: Study, connection: SshConnection, *, hold: bool = False,
                 follow_interval_s: float = 2.0) -> None:
        self.study = study
        self.connection = connection
        self.slurm = SlurmClient(connection)
        self.hold = hold
        self.follow_interval_s = follow_interval_s
        self.label = f"{study.cluster.site} {connection.target.label}"
        self.problems: list[ParseProblem] = []
        self._workdir: str | None = None
        self._starts: dict[tuple[str, ...], StartEstimate] = {}  # by what a script asks of the scheduler

    @classmethod
    def from_study(cls, study: Study, **kwargs) -> SlurmBackend:
        """Connect as [cluster] says: an ~/.ssh/config Host alias, or host/port/user fields."""
        c = own_keys(SshKeys, study.cluster)
        target = resolve_target(
            c.ssh_host, host=c.host, port=c.port, user=c.user,
            identity_file=c.identity_file, known_hosts=c.known_hosts,
        )
        return cls(study, SshConnection(target), **kwargs)

    # -- paths ----------------------------------------------------------------------------------------
    async def workdir(self) -> str:
        """The study work directory as a literal remote path (``~``/``$VAR`` expanded once, remotely)."""
        if self._workdir is None:
            expr = path_expr("[cluster].workdir", self.study.cluster.workdir)
            res = await self.connection.run(f"printf '%s' {expr}")
            path = res.stdout.strip()
            if res.exit_status != 0 or not path.startswith("/"):
                raise SlurmError(
                    f"[cluster].workdir {self.study.cluster.workdir!r} does not expand to an absolute path on the "
                    f"cluster (got {path!r}; {res.stderr.strip()})"
                )
            self._workdir = path.rstrip("/")
        return self._workdir

    async def study_dir(self) -> str:
        return f"{await self.workdir()}/{self.study.name}"

    async def run_dir(self, cfg: Configuration) -> str:
        return f"{await self.workdir()}/{self.study.name}/runs/{cfg.config_id}"

    def job_name(self, cfg: Configuration) -> str:
        return job_name(self.study, cfg)

    def log_files(self, job_id: str) -> list[str]:
        return slurm_log_files(job_id)

    def follower(self) -> RemoteFollower:
        return RemoteFollower(self.connection, interval_s=self.follow_interval_s)

    def take_problems(self) -> list[ParseProblem]:
        taken, self.problems = self.problems, []
        return taken

    # -- Backend ------------------------------------------------------------------------------------------
    async def submit(self, cfg: Configuration) -> str:
        script = render_script(self.study, cfg)
        run_dir = await self.run_dir(cfg)
        return await self.slurm.submit(script, f"{run_dir}/{JOB_SCRIPT_FILE}", hold=self.hold,
                                       mode=script_mode(self.study), prepare=dirs_command(self.study, run_dir, study_dir=await self.study_dir(),
                                                            script=f"{run_dir}/{JOB_SCRIPT_FILE}"))

    async def submit_preflight(self, job: PreflightJob, config: dict[str, Any]) -> tuple[str, str, list[str]]:
        study_dir = await self.study_dir()
        directory = preflight_dir(study_dir, job)
        made = await self.connection.run(dirs_command(self.study, directory, study_dir=study_dir))  # SFTP would only say "No such file"
        if made.exit_status != 0:
            first = next(iter(made.stderr.strip().splitlines()), "")  # mkdir -p says it once per directory
            raise SlurmError(f"cannot create {directory} on the cluster: {first or made.exit_status}")
        script = render_preflight_script(self.study, job, config, directory)
        script_path = f"{directory}/{JOB_SCRIPT_FILE}"
        # sbatch under the study's umask too: Slurm creates the job's log files with the submitter's umask
        job_id = await self.slurm.submit(script, script_path, mode=script_mode(self.study),
                                         prepare=dirs_command(self.study, directory, study_dir=study_dir,
                                                              script=script_path))
        return job_id, directory, [f"{directory}/{name}" for name in slurm_log_files(job_id)]

    async def qos_limits(self) -> tuple[dict[str, int | None], str]:
        """sacctmgr's MaxWall per QOS; the site profile's qos_max_minutes where accounting cannot be asked."""
        try:
            return await self.slurm.qos_limits(), "sacctmgr"
        except (SlurmError, ValueError):
            return dict(site_for(self.study).qos_max_minutes), f"the {self.study.cluster.site} site profile"

    async def user_limits(self) -> UserLimits | None:
        """The study's association and QOS limits and the user's jobs now (None where accounting is off)."""
        try:
            own = own_keys(SlurmKeys, self.study.cluster)
            return await self.slurm.user_limits(own.account, own.qos)
        except SlurmError:
            return None

    async def reservations(self) -> list[Reservation]:
        """The controller's reservations (``scontrol show reservation``); SchedulerUnreachable if it is away."""
        return await self.slurm.reservations()

    async def start_estimate(self, cfg: Configuration) -> StartEstimate:
        """`sbatch --test-only` of the configuration's batch script (on sbatch's standard input: nothing written,
        nothing queued); asked once per distinct request (cockpit.launch.slurm.start.request_of)."""
        script = render_script(self.study, cfg)
        request = request_of(script)
        if request not in self._starts:
            self._starts[request] = await test_only(self.connection, script, self.slurm.env_prefix)
        return self._starts[request]

    async def poll(self) -> list[JobInfo]:
        parsed = await self.slurm.squeue(name_prefix=f"{self.study.name}-", comment=job_comment(self.study))
        self.problems.extend(parsed.problems)
        return parsed.jobs

    async def final_states(self, job_ids: list[str]) -> dict[str, JobInfo]:
        parsed = await self.slurm.final_states(job_ids)
        self.problems.extend(parsed.problems)
        return {j.job_id: j for j in parsed.jobs}

    async def cancel(self, job_id: str) -> None:
        await self.slurm.cancel([job_id])

    async def requeue(self, job_id: str) -> None:
        await self.slurm.requeue([job_id])

    async def hold_job(self, job_id: str) -> None:
        await self.slurm.hold([job_id])

    async def release(self, job_id: str) -> None:
        await self.slurm.release([job_id])

    async def read_file(self, path: str, offset: int = 0) -> bytes:
        data = await self.connection.read_from(path, offset)
        return data or b""

    def storage_tool(self) -> str:
        return site_for(self.study).storage_tool

    async def storage(self) -> Storage | None:
        """The work directory's space on the cluster, read with the site profile's storage_tool over SSH."""
        tool = self.storage_tool()
        if tool == "none":
            return None
        res = await self.connection.run(probe_command(await self.workdir(), tool))
        try:
            return parse_probe(res.stdout, tool)
        except ValueError as exc:
            raise SlurmError(f"work directory space: {exc} {res.stderr.strip()[:200]}") from exc

    async def keep_aside(self, run_dir: str, to: str) -> None:
        parent = shlex.quote(to.rsplit("/", 1)[0])
        res = await self.connection.run(f"mkdir -p -m 700 {parent} && if [ -e {shlex.quote(run_dir)} ]; then "
                                        f"mv -- {shlex.quote(run_dir)} {shlex.quote(to)}; fi")
        if res.exit_status != 0:
            raise SlurmError(f"cannot move {run_dir} to {to}: {res.stderr.strip()[:200]}")

    async def list_run_dirs(self) -> list[str]:
        """Configuration ids that have a run directory on the cluster (for reconciliation)."""
        runs = f"{await self.workdir()}/{self.study.name}/runs"
        res = await self.connection.run(f"ls -1 {shlex.quote(runs)} 2>/dev/null || true")
        return [line.strip() for line in res.stdout.splitlines() if line.strip()]

    async def close(self) -> None:
        await self.connection.close()
