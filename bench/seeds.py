"""What moves S sensitivity from seed to seed? One row per finished beat fine-tune, from its result.json alone.

For each run directory given: its seed and options (`--af-group`, noise augmentation, the share of windows whose
context tokens are hidden, steps, the RR context),
the validation part's macro-F1 at each check and the step it kept, the calibration's a and rhythm gate (the
feature it reads and the threshold from which S is not called, or - for none), and on DS2 the S sensitivity, +P,
record 232's S beats found (of its 1,382: DS2's other S beats number 455), S sensitivity without 232,
macro-F1 (N, S, V, F) and which of the DS2 goal's figures (bench/quality.py's GOAL) it misses. Below the
rows: the worst and the mean of each figure, and Spearman's rank correlation of 232's S beats found with a,
with the kept step and with the best validation macro-F1: the calibration's choice, the early stop and
validation's own verdict, each a suspect the rows can clear or convict. Nothing is
trained or scored here; every figure is a result.json's or a sum over its per-record confusion matrices.

    python bench/seeds.py /tmp/hlm-quality/mixed/finetune*         # the members of a bench/quality.py run
    python bench/seeds.py /tmp/hlm-a/mixed/finetune* /tmp/hlm-b/mixed/finetune*   # several runs' members
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from scipy.stats import spearmanr

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
from quality import GOAL, S_OUTLIER, headline, read, say  # noqa: E402  (the recipe's own figures)

from runcontract.contract import RESULT_FILE  # noqa: E402

FIGURES = ["S Se", "S +P", "232 found", "S Se w/o 232", "macro-F1 NSVF"]
GOAL_KEYS = ["accuracy", "S Se", "S +P", "V Se", "macro-F1 NSVF"]  # what the DS2 goal asks of each seed
GATE_NAMES = {"af_irregularity": "irr", "af_evidence": "ev"}  # the gate column's short names of the features
SUSPECTS = {"a": "the calibration's a", "kept step": "the kept step", "val F1": "best validation macro-F1"}


def member_row(run_dir: Path) -> dict[str, Any]:
    """One fine-tune's options, validation and DS2 figures (KeyError names what its result.json lacks)."""
    result = read(run_dir / RESULT_FILE)
    train, val, ev = result["config"]["train"], result["validation"], result["eval"]
    s = ev["classes"].index("S")
    gate = (val.get("calibration") or {}).get("gate") or {}
    return {"run": f"{run_dir.parent.parent.name}/{run_dir.name}", "seed": train["seed"], "steps": train["steps"],
            "af group": bool(train.get("af_group")), "noise dB": train.get("augment_noise_db") or [],
            "hidden": train.get("context_dropout") or 0.0,
            "context": result["config"]["model"].get("context") or "none",
            "gate": f"{GATE_NAMES.get(gate['feature'], gate['feature'])}>={gate['threshold']:.2f}"
            if gate.get("threshold") is not None else "-",
            "a": (val.get("calibration") or {}).get("share"), "kept step": val["best_step"],
            "val F1": val["best_macro_f1"],
            "history": [(h["step"], h.get("judged_macro_f1", h["macro_f1"])) for h in val["history"]],
            "232 found": ev["by_record"][S_OUTLIER][s][s], **headline(ev)}


def misses(row: dict[str, Any]) -> list[str]:
    """The DS2 goal's figures (GOAL) this fine-tune falls short of, each with its value."""
    return [f"{k} {row[k]:.3f} < {GOAL[k]}" for k in GOAL_KEYS if row[k] is not None and row[k] < (GOAL[k] or 0)]


def spearman(x: list[float], y: list[float]) -> float | None:
    """Rank correlation (ties averaged); None with fewer than three rows or a constant column."""
    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    return float(spearmanr(x, y).statistic)


def report(rows: list[dict[str, Any]]) -> list[str]:
    """The table, its worst and mean rows, the suspects' correlations and each run's validation history."""
    head = (f"{'seed':>5}{'steps':>6}{'group':>6}{'noise':>8}{'hide':>6}{'context':>17}{'a':>5}{'gate':>10}{'kept':>6}"
            f"{'val F1':>8}") + "".join(
        f"{k:>14}" for k in FIGURES) + "  run, and the goal's figures it misses"
    lines = [head]
    for r in rows:
        noise = "/".join(f"{v:g}" for v in r["noise dB"]) or "-"
        lines.append(f"{r['seed']:>5}{r['steps']:>6}{'yes' if r['af group'] else 'no':>6}{noise:>8}{r['hidden']:>6g}{r['context']:>17}"
                     f"{r['a'] if r['a'] is not None else '-':>5}{r['gate']:>10}{r['kept step']:>6}{r['val F1']:8.3f}"
                     + "".join(f"{r[k]:14,}" if k == "232 found" else f"{r[k]:14.3f}" for k in FIGURES)
                     + f"  {r['run']}: {', '.join(misses(r)) or 'goal met'}")
    for name, pick in (("worst", min), ("mean", lambda v: sum(v) / len(v))):
        lines.append(f"{name:>77}" + "".join(f"{pick([r[k] for r in rows]):14.3f}" if k != "232 found"
                                              else f"{pick([r[k] for r in rows]):14,.0f}" for k in FIGURES))
    found = [float(r["232 found"]) for r in rows]
    for key, label in SUSPECTS.items():
        pairs = [(float(r[key]), f) for r, f in zip(rows, found, strict=True) if r[key] is not None]
        rho = spearman([p[0] for p in pairs], [p[1] for p in pairs])
        lines.append(f"232's S beats found against {label}: Spearman "
                     + (f"{rho:+.2f} over {len(pairs)} fine-tunes" if rho is not None else "- (too few or constant)"))
    lines.append("validation macro-F1 at each check (the kept one starred):")
    for r in rows:
        lines.append(f"  {r['run']}, seed {r['seed']}: " + " ".join(
            f"{step}:{f1:.3f}{'*' if step == r['kept step'] else ''}" for step, f1 in r["history"]))
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", type=Path, nargs="+", help="run directories of finished beat fine-tunes")
    args = ap.parse_args()
    rows = []
    for run in args.runs:
        try:
            rows.append(member_row(run))
        except FileNotFoundError:
            say(f"{run}: no {RESULT_FILE} (an unfinished run), left out of the table")
        except KeyError as missing:
            say(f"{run}/{RESULT_FILE}: no {missing} (not a calibrated beat fine-tune scored on DS2), left out")
    if not rows:
        sys.exit("no finished beat fine-tune among the run directories given")
    say("\n".join(report(rows)))


if __name__ == "__main__":
    main()
