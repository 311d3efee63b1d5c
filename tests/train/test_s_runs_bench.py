"""bench/s_runs.py over a real fine-tune (three mitdb records, the trainer's own CLI): every S beat of the record
is placed once, the run's own decision is what counts them, and the intervals are the record's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
from s_runs import PLACES, places, record_rows  # noqa: E402  (a bench script)

from runcontract.records import read_result  # noqa: E402
from tests.data.test_rr_context import _beats  # noqa: E402


def test_places_read_the_neighbours_labels() -> None:
    n, s, v = 0, 1, 2
    labels = np.array([s, n, s, s, s, v, s, n])
    assert places(labels).tolist() == [0, -1, 1, 2, 3, -1, 0, -1]  # alone at the edges too


@pytest.fixture(scope="module")
def run(physionet: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("sruns")
    cmd = [sys.executable, "-m", "trainer", "train", "--run-dir", str(where / "run"), "--data", str(physionet / "mitdb"),
           "--records", "201", "209", "222", "--test-records", "222", "--token-cache", str(where / "tokens"),
           "--tokenizer", "samples", "--fs", "180", "--window", "32", "--context", "rr", "--layers", "1",
           "--d-model", "16", "--heads", "2", "--batch-size", "32", "--steps", "5", "--mode", "finetune",
           "--task", "beat", "--pool", "centre", "--device", "cpu", "--cpus-per-task", "1", "--num-workers", "0"]
    subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600, check=True)
    return where / "run"


def test_every_s_beat_is_placed_once_and_counted_by_the_runs_decision(run: Path, physionet: Path) -> None:
    rows = record_rows(run, "222")
    rr, cls = _beats(physionet, "222")
    assert sum(rows[p]["beats"] for p in PLACES) == int((cls == 1).sum()) > 200
    assert rows["N beats"]["beats"] == int((cls == 0).sum())
    assert rows["inside a run"]["beats"] > 0 and rows["alone"]["beats"] > 0
    assert all(0 <= r["called S"] <= r["beats"] for r in rows.values())
    # the run scored 222 as its test split: the S beats it found there are the places' sum
    ev = read_result(run)["eval"]
    assert sum(rows[p]["called S"] for p in PLACES) == ev["by_record"]["222"][1][1]
    assert rows["N beats"]["pre_sinus"] > rows["inside a run"]["pre_sinus"]


def test_the_command_prints_one_table_per_run(run: Path) -> None:
    out = subprocess.run([sys.executable, str(REPO / "bench" / "s_runs.py"), str(run), "--record", "222"],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    assert f"{run}: record 222" in out and all(p in out for p in PLACES) and "pre_sinus" in out
