"""Atomic checkpoints and RNG state capture, so an interrupted run resumes to the same final state.

A checkpoint holds the model, optimizer and grad-scaler states, the position in the data (epoch and step
within it), every rank's RNG states and the training time accumulated so far. checkpoint.pt is written to a
temporary file, fsynced and renamed: a run killed while saving keeps its previous one. Where the strategy
shards the state (FSDP), every rank writes its own shards with torch.distributed.checkpoint into
checkpoint.shards/step-N/, which checkpoint.pt names; the folder is complete before checkpoint.pt points at it,
so a kill while saving still leaves the previous pair. Otherwise the model and optimizer sit in checkpoint.pt
itself (ZeroRedundancyOptimizer's state consolidated on rank 0 first).
"""

from __future__ import annotations

import random
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from runcontract.files import atomic_write
from runcontract.modes import make_dirs, protect
from runcontract.records import read_exit
from trainer import rundir
from trainer.config_keys import TRAINER_KEYS

if TYPE_CHECKING:
    from trainer.parallelism.distributed import Dist
    from trainer.parallelism.parallel import Parallel
    from trainer.settings import Settings

FORMAT = "hlm-checkpoint-1"

# Settings a checkpoint can only be resumed with (they fix the data order, the model or the schedule).
RESUME_KEYS = tuple(k.name for k in TRAINER_KEYS if k.resume)  # the registry marks them (trainer/config_keys/)


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
    comm: dict[str, dict[str, Any]] = field(default_factory=dict)  # collectives by kind (timing.CommMeter.by_kind)
    profile: dict[str, Any] = field(default_factory=dict)  # profiled steps and traces (trainer.run.profiling)


def rng_state() -> dict[str, Any]:
    """Python, numpy, torch CPU and (if present) CUDA generator states of this process."""
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save(path: Path, payload: dict[str, Any]) -> None:
    """torch.save atomically (temporary file, fsync, rename), so a kill mid-save, or a full disk, keeps the last
    checkpoint; a full disk raises DiskFull with the tensors' bytes as what the save needed."""
    with atomic_write(path, "wb", size_hint=tensor_bytes(payload)) as handle:
        torch.save({"format": FORMAT, **payload}, handle)


def tensor_bytes(value: Any) -> int:
    """The bytes of every tensor in a (nested) checkpoint payload: about the size torch.save writes."""
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, dict):
        return sum(tensor_bytes(v) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(tensor_bytes(v) for v in value)
    return 0


def load(path: Path) -> dict[str, Any]:
    """Load a checkpoint written by `save`; a foreign or damaged file is a ValueError naming it."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as exc:  # torch raises many types for damaged files
        raise ValueError(f"{path}: cannot be read as a checkpoint ({exc})") from exc
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{path}: not an HLM checkpoint (expected format {FORMAT!r})")
    return payload


def save_resumable(path: Path, d: Dist, par: Parallel, scaler: torch.amp.GradScaler, prog: Progress, s: Settings,
                   best_model: dict[str, torch.Tensor] | None) -> float:
    """After a stop signal: every rank's RNG state to rank 0, which writes checkpoint.pt; all ranks then meet.
    Returns the seconds it took (exit.json `checkpoint_save_s`)."""
    from trainer.parallelism import distributed

    t0 = time.perf_counter()
    rngs = distributed.gather_objects(d, rng_state())
    shards: str | None = None
    model_state: dict[str, Any] | None = None
    optim_state: dict[str, Any] | None = None
    raw, optimizer = par.root, par.optimizer
    if par.layout.shards_state:
        shards = f"{rundir.SHARDS_DIR}/step-{prog.step:08d}"
        if d.is_main:
            shutil.rmtree(path.parent / shards, ignore_errors=True)  # a save of this step that was cut short
            make_dirs(path.parent / shards)
        distributed.barrier(d)
        par.layout.save_shards(raw, optimizer, path.parent / shards)  # every rank its own file
    else:
        model_state, optim_state = par.layout.checkpoint_state(raw, optimizer, d)
    distributed.barrier(d)  # every rank's shards are written before checkpoint.pt names them
    if d.is_main:
        save(path, {"model": model_state, "optimizer": optim_state, "shards": shards, "scaler": scaler.state_dict(),
                    "progress": prog.__dict__, "rng": rngs, "model_config": raw.cfg.to_dict(),
                    "settings": s.flat(), "best_model": best_model})
        remove_shards(path.parent, keep=shards)
    distributed.barrier(d)
    return time.perf_counter() - t0


def remove_shards(run_dir: Path, keep: str | None = None) -> None:
    """Remove the sharded saves checkpoint.pt no longer names (all of them once the run has ended); the one
    kept gets the run directory's file modes (torch.distributed.checkpoint writes with the umask)."""
    folder = run_dir / rundir.SHARDS_DIR
    if not folder.is_dir():
        return
    for step in folder.iterdir():
        if keep is None or step != run_dir / keep:
            shutil.rmtree(step, ignore_errors=True)
        else:
            for file in step.iterdir():
                protect(file)
    if keep is None:
        shutil.rmtree(folder, ignore_errors=True)


def restore(state: dict[str, Any], path: Path, s: Settings, d: Dist, par: Parallel, scaler: torch.amp.GradScaler) -> Progress:
    """Load a checkpoint into the model, optimizer, scaler and RNGs; refuse one from another layout."""
    from trainer.settings import ConfigError

    if len(state["rng"]) != d.world:
        raise ConfigError(f"{path} was written by {len(state['rng'])} processes, this run has {d.world}: "
                          "resume with the same layout, or delete the checkpoint to start over")
    saved = state.get("settings", {})
    for key in RESUME_KEYS:
        if key in saved and saved[key] != s.value(key):
            raise ConfigError(f"{path} was written with {key} = {saved[key]!r}, config.json now says "
                              f"{s.value(key)!r}: restore it, or delete the checkpoint to start over")
    if state.get("shards"):
        shards = path.parent / state["shards"]
        if not (shards / ".metadata").is_file():
            raise ConfigError(f"{path} names its sharded state {shards}, which is missing or incomplete: "
                              "delete checkpoint.pt to start the run over")
        par.layout.load_shards(par.root, par.optimizer, shards)
    else:
        par.layout.load_checkpoint_state(par.root, par.optimizer, state["model"], state["optimizer"])
    scaler.load_state_dict(state["scaler"])
    set_rng_state(state["rng"][d.rank])
    prog = Progress(**state["progress"])
    prog.resumes += 1
    previous = read_exit(s.run_dir) or {}  # the interrupted segment recorded its save time there
    prog.checkpoint_s += float(previous.get("checkpoint_save_s", 0.0))
    return prog
