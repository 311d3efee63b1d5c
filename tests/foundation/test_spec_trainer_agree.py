"""What the study spec accepts the trainer accepts, and what the trainer refuses the spec refuses first, in
the trainer's words: sweep windows and batch sizes against trainer/config_keys.py's bounds, every
tokenizer key against the tokenizer's own validators (trainer/data/tokenizer_keys.py)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from cockpit.spec import SpecError, load_study
from tests.studies import write_study
from trainer.config_keys import BY_NAME
from trainer.data.errors import DataError
from trainer.data.tokenizer_keys import DEFAULTS, canonical
from trainer.settings import ConfigError, from_config


def _spec(tmp_path: Path, **sections) -> str | None:
    """None when the study loads, else its error message."""
    try:
        load_study(write_study(tmp_path / "s.toml", "agree", tmp_path / "work", cluster={"gpus_per_node": 2}, **sections))
    except SpecError as exc:
        return str(exc)
    return None


def _trainer(tmp_path: Path, key: str, value: int) -> str | None:
    config = {"data_path": None, "synthetic": True, key: value, "train": {"steps": 1}}
    try:
        from_config(tmp_path, config, "config.json")
    except ConfigError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("axis", ["window", "batch_size"])
def test_sweep_bounds_are_the_trainers(tmp_path: Path, axis: str):
    least = int(BY_NAME[axis].minimum or 1)
    for value in (least - 1, least, least + 1):
        spec, trainer = _spec(tmp_path, sweep={axis: [value]}), _trainer(tmp_path, axis, value)
        assert (spec is None) == (trainer is None), (value, spec, trainer)
        if spec is not None:
            assert f"expected an integer >= {least}" in spec and f"expected an integer >= {least}" in trainer


def _draw(rng: random.Random, default):
    if isinstance(default, bool):
        return rng.choice([True, False])
    if isinstance(default, int):
        return rng.choice([-1, 0, 1, 2, default, default * 3 + 1, 70000])
    if isinstance(default, float):
        return rng.choice([-0.5, 0.0, 0.4, default, 19.9, 20.0, 30.0, 55.0])
    return rng.choice([default, "uniform", "mulaw", "atr", "no such", "a-b"])


def test_every_tokenizer_key_is_refused_by_the_spec_exactly_when_the_tokenizer_refuses_it(tmp_path: Path):
    rng = random.Random(7)
    checked = set()
    for name, keys in DEFAULTS.items():
        for key, default in keys.items():
            for _ in range(6):
                value = _draw(rng, default)
                table = {"name": name, key: value}
                try:
                    canonical(table)
                    trainer = None
                except DataError as exc:
                    trainer = str(exc)
                spec = _spec(tmp_path, data={"datasets": {"synthetic": {"synthetic": True}}, "tokenizer": table})
                if spec is not None and "[data.tokenizer]" in spec and trainer is None:
                    continue  # the spec's type check (e.g. a string where a number goes) comes first
                assert (spec is None) == (trainer is None), (table, spec, trainer)
                if trainer is not None:
                    assert trainer in spec
                checked.add(key)
    assert checked == set(DEFAULTS["samples"]) | set(DEFAULTS["beats"])


def test_a_highpass_above_20_hz_is_refused_by_plan_in_the_tokenizers_words(tmp_path: Path):
    message = _spec(tmp_path, data={"datasets": {"synthetic": {"synthetic": True}},
                                    "tokenizer": {"name": "samples", "highpass_hz": 30}})
    assert message and "tokenizer.highpass_hz: expected a cut-off in Hz in [0, 20) (0 = off), found 30" in message
