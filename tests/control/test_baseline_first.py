"""--baseline-first: each group's 1x1 run goes first; the rest once its result predicts their cost."""

from __future__ import annotations

import asyncio
from pathlib import Path

from cockpit.launch.backend import AdaptiveInterval
from cockpit.launch.local import LocalExecutor
from cockpit.run.runner import StudyRunner
from cockpit.store import StudyStore
from cockpit.study.spec import load_study
from tests.studies import write_study


def test_n_worker_runs_wait_for_their_baseline(tmp_path: Path):
    (tmp_path / "lab.toml").write_text('[site]\nname = "lab"\nintra_node_busbw_gbs = 1.0\n')
    spec = write_study(tmp_path / "bf.toml", "baseline-first", tmp_path / "work",
                       cluster={"site": "lab.toml", "max_concurrent_jobs": 2, "gpus_per_node": 2,
                                "cores_per_node": 4},
                       sweep={"gpus_per_node": [1, 2]})
    study = load_study(spec)
    store = StudyStore(tmp_path / "cockpit.sqlite")
    runner = StudyRunner(study, LocalExecutor(study), store, baseline_first=True,
                         interval=AdaptiveInterval(0.2, 0.3, 0.5))
    base, two = sorted(study.runnable(), key=lambda c: c.workers)

    async def go() -> list[str]:
        try:
            await runner.start()
            first = (await runner.tick()).submitted
            assert runner.plan().to_submit[0].predicted is None  # nothing is known of the group yet
            await runner.run(timeout_s=180)
            return first
        finally:
            await runner.close()

    first = asyncio.run(go())
    assert first == [base.config_id]  # room for two jobs, but only the baseline went
    jobs = {j.config_id: j for j in store.snapshot(study.name).jobs}
    assert jobs[two.config_id].submitted_at >= jobs[base.config_id].ended_at
    assert {c.state for c in store.snapshot(study.name).configs} == {"completed"}
    store.close()
