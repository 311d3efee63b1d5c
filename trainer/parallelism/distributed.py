"""Process-group set-up from the torchrun/Slurm environment, and the few collectives the loop needs.

A plain `python -m trainer train` is world size 1 without any process group: no DDP wrapper, no
communication, so its comm time is exactly zero and nothing depends on a rendezvous.
"""

from __future__ import annotations

import datetime
import gc
import logging
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
import torch.distributed as dist

from trainer import environment

log = logging.getLogger("hlm.train")

T = TypeVar("T")


@dataclass(frozen=True)
class Dist:
    """Where this process sits: global rank and size, rank and size on its node, device, backend."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0
    local_world: int = 1
    device: torch.device = torch.device("cpu")
    backend: str | None = None  # None: single process, no process group

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def is_local_main(self) -> bool:
        return self.local_rank == 0

    @property
    def enabled(self) -> bool:
        return self.backend is not None


def pick_device(requested: str, local_rank: int) -> torch.device:
    """`auto` means CUDA when available; asking for CUDA without one is a config error (ValueError)."""
    if requested == "cpu" or (requested == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ValueError("train.device is 'cuda' but torch sees no CUDA device (torch.cuda.is_available() is False)")
    index = local_rank % torch.cuda.device_count()
    torch.cuda.set_device(index)
    return torch.device("cuda", index)


def setup(requested_device: str, timeout_s: float = 1800.0) -> Dist:
    """Join the process group torchrun describes (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT)."""
    where = environment.layout()
    rank, world, local_rank, local_world = where.rank, where.world, where.local_rank, where.local_world
    device = pick_device(requested_device, local_rank)
    if world <= 1:
        return Dist(device=device)
    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout_s),
                            device_id=device if backend == "nccl" else None)
    return Dist(rank, world, local_rank, local_world, device, backend)


def teardown(d: Dist, clean: bool = True) -> None:
    """Leave the process group. After a clean end every rank first meets at a barrier: a rank that tears
    gloo down while a peer is still writing result.json can abort in C++ ("terminate called without an
    active exception") and turn a finished run into a failed job. After an error, no barrier (it could hang)."""
    if d.enabled and dist.is_initialized():
        # DDP's reducer keeps the process group alive through reference cycles; collected only at interpreter
        # shutdown, gloo's threads then touch Python objects that are gone and the rank aborts (SIGABRT).
        gc.collect()
        if clean:
            try:
                barrier(d)
            except Exception as exc:  # a peer already gone: leave anyway
                log.warning("barrier before leaving the process group failed: %s", exc)
        dist.destroy_process_group()


def barrier(d: Dist) -> None:
    if d.enabled:
        if d.backend == "nccl":
            dist.barrier(device_ids=[d.device.index])
        else:
            dist.barrier()


def all_reduce_sum(d: Dist, values: list[float]) -> list[float]:
    """Sum a few floats over ranks (eval counts, flags); identity without a process group."""
    if not d.enabled:
        return list(values)
    t = torch.tensor(values, dtype=torch.float64, device=d.device)
    dist.all_reduce(t)
    return t.tolist()


def gather_objects(d: Dist, obj: T) -> list[T]:
    """Every rank's `obj` on every rank (hostnames, RNG states); [obj] without a process group."""
    if not d.enabled:
        return [obj]
    out: list[Any] = [None] * d.world
    dist.all_gather_object(out, obj)
    return out


class StopVote:
    """Agree on stopping (SIGTERM/SIGUSR1) at the same step on every rank without stalling the loop.

    Signals reach ranks at slightly different times. Each step launches an asynchronous MAX all-reduce of
    the local flag and reads the previous step's result, so all ranks see the same answer one step later
    and the wait is hidden behind a step of compute. Without a process group the local flag is the answer.
    """

    def __init__(self, d: Dist) -> None:
        self.d = d
        self._pending: tuple[torch.Tensor, dist.Work] | None = None

    def poll(self, local_stop: bool) -> bool:
        if not self.d.enabled:
            return local_stop
        decided = False
        if self._pending is not None:
            tensor, work = self._pending
            work.wait()
            decided = bool(tensor.item() > 0)
        tensor = torch.tensor([1.0 if local_stop else 0.0], device=self.d.device)
        self._pending = (tensor, dist.all_reduce(tensor, op=dist.ReduceOp.MAX, async_op=True))
        return decided

    def drain(self) -> None:
        """Complete the outstanding all-reduce so every rank leaves the loop with no collective in flight."""
        if self._pending is not None:
            self._pending[1].wait()
            self._pending = None
