"""The places a study may run (`[cluster].kind`) as the study layer knows them: a name, its words and whether its
jobs run on this machine (paths resolved here, one node) or on a cluster reached over SSH (paths named there).
The backends (cockpit.launch.registry) register theirs; a place added by a plug-in (cockpit.plugins) is one
register() call, and the study file's checks ask these facts, never a kind's name."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ClusterKind:
    """What the study file's checks need of a place to run jobs."""

    name: str
    words: str  # "this machine's cores (no scheduler)": the key's help and the refusal's words
    on_this_machine: bool  # paths resolved from the study file's folder, one node, this machine's cores
    over_ssh: bool = False  # needs [cluster].ssh_host or host, and an absolute workdir there


KINDS: dict[str, ClusterKind] = {
    "local": ClusterKind("local", "this machine's cores (no scheduler)", on_this_machine=True),
    "slurm": ClusterKind("slurm", "a Slurm cluster over SSH", on_this_machine=False, over_ssh=True),
}


def register(kind: ClusterKind) -> None:
    """Add a place to run jobs (its Backend registers it: cockpit.launch.registry.register)."""
    KINDS[kind.name] = kind


def kind_of(where: str, name: str) -> ClusterKind:
    """The facts of `[cluster].kind`, or ValueError naming the file, the key, the known kinds and what was found."""
    from cockpit.plugins import load_plugins

    load_plugins()
    if name not in KINDS:
        raise ValueError(f"{where}: [cluster].kind: expected one of {', '.join(KINDS)}, got {name!r}")
    return KINDS[name]
