"""The scaling model: ring all-reduce with overlap against backward, per-step parts from the baseline."""

from __future__ import annotations

import pytest

from cockpit.forecast.prediction import (
    Link,
    Links,
    NoPrediction,
    measured_links,
    predict,
    site_links,
    work_for,
)
from cockpit.forecast.prediction_words import recommendation
from cockpit.study.sites import load_site


def baseline(t: float = 100.0, steps: int = 1000, grad: int = 100_000_000, buckets: int = 5) -> dict:
    return {"timing": {"train_time_s": t, "steps": steps, "startup_s": 20.0, "eval_s": 10.0},
            "breakdown_s": {"data_wait": 5.0, "compute": 90.0, "comm": 0.0, "optimizer": 4.0, "other": 1.0},
            "comm": {"grad_bytes": grad, "buckets": buckets}}


LINKS = Links(intra_node=Link(100e9, 0.0, "t"), inter_node=Link(10e9, 10e-6, "t"))


def test_an_all_reduce_hidden_behind_backward_costs_only_its_last_bucket():
    # 4 GPUs in a node: t_ar = 2*3/4 * 100 MB / 100 GB/s = 1.5 ms < backward 60 ms: exposed = t_ar / 5 buckets
    p = predict(baseline(), 1, 4, 1.0, LINKS)
    assert p.parts["comm"] == pytest.approx(250 * 1.5e-3 / 5)
    assert p.parts["compute"] == pytest.approx(90 / 4) and p.parts["data_wait"] == pytest.approx(5 / 4)
    assert p.t_s == pytest.approx(100 / 4 + 250 * 0.3e-3)
    assert p.speedup == pytest.approx(100 / p.t_s) and p.efficiency == pytest.approx(p.speedup / 4)
    assert p.node_hours == pytest.approx((p.t_s + 30.0) / 3600)


def test_across_nodes_the_slower_link_and_its_latency_apply_and_what_backward_cannot_hide_is_exposed():
    slow = baseline(grad=2_000_000_000)
    p = predict(slow, 2, 4, 1.0, LINKS)  # 8 workers over 2 nodes: inter-node link
    t_ar = 2 * 7 / 8 * 2e9 / 10e9 + 2 * 7 * 5 * 10e-6
    assert p.parts["comm"] == pytest.approx((t_ar - 2 / 3 * 0.09) * 125)
    assert "inter_node" in p.link and p.node_hours == pytest.approx((p.t_s + 30) * 2 / 3600)


def test_fixed_steps_predict_the_same_steps_and_compare_at_the_baseline_work():
    p = predict(baseline(), 1, 2, work_for({"steps": 1000}, 2), LINKS)
    assert p.work == 2 and p.t_s == pytest.approx(2 * p.t_same_work_s)
    assert work_for({"epochs": 1}, 2) == 1.0


def test_what_cannot_be_predicted_says_why():
    assert "bandwidth" in predict(baseline(), 1, 2, 1.0, Links()).reason
    old = baseline()
    del old["comm"]
    assert "grad_bytes" in predict(old, 1, 2, 1.0, LINKS).reason
    assert isinstance(predict({"timing": {}}, 1, 2, 1.0, LINKS), NoPrediction)
    assert predict(baseline(), 1, 1, 1.0, Links()).speedup == pytest.approx(1.0)  # no link needed alone


def test_link_figures_come_from_probes_before_the_site_profile():
    probed = [{"comm": {"probe": {"links": {"intra_node": {"busbw_bytes_per_s": v}}}}} for v in (1e9, 3e9, 2e9)]
    m = measured_links(probed)
    assert m.intra_node.busbw == 2e9 and m.inter_node is None
    site = site_links(load_site("meluxina"))
    assert site.intra_node.busbw == 200e9 and site.inter_node.busbw == 40e9 and site.inter_node.latency_s == pytest.approx(10e-6)
    assert site_links(load_site("generic")) == Links()


def test_recommendation_names_speedup_per_gpu_hours_and_the_fastest():
    preds = [predict(baseline(), 1, n, 1.0, LINKS) for n in (1, 2, 4)]
    line = recommendation(100.0, preds)
    s2, s4 = preds[1].speedup, preds[2].speedup
    assert line.startswith(f"2 workers (1 node): {s2:.2f}x for {2 / s2:.2f}x the GPU-hours; "
                           f"4 workers (1 node): {s4:.2f}x for {4 / s4:.2f}x the GPU-hours")
    assert line.endswith("best time-to-result: 4 workers")


def test_a_probes_alpha_beta_fit_on_the_same_ranks_prices_each_call_and_other_ranks_keep_the_ring_model():
    # CPU baseline, one core per worker: nothing overlaps. Measured on 2 ranks: all-reduce alpha 1 ms, 50 MB/s.
    base = {**baseline(grad=10_000_000, buckets=4), "device": "cpu", "config": {"cpus_per_task": 1}}
    fitted = Link(1e9, 20e-6, "t", "t", {2: {"all_reduce": (1e-3, 50e6)}})
    p = predict(base, 1, 2, 1.0, Links(intra_node=fitted))
    steps = 1000 / 2
    assert p.parts["comm"] == pytest.approx(steps * (4 * 1e-3 + 10_000_000 / 50e6))  # 4 buckets x alpha + G / beta
    assert "alpha-beta per call measured on 2 ranks" in p.link
    ring = predict(base, 1, 4, 1.0, Links(intra_node=fitted))  # no fit on 4 ranks: the bandwidth and latency
    assert ring.parts["comm"] == pytest.approx(250 * (2 * 3 / 4 * 10_000_000 / 1e9 + 2 * 3 * 4 * 20e-6))
    assert "alpha-beta" not in ring.link


def test_measured_links_keep_each_kinds_fit_by_ranks_and_older_probes_have_none():
    run = {"comm": {"probe": {"links": {"intra_node": {
        "ranks": 2, "busbw_bytes_per_s": 1e9, "latency_s": 1e-5,
        "collectives": {"all_reduce": {"alpha_s": 1e-3, "beta_bytes_per_s": 5e7},
                        "broadcast": {"error": "not supported"}}}}}}}
    older = {"comm": {"probe": {"links": {"intra_node": {"ranks": 2, "busbw_bytes_per_s": 3e9}}}}}
    link = measured_links([run]).intra_node
    assert link.fits == {2: {"all_reduce": (1e-3, 5e7)}} and link.fit("broadcast", 2) is None
    assert measured_links([older]).intra_node.fits == {}


def test_the_contention_probes_slowdown_scales_compute_for_that_many_ranks_on_a_node():
    slowed = Links(intra_node=LINKS.intra_node, contention={4: 1.25})
    plain, p = predict(baseline(), 1, 4, 1.0, LINKS), predict(baseline(), 1, 4, 1.0, slowed)
    assert p.parts["compute"] == pytest.approx(1.25 * plain.parts["compute"])
    assert "compute x1.25 for 4 ranks on a node (contention probe)" in p.link
    assert predict(baseline(), 1, 2, 1.0, slowed).parts["compute"] == pytest.approx(90 / 2)  # measured on 4 only
    run = {"comm": {"probe": {"links": {}, "contention": {"ranks_on_node": 2, "slowdown": 1.4}}}}
    assert measured_links([run]).contention == {2: 1.4}
