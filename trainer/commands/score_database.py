"""`hlm-train evaluate MODEL [MODEL ...] --data DIR [--records ...]`: a trained beat classifier scores any database.

The published study judged its HLM across datasets; a model trained on mitdb is only an arrhythmia alarm if
it holds on recordings it never saw, from another rate, format and annotator. This prepares DIR with the
model's own tokenizer (the samples tokenizer resamples every record to the model's rate, trainer.data.mixed
says why that is the one rule), cuts the model's windows (window, RR context, template difference) around
every annotated beat of every record (no split: the database is the test), and scores them: the confusion
matrix, per-class Se / +P / F1, one matrix per record and per rhythm, and the false alarms per class per
hour, which a database whose beats are all one class still gives (trainer.scoring.scores.false_alarms_per_hour).
Several MODELs are scored as an ensemble (the mean of their probabilities, trainer.commands.ensemble).

The result goes to OUT/evaluation.json (default MODEL/evaluate-<dataset>) in result.json's `eval` layout,
so `cockpit scores` reads it like a run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

from runcontract.contract import CONFIG_FILE, EXIT_BAD_INPUT, EXIT_OK, EXIT_USAGE, SCHEMA_VERSION
from runcontract.files import write_json
from runcontract.modes import make_dirs
from trainer import rundir
from trainer.commands import ensemble
from trainer.config_flags import UsageError, record_names
from trainer.config_keys import NOISE_KEYS
from trainer.data import DataError
from trainer.data.dataset import WindowDataset, load_manifest
from trainer.data.labels import RHYTHM_CLASSES
from trainer.data.prepare import prepare_data
from trainer.model import ModelConfig
from trainer.parallelism.distributed import pick_device
from trainer.scoring import evaluate
from trainer.scoring.scores import class_scores, false_alarms_per_hour
from trainer.settings import ConfigError, Settings


def run(args: argparse.Namespace) -> int:
    """`hlm-train evaluate`; 0, 2 for a bad command line or model, 3 for bad data."""
    try:
        records = record_names(args.records, "--records") if args.records else None
        out = args.out or args.models[0] / f"evaluate-{args.data.resolve().name}"
        result = score(args.models, args.data, records, args.annotator, args.token_cache, args.device,
                       args.skip_bad_records, {k: getattr(args, k) for k in NOISE_KEYS if getattr(args, k) is not None})
    except DataError as exc:  # before ValueError, which it is
        print(f"hlm-train: bad input data: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (ConfigError, UsageError, ValueError) as exc:
        print(f"hlm-train: {exc}", file=sys.stderr)
        return EXIT_USAGE
    make_dirs(out)
    write_json(out / rundir.EVALUATION_FILE, result)
    print("\n".join([str(out / rundir.EVALUATION_FILE), *lines(result)]))
    return EXIT_OK


def _models(paths: list[Path], device: torch.device) -> tuple[Settings, torch.nn.Module, ModelConfig]:
    """The first model's settings, the classifier (one model, or the mean of several) and the first
    model's architecture (what its inputs must fit)."""
    runs = [(p, *ensemble.member_settings(p)) for p in paths]
    if len(runs) > 1:
        ensemble.check_same_windows([(p, s) for p, s, _ in runs])
    s = runs[0][1]
    if s.train.task != "beat":
        raise ConfigError(f"{paths[0] / CONFIG_FILE}: train.task = {s.train.task!r}; evaluate scores beat "
                          "classifiers (task 'beat')")
    loaded = [ensemble.load_member(p, device) for p, _, _ in runs]
    members: list[torch.nn.Module] = list(loaded)
    return s, loaded[0] if len(loaded) == 1 else ensemble.MeanProbabilities(members), loaded[0].cfg


def score(models: list[Path], data: Path, records: list[str] | None, annotator: str | None,
          token_cache: Path | None, device: str = "auto", skip_bad_records: bool = False,
          noise: dict[str, Any] | None = None) -> dict[str, Any]:
    """Score every annotated beat of `data` (or of `records`) with the model(s), with `noise` (NOISE_KEYS: the
    database's noisy version) or without; evaluation.json's content."""
    dev = pick_device(device, 0)
    s, model, cfg = _models(models, dev)
    tokenizer = {k: v for k, v in s.data.tokenizer.items() if k != "records"}
    if records:
        tokenizer["records"] = records
    if annotator:
        tokenizer["annotator"] = annotator
    tokenizer.update(noise or {})
    cache = token_cache or (Path(s.data.token_cache) if s.data.token_cache else models[0] / "tokens")
    shard = prepare_data(data, tokenizer, cache, skip_bad_records=skip_bad_records)
    manifest = load_manifest(shard)
    windows = WindowDataset(shard, s.axes.window, "beat", manifest.record_names, context=s.model.context,
                            waveform=s.model.waveform)
    if windows.vocab_size != cfg.vocab_size or windows.length > cfg.max_len:
        raise ConfigError(f"{models[0] / rundir.MODEL_FILE}: the model reads {cfg.vocab_size} token ids and "
                          f"{cfg.max_len} positions, the windows of {data} have {windows.vocab_size} and "
                          f"{windows.length}")
    if not len(windows):
        raise DataError(f"{data}: no beat with an AAMI class to score")
    pred = evaluate.predict(model, windows, dev)
    classes = list(manifest["beat_classes"])
    ev = tally(windows, pred, classes)
    return {"schema_version": SCHEMA_VERSION, "how": "hlm-train evaluate",
            "models": [str(m) for m in models], "data": str(data.resolve()), "dataset": manifest["dataset"],
            "records": manifest.record_names, "skipped_records": manifest.get("skipped_records") or [],
            "tokenizer": manifest["params"], "native_fs": sorted({r.get("native_fs") for r in manifest.records
                                                                   if r.get("native_fs")}),
            "eval": {"split": "all", **ev}}


def confusion_matrix(true: np.ndarray, pred: np.ndarray, n: int) -> list[list[int]]:
    """[true class][predicted class] counts of n classes (labels 0..n-1)."""
    return np.bincount(true * n + pred, minlength=n * n).reshape(n, n).astype(int).tolist()


def tally(windows: WindowDataset, pred: np.ndarray, classes: list[str]) -> dict[str, Any]:
    """Scores of the predictions: overall, per record, per rhythm (time in each from the beats' RR
    intervals), with the hours that turn errors into false alarms per hour."""
    n = len(classes)
    labels = windows.labels.astype(np.int64)
    rec_of, names = windows.item_records()
    fs = [float(r.get("fs") or 0) for r in windows.records]
    timed = windows.manifest.tokenizer == "samples" and all(fs)
    hours = sum(r["n_tokens"] / f for r, f in zip(windows.records, fs, strict=True)) / 3600 if timed else None
    item_rhythm = np.full(len(labels), -1, dtype=np.int64)
    rhythm_s = np.zeros(len(RHYTHM_CLASSES))
    for i in range(len(names)):
        here = rec_of == i
        rhythm = np.asarray(windows.record_array(i, "rhythm"), dtype=np.int64)
        item_rhythm[here] = rhythm[windows.item_beat[here]]
        if timed:
            beats = np.asarray(windows.record_array(i, "beats"), dtype=np.float64)
            rr_s = np.diff(beats) / fs[i]  # the interval ending at a beat counts as that beat's rhythm's time
            known = rhythm[1:] >= 0
            rhythm_s += np.bincount(rhythm[1:][known], weights=rr_s[known], minlength=len(RHYTHM_CLASSES))
    ev = class_scores(confusion_matrix(labels, pred, n), classes)
    ev["by_record"] = {name: confusion_matrix(labels[rec_of == i], pred[rec_of == i], n) for i, name in enumerate(names)}
    ev["hours"] = hours
    ev["false_alarms_per_hour"] = false_alarms_per_hour(ev["confusion"], classes, hours)
    ev["by_rhythm"] = {}
    for k, name in enumerate(RHYTHM_CLASSES):
        here = item_rhythm == k
        if here.any():
            m = confusion_matrix(labels[here], pred[here], n)
            h = rhythm_s[k] / 3600 if timed else None
            ev["by_rhythm"][name] = {"windows": int(here.sum()), "hours": h, "confusion": m,
                                     "false_alarms_per_hour": false_alarms_per_hour(m, classes, h)}
    return ev


def lines(result: dict[str, Any]) -> list[str]:
    """What the command prints: the matrix, the per-class table with false alarms per hour, the rhythms."""
    ev = result["eval"]
    classes = ev["classes"]
    hours = ev.get("hours")
    nsvf = f", macro-F1 (N,S,V,F) {ev['macro_f1_nsvf']:.3f}" if ev.get("macro_f1_nsvf") is not None else ""
    snr = (result.get("tokenizer") or {}).get("noise_snr_db")
    noisy = (f" with motion noise at {snr:g} dB SNR (seed {result['tokenizer'].get('noise_seed', 0)})"
             if snr is not None else "")
    out = [f"{result['dataset']}{noisy}: {len(result['records'])} records, {ev['samples']:,} beats"
           + (f", {hours:.2f} h" if hours else "") + f"; accuracy {ev['accuracy']:.3f}{nsvf}",
           "  confusion (rows: true, columns: predicted)", "        " + "".join(f"{c:>9}" for c in classes)]
    out += [f"  {c:>6}" + "".join(f"{v:>9,}" for v in row) for c, row in zip(classes, ev["confusion"], strict=True)]
    out.append(f"  {'class':>6} {'support':>8} {'Se':>6} {'+P':>6} {'F1':>6} {'false alarms/h':>15}")

    def num(v: float | None) -> str:
        return f"{v:6.3f}" if v is not None else f"{'-':>6}"

    for c in classes:
        fa = ev["false_alarms_per_hour"].get(c)
        out.append(f"  {c:>6} {ev['support'][c]:>8,} {num(ev['sensitivity'][c])} {num(ev['ppv'][c])} "
                   f"{num(ev['f1'][c])} {fa if fa is None else round(fa, 1):>15}")
    for name, r in ev.get("by_rhythm", {}).items():
        fa = r["false_alarms_per_hour"]
        alarms = ", ".join(f"{c} {v:.1f}" for c, v in fa.items() if v) if r["hours"] else "no time base"
        out.append(f"  rhythm {name}: {r['windows']:,} beats" + (f" in {r['hours']:.2f} h" if r["hours"] else "")
                   + f"; false alarms per hour: {alarms or 'none'}")
    return out
