"""What a study will write into its work directory, in bytes: the one estimate the preflight refuses a study
on and the runner resumes submitting by (a full work directory, docs/long-study.md).

Per run: checkpoint.pt (fp32 weights and AdamW's two moments, 12 bytes a parameter) and model.pt (4 bytes a
parameter); at most `max_concurrent_jobs` saves in flight, each holding a second checkpoint until it replaces
the first (the last good one is kept until then); metrics.jsonl (one line per rank per metrics interval) and
gpu.jsonl (one sample per GPU per NVML interval) over the run's expected minutes, and the logs. The data the
workload prepares there (`Workload.data_bytes`: the HLM trainer's token shards, cockpit.workloads.hlm.footprint).
Every input is kept beside the result so the refusal line can show it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cockpit.figures.sizes import size_words

if TYPE_CHECKING:
    from cockpit.study.spec import Configuration, Study

CHECKPOINT_BYTES_PER_PARAM = 4 + 8  # fp32 weights, AdamW's two fp32 moments (checkpoint.pt)
MODEL_BYTES_PER_PARAM = 4  # model.pt: the final fp32 weights
METRICS_LINE_BYTES = 450  # one metrics.jsonl record (measured on the tests' runs: about 420)
GPU_LINE_BYTES = 300  # one gpu.jsonl sample
LOG_BYTES = 256 * 1024  # train.log, the Slurm logs, job.sh, config.json, exit.json and its room, per run


@dataclass(frozen=True)
class Footprint:
    """The estimate and what it is made of (bytes)."""

    runs: int
    parameters: int  # the largest configuration's
    checkpoints_bytes: int  # checkpoint.pt + model.pt of every run
    in_flight_bytes: int  # the second checkpoint of each save in flight
    logs_bytes: int
    shards_bytes: int
    shards_note: str = ""
    per_run_bytes: int = 0  # the largest single run: what the runner needs free to resume submitting
    by_run: dict[str, int] = field(default_factory=dict)

    @property
    def total_bytes(self) -> int:
        return self.checkpoints_bytes + self.in_flight_bytes + self.logs_bytes + self.shards_bytes

    def words(self) -> str:
        """`12.3 MB = 4 runs x checkpoints and models (20.1 k parameters, 16 B each) ...`: the result with its inputs."""
        if not self.parameters and not self.shards_bytes:  # a script's: only the run files the cockpit knows
            return (f"{size_words(self.total_bytes)} = {self.runs} runs' logs and run files "
                    f"{size_words(self.logs_bytes)} (the workload's own checkpoints and outputs are not sized)")
        return (f"{size_words(self.total_bytes)} = {self.runs} runs' checkpoints and models "
                f"{size_words(self.checkpoints_bytes)} ({self.parameters:,} parameters at most, "
                f"{CHECKPOINT_BYTES_PER_PARAM + MODEL_BYTES_PER_PARAM} B each) + saves in flight "
                f"{size_words(self.in_flight_bytes)} + logs {size_words(self.logs_bytes)} + token shards "
                f"{size_words(self.shards_bytes)}{f' ({self.shards_note})' if self.shards_note else ''}")


def run_parameters(study: Study, cfg: Configuration) -> int:
    """The configuration's parameter count, as its workload knows it (`Workload.parameters`); 0 for a workload
    whose model the cockpit does not know (a script: its checkpoints are its own, not sized)."""
    return study.workload.parameters(study, cfg)


def run_bytes(study: Study, cfg: Configuration) -> tuple[int, int]:
    """(checkpoint + model, logs) bytes of one run."""
    seconds = study.hours_per_run() * 3600
    ranks = cfg.nodes * cfg.gpus_per_node
    metrics = ranks * seconds / float(study.train.get("metrics_interval_s") or 5.0) * METRICS_LINE_BYTES
    gpu = ranks * seconds / (float(study.train.get("nvml_interval_ms") or 500) / 1000) * GPU_LINE_BYTES
    params = run_parameters(study, cfg)
    return params * (CHECKPOINT_BYTES_PER_PARAM + MODEL_BYTES_PER_PARAM), int(metrics + gpu) + LOG_BYTES


def footprint(study: Study, workdir: str | None = None, dataset_bytes: dict[str, int] | None = None,
              configs: list[Configuration] | None = None) -> Footprint:
    """The study's footprint in its work directory (`workdir`: as the cluster spells it; default the study
    file's); `configs`: only these runs (default every runnable one)."""
    runs = study.runnable() if configs is None else configs
    by_run = {}
    logs = 0
    for cfg in runs:
        kept, log = run_bytes(study, cfg)
        by_run[cfg.config_id] = kept
        logs += log
    biggest = max(by_run.values(), default=0)
    params = max((run_parameters(study, c) for c in runs), default=0)
    at_once = min(len(runs), study.cluster.max_concurrent_jobs or 4)
    in_flight = at_once * params * CHECKPOINT_BYTES_PER_PARAM
    shards, note = study.workload.data_bytes(study, workdir or study.cluster.workdir, dataset_bytes)
    per_run = biggest + params * CHECKPOINT_BYTES_PER_PARAM + (logs // max(1, len(runs)))
    return Footprint(len(runs), params, sum(by_run.values()), in_flight, logs, shards, note, per_run, by_run)
