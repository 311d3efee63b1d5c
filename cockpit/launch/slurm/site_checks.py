"""What a Slurm site would refuse, or silently mis-run, refused before anything is submitted: the account and QOS
its profile requires, a partition it does not have or without GPUs, more GPUs than a node has, a time limit
over the QOS's. Slurm's own checks of [cluster], with its wording."""

from __future__ import annotations

from typing import Any

from cockpit.launch.slurm.kind import SlurmKeys
from cockpit.study.cluster_kinds import own_keys
from cockpit.study.sites import Site, SiteError


def check_cluster(site: Site, cluster: Any, gpus_per_node: int) -> None:
    """Refuse, before anything is submitted, what this site would refuse (or silently mis-run)."""
    own = own_keys(SlurmKeys, cluster)
    where = f"{site.name} site ({site.source})"
    if site.require_account and not own.account:
        raise SiteError(f"[cluster].account is required on the {where}: sbatch -A is mandatory there")
    if site.require_qos and not own.qos:
        raise SiteError(f"[cluster].qos is required on the {where}: sbatch -q is mandatory there")
    partition = own.partition or site.default_partition
    if site.partitions and partition and partition not in site.partitions:
        raise SiteError(
            f"[cluster].partition {partition!r} is not a partition of the {where}; "
            f"expected one of {', '.join(site.partitions)}"
        )
    if site.gpu_partitions and partition and partition not in site.gpu_partitions:
        raise SiteError(
            f"[cluster].partition {partition!r} has no GPUs on the {where}; use one of {', '.join(site.gpu_partitions)}"
        )
    if site.gpus_per_node and gpus_per_node > site.gpus_per_node:
        raise SiteError(f"a configuration asks for {gpus_per_node} GPUs per node but the {where} has {site.gpus_per_node}")
    limit = site.qos_max_minutes.get(own.qos or "")
    if limit is not None and cluster.time_limit_minutes > limit:
        raise SiteError(
            f"[cluster].time_limit {cluster.time_limit} exceeds the {limit} minutes QOS {own.qos!r} allows on the {where}"
        )
