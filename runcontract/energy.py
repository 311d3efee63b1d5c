"""What a run's power telemetry says about T: the energy its devices drew over T, and how busy its GPUs were.

The standard library only, shared by the trainer (result.json `energy` and `gpu_use`, written at the end of a run)
and the cockpit (the same figures of a run directory recorded before those fields existed): one function over
the run files, so both give the same numbers.

T's windows are rank 0's metrics intervals, [t - interval_s, t] of each metrics.jsonl line (they add up to T,
over resumed segments too). Per device, the energy over a window is the counter's rise across it, read
between samples by linear interpolation: NVML's total-energy counter (gpu.jsonl `energy_j`), else NVML's power
integrated by the trapezoid rule (`power_w`), on CPU the RAPL package counters (rapl.jsonl, unwrapped at
`max_energy_range_uj`). Where the samples do not cover all of T (the sampler starts and stops around it) the
covered part's mean power stands for the rest: E = P x T with P = E_covered / covered_s, given only when at
least MIN_COVERED of T is covered. GPU busy is NVML's utilisation (the share of its sample period in which a
kernel ran) averaged over the samples taken inside T's windows, then over the GPUs.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from runcontract.contract import GPU_FILE, METRICS_FILE, RAPL_FILE

MIN_COVERED = 0.5  # below this share of T covered by samples, no energy is given
Window = tuple[float, float]
Points = list[tuple[float, float]]  # (time, cumulative joules), by time


def train_windows(metrics: Iterable[dict[str, Any]]) -> list[Window]:
    """T as wall-clock windows: rank 0's metrics lines, each [t - interval_s, t]."""
    out = []
    for m in metrics:
        t, dt = m.get("t"), m.get("interval_s")
        if m.get("rank", 0) == 0 and isinstance(t, int | float) and isinstance(dt, int | float) and dt > 0:
            out.append((float(t) - float(dt), float(t)))
    return sorted(out)


def _at(points: Points, t: float) -> float:
    """The cumulative counter at `t` (inside the points' span), linearly between samples."""
    lo, hi = 0, len(points) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if points[mid][0] <= t:
            lo = mid
        else:
            hi = mid
    (t0, e0), (t1, e1) = points[lo], points[hi]
    return e0 if t1 <= t0 else e0 + (e1 - e0) * (t - t0) / (t1 - t0)


def over_windows(points: Points, windows: list[Window]) -> tuple[float, float]:
    """(joules, seconds) of the windows inside the points' span: the counter's rise over each covered part."""
    if len(points) < 2:
        return 0.0, 0.0
    first, last = points[0][0], points[-1][0]
    joules = covered = 0.0
    for a, b in windows:
        a, b = max(a, first), min(b, last)
        if b > a:
            joules += _at(points, b) - _at(points, a)
            covered += b - a
    return joules, covered


def integrated(power: Points) -> Points:
    """Cumulative joules from power samples (W) by the trapezoid rule."""
    out: Points = []
    total = 0.0
    for i, (t, w) in enumerate(power):
        if i:
            t0, w0 = power[i - 1]
            total += (t - t0) * (w + w0) / 2.0
        out.append((t, total))
    return out


def unwrapped(samples: list[tuple[float, float, float]]) -> Points:
    """Cumulative joules from a wrapping microjoule counter: (time, energy_uj, max_energy_range_uj)."""
    out: Points = []
    total = 0.0
    for i, (t, uj, span) in enumerate(samples):
        if i:
            rise = uj - samples[i - 1][1]
            total += (rise + span if rise < 0 and span > 0 else rise) / 1e6
        out.append((t, total))
    return out


def _finite(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value == value else None


def _energy(series: dict[Any, Points], windows: list[Window], source: str, reason_none: str) -> dict[str, Any]:
    """The `energy` record from each device's cumulative joules."""
    t_s = sum(b - a for a, b in windows)
    empty = {"joules": None, "source": None, "mean_power_w": None, "devices": len(series), "covered_s": 0.0,
             "train_time_s": t_s}
    if not windows:
        return {**empty, "reason": "no metrics.jsonl lines of rank 0: T's windows unknown"}
    if not series:
        return {**empty, "reason": reason_none}
    measured = [over_windows(points, windows) for points in series.values()]  # (joules, covered s) per device
    least = min(c for _, c in measured)
    if least < MIN_COVERED * t_s:
        return {**empty, "covered_s": least,
                "reason": f"the samples cover {least:.2f} s of T = {t_s:.2f} s (less than {MIN_COVERED:.0%})"}
    power = sum(j / c for j, c in measured)
    return {"joules": power * t_s, "source": source, "mean_power_w": power, "devices": len(series),
            "covered_s": least, "train_time_s": t_s, "reason": ""}


def gpu_energy(samples: list[dict[str, Any]], windows: list[Window]) -> dict[str, Any]:
    """Energy over T of every GPU in gpu.jsonl: the energy counter where each GPU has one, else power integrated."""
    unavailable = next((s.get("reason") for s in samples if s.get("nvml") == "unavailable"), None)
    counters: dict[Any, Points] = {}
    power: dict[Any, Points] = {}
    for s in sorted((s for s in samples if "gpu" in s and isinstance(s.get("t"), int | float)), key=lambda s: s["t"]):
        key = (s.get("host"), s.get("gpu"))
        if (e := _finite(s.get("energy_j"))) is not None:
            counters.setdefault(key, []).append((float(s["t"]), e))
        if (w := _finite(s.get("power_w"))) is not None:
            power.setdefault(key, []).append((float(s["t"]), w))
    devices = set(counters) | set(power)
    none = f"NVML unavailable ({unavailable})" if unavailable else "no GPU samples in gpu.jsonl"
    if devices and all(len(counters.get(k, [])) >= 2 for k in devices):
        return _energy({k: [(t, e - counters[k][0][1]) for t, e in counters[k]] for k in devices}, windows,
                       "NVML energy counter", none)
    usable = {k: integrated(power[k]) for k in devices if len(power.get(k, [])) >= 2}
    if devices and len(usable) == len(devices):
        return _energy(usable, windows, "NVML power integrated", none)
    return _energy({}, windows, "", none if not devices else "gpu.jsonl has neither the energy counter nor "
                                                            "two power samples of every GPU")


def cpu_energy(lines: list[dict[str, Any]], windows: list[Window]) -> dict[str, Any]:
    """Energy over T of the CPU packages in rapl.jsonl (every node's), or why it was not measured."""
    unavailable = next((s.get("reason") for s in lines if s.get("rapl") == "unavailable"), None)
    by_zone: dict[Any, list[tuple[float, float, float]]] = {}
    for s in sorted((s for s in lines if "zone" in s and isinstance(s.get("t"), int | float)), key=lambda s: s["t"]):
        uj, span = _finite(s.get("energy_uj")), _finite(s.get("max_energy_range_uj"))
        if uj is not None:
            by_zone.setdefault((s.get("host"), s["zone"]), []).append((float(s["t"]), uj, span or 0.0))
    none = unavailable or f"no {RAPL_FILE} in the run directory (a trainer that did not sample RAPL)"
    return _energy({k: unwrapped(v) for k, v in by_zone.items() if len(v) >= 2}, windows,
                   "RAPL package counters", none)


def gpu_use(samples: list[dict[str, Any]], windows: list[Window]) -> dict[str, Any]:
    """The GPUs' name and NVML busy share over T (the mean utilisation of the samples inside T's windows)."""
    gpus = [s for s in samples if "gpu" in s and isinstance(s.get("t"), int | float)]
    names = Counter(str(s["name"]) for s in gpus if s.get("name"))
    inside: dict[Any, list[float]] = {}
    for s in gpus:
        util = _finite(s.get("util_pct"))
        if util is not None and any(a <= s["t"] <= b for a, b in windows):
            inside.setdefault((s.get("host"), s.get("gpu")), []).append(util)
    busy = [sum(v) / len(v) for v in inside.values()]
    totals = [m for s in gpus if (m := _finite(s.get("mem_total_bytes"))) is not None]
    reason = "" if busy else ("no GPU samples in gpu.jsonl" if not gpus else "no utilisation sample inside T")
    return {"name": names.most_common(1)[0][0] if names else None,
            "devices": len({(s.get("host"), s.get("gpu")) for s in gpus}),
            "busy_pct": sum(busy) / len(busy) if busy else None,
            "memory_bytes": min(totals) if totals else None,
            "samples": sum(len(v) for v in inside.values()), "reason": reason}


def summary(run_dir: str | Path, device: str) -> dict[str, Any]:
    """result.json's `energy` and `gpu_use` of a run directory ({"energy": ..., "gpu_use": ...}; gpu_use is
    None on CPU): `device` "cuda" reads gpu.jsonl, "cpu" rapl.jsonl."""
    run_dir = Path(run_dir)
    windows = train_windows(records(run_dir / METRICS_FILE))
    if device == "cuda":
        samples = records(run_dir / GPU_FILE)
        return {"energy": gpu_energy(samples, windows), "gpu_use": gpu_use(samples, windows)}
    return {"energy": cpu_energy(records(run_dir / RAPL_FILE), windows), "gpu_use": None}


def records(path: Path) -> list[dict[str, Any]]:
    """A JSON-lines file's objects; a missing file reads as none, a line that does not parse (a writer killed
    mid-line) is left out, as runcontract.files.read_jsonl leaves it."""
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        try:
            value = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(value, dict):
            out.append(value)
    return out
