"""A study whose work directory fills up mid-way, on the real Slurm over SSH: the work directory is a 4 MB
tmpfs the test user owns (tests/infra/small_fs.sh), filled by the test once the first configuration has
finished. Submitting stops and says so in one line; once the test frees the space, the runs that failed for
it are submitted again and the study completes with every configuration exactly once (Slurm's accounting
says so) and no damaged checkpoint or result."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from cockpit.launch.backend import AdaptiveInterval
from cockpit.launch.slurm.backend import SlurmBackend
from cockpit.run.runner import StudyRunner, TickReport
from cockpit.store import StudyStore
from cockpit.study.spec import load_study
from cockpit.tui.model import queue_site_line
from runcontract.contract import EXIT_DISK_FULL
from runcontract.records import read_result
from tests.control.conftest import slurm_cluster_table
from tests.studies import REPO, mitdb_data, study_toml
from trainer import rundir
from trainer.run import checkpoint

pytestmark = [pytest.mark.slurm, pytest.mark.sshd]
FAST = AdaptiveInterval(fast_s=0.3, running_s=0.6, slow_s=1.0)
SIZE = r"[\d.]+ (?:B|kB|MB|GB|TB)"  # cockpit.launch.storage.size_words
FULL_LINE = re.compile(rf"work directory full \({SIZE} / {SIZE}, {SIZE} free \(df on /\S+\)\); submitting paused, "
                       rf"\d+ run\(s\) to submit again once {SIZE} are free")


def _accounting(cluster, job_name: str) -> list[tuple[str, str]]:
    """(state, exit code) of every job of that name Slurm's accounting holds."""
    out = cluster.run(["sacct", "-n", "-P", "-X", "-S", "now-1hours", "--name", job_name, "-o", "State,ExitCode"]).stdout
    return [tuple(line.split("|")) for line in out.splitlines() if line.strip()]  # type: ignore[misc]


async def test_a_full_work_directory_pauses_submitting_and_the_study_completes_once_freed(
        sshd_server, slurm_env, slurm_cluster, small_fs, tmp_path):
    fs = small_fs("4m", owner=slurm_cluster.user, under=slurm_cluster.workdir("full"))
    tokens = slurm_cluster.workdir("tokens")  # the shards elsewhere: the runs' own files fill the directory
    name = f"full-{uuid.uuid4().hex[:6]}"
    path = tmp_path / f"{name}.toml"
    path.write_text(study_toml(name, fs.path, cluster=slurm_cluster_table(sshd_server, slurm_env, max_concurrent_jobs=1),
                               data=mitdb_data(tokens), train={"steps": 4, "window": 32},
                               sweep={"window": [32, 40, 48, 56]}))
    study = load_study(path)
    store = StudyStore(tmp_path / "cockpit.sqlite")
    runner = StudyRunner(study, SlurmBackend.from_study(study, follow_interval_s=0.3), store, interval=FAST)
    reports: list[TickReport] = []
    headers: list[str] = []
    queue_lines: list[str] = []
    phase = {"filled": False, "freed": False, "paused_ticks": 0}

    def on_tick(report: TickReport) -> None:
        reports.append(report)
        snap = store.snapshot(study.name)
        headers.append(snap.connection_detail)
        queue_lines.append(queue_site_line(snap))
        if not phase["filled"] and store.results(runner.key) and any(c.state == "running" for c in snap.configs):
            # full from the first result on, while the next configuration's job runs: it fails for the disk (on a
            # loaded machine a fill at the first result alone can come before the next job starts, and nothing fails)
            fs.fill(leave=0)
            phase["filled"] = True
        elif phase["filled"] and not phase["freed"] and report.disk and report.disk["paused"]:
            phase["paused_ticks"] += 1
            if phase["paused_ticks"] >= 3:  # paused over several polls: nothing is submitted meanwhile
                fs.free()
                phase["freed"] = True

    try:
        await runner.run(timeout_s=400, on_tick=on_tick)
    finally:
        await runner.close()

    assert phase["freed"], [r.waiting for r in reports]
    paused = [r for r in reports if r.disk and r.disk["paused"]]
    assert paused and not [r for r in paused if r.submitted], "submitted while the work directory was full"
    lines = {r.waiting for r in paused}
    assert all(FULL_LINE.fullmatch(line) for line in lines), lines
    assert any("waiting: work directory full (" in h for h in headers), headers  # the TUI's header
    assert any(line.startswith("waiting: work directory full (") for line in queue_lines), queue_lines  # its queue view
    assert reports[-1].waiting == "" and "waiting" not in headers[-1]
    problems = store.snapshot(study.name).problems  # "source: message", newest first
    assert any(p.startswith("disk: ") and FULL_LINE.match(p, len("disk: ")) for p in problems), problems
    assert any(p.startswith("disk: work directory has room again (") for p in problems), problems

    # every configuration completed exactly once; the only other jobs are those that failed for the full disk
    snap = store.snapshot(study.name)
    assert [c.state for c in snap.configs] == ["completed"] * 4, snap.problems
    full_exits = 0
    for cfg in study.runnable():
        deadline = time.monotonic() + 30
        while len(acct := _accounting(slurm_cluster, f"{study.name}-{cfg.config_id}")) < \
                len(snap.jobs_of(cfg.config_id)) and time.monotonic() < deadline:
            time.sleep(1)  # slurmdbd records a job's end a moment after it leaves the queue
        assert [s for s, _ in acct].count("COMPLETED") == 1, (cfg.config_id, acct)
        others = [(s, code) for s, code in acct if s != "COMPLETED"]
        assert all(s == "FAILED" and code == f"{EXIT_DISK_FULL}:0" for s, code in others), (cfg.config_id, acct)
        full_exits += len(others)
        assert len(acct) == len(snap.jobs_of(cfg.config_id))
    assert full_exits >= 1
    # no damaged file: every run's model and result read whole, no temporary file left behind
    for cfg in study.runnable():
        run_dir = Path(study.run_dir(cfg))
        checkpoint.load(run_dir / rundir.MODEL_FILE)
        assert read_result(run_dir)["status"] == "completed"
        assert not (run_dir / rundir.CHECKPOINT_FILE).exists()
        assert not [p.name for p in run_dir.iterdir() if p.name.endswith(".tmp") or p.name.startswith(".hlm-space")]
    store.close()


def test_cockpit_run_headless_json_says_the_pause_and_its_end(sshd_server, slurm_env, slurm_cluster, small_fs,
                                                              tmp_path):
    """The command as a user types it: `disk_full` events (paused, then not) and the `waiting` line, the study
    completed; the test fills the directory when the first configuration has finished and frees it once the
    pause is said."""
    fs = small_fs("4m", owner=slurm_cluster.user, under=slurm_cluster.workdir("full"))
    tokens = slurm_cluster.workdir("tokens")
    name = f"full-cli-{uuid.uuid4().hex[:6]}"
    path = tmp_path / f"{name}.toml"
    path.write_text(study_toml(name, fs.path, cluster=slurm_cluster_table(sshd_server, slurm_env, max_concurrent_jobs=1),
                               data=mitdb_data(tokens), train={"steps": 4, "window": 32},
                               sweep={"window": [32, 40, 48]}))
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    cmd = [sys.executable, "-m", "cockpit", "run", "--headless", "--json", "--skip-preflight", "--timeout", "400",
           str(path)]
    events = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                          cwd=tmp_path) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            event = json.loads(line)
            events.append(event)
            if event["event"] == "finished" and not (fs.path / ".ballast").exists() and \
                    not any(e["event"] == "disk_full" for e in events):
                fs.fill(leave=0)
            elif event["event"] == "disk_full" and event["paused"]:
                fs.free()
        err = proc.stderr.read() if proc.stderr else ""
    assert proc.returncode == 0, err
    full = [e for e in events if e["event"] == "disk_full"]
    assert full and full[0]["paused"] and not full[-1]["paused"], full
    first = full[0]
    assert FULL_LINE.fullmatch(first["line"]) and first["path"] == str(fs.path) and first["tool"].startswith("df on ")
    assert first["free_bytes"] < first["needed_bytes"] and first["used_bytes"] <= first["limit_bytes"]
    assert any(e["event"] == "waiting" and e["limit"] == first["line"] for e in events)
    end = next(e for e in events if e["event"] == "study_end")
    assert (end["done"], end["failed"], end["total"]) == (3, 0, 3)
