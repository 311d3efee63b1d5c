"""What a step is where a script does not make one optimizer step per batch, each an unmodified script of a real
library studied through `python -m runcontract.attach` (docs/workloads.md, "No edit"): Lightning's manual
optimization and its gradient accumulation, a GAN whose two optimizers both step in each iteration, and a model
under `torch.compile`. On 2 gloo workers DDP's all-reduce wait is `comm`; the parts add up to T on every rank."""

from __future__ import annotations

import pytest

from runcontract.contract import BREAKDOWN_PARTS
from runcontract.records import read_result
from tests.runcontract.conftest import SCRIPTS, launch, torchrun

torch = pytest.importorskip("torch")


def studied(tmp_path, script: str, workers: int, *args: str) -> dict:
    run_dir = tmp_path / f"{script}-{workers}w"
    argv = [*torchrun(workers), "-m", "runcontract.attach", str(SCRIPTS / f"{script}.py"), *args]
    assert launch(run_dir, argv, timeout=280) == 0, (run_dir / "stderr.log").read_text()[-3000:]
    result = read_result(run_dir)
    assert result is not None and result["status"] == "completed" and result["world_size"] == workers
    assert sum(result["breakdown_s"][p] for p in BREAKDOWN_PARTS) == pytest.approx(
        result["timing"]["train_time_s"], rel=1e-9)
    for parts in result["breakdown_by_rank"]:
        assert all(parts[p] >= 0 for p in BREAKDOWN_PARTS)
        assert sum(parts[p] for p in BREAKDOWN_PARTS) == pytest.approx(parts["train_time_s"], rel=1e-9)
    assert result["breakdown_s"]["compute"] > 0 and result["breakdown_s"]["optimizer"] > 0
    return result


def comm_separated(result: dict, workers: int, backwards_per_step: int = 1) -> None:
    """DDP found and its all-reduce wait charged to comm on 2 workers; nothing in comm on 1."""
    measured = result["attribution"]["measured"]
    if workers == 1:
        assert measured["ddp"] == 0 and result["breakdown_s"]["comm"] == 0
        return
    assert measured["ddp"] == 1 and result["breakdown_s"]["comm"] > 0
    assert measured["comm_buckets"] >= backwards_per_step * result["timing"]["steps"]
    assert result["comm"]["buckets"] >= backwards_per_step


def only_lightnings_broadcast(result: dict, workers: int) -> None:
    """Nothing unseen, but for Lightning's own broadcast of its stop flag each step on several workers."""
    not_separated = result["attribution"]["not_separated"]
    if workers == 1:
        assert not_separated == []
    else:
        assert len(not_separated) == 1 and "dist.broadcast x" in not_separated[0], not_separated


@pytest.mark.parametrize("workers", [1, 2])
def test_lightning_manual_optimization_steps_once_per_opt_step(tmp_path, workers):
    pytest.importorskip("pytorch_lightning")
    steps, batch = 12, 64
    result = studied(tmp_path, "lightning_manual", workers, str(steps))
    measured = result["attribution"]["measured"]
    assert result["timing"]["steps"] == measured["optimizer_steps"] == steps
    assert measured["optimizers"] == [{"optimizer": "Adam", "steps": steps}]
    # self.net's forward and manual_backward's backward, once a step, under DDP too (its forward runs
    # training_step: no forward of its own)
    assert measured["forward"] == measured["backward"] == steps
    assert result["timing"]["samples"] == workers * steps * batch
    comm_separated(result, workers)
    only_lightnings_broadcast(result, workers)


def test_lightning_gradient_accumulation_steps_are_optimizer_steps(tmp_path):
    pytest.importorskip("pytorch_lightning")
    workers, steps, accumulate, batch = 2, 10, 2, 256
    result = studied(tmp_path, "lightning_mlp", workers, str(steps), "adam", str(accumulate))
    measured = result["attribution"]["measured"]
    assert result["timing"]["steps"] == measured["optimizer_steps"] == steps  # Lightning's max_steps
    assert measured["forward"] == measured["backward"] == steps * accumulate
    # the micro-batch without a step runs its closure outside optimizer.step(): one closure call a step
    assert measured["closure_calls"] == steps
    assert result["timing"]["samples"] == workers * steps * accumulate * batch
    comm_separated(result, workers)
    only_lightnings_broadcast(result, workers)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_gan_step_is_an_iteration_in_which_both_optimizers_stepped(tmp_path, workers):
    pytest.importorskip("pytorch_lightning")
    max_steps, batch = 16, 64
    iterations = max_steps // 2  # Lightning's global step counts each optimizer's steps
    result = studied(tmp_path, "lightning_gan", workers, str(max_steps))
    measured = result["attribution"]["measured"]
    assert result["timing"]["steps"] == iterations
    assert measured["optimizer_steps"] == max_steps
    # the discriminator's Adam steps first in each iteration, then the generator's
    assert measured["optimizers"] == [{"optimizer": "Adam", "steps": iterations}] * 2
    assert measured["backward"] == 2 * iterations
    assert measured["forward"] == 4 * iterations  # the generator once, the discriminator three times
    assert result["timing"]["samples"] == workers * iterations * batch  # each iteration's batch once
    # the gradients of both networks' parameters: both optimizers' (1 worker) or DDP's (2 workers)
    params = (8 * 64 + 64) + (64 * 16 + 16) + (16 * 64 + 64) + (64 + 1)
    assert result["comm"]["grad_bytes"] == 4 * params
    comm_separated(result, workers, backwards_per_step=2)
    only_lightnings_broadcast(result, workers)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_compiled_model_is_counted_and_charged_to_compute(tmp_path, monkeypatch, workers):
    pytest.importorskip("torch._dynamo")
    monkeypatch.setenv("TORCH_LOGS", "graph_breaks,graph_code")  # dynamo logs its graphs and breaks
    steps, batch = 8, 64
    result = studied(tmp_path, "compiled_loop", workers, str(steps), "aot_eager")
    # the hooks on the modules inside the compiled one are traced as no-ops: no graph break in them (DDP's
    # forward breaks the graph on its own)
    log = (tmp_path / f"compiled_loop-{workers}w" / "stderr.log").read_text()
    assert "__graph_code" in log and "runcontract/hooks.py" not in log
    measured = result["attribution"]["measured"]
    parts = result["breakdown_s"]
    assert result["timing"]["steps"] == measured["optimizer_steps"] == steps
    assert measured["forward"] == measured["backward"] == steps  # the compiled module, the outermost
    assert result["timing"]["samples"] == workers * steps * batch
    # tracing and compiling happen in the first forward: compute, far more than the loss and zero_grad
    assert parts["compute"] > parts["other"] and parts["compute"] > parts["data_wait"]
    comm_separated(result, workers)
    assert result["attribution"]["not_separated"] == []
