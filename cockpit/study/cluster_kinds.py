"""The places a study may run (`[cluster].kind`) as the study layer knows them: a name, its words, whether its
jobs run on this machine (paths resolved here, one node) or on a cluster reached over SSH (paths named there),
and the [cluster] keys it takes beyond every kind's (cockpit.study.tables.ClusterKeys). Only `local` is declared
here; every other kind is registered by its backend's package (Slurm's: cockpit.launch.slurm.kind), loaded
before a study file is read as a plug-in's is (cockpit.plugins), and the study file's checks ask these facts,
never a kind's name."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from runcontract.keys import ConfigKey

# the backend packages that register the built-in kinds beside `local` (each module calls register() once)
BUILTIN_KINDS = ("cockpit.launch.slurm.kind",)
T = TypeVar("T")


@dataclass(frozen=True)
class ClusterKind:
    """What the study file's checks need of a place to run jobs."""

    name: str
    words: str  # "this machine's cores (no scheduler)": the key's help and the refusal's words
    on_this_machine: bool  # paths resolved from the study file's folder, one node, this machine's cores
    over_ssh: bool = False  # needs [cluster].ssh_host or host, and an absolute workdir there
    keys: tuple[ConfigKey, ...] = ()  # its own [cluster] keys, judged with every kind's (the study's `Cluster.own`)


KINDS: dict[str, ClusterKind] = {
    "local": ClusterKind("local", "this machine's cores (no scheduler)", on_this_machine=True),
}


def register(kind: ClusterKind) -> None:
    """Add a place to run jobs (its backend's package registers it: cockpit.launch.registry.register)."""
    KINDS[kind.name] = kind


def load_kinds() -> dict[str, ClusterKind]:
    """Every kind: the built-in backends' and the plug-ins' registered (each module imported once)."""
    from cockpit.plugins import load_plugins

    for module in BUILTIN_KINDS:
        importlib.import_module(module)
    load_plugins()
    return KINDS


def kind_of(where: str, name: str) -> ClusterKind:
    """The facts of `[cluster].kind`, or ValueError naming the file, the key, the known kinds and what was found."""
    kinds = load_kinds()
    if name not in kinds:
        raise ValueError(f"{where}: [cluster].kind: expected one of {', '.join(kinds)}, got {name!r}")
    return kinds[name]


def own_keys(cls: type[T], cluster: Any) -> T:
    """A kind's own keys (a dataclass of them: cockpit.launch.slurm.kind.SlurmKeys) read from a resolved study's
    cluster (`Cluster.own`); a key its kind does not take is at its default (a local study's batch scripts
    rendered for a look, `cockpit plan --render`)."""
    return cls(**{f.name: cluster.own[f.name] for f in fields(cls) if f.name in cluster.own})  # type: ignore[arg-type]
