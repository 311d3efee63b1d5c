"""What a study runs on every worker: the HLM trainer or a user's script. One base class, as for backends, so the
study spec, the local executor, the batch scripts, the preflight and the plan never ask which program it is.

A workload adds its own keys to a configuration (`keys`: swept under [sweep], judged and digested into the
configuration id exactly as the axes are) and says which of the HLM's axes it takes (`axes`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from trainer.config_keys import ConfigKey


def key_words(values: Mapping[str, Any]) -> str:
    """A workload's key values in the configuration label's and the tables' words, by name: `lr=0.1
    pin_memory=true` (the same however config.json ordered them; "" for the HLM trainer, which has none)."""
    return " ".join(f"{name}={value_word(values[name])}" for name in sorted(values))


def value_word(value: Any) -> str:
    """A value as a study file writes it: true/false for a bool."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def workload_keys(row: dict[str, Any]) -> dict[str, Any]:
    """A script workload's own key values of an analysed run (cockpit.forecast.analysis row), by name, from its config.json (none for the HLM)."""
    keys = ((row.get("result") or {}).get("config") or {}).get("keys")
    return dict(keys) if isinstance(keys, dict) else {}


class WorkloadError(ValueError):
    """A [workload] table is malformed; the message names the file, the key, what was expected and found."""


@dataclass(frozen=True)
class Workload(ABC):
    """One kind of program a study runs. Subclasses are frozen dataclasses built by :meth:`from_table`."""

    #: the `[workload].kind` that names it (cockpit.workloads.WORKLOADS)
    kind: ClassVar[str]
    #: the HLM trainer's axes this workload takes (the others stay at their defaults and are refused in [sweep])
    axes: ClassVar[tuple[str, ...]]
    #: reads the study's [data] token shards (the preflight checks them; other workloads bring their own data)
    reads_study_data: ClassVar[bool] = False
    #: the environment variable that names the run directory to the program ("" : it takes --run-dir)
    run_dir_env: ClassVar[str] = ""

    @property
    def work_per_worker(self) -> bool | None:
        """Whether an N-worker run does N times the baseline's samples (True), the same (False), or as [train]
        says (None: a fixed number of steps per worker, or of epochs in all; the HLM trainer's rule)."""
        return None

    @classmethod
    @abstractmethod
    def from_table(cls, where: str, table: dict[str, Any], study_dir: Path | None) -> Workload:
        """The workload a study's [workload] table describes. ``study_dir``: the study file's folder where the
        files are on this machine (kind = "local"); None where they are on the cluster. Raises WorkloadError."""

    def files_needed(self) -> tuple[str, ...]:
        """Paths every worker needs where the job runs (the preflight checks they are there)."""
        return ()

    def keys(self) -> tuple[ConfigKey, ...]:
        """The study keys the workload takes beyond the axes, in the matrix's order (none for the HLM)."""
        return ()

    def prepare_args(self, run_dir: str) -> list[str] | None:
        """The Python arguments of a step run once before the workers (None: no such step)."""
        return None

    @abstractmethod
    def worker_args(self, values: Mapping[str, Any], run_dir: str) -> list[str]:
        """What the launcher (torchrun) runs on every worker, after its own options: `-m module ...` or a
        script and its arguments, the configuration's ``values`` filled in."""

    def batch_words(self, values: Mapping[str, Any]) -> list[tuple[str, str, bool]] | None:
        """The workers' arguments for a batch script, each as (the study key it comes from, its value, whether it
        is a cluster path whose ~ or $VAR expands there), for the quoting helpers to quote or refuse; None: the
        batch template's own launch line (the HLM trainer's)."""
        return None

    def env(self) -> dict[str, str]:
        """The environment the workers get beside the cluster's [cluster].env."""
        return {}

    def run_env(self, run_dir: str) -> dict[str, str]:
        """env() and the variable that names the run directory where the program reads it from one."""
        return {**self.env(), **({self.run_dir_env: run_dir} if self.run_dir_env else {})}

    def config_json(self, key_values: Mapping[str, Any]) -> dict[str, Any]:
        """What config.json holds for this workload beside the study's own entries (none for the HLM)."""
        return {}

    def describe(self) -> str:
        """The workload in a sentence's words ("HLM trainer", "script workload (mode hooks)")."""
        return f"{self.kind} workload"

    def not_given(self) -> tuple[str, ...]:
        """The figures this workload's results cannot give, in the plan's words (none for the HLM)."""
        return ()
