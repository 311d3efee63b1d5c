"""The plan predicts node-hours from a group's real finished baseline (cockpit.forecast.prediction) and recommends."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.cli import main as cli
from cockpit.forecast.plan import make_plan
from cockpit.study.spec import load_study
from runcontract.records import read_result, write_config, write_result
from tests.studies import REPO, write_study

SITE = """[site]
name = "lab"
intra_node_busbw_gbs = 1.0
allreduce_latency_us = 50
"""


@pytest.fixture(scope="module")
def study_and_baseline(tmp_path_factory: pytest.TempPathFactory):
    """A local study with a site profile that has link figures, and its 1x1 baseline really trained."""
    tmp = tmp_path_factory.mktemp("plan-prediction")
    (tmp / "lab.toml").write_text(SITE)
    path = write_study(tmp / "study.toml", "predicted", tmp / "work",
                       cluster={"site": "lab.toml", "gpus_per_node": 4, "cores_per_node": 4},
                       sweep={"gpus_per_node": [1, 2, 4]})
    study = load_study(path)
    base = next(c for c in study.matrix() if c.is_baseline)
    run_dir = Path(study.run_dir(base))
    write_config(run_dir, study.run_config(base))
    proc = subprocess.run([sys.executable, "-m", "trainer", "train", "--run-dir", str(run_dir)], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return path, study, read_result(run_dir)


def test_plan_lines_carry_predictions_from_the_baseline_and_the_site_links(study_and_baseline):
    _, study, base = study_and_baseline
    plan = make_plan(study, {base["config_id"]: "done"}, results=[base])
    by_workers = {line.predicted.workers: line for line in plan.lines}
    assert set(by_workers) == {1, 2, 4}
    assert by_workers[1].predicted.t_s == pytest.approx(base["timing"]["train_time_s"])
    two = by_workers[2].predicted
    assert "lab profile" in two.link and two.parts["comm"] > 0
    assert by_workers[2].node_hours == two.node_hours  # the budget counts the prediction
    assert plan.estimate == pytest.approx(two.node_hours + by_workers[4].predicted.node_hours)
    assert "measured for 1, predicted from the group's baseline for 2 configurations" in plan.basis
    (line,) = plan.recommendations.values()
    assert line.startswith("2 workers (1 node): ") and "4 workers (1 node)" in line


def test_cockpit_plan_prints_predictions_from_recorded_baselines(study_and_baseline, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    path, study, base = study_and_baseline
    recorded = tmp_path / "recorded" / "run"
    write_result(recorded, {k: v for k, v in base.items() if k not in ("schema_version", "kind")})
    assert cli(["plan", str(path), "--baselines", str(tmp_path / "recorded")]) == 0
    out = capsys.readouterr().out
    words = " ".join(out.split())  # the caption (the table's legend) wraps at the table's width
    assert "T s, S, node-h: predicted from the group's finished 1x1 baseline" in words and "workers (1 node):" in out
    assert cli(["plan", str(path), "--baselines", str(tmp_path / "missing")]) == 2
    assert "--baselines" in capsys.readouterr().err


def test_the_plan_marks_what_the_local_machine_cannot_run_too_big(tmp_path):
    """A study that believes in 8 cores, on a backend that knows the machine has 2: 2 workers x 2 cores
    is "too big", not "submit" (the local executor would refuse it)."""
    from cockpit.launch.local import LocalExecutor
    from cockpit.store.recorded import study_plan

    path = write_study(tmp_path / "s.toml", "cores", tmp_path / "w", cluster={"gpus_per_node": 2, "cores_per_node": 8},
                       sweep={"gpus_per_node": [1, 2], "cpus_per_task": [1, 2]})
    study = load_study(path)
    backend = LocalExecutor(study, max_cores=2)
    plan = study_plan(study, cores=backend.cores_per_node)
    status = {(line.label.split()[3], line.label.split()[4]): line.status for line in plan.lines}
    assert status[("1x2", "c2")] == "too big" and status[("1x2", "c1")] == "submit"
    assert study_plan(study).lines[-1].status == "submit"  # the study alone cannot know


def test_the_preflights_measured_links_replace_the_site_profiles(study_and_baseline):
    """Once a preflight measured a link, the prediction uses its figure (and says so) instead of the
    profile's nominal one; the runs' own probes would replace both."""
    from cockpit.forecast import prediction

    _, study, base = study_and_baseline
    measured = prediction.preflight_links({"intra_node": 0.25e9}, "abc123")
    nominal = make_plan(study, {base["config_id"]: "done"}, results=[base])
    preflown = make_plan(study, {base["config_id"]: "done"}, results=[base], measured=measured)
    two_nominal = next(line.predicted for line in nominal.lines if line.predicted.workers == 2)
    two = next(line.predicted for line in preflown.lines if line.predicted.workers == 2)
    # the preflight measures bandwidth only: the per-call latency is the profile's, and the link says so
    assert two.link.startswith("intra_node (measured by the preflight (abc123); latency 50 us from the lab "
                               "profile's allreduce_latency_us")
    assert two.parts["comm"] > two_nominal.parts["comm"]  # 0.25 GB/s measured against the profile's 1.0
