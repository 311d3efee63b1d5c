"""The explicit way in: a plain PyTorch loop (tests/runcontract/scripts/plain_loop.py, docs/workloads.md's
example) writes a run directory the cockpit reads; a stop signal ends it checkpointed and the run goes on."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cockpit.report.source import from_run_dirs
from runcontract import judge
from runcontract.contract import BREAKDOWN_PARTS, EXIT_CHECKPOINTED
from runcontract.records import read_result, write_config
from tests.runcontract.conftest import SCRIPTS, launch, script_env, start


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_plain_loop_writes_the_run_directory_the_cockpit_reads(tmp_path):
    run_dir = tmp_path / "runs" / "plain"
    assert launch(run_dir, [sys.executable, str(SCRIPTS / "plain_loop.py"), "12"]) == 0
    result = read_result(run_dir)
    assert result is not None and result["status"] == "completed"
    t = result["timing"]["train_time_s"]
    assert t > 0 and result["timing"]["steps"] == 12 and result["timing"]["samples"] == 96
    # the per-step spread the prediction prices the wait for the slower rank from, as the HLM trainer records it
    assert isinstance(result["timing"]["step_time_sd_s"], float) and result["timing"]["step_time_sd_s"] > 0
    assert set(result["breakdown_s"]) == set(BREAKDOWN_PARTS)
    assert sum(result["breakdown_s"].values()) == pytest.approx(t, rel=1e-9)
    assert result["breakdown_s"]["data_wait"] > 0 and result["breakdown_s"]["compute"] > 0
    assert result["breakdown_s"]["optimizer"] > 0 and result["breakdown_s"]["comm"] == 0
    assert result["attribution"]["mode"] == "explicit"
    assert result["attribution"]["not_separated"] == [
        "comm: the script marks no `comm` part (its seconds are in the part open at the time, or other)"]
    assert [r["rank"] for r in result["breakdown_by_rank"]] == [0]
    final = lines(run_dir / "metrics.jsonl")[-1]
    assert final["final"] and final["step"] == 12 and final["train_time_s"] == pytest.approx(t)
    gpu = lines(run_dir / "gpu.jsonl")
    assert gpu and ("nvml" in gpu[0] or "util_pct" in gpu[0])
    assert json.loads((run_dir / "exit.json").read_text())["code"] == 0
    report = from_run_dirs(tmp_path / "runs", "plain", "local")
    assert [r["config_id"] for r in report.results] == ["plain"]
    assert judge(run_dir).startswith(f"completed: T = {t:.2f} s over 12 steps on 1 worker(s)")


def test_a_stop_signal_ends_the_loop_checkpointed_and_the_run_goes_on(tmp_path):
    run_dir = tmp_path / "runs" / "stopped"
    write_config(run_dir, {"config_id": "stopped", "train": {"metrics_interval_s": 0}})
    proc = start(run_dir, [sys.executable, str(SCRIPTS / "plain_loop.py"), "5000"])
    deadline = time.monotonic() + 60
    while not (run_dir / "metrics.jsonl").exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == EXIT_CHECKPOINTED
    ended = json.loads((run_dir / "exit.json").read_text())
    assert ended["code"] == EXIT_CHECKPOINTED and ended["signal"] == "SIGTERM"
    assert (run_dir / "checkpoint.pt").exists() and not (run_dir / "result.json").exists()
    assert judge(run_dir).startswith(f"checkpointed after SIGTERM at step {ended['step']}")
    before = ended["train_time_s"]

    assert launch(run_dir, [sys.executable, str(SCRIPTS / "plain_loop.py"), "4"]) == 0
    result = read_result(run_dir)
    assert result is not None and result["timing"]["resumes"] == 1
    assert result["timing"]["steps"] == ended["step"] + 4
    assert result["timing"]["train_time_s"] > before
    assert sum(result["breakdown_s"].values()) == pytest.approx(result["timing"]["train_time_s"], rel=1e-9)


def test_the_package_loads_the_standard_library_only():
    code = ("import sys, runcontract, runcontract.attach, runcontract.judge; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy', 'pynvml', 'cockpit', "
            "'trainer', 'transformers')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=script_env(Path.cwd()))
    assert out.stdout.strip() == "[]"
