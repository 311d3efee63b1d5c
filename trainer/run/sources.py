"""What the training loop trains on: prepared token shards turned into the objective's datasets.

Rank 0 prepares (or finds up to date) the token shards while the other ranks wait at a barrier; then every
rank opens the same shards. The loop itself only sees a `Data` bundle, so tests can hand it small tensors.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from torch.utils.data import Dataset, Subset

from trainer.data.batches import HiddenContext, LabelledWindows, MaskedWindows
from trainer.data.errors import DataError
from trainer.data.labels import AF_GROUP
from trainer.data.splits import natural_key
from trainer.parallelism.distributed import Dist, barrier
from trainer.settings import Settings

log = logging.getLogger("hlm.data")
FOUNDATION_EVAL_WINDOWS = 4096  # masked-token evaluation of a foundation run uses at most this many windows
AUGMENT_NOISE_SEED = 1  # the training noise's draw: evaluation's noisy versions use the tokenizer's default, 0
VAL_WINDOWS = 20000  # fine-tune validation scores at most this many windows (an even sample), many times per run


@dataclass
class Data:
    """Training and test datasets for one objective plus what the model and the result need to know."""

    train: Dataset  # keyed by (epoch, index) -> (inputs, targets)
    test: Dataset | None  # keyed by index -> (inputs, targets); None = no evaluation possible
    vocab_size: int
    classes: list[str] = field(default_factory=list)  # fine-tune class names; empty for foundation
    synthetic: bool = False
    prepare_s: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)  # shard dir, tokenizer, record counts
    class_weights: list[float] | None = None  # fine-tune loss weights per class, then train.af_group's (None = unweighted)
    val: Dataset | None = None  # fine-tune: patient-disjoint validation part of the training split
    seq_len: int = 0  # tokens per item (context tokens + window); 0 = the window
    # fine-tune: each test item's record index and the record names (WindowDataset.item_records), for
    # scores per record; None where the test windows do not come from records
    test_item_records: tuple[Any, list[str]] | None = None


def _windows(s: Settings, shard: Any, task: str, records: list[str]) -> Any:
    """The windows of these records as the run's settings shape them (window, context, waveform)."""
    from trainer.data.dataset import WindowDataset

    return WindowDataset(shard, s.axes.window, task, records, context=s.model.context, waveform=s.model.waveform)


def load(s: Settings, d: Dist) -> Data:
    """Prepare shards on rank 0 (others wait), then open the train and test windows for the objective."""
    from trainer.data import dataset as wd
    from trainer.data.prepare import prepare_data

    cache = Path(s.data.token_cache) if s.data.token_cache else s.run_dir / "tokens"
    prepare = functools.partial(prepare_data, dataset=s.axes.dataset, synthetic_params=s.data.synthetic_params,
                                skip_bad_records=s.data.skip_bad_records, split=s.data.split,
                                train_data=s.data.train_data)

    def shard_of(tokenizer: dict[str, Any]) -> Path:
        """Rank 0 prepares the shards, the others wait; by then theirs is only a digest check."""
        if d.is_main:
            shard = prepare(s.data.data_path, tokenizer, cache, s.data.prepare_workers)
        barrier(d)
        return shard if d.is_main else prepare(s.data.data_path, tokenizer, cache, 1)

    t0 = time.perf_counter()
    shard = shard_of(s.data.tokenizer)
    prepare_s = time.perf_counter() - t0

    manifest = wd.load_manifest(shard)
    split = wd.manifest_split(manifest, s.data.split, "config.json: split")
    if d.is_main:
        _log_data(manifest, split.as_dict())
    task = s.train.task if s.axes.mode == "finetune" else "foundation"
    if not split.train:
        raise DataError(f"{manifest.path}: the training split of dataset {manifest['dataset']!r} is empty: "
                        f"{split.reason}")
    train_records: list[str] = list(split.train)
    val_records: list[str] = []
    if s.axes.mode == "finetune" and (s.train.val_fraction > 0 or s.train.val_records):
        train_records, val_records = (
            named_validation(split.train, split.patients, [str(r) for r in s.train.val_records])
            if s.train.val_records else validation_split(split.train, split.patients, s.train.val_fraction))
        if d.is_main:
            log.info("validation on %d of the %d training records (%s), patient-disjoint from the rest; "
                     "training on %d", len(val_records), len(split.train), ", ".join(val_records),
                     len(train_records))
    if s.axes.mode == "finetune" and s.train.label_fraction < 1:
        train_records = labelled_part(train_records, split.patients, s.train.label_fraction)
        if d.is_main:
            log.info("train.label_fraction = %g: labels of %d training record(s) only (%s)", s.train.label_fraction,
                     len(train_records), ", ".join(train_records))
    train_windows = _windows(s, shard, task, train_records)
    test_windows, eval_split = _eval_windows(s, manifest, split, task, train_windows, d.is_main)
    val_windows = _windows(s, shard, task, val_records) if val_records else None
    info = {"shard_dir": str(shard), "dataset": manifest.get("dataset"), "tokenizer": manifest.tokenizer,
            "tokenizer_params": manifest.get("params"), "train_records": split.train,
            "test_records": split.test, "split": split.as_dict(), "eval_split": eval_split,
            "skipped_records": manifest.get("skipped_records") or [], "train_windows": len(train_windows),
            "test_windows": len(test_windows) if test_windows else 0,
            "context": s.model.context, "waveform": s.model.waveform, "val_records": val_records,
            "labelled_records": train_records if s.axes.mode == "finetune" else None,
            "val_windows": len(val_windows) if val_windows else 0,
            # when the launcher prepared the shards before the trainer started, prepare_s is only this
            # run's up-to-date check; this is what building them took
            "shards_built_in_s": (manifest.get("timing") or {}).get("wall_s")}
    if s.axes.mode == "finetune":
        classes = list(manifest["beat_classes"] if s.train.task == "beat" else manifest["rhythm_classes"])
        counts = train_windows.class_counts()
        info["train_class_counts"] = dict(zip(classes, [int(c) for c in counts], strict=False))
        if s.train.af_group and task != "beat":
            raise DataError(f"train.af_group: weighs the N beats inside atrial fibrillation apart, so it needs beat "
                            f"classes (train.task = 'beat'); found task = {task!r}")
        groups = train_windows.af_groups() if s.train.af_group else None
        if groups is not None:  # N beats inside AF weigh as a group of their own, after the classes
            counts = np.bincount(groups[groups >= 0], minlength=len(classes) + 1)
            info["af_group"] = {"name": AF_GROUP, "windows": int(counts[len(classes)])}
        weights = (balanced_weights(counts, len(classes) + (groups is not None),
                                    0.5 if s.train.class_weights == "sqrt" else 1.0)
                   if s.train.class_weights != "none" else None)
        noisy = noisy_versions(s, d, shard_of, train_windows, train_records, task)
        if noisy:
            info["augment"] = {"noise_snr_db": [float(v) for v in s.train.augment_noise_db or []],
                               "noise_seed": AUGMENT_NOISE_SEED, "share": s.train.augment_share,
                               "shard_dirs": [str(w.shard_dir) for w in noisy]}
        hidden = context_hidden(s, train_windows, d.is_main)
        if hidden:
            info["context_dropout"] = {"share": hidden.share, "tokens": hidden.tokens}
        train = LabelledWindows(train_windows, groups, noisy, s.train.augment_share, s.train.seed, hidden)
        return Data(train, LabelledWindows(test_windows) if test_windows else None,
                    train_windows.vocab_size, classes, manifest.synthetic, prepare_s, info, weights,
                    _even_sample(LabelledWindows(val_windows), VAL_WINDOWS) if val_windows else None,
                    train_windows.length, test_windows.item_records() if test_windows else None)
    masked = MaskedWindows(train_windows, manifest.mask_id, s.train.mask_ratio, s.train.mask_span, s.train.seed)
    test: Dataset | None = None
    if test_windows:
        test = MaskedWindows(test_windows, manifest.mask_id, s.train.mask_ratio, s.train.mask_span, s.train.seed + 1)
        stride = max(1, math.ceil(len(test_windows) / FOUNDATION_EVAL_WINDOWS))
        test = Subset(test, range(0, len(test_windows), stride))  # an even sample: the loss needs no more
        info["test_windows"] = len(test)
    return Data(masked, test, train_windows.vocab_size, [], manifest.synthetic, prepare_s, info,
                seq_len=train_windows.length)


def noisy_versions(s: Settings, d: Dist, shard_of: Callable[[dict[str, Any]], Path], clean: Any,
                   records: list[str], task: str) -> tuple[Any, ...]:
    """train.augment_noise_db: the training windows once more from each noisy version of the data (prepared
    like the clean one, with the tokenizer's noise keys); () without it."""
    versions = []
    for level in s.train.augment_noise_db or []:
        shard = shard_of({**s.data.tokenizer, "noise_snr_db": float(level), "noise_seed": AUGMENT_NOISE_SEED})
        windows = _windows(s, shard, task, records)
        if not np.array_equal(windows.labels, clean.labels):
            raise DataError(f"{shard}: the noisy version at {level} dB SNR holds other beats than the clean data "
                            f"({len(windows.labels):,} training windows against {len(clean.labels):,})")
        versions.append(windows)
    if versions and d.is_main:
        log.info("noise augmentation: %.0f%% of the training windows each epoch from their records' noisy versions "
                 "at %s dB SNR", 100 * s.train.augment_share, ", ".join(f"{float(v):g}" for v in s.train.augment_noise_db or []))
    return tuple(versions)


def context_hidden(s: Settings, windows: Any, main: bool) -> HiddenContext | None:
    """train.context_dropout for LabelledWindows; None without it. An error where the items carry no context tokens
    to hide."""
    if not s.train.context_dropout:
        return None
    if not windows.context_length:
        raise DataError(f"train.context_dropout = {s.train.context_dropout}: hides the context tokens of a share of "
                        f"the training windows, so it needs a model.context other than 'none'; found context = "
                        f"{s.model.context!r}")
    if main:
        log.info("context dropout: %.0f%% of the training windows each epoch show the mask token in place of their "
                 "%d context tokens", 100 * s.train.context_dropout, windows.context_length)
    return HiddenContext(windows.context_length, float(s.train.context_dropout), int(windows.mask_id))


def _even_sample(dataset: Any, limit: int) -> Any:
    """At most `limit` items at an even stride (all of them when there are fewer)."""
    if len(dataset) <= limit:
        return dataset
    return Subset(dataset, range(0, len(dataset), math.ceil(len(dataset) / limit)))


def _log_data(manifest: dict[str, Any], split: dict[str, Any]) -> None:
    """The dataset's counts, every skipped record and the split, in train.log."""
    from trainer.data.summary import count_line, skipped_lines, split_line

    log.info("data %s (%s): %s", manifest["dataset"], manifest.get("source"), count_line(manifest))
    for line in skipped_lines(manifest):
        log.warning("%s", line)
    log.info("%s", split_line(split))


def _eval_windows(s: Settings, manifest: Any, split: Any, task: str, train_windows: Any,
                  main: bool) -> tuple[Any, str | None]:
    """The windows evaluation scores and the split they come from; an error, at the start, where a
    fine-tune run could not be scored (no test records, or a single class)."""
    name = manifest["dataset"]
    fix = ("give the test records (test_records = [...] in the study's [data], hlm-train train --test-records), "
           "a patient_pattern, or set train.eval = false (--no-eval) to train without scoring")
    if not s.train.eval:
        if main:
            log.info("evaluation off (train.eval = false): no split is scored")
        return None, None
    if not split.test:
        if s.axes.mode == "finetune":
            raise DataError(f"{manifest.path}: a fine-tune run is scored on the test split, and dataset {name!r} "
                            f"has no test records: {split.reason}; {fix}")
        if main:
            log.warning("no test records (%s): the foundation eval loss uses an even sample of the training "
                        "split", split.reason)
        return train_windows, "train"
    test = _windows(s, manifest.shard_dir, task, split.test)
    if s.axes.mode == "finetune":
        counts = test.class_counts()
        present = [i for i, c in enumerate(counts) if c]
        classes = manifest["beat_classes"] if s.train.task == "beat" else manifest["rhythm_classes"]
        if len(present) < 2:
            found = (f"only class {classes[present[0]]} ({int(counts[present[0]]):,} windows)" if present
                     else "no labelled windows")
            raise DataError(f"{manifest.path}: the test split of dataset {name!r} ({len(split.test)} records: "
                            f"{', '.join(split.test[:8])}{', ...' if len(split.test) > 8 else ''}) holds {found}; "
                            f"per-class scores need at least two classes; {fix}")
    if main:
        log.info("evaluation on the test split: %d records, %d windows", len(split.test), len(test))
    return test, "test"


def balanced_weights(counts: Any, n_classes: int, power: float = 1.0) -> list[float]:
    """Inverse-frequency class weights (to the `power`), scaled so that the weighted mean over the
    training windows is 1 (absent classes: 0).

    MIT-BIH is ~90% N beats; unweighted, a classifier that always says N scores 0.9 accuracy and a
    useless macro-F1. power 1 makes every present class count as much as the others; power 0.5
    ("sqrt") counts rare classes more than their share without letting 20 S windows outweigh 1000 N.
    """
    counts = [int(c) for c in counts] + [0] * (n_classes - len(counts))
    raw = [c ** -power if c else 0.0 for c in counts]
    scale = sum(counts) / sum(c * w for c, w in zip(counts, raw, strict=True)) if any(counts) else 0.0
    return [w * scale for w in raw]


def validation_split(records: list[str], patients: dict[str, str], fraction: float) -> tuple[list[str], list[str]]:
    """(train, validation) records: every 1/fraction-th patient (in natural order) goes to validation with
    all of its records, so no patient is on both sides; at least one patient stays on each side.

    Evenly spaced rather than the last ones, so that validation does not take one end of a database
    whose record numbers group its patients (mitdb's 100s and 200s).
    """
    ids = patient_ids(records, patients)
    if len(ids) < 2:
        raise DataError(f"train.val_fraction: the training split has {len(ids)} patient(s); a validation part "
                        "needs at least two (set train.val_fraction = 0)")
    return held_out(records, patients, evenly_spaced(ids, min(len(ids) - 1, max(1, math.ceil(fraction * len(ids))))))


def named_validation(records: list[str], patients: dict[str, str], named: list[str]) -> tuple[list[str], list[str]]:
    """(train, validation) records with the patients of the `named` training records in validation, all of their
    records, so no patient is on both sides: where the study knows which patients its choices must hold for
    (a rhythm the test split has, as DS1's two atrial-fibrillation patients). DataError naming the records that
    are not in the training split, and when no training patient would be left."""
    missing = [r for r in named if r not in records]
    if missing:
        # a mixed set names another database's records `db/name` (trainer/data/mixed.py): say so for a bare name
        prefixed = [f"{r} -> {', '.join(m)}" for r in missing if (m := [x for x in records if x.endswith(f"/{r}")])]
        raise DataError(f"train.val_records: {', '.join(missing)} not in the training split ({len(records)} records: "
                        f"{', '.join(records[:12])}{', ...' if len(records) > 12 else ''}); a validation record "
                        "must be one the model could otherwise train on, never a test record"
                        + (f"; named with its database: {'; '.join(prefixed)}" if prefixed else ""))
    held = {patients.get(r, r) for r in named}
    train, val = held_out(records, patients, held)
    if not train:
        raise DataError(f"train.val_records: every training patient would be in validation ({len(held)}); "
                        "leave at least one to train on")
    return train, val


def held_out(records: list[str], patients: dict[str, str], held: set[str]) -> tuple[list[str], list[str]]:
    """(the records of the other patients, the records of the `held` patients), each in the given order."""
    return ([r for r in records if patients.get(r, r) not in held],
            [r for r in records if patients.get(r, r) in held])


def labelled_part(records: list[str], patients: dict[str, str], fraction: float) -> list[str]:
    """The records of ceil(fraction x patients) patients, evenly spaced in natural order, as validation_split
    picks its own: the same patients for every seed and every initialisation, so a label-efficiency table
    compares like with like."""
    ids = patient_ids(records, patients)
    kept = evenly_spaced(ids, max(1, math.ceil(fraction * len(ids))))
    return [r for r in records if patients.get(r, r) in kept]


def patient_ids(records: list[str], patients: dict[str, str]) -> list[str]:
    """The distinct patients of `records`, in natural order (a record without a patient is its own)."""
    return sorted({patients.get(r, r) for r in records}, key=natural_key)


def evenly_spaced(ids: list[str], k: int) -> set[str]:
    """k of `ids`, one from the middle of each of k equal stretches."""
    return {ids[int((j + 0.5) * len(ids) / k)] for j in range(k)}
