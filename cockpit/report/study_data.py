"""A study as the exporters and the notebook API read it: the report's input, its analysis, and each run's
curves (metrics and GPU samples), never written.

`load_study_data(path)` resolves a study file or a store exactly as `cockpit report` does
(cockpit.report.source.load_input: a study file's store, else its local run directories), takes every
number from cockpit.forecast.analysis.analyse over the same results, and reads curves from the store the report
read (opened read-only, re-read as it is at each call) or, for a study without a store, from each run
directory's metrics.jsonl and gpu.jsonl (loaded into an in-memory store, so both give the same points).
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cockpit.report.source import ReportInput, load_input
from cockpit.study.spec import AXES, config_label
from cockpit.workloads.base import workload_keys
from runcontract.axes import AXIS_KEY, unread

if TYPE_CHECKING:
    from cockpit.store import StudyStore
    from cockpit.store.snapshot import GpuSample, MetricPoint

# What a configuration is, as the trackers compare configurations: its axes and its worker count.
HPARAMS = (*AXES, "workers")
# The scaling figures of a configuration (cockpit.forecast.analysis columns, the names of scaling.csv): T, S, E, O,
# Karp-Flatt and quality, with what they are computed from.
HEADLINE = ("train_time_s", "speedup", "efficiency", "overhead_s", "karp_flatt", "quality")
# what the device says: MFU, the GPUs' busy share, host-bound seconds, the energy over T (blank on CPU without RAPL)
GPU_FIGURES = ("mfu", "achieved_tflops", "peak_tflops", "gpu_busy_pct", "host_bound_s", "energy_j", "energy_kwh",
               "energy_j_per_sample", "energy_j_per_token")
FIGURES = ("train_time_s", "work_ratio", "t_same_work_s", "t1_s", "speedup", "efficiency", "overhead_s",
           "karp_flatt", "quality", "quality_1", "quality_change", *GPU_FIGURES)
# their short names, as the report's tables head them (TensorBoard's HParams columns)
DISPLAY = {"train_time_s": "T (s)", "speedup": "S", "efficiency": "E", "overhead_s": "O (s)",
           "karp_flatt": "Karp-Flatt", "quality": "quality"}
DESCRIPTIONS = {
    "train_time_s": "T: training time, first step start to last step end (s)",
    "work_ratio": "work: samples / the baseline's samples",
    "t_same_work_s": "T/work: T at the baseline's work (s)",
    "t1_s": "T1: the group's 1x1 baseline's T (s)",
    "speedup": "S = T1 / (T/work)",
    "efficiency": "E = S / N",
    "overhead_s": "O = T/work - T1/N (s)",
    "karp_flatt": "Karp-Flatt serial fraction e = (1/S - 1/N) / (1 - 1/N)",
    "quality": "model quality: macro-F1 (higher is better) or a foundation run's masked loss (lower is better)",
    "quality_1": "the baseline's model quality",
    "quality_change": "quality - the baseline's quality",
    "mfu": "MFU = FLOP/token x tokens/s / (the device's dense peak at the run's precision x GPUs)",
    "achieved_tflops": "FLOP/token x tokens/s, every GPU together (TFLOP/s)",
    "peak_tflops": "the device's dense peak at the run's precision x GPUs (TFLOP/s, docs/gpu.md)",
    "gpu_busy_pct": "the GPUs' NVML utilisation over T (%)",
    "host_bound_s": "host-bound seconds split out of compute: compute x (1 - GPU busy share), below 50% busy",
    "energy_j": "the devices' energy over T (J): NVML's energy counter, or RAPL on CPU",
    "energy_kwh": "the devices' energy over T (kWh)",
    "energy_j_per_sample": "energy over T / samples (J)",
    "energy_j_per_token": "energy over T / tokens (J)",
}


@dataclass
class StudyData:
    """One study's report input, its analysis rows and access to each run's curves."""

    input: ReportInput
    rows: list[dict[str, Any]]  # cockpit.forecast.analysis.analyse(input.results), one per configuration with a result
    study_id: str
    _store: StudyStore | None = field(default=None, repr=False)
    _key: int = 0

    @property
    def name(self) -> str:
        return self.input.study

    def row(self, config: str) -> dict[str, Any]:
        """The analysis row of a configuration, by its id or its label (`synthetic foundation w128 1x2 ...`)."""
        for r in self.rows:
            if config in (r.get("config_id"), label(r)):
                return r
        known = ", ".join(str(r.get("config_id")) for r in self.rows) or "none"
        raise KeyError(f"{self.name}: no configuration {config!r} with a result (configurations: {known})")

    def metrics(self, config_id: str, rank: int | None = None) -> list[MetricPoint]:
        """Every metrics record of the run (all ranks, or one), oldest first, as the store keeps them."""
        store = self._open()
        with store.reading():
            count = store.metric_count(self._key, config_id)
            if not count:
                return []
            return store.metrics(self._key, config_id, rank=rank, limit=count)

    def gpu(self, config_id: str) -> list[GpuSample]:
        """Every NVML sample of the run, each GPU's oldest first, GPUs in (host, index) order."""
        store = self._open()
        with store.reading():
            series = store.gpu_series(self._key, config_id, since=-math.inf)
        return [s for one in series for s in one.samples]

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def _open(self) -> StudyStore:
        if self._store is None:
            self._store, self._key = _curve_store(self.input, self.study_id)
        return self._store


def load_study_data(path: str | Path, study_name: str | None = None) -> StudyData:
    """The study of a study file (.toml) or a store (.sqlite), read as `cockpit report` reads it.

    Raises cockpit.report.source.ReportError with a message naming the file, as the report does."""
    from cockpit.forecast.analysis import analyse

    inp = load_input(path, study_name)
    return StudyData(inp, analyse(inp.results), study_id_of(inp))


def study_id_of(inp: ReportInput) -> str:
    """The study's id as its runs' config.json name it (the digest in job names), else one from its name."""
    for r in inp.results:
        sid = (r.get("config") or {}).get("study_id")
        if isinstance(sid, str) and sid:
            return sid
    return hashlib.sha256(inp.study.encode()).hexdigest()[:8]


def label(row: dict[str, Any]) -> str:
    """The configuration's one short name (cockpit.study.spec.config_label)."""
    return config_label({a: row.get(a) for a in (*AXES, "keys", "workload") if row.get(a) is not None})


def run_name(row: dict[str, Any]) -> str:
    """A file-name-safe, readable and unique name for a configuration's run: its label, then its id."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label(row)).strip("_") + "-" + str(row.get("config_id"))


def hparams(row: dict[str, Any]) -> dict[str, Any]:
    """The configuration's axes and worker count (those it has; not the HLM's own axes in a script's
    configuration), then a script workload's own keys, each by its name."""
    axes = {k: row[k] for k in HPARAMS if row.get(k) is not None and not (k in AXIS_KEY and unread(AXIS_KEY[k], row))}
    return {**axes, **{k: v for k, v in workload_keys(row).items() if k not in axes}}


def figures(row: dict[str, Any], names: tuple[str, ...] = FIGURES) -> dict[str, float]:
    """The row's scaling figures that have a value (a 1x1 run has no Karp-Flatt, an unscored one no quality)."""
    out = {}
    for name in names:
        value = row.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool) and value == value:
            out[name] = float(value)
    return out


def _curve_store(inp: ReportInput, study_id: str) -> tuple[StudyStore, int]:
    """The store the report read, read-only; for run directories, their JSON-lines files in memory."""
    from cockpit.store import StudyStore

    if inp.store is not None:
        store = StudyStore(inp.store, read_only=True)
        with store.reading():
            return store, store.study_key(inp.study)
    from runcontract.contract import GPU_FILE, METRICS_FILE
    from runcontract.files import read_jsonl

    store = StudyStore(":memory:")
    key = store.ensure_study(inp.study, study_id)
    runs = inp.runs or Path(inp.source)
    for r in inp.results:
        cid = str(r.get("config_id"))
        for name, add in ((METRICS_FILE, store.add_metrics), (GPU_FILE, store.add_gpu_samples)):
            path = runs / cid / name
            if path.is_file():
                add(key, cid, read_jsonl(path, final=True).records)
    return store, key
