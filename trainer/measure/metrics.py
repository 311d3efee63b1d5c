"""Interval aggregates of the per-step breakdown, appended by every rank to metrics.jsonl.

One line per interval (train.metrics_interval_s) keeps the file small at any step rate while still
showing drift (a slowing loader, a straggling rank) as it happens; field names follow docs/run-directory.md.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch

from runcontract.contract import SCHEMA_VERSION
from runcontract.files import append_jsonl
from trainer.measure.timing import peak_memory_bytes


class IntervalMeter:
    """Sums step phases until the interval has passed, then writes one record and starts over."""

    def __init__(self, path: Path, rank: int, interval_s: float, device: torch.device,
                 total_steps: int | None = None) -> None:
        """`total_steps`: the steps the run will take, known once its data is loaded (from `steps`, or from
        `epochs` and the steps per epoch); written in every record so the cockpit shows progress and an eta."""
        self.path = path
        self.rank = rank
        self.interval_s = interval_s
        self.device = device
        self.total_steps = total_steps
        self.last_interval_loss: float | None = None
        self._reset()

    def _reset(self) -> None:
        self.started = time.perf_counter()
        self.wall = self.data_wait = self.compute = self.comm = self.optimizer = 0.0
        self.steps = self.samples = self.tokens = 0
        self.loss_sum = 0.0

    def add(self, wall: float, data_wait: float, compute: float, comm: float, optimizer: float, loss: float,
            samples: int, tokens_per_sample: int) -> None:
        """One optimizer step of this rank: its phases, its mean loss and the samples it consumed."""
        self.wall += wall
        self.data_wait += data_wait
        self.compute += compute
        self.comm += comm
        self.optimizer += optimizer
        self.loss_sum += loss
        self.steps += 1
        self.samples += samples
        self.tokens += samples * tokens_per_sample

    def maybe_emit(self, **fields: object) -> None:
        if time.perf_counter() - self.started >= self.interval_s:
            self.emit(False, **fields)

    def emit(self, final: bool = False, **fields: object) -> None:
        """Write the interval's record (also with zero steps when `final`, so every rank ends with one)."""
        if not self.steps and not final:
            return
        loss = self.loss_sum / self.steps if self.steps else None
        if loss is not None:
            self.last_interval_loss = loss
        wall = self.wall
        record = {
            "v": SCHEMA_VERSION,
            "t": time.time(),
            "rank": self.rank,
            **fields,
            **({"total_steps": self.total_steps} if self.total_steps is not None else {}),
            "loss": loss,
            "interval_s": wall,
            "steps_in_interval": self.steps,
            "data_wait_s": self.data_wait,
            "compute_s": self.compute,
            "comm_s": self.comm,
            "optimizer_s": self.optimizer,
            "other_s": max(0.0, wall - self.data_wait - self.compute - self.comm - self.optimizer),
            "samples_per_s": self.samples / wall if wall > 0 else None,
            "tokens_per_s": self.tokens / wall if wall > 0 else None,
            "mem_bytes": peak_memory_bytes(self.device),
        }
        if final:
            record["final"] = True
        append_jsonl(self.path, record)
        self._reset()
