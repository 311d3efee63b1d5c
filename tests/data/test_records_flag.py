"""`--records` (and `--test-records`) take commas and spaces alike in every command line that has them:
`hlm-train prepare`, `hlm-train train` and `cockpit demo` share trainer.config_flags.record_names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runcontract.contract import EXIT_BAD_INPUT
from trainer.commands.cli import main
from trainer.config_flags import record_names


@pytest.mark.parametrize("given", [["100,101,103"], ["100", "101", "103"], ["100, 101", "103"], ["100 101,103"],
                                   "100,101,103", ["100,,101", "101", "103,"]])
def test_commas_and_spaces_give_the_same_records(given):
    assert record_names(given) == ["100", "101", "103"]


def test_no_names_is_an_error_naming_the_flag():
    with pytest.raises(ValueError, match=r"^--test-records: no record names in ' , '"):
        record_names([" , "], "--test-records")


@pytest.mark.parametrize("records", [["100,101"], ["100", "101"], ["100, 101"]])
def test_hlm_train_prepare_takes_what_cockpit_demo_takes(physionet: Path, tmp_path: Path, records, capsys):
    out = tmp_path / "cache"
    code = main(["prepare", "--data", str(physionet / "mitdb"), "--tokenizer", "beats", "--out", str(out),
                 "--records", *records, "--test-records", "101", "--no-progress"])
    assert code == 0, capsys.readouterr().err
    (manifest,) = out.glob("*/manifest.json")
    assert [r["name"] for r in json.loads(manifest.read_text())["records"]] == ["100", "101"]


def test_hlm_train_train_and_cockpit_demo_read_records_alike(tmp_path: Path, physionet: Path):
    import argparse

    from cockpit.cli import build_parser
    from cockpit.commands import demo
    from trainer.commands.cli import build_config, parser

    args = parser().parse_args(["train", "--run-dir", str(tmp_path / "run"), "--steps", "1",
                                "--records", "100,101", "103", "--test-records", "101, 103"])
    config, _ = build_config(args)
    assert config["tokenizer"]["records"] == ["100", "101", "103"]
    assert config["split"] == {"test_records": ["101", "103"]}
    cli_args = build_parser().parse_args(["demo", "--data", str(physionet / "mitdb"), "--records", "100,101", "103",
                                          "--test-records", "101", "103", "--workdir", str(tmp_path)])
    assert isinstance(cli_args, argparse.Namespace) and demo.check(cli_args) is None
    (entry,) = demo.demo_raw(cli_args)["data"]["datasets"].values()
    assert entry["tokenizer"]["records"] == ["100", "101", "103"] and entry["test_records"] == ["101", "103"]


def test_an_empty_records_flag_is_a_usage_error(tmp_path: Path, capsys):
    from trainer.commands.cli import main

    assert main(["prepare", "--synthetic", "--out", str(tmp_path), "--records", ","]) == 2
    assert "--records: no record names in ','" in capsys.readouterr().err
    assert main(["train", "--run-dir", str(tmp_path / "run"), "--steps", "1", "--records", ","]) == 2
    assert "--records: no record names in ','" in capsys.readouterr().err


def test_test_records_taking_every_record_is_refused_before_any_is_tokenized(physionet: Path, tmp_path: Path, capsys):
    out = tmp_path / "cache"
    code = main(["prepare", "--data", str(physionet / "mitdb"), "--tokenizer", "beats", "--out", str(out),
                 "--records", "100,101", "--test-records", "101,100", "--no-progress"])
    assert code == EXIT_BAD_INPUT
    assert capsys.readouterr().err == ("hlm-train: bad input data: split.test_records: every record (100, 101) is a "
                                       "test record; expected at least one left to train on\n")
    assert not out.exists()
