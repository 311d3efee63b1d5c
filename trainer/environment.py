"""The launch and scheduler variables a trainer process reads (and the one it sets), in one place.

torchrun sets RANK / WORLD_SIZE / LOCAL_RANK / LOCAL_WORLD_SIZE; Slurm sets SLURM_*; the batch script sets
HLM_LAUNCH_TIME (and a container HLM_GIT_SHA). Code that needs one of them asks here, so a renamed
variable is changed once; `threads_for_process` is the only place the trainer sets OMP_NUM_THREADS.
Pure Python (no torch).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runcontract import contract

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
# the signals that ask a rank to checkpoint and exit 75 (loop.StopSignal); Slurm's preemption and time limit send
# SIGTERM, `--signal=USR1@...` SIGUSR1
STOP_SIGNALS = contract.STOP_SIGNALS
LAUNCH_TIME = contract.LAUNCH_TIME_ENV  # epoch seconds, exported by the batch script before srun/torchrun
GIT_SHA = "HLM_GIT_SHA"  # the source revision where no .git travels with it (containers)
OMP_THREADS = "OMP_NUM_THREADS"


def env_int(name: str, default: int) -> int:
    """An integer variable, or `default` when it is unset or not an integer."""
    value = os.environ.get(name, "")
    return int(value) if value.strip().lstrip("-").isdigit() else default


@dataclass(frozen=True)
class Layout:
    """Where this process sits as torchrun describes it (world size 1 without torchrun)."""

    rank: int
    world: int
    local_rank: int
    local_world: int


def layout() -> Layout:
    """RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE (defaults: one process)."""
    world = env_int("WORLD_SIZE", 1)
    return Layout(env_int("RANK", 0), world, env_int("LOCAL_RANK", 0), env_int("LOCAL_WORLD_SIZE", world))


def is_main_rank() -> bool:
    """Rank 0 (or no torchrun): the process that writes config.json, exit.json and result.json."""
    return env_int("RANK", 0) == 0


def slurm_allocation() -> dict[str, Any]:
    """What Slurm says it allocated to this job (only the variables that are set)."""
    return {key: os.environ[name] for key, name in SLURM_VARIABLES.items() if name in os.environ}


def slurm_cpus_per_task() -> int | None:
    """SLURM_CPUS_PER_TASK when it is a positive integer, else None."""
    cpus = env_int(SLURM_VARIABLES["cpus_per_task"], 0)
    return cpus if cpus > 0 else None


def launch_time() -> float | None:
    """HLM_LAUNCH_TIME as epoch seconds, or None when unset or not a number."""
    value = os.environ.get(LAUNCH_TIME, "").strip()
    try:
        return float(value) if value else None
    except ValueError:
        return None


def git_sha() -> str | None:
    return os.environ.get(GIT_SHA) or None


def cuda_visible_devices() -> str | None:
    return os.environ.get("CUDA_VISIBLE_DEVICES")


def threads_for_process(threads: int) -> Callable[[], None]:
    """Set OMP_NUM_THREADS for this process (and the DataLoader workers it starts) unless the launcher set
    it; returns the function that puts the variable back as it was (the caller may live on: tests)."""
    before = os.environ.get(OMP_THREADS)
    os.environ.setdefault(OMP_THREADS, str(threads))

    def restore() -> None:
        if before is None:
            os.environ.pop(OMP_THREADS, None)
        else:
            os.environ[OMP_THREADS] = before

    return restore


def usable_cores() -> int:
    """Cores this process may run on (its affinity mask, which Slurm's cgroup narrows to the job's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
