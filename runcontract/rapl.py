"""Linux RAPL: the CPU packages' energy counters (/sys/class/powercap/intel-rapl:N/energy_uj), sampled into
rapl.jsonl on each node's local rank 0 of a CPU run, the way runcontract/nvml.py samples a GPU into gpu.jsonl.

Pure Python (no torch): the cockpit reads the same zones' words. Where the counters cannot be read (no
powercap in a virtual machine or container, or `energy_uj` readable by root only since Linux 5.10) one line
says why and nothing else is written: an energy figure is never made up.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runcontract.contract import SCHEMA_VERSION
from runcontract.files import append_jsonl

POWERCAP = Path("/sys/class/powercap")


@dataclass(frozen=True)
class Zone:
    """One package zone: its name ("package-0"), its counter file and the counter's range (it wraps there)."""

    name: str
    energy: Path
    max_range_uj: int


def zones(root: Path = POWERCAP) -> tuple[list[Zone], str]:
    """The readable package zones (the top-level intel-rapl:N whose name is package-N: subzones and psys would
    count the same joules twice), and "" or why there are none."""
    if not root.is_dir():
        return [], f"RAPL not readable: {root} absent"
    found: list[Zone] = []
    problems: list[str] = []
    for zone in sorted(root.glob("intel-rapl:*")):
        if zone.name.count(":") != 1:
            continue
        try:
            name = (zone / "name").read_text().strip()
            if not name.startswith("package"):
                continue
            (zone / "energy_uj").read_text()
            found.append(Zone(name, zone / "energy_uj", int((zone / "max_energy_range_uj").read_text())))
        except (OSError, ValueError) as exc:
            problems.append(f"{zone}/energy_uj: {getattr(exc, 'strerror', None) or exc}")
    if found:
        return found, ""
    if problems:
        return [], "RAPL not readable: " + "; ".join(problems)
    return [], f"RAPL not readable: no intel-rapl package zone under {root}"


def read(zone: Zone) -> int | None:
    try:
        return int(zone.energy.read_text())
    except (OSError, ValueError):
        return None


class RaplSampler:
    """Start with `start()`, stop with `stop()`; one line per zone every interval, or one line saying why none."""

    def __init__(self, path: Path, interval_ms: int, root: Path = POWERCAP) -> None:
        self.path = path
        self.interval_s = max(interval_ms, 10) / 1000.0
        self.root = root
        self.host = socket.gethostname()
        self.reason = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> RaplSampler:
        found, self.reason = zones(self.root)
        if not found:
            append_jsonl(self.path, {"v": SCHEMA_VERSION, "t": time.time(), "host": self.host,
                                            "rapl": "unavailable", "reason": self.reason})
            return self
        self._sample(found)  # T's first window starts after this line: the counter's value before it
        self._thread = threading.Thread(target=self._run, args=(found,), name="rapl", daemon=True)
        self._thread.start()
        return self

    def _sample(self, found: list[Zone]) -> None:
        for zone in found:
            value = read(zone)
            if value is not None:
                line: dict[str, Any] = {"v": SCHEMA_VERSION, "t": time.time(), "host": self.host,
                                        "zone": zone.name, "energy_uj": value, "max_energy_range_uj": zone.max_range_uj}
                append_jsonl(self.path, line)

    def _run(self, found: list[Zone]) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample(found)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._sample(zones(self.root)[0])  # the counter's value after T's last window
