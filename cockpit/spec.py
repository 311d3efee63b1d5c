"""Study spec: one TOML file -> a validated Study and its configuration matrix.

Every key is declared below with its type and default; anything else is an error naming the file, the
section and the key, because a misspelt key silently ignored costs a researcher a day of node-hours.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainer.config_keys import BY_NAME, MODES, PRECISIONS, section_keys
from trainer.data.errors import DataError
from trainer.data.tokenizer_keys import canonical
from trainer.rundir import MODEL_FILE

AXES = ("dataset", "mode", "window", "precision", "batch_size", "cpus_per_task", "gpus_per_node", "nodes")
SCALE_AXES = ("gpus_per_node", "nodes")
SYNTHETIC = "synthetic"


class SpecError(ValueError):
    """A study file is malformed; the message says which file, which key and what was expected."""


@dataclass(frozen=True)
class Key:
    """One allowed key: its accepted types, default (None = optional) and whether it is required."""

    types: tuple[type, ...]
    default: Any = None
    required: bool = False
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None


_NUM = (int, float)


def _table_keys(section: str) -> dict[str, Key]:
    """[model] or [train]: the trainer's own key table (trainer.config_keys), so the study accepts exactly
    what the trainer reads, with the same defaults."""
    types = {int: (int,), float: _NUM, str: (str,), bool: (bool,)}
    return {k.name: Key(types[k.kind], k.default, choices=k.choices, minimum=k.minimum)
            for k in section_keys(section, study=True)}


SECTIONS: dict[str, dict[str, Key]] = {
    "study": {
        "name": Key((str,), required=True),
        "description": Key((str,), ""),
    },
    "cluster": {
        "kind": Key((str,), "local", choices=("local", "slurm")),
        "site": Key((str,), "generic"),
        "ssh_host": Key((str,)),
        "host": Key((str,)),
        "port": Key((int,), minimum=1),  # None: from ~/.ssh/config, else 22
        "user": Key((str,)),
        "known_hosts": Key((str,)),
        "identity_file": Key((str,)),
        "account": Key((str,)),
        "qos": Key((str,)),
        "partition": Key((str,)),
        "time_limit": Key((str, int), "01:00:00"),
        "expected_minutes": Key(_NUM, minimum=0),
        "modules": Key((list,), []),
        "workdir": Key((str,)),
        "container": Key((str,), ""),
        "container_binds": Key((list,), []),
        "gpus_per_node": Key((int,), 1, minimum=1),
        "cores_per_node": Key((int,), minimum=1),
        "max_concurrent_jobs": Key((int,), 4, minimum=1),
        "node_hour_budget": Key(_NUM, minimum=0),
        "hint_nomultithread": Key((bool,), False),
        "signal_seconds": Key((int,), 120, minimum=0),
        "gres_style": Key((str,), "gpus-per-node", choices=("gpus-per-node", "gres")),
        "rdzv_port": Key((int,), 29500, minimum=1),
        "python": Key((str,), "python3"),
        "env": Key((dict,), {}),
    },
    "data": {
        "datasets": Key((dict,), {}),
        "tokenizer": Key((dict,), {}),
        "token_cache": Key((str,)),
        "prepare_workers": Key((int,), 1, minimum=1),
        "skip_bad_records": Key((bool,), False),
        "test_records": Key((list,)),
        "patient_pattern": Key((str,)),
    },
    "model": _table_keys("model"),
    "train": _table_keys("train"),
    "sweep": {axis: Key((list,)) for axis in AXES},
}
# Defaults, bounds and choices live in the trainer's tokenizer table (trainer/data/tokenizer_keys.py, whose
# validators the spec runs on every dataset's table); here only the names and TOML types.
TOKENIZER_KEYS = {
    "name": Key((str,), "samples"),
    "vocab": Key((int,)),
    "quantizer": Key((str,)),
    "mu": Key(_NUM),
    "lead": Key((int, str)),
    "fs": Key(_NUM),  # 0 keeps each record's own rate
    "clip_percentile": Key(_NUM),
    "margin": Key(_NUM),
    "highpass_hz": Key(_NUM),  # 0 = keep the baseline wander
    "annotator": Key((str,)),
    "rr_bins": Key((int,)),
    "rr_min_ms": Key(_NUM),
    "rr_max_ms": Key(_NUM),
    "records": Key((list,)),
}
DATASET_KEYS = {
    "path": Key((str,)),
    "synthetic": Key((bool,), False),
    "tokenizer": Key((dict,), {}),
    "records": Key((int,), 8, minimum=1),
    "seconds": Key(_NUM, 300, minimum=1),
    "seed": Key((int,), 0),
    "skip_bad_records": Key((bool,)),
    "test_records": Key((list,)),
    "patient_pattern": Key((str,)),
}
SPLIT_KEYS = ("test_records", "patient_pattern")
AXIS_TYPES: dict[str, tuple[type, ...]] = {
    "dataset": (str,),
    "mode": (str,),
    "window": (int,),
    "precision": (str,),
    "batch_size": (int,),
    "cpus_per_task": (int,),
    "gpus_per_node": (int,),
    "nodes": (int,),
}


@dataclass(frozen=True)
class Dataset:
    """A named input: a PhysioNet-style folder (local or on the cluster) or the built-in generator."""

    name: str
    path: str | None
    tokenizer: dict[str, Any]
    synthetic: bool = False
    synthetic_params: dict[str, Any] = field(default_factory=dict)
    skip_bad_records: bool = False
    split: dict[str, Any] = field(default_factory=dict)  # test_records or patient_pattern; empty: the default


@dataclass(frozen=True)
class Configuration:
    """One point of the matrix: the values of every axis."""

    dataset: str
    mode: str
    window: int
    precision: str
    batch_size: int
    cpus_per_task: int
    gpus_per_node: int
    nodes: int

    def values(self) -> dict[str, Any]:
        return {axis: getattr(self, axis) for axis in AXES}

    @property
    def config_id(self) -> str:
        """Stable across runs and machines: a digest of the canonical axis values."""
        return _digest(self.values())

    @property
    def group_values(self) -> dict[str, Any]:
        return {k: v for k, v in self.values().items() if k not in SCALE_AXES}

    @property
    def group_id(self) -> str:
        """Configurations that differ only in scale share a group; its 1x1 run is the baseline."""
        return _digest(self.group_values)

    @property
    def workers(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def is_baseline(self) -> bool:
        return self.nodes == 1 and self.gpus_per_node == 1

    @property
    def label(self) -> str:
        return config_label(self.values())


def config_label(values: Mapping[str, Any]) -> str:
    """Short human name of a configuration, every axis in it: `mitdb foundation w256 1x2 c4 bf16 b32`.

    The one label of the plan, the batch scripts, the TUI and the headless run (values of a stored
    configuration may lack an axis: it shows as '?')."""
    v = values.get
    return (
        f"{v('dataset', '?')} {v('mode', '?')} w{v('window', '?')} {v('nodes', 1)}x{v('gpus_per_node', 1)} "
        f"c{v('cpus_per_task', '?')} {v('precision', '?')} b{v('batch_size', '?')}"
    )


@dataclass(frozen=True)
class Cluster:
    """Where and how jobs run. Every site-specific value lives here, none in code."""

    kind: str
    site: str
    ssh_host: str | None
    host: str | None
    port: int | None
    user: str | None
    known_hosts: str | None
    identity_file: str | None
    account: str | None
    qos: str | None
    partition: str | None
    time_limit: str
    time_limit_minutes: int
    expected_minutes: float | None
    modules: tuple[str, ...]
    workdir: str
    container: str
    container_binds: tuple[str, ...]
    gpus_per_node: int
    cores_per_node: int
    max_concurrent_jobs: int
    node_hour_budget: float | None
    hint_nomultithread: bool
    signal_seconds: int
    gres_style: str
    rdzv_port: int
    python: str
    env: dict[str, str]


@dataclass(frozen=True)
class Study:
    """A validated study file."""

    path: Path
    name: str
    description: str
    cluster: Cluster
    datasets: dict[str, Dataset]
    token_cache: str
    prepare_workers: int
    model: dict[str, Any]
    train: dict[str, Any]
    sweep: dict[str, list[Any]]
    synthetic_default: bool = False

    @property
    def study_id(self) -> str:
        """Short digest of the study name; Slurm job names and comments carry it for reconciliation."""
        return _digest({"study": self.name}, 8)

    def matrix(self) -> list[Configuration]:
        """The cartesian product of the sweep axes, non-swept axes fixed at their defaults."""
        axes = [self.sweep[axis] for axis in AXES]
        return [Configuration(*values) for values in itertools.product(*axes)]

    def fits_node(self, cfg: Configuration) -> bool:
        """Whether one node has the cores for all its tasks (Slurm would refuse the job otherwise)."""
        return cfg.gpus_per_node * cfg.cpus_per_task <= self.cluster.cores_per_node

    def runnable(self) -> list[Configuration]:
        return [cfg for cfg in self.matrix() if self.fits_node(cfg)]

    def hours_per_run(self) -> float:
        """Expected wall hours of one run: `expected_minutes` if given, else the time limit (an upper bound)."""
        minutes = self.cluster.expected_minutes
        return (minutes if minutes is not None else self.cluster.time_limit_minutes) / 60.0

    def node_hours(self, cfg: Configuration) -> float:
        """One run's node-hours (cockpit.plan sums them into the study's estimate)."""
        return cfg.nodes * self.hours_per_run()

    def study_dir(self) -> str:
        return f"{self.cluster.workdir.rstrip('/')}/{self.name}"

    def run_dir(self, cfg: Configuration) -> str:
        return f"{self.study_dir()}/runs/{cfg.config_id}"

    def baseline_of(self, cfg: Configuration) -> Configuration:
        return Configuration(**{**cfg.values(), "gpus_per_node": 1, "nodes": 1})

    def foundation_of(self, cfg: Configuration) -> Configuration | None:
        """The run whose weights a fine-tune starts from: the foundation 1x1 run with the same values."""
        if cfg.mode != "finetune":
            return None
        return Configuration(**{**self.baseline_of(cfg).values(), "mode": "foundation"})

    def run_config(self, cfg: Configuration) -> dict[str, Any]:
        """Everything the trainer needs, written as config.json into the run directory."""
        dataset = self.datasets[cfg.dataset]
        train = {k: v for k, v in self.train.items() if k not in AXES and v is not None}
        foundation = self.foundation_of(cfg)
        if foundation is not None and not train.get("init_checkpoint"):
            train["init_checkpoint"] = f"{self.run_dir(foundation)}/{MODEL_FILE}"
        return {
            "study": self.name,
            "study_id": self.study_id,
            "config_id": cfg.config_id,
            "group_id": cfg.group_id,
            **cfg.values(),
            "data_path": dataset.path,
            "synthetic": dataset.synthetic,
            "synthetic_params": dataset.synthetic_params,
            "tokenizer": dataset.tokenizer,
            **({"skip_bad_records": True} if dataset.skip_bad_records else {}),
            **({"split": dict(dataset.split)} if dataset.split else {}),
            "token_cache": self.token_cache,
            "prepare_workers": self.prepare_workers,
            "model": dict(self.model),
            "train": train,
        }


def load_study(path: str | os.PathLike[str]) -> Study:
    """Read and validate a study file; raises SpecError with the file name in every message."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise SpecError(f"{path}: no such study file") from exc
    except IsADirectoryError as exc:
        raise SpecError(f"{path}: a directory, not a study file (expected a .toml file)") from exc
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the study file ({exc.strerror or exc})") from exc
    if data.startswith(SQLITE_HEADER):
        raise SpecError(f"{path}: this is a cockpit store (an SQLite database), not a study file; "
                        f"did you mean `cockpit open {path}`?")
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path}: not valid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text") from exc
    return parse_study(raw, path)


SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database (a cockpit store)


def parse_study(raw: dict[str, Any], path: Path) -> Study:
    """Validate an already-parsed TOML document (see load_study)."""
    where = path.name
    unknown = sorted(set(raw) - set(SECTIONS))
    if unknown:
        raise SpecError(f"{where}: unknown section [{unknown[0]}]; expected one of {', '.join(SECTIONS)}")
    sec = {name: _section(where, name, raw.get(name, {}), keys) for name, keys in SECTIONS.items()}
    cluster = _cluster(where, sec["cluster"], path)
    datasets, synthetic_default = _datasets(where, sec["data"], path, cluster.kind)
    token_cache = sec["data"]["token_cache"] or f"{cluster.workdir.rstrip('/')}/{sec['study']['name']}/tokens"
    if cluster.kind == "local" and not token_cache.startswith("/"):
        token_cache = str((path.parent / os.path.expanduser(token_cache)).resolve())
    train = sec["train"]
    if train["steps"] is None and train["epochs"] is None:
        raise SpecError(f"{where}: [train] needs steps or epochs (a fixed amount of work to time)")
    if train["steps"] is not None and train["epochs"] is not None:
        raise SpecError(f"{where}: [train] has both steps and epochs; give one")
    model = sec["model"]
    if model["d_model"] % model["heads"]:
        raise SpecError(
            f"{where}: [model].d_model {model['d_model']} is not divisible by [model].heads {model['heads']}"
        )
    name = sec["study"]["name"]
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", name):
        raise SpecError(f"{where}: [study].name {name!r} must be 1-64 letters, digits, '_', '.', '-'")
    sweep = _sweep(where, sec["sweep"], train, datasets, cluster)
    return Study(
        path=path,
        name=name,
        description=sec["study"]["description"],
        cluster=cluster,
        datasets=datasets,
        token_cache=token_cache,
        prepare_workers=sec["data"]["prepare_workers"],
        model=model,
        train=train,
        sweep=sweep,
        synthetic_default=synthetic_default,
    )


def parse_time_limit(where: str, value: str | int) -> int:
    """Slurm time formats (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS) -> whole minutes."""
    if isinstance(value, int):
        if value < 1:
            raise SpecError(f"{where}: [cluster].time_limit must be at least 1 minute, got {value}")
        return value
    match = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", value.strip())
    if not match:
        raise SpecError(f"{where}: [cluster].time_limit {value!r} is not a Slurm time (e.g. 02:00:00 or 1-12:00:00)")
    days, a, b, c = match.groups()
    parts = [int(x) for x in (a, b, c) if x is not None]
    if days is not None:
        hours, minutes, seconds = (parts + [0, 0])[:3]
        total = int(days) * 1440 + hours * 60 + minutes + (1 if seconds else 0)
    elif len(parts) == 3:
        total = parts[0] * 60 + parts[1] + (1 if parts[2] else 0)
    elif len(parts) == 2:
        total = parts[0] + (1 if parts[1] else 0)
    else:
        total = parts[0]
    if total < 1:
        raise SpecError(f"{where}: [cluster].time_limit {value!r} is shorter than a minute")
    return total


def _section(where: str, name: str, values: Any, keys: dict[str, Key]) -> dict[str, Any]:
    if not isinstance(values, dict):
        raise SpecError(f"{where}: [{name}] must be a table, found {type(values).__name__}")
    return _check_keys(where, f"[{name}]", values, keys)


def _check_keys(where: str, prefix: str, values: dict[str, Any], keys: dict[str, Key]) -> dict[str, Any]:
    unknown = sorted(set(values) - set(keys))
    if unknown:
        raise SpecError(f"{where}: {prefix}.{unknown[0]} is not a known key; expected one of {', '.join(keys)}")
    out: dict[str, Any] = {}
    for key, spec in keys.items():
        if key not in values:
            if spec.required:
                raise SpecError(f"{where}: {prefix}.{key} is required")
            out[key] = spec.default
            continue
        value = values[key]
        if not isinstance(value, spec.types) or (isinstance(value, bool) and bool not in spec.types):
            wanted = " or ".join(_type_name(t) for t in spec.types)
            raise SpecError(f"{where}: {prefix}.{key} must be {wanted}, found {_type_name(type(value))} {value!r}")
        if spec.choices is not None and value not in spec.choices:
            raise SpecError(f"{where}: {prefix}.{key} is {value!r}; expected one of {', '.join(map(str, spec.choices))}")
        if spec.minimum is not None and isinstance(value, int | float) and value < spec.minimum:
            raise SpecError(f"{where}: {prefix}.{key} is {value!r}; expected at least {spec.minimum}")
        out[key] = value
    return out


def _cluster(where: str, c: dict[str, Any], path: Path) -> Cluster:
    kind = c["kind"]
    if kind == "slurm":
        if not c["workdir"]:  # account and qos: required where the site profile says so (require_account)
            raise SpecError(f"{where}: [cluster].workdir is required when kind = \"slurm\"")
        if not (c["ssh_host"] or c["host"]):
            raise SpecError(f"{where}: [cluster] needs ssh_host (an ~/.ssh/config alias) or host when kind = \"slurm\"")
        if not c["workdir"].startswith(("/", "~", "$")):
            raise SpecError(f"{where}: [cluster].workdir {c['workdir']!r} must be an absolute path on the cluster")
    workdir = c["workdir"]
    if kind == "local":
        base = workdir or os.path.join(os.environ.get("XDG_DATA_HOME", "~/.local/share"), "hlm-cockpit")
        workdir = str((path.parent / os.path.expanduser(base)).resolve())
    for key in ("modules", "container_binds"):
        bad = [item for item in c[key] if not isinstance(item, str)]
        if bad:
            raise SpecError(f"{where}: [cluster].{key} must be a list of strings, found {bad[0]!r}")
    env = c["env"]
    for name, value in env.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise SpecError(f"{where}: [cluster.env] {name!r} is not a valid environment variable name")
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise SpecError(f"{where}: [cluster.env].{name} must be a string or number, found {value!r}")
    cores = c["cores_per_node"]
    if cores is None and kind == "local":
        cores = os.cpu_count() or 1
    if cores is None:
        raise SpecError(f"{where}: [cluster].cores_per_node is required when kind = \"slurm\"")
    return Cluster(
        kind=kind,
        site=c["site"],
        ssh_host=c["ssh_host"],
        host=c["host"],
        port=c["port"],
        user=c["user"],
        known_hosts=c["known_hosts"],
        identity_file=c["identity_file"],
        account=c["account"],
        qos=c["qos"],
        partition=c["partition"],
        time_limit=str(c["time_limit"]),
        time_limit_minutes=parse_time_limit(where, c["time_limit"]),
        expected_minutes=c["expected_minutes"],
        modules=tuple(c["modules"]),
        workdir=workdir,
        container=c["container"],
        container_binds=tuple(c["container_binds"]),
        gpus_per_node=c["gpus_per_node"],
        cores_per_node=cores,
        max_concurrent_jobs=c["max_concurrent_jobs"],
        node_hour_budget=c["node_hour_budget"],
        hint_nomultithread=c["hint_nomultithread"],
        signal_seconds=c["signal_seconds"],
        gres_style=c["gres_style"],
        rdzv_port=c["rdzv_port"],
        python=c["python"],
        env={k: str(v) for k, v in env.items()},
    )


def _given_keys(where: str, prefix: str, values: dict[str, Any], keys: dict[str, Key]) -> dict[str, Any]:
    """The keys a table actually gives, checked: defaults are left out so that a more specific table
    overrides single keys of a general one instead of resetting the rest."""
    checked = _check_keys(where, prefix, values, keys)
    return {k: checked[k] for k in values}


def _split(where: str, prefix: str, table: dict[str, Any]) -> dict[str, Any]:
    """test_records / patient_pattern of a table, validated by the trainer's own rules."""
    from trainer.data.errors import DataError
    from trainer.data.splits import check_options

    given = {k: table[k] for k in SPLIT_KEYS if table.get(k) is not None}
    try:
        return check_options(given, prefix)
    except DataError as exc:
        raise SpecError(f"{where}: {exc}") from None


def _datasets(where: str, data: dict[str, Any], path: Path, kind: str) -> tuple[dict[str, Dataset], bool]:
    default_tok = _given_keys(where, "[data.tokenizer]", data["tokenizer"], TOKENIZER_KEYS)
    default_split = _split(where, "[data]", data)
    entries = data["datasets"] or {SYNTHETIC: {"synthetic": True}}
    datasets: dict[str, Dataset] = {}
    for name, entry in entries.items():
        prefix = f"[data.datasets].{name}"
        if isinstance(entry, str):
            entry = {"path": entry}
        if not isinstance(entry, dict):
            raise SpecError(f"{where}: {prefix} must be a path string or a table, found {entry!r}")
        d = _check_keys(where, prefix, entry, DATASET_KEYS)
        # [data.tokenizer] applies to every dataset; the dataset's own table overrides single keys.
        tok = {"name": "samples", **default_tok,
               **_given_keys(where, f"{prefix}.tokenizer", d["tokenizer"], TOKENIZER_KEYS)}
        try:  # the tokenizer's own validators, so the study refuses what prepare would, in its words
            canonical(tok)
        except DataError as exc:
            raise SpecError(f"{where}: {prefix}: {exc}") from None
        split = _split(where, prefix, d) or default_split
        skip = data["skip_bad_records"] if d["skip_bad_records"] is None else d["skip_bad_records"]
        synthetic = d["synthetic"] or (name == SYNTHETIC and not d["path"])
        data_path = d["path"]
        if not synthetic and not data_path:
            raise SpecError(f"{where}: {prefix} needs a path (or synthetic = true for the built-in generator)")
        if data_path and kind == "local":
            data_path = str((path.parent / os.path.expanduser(data_path)).resolve())
        params = {k: d[k] for k in ("records", "seconds", "seed")} if synthetic else {}
        datasets[name] = Dataset(name, None if synthetic else data_path, tok, synthetic, params, skip, split)
    return datasets, not data["datasets"]


def _sweep(
    where: str, sweep: dict[str, Any], train: dict[str, Any], datasets: dict[str, Dataset], cluster: Cluster
) -> dict[str, list[Any]]:
    axes: dict[str, list[Any]] = {}
    for axis in AXES:
        values = sweep[axis]
        if values is None:
            if axis == "dataset":
                values = [next(iter(datasets))]
            elif axis in SCALE_AXES or train[axis] is None:
                values = [1]  # cpus_per_task unset: one core per worker, as the trainer outside Slurm
            else:
                values = [train[axis]]
        if not values:
            raise SpecError(f"{where}: [sweep].{axis} is empty; give at least one value or leave it out")
        for value in values:
            if not isinstance(value, AXIS_TYPES[axis]) or isinstance(value, bool):
                raise SpecError(f"{where}: [sweep].{axis} contains {value!r}; expected {_type_name(AXIS_TYPES[axis][0])}s")
        if len(set(values)) != len(values):
            raise SpecError(f"{where}: [sweep].{axis} repeats a value: {values}")
        axes[axis] = list(values)
    _check_axis_values(where, axes, datasets, cluster)
    return axes


def _check_axis_values(where: str, axes: dict[str, list[Any]], datasets: dict[str, Dataset], cluster: Cluster) -> None:
    for value in axes["gpus_per_node"]:
        if value < 1 or value > cluster.gpus_per_node:
            raise SpecError(
                f"{where}: [sweep].gpus_per_node contains {value} but [cluster].gpus_per_node is {cluster.gpus_per_node}"
            )
    for value in axes["cpus_per_task"]:
        if value < 1 or value > cluster.cores_per_node:
            raise SpecError(
                f"{where}: [sweep].cpus_per_task contains {value} but [cluster].cores_per_node is {cluster.cores_per_node}"
            )
    for value in axes["nodes"]:
        if value < 1:
            raise SpecError(f"{where}: [sweep].nodes contains {value}; expected a positive integer")
    for axis in ("window", "batch_size"):  # the trainer's own bounds (trainer/config_keys.py), its words
        least = BY_NAME[axis].minimum
        for value in axes[axis]:
            if least is not None and value < least:
                raise SpecError(f"{where}: [sweep].{axis} contains {value}; expected an integer >= {least:g}")
    if cluster.kind == "local" and any(n > 1 for n in axes["nodes"]):
        raise SpecError(f"{where}: [sweep].nodes asks for several nodes but [cluster].kind is \"local\" (one machine)")
    for value in axes["mode"]:
        if value not in MODES:
            raise SpecError(f"{where}: [sweep].mode contains {value!r}; expected one of {', '.join(MODES)}")
    for value in axes["precision"]:
        if value not in PRECISIONS:
            raise SpecError(f"{where}: [sweep].precision contains {value!r}; expected one of {', '.join(PRECISIONS)}")
    for value in axes["dataset"]:
        if value not in datasets:
            raise SpecError(
                f"{where}: [sweep].dataset contains {value!r}, which is not in [data.datasets] ({', '.join(datasets)})"
            )


def _digest(values: dict[str, Any], length: int = 10) -> str:
    canonical = json.dumps(values, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:length]


def _type_name(t: type) -> str:
    return {str: "a string", int: "an integer", float: "a number", bool: "true/false", list: "a list", dict: "a table"}.get(
        t, t.__name__
    )
