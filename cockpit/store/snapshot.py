"""Plain, render-ready views of a study's state.

The TUI and the headless reporter read these instead of the store, so they never touch sqlite, SSH,
pandas or torch. Everything here is an immutable dataclass of plain values; times are Unix seconds
(float, UTC) and durations are seconds. A snapshot is cheap to build and safe to hand to another thread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from cockpit.launch.backend import FINAL_STATES, ConnectionState, JobState

# Job states as the snapshot shows them: the values of cockpit.launch.backend.JobState, plus "submitting" (intent
# recorded, sbatch not answered yet), "lost" (gone from the cluster without a trace) and "not_submitted".
ACTIVE_STATES = frozenset({"submitting", *(state.value for state in JobState if state.is_active)})
# the problems' source for jobs and results another cockpit submitted: `cockpit open` says so whenever it opens
ADOPTED_PROBLEM = "adopted"
DONE_STATES = frozenset({JobState.COMPLETED.value})
FAILED_STATES = frozenset({"lost", *(state.value for state in FINAL_STATES if state is not JobState.COMPLETED)})


@dataclass(frozen=True)
class JobRow:
    """One submission of one configuration (a configuration may have several after resubmits)."""

    config_id: str
    job_id: str | None  # None while only the intent is recorded (before sbatch answered)
    state: str  # one of ACTIVE_STATES | DONE_STATES | FAILED_STATES | "unknown"
    submitted_at: float | None = None
    started_at: float | None = None
    ended_at: float | None = None
    elapsed_s: float | None = None
    time_limit_s: float | None = None
    nodes: int | None = None
    node_list: str = ""
    reason: str = ""  # pending reason or failure reason
    exit_code: int | None = None
    attempt: int = 1
    held: bool = False


@dataclass(frozen=True)
class ConfigRow:
    """One configuration of the matrix with its latest job and its result, if any."""

    config_id: str
    group_id: str
    is_baseline: bool
    values: dict[str, object]  # the sweep values: dataset, mode, window, nodes, gpus_per_node, ...
    state: str  # latest job's state, "not_submitted", or "completed" when a valid result exists
    job_id: str | None = None
    workers: int = 1
    train_time_s: float | None = None
    tokens_per_s: float | None = None
    speedup: float | None = None
    efficiency: float | None = None
    overhead_s: float | None = None
    work_ratio: float | None = None  # samples / the baseline's samples (1 for strong scaling)
    t_same_work_s: float | None = None  # T at the baseline's work: what the speedup divides
    verdict: str = ""  # short form: the largest losses in seconds
    explanation: str = ""  # the full sentence with the advice
    quality_metric: str | None = None  # cockpit.workloads.hlm.quality: "macro-F1 (N,S,V,F)", "masked loss", ... (None: not scored)
    quality: float | None = None
    quality_change: float | None = None  # minus the group's 1x1 run's
    progress: float | None = None  # 0..1 from the latest metrics record while running
    eta_s: float | None = None
    last_step: int | None = None
    last_loss: float | None = None
    result: dict[str, object] | None = None  # the raw result.json, for details
    analysis: dict[str, object] | None = None  # this configuration's cockpit.forecast.analysis row (all its figures)


@dataclass(frozen=True)
class MetricPoint:
    """One (downsampled) metrics.jsonl record of one rank (fields and units as in docs/run-directory.md)."""

    t: float
    step: int
    rank: int = 0
    loss: float | None = None
    tokens_per_s: float | None = None
    samples_per_s: float | None = None
    step_time_s: float | None = None  # interval_s / steps_in_interval
    data_wait_s: float | None = None  # sums over the interval on that rank
    compute_s: float | None = None
    comm_s: float | None = None
    optimizer_s: float | None = None
    train_time_s: float | None = None  # T so far


@dataclass(frozen=True)
class GpuSample:
    """One NVML sample of one GPU."""

    t: float
    host: str
    gpu: int
    util_pct: float | None = None
    mem_used_bytes: float | None = None
    mem_total_bytes: float | None = None
    power_w: float | None = None
    temp_c: float | None = None


@dataclass(frozen=True)
class GpuSeries:
    """Recent samples of one GPU of one job (oldest first)."""

    config_id: str
    host: str
    gpu: int
    samples: tuple[GpuSample, ...]

    @property
    def latest(self) -> GpuSample | None:
        return self.samples[-1] if self.samples else None


@dataclass(frozen=True)
class Counts:
    running: int = 0
    pending: int = 0
    done: int = 0
    failed: int = 0
    not_submitted: int = 0

    @property
    def total(self) -> int:
        return self.running + self.pending + self.done + self.failed + self.not_submitted


LogReader = Callable[[str, int], list[str]]
"""(config_id, max_lines) -> the last lines of that configuration's log, oldest first."""


@dataclass(frozen=True)
class StudySnapshot:
    """Everything a screen needs to draw one study at one instant."""

    study: str
    cluster: str  # a label: "local", "meluxina (login.lxp.lu:8822)", ...
    connection: ConnectionState
    taken_at: float
    last_poll_at: float | None
    configs: list[ConfigRow]
    jobs: list[JobRow]
    metrics: dict[str, list[MetricPoint]] = field(default_factory=dict)  # config_id -> recent points
    gpus: list[GpuSeries] = field(default_factory=list)
    counts: Counts = field(default_factory=Counts)
    node_hours_used: float = 0.0
    node_hours_budget: float | None = None
    problems: list[str] = field(default_factory=list)  # parse problems, refused submits, ... (recent first)
    connection_detail: str = ""  # e.g. "reconnecting in 4.2 s (attempt 3): Connection lost"
    scheduler: str = ""  # "Slurm not answering since 14:05" while the controller is away
    maintenance: str = ""  # the maintenance reservation the study's time limit crosses, the limit that fits
    waiting: str = ""  # what submitting waits for: a site limit, or a full work directory (its one line)
    log_reader: LogReader | None = field(default=None, compare=False, repr=False)

    def config(self, config_id: str) -> ConfigRow | None:
        for row in self.configs:
            if row.config_id == config_id:
                return row
        return None

    def jobs_of(self, config_id: str) -> list[JobRow]:
        return [j for j in self.jobs if j.config_id == config_id]

    def log_tail(self, config_id: str, max_lines: int = 200) -> list[str]:
        """The last lines of a configuration's log (empty when nothing has been followed yet)."""
        if self.log_reader is None:
            return []
        return self.log_reader(config_id, max_lines)


def count_states(rows: list[ConfigRow]) -> Counts:
    """Tally configuration rows into the header's counters."""
    running = pending = done = failed = not_submitted = 0
    for row in rows:
        if row.state in ("running", "completing"):
            running += 1
        elif row.state in DONE_STATES:
            done += 1
        elif row.state in FAILED_STATES:
            failed += 1
        elif row.state in ("not_submitted", "changed"):  # changed: runs again when asked (--rerun-changed)
            not_submitted += 1
        else:
            pending += 1
    return Counts(running, pending, done, failed, not_submitted)
