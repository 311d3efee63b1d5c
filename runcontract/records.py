"""The run directory's records: config.json (the run's whole input), result.json (what it measured, every field
in docs/run-directory.md) and exit.json (how it ended), written and read through runcontract.files by every
workload and the cockpit.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

from runcontract.contract import (
    CONFIG_FILE,
    EXIT_FILE,
    EXIT_REASONS,
    RESULT_FILE,
    RESULT_KIND,
    RESULT_STATUSES,
    SCHEMA_VERSION,
    ContractError,
)
from runcontract.disk_space import DiskFull, release_room
from runcontract.files import check_version, read_json, write_json


class ResultTiming(TypedDict, total=False):
    """result.json `timing` (docs/run-directory.md; docs/training.md says what T contains)."""

    train_time_s: float  # T, first step start to last step end, summed over resumed segments
    startup_s: float
    prepare_s: float
    eval_s: float
    checkpoint_s: float
    wall_s: float
    steps: int
    epochs: float
    samples: int
    tokens: int
    resumes: int
    launch_time_source: str
    steps_per_epoch: int
    first_step_s: float
    step_time_sd_s: float | None  # sd of a step's wall less its comm, the last segment's steps after its first
    val_s: float
    profiled_steps: int  # steps inside T that ran under torch.profiler (warm-up and recorded); 0 without
    profile_s: float  # starting, stopping and exporting the profiler: outside T


class ResultProfile(TypedDict):
    """result.json `profile` when train.profile_active is set (null otherwise)."""

    schedule: dict[str, int]  # wait, warmup, active, repeat as the run used them
    steps: list[int]  # the recorded steps (in the traces); their wall time is inside T
    warmup_steps: list[int]  # steps the profiler ran but discarded (its warm-up); inside T too
    traced_s: float  # rank 0's wall time of those steps (warm-up and recorded), part of T
    traces: list[str]  # every rank's trace files, relative to the run directory
    ranges: dict[str, str]  # step part -> record_function name in the traces


class ResultParallel(TypedDict):
    """result.json `parallel`: the data-parallel strategy (trainer/parallelism/parallel.py, docs/strategies.md)."""

    strategy: str  # as configured: ddp, zero1, fsdp, fsdp_noreshard
    applied: str  # what ran: the strategy, or "none" with one process (no process group)
    sharded: list[str]  # what each rank holds 1/N of: params, grads, optimizer
    mixed_precision: str | None  # FSDP's parameter and reduction dtype on GPU ("bf16"), else null


class ResultMemory(TypedDict, total=False):
    """result.json `memory`: rank 0's figures and every rank's (`by_rank`). The held bytes are counted from
    the tensors after the first step of the last segment (a sharded tensor by its local shard); the peak is the
    device's at the end of training."""

    params_bytes: int
    grads_bytes: int
    optimizer_bytes: int
    model_states_bytes: int  # the three together
    peak_bytes: int
    peak_source: str  # "cuda max_memory_allocated" or "peak resident set size (getrusage)"
    by_rank: list[dict[str, Any]]  # rank and the five figures above, per rank


class ResultEnergy(TypedDict):
    """result.json `energy`: the joules the run's devices drew over T (runcontract/energy.py: the GPUs' NVML
    energy counter, else their power integrated; on CPU the packages' RAPL counters), or why not measured."""

    joules: float | None  # null when not measured; `reason` says why
    source: str | None  # "NVML energy counter", "NVML power integrated" or "RAPL package counters"
    mean_power_w: float | None  # all devices together, over the part of T the samples cover
    devices: int  # GPUs (host, index) or RAPL zones (host, package) measured
    covered_s: float  # seconds of T inside the samples' span (the least of any device)
    train_time_s: float  # T as the metrics lines' windows add it up
    reason: str  # "" when measured


class ResultGpuUse(TypedDict):
    """result.json `gpu_use` (CUDA runs): the GPUs' NVML name and busy share over T."""

    name: str | None  # NVML's device name ("NVIDIA H200"), the most frequent among the samples
    devices: int
    busy_pct: float | None  # mean NVML utilisation of the samples inside T, averaged over the GPUs
    memory_bytes: float | None  # the GPU's memory as NVML reports it (the least of the run's GPUs)
    samples: int
    reason: str  # "" when measured


class Result(TypedDict, total=False):
    """result.json as the trainer writes it (every field: docs/run-directory.md). `write_result` adds
    `schema_version` and `kind`; readers get a plain dict and must tolerate fields they do not know."""

    status: str
    study: str
    config_id: str
    group_id: str
    config: dict[str, Any]
    mode: str
    world_size: int
    nodes: int
    gpus_per_node: int
    hostnames: list[str]
    device: str
    backend: str
    versions: dict[str, Any]
    git_sha: str | None
    synthetic: bool
    timing: ResultTiming
    breakdown_s: dict[str, float]  # BREAKDOWN_PARTS -> seconds of T on rank 0
    breakdown_by_rank: list[dict[str, Any]]
    throughput: dict[str, float | None]
    peak_memory_bytes: int
    batch_probe: dict[str, Any] | None  # train.batch_probe's timings at b and 2b (trainer/run/batch_probe.py)
    final_loss: float | None
    model: dict[str, Any]
    loader: dict[str, Any]
    optimizer: dict[str, Any]
    parallel: ResultParallel
    memory: ResultMemory
    comm: dict[str, Any]  # method, busy_s, by_kind (all_reduce, all_gather, reduce_scatter, broadcast), ...
    data: dict[str, Any]
    profile: ResultProfile | None
    eval: dict[str, Any]
    validation: dict[str, Any]
    init: str | None
    started_at: float
    finished_at: float
    energy: ResultEnergy  # the devices' energy over T (runcontract/energy.py)
    gpu_use: ResultGpuUse | None  # the GPUs' name and NVML busy share over T; null on CPU


def write_config(run_dir: str | os.PathLike[str], config: dict[str, Any]) -> Path:
    """Write config.json, the trainer's whole input, stamped with the schema version."""
    path = Path(run_dir) / CONFIG_FILE
    write_json(path, {"schema_version": SCHEMA_VERSION, **config})
    return path


def read_config(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Read config.json; a missing file is an error because the trainer cannot start without it."""
    path = Path(run_dir) / CONFIG_FILE
    data = read_json(path)
    if data is None:
        raise ContractError(f"{path}: missing (the launcher writes it before the run starts)")
    check_version(path, data)
    return data


def write_result(run_dir: str | os.PathLike[str], result: Mapping[str, Any]) -> Path:
    """Write result.json once, at the end of a run, by rank 0."""
    missing = [key for key in ("status", "config_id", "timing") if key not in result]
    if missing:
        raise ContractError(f"result for {run_dir} lacks required keys: {', '.join(missing)}")
    if result["status"] not in RESULT_STATUSES:
        raise ContractError(f"result for {run_dir}: status {result['status']!r} is not one of {RESULT_STATUSES}")
    path = Path(run_dir) / RESULT_FILE
    write_json(path, {"schema_version": SCHEMA_VERSION, "kind": RESULT_KIND, **result})
    return path


def read_result(run_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """Read result.json; None if the run has not finished. Unknown fields are kept, never rejected."""
    path = Path(run_dir) / RESULT_FILE
    data = read_json(path)
    if data is None:
        return None
    check_version(path, data)
    timing = data.get("timing")
    if not isinstance(timing, dict) or not isinstance(timing.get("train_time_s"), int | float):
        raise ContractError(f"{path}: timing.train_time_s missing or not a number")
    return data


def write_exit(run_dir: str | os.PathLike[str], code: int, message: str = "", **extra: Any) -> Path:
    """Record how the run ended; written by rank 0 on every exit path."""
    record = {
        "schema_version": SCHEMA_VERSION,
        "code": int(code),
        "reason": EXIT_REASONS.get(int(code), "error"),
        "message": message,
        "time": time.time(),
        **extra,
    }
    path = Path(run_dir) / EXIT_FILE
    try:
        write_json(path, record)
    except DiskFull:  # the room kept for it (disk_space.keep_room) makes it fit
        release_room(run_dir)
        write_json(path, record)
    release_room(run_dir)
    return path


def read_exit(run_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """Read exit.json; None when the trainer never got that far."""
    return read_json(Path(run_dir) / EXIT_FILE)

