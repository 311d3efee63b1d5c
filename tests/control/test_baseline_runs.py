"""A repeated baseline ([study].baseline_runs = 2), on a real small local study: both 1x1 runs run (each its own
configuration id, run directory and result, one group), the 1x2 waits for both under `--baseline-first`, and the
predictions are made from their mean: `cockpit plan` says the two runs' T and their mean, each interval counts the
baseline's noise once over two, the study's noise is pooled from the pair, and the analysis' rows say the same."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from cockpit.cli import main as cli
from cockpit.forecast import interval
from cockpit.forecast.analysis import analysed, write_scaling_csv
from cockpit.run.session import store_path_for
from cockpit.store import StudyStore
from cockpit.store.recorded import study_plan
from cockpit.study.spec import load_study
from tests.studies import run_baseline_first, write_study

SECTIONS = {"cluster": {"gpus_per_node": 2, "cores_per_node": 2}, "train": {"steps": 6},
            "study": {"baseline_runs": 2}}


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("repeats")
    return run_baseline_first(write_study(tmp / "study.toml", "repeats", tmp / "work", **SECTIONS))


def _runs(path: Path) -> dict[str, dict]:
    """Each configuration's result.json as the run wrote it, by config id."""
    study = load_study(path)
    return {cfg.config_id: json.loads((Path(study.run_dir(cfg)) / "result.json").read_text())
            for cfg in study.matrix()}


def test_both_baseline_runs_run_as_configurations_of_one_group_before_the_two_worker_run(finished):
    study = load_study(finished)
    first, again, two = study.matrix()
    assert (first.run, again.run, two.workers) == (1, 2, 2)
    assert first.group_id == again.group_id == two.group_id and first.config_id != again.config_id
    assert again.label == f"{first.label} run 2" and study.baseline_runs_of(two) == [first, again]
    runs = _runs(finished)
    assert {runs[c.config_id]["status"] for c in (first, again, two)} == {"completed"}
    events = [json.loads(line) for line in (finished.parent / "events.jsonl").read_text().splitlines()]
    started = [e["config_id"] for e in events if e.get("event") == "submitted"]
    assert started.index(two.config_id) > max(started.index(first.config_id), started.index(again.config_id))


def test_the_plan_predicts_from_the_mean_of_the_two_runs_and_says_so(finished, monkeypatch, capsys):
    monkeypatch.setenv("XDG_DATA_HOME", str(finished.parent / "xdg"))
    monkeypatch.setenv("COLUMNS", "250")
    runs = _runs(finished)
    study = load_study(finished)
    first, again, _ = study.matrix()
    times = sorted(runs[c.config_id]["timing"]["train_time_s"] for c in (first, again))
    said = (f"baseline T {sum(times) / 2:.2f} s, the mean of 2 runs ({times[0]:.2f}, {times[1]:.2f} s)")
    wider = write_study(finished.parent / "wider.toml", "repeats", finished.parent / "work",
                        **{**SECTIONS, "cluster": {"gpus_per_node": 4, "cores_per_node": 4}},
                        sweep={"gpus_per_node": [1, 2, 4]})
    study = load_study(wider)
    store = StudyStore(store_path_for(study), read_only=True)
    try:
        plan = study_plan(study, store)
    finally:
        store.close()
    four = next(line for line in plan.lines if line.predicted is not None and line.predicted.workers == 4)
    assert four.predicted.baseline_runs == 2 and said in four.predicted.link
    assert plan.pooled == (f"{first.label}: {said}",)
    own = four.intervals()["t_s"].spread
    assert "from the noise of the run and its baseline (the mean of 2 runs)" in own.basis
    # the pair is the study's own repeat: its spread is pooled with the prior at 1 degree of freedom
    logs = [math.log(t) for t in times]
    pair_sd = abs(logs[1] - logs[0]) / math.sqrt(2)
    noise = math.sqrt((interval.NOISE_PRIOR_DF * interval.NOISE_PRIOR**2 + pair_sd**2) / (interval.NOISE_PRIOR_DF + 1))
    assert plan.spread.repeats == 1 and plan.spread.noise == pytest.approx(noise)
    assert f"runs repeated: 1 degrees of freedom, sd {pair_sd:.1%}" in plan.spread.basis
    assert cli(["plan", str(wider)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"predicted from repeated baselines (the study's baseline_runs): {first.label}: {said}" in out
    assert first.config_id in out and again.config_id in out  # each run its own line of the matrix


def test_the_analysis_predicts_each_row_from_the_pooled_baseline(finished, tmp_path):
    runs = _runs(finished)
    rows, _ = analysed(list(runs.values()))
    base = next(r for r in rows if r["workers"] == 1)
    two = next(r for r in rows if r["workers"] == 2)
    assert base["runs"] == 2  # the pair is one configuration's repeats: one row, its median run's figures
    assert two["prediction_baseline_runs"] == 2 and "the mean of 2 runs" in two["prediction_note"]
    assert "(the mean of 2 runs)" in two["prediction_interval"]
    with (tmp_path / "scaling.csv").open("w", newline="") as f:
        write_scaling_csv(rows, f)
    (line,) = [r for r in csv.DictReader((tmp_path / "scaling.csv").open()) if r["config_id"] == two["config_id"]]
    assert line["prediction_baseline_runs"] == "2"


def test_time_to_result_and_the_what_if_count_the_repeated_baseline_once(finished, monkeypatch, capsys):
    from cockpit.forecast.full_run import ProductionRun
    from cockpit.run.full_run import recorded, time_to_result

    monkeypatch.setenv("XDG_DATA_HOME", str(finished.parent / "xdg"))
    monkeypatch.setenv("COLUMNS", "250")
    study = load_study(finished)
    first, again, two = study.matrix()
    plan, results = recorded(study)
    outcome = time_to_result(study, ProductionRun("epochs", 3), plan=plan, results=results, now=1_800_000_000.0)
    assert [row.config_id for row in outcome.rows] == [first.config_id, two.config_id]  # run 2 is no choice
    assert cli(["plan", str(finished), "--what-if", "sweep.batch_size=[8]"]) == 0
    out = capsys.readouterr().out
    assert "run 2" not in out and "dropped" not in out and "b8" in out
