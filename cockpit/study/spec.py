"""Study spec: one TOML file -> a validated Study and its configuration matrix.

What a study may say, with each key's type, default and bounds, is the key tables' (docs/study-keys.md);
cockpit.study.spec_rules applies it table by table. Anything else is an error naming the file, the section and the
key, because a misspelt key silently ignored costs a researcher a day of node-hours.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cockpit.study import spec_rules
from cockpit.study.cluster_kinds import KINDS, load_kinds
from cockpit.study.spec_rules import SYNTHETIC, WORKLOAD_SECTION, SpecError
from cockpit.study.tables import ClusterKeys
from cockpit.workloads import Workload, WorkloadError, workload_of
from cockpit.workloads.base import key_words, value_word
from cockpit.workloads.hlm import HlmWorkload
from runcontract.axes import AXES, SCALE_AXES, AxisKeys, config_label, id_values, label_words

__all__ = ["AXES", "SCALE_AXES", "SYNTHETIC", "Cluster", "Configuration", "Dataset", "SpecError", "Study",
           "config_label", "load_study", "parse_study"]


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
    train_data: tuple[str, ...] = ()  # further folders that only train (trainer.data.mixed)


@dataclass(frozen=True)
class Configuration(AxisKeys):
    """One point of the matrix: a value of every axis (the registry's AxisKeys; a study gives each)."""

    cpus_per_task: int = 1  # resolved: the matrix fills an unset axis with 1
    # the workload's own keys (cockpit.workloads: a script's [workload.keys]), name and value in declared order;
    # none for the HLM trainer, whose ids are the axes' alone
    keys: tuple[tuple[str, Any], ...] = ()
    # the workload's kind (cockpit.workloads): a script's label leaves out the HLM's own axes (runcontract.axes.labelled);
    # not part of the id, which the axes and keys alone make
    workload: str = "hlm"
    # which run of its configuration this is: 1, or 2 to k of a baseline the study repeats ([study].baseline_runs);
    # part of the id (and the label: `run 2`) from 2 on, never of the group
    run: int = 1

    def values(self) -> dict[str, Any]:
        return {axis: getattr(self, axis) for axis in AXES}

    @property
    def key_values(self) -> dict[str, Any]:
        """The workload's own keys of this configuration (empty for the HLM trainer)."""
        return dict(self.keys)

    def all_values(self) -> dict[str, Any]:
        """The axes and the workload's keys: what a script's {key} placeholders are filled from."""
        return {**self.values(), **self.key_values}

    @functools.cached_property
    def config_id(self) -> str:
        """Stable across runs, machines and upgrades: a digest of the canonical axis values (`id_values`: an
        axis added later enters it only when set away from its default). Computed once per configuration
        (a plan of 10,000 asks each for it a dozen times)."""
        return _digest({**id_values(self.values()), **self.key_values, **({"run": self.run} if self.run > 1 else {})})

    @property
    def group_values(self) -> dict[str, Any]:
        return {k: v for k, v in {**id_values(self.values()), **self.key_values}.items() if k not in SCALE_AXES}

    @functools.cached_property
    def group_id(self) -> str:
        """Configurations that differ only in scale share a group; its 1x1 run is the baseline."""
        return _digest(self.group_values)

    @property
    def workers(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def node_cores(self) -> int:
        """Cores one node of this run needs: its workers per node times their cores."""
        return self.gpus_per_node * self.cpus_per_task

    @property
    def is_baseline(self) -> bool:
        return self.nodes == 1 and self.gpus_per_node == 1

    def label_values(self) -> dict[str, Any]:
        """The axes, the workload's key words and its kind: what config_label and the store's `values` take, so
        every view labels a configuration alike (a script's keys in it, the HLM's own axes out of it)."""
        return {**self.values(), "keys": key_words(self.key_values), "workload": self.workload,
                **({"run": self.run} if self.run > 1 else {})}

    def label_words(self) -> dict[str, str]:
        """The label's words by what each stands for: the axes' (runcontract.axes.label_words, LABEL_ORDER) and each
        workload key's `name=value`, so a view that folds what every configuration shares keeps the rest."""
        words = label_words(self.label_values())
        return {**words, **{name: f"{name}={value_word(v)}" for name, v in sorted(self.key_values.items())}}

    @functools.cached_property
    def label(self) -> str:
        return " ".join(self.label_words().values())


@dataclass(frozen=True)
class Cluster(ClusterKeys):
    """[cluster] resolved (spec_rules.cluster_values): the registry's ClusterKeys with the local defaults
    filled in and the time limit in minutes. Every site-specific value lives here, none in code."""

    time_limit: str = "01:00:00"  # as Slurm reads it
    workdir: str = ""  # local: resolved to an absolute path
    cores_per_node: int = 1  # local: this machine's when unset
    env: dict[str, str] = field(default_factory=dict)
    time_limit_minutes: int = 60
    own: dict[str, Any] = field(default_factory=dict)  # its kind's own keys (ClusterKind.keys), defaults filled in

    @property
    def place(self) -> str:
        """Where the jobs go, in a heading's words: the SSH alias or host, else the kind."""
        return str(self.own.get("ssh_host") or self.own.get("host") or self.kind)


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
    workload: Workload = field(default_factory=HlmWorkload)  # what runs on every worker ([workload])
    baseline_runs: int = 1  # runs of each 1x1 baseline ([study].baseline_runs; cockpit.forecast.baseline_runs)

    @property
    def study_id(self) -> str:
        """Short digest of the study name; Slurm job names and comments carry it for reconciliation."""
        return _digest({"study": self.name}, 8)

    def matrix(self) -> list[Configuration]:
        """The cartesian product of the sweep axes, non-swept axes fixed at their defaults; each 1x1 baseline
        followed by its further runs (run 2 to baseline_runs)."""
        return list(self._matrix)

    @functools.cached_property
    def _matrix(self) -> tuple[Configuration, ...]:
        # built once per study, so each configuration digests its id, group and label once however often the
        # plan, the scripts and the table walk the matrix
        names = [*AXES, *(k.name for k in self.workload.keys())]
        own = names[len(AXES):]
        product = (Configuration(**dict(zip(AXES, values, strict=False)),
                                 keys=tuple(zip(own, values[len(AXES):], strict=True)), workload=self.workload.kind)
                   for values in itertools.product(*(self.sweep[name] for name in names)))
        return tuple(cfg if r == 1 else replace(cfg, run=r) for cfg in product
                     for r in range(1, (self.baseline_runs if cfg.is_baseline else 1) + 1))

    def fits_node(self, cfg: Configuration, cores: int | None = None) -> bool:
        """Whether one node has the cores for all its tasks (Slurm would refuse the job otherwise): the one
        rule of the plan, the batch scripts and the local executor. ``cores``: a smaller node the backend
        knows of (the local machine, a partition's nodes)."""
        limit = self.cluster.cores_per_node if cores is None else min(cores, self.cluster.cores_per_node)
        return cfg.node_cores <= limit

    def runnable(self) -> list[Configuration]:
        return [cfg for cfg in self.matrix() if self.fits_node(cfg)]

    def hours_per_run(self) -> float:
        """Expected wall hours of one run: `expected_minutes` if given, else the time limit (an upper bound)."""
        minutes = self.cluster.expected_minutes
        return (minutes if minutes is not None else self.cluster.time_limit_minutes) / 60.0

    def node_hours(self, cfg: Configuration) -> float:
        """One run's node-hours (cockpit.forecast.plan sums them into the study's estimate)."""
        return cfg.nodes * self.hours_per_run()

    def study_dir(self) -> str:
        return f"{self.cluster.workdir.rstrip('/')}/{self.name}"

    def run_dir(self, cfg: Configuration) -> str:
        return f"{self.study_dir()}/runs/{cfg.config_id}"

    def baseline_of(self, cfg: Configuration) -> Configuration:
        return replace(cfg, gpus_per_node=1, nodes=1, run=1)

    def baseline_runs_of(self, cfg: Configuration) -> list[Configuration]:
        """Every run of cfg's baseline (run 1 to baseline_runs): what its group's predictions are made from."""
        first = self.baseline_of(cfg)
        return [first, *(replace(first, run=r) for r in range(2, self.baseline_runs + 1))]

    def foundation_of(self, cfg: Configuration) -> Configuration | None:
        """The run whose weights a fine-tune starts from: the foundation 1x1 run with the same values."""
        if cfg.mode != "finetune":
            return None
        return replace(self.baseline_of(cfg), mode="foundation")

    def run_config(self, cfg: Configuration) -> dict[str, Any]:
        """config.json of a run: the study's own entries (who it is, how its job starts) and the workload's (what
        its program reads: the trainer's data, model and train keys; a script's command, keys and digests)."""
        return {
            "study": self.name,
            "study_id": self.study_id,
            "config_id": cfg.config_id,
            "group_id": cfg.group_id,
            "launch": self.launch_config(),
            **({"share_group": self.cluster.share_group} if self.cluster.share_group else {}),
            **self.workload.run_config(self, cfg),
        }

    def launch_config(self) -> dict[str, Any]:
        """config.json's `launch`: what decides the program a job starts, beside the workload's own keys
        (cockpit.study.changes compares a finished run's with the study's)."""
        c = self.cluster
        return {"container": c.container, "python": c.python, "modules": list(c.modules), "env": dict(c.env)}


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
    workload = _workload(where, raw, path)
    sec = spec_rules.sections(where, raw, workload.keys(), trainer=workload.reads_study_data)
    cluster = Cluster(**spec_rules.cluster_values(where, sec["cluster"], path))
    datasets = {d["name"]: Dataset(**d) for d in spec_rules.dataset_values(where, sec["data"], path, cluster.kind)}
    token_cache = sec["data"]["token_cache"] or f"{cluster.workdir.rstrip('/')}/{sec['study']['name']}/tokens"
    if KINDS[cluster.kind].on_this_machine and not token_cache.startswith("/"):
        token_cache = str((path.parent / os.path.expanduser(token_cache)).resolve())
    sweep = spec_rules.sweep_values(where, sec["sweep"], sec["train"], list(datasets), vars(cluster),
                                    workload.keys(), workload.axes, workload.kind)
    return Study(
        path=path,
        name=sec["study"]["name"],
        description=sec["study"]["description"],
        cluster=cluster,
        datasets=datasets,
        token_cache=token_cache,
        prepare_workers=sec["data"]["prepare_workers"],
        model=sec["model"],
        train=sec["train"],
        sweep=sweep,
        synthetic_default=not sec["data"]["datasets"],
        workload=workload,
        baseline_runs=sec["study"]["baseline_runs"],
    )


def _workload(where: str, raw: dict[str, Any], path: Path) -> Workload:
    """[workload] (the HLM trainer when absent). A study run on this machine has its files checked now."""
    cluster = raw.get("cluster")
    kinds = load_kinds()  # a plug-in's kind too, before its facts are asked
    kind = kinds.get(str(cluster.get("kind", "local"))) if isinstance(cluster, dict) else kinds["local"]
    here = kind is not None and kind.on_this_machine  # an unknown kind is refused with [cluster]'s other keys
    try:
        return workload_of(where, raw.get(WORKLOAD_SECTION, {}), path.parent if here else None)
    except WorkloadError as exc:
        raise SpecError(str(exc)) from None



def _digest(values: dict[str, Any], length: int = 10) -> str:
    canonical = json.dumps(values, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:length]
