"""The launch and scheduler variables a trainer process reads, in one place.

torchrun sets RANK / WORLD_SIZE / LOCAL_RANK / LOCAL_WORLD_SIZE; Slurm sets SLURM_*; the batch script sets
HLM_LAUNCH_TIME. Code that needs one of them asks here, so a renamed variable is changed once.
"""

from __future__ import annotations

import os
from typing import Any

SLURM_VARIABLES = {
    "job_id": "SLURM_JOB_ID",
    "node_name": "SLURMD_NODENAME",  # the node as Slurm names it (several slurmd may share one host)
    "nodes": "SLURM_NNODES",
    "nodelist": "SLURM_JOB_NODELIST",
    "cpus_per_task": "SLURM_CPUS_PER_TASK",
    "gpus_on_node": "SLURM_GPUS_ON_NODE",
    "job_gpus": "SLURM_JOB_GPUS",
    "partition": "SLURM_JOB_PARTITION",
    "account": "SLURM_JOB_ACCOUNT",
    "qos": "SLURM_JOB_QOS",
    "restart_count": "SLURM_RESTART_COUNT",
}


def env_int(name: str, default: int) -> int:
    """An integer variable, or `default` when it is unset or not an integer."""
    value = os.environ.get(name, "")
    return int(value) if value.strip().lstrip("-").isdigit() else default


def slurm_allocation() -> dict[str, Any]:
    """What Slurm says it allocated to this job (only the variables that are set)."""
    return {key: os.environ[name] for key, name in SLURM_VARIABLES.items() if name in os.environ}


def usable_cores() -> int:
    """Cores this process may run on (its affinity mask, which Slurm's cgroup narrows to the job's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
