"""The training loop: one plain loop, nanoGPT-style, that times every second it spends.

`run(settings)` is the whole life of one rank: set up, train for a fixed number of steps (or epochs),
checkpoint on SIGTERM/SIGUSR1, stop on a non-finite loss, evaluate, write result.json and exit.json.
T (the study's metric) runs from the start of the first step to the end of the last one; see
docs/training.md for what is in it and what is recorded beside it.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import random
import signal
import socket
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader

from trainer import checkpoint, distributed, probe, provenance, rundir, sources
from trainer.batches import ResumableSampler
from trainer.distributed import Dist, StopVote
from trainer.metrics import IntervalMeter
from trainer.model import HeartLanguageModel, ModelConfig, load_encoder
from trainer.nvml import NvmlSampler
from trainer.settings import ConfigError, Settings
from trainer.timing import Breakdown, Clock, CommMeter, Mark, comm_hook, peak_memory_bytes
from trainer.validation import Validator

log = logging.getLogger("hlm.train")


# Settings a checkpoint can only be resumed with (they fix the data order, the model or the schedule).
RESUME_KEYS = ("mode", "window", "batch_size", "grad_accum", "layers", "d_model", "heads", "seed", "steps",
               "epochs", "lr", "warmup_steps", "task", "mask_ratio", "mask_span", "context", "waveform", "pool", "val_fraction",
               "val_every")


class NonFiniteLoss(RuntimeError):
    """The loss or gradient norm became NaN/inf; continuing would only waste node-hours."""


class Interrupted(Exception):
    """A stop signal was agreed on by all ranks and the checkpoint is written."""


@dataclass
class Progress:
    """Position and time accounting that survives a restart (saved in checkpoint.pt)."""

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0  # micro-batches of this rank consumed in the current epoch
    train_time_s: float = 0.0
    startup_s: float = 0.0
    prepare_s: float = 0.0
    checkpoint_s: float = 0.0
    samples: int = 0  # global
    resumes: int = 0
    first_step_s: float = 0.0  # includes loader start and, with train.compile, compilation
    val_s: float = 0.0  # fine-tune validation during training: outside T, recorded beside it
    validations: list[dict[str, Any]] = field(default_factory=list)  # step, macro_f1, accuracy, seconds
    best_step: int = 0  # the step whose weights scored best on validation (0: none yet)
    started_at: float = field(default_factory=time.time)
    breakdown: dict[str, float] = field(default_factory=dict)


class StopSignal:
    """SIGTERM/SIGUSR1 set a flag; the loop checks it between steps. Previous handlers are restored."""

    SIGNALS = (signal.SIGTERM, signal.SIGUSR1)

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


def lr_at(step: int, total: int, s: Settings) -> float:
    """Linear warm-up, then cosine decay to a tenth of the peak at the last step."""
    if step < s.warmup_steps:
        return s.lr * (step + 1) / s.warmup_steps
    progress = (step - s.warmup_steps) / max(1, total - s.warmup_steps)
    return s.lr * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress))))


def _setup_logging(run_dir: Path, d: Dist) -> logging.Handler:
    handler: logging.Handler = logging.FileHandler(run_dir / rundir.LOG_FILE)
    prefix = "" if d.is_main else f"[rank {d.rank}] "
    handler.setFormatter(logging.Formatter(f"%(asctime)s %(levelname)s {prefix}%(message)s"))
    handler.setLevel(logging.INFO if d.is_main else logging.WARNING)
    root = logging.getLogger("hlm")
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    return handler


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _set_threads(s: Settings, device: torch.device) -> int:
    """Intra-op threads for this process: the cores of the task not given to DataLoader workers."""
    threads = max(1, s.cpus - s.loader_workers)
    torch.set_num_threads(threads)
    with contextlib.suppress(RuntimeError):  # only settable before the first parallel region
        torch.set_num_interop_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    return threads


def _worker_init(_worker_id: int) -> None:
    torch.set_num_threads(1)


def _autocast(s: Settings, device: torch.device) -> Any:
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(s.precision)
    return lambda: torch.autocast(device.type, dtype=dtype, enabled=dtype is not None)


def _optimizer(model: torch.nn.Module, s: Settings, device: torch.device) -> tuple[torch.optim.Optimizer, str]:
    """AdamW with weight decay on matrices only; the fused kernel where this torch has one."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": s.weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    try:
        return torch.optim.AdamW(groups, lr=s.lr, betas=(0.9, 0.95), fused=True), "fused"
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.AdamW(groups, lr=s.lr, betas=(0.9, 0.95), foreach=True), "foreach"


def _build_model(s: Settings, data: sources.Data, fresh: bool) -> tuple[HeartLanguageModel, str | None]:
    """The model; a fresh fine-tune run copies the encoder of `init_checkpoint` (or says why not)."""
    seq_len = data.seq_len or s.window  # context tokens (model.context) come before the window
    cfg = ModelConfig(vocab_size=data.vocab_size, max_len=seq_len, layers=s.layers, d_model=s.d_model,
                      heads=s.heads, dropout=s.dropout, num_classes=len(data.classes), pool=s.pool,
                      centre=seq_len - s.window + s.window // 2)
    model = HeartLanguageModel(cfg)
    if s.mode != "finetune":
        return model, None
    if not s.init_checkpoint:
        return model, "random: no init_checkpoint configured"
    path = Path(s.init_checkpoint)
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


def run(s: Settings, data: sources.Data | None = None) -> int:
    """Train one rank to completion or interruption; returns the process exit code (see rundir.EXIT_*)."""
    launch, launch_source = provenance.launch_time()
    s.run_dir.mkdir(parents=True, exist_ok=True)
    threads_before, omp_before = torch.get_num_threads(), os.environ.get("OMP_NUM_THREADS")
    d = Dist()
    handler = None
    # anything that escapes the handlers below (KeyboardInterrupt, SystemExit) is recorded as a failure
    code, message, extra = 1, "interrupted before the end (KeyboardInterrupt or exit)", {}
    try:
        try:
            d = distributed.setup(s.device)
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        handler = _setup_logging(s.run_dir, d)
        with StopSignal() as stop:  # from here on a signal never kills the rank without an exit.json
            extra = _train(s, d, data, launch, launch_source, stop)
        code, message = rundir.EXIT_OK, "training completed"
    except Interrupted as exc:
        code, message, extra = rundir.EXIT_CHECKPOINTED, exc.args[0], exc.args[1]
    except ConfigError as exc:
        code, message = rundir.EXIT_USAGE, f"bad config: {exc}"
    except NonFiniteLoss as exc:
        code, message = rundir.EXIT_NONFINITE_LOSS, str(exc)
    except Exception as exc:
        from trainer.data import DataError

        if isinstance(exc, DataError):
            code, message = rundir.EXIT_BAD_INPUT, f"bad input data: {exc}"
        else:
            code, message = 1, f"{type(exc).__name__}: {exc}"
            log.error("%s", traceback.format_exc())
    finally:
        if code:
            (log.warning if code == rundir.EXIT_CHECKPOINTED else log.error)("%s", message)
        if d.is_main:
            rundir.write_exit(s.run_dir, code, message, rank=d.rank, world_size=d.world, **extra)
        if code not in (rundir.EXIT_OK, rundir.EXIT_CHECKPOINTED):
            print(f"hlm-train: {message}", file=sys.stderr, flush=True)
        distributed.teardown(d, clean=code in (rundir.EXIT_OK, rundir.EXIT_CHECKPOINTED))
        torch.set_num_threads(threads_before)  # the caller may be a longer-lived process (tests, notebooks)
        if omp_before is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        if handler is not None:
            logging.getLogger("hlm").removeHandler(handler)
            handler.close()
    return code


def _train(s: Settings, d: Dist, data: sources.Data | None, launch: float, launch_source: str,
           stop: StopSignal) -> dict[str, Any]:
    """Everything between rendezvous and the result; raises Interrupted / NonFiniteLoss to stop early.

    A signal during start-up is acted on after the first step; one during evaluation or the final save
    is ignored, since finishing is then quicker than checkpointing.
    """
    if (s.run_dir / rundir.RESULT_FILE).exists():
        log.info("result.json already exists: the run is complete, nothing to do")
        return {"note": "already complete; result.json kept"}
    threads = _set_threads(s, d.device)
    _seed_everything(s.seed)
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
    model: torch.nn.Module = raw
    if s.compile:
        # torch.compile is annotated as returning a plain callable; given a Module it returns an OptimizedModule
        model = torch.compile(raw)  # type: ignore[assignment]
    clock = Clock(d.device)
    comm = CommMeter(clock)
    if d.enabled:
        model = ddp = DDP(model, device_ids=[d.device.index] if d.device.type == "cuda" else None,
                          gradient_as_bucket_view=True, bucket_cap_mb=s.bucket_cap_mb or None)
        ddp.register_comm_hook(comm, comm_hook)
    optimizer, opt_kind = _optimizer(raw, s, d.device)
    nbytes = probe.grad_bytes(list(raw.parameters()))
    link_probe = probe.all_reduce_probe(d, nbytes, s.nodes)  # start-up time, outside T
    scaler = torch.amp.GradScaler(d.device.type, enabled=s.precision == "fp16")
    autocast = _autocast(s, d.device)

    sampler = ResumableSampler(data.train, d.world, d.rank, s.seed)
    workers = s.loader_workers
    loader = DataLoader(data.train, batch_size=s.batch_size, sampler=sampler, drop_last=True,
                        num_workers=workers, pin_memory=d.device.type == "cuda",
                        persistent_workers=workers > 0, prefetch_factor=4 if workers else None,
                        worker_init_fn=_worker_init if workers else None,
                        generator=torch.Generator().manual_seed(s.seed + d.rank))  # keeps the global RNG for dropout
    batches_per_epoch = sampler.num_samples // s.batch_size
    steps_per_epoch = batches_per_epoch // s.grad_accum
    if steps_per_epoch < 1:
        raise ConfigError(f"batch_size {s.batch_size} x grad_accum {s.grad_accum} x world size {d.world} needs "
                          f"more windows than the training split has ({len(data.train)})")  # type: ignore[arg-type]  # Dataset: no __len__
    # settings.py requires exactly one of steps and epochs
    total_steps = s.steps if s.steps is not None else max(1, math.ceil(s.epochs * steps_per_epoch))  # type: ignore[operator]
    tokens_per_sample = data.seq_len or s.window
    validator = Validator(s, data, d, autocast, state)

    if state is not None:
        prog = _restore(state, ckpt_path, s, d, raw, optimizer, scaler)
        prog.prepare_s += data.prepare_s
        log.info("resumed from %s at step %d/%d (T so far %.3f s)", ckpt_path, prog.step, total_steps,
                 prog.train_time_s)
    hostnames = sorted(set(distributed.gather_objects(d, socket.gethostname())))
    nvml = NvmlSampler(s.run_dir / rundir.GPU_FILE, s.nvml_interval_ms).start() if d.is_local_main else None
    if d.is_main:
        log.info("world %d on %s, device %s, backend %s, %d loader workers, %d threads, %s AdamW, "
                 "%d parameters, %d steps (%d per epoch)", d.world, ",".join(hostnames), d.device, d.backend,
                 workers, threads, opt_kind, raw.num_parameters(), total_steps, steps_per_epoch)

    meter = IntervalMeter(s.run_dir / rundir.METRICS_FILE, d.rank, s.metrics_interval_s, d.device, total_steps)
    breakdown = Breakdown()
    vote = StopVote(d)
    params = [p for p in raw.parameters() if p.requires_grad]
    slow_s = s.test_slow_step_s if s.test_slow_rank == d.rank else 0.0
    sampler.set_position(prog.epoch, prog.batch_in_epoch * s.batch_size)
    stop_reason: str | None = None
    stop_early = False
    last_loss = float("nan")
    start_wall = time.time()
    prog.startup_s += start_wall - launch - data.prepare_s
    try:
        # ---- T starts here: first step start (the loader's workers start inside it) ----
        t_begin = t_prev = time.perf_counter()
        it = iter(loader)
        while prog.step < total_steps:
            lr = lr_at(prog.step, total_steps, s)
            for group in optimizer.param_groups:
                group["lr"] = lr
            data_s = 0.0
            marks: list[tuple[Mark, Mark, Mark | None]] = []  # per micro-batch: start, end, comm
            loss_sum = torch.zeros((), device=d.device)
            for micro in range(s.grad_accum):
                t_data = time.perf_counter()
                if prog.batch_in_epoch >= steps_per_epoch * s.grad_accum:
                    prog.epoch, prog.batch_in_epoch = prog.epoch + 1, 0
                    sampler.set_position(prog.epoch, 0)
                    it = iter(loader)
                inputs, targets = next(it)
                inputs = inputs.to(d.device, non_blocking=True)
                targets = targets.to(d.device, non_blocking=True)
                prog.batch_in_epoch += 1
                data_s += time.perf_counter() - t_data
                last_micro = micro == s.grad_accum - 1
                comm.reset()
                c0 = clock.mark()
                with contextlib.nullcontext() if last_micro or not isinstance(model, DDP) else model.no_sync():
                    with autocast():
                        loss = model(inputs, targets) / s.grad_accum
                    if slow_s:
                        time.sleep(slow_s)
                    scaler.scale(loss).backward()
                marks.append((c0, clock.mark(), comm.last_ready if last_micro and d.enabled else None))
                loss_sum += loss.detach()
            o0 = clock.mark()
            scaler.unscale_(optimizer)
            grad_norm = torch.nn.utils.clip_grad_norm_(params, s.grad_clip if s.grad_clip > 0 else math.inf)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            o1 = clock.mark()
            last_loss, norm = torch.stack([loss_sum.float(), grad_norm.float()]).tolist()  # one device sync
            clock.sync()  # CUDA: every event above has completed, so intervals can be read
            fwd_bwd_s = sum(clock.elapsed(a, b) for a, b, _ in marks)
            comm_s = sum(clock.elapsed(r, b) for _, b, r in marks if r is not None)
            optimizer_s = clock.elapsed(o0, o1)
            bad_grad = s.precision != "fp16" and not math.isfinite(norm)
            if not math.isfinite(last_loss) or bad_grad:
                hint = "lower train.lr" + (", use bf16 instead of fp16" if s.precision == "fp16" else "")
                raise NonFiniteLoss(
                    f"non-finite {'loss' if not math.isfinite(last_loss) else 'gradient norm'} at step "
                    f"{prog.step + 1} (loss {last_loss}, lr {lr:.3g}): stopping; {hint}, or check the input data")
            prog.step += 1
            prog.samples += s.batch_size * s.grad_accum * d.world
            now = time.perf_counter()
            breakdown.add_step(now - t_prev, data_s, fwd_bwd_s - comm_s, comm_s, optimizer_s)
            meter.add(now - t_prev, data_s, fwd_bwd_s - comm_s, comm_s, optimizer_s, last_loss,
                      s.batch_size * s.grad_accum, tokens_per_sample)
            meter.maybe_emit(step=prog.step, epoch=prog.epoch, lr=lr,
                             train_time_s=prog.train_time_s + now - t_begin)
            if prog.step == 1:
                prog.first_step_s = now - t_begin
                if d.is_main:
                    log.info("first step done in %.3f s", now - t_begin)
            t_prev = now
            if validator.due(prog.step, total_steps):
                # outside T: T's start and this step's end move by the validation's duration, so the five
                # parts still add up to T exactly and validation is reported beside it (timing.val_s)
                val_s = validator.run(raw, prog)
                t_begin += val_s
                t_prev += val_s
                if validator.should_stop(prog) and prog.step < total_steps:
                    stop_early = True
            if vote.poll(stop.received is not None) and prog.step < total_steps:
                stop_reason = stop.received or "signal on another rank"
                break
            if stop_early:
                break
        t_end = time.perf_counter()
        # ---- T ends here: last step end ----
        vote.drain()
    finally:
        if nvml is not None:
            nvml.stop()
    segment_s = t_end - t_begin
    prog.train_time_s += segment_s
    breakdown.other += max(0.0, segment_s - breakdown.total())  # the final vote wait, if any
    merged = Breakdown()
    merged.merge(prog.breakdown)
    merged.merge(breakdown.as_dict())
    prog.breakdown = merged.as_dict()
    meter.emit(step=prog.step, epoch=prog.epoch, lr=lr_at(prog.step - 1, total_steps, s),
               train_time_s=prog.train_time_s, final=stop_reason is None)

    if stop_reason is not None:
        t0 = time.perf_counter()
        rngs = distributed.gather_objects(d, checkpoint.rng_state())
        if d.is_main:
            checkpoint.save(ckpt_path, {"model": raw.state_dict(), "optimizer": optimizer.state_dict(),
                                        "scaler": scaler.state_dict(), "progress": prog.__dict__, "rng": rngs,
                                        "model_config": raw.cfg.to_dict(), "settings": s.as_dict(),
                                        "best_model": validator.best_state})
        distributed.barrier(d)
        save_s = time.perf_counter() - t0
        raise Interrupted(f"{stop_reason}: checkpointed at step {prog.step}/{total_steps} after T = "
                          f"{prog.train_time_s:.3f} s; run the same directory again to resume",
                          {"step": prog.step, "total_steps": total_steps, "train_time_s": prog.train_time_s,
                           "checkpoint_save_s": save_s, "signal": stop_reason})

    validator.restore_best(raw, prog)  # early stopping keeps the weights of the best validation
    # the final weights first: a failing evaluation must not lose them
    t0 = time.perf_counter()
    if d.is_main:
        checkpoint.save(s.run_dir / rundir.MODEL_FILE, {"model": raw.state_dict(), "model_config": raw.cfg.to_dict(),
                                                        "mode": s.mode, "data": data.info})
    distributed.barrier(d)
    prog.checkpoint_s += time.perf_counter() - t0

    t0 = time.perf_counter()
    evaluation = _evaluate(raw, data, d, s, autocast)
    eval_s = time.perf_counter() - t0

    peak = peak_memory_bytes(d.device)
    by_rank = distributed.gather_objects(d, {"rank": d.rank, "host": socket.gethostname(), **prog.breakdown})
    if d.is_main:
        T = prog.train_time_s
        tokens = prog.samples * tokens_per_sample
        result: dict[str, Any] = {
            "status": "completed",
            "study": s.study, "config_id": s.config_id, "group_id": s.group_id,
            "config": s.config or s.as_dict(),
            "mode": s.mode,
            "world_size": d.world, "nodes": s.nodes, "gpus_per_node": s.gpus_per_node,
            "hostnames": hostnames,
            "device": d.device.type, "backend": d.backend or "none",
            "versions": provenance.versions(), "git_sha": provenance.git_sha(),
            "synthetic": data.synthetic,
            "timing": {
                "train_time_s": T, "startup_s": prog.startup_s, "prepare_s": prog.prepare_s,
                "eval_s": eval_s, "checkpoint_s": prog.checkpoint_s, "wall_s": time.time() - launch,
                "steps": prog.step, "epochs": prog.step / steps_per_epoch, "samples": prog.samples,
                "tokens": tokens, "resumes": prog.resumes, "launch_time_source": launch_source,
                "steps_per_epoch": steps_per_epoch, "first_step_s": prog.first_step_s,
                "val_s": prog.val_s,
            },
            "breakdown_s": prog.breakdown,
            "breakdown_by_rank": by_rank,
            "throughput": {"samples_per_s": prog.samples / T if T > 0 else None,
                           "tokens_per_s": tokens / T if T > 0 else None},
            "peak_memory_bytes": peak,
            "final_loss": meter.last_interval_loss,
            "model": {**raw.cfg.to_dict(), "parameters": raw.num_parameters(),
                      "flops_per_token": raw.flops_per_token(s.window)},
            "loader": {"workers": workers, "threads": threads, "pin_memory": d.device.type == "cuda",
                       "prefetch_factor": 4 if workers else None},
            "optimizer": {"name": "AdamW", "impl": opt_kind, "precision": s.precision, "compile": s.compile},
            "comm": {"method": "exposed all-reduce wait: last gradient bucket ready -> end of backward",
                     "busy_s": comm.busy_s if d.enabled and d.device.type == "cpu" else None,
                     "grad_bytes": nbytes, "bucket_cap_mb": s.bucket_cap_mb or probe.DDP_DEFAULT_BUCKET_MB,
                     "buckets": comm.buckets if d.enabled else probe.expected_buckets(nbytes, s.bucket_cap_mb),
                     "buckets_source": "measured" if d.enabled else "expected (no DDP at world size 1)",
                     "probe": link_probe},
            "data": {**data.info, "class_weights": data.class_weights},
            "started_at": prog.started_at, "finished_at": time.time(),
        }
        if evaluation is not None:
            result["eval"] = evaluation
        if validator.enabled:
            result["validation"] = validator.summary(prog, stop_early)
        if s.mode == "finetune":
            result["init"] = init_note
        rundir.write_result(s.run_dir, result)
        ckpt_path.unlink(missing_ok=True)
        log.info("done: T = %.3f s, %d steps, %.1f samples/s", T, prog.step, result["throughput"]["samples_per_s"])
    return {"step": prog.step, "train_time_s": prog.train_time_s}


def _restore(state: dict[str, Any], path: Path, s: Settings, d: Dist, raw: torch.nn.Module,
             optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler) -> Progress:
    """Load a checkpoint into the model, optimizer, scaler and RNGs; refuse one from another layout."""
    if len(state["rng"]) != d.world:
        raise ConfigError(f"{path} was written by {len(state['rng'])} processes, this run has {d.world}: "
                          "resume with the same layout, or delete the checkpoint to start over")
    saved = state.get("settings", {})
    for key in RESUME_KEYS:
        if key in saved and saved[key] != getattr(s, key):
            raise ConfigError(f"{path} was written with {key} = {saved[key]!r}, config.json now says "
                              f"{getattr(s, key)!r}: restore it, or delete the checkpoint to start over")
    raw.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scaler.load_state_dict(state["scaler"])
    checkpoint.set_rng_state(state["rng"][d.rank])
    prog = Progress(**state["progress"])
    prog.resumes += 1
    previous = rundir.read_exit(s.run_dir) or {}  # the interrupted segment recorded its save time there
    prog.checkpoint_s += float(previous.get("checkpoint_save_s", 0.0))
    return prog


def _evaluate(raw: HeartLanguageModel, data: sources.Data, d: Dist, s: Settings, autocast: Any) -> dict | None:
    """Test-split scores: classification for fine-tune, masked-token loss for foundation."""
    from trainer.evaluate import classify, masked_lm

    if not s.eval or data.test is None:
        return None
    if data.classes:
        scores = classify(raw, data.test, data.classes, d, s.batch_size, autocast, records=data.test_item_records)
        log.info("test split: %d windows scored in %.1f s (%.0f windows/s); accuracy %.4f, macro-F1 %.4f",
                 scores["samples"], scores["seconds"], scores["windows_per_s"] or 0.0, scores["accuracy"] or 0.0,
                 scores["macro_f1"] or 0.0)
        return {"split": "test", **scores}
    split = data.info.get("eval_split") or "test"  # a foundation run without test records scores train windows
    return {"split": split, **masked_lm(raw, data.test, d, s.batch_size, autocast)}
