"""examples/strategy.toml through the local executor to the end (ddp, zero1 and fsdp on 1 and 2 real gloo
workers), its report showing communication by kind and memory per rank, then a what-if of a strategy the study
never ran, predicted with T, E and memory per rank."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from cockpit.cli import main as cli
from cockpit.spec import load_study
from tests.report.test_report import markdown_rows
from trainer.rundir import read_result

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "strategy.toml"


def test_strategy_example_runs_to_the_end_and_a_strategy_what_if_is_predicted(tmp_path: Path, capsys,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    spec = tmp_path / "strategy.toml"  # the example as shipped, its runs under tmp_path
    spec.write_text(EXAMPLE.read_text().replace('kind = "local"', f'kind = "local"\nworkdir = "{tmp_path / "work"}"'))
    study = load_study(spec)
    assert sorted((c.strategy, c.gpus_per_node) for c in study.runnable()) == [
        ("ddp", 1), ("ddp", 2), ("fsdp", 1), ("fsdp", 2), ("zero1", 1), ("zero1", 2)]

    assert cli(["run", "--headless", str(spec), "--out", str(tmp_path / "report"), "--timeout", "500"]) == 0
    assert "local-strategy: all 6 configurations completed" in capsys.readouterr().out
    results = {(c.strategy, c.gpus_per_node): read_result(study.run_dir(c)) for c in study.runnable()}
    states = {s: results[(s, 2)]["memory"]["model_states_bytes"] for s in ("ddp", "zero1", "fsdp")}
    assert states["fsdp"] < states["zero1"] < states["ddp"]

    rows = markdown_rows((tmp_path / "report" / "report.md").read_text(), "Scaling per configuration")
    headers = ["strategy", "nodes×workers", "comm by kind (s)", "model states/rank (MiB)"]
    table = (tmp_path / "report" / "report.md").read_text().split("## Scaling per configuration")[1]
    header_line = next(line for line in table.splitlines() if line.startswith("| dataset"))
    index = {h: [c.strip() for c in header_line.strip("|").split("|")].index(h) for h in headers}
    shown = {(r[index["strategy"]], r[index["nodes×workers"]]): r for r in rows}
    assert "all-gather" in shown[("fsdp", "1×2")][index["comm by kind (s)"]]
    assert "reduce-scatter" in shown[("fsdp", "1×2")][index["comm by kind (s)"]]
    assert "broadcast" in shown[("zero1", "1×2")][index["comm by kind (s)"]]
    assert shown[("ddp", "1×1")][index["comm by kind (s)"]] == "-"
    assert float(shown[("fsdp", "1×2")][index["model states/rank (MiB)"]]) < float(
        shown[("ddp", "1×2")][index["model states/rank (MiB)"]])
    with (tmp_path / "report" / "scaling.csv").open() as handle:
        csv_rows = list(csv.DictReader(handle))
    fsdp2 = next(r for r in csv_rows if r["strategy"] == "fsdp" and r["gpus_per_node"] == "2")
    kinds = sum(float(fsdp2[f"comm_{k}_s"]) for k in ("all_reduce", "all_gather", "reduce_scatter", "broadcast"))
    assert kinds == pytest.approx(float(fsdp2["comm_s"]), rel=1e-6)
    assert float(fsdp2["memory_params_bytes"]) < float(
        next(r for r in csv_rows if r["strategy"] == "ddp" and r["gpus_per_node"] == "2")["memory_params_bytes"])

    assert cli(["plan", str(spec), "--what-if", 'sweep.strategy=["fsdp_noreshard"]']) == 0
    out = capsys.readouterr().out
    assert "2 of 2 configurations predicted" in out
    assert "strategy fsdp_noreshard from the" in out  # its one-worker baseline is any strategy's
    memory = [line for line in out.splitlines() if line.startswith("memory per rank,")]
    assert len(memory) == 2 and all("model states" in line and "peak" in line for line in memory)
