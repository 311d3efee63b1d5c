"""bench/gate_oracle.py over a real calibrated fine-tune (three mitdb records, the trainer's own CLI): the decision
validation chose, recomputed from the logits before calibration, gives exactly what the run scored on its test
split, and every other decision is tried beside it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
from gate_oracle import GATE_SWEEP, meets  # noqa: E402  (a bench script)
from quality import GOAL  # noqa: E402
from validation_parts import rows  # noqa: E402

from runcontract.records import read_result  # noqa: E402
from trainer.scoring.calibration import GATE_BINS, SHARES, choose  # noqa: E402

SCRIPT = REPO / "bench" / "gate_oracle.py"
FLOORS = ["S=0.5", "V=0.5"]  # train.calibrate_min_sensitivity, as the command line gives it


@pytest.fixture(scope="module")
def run(physionet: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fine-tune with the atrial-lock gate: 209 trains, 201 (fibrillation) validates by name, 222 (fibrillation,
    flutter and S beats) is the test."""
    where = tmp_path_factory.mktemp("oracle")
    cmd = [sys.executable, "-m", "trainer", "train", "--run-dir", str(where / "run"), "--data", str(physionet / "mitdb"),
           "--records", "201", "209", "222", "--test-records", "222", "--token-cache", str(where / "tokens"),
           "--tokenizer", "samples", "--fs", "180", "--window", "32", "--context", "rr_af_lock", "--layers", "1",
           "--d-model", "16", "--heads", "2", "--batch-size", "32", "--steps", "20", "--lr", "3e-3",
           "--mode", "finetune", "--task", "beat", "--pool", "centre", "--val-records", "201", "--val-every", "10",
           "--calibrate", "--calibrate-min-sensitivity", *FLOORS, "--device", "cpu", "--cpus-per-task", "1",
           "--num-workers", "0"]
    subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600, check=True)
    return where / "run"


def test_the_named_validation_patient_is_the_validation_part(run: Path) -> None:
    data = read_result(run)["data"]
    assert data["val_records"] == ["201"] and data["test_records"] == ["222"] and data["labelled_records"] == ["209"]


def test_validations_choice_recomputed_is_what_the_run_scored(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "oracle.json"
    printed = subprocess.run([sys.executable, str(SCRIPT), str(run), "--out", str(out)], capture_output=True,
                             text=True, timeout=300, check=True).stdout.splitlines()
    got = json.loads(out.read_text())[0]
    ev = read_result(run)["eval"]
    chosen = got["chosen"]
    assert chosen["accuracy"] == pytest.approx(ev["accuracy"])
    assert (chosen["S Se"], chosen["S +P"]) == (pytest.approx(ev["sensitivity"]["S"]), pytest.approx(ev["ppv"]["S"]))
    assert chosen["macro-F1 NSVF"] == pytest.approx(ev["macro_f1_nsvf"])
    assert got["tried"] == len(SHARES) * (1 + len(GATE_SWEEP)) and got["feature"] == "af_evidence"
    assert got["best_macro_f1"]["macro-F1 NSVF"] >= chosen["macro-F1 NSVF"]
    row = next(line for line in printed if "validation's choice" in line)
    assert f"| {ev['accuracy']:.3f} | {ev['sensitivity']['S']:.3f} | {ev['ppv']['S']:.3f} |" in row
    assert printed[-1].endswith(f"decisions meeting the goal | {len(got['meeting_goal'])} of {got['tried']} | | | | | |")


def test_the_floors_choose_the_decision_the_run_kept(run: Path) -> None:
    """train.calibrate_min_sensitivity through the CLI: recorded, and the decision kept is choose()'s over the
    candidates the run recorded, said in train.log either way."""
    calibration = read_result(run)["validation"]["calibration"]
    best, met = choose(calibration["tried"], {"S": 0.5, "V": 0.5})
    assert calibration["floors"] == {"min_sensitivity": {"S": 0.5, "V": 0.5}, "met": met}
    assert (calibration["share"], (calibration["gate"] or {}).get("bin")) == (best["share"], best["gate_bin"])
    said = "meets the sensitivity floors S >= 0.5, V >= 0.5" if met else "no decision meets the sensitivity floors"
    assert said in (run / "train.log").read_text()


def test_a_decision_meets_the_goal_only_with_every_figure() -> None:
    row = {k: v for k, v in GOAL.items() if k != "min"}
    assert meets(row) and not meets({**row, "S +P": GOAL["S +P"] - 0.001}) and not meets({**row, "V Se": None})


def test_the_validation_part_scored_again_gives_what_the_calibration_recorded(run: Path) -> None:
    """bench/validation_parts.py's whole-part row of each decision equals the calibration's own judged macro-F1
    for it (the part is small enough to be scored whole), and a database's rows hold its beats."""
    tried = read_result(run)["validation"]["calibration"]["tried"]
    got = {(r["share"], r["gate_bin"], r["group"]): r for r in rows(run, None, list(SHARES))}
    assert {g for _, _, g in got} == {"all", "mitdb"}
    for t in tried:
        assert got[(t["share"], t["gate_bin"], "all")]["judged_macro_f1"] == pytest.approx(t["judged_macro_f1"])
        assert got[(t["share"], t["gate_bin"], "mitdb")]["beats"] == got[(t["share"], t["gate_bin"], "all")]["beats"]


def test_the_validation_parts_example_prints_one_row_per_decision_and_group(run: Path) -> None:
    """The docstring's command (`--shares 0.7`) on the run: one row per gate (none and each of GATE_BINS) and group."""
    printed = subprocess.run([sys.executable, str(REPO / "bench" / "validation_parts.py"), str(run), "--shares", "0.7"],
                             capture_output=True, text=True, timeout=300, check=True).stdout.splitlines()
    body = printed[2:]
    assert len(body) == (1 + len(GATE_BINS)) * 2 and all(line.startswith("| 0.7 | ") for line in body)
    assert body[0].startswith("| 0.7 | none | all (") and body[1].startswith("| 0.7 | none | mitdb (")
