"""Slurm as a place to run jobs, as the study file's checks know it: its facts and its own [cluster] keys
(account, qos, partition, hint_nomultithread, gres_style; the SSH login beside them), registered here and
loaded before a study file is read, as a plug-in's kind is (cockpit.study.cluster_kinds.BUILTIN_KINDS)."""

from __future__ import annotations

from dataclasses import dataclass

from cockpit.launch.ssh_keys import SSH_KEYS
from cockpit.study.cluster_kinds import ClusterKind, register
from runcontract.keys import key, keys_of


@dataclass(frozen=True)
class SlurmKeys:
    """[cluster]'s Slurm keys; `own_keys(SlurmKeys, cluster)` reads them from a resolved study's cluster."""

    account: str | None = key(None, "Slurm account (-A; required where the site profile says so)")
    qos: str | None = key(None, "Slurm QOS (-q; its wall-time limit is checked before submitting)")
    partition: str | None = key(None, "Slurm partition (-p; default: the site profile's)")
    hint_nomultithread: bool = key(False, "#SBATCH --hint=nomultithread (one task per core)")
    gres_style: str = key("gpus-per-node", "GPUs asked as --gpus-per-node=G or --gres=gpu:G",
                          choices=("gpus-per-node", "gres"))


SLURM_KEYS = keys_of("cluster", SlurmKeys)
SLURM_KIND = ClusterKind("slurm", "a Slurm cluster over SSH", on_this_machine=False, over_ssh=True,
                         keys=(*SSH_KEYS, *SLURM_KEYS))
register(SLURM_KIND)
