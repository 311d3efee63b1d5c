"""What the study's workers are called, in one place for the TUI, the report and the figures.

A GPU study's workers are GPUs; a CPU study's (`[train] device = "cpu"`, the demo) are processes, called
"workers" everywhere: `nodes×GPUs` or `nodes×workers`, "2 GPUs" or "2 workers".
"""

from __future__ import annotations

from collections.abc import Iterable


def device_of(devices: Iterable[object], hint: str | None = None) -> str:
    """"cpu" or "gpu": the first device a result names (`cpu`, `cuda`, `cuda:0`), else the study file's
    `hint`, else "gpu"."""
    for device in devices:
        if device:
            return "cpu" if str(device).startswith("cpu") else "gpu"
    return "cpu" if hint == "cpu" else "gpu"


def device_of_rows(rows: Iterable[dict], hint: str | None = None) -> str:
    """device_of over cockpit.forecast.analysis rows (their `device` is the result's)."""
    return device_of((r.get("device") for r in rows), hint)


def worker_word(device: str, n: int | None = None) -> str:
    """"GPUs" / "workers"; singular for n == 1."""
    word = "worker" if device == "cpu" else "GPU"
    return word if n == 1 else word + "s"


def workers(n: object, device: str) -> str:
    """"1 GPU", "4 GPUs", "2 workers"."""
    count = int(n) if isinstance(n, int | float) and n == int(n) else n
    return f"{count} {worker_word(device, count if isinstance(count, int) else None)}"


def scale_label(device: str) -> str:
    """The header of the nodes × workers-per-node column: `nodes×GPUs` / `nodes×workers`."""
    return f"nodes×{worker_word(device)}"


def baseline_label(device: str) -> str:
    """`1 node × 1 GPU` / `1 node × 1 worker`: the run each group's speedup is measured against."""
    return f"1 node × 1 {worker_word(device, 1)}"
