"""The recorded H200 runs (tests/fixtures/h200-runs) in the TUI: the scaling table carries MFU and energy per
configuration, and the run detail names the bf16 runs host-bound with their evidence, the fp32 run not."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.forecast.analysis import analyse
from cockpit.store import StudyStore
from cockpit.tui.app import CockpitApp
from cockpit.tui.controller import store_controller
from cockpit.tui.detail import RunDetailScreen
from cockpit.tui.filter import matches
from cockpit.tui.scaling import ScalingView
from runcontract.records import read_result
from tests.tui.conftest import LARGE

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "h200-runs"
SHOWN = ("fp32-w256", "bf16-w256", "bf16-w256-finetune")  # one run of each configuration


@pytest.fixture
def h200_store(tmp_path: Path):
    """A store holding the recorded runs' results, each configuration naming its run directory (as a local study's
    store does): what the cockpit collected, read back as every view reads it."""
    store = StudyStore(tmp_path / "cockpit.sqlite")
    key = store.ensure_study("gpu-path", "h200")
    results = {run: read_result(RUNS / run) for run in SHOWN}
    store.upsert_configs(key, [{"config_id": run, "group_id": run, "is_baseline": True, "workers": 1, "nodes": 1,
                                "values": {a: r["config"][a] for a in ("dataset", "mode", "window", "precision",
                                                                       "batch_size", "cpus_per_task", "gpus_per_node",
                                                                       "nodes")},
                                "run_dir": str(RUNS / run), "total_steps": r["timing"]["steps"]}
                               for run, r in results.items() if r is not None])
    for run, r in results.items():
        assert r is not None
        store.put_result(key, run, r)
    yield store
    store.close()


async def test_the_scaling_table_shows_mfu_and_energy_and_the_detail_names_host_bound_runs(h200_store) -> None:
    snap = h200_store.snapshot("gpu-path")
    rows = {r.config_id: r.analysis or {} for r in snap.configs}
    app = CockpitApp(store_controller(h200_store, "gpu-path"), poll_interval=None)
    async with app.run_test(size=LARGE) as pilot:
        view = app.query_one(ScalingView)
        labels = [c.label for c in view.table_layout.columns]
        assert "MFU" in labels and "energy kWh" in labels
        mfu_at, kwh_at = labels.index("MFU"), labels.index("energy kWh")
        for shown in view.table.shown:
            cells = [str(c) for c in shown.cells]
            a = rows[shown.key]
            assert cells[mfu_at] == f"{a['mfu']:.1%}" and cells[kwh_at] == f"{a['energy_kwh']:.3g}"
        assert {rows[k]["mfu_device"] for k in SHOWN} == {"H200 SXM fp32 x 1", "H200 SXM bf16 x 1"}
        for run in SHOWN:
            keys = [r.key for r in view.table.shown]
            await pilot.press(*(["down"] * keys.index(run)), "enter")
            await pilot.pause()
            assert isinstance(app.screen, RunDetailScreen) and app.screen.config_id == run
            text = str(app.screen.query_one("#detail-explain").render())
            a = rows[run]
            assert f"MFU {a['mfu']:.1%} = " in text and f"nergy {a['energy_j']:,.0f} J over T" in text
            if run.startswith("bf16"):
                assert f"host-bound {a['host_bound_s']:.2f} s = compute" in text and "GPU busy" in text
                assert "Host-bound advice" in text and "batch_size" in text and "→ predicted T" in text
            else:
                assert "not host-bound: GPU busy 74% of T" in text and "Host-bound advice" not in text
            await pilot.press("escape")
            await pilot.pause()
            await pilot.press("home")
    assert {r["config_id"] for r in analyse([read_result(RUNS / k) for k in SHOWN])} == set(SHOWN)
    # the filter knows them too: the fp32 run alone is above 10% MFU, and it drew the most energy
    assert [r.config_id for r in snap.configs if matches(r, ["mfu>0.1"])] == ["fp32-w256"]
    assert [r.config_id for r in snap.configs if matches(r, ["energy>0.001"])] == ["fp32-w256"]
