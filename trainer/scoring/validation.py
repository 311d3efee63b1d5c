"""Fine-tune validation during training: score a patient-disjoint part of the training split, keep the
best weights, stop when it stops improving.

Choosing the number of steps (or anything else) on the test split would report a tuned number as if it
were unseen; the validation part holds out whole patients of the training split instead, so it asks the
same question the test split asks (does it work on patients it never saw?). Every rank scores a stride
of the validation windows and the confusion matrices are summed, so all ranks see the same score and
take the same decision. The time it takes is outside T (train.py moves T's start by it) and is recorded
beside T as `timing.val_s`.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import torch

from trainer.config_keys import sensitivity_floors
from trainer.parallelism.distributed import Dist
from trainer.scoring import calibration
from trainer.scoring.evaluate import classify
from trainer.scoring.scores import judged_macro_f1

log = logging.getLogger("hlm.train")


class Validator:
    """Validation schedule, best-weights keeping and early stopping for one run (inactive without a
    validation part)."""

    def __init__(self, s: Any, data: Any, d: Dist, autocast: Any, state: dict[str, Any] | None) -> None:
        self.s, self.data, self.d, self.autocast = s, data, d, autocast
        self.enabled = bool(data.classes) and data.val is not None
        self.best_state: dict[str, torch.Tensor] | None = (state or {}).get("best_model")
        self.calibration: dict[str, Any] | None = None  # train.calibrate: what calibrate() chose
        self.judged: list[str] | None = None  # the classes the validation part holds enough of (scores.judged_macro_f1)
        self.floors = sensitivity_floors(s.train.calibrate_min_sensitivity or [])
        if self.enabled and s.train.calibrate:
            calibration.check_floors(self.floors, data.classes)

    def due(self, step: int, total: int) -> bool:
        """Validate every `val_every` steps and after the last step."""
        return self.enabled and (step % self.s.train.val_every == 0 or step == total)

    def run(self, model: torch.nn.Module, prog: Any) -> float:
        """Score the validation part, remember the best weights; returns the seconds it took."""
        t0 = time.perf_counter()
        scores = classify(model, self.data.val, self.data.classes, self.d, self.s.axes.batch_size, self.autocast)
        score, self.judged = judged_macro_f1(scores)
        best = max((v.get("judged_macro_f1", v["macro_f1"]) for v in prog.validations), default=-1.0)  # older: all
        if score > best:
            prog.best_step = prog.step
            self.best_state = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
        seconds = time.perf_counter() - t0
        prog.val_s += seconds
        prog.validations.append({"step": prog.step, "judged_macro_f1": score, "macro_f1": scores["macro_f1"] or 0.0,
                                 "accuracy": scores["accuracy"], "sensitivity": scores["sensitivity"],
                                 "seconds": seconds})
        if self.d.is_main:
            log.info("validation at step %d: macro-F1 %.4f over %s, accuracy %.4f on %d windows in %.1f s (outside "
                     "T)%s", prog.step, score, ",".join(self.judged), scores["accuracy"] or 0.0, scores["samples"], seconds,
                     " - best so far" if prog.best_step == prog.step else "")
        return seconds

    def should_stop(self, prog: Any) -> bool:
        """True after `patience` validations in a row without a better judged macro-F1 (never with patience 0)."""
        if not self.enabled or not self.s.train.patience:
            return False
        since = sum(1 for v in prog.validations if v["step"] > prog.best_step)
        return since >= self.s.train.patience

    def restore_best(self, model: torch.nn.Module, prog: Any) -> None:
        """Load the best validated weights (they are what model.pt keeps and the test split scores)."""
        if not self.enabled or self.best_state is None or prog.best_step == prog.step:
            return
        model.load_state_dict(self.best_state)
        if self.d.is_main:
            log.info("keeping the weights of step %d (best validation macro-F1), not those of the last step %d",
                     prog.best_step, prog.step)

    def calibrate(self, model: torch.nn.Module, prog: Any) -> None:
        """train.calibrate: after the best weights are back, choose on the validation part how much of the
        class weights' tilt the class head keeps (trainer.scoring.calibration); its seconds count in val_s."""
        if not (self.enabled and self.s.train.calibrate):
            return
        t0 = time.perf_counter()
        weight = getattr(model, "class_weight", None)
        head = getattr(model, "head", None)
        if weight is None or not isinstance(head, torch.nn.Linear):
            raise ValueError("train.calibrate: the model has no class weights or no class head to calibrate")
        self.calibration = calibration.calibrate(model, head, weight, self.data.val, self.data.classes, self.d,
                                                 self.autocast, self.floors)
        self.calibration["seconds"] = time.perf_counter() - t0
        prog.val_s += self.calibration["seconds"]

    def summary(self, prog: Any, stopped_early: bool) -> dict[str, Any]:
        """result.json's `validation`: records, schedule, history, the kept step."""
        best = next((v for v in prog.validations if v["step"] == prog.best_step), None)
        return {"records": self.data.info.get("val_records"), "windows": self.data.info.get("val_windows"),
                "scored_windows": len(self.data.val) if self.data.val is not None else 0,
                "every": self.s.train.val_every, "patience": self.s.train.patience, "history": prog.validations,
                "judged_classes": self.judged, "best_step": prog.best_step,
                "best_macro_f1": best.get("judged_macro_f1", best["macro_f1"]) if best else None,
                "stopped_early": stopped_early, "seconds": prog.val_s, "calibration": self.calibration}
