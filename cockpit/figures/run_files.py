"""What a result is read with when its run directory is on this machine: the energy and GPU use over T of a run
recorded before result.json carried them (runcontract/energy.py over its gpu.jsonl / rapl.jsonl and metrics.jsonl,
the function the trainer itself calls), and rank 0's trace as `cockpit trace` reads it (`gpu_trace`: GPU busy
time, the recorded steps' wall time, kernels), the host-bound verdict's second evidence."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cockpit.figures.traces import TraceError, load, summarise
from runcontract import energy
from runcontract.contract import METRICS_FILE


def rank0_trace(run_dir: Path, result: dict[str, Any]) -> Path | None:
    """Rank 0's last trace: as result.json `profile.traces` lists it (or gzipped beside it), else any
    rank0-*.json(.gz) in the run directory or its traces/."""
    listed = [t for t in ((result.get("profile") or {}).get("traces") or []) if "rank0-" in str(t)]
    for rel in reversed(listed):
        for candidate in (run_dir / rel, run_dir / f"{rel}.gz", run_dir / f"{Path(rel).name}.gz"):
            if candidate.is_file():
                return candidate
    found = sorted([*run_dir.glob("rank0-*.json*"), *run_dir.glob("traces/rank0-*.json*")])
    return found[-1] if found else None


def gpu_trace(path: Path) -> dict[str, Any] | None:
    """`cockpit trace`'s GPU figures of one trace, or None when it holds no GPU kernels or does not read."""
    try:
        s = summarise(load(path.read_bytes(), path.name), path.name)
    except (OSError, TraceError):
        return None
    if not s.gpu_kernels or not s.steps:
        return None
    return {"file": str(path), "steps": len(s.steps), "steps_s": s.steps_s, "gpu_busy_s": s.gpu_busy_s,
            "kernels": s.gpu_kernels}


def with_run_files(result: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """The result with what its run directory adds: `energy` / `gpu_use` where result.json lacks them, and
    `gpu_trace` where a GPU trace was recorded. The result itself is not changed."""
    out = dict(result)
    if "energy" not in out and (run_dir / METRICS_FILE).is_file():
        out.update(energy.summary(run_dir, str(out.get("device") or "cpu")))
    if out.get("device") == "cuda" and (path := rank0_trace(run_dir, out)) is not None:
        trace = gpu_trace(path)
        if trace is not None:
            out["gpu_trace"] = trace
    return out


def _readable(run_dir: str | None) -> bool | None:
    """True: a run directory on this machine this account may read; False: one it may not (another
    account's private 0700 directory, or below one); None: none here (a cluster's, or gone)."""
    if not run_dir:
        return None
    try:
        if not Path(run_dir).is_dir():
            return None
    except PermissionError:  # a directory above it is another account's and private
        return False
    return os.access(run_dir, os.R_OK | os.X_OK)


def unreadable(run_dirs: Mapping[str, str | None]) -> list[str]:
    """The configurations whose run directory is on this machine but this account may not read, in order."""
    return [cid for cid, run_dir in run_dirs.items() if _readable(run_dir) is False]


def unreadable_words(config_ids: list[str]) -> str:
    """The one line for runs whose files cannot be read: how many, and what they would have added."""
    n = len(config_ids)
    which = f"the run directories of {n} runs" if n != 1 else "the run directory of 1 run"
    return (f"{which} cannot be read by this account (another's, private): their energy where result.json "
            "lacks it, per-rank files and GPU traces are left out; the rest comes from the store")


def with_local_run_files(results: Iterable[dict[str, Any]], run_dirs: dict[str, str | None]) -> list[dict[str, Any]]:
    """Stored results, each with what its run directory adds where that directory is on this machine (a local
    study's; a cluster's run directories are read through `cockpit trace STUDY CONFIG_ID` instead) and this
    account may read it (:func:`unreadable` names the others; their results are given as stored).
    `run_dirs`: configuration id -> run directory, as the store names them."""
    out = []
    for result in results:
        run_dir = run_dirs.get(str(result.get("config_id")))
        if run_dir and _readable(run_dir):
            try:
                out.append(with_run_files(result, Path(run_dir)))
                continue
            except PermissionError:  # a file inside that is not this account's to read
                pass
        out.append(result)
    return out
