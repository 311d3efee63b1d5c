"""Which Backend runs a study: `[cluster].kind` looked up once, here.

A new place to run jobs is one Backend subclass and one register() call (in this package, or in a plug-in:
cockpit.plugins); nothing else asks which kind a study has (the commands, the runner, the preflight and the screens ask the class: on_this_machine,
has_scheduler, known_cores, check_scripts, render_scripts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cockpit.launch.backend import Backend
from cockpit.launch.local import LocalExecutor
from cockpit.launch.slurm.backend import SlurmBackend
from cockpit.plugins import load_plugins
from cockpit.study.cluster_kinds import KINDS, ClusterKind
from cockpit.study.cluster_kinds import register as register_kind

if TYPE_CHECKING:
    from cockpit.study.spec import Study

BACKENDS: dict[str, type[Backend]] = {
    "local": LocalExecutor,
    "slurm": SlurmBackend,
}


def register(kind: ClusterKind, backend: type[Backend]) -> None:
    """Add a place to run jobs: its facts for the study file's checks and the Backend that runs there."""
    register_kind(kind)
    BACKENDS[kind.name] = backend


def backend_kind(study: Study) -> type[Backend]:
    """The Backend class of the study's `[cluster].kind` (the spec allowed only registered kinds)."""
    load_plugins()
    if study.cluster.kind not in BACKENDS:  # a kind whose facts a plug-in gave without its Backend
        raise ValueError(f"[cluster].kind {study.cluster.kind!r}: no backend registered (known: {', '.join(BACKENDS)})")
    return BACKENDS[study.cluster.kind]


assert set(BACKENDS) <= set(KINDS), "every backend's kind has its facts (cockpit.study.cluster_kinds)"
