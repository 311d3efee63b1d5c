"""What a step is where a script does not make one optimizer step per batch, each an unmodified script of a real
library studied through `python -m runcontract.attach` (docs/workloads.md, "No edit"): Lightning's manual
optimization and its gradient accumulation, a GAN whose two optimizers both step in each iteration, and a model
under `torch.compile`. On 2 gloo workers DDP's all-reduce wait is `comm`; the parts add up to T on every rank."""

from __future__ import annotations

import time

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


def test_lightning_manual_optimization_steps_once_per_opt_step(tmp_path):
    """On 2 workers (on 1, lightning_gan.py's test runs manual optimization)."""
    pytest.importorskip("pytorch_lightning")
    workers, steps, batch = 2, 12, 64
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


def test_a_two_optimizer_step_ends_at_the_end_of_the_iterations_last_optimizer_step(tmp_path):
    """In process, a plain torch GAN loop: the first iteration's end is known when the discriminator steps again
    (the step is then ended at the generator's step's end, before the second batch was drawn); from then on each
    iteration's step ends at the generator's step, and T ends there."""
    from runcontract.hooks import TorchHooks
    from runcontract.run import Run

    torch.manual_seed(0)
    gen, disc = torch.nn.Linear(4, 8), torch.nn.Linear(8, 1)
    opt_d, opt_g = torch.optim.Adam(disc.parameters()), torch.optim.Adam(gen.parameters())
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(40, 8)), batch_size=8)
    mid, ends, drawn = [], [], []  # the ledger's steps between the two optimizer steps and after them; the
    # instant each batch was drawn
    with Run(tmp_path, mode="hooks", stop_signals=False) as run:
        hooks = TorchHooks(run).install()
        try:
            for (real,) in loader:
                drawn.append(time.perf_counter())
                fake = gen(torch.randn(8, 4))
                d_loss = disc(real).mean() - disc(fake.detach()).mean()
                opt_d.zero_grad()
                d_loss.backward()
                opt_d.step()
                mid.append(run.ledger.steps)
                g_loss = disc(fake).mean()
                opt_g.zero_grad()
                g_loss.backward()
                opt_g.step()
                ends.append(run.ledger.steps)
                last_g_end = time.perf_counter()
        finally:
            hooks.remove()
        # the discriminator's step ends no step; the generator's does, from the second iteration on, and the
        # first iteration's step is ended once the discriminator steps again
        assert mid == [0, 1, 2, 3, 4] and ends == [0, 2, 3, 4, 5]
        hooks.notes()
        assert run.ledger.steps == 5 and run.samples == 40
        # T: from the loader's start to the end of the last generator step (after the last batch was drawn)
        assert run.ledger.first_start <= drawn[0] and drawn[-1] < run.ledger.last_end <= last_g_end
        assert run.measured["optimizers"] == [{"optimizer": "Adam", "steps": 5}] * 2
        assert run.grad_bytes == 4 * (4 * 8 + 8 + 8 + 1)  # both optimizers' parameters
        parts = run.ledger.breakdown()
        assert sum(parts.values()) == pytest.approx(run.ledger.train_time_s, rel=1e-9)
        run.finish()
