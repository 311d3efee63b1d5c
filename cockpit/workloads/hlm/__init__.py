"""The project's own trainer (`python -m trainer`): the default workload, with every axis and the study's data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cockpit.workloads.base import Workload, WorkloadError
from trainer.config_keys import AXES


@dataclass(frozen=True)
class HlmWorkload(Workload):
    """`trainer prepare` once, then `trainer train` on every worker; config.json as trainer.settings reads it."""

    kind = "hlm"
    axes = AXES
    reads_study_data = True

    @classmethod
    def from_table(cls, where: str, table: dict[str, Any], study_dir: Path | None) -> HlmWorkload:
        extra = sorted(set(table) - {"kind"})
        if extra:
            raise WorkloadError(f"{where}: [workload].{extra[0]} is a script workload's key; kind = \"hlm\" (the "
                                "default) takes none: its keys are [model], [train] and [sweep]")
        return cls()

    def prepare_args(self, run_dir: str) -> list[str] | None:
        return ["-m", "trainer", "prepare", "--run-dir", run_dir]

    def worker_args(self, values: Mapping[str, Any], run_dir: str) -> list[str]:
        return ["-m", "trainer", "train", "--run-dir", run_dir]
