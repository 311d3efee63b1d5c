"""How far do RR intervals alone carry the S class from some patients to others? Measured on DS1 only.

An S beat is defined by its timing, so a classifier on the RR features should find S beats in unseen
patients if anything does. This trains the linear classifier de Chazal used for the published
inter-patient baseline (here a multinomial logistic regression, balanced class weights) on the log of
the eight RR context features the model gets (`trainer/data/rr_context.py`), on DS1 without the two
validation folds of docs/training.md, and scores each fold, with the RR rule of docs/training.md beside
it and each fold's records broken down. DS2 is never read: this is the evidence that the S figure
depends on which patients are scored, available before DS2 is.

    python bench/rr_folds.py              # about 15 s on 2 cores (prepare, then 1500 full-batch steps)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from trainer.data.dataset import load_manifest  # noqa: E402
from trainer.data.rr_context import CONTEXT_FEATURES, rr_features  # noqa: E402
from trainer.data.shards import MANIFEST, array_path  # noqa: E402
from trainer.data.splits import DS1  # noqa: E402

FOLDS = {"A": "108 115 124 207 220".split(), "B": "106 116 203 209 223".split()}  # docs/training.md
CLASSES = ("N", "S", "V", "F")
TOKENIZER = ["--tokenizer", "samples", "--fs", "180", "--highpass", "0.5"]  # the recipe's (bench/quality.py)


def features(shard: Path, names: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """RR features, AAMI class (N, S, V, F only) and record of every labelled beat of these records."""
    manifest = load_manifest(shard)
    by_name = {r["name"]: r for r in manifest.records}
    xs, ys, recs = [], [], []
    for name in names:
        rec = by_name[name]
        beats = np.load(array_path(shard, rec["file"], "beats"))
        labels = np.load(array_path(shard, rec["file"], "labels")).astype(np.int64)
        fs = float(rec.get("fs") or manifest["fs"])
        keep = (labels >= 0) & (labels < len(CLASSES))
        xs.append(rr_features(np.diff(beats) * 1000.0 / fs)[keep])
        ys.append(labels[keep])
        recs.append(np.full(int(keep.sum()), name))
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(recs)


def fit_linear(x: np.ndarray, y: np.ndarray, steps: int, seed: int) -> tuple[torch.nn.Linear, np.ndarray, np.ndarray]:
    """Logistic regression on standardised log features, loss weighted by inverse class frequency."""
    torch.manual_seed(seed)
    logx = np.log(x)
    mean, std = logx.mean(0), logx.std(0)
    xt = torch.tensor((logx - mean) / std, dtype=torch.float32)
    yt = torch.tensor(y)
    counts = torch.bincount(yt, minlength=len(CLASSES)).float()
    weight = torch.where(counts > 0, counts.sum() / (len(CLASSES) * counts.clamp(min=1)), torch.zeros(()))
    net = torch.nn.Linear(x.shape[1], len(CLASSES))
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    for _ in range(steps):
        loss = torch.nn.functional.cross_entropy(net(xt), yt, weight=weight)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net, mean, std


def s_line(tag: str, y: np.ndarray, is_s: np.ndarray) -> str:
    """S beats found, S sensitivity and +P; the counts beside the ratios."""
    tp = int((is_s & (y == 1)).sum())
    s, called = int((y == 1).sum()), int(is_s.sum())
    se = f"{tp / s:.2f}" if s else "-"
    ppv = f"{tp / called:.2f}" if called else "-"
    return f"{tag:<42}S beats {s:>4}  found {tp:>4}  Se {se:>4}  called S {called:>5}  +P {ppv:>4}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "physionet" / "mitdb")
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(2)
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        subprocess.run([sys.executable, "-m", "trainer", "prepare", "--data", str(args.data), "--out", cache,
                        "--no-progress", *TOKENIZER], env=env, check=True, stdout=subprocess.DEVNULL)
        shard = next(Path(cache).glob(f"*/{MANIFEST}")).parent
        train = [r for r in DS1 if not any(r in fold for fold in FOLDS.values())]
        x, y, _ = features(shard, train)
        print(f"train: DS1 without folds A and B, {len(train)} records, {len(y):,} beats, S {int((y == 1).sum())}")
        print(f"features: log of {', '.join(CONTEXT_FEATURES)}")
        net, mean, std = fit_linear(x, y, args.steps, args.seed)
        names = list(CONTEXT_FEATURES)
        pre_local, post_local = names.index("pre_local"), names.index("post_local")
        for fold, records in FOLDS.items():
            fx, fy, frec = features(shard, records)
            with torch.inference_mode():
                pred = net(torch.tensor((np.log(fx) - mean) / std, dtype=torch.float32)).argmax(1).numpy()
            rule = (fx[:, pre_local] < 0.85) & (fx[:, post_local] > 1.0)
            print(f"\nfold {fold} ({' '.join(records)})")
            print(s_line("  linear classifier on RR features", fy, pred == 1))
            print(s_line("  rule: pre/local < 0.85, post/local > 1", fy, rule))
            for name in records:
                k = frec == name
                if (fy[k] == 1).any():
                    print(s_line(f"    record {name}, linear", fy[k], pred[k] == 1))


if __name__ == "__main__":
    main()
