"""The run-directory contract's fixed names and numbers: file names, exit codes, the parts of T, versions.

Standard library only. The HLM trainer and any training script (the rest of runcontract)
take these from here, so a run directory reads the same whoever wrote it; docs/run-directory.md documents
every file and docs/workloads.md the library.
"""

from __future__ import annotations

import signal

# The run directory's schema: config.json, result.json and exit.json carry it as `schema_version`, JSON-lines
# records as `v`. A reader refuses a newer one.
SCHEMA_VERSION = 1
# The library's own version, in result.json `attribution.contract_version`. A script that needs a newer one
# says so with `Run(requires=N)` and is refused in one line by an older library.
CONTRACT_VERSION = 1

# The environment variable the launcher sets to the run directory (default: the working directory).
RUN_DIR_ENV = "RUNCONTRACT_RUN_DIR"
# The launcher's launch time (epoch seconds), for `timing.startup_s`; the HLM trainer reads the same.
LAUNCH_TIME_ENV = "HLM_LAUNCH_TIME"

CONFIG_FILE = "config.json"
RESULT_FILE = "result.json"
METRICS_FILE = "metrics.jsonl"
GPU_FILE = "gpu.jsonl"
RAPL_FILE = "rapl.jsonl"  # a CPU run's package energy counters (runcontract/rapl.py), beside gpu.jsonl
EXIT_FILE = "exit.json"
STOP_FILE = "stop.json"  # a stop signal arrived: {v, t, signal, rank}; kept when the script ignored it
RANKS_DIR = "ranks"  # ranks/rank<R>.json: each rank's parts of T, merged by rank 0 into result.json
# Written around the workload by the launchers, in the same directory.
SLURM_STDOUT_FILE = "slurm-%j.out"  # Slurm's --output/--error; %j is the job id, every attempt appends
SLURM_STDERR_FILE = "slurm-%j.err"
LOCAL_STDOUT_FILE = "stdout.log"  # the local executor's capture of the launcher's output
LOCAL_STDERR_FILE = "stderr.log"
# A preflight job's directory (docs/run-directory.md, "The preflight's directory"): the launchers' probe writes the
# environment before torch loads, the preflight program what it found.
PREFLIGHT_FILE = "preflight.json"
PREFLIGHT_ENV_FILE = "preflight-env.json"  # the job's python, torch and project versions (before torch loads)

# Exit codes (exit.json `code`, and the process's own where the library ends it).
EXIT_OK = 0
EXIT_USAGE = 2
EXIT_BAD_INPUT = 3
EXIT_NONFINITE_LOSS = 4
EXIT_DISK_FULL = 5  # ENOSPC or EDQUOT: exit.json names the path and the bytes it needed
EXIT_CHECKPOINTED = 75

EXIT_REASONS = {
    EXIT_OK: "completed",
    EXIT_USAGE: "bad command line or config",
    EXIT_BAD_INPUT: "bad input data",
    EXIT_NONFINITE_LOSS: "non-finite loss",
    EXIT_DISK_FULL: "work directory full (no space left or quota exceeded)",
    EXIT_CHECKPOINTED: "checkpointed after a signal; run again to resume",
}

RESULT_STATUSES = ("completed", "failed")
RESULT_KIND = "hlm-run-result"  # the project's trainer (runcontract.records.write_result)
SCRIPT_RESULT_KIND = "script-run-result"  # any other script, through this library (runcontract.Run)

# The parts of T, in the order every table shows them: result.json breakdown_s, metrics.jsonl `<part>_s`, the
# cockpit's overhead terms.
BREAKDOWN_PARTS = ("data_wait", "compute", "comm", "optimizer", "other")

# The signals that ask a run to save a checkpoint and stop (Slurm's --signal, the local executor's stop).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1)

# How a result's parts were measured (result.json `attribution.mode`).
MODES = ("explicit", "callback", "hooks")


def exit_reason(code: int) -> str:
    """exit.json `reason` for a code: the known ones, a signal's death (128 + N), else "error"."""
    if code in EXIT_REASONS:
        return EXIT_REASONS[code]
    if 128 < code < 128 + 65:
        try:
            name = signal.Signals(code - 128).name
        except ValueError:
            name = f"signal {code - 128}"
        return f"stopped by {name} without a checkpoint"
    return "error"


def rank_file(rank: int) -> str:
    """One rank's parts of T, relative to the run directory."""
    return f"{RANKS_DIR}/rank{rank}.json"


def slurm_log_files(job_id: str) -> list[str]:
    """The names Slurm gives one job's output and error files in the run directory."""
    return [SLURM_STDOUT_FILE.replace("%j", job_id), SLURM_STDERR_FILE.replace("%j", job_id)]


class ContractError(ValueError):
    """A run-directory file or a request cannot be used; the message is one line naming the file and the problem."""


JOB_SCRIPT_FILE = "job.sh"  # the batch script as submitted to Slurm


# The kinds of collective result.json `comm.by_kind` attributes the comm part to (trainer.measure.timing.CommMeter).
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

