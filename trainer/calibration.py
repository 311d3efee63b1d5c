"""The class decision after training, chosen on the validation part: how much of the class weights' tilt to undo.

Class weights (`train.class_weights`, inverse frequency by default) make a rare class as costly to miss as a
common one, which is what lets the model learn S beats at all, but they also move every decision towards
the rare classes: on the test split that shows as S found well (sensitivity) and called far too often
(+P). Bayes' rule says by how much: a model trained with weight w_c on class c scores log w_c too high for
it, and subtracting a x log w_c moves the decision from the weighted (a = 0) to the unweighted one (a = 1).
Which a serves macro-F1 best is a question for patients the model never trained on: the validation part
(patient-disjoint, never the test split) answers it, once, after the best weights are restored. The shift
goes into the class head's bias, so model.pt, `hlm-train evaluate` and ensembles carry it without knowing.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset

from trainer.distributed import Dist, all_reduce_sum
from trainer.evaluate import EVAL_BATCH, shard
from trainer.scores import class_scores

log = logging.getLogger("hlm.train")

SHARES = tuple(i / 10 for i in range(11))  # the values of a tried: 0, 0.1, ... 1


@torch.inference_mode()
def confusions(model: torch.nn.Module, dataset: Dataset, classes: list[str], d: Dist, shifts: torch.Tensor,
               autocast: Any = None) -> list[list[list[int]]]:
    """One confusion matrix per row of ``shifts`` ([k, classes], added to the logits), from one forward pass
    over ``dataset``; every rank scores a stride and the counts are summed."""
    n, k = len(classes), len(shifts)
    counts = torch.zeros(k * n * n, dtype=torch.float64, device=d.device)
    shifts = shifts.to(d.device)
    was_training = model.training
    model.eval()
    try:
        for tokens, labels in DataLoader(shard(dataset, d), batch_size=EVAL_BATCH):
            tokens, labels = tokens.to(d.device), labels.to(d.device)
            with autocast() if autocast is not None else contextlib.nullcontext():
                logits = model(tokens).float()
            keep = labels >= 0
            pred = (logits[keep].unsqueeze(0) + shifts.unsqueeze(1)).argmax(dim=-1)  # [k, items]
            idx = (torch.arange(k, device=d.device).unsqueeze(1) * n + labels[keep]) * n + pred
            counts += torch.bincount(idx.flatten(), minlength=k * n * n).to(counts.dtype)
    finally:
        model.train(was_training)
    flat = [int(v) for v in all_reduce_sum(d, counts.tolist())]
    return [[flat[(j * n + i) * n:(j * n + i + 1) * n] for i in range(n)] for j in range(k)]


def calibrate(model: torch.nn.Module, head: torch.nn.Linear, class_weight: torch.Tensor, dataset: Dataset,
              classes: list[str], d: Dist, autocast: Any = None) -> dict[str, Any]:
    """Try every a of SHARES on the validation part, keep the best macro-F1 (the smallest a on a tie: the
    least change), move ``head``'s bias by -a x log(class weight). Returns result.json's `calibration`."""
    log_w = torch.log(class_weight.float().cpu())
    shifts = torch.stack([-a * log_w for a in SHARES])
    tried = [{"share": a, **_figures(class_scores(m, classes))}
             for a, m in zip(SHARES, confusions(model, dataset, classes, d, shifts, autocast), strict=True)]
    best = max(tried, key=lambda r: (r["macro_f1"], -r["share"]))
    with torch.no_grad():
        head.bias.sub_((best["share"] * log_w).to(head.bias.device, head.bias.dtype))
    if d.is_main:
        log.info("calibration: class head bias moved by -%.1f x log(class weight) (validation macro-F1 %.4f at "
                 "0, %.4f kept)", best["share"], tried[0]["macro_f1"], best["macro_f1"])
    return {"share": best["share"], "bias_shift": [-best["share"] * float(v) for v in log_w],
            "class_weight": [float(v) for v in class_weight.cpu()], "classes": classes, "tried": tried}


def _figures(scores: dict[str, Any]) -> dict[str, Any]:
    return {"macro_f1": scores["macro_f1"] or 0.0, "accuracy": scores["accuracy"],
            "sensitivity": scores["sensitivity"], "ppv": scores["ppv"]}
