"""Evaluation on the test split: classification scores (fine-tune) or masked-token loss (foundation).

Each rank evaluates a disjoint stride of the test set (no padding duplicates, unlike DistributedSampler)
and the confusion matrix or loss sums are added over ranks, so the scores are exact for any world size.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Subset

from trainer.data.batches import worker_init
from trainer.model import IGNORE_INDEX
from trainer.parallelism.distributed import Dist, all_reduce_sum
from trainer.scoring.scores import class_scores

EVAL_BATCH = 512  # windows per forward pass: no activations are kept for a backward pass, so it can be large


def shard(dataset: Dataset, d: Dist) -> Subset:
    """This rank's stride of ``dataset``: every rank a disjoint share, none padded."""
    return Subset(dataset, list(range(d.rank, len(dataset), d.world)))  # type: ignore[arg-type]  # Dataset declares no __len__


@torch.inference_mode()
def classify(model: torch.nn.Module, dataset: Dataset, classes: list[str], d: Dist, batch_size: int = EVAL_BATCH,
             autocast: Any = None, workers: int = 0,
             records: tuple[np.ndarray, list[str]] | None = None) -> dict[str, Any]:
    """Confusion matrix of `model` over `dataset` (items: tokens, label), summed over ranks.

    Inference mode (no autograd state at all) and large batches: scoring is a pure forward pass, so it
    costs a fraction of a training step per window. The result says how many windows per second it took.
    With `records` (each item's record index, the record names) it also keeps one confusion matrix per
    record, `by_record`: a test split's errors usually come from a few patients, and that is what a
    reader of the overall table needs to know to trust or doubt it.
    """
    t0 = time.perf_counter()
    n = len(classes)
    groups = 1 if records is None else len(records[1])
    counts = torch.zeros(groups * n * n, dtype=torch.float64, device=d.device)
    part = shard(dataset, d)
    item_group = (torch.zeros(len(part), dtype=torch.long) if records is None
                  else torch.as_tensor(np.asarray(records[0])[part.indices], dtype=torch.long))
    loader = DataLoader(part, batch_size=max(batch_size, EVAL_BATCH), num_workers=workers, worker_init_fn=worker_init if workers else None)
    was_training = model.training
    model.eval()
    try:
        done = 0
        for tokens, labels in loader:
            group = item_group[done:done + len(labels)].to(d.device)
            done += len(labels)
            tokens, labels = tokens.to(d.device), labels.to(d.device)
            with autocast() if autocast is not None else contextlib.nullcontext():
                pred = model(tokens).argmax(dim=-1)
            keep = labels >= 0
            idx = (group[keep] * n + labels[keep]) * n + pred[keep]
            counts += torch.bincount(idx, minlength=groups * n * n).to(counts.dtype)
    finally:
        model.train(was_training)
    flat = [int(v) for v in all_reduce_sum(d, counts.tolist())]
    matrices = [[flat[(g * n + i) * n:(g * n + i + 1) * n] for i in range(n)] for g in range(groups)]
    confusion = [[sum(m[i][j] for m in matrices) for j in range(n)] for i in range(n)]
    scores = class_scores(confusion, classes)
    if records is not None:
        scores["by_record"] = dict(zip(records[1], matrices, strict=True))
    seconds = time.perf_counter() - t0
    scores.update(seconds=seconds, windows_per_s=scores["samples"] / seconds if seconds > 0 else None)
    return scores


@torch.inference_mode()
def masked_lm(model: torch.nn.Module, dataset: Dataset, d: Dist, batch_size: int, autocast: Any,
              workers: int = 0) -> dict[str, Any]:
    """Masked-token loss and accuracy over `dataset` (items: inputs, targets), summed over ranks."""
    loss_sum = correct = count = 0.0
    loader = DataLoader(shard(dataset, d), batch_size=batch_size, num_workers=workers, worker_init_fn=worker_init if workers else None)
    model.eval()
    for inputs, targets in loader:
        inputs, targets = inputs.to(d.device), targets.to(d.device)
        with autocast():
            logits = model(inputs).float()
        keep = targets != IGNORE_INDEX
        loss_sum += torch.nn.functional.cross_entropy(logits[keep], targets[keep], reduction="sum").item()
        correct += (logits[keep].argmax(-1) == targets[keep]).sum().item()
        count += keep.sum().item()
    model.train()
    loss_sum, correct, count = all_reduce_sum(d, [loss_sum, correct, count])
    return {
        "masked_tokens": int(count),
        "masked_loss": loss_sum / count if count else None,
        "masked_accuracy": correct / count if count else None,
    }


@torch.inference_mode()
def predict(model: torch.nn.Module, dataset: Dataset, device: torch.device, batch_size: int = EVAL_BATCH,
            workers: int = 0) -> np.ndarray:
    """The predicted class of every item of `dataset`, in order (one process): what `hlm-train evaluate`
    needs beyond a confusion matrix, to group the same predictions by record and by rhythm."""
    loader = DataLoader(dataset, batch_size=batch_size, num_workers=workers, worker_init_fn=worker_init if workers else None)
    was_training = model.training
    model.eval()
    try:
        out = [model(tokens.to(device)).argmax(dim=-1).cpu().numpy() for tokens, _ in loader]
    finally:
        model.train(was_training)
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)
