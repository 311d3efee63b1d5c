"""Reading the trainer's torch.profiler traces (Chrome trace JSON) without torch: per step, the trainer's
own step parts (`hlm:<part>` ranges), the operations by self time and the all-reduce spans.

A trace is what `torch.profiler.profile.export_chrome_trace` writes: {"traceEvents": [...]} with complete
events ("ph": "X", microseconds `ts` and `dur`) per process and thread. `ProfilerStep#N` is the run's step
N (trainer/run/profiling.py). Ranges on one thread nest; an event's self time is its duration minus that of
the events directly inside it. Parts per step, from the trainer's ranges inside `ProfilerStep#N`:

    data_wait = hlm:data_wait     compute = hlm:compute - hlm:comm (nested in it)     comm = hlm:comm
    optimizer = hlm:optimizer     other = ProfilerStep#N - the four

`torch_view` measures the same parts from torch's own events instead of the trainer's marks (the bench
bench/profile_crosscheck.py compares both with metrics.jsonl).
"""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from runcontract.contract import BREAKDOWN_PARTS, STEP_RANGE_PREFIX, TRACE_RANGE_PREFIX, trace_range

# what runs the collective itself (gloo's worker thread, NCCL's record, NCCL's GPU kernel), not its launch
_COLLECTIVE = re.compile(r"^(gloo|nccl):all_?reduce|^nccl.*kernel.*all_?reduce", re.IGNORECASE)
_LOADER = "enumerate(DataLoader)"
_LAUNCH = "c10d::allreduce_"  # torch's op that hands a tensor to the process group
GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
GPU_ANNOTATION = "gpu_user_annotation"  # a CPU range's copy on the GPU's timeline
HTA_NOTE_CPU = ("Holistic Trace Analysis (temporal breakdown, comm/compute overlap) needs GPU kernels in the "
                "traces; these hold none (a CPU run), so it is not computed here")
HTA_NOTE_GPU = ("these traces hold GPU kernels: Holistic Trace Analysis gives their temporal breakdown and "
                "comm/compute overlap (pip install HolisticTraceAnalysis; TraceAnalysis(trace_dir=DIR)"
                ".get_temporal_breakdown()); the cockpit does not run it")


class TraceError(ValueError):
    """A file that is not a readable Chrome trace; the message names it."""


@dataclass(frozen=True, eq=False)  # identity: two events may hold the same values
class Event:
    name: str
    cat: str
    tid: Any
    ts: float  # microseconds
    dur: float

    @property
    def end(self) -> float:
        return self.ts + self.dur


@dataclass
class Span:
    """One all-reduce as the trace shows it, placed in its step."""

    step: int | None
    name: str
    tid: Any
    start_ms: float  # after the start of its step
    dur_ms: float
    in_backward: bool  # launched inside hlm:compute (a gradient bucket), else between steps (the stop vote)


@dataclass
class TraceSummary:
    """What `cockpit trace` prints of one rank's trace."""

    name: str
    rank: int | None
    steps: list[int]
    parts_s: dict[int, dict[str, float]]  # step -> part -> seconds, from the trainer's ranges
    top_ops: list[tuple[str, float, int]]  # name, self seconds, calls
    all_reduce: list[Span]
    gpu_kernels: int
    main_tid: Any = None
    events: list[Event] = field(default_factory=list, repr=False)
    steps_s: float = 0.0  # from the first recorded step's start to the last one's end
    gpu_busy_s: float = 0.0  # within those steps, the time at least one GPU kernel, copy or memset ran
    comm_ranges: bool = False  # the trace holds hlm:comm ranges (a CPU run's; on CUDA the GPU shows the wait)

    def totals(self) -> dict[str, float]:
        """Seconds per part over the recorded steps."""
        return {p: sum(step[p] for step in self.parts_s.values()) for p in BREAKDOWN_PARTS}


def load(data: bytes, name: str) -> dict[str, Any]:
    """A trace's JSON from its bytes (gzip too)."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    try:
        trace = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TraceError(f"{name}: not a Chrome trace (not valid JSON: {exc})") from exc
    if isinstance(trace, list):
        trace = {"traceEvents": trace}
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise TraceError(f"{name}: not a Chrome trace (no traceEvents list)")
    return trace


def events(trace: dict[str, Any]) -> list[Event]:
    """The complete events ("X") of a trace, ordered by start (the longer first at equal starts). A CUDA trace
    repeats every annotated range (ProfilerStep#N, hlm:compute, ...) on the GPU's timeline, shifted by the
    GPU's lag; those copies are left out, so a step, its parts and an operation's calls are counted once."""
    out = []
    for e in trace["traceEvents"]:
        if (isinstance(e, dict) and e.get("ph") == "X" and isinstance(e.get("ts"), int | float)
                and e.get("cat") != GPU_ANNOTATION):
            out.append(Event(str(e.get("name", "")), str(e.get("cat", "")), e.get("tid"), float(e["ts"]),
                             float(e.get("dur") or 0.0)))
    out.sort(key=lambda e: (e.ts, -e.dur))
    return out


def self_times(evs: list[Event]) -> dict[Event, float]:
    """Each event's duration minus its direct children's on the same thread (nesting by time)."""
    own: dict[Event, float] = {}
    by_tid: dict[Any, list[Event]] = defaultdict(list)
    for e in evs:
        by_tid[e.tid].append(e)
    for thread in by_tid.values():
        stack: list[Event] = []
        for e in thread:
            while stack and e.ts >= stack[-1].end:
                stack.pop()
            own[e] = e.dur
            if stack:
                own[stack[-1]] -= min(e.dur, stack[-1].end - e.ts)
            stack.append(e)
    return own


def _step_of(name: str) -> int | None:
    if not name.startswith(STEP_RANGE_PREFIX):
        return None
    try:
        return int(name[len(STEP_RANGE_PREFIX):])
    except ValueError:
        return None


def _steps(evs: list[Event]) -> list[tuple[int, Event]]:
    """The ProfilerStep#N ranges that hold a step: the profiler opens one more after the last step it is
    stepped through, which the trainer's ranges (when the trace has them) show to be empty."""
    steps = [(s, e) for e in evs if (s := _step_of(e.name)) is not None]
    computes = [e for e in evs if e.name == trace_range("compute")]
    if not computes:
        return steps
    return [(s, env) for s, env in steps if any(env.ts <= c.ts < env.end for c in computes)]


def summarise(trace: dict[str, Any], name: str, top: int = 10) -> TraceSummary:
    """Per step the trainer's parts, the operations by self time and the all-reduce spans of one trace."""
    evs = events(trace)
    steps = _steps(evs)
    main_tid = steps[0][1].tid if steps else None
    own = self_times(evs)
    ranges = {trace_range(p): p for p in BREAKDOWN_PARTS if p != "other"}
    parts_s: dict[int, dict[str, float]] = {}
    compute_ranges: list[Event] = []
    for step, env in steps:
        # the trainer's ranges of this step: hlm:comm has a track of its own (trainer/run/profiling.py)
        inside = [e for e in evs if e.ts >= env.ts and e.end <= env.end + 1e-3 and e.name in ranges]
        sums = dict.fromkeys(BREAKDOWN_PARTS, 0.0)
        for e in inside:
            if e.name in ranges:
                sums[ranges[e.name]] += e.dur
        compute_ranges += [e for e in inside if e.name == trace_range("compute")]
        part = {"data_wait": sums["data_wait"], "compute": sums["compute"] - sums["comm"], "comm": sums["comm"],
                "optimizer": sums["optimizer"]}
        part["other"] = max(0.0, env.dur - sums["data_wait"] - sums["compute"] - sums["optimizer"])
        parts_s[step] = {p: v / 1e6 for p, v in part.items()}
    ops: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for e in evs:
        if e.name.startswith((TRACE_RANGE_PREFIX, STEP_RANGE_PREFIX)) or e.cat in ("Trace", "fwdbwd"):
            continue
        if _COLLECTIVE.search(e.name) and e.tid != main_tid:
            continue  # a collective running on its own thread overlaps the step: listed as a span instead
        ops[e.name][0] += own[e]
        ops[e.name][1] += 1
    top_ops = sorted(((n, v[0] / 1e6, int(v[1])) for n, v in ops.items()), key=lambda x: -x[1])[:top]
    # Each collective is matched to its launch (torch's c10d::allreduce_ on the training thread) in order:
    # the process group runs them first in, first out. Launched inside hlm:compute = a gradient bucket.
    launches = [e for e in evs if e.name == _LAUNCH and e.tid == main_tid]
    pending: list[Event] = []
    spans = []
    for e in evs:
        if not _COLLECTIVE.search(e.name):
            continue
        while launches and launches[0].ts <= e.ts:
            pending.append(launches.pop(0))
        launched = pending.pop(0).ts if pending else e.ts
        around = next((env for _, env in steps if env.ts <= e.ts < env.end), None)
        spans.append(Span(_step_of(around.name) if around else None, e.name, e.tid,
                          (e.ts - around.ts) / 1e3 if around else 0.0, e.dur / 1e3,
                          any(c.ts <= launched <= c.end for c in compute_ranges)))
    window = (steps[0][1].ts, max(env.end for _, env in steps)) if steps else (0.0, 0.0)
    return TraceSummary(name, _rank(trace, name), [s for s, _ in steps], parts_s, top_ops, spans,
                        sum(1 for e in evs if e.cat in GPU_CATEGORIES), main_tid, evs,
                        steps_s=(window[1] - window[0]) / 1e6,
                        gpu_busy_s=_busy([e for e in evs if e.cat in GPU_CATEGORIES], *window) / 1e6,
                        comm_ranges=any(e.name == trace_range("comm") for e in evs))


def _busy(evs: list[Event], start: float, end: float) -> float:
    """Microseconds of [start, end] covered by at least one of ``evs`` (overlapping kernels counted once)."""
    busy, reach = 0.0, start
    for e in sorted(evs, key=lambda e: e.ts):
        lo, hi = max(e.ts, reach), min(e.end, end)
        if hi > lo:
            busy += hi - lo
            reach = hi
    return busy


def torch_view(summary: TraceSummary) -> dict[int, dict[str, float]]:
    """The step parts measured from torch's own events instead of the trainer's marks (seconds per step):

    - data_wait: the DataLoader's own `enumerate(DataLoader)#...__next__` ranges (the copy to the device
      is not in them);
    - compute: time in torch operations inside forward and backward (the outermost operations of each
      hlm:compute range that start before the last bucket's all-reduce is launched; the Python between
      operations is not in them);
    - comm: from the launch of the last gradient bucket's all-reduce (torch's `c10d::allreduce_`) to the
      end of backward: launching it, and waiting until every bucket's all-reduce has finished.
    """
    out: dict[int, dict[str, float]] = {}
    evs = [e for e in summary.events if e.tid == summary.main_tid]
    steps = _steps(evs)
    for step, env in steps:
        inside = [e for e in evs if e.ts >= env.ts and e.end <= env.end + 1e-3]
        data = sum(e.dur for e in inside if e.name.startswith(_LOADER))
        busy = wait = 0.0
        for c in (e for e in inside if e.name == trace_range("compute")):
            ops = [e for e in inside if c.ts <= e.ts and e.end <= c.end + 1e-3 and e is not c
                   and not e.name.startswith(TRACE_RANGE_PREFIX)]
            launches = [e.ts for e in ops if e.name == _LAUNCH]
            split = max(launches) if launches else c.end
            outer_end = c.ts
            for e in ops:  # ordered by start: the outermost operations before the split
                if e.ts >= outer_end and e.ts < split:
                    busy += min(e.end, split) - e.ts
                    outer_end = e.end
            wait += c.end - split
        out[step] = {"data_wait": data / 1e6, "compute": busy / 1e6, "comm": wait / 1e6}
    return out


def _rank(trace: dict[str, Any], name: str) -> int | None:
    info = trace.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        return int(info["rank"])
    found = re.search(r"rank(\d+)", name)
    return int(found.group(1)) if found else None


def hta_note(summaries: list[TraceSummary]) -> str:
    return HTA_NOTE_GPU if any(s.gpu_kernels for s in summaries) else HTA_NOTE_CPU


def describe(summary: TraceSummary, top: int = 10, spans: int = 12) -> list[str]:
    """The printed lines of one rank's trace."""
    steps = summary.steps
    what = f"steps {steps[0]}-{steps[-1]}" if steps else "no ProfilerStep ranges"
    out = [f"rank {summary.rank if summary.rank is not None else '?'}: {summary.name} ({what})"]
    if summary.parts_s:
        n = len(summary.parts_s)
        totals = summary.totals()
        step_s = sum(totals.values())
        cells = ", ".join(f"{p} {1e3 * totals[p] / n:.2f} ms" for p in BREAKDOWN_PARTS)
        out.append(f"  step parts (the trainer's hlm: ranges), mean of {n} step{'s' if n > 1 else ''} of "
                   f"{1e3 * step_s / n:.2f} ms: {cells}")
    if summary.gpu_kernels and summary.steps_s > 0:
        out.append("  (on a GPU these ranges are the host's: it waits for the GPU in whichever part it is in; "
                   "result.json's breakdown times the GPU with CUDA events)")
        n = max(1, len(summary.steps))
        share = summary.gpu_busy_s / summary.steps_s
        out.append(f"  GPU busy {1e3 * summary.gpu_busy_s:.2f} ms of the recorded steps' {1e3 * summary.steps_s:.2f} ms "
                   f"({share:.0%}; {summary.gpu_kernels:,} kernels and copies, {summary.gpu_kernels / n:,.0f} per "
                   f"step): for {1e3 * (summary.steps_s - summary.gpu_busy_s) / n:.2f} ms of a step no kernel ran")
    if summary.top_ops:
        out.append(f"  top {len(summary.top_ops)} operations by self time:")
        out.append(f"    {'self ms':>9} {'calls':>6}  name")
        for name, seconds, calls in summary.top_ops:
            out.append(f"    {1e3 * seconds:9.2f} {calls:6d}  {name[:100]}")
    grads = [s for s in summary.all_reduce if s.in_backward]
    others = [s for s in summary.all_reduce if not s.in_backward]
    if summary.all_reduce:
        exposed, n = summary.totals()["comm"], max(1, len(summary.parts_s))
        wait = (f"exposed wait (hlm:comm) {1e3 * exposed:.2f} ms in all, {1e3 * exposed / n:.2f} ms per step"
                if summary.comm_ranges or not summary.gpu_kernels else
                "exposed wait: not a range on a GPU (the trainer times it with CUDA events: result.json comm)")
        out.append(f"  all-reduce spans over {n} step{'s' if n > 1 else ''}: {len(grads)} launched during backward "
                   f"(gradient buckets) running {sum(s.dur_ms for s in grads):.2f} ms in all, {len(others)} between "
                   f"steps (the stop vote) {sum(s.dur_ms for s in others):.2f} ms; {wait}")
        out.append(f"    {'step':>5} {'start ms':>9} {'dur ms':>8}  {'when':<9} name (thread)")
        for s in summary.all_reduce[:spans]:
            out.append(f"    {s.step if s.step is not None else '-':>5} {s.start_ms:9.2f} {s.dur_ms:8.2f}  "
                       f"{'backward' if s.in_backward else 'between':<9} {s.name} ({s.tid})")
        if len(summary.all_reduce) > spans:
            out.append(f"    ... {len(summary.all_reduce) - spans} more")
    else:
        out.append("  all-reduce spans: none (one process, or no collective in the recorded steps)")
    return out
