"""The end of a completed run: final weights, test-split scores and the result record (result.json).

The record's fields are declared in runcontract/records.py (`Result`, `ResultTiming`, `ResultProfile`) and
documented in docs/run-directory.md; rank 0 writes it once, atomically, after every rank has gathered its
breakdown. Evaluation and saving are outside T and recorded beside it.
"""

from __future__ import annotations

import logging
import socket
import time
from typing import Any, cast

from runcontract import ddp_buckets, energy
from runcontract.records import Result, ResultEnergy, ResultGpuUse, ResultMemory, ResultTiming, write_result
from trainer import rundir
from trainer.measure import provenance
from trainer.measure.timing import peak_memory_bytes, peak_source
from trainer.parallelism import distributed
from trainer.run import checkpoint, profiling
from trainer.run.build import Trainer
from trainer.run.loop import LoopEnd

COMM_METHOD = ("exposed waits: DDP's all-reduce from the last gradient bucket ready to the end of backward; "
               "collectives the strategy issues itself (FSDP's all-gather and reduce-scatter, ZeRO-1's broadcast) "
               "for their whole duration on CPU, where gloo runs them on the training thread")

log = logging.getLogger("hlm.train")


def save_model(t: Trainer) -> float:
    """model.pt (the final, or best validated, weights) by rank 0; all ranks meet. Returns its seconds."""
    t0 = time.perf_counter()
    weights = t.par.layout.full_weights(t.raw)  # every rank: FSDP gathers the shards
    if t.d.is_main:
        checkpoint.save(t.s.run_dir / rundir.MODEL_FILE, {"model": weights, "model_config": t.raw.cfg.to_dict(),
                                                          "mode": t.s.axes.mode, "data": t.data.info})
    distributed.barrier(t.d)
    return time.perf_counter() - t0


def evaluate(t: Trainer) -> tuple[dict[str, Any] | None, float]:
    """Test-split scores (classification for fine-tune, masked-token loss for foundation) and their seconds."""
    from trainer.scoring.evaluate import classify, masked_lm

    s, data, d = t.s, t.data, t.d
    t0 = time.perf_counter()
    if not s.train.eval or data.test is None:
        return None, time.perf_counter() - t0
    model = t.par.layout.plain_model(t.raw)  # unsharded: each rank scores its own windows
    if data.classes:
        scores = classify(model, data.test, data.classes, d, s.axes.batch_size, t.autocast, records=data.test_item_records)
        log.info("test split: %d windows scored in %.1f s (%.0f windows/s); accuracy %.4f, macro-F1 %.4f",
                 scores["samples"], scores["seconds"], scores["windows_per_s"] or 0.0, scores["accuracy"] or 0.0,
                 scores["macro_f1"] or 0.0)
        return {"split": "test", **scores}, time.perf_counter() - t0
    split = data.info.get("eval_split") or "test"  # a foundation run without test records scores train windows
    return {"split": split, **masked_lm(model, data.test, d, s.axes.batch_size, t.autocast)}, time.perf_counter() - t0


def write(t: Trainer, end: LoopEnd, evaluation: dict[str, Any] | None, eval_s: float, launch: float,
          launch_source: str) -> None:
    """Gather every rank's breakdown and memory; rank 0 writes result.json and removes checkpoint.pt
    and any sharded state."""
    peak = peak_memory_bytes(t.d.device)
    ranks = distributed.gather_objects(t.d, ({"rank": t.d.rank, "host": socket.gethostname(), **t.prog.breakdown},
                                             {"rank": t.d.rank, **(t.memory or {}), "peak_bytes": t.train_peak_bytes}))
    if not t.d.is_main:
        return
    by_rank, memory = [b for b, _ in ranks], [m for _, m in ranks]
    result = record(t, end, evaluation, eval_s, launch, launch_source, by_rank, peak, memory)
    write_result(t.s.run_dir, result)
    t.ckpt_path.unlink(missing_ok=True)
    checkpoint.remove_shards(t.s.run_dir)
    log.info("done: T = %.3f s, %d steps, %.1f samples/s", t.prog.train_time_s, t.prog.step,
             result["throughput"]["samples_per_s"])


def record(t: Trainer, end: LoopEnd, evaluation: dict[str, Any] | None, eval_s: float, launch: float,
           launch_source: str, by_rank: list[dict[str, Any]], peak: int,
           memory: list[dict[str, Any]]) -> Result:
    """result.json of a completed run (Result)."""
    s, d, prog, raw = t.s, t.d, t.prog, t.raw
    T = prog.train_time_s
    tokens = prog.samples * t.tokens_per_sample
    profiled = profiling.summary(t.profile, prog.profile)
    timing: ResultTiming = {
        "train_time_s": T, "startup_s": prog.startup_s, "prepare_s": prog.prepare_s,
        "eval_s": eval_s, "checkpoint_s": prog.checkpoint_s, "wall_s": time.time() - launch,
        "steps": prog.step, "epochs": prog.step / t.steps_per_epoch, "samples": prog.samples,
        "tokens": tokens, "resumes": prog.resumes, "launch_time_source": launch_source,
        "steps_per_epoch": t.steps_per_epoch, "first_step_s": prog.first_step_s,
        "val_s": prog.val_s, "step_time_sd_s": end.step_time_sd_s,
        "profiled_steps": len(profiled["steps"]) + len(profiled["warmup_steps"]) if profiled else 0,
        "profile_s": float(prog.profile.get("profile_s", 0.0)),
    }
    result: Result = {
        "status": "completed",
        "study": s.run.study, "config_id": s.run.config_id, "group_id": s.run.group_id,
        "config": s.config or s.as_dict(),
        "mode": s.axes.mode,
        "world_size": d.world, "nodes": s.axes.nodes, "gpus_per_node": s.axes.gpus_per_node,
        "hostnames": t.hostnames,
        "device": d.device.type, "backend": d.backend or "none",
        "versions": provenance.versions(), "git_sha": provenance.git_sha(),
        "synthetic": t.data.synthetic,
        "timing": timing,
        "breakdown_s": prog.breakdown,
        "breakdown_by_rank": by_rank,
        "throughput": {"samples_per_s": prog.samples / T if T > 0 else None,
                       "tokens_per_s": tokens / T if T > 0 else None},
        "peak_memory_bytes": peak,
        "batch_probe": t.batch_probe,
        "final_loss": end.final_loss,
        "model": {**raw.cfg.to_dict(), "parameters": raw.num_parameters(), "parameter_tensors": raw.parameter_tensors(),
                  "flops_per_token": raw.flops_per_token(s.axes.window)},
        "loader": {"workers": t.workers, "threads": t.threads, "pin_memory": d.device.type == "cuda",
                   "prefetch_factor": 4 if t.workers else None},
        "optimizer": {"name": "AdamW", "impl": t.opt_kind, "precision": s.axes.precision, "compile": s.train.compile},
        "parallel": {"strategy": s.axes.strategy, "applied": t.par.applied, "sharded": list(t.par.sharded),
                     "mixed_precision": t.par.mixed_precision},
        "memory": cast(ResultMemory, {**{k: v for k, v in memory[0].items() if k != "rank"},
                                             "peak_source": peak_source(d.device), "by_rank": memory}),
        "comm": {"method": COMM_METHOD,
                 "busy_s": t.comm.busy_s if d.enabled and d.device.type == "cpu" else None,
                 "by_kind": prog.comm, "overlap": ddp_buckets.overlap(prog.comm),
                 "grad_bytes": t.grad_bytes, "bucket_cap_mb": s.train.bucket_cap_mb or ddp_buckets.DDP_DEFAULT_BUCKET_MB,
                 "buckets": t.comm.buckets if d.enabled else ddp_buckets.expected_buckets(t.grad_bytes, s.train.bucket_cap_mb),
                 "buckets_source": "measured" if d.enabled else "expected (no DDP at world size 1)",
                 "probe": t.link_probe},
        "data": {**t.data.info, "class_weights": t.data.class_weights},
        "profile": profiled,
        "started_at": prog.started_at, "finished_at": time.time(),
    }
    used = energy.summary(s.run_dir, d.device.type)  # the devices' energy and the GPUs' busy share over T
    result["energy"] = cast(ResultEnergy, used["energy"])
    result["gpu_use"] = cast("ResultGpuUse | None", used["gpu_use"])
    if evaluation is not None:
        result["eval"] = evaluation
    if t.validator.enabled:
        result["validation"] = t.validator.summary(prog, end.stopped_early)
    if s.axes.mode == "finetune":
        result["init"] = t.init_note
    return result
