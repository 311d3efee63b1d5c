"""Every predicted figure carries a 90% interval from the study's own measured misses (cockpit.forecast.interval):
a Student-t interval over the misses of its finished configurations, the documented prior
where there are fewer than three, widened by the spread of repeated runs; said in words beside the number."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from cockpit.forecast import interval
from cockpit.forecast.prediction import Prediction
from cockpit.forecast.prediction_words import moved_term

DEMO_STORE = Path(__file__).resolve().parents[1] / "fixtures" / "demo-store" / "local-demo" / "cockpit.sqlite"


def test_too_few_finished_predictions_give_the_documented_prior() -> None:
    spread = interval.error_model([0.05])
    assert spread.centre == 0 and spread.half == pytest.approx(math.log(1.4))
    assert spread.basis == "prior +-40%: 1 finished configuration with a prediction, 3 needed"
    iv = interval.interval(3.3, spread)
    assert (iv.low, iv.high) == pytest.approx((3.3 / 1.4, 3.3 * 1.4))
    assert iv.words("s") == "3.30 s, 90% between 2.36 and 4.62"


def test_three_misses_give_a_t_prediction_interval_computed_by_hand() -> None:
    misses = [math.log(1.02), math.log(1.08), math.log(1.14)]
    spread = interval.error_model(misses)
    mean = sum(misses) / 3
    sd = math.sqrt(sum((m - mean) ** 2 for m in misses) / 2)
    half = 2.920 * sd * math.sqrt(1 + 1 / 3)  # t(2 degrees of freedom) at 0.95
    assert spread.centre == pytest.approx(mean) and spread.half == pytest.approx(half)
    assert spread.basis.startswith("t over the misses of 3 finished configurations (mean +7.9%")  # geometric
    iv = interval.interval(2.76, spread)
    assert iv.low == pytest.approx(2.76 * math.exp(mean - half)) and iv.high == pytest.approx(2.76 * math.exp(mean + half))
    assert iv.contains(2.76 * 1.08) and not iv.contains(2.76 * 2)


def test_a_speedup_scales_with_one_over_t() -> None:
    spread = interval.error_model([])
    s = interval.interval(1.8, spread, inverse=True)
    assert (s.low, s.high) == pytest.approx((1.8 / 1.4, 1.8 * 1.4))


def test_repeated_runs_widen_the_interval_where_they_spread_more() -> None:
    tight = [math.log(1.01), math.log(1.0), math.log(0.99)]
    alone = interval.error_model(tight)
    repeats = [[3.0, 3.6], [2.0, 2.5, 2.2]]
    sd, df = interval.repeat_spread(repeats)
    assert df == 3 and sd > 0
    widened = interval.error_model(tight, repeats)
    assert widened.half == pytest.approx(2.353 * sd * math.sqrt(2)) and widened.half > alone.half
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
    from cockpit.forecast.interval import error_model
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
        assert r["predicted_t_same_work_s_high"] == pytest.approx(interval_of(r["predicted_t_same_work_s"], spread).high)
        assert r["prediction_interval"] == spread.basis
    with (tmp_path / "scaling.csv").open("w", newline="") as f:
        write_scaling_csv(rows, f)
    table = list(csv_module.DictReader((tmp_path / "scaling.csv").open()))
    for r in predicted:
        (line,) = [row for row in table if row["config_id"] == r["config_id"]]
        assert float(line["predicted_speedup_low"]) == pytest.approx(r["predicted_speedup_low"])


def test_a_wide_interval_names_the_run_that_narrows_it_most(tmp_path):
    """The recorded demo store with 4 workers more to sweep (on a 4-core node): those runs are predicted from the
    finished baselines with the prior's width (too few finished predictions), so the plan names the run to make;
    with nothing left to run it names none."""
    import shutil

    from cockpit.forecast.plan import narrowing_words, prediction_lines
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
    assert wider.spread is not None and math.expm1(wider.spread.half) > 0.25
    todo = [line for line in wider.to_submit if line.predicted is not None]
    assert todo and words.startswith(f"the intervals are wide (+-{math.expm1(wider.spread.half):.0%}: ")
    cheapest = min(todo, key=lambda line: (line.node_hours, line.predicted.t_s))
    assert f"the run that narrows them most: {cheapest.label} (predicted T {cheapest.predicted.t_s:.2f} s" in words
    assert words in prediction_lines(wider)  # printed by cockpit plan and the plan dialog
