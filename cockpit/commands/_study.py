"""Shared by `open`, `run` and `demo`: a study file -> its store, its backend and its runner."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cockpit.runner import StudyRunner
    from cockpit.spec import Study
    from cockpit.store import StudyStore


@dataclass
class StudySession:
    study: Study
    store: StudyStore
    runner: StudyRunner

    @property
    def backend(self):
        return self.runner.backend

    def has_jobs(self) -> bool:
        """Whether this study was submitted before (its store knows jobs of it)."""
        if self.study.name not in self.store.study_names():
            return False
        return bool(self.store.jobs(self.store.study_key(self.study.name)))

    def has_failures(self) -> bool:
        snap = self.store.snapshot(self.study.name)
        return snap.counts.failed > 0


def store_path_for(study: Study):
    from cockpit.store import default_store_path

    return default_store_path(study.name, study.study_dir() if study.cluster.kind == "local" else None)


def make_backend(study: Study):
    """The local executor or Slurm over SSH, from [cluster].kind."""
    if study.cluster.kind == "local":
        from cockpit.launch.local import LocalExecutor

        return LocalExecutor(study)
    from cockpit.slurm_backend import SlurmBackend

    return SlurmBackend.from_study(study)


def open_session(study: Study, *, force: bool = False, resubmit_failed: bool = False) -> StudySession:
    from cockpit.runner import StudyRunner
    from cockpit.store import StudyStore

    store = StudyStore(store_path_for(study))
    runner = StudyRunner(study, make_backend(study), store, force=force, resubmit_failed=resubmit_failed)
    return StudySession(study, store, runner)


def load(path: str) -> Study | None:
    """The study, or None after printing the spec error (the message names file and key)."""
    from cockpit.spec import SpecError, load_study

    try:
        return load_study(path)
    except SpecError as exc:
        print(f"cockpit: {exc}", file=sys.stderr)
        return None
