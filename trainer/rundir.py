"""The run-directory contract shared by the trainer and the cockpit.

Pure Python (no torch, no numpy) so the laptop side can import it. Every file the trainer leaves behind is
read and written through this module; docs/run-directory.md documents each field and unit.
"""

from __future__ import annotations

import grp
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypedDict

from runcontract import contract, files
from trainer.disk_space import DiskFull, as_disk_full, release_room

# The contract's names and numbers (runcontract/contract.py), for every module that reads them here.
BREAKDOWN_PARTS = contract.BREAKDOWN_PARTS
CONFIG_FILE = contract.CONFIG_FILE
EXIT_BAD_INPUT = contract.EXIT_BAD_INPUT
EXIT_CHECKPOINTED = contract.EXIT_CHECKPOINTED
EXIT_DISK_FULL = contract.EXIT_DISK_FULL
EXIT_FILE = contract.EXIT_FILE
EXIT_NONFINITE_LOSS = contract.EXIT_NONFINITE_LOSS
EXIT_OK = contract.EXIT_OK
EXIT_REASONS = contract.EXIT_REASONS
EXIT_USAGE = contract.EXIT_USAGE
GPU_FILE = contract.GPU_FILE
RAPL_FILE = contract.RAPL_FILE
LOCAL_STDERR_FILE = contract.LOCAL_STDERR_FILE
LOCAL_STDOUT_FILE = contract.LOCAL_STDOUT_FILE
METRICS_FILE = contract.METRICS_FILE
RESULT_FILE = contract.RESULT_FILE
RESULT_KIND = contract.RESULT_KIND
RESULT_STATUSES = contract.RESULT_STATUSES
SCHEMA_VERSION = contract.SCHEMA_VERSION
SLURM_STDERR_FILE = contract.SLURM_STDERR_FILE
SLURM_STDOUT_FILE = contract.SLURM_STDOUT_FILE
slurm_log_files = contract.slurm_log_files

LOG_FILE = "train.log"
CHECKPOINT_FILE = "checkpoint.pt"
SHARDS_DIR = "checkpoint.shards"  # a sharded strategy's state beside checkpoint.pt: one folder per save, step-NNNNNNNN
MODEL_FILE = "model.pt"
PREFLIGHT_FILE = "preflight.json"  # `hlm-train preflight`: what one short job of the study found
PREFLIGHT_ENV_FILE = "preflight-env.json"  # the job's python, torch and project versions (before torch loads)
ENSEMBLE_FILE = "ensemble.json"  # `hlm-train ensemble --out DIR`: DIR/ensemble.json, beside the run directories
EVALUATION_FILE = "evaluation.json"  # `hlm-train evaluate MODEL --data DIR`: a database scored by a trained model
# Written around the trainer by the launchers, in the same directory.
JOB_SCRIPT_FILE = "job.sh"  # the batch script as submitted to Slurm
# and the launchers' logs: runcontract.contract (SLURM_STDOUT_FILE, LOCAL_STDOUT_FILE, slurm_log_files ...)


# The kinds of collective result.json `comm.by_kind` attributes the comm part to (trainer.timing.CommMeter).
COMM_KINDS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")
# result.json `memory`'s figures per rank, in bytes (ResultMemory)
MEMORY_FIGURES = ("params_bytes", "grads_bytes", "optimizer_bytes", "model_states_bytes", "peak_bytes")

# torch.profiler traces (train.profile_active): one Chrome-trace JSON per rank and profiling cycle.
TRACES_DIR = "traces"
TRACE_INDEX_FILE = f"{TRACES_DIR}/index.json"  # rank 0: every cycle's steps and every rank's file
TRACE_RANGE_PREFIX = "hlm:"
STEP_RANGE_PREFIX = "ProfilerStep#"  # torch.profiler's own range around each step; the number is the run's step


def trace_range(part: str) -> str:
    """The record_function name of one step part in a trace: `hlm:data_wait`, `hlm:compute`, ..."""
    if part not in BREAKDOWN_PARTS:
        raise ValueError(f"{part!r} is not a part of T ({', '.join(BREAKDOWN_PARTS)})")
    return TRACE_RANGE_PREFIX + part


def trace_file(rank: int, first_step: int, last_step: int) -> str:
    """One rank's trace of one profiling cycle, relative to the run directory."""
    return f"{TRACES_DIR}/rank{rank}-steps{first_step}-{last_step}.json"


class ResultTiming(TypedDict, total=False):
    """result.json `timing` (docs/run-directory.md; docs/training.md says what T contains)."""

    train_time_s: float  # T, first step start to last step end, summed over resumed segments
    startup_s: float
    prepare_s: float
    eval_s: float
    checkpoint_s: float
    wall_s: float
    steps: int
    epochs: float
    samples: int
    tokens: int
    resumes: int
    launch_time_source: str
    steps_per_epoch: int
    first_step_s: float
    val_s: float
    profiled_steps: int  # steps inside T that ran under torch.profiler (warm-up and recorded); 0 without
    profile_s: float  # starting, stopping and exporting the profiler: outside T


class ResultProfile(TypedDict):
    """result.json `profile` when train.profile_active is set (null otherwise)."""

    schedule: dict[str, int]  # wait, warmup, active, repeat as the run used them
    steps: list[int]  # the recorded steps (in the traces); their wall time is inside T
    warmup_steps: list[int]  # steps the profiler ran but discarded (its warm-up); inside T too
    traced_s: float  # rank 0's wall time of those steps (warm-up and recorded), part of T
    traces: list[str]  # every rank's trace files, relative to the run directory
    ranges: dict[str, str]  # step part -> record_function name in the traces


class ResultParallel(TypedDict):
    """result.json `parallel`: the data-parallel strategy (trainer/parallel.py, docs/strategies.md)."""

    strategy: str  # as configured: ddp, zero1, fsdp, fsdp_noreshard
    applied: str  # what ran: the strategy, or "none" with one process (no process group)
    sharded: list[str]  # what each rank holds 1/N of: params, grads, optimizer
    mixed_precision: str | None  # FSDP's parameter and reduction dtype on GPU ("bf16"), else null


class ResultMemory(TypedDict, total=False):
    """result.json `memory`: rank 0's figures and every rank's (`by_rank`). The held bytes are counted from
    the tensors after the first step of the last segment (a sharded tensor by its local shard); the peak is the
    device's at the end of training."""

    params_bytes: int
    grads_bytes: int
    optimizer_bytes: int
    model_states_bytes: int  # the three together
    peak_bytes: int
    peak_source: str  # "cuda max_memory_allocated" or "peak resident set size (getrusage)"
    by_rank: list[dict[str, Any]]  # rank and the five figures above, per rank


class ResultEnergy(TypedDict):
    """result.json `energy`: the joules the run's devices drew over T (runcontract/energy.py: the GPUs' NVML
    energy counter, else their power integrated; on CPU the packages' RAPL counters), or why not measured."""

    joules: float | None  # null when not measured; `reason` says why
    source: str | None  # "NVML energy counter", "NVML power integrated" or "RAPL package counters"
    mean_power_w: float | None  # all devices together, over the part of T the samples cover
    devices: int  # GPUs (host, index) or RAPL zones (host, package) measured
    covered_s: float  # seconds of T inside the samples' span (the least of any device)
    train_time_s: float  # T as the metrics lines' windows add it up
    reason: str  # "" when measured


class ResultGpuUse(TypedDict):
    """result.json `gpu_use` (CUDA runs): the GPUs' NVML name and busy share over T."""

    name: str | None  # NVML's device name ("NVIDIA H200"), the most frequent among the samples
    devices: int
    busy_pct: float | None  # mean NVML utilisation of the samples inside T, averaged over the GPUs
    memory_bytes: float | None  # the GPU's memory as NVML reports it (the least of the run's GPUs)
    samples: int
    reason: str  # "" when measured


class Result(TypedDict, total=False):
    """result.json as the trainer writes it (every field: docs/run-directory.md). `write_result` adds
    `schema_version` and `kind`; readers get a plain dict and must tolerate fields they do not know."""

    status: str
    study: str
    config_id: str
    group_id: str
    config: dict[str, Any]
    mode: str
    world_size: int
    nodes: int
    gpus_per_node: int
    hostnames: list[str]
    device: str
    backend: str
    versions: dict[str, Any]
    git_sha: str | None
    synthetic: bool
    timing: ResultTiming
    breakdown_s: dict[str, float]  # BREAKDOWN_PARTS -> seconds of T on rank 0
    breakdown_by_rank: list[dict[str, Any]]
    throughput: dict[str, float | None]
    peak_memory_bytes: int
    final_loss: float | None
    model: dict[str, Any]
    loader: dict[str, Any]
    optimizer: dict[str, Any]
    parallel: ResultParallel
    memory: ResultMemory
    comm: dict[str, Any]  # method, busy_s, by_kind (all_reduce, all_gather, reduce_scatter, broadcast), ...
    data: dict[str, Any]
    profile: ResultProfile | None
    eval: dict[str, Any]
    validation: dict[str, Any]
    init: str | None
    started_at: float
    finished_at: float
    energy: ResultEnergy  # the devices' energy over T (runcontract/energy.py)
    gpu_use: ResultGpuUse | None  # the GPUs' name and NVML busy share over T; null on CPU


class RunDirError(ValueError):
    """A run-directory file exists but cannot be used; the message names the file and the problem."""


# --- file modes: private by default, or shared with a project's Unix group ----------------------------------
# A login node and a shared file system serve hundreds of accounts, and token shards are ECG recordings sample
# by sample: every directory the trainer and the cockpit create is 0700 and every file 0600, whatever the
# umask, unless the study names a Unix group ([cluster].share_group): then 2750 / 0640 and that group.


@dataclass(frozen=True)
class Sharing:
    """Who may read what this process creates: its owner alone (group None) or also a Unix group."""

    group: str | None = None

    @property
    def dir_mode(self) -> int:
        return 0o2750 if self.group else 0o700  # setgid: what is created inside keeps the group

    @property
    def file_mode(self) -> int:
        return 0o640 if self.group else 0o600

    @property
    def umask(self) -> int:
        """The launchers' umask (the batch script's, the local executor's for its workers), for what libraries
        create on their own."""
        return 0o027 if self.group else 0o077

    @property
    def gid(self) -> int | None:
        if self.group is None:
            return None
        try:
            return grp.getgrnam(self.group).gr_gid
        except KeyError:
            raise RunDirError(f"share_group {self.group!r}: no such Unix group on {os.uname().nodename}") from None


_sharing = Sharing()


def share_with(group: str | None) -> Sharing:
    """Set this process's policy for everything it creates from now on: private (None) or shared with
    ``group``. The trainer's commands call it with their config.json's share_group; returns the policy.
    (The umask is the launcher's to set: the process may be a library's host, such as a test run.)"""
    global _sharing
    _sharing = Sharing(group or None)
    _sharing.gid  # noqa: B018 - an unknown group is refused here, not at the first file
    return _sharing


def sharing() -> Sharing:
    return _sharing


def make_dirs(path: str | os.PathLike[str], policy: Sharing | None = None) -> Path:
    """`mkdir -p` whose every created directory gets the policy's mode and group (existing ones are left as
    they are: a site's project directory is not ours to change). ``policy``: a study's own (the local
    executor's runs) instead of the process's."""
    policy = policy or _sharing
    path = Path(path)
    missing = []
    for p in (path, *path.parents):
        if p.is_dir():
            break
        missing.append(p)
    for p in reversed(missing):
        try:
            p.mkdir(mode=0o700)
        except FileExistsError:  # made meanwhile by another rank or process: theirs has the same policy
            continue
        _apply(p, policy.dir_mode, policy)
    return path


def writable_dir(path: str | os.PathLike[str], what: str, policy: Sharing | None = None) -> Path:
    """`make_dirs` for a directory a user named (``what``: the flag or key, `--run-dir`): a path that cannot be
    a writable directory is refused with one line naming it and why, not an OSError from deep inside a run
    (a full disk raises DiskFull)."""
    path = Path(path)
    try:
        made = make_dirs(path, policy)
    except OSError as exc:
        full = as_disk_full(exc)
        if full is not None:  # a full work directory is its own exit code (EXIT_DISK_FULL), not a bad path
            raise full from exc
        where = Path(exc.filename) if exc.filename else path
        why = exc.strerror or str(exc)
        if isinstance(exc, FileNotFoundError) and where.parent.is_dir():  # /proc/x: the parent takes no new folder
            why = f"{why}: {where.parent} does not take new directories"
        raise RunDirError(f"{what} {path}: cannot create {where} ({why}); choose a directory you can write") from None
    if not made.is_dir():
        raise RunDirError(f"{what} {path}: a file, not a directory; choose a directory you can write")
    if not os.access(made, os.W_OK | os.X_OK):
        raise RunDirError(f"{what} {path}: not writable by you; choose a directory you can write")
    return made


def protect(path: str | os.PathLike[str]) -> Path:
    """Give a file this process has just written the policy's mode and group (a library chose its own)."""
    _apply(Path(path), _sharing.file_mode, _sharing)
    return Path(path)


def open_new(path: str | os.PathLike[str], mode: str = "w", policy: Sharing | None = None) -> IO[Any]:
    """open() for writing ("w", "wb", "a", "ab", "x"...) that creates the file with the policy's mode and group,
    never readable by others in between."""
    policy = policy or _sharing
    flags = os.O_WRONLY | os.O_CREAT | {"w": os.O_TRUNC, "a": os.O_APPEND, "x": os.O_EXCL}[mode[0]]
    fd = os.open(path, flags, policy.file_mode)
    try:
        _apply_fd(fd, policy.file_mode, policy)
        return os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8")
    except BaseException:
        os.close(fd)
        raise


def _apply(path: Path, mode: int, policy: Sharing) -> None:
    gid = policy.gid
    if gid is not None:
        os.chown(path, -1, gid)  # before the mode: chown clears a directory's setgid bit on some systems
    os.chmod(path, mode)


def _apply_fd(fd: int, mode: int, policy: Sharing) -> None:
    gid = policy.gid
    if gid is not None:
        os.fchown(fd, -1, gid)
    os.fchmod(fd, mode)


@contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "w", size_hint: int = 0) -> Iterator[IO[Any]]:
    """Yield a handle on a temporary file beside `path`; on success fsync it and rename it over `path`.

    A reader (or a resumed run) therefore sees the old file or the new one, never half of one. A full disk
    (ENOSPC, EDQUOT) raises DiskFull naming `path` and the bytes needed (`size_hint`, or what was written
    when it failed if more); the temporary file is removed and the old file stays.
    """
    path = Path(path)
    make_dirs(path.parent)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        full = as_disk_full(exc, path, size_hint)
        if full is None:
            raise
        raise full from exc
    written = 0
    try:
        _apply_fd(fd, _sharing.file_mode, _sharing)
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as handle:
            try:
                yield handle
                handle.flush()
                os.fsync(handle.fileno())
            finally:
                written = os.fstat(handle.fileno()).st_size
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        full = as_disk_full(exc, path, max(size_hint, written))
        if full is None or full is exc:
            raise
        raise full from exc


def write_json(path: str | os.PathLike[str], data: dict[str, Any]) -> None:
    """Write JSON atomically so a reader never sees half a file."""
    text = json.dumps(data, indent=2, sort_keys=True, allow_nan=True) + "\n"
    with atomic_write(path, size_hint=len(text.encode("utf-8"))) as handle:
        handle.write(text)


def read_json(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """Read a JSON object (runcontract's reader); None when the file does not exist, RunDirError when it is not
    an object."""
    try:
        return files.read_json(path)
    except files.ContractError as exc:
        raise RunDirError(str(exc)) from exc


def write_config(run_dir: str | os.PathLike[str], config: dict[str, Any]) -> Path:
    """Write config.json, the trainer's whole input, stamped with the schema version."""
    path = Path(run_dir) / CONFIG_FILE
    write_json(path, {"schema_version": SCHEMA_VERSION, **config})
    return path


def read_config(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Read config.json; a missing file is an error because the trainer cannot start without it."""
    path = Path(run_dir) / CONFIG_FILE
    data = read_json(path)
    if data is None:
        raise RunDirError(f"{path}: missing (the launcher writes it before the run starts)")
    _check_version(path, data)
    return data


def write_result(run_dir: str | os.PathLike[str], result: Mapping[str, Any]) -> Path:
    """Write result.json once, at the end of a run, by rank 0."""
    missing = [key for key in ("status", "config_id", "timing") if key not in result]
    if missing:
        raise RunDirError(f"result for {run_dir} lacks required keys: {', '.join(missing)}")
    if result["status"] not in RESULT_STATUSES:
        raise RunDirError(f"result for {run_dir}: status {result['status']!r} is not one of {RESULT_STATUSES}")
    path = Path(run_dir) / RESULT_FILE
    write_json(path, {"schema_version": SCHEMA_VERSION, "kind": RESULT_KIND, **result})
    return path


def read_result(run_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """Read result.json; None if the run has not finished. Unknown fields are kept, never rejected."""
    path = Path(run_dir) / RESULT_FILE
    data = read_json(path)
    if data is None:
        return None
    _check_version(path, data)
    timing = data.get("timing")
    if not isinstance(timing, dict) or not isinstance(timing.get("train_time_s"), int | float):
        raise RunDirError(f"{path}: timing.train_time_s missing or not a number")
    return data


def write_exit(run_dir: str | os.PathLike[str], code: int, message: str = "", **extra: Any) -> Path:
    """Record how the trainer ended; written by rank 0 on every exit path."""
    import time

    record = {
        "schema_version": SCHEMA_VERSION,
        "code": int(code),
        "reason": EXIT_REASONS.get(int(code), "error"),
        "message": message,
        "time": time.time(),
        **extra,
    }
    path = Path(run_dir) / EXIT_FILE
    try:
        write_json(path, record)
    except DiskFull:  # the room kept for it (disk_space.keep_room) makes it fit
        release_room(run_dir)
        write_json(path, record)
    release_room(run_dir)
    return path


def read_exit(run_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """Read exit.json; None when the trainer never got that far."""
    return read_json(Path(run_dir) / EXIT_FILE)


def append_jsonl(path: str | os.PathLike[str], record: dict[str, Any]) -> None:
    """Append one record as a single write() so concurrent ranks never interleave inside a line. On a full
    disk, a part of the line already written is cut off again and DiskFull is raised: the file keeps whole
    lines only."""
    data = (json.dumps(record, separators=(",", ":"), allow_nan=True) + "\n").encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, _sharing.file_mode)
    except OSError as exc:
        full = as_disk_full(exc, path, len(data))
        if full is None:
            raise
        raise full from exc
    try:
        before = os.fstat(fd).st_size
        try:
            written = os.write(fd, data)
        except OSError as exc:
            full = as_disk_full(exc, path, len(data))
            if full is None:
                raise
            os.ftruncate(fd, before)
            raise full from exc
        if written < len(data):
            os.ftruncate(fd, before)
            raise DiskFull(path, len(data))
    finally:
        os.close(fd)


@dataclass
class JsonlChunk:
    """What a tolerant read of a JSON-lines file produced."""

    records: list[dict[str, Any]]
    next_offset: int
    bad_lines: int


def parse_jsonl_bytes(data: bytes, final: bool = False) -> JsonlChunk:
    """Parse complete lines of a JSON-lines byte chunk.

    An unterminated last line is left for the next read (next_offset stops before it) unless `final`
    is set, in which case it is counted as bad: a writer killed mid-line leaves exactly that.
    """
    records: list[dict[str, Any]] = []
    bad = 0
    end = data.rfind(b"\n") + 1
    complete, rest = data[:end], data[end:]
    for raw in complete.split(b"\n"):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            bad += 1
            continue
        if isinstance(value, dict):
            records.append(value)
        else:
            bad += 1
    consumed = end
    if final and rest.strip():
        bad += 1
        consumed = len(data)
    return JsonlChunk(records, consumed, bad)


def read_jsonl(path: str | os.PathLike[str], offset: int = 0, final: bool = False) -> JsonlChunk:
    """Read records from byte `offset` on; a missing file reads as empty. See parse_jsonl_bytes."""
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except FileNotFoundError:
        return JsonlChunk([], offset, 0)
    chunk = parse_jsonl_bytes(data, final=final)
    chunk.next_offset += offset
    return chunk


def _check_version(path: Path, data: dict[str, Any]) -> None:
    version = data.get("schema_version")
    if not isinstance(version, int):
        raise RunDirError(f"{path}: schema_version missing or not an integer")
    if version > SCHEMA_VERSION:
        raise RunDirError(
            f"{path}: schema_version {version} is newer than this reader ({SCHEMA_VERSION}); upgrade hlm-cockpit"
        )
