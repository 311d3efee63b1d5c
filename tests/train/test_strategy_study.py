"""examples/strategy.toml through the local executor to the end (ddp, zero1 and fsdp on 1 and 2 real gloo
workers), run once for the module: its report shows communication by kind adding up, memory per rank and the
largest model that fits one GPU per strategy; the explanation names each strategy's collectives; the notebook
API and the TensorBoard export carry memory per rank; a what-if of a strategy the study never ran is
predicted with T, E and memory per rank."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from cockpit.cli import main as cli
from cockpit.forecast import prediction
from cockpit.notebook import open_study
from cockpit.study.spec import Study, load_study
from runcontract.records import read_result
from tests.report.test_report import markdown_rows

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "strategy.toml"


@dataclass(frozen=True)
class Ran:
    spec: Path
    study: Study
    report: Path
    results: dict[tuple[str, int], dict[str, Any]]  # (strategy, workers) -> result.json

    def table(self, section: str) -> dict[tuple[str, str], dict[str, str]]:
        """A report section's rows by (strategy, nodes×workers), each a dict by header."""
        text = (self.report / "report.md").read_text()
        part = text.split(f"## {section}")[1]
        header = next(line for line in part.splitlines() if line.startswith("| "))
        names = [c.strip() for c in header.strip().strip("|").split("|")]
        rows = [dict(zip(names, r, strict=True)) for r in markdown_rows(text, section)]
        return {(r["strategy"], r.get("nodes×workers") or f"1×{r['N']}"): r for r in rows}


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ran]:
    tmp = tmp_path_factory.mktemp("strategy-study")
    patch = pytest.MonkeyPatch()
    patch.setenv("XDG_DATA_HOME", str(tmp / "xdg"))
    spec = tmp / "strategy.toml"  # the example as shipped, its runs under tmp
    spec.write_text(EXAMPLE.read_text().replace('kind = "local"', f'kind = "local"\nworkdir = "{tmp / "work"}"'))
    study = load_study(spec)
    assert sorted((c.strategy, c.gpus_per_node) for c in study.runnable()) == [
        ("ddp", 1), ("ddp", 2), ("fsdp", 1), ("fsdp", 2), ("zero1", 1), ("zero1", 2)]
    # no preflight: its local probe job is another torch start, and the preflight has tests of its own
    assert cli(["run", "--headless", "--skip-preflight", str(spec), "--out", str(tmp / "report"),
                "--timeout", "500"]) == 0
    yield Ran(spec, study, tmp / "report",
              {(c.strategy, c.gpus_per_node): read_result(study.run_dir(c)) for c in study.runnable()})
    patch.undo()


def test_every_strategy_runs_and_the_sharded_ones_hold_less(ran: Ran) -> None:
    assert len(ran.results) == 6 and all(r.get("status", "completed") == "completed" for r in ran.results.values())
    states = {s: ran.results[(s, 2)]["memory"]["model_states_bytes"] for s in ("ddp", "zero1", "fsdp")}
    assert states["fsdp"] < states["zero1"] < states["ddp"]


def test_the_report_shows_comm_by_kind_adding_up_and_memory_per_rank(ran: Ran) -> None:
    shown = ran.table("Scaling per configuration")
    kinds = "comm by kind (s)"
    assert "all-gather" in shown[("fsdp", "1×2")][kinds] and "reduce-scatter" in shown[("fsdp", "1×2")][kinds]
    assert "broadcast" in shown[("zero1", "1×2")][kinds]
    assert shown[("ddp", "1×1")][kinds] == "-"
    states = "model states/rank (MiB)"
    assert float(shown[("fsdp", "1×2")][states]) < float(shown[("ddp", "1×2")][states])
    with (ran.report / "scaling.csv").open() as handle:
        csv_rows = list(csv.DictReader(handle))
    fsdp2 = next(r for r in csv_rows if r["strategy"] == "fsdp" and r["gpus_per_node"] == "2")
    total = sum(float(fsdp2[f"comm_{k}_s"]) for k in ("all_reduce", "all_gather", "reduce_scatter", "broadcast"))
    assert total == pytest.approx(float(fsdp2["comm_s"]), rel=1e-6)
    ddp2 = next(r for r in csv_rows if r["strategy"] == "ddp" and r["gpus_per_node"] == "2")
    assert float(fsdp2["memory_params_bytes"]) < float(ddp2["memory_params_bytes"])


def test_the_report_shows_the_largest_model_per_gpu_with_its_inputs(ran: Ran) -> None:
    fit = ran.table("Largest model per GPU")
    assert {k for k in fit} == {(s, f"1×{n}") for s in ("ddp", "zero1", "fsdp") for n in (1, 2)}
    per_param = {k: float(r["model states (B/param/rank)"]) for k, r in fit.items()}
    # fp32 parameters 4 + gradients 4 + AdamW 8; zero1 shards the 8, fsdp all 16, over N = 2
    assert per_param[("ddp", "1×2")] == per_param[("fsdp", "1×1")] == 16
    assert per_param[("zero1", "1×2")] == 12 and per_param[("fsdp", "1×2")] == 8
    for r in fit.values():  # model states + gathered + activations = the peak, at most the GPU's 40 GB
        parts = sum(float(r[h]) for h in ("model states/rank (GB)", "gathered/rank (GB)", "activations/rank (GB)"))
        assert parts == pytest.approx(float(r["peak/rank (GB)"]), rel=0.01)
        assert float(r["peak/rank (GB)"]) <= 40 < float(r["its peak/rank (GB)"])
        assert (r["batch"], r["window"], r["precision"]) == ("8", "64", "fp32")

    def params(key: tuple[str, str]) -> float:
        return float(fit[key]["parameters (M)"])

    assert params(("ddp", "1×2")) == params(("ddp", "1×1")) < params(("fsdp", "1×2"))
    text = (ran.report / "report.md").read_text()
    assert "meluxina profile gpu_memory_gb = 40" in text and "34 + 5·a·s/h" in text
    assert "Largest model per GPU" in (ran.report / "report.html").read_text()


def test_the_explanation_names_each_strategys_collectives(ran: Ran) -> None:
    said = {k: r["explanation"] for k, r in ran.table("Where the efficiency went").items()}
    assert "exposed all-gather and reduce-scatter (all-gather" in said[("fsdp", "1×2")]
    assert "all-reduce" not in said[("fsdp", "1×2")].split(". Largest")[0]
    ddp, zero1 = said[("ddp", "1×2")], said[("zero1", "1×2")]
    assert "broadcast" not in ddp
    # DDP's and ZeRO-1's collectives are the smallest: on a loaded machine their 2-worker runs can beat the
    # 1-worker baseline's pace, and the explanation then rightly says "no loss" and names none (FSDP's, three
    # times the bytes, is named above)
    assert "exposed all-reduce and broadcast" in zero1 or zero1.startswith("no loss: T at the baseline's work")
    assert "exposed all-reduce" in ddp or ddp.startswith("no loss: T at the baseline's work")


def test_the_notebook_and_tensorboard_carry_memory_per_rank(ran: Ran, tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    from cockpit.report.study_data import load_study_data, run_name
    from cockpit.report.trackers import export_tensorboard, wandb_summary
    from tests.report.test_export import accumulator, series

    study = open_study(ran.spec)
    try:
        scaling = study.scaling().set_index("config_id")
        ids = {(c.strategy, c.gpus_per_node): c.config_id for c in ran.study.runnable()}
        memory = {k: study.memory(ids[k]) for k in (("ddp", 2), ("fsdp", 2))}
    finally:
        study.close()
    for (strategy, workers), frame in memory.items():
        recorded = ran.results[(strategy, workers)]["memory"]
        assert list(frame["rank"]) == [0, 1] and frame.attrs["strategy"] == strategy
        assert list(frame["model_states_bytes"]) == [m["model_states_bytes"] for m in recorded["by_rank"]]
        assert scaling.loc[ids[(strategy, workers)], "memory_model_states_bytes"] == frame["model_states_bytes"][0]
    assert memory[("fsdp", 2)]["params_bytes"].sum() == pytest.approx(memory[("ddp", 2)]["params_bytes"][0], rel=0.01)

    data = load_study_data(ran.spec)
    try:
        export_tensorboard(data, tmp_path)
        for row in data.rows:
            acc = accumulator(tmp_path / data.name / run_name(row))
            peak = series(acc, "scaling/memory_peak_bytes")[0][1]
            assert peak == pytest.approx(row["memory_peak_bytes"], rel=1e-6)
            assert wandb_summary(row)["memory_model_states_bytes"] == row["memory_model_states_bytes"]
    finally:
        data.close()


def test_a_strategy_what_if_is_predicted_with_memory(ran: Ran, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["plan", str(ran.spec), "--what-if", 'sweep.strategy=["fsdp_noreshard"]']) == 0
    out = capsys.readouterr().out
    assert "2 of 2 configurations predicted" in out
    assert "strategy fsdp_noreshard from the" in out  # its one-worker baseline is any strategy's
    memory = [line for line in out.splitlines() if line.startswith("memory per rank,")]
    assert len(memory) == 2 and all("model states" in line and "peak" in line for line in memory)


def test_a_finished_runs_parts_refit_the_prediction_of_its_sharding_but_never_its_own(ran: Ran) -> None:
    """fsdp on 2 workers measured its per-step parts; fsdp_noreshard (the same shards) is predicted with them, and
    fsdp itself, predicted as the report and the plan do (its own config id), with the model's parts alone."""
    fsdp2, base = ran.results[("fsdp", 2)], ran.results[("fsdp", 1)]
    links = prediction.measured_links(ran.results.values())
    residual = next(r for r in links.residuals if r.config_id == fsdp2["config_id"])
    assert residual.shards == ("params", "grads", "optimizer") and residual.setting == "cpu, one core per worker"
    assert set(residual.ratios) == set(prediction.REFIT_PARTS)
    work = prediction.work_for(ran.study.train, 2)
    steps = fsdp2["timing"]["steps"]
    noreshard = prediction.predict(base, 1, 2, work, links, strategy="fsdp_noreshard")
    assert isinstance(noreshard, prediction.Prediction) and "per-step parts x the 1 finished run(s) sharding" in noreshard.link
    for part in set(prediction.REFIT_PARTS) - {"comm"}:  # the same baseline and steps: what fsdp measured per step
        assert noreshard.parts[part] == pytest.approx(fsdp2["breakdown_s"][part] / steps * base["timing"]["steps"])
    # its own collectives (an all-gather less than fsdp's) as the model prices them, x what fsdp's measured over its model
    plain = prediction.predict(base, 1, 2, work, replace(links, residuals=()), strategy="fsdp_noreshard")
    assert isinstance(plain, prediction.Prediction) and residual.ratios["comm"] > 0
    assert noreshard.parts["comm"] == pytest.approx(plain.parts["comm"] * residual.ratios["comm"])
    own = prediction.predict(base, 1, 2, work, links, strategy="fsdp", config_id=fsdp2["config_id"])
    model = prediction.per_step_parts(base, 1.0, links.contention.get(2, 1.0))
    assert isinstance(own, prediction.Prediction) and "per-step parts" not in own.link
    assert own.parts["optimizer"] == pytest.approx(model["optimizer"] * base["timing"]["steps"])
    ddp = prediction.predict(ran.results[("ddp", 1)], 1, 2, work, links, strategy="ddp")
    assert isinstance(ddp, prediction.Prediction) and "sharding nothing" in ddp.link  # DDP learns from DDP only
