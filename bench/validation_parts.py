"""Which patients decide the class decision? A finished fine-tune's validation part, scored per database.

The calibration (trainer.scoring.calibration) picks a and the rhythm gate on the whole validation part. When that part
mixes databases (DS1's patients and svdb's), one of them can decide for the other. This scores the run's own
validation records (or --records) from the logits before calibration, for each a and gate bin, and prints the
macro-F1 over the classes the calibration judged and S Se / +P, for the whole part and for each database (a
record's database: the part of its name before "/", mitdb for a bare name). Nothing is chosen here.

    python bench/validation_parts.py /tmp/hlm-l0/mixed/finetune --shares 0.7   # one a (about 3 min on 2 cores)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
from gate_oracle import predictions, raw_logits  # noqa: E402  (the logits and decisions: one reader)

from trainer.commands.score_database import confusion_matrix  # noqa: E402
from trainer.scoring.calibration import GATE_BINS, GATE_CLASS, SHARES  # noqa: E402
from trainer.scoring.scores import class_scores, judged_macro_f1  # noqa: E402


def database(record: str) -> str:
    return record.split("/")[0] if "/" in record else "mitdb"


def rows(run: Path, records: list[str] | None, shares: list[float]) -> list[dict]:
    """Per (a, gate bin or None) and group (all, each database): judged macro-F1, S Se, S +P."""
    logits, labels, bins, calibration, names, record_of = raw_logits(run, records or "validation")
    classes = calibration["classes"]
    groups = {"all": np.ones(len(labels), bool),
              **{db: np.array([database(names[r]) == db for r in record_of]) for db in sorted({database(x) for x in names})}}
    out = []
    for a, gate, pred in predictions(logits, bins, calibration, shares, GATE_BINS):
        for group, here in groups.items():
            sc = class_scores(confusion_matrix(labels[here], pred[here], len(classes)), classes)
            out.append({"share": a, "gate_bin": gate, "group": group, "beats": int(here.sum()),
                        "judged_macro_f1": judged_macro_f1(sc)[0], "S Se": sc["sensitivity"][GATE_CLASS],
                        "S +P": sc["ppv"][GATE_CLASS]})
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", type=Path, help="a finished, calibrated beat fine-tune")
    p.add_argument("--records", nargs="+", metavar="RECORD", help="score these records (default: its validation part)")
    p.add_argument("--shares", type=float, nargs="+", default=list(SHARES), metavar="A", help="the a values shown")
    args = p.parse_args(argv)
    found = rows(args.run, args.records, args.shares)
    print("| a | gate bin | group (beats) | macro-F1 (judged) | S Se | S +P |\n|---|---|---|---|---|---|")
    for r in found:
        fig = " | ".join("-" if r[k] is None else f"{r[k]:.3f}" for k in ("judged_macro_f1", "S Se", "S +P"))
        print(f"| {r['share']:.1f} | {'none' if r['gate_bin'] is None else r['gate_bin']} | {r['group']} "
              f"({r['beats']:,}) | {fig} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
