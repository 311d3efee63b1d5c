"""What a study runs: workload kinds by their `[workload].kind`. A third kind is one package and one register()
call, under cockpit/workloads/ or in a plug-in (cockpit.plugins)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cockpit.plugins import load_plugins
from cockpit.workloads.base import Workload, WorkloadError
from cockpit.workloads.hlm import HlmWorkload
from cockpit.workloads.script import ScriptWorkload

WORKLOADS: dict[str, type[Workload]] = {
    "hlm": HlmWorkload,
    "script": ScriptWorkload,
}
DEFAULT = "hlm"

__all__ = ["DEFAULT", "WORKLOADS", "Workload", "WorkloadError", "kind_of_config", "register", "workload_class",
           "workload_of"]


def register(workload: type[Workload]) -> None:
    """Add a workload kind (its `kind` class attribute names it in `[workload].kind`)."""
    WORKLOADS[workload.kind] = workload


def workload_of(where: str, table: Any, study_dir: Path | None) -> Workload:
    """The workload a study's [workload] table names (the HLM trainer when there is none)."""
    load_plugins()
    if not isinstance(table, dict):
        raise WorkloadError(f"{where}: [workload] must be a table, found {type(table).__name__}")
    kind = table.get("kind", DEFAULT)
    if kind not in WORKLOADS:
        raise WorkloadError(f"{where}: [workload].kind: expected one of {', '.join(WORKLOADS)}, got {kind!r}")
    return WORKLOADS[kind].from_table(where, table, study_dir)


def kind_of_config(config: Any) -> str:
    """The workload kind a config.json (or a result's row) names: its `workload` table's kind, a row's
    `workload` word; absent, the HLM trainer's, as every release before workloads wrote it."""
    workload = config.get("workload") if isinstance(config, dict) else None
    if isinstance(workload, dict):
        return str(workload.get("kind") or DEFAULT)
    return str(workload) if isinstance(workload, str) and workload else DEFAULT


def workload_class(config: Any) -> type[Workload] | None:
    """The class of the workload kind a config.json names (kind_of_config); None for a kind this cockpit does
    not know (a plug-in not installed here)."""
    return WORKLOADS.get(kind_of_config(config))
