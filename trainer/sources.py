"""What the training loop trains on: prepared token shards turned into the objective's datasets.

Rank 0 prepares (or finds up to date) the token shards while the other ranks wait at a barrier; then every
rank opens the same shards. The loop itself only sees a `Data` bundle, so tests can hand it small tensors.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torch.utils.data import Dataset, Subset

from trainer.batches import LabelledWindows, MaskedWindows
from trainer.distributed import Dist, barrier
from trainer.settings import Settings

FOUNDATION_EVAL_WINDOWS = 4096  # masked-token evaluation of a foundation run uses at most this many windows


@dataclass
class Data:
    """Training and test datasets for one objective plus what the model and the result need to know."""

    train: Dataset  # keyed by (epoch, index) -> (inputs, targets)
    test: Dataset | None  # keyed by index -> (inputs, targets); None = no evaluation possible
    vocab_size: int
    classes: list[str] = field(default_factory=list)  # fine-tune class names; empty for foundation
    synthetic: bool = False
    prepare_s: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)  # shard dir, tokenizer, record counts
    class_weights: list[float] | None = None  # fine-tune loss weights per class (None = unweighted)


def load(s: Settings, d: Dist) -> Data:
    """Prepare shards on rank 0 (others wait), then open the train and test windows for the objective."""
    from trainer.data import dataset as wd
    from trainer.data.prepare import prepare_dataset

    cache = Path(s.token_cache) if s.token_cache else s.run_dir / "tokens"
    kwargs = {"dataset": s.dataset, "synthetic_params": s.synthetic_params}
    t0 = time.perf_counter()
    if d.is_main:
        shard = prepare_dataset(s.data_path, s.tokenizer, cache, s.prepare_workers, **kwargs)
    barrier(d)
    if not d.is_main:  # up to date by now: only a digest check
        shard = prepare_dataset(s.data_path, s.tokenizer, cache, 1, **kwargs)
    prepare_s = time.perf_counter() - t0

    manifest = wd.load_manifest(shard)
    task = s.task if s.mode == "finetune" else "foundation"
    train_records = wd.split_records(manifest, "train")
    test_records = wd.split_records(manifest, "test")
    train_windows = wd.WindowDataset(shard, s.window, task, train_records)
    test_windows = wd.WindowDataset(shard, s.window, task, test_records) if test_records and s.eval else None
    info = {"shard_dir": str(shard), "dataset": manifest.get("dataset"), "tokenizer": manifest.tokenizer,
            "tokenizer_params": manifest.get("params"), "train_records": train_records,
            "test_records": test_records, "train_windows": len(train_windows),
            "test_windows": len(test_windows) if test_windows else 0,
            # when the launcher prepared the shards before the trainer started, prepare_s is only this
            # run's up-to-date check; this is what building them took
            "shards_built_in_s": (manifest.get("timing") or {}).get("wall_s")}
    if s.mode == "finetune":
        classes = list(manifest["beat_classes"] if s.task == "beat" else manifest["rhythm_classes"])
        counts = train_windows.class_counts()
        weights = balanced_weights(counts, len(classes)) if s.class_weights == "balanced" else None
        info["train_class_counts"] = dict(zip(classes, [int(c) for c in counts], strict=False))
        return Data(LabelledWindows(train_windows), LabelledWindows(test_windows) if test_windows else None,
                    manifest.vocab_size, classes, manifest.synthetic, prepare_s, info, weights)
    masked = MaskedWindows(train_windows, manifest.mask_id, s.mask_ratio, s.mask_span, s.seed)
    test: Dataset | None = None
    if test_windows:
        test = MaskedWindows(test_windows, manifest.mask_id, s.mask_ratio, s.mask_span, s.seed + 1)
        stride = max(1, math.ceil(len(test_windows) / FOUNDATION_EVAL_WINDOWS))
        test = Subset(test, range(0, len(test_windows), stride))  # an even sample: the loss needs no more
        info["test_windows"] = len(test)
    return Data(masked, test, manifest.vocab_size, [], manifest.synthetic, prepare_s, info)


def balanced_weights(counts: Any, n_classes: int) -> list[float]:
    """Inverse-frequency class weights with mean 1 over the training windows (absent classes: 0).

    MIT-BIH is ~90% N beats; unweighted, a classifier that always says N scores 0.9 accuracy and a
    useless macro-F1. These weights make every present class count as much as the others.
    """
    counts = [int(c) for c in counts] + [0] * (n_classes - len(counts))
    total, present = sum(counts), sum(1 for c in counts if c)
    return [total / (present * c) if c else 0.0 for c in counts]
