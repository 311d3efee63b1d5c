"""The no-edit way in: an unmodified third-party DDP script (tests/fixtures/third_party, the Mars project's
sample) studied on 1 and 2 workers under `torchrun -m runcontract.attach`, its parts attributed and adding
up to T, its result read back by the cockpit's own reader; and what the mode says when it cannot see a part."""

from __future__ import annotations

import hashlib
import json
import sys

import pytest

from cockpit.report.source import from_run_dirs
from runcontract import judge
from runcontract.contract import BREAKDOWN_PARTS
from runcontract.records import read_result
from tests.runcontract.conftest import SCRIPTS, THIRD_PARTY, launch, torchrun

SAMPLE = THIRD_PARTY / "pytorch_sample.py"
SAMPLE_SHA256 = "c117a277ebbcb770c815a4f4ba8d634477a993a70b6f3fd9a2be03da5acaf281"
SAMPLES = 1000  # the script's own: 1000 random rows, batches of 32, two epochs


def test_the_third_party_script_is_as_published():
    assert hashlib.sha256(SAMPLE.read_bytes()).hexdigest() == SAMPLE_SHA256
    assert (THIRD_PARTY / "LICENSE").read_text().lstrip().startswith("Copyright 1999-2021 Alibaba Group Holding")


@pytest.mark.parametrize("workers", [1, 2])
def test_an_unmodified_ddp_script_is_attributed_on_1_and_2_workers(tmp_path, workers):
    run_dir = tmp_path / "runs" / f"sample-{workers}w"
    argv = [*torchrun(workers), "-m", "runcontract.attach", str(SAMPLE), "multiple"]
    assert launch(run_dir, argv, cwd=THIRD_PARTY) == 0, (run_dir / "stderr.log").read_text()[-2000:]
    result = read_result(run_dir)
    assert result is not None and result["status"] == "completed" and result["world_size"] == workers
    t = result["timing"]["train_time_s"]
    steps_per_epoch = -(-SAMPLES // workers // 32)  # DistributedSampler pads to an equal share per rank
    assert result["timing"]["steps"] == 2 * steps_per_epoch
    # work as the cockpit counts it: every rank's samples (the batches' leading dimension), summed
    assert result["timing"]["samples"] == 2 * workers * -(-SAMPLES // workers)
    attribution = result["attribution"]
    assert attribution["mode"] == "hooks" and attribution["not_separated"] == []
    measured = attribution["measured"]
    assert measured["ddp"] == 1 and measured["optimizer_steps"] == measured["backward"] == 2 * steps_per_epoch
    assert measured["batches"] == 2 * steps_per_epoch and measured["comm_buckets"] >= 2 * steps_per_epoch
    assert [r["rank"] for r in result["breakdown_by_rank"]] == list(range(workers))
    assert sum(result["breakdown_s"].values()) == pytest.approx(t, rel=1e-9)
    assert result["breakdown_by_rank"][0]["train_time_s"] == t
    for parts in result["breakdown_by_rank"]:  # each rank's parts add up to its own T (its own clock)
        assert all(parts[p] >= 0 for p in BREAKDOWN_PARTS)
        assert sum(parts[p] for p in BREAKDOWN_PARTS) == pytest.approx(parts["train_time_s"], rel=1e-9)
    for part in ("data_wait", "compute", "comm", "optimizer"):
        assert result["breakdown_s"][part] > 0, part
    report = from_run_dirs(tmp_path / "runs", "sample", "local")
    assert [r["config_id"] for r in report.results] == [f"sample-{workers}w"]
    assert judge(run_dir).startswith(f"completed: T = {t:.2f} s over {2 * steps_per_epoch} steps on {workers} worker(s)")
    ranks = [json.loads(line)["rank"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert sorted(set(ranks)) == list(range(workers))


def test_what_the_hooks_cannot_see_is_said_not_guessed(tmp_path):
    """A loop without a DataLoader: no data_wait, and the mode says so."""
    run_dir = tmp_path / "no-loader"
    assert launch(run_dir, [sys.executable, "-m", "runcontract.attach", str(SCRIPTS / "no_loader.py")]) == 0
    result = read_result(run_dir)
    assert result is not None
    assert result["attribution"]["not_separated"] == [
        "data_wait: no DataLoader iterated (the script's own loading is in other)",
        "samples: not counted for every batch (no tensor found in it), so work per worker and S are not "
        "comparable across worker counts"]
    assert result["breakdown_s"]["data_wait"] == 0 and result["breakdown_s"]["comm"] == 0
    assert sum(result["breakdown_s"].values()) == pytest.approx(result["timing"]["train_time_s"], rel=1e-9)


def test_a_scripts_own_collectives_are_named_not_separated(tmp_path):
    """DDP's gradient all-reduce is comm; the script's own dist.all_reduce each step is not, and is named."""
    run_dir = tmp_path / "own-collectives"
    argv = [*torchrun(2), "-m", "runcontract.attach", str(SCRIPTS / "own_collectives.py"), "10"]
    assert launch(run_dir, argv) == 0, (run_dir / "stderr.log").read_text()[-2000:]
    result = read_result(run_dir)
    assert result is not None and result["timing"]["steps"] == 10
    # the all-reduce after the last step's end is outside T: nine are inside a step
    assert result["attribution"]["not_separated"] == [
        "comm: collectives besides DDP's gradient all-reduce (dist.all_reduce x9; the script's or its library's) are "
        "not separated: their time is inside compute, optimizer or other"]
    assert result["attribution"]["measured"]["own_collectives"] == {"all_reduce": 9}
    assert result["breakdown_s"]["comm"] > 0  # DDP's all-reduce wait, still separated
