"""A prediction that learns, on a real small local study: `cockpit run --baseline-first` keeps each configuration's
prediction as first made (store table first_predictions), and once the 1x2 run has finished `cockpit plan` sets its
first and refit prediction beside its measurement, and prints the configurations not yet run with 90% intervals
(cockpit.forecast.interval) resting on the study's own misses."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from textual.app import App
from textual.widgets import Static

from cockpit.cli import main as cli
from cockpit.run.session import store_path_for
from cockpit.store import StudyStore, predictions
from cockpit.store.recorded import study_plan
from cockpit.study.spec import load_study
from cockpit.tui.paged_table import PagedTable
from cockpit.tui.plan import PlanScreen
from tests.studies import run_baseline_first, write_study


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 1x1 and a 1x2 run, the 1x1 first: the 1x2 is predicted from it before it runs."""
    tmp = tmp_path_factory.mktemp("learns")
    return run_baseline_first(write_study(tmp / "study.toml", "learns", tmp / "work",
                                          cluster={"gpus_per_node": 2, "cores_per_node": 2}, train={"steps": 6}))


def _study(path: Path, monkeypatch: pytest.MonkeyPatch, scales: list[int]):  # noqa: ANN202 - Study
    monkeypatch.setenv("XDG_DATA_HOME", str(path.parent / "xdg"))
    wider = write_study(path.parent / f"study-{len(scales)}.toml", "learns", path.parent / "work",
                        cluster={"gpus_per_node": max(scales), "cores_per_node": max(scales)}, train={"steps": 6},
                        sweep={"gpus_per_node": scales})
    return wider, load_study(wider)


def _wider_plan(path: Path, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN202 - Plan
    """The plan of the finished study widened to 4 workers, read from its store as `cockpit plan` reads it."""
    _, study = _study(path, monkeypatch, [1, 2, 4])
    store = StudyStore(store_path_for(study), read_only=True)
    try:
        return study_plan(study, store)
    finally:
        store.close()


def test_the_first_prediction_is_kept_before_the_run_and_set_beside_its_measurement(finished, monkeypatch, capsys):
    monkeypatch.setenv("XDG_DATA_HOME", str(finished.parent / "xdg"))
    monkeypatch.setenv("COLUMNS", "250")
    study = load_study(finished)
    two = next(c for c in study.matrix() if c.workers == 2)
    store = StudyStore(store_path_for(study), read_only=True)
    try:
        kept = predictions.first(store, store.study_key(study.name))
    finally:
        store.close()
    assert set(kept) == {two.config_id}  # the baseline is measured, never predicted first
    assert kept[two.config_id].workers == 2 and kept[two.config_id].t_s > 0
    assert cli(["plan", str(finished)]) == 0
    out = capsys.readouterr().out
    words = " ".join(out.split())
    assert "finished configurations, predicted before they ran:" in out
    (line,) = [ln for ln in out.splitlines() if ln.strip().startswith(two.label + ": first predicted T")]
    first = kept[two.config_id].t_s
    assert f"first predicted T {first:.2f} s, refit " in line and "measured " in line and "on the first)" in line
    assert "first T s: the prediction as first made" in words and f"{first:.1f}" in out


def test_the_rest_is_predicted_again_with_an_interval_from_the_studys_misses(finished, monkeypatch):
    plan = _wider_plan(finished, monkeypatch)
    by_workers = {line.predicted.workers: line for line in plan.lines if line.predicted is not None}
    done, rest = by_workers[2], by_workers[4]
    assert done.measured is not None and done.first is not None and done.miss() is not None
    assert done.predicted is not None  # the refit: its miss is the error the intervals are centred on
    assert math.exp(done.miss()) == pytest.approx(done.measured.t_s / done.predicted.t_s)
    # one finished configuration with a first prediction: fewer than three, no narrower than its miss
    assert plan.spread is not None and plan.spread.basis.startswith("1 finished configuration with a prediction")
    assert plan.spread.half == pytest.approx(abs(done.miss()))
    iv = rest.intervals()
    assert iv["t_s"].spread.half >= plan.spread.half and "from the noise of the run and its baseline and its modelled terms (sd: " \
        in iv["t_s"].spread.basis  # the 4-worker prediction's own comm terms, in seconds
    assert set(iv) >= {"t_s", "node_hours", "speedup", "efficiency"}
    assert rest.predicted.memory  # the baseline recorded its memory: the peak per rank has its interval too
    peak = iv["memory_peak_bytes"]
    assert peak.low < rest.predicted.memory["peak_bytes"] < peak.high
    t = iv["t_s"]
    assert t.low < rest.predicted.t_s < t.high and t.words("s").startswith(f"{rest.predicted.t_s:.2f} s, 90% between ")
    assert iv["speedup"].low < rest.predicted.speedup < iv["speedup"].high
    assert done.intervals() == {}  # a measured configuration shows its measurement


def test_the_report_of_the_finished_study_sets_first_and_refit_beside_the_measurement(finished, monkeypatch,
                                                                                       tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(finished.parent / "xdg"))
    study = load_study(finished)
    two = next(c for c in study.matrix() if c.workers == 2)
    store = StudyStore(store_path_for(study), read_only=True)
    try:
        first = predictions.first(store, store.study_key(study.name))[two.config_id]
        measured = store.results(store.study_key(study.name))[two.config_id]["timing"]["train_time_s"]
    finally:
        store.close()
    assert cli(["report", str(finished), "--out", str(tmp_path / "report")]) == 0
    md = (tmp_path / "report" / "report.md").read_text()
    section = md[md.index("Predicted vs measured"):]
    header = next(ln for ln in section.splitlines() if ln.startswith("|"))
    assert "first predicted T (s)" in header and "refit T/work (s)" in header and "measured T (s)" in header
    row = next(ln for ln in section.splitlines() if ln.startswith("|") and f"| {first.t_s:.2f} |" in ln)
    assert f"| {measured:.2f} | {measured / first.t_s - 1:+.1%} |" in row


async def test_the_tuis_plan_dialog_shows_the_interval_and_first_beside_measured(finished, monkeypatch):
    plan = _wider_plan(finished, monkeypatch)
    rest = next(line for line in plan.lines if line.predicted is not None and line.predicted.workers == 4)
    t90 = rest.intervals()["t_s"]
    app: App = App()
    async with app.run_test(size=(200, 50)) as pilot:
        app.push_screen(PlanScreen(plan, None))
        await pilot.pause()
        table = app.screen.query_one("#plan-table", PagedTable)
        row = table.get_row_at(plan.lines.index(rest))
        assert str(row[-1]) == f"{t90.low:.1f}-{t90.high:.1f}"
        assert [str(c.label) for c in table.columns.values()][-1] == "T 90%"
        summary = str(app.screen.query_one("#plan-summary", Static).render())
        assert f"T {t90.words('s')}" in summary and "finished configurations, predicted before they ran:" in summary
        # every configuration measured: nothing has an interval, so the column is not shown (no column of "-")
        measured = replace(plan, lines=[line for line in plan.lines if line.measured is not None])
        assert measured.lines and not any(line.intervals() for line in measured.lines)
        app.pop_screen()
        app.push_screen(PlanScreen(measured, None))
        await pilot.pause()
        columns = [str(c.label) for c in app.screen.query_one("#plan-table", PagedTable).columns.values()]
        assert "T 90%" not in columns and columns[-1] == "S"


def test_the_json_events_carry_the_interval_when_submitted_and_the_first_prediction_when_finished(finished, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(finished.parent / "xdg"))
    study = load_study(finished)
    two = next(c for c in study.matrix() if c.workers == 2)
    events = [json.loads(line) for line in (finished.parent / "events.jsonl").read_text().splitlines()]
    submitted = {e["config_id"]: e for e in events if e["event"] == "submitted"}
    finished_ = {e["config_id"]: e for e in events if e["event"] == "finished"}
    assert submitted[study.matrix()[0].config_id]["predicted"] is None  # the baseline: nothing predicts it
    t = submitted[two.config_id]["predicted"]["t_s"]
    assert t["low"] < t["value"] < t["high"] and t["level"] == 0.9 and t["basis"].startswith("+-") \
        and "from the noise of the run and its baseline" in t["basis"]
    assert set(submitted[two.config_id]["predicted"]) >= {"t_s", "node_hours", "speedup", "efficiency"}
    assert finished_[two.config_id]["first_predicted_T_s"] == pytest.approx(t["value"])
    assert finished_[study.matrix()[0].config_id]["first_predicted_T_s"] is None
