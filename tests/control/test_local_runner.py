"""The same runner drives the local executor (no SSH, no Slurm): the real trainer on real MIT-BIH data."""

from __future__ import annotations

import asyncio
from pathlib import Path

from cockpit.launch.backend import AdaptiveInterval, ConnectionState, JobWatch
from cockpit.launch.local import LocalExecutor
from cockpit.run.runner import StudyRunner
from cockpit.store import StudyStore
from cockpit.study.spec import load_study
from runcontract.files import read_jsonl
from runcontract.records import read_result
from tests.studies import mitdb_data, write_study


def run_to_end(runner: StudyRunner) -> None:
    """Run the study to its end with the real local executor, then release the runner."""

    async def go() -> None:
        try:
            await runner.run(timeout_s=180)
        finally:
            await runner.close()

    asyncio.run(go())


def test_local_study_results_metrics_and_restart(tmp_path: Path, physionet: Path):
    spec = write_study(tmp_path / "local.toml", "ctl-local", tmp_path / "work", cluster={"max_concurrent_jobs": 1},
                       data=mitdb_data(tmp_path / "tokens", root=physionet),
                       train={"steps": 8, "window": 32, "metrics_interval_s": 0.1}, sweep={})
    study = load_study(spec)
    (cfg,) = study.runnable()
    store_path = tmp_path / "cockpit.sqlite"
    store = StudyStore(store_path)
    runner = StudyRunner(study, LocalExecutor(study), store, interval=AdaptiveInterval(0.2, 0.3, 0.5))

    run_to_end(runner)
    snap = store.snapshot("ctl-local")
    assert snap.connection is ConnectionState.LOCAL
    (row,) = snap.configs
    assert row.state == "completed", (snap.jobs, snap.problems)
    result = read_result(study.run_dir(cfg))
    assert row.train_time_s == result["timing"]["train_time_s"] and row.speedup == 1.0
    lines = read_jsonl(Path(study.run_dir(cfg)) / "metrics.jsonl", final=True).records
    assert store.metric_count(runner.key, cfg.config_id) == len(lines) > 0
    log = store.log_tail(runner.key, cfg.config_id, 1000)
    assert any("step" in line for line in log), log[-5:]  # train.log is followed, not only stdout/stderr
    store.close()

    # a restart finds the result and submits nothing
    again = StudyStore(store_path)
    rerun = StudyRunner(study, LocalExecutor(study), again)

    async def restart() -> list[str]:
        try:
            return (await rerun.tick()).submitted
        finally:
            await rerun.close()

    assert asyncio.run(restart()) == [] and rerun.done()
    assert len(again.jobs(rerun.key)) == 1
    again.close()


def test_finetune_waits_for_its_foundation_and_starts_from_its_weights(tmp_path: Path):
    """Room for both jobs at once, yet the fine-tune is submitted only after the foundation run finished."""
    spec = tmp_path / "ft.toml"
    spec.write_text(f"""
[study]
name = "ctl-ft"
[cluster]
kind = "local"
workdir = "{tmp_path / 'work'}"
cores_per_node = 2
max_concurrent_jobs = 2
[data.datasets.synthetic]
synthetic = true
records = 2
seconds = 30
[model]
layers = 1
d_model = 16
heads = 2
[train]
steps = 6
batch_size = 4
window = 32
device = "cpu"
metrics_interval_s = 0.2
eval = false
[sweep]
mode = ["finetune", "foundation"]
""")
    study = load_study(spec)
    finetune, foundation = sorted(study.runnable(), key=lambda c: c.mode)
    store = StudyStore(tmp_path / "cockpit.sqlite")
    runner = StudyRunner(study, LocalExecutor(study), store, interval=AdaptiveInterval(0.2, 0.3, 0.5))

    run_to_end(runner)
    jobs = store.latest_jobs(runner.key)
    assert jobs[foundation.config_id].state == jobs[finetune.config_id].state == "completed"
    assert jobs[finetune.config_id].submitted_at >= jobs[foundation.config_id].ended_at
    result = read_result(study.run_dir(finetune))
    assert result["init"] == f"{study.run_dir(foundation)}/model.pt", result["init"]
    store.close()


def test_a_runner_that_polls_once_an_hour_still_sees_each_local_job_end_at_once(tmp_path: Path):
    """The local executor owns its processes and says itself when a job starts or ends
    (Backend.on_job_change): a runner whose poll interval is an hour still submits the second of two
    configurations when the first ends and finishes the study, where sleeping out its interval would not."""
    spec = write_study(tmp_path / "wake.toml", "ctl-wake", tmp_path / "work", cluster={"max_concurrent_jobs": 1},
                       train={"steps": 2}, sweep={"window": [32, 40]})
    study = load_study(spec)
    store = StudyStore(tmp_path / "cockpit.sqlite")
    hour = AdaptiveInterval(3600.0, 3600.0, 3600.0)
    runner = StudyRunner(study, LocalExecutor(study), store, interval=hour)

    async def go() -> None:
        try:  # far under the hour: only the executor's word ends each pause in time
            await asyncio.wait_for(runner.run(), 240)
        finally:
            await runner.close()

    asyncio.run(go())
    first, second = sorted(store.latest_jobs(runner.key).values(), key=lambda j: j.submitted_at)
    assert first.state == second.state == "completed"
    assert second.submitted_at >= first.ended_at  # one at a time: the second waited for the first's end
    assert runner.backend.on_job_change is None  # the runner let go of the executor's word when it returned
    store.close()


def test_a_watch_inside_another_tells_both_and_gives_the_executor_back_as_it_was(tmp_path: Path):
    """The runner's tick runs the preflight's wait, each with its own JobWatch on the one executor: a job's
    start or end ends both pauses, and leaving the inner watch leaves the outer one listening."""
    spec = write_study(tmp_path / "w.toml", "ctl-watch", tmp_path / "work", sweep={})
    executor = LocalExecutor(load_study(spec))

    async def go() -> tuple[bool, bool, bool]:
        with JobWatch(executor) as outer:
            with JobWatch(executor) as inner:
                assert executor.on_job_change is not None
                executor.on_job_change()  # what the executor calls when one of its jobs starts or ends
                both = outer.changed.is_set() and inner.changed.is_set()
            outer.clear()
            inner.clear()
            assert executor.on_job_change is not None
            executor.on_job_change()
            return both, outer.changed.is_set(), inner.changed.is_set()

    assert asyncio.run(go()) == (True, True, False)  # the inner one, left, hears nothing more
    assert executor.on_job_change is None
