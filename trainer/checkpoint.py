"""Atomic checkpoints and RNG state capture, so an interrupted run resumes to the same final state.

A checkpoint holds the model, optimizer and grad-scaler states, the position in the data (epoch and step
within it), every rank's RNG states and the training time accumulated so far. It is written to a
temporary file, fsynced and renamed: a run killed while saving keeps its previous checkpoint.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trainer.rundir import atomic_write

FORMAT = "hlm-checkpoint-1"


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
    """torch.save atomically (temporary file, fsync, rename), so a kill mid-save keeps the last checkpoint."""
    with atomic_write(path, "wb") as handle:
        torch.save({"format": FORMAT, **payload}, handle)


def load(path: Path) -> dict[str, Any]:
    """Load a checkpoint written by `save`; a foreign or damaged file is a ValueError naming it."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as exc:  # torch raises many types for damaged files
        raise ValueError(f"{path}: cannot be read as a checkpoint ({exc})") from exc
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{path}: not an HLM checkpoint (expected format {FORMAT!r})")
    return payload
