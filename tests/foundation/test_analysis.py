"""Scaling analysis, checked against the published study's own figures (arXiv 2503.21033)."""

from __future__ import annotations

import math

import pytest

from cockpit.analysis import (
    bottleneck_verdict,
    efficiency,
    karp_flatt,
    overhead,
    results_frame,
    scaling_table,
    speedup,
)


def result(gpus: int, t: float, *, status: str = "completed", window: int = 128, comm: float = 0.0,
           data: float = 0.0, compute: float = 1.0, nodes: int = 1, samples: int = 1000) -> dict:
    config = {
        "dataset": "mitdb", "mode": "foundation", "window": window, "precision": "bf16", "batch_size": 64,
        "cpus_per_task": 16, "gpus_per_node": gpus, "nodes": nodes,
    }
    return {
        "status": status,
        "config_id": "x",
        "config": config,
        "timing": {"train_time_s": t, "samples": samples},
        "breakdown_s": {"data_wait": data, "compute": compute, "comm": comm, "optimizer": 0.0},
        "throughput": {"tokens_per_s": 1000.0 * gpus},
    }


def test_published_figures():
    # T1 = 100 s, T2 = 62.5 s -> 1.6x, 0.80, 12.5 s; T4 = 52.63 s -> 1.9x, 0.475.
    s2 = speedup(100, 62.5)
    assert s2 == pytest.approx(1.6)
    assert efficiency(s2, 2) == pytest.approx(0.80)
    assert overhead(100, 62.5, 2) == pytest.approx(12.5)
    s4 = speedup(100, 52.63)
    assert s4 == pytest.approx(1.9, abs=1e-3)
    assert efficiency(s4, 4) == pytest.approx(0.475, abs=1e-3)
    assert overhead(100, 52.63, 4) == pytest.approx(27.63)


def test_karp_flatt():
    assert karp_flatt(1.6, 2) == pytest.approx((1 / 1.6 - 0.5) / 0.5)
    assert karp_flatt(4.0, 4) == pytest.approx(0.0)
    assert math.isnan(karp_flatt(1.0, 1))


def test_table_from_results_uses_median_and_baseline():
    rows = [result(1, 100), result(1, 90), result(1, 110), result(2, 62.5), result(4, 52.63)]
    table = scaling_table(results_frame(rows))
    by_n = {int(r.workers): r for r in table.itertuples()}
    assert by_n[1].train_time_s == 100 and by_n[1].runs == 3 and bool(by_n[1].baseline)
    assert by_n[2].speedup == pytest.approx(1.6) and by_n[2].efficiency == pytest.approx(0.8)
    assert by_n[2].overhead_s == pytest.approx(12.5)
    assert by_n[4].efficiency == pytest.approx(0.475, abs=1e-3)
    assert by_n[4].karp_flatt == pytest.approx((1 / by_n[4].speedup - 0.25) / 0.75)


def test_missing_baseline_gives_nan_with_reason():
    table = scaling_table(results_frame([result(2, 50, window=256)]))
    row = table.iloc[0]
    assert math.isnan(row["speedup"]) and math.isnan(row["efficiency"])
    assert "no baseline" in row["note"]


def test_failed_runs_excluded_and_flagged():
    rows = [result(1, 100), result(2, 1.0, status="failed"), result(2, 55)]
    table = scaling_table(results_frame(rows))
    done = table[table["status"] == "completed"]
    assert sorted(done["workers"]) == [1, 2]
    assert done[done["workers"] == 2]["speedup"].iloc[0] == pytest.approx(100 / 55)
    failed = table[table["status"] == "failed"]
    assert len(failed) == 1 and failed["note"].iloc[0] == "failed run excluded"


def test_nodes_multiply_workers():
    table = scaling_table(results_frame([result(1, 100), result(4, 15, nodes=2)]))
    row = table[table["workers"] == 8].iloc[0]
    assert row["speedup"] == pytest.approx(100 / 15) and row["efficiency"] == pytest.approx(100 / 15 / 8)


def test_bottleneck_verdicts():
    table = scaling_table(results_frame([result(1, 100, comm=0.0, data=0.5, compute=1.0),
                                         result(2, 60, comm=0.38, data=0.0, compute=0.62)]))
    verdicts = dict(zip(table["workers"], table["verdict"], strict=True))
    assert verdicts[2] == "communication-bound: 38% of step time in all-reduce"
    assert verdicts[1].startswith("input-bound: 33% of step time waiting for data")
    assert bottleneck_verdict({"comm_share": 0.05, "data_wait_share": 0.05}).startswith("compute-bound: 90% of step time in compute")
    assert bottleneck_verdict({}) == "no time breakdown reported"


def test_fixed_steps_runs_are_compared_at_the_same_work():
    # Fixed steps with a per-GPU batch: 2 workers process twice the samples in (nearly) the same time.
    rows = [result(1, 100, samples=1000), result(2, 110, samples=2000)]
    row = scaling_table(results_frame(rows)).set_index("workers").loc[2]
    assert row["work_ratio"] == 2.0
    assert row["speedup"] == pytest.approx(100 / 55)
    assert row["overhead_s"] == pytest.approx(55 - 50)
    assert "2x the work" in row["note"]
    same = scaling_table(results_frame([result(1, 100), result(2, 62.5)])).set_index("workers").loc[2]
    assert same["work_ratio"] == 1.0 and same["note"] == "" and same["speedup"] == pytest.approx(1.6)
