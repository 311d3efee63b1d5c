"""torch.profiler around the training loop (train.profile_*): which steps, where the traces go, what T holds.

torchtitan-style: cycles of `wait` steps left alone, `warmup` steps run under the profiler and discarded,
`active` steps recorded, `repeat` times (torch.profiler.schedule). Each rank writes one Chrome trace per
cycle into `traces/` of the run directory (`trace_file`), rank 0 an index of them, and the loop's
own step parts appear in them as `hlm:<part>` ranges (timing.PartRanges). The profiled steps stay in T
(their samples are part of the work); result.json `timing.profiled_steps` and `profile` say which and how
long they took. Starting, stopping and exporting happen between steps and are moved out of T (like
validation), into `timing.profile_s`. `ProfilerStep#N` in a trace is the run's step N (as in metrics.jsonl).
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerAction, ProfilerActivity

from runcontract.contract import (
    BREAKDOWN_PARTS,
    SCHEMA_VERSION,
    TRACE_INDEX_FILE,
    ContractError,
    trace_file,
    trace_range,
)
from runcontract.files import atomic_write, read_json, write_json
from runcontract.modes import make_dirs, protect
from runcontract.records import ResultProfile
from trainer.parallelism.distributed import Dist
from trainer.settings import Settings

log = logging.getLogger("hlm.train")

DEFAULTS = {"wait": 1, "warmup": 1, "repeat": 1}
_UNDER_PROFILER = (ProfilerAction.WARMUP, ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
_RECORDED = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


def schedule_of(s: Settings) -> dict[str, int] | None:
    """wait / warmup / active / repeat as the run uses them, or None when it is not profiled."""
    given = {"wait": s.train.profile_wait, "warmup": s.train.profile_warmup, "repeat": s.train.profile_repeat}
    if s.train.profile_active is None:
        if any(v is not None for v in given.values()):
            log.warning("train.profile_wait/warmup/repeat are set but train.profile_active is not: not profiling")
        return None
    return {k: DEFAULTS[k] if v is None else v for k, v in given.items()} | {"active": s.train.profile_active}


def empty_record() -> dict[str, Any]:
    """What Progress.profile keeps across resumes (result.json `profile` without its schedule)."""
    return {"steps": [], "warmup_steps": [], "traced_s": 0.0, "profile_s": 0.0, "traces": []}


class StepProfiler:
    """One segment's torch.profiler, stepped by the loop after each optimizer step (outside T)."""

    def __init__(self, schedule: dict[str, int], d: Dist, run_dir: Path, first_step: int,
                 record: dict[str, Any]) -> None:
        self.d, self.run_dir, self.record = d, run_dir, record
        self.schedule = schedule
        cycle = torch.profiler.schedule(wait=schedule["wait"], warmup=schedule["warmup"],
                                        active=schedule["active"], repeat=schedule["repeat"])
        # Step N of the run is the profiler's step N. The segment's first step (loader start, compilation)
        # is never profiled, so the profiler starts idle, as it expects to.
        self.first = first_step
        self._cycle = cycle
        self._recording: list[int] = []
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if d.device.type == "cuda" else [])
        self.prof = torch.profiler.profile(activities=activities, schedule=self.action,
                                           on_trace_ready=self._export)
        self.prof.step_num = first_step

    def action(self, step: int) -> ProfilerAction:
        """What the profiler does during step `step` of the run (1-based)."""
        if step <= self.first:
            return ProfilerAction.NONE
        return self._cycle(step - 1)

    def __enter__(self) -> StepProfiler:
        t0 = time.perf_counter()
        self.prof.start()
        self.record["profile_s"] += time.perf_counter() - t0
        return self

    def __exit__(self, *exc: object) -> None:
        t0 = time.perf_counter()
        self.prof.stop()
        self.record["profile_s"] += time.perf_counter() - t0

    def step(self, step: int, wall_s: float) -> float:
        """After step `step` (wall_s long, inside T): note it if it ran under the profiler and advance the
        profiler, which exports a finished cycle's trace. Returns the seconds this took (outside T)."""
        t0 = time.perf_counter()
        action = self.action(step)
        if action in _UNDER_PROFILER:
            self.record["traced_s"] += wall_s
            if action in _RECORDED:
                self.record["steps"].append(step)
                self._recording.append(step)
            else:
                self.record["warmup_steps"].append(step)
        self.prof.step()
        spent = time.perf_counter() - t0
        self.record["profile_s"] += spent
        return spent

    def _export(self, prof: torch.profiler.profile) -> None:
        """on_trace_ready: this rank's trace of the cycle just recorded; rank 0 also updates the index."""
        if not self._recording:
            return
        first, last = self._recording[0], self._recording[-1]
        self._recording = []
        path = self.run_dir / trace_file(self.d.rank, first, last)
        make_dirs(path.parent)
        prof.export_chrome_trace(str(path))
        protect(path)
        comm_on_own_track(path)
        files = [trace_file(rank, first, last) for rank in range(self.d.world)]
        self.record["traces"].extend(files)
        if self.d.is_main:
            self._write_index(first, last, files)
            log.info("profiler: steps %d-%d recorded into %s (one trace per rank)", first, last,
                     ", ".join(files[:2]) + (", ..." if len(files) > 2 else ""))

    def _write_index(self, first: int, last: int, files: list[str]) -> None:
        path = self.run_dir / TRACE_INDEX_FILE
        try:
            index = read_json(path) or {}
        except ContractError:
            index = {}
        cycles = [c for c in index.get("cycles", []) if isinstance(c, dict) and c.get("first_step") != first]
        cycles.append({"first_step": first, "last_step": last, "files": files})
        write_json(path, {"schema_version": SCHEMA_VERSION, "world_size": self.d.world,
                                 "schedule": self.schedule, "ranges": ranges(), "cycles": cycles})


def comm_on_own_track(path: Path) -> None:
    """Move the `hlm:comm` ranges of a written trace to a track of their own beside their thread.

    The exposed wait starts in the last gradient bucket's hook, inside autograd's range of that gradient,
    and ends after backward() returns: on the thread's own track the two would overlap without nesting,
    which trace viewers (Perfetto, chrome://tracing) do not draw. On its own track it shows as is."""
    name = trace_range("comm")
    trace = json.loads(path.read_text(encoding="utf-8"))
    events = trace.get("traceEvents", [])
    moved = [e for e in events if isinstance(e, dict) and e.get("name") == name and e.get("ph") == "X"]
    if not moved:
        return
    tids = [e["tid"] for e in events if isinstance(e, dict) and isinstance(e.get("tid"), int)]
    track = max(tids, default=0) + 1
    for e in moved:
        e["tid"] = track
    pid = moved[0].get("pid")
    events += [{"ph": "M", "name": "thread_name", "pid": pid, "tid": track,
                "args": {"name": f"{name} (exposed all-reduce wait, inside hlm:compute)"}},
               {"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": track, "args": {"sort_index": track}}]
    with atomic_write(path) as handle:
        json.dump(trace, handle)


def ranges() -> dict[str, str]:
    """Step part -> the record_function name it has in the traces (`other` has none: it is the rest)."""
    return {part: trace_range(part) for part in BREAKDOWN_PARTS if part != "other"}


def summary(schedule: dict[str, int] | None, record: dict[str, Any]) -> ResultProfile | None:
    """result.json `profile`."""
    if schedule is None:
        return None
    return {"schedule": schedule, "steps": list(record["steps"]), "warmup_steps": list(record["warmup_steps"]),
            "traced_s": float(record["traced_s"]), "traces": list(record["traces"]), "ranges": ranges()}
