"""The class decision after training, chosen on the validation part: how much of the class weights' tilt to undo.

Class weights (`train.class_weights`, inverse frequency by default) make a rare class as costly to miss as a
common one, which is what lets the model learn S beats at all, but they also move every decision towards
the rare classes: on the test split that shows as S found well (sensitivity) and called far too often
(+P). Bayes' rule says by how much: a model trained with weight w_c on class c scores log w_c too high for
it, and subtracting a x log w_c moves the decision from the weighted (a = 0) to the unweighted one (a = 1).
Which a serves macro-F1 best is a question for patients the model never trained on: the validation part
(patient-disjoint, never the test split) answers it, once, after the best weights are restored. It can only
answer for the classes it holds enough of (scores.judged_macro_f1): a class it holds a handful of (F and Q in
mitdb DS1 + svdb's validation patients) keeps its tilt, since undoing it there would be chosen on nothing. The
shift goes into the class head's bias, so model.pt, `hlm-train evaluate` and ensembles carry it without knowing.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset

from trainer.distributed import Dist, all_reduce_sum
from trainer.evaluate import EVAL_BATCH, shard
from trainer.scores import class_scores, judged_macro_f1

log = logging.getLogger("hlm.train")

SHARES = tuple(i / 10 for i in range(11))  # the values of a tried: 0, 0.1, ... 1


@torch.inference_mode()
def scored(model: torch.nn.Module, dataset: Dataset, d: Dist, autocast: Any = None) -> tuple[torch.Tensor, torch.Tensor]:
    """This rank's stride of ``dataset``: the logits and the labels (ignored ones left out), one forward pass."""
    logits, labels = [], []
    was_training = model.training
    model.eval()
    try:
        for tokens, label in DataLoader(shard(dataset, d), batch_size=EVAL_BATCH):
            tokens, label = tokens.to(d.device), label.to(d.device)
            with autocast() if autocast is not None else contextlib.nullcontext():
                out = model(tokens).float()
            keep = label >= 0
            logits.append(out[keep])
            labels.append(label[keep])
    finally:
        model.train(was_training)
    if not logits:
        return torch.zeros(0, 0, device=d.device), torch.zeros(0, dtype=torch.long, device=d.device)
    return torch.cat(logits), torch.cat(labels)


def confusions(logits: torch.Tensor, labels: torch.Tensor, n: int, d: Dist,
               shifts: torch.Tensor) -> list[list[list[int]]]:
    """One confusion matrix per row of ``shifts`` ([k, n], added to the logits), summed over the ranks."""
    k = len(shifts)
    counts = torch.zeros(k * n * n, dtype=torch.float64, device=d.device)
    if len(labels):
        pred = (logits.unsqueeze(0) + shifts.to(logits.device).unsqueeze(1)).argmax(dim=-1)  # [k, items]
        idx = (torch.arange(k, device=logits.device).unsqueeze(1) * n + labels) * n + pred
        counts += torch.bincount(idx.flatten(), minlength=k * n * n).to(counts.dtype)
    flat = [int(v) for v in all_reduce_sum(d, counts.tolist())]
    return [[flat[(j * n + i) * n:(j * n + i + 1) * n] for i in range(n)] for j in range(k)]


def calibrate(model: torch.nn.Module, head: torch.nn.Linear, class_weight: torch.Tensor, dataset: Dataset,
              classes: list[str], d: Dist, autocast: Any = None) -> dict[str, Any]:
    """Try every a of SHARES on the validation part, keep the best macro-F1 over the classes it judges (the
    smallest a on a tie: the least change), move ``head``'s bias by -a x log(class weight) for those classes
    only. Returns result.json's `calibration`."""
    logits, labels = scored(model, dataset, d, autocast)
    n = len(classes)
    judged = judged_macro_f1(class_scores(confusions(logits, labels, n, d, torch.zeros(1, n))[0], classes))[1]
    log_w = torch.log(class_weight.float().cpu()) * torch.tensor([float(c in judged) for c in classes])
    shifts = torch.stack([-a * log_w for a in SHARES])
    tried = [{"share": a, **_figures(class_scores(m, classes))}
             for a, m in zip(SHARES, confusions(logits, labels, n, d, shifts), strict=True)]
    best = max(tried, key=lambda r: (r["judged_macro_f1"], -r["share"]))
    with torch.no_grad():
        head.bias.sub_((best["share"] * log_w).to(head.bias.device, head.bias.dtype))
    if d.is_main:
        log.info("calibration: class head bias moved by -%.1f x log(class weight) (validation macro-F1 %.4f at "
                 "0, %.4f kept; classes %s)", best["share"], tried[0]["judged_macro_f1"], best["judged_macro_f1"],
                 ",".join(judged))
    return {"share": best["share"], "bias_shift": [0.0 - best["share"] * float(v) for v in log_w],
            "class_weight": [float(v) for v in class_weight.cpu()], "classes": classes, "judged_classes": judged,
            "tried": tried}


def _figures(scores: dict[str, Any]) -> dict[str, Any]:
    return {"judged_macro_f1": judged_macro_f1(scores)[0], "macro_f1": scores["macro_f1"] or 0.0,
            "accuracy": scores["accuracy"], "sensitivity": scores["sensitivity"], "ppv": scores["ppv"]}
