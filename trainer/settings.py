"""Training settings: config.json (plus command-line overrides) validated into one typed object.

Every optional key has a default so that an older or hand-written config still runs; every present key is
checked, and a bad one is reported with its dotted path and what was expected (exit code 2).
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

MODES = ("foundation", "finetune")
PRECISIONS = ("fp32", "bf16", "fp16")
DEVICES = ("auto", "cpu", "cuda")
TASKS = ("beat", "rhythm")


class ConfigError(ValueError):
    """A config value is missing or wrong; the message names the file and the dotted key."""


@dataclass
class Settings:
    """Everything one training run needs, after defaults and validation."""

    run_dir: Path
    config: dict[str, Any] = field(default_factory=dict)  # the raw config, echoed into result.json
    study: str = ""
    config_id: str = "standalone"
    group_id: str = "standalone"
    dataset: str = "synthetic"
    data_path: str | None = None
    tokenizer: dict[str, Any] = field(default_factory=lambda: {"name": "samples"})
    token_cache: str | None = None
    prepare_workers: int = 1
    mode: str = "foundation"
    window: int = 256
    precision: str = "fp32"
    batch_size: int = 16
    cpus_per_task: int | None = None
    gpus_per_node: int = 1
    nodes: int = 1
    layers: int = 4
    d_model: int = 256
    heads: int = 4
    dropout: float = 0.0
    steps: int | None = None
    epochs: float | None = None
    lr: float = 3e-4
    weight_decay: float = 0.01
    warmup_steps: int = 0
    seed: int = 0
    grad_accum: int = 1
    compile: bool = False
    device: str = "auto"
    metrics_interval_s: float = 10.0
    nvml_interval_ms: int = 1000
    eval: bool = True
    task: str = "beat"
    init_checkpoint: str | None = None
    mask_ratio: float = 0.15
    mask_span: int = 8
    num_workers: int | None = None
    grad_clip: float = 1.0
    class_weights: str = "balanced"
    bucket_cap_mb: float | None = None  # DDP gradient bucket size; None = DDP's default (25 MB)
    synthetic_params: dict[str, Any] | None = None
    skip_bad_records: bool = False  # leave bad records out (listed in the manifest and train.log) instead of failing
    split: dict[str, Any] | None = None  # {test_records: [...]} or {patient_pattern: "..."}; None: the default
    # test-only: make one rank slower by a host sleep inside each step's compute (a known straggler)
    test_slow_rank: int | None = None
    test_slow_step_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["run_dir"] = str(self.run_dir)
        out.pop("config")
        return out

    @property
    def cpus(self) -> int:
        """CPU cores of this process: the config, else SLURM_CPUS_PER_TASK, else 1."""
        if self.cpus_per_task:
            return self.cpus_per_task
        env = os.environ.get("SLURM_CPUS_PER_TASK", "")
        return int(env) if env.isdigit() and int(env) > 0 else 1

    @property
    def loader_workers(self) -> int:
        """DataLoader worker processes: one core stays with the training process."""
        if self.num_workers is not None:
            return self.num_workers
        return max(0, self.cpus - 1)


def _get(section: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str, default: Any) -> Any:
    if key not in section or section[key] is None:
        return default
    value = section[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if float in kinds and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if isinstance(value, bool) and bool not in kinds:
        raise ConfigError(f"{where}.{key}: expected {_names(kinds)}, got {value!r}")
    if not isinstance(value, kinds):
        raise ConfigError(f"{where}.{key}: expected {_names(kinds)}, got {value!r}")
    return value


def _names(kinds: tuple[type, ...]) -> str:
    return " or ".join(k.__name__ for k in kinds)


def _choice(value: str, choices: tuple[str, ...], where: str) -> str:
    if value not in choices:
        raise ConfigError(f"{where}: expected one of {', '.join(choices)}, got {value!r}")
    return value


def from_config(run_dir: Path, config: dict[str, Any], source: str = "config.json") -> Settings:
    """Validate a config.json dict into Settings; errors read like `config.json: train.lr: ...`."""
    if not isinstance(config, dict):
        raise ConfigError(f"{source}: expected a JSON object")
    top = source
    model = _get(config, "model", dict, top, {})
    train = _get(config, "train", dict, top, {})
    tok = _get(config, "tokenizer", dict, top, {"name": "samples"})
    s = Settings(run_dir=Path(run_dir), config=config)
    s.study = _get(config, "study", str, top, s.study)
    s.config_id = _get(config, "config_id", str, top, s.config_id)
    s.group_id = _get(config, "group_id", str, top, s.group_id)
    s.data_path = _get(config, "data_path", str, top, None)
    s.dataset = _get(config, "dataset", str, top, Path(s.data_path).name if s.data_path else s.dataset)
    s.tokenizer = tok
    s.token_cache = _get(config, "token_cache", str, top, None)
    s.prepare_workers = _get(config, "prepare_workers", int, top, 1)
    s.mode = _choice(_get(config, "mode", str, top, s.mode), MODES, f"{top}: mode")
    s.window = _get(config, "window", int, top, s.window)
    s.precision = _choice(_get(config, "precision", str, top, s.precision), PRECISIONS, f"{top}: precision")
    s.batch_size = _get(config, "batch_size", int, top, s.batch_size)
    s.cpus_per_task = _get(config, "cpus_per_task", int, top, None)
    s.gpus_per_node = _get(config, "gpus_per_node", int, top, 1)
    s.nodes = _get(config, "nodes", int, top, 1)
    m = f"{top}: model"
    s.layers = _get(model, "layers", int, m, s.layers)
    s.d_model = _get(model, "d_model", int, m, s.d_model)
    s.heads = _get(model, "heads", int, m, s.heads)
    s.dropout = _get(model, "dropout", float, m, s.dropout)
    t = f"{top}: train"
    s.steps = _get(train, "steps", int, t, None)
    s.epochs = _get(train, "epochs", float, t, None)
    s.lr = _get(train, "lr", float, t, s.lr)
    s.weight_decay = _get(train, "weight_decay", float, t, s.weight_decay)
    s.warmup_steps = _get(train, "warmup_steps", int, t, 0)
    s.seed = _get(train, "seed", int, t, 0)
    s.grad_accum = _get(train, "grad_accum", int, t, 1)
    s.compile = _get(train, "compile", bool, t, False)
    s.device = _choice(_get(train, "device", str, t, "auto"), DEVICES, f"{t}.device")
    s.metrics_interval_s = _get(train, "metrics_interval_s", float, t, s.metrics_interval_s)
    s.nvml_interval_ms = _get(train, "nvml_interval_ms", int, t, s.nvml_interval_ms)
    s.eval = _get(train, "eval", bool, t, True)
    s.task = _choice(_get(train, "task", str, t, "beat"), TASKS, f"{t}.task")
    s.init_checkpoint = _get(train, "init_checkpoint", str, t, None)
    s.mask_ratio = _get(train, "mask_ratio", float, t, s.mask_ratio)
    s.mask_span = _get(train, "mask_span", int, t, s.mask_span)
    s.num_workers = _get(train, "num_workers", int, t, None)
    s.grad_clip = _get(train, "grad_clip", float, t, s.grad_clip)
    s.class_weights = _choice(_get(train, "class_weights", str, t, s.class_weights), ("balanced", "none"),
                              f"{t}.class_weights")
    s.synthetic_params = _get(config, "synthetic_params", dict, top, None)
    s.skip_bad_records = _get(config, "skip_bad_records", bool, top, False)
    s.split = _split(_get(config, "split", dict, top, None), top)
    s.bucket_cap_mb = _get(train, "bucket_cap_mb", float, t, None)
    s.test_slow_rank = _get(train, "test_slow_rank", int, t, None)
    s.test_slow_step_s = _get(train, "test_slow_step_s", float, t, 0.0)
    if s.bucket_cap_mb is not None and s.bucket_cap_mb <= 0:
        raise ConfigError(f"{t}.bucket_cap_mb: expected a number > 0, got {s.bucket_cap_mb}")
    validate(s, source)
    return s


def _split(options: dict[str, Any] | None, top: str) -> dict[str, Any] | None:
    """The split options, checked by the data package's own rules (messages name the key)."""
    from trainer.data.errors import DataError
    from trainer.data.splits import check_options

    try:
        return check_options(options) or None
    except DataError as exc:
        raise ConfigError(f"{top}: {exc}") from None


def validate(s: Settings, source: str = "config.json") -> None:
    """Range checks shared by config files and command-line flags."""
    positive = {
        "window": s.window, "batch_size": s.batch_size, "gpus_per_node": s.gpus_per_node, "nodes": s.nodes,
        "model.layers": s.layers, "model.d_model": s.d_model, "model.heads": s.heads,
        "train.grad_accum": s.grad_accum, "train.mask_span": s.mask_span, "prepare_workers": s.prepare_workers,
        "train.nvml_interval_ms": s.nvml_interval_ms,
    }
    for key, value in positive.items():
        if value < 1:
            raise ConfigError(f"{source}: {key}: expected an integer >= 1, got {value}")
    if s.cpus_per_task is not None and s.cpus_per_task < 1:
        raise ConfigError(f"{source}: cpus_per_task: expected an integer >= 1, got {s.cpus_per_task}")
    if s.num_workers is not None and s.num_workers < 0:
        raise ConfigError(f"{source}: train.num_workers: expected an integer >= 0, got {s.num_workers}")
    if s.d_model % s.heads:
        raise ConfigError(f"{source}: model.d_model ({s.d_model}) must be divisible by model.heads ({s.heads})")
    if not 0.0 <= s.dropout < 1.0:
        raise ConfigError(f"{source}: model.dropout: expected a number in [0, 1), got {s.dropout}")
    if (s.steps is None) == (s.epochs is None):
        raise ConfigError(f"{source}: train: give exactly one of steps or epochs (got steps={s.steps}, "
                          f"epochs={s.epochs})")
    if s.steps is not None and s.steps < 1:
        raise ConfigError(f"{source}: train.steps: expected an integer >= 1, got {s.steps}")
    if s.epochs is not None and not 0 < s.epochs < math.inf:
        raise ConfigError(f"{source}: train.epochs: expected a number > 0, got {s.epochs}")
    if not s.lr > 0 or math.isnan(s.lr):
        raise ConfigError(f"{source}: train.lr: expected a number > 0, got {s.lr}")
    if s.weight_decay < 0 or s.warmup_steps < 0:
        raise ConfigError(f"{source}: train.weight_decay and train.warmup_steps must be >= 0")
    if not 0.0 < s.mask_ratio < 1.0:
        raise ConfigError(f"{source}: train.mask_ratio: expected a number in (0, 1), got {s.mask_ratio}")
    if s.metrics_interval_s <= 0:
        raise ConfigError(f"{source}: train.metrics_interval_s: expected a number > 0, got {s.metrics_interval_s}")
    if s.test_slow_step_s < 0:
        raise ConfigError(f"{source}: train.test_slow_step_s: expected a number >= 0, got {s.test_slow_step_s}")
    if s.grad_clip < 0:
        raise ConfigError(f"{source}: train.grad_clip: expected a number >= 0 (0 = off), got {s.grad_clip}")
