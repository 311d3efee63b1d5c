"""Scaling analysis, checked against the published study's own figures (arXiv 2503.21033)."""

from __future__ import annotations

import math

import pytest

from cockpit.figures import series
from cockpit.forecast.analysis import analyse, efficiency, karp_flatt, overhead, scaling_table, speedup


def result(gpus: int, t: float, *, status: str = "completed", window: int = 128, comm: float = 0.0,
           data: float = 0.0, compute: float | None = None, nodes: int = 1, samples: int = 1000,
           optimizer: float = 0.0, ranks: list[dict] | None = None, device: str = "cpu") -> dict:
    """A result.json whose five parts add up to T (compute takes what the others leave, unless given)."""
    compute = t - comm - data - optimizer if compute is None else compute
    other = t - comm - data - optimizer - compute
    config = {
        "dataset": "mitdb", "mode": "foundation", "window": window, "precision": "bf16", "batch_size": 64,
        "cpus_per_task": 16, "gpus_per_node": gpus, "nodes": nodes,
    }
    return {
        "status": status,
        "config_id": "x",
        "config": config,
        "timing": {"train_time_s": t, "samples": samples},
        "device": device,
        "breakdown_s": {"data_wait": data, "compute": compute, "comm": comm, "optimizer": optimizer, "other": other},
        "throughput": {"tokens_per_s": 1000.0 * gpus},
        **({"breakdown_by_rank": ranks} if ranks else {}),
    }


def table(rows: list[dict]) -> dict[int, dict]:
    """analyse() keyed by worker count (one group)."""
    return {r["workers"]: r for r in analyse(rows)}


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


def test_repeats_are_represented_by_the_median_run():
    by_n = table([result(1, 100), result(1, 90), result(1, 110), result(2, 62.5), result(4, 52.63)])
    assert by_n[1]["train_time_s"] == 100 and by_n[1]["runs"] == 3 and by_n[1]["baseline"]
    assert by_n[2]["speedup"] == pytest.approx(1.6) and by_n[2]["efficiency"] == pytest.approx(0.8)
    assert by_n[2]["overhead_s"] == pytest.approx(12.5)
    assert by_n[4]["efficiency"] == pytest.approx(0.475, abs=1e-3)
    assert by_n[4]["karp_flatt"] == pytest.approx((1 / by_n[4]["speedup"] - 0.25) / 0.75)
    # an even count takes the lower middle run, so every figure of the row is one real run's
    assert table([result(1, 100), result(1, 90)])[1]["train_time_s"] == 90


def test_missing_baseline_gives_nan_with_reason():
    row = analyse([result(2, 50, window=256)])[0]
    assert math.isnan(row["speedup"]) and math.isnan(row["efficiency"])
    assert "no baseline" in row["note"] and row["verdict"] == row["note"]


def test_failed_runs_excluded_and_flagged():
    rows = analyse([result(1, 100), result(2, 1.0, status="failed"), result(2, 55)])
    done = [r for r in rows if r["status"] == "completed"]
    assert sorted(r["workers"] for r in done) == [1, 2]
    assert [r for r in done if r["workers"] == 2][0]["speedup"] == pytest.approx(100 / 55)
    # a configuration with a finished run is not listed again for its failed attempt
    assert [r for r in rows if r["status"] == "failed"] == []
    failed = analyse([result(1, 100), result(2, 1.0, status="failed")])
    assert [r["note"] for r in failed if r["status"] == "failed"] == ["failed run excluded"]


def test_nodes_multiply_workers():
    row = table([result(1, 100), result(4, 15, nodes=2)])[8]
    assert row["speedup"] == pytest.approx(100 / 15) and row["efficiency"] == pytest.approx(100 / 15 / 8)


def test_fixed_steps_runs_are_compared_at_the_same_work():
    # Fixed steps with a per-GPU batch: 2 workers process twice the samples in (nearly) the same time.
    row = table([result(1, 100, samples=1000), result(2, 110, samples=2000)])[2]
    assert row["work_ratio"] == 2.0 and row["t_same_work_s"] == pytest.approx(55)
    assert row["t1_s"] == 100 and row["t1_over_n_s"] == 50
    assert row["speedup"] == pytest.approx(row["t1_s"] / row["t_same_work_s"])
    assert row["overhead_s"] == pytest.approx(55 - 50)
    assert "2x the work" in row["note"]
    same = table([result(1, 100), result(2, 62.5)])[2]
    assert same["work_ratio"] == 1.0 and same["note"] == "" and same["speedup"] == pytest.approx(1.6)


def test_overhead_terms_add_up_and_the_verdict_names_seconds():
    # baseline: 100 s = 90 compute + 10 optimizer; 2 workers: 60 s = 50 compute + 4 comm + 1 data + 5 optimizer
    base = result(1, 100, optimizer=10)
    two = result(2, 60, comm=4, data=1, optimizer=5, compute=50)
    row = table([base, two])[2]
    terms = {t: row[f"loss_{t}_s"] for t in ("data_wait", "compute", "comm", "optimizer", "other", "unaccounted")}
    assert terms == pytest.approx({"data_wait": 1, "compute": 50 - 45, "comm": 4, "optimizer": 0, "other": 0,
                                   "unaccounted": 0})
    assert sum(terms.values()) == pytest.approx(row["overhead_s"]) == pytest.approx(10)
    assert row["compute_ratio"] == pytest.approx(50 / 45)
    assert row["verdict"] == "lost 17% = 10.00 s: +5.00 s compute, +4.00 s all-reduce, +1.00 s data wait"
    assert row["explanation"].startswith("lost 17% (10.00 s over T1/N = 50.00 s): +5.00 s compute "
                                         "(per-sample compute 1.11x the baseline's), +4.00 s exposed all-reduce, "
                                         "+1.00 s data wait")
    assert "give each its own cores" in row["explanation"]


def test_the_short_verdict_adds_up_to_the_overhead_when_parts_saved_time():
    # baseline: 100 s = 80 compute + 10 data + 6 optimizer + 4 other; 2 workers: 52 s = 34 compute + 12 comm
    # + 1 data + 2 optimizer + 3 other. Terms: compute -6, comm +12, data -4, optimizer -1, other +1 = O = 2 s.
    base = result(1, 100, data=10, optimizer=6, compute=80)
    two = result(2, 52, comm=12, data=1, optimizer=2, compute=34)
    row = table([base, two])[2]
    assert row["overhead_s"] == pytest.approx(2)
    # the two largest by size (a saving among them) by name, the other three summed: +12 - 6 - 4 = 2 s
    assert row["verdict"] == "lost 4% = 2.00 s: +12.00 s all-reduce, -6.00 s compute, -4.00 s rest"


def test_parts_that_do_not_add_up_are_shown_as_unaccounted():
    base = result(1, 100)
    two = result(2, 60, compute=50)  # parts sum to 60 ...
    two["timing"]["train_time_s"] = 62  # ... but T says 62
    row = table([base, two])[2]
    assert row["loss_unaccounted_s"] == pytest.approx(2)
    assert sum(row[f"loss_{t}_s"] for t in ("data_wait", "compute", "comm", "optimizer", "other",
                                             "unaccounted")) == pytest.approx(row["overhead_s"])


def test_the_rank_that_waits_least_is_named_the_straggler():
    ranks = [{"rank": 0, "host": "n1", "data_wait": 0, "compute": 40, "comm": 15, "optimizer": 5, "other": 0},
             {"rank": 1, "host": "n2", "data_wait": 0, "compute": 54, "comm": 1, "optimizer": 5, "other": 0}]
    row = table([result(1, 100), result(2, 60, comm=15, optimizer=5, compute=40, ranks=ranks)])[2]
    assert row["straggler_rank"] == 1 and row["straggler_host"] == "n2"
    assert row["straggler_excess_s"] == pytest.approx(14)
    assert "Straggler: rank 1 on n2; the other ranks waited 14.00 s longer" in row["explanation"]
    assert [r["total"] for r in row["ranks"]] == [60, 60]


def test_csv_table_has_one_column_per_term():
    frame = scaling_table([result(1, 100), result(2, 60)])
    for term in ("data_wait", "compute", "comm", "optimizer", "other", "unaccounted"):
        assert f"loss_{term}_s" in frame.columns
    assert "ranks" not in frame.columns and {"t_same_work_s", "work_ratio", "t1_s"} <= set(frame.columns)


def test_figure_series_draw_the_speedup_inputs_and_flag_incomplete_medians():
    rows = analyse([result(1, 100, samples=1000), result(2, 110, samples=2000),
                    result(1, 80, window=256)])
    bars = series.time_bars(rows)
    # only the w128 group has both worker counts: every bar is a median over the same groups
    assert bars.x == [1.0, 2.0] and bars.y == [pytest.approx(100), pytest.approx(55)]  # T at the baseline's work
    assert bars.ideal == [pytest.approx(100), pytest.approx(50)]  # the 1-worker bar / N
    assert bars.speedup == [pytest.approx(1), pytest.approx(100 / 55)]  # the 1-worker bar / this bar
    assert bars.label == "median over 1 group"
    assert bars.note == ("median over 1 of 2 groups: those with a finished run at 1 worker, 2 workers "
                         "(the others have not finished)")
    assert series.efficiency(rows).note == ""  # no configuration of the w256 group is known to have 2 workers
    pending = [{"group_id": rows[-1]["group_id"], "workers": 2, "cpus_per_task": 16, "status": "pending"}]
    assert series.efficiency(rows, pending).note == "median over 2 workers: 1 of 2 groups (the others have not finished)"
    assert "2 workers: 1 of 2 groups" in series.overhead(rows, pending).note


def test_time_bars_speedup_is_the_ratio_of_the_bars_drawn():
    """Two groups with different windows: the bars are medians (the mean of two middles is no run), so the
    S written on each bar is its bar's ratio to the 1-worker bar, not the median of the groups' own S."""
    rows = analyse([result(1, 6.76, window=128), result(2, 4.10, window=128),
                    result(1, 13.93, window=256), result(2, 8.00, window=256)])
    bars = series.time_bars(rows)
    assert bars.y == [pytest.approx((6.76 + 13.93) / 2), pytest.approx((4.10 + 8.00) / 2)]
    assert bars.groups == [[6.76, 13.93], [4.10, 8.00]]  # each group's own value, drawn beside the median
    for y, s, ideal, n in zip(bars.y, bars.speedup, bars.ideal, bars.x, strict=True):
        assert s == pytest.approx(bars.y[0] / y) and ideal == pytest.approx(bars.y[0] / n)
    own = sorted(r["speedup"] for r in rows if r["workers"] == 2)
    assert bars.speedup[1] != pytest.approx(sum(own) / 2)  # what the figure used to print
    assert bars.label == "median over 2 groups" and bars.note == ""


def test_headline_and_figures_count_groups_with_one_function():
    from cockpit.forecast.analysis import summary_by_workers

    rows = analyse([result(1, 100), result(2, 60), result(1, 80, window=256), result(2, 50, window=256)])
    pending = [{"group_id": "g-w512", "workers": n, "cpus_per_task": 16, "status": "pending"} for n in (1, 2)]
    headline = {s["workers"]: (s["groups"], s["of_groups"]) for s in summary_by_workers(rows, pending)}
    assert headline == {1: (2, 3), 2: (2, 3)} == series.group_counts(rows, pending)
    for figure in (series.efficiency, series.overhead):
        assert figure(rows, pending).note == ("median over 1 worker: 2 of 3 groups; 2 workers: 2 of 3 groups "
                                              "(the others have not finished)")
    assert series.time_bars(rows, pending).note.startswith("median over 2 of 3 groups")


def test_figure_titles_are_words_that_say_median():
    for device in ("cpu", "gpu"):
        for titles in (series.titles(device), series.short_titles(device)):
            for title in titles.values():
                assert "'" not in title.replace("baseline's", "")  # no TN' or other prime notation
                assert "Median" in title
                assert "T1/N" not in title and "S/N" not in title
    assert "GPUs" in series.titles("gpu")["efficiency"] and "workers" in series.titles("cpu")["efficiency"]
    assert all(len(t) <= 32 for t in series.short_titles("cpu").values())  # a quarter of 80 columns


def test_each_n_worker_row_carries_its_prediction_and_error():
    from cockpit.forecast.prediction import Link, Links

    base = result(1, 100, optimizer=10)
    base["timing"]["steps"] = 100
    base["comm"] = {"grad_bytes": 4_000_000, "buckets": 1}
    two = result(2, 60, comm=4, optimizer=5, compute=51)
    rows = {r["workers"]: r for r in analyse([base, two], Links(intra_node=Link(1e9, 0.0, "test")))}
    row = rows[2]
    # 50 steps x (0.9 s compute + 0.1 s optimizer + max(4 ms, 4 ms - 0.6 s) exposed all-reduce)
    assert row["predicted_t_same_work_s"] == pytest.approx(50 * (0.9 + 0.1 + 0.004))
    assert row["predicted_speedup"] == pytest.approx(100 / 50.2)
    assert row["prediction_error"] == pytest.approx(60 / 50.2 - 1)
    assert "Should have achieved S = 1.99x" in row["explanation"]
    assert "predicted_speedup" not in rows[1]
    unknown = {r["workers"]: r for r in analyse([base, two])}[2]  # no link figure anywhere
    assert math.isnan(unknown["predicted_speedup"]) and "bandwidth" in unknown["prediction_note"]
