"""Does the foundation earn its place? Fine-tunes on a share of the labelled training patients, from the foundation
checkpoint and from random weights, scored on DS2.

The recipe's data (DS1 + svdb, everything at 180 Hz, the recipe's inputs and model, bench/quality.py), one
foundation over every training waveform (no labels), then for each share of FRACTIONS of the labelled training
patients (`--label-fraction`: the same evenly spaced patients for every run; the recipe's validation patients
apart and whole) and each seed (`--seeds`), two fine-tunes that differ only in their start: the foundation's weights, or
random ones. Same steps, same seed, same patients; each keeps its best validation step and its calibrated
decision as the recipe does, and DS2 is scored once per fine-tune. The verdict is the goal's: at the smallest
share the foundation's macro-F1 (N, S, V, F) at least GAIN_GOAL above random weights on average over the
seeds, and not below at the whole.

    python bench/label_efficiency.py               # 12 fine-tunes of 300 steps, validated once at the end, and one
                                                   # foundation (about 85 min on 2 cores: 400 s a fine-tune)
    python bench/label_efficiency.py --steps 1200 --val-every 200   # the recipe's fine-tune (about 3.5 hours)
    python bench/label_efficiency.py --quick       # few steps: checks the commands, not the figures
    python bench/label_efficiency.py --fractions 1 0.25   # only these shares (the verdict needs 5% and 100%)
    python bench/label_efficiency.py --device cuda --foundation-steps 3750 --foundation-batch-size 512 \
        --fractions 0.05 1 --prepare-workers 16   # on one GPU: a foundation over 100 times the tokens (5 min)
    python bench/label_efficiency.py --fractions 0.05 --seeds 2 3   # two more seeds, the smallest share only
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
from quality import DEFAULT_DATA, FINETUNE, LOOP, TOKENIZER, headline, hlm, inputs, read, say, table  # noqa: E402  (the recipe's own)

from runcontract.contract import RESULT_FILE  # noqa: E402

FRACTIONS = (0.05, 1.0, 0.25)  # the two the verdict rests on first
SEEDS = (0, 1)
INITS = ("foundation", "random")
GAIN_GOAL = 0.05  # macro-F1 the foundation must add at the smallest share, on average over the seeds
KEYS = ["macro-F1 NSVF", "S Se", "S +P", "V Se", "accuracy", "val F1"]


def loop(device: str) -> list[str]:
    """The recipe's loop flags (quality.LOOP) on this device: on CUDA the loader gets 12 worker processes of a
    16-core GPU node to keep the GPU fed (2 cores' worth of items a step would starve it); the batch, learning rate
    and schedule stay the recipe's (a later flag wins)."""
    return [*LOOP, "--device", device] + (["--cpus-per-task", "16", "--num-workers", "12"] if device == "cuda" else [])


def foundation_line(result: dict) -> str:
    """What the foundation saw and learnt, from its result.json: tokens trained on (steps x batch x tokens per
    item, as the run counted them), its seconds and device, and its masked-token loss and accuracy on held-out
    windows, the figures the objective is judged by."""
    timing, ev = result.get("timing") or {}, result.get("eval") or {}
    loss, acc = ev.get("masked_loss"), ev.get("masked_accuracy")
    return (f"foundation: {timing.get('steps')} steps, {timing.get('samples'):,} windows, {timing.get('tokens'):,} tokens "
            f"in T = {timing.get('train_time_s', 0):.0f} s on {result.get('device')}; masked-token loss "
            + (f"{loss:.3f} nats, accuracy {acc:.3f}" if loss is not None and acc is not None else "not scored")
            + f" over {ev.get('masked_tokens', 0):,} held-out masked tokens ({ev.get('split', '?')} split)")


def figures(run_dir: Path) -> dict[str, float | None]:
    """One fine-tune's DS2 figures (quality.headline's) and its best validation macro-F1, from its result.json."""
    r = read(run_dir / RESULT_FILE)
    return {**headline(r["eval"]), "val F1": (r.get("validation") or {}).get("best_macro_f1")}


def verdict(gains: dict[float, list[float]], seeds: tuple[int, ...] = SEEDS) -> str:
    """The gains so far (foundation minus random weights, macro-F1, per seed) and, once the smallest share and the
    whole are measured, the goal's verdict: printed after each share, so a run cut short still has it."""
    lines = ["macro-F1 (N,S,V,F), foundation minus random weights, seeds " + ", ".join(map(str, seeds)) + ":"]
    lines += [f"  {f:>4.0%}: " + ", ".join(f"{x:+.3f}" for x in g) + f"; mean {sum(g) / len(g):+.3f}"
              for f, g in gains.items() if g]
    smallest, whole = min(FRACTIONS), max(FRACTIONS)
    if len(gains.get(smallest, [])) == len(gains.get(whole, [])) == len(seeds):
        mean = {f: sum(gains[f]) / len(seeds) for f in (smallest, whole)}
        earns = mean[smallest] >= GAIN_GOAL and mean[whole] >= 0
        lines.append(f"verdict: the foundation {'earns' if earns else 'does not earn'} its place (goal: at {smallest:.0%} "
                     f"a mean gain of at least {GAIN_GOAL:+.2f}, found {mean[smallest]:+.3f}; at {whole:.0%} not below, "
                     f"found {mean[whole]:+.3f})")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder holding mitdb/ and svdb/")
    ap.add_argument("--out", type=Path, default=Path("/tmp/hlm-label-efficiency"), help="work folder (emptied first)")
    ap.add_argument("--steps", type=int, default=300, help="fine-tune steps, the same for every run (default 300)")
    ap.add_argument("--val-every", type=int, help="validate every this many steps (default: once, at the end)")
    ap.add_argument("--quick", action="store_true", help="20 foundation and 20 fine-tune steps: checks the commands")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where every phase trains (default cpu)")
    ap.add_argument("--foundation-steps", type=int, default=300, help="the foundation's steps (default 300)")
    ap.add_argument("--foundation-batch-size", type=int, default=64,
                    help="the foundation's batch (default 64, the fine-tunes'): its tokens are steps x batch x window")
    ap.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS), metavar="SEED",
                    help="the fine-tunes' seeds, each run from both starts (default: " + " ".join(map(str, SEEDS)) + ")")
    ap.add_argument("--prepare-workers", type=int, default=1, help="processes tokenizing the records (default 1)")
    ap.add_argument("--fractions", type=float, nargs="+", default=list(FRACTIONS), metavar="SHARE",
                    help="shares of the labelled patients to run, in order (default: " + " ".join(f"{f:g}" for f in FRACTIONS)
                    + "); the verdict is printed once its two, the least and the whole, are measured")
    args = ap.parse_args()
    if bad := [f for f in args.fractions if not 0 < f <= 1]:
        ap.error(f"--fractions: each share must be above 0 and at most 1, found {', '.join(map(str, bad))}")
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    log, cache = args.out / "commands.log", args.out / "tokens"
    data = ["--data", str(args.data / "mitdb"), "--train-data", str(args.data / "svdb")]
    foundation_steps, steps, val_every = ((20, 20, 10) if args.quick
                                          else (args.foundation_steps, args.steps, args.val_every or args.steps))
    load0, t0 = os.getloadavg(), time.perf_counter()
    common = [*data, "--token-cache", str(cache), *TOKENIZER, *inputs(), *loop(args.device)]
    times = {"prepare": hlm(["prepare", *data, "--out", str(cache), "--no-progress", "--workers",
                             str(args.prepare_workers), *TOKENIZER], log)}
    foundation = args.out / "foundation"
    times["foundation"] = hlm(["train", "--run-dir", str(foundation), *common, "--seed", "0", "--mode", "foundation",
                               "--steps", str(foundation_steps), "--batch-size", str(args.foundation_batch_size)], log)
    say(foundation_line(read(foundation / RESULT_FILE)))
    rows: dict[str, dict[str, float | None]] = {}
    gains: dict[float, list[float]] = {f: [] for f in args.fractions}
    for fraction in args.fractions:
        for seed in args.seeds:
            got = {}
            for init in INITS:
                run_dir = args.out / f"{fraction:g}-{init}-seed{seed}"
                start = ["--init-checkpoint", str(foundation / "model.pt")] if init == "foundation" else []
                times[run_dir.name] = hlm(["train", "--run-dir", str(run_dir), *common, "--seed", str(seed),
                                           *FINETUNE(steps, val_every), "--label-fraction", str(fraction),
                                           *start], log)
                got[init] = rows[f"{fraction:>4.0%} of the patients, {init}, seed {seed}"] = figures(run_dir)
            gains[fraction].append((got["foundation"]["macro-F1 NSVF"] or 0.0) - (got["random"]["macro-F1 NSVF"] or 0.0))
        say("\n".join(table({k: v for k, v in rows.items() if k.startswith(f"{fraction:>4.0%}")}, KEYS, 44)))
        labelled = read(args.out / f"{fraction:g}-random-seed{args.seeds[0]}" / RESULT_FILE)["data"]["labelled_records"]
        say(f"{fraction:.0%}: labels of {len(labelled)} training records ({', '.join(labelled)})\n")
        say(verdict(gains, tuple(args.seeds)))
    say("\n".join(table(rows, KEYS, 44)))
    load1 = os.getloadavg()
    say(f"all phases {(time.perf_counter() - t0) / 60:.1f} min (" + ", ".join(f"{k} {v:.0f} s" for k, v in times.items())
        + f"); load average at start {load0[0]:.2f}, at end {load1[0]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
