"""One study, two cockpits: the laptop's cockpit submits half a study and stops; a second cockpit with an empty
store of its own (the login node's) starts mid-study on the real Slurm, adopts the jobs it finds queued or
running and the results it finds on disk, and submits nothing twice."""

from __future__ import annotations

import asyncio
import re
import uuid
from pathlib import Path

import pytest

from cockpit.commands.open import browse
from cockpit.launch.backend import AdaptiveInterval
from cockpit.launch.slurm.backend import SlurmBackend
from cockpit.run.runner import StudyRunner, TickReport
from cockpit.store import StudyStore
from cockpit.study.spec import load_study
from tests.control.test_browse_demo_store import wait_for

pytestmark = [pytest.mark.slurm, pytest.mark.sshd]
FAST = AdaptiveInterval(fast_s=0.3, running_s=0.6, slow_s=1.0)
SIX = "window = [32, 40, 48, 56, 64, 72]"


def _jobcomp_ids(slurm_env: dict[str, str], job_name: str) -> set[str]:
    path = Path(slurm_env["HLM_SLURM_DIR"]) / "log" / "jobcomp.txt"
    text = path.read_text() if path.exists() else ""
    return set(re.findall(rf"JobId=(\d+) \S+ \S+ Name={re.escape(job_name)} ", text))


async def test_a_second_cockpit_adopts_a_study_in_flight_and_submits_nothing_twice(make_study, slurm_env, tmp_path):
    name = f"two-{uuid.uuid4().hex[:6]}"
    study = load_study(make_study(name, SIX, steps=40, max_concurrent_jobs=2, cores_per_node=2))
    first_store = StudyStore(tmp_path / "laptop.sqlite")
    first = StudyRunner(study, SlurmBackend.from_study(study, follow_interval_s=0.3), first_store, interval=FAST)
    by_first: list[str] = []
    try:  # the laptop's cockpit: until a job has a result while others are queued or running
        for _ in range(600):
            report = await first.tick()
            by_first += report.submitted
            if first_store.results(first.key) and first_store.active_jobs(first.key):
                break
            await asyncio.sleep(first.interval_s)
        else:
            pytest.fail("the first cockpit never had one result and two active jobs")
    finally:
        await first.close()  # its jobs go on without it
    assert 2 <= len(by_first) < 6  # two at a time: some done, some in flight, the rest not yet submitted

    second_store = StudyStore(tmp_path / "login-node.sqlite")  # empty: it has never heard of the study
    second = StudyRunner(study, SlurmBackend.from_study(study, follow_interval_s=0.3), second_store, interval=FAST)
    reports: list[TickReport] = []
    try:
        await second.run(timeout_s=400, on_tick=reports.append)
    finally:
        await second.close()
    by_second = [cid for r in reports for cid in r.submitted]
    assert sorted(by_first + by_second) == sorted(c.config_id for c in study.runnable())  # one submit each
    snap = second_store.snapshot(name)
    assert [c.state for c in snap.configs] == ["completed"] * 6, snap.problems
    assert len(second_store.results(second.key)) == 6  # the first cockpit's runs counted too
    for cfg in study.runnable():
        assert len(_jobcomp_ids(slurm_env, f"{name}-{cfg.config_id}")) == 1
    said = [p for p in snap.problems if "another cockpit" in p]
    assert any("result(s)" in p for p in said) and any("job(s)" in p for p in said), snap.problems
    first_store.close()
    second_store.close()
    # `cockpit open` of that store says so, however many problems came after
    app, store = browse(tmp_path / "login-node.sqlite", poll=0.05)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.polls >= 2)
            messages = [n.message for n in app._notifications]
            assert any("submitted by another cockpit" in m for m in messages), messages
            assert any("runs another cockpit submitted" in m for m in messages), messages
            await pilot.press("q")
    finally:
        store.close()
