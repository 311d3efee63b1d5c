"""The transformers way in: a Trainer fine-tune (tests/runcontract/scripts/hf_trainer.py, docs/workloads.md's
example) with RunContractCallback writes the run directory; the Trainer's own clock agrees with T."""

from __future__ import annotations

import json
import signal
import sys
import time

import pytest

from runcontract.contract import BREAKDOWN_PARTS, EXIT_CHECKPOINTED
from runcontract.records import read_result
from tests.runcontract.conftest import SCRIPTS, launch, start

pytest.importorskip("transformers")


def test_a_trainer_fine_tune_writes_its_run_directory(tmp_path):
    assert launch(tmp_path, [sys.executable, str(SCRIPTS / "hf_trainer.py"), "6"], timeout=300) == 0
    result = read_result(tmp_path)
    assert result is not None and result["status"] == "completed"
    t = result["timing"]["train_time_s"]
    assert result["timing"]["steps"] == 6 and result["timing"]["samples"] == 6 * 4
    assert sum(result["breakdown_s"][p] for p in BREAKDOWN_PARTS) == pytest.approx(t, rel=1e-9)
    for part in ("data_wait", "compute", "optimizer"):
        assert result["breakdown_s"][part] > 0, part
    attribution = result["attribution"]
    assert attribution["mode"] == "callback" and attribution["not_separated"] == []
    assert attribution["measured"]["trainer_global_step"] == 6 and attribution["measured"]["optimizer_steps"] == 6
    assert result["final_loss"] is not None
    # the Trainer's own train_runtime (its first to its last step, printed in its summary) is within T's reach
    summary = [line for line in (tmp_path / "stdout.log").read_text().splitlines() if "train_runtime" in line]
    runtime = float(json.loads(summary[-1].replace("'", '"'))["train_runtime"])
    assert runtime == pytest.approx(t, abs=0.5 + 0.2 * t)


def test_a_stop_signal_makes_the_trainer_save_and_the_run_end_checkpointed(tmp_path):
    proc = start(tmp_path, [sys.executable, str(SCRIPTS / "hf_trainer.py"), "100000"])
    deadline = time.monotonic() + 240
    while "'loss'" not in (tmp_path / "stdout.log").read_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == EXIT_CHECKPOINTED
    ended = json.loads((tmp_path / "exit.json").read_text())
    assert ended["code"] == EXIT_CHECKPOINTED and ended["signal"] == "SIGTERM"
    assert (tmp_path / ended["checkpoint"]).is_dir()  # the Trainer's own checkpoint-<step> folder
    assert ended["checkpoint"] == f"hf-out/checkpoint-{ended['step']}"
    assert not (tmp_path / "result.json").exists()
