"""A study larger than the site lets one user have at once, on the real Slurm: QOS `capped` of the test
Slurm (tests/infra/accounting.sh: MaxSubmitJobsPerUser=3, MaxJobsPerUser=2). sbatch's "not now" becomes a
wait, never a refused line, and every configuration runs exactly once; left unset, the pace comes from the
limits and the first round fills them without running into them.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from cockpit.launch.backend import AdaptiveInterval
from cockpit.launch.slurm.backend import SlurmBackend
from cockpit.run.preflight import run_preflight
from cockpit.run.runner import StudyRunner, TickReport
from cockpit.store import StudyStore
from cockpit.study.spec import load_study
from tests.studies import REPO

pytestmark = [pytest.mark.slurm, pytest.mark.sshd]
FAST = AdaptiveInterval(fast_s=0.3, running_s=0.6, slow_s=1.0)
FIVE = "window = [32, 40, 48, 56, 64]"  # five 1x1 configurations, above the QOS's 3 queued or running
FOUR = "window = [32, 40, 48, 56]"  # four: above the 3 too, and one round of jobs fewer to run


@pytest.fixture(autouse=True)
def _none_of_our_jobs_left(slurm_cluster):
    """The limits count every job of the user: start from none. An earlier test's jobs may still be
    completing, and Slurm counts a job against the submit limit until squeue no longer lists it."""
    deadline = time.monotonic() + 180
    while jobs := slurm_cluster.run(["squeue", "--me", "-h", "-o", "%i %T"], check=False).stdout.split("\n"):
        if not any(j.strip() for j in jobs):
            break
        if time.monotonic() > deadline:
            pytest.fail(f"the test user still has jobs after 180 s: {jobs}")
        time.sleep(1)
    time.sleep(2)  # the limit's count follows squeue by a moment


def _jobcomp_ids(slurm_env: dict[str, str], job_name: str) -> set[str]:
    path = Path(slurm_env["HLM_SLURM_DIR"]) / "log" / "jobcomp.txt"
    text = path.read_text() if path.exists() else ""
    return set(re.findall(rf"JobId=(\d+) \S+ \S+ Name={re.escape(job_name)} ", text))


async def _run(study, store: StudyStore, headers: list[str] | None = None) -> tuple[StudyRunner, list[TickReport]]:
    runner = StudyRunner(study, SlurmBackend.from_study(study, follow_interval_s=0.3), store, interval=FAST)
    reports: list[TickReport] = []

    def on_tick(report: TickReport) -> None:
        reports.append(report)
        if headers is not None:  # what the TUI's header shows beside the connection
            headers.append(store.snapshot(study.name).connection_detail)

    try:
        await runner.run(timeout_s=400, on_tick=on_tick)
    finally:
        await runner.close()
    return runner, reports


def _every_configuration_once(study, store: StudyStore, slurm_env) -> None:
    snap = store.snapshot(study.name)
    assert [c.state for c in snap.configs] == ["completed"] * len(study.runnable()), snap.problems
    assert sorted(j.config_id for j in snap.jobs) == sorted(c.config_id for c in study.runnable())
    for cfg in study.runnable():
        assert len(_jobcomp_ids(slurm_env, f"{study.name}-{cfg.config_id}")) == 1


async def test_a_study_over_the_submit_limit_waits_and_runs_each_configuration_once(make_study, slurm_env,
                                                                                   tmp_path):
    name = f"cap-{uuid.uuid4().hex[:6]}"
    # max_concurrent_jobs above the QOS's limit, as a study written for another site would say
    study = load_study(make_study(name, FOUR, steps=4, qos="capped", max_concurrent_jobs=6, cores_per_node=2))
    store = StudyStore(tmp_path / "cockpit.sqlite")
    headers: list[str] = []
    runner, reports = await _run(study, store, headers)
    assert not [r for r in reports if r.refused], [r.refused for r in reports if r.refused]
    waits = {r.waiting for r in reports if r.waiting}
    # what the lines and the events say; "in use" is every job squeue lists for the user at that moment
    # (completing ones and those of other QOSs too), read a moment after Slurm's own count: not always 3
    in_use = re.compile(r"QOS submit limit \(\d+ of 3 in use\)")
    assert waits and all(in_use.fullmatch(w) for w in waits), waits
    assert any(in_use.search(h) and " · waiting: " in h for h in headers), headers  # the TUI
    assert "waiting" not in headers[-1]
    assert runner.limits is not None and (runner.limits.max_submit, runner.limits.max_running) == (3, 2)
    _every_configuration_once(study, store, slurm_env)
    store.close()


async def test_left_unset_the_pace_is_what_the_site_allows(make_study, slurm_env, tmp_path):
    name = f"pace-{uuid.uuid4().hex[:6]}"
    study = load_study(make_study(name, FOUR, steps=4, qos="capped", max_concurrent_jobs=None, cores_per_node=2))
    assert study.cluster.max_concurrent_jobs is None
    store = StudyStore(tmp_path / "cockpit.sqlite")
    runner, reports = await _run(study, store)
    assert not [r for r in reports if r.refused]
    # the first round is what the QOS's 3 leave (less a job of the user Slurm still lists at the start; not
    # the old default of 4) and never runs into the limit; later, Slurm may count a job that squeue no longer
    # lists for a moment: a wait then, never a refusal
    assert runner.limits is not None and runner.limits.max_submit == 3
    first = next(i for i, r in enumerate(reports) if r.submitted)
    assert 1 <= len(reports[first].submitted) <= 3 and not reports[first].waiting, reports[first]
    assert not [r for r in reports[:first + 1] if r.waiting]
    _every_configuration_once(study, store, slurm_env)
    store.close()


async def test_the_preflight_reads_the_limits_and_says_how_long_the_study_takes(make_study, tmp_path):
    name = f"pf-pace-{uuid.uuid4().hex[:6]}"
    study = load_study(make_study(name, FIVE, steps=4, qos="capped", max_concurrent_jobs=6, cores_per_node=2))
    backend = SlurmBackend.from_study(study)
    try:
        report = await run_preflight(study, backend, poll_s=0.3, timeout_s=120)
    finally:
        await backend.close()
    row = next(c for job in report.jobs for c in job.checks if c.area == "site limits")
    # five 1-minute runs (expected_minutes = 1), six at once but two running (the QOS's running limit): three
    # rounds
    # the user's jobs now: the preflight's own may already be queued when squeue answers
    assert re.match(r"submit limit 3, running limit 2 \(QOS capped\); \d+ job\(s\) of yours", row.found), row.found
    assert f"6 of the study's jobs at once, 2 running; 5 runs take about {3 * study.hours_per_run():.1f} h" \
        in row.found, row.found
    # what the preflight wrote on the cluster is as private as a run's files (Slurm's logs included)
    made = [p for p in (Path(study.study_dir()) / "preflight").rglob("*")]
    assert any(p.name.startswith("slurm-") for p in made)
    wrong = [(str(p), oct(p.stat().st_mode)) for p in made
             if stat.S_IMODE(p.stat().st_mode) != (0o700 if p.is_dir() else 0o600)]
    assert not wrong, wrong
    # a warning: the runner waits; what the limit leaves depends on the jobs squeue lists at that moment
    assert row.verdict == "warn" and re.fullmatch(r"max_concurrent_jobs <= \d+", row.expected), row.expected


def test_cockpit_run_headless_waits_at_the_limit_and_refuses_nothing(make_study, slurm_env):
    """The command as a user types it, over a QOS that lets 3 jobs be queued or running: a `waiting` line and
    `submitting again`, never a REFUSED line, every configuration once (the JSON events say the same through
    the same flag: tests/control/test_json_events.py)."""
    name = f"cli-cap-{uuid.uuid4().hex[:6]}"
    path = make_study(name, FOUR, steps=2, qos="capped", max_concurrent_jobs=6, cores_per_node=2)
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_DATA_HOME": str(path.parent / f"xdg-{name}")}
    cmd = [sys.executable, "-m", "cockpit", "run", "--headless", "--skip-preflight", "--timeout", "400", str(path)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=500, cwd=path.parent, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert not [line for line in lines if "REFUSED" in line or "FAILED" in line], done.stdout
    assert any(re.search(r"waiting: QOS submit limit \(\d+ of 3 in use\)", line) for line in lines), done.stdout
    assert any("submitting again" in line for line in lines), done.stdout
    study = load_study(path)
    for cfg in study.runnable():
        assert len(_jobcomp_ids(slurm_env, f"{study.name}-{cfg.config_id}")) == 1, cfg.config_id
