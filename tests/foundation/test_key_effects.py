"""What a key does to the prediction is declared on the key (`effect=`: the axes in runcontract/axes.py, the HLM
trainer's keys in trainer/config_keys/): every config.json key declares one, the prediction's table is derived
from them through each workload kind (`Workload.key_effects`), and a config.json the cockpit writes has no key
whose effect is unknown (a misspelt or left-out key would silently read "not predicted")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cockpit.figures.explain import PARTS
from cockpit.forecast.advice import effects
from cockpit.study.spec import load_study
from runcontract.axes import AXIS_KEYS
from runcontract.contract import SCHEMA_VERSION
from runcontract.keys import EFFECT_MODELS, ConfigKey, Effect
from trainer.config_keys import KEYS, TRAINER_KEYS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("key", TRAINER_KEYS, ids=lambda k: k.dest)
def test_every_config_json_key_declares_its_effect(key: ConfigKey) -> None:
    assert key.effect is not None, f"{key.dest}: no effect= declared in trainer/config_keys/"
    assert key.effect.model in EFFECT_MODELS
    assert set(key.effect.terms) <= set(PARTS), f"{key.dest}: terms {key.effect.terms} not among {PARTS}"
    if key.effect.model == "formula":
        assert key.effect.effect, f"{key.dest}: a formula key says its formula"


def test_effects_are_derived_from_the_declared_keys_and_name_only_them() -> None:
    dests = {k.dest for k in (*TRAINER_KEYS, *AXIS_KEYS)}
    table = effects.key_effects()
    assert set(table) == dests
    assert all(table[k.dest] is k.effect for k in (*TRAINER_KEYS, *AXIS_KEYS))
    assert {k.dest for k in KEYS} <= set(table)  # every study key of [model], [train] and [sweep]


def test_a_workload_kind_brings_its_own_effects(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plug-in's keys are priced as it declares them, without an edit of the prediction."""
    from cockpit.workloads import WORKLOADS
    from cockpit.workloads.script import ScriptWorkload

    class Priced(ScriptWorkload):
        kind = "priced"

        @classmethod
        def key_effects(cls) -> dict[str, Effect]:
            return {"keys.width": Effect("recorded", ("compute",))}

    monkeypatch.setitem(WORKLOADS, "priced", Priced)
    assert effects.effect_of("keys.width").model == "recorded"
    monkeypatch.delitem(WORKLOADS, "priced")
    assert effects.effect_of("keys.width").model == "none"


def test_identity_is_every_key_that_names_the_run() -> None:
    assert effects.identity_keys() == {"schema_version", "study", "study_id", "config_id", "group_id", "share_group",
                                "token_cache", "launch"}


def test_an_unknown_effect_model_is_refused() -> None:
    with pytest.raises(AssertionError, match="not one of"):
        Effect("formual")


@pytest.mark.parametrize("study", ["examples/local-demo.toml", "examples/meluxina.toml"])
def test_every_key_of_a_written_config_json_has_a_declared_effect(study: str) -> None:
    s = load_study(ROOT / study)
    for cfg in s.matrix():
        config = {"schema_version": SCHEMA_VERSION, **s.run_config(cfg)}
        for key in effects.flat_config(config):
            table = key.rpartition(".")[0]
            assert key in effects.key_effects() or table in effects.key_effects(), key


def test_a_table_entry_takes_its_tables_effect_and_an_unknown_key_is_not_predicted() -> None:
    assert effects.effect_of("tokenizer.vocab") is effects.key_effects()["tokenizer"]
    assert effects.effect_of("train.bucket_cap_mb").model == "formula"
    assert effects.effect_of("train.bucket_cap_mbb").model == "none"


def test_docs_name_every_formula_key() -> None:
    text = (ROOT / "docs/prediction.md").read_text()
    section = text[text.index("## What changing a key does"):]
    for dest, effect in effects.key_effects().items():
        if effect.model == "formula":
            assert re.search(r"`(\[\w+\] )?" + dest.rpartition(".")[2] + "`", section), dest
