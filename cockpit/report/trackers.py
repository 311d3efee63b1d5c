"""A study in the experiment trackers researchers already use: TensorBoard and Weights & Biases.

One tracker run per configuration with a result: the configuration's axes (HParams / config), its training
curves from the store (rank 0's metrics records; every GPU's NVML samples) and its scaling figures, every
one taken from the analysis row that `cockpit report`'s scaling.csv is written from (cockpit.forecast.analysis).
docs/trackers.md describes what goes where.

The trackers are an optional extra (`pip install 'hlm-cockpit[tracking]'`) and are imported here, inside
the exporting functions, only: `import cockpit` and every other command never load them.

TensorBoard: written with the `tensorboard` package's own pieces and nothing else, no TensorFlow and no
torch (the cockpit never imports torch, so `torch.utils.tensorboard` is out): its event file writer
(`tensorboard.summary.writer.event_file_writer.EventFileWriter`, the one behind `tensorboard.summary.Writer`
and `torch.utils.tensorboard`), the scalar plugin's `scalar_pb` and the HParams plugin's `hparams_pb` /
`hparams_config_pb` (`tensorboard.plugins.hparams.summary_v2`; its `api` module imports TensorFlow, these
protobuf builders do not). That is the package the TensorBoard UI needs anyway, so the extra adds no
second event-writing library (tensorboardX would be one more dependency for the same event files, and it
has no HParams config of its own beyond the same protos).

Re-exporting never duplicates: the TensorBoard event files of a configuration's run are replaced; a W&B
run's id is the study id and the configuration id, its offline copy is replaced, and an online re-export
resumes that run and adds only the history rows it does not have yet.

An offline W&B run is on disk when the export returns: `run.finish()` returns before wandb-core has closed
the run's stream, and until then the run's transaction log (run-<id>.wandb) holds only the blocks it has
filled (a small run: its 7-byte header alone). The export waits, for each run, until the log ends with the
run's exit record; one that does not within a minute is named on stderr (wandb still completes it when this
process exits, before `wandb sync` can read it).
"""

from __future__ import annotations

import collections
import importlib
import math
import shutil
import struct
import sys
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cockpit.figures import explain
from cockpit.report import study_data
from cockpit.report.study_data import StudyData
from runcontract.contract import MEMORY_FIGURES
from runcontract.modes import make_dirs

if TYPE_CHECKING:
    from cockpit.store.snapshot import GpuSample, MetricPoint

EXTRA = "pip install 'hlm-cockpit[tracking]'"
# metrics records -> tracker keys (rank 0, as the TUI draws a run's curves): key, record field, description
CURVES = (
    ("train/loss", "loss", "training loss, mean over the metrics interval (rank 0)"),
    ("train/tokens_per_s", "tokens_per_s", "throughput, tokens per second (global)"),
    ("train/samples_per_s", "samples_per_s", "throughput, samples per second (global)"),
    ("train/step_time_s", "step_time_s", "seconds per step over the interval (rank 0)"),
    ("train/train_time_s", "train_time_s", "T so far: training time up to this record (s)"),
    ("time/data_wait_s", "data_wait_s", "seconds of the interval waiting for data (rank 0)"),
    ("time/compute_s", "compute_s", "seconds of the interval in forward and backward (rank 0)"),
    ("time/comm_s", "comm_s", "seconds of the interval in exposed all-reduce (rank 0)"),
    ("time/optimizer_s", "optimizer_s", "seconds of the interval in the optimizer step (rank 0)"),
)
GPU_CURVES = (
    ("util_pct", "GPU utilisation (%)"),
    ("mem_used_bytes", "GPU memory used (bytes)"),
    ("mem_total_bytes", "GPU memory (bytes)"),
    ("power_w", "GPU power (W)"),
    ("temp_c", "GPU temperature (C)"),
)
# memory per rank (rank 0's held bytes, the largest peak of any rank: scaling.csv's memory_* columns)
MEMORY = tuple(f"memory_{f}" for f in MEMORY_FIGURES)
MEMORY_TEXT = {f"memory_{f}": f"{f.removesuffix('_bytes').replace('_', ' ')} per rank (bytes{', any rank' if f == 'peak_bytes' else ', rank 0'})"
               for f in MEMORY_FIGURES}
SCALING = "scaling/"  # TensorBoard tag prefix of the scaling figures (the tag is then the CSV column's name)
# W&B summary: the scaling figures under scaling.csv's names, and the row's words
SUMMARY_TEXT = ("status", "quality_metric", "quality_inputs", "verdict", "note", "mfu_note", "host_bound_note",
                "energy_source", "energy_note")


class TrackerMissing(RuntimeError):
    """The tracking extra is not installed; the message is one line with the pip command."""


@dataclass(frozen=True)
class Exported:
    config_id: str
    label: str
    where: str  # the TensorBoard run directory, or the W&B run's id and its offline directory or URL
    points: int  # curve points written (metrics records and GPU samples)


# -- TensorBoard ------------------------------------------------------------------------------------------

def export_tensorboard(data: StudyData, out: str | Path) -> list[Exported]:
    """One TensorBoard run per configuration under OUT/<study>/<label>-<config id>/ and the HParams
    experiment (the axes, the headline figures as its metrics) in OUT/<study>/."""
    try:
        from tensorboard.compat.proto import event_pb2
        from tensorboard.plugins.hparams import summary_v2 as hp
        from tensorboard.plugins.scalar.summary_v2 import scalar_pb
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError as exc:
        raise TrackerMissing(f"TensorBoard export needs the tracking extra ({exc.name} is missing): {EXTRA}") from exc

    root = Path(out) / _safe(data.name)
    make_dirs(root)
    rows = [r for r in data.rows if r.get("config_id")]
    _clear_events(root)
    experiment = EventFileWriter(str(root))
    each = [study_data.hparams(r) for r in rows]  # the axes, and a script's own keys
    try:
        config = hp.hparams_config_pb(
            hparams=[hp.HParam(name, _domain(hp, [h[name] for h in each if name in h]))
                     for name in dict.fromkeys(name for h in each for name in h)],
            metrics=[hp.Metric(SCALING + m, display_name=study_data.DISPLAY[m], description=study_data.DESCRIPTIONS[m])
                     for m in study_data.HEADLINE],
        )
        experiment.add_event(event_pb2.Event(wall_time=_started(rows), summary=config))
    finally:
        experiment.close()

    done = []
    for row in rows:
        cid = str(row["config_id"])
        run_dir = root / study_data.run_name(row)
        make_dirs(run_dir)
        _clear_events(run_dir)
        run = _TensorBoardRun(EventFileWriter(str(run_dir)), event_pb2.Event, scalar_pb)
        try:
            result = row.get("result") or {}
            start = _num(result.get("started_at"))
            session = hp.hparams_pb(study_data.hparams(row), trial_id=study_data.run_name(row), start_time_secs=start)
            run.writer.add_event(event_pb2.Event(wall_time=start or _started(rows), summary=session))
            curve = data.metrics(cid, rank=0)
            for p in curve:
                for key, attr, text in CURVES:
                    run.scalar(key, getattr(p, attr), p.step, p.t, text)
                run.points += 1
            for (host, gpu), samples in _per_gpu(data.gpu(cid)).items():
                for i, s in enumerate(samples):
                    for attr, text in GPU_CURVES:
                        run.scalar(f"gpu/{host}/{gpu}/{attr}", getattr(s, attr), i, s.t, f"{text}, {host} GPU {gpu}")
                    run.points += 1
            last_step = curve[-1].step if curve else 0
            wall = _num(result.get("finished_at")) or (curve[-1].t if curve else _started(rows))
            for name, value in study_data.figures(row).items():
                run.scalar(SCALING + name, value, last_step, wall, study_data.DESCRIPTIONS[name])
            for name, value in study_data.figures(row, MEMORY).items():
                run.scalar(SCALING + name, value, last_step, wall, MEMORY_TEXT[name])
        finally:
            run.writer.close()
        done.append(Exported(cid, study_data.label(row), str(run_dir), run.points))
    return done


class _TensorBoardRun:
    """One run's event file: scalars as the scalar plugin writes them, each tag described once."""

    def __init__(self, writer: Any, event: Any, scalar_pb: Any) -> None:
        self.writer, self._event, self._scalar_pb = writer, event, scalar_pb
        self._described: set[str] = set()
        self.points = 0

    def scalar(self, tag: str, value: Any, step: int, wall: float, description: str) -> None:
        """A finite value at `step` (missing and non-finite values are left out, as the CSV leaves them empty)."""
        number = _num(value)
        if number is None:
            return
        text = None if tag in self._described else description
        self._described.add(tag)
        self.writer.add_event(self._event(wall_time=wall, step=step, summary=self._scalar_pb(tag, number, text)))


def _domain(hp: Any, values: list[Any]) -> Any:
    """A Discrete domain of the values seen, when they are all of one type HParams accepts (else none)."""
    kinds = {type(v) for v in values}
    if len(kinds) == 1 and kinds <= {int, float, str, bool}:
        return hp.Discrete(sorted(set(values)))
    return None


def _clear_events(path: Path) -> None:
    """Remove the event files a previous export wrote here (TensorBoard reads every one: re-exporting
    beside them would show each point twice)."""
    for f in path.glob("events.out.tfevents.*"):
        if f.is_file():
            f.unlink()


# -- Weights & Biases -------------------------------------------------------------------------------------

def export_wandb(data: StudyData, out: str | Path = ".", *, online: bool = False, project: str = "hlm-cockpit",
                 entity: str | None = None) -> list[Exported]:
    """One W&B run per configuration, grouped by the study's name: the axes as config, the curves as
    history, the scaling figures as summary. Offline (the default) into OUT/wandb/offline-run-*-<id>/,
    for `wandb sync` to upload later; `online` sends them now (needs `wandb login`)."""
    try:
        import wandb
    except ImportError as exc:
        raise TrackerMissing(f"W&B export needs the tracking extra ({exc.name} is missing): {EXTRA}") from exc

    out = Path(out)
    make_dirs(out)
    wanted: dict[str, Any] = {"mode": "online" if online else "offline", "silent": True, "console": "off",
              "x_disable_stats": True, "x_disable_meta": True, "x_disable_machine_info": True,
              "x_save_requirements": False, "disable_git": True, "save_code": False, "disable_job_creation": True}
    fields = getattr(wandb.Settings, "model_fields", wanted)
    settings = wandb.Settings(**{k: v for k, v in wanted.items() if k in fields})
    done = []
    for row in (r for r in data.rows if r.get("config_id")):
        cid = str(row["config_id"])
        run_id = wandb_run_id(data.study_id, cid)
        if not online:
            for old in offline_runs(out, run_id):
                shutil.rmtree(old)
        run = wandb.init(
            project=project, entity=entity, id=run_id, name=study_data.label(row), group=data.name,
            job_type="scaling", tags=["hlm-cockpit"], dir=str(out), resume="allow", settings=settings,
            config={**study_data.hparams(row), "config_id": cid, "group_id": row.get("group_id"),
                    "study": data.name, "study_id": data.study_id, "cluster": data.input.cluster,
                    "device": row.get("device"), "baseline": bool(row.get("baseline"))},
        )
        points = 0
        try:
            run.define_metric("train/step")
            run.define_metric("train/*", step_metric="train/step")
            run.define_metric("gpu/time_s")
            run.define_metric("gpu/*", step_metric="gpu/time_s")
            already = int(getattr(run, "starting_step", 0) or 0)  # rows a resumed online run already has
            for i, entry in enumerate(history_rows(data.metrics(cid, rank=0), data.gpu(cid))):
                if i >= already:
                    run.log(entry)
                points += 1
            run.summary.update(wandb_summary(row))
        except BaseException:
            run.finish(exit_code=1)
            raise
        run.finish()
        if not online:
            for run_dir in offline_runs(out, run_id):
                wait_for_offline_log(run_dir)
        where = (getattr(run, "url", None) or run_id) if online else str(next(iter(offline_runs(out, run_id)), out))
        done.append(Exported(cid, study_data.label(row), where, points))
    return done


def wandb_run_id(study_id: str, config_id: str) -> str:
    """The configuration's W&B run id: stable across exports, so a re-export is the same run."""
    return f"{study_id}-{config_id}"


def offline_runs(out: Path, run_id: str) -> list[Path]:
    """The offline run directories of `run_id` that W&B keeps under OUT (wandb/ or .wandb/)."""
    return sorted(p for sub in ("wandb", ".wandb") for p in (out / sub).glob(f"offline-run-*-{run_id}") if p.is_dir())


WANDB_HEADER = struct.pack("<4sHB", b":W&B", 0xBEE1, 0)  # a .wandb file's first 7 bytes (wandb 0.31)
WANDB_BLOCK = 32768  # then LevelDB-style log blocks of chunks (a 7-byte header each: CRC-32, length, type)
OFFLINE_WAIT_S = 60.0


def wait_for_offline_log(run_dir: Path, timeout: float = OFFLINE_WAIT_S) -> bool:
    """Wait until wandb-core has written RUN_DIR's transaction log to its end (its last record is the run's
    exit record); False, with a line on stderr naming the file, when it has not after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        logs = sorted(run_dir.glob("*.wandb"))
        if logs and _ends_with_exit(logs[0]):
            return True
        if time.monotonic() >= deadline:
            where = logs[0] if logs else run_dir / "run-*.wandb"
            print(f"cockpit: W&B had not finished writing {where} after {timeout:g} s; it is completed "
                  "when this process exits, `wandb sync` it after that", file=sys.stderr)
            return False
        time.sleep(0.02)


class LogCut(ValueError):
    """A .wandb file that ends inside a chunk or holds a chunk failing its checksum (still being written)."""


def wandb_log_records(raw: bytes) -> Iterator[bytes]:
    """The serialized records of a .wandb file's bytes. The file is W&B's LevelDB-style log: a 7-byte header
    (':W&B', magic 0xBEE1, version 0), then 32 KiB blocks of chunks, each with a 7-byte header (CRC-32 of
    type and data, length, type: 1 full, 2 first, 3 middle, 4 last). wandb 0.31 keeps its reader in its Go
    core only. Raises LogCut at a chunk cut short or failing its checksum."""
    if raw[:7] != WANDB_HEADER:
        raise LogCut(f"not a .wandb log (header {raw[:7]!r})")
    i, pending = 7, b""
    while i + 7 <= len(raw):
        if WANDB_BLOCK - i % WANDB_BLOCK < 7:  # a block's tail too short for a header is padding
            i += WANDB_BLOCK - i % WANDB_BLOCK
            continue
        crc, length, kind = struct.unpack("<IHB", raw[i:i + 7])
        chunk = raw[i + 7:i + 7 + length]
        i += 7 + length
        if kind == 0 and length == 0:
            continue
        if len(chunk) < length or zlib.crc32(chunk, zlib.crc32(bytes([kind]))) & 0xFFFFFFFF != crc:
            raise LogCut(f"chunk at byte {i - 7 - length} cut short or failing its checksum")
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            yield pending


def wandb_record_type() -> Any:
    """wandb's own protobuf Record (its module picks the generated code for the protobuf installed, so mypy
    sees no Record in it, and protobuf ships no types: looked up by name)."""
    return importlib.import_module("wandb.proto.wandb_internal_pb2").Record


def _ends_with_exit(path: Path) -> bool:
    """Whether the last complete record of a .wandb file is an exit record (a chunk cut short or failing
    its checksum, or a record that does not parse, means the file is still being written)."""
    decode_error: type[Exception] = importlib.import_module("google.protobuf.message").DecodeError
    try:
        last = collections.deque(wandb_log_records(path.read_bytes()), maxlen=1)
        return bool(last) and wandb_record_type().FromString(last[0]).WhichOneof("record_type") == "exit"
    except (OSError, LogCut, decode_error):
        return False


def history_rows(metrics: list[MetricPoint], gpu: list[GpuSample]) -> Iterator[dict[str, Any]]:
    """The run's history rows, oldest first by wall time (so a grown store only appends rows): one per
    rank-0 metrics record (`train/step` its x) and one per GPU sample (`gpu/time_s`, seconds since the run's
    first record, its x); `_timestamp` is the record's own time."""
    t0 = min([p.t for p in metrics[:1]] + [s.t for s in gpu], default=0.0)
    entries: list[tuple[float, int, dict[str, Any]]] = []
    for i, p in enumerate(metrics):
        entry: dict[str, Any] = {"train/step": p.step, "_timestamp": p.t}
        entry.update({key: v for key, attr, _ in CURVES if (v := _num(getattr(p, attr))) is not None})
        entries.append((p.t, i, entry))
    for i, s in enumerate(gpu):
        entry = {"gpu/time_s": s.t - t0, "_timestamp": s.t}
        entry.update({f"gpu/{s.host}/{s.gpu}/{attr}": v for attr, _ in GPU_CURVES
                      if (v := _num(getattr(s, attr))) is not None})
        entries.append((s.t, len(metrics) + i, entry))
    for _, _, entry in sorted(entries, key=lambda e: (e[0], e[1])):
        yield entry


def wandb_summary(row: dict[str, Any]) -> dict[str, Any]:
    """The scaling figures under scaling.csv's names (those with a value), the overhead's terms as
    printed (`O_terms`), and the row's words."""
    summary: dict[str, Any] = {**study_data.figures(row), **study_data.figures(row, MEMORY)}
    summary["workers"] = row.get("workers")
    summary.update({k: row[k] for k in SUMMARY_TEXT if isinstance(row.get(k), str) and row[k]})
    if "overhead_s" in summary:
        _, terms = explain.shown_terms(row)
        summary["O_terms"] = {explain.TERM_LABELS[t]: v for t, v in terms}
    return summary


# -- shared -----------------------------------------------------------------------------------------------

def _per_gpu(samples: list[GpuSample]) -> dict[tuple[str, int], list[GpuSample]]:
    out: dict[tuple[str, int], list[GpuSample]] = {}
    for s in samples:
        out.setdefault((s.host, s.gpu), []).append(s)
    return out


def _started(rows: list[dict[str, Any]]) -> float:
    """The earliest start of the study's runs (0 when none says)."""
    starts = [v for r in rows if (v := _num((r.get("result") or {}).get("started_at"))) is not None]
    return min(starts, default=0.0)


def _num(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name) or "study"
