"""Work and steps as the no-edit mode counts them where the script does not step on every batch: an unmodified
Accelerate script with gradient accumulation (its prepared loader fetches one batch ahead, its
AcceleratedOptimizer steps once per accumulation) on 1 and 2 gloo workers, and a GradScaler that skips steps."""

from __future__ import annotations

import sys

import pytest

from runcontract.contract import BREAKDOWN_PARTS
from runcontract.records import read_result
from tests.runcontract.conftest import REPO, SCRIPTS, launch, torchrun

EXAMPLE = REPO / "examples" / "workloads" / "accelerate_accumulate.py"  # docs/workloads.md's


def completed(run_dir) -> dict:
    result = read_result(run_dir)
    assert result is not None and result["status"] == "completed", (run_dir / "stderr.log").read_text()[-3000:]
    assert sum(result["breakdown_s"][p] for p in BREAKDOWN_PARTS) == pytest.approx(
        result["timing"]["train_time_s"], rel=1e-9)
    return result


@pytest.mark.parametrize("workers", [1, 2])
def test_accumulated_steps_count_the_samples_they_consumed(tmp_path, workers):
    pytest.importorskip("accelerate")
    steps, accumulate, batch = 30, 2, 32
    run_dir = tmp_path / f"accelerate-{workers}w"
    argv = [*torchrun(workers), "-m", "runcontract.attach", str(EXAMPLE), str(steps), str(accumulate)]
    assert launch(run_dir, argv, timeout=280) == 0, (run_dir / "stderr.log").read_text()[-3000:]
    result = completed(run_dir)
    measured = result["attribution"]["measured"]
    # the micro-batches' optimizer.step() calls that Accelerate skips are no steps
    assert result["timing"]["steps"] == measured["optimizer_steps"] == steps
    assert measured["forward"] == measured["backward"] == steps * accumulate
    # the loader drew one batch more than the steps used (its look-ahead): not counted
    assert measured["batches"] == steps * accumulate + 1 and measured["batches_fetched_ahead"] == 1
    assert result["timing"]["samples"] == workers * steps * accumulate * batch  # 1,920 per rank
    if workers == 2:
        assert measured["ddp"] == 1 and result["breakdown_s"]["comm"] > 0


def test_a_step_the_grad_scaler_skips_is_no_step(tmp_path):
    run_dir = tmp_path / "scaler"
    skipped = [3, 7, 11]
    argv = [sys.executable, "-m", "runcontract.attach", str(SCRIPTS / "scaler_skips.py"), "20", *map(str, skipped)]
    assert launch(run_dir, argv) == 0, (run_dir / "stderr.log").read_text()[-3000:]
    result = completed(run_dir)
    assert result["timing"]["steps"] == result["attribution"]["measured"]["optimizer_steps"] == 20 - len(skipped)
    assert result["attribution"]["measured"]["backward"] == 20
    # a skipped iteration's batch is part of the next step's work: every batch counts, once
    assert result["timing"]["samples"] == 20 * 8
