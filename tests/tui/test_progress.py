"""Progress and eta of a running row in a study that sets `epochs` (the demo, examples/meluxina.toml): the
trainer writes its total steps in metrics.jsonl once its data is loaded, the store keeps it beside the
configuration, and the snapshot's progress and eta come from it. Checked on a metrics file a real (tiny)
training wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.store import StudyStore
from cockpit.tui.app import CockpitApp
from cockpit.tui.controller import RecordedController
from cockpit.tui.scaling import ScalingView
from runcontract.contract import METRICS_FILE
from runcontract.files import read_jsonl
from tests.tui.conftest import SMALL

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def metrics(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    """Rank 0's records of a real 1.5-epoch training (6 steps per epoch: 9 steps, a record per step)."""
    from tests.train.tiny import tiny_data, tiny_settings
    from trainer.run.train import run

    run_dir = tmp_path_factory.mktemp("epochs-run")
    s = tiny_settings(run_dir, steps=None, epochs=1.5, metrics_interval_s=1e-6, eval=False)
    assert run(s, tiny_data(s, n=24)) == 0
    chunk = read_jsonl(run_dir / METRICS_FILE)
    assert not chunk.bad_lines
    return [r for r in chunk.records if r.get("rank", 0) == 0]


def running_store(path: Path) -> tuple[StudyStore, int, dict]:
    """A study registered as the runner registers an `epochs` study (no total steps known to the
    cockpit), its one job running."""
    store = StudyStore(path)
    key = store.ensure_study("epochs", "e1", cluster="local")
    config = {"config_id": "c1", "group_id": "g1", "is_baseline": True, "workers": 1, "nodes": 1,
              "values": {"dataset": "synthetic", "mode": "foundation", "window": 16, "precision": "fp32",
                         "batch_size": 4, "cpus_per_task": 1, "gpus_per_node": 1, "nodes": 1},
              "run_dir": str(path.parent / "runs" / "c1"), "total_steps": None}
    store.upsert_configs(key, [config])
    job = store.record_intent(key, "c1")
    store.record_submitted(job, "101")
    store.set_job_state(job, "running")
    return store, key, config


def test_the_trainer_writes_its_total_steps_in_every_record(metrics):
    assert metrics and all(r["total_steps"] == 9 for r in metrics)
    assert metrics[-1]["step"] == 9 and metrics[-1].get("final")


def test_an_epochs_study_shows_progress_and_eta_from_the_trainers_metrics(metrics, tmp_path):
    store, key, config = running_store(tmp_path / "store.sqlite")
    try:
        assert store.snapshot("epochs").configs[0].progress is None  # nothing known yet
        upto = next(i for i, r in enumerate(metrics) if r["step"] >= 4)
        seen = metrics[: upto + 1]
        store.ingest(key, "c1", METRICS_FILE, seen, next_offset=1, bad_lines=0)
        store.upsert_configs(key, [config])  # the runner registers again: the trainer's count stays
        row = store.snapshot("epochs").configs[0]
        last = seen[-1]
        assert row.state == "running"
        assert row.progress == pytest.approx(last["step"] / 9)
        assert row.eta_s == pytest.approx((9 - last["step"]) * last["train_time_s"] / last["step"])
    finally:
        store.close()


async def test_the_running_row_says_how_far_it_is(metrics, tmp_path):
    store, key, _ = running_store(tmp_path / "store.sqlite")
    try:
        seen = [r for r in metrics if r["step"] <= 3]
        store.ingest(key, "c1", METRICS_FILE, seen, next_offset=1, bad_lines=0)
        controller = RecordedController(lambda: store.snapshot("epochs"), live=True)
        app = CockpitApp(controller, poll_interval=None, offer_plan=False)
        async with app.run_test(size=SMALL):
            view = app.query_one(ScalingView)
            state = view.table.shown[0].cells[view.table_layout.keys.index("state")]
            assert state.plain.startswith(f"▶{seen[-1]['step'] / 9 * 100:.0f}% eta ")
    finally:
        store.close()
