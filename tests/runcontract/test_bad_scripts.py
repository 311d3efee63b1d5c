"""Bad scripts get one line: a script that exits non-zero, writes no result, ignores the stop signal, needs a
newer library, meets a config.json of a newer schema, or is not there is named by `runcontract.judge` with
the last lines of its log, and nothing of the run directory is lost."""

from __future__ import annotations

import json
import signal
import sys
import time

from cockpit.figures import explain
from cockpit.forecast.analysis import run_row
from runcontract import CONTRACT_VERSION, judge
from runcontract.contract import EXIT_USAGE, LAUNCH_TIME_ENV
from runcontract.files import write_json
from runcontract.judge import startup_note
from runcontract.records import read_result, write_config
from tests.runcontract.conftest import SCRIPTS, launch, start

NO_STEP_FIX = ('a script that steps its own way: mode = "explicit" with run.step() at each step\'s end; a script '
               "that trains nothing, such as inference only, has no T to measure")


def test_a_script_that_exits_non_zero(tmp_path):
    code = launch(tmp_path, [sys.executable, "-m", "runcontract.attach", str(SCRIPTS / "exits_nonzero.py")])
    assert code == 3
    assert judge(tmp_path, code) == ("exited 3 (the script's own exit status): the script exited with 3; log: "
                                     "no shards under /scratch/shards: nothing more to train on")
    assert not (tmp_path / "result.json").exists()


def test_a_script_that_writes_no_result(tmp_path):
    assert launch(tmp_path, [sys.executable, str(SCRIPTS / "no_contract.py")]) == 0
    assert judge(tmp_path, 0) == (f"wrote no result: no result.json and no exit.json in {tmp_path}; "
                                  "log: epoch 1: loss 0.693 | training finished")


def test_a_script_that_ignores_the_stop_signal(tmp_path):
    write_config(tmp_path, {"config_id": "deaf", "train": {"metrics_interval_s": 0}})
    proc = start(tmp_path, [sys.executable, str(SCRIPTS / "ignores_stop.py")])
    deadline = time.monotonic() + 60
    while "step 50" not in (tmp_path / "stdout.log").read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    time.sleep(2.0)  # the grace a launcher gives before it kills
    assert proc.poll() is None, "the script was meant to go on after SIGTERM"
    proc.kill()
    proc.wait(timeout=30)
    stop = json.loads((tmp_path / "stop.json").read_text())
    when = time.strftime("%H:%M:%S", time.localtime(stop["t"]))
    line = judge(tmp_path, proc.returncode)
    assert line.startswith(f"ignored the stop signal: SIGTERM at {when}, then no checkpoint and no exit.json "
                           "(killed before it ended); log: step ")
    assert (tmp_path / "metrics.jsonl").read_text().count("\n") >= 50  # what it wrote is kept


def test_a_script_written_for_a_newer_library(tmp_path):
    code = launch(tmp_path, [sys.executable, str(SCRIPTS / "newer_library.py")])
    assert code != 0
    ended = json.loads((tmp_path / "exit.json").read_text())
    assert ended["code"] == EXIT_USAGE
    line = judge(tmp_path, code)
    need = (f"the script needs runcontract contract version {CONTRACT_VERSION + 1}; this library is version "
            f"{CONTRACT_VERSION} (upgrade runcontract where the script runs)")
    assert line.startswith(f"refused: {need}; log: ") and line.endswith(f"ContractError: {need}")


def test_a_config_of_a_newer_schema_is_refused_in_one_line(tmp_path):
    write_json(tmp_path / "config.json", {"schema_version": 99, "config_id": "future"})
    code = launch(tmp_path, [sys.executable, str(SCRIPTS / "plain_loop.py"), "2"])
    assert code != 0
    assert judge(tmp_path, code).startswith(
        f"refused: {tmp_path / 'config.json'}: schema_version 99 is newer than this reader (1); "
        "upgrade hlm-cockpit, which ships runcontract")


def test_a_script_that_is_not_there(tmp_path):
    code = launch(tmp_path, [sys.executable, "-m", "runcontract.attach", "train_missing.py"])
    assert code == EXIT_USAGE
    assert judge(tmp_path, code) == (f"refused: train_missing.py: no such script (from {tmp_path}); "
                                     f"log: runcontract: train_missing.py: no such script (from {tmp_path})")


def test_a_stop_signal_ends_a_script_run_without_edits_and_says_so(tmp_path):
    """No edit, no checkpoint: the signal ends the script as it would have, after exit.json names it."""
    proc = start(tmp_path, [sys.executable, "-m", "runcontract.attach", str(SCRIPTS / "long_loop.py")])
    deadline = time.monotonic() + 60
    while "step 100" not in (tmp_path / "stdout.log").read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == -signal.SIGTERM
    line = judge(tmp_path, proc.returncode)
    assert line.startswith("exited 143 (stopped by SIGTERM without a checkpoint): SIGTERM ended a script run "
                           "without edits: it has no checkpoint to save, the run starts over; log: step ")
    assert not (tmp_path / "result.json").exists()


def test_a_loop_that_never_ends_a_step_is_named(tmp_path):
    code = launch(tmp_path, [sys.executable, "-m", "runcontract.attach", str(SCRIPTS / "no_contract.py")])
    assert code == 1
    assert judge(tmp_path, code) == ("exited 1 (error): no step ended: the no-edit mode counts a step per "
                                     f"torch.optim optimizer step, and the script made none ({NO_STEP_FIX}); "
                                     "log: epoch 1: loss 0.693 | training finished")


def test_an_inference_only_script_is_told_what_would_measure_it(tmp_path):
    code = launch(tmp_path, [sys.executable, "-m", "runcontract.attach", str(SCRIPTS / "inference_only.py")])
    assert code == 1
    assert judge(tmp_path, code) == ("exited 1 (error): no step ended: the no-edit mode counts a step per "
                                     f"torch.optim optimizer step, and the script made none ({NO_STEP_FIX}); "
                                     "log: predicted 64 rows")
    assert not (tmp_path / "result.json").exists()


def test_a_run_whose_steps_are_a_sliver_of_its_wall_time_says_it_measured_start_up(tmp_path, monkeypatch):
    """Two steps of a small loop: T is milliseconds of the seconds that starting Python and importing torch take
    (the wall time counts from the launch, HLM_LAUNCH_TIME, as a batch script sets it)."""
    monkeypatch.setenv(LAUNCH_TIME_ENV, str(time.time()))
    assert launch(tmp_path, [sys.executable, str(SCRIPTS / "plain_loop.py"), "2"]) == 0
    result = read_result(tmp_path)
    assert result is not None
    t, wall = result["timing"]["train_time_s"], result["timing"]["wall_s"]
    assert t < 0.1 * wall  # what the note is about, as this run measured it
    note = f"the study is measuring start-up: T is {t:.2f} s of {wall:.1f} s wall; run more steps"
    assert startup_note(result) == note
    assert judge(tmp_path) == f"completed: T = {t:.2f} s over 2 steps on 1 worker(s) (parts: explicit); {note}"
    row = run_row(result)  # the report's and the TUI's explanation of the run carries it too
    assert row["startup_note"] == note and explain.verdicts({**row, "status": "completed", "baseline": True})[1].endswith(
        f". The study is measuring start-up: T is {t:.2f} s of {wall:.1f} s wall; run more steps")
    # a run whose steps are most of its wall time has no such note
    assert startup_note({"timing": {"train_time_s": 9.0, "wall_s": 10.0}}) == ""
    assert startup_note({"timing": {"train_time_s": 0.5}}) == ""  # no wall time recorded: nothing to say
