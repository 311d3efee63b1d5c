"""Training runs on databases without a usable test split: a fine-tune stops at the start and says why,
a foundation run says which split its eval loss used. Tiny models on real (annotation) records."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from runcontract.contract import EXIT_BAD_INPUT, METRICS_FILE
from runcontract.records import read_exit, read_result
from tests.data.conftest import copy_records
from trainer import rundir
from trainer.commands.cli import main

TINY = ["--tokenizer", "beats", "--window", "16", "--batch-size", "4", "--layers", "1", "--d-model", "16",
        "--heads", "2", "--steps", "2", "--device", "cpu", "--cpus-per-task", "1", "--num-workers", "0"]


def train(run_dir: Path, data: Path, cache: Path, *flags: str) -> int:
    return main(["train", "--run-dir", str(run_dir), "--data", str(data), "--token-cache", str(cache),
                 *TINY, *flags])


@pytest.mark.parametrize(("records", "db", "why"), [
    (["16265"], "nsrdb-annotations",
     r"has no test records: record names carry no patient id, so each record is its own patient.*only one "
     r"patient \(16265\), so nothing is left for a test split; give the test records \(test_records"),
    (["101", "106", "108"], "mitdb",
     r"has no test records: every record is an MIT-BIH Arrhythmia record: AAMI inter-patient split.*none of "
     r"these records is in DS2, so the test split is empty; give the test records"),
    (["101", "212"], "mitdb",
     r"the test split of dataset 'db' \(1 records: 212\) holds only class N \(2,748 windows\); per-class scores "
     r"need at least two classes"),
])
def test_finetune_without_a_usable_test_split_stops_at_the_start(records: list[str], db: str, why: str,
                                                                 physionet: Path, tmp_path: Path) -> None:
    data = copy_records(physionet / db, tmp_path / "db", records, ("hea", "atr"))
    run_dir = tmp_path / "run"
    assert train(run_dir, data, tmp_path / "c", "--mode", "finetune") == EXIT_BAD_INPUT
    exit_info = read_exit(run_dir)
    assert exit_info["code"] == 3
    assert re.search(why, exit_info["message"]), exit_info["message"]
    assert not (run_dir / METRICS_FILE).exists()  # stopped before the first step
    # an explicit eval = false trains without scoring, and the log says so
    assert train(tmp_path / "noeval", data, tmp_path / "c", "--mode", "finetune", "--no-eval") == 0
    log = (tmp_path / "noeval" / rundir.LOG_FILE).read_text()
    assert "evaluation off (train.eval = false)" in log
    result = read_result(tmp_path / "noeval")
    assert "eval" not in result and result["data"]["eval_split"] is None


def test_foundation_without_test_records_says_its_eval_used_the_training_split(physionet: Path,
                                                                               tmp_path: Path) -> None:
    data = copy_records(physionet / "nsrdb-annotations", tmp_path / "one", ["16265"], ("hea", "atr"))
    assert train(tmp_path / "run", data, tmp_path / "c") == 0
    result = read_result(tmp_path / "run")
    assert result["eval"]["split"] == "train" and result["data"]["eval_split"] == "train"
    assert result["data"]["split"]["method"] == "one-record-per-patient"
    assert "only one patient" in result["data"]["split"]["reason"]
    log = (tmp_path / "run" / rundir.LOG_FILE).read_text()
    assert "no test records (" in log and "the foundation eval loss uses an even sample of the training split" in log


def test_test_records_and_skipped_records_reach_result_and_log(physionet: Path, tmp_path: Path) -> None:
    data = copy_records(physionet / "mitdb", tmp_path / "db", ["100", "101", "103"], ("hea", "atr"))
    (data / "103.atr").write_bytes((data / "103.atr").read_bytes()[:500])
    assert train(tmp_path / "run", data, tmp_path / "c", "--test-records", "101", "--skip-bad-records") == 0
    result = read_result(tmp_path / "run")
    split = result["data"]["split"]
    assert split["test"] == ["101"] and split["train"] == ["100"] and split["method"] == "test_records"
    assert result["eval"]["split"] == "test"
    assert [s["name"] for s in result["data"]["skipped_records"]] == ["103"]
    log = (tmp_path / "run" / rundir.LOG_FILE).read_text()
    assert "WARNING skipped record 103: " in log and "103.atr: truncated annotation file" in log
    assert "split: 1 train, 1 test records (101); test records given explicitly" in log
