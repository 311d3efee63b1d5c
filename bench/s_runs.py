"""Which of a record's S beats does a fine-tune miss: the lone ones, or those inside a run? A diagnosis, no choice.

For one record (default 232, whose S beats are its main rhythm and move DS2's S sensitivity most) and each
finished fine-tune given, every S beat is placed by its neighbours in the record's beat list: alone (neither
neighbour S), first of a run, inside a run (both neighbours S), last of a run. For each place it prints the S
beats, how many the run's own decision (model.pt as kept: its calibration and rhythm gate) calls S, and the
medians of two interval features computed from the record's beats whatever context the run read: the interval
before the beat against the long average (`pre_long`, which a run of S beats pulls towards itself) and against
the patient's sinus interval (`pre_sinus`, trainer/data/rr_context.py), beside the record's N beats. Nothing is
trained; the test split chooses nothing.

    python bench/s_runs.py /tmp/hlm-r1/mixed/finetune                  # record 232 (about 10 s)
    python bench/s_runs.py RUN [RUN ...] --record 222
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
from quality import S_OUTLIER  # noqa: E402  (the bench's record 232)

from trainer.commands.ensemble import load_member, member_settings  # noqa: E402
from trainer.data.dataset import WindowDataset  # noqa: E402
from trainer.data.labels import BEAT_CLASSES  # noqa: E402
from trainer.data.rr_context import SINUS_FEATURE, features_of, rr_features  # noqa: E402
from trainer.scoring.evaluate import EVAL_BATCH  # noqa: E402

N, S = BEAT_CLASSES.index("N"), BEAT_CLASSES.index("S")
PLACES = ("alone", "first of a run", "inside a run", "last of a run")
FEATURES = ("pre_long", SINUS_FEATURE)
WITH_SINUS = "rr_af_lock_sinus"  # the context whose features hold both


def places(labels: np.ndarray) -> np.ndarray:
    """Each beat's place among S beats by its neighbours' labels (0..3 as PLACES; -1 for a beat that is not S)."""
    before = np.r_[-1, labels[:-1]] == S
    after = np.r_[labels[1:], -1] == S
    place = np.where(before, np.where(after, 2, 3), np.where(after, 1, 0))
    return np.where(labels == S, place, -1)


def record_rows(run: Path, record: str) -> dict[str, dict[str, float]]:
    """Per place (and "N beats"): beats, called S by the run's decision, and the FEATURES' medians."""
    s, result = member_settings(run)
    windows = WindowDataset(Path(result["data"]["shard_dir"]), s.axes.window, "beat", [record],
                            context=s.model.context, waveform=s.model.waveform)
    model = load_member(run, torch.device("cpu"))
    model.eval()
    with torch.inference_mode():
        called = np.concatenate([model(tokens).argmax(1).numpy() for tokens, _ in DataLoader(windows, EVAL_BATCH)])
    labels = np.asarray(windows.record_array(0, "labels"), dtype=np.int64)
    beats = np.asarray(windows.record_array(0, "beats"), dtype=np.float64)
    fs = float(windows.records[0].get("fs") or windows.manifest.get("fs"))
    columns = rr_features(np.diff(beats) * 1000.0 / fs, WITH_SINUS, np.ones(len(beats)))
    names = list(features_of(WITH_SINUS))
    item = windows.item_beat  # each window's beat: its index in the record's beat list
    place = places(labels)[item]
    out: dict[str, dict[str, float]] = {}
    for name, mask in [*((p, place == k) for k, p in enumerate(PLACES)), ("N beats", labels[item] == N)]:
        out[name] = {"beats": int(mask.sum()), "called S": int((called[mask] == S).sum()),
                     **{f: float(np.median(columns[item[mask], names.index(f)])) if mask.any() else float("nan")
                        for f in FEATURES}}
    return out


def report(run: Path, record: str, rows: dict[str, dict[str, float]]) -> list[str]:
    lines = [f"{run}: record {record}",
             f"{'':>16}{'beats':>7}{'called S':>10}{'share':>7}" + "".join(f"{f:>11}" for f in FEATURES)]
    for name, r in rows.items():
        share = f"{r['called S'] / r['beats']:7.2f}" if r["beats"] else f"{'-':>7}"
        lines.append(f"{name:>16}{r['beats']:>7,}{r['called S']:>10,}{share}"
                     + "".join(f"{r[f]:11.2f}" for f in FEATURES))
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", type=Path, nargs="+", help="run directories of finished beat fine-tunes")
    ap.add_argument("--record", default=S_OUTLIER, help=f"the record whose S beats to place (default {S_OUTLIER})")
    args = ap.parse_args()
    for run in args.runs:
        print("\n".join(report(run, args.record, record_rows(run, args.record))), flush=True)


if __name__ == "__main__":
    main()
