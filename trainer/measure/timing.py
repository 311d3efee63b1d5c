"""Clocks for the per-step breakdown and the meter of every collective: DDP's all-reduce hook, FSDP's and ZeRO's.

On CPU every mark is `time.perf_counter()`. On CUDA, work is asynchronous, so device phases are marked with
CUDA events on the current stream and resolved after the step's final synchronisation; host-side phases
(waiting for the DataLoader) stay on the host clock. docs/training.md explains the method.
"""

import contextlib
import math
import resource
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist
from torch.autograd.profiler import record_function
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

from runcontract.contract import BREAKDOWN_PARTS, COMM_KINDS, trace_range
from runcontract.ledger import Spread

PHASES = BREAKDOWN_PARTS  # the one table of part names (runcontract/contract.py), also the profiler ranges' names
Mark = torch.cuda.Event | float  # what Clock.mark() returns: a recorded CUDA event, or perf_counter()
_NO_RANGE = contextlib.nullcontext()


class Clock:
    """Device-aware timestamps: floats on CPU, recorded CUDA events on GPU."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"

    def mark(self) -> Mark:
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def elapsed(self, start: Mark, end: Mark) -> float:
        """Seconds between two marks; on CUDA call only after the events have completed."""
        if isinstance(start, torch.cuda.Event) and isinstance(end, torch.cuda.Event):
            return start.elapsed_time(end) / 1000.0
        if isinstance(start, float) and isinstance(end, float):
            return end - start
        raise TypeError(f"marks of two different clocks: {start!r}, {end!r}")

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()


class PartRanges:
    """torch.profiler ranges named after the parts of T (`hlm:data_wait`, `hlm:compute`, `hlm:comm`,
    `hlm:optimizer`), entered and left where the loop's marks for those parts are taken, so a trace shows
    the same intervals the breakdown sums. Disabled (a shared no-op context) unless the run is profiled.

    `hlm:comm` is the exposed all-reduce wait: it opens in the comm hook of the last gradient bucket, right
    after CommMeter's mark, and closes when backward() returns, inside `hlm:compute` (compute proper is the
    compute range minus it). It opens inside autograd's own range of that gradient and outlives it, so the
    trace writer moves it to a track of its own (profiling.StepProfiler). CPU only: on CUDA the hook runs
    on autograd's device thread, and the host returns long before the device is done; the GPU kernels in
    the trace show the wait there.
    """

    def __init__(self, enabled: bool = False, comm: bool = False) -> None:
        self.enabled = enabled
        self.comm = enabled and comm
        self._comm_range: Any = None

    def part(self, name: str) -> AbstractContextManager[Any]:
        return record_function(trace_range(name)) if self.enabled else _NO_RANGE

    def last_bucket_ready(self) -> None:
        """From the comm hook of the last gradient bucket: the exposed wait starts."""
        if self.comm and self._comm_range is None:
            self._comm_range = record_function(trace_range("comm"))
            self._comm_range.__enter__()

    def backward_done(self) -> None:
        """Right after backward() returned: close `hlm:comm` if it was opened."""
        if self._comm_range is not None:
            self._comm_range.__exit__(None, None, None)
            self._comm_range = None


@dataclass
class KindTotals:
    """One kind of collective on this rank: calls, bytes of the collective's whole buffer (an all-reduce's
    gradient bucket, an all-gather's gathered output, a reduce-scatter's input), seconds the rank waited for
    it (exposed) and seconds one of them was in flight, launch to completion (busy: DDP's all-reduce on CPU
    and GPU, the others on CPU)."""

    calls: int = 0
    bytes: int = 0
    exposed_s: float = 0.0
    busy_s: float = 0.0

    def as_dict(self) -> dict[str, float | int]:
        return {"calls": self.calls, "bytes": self.bytes, "exposed_s": self.exposed_s, "busy_s": self.busy_s,
                "overlapped_s": max(0.0, self.busy_s - self.exposed_s)}


class CommMeter:
    """The collectives of a step, per kind (COMM_KINDS), and the marks that attribute their waits.

    DDP's gradient all-reduce goes through `hook` (registered as DDP's comm hook): it all-reduces each bucket
    (averaging, as DDP's default) and marks the hand-over. `last_ready` is the mark of the last bucket of a
    backward pass, i.e. when the last gradient was computed; everything between it and the end of
    `backward()` is the rank waiting for all-reduces: the exposed all-reduce wait (`add_exposed`). From each
    bucket's hand-over to its completion it is in flight; `end_step` adds the union of a step's buckets (a
    bucket queued behind another counts once) to the busy time, of which backward hid all but the exposed
    wait. On CUDA the completion is an event recorded where DDP's stream waits for the collective.

    Collectives a strategy issues itself (FSDP's all-gather and reduce-scatter, ZeroRedundancyOptimizer's
    broadcast) run inside `timed`: on CPU gloo runs them synchronously on the training thread, so their whole
    duration is a wait (exposed = busy) and `timed_s` says how much of the step went to them. On CUDA they
    run on side streams; `timed` counts calls and bytes only, and their wait stays inside compute/optimizer.
    """

    def __init__(self, clock: Clock, group: dist.ProcessGroup | None = None, ranges: PartRanges | None = None) -> None:
        self.clock = clock
        self.group = group
        self.ranges = ranges or PartRanges()
        self.last_ready: Mark | None = None
        self.buckets = 0
        self.kinds = {kind: KindTotals() for kind in COMM_KINDS}
        self.timed_s = 0.0  # host seconds inside `timed` collectives (CPU), summed over the run
        self.in_flight: list[list[Mark]] = []  # this step's all-reduce buckets: [hand-over, completion]

    @property
    def busy_s(self) -> float:
        """Seconds an all-reduce bucket was in flight (result.json `comm.busy_s`)."""
        return self.kinds["all_reduce"].busy_s

    def reset(self) -> None:
        self.last_ready = None
        self.buckets = 0

    def add_exposed(self, kind: str, seconds: float) -> None:
        self.kinds[kind].exposed_s += seconds

    def end_step(self) -> None:
        """After the step's synchronisation (its CUDA events have completed): add the time its all-reduce
        buckets were in flight to the all-reduce's busy time."""
        spans, self.in_flight = self.in_flight, []
        done = [(span[0], span[1]) for span in spans if len(span) == 2]
        if done:
            origin = done[0][0]  # the first hand-over: every mark of the step is after it
            self.kinds["all_reduce"].busy_s += union_s([(self.clock.elapsed(origin, a), self.clock.elapsed(origin, b))
                                                        for a, b in done])

    @contextlib.contextmanager
    def timed(self, kind: str, nbytes: int) -> Iterator[None]:
        """Around a blocking collective of `nbytes` (see the class docstring for CUDA)."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            totals = self.kinds[kind]
            totals.calls += 1
            totals.bytes += nbytes
            if not self.clock.cuda:
                seconds = time.perf_counter() - t0
                totals.exposed_s += seconds
                totals.busy_s += seconds
                self.timed_s += seconds

    def by_kind(self, before: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, float | int]]:
        """result.json `comm.by_kind`: the kinds used, added to `before` (the earlier segments of a resumed run)."""
        out: dict[str, dict[str, float | int]] = {}
        for kind, totals in self.kinds.items():
            earlier = (before or {}).get(kind, {})
            both = KindTotals(totals.calls + int(earlier.get("calls", 0)), totals.bytes + int(earlier.get("bytes", 0)),
                              totals.exposed_s + float(earlier.get("exposed_s", 0.0)),
                              totals.busy_s + float(earlier.get("busy_s", 0.0)))
            if both.calls:
                out[kind] = both.as_dict()
        return out

    def hook(self, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        ready = self.last_ready = self.clock.mark()
        self.buckets += 1
        totals = self.kinds["all_reduce"]
        totals.calls += 1
        totals.bytes += bucket.buffer().numel() * bucket.buffer().element_size()
        if self.ranges.comm and bucket.is_last():
            self.ranges.last_bucket_ready()
        span = [ready]
        self.in_flight.append(span)
        # torch annotates process_group without None, which the hook takes as the default group
        fut = default_hooks.allreduce_hook(self.group, bucket)  # type: ignore[arg-type]

        def done(f: torch.futures.Future[torch.Tensor]) -> torch.Tensor:
            # on CUDA torch runs this on a stream that waits for the all-reduce: the event marks its completion
            span.append(self.clock.mark())
            return f.value()

        return fut.then(done)


def union_s(spans: list[tuple[float, float]]) -> float:
    """Seconds covered by at least one of the (start, end) spans."""
    total, reach = 0.0, -math.inf
    for start, end in sorted(spans):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def comm_hook(state: CommMeter, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """Module-level hook function (DDP requires a callable taking (state, bucket))."""
    return state.hook(bucket)


@dataclass
class Breakdown:
    """Seconds per phase, summed over steps; `add_step` keeps `other` as the exact remainder."""

    data_wait: float = 0.0
    compute: float = 0.0
    comm: float = 0.0
    optimizer: float = 0.0
    other: float = 0.0
    steps: int = 0
    extra: dict[str, float] = field(default_factory=dict)
    # each step's wall less its comm, but the first (it holds the loader's start), for result.json
    # timing.step_time_sd_s (cockpit.forecast.straggler)
    spread: Spread = field(default_factory=Spread)

    def add_step(self, wall: float, data_wait: float, compute: float, comm: float, optimizer: float) -> None:
        self.data_wait += data_wait
        self.compute += compute
        self.comm += comm
        self.optimizer += optimizer
        self.other += max(0.0, wall - data_wait - compute - comm - optimizer)
        if self.steps:
            self.spread.add(wall - comm)
        self.steps += 1

    def step_sd(self) -> float | None:
        """The standard deviation of a step's wall less its comm over the steps after the first (None: under 2)."""
        return self.spread.sd()

    def total(self) -> float:
        return self.data_wait + self.compute + self.comm + self.optimizer + self.other

    def as_dict(self) -> dict[str, float]:
        return {p: getattr(self, p) for p in PHASES}

    def merge(self, other: dict[str, float]) -> None:
        for p in PHASES:
            setattr(self, p, getattr(self, p) + float(other.get(p, 0.0)))


def peak_source(device: torch.device) -> str:
    """What `peak_memory_bytes` reads on this device (result.json `memory.peak_source`)."""
    return "cuda max_memory_allocated" if device.type == "cuda" else "peak resident set size (getrusage)"


def peak_memory_bytes(device: torch.device) -> int:
    """CUDA max allocated, or this process's peak resident set size on CPU."""
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
