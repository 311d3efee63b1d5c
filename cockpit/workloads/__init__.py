"""What a study runs: workload kinds by their `[workload].kind`. A third kind is one package under
cockpit/workloads/ and one line of WORKLOADS."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cockpit.workloads.base import Workload, WorkloadError
from cockpit.workloads.hlm import HlmWorkload
from cockpit.workloads.script import ScriptWorkload

WORKLOADS: dict[str, type[Workload]] = {
    "hlm": HlmWorkload,
    "script": ScriptWorkload,
}
DEFAULT = "hlm"

__all__ = ["DEFAULT", "WORKLOADS", "Workload", "WorkloadError", "workload_of"]


def workload_of(where: str, table: Any, study_dir: Path | None) -> Workload:
    """The workload a study's [workload] table names (the HLM trainer when there is none)."""
    if not isinstance(table, dict):
        raise WorkloadError(f"{where}: [workload] must be a table, found {type(table).__name__}")
    kind = table.get("kind", DEFAULT)
    if kind not in WORKLOADS:
        raise WorkloadError(f"{where}: [workload].kind: expected one of {', '.join(WORKLOADS)}, got {kind!r}")
    return WORKLOADS[kind].from_table(where, table, study_dir)
