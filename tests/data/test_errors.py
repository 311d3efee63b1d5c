"""Every kind of bad input gives a DataError that names the file (and the CLI exits with 3)."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest
import wfdb

from runcontract.records import write_config
from tests.data.conftest import copy_records
from trainer.commands.prepare_command import add_arguments, run
from trainer.config_keys import ANNOTATOR_PREFERENCE, TOKENIZER
from trainer.data.dataset import WindowDataset
from trainer.data.errors import DataError
from trainer.data.prepare import prepare_dataset
from trainer.data.records import auto_annotators

SAMPLES = {"name": "samples"}


def cli(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return run(parser.parse_args(list(argv)))


def test_missing_record(mitdb_copy: Path, cache: Path) -> None:
    (mitdb_copy / "RECORDS").write_text("100\n101\n999\n")
    with pytest.raises(DataError, match=r"mitdb/999\.hea: header file not found \(record '999' listed"):
        prepare_dataset(mitdb_copy, SAMPLES, cache)


def test_corrupt_header(mitdb_copy: Path, cache: Path) -> None:
    (mitdb_copy / "101.hea").write_text("101 two 360 650000\n101.dat 212 200 11 1024 995 -22131 0 MLII\n")
    with pytest.raises(DataError, match=r"101\.hea: corrupt header"):
        prepare_dataset(mitdb_copy, SAMPLES, cache)


def test_corrupt_signal_line(mitdb_copy: Path, cache: Path) -> None:
    (mitdb_copy / "101.hea").write_text("101 1 360 650000\n101.dat xyz\n")
    with pytest.raises(DataError, match=r"101\.hea: corrupt header \(signal 0: storage format 'xyz' is not a WFDB "):
        prepare_dataset(mitdb_copy, SAMPLES, cache)


def test_multi_segment_record_with_samples(mitdb_copy: Path, cache: Path) -> None:
    (mitdb_copy / "101.hea").write_text("101/2 1 360 650000\n101_1 325000\n101_2 325000\n")
    with pytest.raises(DataError, match=r"101\.hea: multi-segment record"):
        prepare_dataset(mitdb_copy, SAMPLES, cache)
    shard = prepare_dataset(mitdb_copy, {"name": "beats"}, cache)  # annotations are enough for beats
    assert (shard / "manifest.json").exists()


def test_deleted_signal_file(mitdb_copy: Path, cache: Path) -> None:
    (mitdb_copy / "101.dat").unlink()
    with pytest.raises(DataError, match=r"mitdb/101\.dat: signal file not found \(named in 101\.hea"):
        prepare_dataset(mitdb_copy, SAMPLES, cache)


def test_deleted_annotations(mitdb_copy: Path, cache: Path) -> None:
    (mitdb_copy / "100.atr").unlink()
    with pytest.raises(DataError, match=r"mitdb/100\.hea: no annotation file found"):
        prepare_dataset(mitdb_copy, SAMPLES, cache)
    with pytest.raises(DataError, match=r"mitdb/100\.atr: annotation file not found \(annotator 'atr'\)"):
        prepare_dataset(mitdb_copy, {"name": "samples", "annotator": "atr"}, cache)


def test_record_without_beats(mitdb_copy: Path, cache: Path) -> None:
    (mitdb_copy / "101.atr").unlink()
    wfdb.wrann("101", "atr", np.array([5, 900]), symbol=["+", "~"], aux_note=["(N", ""], write_dir=str(mitdb_copy))
    with pytest.raises(DataError, match=r"101\.atr: no beat annotations in record '101'"):
        prepare_dataset(mitdb_copy, SAMPLES, cache)


def test_samples_on_annotation_only_folder(physionet: Path, tmp_path: Path) -> None:
    folder = copy_records(physionet / "nsrdb-annotations", tmp_path / "nsr", ["16265"], ("hea", "atr"))
    with pytest.raises(DataError, match=r"16265\.dat: signal file not found .*--tokenizer beats"):
        prepare_dataset(folder, SAMPLES, tmp_path / "c")


def test_unknown_tokenizer_and_record_subset(mitdb_copy: Path, cache: Path) -> None:
    with pytest.raises(DataError, match="tokenizer.name: expected one of samples, beats, got 'bpe'"):
        prepare_dataset(mitdb_copy, {"name": "bpe"}, cache)
    with pytest.raises(DataError, match=r"record\(s\) 555 not in this folder's record list"):
        prepare_dataset(mitdb_copy, {"name": "samples", "records": ["100", "555"]}, cache)


def test_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"nowhere: data folder not found"):
        prepare_dataset(tmp_path / "nowhere", SAMPLES, tmp_path)


def test_window_longer_than_every_record(tmp_path: Path) -> None:
    shard = prepare_dataset(None, {"name": "beats"}, tmp_path, synthetic_params={"records": 2, "seconds": 60})
    with pytest.raises(DataError, match=r"window 4096 is longer than every record of dataset 'synthetic' "
                                        r"\(longest: record 'synthetic-00\d', \d+ tokens\)"):
        WindowDataset(shard, 4096, "foundation")


def test_cli_exit_codes(mitdb_copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (mitdb_copy / "101.dat").unlink()
    assert cli("--data", str(mitdb_copy), "--out", str(tmp_path / "c")) == 3
    assert "101.dat: signal file not found" in capsys.readouterr().err
    assert cli("--data", str(mitdb_copy), "--out", str(tmp_path / "c"), "--workers", "0") == 2
    assert cli("--data", str(mitdb_copy), "--out", str(tmp_path / "c"), "--tokenizer", "bpe") == 2  # a bad argument, not bad data
    assert "--tokenizer (tokenizer.name): expected one of samples, beats, got 'bpe'" in capsys.readouterr().err
    assert cli("--data", str(mitdb_copy), "--out", str(tmp_path / "c"), "--tokenizer", "beats",
               "--records", "100", "--no-progress") == 0
    out = capsys.readouterr().out
    assert "mitdb-beats-" in out and "1 records (0 skipped as bad), 2,273 beats" in out


def test_cli_run_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / "run"
    write_config(run_dir, {"dataset": "synthetic", "data_path": None, "synthetic": True,
                           "synthetic_params": {"records": 2, "seconds": 20, "seed": 1},
                           "tokenizer": {"name": "samples", "vocab": 128, "rr_bins": 16},
                           "token_cache": str(tmp_path / "tokens")})
    assert cli("--run-dir", str(run_dir)) == 0
    assert "SYNTHETIC data" in capsys.readouterr().out
    write_config(run_dir, {"dataset": "x", "data_path": None, "tokenizer": {"name": "nope"},
                           "token_cache": str(tmp_path / "tokens")})
    assert cli("--run-dir", str(run_dir)) == 3
    assert "tokenizer.name: expected one of samples, beats, got 'nope'" in capsys.readouterr().err
    assert cli("--run-dir", str(tmp_path / "absent")) == 2


def test_contradictory_rr_flags_are_a_bad_command_line(mitdb_copy: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("--data", str(mitdb_copy), "--out", str(tmp_path / "c"), "--tokenizer", "beats",
               "--rr-min-ms", "500", "--rr-max-ms", "400") == 2
    err = capsys.readouterr().err
    assert err == "hlm-train: tokenizer.rr_max_ms: expected a number of ms above rr_min_ms (500), got 400\n"


def test_auto_tries_the_list_the_docs_name(tmp_path: Path, physionet: Path) -> None:
    """docs/study-keys.md's annotator row names the order resolve_annotator walks: ANNOTATORS, then atr, then ari."""
    assert ANNOTATOR_PREFERENCE == ("atr", "ari")
    assert "auto tries the extensions of the folder's ANNOTATORS file in its order, then atr, then ari" in \
        TOKENIZER["annotator"].help
    assert auto_annotators(physionet / "mitdb") == ["atr", "ari"]
    (tmp_path / "ANNOTATORS").write_text("ari\tunaudited beat annotations\nqrs\tdetector\n", encoding="utf-8")
    assert auto_annotators(tmp_path) == ["ari", "qrs", "atr"]
