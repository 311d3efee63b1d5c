"""The local executor: runs a study's configurations on this machine, with no scheduler.

Same launcher as on a cluster (`torchrun --standalone --nproc-per-node N`, CPU workers with gloo or local
GPUs), same run directory, same result files; stdout/stderr go to stdout.log / stderr.log there. A job of one
worker starts it directly, with the environment torchrun would give it (`one_worker_env`): the launcher's own
start-up (a second torch import, about 2.3 s of CPU) buys nothing for one process. Each job
reserves nproc x cpus_per_task cores (and, when GPUs are in use, nproc GPUs, passed on as
CUDA_VISIBLE_DEVICES) and starts only when they are free, so jobs never oversubscribe the machine; the
others wait PENDING in submission order.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sbatch_templates
from cockpit.launch.backend import Backend, JobInfo, JobState
from cockpit.launch.slurm.render import job_comment, job_name, render_study_scripts
from cockpit.preflight.jobs import preflight_dir
from runcontract.contract import (
    EXIT_FILE,
    EXIT_OK,
    LOCAL_STDERR_FILE,
    LOCAL_STDOUT_FILE,
    PREFLIGHT_ENV_FILE,
    ContractError,
)
from runcontract.modes import Sharing, make_dirs, open_new
from runcontract.records import read_exit, write_config

if TYPE_CHECKING:
    from cockpit.preflight.jobs import PreflightJob
    from cockpit.study.spec import Configuration, Study

KILL_GRACE_S = 30.0  # after SIGTERM, how long the trainer has to checkpoint before SIGKILL


class LocalSubmitError(ValueError):
    """A configuration cannot run on this machine (e.g. it needs more cores than there are)."""


@dataclass
class _Job:
    job_id: str
    cfg: Configuration
    run_dir: Path
    cores: int
    gpus_needed: int = 0
    gpus: tuple[str, ...] = ()
    state: JobState = JobState.PENDING
    reason: str = "Resources"
    submitted: float = field(default_factory=time.time)
    started: float | None = None
    ended: float | None = None
    exit_code: int | None = None
    process: asyncio.subprocess.Process | None = None
    task: asyncio.Task[None] | None = None
    stop_as: JobState | None = None  # set by cancel() or the time limit
    preflight: bool = False  # a preflight job: ends with its launcher's exit code, writes no exit.json


def machine_cores() -> int:
    """Cores this process may use (the affinity mask, not the whole machine)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def visible_gpus() -> list[str]:
    """GPU ids this process may use: CUDA_VISIBLE_DEVICES when set, else what NVML counts (none without
    nvidia-ml-py or a driver). NVML, not torch: the cockpit never imports torch."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g.strip() for g in env.split(",") if g.strip() and not g.strip().startswith("-")]
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return [str(i) for i in range(pynvml.nvmlDeviceGetCount())]
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no library, no driver, no GPU: CPU workers
        return []


class LocalExecutor(Backend):
    """Backend that runs jobs as child processes of the cockpit."""

    on_this_machine = True
    place_words = "this machine"
    no_start_estimate = "local executor: no scheduler and no queue, a run starts when it is submitted"

    @classmethod
    def open(cls, study: Study, **kwargs: Any) -> LocalExecutor:
        return cls(study, **kwargs)

    @classmethod
    def known_cores(cls) -> int | None:
        return machine_cores()

    @classmethod
    def render_scripts(cls, study: Study, out_dir: str | Path) -> list[Path]:
        """The batch scripts the study would run under Slurm, for inspection before moving it to a cluster."""
        return render_study_scripts(study, out_dir)

    def __init__(self, study: Study, max_cores: int | None = None, gpus: list[str] | None = None) -> None:
        self.study = study
        self.max_cores = max_cores or machine_cores()
        self.cores_per_node = self.max_cores
        device = study.train.get("device", "auto")
        # GPUs are handed out only when the trainer may use them ([train].device "auto" or "cuda").
        self.gpus = [] if device == "cpu" else list(gpus if gpus is not None else visible_gpus())
        if device == "cuda" and not self.gpus:
            raise LocalSubmitError('[train].device is "cuda" but this machine has no visible GPU')
        self.sharing = Sharing(study.cluster.share_group)  # the run directories' modes and group
        self.label = f"local ({self.max_cores} cores" + (f", {len(self.gpus)} GPUs)" if self.gpus else ")")
        self._jobs: dict[str, _Job] = {}
        self._ids = itertools.count(1)
        # unique across executors of one process and processes of one pid (a store keeps every job id it saw)
        self._prefix = f"local-{os.getpid()}-{time.time_ns() // 1_000_000 % 10**9}"
        self._host = socket.gethostname()
        self._python = sys.executable if study.cluster.python == "python3" else os.path.expanduser(study.cluster.python)

    # -- Backend -------------------------------------------------------------------------------------

    async def submit(self, cfg: Configuration) -> str:
        """Queue one configuration: writes its config.json now, starts it when its cores are free."""
        nproc = cfg.workers
        cores = cfg.node_cores
        if cfg.nodes != 1:
            raise LocalSubmitError(f"configuration {cfg.config_id} asks for {cfg.nodes} nodes; the local executor has one")
        if not self.study.fits_node(cfg, self.max_cores):
            raise LocalSubmitError(
                f"configuration {cfg.config_id} needs {nproc} workers x {cfg.cpus_per_task} cores = {cores} cores "
                f"but this machine allows {self.max_cores}"
            )
        if self.gpus and nproc > len(self.gpus):
            raise LocalSubmitError(
                f"configuration {cfg.config_id} needs {nproc} GPUs but this machine has {len(self.gpus)} "
                '(set [train].device = "cpu" to run CPU workers instead)'
            )
        run_dir = make_dirs(self.study.run_dir(cfg), self.sharing)
        write_config(run_dir, self.study.run_config(cfg))
        job = _Job(
            job_id=f"{self._prefix}-{next(self._ids)}",
            cfg=cfg,
            run_dir=run_dir,
            cores=cores,
            gpus_needed=nproc if self.gpus else 0,
        )
        self._jobs[job.job_id] = job
        self._schedule()
        return job.job_id

    async def submit_preflight(self, job: PreflightJob, config: dict[str, Any]) -> tuple[str, str, list[str]]:
        """Queue the preflight like a configuration: same cores, same launcher, `hlm-train preflight`."""
        cfg = job.cfg
        cores = cfg.node_cores
        if cfg.nodes != 1 or not self.study.fits_node(cfg, self.max_cores):
            raise LocalSubmitError(f"preflight {job.name} needs {cfg.nodes} node(s) x {cores} cores; this machine "
                                   f"allows 1 x {self.max_cores}")
        directory = make_dirs(preflight_dir(await self.study_dir(), job), self.sharing)
        write_config(directory, config)
        local = _Job(job_id=f"{self._prefix}-{next(self._ids)}", cfg=cfg, run_dir=directory, cores=cores,
                     gpus_needed=cfg.gpus_per_node if self.gpus else 0, preflight=True)
        self._jobs[local.job_id] = local
        self._schedule()
        return local.job_id, str(directory), [str(directory / name) for name in self.log_files(local.job_id)]

    async def poll(self) -> list[JobInfo]:
        """Jobs still queued or running (finished ones are reported by final_states, as with Slurm)."""
        return [self._info(job) for job in self._jobs.values() if job.state.is_active]

    async def final_states(self, job_ids: list[str]) -> dict[str, JobInfo]:
        return {jid: self._info(self._jobs[jid]) for jid in job_ids if jid in self._jobs and self._jobs[jid].state.is_final}

    async def cancel(self, job_id: str) -> None:
        """Pending: dropped. Running: SIGTERM to its process group (the trainer checkpoints), SIGKILL after
        KILL_GRACE_S."""
        job = self._jobs.get(job_id)
        if job is None:
            raise KeyError(f"unknown local job {job_id!r}")
        if job.state == JobState.PENDING:
            self._finish(job, JobState.CANCELLED, None)
            self._schedule()
            return
        if job.state.is_active:
            self._stop(job, JobState.CANCELLED)

    def log_names(self, job_id: str) -> list[str]:
        return [LOCAL_STDERR_FILE, LOCAL_STDOUT_FILE]

    async def read_file(self, path: str, offset: int = 0) -> bytes:
        """Bytes of a file from offset; relative paths are relative to the study directory."""
        full = Path(path) if os.path.isabs(path) else Path(self.study.study_dir()) / path
        return await asyncio.to_thread(_read_from, full, offset)

    async def close(self) -> None:
        """Stop every job this executor started and wait for them (they are its children)."""
        for job in self._jobs.values():
            if job.state == JobState.PENDING:
                self._finish(job, JobState.CANCELLED, None)
            elif job.state.is_active:
                self._stop(job, JobState.CANCELLED)
        tasks = [job.task for job in self._jobs.values() if job.task is not None]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def log_files(self, job_id: str) -> list[str]:
        return [LOCAL_STDOUT_FILE, LOCAL_STDERR_FILE]

    # -- helpers ---------------------------------------------------------------------------------------------

    async def wait(self, job_id: str) -> JobInfo:
        """Wait until one job is final (for scripts and tests)."""
        job = self._jobs[job_id]
        while not job.state.is_final:
            if job.task is not None:
                await asyncio.shield(job.task)
            else:
                await asyncio.sleep(0.05)
        return self._info(job)

    def cores_in_use(self) -> int:
        return sum(job.cores for job in self._jobs.values() if job.state in (JobState.RUNNING, JobState.COMPLETING))

    def _schedule(self) -> None:
        """Start pending jobs in submission order while their cores and GPUs fit (a job that does not fit
        blocks the ones behind it, so a large job is not starved by small ones)."""
        free = self.max_cores - self.cores_in_use()
        busy = {g for job in self._jobs.values() if job.state in (JobState.RUNNING, JobState.COMPLETING) for g in job.gpus}
        free_gpus = [g for g in self.gpus if g not in busy]
        for job in self._jobs.values():
            if job.state != JobState.PENDING:
                continue
            if job.cores > free or job.gpus_needed > len(free_gpus):
                break
            free -= job.cores
            job.gpus, free_gpus = tuple(free_gpus[: job.gpus_needed]), free_gpus[job.gpus_needed :]
            job.state, job.reason, job.started = JobState.RUNNING, "", time.time()
            self._changed()
            job.task = asyncio.get_running_loop().create_task(self._run(job))

    async def _run(self, job: _Job) -> None:
        try:
            code = await self._prepare_and_train(job)
        except Exception as exc:  # a job must end in a final state whatever went wrong
            _note(job.run_dir, f"hlm: the local executor could not run the trainer: {exc}")
            code = 127
        marker = None if job.preflight else _exit_marker(job.run_dir, since=job.started or 0.0)
        trainer_code = code if job.preflight else (marker.get("code") if marker else None)
        if job.stop_as is not None:
            state = job.stop_as
        elif trainer_code == EXIT_OK and code == 0:
            state = JobState.COMPLETED
        else:
            state = JobState.FAILED
        self._finish(job, state, trainer_code if isinstance(trainer_code, int) else code)
        self._schedule()

    async def _prepare_and_train(self, job: _Job) -> int:
        """The workload's prepare step (the HLM's `trainer prepare`), then the launcher running the workload
        on every worker, in the run directory; returns the last exit code."""
        cfg = job.cfg
        nproc = cfg.nodes * cfg.gpus_per_node
        workload = self.study.workload
        env = {**os.environ, **self.study.cluster.env, **workload.run_env(str(job.run_dir)),
               "OMP_NUM_THREADS": str(cfg.cpus_per_task)}
        if job.gpus:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(job.gpus)
        run = str(job.run_dir)
        deadline = (job.started or time.time()) + self.study.cluster.time_limit_minutes * 60.0
        launcher, launched = ([self._python, "-u"], one_worker_env(job.job_id)) if nproc == 1 else \
            ([self._python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(nproc)], {})
        with open_new(job.run_dir / LOCAL_STDOUT_FILE, "ab", self.sharing) as out, \
                open_new(job.run_dir / LOCAL_STDERR_FILE, "ab", self.sharing) as err:
            if job.preflight:  # as the batch script does: the Python first, then every worker
                with resources.as_file(resources.files("sbatch_templates") / sbatch_templates.ENV_PROBE) as probe:
                    await self._step(job, [self._python, str(probe), PREFLIGHT_ENV_FILE], env, out, err, deadline)
                return await self._step(job, [*launcher, "-m", "trainer", "preflight", "--run-dir", run],
                                        {**env, **launched}, out, err, deadline)
            prepare = workload.prepare_args(run)
            if prepare is not None:
                code = await self._step(job, [self._python, *prepare], env, out, err, deadline)
                if code != 0 or job.stop_as is not None:
                    return code
            env["HLM_LAUNCH_TIME"] = f"{time.time():.6f}"
            return await self._step(job, [*launcher, *workload.worker_args(cfg.all_values(), run)],
                                    {**env, **launched}, out, err, deadline)

    async def _step(self, job: _Job, argv: list[str], env: dict[str, str], out, err, deadline: float) -> int:
        """One process (group) of the job; SIGTERM at the time limit, as Slurm would."""
        job.process = await asyncio.create_subprocess_exec(
            *argv, cwd=job.run_dir, env=env, stdout=out, stderr=err, stdin=asyncio.subprocess.DEVNULL, start_new_session=True,
            umask=self.sharing.umask,  # what the workers' libraries create: private, or the study's group
        )
        try:
            return await asyncio.wait_for(asyncio.shield(job.process.wait()), timeout=max(0.1, deadline - time.time()))
        except TimeoutError:
            self._stop(job, JobState.TIMEOUT)
            return await job.process.wait()
        finally:
            if job.process.returncode is not None:
                job.process = None

    def _stop(self, job: _Job, as_state: JobState) -> None:
        job.stop_as = job.stop_as or as_state
        process = job.process
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        asyncio.get_running_loop().call_later(KILL_GRACE_S, _kill_group, process)

    def _finish(self, job: _Job, state: JobState, exit_code: int | None) -> None:
        job.state, job.exit_code, job.ended, job.reason = state, exit_code, time.time(), ""
        self._changed()

    def _changed(self) -> None:
        if self.on_job_change is not None:
            self.on_job_change()

    def _info(self, job: _Job) -> JobInfo:
        end = job.ended or time.time()
        return JobInfo(
            job_id=job.job_id,
            name=job_name(self.study, job.cfg),
            state=job.state,
            reason=job.reason,
            elapsed_s=(end - job.started) if job.started else 0.0,
            time_limit_s=self.study.cluster.time_limit_minutes * 60.0,
            nodes=job.cfg.nodes,
            nodelist=self._host if job.started else "",
            comment=job_comment(self.study),
            exit_code=job.exit_code,
            extra={
                "run_dir": str(job.run_dir),
                "config_id": job.cfg.config_id,
                "cores": str(job.cores),
                "gpus": ",".join(job.gpus),
                "started_at": f"{job.started:.6f}" if job.started else "",
                "ended_at": f"{job.ended:.6f}" if job.ended else "",
            },
        )


def one_worker_env(run_id: str) -> dict[str, str]:
    """What `torchrun --standalone --nproc-per-node 1` gives its one worker (torch.distributed.elastic's
    LocalElasticAgent): rank 0 of 1, a free port on this host for a process group of one (rank 0 holds its
    store: no agent holds one, so TORCHELASTIC_USE_AGENT_STORE is False), and torchelastic's run id, by which
    Lightning and Accelerate recognise the launch. The worker's own exit code is the job's (torchrun's is 1 for
    any failure)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    one = {name: "1" for name in ("LOCAL_WORLD_SIZE", "WORLD_SIZE", "GROUP_WORLD_SIZE", "ROLE_WORLD_SIZE")}
    return {**one, "RANK": "0", "LOCAL_RANK": "0", "GROUP_RANK": "0", "ROLE_RANK": "0", "ROLE_NAME": "default",
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "TORCHELASTIC_RESTART_COUNT": "0",
            "TORCHELASTIC_MAX_RESTARTS": "0", "TORCHELASTIC_RUN_ID": run_id, "TORCHELASTIC_USE_AGENT_STORE": "False",
            "TORCHELASTIC_SIGNALS_TO_HANDLE": "SIGTERM,SIGINT,SIGHUP,SIGQUIT",
            "TORCH_NCCL_ASYNC_ERROR_HANDLING": os.environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")}


def _kill_group(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


def _exit_marker(run_dir: Path, since: float) -> dict | None:
    """This attempt's exit.json; an older one belongs to an earlier attempt (the trainer reads it to resume,
    so it is not deleted) and says nothing about this one."""
    path = run_dir / EXIT_FILE
    try:
        if path.stat().st_mtime < since - 1.0:
            return None
        return read_exit(run_dir)
    except (OSError, ContractError):
        return None


def _note(run_dir: Path, line: str) -> None:
    with contextlib.suppress(OSError), open_new(run_dir / LOCAL_STDERR_FILE, "a") as handle:
        handle.write(line + "\n")


def _read_from(path: Path, offset: int) -> bytes:
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            return handle.read()
    except FileNotFoundError:
        return b""
