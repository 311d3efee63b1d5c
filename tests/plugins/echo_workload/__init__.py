"""A third workload kind, made only for the tests, as a user's plug-in would be: one package and one register()
call, no edit to the cockpit. `[workload] kind = "echo"` runs the tiny runcontract loop of tests/fixtures with the
study's batch size and `steps`, a key of its own (what a plug-in adds to the configuration id and label)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cockpit.workloads import register
from cockpit.workloads.base import Workload, WorkloadError
from cockpit.workloads.script import SHARED_AXES
from runcontract.contract import RUN_DIR_ENV
from runcontract.keys import ConfigKey

LOOP = Path(__file__).resolve().parents[2] / "fixtures" / "workloads" / "tiny_loop.py"


@dataclass(frozen=True)
class EchoWorkload(Workload):
    """`tiny_loop.py --batch B --steps S` on every worker."""

    steps: int = 5

    kind = "echo"
    axes = SHARED_AXES
    run_dir_env = RUN_DIR_ENV

    @classmethod
    def from_table(cls, where: str, table: dict[str, Any], study_dir: Path | None) -> EchoWorkload:
        unknown = sorted(set(table) - {"kind", "steps"})
        if unknown:
            raise WorkloadError(f"{where}: [workload].{unknown[0]}: an echo workload takes only steps")
        return cls(steps=int(table.get("steps", 5)))

    def keys(self) -> tuple[ConfigKey, ...]:
        return (ConfigKey("sweep", "steps", (int,), self.steps, help="the loop's steps", top_level=True, minimum=1),)

    def files_needed(self) -> tuple[str, ...]:
        return (str(LOOP),)

    def worker_args(self, values: Mapping[str, Any], run_dir: str) -> list[str]:
        return [str(LOOP), "--batch", str(values["batch_size"]), "--steps", str(values["steps"])]

    def describe(self) -> str:
        return "echo workload (a test plug-in)"


register(EchoWorkload)
