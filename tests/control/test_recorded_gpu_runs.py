"""What the trainer wrote on a real GPU (tests/fixtures/h200-runs, recorded on one H200 by bench/gpu_path.py),
read the way the cockpit reads it: gpu.jsonl's NVML samples through the follower's parser into the store,
result.json, and torch.profiler's CUDA traces through `cockpit trace`'s summary."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from cockpit.figures.traces import HTA_NOTE_GPU, describe, hta_note, load, summarise
from cockpit.launch.follow import parse_jsonl_fast
from cockpit.store import StudyStore
from runcontract.contract import GPU_FILE
from runcontract.records import read_config, read_result
from trainer import rundir

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "h200-runs"


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def store(tmp_path: Path):
    s = StudyStore(tmp_path / "cockpit.sqlite")
    yield s
    s.close()


def test_the_h200_runs_are_what_a_gpu_wrote() -> None:
    for run in ("fp32-w256", "bf16-w256", "bf16-w256-ddp-group1", "bf16-w256-sigterm", "bf16-w256-finetune"):
        result = read_result(RUNS / run)
        assert result["device"] == "cuda" and result["memory"]["peak_source"] == "cuda max_memory_allocated"
        assert result["versions"]["cuda"] and result["versions"]["nccl"]
    assert read_result(RUNS / "bf16-w256-ddp-group1")["backend"] == "nccl"


def test_real_nvml_samples_reach_the_store_whole(store: StudyStore) -> None:
    path = RUNS / "fp32-w256" / GPU_FILE
    data = path.read_bytes()
    chunk = parse_jsonl_fast(data)
    expected = _lines(path)
    assert chunk.bad_lines == 0 and chunk.records == expected and chunk.next_offset == len(data)
    key = store.ensure_study("h200", "abcd")
    config = read_config(RUNS / "fp32-w256")
    axes = {k: config[k] for k in ("dataset", "mode", "window", "precision", "batch_size", "cpus_per_task",
                                   "gpus_per_node", "nodes")}
    store.upsert_configs(key, [{"config_id": "fp32-w256", "group_id": "g", "is_baseline": True, "workers": 1,
                                "nodes": 1, "values": axes, "run_dir": str(RUNS / "fp32-w256"),
                                "total_steps": config["train"]["steps"]}])
    job = store.record_intent(key, "fp32-w256")
    store.record_submitted(job, "1")
    store.set_job_state(job, "running", elapsed_s=10, nodes=1, nodelist="vm")
    store.ingest(key, "fp32-w256", GPU_FILE, chunk.records, chunk.next_offset, chunk.bad_lines)
    snap = store.snapshot("h200", now=expected[-1]["t"] + 1)
    (series,) = snap.gpus
    assert (series.host, series.gpu) == (expected[0]["host"], 0)
    last = expected[-1]
    assert series.latest is not None
    assert (series.latest.util_pct, series.latest.power_w, series.latest.mem_used_bytes) == (
        last["util_pct"], last["power_w"], last["mem_used_bytes"])
    assert series.latest.mem_total_bytes == last["mem_total_bytes"] > 100 * 2**30  # an H200's 141 GB


def test_a_resumed_gpu_run_counts_its_resume_and_its_checkpoint() -> None:
    run = RUNS / "bf16-w256-sigterm"
    result = read_result(run)
    assert result["timing"]["resumes"] == 1 and result["timing"]["steps"] == 800
    log = (run / rundir.LOG_FILE).read_text()
    step = re.search(r"checkpointed at step (\d+)/800", log)
    assert step and re.search(rf"resumed from \S+ at step {step[1]}/800", log)  # where it stopped


def _union_ms(path: Path) -> tuple[float, float]:
    """(GPU busy ms, steps' wall ms) straight from the trace JSON: the CPU's ProfilerStep ranges and every
    kernel, copy and memset inside them, overlaps counted once."""
    events = [e for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"] if e.get("ph") == "X"]
    steps = [e for e in events if e["name"].startswith("ProfilerStep#") and e.get("cat") == "user_annotation"]
    lo, hi = min(e["ts"] for e in steps), max(e["ts"] + e["dur"] for e in steps)
    busy, reach = 0.0, lo
    for start, end in sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                             if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")):
        start, end = max(start, reach), min(end, hi)
        if end > start:
            busy, reach = busy + end - start, end
    return busy / 1e3, (hi - lo) / 1e3


@pytest.mark.parametrize("run", ["bf16-w256", "bf16-w256-ddp-group1"])
def test_a_gpu_trace_counts_each_step_once_and_says_how_busy_the_gpu_was(run: str) -> None:
    path = RUNS / run / "rank0-steps7-9.json.gz"
    summary = summarise(load(path.read_bytes(), path.name), path.name)
    assert summary.steps == [7, 8, 9]  # the GPU timeline's copies of ProfilerStep#N left out
    busy_ms, wall_ms = _union_ms(path)
    assert summary.gpu_busy_s * 1e3 == pytest.approx(busy_ms) and summary.steps_s * 1e3 == pytest.approx(wall_ms)
    lines = describe(summary)
    assert f"GPU busy {busy_ms:.2f} ms of the recorded steps' {wall_ms:.2f} ms ({busy_ms / wall_ms:.0%};" in "\n".join(lines)
    assert sum(summary.totals().values()) == pytest.approx(summary.steps_s, rel=1e-3)  # the parts add up to the steps
    assert hta_note([summary]) == HTA_NOTE_GPU
    if "ddp" in run:  # NCCL's own record of each all-reduce: three buckets in backward and the stop vote per step
        assert [s.name for s in summary.all_reduce] == ["nccl:all_reduce"] * 12
        assert sum(s.in_backward for s in summary.all_reduce) == 9
        assert any("exposed wait: not a range on a GPU" in line for line in lines)
        calls = {name: n for name, _, n in summarise(load(path.read_bytes(), "t"), "t", top=100).top_ops}
        assert calls["DistributedDataParallel.forward"] == 3  # once per step, not again on the GPU's timeline
