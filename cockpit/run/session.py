"""A study file's working parts: which Backend runs it, which store keeps it, and the runner over both.

The CLI commands, the TUI and the report all pick these here, so `[cluster].kind` and the store's place
are decided once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cockpit.launch.registry import backend_kind

if TYPE_CHECKING:
    from cockpit.launch.backend import Backend
    from cockpit.run.runner import StudyRunner
    from cockpit.store import StudyStore
    from cockpit.study.spec import Study


def backend_for(study: Study, **kwargs: Any) -> Backend:
    """The Backend of the study's [cluster].kind (cockpit.launch.registry); ``kwargs`` go to it."""
    return backend_kind(study).open(study, **kwargs)


def local_study_dir(study: Study) -> Path | None:
    """The study's directory on this machine (a backend on this machine), where its store and runs live;
    else None."""
    return Path(study.study_dir()) if backend_kind(study).on_this_machine else None


def store_path_for(study: Study) -> Path:
    """Where the study's store is: in the local study directory, else the XDG data directory."""
    from cockpit.store import default_store_path

    local = local_study_dir(study)
    return default_store_path(study.name, str(local) if local is not None else None)


def node_cores(study: Study) -> int | None:
    """The cores one node really has as the study's backend sees them, without connecting anywhere: this
    machine's for kind = "local" (the local executor's limit, its Backend.cores_per_node), None for Slurm
    (the study's [cluster].cores_per_node stands). `cockpit plan` passes it where the TUI and the runner
    pass their backend's, so all three mark the same configurations "too big"."""
    return backend_kind(study).known_cores()


def store_for(study: Study, path: str | Path | None = None) -> StudyStore:
    """The study's store: ``path`` if given, else :func:`store_path_for`."""
    from cockpit.store import StudyStore

    return StudyStore(path if path is not None else store_path_for(study))


@dataclass
class StudySession:
    """A study with its store and the runner that drives it (what `open`, `run` and `demo` work on)."""

    study: Study
    store: StudyStore
    runner: StudyRunner

    @property
    def backend(self) -> Backend:
        return self.runner.backend

    def has_jobs(self) -> bool:
        """Whether this study was submitted before (its store knows jobs of it)."""
        if self.study.name not in self.store.study_names():
            return False
        return bool(self.store.jobs(self.store.study_key(self.study.name)))

    def has_failures(self) -> bool:
        return self.store.snapshot(self.study.name).counts.failed > 0


def open_session(study: Study, *, force: bool = False, resubmit_failed: bool = False, rerun_changed: bool = False,
                 baseline_first: bool = False, preflight: bool = False) -> StudySession:
    """The study's store, backend and runner (nothing is connected or submitted yet). ``preflight``: the
    runner submits only once the study file's preflight has passed (the CLI's default)."""
    from cockpit.run.runner import StudyRunner

    store = store_for(study)
    runner = StudyRunner(study, backend_for(study), store, force=force, resubmit_failed=resubmit_failed,
                         rerun_changed=rerun_changed, baseline_first=baseline_first, preflight=preflight)
    return StudySession(study, store, runner)
