"""`hlm-train evaluate`: a tiny beat model trained here on real mitdb records scores a database it never saw (real
svdb records: 128 Hz, another annotator's beats) and mitdb records with an atrial fibrillation episode; the
figures are recomputed from the matrices it writes, and `cockpit scores` prints the same file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cockpit.commands.scores import scores_lines
from runcontract.records import read_exit
from tests.data.conftest import copy_records
from trainer.commands.cli import main
from trainer.rundir import EVALUATION_FILE
from trainer.scoring.scores import class_scores, false_alarms_per_hour


@pytest.fixture(scope="module")
def model(physionet: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("evaluate")
    data = copy_records(physionet / "mitdb", tmp / "mitdb", ["119", "200"], ("hea", "atr", "dat"))
    run_dir = tmp / "run"
    code = main(["train", "--run-dir", str(run_dir), "--data", str(data), "--token-cache", str(tmp / "c"),
                 "--tokenizer", "samples", "--fs", "180", "--context", "rr", "--waveform", "diff", "--pool", "centre",
                 "--mode", "finetune", "--window", "64", "--batch-size", "8", "--layers", "1", "--d-model", "16",
                 "--heads", "2", "--steps", "4", "--lr", "1e-2", "--device", "cpu", "--cpus-per-task", "1",
                 "--num-workers", "0"])
    assert code == 0, read_exit(run_dir)
    return run_dir


def _evaluate(model: Path, out: Path, *args: str) -> tuple[int, dict | None]:
    code = main(["evaluate", str(model), "--device", "cpu", "--out", str(out), *args])
    path = out / EVALUATION_FILE
    return code, json.loads(path.read_text()) if path.exists() else None


def test_another_database_at_its_own_rate_is_scored_per_class_record_and_hour(
        model: Path, physionet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    svdb = copy_records(physionet / "svdb", tmp_path / "svdb", ["800", "801"], ("hea", "atr", "dat"))
    code, result = _evaluate(model, tmp_path / "out", "--data", str(svdb))
    assert code == 0 and result is not None
    ev = result["eval"]
    assert result["records"] == ["800", "801"] and result["native_fs"] == [128.0]
    assert ev["samples"] == sum(sum(row) for row in ev["confusion"]) > 3000  # every labelled beat of both
    assert ev["confusion"] == [[sum(m[i][j] for m in ev["by_record"].values()) for j in range(5)] for i in range(5)]
    assert ev["support"]["S"] > 0 and ev["support"]["V"] > 0
    again = class_scores(ev["confusion"], ev["classes"])
    assert (again["sensitivity"], again["ppv"], again["macro_f1_nsvf"]) == (ev["sensitivity"], ev["ppv"],
                                                                             ev["macro_f1_nsvf"])
    assert ev["hours"] == pytest.approx(1.0, abs=0.01)  # two half-hour recordings
    assert ev["false_alarms_per_hour"] == false_alarms_per_hour(ev["confusion"], ev["classes"], ev["hours"])
    printed = capsys.readouterr().out
    assert "svdb: 2 records" in printed and "false alarms/h" in printed
    lines = scores_lines(tmp_path / "out", top=3)
    assert str(tmp_path / "out" / EVALUATION_FILE) == lines[0]
    assert any("false alarms per hour" in line for line in lines)


def test_beats_inside_atrial_fibrillation_get_their_own_false_alarm_rate(model: Path, physionet: Path,
                                                                        tmp_path: Path) -> None:
    mitdb = copy_records(physionet / "mitdb", tmp_path / "mitdb", ["201", "202"], ("hea", "atr", "dat"))
    code, result = _evaluate(model, tmp_path / "out", "--data", str(mitdb), "--records", "202")
    assert code == 0 and result is not None and result["records"] == ["202"]
    af = result["eval"]["by_rhythm"]["AFIB"]
    assert af["windows"] > 100 and 0 < af["hours"] < result["eval"]["hours"]
    n, s = 0, 1
    called_s = sum(af["confusion"][r][s] for r in range(5) if r != s)
    assert af["false_alarms_per_hour"]["S"] == pytest.approx(called_s / af["hours"])
    assert sum(af["confusion"][n]) > 0.9 * af["windows"]  # beats in AF are N by the AAMI rule


def test_the_noisy_version_of_a_database_is_scored_beat_for_beat_and_says_its_snr(
        model: Path, physionet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mitdb = copy_records(physionet / "mitdb", tmp_path / "mitdb", ["100"], ("hea", "atr", "dat"))
    code, clean = _evaluate(model, tmp_path / "clean", "--data", str(mitdb))
    assert code == 0 and clean is not None and clean["tokenizer"]["noise_snr_db"] is None
    capsys.readouterr()
    code, noisy = _evaluate(model, tmp_path / "noisy", "--data", str(mitdb), "--noise-snr", "0", "--noise-seed", "3")
    assert code == 0 and noisy is not None
    assert (noisy["tokenizer"]["noise_snr_db"], noisy["tokenizer"]["noise_seed"]) == (0.0, 3)
    assert noisy["eval"]["support"] == clean["eval"]["support"]  # the same beats, their signal made noisy
    tokens = {}  # the two token shards the model's cache now holds for record 100: clean and noisy
    for path in (model.parent / "c").glob("mitdb-samples-*/records/100.*.tokens.npy"):
        snr = json.loads((path.parent.parent / "manifest.json").read_text())["params"]["noise_snr_db"]
        tokens[snr] = np.load(path)
    assert tokens.keys() == {None, 0.0} and len(tokens[None]) == len(tokens[0.0])
    assert np.mean(tokens[None] != tokens[0.0]) > 0.5
    assert "mitdb with motion noise at 0 dB SNR (seed 3): 1 records" in capsys.readouterr().out


def test_a_bad_model_or_folder_is_one_line_naming_it(model: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = _evaluate(tmp_path / "nowhere", tmp_path / "out", "--data", str(tmp_path))
    assert code == 2 and "nowhere" in capsys.readouterr().err
    code, _ = _evaluate(model, tmp_path / "out", "--data", str(tmp_path / "missing"))
    err = capsys.readouterr().err
    assert code == 3 and "missing: data folder not found" in err and "Traceback" not in err
