"""A new sweep axis with a default renames nothing: every configuration id and label that existed before it (the
two recorded fixture stores, the golden batch scripts, the examples) is the same with the axis added, and a
configuration that sets the new axis away from its default gets an id of its own.

The fixture stores were written by real runs of an earlier version of the cockpit; their `configs` rows hold the
ids and the axis values they were made from, so they are the record of what users' stores contain.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from cockpit.launch.slurm.render import render_script
from cockpit.study.spec import Configuration, _digest, load_study
from runcontract.axes import AXIS_KEYS, SCALE_AXES, id_values, label_words
from runcontract.keys import Axis, ConfigKey

ROOT = Path(__file__).resolve().parents[2]
STORES = [ROOT / "tests/fixtures/recorded-store/store.sqlite", ROOT / "tests/fixtures/demo-store/local-demo/cockpit.sqlite"]
STUDIES = [ROOT / "examples/meluxina.toml", ROOT / "examples/local-demo.toml",
           ROOT / "tests/launch/studies/generic.toml", ROOT / "tests/launch/studies/meluxina.toml"]
GOLDEN = ROOT / "tests/launch/golden"

# an axis added after the fact, with a default, as a new `AxisKeys` field would declare it
NEW_AXIS = ConfigKey("sweep", "future_axis", (str,), "plain", help="an axis added later", top_level=True,
                     axis=Axis("future", ("future",)))
EXTENDED = (*AXIS_KEYS, NEW_AXIS)


def _ids(values: dict, axes: tuple[ConfigKey, ...]) -> tuple[str, str]:
    kept = id_values(values, axes)
    return _digest(kept), _digest({k: v for k, v in kept.items() if k not in SCALE_AXES})


def _stored(path: Path) -> list[tuple[str, str, dict]]:
    db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return [(c, g, json.loads(v)) for c, g, v in db.execute("SELECT config_id, group_id, values_json FROM configs")]
    finally:
        db.close()


@pytest.mark.parametrize("store", STORES, ids=lambda p: p.parent.name)
def test_recorded_store_ids_unchanged_by_a_new_axis(store: Path) -> None:
    rows = _stored(store)
    assert rows, f"{store} holds no configurations"
    for config_id, group_id, values in rows:
        assert Configuration(**values).config_id == config_id, values
        assert _ids(values, EXTENDED) == (config_id, group_id), values  # the new axis absent: its default
        assert _ids({**values, "future_axis": "plain"}, EXTENDED) == (config_id, group_id), values
        moved = _ids({**values, "future_axis": "other"}, EXTENDED)
        assert moved[0] != config_id and moved[1] != group_id, "a value away from the default must get its own id"


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_study_ids_unchanged_by_a_new_axis(path: Path) -> None:
    for cfg in load_study(path).matrix():
        values = cfg.values()
        assert _ids(values, EXTENDED) == (cfg.config_id, cfg.group_id)


def test_golden_scripts_carry_the_ids_that_survive() -> None:
    study = load_study(ROOT / "tests/launch/studies/meluxina.toml")
    for script in GOLDEN.glob("meluxina-*.sbatch"):
        text = script.read_text(encoding="utf-8")
        matching = [c for c in study.matrix() if render_script(study, c) == text]
        assert len(matching) == 1, f"{script.name}: no configuration renders it"
        assert _ids(matching[0].values(), EXTENDED)[0] == matching[0].config_id
        assert matching[0].config_id in text


def test_core_axes_always_show() -> None:
    core = {k.name for k in AXIS_KEYS if k.axis is not None and k.axis.core}
    assert {"dataset", "mode", "window", "precision", "batch_size", "cpus_per_task", "gpus_per_node",
            "nodes"} <= core, "the axes every existing id digests must stay core"
    assert "window" in label_words({"window": 256})
