"""`cockpit plan`, the TUI's plan dialog and the runner's budget guard read one plan (cockpit.forecast.plan)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.commands.plan import plan_summary
from cockpit.run.runner import BudgetExceeded
from cockpit.run.session import open_session
from cockpit.store.recorded import study_plan
from cockpit.study.spec import load_study
from cockpit.tui.live import LiveController
from tests.studies import write_study


def _session(tmp_path: Path, *, resubmit_failed: bool = False):
    # 2 windows x 3 GPU counts at 30 min a run; 3 GPUs x 1 core do not fit the 2-core node: 2 too big
    path = write_study(tmp_path / "plan.toml", "plan", tmp_path / "work",
                       cluster={"gpus_per_node": 3, "cores_per_node": 2, "expected_minutes": 30,
                                "node_hour_budget": 1.2},
                       sweep={"gpus_per_node": [1, 2, 3], "window": [32, 64]})
    return open_session(load_study(path), resubmit_failed=resubmit_failed)


def _record(session) -> dict[str, str]:
    """A store where one configuration has a result, one a running job and one a failed job."""
    store, study = session.store, session.study
    key = store.ensure_study(study.name, study.study_id, cluster="local", node_hour_budget=1.2)
    done, active, failed, _fresh = study.runnable()
    store.put_result(key, done.config_id, {"config_id": done.config_id, "status": "completed",
                                           "timing": {"train_time_s": 1.0}})
    row = store.record_intent(key, active.config_id)
    store.record_submitted(row, "7")
    store.set_job_state(row, "running")
    row = store.record_intent(key, failed.config_id)
    store.record_submitted(row, "8")
    store.set_job_state(row, "failed", elapsed_s=1800.0, nodes=1, ended=True)
    session.runner.key = key
    return {"done": done.config_id, "active": active.config_id, "failed": failed.config_id}


def test_the_dialog_the_runner_and_the_command_agree(tmp_path: Path):
    session = _session(tmp_path)
    fresh = study_plan(session.study)
    assert [line.status for line in fresh.lines].count("too big") == 2
    assert len(fresh.to_submit) == 4 and fresh.estimate == pytest.approx(4 * 0.5)
    assert "4 jobs to submit" in plan_summary(session.study) and "estimated 2.00 node-hours" in plan_summary(session.study)

    ids = _record(session)
    dialog = LiveController(session).plan()
    guard = session.runner.plan()
    assert dialog == guard
    statuses = {line.config_id: line.status for line in guard.lines}
    assert [statuses[ids[s]] for s in ("done", "active", "failed")] == ["done", "active", "failed"]
    assert len(guard.to_submit) == 1 and guard.estimate == pytest.approx(0.5)
    assert guard.used == pytest.approx(0.5) and guard.committed == pytest.approx(1.0)
    assert [c.config_id for c in session.runner.pending_configs()] == [guard.to_submit[0].config_id]
    session.store.close()


def test_resubmitting_failed_runs_counts_them_and_the_guard_refuses_over_budget(tmp_path: Path):
    session = _session(tmp_path, resubmit_failed=True)
    _record(session)
    plan = session.runner.plan()
    assert len(plan.to_submit) == 2 and plan.estimate == pytest.approx(1.0)
    assert plan.budget_left == pytest.approx(0.7) and plan.over_budget
    assert LiveController(session).plan().over_budget
    with pytest.raises(BudgetExceeded, match=r"needs an estimated 1\.0 node-hours for 2 configurations but only 0\.7"):
        session.runner.check_budget()
    session.store.close()
