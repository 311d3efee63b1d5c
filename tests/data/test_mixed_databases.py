"""Datasets that mix databases (trainer.data.mixed): mitdb records with real svdb records (128 Hz) at one rate,
the further database on the training side only, validation drawn from both, and every bad mix refused."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from runcontract.records import write_config
from tests.data.conftest import copy_records
from trainer.commands.cli import main
from trainer.data.dataset import WindowDataset, load_manifest, manifest_split
from trainer.data.errors import DataError
from trainer.data.prepare import prepare_data
from trainer.run.sources import validation_split

DATA_DOC = Path(__file__).resolve().parents[2] / "docs" / "data.md"
TOKENIZER = {"name": "samples", "fs": 180, "highpass_hz": 0.5}


@pytest.fixture
def databases(physionet: Path, tmp_path: Path) -> tuple[Path, Path]:
    """mitdb 100 (DS2) and 101 (DS1) at 360 Hz; svdb 800 and 801 at 128 Hz."""
    mitdb = copy_records(physionet / "mitdb", tmp_path / "mitdb", ["100", "101"], ("hea", "dat", "atr"))
    svdb = copy_records(physionet / "svdb", tmp_path / "svdb", ["800", "801"], ("hea", "dat", "atr"))
    return mitdb, svdb


def test_svdb_trains_beside_ds1_at_the_models_rate_and_ds2_stays_the_test(databases: tuple[Path, Path],
                                                                          cache: Path) -> None:
    mitdb, svdb = databases
    shard = prepare_data(mitdb, TOKENIZER, cache, train_data=[str(svdb)])
    manifest = load_manifest(shard)
    assert manifest.record_names == ["100", "101", "svdb/800", "svdb/801"]
    split = manifest_split(manifest)
    assert (split.train, split.test) == (["101", "svdb/800", "svdb/801"], ["100"])
    assert manifest["split"]["train"] == split.train and "train only (never test)" in manifest["split"]["reason"]
    by_name = {r["name"]: r for r in manifest.records}
    for name, native in (("100", 360.0), ("svdb/800", 128.0)):
        assert (by_name[name]["fs"], by_name[name]["native_fs"]) == (180.0, native)
    # 30 min at 128 Hz (230,400 samples) is 324,000 samples at 180 Hz: the same duration in tokens
    header = (svdb / "800.hea").read_text().split()
    assert by_name["svdb/800"]["n_tokens"] == int(header[3]) * 180 // 128
    windows = WindowDataset(shard, 128, "beat", split.train, context="rr", waveform="diff")
    beats = sum(by_name[n]["class_counts"][c] for n in split.train for c in range(5))
    assert len(windows) == beats  # every labelled beat of both databases, once
    counts = windows.class_counts()
    assert counts[1] >= by_name["svdb/800"]["class_counts"][1] > 0  # svdb's S beats are in the training windows
    # the beats of a svdb record sit on the QRS at the new rate: its windows are not all alike
    tokens, _ = windows[int(np.flatnonzero(windows.item_record == 1)[0])]
    assert len(set(tokens.tolist())) > 10


def test_validation_is_drawn_from_every_training_database(databases: tuple[Path, Path], cache: Path) -> None:
    mitdb, svdb = databases
    split = manifest_split(load_manifest(prepare_data(mitdb, TOKENIZER, cache, train_data=[str(svdb)])))
    train, val = validation_split(split.train, split.patients, 0.5)
    assert val == ["101", "svdb/801"] and train == ["svdb/800"]


def test_an_unchanged_mix_is_not_written_again_and_a_changed_part_is(databases: tuple[Path, Path],
                                                                    cache: Path) -> None:
    mitdb, svdb = databases
    first = prepare_data(mitdb, TOKENIZER, cache, train_data=[str(svdb)])
    stamp = (first / "manifest.json").stat().st_mtime_ns
    assert prepare_data(mitdb, TOKENIZER, cache, train_data=[str(svdb)]) == first
    assert (first / "manifest.json").stat().st_mtime_ns == stamp
    (svdb / "RECORDS").write_text("800\n")
    second = prepare_data(mitdb, TOKENIZER, cache, train_data=[str(svdb)])
    assert second != first and load_manifest(second).record_names == ["100", "101", "svdb/800"]


def test_mixing_rates_without_one_target_rate_and_naming_a_folder_twice_are_refused(
        databases: tuple[Path, Path], cache: Path) -> None:
    mitdb, svdb = databases
    with pytest.raises(DataError, match=r"tokenizer\.fs: mixing databases .* needs one rate"):
        prepare_data(mitdb, {**TOKENIZER, "fs": 0}, cache, train_data=[str(svdb)])
    with pytest.raises(DataError, match=r"train_data: .*mitdb is named twice"):
        prepare_data(mitdb, TOKENIZER, cache, train_data=[str(mitdb)])
    assert not cache.exists()  # refused before anything was tokenized


def test_the_documented_prepare_and_train_take_train_data_from_the_command_line(
        databases: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mitdb, svdb = databases
    documented = re.search(r"`hlm-train (prepare --data mitdb --train-data svdb [^`]*)`", DATA_DOC.read_text())
    assert documented is not None, "docs/data.md shows how to mix databases"
    words = {"mitdb": str(mitdb), "svdb": str(svdb), "~/tokens": str(tmp_path / "c")}
    assert main([words.get(w, w) for w in shlex.split(documented.group(1))] + ["--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "mitdb+svdb" in out and "3 train, 1 test records (100)" in out
    bad = tmp_path / "bad"
    bad.mkdir()
    write_config(bad, {"data_path": str(mitdb), "train_data": [], "train": {"steps": 1}})
    assert main(["train", "--run-dir", str(bad)]) == 2
    assert "config.json: train_data: expected a non-empty list of folder paths, got []" in capsys.readouterr().err
