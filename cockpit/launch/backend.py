"""What the study runner needs from a place that runs jobs: the local executor or Slurm over SSH.

One base class so the runner, the TUI and the headless mode never care which one they drive.
"""

from __future__ import annotations

import asyncio
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from cockpit.launch.storage import Storage, parse_probe, probe_command
from runcontract import contract

if TYPE_CHECKING:
    from cockpit.launch.follow import Follower
    from cockpit.launch.maintenance import Reservation
    from cockpit.preflight.jobs import PreflightJob
    from cockpit.study.spec import Configuration, Study


class ConnectionState(StrEnum):
    """Where the cockpit's link to the cluster stands (``local`` for the local executor)."""

    LOCAL = "local"
    DISCONNECTED = "disconnected"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    FAILED = "failed"  # gave up or refused (e.g. host key): needs the user


class Connection(Protocol):
    """What the runner and the screens follow of a backend's connection (cockpit.launch.ssh.SshConnection)."""

    state: ConnectionState
    detail: str
    listeners: list[Callable[[ConnectionState, str], None]]


class JobState(StrEnum):
    """Job states, normalised across backends (Slurm's names map onto these)."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETING = "completing"
    SUSPENDED = "suspended"
    REQUEUED = "requeued"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    TIMEOUT = "timeout"
    PREEMPTED = "preempted"
    OUT_OF_MEMORY = "out-of-memory"
    NODE_FAIL = "node-fail"
    UNKNOWN = "unknown"

    @property
    def is_final(self) -> bool:
        return self in FINAL_STATES

    @property
    def is_active(self) -> bool:
        return self in (JobState.PENDING, JobState.RUNNING, JobState.COMPLETING, JobState.SUSPENDED, JobState.REQUEUED)


FINAL_STATES = frozenset(
    {
        JobState.COMPLETED,
        JobState.FAILED,
        JobState.CANCELLED,
        JobState.TIMEOUT,
        JobState.PREEMPTED,
        JobState.OUT_OF_MEMORY,
        JobState.NODE_FAIL,
    }
)


@dataclass
class JobInfo:
    """One job as last seen by its backend."""

    job_id: str
    name: str
    state: JobState
    reason: str = ""
    elapsed_s: float | None = None
    time_limit_s: float | None = None
    nodes: int | None = None
    nodelist: str = ""
    comment: str = ""
    exit_code: int | None = None
    extra: dict[str, str] = field(default_factory=dict)


JOB_ACTIONS = ("cancel", "requeue", "hold", "release")


class BackendError(Exception):
    """The backend could not do what was asked; the message carries the scheduler's or the connection's
    own words. Every backend's errors derive from these, so the runner and the commands need no other."""


class ConnectionLost(BackendError):
    """The way to the jobs failed (network, authentication, host key): nothing was done."""


class SubmitRefused(BackendError):
    """The scheduler refused a job (account, QOS, partition, limits, resources beyond a node)."""


class SubmitLater(SubmitRefused):
    """The scheduler refused a job for now only: a per-user or per-association limit on the jobs queued or
    running is full, or the controller is busy. Nothing was queued; the same submit succeeds later, so the
    runner waits and retries (never a failure). ``limit``: which limit, in people's words."""

    def __init__(self, message: str, limit: str) -> None:
        super().__init__(message)
        self.limit = limit


@dataclass(frozen=True)
class UserLimits:
    """What the site lets this user have at once (the study's account and QOS) and what the user has now,
    every study included: the pace a study can go at."""

    max_submit: int | None = None  # jobs queued or running at once (MaxSubmitJobsPerUser, MaxSubmitJobs)
    max_running: int | None = None  # jobs running at once (MaxJobsPerUser, MaxJobs)
    queued: int = 0  # the user's jobs queued or running now
    running: int = 0
    source: str = ""  # where the limits come from, for people

    def words(self, limit: str) -> str:
        """"QOS submit limit (3 of 3 in use)": a limit with what the user has against it, where known."""
        if "submit" in limit and self.max_submit is not None:
            return f"{limit} ({self.queued} of {self.max_submit} in use)"
        if "job" in limit and self.max_running is not None:
            return f"{limit} ({self.running} of {self.max_running} running)"
        return limit


class OutcomeUnknown(BackendError):
    """The connection dropped while a non-idempotent action was in flight: its outcome is unknown."""


class SchedulerUnreachable(BackendError):
    """The scheduler's controller did not answer (stopped, restarting, failing over, overloaded): what it would
    have said of the jobs is unknown, not "gone". The runner changes no job's state and asks again later."""


@dataclass(frozen=True)
class StartEstimate:
    """When the scheduler would start a job submitted now (Slurm: `sbatch --test-only`), as it says it."""

    start_epoch: float  # seconds since the epoch
    nodes: str = ""  # the nodes it would run on, in the scheduler's words
    partition: str = ""
    source: str = "sbatch --test-only"


@dataclass(frozen=True)
class ParseProblem:
    """One line of a scheduler's output that could not be understood (kept, shown, never fatal)."""

    source: str  # "squeue", "sacct", "scontrol", "sbatch"
    line: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}: {self.line[:200]!r}"


class UnsupportedAction(Exception):
    """The backend cannot do this to a job (e.g. requeue on the local executor)."""


class Backend(ABC):
    """A place that runs a study's configurations: the local executor or Slurm over SSH.

    The six abstract methods are what every backend must do. Everything else the runner and the TUI use
    is declared here with a default, so they never probe with getattr: a backend overrides what it does
    better or additionally, and :meth:`supports` says which job actions it offers.
    """

    label: str
    study: Study
    #: the SSH connection whose state the UI shows; None for a backend on this machine
    connection: Connection | None = None
    #: the job actions this backend can carry out (see JOB_ACTIONS)
    actions: frozenset[str] = frozenset({"cancel"})
    #: cores one node really has when the backend knows better than [cluster].cores_per_node (the local
    #: executor: this machine's); the plan marks what does not fit "too big" instead of "submit"
    cores_per_node: int | None = None
    #: runs on this machine (the local executor): the study's directory, store and report live here, the
    #: connection shows "local" and nothing is fetched over a network
    on_this_machine: ClassVar[bool] = False
    #: has a scheduler with a site profile, partitions, reservations and batch scripts (Slurm)
    has_scheduler: ClassVar[bool] = False
    #: where its jobs read their data, in a check's words
    place_words: ClassVar[str] = "the cluster"
    #: called by a backend that learns itself when one of its jobs starts or ends (the local executor owns its
    #: processes); a JobWatch sets it, so the runner or the preflight polls at once instead of sleeping out its
    #: interval
    on_job_change: Callable[[], None] | None = None

    # -- what the commands ask of the kind before any backend is opened ---------------------------------
    @classmethod
    @abstractmethod
    def open(cls, study: Study, **kwargs: Any) -> Backend:
        """This kind of backend for the study (nothing is connected yet); ``kwargs`` are the kind's own."""

    @classmethod
    def known_cores(cls) -> int | None:
        """The cores one node really has, known without connecting anywhere (None: [cluster].cores_per_node
        stands); `cockpit plan` passes it where the TUI and the runner pass their backend's cores_per_node."""
        return None

    @classmethod
    def check_scripts(cls, study: Study) -> None:
        """Refuse now what submitting would refuse (the error names the key); nothing to check by default."""
        return

    @classmethod
    def render_scripts(cls, study: Study, out_dir: str | Path) -> list[Path]:
        """Write the batch scripts a scheduler would run, for inspection; a backend without them refuses."""
        raise UnsupportedAction(f"kind = {study.cluster.kind!r} runs no batch scripts: this study runs on this "
                                "machine")

    # -- what every backend does ----------------------------------------------------------------------
    @abstractmethod
    async def submit(self, cfg: Configuration) -> str:
        """Start (or queue) one configuration; returns the job id."""

    @abstractmethod
    async def poll(self) -> list[JobInfo]:
        """All of this study's jobs still known to the backend, in one call."""

    @abstractmethod
    async def final_states(self, job_ids: list[str]) -> dict[str, JobInfo]:
        """Final state of jobs that left the queue (one batched query)."""

    @abstractmethod
    async def cancel(self, job_id: str) -> None:
        """Stop a job."""

    @abstractmethod
    async def read_file(self, path: str, offset: int = 0) -> bytes:
        """Bytes of a run-directory file from `offset` on (b'' when it does not exist yet)."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections and processes."""

    # -- capabilities with defaults -------------------------------------------------------------------
    def log_names(self, job_id: str) -> list[str]:
        """The job's error log, then its output log, in its run directory (Slurm's slurm-<job>.err/.out)."""
        return list(reversed(contract.slurm_log_files(job_id)))

    async def run_dir(self, cfg: Configuration) -> str:
        """Where the configuration's run directory is, as this backend reads it (default: the study's)."""
        return self.study.run_dir(cfg)

    async def study_dir(self) -> str:
        """The study's directory as this backend writes it (Slurm: the work directory expanded there)."""
        return self.study.study_dir()

    async def submit_preflight(self, job: PreflightJob, config: dict[str, Any]) -> tuple[str, str, list[str]]:
        """Start one preflight job (cockpit/preflight) with its config.json; returns its job id, its
        directory and its log files. final_states, cancel and read_file then work on it like on any job."""
        raise UnsupportedAction(f"{self.label} cannot run a preflight")

    async def qos_limits(self) -> tuple[dict[str, int | None], str]:
        """The longest wall time (minutes) each QOS allows, and where that came from; none by default."""
        return {}, ""

    async def user_limits(self) -> UserLimits | None:
        """The user's limits and jobs now (None: the backend knows of no limit but its own)."""
        return None

    async def storage(self) -> Storage | None:
        """The work directory's space now (cockpit.launch.storage): df on this machine by default; None where
        the study's site reads none (storage_tool = "none"). Raises BackendError when the probe fails."""
        tool = self.storage_tool()
        if tool == "none":
            return None
        proc = await asyncio.create_subprocess_shell(
            probe_command(str(Path(self.study.cluster.workdir).expanduser()), tool),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await proc.communicate()
        try:
            return parse_probe(out.decode("utf-8", "replace"), tool)
        except ValueError as exc:
            raise BackendError(f"work directory space: {exc} {err.decode('utf-8', 'replace').strip()}") from exc

    def storage_tool(self) -> str:
        """The tool the site profile names for the work directory's space (df on this machine)."""
        return "df"

    async def keep_aside(self, run_dir: str, to: str) -> None:
        """Move a finished run's directory to `to` (its configuration's settings changed and it runs again: the
        old run is kept as history). Default: on this machine."""
        try:
            os.makedirs(os.path.dirname(to), mode=0o700, exist_ok=True)
            if os.path.exists(run_dir):
                os.rename(run_dir, to)
        except OSError as exc:
            raise BackendError(f"cannot move {run_dir} to {to}: {exc.strerror or exc}") from exc

    async def list_run_dirs(self) -> list[str] | None:
        """Configuration ids that have a run directory, in one round trip; None when the backend has no
        cheaper way than reading each one (the runner then reads each)."""
        return None

    def log_files(self, job_id: str) -> list[str]:
        """The launcher's output files in the run directory, followed beside the trainer's own files."""
        return []

    def follower(self) -> Follower:
        """What follows the live run files (default: reading them on this machine)."""
        from cockpit.launch.follow import LocalFollower

        return LocalFollower()

    def take_problems(self) -> list[ParseProblem]:
        """Problems met while parsing the scheduler's output since the last call (then forgotten)."""
        return []

    async def reservations(self) -> list[Reservation]:
        """The scheduler's reservations (cockpit.launch.maintenance); none by default (no scheduler)."""
        return []

    #: what start_estimate's None means for this backend, in people's words
    no_start_estimate: ClassVar[str] = "no scheduler: a job starts when it is submitted"

    async def start_estimate(self, cfg: Configuration) -> StartEstimate | None:
        """When the configuration's job would start if submitted now, as the scheduler estimates it (Slurm:
        `sbatch --test-only`, backfill included); None for a backend without a scheduler (no_start_estimate
        says why). Raises BackendError where the scheduler refuses the job."""
        return None

    def supports(self, action: str) -> bool:
        """Whether this backend can carry out the job action (one of JOB_ACTIONS)."""
        if action not in JOB_ACTIONS:
            raise ValueError(f"unknown job action {action!r}; expected one of {', '.join(JOB_ACTIONS)}")
        return action in self.actions

    async def requeue(self, job_id: str) -> None:
        """Put a job back in the queue."""
        raise UnsupportedAction(f"{self.label} cannot requeue jobs")

    async def hold_job(self, job_id: str) -> None:
        """Keep a pending job from starting."""
        raise UnsupportedAction(f"{self.label} cannot hold jobs")

    async def release(self, job_id: str) -> None:
        """Let a held job start."""
        raise UnsupportedAction(f"{self.label} cannot release jobs")

    async def job_action(self, action: str, job_id: str) -> None:
        """Carry out one of JOB_ACTIONS (UnsupportedAction when :meth:`supports` says no)."""
        if not self.supports(action):
            raise UnsupportedAction(f"{self.label} cannot {action} jobs")
        do = {"cancel": self.cancel, "requeue": self.requeue, "hold": self.hold_job, "release": self.release}
        await do[action](job_id)


class JobWatch:
    """A poll loop's pause that the backend's own word ends (Backend.on_job_change: the local executor knows the
    moment a job starts or ends): `with JobWatch(backend) as watch:`, then `watch.clear()` before each poll and
    `await watch.pause(seconds, stop)` after it, so a change during the poll ends the next pause at once."""

    def __init__(self, backend: Backend) -> None:
        self.backend, self.changed = backend, asyncio.Event()
        self._outer: Callable[[], None] | None = None

    def __enter__(self) -> JobWatch:
        # a watch inside another (the runner's tick running the preflight's wait) tells the outer one too
        self._outer, self.backend.on_job_change = self.backend.on_job_change, self._heard
        return self

    def __exit__(self, *_: object) -> None:
        self.backend.on_job_change = self._outer

    def _heard(self) -> None:
        self.changed.set()
        if self._outer is not None:
            self._outer()

    def clear(self) -> None:
        self.changed.clear()

    async def pause(self, seconds: float, stop: asyncio.Event | None = None) -> None:
        """Sleep `seconds`, or less where a job started or ended meanwhile, or ``stop`` was set."""
        waits = [asyncio.ensure_future(e.wait()) for e in (stop, self.changed) if e is not None]
        try:
            await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()


class AdaptiveInterval:
    """Poll fast while jobs start or change, slowly when everything is pending and nothing moves."""

    def __init__(self, fast_s: float = 2.0, running_s: float = 10.0, slow_s: float = 60.0) -> None:
        self.fast_s, self.running_s, self.slow_s = fast_s, running_s, slow_s
        self._quiet = 0

    def next(self, jobs: Sequence[JobInfo], changed: bool) -> float:
        if changed or any(j.state in (JobState.COMPLETING, JobState.REQUEUED) for j in jobs):
            self._quiet = 0
            return self.fast_s
        self._quiet += 1
        if any(j.state is JobState.RUNNING for j in jobs):
            base = self.running_s
        elif jobs:
            base = self.slow_s
        else:
            return self.fast_s
        # ease from fast to the base over a few quiet polls so a just-started job is caught quickly
        return min(base, self.fast_s * (1.5 ** self._quiet))
