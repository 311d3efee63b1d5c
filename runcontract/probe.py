"""What a scaling prediction needs from a run, measured at start-up outside T: gradient bytes, DDP buckets,
and the bus bandwidth and latency all-reduce achieves over each kind of link the run spans. Part of the run
contract: the HLM trainer runs it once its process group exists, a script's run (runcontract.Run) once it knows
the gradients' size with a process group of several ranks (`probe_for_run`), so every workload's result.json
carries the same `comm.probe` and the cockpit predicts and refits from it alike.

The probe all-reduces a tensor of the gradient's size a few times once the process group exists (one
warm-up, then `REPEATS` timed), over the whole group and, when the run spans several nodes with several
ranks on each, over each node's ranks alone. Bandwidth is reported the way NCCL's tests do:
algorithm bandwidth = bytes / time, bus bandwidth = algbw x 2(n-1)/n (what each link carried), so figures
from different world sizes compare. A one-element all-reduce, timed `SMALL_REPEATS` times, gives the latency
(the alpha of the alpha-beta model: a message's time is alpha + bytes / beta): its seconds over the ring's
2(n-1) steps, `latency_s` per step, as cockpit.forecast.prediction prices every collective call. docs/prediction.md
uses them.

Over each link the probe also sweeps the message size, from one element per rank up to the gradient's size (a
factor of SWEEP_FACTOR apart), for each collective kind the strategies call (all-reduce, all-gather,
reduce-scatter, broadcast), and fits the alpha-beta model to each kind's points by least squares: seconds =
alpha + bytes / beta (`collectives` in result.json, docs/run-directory.md). The per-call cost of small buckets and of
FSDP's many collectives is then measured, not extrapolated from one point; a kind the backend cannot run is
recorded with its error.

Contention: with several ranks on a node, each times the same compute (CONTENTION_MATMULS matrix products) first
alone, one node-rank at a time, then all at once, CONTENTION_ROUNDS times, keeping the least time of each;
`slowdown` = together / alone (the median over the node's ranks)
is how much the node's workers slow each other's compute (cores, memory bandwidth, the host link), recorded as
`contention` beside the links.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch
import torch.distributed as dist

REPEATS = 3
SMALL_REPEATS = 20  # a one-element all-reduce costs microseconds: timed 20 times, the least kept
KINDS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")
SWEEP_FACTOR = 8  # message sizes of the sweep: one element per rank, then x8 up to the gradient's size
SWEEP_REPEATS = 5  # each size's calls timed one by one, the least kept (_least_seconds)
CONTENTION_SIZE = 256  # a 256 x 256 float32 matrix product: compute-bound on a core, a few ms
CONTENTION_MATMULS = 20
# rounds of alone-then-together, the least time of each kept: one round of ~10 ms per timing measured 1.02-1.88
# for the same two ranks on a quiet 2-core machine (bench/prediction.py), the spread of a single hiccup
CONTENTION_ROUNDS = 5


class Place(Protocol):
    """Where this process sits (the HLM trainer's trainer.parallelism.distributed.Dist, or `Here` for a script's run)."""

    @property
    def enabled(self) -> bool: ...
    @property
    def world(self) -> int: ...
    @property
    def local_rank(self) -> int: ...
    @property
    def local_world(self) -> int: ...
    @property
    def device(self) -> torch.device: ...


@dataclass(frozen=True)
class Here:
    """A script's process as torchrun placed it: ranks from RANK/WORLD_SIZE/LOCAL_*, the device by the backend."""

    enabled: bool
    world: int
    local_rank: int
    local_world: int
    device: torch.device

    @classmethod
    def now(cls) -> Here:
        up = dist.is_available() and dist.is_initialized()
        world = dist.get_world_size() if up else 1
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        cuda = up and dist.get_backend() == "nccl" and torch.cuda.is_available()
        return cls(up, world, local_rank, int(os.environ.get("LOCAL_WORLD_SIZE", str(world))),
                   torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu"))


def probe_for_run(nbytes: int) -> dict[str, Any] | None:
    """The start-up probe of a script's run over its default process group (None with one process): the
    figures result.json `comm.probe` holds, as the HLM trainer's."""
    here = Here.now()
    return all_reduce_probe(here, nbytes, max(1, here.world // max(1, here.local_world)))


def grad_bytes(params: list[torch.nn.Parameter]) -> int:
    """Bytes one all-reduce of the gradients moves (gradients have their parameters' dtype)."""
    return int(sum(p.numel() * p.element_size() for p in params if p.requires_grad))



def sweep_sizes(max_elements: int, ranks: int) -> list[int]:
    """Message sizes in elements, each a multiple of `ranks` (all-gather and reduce-scatter split it evenly):
    one element per rank, then SWEEP_FACTOR times more, up to the largest multiple of `ranks` in max_elements."""
    top = max(ranks, max_elements - max_elements % ranks)
    sizes, n = [], ranks
    while n < top:
        sizes.append(n)
        n *= SWEEP_FACTOR
    return [*sizes, top]


def fit_alpha_beta(points: Sequence[tuple[float, float]]) -> dict[str, float]:
    """Least squares of seconds = alpha + bytes / beta over (bytes, seconds) points: alpha (s per call, at least 0)
    and beta (bytes per second; NaN where the time does not grow with the size)."""
    n = len(points)
    mx = sum(b for b, _ in points) / n
    my = sum(t for _, t in points) / n
    sxx = sum((b - mx) ** 2 for b, _ in points)
    slope = sum((b - mx) * (t - my) for b, t in points) / sxx if sxx > 0 else 0.0
    alpha = max(0.0, my - slope * mx)
    return {"alpha_s": alpha, "beta_bytes_per_s": 1 / slope if slope > 0 else math.nan}


def _call(kind: str, numel: int, ranks: int, group: Any, device: torch.device) -> Callable[[], Any]:
    """One collective of `numel` float32 elements in all (the whole message), ready to time."""
    if kind == "all_reduce":
        t = torch.ones(numel, device=device)
        return lambda: dist.all_reduce(t, group=group)
    if kind == "all_gather":
        part, whole = torch.ones(numel // ranks, device=device), torch.empty(numel, device=device)
        return lambda: dist.all_gather_into_tensor(whole, part, group=group)
    if kind == "reduce_scatter":
        whole, part = torch.ones(numel, device=device), torch.empty(numel // ranks, device=device)
        return lambda: dist.reduce_scatter_tensor(part, whole, group=group)
    t = torch.ones(numel, device=device)
    src = dist.get_global_rank(group, 0) if group is not None else 0
    return lambda: dist.broadcast(t, src=src, group=group)


def collective_sweep(max_elements: int, group: Any, ranks: int, device: torch.device) -> dict[str, Any]:
    """Per collective kind: the seconds of one call at each message size and the alpha-beta fit over them."""
    out: dict[str, Any] = {}
    sizes = sweep_sizes(max_elements, ranks)
    for kind in KINDS:
        try:
            points = []
            for numel in sizes:
                call = _call(kind, numel, ranks, group, device)
                points.append((numel * 4, _least_seconds(call, SWEEP_REPEATS, device)))
        except (RuntimeError, ValueError) as exc:  # a kind the backend does not run (its own words)
            out[kind] = {"error": str(exc).splitlines()[0][:200]}
            continue
        out[kind] = {"bytes": [b for b, _ in points], "seconds": [t for _, t in points], **fit_alpha_beta(points)}
    return out


def _mean_seconds(call: Callable[[], Any], repeats: int, device: torch.device) -> float:
    """One call's seconds, the mean over `repeats` after a warm-up (connection set-up, NCCL init)."""
    call()
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(repeats):
        call()
    _sync(device)
    return (time.perf_counter() - t0) / repeats


def _least_seconds(call: Callable[[], Any], repeats: int, device: torch.device) -> float:
    """One call's seconds, the least of `repeats` timed one by one after a warm-up: what a call costs when no rank
    arrives late and no thread is descheduled (on one CPU core per rank the mean of 3 was 0.36 ms at 8 bytes
    and 4.0 ms at 64), the cost the alpha-beta fit is of; what training adds to it the refit measures."""
    call()
    _sync(device)
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        _sync(device)
        best = min(best, time.perf_counter() - t0)
    return best


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _time_all_reduce(tensor: torch.Tensor, group: Any, size: int, device: torch.device) -> dict[str, Any]:
    seconds = _mean_seconds(lambda: dist.all_reduce(tensor, group=group), REPEATS, device)
    nbytes = tensor.numel() * tensor.element_size()
    algbw = nbytes / seconds if seconds > 0 else math.nan
    one = torch.ones(1, dtype=tensor.dtype, device=device)
    small_s = _least_seconds(lambda: dist.all_reduce(one, group=group), SMALL_REPEATS, device)
    return {"ranks": size, "seconds": seconds, "algbw_bytes_per_s": algbw,
            "busbw_bytes_per_s": algbw * 2 * (size - 1) / size,
            "small_seconds": small_s, "latency_s": small_s / (2 * (size - 1)),
            "collectives": collective_sweep(tensor.numel(), group, size, device)}


def _compute_seconds(device: torch.device) -> float:
    a = torch.ones(CONTENTION_SIZE, CONTENTION_SIZE, device=device)
    return _mean_seconds(lambda: [a @ a for _ in range(CONTENTION_MATMULS)], 1, device)


def contention_probe(d: Place) -> dict[str, Any] | None:
    """The node's ranks' compute alone (each in turn) and together, CONTENTION_ROUNDS times, the least of each
    kept: a scheduler hiccup in one short timing only lengthens that round; None with one rank per node."""
    if d.local_world < 2:
        return None
    alone, together = math.inf, math.inf
    for _ in range(CONTENTION_ROUNDS):
        for turn in range(d.local_world):  # every node's ranks take turns at once: local rank `turn` runs alone
            dist.barrier()
            if d.local_rank == turn:
                alone = min(alone, _compute_seconds(d.device))
        dist.barrier()
        together = min(together, _compute_seconds(d.device))
    mine = torch.tensor([alone, together], dtype=torch.float64, device=d.device)  # NCCL gathers device tensors
    gathered = [torch.zeros(2, dtype=torch.float64, device=d.device) for _ in range(d.world)]
    dist.all_gather(gathered, mine)
    every = [t.tolist() for t in gathered]
    slowdowns = sorted(t[1] / t[0] for t in every if t[0] > 0)
    return {"ranks_on_node": d.local_world, "matmuls": CONTENTION_MATMULS, "size": CONTENTION_SIZE,
            "alone_s": [t[0] for t in every], "together_s": [t[1] for t in every],
            "slowdown": slowdowns[len(slowdowns) // 2] if slowdowns else math.nan}


def all_reduce_probe(d: Place, nbytes: int, nodes: int) -> dict[str, Any] | None:
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
    return {"bytes": tensor.numel() * 4, "repeats": REPEATS, "links": links, "contention": contention_probe(d),
            "probe_s": time.perf_counter() - t0}
