"""How far can the class decision alone go on the test split? A ceiling, never a choice.

A finished fine-tune's calibration (trainer.scoring.calibration) chose, on its validation patients, how much of the class
weights' tilt to undo (a) and where the rhythm gate stops S calls. This asks the test split the question
validation could not: over every a of the calibration's SHARES and every gate bin of the context's gate feature
(and no gate), which decisions meet the DS2 goal (bench/quality.py's GOAL), and what is the best S +P at S Se >= the
goal's? If no decision of one trained model meets the goal, a better validation part cannot either: the model
itself must change. If some do, the question is why validation did not pick one. The run's own choice is shown
beside the ceiling, recomputed here from the same logits, so the two are comparable, and so is the choice the
same validation figures give under the goal's sensitivity floors (`train.calibrate_min_sensitivity` S=0.8 V=0.9,
trainer.scoring.calibration.choose over the run's recorded candidates).

Nothing here feeds back into a run: the test split chooses nothing the recipe uses.

    python bench/gate_oracle.py /tmp/hlm-r0/mixed/finetune            # one fine-tune (about 2 min on 2 cores)
    python bench/gate_oracle.py RUN [RUN ...] --out oracle.json        # several, and the table kept as JSON
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
from quality import GOAL  # noqa: E402  (the bench's one goal)

from runcontract.contract import RESULT_FILE  # noqa: E402
from trainer.commands.ensemble import load_member, member_settings  # noqa: E402
from trainer.commands.score_database import confusion_matrix  # noqa: E402
from trainer.data import rr_context  # noqa: E402
from trainer.data.dataset import WindowDataset  # noqa: E402
from trainer.model import GATED_LOGIT  # noqa: E402
from trainer.scoring.calibration import GATE_CLASS, SHARES, choose, tilt  # noqa: E402
from trainer.scoring.evaluate import EVAL_BATCH  # noqa: E402
from trainer.scoring.scores import class_scores  # noqa: E402

FIGURES = ("accuracy", "S Se", "S +P", "V Se", "macro-F1 NSVF")  # the goal's, in the table's order (None: "-")
FLOORS = {"S": GOAL["S Se"], "V": GOAL["V Se"]}  # the goal's sensitivities, as train.calibrate_min_sensitivity takes them
GATE_SWEEP = tuple(range(4, rr_context.RR_BINS))  # every bin from 4 up (lower ones block sinus rhythm's beats)


@torch.inference_mode()
def raw_logits(run: Path, records: list[str] | str = "test") -> tuple[np.ndarray, np.ndarray, np.ndarray | None,
                                                                       dict[str, Any], list[str], np.ndarray]:
    """The logits before the run's calibration (gate off, bias shift undone) of its test split ("test"), its
    validation part ("validation") or the named records; labels, the gate feature's bin per window (None without
    one), the run's calibration, the record names and each window's index into them."""
    s, result = member_settings(run)
    calibration = (result.get("validation") or {}).get("calibration")
    if not calibration:
        raise SystemExit(f"{run / RESULT_FILE}: no calibration (train.calibrate was off): nothing to compare")
    data = result["data"]
    chosen = {"test": data["test_records"], "validation": data["val_records"]}.get(records, records) \
        if isinstance(records, str) else records
    windows = WindowDataset(Path(data["shard_dir"]), s.axes.window, "beat", chosen,
                            context=s.model.context, waveform=s.model.waveform)
    model = load_member(run, torch.device("cpu"))
    model.cfg = replace(model.cfg, gate=None)
    with torch.no_grad():
        model.head.bias.sub_(torch.tensor(calibration["bias_shift"], dtype=model.head.bias.dtype))
    feature = rr_context.gate_feature(s.model.context)
    site = rr_context.feature_site(s.model.context, feature, windows.manifest.vocab_size) if feature else None
    logits, labels, bins = [], [], []
    for tokens, label in DataLoader(windows, batch_size=EVAL_BATCH):
        logits.append(model(tokens).float().numpy())
        labels.append(label.numpy())
        if site is not None:
            bins.append((tokens[:, site[0]] - site[1]).numpy())
    record_of, names = windows.item_records()
    labelled = np.concatenate(labels) >= 0  # a beat without an AAMI class is scored by no decision
    return (np.concatenate(logits)[labelled], np.concatenate(labels)[labelled],
            np.concatenate(bins)[labelled] if bins else None,
            {**calibration, "context": s.model.context, "feature": feature}, names, np.asarray(record_of)[labelled])


def predictions(logits: np.ndarray, bins: np.ndarray | None, calibration: dict[str, Any], shares: Iterable[float],
                gates: Iterable[int]) -> Iterator[tuple[float, int | None, np.ndarray]]:
    """(a, gate bin or None, each window's class) for every a of `shares` with no gate and with each of `gates`
    (none without a gate feature): the calibration's decision, as trainer.scoring.calibration applies it."""
    classes = calibration["classes"]
    log_w = tilt(torch.tensor(calibration["class_weight"]), classes, calibration["judged_classes"]).double().numpy()
    for gate in (None, *(gates if bins is not None else ())):
        shut = logits.copy()
        if gate is not None:
            shut[bins >= gate, classes.index(GATE_CLASS)] = GATED_LOGIT
        for a in shares:
            yield a, gate, (shut - a * log_w).argmax(axis=1)


def decisions(logits: np.ndarray, labels: np.ndarray, bins: np.ndarray | None, calibration: dict[str, Any]
              ) -> list[dict[str, Any]]:
    """The figures for every (a, gate bin) the sweep tries (gate None: no gate)."""
    classes = calibration["classes"]
    out = []
    for a, gate, pred in predictions(logits, bins, calibration, SHARES, GATE_SWEEP):
        sc = class_scores(confusion_matrix(labels, pred, len(classes)), classes)
        figures = {"accuracy": sc["accuracy"], "S Se": sc["sensitivity"]["S"], "S +P": sc["ppv"]["S"],
                   "V Se": sc["sensitivity"]["V"], "macro-F1 NSVF": sc["macro_f1_nsvf"]}
        out.append({"share": a, "gate_bin": gate, **{k: figures[k] for k in FIGURES}})
    return out


def meets(row: dict[str, Any]) -> bool:
    return all(row[k] is not None and row[k] >= v for k, v in GOAL.items() if k in row and v is not None)


def summary(run: Path) -> dict[str, Any]:
    logits, labels, bins, calibration, _, _ = raw_logits(run)
    rows = decisions(logits, labels, bins, calibration)
    at = {(r["share"], r["gate_bin"]): r for r in rows}
    chosen = at[(calibration["share"], (calibration.get("gate") or {}).get("bin"))]
    floored, met = choose(calibration["tried"], FLOORS)  # what the floors would have kept, from the same validation
    floor = [r for r in rows if r["S Se"] is not None and r["S Se"] >= GOAL["S Se"]]
    return {"run": str(run), "context": calibration["context"], "feature": calibration["feature"],
            "chosen": chosen, "chosen_with_floors": {**at[(floored["share"], floored["gate_bin"])], "floors_met": met},
            "best_ppv_at_se_floor": max(floor, key=lambda r: r["S +P"]) if floor else None,
            "best_macro_f1": max(rows, key=lambda r: r["macro-F1 NSVF"] or 0.0),
            "meeting_goal": [r for r in rows if meets(r)], "tried": len(rows),
            "gate_floor": {b: rr_context.bin_floor(calibration["context"], calibration["feature"], b)
                           for b in GATE_SWEEP} if calibration["feature"] else {}}


def line(name: str, row: dict[str, Any] | None, floor: dict[int, float]) -> str:
    if row is None:
        return f"| {name} | none | | | | | |"
    gate = "none" if row["gate_bin"] is None else f">= {floor[row['gate_bin']]:.3f} (bin {row['gate_bin']})"
    figures = " | ".join("-" if row[k] is None else f"{row[k]:.3f}" for k in FIGURES)
    return f"| {name} | a = {row['share']:.1f}, gate {gate} | {figures} |"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="finished, calibrated beat fine-tunes")
    p.add_argument("--out", type=Path, help="also write the summaries as JSON here")
    args = p.parse_args(argv)
    found = []
    print(f"| run: decision | (a, gate) | {' | '.join(FIGURES)} |\n|---|---|{'---|' * len(FIGURES)}")
    for run in args.runs:
        got = summary(run)
        found.append(got)
        floors = ", ".join(f"{c} >= {f:g}" for c, f in FLOORS.items())
        met = "" if got["chosen_with_floors"]["floors_met"] else ", none met: the nearest"
        for name, row in (("validation's choice", got["chosen"]),
                          (f"validation's choice with sensitivity floors {floors}{met}", got["chosen_with_floors"]),
                          ("best S +P at S Se >= goal", got["best_ppv_at_se_floor"]),
                          ("best macro-F1", got["best_macro_f1"])):
            print(line(f"{run}: {name}", row, got["gate_floor"]))
        print(f"| {run}: decisions meeting the goal | {len(got['meeting_goal'])} of {got['tried']} | | | | | |")
    if args.out:
        args.out.write_text(json.dumps(found, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
