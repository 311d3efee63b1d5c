"""Does the Heart Language Model learn? The documented recipe end to end on MIT-BIH, scored on DS2.

Runs, through the project's own CLI (`python -m trainer prepare|train|ensemble`), one process with 2 threads:
  1. prepare mitdb (samples tokenizer, 180 Hz, baseline wander removed by a 0.5 Hz high-pass);
  2. foundation: masked-token training on the DS1 records' ECG (no labels), RR context tokens included,
     each window as its difference from the patient's template beat;
  3. fine-tunes: AAMI beat classes on DS1 minus a patient-disjoint validation part (early stopping and
     the kept weights are chosen there), one per seed (--members, default 5), each scoring DS2 once;
  4. the recipe's result: `hlm-train ensemble` over those fine-tunes (the mean of their probabilities) on
     DS2, beside each fine-tune alone and their spread;
  5. ablations: the first fine-tune from random weights (same steps, same seed), and that again on the
     tokenized windows themselves instead of their difference from the template;
  6. the same recipe with one fine-tune on the annotation-only sddb (beats tokenizer, patient-disjoint
     split) beside the majority-class baseline.
It prints the DS2 confusion matrix and per-class Se/+P/F1 beside the published inter-patient results,
the time of each phase and the load average (the machine may be shared). Nothing is tuned on DS2.

    python bench/quality.py                       # the recipe (32 min), its ablations and sddb: about 45 min
    python bench/quality.py --quick               # the same commands with few steps (a smoke test)
    python bench/quality.py --members 1           # one fine-tune instead of an ensemble
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from cockpit.commands.scores import scores_lines  # noqa: E402  (the cockpit's tables: one formatter)
from trainer.rundir import ENSEMBLE_FILE, RESULT_FILE  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "data" / "physionet"
CLASSES = ("N", "S", "V", "F")
# Published AAMI inter-patient DS2 figures (only those quoted in the project's data README and docs).
PUBLISHED = {
    "de Chazal 2004 (linear discriminants)": {"accuracy": 0.862, "S Se": 0.76, "V Se": 0.78},
    "Mondejar-Guerra 2019 (SVM ensemble)": {"accuracy": 0.945},
}
GOAL = {"accuracy": 0.93, "S Se": 0.80, "V Se": 0.90, "macro-F1 NSVF": 0.65}

MODEL = ["--context", "rr", "--layers", "2", "--d-model", "64", "--heads", "4"]
MITDB_TOKENIZER = ["--tokenizer", "samples", "--fs", "180", "--highpass", "0.5"]  # 180 Hz, baseline wander removed
WINDOW = {"samples": "128", "beats": "32"}  # samples: 0.71 s at 180 Hz; beats: 32 beats around the beat
# samples: each window minus the patient's template beat (a beats window has no waveform to compare)
WAVEFORM = {"samples": ["--waveform", "diff"], "beats": []}
MEMBERS = 5  # fine-tunes (seeds) the recipe's ensemble averages: the seed alone moves one model's macro-F1 by 0.07
LOOP = ["--batch-size", "64", "--lr", "1e-3", "--warmup-steps", "30", "--cpus-per-task", "2", "--num-workers", "0",
        "--device", "cpu"]


def hlm(args: list[str], log: Path) -> float:
    """Run one `python -m trainer ...` command; exit with its output if it fails. Returns its wall seconds."""
    env = {**os.environ, "OMP_NUM_THREADS": "2", "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "trainer", *args]
    print("$ hlm-train " + " ".join(args), flush=True)
    t0 = time.perf_counter()
    with log.open("a") as out:
        proc = subprocess.run(cmd, env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, check=False)
    if proc.returncode:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{log.read_text()[-3000:]}")
    return time.perf_counter() - t0


def result(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / RESULT_FILE).read_text())


def recipe(data: Path, out: Path, cache: Path, tokenizer: list[str], steps: tuple[int, int], seed: int,
           log: Path, ablation: bool, val_every: int, members: int = 1) -> dict[str, Any]:
    """prepare -> foundation -> `members` fine-tunes from it with seeds seed, seed+1, ... -> their ensemble
    (-> the ablations: the first fine-tune from random weights, and that again on the tokenized windows
    themselves); wall seconds per phase. The first fine-tune is out/finetune, the others
    out/finetune-seed<n>, the ensemble out/ensemble/ensemble.json."""
    def common(s: int) -> list[str]:
        return ["--data", str(data), "--token-cache", str(cache), *tokenizer, "--window", WINDOW[tokenizer[1]],
                *MODEL, *LOOP, "--seed", str(s)]

    waveform = WAVEFORM[tokenizer[1]]
    finetune = ["--mode", "finetune", "--task", "beat", "--pool", "centre", "--steps", str(steps[1]),
                "--val-fraction", "0.2", "--val-every", str(val_every)]
    init = ["--init-checkpoint", str(out / "foundation" / "model.pt")]
    times = {"prepare": hlm(["prepare", "--data", str(data), "--out", str(cache), "--no-progress", *tokenizer], log)}
    times["foundation"] = hlm(["train", "--run-dir", str(out / "foundation"), *common(seed), *waveform, "--mode",
                               "foundation", "--steps", str(steps[0])], log)
    runs = member_dirs(out, seed, members)
    for k, run_dir in enumerate(runs):
        times[run_dir.name] = hlm(["train", "--run-dir", str(run_dir), *common(seed + k), *waveform, *finetune,
                                   *init], log)
    if members > 1:
        times["ensemble"] = hlm(["ensemble", "--out", str(out / "ensemble"), *map(str, runs), "--device", "cpu"], log)
    if ablation:
        times["finetune_random"] = hlm(["train", "--run-dir", str(out / "finetune-random"), *common(seed), *waveform,
                                        *finetune], log)
        if waveform:
            times["finetune_random_raw"] = hlm(["train", "--run-dir", str(out / "finetune-random-raw"),
                                                *common(seed), *finetune], log)
    return times


def member_dirs(out: Path, seed: int, members: int) -> list[Path]:
    """The recipe's fine-tune run directories, seed first."""
    return [out / "finetune"] + [out / f"finetune-seed{seed + k}" for k in range(1, members)]


def headline(ev: dict[str, Any]) -> dict[str, float | None]:
    return {"accuracy": ev["accuracy"], "S Se": ev["sensitivity"].get("S"), "V Se": ev["sensitivity"].get("V"),
            "macro-F1 NSVF": ev.get("macro_f1_nsvf")}


def compare(rows: dict[str, dict[str, float | None]]) -> list[str]:
    keys = ["accuracy", "S Se", "V Se", "macro-F1 NSVF"]
    lines = [f"{'':44}" + "".join(f"{k:>15}" for k in keys)]
    for name, vals in rows.items():
        lines.append(f"{name:44}" + "".join(f"{vals[k]:15.3f}" if vals.get(k) is not None else f"{'-':>15}"
                                             for k in keys))
    return lines


def majority_baseline(ev: dict[str, Any]) -> tuple[str, float]:
    """Macro-F1 (over the classes present, as the result's macro_f1) of always predicting the commonest
    class of the test split."""
    support = ev["support"]
    top = max(support, key=lambda c: support[c])
    p = support[top] / sum(support.values())
    present = sum(1 for c in support if support[c])
    return top, (2 * p / (1 + p)) / present


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder holding mitdb/ and sddb-annotations/")
    ap.add_argument("--out", type=Path, default=Path("/tmp/hlm-quality"), help="work folder (emptied first)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="few steps: checks the commands, not the figures")
    ap.add_argument("--no-ablation", action="store_true",
                    help="skip the fine-tunes from random weights (template-difference and raw windows)")
    ap.add_argument("--no-sddb", action="store_true", help="skip the annotation-only database")
    ap.add_argument("--members", type=int, default=MEMBERS, metavar="K",
                    help=f"fine-tunes (seeds seed..seed+K-1) the recipe averages (default {MEMBERS}; 1 = one model)")
    args = ap.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    log = args.out / "commands.log"
    cache = args.out / "tokens"
    load0 = os.getloadavg()
    mit_steps, sddb_steps, val_every = ((20, 40), (20, 40), 20) if args.quick else ((300, 1200), (200, 300), 200)

    t0 = time.perf_counter()
    mit = recipe(args.data / "mitdb", args.out / "mitdb", cache, MITDB_TOKENIZER, mit_steps, args.seed, log,
                 not args.no_ablation, val_every, args.members)
    runs = member_dirs(args.out / "mitdb", args.seed, args.members)
    recipe_s = mit["prepare"] + mit["foundation"] + sum(mit[r.name] for r in runs) + mit.get("ensemble", 0.0)
    ft = result(runs[0])
    fd = result(args.out / "mitdb" / "foundation")
    scored = args.out / "mitdb" / "ensemble" / ENSEMBLE_FILE if args.members > 1 else runs[0] / RESULT_FILE
    ens = json.loads(scored.read_text())
    ev = ens["eval"]
    seeds = f"seeds {args.seed}-{args.seed + args.members - 1}" if args.members > 1 else f"seed {args.seed}"
    what = f"ensemble of {args.members} fine-tunes" if args.members > 1 else "one fine-tune"
    print(f"\nMIT-BIH DS2 (inter-patient; {ev['samples']:,} beats), recipe: {what}, {seeds}:")
    print("\n".join(scores_lines(scored, top=8)))
    rows = {f"HLM recipe ({what})": headline(ev)}
    members = {f"  fine-tune, seed {args.seed + k}": headline(result(r)["eval"]) for k, r in enumerate(runs)}
    if args.members > 1:
        rows.update(members)
        for name, pick in (("  min over the fine-tunes", min), ("  max over the fine-tunes", max)):
            rows[name] = {k: pick(m[k] for m in members.values() if m[k] is not None) for k in headline(ev)}
    if "finetune_random" in mit:
        rows[f"fine-tune seed {args.seed} from random weights"] = headline(
            result(args.out / "mitdb" / "finetune-random")["eval"])
    if "finetune_random_raw" in mit:
        rows["  and on raw windows"] = headline(result(args.out / "mitdb" / "finetune-random-raw")["eval"])
    rows.update(PUBLISHED)
    rows["goal"] = GOAL  # type: ignore[assignment]
    print("\n" + "\n".join(compare(rows)))
    val = ft.get("validation") or {}
    print(f"\nvalidation of seed {args.seed} (DS1 records {', '.join(val.get('records') or [])}): kept step "
          f"{val.get('best_step')} (macro-F1 {val.get('best_macro_f1') or 0:.3f}); history "
          + ", ".join(f"{v['step']}: {v['macro_f1']:.3f}" for v in val.get("history", [])))
    if "finetune_random" in mit:
        rv = result(args.out / "mitdb" / "finetune-random").get("validation") or {}
        print("random init validation history " + ", ".join(f"{v['step']}: {v['macro_f1']:.3f}"
                                                            for v in rv.get("history", [])))
    print(f"foundation masked-token loss on DS2 windows: {fd['eval']['masked_loss']:.3f} "
          f"(accuracy {fd['eval']['masked_accuracy']:.3f}); final training loss {fd['final_loss']:.3f}")
    print(f"DS2 evaluation: {ev['samples']:,} windows in {ev['seconds']:.1f} s = {ev['windows_per_s']:,.0f} windows/s"
          + (f" ({args.members} models each)" if args.members > 1 else ""))
    print(f"recipe time (prepare + foundation + {len(runs)} fine-tune(s) incl. validation and DS2"
          + (" + ensemble" if args.members > 1 else "") + f"): {recipe_s / 60:.1f} min (prepare {mit['prepare']:.0f} s, "
          f"foundation {mit['foundation']:.0f} s, fine-tunes " + ", ".join(f"{mit[r.name]:.0f}" for r in runs) + " s"
          + (f", ensemble {mit['ensemble']:.0f} s" if "ensemble" in mit else "")
          + f"; seed {args.seed}'s fine-tune: T {ft['timing']['train_time_s']:.0f} s, validation "
          f"{ft['timing']['val_s']:.0f} s, DS2 {ft['timing']['eval_s']:.0f} s)")

    if not args.no_sddb:
        sd = recipe(args.data / "sddb-annotations", args.out / "sddb", cache, ["--tokenizer", "beats"],
                    sddb_steps, args.seed, log, False, val_every)
        sev = result(args.out / "sddb" / "finetune")["eval"]
        top, base = majority_baseline(sev)
        print(f"\nsddb (annotations only, beats tokenizer, patient-disjoint test records "
              f"{', '.join(result(args.out / 'sddb' / 'finetune')['data']['test_records'])}; "
              f"{sev['samples']:,} beats):")
        print("\n".join(scores_lines(args.out / "sddb" / "finetune", top=8)))
        print(f"macro-F1 {sev['macro_f1']:.3f} vs {base:.3f} for always predicting {top} (majority class); "
              f"accuracy {sev['accuracy']:.3f}; {sum(sd.values()) / 60:.1f} min")
    load1 = os.getloadavg()
    print(f"\nall phases {(time.perf_counter() - t0) / 60:.1f} min; load average at start "
          f"{load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}, at end {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f} "
          f"on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
