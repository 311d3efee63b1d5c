"""One set of validators: for every key of the registry (trainer/config_keys/) a study can set, values drawn
across its domain (each bound and either side of it, every choice and a wrong one, wrong types) are accepted
by the study spec exactly when the trainer accepts them, and refused in the same words: [model] and [train]
keys against config.json's reader, sweep axes against the trainer's axes, tokenizer keys against the
tokenizer's own validators (prepare)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from cockpit.study.spec import SpecError, load_study, parse_study
from cockpit.study.spec_rules import SECTIONS
from runcontract.axes import AXES, AXIS_KEYS
from runcontract.keys import ConfigKey
from tests.studies import SYNTHETIC_DATA, TINY_MODEL, TINY_TRAIN, study_raw, write_study
from trainer.config_keys import KEYS, TOKENIZER_KEYS, section_keys
from trainer.data.errors import DataError
from trainer.data.tokenizer_keys import canonical
from trainer.settings import ConfigError, from_config

SECTIONS_KEYS = [k for keys in SECTIONS.values() for k in keys.values()]  # the study file's own tables too
BIG = 100_000  # the cluster's GPUs and cores per node: the cockpit's own limits stay out of the way


def domain(k: ConfigKey) -> list[Any]:
    """Values across a key's domain: its default, each bound and either side of it, every choice and a
    wrong one, and a value of each wrong type."""
    values: list[Any] = [k.default, True, "x", [1]]
    if k.choices is not None:
        return values + list(k.choices) + ["no such", 3]
    if int in k.kind or float in k.kind:
        step = 1 if k.kind[0] is int else 0.25
        for bound in (k.minimum, k.maximum, k.above, k.below):
            if bound is not None and math.isfinite(bound):
                values += [bound - step, bound, bound + step]
        values += [-1, 0, 1, 2, 3, 70000, 2.5, -0.5]
    if str in k.kind:
        values += ["atr", "a-b", "", 3]
    if bool in k.kind:
        values += [False, 1]
    if list in k.kind:
        values += [["100", "101"], "100", ["S=0.8"]]
    return [v for v in values if v is not None]


def _words(message: str | None) -> str | None:
    """What a refusal says about the value, without the file and the key's spelling in it."""
    if message is None:
        return None
    return message[message.index("expected"):] if "expected" in message else message.split(": ", 1)[1]


def _spec(tmp_path: Path, **sections: Any) -> str | None:
    cluster = {"kind": "slurm", "ssh_host": "h", "workdir": "/w", "gpus_per_node": BIG, "cores_per_node": BIG}
    try:
        parse_study(study_raw("agree", "/w", cluster=cluster, **sections), tmp_path / "s.toml")
    except SpecError as exc:
        return str(exc)
    return None


def _trainer(tmp_path: Path, config: dict[str, Any]) -> str | None:
    """config.json as the cockpit writes it: the axes at its top level, beside "model" and "train"."""
    train = {k: v for k, v in config.get("train", {}).items() if k not in AXES}
    axes = {k: v for k, v in config.get("train", {}).items() if k in AXES}
    try:
        from_config(tmp_path, {"data_path": None, "synthetic": True, **axes, **config, "train": train}, "config.json")
    except ConfigError as exc:
        return str(exc)
    return None


def _agree(spec: str | None, trainer: str | None, what: Any, seen: dict[str, set[bool]], key: str) -> None:
    """Both accept or both refuse in the same words; `seen[key]` collects which answers the key got."""
    assert (spec is None) == (trainer is None), (what, spec, trainer)
    assert _words(spec) == _words(trainer), (what, spec, trainer)
    seen.setdefault(key, set()).add(spec is None)


def _both_answers(seen: dict[str, set[bool]], keys: list[str], refused_only: tuple[str, ...] = ()) -> None:
    """Every key's domain reached both an acceptance and a refusal, so the agreement was tested on each."""
    for key in keys:
        assert seen.get(key) == ({False} if key in refused_only else {True, False}), (key, seen.get(key))


def test_every_default_passes_its_own_rule():
    for k in (*KEYS, *TOKENIZER_KEYS, *SECTIONS_KEYS):
        assert k.problem(k.default) is None, k


NEEDS = {"calibrate_min_sensitivity": {"calibrate": True, "val_fraction": 0.2}}  # the keys a key's rule asks beside it


@pytest.mark.parametrize("section", ["model", "train"])
def test_every_model_and_train_key_is_judged_alike(tmp_path: Path, section: str):
    tiny = {"model": TINY_MODEL, "train": TINY_TRAIN}
    keys = [k for k in section_keys(section, study=True) if not k.top_level]
    seen: dict[str, set[bool]] = {}
    for k in keys:
        for value in domain(k):
            table = {**tiny[section], **NEEDS.get(k.name, {}), k.name: value}
            spec = _spec(tmp_path, **{section: table})
            trainer = _trainer(tmp_path, {**{s: dict(v) for s, v in tiny.items()}, section: table})
            _agree(spec, trainer, (k.name, value), seen, k.name)
    _both_answers(seen, [k.name for k in keys], refused_only=("epochs",))  # steps is given: epochs never fits


def test_every_sweep_axis_is_judged_alike(tmp_path: Path):
    train = {k: v for k, v in TINY_TRAIN.items() if k not in {a.name for a in AXIS_KEYS}}
    seen: dict[str, set[bool]] = {}
    for k in AXIS_KEYS:
        for value in domain(k):
            if k.name == "dataset" and isinstance(value, str):
                continue  # a dataset's name must be one of the study's datasets: the cockpit's own rule
            spec = _spec(tmp_path, train=train, sweep={k.name: [value]})
            trainer = _trainer(tmp_path, {"model": TINY_MODEL, "train": train, k.name: value})
            _agree(spec, trainer, (k.name, value), seen, k.name)
    _both_answers(seen, list(AXES), refused_only=("dataset",))


def test_every_tokenizer_key_is_judged_alike(tmp_path: Path):
    seen: dict[str, set[bool]] = {}
    for name in ("samples", "beats"):
        for k in TOKENIZER_KEYS:
            for value in domain(k):
                table = {"name": name, k.name: value}
                try:
                    canonical(table)
                    trainer = None
                except DataError as exc:
                    trainer = str(exc)
                spec = _spec(tmp_path, data={**SYNTHETIC_DATA, "tokenizer": table})
                _agree(spec, trainer, table, seen, k.name)
    _both_answers(seen, [k.name for k in TOKENIZER_KEYS])


@pytest.mark.parametrize(("section", "value", "words"), [
    ("sweep", {"window": [1]}, "[sweep].window: expected an integer >= 2, got 1"),
    ("data", {**SYNTHETIC_DATA, "tokenizer": {"highpass_hz": 30}},
     "[data.tokenizer].highpass_hz: expected a cut-off in Hz in [0, 20) (0 = off), got 30"),
])
def test_plan_refuses_what_the_trainer_would_in_its_words(tmp_path: Path, section: str, value: Any, words: str):
    path = write_study(tmp_path / "s.toml", "agree", tmp_path / "work", **{section: value})
    with pytest.raises(SpecError) as refused:
        load_study(path)
    assert str(refused.value) == f"s.toml: {words}"


def test_config_json_refuses_it_in_the_same_words(tmp_path: Path):
    """docs/training.md's example: the trainer's reading of the same value."""
    assert _trainer(tmp_path, {"model": TINY_MODEL, "train": TINY_TRAIN, "window": 1}) == (
        "config.json: window: expected an integer >= 2, got 1")
