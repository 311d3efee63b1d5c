"""The training loop: steps until the run's total (or an agreed stop), with T and its parts accounted.

T runs from just before the loader's iterator is created to the end of the last step, on every rank; the
five parts of each step (timing.Breakdown) add up to it exactly. Validation and the profiler's own work
(starting, stepping, exporting) happen between steps and are moved out of T by shifting its start, so they
are reported beside it (`timing.val_s`, `timing.profile_s`). docs/training.md: what is in T.
"""

from __future__ import annotations

import logging
import signal
import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from runcontract.contract import GPU_FILE, METRICS_FILE, RAPL_FILE
from runcontract.nvml import NvmlSampler
from runcontract.rapl import RaplSampler
from trainer import environment
from trainer.measure.metrics import IntervalMeter
from trainer.measure.timing import Breakdown, peak_memory_bytes
from trainer.parallelism.distributed import StopVote
from trainer.run import profiling
from trainer.run.build import Trainer
from trainer.run.step import Batches, lr_at, train_step

log = logging.getLogger("hlm.train")


class StopSignal:
    """SIGTERM/SIGUSR1 set a flag; the loop checks it between steps. Previous handlers are restored."""

    SIGNALS = environment.STOP_SIGNALS

    def __init__(self) -> None:
        self.received: str | None = None
        self._old: dict[int, Any] = {}

    def _handle(self, signum: int, _frame: Any) -> None:
        self.received = signal.Signals(signum).name

    def __enter__(self) -> StopSignal:
        for sig in self.SIGNALS:
            self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)


@dataclass
class LoopEnd:
    """How the loop ended: an agreed stop signal (checkpoint and exit 75), early stopping, or the last step."""

    stop_reason: str | None
    stopped_early: bool
    final_loss: float | None  # mean training loss of the last metrics interval
    step_time_sd_s: float | None = None  # this segment's per-step spread (Breakdown.step_sd)


def train_loop(t: Trainer, stop: StopSignal, launch: float) -> LoopEnd:
    """Train from prog.step to t.total_steps, or to the step all ranks agree to stop at after a signal
    (StopVote). Updates t.prog: T, its breakdown, the position, the profiled steps."""
    s, d, prog, total = t.s, t.d, t.prog, t.total_steps
    nvml = NvmlSampler(s.run_dir / GPU_FILE, s.train.nvml_interval_ms).start() if d.is_local_main else None
    # a CPU run's energy: the packages' RAPL counters, at the same pace (runcontract/energy.py reads both files)
    rapl = (RaplSampler(s.run_dir / RAPL_FILE, s.train.nvml_interval_ms).start()
            if d.is_local_main and d.device.type == "cpu" else None)
    if d.is_main:
        log.info("world %d on %s, device %s, backend %s, %d loader workers, %d threads, %s AdamW, "
                 "%d parameters, %d steps (%d per epoch)", d.world, ",".join(t.hostnames), d.device, d.backend,
                 t.workers, t.threads, t.opt_kind, t.raw.num_parameters(), total, t.steps_per_epoch)
    meter = IntervalMeter(s.run_dir / METRICS_FILE, d.rank, s.train.metrics_interval_s, d.device, total)
    breakdown = Breakdown()
    vote = StopVote(d)
    t.sampler.set_position(prog.epoch, prog.batch_in_epoch * s.axes.batch_size)
    batches = Batches(t)
    profiler = None
    if t.profile is not None:
        prog.profile = {**profiling.empty_record(), **prog.profile}
        profiler = profiling.StepProfiler(t.profile, d, s.run_dir, prog.step + 1, prog.profile)
    profiled: AbstractContextManager[Any] = profiler if profiler is not None else nullcontext()
    stop_reason: str | None = None
    stop_early = False
    prog.startup_s += time.time() - launch - t.data.prepare_s
    try:
        with profiled:  # the profiler starts and stops outside T
            # ---- T starts here: first step start (the loader's workers start inside it) ----
            t_begin = t_prev = time.perf_counter()
            batches.start()
            while prog.step < total:
                lr = lr_at(prog.step, total, s)
                step = train_step(t, batches, prog, lr)
                prog.step += 1
                prog.samples += s.axes.batch_size * s.train.grad_accum * d.world
                now = time.perf_counter()
                breakdown.add_step(now - t_prev, step.data_wait, step.compute, step.comm, step.optimizer)
                meter.add(now - t_prev, step.data_wait, step.compute, step.comm, step.optimizer, step.loss,
                          s.axes.batch_size * s.train.grad_accum, t.tokens_per_sample)
                meter.maybe_emit(step=prog.step, epoch=prog.epoch, lr=lr,
                                 train_time_s=prog.train_time_s + now - t_begin)
                if prog.step == 1:
                    prog.first_step_s = now - t_begin
                    if d.is_main:
                        log.info("first step done in %.3f s", now - t_begin)
                wall, t_prev = now - t_prev, now
                if t.validator.due(prog.step, total):
                    # outside T: T's start and this step's end move by the validation's duration, so the five
                    # parts still add up to T exactly and validation is reported beside it (timing.val_s)
                    val_s = t.validator.run(t.raw, prog)
                    t_begin += val_s
                    t_prev += val_s
                    if t.validator.should_stop(prog) and prog.step < total:
                        stop_early = True
                if profiler is not None:  # outside T likewise: the profiler's step (and a cycle's export)
                    moved = profiler.step(prog.step, wall)
                    t_begin += moved
                    t_prev += moved
                if vote.poll(stop.received is not None) and prog.step < total:
                    stop_reason = stop.received or "signal on another rank"
                    break
                if stop_early:
                    break
            t_end = time.perf_counter()
            # ---- T ends here: last step end ----
            vote.drain()
            t.train_peak_bytes = peak_memory_bytes(d.device)  # before evaluation adds its own
    finally:
        if nvml is not None:
            nvml.stop()
        if rapl is not None:
            rapl.stop()
    segment_s = t_end - t_begin
    prog.train_time_s += segment_s
    breakdown.other += max(0.0, segment_s - breakdown.total())  # the final vote wait, if any
    merged = Breakdown()
    merged.merge(prog.breakdown)
    merged.merge(breakdown.as_dict())
    prog.breakdown = merged.as_dict()
    prog.comm = t.comm.by_kind(prog.comm)
    meter.emit(step=prog.step, epoch=prog.epoch, lr=lr_at(prog.step - 1, total, s),
               train_time_s=prog.train_time_s, final=stop_reason is None)
    return LoopEnd(stop_reason, stop_early, meter.last_interval_loss, breakdown.step_sd())
