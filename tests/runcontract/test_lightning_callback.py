"""The Lightning way in (runcontract.lightning, examples/workloads/lightning_classifier.py): a fit writes its run
directory; SIGTERM mid-fit saves Lightning's checkpoint and ends the run with exit.json code 75; the same run
directory run again resumes from that checkpoint and goes on adding to T."""

from __future__ import annotations

import json
import signal
import sys
import time

import pytest

from runcontract.contract import BREAKDOWN_PARTS, EXIT_CHECKPOINTED
from runcontract.records import read_result, write_config
from tests.runcontract.conftest import REPO, SCRIPTS, launch, start

pytest.importorskip("pytorch_lightning")

EXAMPLE = REPO / "examples" / "workloads" / "lightning_classifier.py"


def test_a_lightning_fit_writes_its_run_directory(tmp_path):
    assert launch(tmp_path, [sys.executable, str(EXAMPLE), "12"], timeout=280) == 0
    result = read_result(tmp_path)
    assert result is not None and result["status"] == "completed"
    assert result["timing"]["steps"] == 12 and result["timing"]["samples"] == 12 * 32
    assert sum(result["breakdown_s"][p] for p in BREAKDOWN_PARTS) == pytest.approx(
        result["timing"]["train_time_s"], rel=1e-9)
    assert result["attribution"]["mode"] == "callback" and result["attribution"]["not_separated"] == []
    assert result["attribution"]["measured"]["closure_calls"] == 12
    assert result["final_loss"] is not None and result["comm"]["grad_bytes"] == (32 * 64 + 64 + 64 * 2 + 2) * 4


def test_sigterm_saves_lightnings_checkpoint_and_the_next_run_resumes(tmp_path):
    write_config(tmp_path, {"config_id": "lightning", "train": {"metrics_interval_s": 0}})  # a line per step
    proc = start(tmp_path, [sys.executable, str(EXAMPLE), "1000000"])
    metrics = tmp_path / "metrics.jsonl"
    deadline = time.monotonic() + 240
    while (not metrics.exists() or len(metrics.read_text().splitlines()) < 5) and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == EXIT_CHECKPOINTED, (tmp_path / "stderr.log").read_text()[-3000:]
    ended = json.loads((tmp_path / "exit.json").read_text())
    assert ended["code"] == EXIT_CHECKPOINTED and ended["signal"] == "SIGTERM"
    assert ended["checkpoint"] == "lightning-stop.ckpt" and (tmp_path / "lightning-stop.ckpt").is_file()
    assert not (tmp_path / "result.json").exists()
    saved = ended["step"]
    assert saved >= 5
    # the same run directory again, 10 steps past the checkpoint: Lightning resumes at its global step
    assert launch(tmp_path, [sys.executable, str(EXAMPLE), str(saved + 10)], timeout=280) == 0, (
        (tmp_path / "stderr.log").read_text()[-3000:])
    result = read_result(tmp_path)
    assert result is not None and result["status"] == "completed"
    assert result["timing"]["resumes"] == 1 and result["timing"]["steps"] == saved + 10
    assert result["attribution"]["measured"]["optimizer_steps"] == 10  # this segment's: no step done twice
    assert result["timing"]["train_time_s"] > float(ended["train_time_s"])


def test_a_signal_just_after_the_callback_looked_still_saves_and_exits_75(tmp_path):
    """Lightning ends the fit itself at that batch's end (SIGTERMException, which would exit 0): the callback
    saves there instead, so exit.json and the process both say 75 and the next run resumes."""
    script = str(SCRIPTS / "lightning_late_signal.py")
    assert launch(tmp_path, [sys.executable, script, "1000", "6"], timeout=280) == EXIT_CHECKPOINTED, (
        (tmp_path / "stderr.log").read_text()[-3000:])
    ended = json.loads((tmp_path / "exit.json").read_text())
    assert ended["code"] == EXIT_CHECKPOINTED and ended["signal"] == "SIGTERM" and ended["step"] == 6
    assert ended["checkpoint"] == "lightning-stop.ckpt" and (tmp_path / "lightning-stop.ckpt").is_file()
    assert launch(tmp_path, [sys.executable, script, "10", "0"], timeout=280) == 0, (
        (tmp_path / "stderr.log").read_text()[-3000:])
    result = read_result(tmp_path)
    assert result["timing"]["resumes"] == 1 and result["timing"]["steps"] == 10
    assert result["attribution"]["measured"]["optimizer_steps"] == 4  # steps 7-10: none done twice
