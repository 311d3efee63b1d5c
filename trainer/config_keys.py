"""The trainer's model and training keys, declared once: type, default, allowed values, help.

The study file's [model] and [train] tables (cockpit.spec), the trainer's reading of config.json
(trainer.settings) and the flags of `hlm-train train` (trainer.cli) are all built from this table, so a key
and its default exist in one place. Pure Python (the cockpit imports it; no torch).

Data keys (dataset, tokenizer, split, ...) and the run's identity are not here: they have their own tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ConfigKey:
    """One key. ``kind`` is int, float (any number), str or bool; ``default`` None means unset (optional,
    or the trainer works it out: see ``help``). ``top_level``: config.json keeps it beside "model" and
    "train" (a sweep axis), though the study sets its default in [train]."""

    section: str  # "model" or "train": the study table (and config.json section unless top_level)
    name: str
    kind: type
    default: Any = None
    help: str = ""
    choices: tuple[str, ...] | None = None
    minimum: float | None = None
    top_level: bool = False
    study: bool = True  # settable in a study file (False: test hooks of the trainer only)
    flag: bool = True  # `hlm-train train --name` sets it

    @property
    def dest(self) -> str:
        """Where config.json holds it: "window" or "train.lr"."""
        return self.name if self.top_level else f"{self.section}.{self.name}"


def _k(section: str, name: str, kind: type, default: Any = None, help: str = "", **kw: Any) -> ConfigKey:
    return ConfigKey(section, name, kind, default, help, **kw)


MODES = ("foundation", "finetune")
PRECISIONS = ("fp32", "bf16", "fp16")
DEVICES = ("auto", "cpu", "cuda")
TASKS = ("beat", "rhythm")
CONTEXTS = ("none", "rr")  # tokens before each window: trainer.data.rr_context
WAVEFORMS = ("raw", "diff")  # what a samples window holds: trainer.data.beat_template
POOLS = ("mean", "centre")  # trainer.model
CLASS_WEIGHTS = ("balanced", "sqrt", "none")

KEYS: tuple[ConfigKey, ...] = (
    # the model
    _k("model", "layers", int, 4, "transformer layers", minimum=1),
    _k("model", "d_model", int, 128, "width of the model (divisible by heads)", minimum=8),
    _k("model", "heads", int, 4, "attention heads", minimum=1),
    _k("model", "dropout", float, 0.0, "dropout probability, in [0, 1)", minimum=0),
    _k("model", "context", str, "none", "'rr': RR-interval tokens of the centre beat before each window",
       choices=CONTEXTS),
    _k("model", "waveform", str, "raw", "samples windows as tokenized ('raw') or minus the patient's template "
       "beat ('diff')", choices=WAVEFORMS),
    _k("model", "pool", str, "mean", "fine-tune head input: 'mean' over positions or the 'centre' beat's",
       choices=POOLS),
    # sweep axes: defaults for the axes a study does not sweep; top-level keys of config.json
    _k("train", "mode", str, "foundation", "foundation (masked-span prediction) or finetune (classification)",
       choices=MODES, top_level=True),
    _k("train", "window", int, 256, "tokens per training window", minimum=2, top_level=True),
    _k("train", "precision", str, "fp32", "numeric precision of the forward pass", choices=PRECISIONS,
       top_level=True),
    _k("train", "batch_size", int, 32, "windows per worker per step", minimum=1, top_level=True),
    _k("train", "cpus_per_task", int, None, "CPU cores per worker (default: SLURM_CPUS_PER_TASK, else 1; a "
       "study's matrix uses 1)", minimum=1, top_level=True),
    # training
    _k("train", "steps", int, None, "optimizer steps (give steps or epochs)", minimum=1),
    _k("train", "epochs", float, None, "passes over the training split (give steps or epochs)", minimum=0),
    _k("train", "lr", float, 3e-4, "peak learning rate (AdamW)", minimum=0),
    _k("train", "weight_decay", float, 0.01, "AdamW weight decay", minimum=0),
    _k("train", "warmup_steps", int, 0, "linear warm-up steps", minimum=0),
    _k("train", "seed", int, 0, "random seed"),
    _k("train", "grad_accum", int, 1, "micro-batches per optimizer step", minimum=1),
    _k("train", "compile", bool, False, "torch.compile the model"),
    _k("train", "device", str, "auto", "where to train: auto takes a GPU when there is one", choices=DEVICES),
    _k("train", "metrics_interval_s", float, 5.0, "seconds between metrics.jsonl records", minimum=0),
    _k("train", "nvml_interval_ms", int, 500, "milliseconds between GPU samples (gpu.jsonl)", minimum=10),
    _k("train", "eval", bool, True, "evaluate on the test split at the end"),
    _k("train", "task", str, "beat", "fine-tune labels: beat classes or rhythm classes", choices=TASKS),
    _k("train", "init_checkpoint", str, None, "weights to start from (a fine-tune: its foundation's model.pt)"),
    _k("train", "mask_ratio", float, 0.15, "foundation: share of tokens masked, in (0, 1)", minimum=0),
    _k("train", "mask_span", int, 8, "foundation: tokens per masked span", minimum=1),
    _k("train", "num_workers", int, None, "DataLoader workers (default: cpus_per_task - 1)", minimum=0),
    _k("train", "grad_clip", float, 1.0, "gradient norm clip (0 = off)", minimum=0),
    _k("train", "class_weights", str, "balanced", "fine-tune loss weights per class", choices=CLASS_WEIGHTS),
    _k("train", "val_fraction", float, 0.0, "fine-tune: share of training patients held out for validation",
       minimum=0),
    _k("train", "val_every", int, 200, "fine-tune: validate every this many steps (and after the last)",
       minimum=1),
    _k("train", "patience", int, 0, "fine-tune: stop after this many validations without a better macro-F1 "
       "(0 = never)", minimum=0),
    _k("train", "bucket_cap_mb", float, None, "DDP gradient bucket size in MB (default: DDP's 25)", minimum=0),
    # torch.profiler, torchtitan-style: cycles of wait, warmup and active steps (torch.profiler.schedule), each
    # recorded into traces/ per rank; unset profile_active = no profiler at all (docs/training.md, "Profiling")
    _k("train", "profile_active", int, None, "torch.profiler: steps recorded per cycle into traces/ of the run "
       "directory, one Chrome trace per rank (default: no profiling)", minimum=1),
    _k("train", "profile_wait", int, None, "torch.profiler: steps left alone before each cycle (default 1: the "
       "first step holds loader start and compilation)", minimum=0),
    _k("train", "profile_warmup", int, None, "torch.profiler: steps run under the profiler and discarded before "
       "the recorded ones (default 1)", minimum=0),
    _k("train", "profile_repeat", int, None, "torch.profiler: cycles to record (default 1; 0 = until the run "
       "ends)", minimum=0),
    # test hooks: make one rank slower by a host sleep inside each step's compute (a known straggler)
    _k("train", "test_slow_rank", int, None, "test only: the rank that sleeps", study=False, flag=False),
    _k("train", "test_slow_step_s", float, 0.0, "test only: its sleep per step", minimum=0, study=False,
       flag=False),
)

BY_NAME: dict[str, ConfigKey] = {k.name: k for k in KEYS}
DEFAULTS: dict[str, Any] = {k.name: k.default for k in KEYS}


def section_keys(section: str, *, study: bool | None = None) -> list[ConfigKey]:
    """The keys of one study table ("model" or "train"), optionally only those a study may set."""
    return [k for k in KEYS if k.section == section and (study is None or k.study == study)]
