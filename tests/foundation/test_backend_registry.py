"""The backend of a study comes from one registry: every kind the study file accepts has a Backend class, and
no module outside the registry asks which kind a study has."""

from __future__ import annotations

import re
from pathlib import Path

from cockpit.launch.registry import BACKENDS
from cockpit.study.cluster_kinds import KINDS

REPO = Path(__file__).resolve().parents[2]


def test_every_kind_the_study_file_accepts_has_a_backend():
    assert set(BACKENDS) == set(KINDS) == {"local", "slurm"}  # a plug-in's registers both (tests/plugins)


def test_only_the_study_parser_reads_the_kind():
    """The runner, the commands, the preflight and the screens ask the backend class (on_this_machine,
    has_scheduler, known_cores, check_scripts, render_scripts); the spec alone judges kind-specific keys."""
    asking = [str(p.relative_to(REPO)) for p in (REPO / "cockpit").rglob("*.py")
              if re.search(r"cluster\.kind\s*[!=]=", p.read_text(encoding="utf-8"))
              and p.parent.name != "study"]
    assert asking == []


def test_only_the_registry_imports_the_slurm_backend_above_the_launch_layer():
    importing = [str(p.relative_to(REPO)) for top in ("forecast", "run", "commands")
                 for p in (REPO / "cockpit" / top).rglob("*.py")
                 if "cockpit.launch.slurm" in p.read_text(encoding="utf-8")]
    assert importing == []
