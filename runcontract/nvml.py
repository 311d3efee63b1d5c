"""NVML sampler: a daemon thread on each node's local rank 0 appending GPU samples to gpu.jsonl.

Used by the HLM trainer and by any script through runcontract.Run; pynvml (nvidia-ml-py) is optional. Without NVML (no driver, no GPU, or the container started without `--nv`) it writes one line saying why
and stops; training never depends on it.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any

from runcontract.contract import SCHEMA_VERSION
from runcontract.files import append_jsonl


def _sample(handle: Any, index: int, host: str) -> dict[str, Any]:
    import pynvml  # already loaded by the caller; imported here so that its names are checked

    def opt(fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except pynvml.NVMLError:
            return None

    util = opt(pynvml.nvmlDeviceGetUtilizationRates, handle)
    mem = opt(pynvml.nvmlDeviceGetMemoryInfo, handle)
    power = opt(pynvml.nvmlDeviceGetPowerUsage, handle)
    energy = opt(pynvml.nvmlDeviceGetTotalEnergyConsumption, handle)
    uuid = opt(pynvml.nvmlDeviceGetUUID, handle)
    name = opt(pynvml.nvmlDeviceGetName, handle)
    return {
        "v": SCHEMA_VERSION,
        "t": time.time(),
        "host": host,
        "gpu": index,
        "uuid": uuid.decode() if isinstance(uuid, bytes) else uuid,
        "name": name.decode() if isinstance(name, bytes) else name,
        "util_pct": util.gpu if util else None,
        "mem_util_pct": util.memory if util else None,
        "mem_used_bytes": mem.used if mem else None,
        "mem_total_bytes": mem.total if mem else None,
        "power_w": power / 1000.0 if power is not None else None,
        "energy_j": energy / 1000.0 if energy is not None else None,
        "temp_c": opt(pynvml.nvmlDeviceGetTemperature, handle, pynvml.NVML_TEMPERATURE_GPU),
        "sm_clock_mhz": opt(pynvml.nvmlDeviceGetClockInfo, handle, pynvml.NVML_CLOCK_SM),
    }


def sample_all() -> tuple[list[dict[str, Any]], str]:
    """One sample of every GPU NVML sees on this node, and '' or why there is none (the preflight's
    reading, with the same fields as gpu.jsonl)."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception as exc:  # ImportError, NVMLError: no library or no driver
        return [], f"{type(exc).__name__}: {exc}"
    try:
        host = socket.gethostname()
        count = pynvml.nvmlDeviceGetCount()
        samples = [_sample(pynvml.nvmlDeviceGetHandleByIndex(i), i, host) for i in range(count)]
        return samples, "" if samples else "NVML found no GPU"
    except pynvml.NVMLError as exc:
        return [], f"NVMLError: {exc}"
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


class NvmlSampler:
    """Start with `start()`, stop with `stop()`; `available` and `reason` say whether NVML worked."""

    def __init__(self, path: Path, interval_ms: int) -> None:
        self.path = path
        self.interval_s = max(interval_ms, 10) / 1000.0
        self.host = socket.gethostname()
        self.available = False
        self.reason = ""
        self.samples = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> NvmlSampler:
        try:
            import pynvml

            pynvml.nvmlInit()
            handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
            if not handles:
                raise RuntimeError("NVML found no GPU")
        except Exception as exc:  # ImportError, NVMLError (no driver / library), no device
            self.reason = f"{type(exc).__name__}: {exc}"
            append_jsonl(self.path, {"v": SCHEMA_VERSION, "t": time.time(), "host": self.host,
                                            "nvml": "unavailable", "reason": self.reason})
            return self
        self.available = True
        self._thread = threading.Thread(target=self._run, args=(handles,), name="nvml", daemon=True)
        self._thread.start()
        return self

    def _run(self, handles: list[Any]) -> None:
        import pynvml  # loaded by start()

        try:
            while not self._stop.is_set():
                for i, handle in enumerate(handles):
                    append_jsonl(self.path, _sample(handle, i, self.host))
                    self.samples += 1
                self._stop.wait(self.interval_s)
        finally:
            try:
                pynvml.nvmlShutdown()
            except pynvml.NVMLError:
                pass

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
