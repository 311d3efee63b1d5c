"""Training settings: config.json (plus command-line overrides) validated into one typed object.

Every optional key has a default so that an older or hand-written config still runs; every present key is
checked, and a bad one is reported with its dotted path and what was expected (exit code 2).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from trainer.config_keys import DEFAULTS as _D
from trainer.config_keys import KEYS
from trainer.environment import slurm_cpus_per_task


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
    # model and training keys: defaults from trainer.config_keys (the table the study and the CLI share)
    mode: str = _D["mode"]
    window: int = _D["window"]
    precision: str = _D["precision"]
    batch_size: int = _D["batch_size"]
    cpus_per_task: int | None = _D["cpus_per_task"]
    gpus_per_node: int = 1
    nodes: int = 1
    layers: int = _D["layers"]
    d_model: int = _D["d_model"]
    heads: int = _D["heads"]
    dropout: float = _D["dropout"]
    context: str = _D["context"]
    waveform: str = _D["waveform"]
    pool: str = _D["pool"]
    steps: int | None = _D["steps"]
    epochs: float | None = _D["epochs"]
    lr: float = _D["lr"]
    weight_decay: float = _D["weight_decay"]
    warmup_steps: int = _D["warmup_steps"]
    seed: int = _D["seed"]
    grad_accum: int = _D["grad_accum"]
    compile: bool = _D["compile"]
    device: str = _D["device"]
    metrics_interval_s: float = _D["metrics_interval_s"]
    nvml_interval_ms: int = _D["nvml_interval_ms"]
    eval: bool = _D["eval"]
    task: str = _D["task"]
    init_checkpoint: str | None = _D["init_checkpoint"]
    mask_ratio: float = _D["mask_ratio"]
    mask_span: int = _D["mask_span"]
    num_workers: int | None = _D["num_workers"]
    grad_clip: float = _D["grad_clip"]
    class_weights: str = _D["class_weights"]
    val_fraction: float = _D["val_fraction"]
    val_every: int = _D["val_every"]
    patience: int = _D["patience"]
    bucket_cap_mb: float | None = _D["bucket_cap_mb"]
    profile_active: int | None = _D["profile_active"]
    profile_wait: int | None = _D["profile_wait"]
    profile_warmup: int | None = _D["profile_warmup"]
    profile_repeat: int | None = _D["profile_repeat"]
    test_slow_rank: int | None = _D["test_slow_rank"]
    test_slow_step_s: float = _D["test_slow_step_s"]
    synthetic_params: dict[str, Any] | None = None
    skip_bad_records: bool = False  # leave bad records out (listed in the manifest and train.log) instead of failing
    split: dict[str, Any] | None = None  # {test_records: [...]} or {patient_pattern: "..."}; None: the default

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
        return slurm_cpus_per_task() or 1

    @property
    def loader_workers(self) -> int:
        """DataLoader worker processes: one core stays with the training process."""
        if self.num_workers is not None:
            return self.num_workers
        return max(0, self.cpus - 1)

    @property
    def threads(self) -> int:
        """Intra-op threads of the training process: the cores of the task not given to loader workers."""
        return max(1, self.cpus - self.loader_workers)


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
    s.gpus_per_node = _get(config, "gpus_per_node", int, top, 1)
    s.nodes = _get(config, "nodes", int, top, 1)
    sections = {"model": model, "train": train}
    for k in KEYS:  # the model and training keys, as trainer.config_keys declares them
        where = top if k.top_level else f"{top}: {k.section}"
        value = _get(config if k.top_level else sections[k.section], k.name, k.kind, where, k.default)
        if value is not None and k.choices is not None:
            _choice(value, k.choices, f"{where}.{k.name}" if not k.top_level else f"{top}: {k.name}")
        if value is not None and k.minimum is not None and value < k.minimum:
            what = "an integer" if k.kind is int else "a number"
            raise ConfigError(f"{where}.{k.name}: expected {what} >= {k.minimum:g}, got {value}")
        setattr(s, k.name, value)
    known = {k.dest for k in KEYS}
    unknown = sorted(f"{name}.{key}" for name, values in sections.items() for key in values)
    unknown = [dotted for dotted in unknown if dotted not in known]
    if unknown:
        raise ConfigError(f"{top}: {unknown[0]}: not a key the trainer knows (see trainer/config_keys.py)")
    s.synthetic_params = _get(config, "synthetic_params", dict, top, None)
    s.skip_bad_records = _get(config, "skip_bad_records", bool, top, False)
    s.split = _split(_get(config, "split", dict, top, None), top)
    if s.bucket_cap_mb is not None and s.bucket_cap_mb <= 0:
        raise ConfigError(f"{top}: train.bucket_cap_mb: expected a number > 0, got {s.bucket_cap_mb}")
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
    if not 0.0 <= s.val_fraction < 1.0:
        raise ConfigError(f"{source}: train.val_fraction: expected a number in [0, 1), got {s.val_fraction}")
    if s.val_every < 1:
        raise ConfigError(f"{source}: train.val_every: expected an integer >= 1, got {s.val_every}")
    if s.patience < 0:
        raise ConfigError(f"{source}: train.patience: expected an integer >= 0 (0 = never stop early), "
                          f"got {s.patience}")
