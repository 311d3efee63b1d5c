"""From windows to training batches: the resumable sampler and the objective's (input, target) pairs.

The sampler is torch's DistributedSampler (same shuffling and sharding) that can start part-way into an
epoch, for resuming, and that tags each index with its epoch. Masks are drawn from a generator seeded by
(seed, epoch, sample index), so they do not depend on the rank, the DataLoader worker or a restart: a
2-process run sees exactly the samples and masks a 1-process run sees in the same global batch.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np
import torch
from torch.utils.data import Dataset, DistributedSampler

from trainer.environment import STOP_SIGNALS
from trainer.model import IGNORE_INDEX, mask_blocks


def worker_init(_worker_id: int) -> None:
    """A DataLoader worker: one intra-op thread, and deaf to the stop signals. torchrun and Slurm signal the
    rank's whole process group; torch's worker dies of a SIGTERM its parent did not send, and the rank would
    then fail ("DataLoader worker ... killed by signal") instead of checkpointing. The rank ends its workers."""
    torch.set_num_threads(1)
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


class ResumableSampler(DistributedSampler):
    """DistributedSampler yielding (epoch, index) pairs and able to skip the first `start` of its share."""

    def __init__(self, dataset: Dataset, num_replicas: int, rank: int, seed: int, shuffle: bool = True) -> None:
        super().__init__(dataset, num_replicas=num_replicas, rank=rank, shuffle=shuffle, seed=seed, drop_last=True)
        self.start = 0

    def set_position(self, epoch: int, start: int) -> None:
        self.set_epoch(epoch)
        self.start = start

    def __iter__(self) -> Iterator[tuple[int, int]]:
        indices = list(super().__iter__())[self.start:]
        return iter([(self.epoch, i) for i in indices])

    def __len__(self) -> int:
        return self.num_samples - self.start


class MaskedWindows(Dataset):
    """Foundation objective: (window with spans replaced by the mask token, targets at masked positions)."""

    def __init__(self, windows: Dataset, mask_id: int, ratio: float, span: int, seed: int) -> None:
        self.windows = windows
        self.mask_id = mask_id
        self.ratio = ratio
        self.span = span
        self.seed = seed

    def __len__(self) -> int:
        return len(self.windows)  # type: ignore[arg-type]  # torch's Dataset declares no __len__; ours have one

    def __getitem__(self, key: tuple[int, int] | int) -> tuple[torch.Tensor, torch.Tensor]:
        epoch, index = key if isinstance(key, tuple) else (0, key)
        tokens = self.windows[index][0]
        rng = np.random.default_rng([self.seed, epoch, index])
        return mask_blocks(torch.as_tensor(tokens, dtype=torch.long), self.mask_id, self.ratio, self.span, rng)


HIDE_STREAM = 1  # train.context_dropout's draws: a stream of their own beside the noisy version's


class HiddenContext(NamedTuple):
    """train.context_dropout as the items apply it."""

    tokens: int  # the leading context tokens of each item
    share: float  # of the items, drawn anew each epoch
    mask_id: int  # what they show instead


class LabelledWindows(Dataset):
    """Fine-tune objective: (window, class label); accepts the sampler's (epoch, index) keys. With `groups`
    (each item's loss weight group, train.af_group) the target is [label, group]: the model's loss then weighs
    each item by its group's weight. With `noisy` (the same items from noisy versions of their records,
    train.augment_noise_db) a `share` of the items takes its window from one of them, drawn anew each epoch
    from (seed, epoch, index) like the foundation's masks: the same on every rank, worker and restart. With
    `hidden` (train.context_dropout) its share of the items, drawn the same way, shows the mask token in place of
    its context tokens."""

    def __init__(self, windows: Dataset, groups: Any = None, noisy: tuple[Dataset, ...] = (), share: float = 0.0,
                 seed: int = 0, hidden: HiddenContext | None = None) -> None:
        self.windows = windows
        self.groups = groups
        self.noisy, self.share, self.seed = noisy, share, seed
        self.hidden = hidden

    def hides_context(self, epoch: int, index: int) -> bool:
        """Whether an item shows the mask token in place of its context tokens this epoch."""
        if not self.hidden:
            return False
        return float(np.random.default_rng([self.seed, epoch, index, HIDE_STREAM]).random()) < self.hidden.share

    def version(self, epoch: int, index: int) -> int:
        """Which version an item's window comes from this epoch: 0 clean, k the k-th noisy one."""
        if not self.noisy:
            return 0
        draw = float(np.random.default_rng([self.seed, epoch, index]).random())
        return 1 + int(draw / self.share * len(self.noisy)) if draw < self.share else 0

    def __len__(self) -> int:
        return len(self.windows)  # type: ignore[arg-type]  # torch's Dataset declares no __len__; ours have one

    def __getitem__(self, key: tuple[int, int] | int) -> tuple[torch.Tensor, Any]:
        epoch, index = key if isinstance(key, tuple) else (0, key)
        tokens, label = self.windows[index]
        if version := self.version(epoch, index):
            tokens = self.noisy[version - 1][index][0]  # the same beat and label, its record's noisy version
        if self.hidden and self.hides_context(epoch, index):
            tokens = torch.as_tensor(tokens, dtype=torch.long).clone()
            tokens[:self.hidden.tokens] = self.hidden.mask_id
        label = int(label)
        label = label if label >= 0 else IGNORE_INDEX
        if self.groups is not None:
            return torch.as_tensor(tokens, dtype=torch.long), torch.tensor([label, int(self.groups[index])])
        return torch.as_tensor(tokens, dtype=torch.long), torch.tensor(label)
