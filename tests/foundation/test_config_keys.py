"""One registry of keys (trainer.config_keys): the study file, the trainer's config.json reader (a nested,
typed Settings) and `hlm-train train` accept every key, with the same defaults."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cockpit.study.spec import SpecError, parse_study
from cockpit.study.spec_rules import SECTIONS
from runcontract.keys import ConfigKey
from tests.studies import study_raw
from trainer.commands.cli import TRAIN_KEYS, build_config, parser
from trainer.config_keys import KEYS
from trainer.settings import SECTION_OF, Settings, from_config

SAMPLES: dict[str, Any] = {"d_model": 16, "heads": 2, "window": 64, "layers": 2, "init_checkpoint": "/w/model.pt",
                           "class_weights": "sqrt",  # calibrate (sampled true) needs weights to undo
                           "augment_noise_db": [12.0, 6.0],
                           # one of the two validation parts: the named one (val_fraction keeps its default 0)
                           "val_records": ["201", "svdb/854"], "val_fraction": 0.0,
                           "calibrate_min_sensitivity": ["S=0.8", "V=0.9"]}


def sample(k: ConfigKey) -> Any:
    """A valid value of the key that differs from its default."""
    if k.name in SAMPLES:
        return SAMPLES[k.name]
    if k.choices:
        return next(c for c in reversed(k.choices) if c != k.default)
    if k.kind == (bool,):
        return not k.default
    if k.kind == (int,):
        return int(max(k.minimum or 0, k.default or 0)) + 2
    if k.kind == (float,):
        return 0.25 if k.default != 0.25 else 0.5
    return "x"


def _values(section: str, *, study_only: bool, skip: str = "epochs") -> dict[str, Any]:
    return {k.name: sample(k) for k in KEYS if k.section == section and k.name != skip and (k.study or not study_only)}


def test_the_study_accepts_every_key_with_the_tables_defaults(tmp_path: Path):
    for section in ("model", "train"):
        declared = {k.name: k.default for k in KEYS if k.section == section and k.study}
        assert declared
        assert {name: key.default for name, key in SECTIONS[section].items()} == declared
    for skip in ("epochs", "steps"):
        raw = study_raw("keys", tmp_path, cluster={"cores_per_node": 4}, model=_values("model", study_only=True),
                        train={**_values("train", study_only=True, skip=skip), skip: None}, sweep={})
        study = parse_study(raw, tmp_path / "keys.toml")
        config = study.run_config(study.matrix()[0])
        for k in KEYS:
            if k.study and k.name != skip:
                held = config[k.name] if k.top_level else config[k.section][k.name]
                assert held == sample(k), k.name
    with pytest.raises(SpecError, match=r"\[train\]\.test_slow_rank is not a known key"):
        parse_study(study_raw("keys", tmp_path, train={"test_slow_rank": 1}), tmp_path / "keys.toml")


def _held(s: Settings, name: str) -> Any:
    """A key's value in the nested settings: `s.axes.window`, `s.train.lr`."""
    return getattr(getattr(s, SECTION_OF[name]), name)


def test_the_trainer_reads_every_key_and_applies_the_tables_defaults(tmp_path: Path):
    defaults = from_config(tmp_path, {"train": {"steps": 1}})
    for k in KEYS:
        if k.name not in ("steps", "dataset"):  # a standalone run's dataset is named after its data folder
            assert _held(defaults, k.name) == k.default, k.name
            assert _held(Settings(run_dir=tmp_path), k.name) == k.default, k.name
    config: dict[str, Any] = {"model": _values("model", study_only=False), "train": {}}
    for k in KEYS:
        if (k.section == "train" or k.top_level) and k.name != "epochs":
            (config if k.top_level else config["train"])[k.name] = sample(k)
    s = from_config(tmp_path, config)
    assert {k.name: _held(s, k.name) for k in KEYS if k.name != "epochs"} == {
        k.name: sample(k) for k in KEYS if k.name != "epochs"}
    from trainer.settings import ConfigError

    with pytest.raises(ConfigError, match=r"train\.learning_rate: not a key the trainer knows"):
        from_config(tmp_path, {"train": {"steps": 1, "learning_rate": 1.0}})


def test_hlm_train_has_a_flag_for_every_key(tmp_path: Path):
    flagged = [k for k in KEYS if k.flag != ""]
    assert {k.name for k in flagged} <= {k.name for k in TRAIN_KEYS}
    argv = ["train", "--run-dir", str(tmp_path)]
    for k in flagged:
        if k.name == "epochs":
            continue
        flag = "--" + k.name.replace("_", "-")
        value = sample(k)
        if k.kind == (bool,):
            argv.append(flag if value else f"--no-{k.name.replace('_', '-')}")
        else:
            argv += [flag, *map(str, value if isinstance(value, list) else [value])]
    config, fresh = build_config(parser().parse_args(argv))
    assert fresh
    for k in flagged:
        if k.name != "epochs":
            held = config[k.name] if k.top_level else config[k.section][k.name]
            assert held == sample(k), k.name
    assert from_config(tmp_path, config).model.d_model == SAMPLES["d_model"]
