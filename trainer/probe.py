"""What a scaling prediction needs from a run, measured at start-up outside T: gradient bytes, DDP buckets,
and the bus bandwidth and latency all-reduce achieves over each kind of link the run spans.

The probe all-reduces a tensor of the gradient's size a few times once the process group exists (one
warm-up, then `REPEATS` timed), over the whole group and, when the run spans several nodes with several
ranks on each, over each node's ranks alone. Bandwidth is reported the way NCCL's tests do:
algorithm bandwidth = bytes / time, bus bandwidth = algbw x 2(n-1)/n (what each link carried), so figures
from different world sizes compare. A one-element all-reduce, timed `SMALL_REPEATS` times, gives the latency
(the alpha of the alpha-beta model: a message's time is alpha + bytes / beta): its seconds over the ring's
2(n-1) steps, `latency_s` per step, as cockpit.forecast.prediction prices every collective call. docs/prediction.md
uses them.
"""

from __future__ import annotations

import math
import time
from typing import Any

import torch
import torch.distributed as dist

from trainer.distributed import Dist

REPEATS = 3
SMALL_REPEATS = 20  # a one-element all-reduce costs microseconds: more repeats for a steady mean


def grad_bytes(params: list[torch.nn.Parameter]) -> int:
    """Bytes one all-reduce of the gradients moves (gradients have their parameters' dtype)."""
    return int(sum(p.numel() * p.element_size() for p in params if p.requires_grad))



def _time_all_reduce(tensor: torch.Tensor, group: Any, size: int, device: torch.device) -> dict[str, float]:
    def mean_seconds(t: torch.Tensor, repeats: int) -> float:
        """One all-reduce of `t`, in seconds, over `repeats` after a warm-up (connection set-up, NCCL init)."""
        def sync() -> None:
            if device.type == "cuda":
                torch.cuda.synchronize(device)

        dist.all_reduce(t, group=group)
        sync()
        t0 = time.perf_counter()
        for _ in range(repeats):
            dist.all_reduce(t, group=group)
        sync()
        return (time.perf_counter() - t0) / repeats

    seconds = mean_seconds(tensor, REPEATS)
    nbytes = tensor.numel() * tensor.element_size()
    algbw = nbytes / seconds if seconds > 0 else math.nan
    small_s = mean_seconds(torch.ones(1, dtype=tensor.dtype, device=device), SMALL_REPEATS)
    return {"ranks": size, "seconds": seconds, "algbw_bytes_per_s": algbw,
            "busbw_bytes_per_s": algbw * 2 * (size - 1) / size,
            "small_seconds": small_s, "latency_s": small_s / (2 * (size - 1))}


def all_reduce_probe(d: Dist, nbytes: int, nodes: int) -> dict[str, Any] | None:
    """Timed all-reduces of `nbytes` per link kind; None without a process group (one process, no DDP)."""
    if not d.enabled or d.world < 2:
        return None
    t0 = time.perf_counter()
    tensor = torch.ones(max(1, nbytes // 4), dtype=torch.float32, device=d.device)
    links: dict[str, Any] = {}
    whole = _time_all_reduce(tensor, None, d.world, d.device)
    links["inter_node" if nodes > 1 else "intra_node"] = whole
    if nodes > 1 and d.local_world > 1 and d.world % d.local_world == 0:
        local, _ = dist.new_subgroups(group_size=d.local_world)
        links["intra_node"] = _time_all_reduce(tensor, local, d.local_world, d.device)
    return {"bytes": tensor.numel() * 4, "repeats": REPEATS, "links": links,
            "probe_s": time.perf_counter() - t0}
