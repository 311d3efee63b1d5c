"""The second paper's examples (examples/workloads/) run as local studies on 1 and 2 workers to the end: the image
classifier unmodified under runcontract.attach, the language model through the transformers Trainer and
runcontract's callback; T, S, E, O and the five parts add up on every row."""

from __future__ import annotations

import csv
import math
import shutil
import tomllib
from pathlib import Path

import pytest

from cockpit.cli import main as cli
from tests.studies import to_toml

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "workloads"
PARTS = ("data_wait_s", "compute_s", "comm_s", "optimizer_s", "other_s")



def small(tmp_path: Path, sweep: dict, example: str = "image", **defaults: int) -> Path:
    """The example study with a test-sized sweep and key defaults, beside a copy of its script."""
    raw = tomllib.loads((EXAMPLES / f"{example}.toml").read_text())
    shutil.copy(EXAMPLES / raw["workload"]["command"][0], tmp_path / raw["workload"]["command"][0])
    raw["cluster"]["workdir"] = str(tmp_path / "work")
    raw["sweep"] = sweep
    for name, value in defaults.items():
        raw["workload"]["keys"][name]["default"] = value
    path = tmp_path / f"{example}.toml"
    path.write_text(to_toml(raw))
    return path


def rows_of(report: Path) -> list[dict[str, str]]:
    return list(csv.DictReader((report / "scaling.csv").open()))


def check_rows(rows: list[dict[str, str]]) -> dict[str, str]:
    """Every row of a 1- and 2-worker study adds up to its T and has S, E and O; returns the 2-worker row, whose
    all-reduce the workload's way in saw."""
    assert sorted(int(r["gpus_per_node"]) for r in rows) == [1, 2]
    for row in rows:
        assert math.isclose(sum(float(row[p]) for p in PARTS), float(row["train_time_s"]), rel_tol=1e-6), row
        assert all(row[c] != "" for c in ("speedup", "efficiency", "overhead_s")), row
    two = next(r for r in rows if r["gpus_per_node"] == "2")
    assert float(two["comm_s"]) > 0
    return two


def run_example(path: Path, report: Path, capsys) -> list[dict[str, str]]:
    """`cockpit run --headless` of the study to the end; the rows of its scaling.csv."""
    rc = cli(["run", "--headless", str(path), "--out", str(report), "--timeout", "400", "--skip-preflight"])
    out = capsys.readouterr().out
    assert rc == 0, out
    return rows_of(report)


def test_the_image_example_runs_on_one_and_two_workers(tmp_path: Path, capsys):
    pytest.importorskip("sklearn", reason="the image example's digits come with scikit-learn: pip install -e .[workloads]")
    path = small(tmp_path, {"gpus_per_node": [1, 2], "batch_size": [16]}, steps=4, size=16)
    rows = run_example(path, tmp_path / "report", capsys)
    check_rows(rows)  # DDP's all-reduce, by the hooks
    assert all(row["keys"] == "loader_workers=0 pin_memory=false size=16 steps=4" for row in rows)
    report = (tmp_path / "report" / "report.md").read_text()
    assert "| loader_workers=0 pin_memory=false size=16 steps=4 |" in report  # the keys tell configurations apart


def test_the_language_model_example_runs_on_one_and_two_workers(tmp_path: Path, capsys):
    pytest.importorskip("transformers", reason="the LM example is a transformers Trainer: pip install -e .[workloads]")
    path = small(tmp_path, {"gpus_per_node": [1, 2], "batch_size": [4]}, "lm", steps=4, seq=32, layers=1, width=64)
    check_rows(run_example(path, tmp_path / "report", capsys))  # the Trainer's DDP, by the callback
