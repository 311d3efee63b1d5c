"""A study of a user's own script (tests/fixtures/workloads/tiny_loop.py, written with runcontract's explicit way
in) runs as a local study on 1 and 2 workers through the same preflight, executor and report as the HLM trainer:
every row has T, S, E and O, and the five parts add up to T."""

from __future__ import annotations

import asyncio
import csv
import hashlib
import math
import shutil
import tomllib
from pathlib import Path

from cockpit.cli import main as cli
from cockpit.notebook import open_study
from cockpit.run.session import store_path_for
from cockpit.store import StudyStore
from cockpit.study.spec import load_study
from cockpit.tui.app import CockpitApp
from cockpit.tui.controller import store_controller
from cockpit.tui.scaling import ScalingView
from tests.studies import to_toml
from tests.tui.conftest import LARGE

SCRIPT = Path(__file__).resolve().parents[1] / "fixtures" / "workloads" / "tiny_loop.py"
PARTS = ("data_wait_s", "compute_s", "comm_s", "optimizer_s", "other_s")


def script_study(tmp_path: Path) -> Path:
    shutil.copy(SCRIPT, tmp_path / "tiny_loop.py")
    raw = {
        "study": {"name": "tiny-script"},
        "cluster": {"kind": "local", "workdir": str(tmp_path / "work"), "gpus_per_node": 2, "max_concurrent_jobs": 1},
        "train": {"device": "cpu"},
        "workload": {
            "kind": "script", "mode": "explicit",
            "command": ["tiny_loop.py", "--lr", "{lr}", "--batch", "{batch_size}", "--steps", "{steps}",
                        "--pin-memory", "{pin_memory}"],
            "keys": {"lr": {"type": "float", "default": 0.1, "minimum": 0},
                     "steps": {"type": "int", "default": 20, "minimum": 1},
                     "pin_memory": {"type": "bool", "default": False}},
        },
        "sweep": {"gpus_per_node": [1, 2], "batch_size": [8], "pin_memory": [False, True]},
    }
    path = tmp_path / "study.toml"
    path.write_text(to_toml(raw))
    return path


def test_a_script_study_runs_on_one_and_two_workers_with_every_second_attributed(tmp_path: Path, capsys):
    path = script_study(tmp_path)
    rc = cli(["run", "--headless", str(path), "--out", str(tmp_path / "report"), "--timeout", "300"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "a script workload brings its own data" in out  # the preflight skips the HLM's data, saying so
    assert "file tiny_loop.py" in out and "readable" in out
    assert "tiny-script: all 4 configurations completed" in out
    # the script's keys in its label, and none of the HLM's own axes (dataset, mode, window)
    assert "\n1x2 c1 fp32 b8 lr=0.1 pin_memory=false steps=20: T" in out and "synthetic" not in out
    rows = list(csv.DictReader((tmp_path / "report" / "scaling.csv").open()))
    assert sorted(int(r["gpus_per_node"]) for r in rows) == [1, 1, 2, 2]
    study = load_study(path)
    assert {r["config_id"] for r in rows} == {c.config_id for c in study.matrix()}
    for row in rows:
        t = float(row["train_time_s"])
        assert t > 0
        assert math.isclose(sum(float(row[p]) for p in PARTS), t, rel_tol=1e-6, abs_tol=1e-9), row
        for column in ("speedup", "efficiency", "overhead_s"):
            assert row[column] != "", (column, row)
    for two in (r for r in rows if r["gpus_per_node"] == "2"):
        assert float(two["comm_s"]) > 0  # the script's own all-reduce, marked by it
        t1 = float(two["t1_s"])
        assert math.isclose(float(two["speedup"]), t1 / float(two["t_same_work_s"]), rel_tol=1e-6)
        assert math.isclose(float(two["efficiency"]), float(two["speedup"]) / 2, rel_tol=1e-6)
        # refit from run.gradients(): the baseline's gradient bytes, the 2-worker run's own start-up probe
        assert "measured by 2 run(s) of this study" in two["prediction_note"], two["prediction_note"]  # both 1x2
    report = (tmp_path / "report" / "report.md").read_text()
    assert "Largest model per GPU" not in report  # the HLM's model shapes say nothing of a script's
    # pinned memory on and off, side by side at each scale, with the seconds each part moved (as measured: CPU)
    section = report.split("## What each swept key did", 1)[1].split("\n## ", 1)[0]
    effects = [line for line in section.splitlines() if line.startswith("| pin_memory | false → true |")]
    assert len(effects) == 2, section
    by_id = {r["config_id"]: r for r in rows}
    off = next(r for r in rows if r["gpus_per_node"] == "1" and "pin_memory=false" in r["keys"])
    on = next(r for r in rows if r["gpus_per_node"] == "1" and "pin_memory=true" in r["keys"])
    ratio = (float(on["train_time_s"]) / float(on["samples"])) / (float(off["train_time_s"]) / float(off["samples"]))
    assert any(f"| 1×1 | {float(off['train_time_s']):.2f} | {float(on['train_time_s']):.2f} |" in line
               and f"| {ratio:.2f} |" in line for line in effects), (effects, by_id)
    asyncio.run(_tui_shows_the_keys(study, rows))
    # the notebook reads the same rows, its labels with the script's keys; a what-if of a swept key of the script
    # is each configuration as measured, named by its keys
    nb = open_study(path)
    assert set(nb.labels.values()) == {f"1x{n} c1 fp32 b8 lr=0.1 pin_memory={p} steps=20"
                                         for n in (1, 2) for p in ("false", "true")}
    assert list(nb.scaling()["keys"]) == [r["keys"] for r in rows]
    capsys.readouterr()
    assert cli(["plan", str(path), "--what-if", "sweep.pin_memory=[true]"]) == 0
    plan = capsys.readouterr().out
    assert "2 of 2 configurations predicted" in plan and "pin_memory=" in plan, plan


async def _tui_shows_the_keys(study, rows: list[dict[str, str]]) -> None:
    """The TUI's scaling table over the study's store: a `workload keys` column holding each row's keys, and no
    column of the HLM's own axes."""
    store = StudyStore(store_path_for(study), read_only=True)
    try:
        app = CockpitApp(store_controller(store, study.name), poll_interval=None)
        async with app.run_test(size=LARGE):
            view = app.query_one(ScalingView)
            labels = [c.label for c in view.table_layout.columns]
            assert "workload keys" in labels and "dataset" not in labels and "window" not in labels, labels
            at = labels.index("workload keys")
            keys = {r["config_id"]: r["keys"] for r in rows}
            assert {shown.key: str(shown.cells[at]) for shown in view.table.shown} == keys
    finally:
        store.close()


def test_the_script_gets_its_values_and_the_run_directory(tmp_path: Path):
    """config.json holds the workload's keys and mode; the run directory is the one the library wrote into."""
    path = script_study(tmp_path)
    study = load_study(path)
    cfg = next(c for c in study.matrix() if c.workers == 1)
    config = study.run_config(cfg)
    assert config["keys"] == {"lr": 0.1, "steps": 20, "pin_memory": False}
    script = str(tmp_path / "tiny_loop.py")
    digest = hashlib.sha256((tmp_path / "tiny_loop.py").read_bytes()).hexdigest()
    assert config["workload"] == {"kind": "script", "mode": "explicit", "command": list(study.workload.command),
                                  "work": "per_worker", "env": {}, "digests": {script: digest}}
    assert study.workload.worker_args(cfg.all_values(), "/r") == [
        str(tmp_path / "tiny_loop.py"), "--lr", "0.1", "--batch", "8", "--steps", "20", "--pin-memory", "false"]


THIRD_PARTY = Path(__file__).resolve().parents[1] / "fixtures" / "third_party" / "mars_pytorch_sample" / "pytorch_sample.py"


def test_an_unmodified_third_party_ddp_script_is_studied_in_the_no_edit_mode(tmp_path: Path, capsys):
    """The Mars project's DDP sample (tests/fixtures/third_party/README.md), launched by the cockpit under
    `runcontract.attach` on 1 and 2 workers: its steps split into data wait, compute, communication and
    optimizer by torch's own hooks, every row's parts adding up to its T."""
    raw = {
        "study": {"name": "mars-sample"},
        "cluster": {"kind": "local", "workdir": str(tmp_path / "work"), "gpus_per_node": 2, "max_concurrent_jobs": 1},
        "train": {"device": "cpu"},
        # its DistributedSampler splits two epochs between the workers: one total amount of work
        "workload": {"kind": "script", "mode": "hooks", "command": [str(THIRD_PARTY), "multiple"], "work": "total"},
        "sweep": {"gpus_per_node": [1, 2]},
    }
    path = tmp_path / "study.toml"
    path.write_text(to_toml(raw))
    rc = cli(["run", "--headless", str(path), "--out", str(tmp_path / "report"), "--timeout", "300", "--skip-preflight"])
    out = capsys.readouterr().out
    assert rc == 0, out
    rows = list(csv.DictReader((tmp_path / "report" / "scaling.csv").open()))
    assert sorted(int(r["gpus_per_node"]) for r in rows) == [1, 2]
    for row in rows:
        t = float(row["train_time_s"])
        assert math.isclose(sum(float(row[p]) for p in PARTS), t, rel_tol=1e-6, abs_tol=1e-9), row
        for part in ("data_wait_s", "compute_s", "optimizer_s"):
            assert float(row[part]) > 0, (part, row)
        assert row["speedup"] != "" and row["efficiency"] != ""
    two = next(r for r in rows if r["gpus_per_node"] == "2")
    assert float(two["comm_s"]) > 0  # DDP's all-reduce, found by the hooks
    # predicted from the baseline's gradient bytes (the optimizer's parameters) and the link the 2-worker run's
    # start-up probe timed when the script built DDP; the advice names no key the script cannot read
    assert two["predicted_t_same_work_s"] != "", two["prediction_note"]
    assert "measured by 1 run(s) of this study" in two["prediction_note"]
    if float(two["overhead_s"]) > 0:  # seconds lost: each loss gets its advice
        assert "no key the script reads acts on it: its [workload].command names none of {batch_size}" in two["advice"]
    else:  # on a loaded machine the 2-worker run can lose nothing against its baseline: nothing to advise on
        assert two["advice"] == "", two
    assert "[train]" not in two["advice"] and "synthetic" not in out  # neither HLM keys nor HLM axes


def test_a_configuration_whose_script_fails_is_named_with_its_log_and_the_others_go_on(tmp_path: Path, capsys):
    """One configuration's script exits 3 before its first step: the headless run names it with the exit status
    and the log's last line, the other configuration completes and is reported, nothing is dropped."""
    path = script_study(tmp_path)
    raw = tomllib.loads(path.read_text())
    raw["workload"]["command"] += ["--exit-code", "{exit_code}"]
    raw["workload"]["keys"]["exit_code"] = {"type": "int", "default": 0, "minimum": 0}
    raw["sweep"] = {"gpus_per_node": [1], "batch_size": [8], "exit_code": [0, 3]}
    path.write_text(to_toml(raw))
    rc = cli(["run", "--headless", str(path), "--out", str(tmp_path / "report"), "--timeout", "300", "--skip-preflight"])
    out = capsys.readouterr().out
    assert rc != 0, out
    # the script's own last words and the worker's exit status (one worker: started without torchrun's launcher,
    # so the job's exit code is the script's own)
    (failed,) = [line for line in out.splitlines() if line.startswith("FAILED ")]
    assert "exit_code=3" in failed and "log: tiny_loop: asked to fail with exit code 3" in failed, out
    assert failed.endswith("exit code 3") and "torchrun" not in failed, out
    rows = list(csv.DictReader((tmp_path / "report" / "scaling.csv").open()))
    done = [r for r in rows if r["status"] == "completed"]
    assert [r["keys"] for r in done] == ["exit_code=0 lr=0.1 pin_memory=false steps=20"]
    report = (tmp_path / "report" / "report.md").read_text()
    assert "## Jobs without a result" in report
