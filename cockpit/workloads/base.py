"""What a study runs on every worker: the HLM trainer or a user's script. One base class, as for backends, so the
study spec, the local executor, the batch scripts, the preflight and the plan never ask which program it is.

A workload adds its own keys to a configuration (`keys`: swept under [sweep], judged and digested into the
configuration id exactly as the axes are) and says which of the HLM's axes it takes (`axes`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from runcontract.keys import ConfigKey, Effect

# [train] keys every run directory's writer reads (runcontract.Run: the device, how often it samples): the
# study core's, whatever the workload
MEASUREMENT_KEYS = ("device", "metrics_interval_s", "nvml_interval_ms")


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


def flatten(value: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested tables as dotted keys (`model.layers`, `workload.env.OMP_PLACES`); lists stay values."""
    out: dict[str, Any] = {}
    for k, v in value.items():
        name = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, Mapping):
            out.update(flatten(v, name))
        else:
            out[name] = v
    return out


class ConfigurationParts(Protocol):
    """What a workload reads of one configuration (cockpit.study.spec.Configuration, a layer above)."""

    @property
    def dataset(self) -> str: ...

    @property
    def key_values(self) -> dict[str, Any]: ...

    def values(self) -> dict[str, Any]: ...


class StudyParts(Protocol):
    """What a workload reads of its study to write config.json (cockpit.study.spec.Study, a layer above)."""

    @property
    def train(self) -> dict[str, Any]: ...

    @property
    def model(self) -> dict[str, Any]: ...

    @property
    def datasets(self) -> Mapping[str, Any]: ...

    @property
    def token_cache(self) -> str: ...

    @property
    def prepare_workers(self) -> int: ...

    def run_dir(self, cfg: Any) -> str: ...

    def foundation_of(self, cfg: Any) -> Any: ...

    def runnable(self) -> list[Any]: ...

    @property
    def sweep(self) -> dict[str, list[Any]]: ...


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
    #: the program's own log files in its run directory, followed live beside the contract's metrics and GPU files
    log_files: ClassVar[tuple[str, ...]] = ()
    #: its model is [model]'s shape, which the GPU fit's ladder of shapes speaks of ("Largest model per GPU")
    model_shape_known: ClassVar[bool] = False

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

    def run_config(self, study: StudyParts, cfg: ConfigurationParts) -> dict[str, Any]:
        """What config.json holds for this workload beside the study's own entries (Study.run_config): the axes
        it takes and the measurement keys every run directory's writer reads (MEASUREMENT_KEYS)."""
        values = cfg.values()
        train = {k: study.train[k] for k in MEASUREMENT_KEYS if study.train.get(k) is not None}
        return {**{a: values[a] for a in self.axes}, **({"train": train} if train else {}),
                "workload": {"kind": self.kind}, "keys": dict(cfg.key_values)}

    @classmethod
    def counted_keys(cls, config: Mapping[str, Any]) -> dict[str, Any]:
        """The dotted keys of one of this workload's config.json files that can change what its run measures
        (cockpit.study.changes compares a finished run's with the study's ask): its `workload` table and its
        own keys; a workload adds what its program reads."""
        return flatten({k: config[k] for k in ("workload", "keys") if k in config})

    def describe(self) -> str:
        """The workload in a sentence's words ("HLM trainer", "script workload (mode hooks)")."""
        return f"{self.kind} workload"

    def not_given(self) -> tuple[str, ...]:
        """The figures this workload's results cannot give, in the plan's words (none for the HLM)."""
        return ()

    @classmethod
    def reads_key(cls, table: Mapping[str, Any], key: str) -> bool:
        """Whether the program a config.json's `workload` ``table`` describes reads the study key ``key`` (advice
        never proposes a key the program would not see): every key, unless a kind says otherwise."""
        return True

    @classmethod
    def config_work_per_worker(cls, table: Mapping[str, Any]) -> bool | None:
        """`work_per_worker` as a config.json's `workload` ``table`` records it (a finished run read back)."""
        return None

    @classmethod
    def key_effects(cls) -> Mapping[str, Effect]:
        """What the prediction does with each of this workload's config.json keys, by where config.json holds
        it (`train.lr`, `tokenizer`; cockpit.forecast.advice.effects): none known here, so not predicted."""
        return {}

    @classmethod
    def config_defaults(cls) -> Mapping[str, Any]:
        """The dotted config.json keys its program fills in when left out, with their values (a config.json read
        as keys compares alike whether a key was written or defaulted)."""
        return {}

    def preflight_data(self, study: StudyParts) -> dict[str, Any]:
        """What a preflight job checks of the workload's data (its config.json `datasets` and `token_cache`, as
        `hlm-train preflight` reads them): nothing here (a script brings its own data)."""
        return {}

    def data_bytes(self, study: StudyParts, workdir: str, dataset_bytes: Mapping[str, int] | None = None
                   ) -> tuple[int, str]:
        """Bytes of the data the workload prepares inside the work directory `workdir` (the disk footprint's
        last term), and a note of what is not counted: none known here (a script's data is its own)."""
        return 0, ""

    def parameters(self, study: StudyParts, cfg: ConfigurationParts) -> int:
        """The configuration's model parameters, for the disk footprint of its checkpoints (0: the workload's
        model is its own and its checkpoints are not sized)."""
        return 0

    @classmethod
    def key_tables(cls) -> tuple[KeyTable, ...]:
        """The sections this workload adds to docs/study-keys.md (cockpit.study.key_doc)."""
        return ()


@dataclass(frozen=True)
class KeyTable:
    """One section of docs/study-keys.md: a table (or config.json) and its keys."""

    title: str
    intro: str
    keys: tuple[ConfigKey, ...]
    extra: tuple[str, ...] = ()  # further column headers, filled by cells(key)
    cells: Callable[[ConfigKey], tuple[str, ...]] | None = None
    name: Callable[[ConfigKey], str] | None = None  # how a key is named (default: its name)
