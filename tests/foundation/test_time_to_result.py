"""Time to result (cockpit.forecast.full_run) over real recorded runs: the demo's local study (measured) and the
H200 baseline predicting MeluXina-shaped configurations (with the plan's 90% interval and measured energy).
The Slurm queue's own start estimates are tested on the test Slurm (tests/control/test_full_run.py)."""

from __future__ import annotations

import csv
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.commands.plan import baseline_results
from cockpit.forecast.full_run import (
    Prices,
    ProductionRun,
    Queue,
    full_run,
    parse_deadline,
    parse_production,
    segments,
)
from cockpit.forecast.full_run_words import records, summary_lines
from cockpit.launch.local import LocalExecutor
from cockpit.run.full_run import recorded, time_to_result
from cockpit.study.spec import load_study
from tests.studies import study_toml

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "tests" / "fixtures" / "demo-store" / "study.toml"
H200 = REPO / "tests" / "fixtures" / "h200-runs" / "bf16-w256"
NOW = 1_800_000_000.0


def test_a_local_study_has_no_queue_and_each_full_run_is_its_measured_time_per_sample_times_the_samples() -> None:
    study = load_study(DEMO)
    plan, results = recorded(study)
    outcome = time_to_result(study, ProductionRun("epochs", 3), plan=plan, results=results, now=NOW)
    assert outcome.queue_words == LocalExecutor.no_start_estimate
    timing = {r["config_id"]: r["timing"] for r in results}
    for row in outcome.rows:
        t = timing[row.config_id]
        assert row.basis == "measured" and row.queue.start == NOW and not row.reason
        samples = 3 * t["samples"] / t["epochs"]
        assert row.t_s is not None and row.t_s.low == row.t_s.high  # measured: no interval
        assert row.t_s.value == pytest.approx(t["train_time_s"] * samples / t["samples"])
        assert row.steps == pytest.approx(samples / (t["samples"] / t["steps"]))
        assert row.startup_s == t["startup_s"] and row.segments is not None and row.segments.count == 1
    first = min(outcome.rows, key=lambda r: r.wall_s.value if r.wall_s else math.inf)
    assert outcome.first is first  # nothing waits: the shortest run finishes first
    assert outcome.cheapest is min(outcome.rows, key=lambda r: r.node_hours.value if r.node_hours else math.inf)


def test_the_queue_changes_the_first_the_deadline_the_cheapest_and_the_pareto_set_is_the_undominated() -> None:
    study = load_study(DEMO)
    plan, results = recorded(study)
    run = ProductionRun("samples", 2e6)
    alone = full_run(plan, results, run, time_limit_s=3600, signal_s=120, now=NOW)
    fastest = alone.first
    assert fastest is not None
    # the fastest waits a day in the queue: the next fastest finishes first
    queued = full_run(plan, results, run, time_limit_s=3600, signal_s=120, now=NOW,
                      queues={fastest.config_id: Queue(NOW + 86400, "sbatch --test-only: node1")},
                      prices=Prices(node_hour=2.0))
    assert queued.first is not None and queued.first.config_id != fastest.config_id
    waited = next(r for r in queued.rows if r.config_id == fastest.config_id)
    assert waited.finish is not None and waited.wall_s is not None
    assert waited.finish.value == pytest.approx(NOW + 86400 + waited.wall_s.value)
    # a deadline before the waiting one's finish: the cheapest of those that meet it
    by = waited.finish.value - 1
    dated = full_run(plan, results, run, time_limit_s=3600, signal_s=120, now=NOW, deadline=by,
                     queues={fastest.config_id: Queue(NOW + 86400, "sbatch --test-only: node1")},
                     prices=Prices(node_hour=2.0))
    meeting = [r for r in dated.rows if r.finish and r.finish.value <= by]
    assert dated.cheapest is min(meeting, key=lambda r: r.cost.value if r.cost else math.inf)
    assert dated.cheapest is not None and dated.cheapest.cost is not None and dated.cheapest.node_hours is not None
    assert dated.cheapest.cost.value == pytest.approx(2.0 * dated.cheapest.node_hours.value)
    pareto = dated.pareto
    for r in dated.rows:  # a row is in the set exactly when no other is as soon and as cheap, and better in one
        dominated = any(o.finish.value <= r.finish.value and o.cost.value <= r.cost.value and
                        (o.finish.value < r.finish.value or o.cost.value < r.cost.value)
                        for o in dated.rows if o.finish and o.cost and r.finish and r.cost)
        assert (r in pareto) is not dominated
    marked = {rec["config_id"]: rec for rec in records(dated)}
    assert marked[dated.cheapest.config_id]["cheapest"] and sum(rec["first"] for rec in marked.values()) == 1
    lines = summary_lines(dated)
    assert any(line.startswith("cheapest (cost, finishing by ") for line in lines), lines


def test_the_time_limit_cuts_a_run_into_jobs_each_repaying_the_start_up() -> None:
    cut = segments(3000.0, 1200.0, startup_s=10.0, checkpoint_s=5.0, signal_s=60.0, once_s=20.0)
    assert cut is not None and cut.count == 3  # 1130 s of training a job: 3020 s need three
    assert cut.wall_s == pytest.approx(3000 + 20 + 3 * 10 + 2 * 5)
    assert segments(3000.0, 60.0, startup_s=10.0, checkpoint_s=5.0, signal_s=60.0) is None
    study = load_study(DEMO)
    plan, results = recorded(study)
    short = full_run(plan, results, ProductionRun("steps", 1e6), time_limit_s=60, signal_s=120, now=NOW)
    assert all(r.reason.startswith("the time limit (1 min) leaves no training time after the start-up")
               for r in short.rows)
    assert "no configuration has figures for the full run (below, why)" in summary_lines(short)


def test_a_predicted_configuration_carries_the_plans_interval_and_its_measured_energy(tmp_path: Path) -> None:
    cluster = {"kind": "slurm", "site": "meluxina", "host": "127.0.0.1", "account": "p200000", "qos": "default",
               "partition": "gpu", "time_limit": "02:00:00", "gpus_per_node": 4, "cores_per_node": 64,
               "container": str(tmp_path / "hlm.sif")}
    path = tmp_path / "study.toml"
    path.write_text(study_toml("ttr", tmp_path, cluster=cluster,
                               data={"datasets": {"mitdb12": {"path": str(tmp_path / "mitdb")}}},
                               train={"steps": 200, "batch_size": 64, "window": 256, "precision": "bf16",
                                      "cpus_per_task": 8, "device": "cuda", "eval": None},
                               sweep={"gpus_per_node": [2, 4]}))
    study = load_study(path)
    baselines = baseline_results(H200)
    plan, results = recorded(study, baselines)
    outcome = time_to_result(study, ProductionRun("tokens", 2e9), plan=plan, results=results, queue=False, now=NOW,
                             prices=Prices(node_hour=1.2, kwh=0.25))
    assert "not asked" in outcome.queue_words
    tokens_per_sample = baselines[0]["timing"]["tokens"] / baselines[0]["timing"]["samples"]
    for row in outcome.rows:
        line = next(x for x in plan.lines if x.config_id == row.config_id)
        iv = line.intervals()
        assert line.predicted is not None and line.kwh is not None and row.basis == "predicted"
        scale = 2e9 / tokens_per_sample / (line.predicted.work * baselines[0]["timing"]["samples"])
        assert row.t_s is not None and row.kwh is not None and row.cost is not None and row.node_hours is not None
        assert (row.t_s.value, row.t_s.low, row.t_s.high) == pytest.approx(
            (line.predicted.t_s * scale, iv["t_s"].low * scale, iv["t_s"].high * scale))
        assert (row.kwh.low, row.kwh.high) == pytest.approx((iv["kwh"].low * scale, iv["kwh"].high * scale))
        assert row.cost.value == pytest.approx(1.2 * row.node_hours.value + 0.25 * row.kwh.value)
        assert row.cost.high == pytest.approx(1.2 * row.node_hours.high + 0.25 * row.kwh.high)


@pytest.mark.parametrize(("arguments", "said"), [
    (["--full-run", "weeks=3"], "--full-run 'weeks=3': expected UNIT=AMOUNT with UNIT one of steps, epochs, tokens, samples"),
    (["--full-run", "steps=many"], "--full-run 'steps=many': 'many' is not a number"),
    (["--full-run", "steps=-5"], "--full-run 'steps=-5': the amount must be a positive number"),
    (["--full-run", "steps=10", "--deadline", "Christmas"], "--deadline 'Christmas': expected a date and time as"),
    (["--deadline", "2026-12-24T18:00"], "--deadline goes with --full-run UNIT=AMOUNT"),
    (["--full-run", "steps=10", "--price-kwh", "-1"], "--price-kwh must be 0 or more, got -1"),
])
def test_a_bad_full_run_argument_is_one_line_naming_it(arguments: list[str], said: str) -> None:
    done = subprocess.run([sys.executable, "-m", "cockpit", "plan", str(DEMO), *arguments], capture_output=True,
                          text=True, timeout=120, cwd=REPO)
    assert done.returncode != 0 and said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_parsers_take_what_the_flags_name() -> None:
    assert parse_production("Tokens=2e9") == ProductionRun("tokens", 2e9)
    assert parse_deadline("2026-12-24T18:00+01:00") == 1798131600.0


def test_the_pages_examples_run_and_print_what_the_page_shows() -> None:
    page = (REPO / "docs" / "full-run.md").read_text()
    command = re.search(r"<!-- example: run -->\n```bash\n(.*?)\n```", page, flags=re.S)
    assert command is not None
    done = subprocess.run(shlex.split(command.group(1)), capture_output=True, text=True, timeout=120, cwd=REPO,
                          env={**os.environ, "COLUMNS": "300"})
    assert done.returncode == 0, done.stderr
    shown = [line.strip() for line in page.split("these lines under it")[1].split("## The flags")[0].splitlines()
             if line.startswith("    ")]
    assert len(shown) == 5
    for line in shown:  # each line as printed, up to the part the clock changes ("...")
        assert line.split(" ...")[0] in done.stdout, (line, done.stdout)
    notebook = re.search(r"```python\n(.*?)```", page.split("## In a notebook")[1], flags=re.S)
    assert notebook is not None
    scope: dict[str, object] = {}
    exec(compile(notebook.group(1).replace('"tests/', f'"{REPO}/tests/'), "docs/full-run.md", "exec"), scope)
    runs = scope["runs"]
    assert list(runs["config_id"]) == [r.config_id for r in  # type: ignore[index]
                                       recorded(load_study(DEMO))[0].lines]
    assert runs.attrs["lines"][2] == shown[0]  # type: ignore[attr-defined]  # the queue's line


def test_the_report_carries_the_time_to_result_the_page_shows(tmp_path: Path) -> None:
    """`cockpit report --full-run` as docs/full-run.md runs it: the section holds the lines `cockpit plan --full-run`
    prints (one computation, one set of words) and full_run.csv a row per configuration with its intervals."""
    page = (REPO / "docs" / "full-run.md").read_text()
    block = page.split("## In the report")[1].split("## In a notebook")[0]
    command = re.search(r"<!-- example: run -->\n```bash\n(.*?)\n```", block, flags=re.S)
    assert command is not None
    argv = [REPO / a if a.startswith("tests/") else a for a in shlex.split(command.group(1))]
    done = subprocess.run([sys.executable, "-m", *map(str, argv)], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "full-run-report"
    report = (out / "report.md").read_text()
    section = report.split("## Time to result: full run of 3 epochs")[1].split("## Figures")[0]
    assert "| config | NxG | s/step | steps | T | jobs | start (wait) | finish | node-h | cost |" in section
    assert "- cost = 1.2 per node-hour" in section and "- first to finish: synthetic foundation w128 1x1" in section
    assert "Time to result" in (out / "report.html").read_text()
    with (out / "full_run.csv").open() as f:
        rows = list(csv.DictReader(f))
    plan = recorded(load_study(DEMO))[0]
    assert [r["config_id"] for r in rows] == [line.config_id for line in plan.lines]
    assert all(float(r["t_s_low"]) <= float(r["t_s"]) <= float(r["t_s_high"]) for r in rows)
    assert sum(r["first"] == "True" for r in rows) == 1


def test_the_report_refuses_a_full_run_of_a_store_in_one_line(tmp_path: Path) -> None:
    store = tmp_path / "cockpit.sqlite"
    shutil.copy(DEMO.parent / "local-demo" / "cockpit.sqlite", store)
    done = subprocess.run([sys.executable, "-m", "cockpit", "report", str(store), "--out", str(tmp_path / "r"),
                           "--full-run", "steps=10"], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1
    assert "is a store; give the study file" in done.stderr and not (tmp_path / "r").exists()
