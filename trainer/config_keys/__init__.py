"""The HLM trainer's keys, declared once: [model], [train], config.json's run identity and data keys, the
tokenizer table, [data] and a dataset's table, and a preflight's config.json, each with its type, default,
bounds, unit, help and effect on the prediction (runcontract.keys says what a key is; the sweep axes every run
records are runcontract.axes'). torchtitan keeps one JobConfig; this is ours.

The sections are dataclasses whose fields carry their rules (`key(...)`): `trainer.settings.Settings` nests them,
typed, and `trainer.model.ModelConfig` takes the [model] table's defaults. The cockpit reaches them through the
HLM workload's package (cockpit.workloads.hlm) and the study rules. Pure Python (no torch).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runcontract.axes import AXIS_KEYS
from runcontract.keys import ConfigKey, Effect, judge_table, keys_of
from trainer.config_keys.choices import (
    ANNOTATOR_PREFERENCE,
    CLASS_WEIGHTS,
    CONTEXTS,
    DEVICES,
    FLOOR,
    N_SPECIAL,
    POOLS,
    TASKS,
    TOKENIZERS,
    WAVEFORMS,
    sensitivity_floors,
)
from trainer.config_keys.data_tables import _SPLIT, DATA_KEYS, DATASET_KEYS, SPLIT_KEYS
from trainer.config_keys.sections import (
    _TOKENIZER,
    NOISE_KEYS,
    TOKENIZER_KEYS,
    DataKeys,
    ModelKeys,
    PreflightKeys,
    RunKeys,
    TrainKeys,
    _folders,
    _is_annotator,
    _preflight_datasets,
    _preflight_files,
)

# --- derived ---------------------------------------------------------------------------------------------

KEYS: tuple[ConfigKey, ...] = (*keys_of("model", ModelKeys), *AXIS_KEYS, *keys_of("train", TrainKeys))
BY_NAME: dict[str, ConfigKey] = {k.name: k for k in KEYS}
DEFAULTS: dict[str, Any] = {k.name: k.default for k in KEYS}
TOKENIZER: dict[str, ConfigKey] = {k.name: k for k in TOKENIZER_KEYS}


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


def tokenizer_defaults(name: str) -> dict[str, Any]:
    """Every parameter of one tokenizer with its default."""
    return {k.name: k.default for k in TOKENIZER_KEYS if name in k.tokenizers}


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



__all__ = ["ANNOTATOR_PREFERENCE", "BY_NAME", "CLASS_WEIGHTS", "CONFIG_DATA_KEYS", "CONTEXTS", "DATASET_KEYS", "DATA_KEYS", "DEFAULTS", "DEVICES", "DataKeys", "EFFECTS", "FLOOR", "KEYS", "ModelKeys", "NOISE_KEYS", "N_SPECIAL", "POOLS", "PREFLIGHT_KEYS", "PreflightKeys", "RunKeys", "SPLIT_KEYS", "TASKS", "TOKENIZER", "TOKENIZERS", "TOKENIZER_KEYS", "TRAINER_KEYS", "TrainKeys", "WAVEFORMS", "_SPLIT", "_TOKENIZER", "_folders", "_is_annotator", "_preflight_datasets", "_preflight_files", "check_model", "check_preflight_config", "check_train", "section_keys", "sensitivity_floors", "tokenizer_defaults"]
