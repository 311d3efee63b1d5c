"""A study's dataset may train on further databases (`train_data`, as `hlm-train --train-data` does): the study
file resolves the folders, config.json carries them, the trainer's settings accept them; a mistake is one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cockpit.study.spec import SpecError, load_study
from runcontract.contract import SCHEMA_VERSION
from tests.studies import PHYSIONET as DATA
from tests.studies import write_study
from trainer.settings import from_config


def _study(tmp_path: Path, dataset: dict[str, Any]) -> Path:
    return write_study(tmp_path / "study.toml", "mixed", "work",
                       data={"tokenizer": {"fs": 180}, "datasets": {"mitdb": dataset}},
                       train={"steps": 10}, sweep={"dataset": ["mitdb"], "mode": ["finetune"]})


def test_train_data_reaches_config_json_resolved(tmp_path: Path) -> None:
    study = load_study(_study(tmp_path, {"path": str(DATA / "mitdb"), "train_data": [str(DATA / "svdb")]}))
    (cfg,) = study.matrix()
    config = {"schema_version": SCHEMA_VERSION, **study.run_config(cfg)}
    assert config["train_data"] == [str(DATA / "svdb")]
    assert from_config(tmp_path, config).data.train_data == [str(DATA / "svdb")]


@pytest.mark.parametrize(("dataset", "words"), [
    ({"path": "x", "train_data": []}, r"train_data: expected a non-empty list of folder paths, got \[\]"),
    ({"synthetic": True, "train_data": ["svdb"]}, r"\[data.datasets\].mitdb.train_data goes with a path"),
])
def test_a_bad_train_data_is_one_line(tmp_path: Path, dataset: dict[str, Any], words: str) -> None:
    with pytest.raises(SpecError, match=words):
        load_study(_study(tmp_path, dataset))
