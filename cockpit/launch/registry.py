"""Which Backend runs a study: `[cluster].kind` looked up once, here.

A new place to run jobs is one Backend subclass and one line of BACKENDS; nothing else asks which kind a
study has (the commands, the runner, the preflight and the screens ask the class: on_this_machine,
has_scheduler, known_cores, check_scripts, render_scripts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cockpit.launch.backend import Backend
from cockpit.launch.local import LocalExecutor
from cockpit.launch.slurm.backend import SlurmBackend

if TYPE_CHECKING:
    from cockpit.study.spec import Study

BACKENDS: dict[str, type[Backend]] = {
    "local": LocalExecutor,
    "slurm": SlurmBackend,
}


def backend_kind(study: Study) -> type[Backend]:
    """The Backend class of the study's `[cluster].kind` (the spec allowed only the registry's kinds)."""
    return BACKENDS[study.cluster.kind]
