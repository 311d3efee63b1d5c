"""One optimizer step, as torchtitan splits it: `forward_backward_step` (one micro-batch) and `train_step`
(grad_accum micro-batches, clipping, the AdamW update), timed into the parts of T.

The marks are where docs/training.md says: data wait from asking the loader for a batch to its copy being
issued; forward and backward from the mark before forward to the mark after backward returns, of which the
stretch after the last gradient bucket was handed to DDP is the exposed all-reduce wait (timing.CommMeter), and
so is the time inside the collectives FSDP issues (all-gather, reduce-scatter; blocking on CPU); optimizer from
before unscaling to after zeroing the gradients, less ZeRO-1's broadcast of the updated shards (comm too). The
profiler's ranges (timing.PartRanges) sit inside the same marks.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from trainer.measure.timing import Mark
from trainer.settings import Settings

if TYPE_CHECKING:
    from trainer.run.build import Trainer
    from trainer.run.checkpoint import Progress


class NonFiniteLoss(RuntimeError):
    """The loss or gradient norm became NaN/inf; continuing would only waste node-hours."""


def lr_at(step: int, total: int, s: Settings) -> float:
    """Linear warm-up, then cosine decay to a tenth of the peak at the last step."""
    if step < s.train.warmup_steps:
        return s.train.lr * (step + 1) / s.train.warmup_steps
    progress = (step - s.train.warmup_steps) / max(1, total - s.train.warmup_steps)
    return s.train.lr * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress))))


@dataclass
class StepTimes:
    """One optimizer step of this rank: seconds per measured part, its mean loss and gradient norm."""

    data_wait: float
    compute: float
    comm: float
    optimizer: float
    loss: float
    grad_norm: float


class Batches:
    """The loader's batches across epochs, resuming mid-epoch; `start` creates the iterator (inside T)."""

    def __init__(self, t: Trainer) -> None:
        self.t = t
        self.it: Any = None
        # The last micro-batch's batch, loss and gradient norm, held until their successors replace them:
        # releasing them (the loss with the autograd graph it holds) then falls inside the data, compute and
        # optimizer marks, where the loop has always released them, not in `other`.
        self.held_batch: tuple[torch.Tensor, torch.Tensor] | None = None
        self.held_loss: torch.Tensor | None = None
        self.held_norm: torch.Tensor | None = None

    def start(self) -> None:
        self.it = iter(self.t.loader)

    def next(self, prog: Progress) -> tuple[torch.Tensor, torch.Tensor]:
        t = self.t
        if prog.batch_in_epoch >= t.steps_per_epoch * t.s.train.grad_accum:
            prog.epoch, prog.batch_in_epoch = prog.epoch + 1, 0
            t.sampler.set_position(prog.epoch, 0)
            self.it = iter(t.loader)
        inputs, targets = next(self.it)
        self.held_batch = inputs, targets = (inputs.to(t.d.device, non_blocking=True),
                                             targets.to(t.d.device, non_blocking=True))
        prog.batch_in_epoch += 1
        return inputs, targets


def forward_backward_step(t: Trainer, batches: Batches, inputs: torch.Tensor, targets: torch.Tensor,
                          last_micro: bool) -> tuple[torch.Tensor, tuple[Mark, Mark, Mark | None]]:
    """Forward, loss and backward of one micro-batch (gradients all-reduced only on the last one).
    Returns the detached loss and the marks: start, end, and the last bucket's hand-over (or None)."""
    s, model, comm = t.s, t.model, t.comm
    comm.reset()
    c0 = t.clock.mark()
    with t.ranges.part("compute"):
        with t.par.accumulate(last_micro):
            with t.autocast():
                loss = batches.held_loss = model(inputs, targets) / s.train.grad_accum
            if s.train.test_slow_step_s and s.train.test_slow_rank == t.d.rank:
                time.sleep(s.train.test_slow_step_s)
            t.scaler.scale(loss).backward()
        t.ranges.backward_done()
    marks = (c0, t.clock.mark(), comm.last_ready if last_micro and comm.buckets else None)
    return loss.detach(), marks


def train_step(t: Trainer, batches: Batches, prog: Progress, lr: float) -> StepTimes:
    """Step prog.step + 1: grad_accum micro-batches, then unscale, clip, AdamW, zero the gradients.
    Raises NonFiniteLoss on a NaN/inf loss (or gradient norm outside fp16, where the scaler skips it)."""
    s, clock = t.s, t.clock
    for group in t.optimizer.param_groups:
        group["lr"] = lr
    data_s = 0.0
    marks: list[tuple[Mark, Mark, Mark | None]] = []  # per micro-batch: start, end, comm
    loss_sum = torch.zeros((), device=t.d.device)
    timed0 = t.comm.timed_s  # collectives a strategy issues itself (FSDP's, ZeRO's broadcast), CPU only
    for micro in range(s.train.grad_accum):
        t_data = time.perf_counter()
        with t.ranges.part("data_wait"):
            inputs, targets = batches.next(prog)
        data_s += time.perf_counter() - t_data
        loss, micro_marks = forward_backward_step(t, batches, inputs, targets, last_micro=micro == s.train.grad_accum - 1)
        marks.append(micro_marks)
        loss_sum += loss
    timed_fb = t.comm.timed_s - timed0
    o0 = clock.mark()
    with t.ranges.part("optimizer"):
        t.scaler.unscale_(t.optimizer)
        grad_norm = batches.held_norm = t.par.layout.total_norm(torch.nn.utils.clip_grad_norm_(
            t.params, s.train.grad_clip if s.train.grad_clip > 0 else math.inf))
        t.scaler.step(t.optimizer)
        t.scaler.update()
        if t.memory is None:  # counted once per segment, while the gradients and the optimizer state exist
            t.memory = t.par.held_bytes()
        t.optimizer.zero_grad(set_to_none=True)
    o1 = clock.mark()
    timed_opt = t.comm.timed_s - timed0 - timed_fb
    last_loss, norm = torch.stack([loss_sum.float(), grad_norm.float()]).tolist()  # one device sync
    clock.sync()  # CUDA: every event above has completed, so intervals can be read
    fwd_bwd_s = sum(clock.elapsed(a, b) for a, b, _ in marks)
    all_reduce_s = sum(clock.elapsed(r, b) for _, b, r in marks if r is not None)
    t.comm.add_exposed("all_reduce", all_reduce_s)
    t.comm.end_step()
    bad_grad = s.axes.precision != "fp16" and not math.isfinite(norm)
    if not math.isfinite(last_loss) or bad_grad:
        hint = "lower train.lr" + (", use bf16 instead of fp16" if s.axes.precision == "fp16" else "")
        raise NonFiniteLoss(
            f"non-finite {'loss' if not math.isfinite(last_loss) else 'gradient norm'} at step "
            f"{prog.step + 1} (loss {last_loss}, lr {lr:.3g}): stopping; {hint}, or check the input data")
    # every wait for a collective is comm: DDP's exposed all-reduce and the blocking collectives timed inside
    # forward/backward leave compute, ZeRO's broadcast after its local step leaves optimizer
    return StepTimes(data_s, fwd_bwd_s - all_reduce_s - timed_fb, all_reduce_s + timed_fb + timed_opt,
                     clock.elapsed(o0, o1) - timed_opt, last_loss, norm)
