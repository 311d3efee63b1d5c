"""Building one rank's training: threads, data, model, its strategy (trainer/parallelism/parallel.py: DDP, ZeRO-1 or FSDP)
with the optimizer, the loader, the resumed position.

Everything here happens before T starts (it is in `timing.startup_s`). `build` returns a `Trainer`, the
object `train_step` and the loop work on; a checkpoint.pt in the run directory is restored into it.
"""

from __future__ import annotations

import contextlib
import logging
import math
import random
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader

from runcontract import probe
from trainer import rundir
from trainer.data.batches import ResumableSampler, worker_init
from trainer.measure.timing import Clock, CommMeter, PartRanges
from trainer.model import HeartLanguageModel, ModelConfig, load_encoder
from trainer.parallelism import distributed, parallel
from trainer.parallelism.distributed import Dist
from trainer.run import checkpoint, profiling, sources
from trainer.run.batch_probe import batch_probe
from trainer.run.checkpoint import Progress
from trainer.scoring.validation import Validator
from trainer.settings import ConfigError, Settings

log = logging.getLogger("hlm.train")


@dataclass
class Trainer:
    """One rank's training as built: what the step and the loop use, and what result.json reports."""

    s: Settings
    d: Dist
    data: sources.Data
    prog: Progress
    raw: HeartLanguageModel  # the model itself (state dicts, evaluation)
    model: torch.nn.Module  # what the step calls: raw, compiled and/or wrapped by its strategy
    params: list[torch.nn.Parameter]  # trainable parameters (gradient clipping)
    optimizer: torch.optim.Optimizer
    opt_kind: str  # "fused" or "foreach"
    par: parallel.Parallel  # the strategy as applied (trainer/parallelism/parallel.py)
    scaler: torch.amp.GradScaler
    autocast: Callable[[], Any]
    loader: DataLoader
    sampler: ResumableSampler
    workers: int  # DataLoader worker processes
    threads: int  # intra-op threads of this process
    clock: Clock
    comm: CommMeter
    ranges: PartRanges  # profiler ranges of the step parts (no-ops unless profiled)
    profile: dict[str, int] | None  # the profiler's schedule, None when not profiled
    grad_bytes: int
    link_probe: dict[str, Any] | None
    steps_per_epoch: int
    total_steps: int
    tokens_per_sample: int
    validator: Validator
    init_note: str | None
    hostnames: list[str]
    ckpt_path: Path
    batch_probe: dict[str, Any] | None = None  # train.batch_probe's timings (trainer.run.batch_probe), 1 worker
    memory: dict[str, int] | None = None  # Parallel.held_bytes after this segment's first step
    train_peak_bytes: int = 0  # the device's peak at the end of training (before evaluation)


def build(s: Settings, d: Dist, data: sources.Data | None) -> Trainer:
    """Set up everything the loop needs (outside T); restores checkpoint.pt when there is one."""
    threads = _set_threads(s)
    _seed_everything(s.train.seed)
    if data is None:
        data = sources.load(s, d)
    ckpt_path = s.run_dir / rundir.CHECKPOINT_FILE
    try:
        state = checkpoint.load(ckpt_path) if ckpt_path.exists() else None
    except ValueError as exc:
        raise ConfigError(f"{exc}; delete it to start the run over") from exc
    prog = Progress()
    prog.prepare_s = data.prepare_s

    built, init_note = _build_model(s, data, fresh=state is None)
    raw = built.to(d.device)
    raw.set_class_weights(data.class_weights, d.device)
    schedule = profiling.schedule_of(s)
    ranges = PartRanges(enabled=schedule is not None, comm=d.device.type == "cpu")
    clock = Clock(d.device)
    comm = CommMeter(clock, ranges=ranges)
    par = parallel.parallelize(raw, s, d, comm)
    model, optimizer = par.model, par.optimizer
    nbytes = probe.grad_bytes(list(raw.parameters()))  # the whole model's, sharded or not
    link_probe = probe.all_reduce_probe(d, nbytes, s.axes.nodes)  # start-up time, outside T
    scaler = torch.amp.GradScaler(d.device.type, enabled=s.axes.precision == "fp16")
    autocast = _autocast(s, d.device)

    sampler = ResumableSampler(data.train, d.world, d.rank, s.train.seed)
    workers = s.loader_workers
    loader = DataLoader(data.train, batch_size=s.axes.batch_size, sampler=sampler, drop_last=True,
                        num_workers=workers, pin_memory=d.device.type == "cuda",
                        persistent_workers=workers > 0, prefetch_factor=4 if workers else None,
                        worker_init_fn=worker_init if workers else None,
                        generator=torch.Generator().manual_seed(s.train.seed + d.rank))  # keeps the global RNG for dropout
    batches_per_epoch = sampler.num_samples // s.axes.batch_size
    steps_per_epoch = batches_per_epoch // s.train.grad_accum
    if steps_per_epoch < 1:
        raise ConfigError(f"batch_size {s.axes.batch_size} x grad_accum {s.train.grad_accum} x world size {d.world} needs "
                          f"more windows than the training split has ({len(data.train)})")  # type: ignore[arg-type]  # Dataset: no __len__
    # settings.py requires exactly one of steps and epochs
    total_steps = s.train.steps if s.train.steps is not None else max(1, math.ceil(s.train.epochs * steps_per_epoch))  # type: ignore[operator]
    validator = Validator(s, data, d, autocast, state)

    if state is not None:
        prog = checkpoint.restore(state, ckpt_path, s, d, par, scaler)
        prog.prepare_s += data.prepare_s
        log.info("resumed from %s at step %d/%d (T so far %.3f s)", ckpt_path, prog.step, total_steps,
                 prog.train_time_s)
    hostnames = sorted(set(distributed.gather_objects(d, socket.gethostname())))
    probed = batch_probe(raw, data.train, s.axes.batch_size, d.device, autocast, clock) \
        if s.train.batch_probe and d.world == 1 else None
    return Trainer(s=s, d=d, data=data, prog=prog, raw=raw, model=model,
                   params=[p for p in raw.parameters() if p.requires_grad], optimizer=optimizer, opt_kind=par.opt_kind,
                   par=par,
                   scaler=scaler, autocast=autocast, loader=loader, sampler=sampler, workers=workers,
                   threads=threads, clock=clock, comm=comm, ranges=ranges, profile=schedule, grad_bytes=nbytes,
                   link_probe=link_probe, steps_per_epoch=steps_per_epoch, total_steps=total_steps,
                   tokens_per_sample=data.seq_len or s.axes.window, validator=validator, init_note=init_note,
                   hostnames=hostnames, ckpt_path=ckpt_path, batch_probe=probed)


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _set_threads(s: Settings) -> int:
    """Intra-op threads for this process: the cores of the task not given to DataLoader workers
    (OMP_NUM_THREADS for the same count is set by train.run through trainer.environment)."""
    torch.set_num_threads(s.threads)
    with contextlib.suppress(RuntimeError):  # only settable before the first parallel region
        torch.set_num_interop_threads(1)
    return s.threads


def _autocast(s: Settings, device: torch.device) -> Callable[[], Any]:
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(s.axes.precision)
    return lambda: torch.autocast(device.type, dtype=dtype, enabled=dtype is not None)


def _build_model(s: Settings, data: sources.Data, fresh: bool) -> tuple[HeartLanguageModel, str | None]:
    """The model; a fresh fine-tune run copies the encoder of `init_checkpoint` (or says why not)."""
    seq_len = data.seq_len or s.axes.window  # context tokens (model.context) come before the window
    cfg = ModelConfig(vocab_size=data.vocab_size, max_len=seq_len, layers=s.model.layers, d_model=s.model.d_model,
                      heads=s.model.heads, dropout=s.model.dropout, num_classes=len(data.classes), pool=s.model.pool,
                      centre=seq_len - s.axes.window + s.axes.window // 2)
    model = HeartLanguageModel(cfg)
    if s.axes.mode != "finetune":
        return model, None
    if not s.train.init_checkpoint:
        return model, "random: no init_checkpoint configured"
    path = Path(s.train.init_checkpoint)
    if not path.exists():
        return model, f"random: {path} does not exist"
    if not fresh:
        return model, f"{path} (at the run's start; resumed from checkpoint.pt)"
    try:
        payload = checkpoint.load(path)
        notes = load_encoder(model, payload["model"], str(path))
    except (ValueError, KeyError) as exc:
        raise ConfigError(f"train.init_checkpoint: {exc}") from exc
    return model, str(path) + (f" ({'; '.join(notes)})" if notes else "")
