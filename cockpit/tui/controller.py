"""What the app drives. The app never talks to a store, a runner or SSH directly: it gets a Controller.

`RecordedController` serves a fixed snapshot (recorded stores, snapshot tests); the live controller in
`cockpit.tui.live` wraps the study runner. Keeping this seam is what lets tests render a fixture with a
fixed clock while the real app follows a study.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from cockpit.forecast.plan import Plan, PlanLine  # noqa: F401  (the submit flow's content, cockpit.forecast.plan)
from cockpit.launch.backend import JOB_ACTIONS
from cockpit.store.snapshot import GpuSeries, StudySnapshot

if TYPE_CHECKING:
    from cockpit.forecast.full_run import FullRunPlan
    from cockpit.forecast.whatif import Outcome
    from cockpit.store import StudyStore
    from cockpit.study.spec import Study

GPU_HISTORY_POINTS = 240  # samples kept per GPU for a run's timeline (evenly spread over the run)


class Controller(Protocol):
    """The app's only way to read and act on a study."""

    # Read-only properties here, so that a plain attribute or a property implements each.
    @property
    def live(self) -> bool:
        """False for a recording: nothing can be sent, and progress or an eta would be stale."""

    @property
    def can_submit(self) -> bool:
        """Whether `p` (plan and submit) has anything behind it."""

    @property
    def device(self) -> str | None:
        """The device: "cpu" when the study file says so (the results say so too once there are some)."""

    def snapshot(self) -> StudySnapshot:
        """The study now. Called from a worker thread, never concurrently with itself."""

    def plan(self) -> Plan | None:
        """What a submit would do, or None when there is nothing to submit (or no spec)."""

    def preflight_words(self) -> str | None:
        """What a submit runs first (the preflight and what it may cost), one line for the plan dialog; None
        when nothing runs before it."""

    def rerun_changed(self) -> None:
        """From now on, submit the configurations whose settings changed since they ran too (their earlier
        runs are kept as history: cockpit.run.submission.keep_old_run); asked in the plan dialog."""

    def preflight_pending(self, listener: Callable[[str], None]) -> bool:
        """Whether submit() will run a preflight first; if so its lines go to ``listener``."""

    async def follow(self) -> str:
        """Follow the jobs in flight without submitting anything (a resumed study, before any submit is
        confirmed); returns a message for the user, "" for none."""

    async def submit(self) -> str:
        """Start the study (after the user confirmed the plan); returns a message for the user."""

    async def job_action(self, action: str, job_id: str) -> str:
        """cancel / requeue / hold / release one job; returns a message for the user."""

    async def close(self) -> None:
        """Release what the controller holds (connections, runner tasks)."""

    def gpu_history(self, config_id: str) -> list[GpuSeries]:
        """Every GPU of a run over its whole life (downsampled), also after the job ended. Called from a
        worker thread, never concurrently with itself."""

    def run_dir(self, config_id: str) -> str | None:
        """Where the run's files are (on the cluster for a Slurm study), or None when unknown."""

    @property
    def origin(self) -> Path | None:
        """The study file or store the view reads: `cockpit compare`'s first study when it is compared."""

    def what_if(self, text: str) -> Outcome:
        """The plan's study with `KEY=VALUE ...` applied, predicted from what it recorded (cockpit.forecast.whatif,
        as `cockpit plan --what-if`); raises cockpit.forecast.whatif.WhatIfError naming the argument. Called from a
        worker thread, never concurrently with itself."""

    def full_run(self, text: str) -> FullRunPlan:
        """`full-run epochs=3 ...` typed in the plan dialog: the production run on every configuration
        (cockpit.run.full_run.full_run_of, as `cockpit plan --full-run`); ValueError or BackendError naming what
        is wrong. Called from a worker thread."""


@dataclass
class RecordedController:
    """Serves a recorded snapshot; actions are refused with a message (nothing live to act on)."""

    source: Callable[[], StudySnapshot]
    plan_value: Plan | None = None
    actions: list[tuple[str, str]] = field(default_factory=list)
    submitted: int = 0
    history: Callable[[str], list[GpuSeries]] | None = None
    run_dirs: Callable[[], dict[str, str]] | None = None
    device: str | None = None
    live: bool = False
    origin: Path | None = None
    study: Study | None = None  # the study file behind the recording, for the plan dialog's what-if

    @property
    def can_submit(self) -> bool:
        return self.plan_value is not None

    def snapshot(self) -> StudySnapshot:
        return self.source()

    def plan(self) -> Plan | None:
        return self.plan_value

    def preflight_words(self) -> str | None:
        return None

    def rerun_changed(self) -> None:
        return None

    def preflight_pending(self, listener: Callable[[str], None]) -> bool:
        return False

    async def follow(self) -> str:
        return ""

    async def submit(self) -> str:
        self.submitted += 1
        return "recorded study: nothing to submit"

    async def job_action(self, action: str, job_id: str) -> str:
        if action not in JOB_ACTIONS:
            raise ValueError(f"unknown job action {action!r}; expected one of {', '.join(JOB_ACTIONS)}")
        self.actions.append((action, job_id))
        return f"{action} {job_id}: recorded study, nothing sent"

    async def close(self) -> None:
        return None

    def gpu_history(self, config_id: str) -> list[GpuSeries]:
        return self.history(config_id) if self.history is not None else []

    def run_dir(self, config_id: str) -> str | None:
        return (self.run_dirs() if self.run_dirs is not None else {}).get(config_id)

    def what_if(self, text: str) -> Outcome:
        from cockpit.forecast.whatif import WhatIfError

        if self.study is None:
            raise WhatIfError("what-if: this view has no study file behind it (open the study's .toml)")
        return what_if_of(self.study, self.origin, text)

    def full_run(self, text: str) -> FullRunPlan:
        from cockpit.run.full_run import full_run_of

        if self.study is None:
            raise ValueError("full-run: this view has no study file behind it (open the study's .toml)")
        return full_run_of(self.study, text)


def what_if_of(study: Study, store_path: Path | None, text: str) -> Outcome:
    """`KEY=VALUE ...` typed in the plan dialog, predicted as `cockpit plan --what-if` predicts it from the
    study's store (read-only)."""
    from cockpit.forecast.whatif import predict, split_arguments
    from cockpit.run.session import node_cores
    from cockpit.store.recorded import recorded_inputs

    return predict(study, split_arguments(text), recorded_inputs(study, store_path, cores=node_cores(study)))


def downsample(series: list[GpuSeries], points: int = GPU_HISTORY_POINTS) -> list[GpuSeries]:
    """At most `points` samples per GPU, evenly spread, the first and the last always kept."""
    out = []
    for s in series:
        samples = s.samples
        if len(samples) > points:
            step = (len(samples) - 1) / (points - 1)
            samples = tuple(samples[round(i * step)] for i in range(points))
        out.append(GpuSeries(s.config_id, s.host, s.gpu, samples))
    return out


def store_controller(store: StudyStore, name: str, *, now: float | None = None, detail: str = "",
                     plan: Plan | None = None, study: Study | None = None) -> RecordedController:
    """A recording read from a store: snapshots, every run's GPU history and run directories; `study`: the
    study file it records, for the plan dialog's what-if."""
    key = store.study_key(name)

    def snapshot() -> StudySnapshot:
        snap = store.snapshot(name, now=now)
        return replace(snap, connection_detail=detail) if detail else snap

    def history(config_id: str) -> list[GpuSeries]:
        return downsample(store.gpu_series(key, config_id, since=0.0))

    def run_dirs() -> dict[str, str]:
        """Absolute: a relative run directory (a recording made portable) is where the store is."""
        here = Path(store.path).resolve().parent
        return {c["config_id"]: c["run_dir"] if c["run_dir"].startswith(("/", "~", "$")) else str(here / c["run_dir"])
                for c in store.configs(key)}

    return RecordedController(snapshot, plan_value=plan, history=history, run_dirs=run_dirs, origin=Path(store.path),
                              study=study)
