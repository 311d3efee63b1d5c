"""Tiny in-memory data and settings for training tests: real torch, real loop, seconds not minutes."""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path
from typing import Any

import torch
import torch.multiprocessing as mp
from torch.utils.data import Dataset

from runcontract.records import read_exit
from trainer.data.batches import LabelledWindows, MaskedWindows
from trainer.run.sources import Data
from trainer.settings import Settings, validate

VOCAB = 32
MASK_ID = VOCAB - 1


class RandomWindows(Dataset):
    """Deterministic token windows with a label that depends on the tokens (so a head can learn it)."""

    def __init__(self, n: int, window: int, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        self.tokens = torch.randint(0, VOCAB - 1, (n, window), generator=g)
        self.labels = (self.tokens.float().mean(dim=1) > (VOCAB - 2) / 2).long()

    def __len__(self) -> int:
        return len(self.tokens)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        return self.tokens[i], int(self.labels[i])


class SignalAt(Dataset):
    """Wraps a training dataset and sends this process a signal on its n-th fetch: a deterministic kill."""

    def __init__(self, inner: Dataset, fetch: int, sig: int = signal.SIGTERM) -> None:
        self.inner, self.fetch, self.sig, self.count = inner, fetch, sig, 0

    def __len__(self) -> int:
        return len(self.inner)  # type: ignore[arg-type]

    def __getitem__(self, key: Any) -> Any:
        self.count += 1
        if self.count == self.fetch:
            os.kill(os.getpid(), self.sig)
        return self.inner[key]


def tiny_settings(run_dir: Path, **overrides: Any) -> Settings:
    s = Settings(run_dir=Path(run_dir)).replace(
        window=16, batch_size=4, layers=1, d_model=16, heads=2, steps=4, lr=1e-2, cpus_per_task=1, device="cpu",
        metrics_interval_s=0.01, mask_span=2, eval=True).replace(**overrides)
    validate(s)
    return s


def tiny_data(s: Settings, n: int = 64, signal_at: int = 0) -> Data:
    """Random windows for the objective of `s`; `signal_at` > 0 sends SIGTERM on that fetch."""
    train, test = RandomWindows(n, s.axes.window, 1), RandomWindows(16, s.axes.window, 2)
    if s.axes.mode == "finetune":
        data = Data(LabelledWindows(train), LabelledWindows(test), VOCAB, ["low", "high"])
    else:
        data = Data(MaskedWindows(train, MASK_ID, s.train.mask_ratio, s.train.mask_span, s.train.seed),
                    MaskedWindows(test, MASK_ID, s.train.mask_ratio, s.train.mask_span, s.train.seed + 1), VOCAB)
    if signal_at:
        data.train = SignalAt(data.train, signal_at)
    return data


def spawn_rank(rank: int, world: int, port: int, run_dir: str, overrides: dict[str, Any],
               signal_at: dict[int, int] | None = None, expect: int = 0) -> None:
    """torch.multiprocessing.spawn target: one rank with the same environment torchrun would give it.

    `signal_at` maps a rank to the fetch on which it gets SIGTERM; any exit code but `expect` fails.
    """
    os.environ.update({"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank),
                       "LOCAL_WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    from trainer.run.train import run

    s = tiny_settings(Path(run_dir), **overrides)
    code = run(s, tiny_data(s, signal_at=(signal_at or {}).get(rank, 0)))
    if code != expect:
        raise SystemExit(f"rank {rank} exited with {code}, expected {expect}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def spawn_world(world: int, run_dir: Path, overrides: dict[str, Any], signal_at: dict[int, int] | None = None,
                expect: int = 0) -> None:
    """Run `world` ranks with torch.multiprocessing; retried when the free port was taken in between."""
    for attempt in range(3):
        try:
            mp.spawn(spawn_rank, args=(world, free_port(), str(run_dir), overrides, signal_at, expect),
                     nprocs=world, join=True)
            return
        except mp.ProcessExitedException:
            info = read_exit(run_dir) or {}
            if "EADDRINUSE" not in str(info.get("message")) or attempt == 2:
                raise
