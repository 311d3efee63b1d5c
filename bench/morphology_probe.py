"""What marks an S beat across patients: rhythm, the beat's shape, its difference from the patient's template, the
second lead? Small probes on the recipe's own inputs, trained on DS1 + svdb and scored on the recipe's
patient-disjoint validation part (never DS2).

For every labelled beat of the training databases (mitdb DS1 + svdb, both leads, resampled to 180 Hz and
high-passed as the recipe's tokens) it builds the inputs the model can be given, each as numbers: the 8 RR
context features (log), the window of 128 tokens centred on the beat as tokenized ("raw") and minus the
patient's template beat ("diff"), on lead 0 and lead 1. Then it trains the same two probes on each set of
inputs (a balanced multinomial logistic regression, and a one-hidden-layer network of 64 units), both with
inverse-frequency class weights and a fixed budget, on the training patients, and prints S Se / +P and
macro-F1 (N, S, V, F) on the validation patients (DS1's and svdb's apart). About 5 minutes on 2 cores.

    python bench/morphology_probe.py [--steps 400] [--seed 0]
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
from trainer.data.dataset import WindowDataset, load_manifest, manifest_split  # noqa: E402
from trainer.data.tokenizers import N_SPECIAL  # noqa: E402
from trainer.run.sources import validation_split  # noqa: E402
from trainer.scoring.scores import class_scores  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "physionet"
CLASSES = ["N", "S", "V", "F"]
TOKENIZER = ["--tokenizer", "samples", "--fs", "180", "--highpass", "0.5"]  # the recipe's (bench/quality.py)
WINDOW = 128
CONTEXT = 8  # RR context tokens before the window (trainer.data.rr_context)


def prepare(cache: str, lead: int) -> Path:
    """The mixed shard folder (mitdb + svdb) of one lead, through the project's CLI."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "trainer", "prepare", "--data", str(DATA / "mitdb"), "--train-data",
                          str(DATA / "svdb"), "--out", cache, "--no-progress", "--lead", str(lead), *TOKENIZER],
                         env=env, check=True, capture_output=True, text=True).stdout
    return Path(out.splitlines()[0])


def inputs(shard: Path, records: list[str]) -> dict[str, np.ndarray]:
    """Per labelled beat (N, S, V, F): rr [beats, 8] (bin index of each feature), raw and diff [beats, 128]
    (centred, in bins), label, record index."""
    out: dict[str, list[np.ndarray]] = {"rr": [], "raw": [], "diff": []}
    for waveform in ("raw", "diff"):
        ds = WindowDataset(shard, WINDOW, "beat", records, context="rr", waveform=waveform)
        keep = np.flatnonzero(ds.labels < len(CLASSES))
        items = np.stack([ds[int(i)][0].numpy() for i in keep])
        bins = ds.manifest.vocab_size - N_SPECIAL
        window = items[:, CONTEXT:].astype(np.float32)
        out[waveform] = [np.where(window == ds.pad_id, 0.0, (window - N_SPECIAL - bins / 2) / (bins / 2))]
        if waveform == "raw":
            base = ds.manifest.vocab_size
            out["rr"] = [((items[:, :CONTEXT] - base) % 32).astype(np.float32) / 32 - 0.5]
            labels, recs = ds.labels[keep], ds.item_record[keep]
    return {**{k: v[0] for k, v in out.items()}, "label": labels, "record": recs}


def fit(x: np.ndarray, y: np.ndarray, hidden: int, steps: int, seed: int) -> torch.nn.Module:
    """A probe trained with inverse-frequency class weights (Adam, batches of 2048, `steps` steps)."""
    torch.manual_seed(seed)
    net = (torch.nn.Linear(x.shape[1], len(CLASSES)) if not hidden else
           torch.nn.Sequential(torch.nn.Linear(x.shape[1], hidden), torch.nn.GELU(), torch.nn.Linear(hidden, len(CLASSES))))
    xt, yt = torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))
    counts = torch.bincount(yt, minlength=len(CLASSES)).float()
    weight = torch.where(counts > 0, counts.sum() / (len(CLASSES) * counts.clamp(min=1)), torch.zeros(()))
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        idx = torch.randint(0, len(yt), (2048,), generator=g)
        loss = torch.nn.functional.cross_entropy(net(xt[idx]), yt[idx], weight=weight)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net


def scores(net: torch.nn.Module, x: np.ndarray, y: np.ndarray) -> dict:
    with torch.inference_mode():
        pred = net(torch.from_numpy(x)).argmax(1).numpy()
    n = len(CLASSES)
    confusion = np.bincount(y * n + pred, minlength=n * n).reshape(n, n).tolist()
    return class_scores(confusion, CLASSES)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(2)
    with tempfile.TemporaryDirectory() as cache:
        shards = [prepare(cache, lead) for lead in (0, 1)]
        split = manifest_split(load_manifest(shards[0]))
        train, val = validation_split(split.train, split.patients, 0.2)  # the recipe's validation part
        print(f"train: {len(train)} records of DS1 + svdb; validation: {len(val)} ({', '.join(val)})")
        parts = {name: [inputs(shard, records) for shard in shards] for name, records in (("train", train),
                                                                                          ("val", val))}
    sets = {
        "RR context": lambda p: [p[0]["rr"]],
        "raw window, lead 0": lambda p: [p[0]["raw"]],
        "RR + raw, lead 0": lambda p: [p[0]["rr"], p[0]["raw"]],
        "RR + diff, lead 0 (the recipe's inputs)": lambda p: [p[0]["rr"], p[0]["diff"]],
        "RR + raw + diff, lead 0": lambda p: [p[0]["rr"], p[0]["raw"], p[0]["diff"]],
        "RR + raw, both leads": lambda p: [p[0]["rr"], p[0]["raw"], p[1]["raw"]],
        "RR + raw + diff, both leads": lambda p: [p[0]["rr"], p[0]["raw"], p[0]["diff"], p[1]["raw"], p[1]["diff"]],
    }
    y_train, y_val = parts["train"][0]["label"].astype(np.int64), parts["val"][0]["label"].astype(np.int64)
    in_svdb = np.array([val[r].startswith("svdb/") for r in parts["val"][0]["record"]])
    print(f"training beats {len(y_train):,} (S {int((y_train == 1).sum()):,}); validation beats {len(y_val):,} "
          f"(S {int((y_val == 1).sum()):,}: DS1 {int(((y_val == 1) & ~in_svdb).sum())}, svdb "
          f"{int(((y_val == 1) & in_svdb).sum())})")
    print(f"{'inputs':<42}{'probe':<8}{'S Se':>6}{'S +P':>6}{'mF1':>6}{'V Se':>6}"
          f"{'| DS1 S Se':>10}{'+P':>6}{'| svdb S Se':>11}{'+P':>6}")
    for name, pick in sets.items():
        xt = np.concatenate(pick(parts["train"]), axis=1).astype(np.float32)
        xv = np.concatenate(pick(parts["val"]), axis=1).astype(np.float32)
        for probe, hidden in (("linear", 0), ("mlp-64", 64)):
            net = fit(xt, y_train, hidden, args.steps, args.seed)
            a, d1, sv = (scores(net, xv[m], y_val[m]) for m in (np.ones(len(y_val), bool), ~in_svdb, in_svdb))

            def f(v: float | None) -> str:
                return f"{v:6.2f}" if v is not None else f"{'-':>6}"

            print(f"{name:<42}{probe:<8}{f(a['sensitivity']['S'])}{f(a['ppv']['S'])}{f(a['macro_f1_nsvf'])}"
                  f"{f(a['sensitivity']['V'])}    {f(d1['sensitivity']['S'])}{f(d1['ppv']['S'])}     "
                  f"{f(sv['sensitivity']['S'])}{f(sv['ppv']['S'])}", flush=True)


if __name__ == "__main__":
    main()
