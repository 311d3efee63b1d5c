"""`cockpit run --headless` on a 2-configuration study against the real Slurm over the real sshd, then
`cockpit report`: the report's table equals the analysis of the result files the jobs wrote."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from cockpit.forecast.analysis import scaling_table
from cockpit.study.spec import load_study
from runcontract.records import read_result
from tests.report.test_report import markdown_rows

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slurm, pytest.mark.sshd]


def cockpit(*args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cockpit", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_headless_run_then_report_over_ssh_and_slurm(make_study, tmp_path: Path):
    name = f"e2e-{uuid.uuid4().hex[:6]}"
    spec = make_study(name, "gpus_per_node = [1, 2]", steps=30)
    study = load_study(spec)
    assert len(study.runnable()) == 2
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg"), "PYTHONPATH": str(REPO)}

    run = cockpit("run", "--headless", str(spec), "--out", str(tmp_path / "run-report"), "--timeout", "240", env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"{name}: all 2 configurations completed" in run.stdout
    assert "2/2 finished (2 ok, 0 failed)" in run.stdout  # plain progress lines (not a terminal)
    assert re.search(r"\d\d:\d\d:\d\d connection: connected \(", run.stdout), run.stdout  # link changes printed

    report = cockpit("report", str(spec), "--out", str(tmp_path / "report"), env=env, timeout=120)
    assert report.returncode == 0, report.stdout + report.stderr
    on_disk = [read_result(study.run_dir(cfg)) for cfg in study.runnable()]
    expected = scaling_table(on_disk)
    for out in ("run-report", "report"):
        rows = markdown_rows((tmp_path / out / "report.md").read_text(), "Scaling per configuration")
        assert [r[3] for r in rows] == ["1×1", "1×2"]
        assert [r[8] for r in rows] == [f"{t:.2f}" for t in expected["train_time_s"]]
        assert [r[12] for r in rows] == [f"{s:.3f}" for s in expected["speedup"]]
        assert [r[13] for r in rows] == [f"{e * 100:.0f}%" for e in expected["efficiency"]]
        assert [r[14] for r in rows] == [f"{o:.2f}" for o in expected["overhead_s"]]
        # the verdict as the analysis gives it; two processes on a loaded machine can also come out at no loss
        assert rows[1][17] == expected["verdict"].iloc[1] and rows[1][17].startswith(("lost ", "no loss: "))


def test_unknown_host_key_stops_the_run_with_the_fix_and_submits_nothing(make_study, tmp_path: Path):
    """The real sshd, but an empty known_hosts: refused with a message saying what to do, exit 2, no traceback."""
    name = f"hostkey-{uuid.uuid4().hex[:6]}"
    spec = make_study(name, "gpus_per_node = [1]")
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    text = spec.read_text()
    known = next(line for line in text.splitlines() if line.startswith("known_hosts = "))
    spec.write_text(text.replace(known, f'known_hosts = "{empty}"'))
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg"), "PYTHONPATH": str(REPO)}
    run = cockpit("run", "--headless", str(spec), "--timeout", "60", env=env, timeout=120)
    assert run.returncode == 2, run.stdout + run.stderr
    assert f"cockpit: cannot start {name}:" in run.stderr
    assert "ssh-keyscan" in run.stderr and "Traceback" not in run.stderr
    assert not (Path(load_study(spec).study_dir()) / "runs").exists()


def test_headless_failure_line_carries_the_reason_over_slurm(make_study, tmp_path: Path):
    """A configuration the trainer refuses (a window longer than any record of the data): the headless
    FAILED line names the exit code and the trainer's message, read from the job over SSH."""
    name = f"e2efail-{uuid.uuid4().hex[:6]}"
    spec = make_study(name, "window = [1000000]", steps=5)
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg"), "PYTHONPATH": str(REPO)}
    # no preflight: its job is another Slurm job, and the run above goes through it
    run = cockpit("run", "--headless", "--skip-preflight", str(spec), "--out", str(tmp_path / "report"),
                  "--timeout", "240", env=env)
    assert run.returncode == 1, run.stdout + run.stderr
    failed = [line for line in run.stdout.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 1 and "exit 3" in failed[0] and "1000000" in failed[0].split(": ", 2)[2], run.stdout
    assert "failed " in run.stdout and "--resubmit-failed" in run.stdout
