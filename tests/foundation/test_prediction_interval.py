"""Every predicted figure carries a 90% interval from the study's own spread (cockpit.forecast.interval): the
run's noise (a stated prior pooled with the repeats) and each term its prediction models, never narrower than a
Student-t over the misses of its finished configurations, or than the largest miss where there are fewer than
three; said in words beside the number."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from cockpit.forecast import interval
from cockpit.forecast.prediction import Prediction
from cockpit.forecast.prediction_words import moved_term

DEMO_STORE = Path(__file__).resolve().parents[1] / "fixtures" / "demo-store" / "local-demo" / "cockpit.sqlite"


def test_a_prediction_without_misses_rests_on_the_noise_prior_and_the_terms_it_models() -> None:
    spread = interval.error_model([])
    assert spread.centre == 0 and spread.half == 0 and spread.noise == 0.07
    assert spread.basis == ("0 finished configurations with a prediction (3 give a t over the misses); "
                            "noise sd 7.0% (the prior: no configuration has run twice)")
    own = interval.for_terms(spread, 10.0, {"all_reduce": 1.0, "contention": 0.2, "broadcast": 0.0})
    half = 1.645 * math.sqrt(2 * 0.07**2 + 0.1**2 + 0.02**2)  # by hand: the run's and the baseline's noise, 1 s, 0.2 s
    assert own.half == pytest.approx(half)
    assert own.basis.startswith(f"+-{math.expm1(half):.1%} from the noise of the run and its baseline and its "
                                "modelled terms (sd: all_reduce 1 s, contention 0.2 s); 0 finished")  # no zero term
    iv = interval.interval(10.0, own)
    assert (iv.low, iv.high) == pytest.approx((10.0 * math.exp(-half), 10.0 * math.exp(half)))
    assert iv.words("s") == "10.00 s, 90% between 7.92 and 12.63"


def test_a_miss_larger_than_the_terms_sets_the_width_until_three_give_a_t() -> None:
    spread = interval.error_model([math.log(1.05), math.log(0.6)])
    assert spread.centre == 0 and spread.half == pytest.approx(-math.log(0.6))
    assert "none narrower than its largest miss +66.7%" in spread.basis  # |ln 0.6| as a ratio
    own = interval.for_terms(spread, 10.0, {"all_reduce": 0.1})
    assert own.half == spread.half and ", widened to the study's +-66.7%" in own.basis


def test_three_misses_give_a_t_prediction_interval_computed_by_hand() -> None:
    misses = [math.log(1.02), math.log(1.08), math.log(1.14)]
    spread = interval.error_model(misses)
    mean = sum(misses) / 3
    sd = math.sqrt(sum((m - mean) ** 2 for m in misses) / 2)
    # their 2 degrees of freedom pooled with sqrt(2) x the noise prior 7% at 4: t(6) at 0.95
    pooled = math.sqrt((2 * sd**2 + 4 * 2 * 0.07**2) / 6)
    half = 1.943 * pooled * math.sqrt(1 + 1 / 3)
    assert spread.centre == pytest.approx(mean) and spread.half == pytest.approx(half)
    assert spread.basis.startswith("t over the misses of 3 finished configurations (mean +7.9%")  # geometric
    assert f"pooled {pooled:.1%} with the noise's 9.9% at 4 degrees of freedom" in spread.basis
    iv = interval.interval(2.76, spread)
    assert iv.low == pytest.approx(2.76 * math.exp(mean - half)) and iv.high == pytest.approx(2.76 * math.exp(mean + half))
    assert iv.contains(2.76 * 1.08) and not iv.contains(2.76 * 2)


def test_a_speedup_scales_with_one_over_t() -> None:
    own = interval.for_terms(interval.error_model([]), 2.0, {"all_reduce": 0.5})
    s = interval.interval(1.8, own, inverse=True)
    assert (s.low, s.high) == pytest.approx((1.8 * math.exp(-own.half), 1.8 * math.exp(own.half)))
    assert own.half == pytest.approx(1.645 * math.sqrt(2 * 0.07**2 + 0.25**2))


def test_repeated_runs_replace_the_noise_prior_as_they_accrue() -> None:
    alone = interval.error_model([])  # no misses: the width is the noise's alone
    repeats = [[3.0, 3.6], [2.0, 2.5, 2.2]]
    sd, df = interval.repeat_spread(repeats)
    assert df == 3 and sd > 0.07
    widened = interval.error_model([], repeats)
    pooled = math.sqrt((4 * 0.07**2 + 3 * sd**2) / 7)  # the prior counts as 4 degrees of freedom
    assert widened.noise == pytest.approx(pooled) and alone.noise == 0.07
    assert interval.for_terms(widened, 3.0, {}).half == pytest.approx(1.645 * pooled * math.sqrt(2))
    assert interval.for_terms(widened, 3.0, {}).half > interval.for_terms(alone, 3.0, {}).half
    assert "runs repeated: 3 degrees of freedom" in widened.basis


def test_the_term_that_moved_between_first_and_refit_is_named_in_seconds() -> None:
    first = Prediction(2, 1, 1.0, 2.76, 2.76, 1.8, 0.9, 0.01, parts={"compute": 2.0, "comm": 0.5}, link="site")
    refit = Prediction(2, 1, 1.0, 2.97, 2.97, 1.7, 0.85, 0.01, parts={"compute": 2.0, "comm": 0.71}, link="probe")
    assert moved_term(first, refit) == "comm +0.21 s (link: site -> probe)"
    assert moved_term(first, first) == "" and moved_term(None, refit) == ""


def test_scaling_csv_carries_each_predicted_figures_interval(tmp_path):
    """scaling.csv: beside every predicted T and speedup, its 90% interval from the study's own misses (the
    demo store's 2-worker runs), containing the prediction, and the basis named."""
    import csv as csv_module
    import shutil

    from cockpit.forecast.analysis import analyse, write_scaling_csv
    from cockpit.forecast.interval import error_model, for_terms
    from cockpit.forecast.interval import interval as interval_of
    from cockpit.report.source import from_store

    copy = tmp_path / "cockpit.sqlite"  # a copy: opening a WAL store leaves its -shm beside it
    shutil.copyfile(DEMO_STORE, copy)
    rows = analyse(from_store(copy).results)
    predicted = [r for r in rows if r.get("predicted_t_same_work_s", float("nan")) == r.get("predicted_t_same_work_s")
                 and "predicted_t_same_work_s_low" in r]
    assert predicted, "the demo store's 2-worker runs have predictions"
    spread = error_model([math.log1p(r["prediction_error"]) for r in predicted])
    for r in predicted:
        assert r["predicted_t_same_work_s_low"] < r["predicted_t_same_work_s"] < r["predicted_t_same_work_s_high"]
        assert r["predicted_speedup_low"] < r["predicted_speedup"] < r["predicted_speedup_high"]
        own = for_terms(spread, r["predicted_t_same_work_s"], r["prediction_terms"])
        assert r["prediction_terms"]["all_reduce"] > 0  # each row's own modelled terms widen it
        assert r["predicted_t_same_work_s_high"] == pytest.approx(interval_of(r["predicted_t_same_work_s"], own).high)
        assert r["prediction_interval"] == own.basis
    with (tmp_path / "scaling.csv").open("w", newline="") as f:
        write_scaling_csv(rows, f)
    table = list(csv_module.DictReader((tmp_path / "scaling.csv").open()))
    for r in predicted:
        (line,) = [row for row in table if row["config_id"] == r["config_id"]]
        assert float(line["predicted_speedup_low"]) == pytest.approx(r["predicted_speedup_low"])


def test_a_wide_interval_names_the_run_that_narrows_it_most(tmp_path):
    """The recorded demo store with 4 workers more to sweep (on a 4-core node): those runs are predicted from the
    finished baselines as wide as the largest of its two misses (too few for a t), so the plan names the run to make;
    with nothing left to run it names none."""
    import shutil

    from cockpit.forecast.plan_words import narrowing_words, prediction_lines
    from cockpit.store import StudyStore
    from cockpit.store.recorded import study_plan
    from cockpit.study.spec import load_study

    demo = DEMO_STORE.parents[1]
    (tmp_path / "local-demo").mkdir()
    shutil.copyfile(DEMO_STORE, tmp_path / "local-demo" / "cockpit.sqlite")
    text = (demo / "study.toml").read_text()
    (tmp_path / "study.toml").write_text(text)
    wider_text = text.replace("gpus_per_node = [1, 2]", "gpus_per_node = [1, 2, 4]").replace(
        "gpus_per_node = 2 ", "cores_per_node = 4\ngpus_per_node = 4 ")
    assert wider_text.count("4") > text.count("4")
    (tmp_path / "wider.toml").write_text(wider_text)
    store = StudyStore(tmp_path / "local-demo" / "cockpit.sqlite", read_only=True)
    try:
        done = study_plan(load_study(tmp_path / "study.toml"), store, cluster="local")
        wider = study_plan(load_study(tmp_path / "wider.toml"), store, cluster="local")
    finally:
        store.close()
    assert narrowing_words(done) == ""  # every configuration is done: nothing to run
    words = narrowing_words(wider)
    halves = sorted(line.intervals()["t_s"].spread.mean_half() for line in wider.lines if line.intervals())
    median = halves[len(halves) // 2]
    assert math.expm1(median) > 0.25  # the demo's two misses (+29%) set the width: fewer than three
    todo = [line for line in wider.to_submit if line.predicted is not None]
    assert todo and words.startswith(f"the intervals are wide (median +-{math.expm1(median):.0%}); ")
    cheapest = min(todo, key=lambda line: (line.node_hours, line.predicted.t_s))
    assert f"the run that narrows them most: {cheapest.label} (predicted T {cheapest.predicted.t_s:.2f} s" in words
    terms = cheapest.predicted.term_sd
    largest = max(terms, key=lambda k: terms[k])  # 4 CPU workers on a node: a term it models, named in seconds
    size = f"up to {terms[largest]:.2f} s longer" if largest == interval.UPSIDE_TERM else f"sd {terms[largest]:.2f} s"
    assert f"; its largest modelled term: {largest}, {size})" in words
    # the demo's baselines ran once: what three runs of each would take off every interval, by the noise's formula
    floors = [math.expm1(interval.Z90 * wider.spread.noise * math.sqrt(1 + 1 / k)) for k in (1, 3)]
    assert words.endswith(f"; the study's baseline_runs = 3 (2 more 1x1 runs per group) would lower every interval's "
                          f"noise floor from +-{floors[0]:.1%} to +-{floors[1]:.1%} (noise sd {wider.spread.noise:.1%})")
    assert words in prediction_lines(wider)  # printed by cockpit plan and the plan dialog


def _base() -> dict:
    """A 1-worker CPU baseline of 100 steps: 10 s of T, a per-step sd of 20 ms (the wait priced), 100 MB of gradients."""
    return {"device": "cpu", "world_size": 1, "config": {"cpus_per_task": 4, "strategy": "ddp"},
            "timing": {"train_time_s": 10.0, "steps": 100, "step_time_sd_s": 0.02},
            "breakdown_s": {"data_wait": 0.5, "compute": 9.0, "comm": 0.0, "optimizer": 0.4, "other": 0.1},
            "comm": {"grad_bytes": 100_000_000, "buckets": 4}, "model": {"layers": 2}}


def test_each_term_a_prediction_models_carries_its_own_seconds_of_doubt() -> None:
    """The terms by hand (cockpit.forecast.term_doubt): MODEL_SD x each collective's and the wait's seconds, the
    contention's added compute (on GPUs), SHARED_CORES_UPSIDE of the compute (or the probe's slowdown's, where
    more) on the high side only for CPU ranks sharing a node's (or a host's) cores, compute at an unrun batch (10%
    of it per doubling, at most MODEL_SD), and FSDP's wrapping."""
    from cockpit.forecast.prediction import Link, Links, predict
    from cockpit.forecast.straggler import TERM
    from cockpit.forecast.term_doubt import SHARED_CORES_UPSIDE, WRAPPED_SD, batch_sd

    links = Links(intra_node=Link(1e9, 1e-5), contention={2: 1.2})
    ddp = predict(_base(), 1, 2, 1.0, links, batch_factor=2.0)
    assert isinstance(ddp, Prediction)
    sd = ddp.term_sd
    assert sd["all_reduce"] == pytest.approx(interval.MODEL_SD * ddp.comm_by_kind["all_reduce"])
    assert sd[TERM] == pytest.approx(interval.MODEL_SD * ddp.comm_by_kind[TERM])
    on_gpu = predict({**_base(), "device": "cuda"}, 1, 2, 1.0, links)
    assert isinstance(on_gpu, Prediction)
    # a GPU each: the probe's slowdown moves the compute, and its added seconds are a term
    assert on_gpu.parts["compute"] == pytest.approx(1.2 * 9.0 / 2)
    assert on_gpu.term_sd["contention"] == pytest.approx(interval.MODEL_SD * on_gpu.parts["compute"] * (1 - 1 / 1.2))
    assert interval.UPSIDE_TERM not in on_gpu.term_sd  # no cores shared
    # CPU ranks sharing cores: the compute stays the baseline's, the upside (half of it, or more where the probe
    # read more) covers the probe's reading
    assert ddp.parts["compute"] == pytest.approx(9.0 / 2) and "contention" not in sd  # half the steps, twice the batch
    assert sd[interval.UPSIDE_TERM] == pytest.approx(SHARED_CORES_UPSIDE * ddp.parts["compute"])
    assert "the contention probe read x1.20 for 2 CPU ranks on a node: priced as the shared cores' upside" in ddp.link
    high = predict(_base(), 1, 2, 1.0, Links(intra_node=Link(1e9, 1e-5), contention={2: 1.8}))
    assert isinstance(high, Prediction)
    assert high.term_sd[interval.UPSIDE_TERM] == pytest.approx(0.8 * high.parts["compute"])
    across = predict(_base(), 2, 1, 1.0, Links(inter_node=Link(1e9, 1e-5)))
    assert isinstance(across, Prediction) and "contention" not in across.term_sd  # one rank a node
    # ... unless the nodes were seen on one host (a preflight's ranks, a finished run's hostnames)
    one_host = predict(_base(), 2, 1, 1.0, Links(inter_node=Link(1e9, 1e-5), shared_host="vm"))
    assert isinstance(one_host, Prediction)
    assert one_host.term_sd[interval.UPSIDE_TERM] == pytest.approx(SHARED_CORES_UPSIDE * one_host.parts["compute"])
    assert "the 2 nodes are one host (vm): their ranks share its cores" in one_host.link
    assert sd["batch"] == pytest.approx(0.10 * ddp.parts["compute"])  # one doubling of the batch: 10% of compute
    assert batch_sd(32.0, 1.0) == pytest.approx(interval.MODEL_SD) and batch_sd(0.5, 2.0) == pytest.approx(0.2)
    assert "wrapping" not in sd and "refit" not in sd
    fsdp = predict(_base(), 1, 2, 1.0, links, strategy="fsdp")
    assert isinstance(fsdp, Prediction) and "batch" not in fsdp.term_sd
    assert fsdp.term_sd["wrapping"] == pytest.approx(WRAPPED_SD * fsdp.parts["compute"])
    one = predict(_base(), 1, 1, 1.0, links)
    assert isinstance(one, Prediction) and one.term_sd == {}  # one worker: nothing modelled
    # the interval the plan puts around it: the noise and every term, by hand
    own = interval.for_terms(interval.error_model([]), fsdp.t_s, fsdp.term_sd)
    sds = {k: v for k, v in fsdp.term_sd.items() if k != interval.UPSIDE_TERM}
    assert own.half == pytest.approx(1.645 * math.sqrt(2 * 0.07**2 + sum((v / fsdp.t_s) ** 2 for v in sds.values())))
    # the upside lengthens the high side alone: ln(1 + its seconds / T)
    up = fsdp.term_sd[interval.UPSIDE_TERM]
    assert own.upside == pytest.approx(math.log1p(up / fsdp.t_s))
    iv = interval.interval(fsdp.t_s, own)
    assert iv.low == pytest.approx(fsdp.t_s * math.exp(-own.half))
    assert iv.high == pytest.approx(fsdp.t_s * math.exp(own.half) * (1 + up / fsdp.t_s))
    assert f"up to {up:.3g} s" in own.basis and interval.UPSIDE_TERM in own.basis
    s_iv = interval.interval(2.0, own, inverse=True)  # a speedup: the run's slower side is its low end
    assert s_iv.low == pytest.approx(2.0 / (math.exp(own.half) * (1 + up / fsdp.t_s)))
    memory = interval.interval(100.0, own, timed=False)  # bytes: no upside
    assert memory.high == pytest.approx(100.0 * math.exp(own.half))


def test_a_refit_prediction_keeps_the_misses_width_but_is_not_shifted_by_their_mean_again() -> None:
    """Three misses of +30% (a fast baseline): an unrefit prediction is shifted by them; one whose parts the
    finished runs refit already holds that bias, so it keeps the width and its centre stays its own."""
    spread = interval.error_model([math.log(1.28), math.log(1.30), math.log(1.33)])
    assert spread.centre == pytest.approx(math.log(1.303), abs=1e-3)
    plain = interval.for_terms(spread, 4.0, {"all_reduce": 0.1})
    refit = interval.for_terms(spread, 6.0, {"all_reduce": 0.1, interval.REFIT_TERM: 0.3})
    assert plain.centre == spread.centre and refit.centre == 0.0
    assert interval.interval(6.0, refit).contains(6.0) and not interval.interval(4.0, plain).contains(4.0)


def test_three_scattered_misses_do_not_set_the_width_alone() -> None:
    """One loaded run among three misses (sd 25%): pooled with what the noise alone would give, the interval is
    narrower than a t at 2 degrees of freedom would make it, and wider than the noise alone."""
    misses = [math.log(0.75), math.log(0.95), math.log(1.22)]
    mean = sum(misses) / 3
    sd = math.sqrt(sum((m - mean) ** 2 for m in misses) / 2)
    spread = interval.error_model(misses)
    assert spread.half < 2.920 * sd * math.sqrt(4 / 3)
    assert spread.half > 1.645 * math.sqrt(2) * 0.07


def test_a_baseline_repeated_k_times_counts_its_noise_once_over_k() -> None:
    """for_terms by hand: with no modelled terms and no misses, the half-width is 1.645 x noise x sqrt(1 + 1/k)
    (the run's own noise and its baseline's mean over k runs), so three baseline runs take the floor from +-16.3%
    to +-13.3% of ln T at the prior's 7%; the words say what the baseline is."""
    spread = interval.error_model([])
    one, three = interval.for_terms(spread, 10.0, {}), interval.for_terms(spread, 10.0, {}, 3)
    assert one.half == pytest.approx(interval.Z90 * interval.NOISE_PRIOR * math.sqrt(2))
    assert three.half == pytest.approx(interval.Z90 * interval.NOISE_PRIOR * math.sqrt(4 / 3))
    assert round(one.half, 3) == 0.163 and round(three.half, 3) == 0.133
    assert "from the noise of the run and its baseline (the mean of 3 runs)" in three.basis
    assert "(the mean of" not in one.basis
