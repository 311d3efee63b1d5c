"""Two terms of the prediction: the wait for the slower rank inside comm (cockpit.forecast.straggler) and compute per
step as a line in the batch (cockpit.forecast.batch_fit), each checked on recorded runs."""

from __future__ import annotations

import copy
import json
import math
import shutil
import sqlite3
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from cockpit.forecast import batch_fit, prediction, straggler
from cockpit.forecast.advice.forecasting import forecast
from cockpit.forecast.prediction import Link, Links, Prediction
from cockpit.forecast.prediction_words import moved_term

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DEMO = FIXTURES / "demo-store" / "local-demo"
H200 = FIXTURES / "h200-runs" / "bf16-w256" / "result.json"


def test_the_expected_largest_of_n_standard_normals() -> None:
    assert straggler.expected_max(1) == 0.0
    assert straggler.expected_max(2) == pytest.approx(1 / math.sqrt(math.pi), rel=1e-9)
    assert straggler.expected_max(4) == pytest.approx(1.02938, abs=1e-5)  # tables of normal order statistics
    assert straggler.expected_max(8) == pytest.approx(1.42360, abs=1e-5)
    assert straggler.wait_per_step(0.01, 2) == pytest.approx(0.01 / math.sqrt(math.pi))


def test_the_per_step_spread_from_interval_means_is_the_between_interval_sum_of_squares() -> None:
    # 3 intervals of 4, 6 and 10 steps: sd^2 = sum k (m - mean)^2 / (n - 1), the mean weighted by the steps
    intervals = [(4, 0.10), (6, 0.13), (10, 0.11)]
    mean = (0.4 + 0.78 + 1.1) / 20
    expected = math.sqrt((4 * (0.10 - mean) ** 2 + 6 * (0.13 - mean) ** 2 + 10 * (0.11 - mean) ** 2) / 2)
    assert straggler.interval_sd(intervals) == pytest.approx(expected)
    assert straggler.interval_sd([(5, 0.1)]) is None
    # the first step (the loader's start) is taken out of the first interval, and comm out of every interval
    rows = [{"step": 4, "step_time_s": 0.25, "comm_s": 0.0}, {"step": 10, "step_time_s": 0.1, "comm_s": 0.06}]
    got = straggler.metrics_intervals(rows, first_step_s=0.7)
    assert [k for k, _ in got] == [3, 6] and [m for _, m in got] == pytest.approx([0.1, 0.09])


@pytest.fixture()
def demo(tmp_path: Path) -> tuple[dict[str, dict], sqlite3.Connection]:
    """The demo store's results and a connection to a copy of it (WAL mode: the copy is opened, never the fixture)."""
    shutil.copytree(DEMO, tmp_path / "demo")
    db = sqlite3.connect(tmp_path / "demo" / "cockpit.sqlite")
    db.row_factory = sqlite3.Row
    return {r["config_id"]: json.loads(r["result_json"]) for r in db.execute("SELECT * FROM results")}, db


@pytest.mark.parametrize(("base_id", "run_id"), [("27115f20d2", "1c4719dcc7"), ("bad1f123bf", "11d2f99418")])
def test_the_wait_for_the_slower_rank_brings_the_first_prediction_of_a_recorded_2_worker_comm_closer(
        demo: tuple[dict[str, dict], sqlite3.Connection], base_id: str, run_id: str) -> None:
    """The demo's two groups, each a 1-worker baseline and a 2-worker run that measured its comm (CPU, one core per
    worker). Their baselines predate `timing.step_time_sd_s`, so the spread is the one their metrics records give
    (straggler.interval_sd over rank 0's intervals), set where the trainer now records it. The first prediction
    (the 2-worker run's own link probe, no refit) misses the comm by less with the wait than without it, and T too."""
    results, db = demo
    base, run = results[base_id], results[run_id]
    rows = [dict(r) for r in db.execute("SELECT step, step_time_s, comm_s FROM metrics WHERE config_id=? AND rank=0",
                                        (base_id,))]
    sd = straggler.interval_sd(straggler.metrics_intervals(rows, base["timing"]["first_step_s"]))
    assert sd is not None and sd > 0
    links = replace(prediction.measured_links([run]), residuals=())
    without = prediction.predict(base, 1, 2, 2.0, links)
    spread_base = copy.deepcopy(base)
    spread_base["timing"]["step_time_sd_s"] = sd
    with_wait = prediction.predict(spread_base, 1, 2, 2.0, links)
    assert isinstance(without, Prediction) and isinstance(with_wait, Prediction)
    steps = run["timing"]["steps"]
    assert with_wait.comm_by_kind[straggler.TERM] == pytest.approx(steps * sd / math.sqrt(math.pi))
    assert straggler.TERM not in without.comm_by_kind
    assert "wait for the slower rank" in with_wait.link and "wait for the slower rank" not in without.link
    measured_comm, measured_t = run["breakdown_s"]["comm"], run["timing"]["train_time_s"]
    assert abs(with_wait.parts["comm"] - measured_comm) < abs(without.parts["comm"] - measured_comm)
    assert abs(math.log(measured_t / with_wait.t_s)) < abs(math.log(measured_t / without.t_s))


def test_the_term_that_moved_names_the_wait_inside_comm() -> None:
    first = Prediction(2, 1, 1.0, 2.0, 2.0, 1.8, 0.9, 0.01, parts={"compute": 1.9, "comm": 0.04},
                       comm_by_kind={"all_reduce": 0.04})
    refit = Prediction(2, 1, 1.0, 2.3, 2.3, 1.6, 0.8, 0.01, parts={"compute": 1.9, "comm": 0.34},
                       comm_by_kind={"all_reduce": 0.05, straggler.TERM: 0.29})
    assert moved_term(first, refit) == "comm +0.30 s (wait for the slower rank +0.29 s)"


def test_compute_per_step_is_a_line_in_the_batch_exact_through_two_and_least_squares_over_more() -> None:
    def run(batch: int, compute_per_step: float, accum: int = 1) -> dict:
        return {"config": {"batch_size": batch, "train": {"grad_accum": accum}}, "timing": {"steps": 50},
                "breakdown_s": {"compute": 50 * compute_per_step}}

    two = batch_fit.fit([run(16, 0.030), run(32, 0.040)])
    assert two is not None and (two.a, two.b) == pytest.approx((0.020, 0.010 / 16))
    assert two.factor(64, 32) == pytest.approx(0.060 / 0.040)
    xs, ys = [8, 16, 32, 64], [0.021, 0.030, 0.040, 0.061]
    three = batch_fit.fit([run(x, y) for x, y in zip(xs, ys, strict=True)] + [run(8, 0.021, accum=2)])
    b, a = np.polyfit([*xs, 16], [*ys, 0.021], 1)
    assert three is not None and (three.a, three.b) == pytest.approx((a, b))
    assert batch_fit.fit([run(16, 0.03), run(16, 0.031)]) is None  # one batch size: no line


def _h200_pair() -> tuple[dict, dict]:
    """The recorded H200 run (bf16, batch 64: 25.5 ms of compute per step) as the b64 baseline, and a b128 baseline
    BUILT from it, not recorded: every part as recorded but compute per step x 1.4 (an underfilled GPU's compute
    grows less than its batch). No fixture holds two batch sizes of one group."""
    b64 = json.loads(H200.read_text())
    b128 = copy.deepcopy(b64)
    b128["config"]["batch_size"] = 128
    b128["breakdown_s"]["compute"] *= 1.4
    b128["timing"]["train_time_s"] += b64["breakdown_s"]["compute"] * 0.4
    b128["config_id"] = b128["config"]["config_id"] = "b128"
    return b64, b128


def test_a_new_batch_prices_compute_by_the_line_of_the_recorded_batches_and_says_so_with_one() -> None:
    b64, b128 = _h200_pair()
    links = Links(intra_node=Link(100e9, 10e-6, "t"))
    target = {**copy.deepcopy(b128["config"]), "batch_size": 256, "gpus_per_node": 2}
    fitted = forecast(target, [b64, b128], links)
    alone = forecast(target, [b128], links)
    assert not isinstance(fitted, prediction.NoPrediction) and not isinstance(alone, prediction.NoPrediction)
    c = b64["breakdown_s"]["compute"] / b64["timing"]["steps"]
    line_at = {128: 1.4 * c, 256: c + 0.4 * c * 3}  # a + b x through (64, c) and (128, 1.4 c)
    # both from the nearest baseline, b128: compute per step x the line's ratio, else x2 (per sample constant)
    assert fitted.parts["compute"] / alone.parts["compute"] == pytest.approx(line_at[256] / line_at[128] / 2)
    plain = prediction.predict(b128, 1, 2, alone.work * 2, links, batch_factor=2.0)
    assert isinstance(plain, Prediction) and alone.parts["compute"] == pytest.approx(plain.parts["compute"])
    assert "least squares" not in fitted.link and "through the baselines at 64, 128 samples per step" in fitted.link
    assert "compute per sample assumed constant across batch sizes (one batch size recorded)" in alone.link
    assert fitted.t_s < alone.t_s


def test_the_store_gives_an_earlier_baseline_its_spread_from_its_metrics(tmp_path: Path) -> None:
    """The demo store's baselines predate `timing.step_time_sd_s`: read through the store, each with at least three
    metrics intervals carries the spread its rank 0's records give, marked as worked out, and the prediction
    from it prices the wait and says where the sd came from; one of two intervals is left unpriced."""
    from cockpit.store import StudyStore
    from cockpit.store.telemetry import SPREAD_INTERVALS

    shutil.copytree(DEMO, tmp_path / "demo")
    store = StudyStore(tmp_path / "demo" / "cockpit.sqlite", read_only=True)
    study = store.db.execute("SELECT id FROM studies").fetchone()[0]
    read = store.results(study)
    raw = {cid: json.loads(text) for cid, text in store.db.execute("SELECT config_id, result_json FROM results")}
    for cid in ("bad1f123bf", "27115f20d2"):
        assert "step_time_sd_s" not in raw[cid]["timing"]
        rows = store.rank_steps(study, cid, raw[cid].get("started_at"))
        intervals = straggler.metrics_intervals(rows, raw[cid]["timing"]["first_step_s"])
        timing = read[cid]["timing"]
        if len(intervals) >= SPREAD_INTERVALS:
            assert timing["step_time_sd_s"] == pytest.approx(straggler.interval_sd(intervals))
            assert timing["step_time_sd_from"] == "metrics" and timing["step_time_sd_intervals"] == len(intervals)
        else:
            assert "step_time_sd_s" not in timing
    base = read["bad1f123bf"]
    assert base["world_size"] == 1
    links = prediction.measured_links([r for r in read.values() if r.get("world_size", 1) > 1])
    got = prediction.predict(base, 1, 2, 2.0, links)
    assert isinstance(got, Prediction) and straggler.TERM in got.comm_by_kind
    assert f"from its {base['timing']['step_time_sd_intervals']} metrics intervals" in got.link
