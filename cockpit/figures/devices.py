"""Model FLOPs utilisation: the one table of devices' peak rates, and MFU from a run's result.

    MFU = flops_per_token x tokens_per_s / (peak(device, precision) x GPUs)

flops_per_token is result.json `model.flops_per_token`, the trainer's count of one training token (forward and
backward): 6 N + 12 L d W, N the parameters that multiply a token's activations (the embeddings' lookups are not
matrix products; the tied output projection is), L layers, d_model d, window W (PaLM, Chowdhery et al. 2022,
appendix B; trainer/model.py). tokens_per_s is the run's (every worker's together), so the peak is the
device's times the run's GPUs. The device is the name NVML gave the run's GPUs (result.json `gpu_use.name`, or
gpu.jsonl's `name`).

The peaks are dense (no 2:4 sparsity), tera floating-point operations per second, from NVIDIA's datasheets; the
datasheets print the tensor-core rates with sparsity, so the dense figure is half of it. The trainer's `fp32`
is full fp32 (TF32 off), so it is measured against the fp32 (non-tensor) rate; `tf32` is listed for a run that
enables it. docs/gpu.md, "Model FLOPs utilisation", lists the sources.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Device:
    """One GPU model: the NVML names it answers to (lower-case substrings, the first match wins in DEVICES'
    order) and its dense peaks in TFLOP/s per precision."""

    label: str
    names: tuple[str, ...]
    peaks: dict[str, float]
    source: str


A100 = "NVIDIA A100 Tensor Core GPU datasheet (2021, nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/" \
       "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf): FP32 19.5, TF32 156, BF16/FP16 312 TFLOPS (624 sparse)"
H100 = "NVIDIA H100 Tensor Core GPU datasheet (2023, resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-" \
       "datasheet)"
H200 = "NVIDIA H200 Tensor Core GPU product brief / datasheet (2024, nvidia.com/en-us/data-center/h200)"

# Order matters: "h100 nvl" and "h100 pcie" before "h100" (the SXM part's NVML name is "NVIDIA H100 80GB HBM3").
DEVICES: tuple[Device, ...] = (
    Device("H200 NVL", ("h200 nvl",), {"fp32": 60.0, "tf32": 417.5, "bf16": 835.5, "fp16": 835.5},
           H200 + ": H200 NVL FP32 60, TF32 835, BF16/FP16 1,671 TFLOPS with sparsity"),
    Device("H200 SXM", ("h200",), {"fp32": 67.0, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5},
           H200 + ": H200 SXM FP32 67, TF32 989, BF16/FP16 1,979 TFLOPS with sparsity"),
    Device("H100 NVL", ("h100 nvl",), {"fp32": 60.0, "tf32": 417.5, "bf16": 835.5, "fp16": 835.5},
           H100 + ": H100 NVL FP32 60, TF32 835, BF16/FP16 1,671 TFLOPS with sparsity"),
    Device("H100 PCIe", ("h100 pcie",), {"fp32": 51.0, "tf32": 378.0, "bf16": 756.5, "fp16": 756.5},
           H100 + ": H100 PCIe FP32 51, TF32 756, BF16/FP16 1,513 TFLOPS with sparsity"),
    Device("H100 SXM", ("h100",), {"fp32": 67.0, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5},
           H100 + ": H100 SXM FP32 67, TF32 989, BF16/FP16 1,979 TFLOPS with sparsity"),
    Device("A100", ("a100",), {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0},
           A100 + "; the 40 GB and 80 GB, SXM4 and PCIe parts alike"),
)


def device_for(name: str | None) -> Device | None:
    """The table's entry for an NVML device name ("NVIDIA H200", "NVIDIA A100-SXM4-40GB"), or None."""
    low = (name or "").lower()
    return next((d for d in DEVICES if any(n in low for n in d.names)), None)


@dataclass(frozen=True)
class Mfu:
    """MFU of one run and what it was computed from; `note` says why it is blank where `mfu` is NaN."""

    mfu: float = math.nan
    achieved_tflops: float = math.nan  # flops_per_token x tokens_per_s / 1e12, every GPU together
    peak_tflops: float = math.nan  # the device's peak at the run's precision x GPUs
    device: str = ""
    note: str = ""

    def words(self) -> str:
        """`MFU 4.0% = 40.0 TFLOP/s of 989.5 (H200 SXM bf16 x 1)`, or the note."""
        if self.mfu != self.mfu:
            return f"MFU: {self.note}"
        return f"MFU {self.mfu:.1%} = {self.achieved_tflops:.1f} TFLOP/s of {self.peak_tflops:.1f} ({self.device})"


def gpu_name(result: dict[str, Any]) -> str | None:
    """The run's GPU name as NVML gave it (result.json gpu_use.name)."""
    use = result.get("gpu_use")
    return use.get("name") if isinstance(use, dict) and isinstance(use.get("name"), str) else None


def mfu(result: dict[str, Any]) -> Mfu:
    """MFU of a run from its result.json (with `gpu_use`), or the reason it is blank."""
    if result.get("device") != "cuda":
        return Mfu(note=f"no GPU ({result.get('device') or 'unknown device'} run)")
    fpt = (result.get("model") or {}).get("flops_per_token")
    tps = (result.get("throughput") or {}).get("tokens_per_s")
    if not isinstance(fpt, int | float) or not isinstance(tps, int | float) or fpt <= 0 or tps <= 0:
        return Mfu(note="result.json has no model.flops_per_token or throughput.tokens_per_s")
    achieved = float(fpt) * float(tps) / 1e12
    name = gpu_name(result)
    if name is None:
        return Mfu(achieved_tflops=achieved, note="the GPU's name is not recorded (no NVML samples in gpu.jsonl)")
    device = device_for(name)
    if device is None:
        return Mfu(achieved_tflops=achieved,
                   note=f"no peak for {name!r} in the device table (cockpit/figures/devices.py)")
    precision = str((result.get("config") or {}).get("precision") or "fp32")
    peak = device.peaks.get(precision)
    if peak is None:
        return Mfu(achieved_tflops=achieved, note=f"no {precision} peak for {device.label} in the device table")
    gpus = int(result.get("world_size") or 1)
    total = peak * gpus
    return Mfu(achieved / total, achieved, total, f"{device.label} {precision} x {gpus}")


def mfu_words(row: dict[str, Any]) -> str:
    """An analysis row's MFU with its inputs, or why it is blank (as Mfu.words)."""
    m = Mfu(row.get("mfu", math.nan), row.get("achieved_tflops", math.nan), row.get("peak_tflops", math.nan),
            row.get("mfu_device") or "", row.get("mfu_note") or "")
    return m.words()
