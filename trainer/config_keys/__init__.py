"""Every key a study can say, declared once: type, default, bounds, unit, help, and for a sweep axis how it
shows (table column, filter names, configuration label). torchtitan keeps one JobConfig; this is ours.

The trainer's own sections ([model], [train] and the sweep axes) are dataclasses whose fields carry their rules
(`key(...)`): `trainer.settings.Settings` nests them, typed, and `trainer.model.ModelConfig` takes the [model]
table's defaults. The rest of a study file ([study], [cluster], [data], a dataset's table, a tokenizer table)
are tables of the same `ConfigKey`. Everything else is derived from here: the study spec (cockpit.study.spec), the
plan, config.json (trainer.settings), the flags of `hlm-train train` and `prepare` (trainer.config_flags), the
configuration label, the TUI's and the report's columns and the filter's field names. A value is judged by
one function, `ConfigKey.problem`, on the laptop and in the trainer, in the same words. Pure Python (the
cockpit imports it; no torch).

Long because it is a table, one entry per key; the machinery above the tables is short.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from trainer.config_keys.key import (
    _WORDS,
    ANNOTATOR_PREFERENCE,
    CLASS_WEIGHTS,
    CONTEXTS,
    DEVICES,
    EFFECT_MODELS,
    FLOOR,
    MODES,
    N_SPECIAL,
    NAMES_RUN,
    NEUTRAL,
    NOT_PREDICTED,
    POOLS,
    PRECISIONS,
    RECORDED,
    STRATEGIES,
    STRATEGY_SHARDS,
    TASKS,
    TOKENIZERS,
    WAVEFORMS,
    Axis,
    ConfigKey,
    Effect,
    _finite_number,
    _kind,
    judge_table,
    key,
    keys_of,
    nearest,
    sensitivity_floors,
)
from trainer.config_keys.sections import (
    _TOKENIZER,
    NOISE_KEYS,
    TOKENIZER_KEYS,
    AxisKeys,
    DataKeys,
    ModelKeys,
    PreflightKeys,
    RunKeys,
    TrainKeys,
    _folders,
    _is_annotator,
    _preflight_datasets,
    _preflight_files,
    is_group_name,
)
from trainer.config_keys.study_tables import (
    _SPLIT,
    CLUSTER_KEYS,
    DATA_KEYS,
    DATASET_KEYS,
    SITE_KEYS,
    SPLIT_KEYS,
    STUDY_KEYS,
    ClusterKeys,
    SiteKeys,
    _env_values,
    _minutes,
    _strings,
)

# --- derived ---------------------------------------------------------------------------------------------

# an axis a study may default in [train] has section "train"; dataset, gpus_per_node and nodes only [sweep]
AXIS_KEYS = tuple(replace(k, section="train" if k.study else "sweep") for k in keys_of("", AxisKeys, top_level=True))
KEYS: tuple[ConfigKey, ...] = (*keys_of("model", ModelKeys), *AXIS_KEYS, *keys_of("train", TrainKeys))
BY_NAME: dict[str, ConfigKey] = {k.name: k for k in KEYS}
DEFAULTS: dict[str, Any] = {k.name: k.default for k in KEYS}
AXES: tuple[str, ...] = tuple(k.name for k in AXIS_KEYS)
SCALE_AXES: tuple[str, ...] = tuple(k.name for k in AXIS_KEYS if k.axis and k.axis.scale)
AXIS: dict[str, Axis] = {k.name: k.axis for k in AXIS_KEYS if k.axis}
TOKENIZER: dict[str, ConfigKey] = {k.name: k for k in TOKENIZER_KEYS}
# the order a configuration is shown in (its label, the tables' identity columns): "scale" = nodes x workers
LABEL_ORDER = ("dataset", "mode", "window", "scale", "cpus_per_task", "precision", "batch_size", "strategy")
assert set(LABEL_ORDER) - {"scale"} == set(AXES) - set(SCALE_AXES), "every axis has its place in LABEL_ORDER"


CONFIG_DATA_KEYS = keys_of("data", DataKeys, top_level=True)  # config.json's data keys, beside "model" and "train"
TRAINER_KEYS: tuple[ConfigKey, ...] = (*keys_of("run", RunKeys, top_level=True), *CONFIG_DATA_KEYS, *KEYS)
# config.json's keys by where it holds them ("batch_size", "train.lr", "tokenizer") and what the prediction does
# with each (cockpit.forecast.advice.effects reads it; a table inside a key, "tokenizer.vocab", is its key's)
EFFECTS: dict[str, Effect] = {k.dest: k.effect for k in TRAINER_KEYS if k.effect is not None}


PREFLIGHT_KEYS = keys_of("preflight", PreflightKeys, top_level=True, study=False, flag="")


def check_preflight_config(config: Any, source: str, error: type[Exception]) -> dict[str, Any]:
    """A preflight's config.json judged by PREFLIGHT_KEYS (unknown keys refused with the nearest, each value by its
    rule), its defaults filled in; raises `error` naming the file and the key."""
    if not isinstance(config, dict):
        raise error(f"{source}: expected a JSON object, got {type(config).__name__}")
    return judge_table(source, "preflight", config, {k.name: k for k in PREFLIGHT_KEYS}, error)


def section_keys(section: str, *, study: bool | None = None) -> list[ConfigKey]:
    """The keys of one study table ("model" or "train"), optionally only those a study may set."""
    return [k for k in KEYS if k.section == section and (study is None or k.study == study)]


def toml_value(value: Any) -> str:
    """A value as a study file (and `--what-if`, and docs/study-keys.md) writes it: `"fp32"`, `true`,
    `0.0003`, `5.0`, `[1, 2]`, `{a = 1}`; "unset" for None (a key a study does not set)."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, float):
        return f"{value:g}" if value == value and not value.is_integer() else f"{value:.1f}"
    return str(value)


def tokenizer_defaults(name: str) -> dict[str, Any]:
    """Every parameter of one tokenizer with its default."""
    return {k.name: k.default for k in TOKENIZER_KEYS if name in k.tokenizers}


def shows(axis: ConfigKey, values: Mapping[str, Any]) -> bool:
    """Whether an axis enters a configuration's id and label: a core axis always; an axis added later only when
    the configuration sets it away from its default (absent, as in a store written before it existed, is the
    default)."""
    assert axis.axis is not None, f"{axis.name} is not a sweep axis"
    return axis.axis.core or values.get(axis.name, axis.default) != axis.default


def unread(axis: ConfigKey, values: Mapping[str, Any]) -> bool:
    """Whether a configuration's program never reads the axis: the HLM's own axes (dataset, mode, window:
    Axis.hlm) in a configuration of another workload (`values["workload"]`, its kind; absent: the HLM
    trainer's), which runs with them at their defaults."""
    return axis.axis is not None and axis.axis.hlm and values.get("workload", "hlm") != "hlm"


def labelled(axis: ConfigKey, values: Mapping[str, Any]) -> bool:
    """Whether an axis has a word in a configuration's label and a column in its tables: as it `shows`, unless
    the configuration's program never reads it (`unread`)."""
    return not unread(axis, values) and shows(axis, values)


def id_values(values: Mapping[str, Any], axes: tuple[ConfigKey, ...] = AXIS_KEYS) -> dict[str, Any]:
    """The axis values a configuration id digests (cockpit.study.spec.Configuration.config_id): every core axis and
    each later axis set away from its default."""
    return {k.name: values[k.name] for k in axes if shows(k, values)}


def label_words(values: Mapping[str, Any]) -> dict[str, str]:
    """The configuration label's words by part (LABEL_ORDER): {"window": "w256", "scale": "1x2", ...}; a
    missing core axis shows as '?', a missing scale axis as 1 (a stored configuration may lack one); a later
    axis at its default shows no word (`shows`)."""
    def tag(name: str) -> str:
        if name == "scale":
            return "x".join(str(values.get(a, 1)) for a in reversed(SCALE_AXES))
        return AXIS[name].tag.format(values.get(name, "?"))

    return {name: tag(name) for name in LABEL_ORDER if name == "scale" or labelled(BY_NAME[name], values)}


def config_label(values: Mapping[str, Any]) -> str:
    """Short human name of a configuration, every axis in it: `mitdb foundation w256 1x2 c4 bf16 b32`.
    The one label of the plan, the batch scripts, the TUI and the headless run. A script workload's own keys
    follow as the analysis words them (`values["keys"]`: `lr=0.1 pin_memory=true`)."""
    keys = values.get("keys")
    return " ".join([*label_words(values).values(), *([keys] if isinstance(keys, str) and keys else [])])


def check_model(values: Mapping[str, Any]) -> str | None:
    """The [model] rule across keys: None, or what is wrong, in the words spec and trainer share."""
    if values["d_model"] % values["heads"]:
        return f"model.d_model ({values['d_model']}) must be divisible by model.heads ({values['heads']})"
    return None


def check_train(values: Mapping[str, Any]) -> str | None:
    """The [train] rule across keys: a fixed amount of work to time."""
    given = [name for name in ("steps", "epochs") if values.get(name) is not None]
    if len(given) != 1:
        return f"train: give exactly one of steps or epochs ({'both are' if given else 'neither is'} set)"
    if values.get("val_fraction") and values.get("val_records"):
        return ("train: give one of val_fraction (a share of the training patients) or val_records (the patients by "
                f"name), not both; found val_fraction = {values.get('val_fraction')}, val_records = "
                f"{values.get('val_records')}")
    validates = bool(values.get("val_fraction") or values.get("val_records"))
    if values.get("calibrate") and (not validates or values.get("class_weights") == "none"):
        return ("train.calibrate: needs a validation part to choose on (train.val_fraction > 0 or train.val_records) "
                "and class weights to undo (train.class_weights other than 'none'); found val_fraction = "
                f"{values.get('val_fraction')}, val_records = {values.get('val_records')}, "
                f"class_weights = {values.get('class_weights')!r}")
    if values.get("calibrate_min_sensitivity") and not values.get("calibrate"):
        return ("train.calibrate_min_sensitivity: floors for the calibration's choice, so it needs train.calibrate = "
                f"true; found calibrate = {values.get('calibrate')}")
    if values.get("af_group") and values.get("class_weights") == "none":
        return ("train.af_group: gives N beats inside atrial fibrillation a class weight of their own, so it needs "
                "class weights (train.class_weights other than 'none'); found class_weights = 'none'")
    return None



__all__ = ["ANNOTATOR_PREFERENCE", "AXES", "AXIS", "AXIS_KEYS", "Axis", "AxisKeys", "BY_NAME", "CLASS_WEIGHTS", "CLUSTER_KEYS", "CONFIG_DATA_KEYS", "CONTEXTS", "ClusterKeys", "ConfigKey", "DATASET_KEYS", "DATA_KEYS", "DEFAULTS", "DEVICES", "DataKeys", "EFFECTS", "EFFECT_MODELS", "Effect", "FLOOR", "KEYS", "LABEL_ORDER", "MODES", "ModelKeys", "NAMES_RUN", "NEUTRAL", "NOISE_KEYS", "NOT_PREDICTED", "N_SPECIAL", "POOLS", "PRECISIONS", "PREFLIGHT_KEYS", "PreflightKeys", "RECORDED", "RunKeys", "SCALE_AXES", "SITE_KEYS", "SPLIT_KEYS", "STRATEGIES", "STRATEGY_SHARDS", "STUDY_KEYS", "SiteKeys", "TASKS", "TOKENIZER", "TOKENIZERS", "TOKENIZER_KEYS", "TRAINER_KEYS", "TrainKeys", "WAVEFORMS", "_SPLIT", "_TOKENIZER", "_WORDS", "_env_values", "_finite_number", "_folders", "_is_annotator", "_kind", "_minutes", "_preflight_datasets", "_preflight_files", "_strings", "check_model", "check_preflight_config", "check_train", "config_label", "id_values", "is_group_name", "judge_table", "key", "keys_of", "label_words", "labelled", "nearest", "section_keys", "sensitivity_floors", "shows", "tokenizer_defaults", "toml_value", "unread"]
