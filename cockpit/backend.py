"""What the study runner needs from a place that runs jobs: the local executor or Slurm over SSH.

One protocol so the runner, the TUI and the headless mode never care which one they drive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from cockpit.spec import Configuration


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


@runtime_checkable
class Backend(Protocol):
    """A place that runs a study's configurations."""

    label: str

    async def submit(self, cfg: Configuration) -> str:
        """Start (or queue) one configuration; returns the job id."""

    async def poll(self) -> list[JobInfo]:
        """All of this study's jobs still known to the backend, in one call."""

    async def final_states(self, job_ids: list[str]) -> dict[str, JobInfo]:
        """Final state of jobs that left the queue (one batched query)."""

    async def cancel(self, job_id: str) -> None:
        """Stop a job."""

    async def read_file(self, path: str, offset: int = 0) -> bytes:
        """Bytes of a run-directory file from `offset` on (b'' when it does not exist yet)."""

    async def close(self) -> None:
        """Release connections and processes."""
