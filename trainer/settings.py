"""Training settings: config.json (plus command-line overrides) validated into one typed, nested object.

Its sections are the key registry's dataclasses (trainer/config_keys/): `s.axes.window`, `s.model.d_model`,
`s.train.lr`, `s.data.tokenizer`, `s.run.config_id`. Every optional key has the registry's default so that an
older or hand-written config still runs; every present key is judged by the registry's rule, and a bad one is
reported with its dotted path and what was expected (exit code 2), in the words the study spec uses.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runcontract.axes import AxisKeys
from runcontract.keys import ConfigKey, keys_of, nearest
from trainer.config_keys import DataKeys, ModelKeys, RunKeys, TrainKeys, check_model, check_train
from trainer.environment import slurm_cpus_per_task


class ConfigError(ValueError):
    """A config value is missing or wrong; the message names the file and the dotted key."""


# section attribute -> (its dataclass, the key in config.json holding it; None: config.json's top level)
SECTIONS: dict[str, tuple[type, str | None]] = {
    "run": (RunKeys, None), "data": (DataKeys, None), "axes": (AxisKeys, None),
    "model": (ModelKeys, "model"), "train": (TrainKeys, "train"),
}
_KEYS: dict[str, tuple[ConfigKey, ...]] = {name: keys_of(place or name, cls) for name, (cls, place) in SECTIONS.items()}
SECTION_OF: dict[str, str] = {k.name: name for name, keys in _KEYS.items() for k in keys}


@dataclass(frozen=True)
class Settings:
    """Everything one training run needs, after defaults and validation."""

    run_dir: Path
    config: dict[str, Any] = field(default_factory=dict)  # the raw config, echoed into result.json
    run: RunKeys = RunKeys()
    data: DataKeys = DataKeys()
    axes: AxisKeys = AxisKeys()
    model: ModelKeys = ModelKeys()
    train: TrainKeys = TrainKeys()

    def replace(self, **values: Any) -> Settings:
        """A copy with single keys changed by name (`window=16, lr=1e-2`), each into its own section."""
        changes: dict[str, dict[str, Any]] = {}
        for name, value in values.items():
            if name not in SECTION_OF:
                raise ConfigError(f"{name}: not a key the trainer knows (see trainer/config_keys/)")
            changes.setdefault(SECTION_OF[name], {})[name] = value
        return dataclasses.replace(self, **{sec: dataclasses.replace(getattr(self, sec), **c)
                                            for sec, c in changes.items()})

    def value(self, name: str) -> Any:
        """One key's value by its name, from whichever section holds it."""
        return getattr(getattr(self, SECTION_OF[name]), name)

    def flat(self) -> dict[str, Any]:
        """Every key by its name (what a checkpoint records to refuse a resume under other settings)."""
        return {"run_dir": str(self.run_dir), **{name: self.value(name) for name in SECTION_OF}}

    def as_dict(self) -> dict[str, Any]:
        """The settings in config.json's shape (sections "model" and "train", the rest at the top level)."""
        out: dict[str, Any] = {"run_dir": str(self.run_dir)}
        for name, (_cls, place) in SECTIONS.items():
            values = dataclasses.asdict(getattr(self, name))
            (out.setdefault(place, {}) if place else out).update(values)
        return out

    @property
    def cpus(self) -> int:
        """CPU cores of this process: the config, else SLURM_CPUS_PER_TASK, else 1."""
        if self.axes.cpus_per_task:
            return self.axes.cpus_per_task
        return slurm_cpus_per_task() or 1

    @property
    def loader_workers(self) -> int:
        """DataLoader worker processes: one core stays with the training process."""
        if self.train.num_workers is not None:
            return self.train.num_workers
        return max(0, self.cpus - 1)

    @property
    def threads(self) -> int:
        """Intra-op threads of the training process: the cores of the task not given to loader workers."""
        return max(1, self.cpus - self.loader_workers)


def _section(config: dict[str, Any], name: str, source: str) -> dict[str, Any]:
    """One section's values from config.json, each judged by the registry's rule; unknown keys refused."""
    cls, place = SECTIONS[name]
    table = config if place is None else config.get(place, {})
    if table is None:
        table = {}
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: {place}: expected an object, got {table!r}")
    values: dict[str, Any] = {}
    for k in _KEYS[name]:
        value = table.get(k.name)
        where = f"{source}: {place}.{k.name}" if place else f"{source}: {k.name}"
        problem = k.problem(value)
        if problem:
            raise ConfigError(f"{where}: {problem}")
        if value is not None:
            values[k.name] = float(value) if float in k.kind and isinstance(value, int) else value
    if place is not None:
        _refuse_unknown(table, {k.name for k in _KEYS[name]}, f"{source}: {place}.")
    return values


# config.json's top level: every top-level key of the registry and the sections' own names
TOP_LEVEL: frozenset[str] = frozenset({k.name for name, (_, place) in SECTIONS.items() if place is None
                                       for k in _KEYS[name]} | {place for _, place in SECTIONS.values() if place})


def _refuse_unknown(table: dict[str, Any], known: set[str] | frozenset[str], where: str) -> None:
    """A misspelt key is refused with its name and the nearest known key, never ignored."""
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(f"{where}{unknown[0]}: not a key the trainer knows ({nearest(unknown[0], known)})")


def from_config(run_dir: Path, config: dict[str, Any], source: str = "config.json") -> Settings:
    """Validate a config.json dict into Settings; errors read like `config.json: train.lr: ...`."""
    if not isinstance(config, dict):
        raise ConfigError(f"{source}: expected a JSON object")
    _refuse_unknown(config, TOP_LEVEL, f"{source}: ")
    sections = {name: _section(config, name, source) for name in SECTIONS}
    data = sections["data"]
    data["tokenizer"] = data.get("tokenizer") or {"name": "samples"}
    data["split"] = _split(data.get("split"), source)
    if "dataset" not in sections["axes"]:  # a standalone run names its dataset after its folder
        sections["axes"]["dataset"] = Path(data["data_path"]).name if data.get("data_path") else "synthetic"
    for name, check in (("model", check_model), ("train", check_train)):
        problem = check({k.name: k.default for k in _KEYS[name]} | sections[name])
        if problem:
            raise ConfigError(f"{source}: {problem}")
    return Settings(run_dir=Path(run_dir), config=config,
                    **{name: SECTIONS[name][0](**values) for name, values in sections.items()})


def _split(options: dict[str, Any] | None, source: str) -> dict[str, Any] | None:
    """The split options, checked by the data package's own rules (messages name the key)."""
    from trainer.data.errors import DataError
    from trainer.data.splits import check_options

    try:
        return check_options(options) or None
    except DataError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def validate(s: Settings, source: str = "settings") -> None:
    """The registry's rules over settings built in code (tests, tools), as from_config applies them."""
    config = s.as_dict()
    del config["run_dir"]  # the run's place, not a config.json key
    from_config(s.run_dir, config, source)
