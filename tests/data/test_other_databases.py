"""Databases the project was not developed on: other rates (128, 200 Hz), formats (16, 212), annotation
extensions (.qrs) and record names that carry a patient id (cpsc2021's data_<patient>_<n>)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.data.conftest import convert_record
from trainer.data.dataset import WindowDataset, load_manifest
from trainer.data.errors import DataError
from trainer.data.prepare import prepare_dataset

# record name in the converted database -> the mitdb record it is made of
CPSC_LIKE = {"data_8_2": "100", "data_8_3": "101", "data_8_4": "103", "data_9_1": "105", "data_10_1": "106"}


@pytest.fixture(scope="module")
def qrs_db(physionet: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    """200 Hz, format 16, annotations in .qrs, names with a patient id."""
    dst = tmp_path_factory.mktemp("cpsc-like")
    beats = {name: convert_record(physionet / "mitdb", src, dst, name, 200, "16", "qrs")
             for name, src in CPSC_LIKE.items()}
    return dst, beats


def test_qrs_annotations_need_the_annotator_and_the_error_says_so(qrs_db: tuple[Path, dict[str, int]],
                                                                  tmp_path: Path) -> None:
    folder, _ = qrs_db
    with pytest.raises(DataError, match=r"data_10_1\.hea: no annotation file found \(tried \.atr, \.ari\); "
                                        r"beside data_10_1\.hea: \.qrs; choose one with the annotator option"):
        prepare_dataset(folder, {"name": "samples"}, tmp_path)


def test_200_hz_format_16_keeps_every_beat_and_groups_patients(qrs_db: tuple[Path, dict[str, int]],
                                                               tmp_path: Path) -> None:
    folder, beats = qrs_db
    m = load_manifest(prepare_dataset(folder, {"name": "samples", "annotator": "qrs", "fs": 0}, tmp_path))
    by_name = {r["name"]: r for r in m["records"]}
    assert {n: r["n_beats"] for n, r in by_name.items()} == beats  # nothing lost
    assert all(r["native_fs"] == 200 and r["fs"] == 200 and r["n_tokens"] == 60 * 200 for r in m["records"])
    split = m["split"]
    assert split["method"] == "patient-in-name" and split["test"] == ["data_10_1"]
    assert set(split["train"]) == {"data_8_2", "data_8_3", "data_8_4", "data_9_1"}  # data_8 on one side
    assert "data_8_2 -> data_8" in split["reason"] and split["patients"]["data_8_4"] == "data_8"
    m360 = load_manifest(prepare_dataset(folder, {"name": "samples", "annotator": "qrs"}, tmp_path))
    assert [r["n_beats"] for r in m360["records"]] == [r["n_beats"] for r in m["records"]]
    assert len(WindowDataset(m360.shard_dir, 128, "beat", ["data_8_2"])) > 0


def test_explicit_test_records_and_patient_pattern(qrs_db: tuple[Path, dict[str, int]], tmp_path: Path) -> None:
    folder, _ = qrs_db
    beats = {"name": "beats", "annotator": "qrs"}
    m = load_manifest(prepare_dataset(folder, beats, tmp_path, split={"test_records": ["data_9_1"]}))
    assert m["split"]["test"] == ["data_9_1"] and m["split"]["method"] == "test_records"
    assert m["split"]["options"] == {"test_records": ["data_9_1"]}
    # the same shards, another split: only the manifest's split is rewritten
    m2 = load_manifest(prepare_dataset(folder, beats, tmp_path, split={"patient_pattern": r"data_(\d+)_"}))
    assert m2.shard_dir == m.shard_dir and m2["split"]["test"] == ["data_10_1"]
    assert m2["split"]["patients"]["data_8_3"] == "8" and m2["timing"]["records_up_to_date"] == 5
    with pytest.raises(DataError, match=r"split\.test_records: data_99_1 not among the records \(data_8_2, data_8_3"):
        prepare_dataset(folder, beats, tmp_path, split={"test_records": ["data_99_1"]})
    with pytest.raises(DataError, match=r"split\.patient_pattern: 'p\(\\\\d\+\)' does not match record name 'data_8_2'"):
        prepare_dataset(folder, beats, tmp_path, split={"patient_pattern": r"p(\d+)"})


def test_128_hz_format_212(physionet: Path, tmp_path: Path) -> None:
    folder = tmp_path / "db128"
    beats = {name: convert_record(physionet / "mitdb", src, folder, name, 128, "212", "atr")
             for name, src in (("r1", "119"), ("r2", "208"))}
    m = load_manifest(prepare_dataset(folder, {"name": "samples", "fs": 0}, tmp_path / "c"))
    assert {r["name"]: r["n_beats"] for r in m["records"]} == beats
    assert all(r["native_fs"] == 128 and r["n_tokens"] == 60 * 128 for r in m["records"])
    assert m["split"]["method"] == "one-record-per-patient" and m["split"]["test"] == ["r2"]
