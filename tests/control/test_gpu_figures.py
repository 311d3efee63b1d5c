"""What the GPU itself says, computed from the runs the trainer wrote on one H200 (tests/fixtures/h200-runs):
MFU against the device table, the energy over T from NVML's energy counter, the host-bound verdict with its
evidence and its seconds split out of compute, the advice priced for it, and `cockpit report` and `cockpit plan`
showing them; and a CPU run's energy, measured by RAPL or "not measured" with the reason."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from cockpit.cli import main as cli
from cockpit.figures import devices, explain
from cockpit.figures.host_bound import BUSY_THRESHOLD, host_bound
from cockpit.figures.run_files import with_run_files
from cockpit.forecast.analysis import analyse
from cockpit.report import tables
from runcontract import energy, rapl
from runcontract.contract import EXIT_OK, GPU_FILE, METRICS_FILE, RAPL_FILE
from runcontract.files import read_jsonl
from runcontract.records import read_result
from tests.studies import REPO

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "h200-runs"
BF16 = ("bf16-w256", "bf16-w256-ddp-group1", "bf16-w256-sigterm", "bf16-w256-finetune")


def read(run: str) -> dict:
    result = read_result(RUNS / run)
    assert result is not None
    return with_run_files(result, RUNS / run)


def samples(run: str) -> list[dict]:
    return read_jsonl(RUNS / run / GPU_FILE).records


def windows(run: str) -> list[tuple[float, float]]:
    return energy.train_windows(read_jsonl(RUNS / run / METRICS_FILE).records)


@pytest.mark.parametrize("run", ["fp32-w256", *BF16])
def test_mfu_is_flops_per_token_times_tokens_per_s_over_the_h200s_peak(run: str) -> None:
    result = read(run)
    assert result["gpu_use"]["name"] == "NVIDIA H200"  # NVML's name, from gpu.jsonl
    m = devices.mfu(result)
    precision = result["config"]["precision"]
    peak = {"fp32": 67.0, "bf16": 989.5}[precision]  # H200 SXM, dense: the datasheet's fp32, and bf16 1,979 / 2
    achieved = result["model"]["flops_per_token"] * result["throughput"]["tokens_per_s"] / 1e12
    assert m.achieved_tflops == pytest.approx(achieved) and m.peak_tflops == peak
    assert m.mfu == pytest.approx(achieved / peak) and m.device == f"H200 SXM {precision} x 1"
    assert m.words() == f"MFU {achieved / peak:.1%} = {achieved:.1f} TFLOP/s of {peak:.1f} (H200 SXM {precision} x 1)"


def test_the_device_table_answers_to_nvmls_names_and_says_when_it_cannot() -> None:
    names = {"NVIDIA H200": "H200 SXM", "NVIDIA H200 NVL": "H200 NVL", "NVIDIA H100 80GB HBM3": "H100 SXM",
             "NVIDIA H100 PCIe": "H100 PCIe", "NVIDIA H100 NVL": "H100 NVL", "NVIDIA A100-SXM4-40GB": "A100",
             "NVIDIA A100 80GB PCIe": "A100"}
    assert {n: getattr(devices.device_for(n), "label", None) for n in names} == names
    for d in devices.DEVICES:  # every figure has its source, every precision a dense peak
        assert set(d.peaks) == {"fp32", "tf32", "bf16", "fp16"} and "datasheet" in d.source
    result = read("bf16-w256")
    assert devices.mfu({**result, "gpu_use": {"name": "Tesla T4"}}).note == (
        "no peak for 'Tesla T4' in the device table (cockpit/figures/devices.py)")
    assert devices.mfu({**result, "gpu_use": None}).note.startswith("the GPU's name is not recorded")
    assert devices.mfu({**result, "device": "cpu"}).note == "no GPU (cpu run)"


@pytest.mark.parametrize("run", ["fp32-w256", *BF16])
def test_the_energy_over_t_is_nvmls_counter_across_ts_windows(run: str) -> None:
    gpu, w = samples(run), windows(run)
    e = energy.gpu_energy(gpu, w)
    t = read_result(RUNS / run)["timing"]["train_time_s"]
    assert e["source"] == "NVML energy counter" and e["reason"] == "" and e["devices"] == 1
    assert e["train_time_s"] == pytest.approx(t, abs=1e-3)  # the metrics lines' windows add up to T
    assert e["covered_s"] > 0.9 * t
    inside = [s for s in gpu if any(a <= s["t"] <= b for a, b in w)]
    # the counter's rise from the first to the last sample inside T, per second, is the run's mean power, as
    # is the mean of those samples' power readings
    rise = inside[-1]["energy_j"] - inside[0]["energy_j"]
    if read_result(RUNS / run)["timing"]["resumes"]:  # the idle time between the segments is not in T
        assert e["joules"] < rise
    else:
        assert e["mean_power_w"] == pytest.approx(rise / (inside[-1]["t"] - inside[0]["t"]), rel=0.05)
    assert e["mean_power_w"] == pytest.approx(sum(s["power_w"] for s in inside) / len(inside), rel=0.15)
    assert e["joules"] == pytest.approx(e["mean_power_w"] * e["train_time_s"])
    # without the counter, the power samples integrated give the same energy within 10% (NVML averages its power
    # reading over a second, the counter does not)
    powered = energy.gpu_energy([{k: v for k, v in s.items() if k != "energy_j"} for s in gpu], w)
    assert powered["source"] == "NVML power integrated" and powered["joules"] == pytest.approx(e["joules"], rel=0.10)


def test_energy_is_never_made_up() -> None:
    w = windows("bf16-w256")
    unavailable = [{"v": 1, "t": 1.0, "host": "n1", "nvml": "unavailable", "reason": "NVMLError: Driver Not Loaded"}]
    assert energy.gpu_energy(unavailable, w)["joules"] is None
    assert energy.gpu_energy(unavailable, w)["reason"] == "NVML unavailable (NVMLError: Driver Not Loaded)"
    assert energy.gpu_energy(samples("bf16-w256"), [])["reason"] == "no metrics.jsonl lines of rank 0: T's windows unknown"
    few = energy.gpu_energy(samples("bf16-w256")[:10], w)  # the samples stop before T is half over
    assert few["joules"] is None and few["reason"].startswith("the samples cover ")


def test_a_wrapping_rapl_counter_is_unwrapped_at_its_range() -> None:
    span = 262_143_328_850  # a package's max_energy_range_uj
    points = energy.unwrapped([(0.0, span - 2_000_000, span), (1.0, 3_000_000, span), (2.0, 8_000_000, span)])
    assert points == [(0.0, 0.0), (1.0, 5.0), (2.0, 10.0)]  # 5 J across the wrap, 5 J after it


def test_host_bound_names_the_bf16_runs_with_their_evidence_and_not_the_fp32_run() -> None:
    for run in BF16:
        result = read(run)
        compute = result["breakdown_s"]["compute"]
        hb = host_bound(result, compute)
        busy = result["gpu_use"]["busy_pct"] / 100
        assert busy < BUSY_THRESHOLD and hb.named, run
        assert hb.seconds == pytest.approx(compute * (1 - busy))  # host-bound = compute x (1 - busy)
        assert f"GPU busy {busy * 100:.0f}% of T (NVML, {result['gpu_use']['samples']} samples)" in hb.evidence
    traced = host_bound(read("bf16-w256"), 1.0).evidence
    assert "trace: GPU busy 21.1 of 89.8 ms over 3 steps (23%), 507 kernels and copies per step" in traced
    fp32 = read("fp32-w256")
    hb = host_bound(fp32, fp32["breakdown_s"]["compute"])
    assert not hb.named and hb.seconds == 0.0 and hb.note.startswith("not host-bound: GPU busy 74% of T")
    bare = {**fp32, "gpu_use": None}  # no NVML samples and no trace: no verdict, and what would decide it
    assert host_bound(bare, 1.0).note == ("host-bound: no verdict: NVML samples (gpu.jsonl, result.json gpu_use) or a "
                                          "trace ([train] profile_active) would decide whether the host sets the pace")
    assert host_bound({**fp32, "device": "cpu"}, 1.0).note == ""


def test_the_host_bound_seconds_come_out_of_compute_and_t_still_adds_up() -> None:
    (row,) = [r for r in analyse([read("bf16-w256")])]
    parts = dict(explain.t_parts(row))
    assert parts["host_bound"] == pytest.approx(row["host_bound_s"]) and row["host_bound_s"] > 0
    assert parts["compute"] == pytest.approx(row["compute_s"] - row["host_bound_s"])
    assert sum(parts.values()) == pytest.approx(row["train_time_s"])
    t1, shown = explain.shown_split(row["train_time_s"], list(parts.items()))
    assert f"baseline: T1 = {t1:.2f} s (" in row["explanation"] and f"host-bound {dict(shown)['host_bound']:.2f} s" in row["explanation"]
    assert row["verdict"] == f"baseline: T1 = {t1:.2f} s, host-bound {dict(shown)['host_bound']:.2f} s"
    # an N-worker run's term: its host-bound seconds against its baseline's, taken out of the compute term
    base = {**row, "host_bound_s": 1.0, "compute_s": 3.0, "train_time_s": 5.0}
    run = {**row, "host_bound_s": 1.5, "compute_s": 2.0, "train_time_s": 3.0}
    terms = explain.attribution(run, base, 2, 1.0)
    assert terms["loss_host_bound_s"] == pytest.approx(1.5 - 0.5)
    assert terms["loss_compute_s"] == pytest.approx((2.0 - 1.5) - (3.0 - 1.0) / 2)
    assert sum(v for v in terms.values() if v == v) == pytest.approx(3.0 - 5.0 / 2)


def test_the_bf16_runs_advice_names_a_larger_batch_with_a_predicted_gain() -> None:
    rows = {r["config_id"]: r for r in analyse([read(r) for r in ("fp32-w256", *BF16)])}
    bf16 = rows["bf16-w256"]  # the median of the three bf16 foundation runs
    first, *rest = bf16["host_advice"]
    u, t = bf16["host_bound_share"], bf16["train_time_s"]
    assert dict(first.keys)["batch_size"] == 512 and dict(first.keys)["train.steps"] == 25  # 8 x 64: 8 u >= 1
    assert first.predicted_t_s == pytest.approx(t * max(1 / 8, u))  # T' = T max(1/f, u)
    assert first.predicted_mfu == pytest.approx(bf16["mfu"] * t / first.predicted_t_s)
    assert first.gain_s > 0.1 * t and "fits" in first.memory
    assert first.text() in bf16["advice"] and "→ predicted T" in bf16["advice"]
    assert all(math.isnan(a.predicted_t_s) for a in rest)  # not predicted, with why
    assert "try [train] compile = true: not predicted" in rest[0].text()
    assert "the optimizer is the fused AdamW already" in rest[1].text()
    assert rows["fp32-w256"]["host_advice"] == [] and rows["fp32-w256"]["advice"] == ""


@pytest.fixture(scope="module")
def gpu_study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The recorded runs as a local study's run directories (the report reads them as it reads any local study)."""
    tmp = tmp_path_factory.mktemp("h200-report")
    study = tmp / "study.toml"
    study.write_text(f'[study]\nname = "gpu-path"\n[cluster]\nkind = "local"\nworkdir = "{tmp}"\n'
                     '[train]\nepochs = 1\n[sweep]\nwindow = [256]\n')
    for run in ("fp32-w256", *BF16):
        shutil.copytree(RUNS / run, tmp / "gpu-path" / "runs" / run)
    return study


def test_cockpit_report_on_the_h200_runs_shows_mfu_energy_and_the_host_bound_runs(gpu_study: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    assert cli(["report", str(gpu_study), "--out", str(out)]) == 0
    md = (out / "report.md").read_text()
    section = md[md.index("## GPU use and energy"):md.index("## Where the efficiency went")]
    rows = {r["config_id"]: r for r in analyse([read(r) for r in ("fp32-w256", *BF16)])}
    for cid, r in rows.items():
        line = next(x for x in section.splitlines() if f"| {r['mode']} |" in x and f"| {r['precision']} |" in x)
        assert f"| {r['mfu']:.1%} |" in line and f"| {r['energy_j']:.0f} |" in line, cid
        assert f"| {r['energy_kwh']:.3g} |" in line and f"| {r['energy_j_per_sample']:.3g} |" in line
        if r["precision"] == "bf16":
            assert f"| {r['host_bound_s']:.2f} |" in line and "host-bound " in line and "sets the pace" in line
        else:
            assert "not host-bound: GPU busy 74% of T" in line
    assert "| 42.4% |" in section and "| 4.0% |" in section  # fp32 and the bf16 foundation run
    assert "Energy of the study: " in section
    advice = md[md.index("## Advice"):md.index("## Predicted vs measured")]
    assert "set [sweep] batch_size = [512] and [train] steps = 25 → predicted T" in advice
    csv = (out / "scaling.csv").read_text().splitlines()
    header = csv[0].split(",")
    for column in ("mfu", "energy_j", "energy_kwh", "energy_j_per_sample", "energy_j_per_token", "host_bound_s",
                   "gpu_busy_pct", "mfu_note", "energy_note"):
        assert column in header


def test_the_plan_of_the_h200_example_predicts_kwh_beside_node_hours(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    assert cli(["plan", str(REPO / "examples" / "h200.toml"), "--baselines", str(RUNS)]) == 0
    out = capsys.readouterr().out
    assert "kWh" in out.splitlines()[2]  # the table's header: node-h, then kWh
    fp32 = read("fp32-w256")
    kwh = fp32["energy"]["joules"] / fp32["timing"]["train_time_s"]  # W; x predicted T below
    line = next(x for x in out.splitlines() if " fp32 " in x and " 1x1 " in x)
    t = float(line.split()[line.split().index("1x1") + 1])
    assert f"{kwh * t / 3.6e6:.3g}"[:4] in line  # the baseline's power x the predicted T, in kWh
    assert "estimated " in out and " kWh for 2 of 6 configurations to submit" in out
    assert "node-hours" in out


def test_a_cpu_run_says_its_energy_was_not_measured_or_gives_raplss_figure(tmp_path: Path) -> None:
    """A real local run on this machine: the RAPL package counters where readable, else the reason."""
    from tests.train.tiny import tiny_data, tiny_settings
    from trainer.run.train import run

    s = tiny_settings(tmp_path / "cpu", steps=3)
    assert run(s, tiny_data(s)) == EXIT_OK
    result = read_result(s.run_dir)
    assert result is not None and result["gpu_use"] is None
    found, why = rapl.zones()
    lines = read_jsonl(s.run_dir / RAPL_FILE).records
    if found:
        assert result["energy"]["source"] == "RAPL package counters" and result["energy"]["joules"] > 0
    else:
        assert result["energy"]["joules"] is None and result["energy"]["reason"] == why
        assert lines == [{**lines[0], "rapl": "unavailable", "reason": why}]
    (row,) = analyse([result])
    assert (row["mfu"] != row["mfu"]) and row["mfu_note"] == "no GPU (cpu run)"
    if not found:  # the report's scaling table says why its MFU and energy cells are blank
        assert row["energy_note"] == f"not measured: {why}" and math.isnan(row["energy_j"])
        assert tables.gpu_footnote([row]) == f"MFU: no GPU (cpu run). Energy: not measured: {why}."
    assert json.loads(json.dumps(result["energy"])) == result["energy"]
