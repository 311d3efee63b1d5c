"""Only the runs that failed for a full work directory are submitted again (the plan counts them as to
submit; another failure waits for --resubmit-failed), and the pause resumes by the space the probe reads
against one run's footprint: a real store, the local backend's df on a real tmpfs."""

from __future__ import annotations

from cockpit.launch.local import LocalExecutor
from cockpit.run.disk_pause import DiskPause, full_configs
from cockpit.run.scope import RunScope
from cockpit.store import StudyStore
from cockpit.store.recorded import study_plan
from cockpit.study.spec import load_study
from runcontract.contract import EXIT_DISK_FULL
from tests.studies import write_study


def _ended(store: StudyStore, key: int, cid: str, job_id: str, code: int) -> None:
    row = store.record_intent(key, cid)
    store.record_submitted(row, job_id)
    store.set_job_state(row, "failed", reason=f"exit {code}", exit_code=code, ended=True)


async def test_only_the_runs_that_failed_for_the_full_directory_are_to_submit_again(small_fs, tmp_path) -> None:
    fs = small_fs("16m")
    study = load_study(write_study(tmp_path / "s.toml", "s", fs.path, cluster={"expected_minutes": 1},
                                   sweep={"window": [32, 40, 48]}))
    full, other, untouched = (c.config_id for c in study.runnable())
    store = StudyStore(tmp_path / "cockpit.sqlite")
    key = store.ensure_study(study.name, study.study_id)
    _ended(store, key, full, "1", EXIT_DISK_FULL)
    _ended(store, key, other, "2", 1)
    plan = study_plan(study, store, key=key)
    assert sorted(line.config_id for line in plan.to_submit) == sorted([full, untouched])
    assert full_configs(store, key) == [full]

    backend = LocalExecutor(study)
    pause = DiskPause(RunScope(study, backend, store, {c.config_id: c for c in study.runnable()}, key))
    fs.fill(leave=0)
    assert await pause.check(ended_full=True)
    assert pause.line.startswith(f"work directory full (16.8 MB / 16.8 MB, 0 B free (df on {fs.path})); submitting "
                                 "paused, 1 run(s) to submit again once ")
    fs.free()
    assert not await pause.check(ended_full=False) and pause.line == ""
    said = store.problems(key)
    assert said[0] == (f"disk: work directory has room again ({pause.storage.words()}): submitting goes on; 1 run(s) "
                       f"that failed for it submitted again: {full}")
    await backend.close()
    store.close()
