"""The measured overlap of DDP's all-reduce with backward (result.json comm.overlap) and what the prediction does
with it, and the kWh interval beside T's."""

from __future__ import annotations

import math

import pytest

from cockpit.forecast import interval
from cockpit.forecast.plan import Plan, PlanLine
from cockpit.forecast.plan_words import prediction_lines
from cockpit.forecast.prediction import (
    BACKWARD_SHARE,
    Link,
    Links,
    Overlap,
    Prediction,
    measured_links,
    merge,
    predict,
    recorded_overlap,
    strategy_comm,
)
from runcontract.ddp_buckets import overlap


def test_the_hidden_share_is_one_minus_exposed_over_busy_clamped_and_null_without_a_timed_all_reduce():
    assert overlap({"all_reduce": {"busy_s": 2.0, "exposed_s": 0.5}}) == {"busy_s": 2.0, "exposed_s": 0.5,
                                                                          "hidden_share": 0.75}
    assert overlap({"all_reduce": {"busy_s": 0.1, "exposed_s": 0.3}})["hidden_share"] == 0.0  # waited for a rank
    assert overlap({"all_reduce": {"busy_s": 1.0, "exposed_s": -0.1}})["hidden_share"] == 1.0
    assert overlap({"all_reduce": {"busy_s": 0.0, "exposed_s": 0.2}})["hidden_share"] is None  # on GPU, older
    assert overlap({}) == {"busy_s": None, "exposed_s": None, "hidden_share": None}  # no DDP
    assert overlap({"all_gather": {"busy_s": 1.0, "exposed_s": 1.0}})["hidden_share"] is None  # FSDP


def test_an_older_result_without_comm_overlap_gives_the_same_formula_over_its_by_kind():
    older = {"comm": {"busy_s": 2.0, "by_kind": {"all_reduce": {"busy_s": 4.0, "exposed_s": 1.0}}}}
    assert recorded_overlap(older)["hidden_share"] == 0.75
    newer = {"comm": {"overlap": {"busy_s": 2.0, "exposed_s": 1.0, "hidden_share": 0.5}, **older["comm"]}}
    assert recorded_overlap(newer)["hidden_share"] == 0.5
    assert recorded_overlap({"comm": {"busy_s": 1.0}})["hidden_share"] is None  # before by_kind: not measured


def run(device: str, cores: int, share: float | None, world: int = 2) -> dict:
    return {"device": device, "world_size": world, "config": {"cpus_per_task": cores},
            "comm": {"overlap": {"busy_s": 1.0, "exposed_s": None if share is None else 1.0 - share,
                                 "hidden_share": share}}}


def test_measured_links_keep_the_median_share_per_setting_over_runs_of_more_than_one_worker():
    runs = [run("cpu", 1, 0.1), run("cpu", 1, 0.3), run("cpu", 1, 0.2), run("cpu", 4, 0.6), run("cuda", 0, 0.9),
            run("cuda", 0, 0.5, world=1), run("cuda", 0, None)]
    assert measured_links(runs).overlap == {"cpu, one core per worker": Overlap(0.2, 3),
                                            "cpu, several cores per worker": Overlap(0.6, 1),
                                            "cuda": Overlap(0.9, 1)}
    profile = Links(overlap={"cuda": Overlap(0.4, 1)})
    assert merge(Links(overlap={"cpu, one core per worker": Overlap(0.2, 3)}), profile).overlap == {
        "cuda": Overlap(0.4, 1), "cpu, one core per worker": Overlap(0.2, 3)}


LINK = Link(1e9, 0.0, "t")


def comm(overlap: Overlap | None, *, compute: float = 1.0, on_cpu: bool = False, cores: int = 0) -> float:
    """The exposed all-reduce per step of 1e8 gradient bytes in 4 buckets on 2 workers (t = 0.1 s)."""
    return strategy_comm("ddp", 2, 1e8, LINK, buckets=4, groups=2, compute=compute, on_cpu=on_cpu, cores=cores,
                         overlap=overlap)["all_reduce"]


def test_a_measured_share_replaces_the_rule_but_never_hides_more_than_backward():
    t = 2 * 1 / 2 * 1e8 / 1e9
    assert comm(None) == pytest.approx(t / 4)  # the rule: all but the last bucket hidden
    assert comm(None, on_cpu=True, cores=1) == pytest.approx(t)  # the rule: nothing hidden on one core
    assert comm(Overlap(0.35, 2)) == pytest.approx(t * 0.65)
    assert comm(Overlap(0.35, 2), on_cpu=True, cores=1) == pytest.approx(t * 0.65)
    short = 0.03  # backward 20 ms of an all-reduce of 100 ms: at most 20 ms of it hidden, whatever was measured
    assert comm(Overlap(0.9, 1), compute=short) == pytest.approx(t - BACKWARD_SHARE * short)
    fitted = Link(1e9, 0.0, "t", "t", {2: {"all_reduce": (1e-3, 5e8)}})  # the alpha-beta path, the same rule
    t_fit = 4 * 1e-3 + 1e8 / 5e8
    assert strategy_comm("ddp", 2, 1e8, fitted, buckets=4, groups=2, compute=1.0, on_cpu=False,
                         overlap=Overlap(0.5, 1))["all_reduce"] == pytest.approx(t_fit * 0.5)


def baseline(device: str, cores: int) -> dict:
    return {"device": device, "config": {"cpus_per_task": cores},
            "timing": {"train_time_s": 100.0, "steps": 1000},
            "breakdown_s": {"data_wait": 5.0, "compute": 90.0, "comm": 0.0, "optimizer": 4.0, "other": 1.0},
            "comm": {"grad_bytes": 100_000_000, "buckets": 5}}


def test_the_prediction_uses_the_share_of_the_baselines_setting_and_says_so():
    links = Links(intra_node=LINK, overlap={"cpu, several cores per worker": Overlap(0.35, 2)})
    several, one = predict(baseline("cpu", 4), 1, 2, 1.0, links), predict(baseline("cpu", 1), 1, 2, 1.0, links)
    ruled = predict(baseline("cpu", 4), 1, 2, 1.0, Links(intra_node=LINK))
    assert isinstance(several, Prediction) and isinstance(one, Prediction) and isinstance(ruled, Prediction)
    t = 1e8 / 1e9  # 2(N-1)/N = 1 on two workers, no latency
    assert several.comm_by_kind["all_reduce"] == pytest.approx(500 * t * 0.65)
    assert "overlap 35% hidden, measured by 2 run(s)" in several.link
    assert one.comm_by_kind["all_reduce"] == pytest.approx(500 * t)  # one core: measured elsewhere, the rule
    assert "overlap" not in one.link and ruled.link == one.link
    assert ruled.comm_by_kind["all_reduce"] == pytest.approx(500 * max(t / 5, t - BACKWARD_SHARE * 0.09))
    fsdp = predict(baseline("cpu", 4), 1, 2, 1.0, links, strategy="fsdp")  # no all-reduce: nothing to say
    assert isinstance(fsdp, Prediction) and "overlap" not in fsdp.link


def test_a_predicted_kwh_has_ts_relative_interval_and_is_said_beside_the_others():
    spread = interval.error_model([])  # no misses: the noise prior and the prediction's one term
    p = Prediction(2, 1, 2.0, 50.0, 25.0, 4.0, 2.0, 0.05, term_sd={"all_reduce": 5.0})
    line = PlanLine("w128 1x2", 0.05, "submit", "c2", p, kwh=0.002, spread=spread)
    iv = line.intervals()
    assert iv["kwh"].low / 0.002 == pytest.approx(iv["t_s"].low / 50.0)
    assert iv["kwh"].high / 0.002 == pytest.approx(iv["t_s"].high / 50.0)
    words = prediction_lines(Plan("s", "local", [line], 1.0, spread=spread))
    assert f"kWh {iv['kwh'].words(spec='.3g')}" in words[1]
    half = 1.645 * math.sqrt(2 * 0.07**2 + (5.0 / 50.0) ** 2)  # by hand: 23.1% in ln
    assert iv["kwh"].low == pytest.approx(0.002 * math.exp(-half)) and iv["kwh"].high == pytest.approx(0.002 * math.exp(half))
    assert iv["kwh"].words(spec=".3g") == "0.002, 90% between 0.00159 and 0.00252"
    assert "kwh" not in PlanLine("w128 1x2", 0.05, "submit", "c2", p, spread=spread).intervals()  # no energy
    assert PlanLine("w128 1x2", 0.05, "done", "c2", p, measured=p, kwh=0.002, spread=spread).intervals() == {}
