"""The class decision after training, chosen on the validation part: how much of the class weights' tilt to
undo, and where the rhythm says an S call is no S beat.

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

The rhythm gate (context `rr_af` or `rr_af_lock`): in atrial fibrillation every beat comes early against its
neighbours, so a model that learned "early means S" calls the fibrillation's N beats S, with confidence (no share
of the tilt undoes it). Where the context's gate feature (rr_context.gate_feature: the irregularity that no
repeating pattern explains, or with `rr_af_lock` that irregularity where no P wave keeps time) is at or above a
threshold, S is not called; which threshold, or none, is chosen with a. The gate goes into the
model's configuration (ModelConfig.gate), which model.pt carries like the bias.

The validation part is 20 patients or so, and one of them can hold most of its S beats: the decision that
wins on them is partly the luck of that draw, and it moved one fine-tune's S sensitivity on the test split
from 0.43 to 0.91 between seeds. So each candidate is judged by its mean macro-F1 over BOOTSTRAP resamples
of the validation records (drawn with replacement, one fixed draw for every run), which rewards a decision
that holds for most subsets of the patients over one that wins on the whole part by a few beats.

Macro-F1 weighs a class's false alarms as much as its misses, and a decision that trades S sensitivity for S +P
can win it. Where a sensitivity is a requirement rather than a preference (a goal of S Se >= 0.80, say),
`train.calibrate_min_sensitivity` states it: the best macro-F1 is then taken among the decisions whose
validation sensitivity reaches every floor, and when none does, the one nearest them (`choose`).
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import replace
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Subset

from trainer.data import rr_context
from trainer.model import GATED_LOGIT
from trainer.parallelism.distributed import Dist, all_reduce_sum
from trainer.scoring.evaluate import EVAL_BATCH, shard
from trainer.scoring.scores import class_scores, judged_macro_f1

log = logging.getLogger("hlm.train")

SHARES = tuple(i / 10 for i in range(11))  # the values of a tried: 0, 0.1, ... 1
GATE_BINS = (12, 14, 16, 18, 20, 22, 24)  # the gate thresholds tried: these bins' floors, 0.056 to 0.32
GATE_CLASS = "S"
BOOTSTRAP = 200  # resamples of the validation records each candidate is judged over
BOOTSTRAP_SEED = 0  # the same draw for every run, whatever its training seed


@torch.inference_mode()
def scored(model: torch.nn.Module, dataset: Dataset, d: Dist, autocast: Any = None,
           column: int | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """This rank's stride of ``dataset`` in one forward pass: the logits and labels of its labelled items, the
    token at position ``column`` of each (zeros without one), and which of the stride's items were kept."""
    logits, labels, tokens_at, kept = [], [], [], []
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
            tokens_at.append(tokens[keep, column] if column is not None else torch.zeros_like(label[keep]))
            kept.append(keep)
    finally:
        model.train(was_training)
    if not logits:
        none = torch.zeros(0, dtype=torch.long, device=d.device)
        return torch.zeros(0, 0, device=d.device), none, none, none.bool()
    return torch.cat(logits), torch.cat(labels), torch.cat(tokens_at), torch.cat(kept)


def confusions(logits: torch.Tensor, labels: torch.Tensor, n: int, d: Dist, shifts: torch.Tensor,
               units: torch.Tensor | None = None, n_units: int = 1) -> np.ndarray:
    """Confusion matrices [shifts, units, n, n] (row of ``shifts`` [k, n] added to the logits; ``units``: each
    item's record index, None = one unit), summed over the ranks."""
    k = len(shifts)
    counts = torch.zeros(k * n_units * n * n, dtype=torch.float64, device=d.device)
    if len(labels):
        unit = units if units is not None else torch.zeros_like(labels)
        pred = (logits.unsqueeze(0) + shifts.to(logits.device).unsqueeze(1)).argmax(dim=-1)  # [k, items]
        shift_of = torch.arange(k, device=logits.device).unsqueeze(1)
        idx = ((shift_of * n_units + unit) * n + labels) * n + pred
        counts += torch.bincount(idx.flatten(), minlength=k * n_units * n * n).to(counts.dtype)
    return np.asarray(all_reduce_sum(d, counts.tolist()), dtype=np.int64).reshape(k, n_units, n, n)


def bootstrap_macro_f1(mats: np.ndarray, judged: list[int]) -> np.ndarray:
    """Per candidate, the mean over BOOTSTRAP resamples of the records of the macro-F1 over the `judged` class
    indices (mats: [candidates, records, n, n]); a class a resample holds none of, and never calls, is left out."""
    draw = np.random.default_rng(BOOTSTRAP_SEED).integers(0, mats.shape[1], size=(BOOTSTRAP, mats.shape[1]))
    weights = np.stack([np.bincount(row, minlength=mats.shape[1]) for row in draw]).astype(np.float64)
    pooled = np.einsum("br,krij->kbij", weights, mats.astype(np.float64))  # [candidates, resamples, n, n]
    tp = np.stack([pooled[..., c, c] for c in judged], axis=-1)
    actual = np.stack([pooled[..., c, :].sum(-1) for c in judged], axis=-1)
    called = np.stack([pooled[..., :, c].sum(-1) for c in judged], axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(actual + called > 0, 2 * tp / (actual + called), np.nan)
    return np.nanmean(np.nanmean(f1, axis=2), axis=1)


def check_floors(floors: dict[str, float] | None, classes: list[str]) -> None:
    """Refuse a floor for a class this run does not have (before training, so no time is spent on it)."""
    if unknown := sorted(set(floors or {}) - set(classes)):
        raise ValueError(f"train.calibrate_min_sensitivity: no class {', '.join(unknown)} among this run's classes "
                         f"{', '.join(classes)}")


def shortfall(row: dict[str, Any], floors: dict[str, float]) -> float:
    """How far a candidate's validation sensitivity falls below the floors, at its worst class (<= 0: all met; a
    class the validation part holds no beat of falls short by its whole floor)."""
    return max(floor - (row["sensitivity"].get(c) or 0.0) for c, floor in floors.items())


def choose(tried: list[dict[str, Any]], floors: dict[str, float] | None = None) -> tuple[dict[str, Any], bool]:
    """The decision kept among the candidates `calibrate` tried, and whether it meets the sensitivity floors: the
    best mean bootstrap macro-F1 (on a tie the least change: no gate, then the highest threshold, then the smallest
    a) among those reaching every floor; when none does, the smallest shortfall, then the same order."""
    rank: dict[int | None, int] = {None: len(GATE_BINS), **{b: i for i, b in enumerate(GATE_BINS)}}  # less change: higher

    def order(r: dict[str, Any]) -> tuple[float, int, float]:
        return round(r["bootstrap_macro_f1"], 6), rank[r["gate_bin"]], -r["share"]

    if not floors:
        return max(tried, key=order), True
    meeting = [r for r in tried if shortfall(r, floors) <= 0]
    if meeting:
        return max(meeting, key=order), True
    return max(tried, key=lambda r: (-round(shortfall(r, floors), 6), *order(r))), False


def calibrate(model: torch.nn.Module, head: torch.nn.Linear, class_weight: torch.Tensor, dataset: Dataset,
              classes: list[str], d: Dist, autocast: Any = None,
              floors: dict[str, float] | None = None) -> dict[str, Any]:
    """Try every a of SHARES, with each gate of GATE_BINS where the context has the gate's feature (and without
    one), on the validation part; keep the one `choose` picks (the best mean macro-F1 over BOOTSTRAP resamples of
    its records, among those whose sensitivity reaches ``floors``); move ``head``'s bias by -a x log(class weight)
    for the judged classes and set the gate in the model's configuration. Returns result.json's `calibration`."""
    check_floors(floors, classes)
    windows, indices = unwrapped(dataset)
    feature = rr_context.gate_feature(windows.context) if windows is not None else None
    site = (rr_context.feature_site(windows.context, feature, windows.manifest.vocab_size)
            if windows is not None and feature is not None and GATE_CLASS in classes else None)
    logits, labels, at, kept = scored(model, dataset, d, autocast, site[0] if site else None)
    if windows is not None:  # the records the bootstrap draws
        record_of, names = windows.item_records()
        items = torch.as_tensor(np.asarray(indices)[d.rank::d.world], device=kept.device)[kept]
        units = torch.as_tensor(record_of, device=kept.device)[items].long()
    else:  # a validation part that does not say its records: one unit, the bootstrap then the whole part
        names, units = ["all"], torch.zeros_like(labels)
    n = len(classes)
    plain = confusions(logits, labels, n, d, torch.zeros(1, n))[0, 0].tolist()
    judged = judged_macro_f1(class_scores(plain, classes))[1]
    log_w = tilt(class_weight, classes, judged)
    shifts = torch.stack([-a * log_w for a in SHARES])
    gates: list[int | None] = [None, *(GATE_BINS if site else ())]
    tried = []
    for gate in gates:
        shut = logits.clone()
        if gate is not None and site is not None:
            shut[at >= site[1] + gate, classes.index(GATE_CLASS)] = GATED_LOGIT
        mats = confusions(shut, labels, n, d, shifts, units, len(names))
        resampled = bootstrap_macro_f1(mats, [classes.index(c) for c in judged])
        for a, per_record, mean in zip(SHARES, mats, resampled, strict=True):
            tried.append({"share": a, "gate_bin": gate, "bootstrap_macro_f1": float(mean),
                          **_figures(class_scores(per_record.sum(axis=0).tolist(), classes))})
    best, met = choose(tried, floors)
    if floors and d.is_main:
        log.log(logging.INFO if met else logging.WARNING, "calibration: %s sensitivity floors %s on the validation "
                "part: %s", "meets the" if met else "no decision meets the", ", ".join(f"{c} >= {f:g}" for c, f in
                floors.items()), ", ".join(f"{c} {best['sensitivity'].get(c) or 0.0:.3f}" for c in floors)
                + ("" if met else f" (the nearest: {shortfall(best, floors):.3f} short at its worst class)"))
    with torch.no_grad():
        head.bias.sub_((best["share"] * log_w).to(head.bias.device, head.bias.dtype))
    gate_cfg = None
    if best["gate_bin"] is not None and site is not None:
        gate_cfg = [site[0], site[1] + best["gate_bin"], classes.index(GATE_CLASS)]
        model.cfg = replace(model.cfg, gate=gate_cfg)  # type: ignore[type-var]  # HeartLanguageModel's ModelConfig
    threshold = (rr_context.bin_floor(windows.context, feature, best["gate_bin"])
                 if best["gate_bin"] is not None and feature is not None else None)
    if d.is_main:
        log.info("calibration: class head bias moved by -%.1f x log(class weight), %s (validation macro-F1 over %d "
                 "resamples of %d records %.4f, of the whole part %.4f; at a = 0 without a gate %.4f; classes %s)",
                 best["share"], f"{GATE_CLASS} not called at {feature} >= {threshold:.3f}"
                 if threshold is not None else "no rhythm gate", BOOTSTRAP, len(names), best["bootstrap_macro_f1"],
                 best["judged_macro_f1"], tried[0]["judged_macro_f1"], ",".join(judged))
    return {"share": best["share"], "bias_shift": [0.0 - best["share"] * float(v) for v in log_w],
            "class_weight": [float(v) for v in class_weight.cpu()], "classes": classes, "judged_classes": judged,
            "gate": {"feature": feature, "threshold": threshold, "bin": best["gate_bin"],
                     "class": GATE_CLASS, "model_gate": gate_cfg} if site else None,
            "bootstrap": {"resamples": BOOTSTRAP, "seed": BOOTSTRAP_SEED, "records": names},
            "floors": {"min_sensitivity": floors, "met": met} if floors else None,
            "tried": tried}


def tilt(class_weight: torch.Tensor, classes: list[str], judged: list[str]) -> torch.Tensor:
    """log(class weight) of each judged class, 0 elsewhere: what a = 1 undoes. Only the classes' own weights
    (train.af_group's further group is no class: its tilt is not undone); a class the training part lacks has
    weight 0 and no tilt to undo (its log would turn the whole column NaN, and NaN wins every argmax)."""
    weight = class_weight[:len(classes)].float().cpu()
    tilted = torch.tensor([c in judged for c in classes]) & (weight > 0)
    return torch.where(tilted, torch.log(weight.clamp(min=1e-30)), torch.zeros(len(classes)))


def unwrapped(dataset: Any) -> tuple[Any, list[int]]:
    """The WindowDataset under the validation part's wrappers (Subset, LabelledWindows) and each item's index in
    it; (None, []) when there is none under them."""
    if isinstance(dataset, Subset):
        windows, inner = unwrapped(dataset.dataset)
        return windows, [inner[i] for i in dataset.indices] if windows is not None else []
    if hasattr(dataset, "item_records"):
        return dataset, list(range(len(dataset)))
    below = getattr(dataset, "windows", None)
    return unwrapped(below) if below is not None else (None, [])


def _figures(scores: dict[str, Any]) -> dict[str, Any]:
    return {"judged_macro_f1": judged_macro_f1(scores)[0], "macro_f1": scores["macro_f1"] or 0.0,
            "accuracy": scores["accuracy"], "sensitivity": scores["sensitivity"], "ppv": scores["ppv"]}
