"""What the trainer wrote on a real GPU (tests/fixtures/h200-runs, recorded on one H200 by bench/gpu_path.py),
read the way the cockpit reads a running job's files: gpu.jsonl's NVML samples through the follower's parser
into the store, and result.json into the table's row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cockpit.launch.follow import parse_jsonl_fast
from cockpit.store import StudyStore
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
    for run in ("fp32-w256", "bf16-w256-ddp-group1", "bf16-w256-sigterm", "bf16-w256-finetune"):
        result = rundir.read_result(RUNS / run)
        assert result["device"] == "cuda" and result["memory"]["peak_source"] == "cuda max_memory_allocated"
        assert result["versions"]["cuda"] and result["versions"]["nccl"]
    assert rundir.read_result(RUNS / "bf16-w256-ddp-group1")["backend"] == "nccl"


def test_real_nvml_samples_reach_the_store_whole(store: StudyStore) -> None:
    path = RUNS / "fp32-w256" / rundir.GPU_FILE
    data = path.read_bytes()
    chunk = parse_jsonl_fast(data)
    expected = _lines(path)
    assert chunk.bad_lines == 0 and chunk.records == expected and chunk.next_offset == len(data)
    key = store.ensure_study("h200", "abcd")
    config = rundir.read_config(RUNS / "fp32-w256")
    axes = {k: config[k] for k in ("dataset", "mode", "window", "precision", "batch_size", "cpus_per_task",
                                   "gpus_per_node", "nodes")}
    store.upsert_configs(key, [{"config_id": "fp32-w256", "group_id": "g", "is_baseline": True, "workers": 1,
                                "nodes": 1, "values": axes, "run_dir": str(RUNS / "fp32-w256"),
                                "total_steps": config["train"]["steps"]}])
    job = store.record_intent(key, "fp32-w256")
    store.record_submitted(job, "1")
    store.set_job_state(job, "running", elapsed_s=10, nodes=1, nodelist="vm")
    store.ingest(key, "fp32-w256", rundir.GPU_FILE, chunk.records, chunk.next_offset, chunk.bad_lines)
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
    result = rundir.read_result(run)
    assert result["timing"]["resumes"] == 1 and result["timing"]["steps"] == 800
    log = (run / rundir.LOG_FILE).read_text()
    assert "checkpointed at step 61/800" in log and "resumed from" in log
