"""Host-bound: a GPU idle for much of T while the host issues its work, named with its evidence and its seconds.

The evidence, in order of precedence for the share:
- NVML's busy share over T (result.json `gpu_use.busy_pct`: the mean utilisation of gpu.jsonl's samples inside
  T, runcontract/energy.py);
- where a trace was recorded, `cockpit trace`'s figures of it (`gpu_trace`, read beside the result by
  cockpit.report.run_files): the time at least one kernel, copy or memset ran over the recorded steps' wall
  time, and kernels per step. They back the verdict, and give the share when NVML did not sample.

With the share u below BUSY_THRESHOLD the run is host-bound, and its seconds are split out of compute:

    host-bound = compute x (1 - u)        compute (GPU busy) = compute x u

so T's parts still add up to T: the step's compute part is timed around work the host is still issuing, and
the share of it the GPU spends idle is taken to be the share of T it is idle. Without either evidence there is
no verdict, and the note says what would decide it. docs/analysis.md, "Host-bound".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

BUSY_THRESHOLD = 0.5  # the GPU busy less than half of T: the host sets the pace
DECIDE = ("NVML samples (gpu.jsonl, result.json gpu_use) or a trace ([train] profile_active) would decide whether "
          "the host sets the pace")


@dataclass(frozen=True)
class HostBound:
    """The verdict of one run: `named` with its seconds, else `note` says why not (not host-bound, or no
    evidence). `evidence` is the words with the figures, whatever the verdict."""

    named: bool = False
    seconds: float = math.nan  # split out of compute; 0 when not host-bound, NaN without a verdict
    share: float = math.nan  # the GPU busy share the seconds are computed from
    evidence: str = ""
    note: str = ""

    def words(self, compute_s: float) -> str:
        """`host-bound 3.85 s = compute 5.10 s x (1 - 0.24): GPU busy 24% of T (NVML, 56 samples); ...`."""
        if not self.named:
            return self.note
        return (f"host-bound {self.seconds:.2f} s = compute {compute_s:.2f} s x (1 - {self.share:.2f}): "
                f"{self.evidence}; the host issuing kernels sets the pace")


def trace_evidence(result: dict[str, Any]) -> tuple[float, str]:
    """(GPU busy share, words) of the recorded trace (`gpu_trace`), or (NaN, "") without one."""
    trace = result.get("gpu_trace")
    if not isinstance(trace, dict) or not trace.get("steps_s") or not trace.get("kernels"):
        return math.nan, ""
    busy, wall, steps = float(trace["gpu_busy_s"]), float(trace["steps_s"]), int(trace.get("steps") or 1)
    return busy / wall, (f"trace: GPU busy {busy * 1e3:.1f} of {wall * 1e3:.1f} ms over {steps} steps "
                         f"({busy / wall:.0%}), {trace['kernels'] / steps:,.0f} kernels and copies per step")


def nvml_evidence(result: dict[str, Any]) -> tuple[float, str]:
    """(GPU busy share, words) of NVML over T, or (NaN, "") where it did not sample."""
    use = result.get("gpu_use")
    if not isinstance(use, dict) or not isinstance(use.get("busy_pct"), int | float):
        return math.nan, ""
    pct = float(use["busy_pct"])
    return pct / 100.0, f"GPU busy {pct:.0f}% of T (NVML, {use.get('samples', 0)} samples)"


def host_bound(result: dict[str, Any], compute_s: float) -> HostBound:
    """The host-bound verdict of one run from its result (with `gpu_use` and, where read, `gpu_trace`)."""
    if result.get("device") != "cuda":
        return HostBound(note="")  # a CPU run: the host is the device
    nvml, nvml_words = nvml_evidence(result)
    trace, trace_words = trace_evidence(result)
    evidence = "; ".join(w for w in (nvml_words, trace_words) if w)
    share = nvml if nvml == nvml else trace
    if share != share:
        return HostBound(note=f"host-bound: no verdict: {DECIDE}")
    if share >= BUSY_THRESHOLD or not compute_s == compute_s:
        return HostBound(seconds=0.0, share=share, evidence=evidence,
                         note=f"not host-bound: {evidence}; the host is named below {BUSY_THRESHOLD:.0%} busy")
    return HostBound(True, compute_s * (1.0 - share), share, evidence)
