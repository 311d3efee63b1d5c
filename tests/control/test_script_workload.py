"""A study of a user's own script (tests/fixtures/workloads/tiny_loop.py, written with runcontract's explicit way
in) runs as a local study on 1 and 2 workers through the same preflight, executor and report as the HLM trainer:
every row has T, S, E and O, and the five parts add up to T."""

from __future__ import annotations

import csv
import math
import shutil
from pathlib import Path

from cockpit.cli import main as cli
from cockpit.study.spec import load_study
from tests.studies import to_toml

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
        "sweep": {"gpus_per_node": [1, 2], "batch_size": [8]},
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
    assert "tiny-script: all 2 configurations completed" in out
    assert "1x2 c1 fp32 b8 lr=0.1 pin_memory=false steps=20: T" in out  # the script's keys in its label
    rows = list(csv.DictReader((tmp_path / "report" / "scaling.csv").open()))
    assert sorted(int(r["gpus_per_node"]) for r in rows) == [1, 2]
    study = load_study(path)
    assert {r["config_id"] for r in rows} == {c.config_id for c in study.matrix()}
    for row in rows:
        t = float(row["train_time_s"])
        assert t > 0
        assert math.isclose(sum(float(row[p]) for p in PARTS), t, rel_tol=1e-6, abs_tol=1e-9), row
        for column in ("speedup", "efficiency", "overhead_s"):
            assert row[column] != "", (column, row)
    two = next(r for r in rows if r["gpus_per_node"] == "2")
    assert float(two["comm_s"]) > 0  # the script's own all-reduce, marked by it
    t1 = float(two["t1_s"])
    assert math.isclose(float(two["speedup"]), t1 / float(two["t_same_work_s"]), rel_tol=1e-6)
    assert math.isclose(float(two["efficiency"]), float(two["speedup"]) / 2, rel_tol=1e-6)


def test_the_script_gets_its_values_and_the_run_directory(tmp_path: Path):
    """config.json holds the workload's keys and mode; the run directory is the one the library wrote into."""
    path = script_study(tmp_path)
    study = load_study(path)
    cfg = next(c for c in study.matrix() if c.workers == 1)
    config = study.run_config(cfg)
    assert config["keys"] == {"lr": 0.1, "steps": 20, "pin_memory": False}
    assert config["workload"] == {"kind": "script", "mode": "explicit", "command": list(study.workload.command)}
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
        "workload": {"kind": "script", "mode": "hooks", "command": [str(THIRD_PARTY), "multiple"]},
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
    assert float(next(r for r in rows if r["gpus_per_node"] == "2")["comm_s"]) > 0  # DDP's all-reduce, found by the hooks
