"""config.json is judged whole: every key the cockpit writes is declared in the registry, and a misspelt key at
any level is refused naming it and the nearest known key (a run never starts on a silently ignored key)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.study.spec import load_study
from runcontract.contract import EXIT_USAGE, SCHEMA_VERSION
from runcontract.records import write_config
from trainer.settings import TOP_LEVEL, ConfigError, from_config

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("study", ["examples/local-demo.toml", "examples/meluxina.toml"])
def test_every_key_the_cockpit_writes_is_declared(study: str, tmp_path: Path) -> None:
    s = load_study(ROOT / study)
    for cfg in s.matrix():
        config = {"schema_version": SCHEMA_VERSION, **s.run_config(cfg)}
        assert set(config) <= TOP_LEVEL, set(config) - TOP_LEVEL
        settings = from_config(tmp_path, config)
        assert settings.run.config_id == cfg.config_id and settings.run.study_id == s.study_id


@pytest.mark.parametrize(("config", "words"), [
    ({"windw": 64, "window": 32, "train": {"steps": 1}}, r"config\.json: windw: not a key the trainer knows "
                                                           r"\(did you mean 'window'\?\)"),
    ({"train": {"steps": 1, "warmup_step": 2}}, r"config\.json: train\.warmup_step: .*did you mean 'warmup_steps'"),
    ({"model": {"layer": 2}, "train": {"steps": 1}}, r"config\.json: model\.layer: .*did you mean 'layers'"),
    ({"zzz": 1, "train": {"steps": 1}}, r"config\.json: zzz: not a key the trainer knows \(see docs/study-keys\.md\)"),
])
def test_misspelt_key_refused_with_the_nearest(config: dict, words: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=words):
        from_config(tmp_path, config)


def test_hlm_train_refuses_a_misspelt_config(tmp_path: Path) -> None:
    write_config(tmp_path, {"windw": 64, "train": {"steps": 1}, "synthetic": True})
    done = subprocess.run([sys.executable, "-m", "trainer", "train", "--run-dir", str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert "windw: not a key the trainer knows (did you mean 'window'?)" in done.stderr
    assert json.loads((tmp_path / "exit.json").read_text())["code"] == EXIT_USAGE
