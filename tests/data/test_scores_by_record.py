"""Test-split scores per record: each record's confusion matrix holds exactly its own beats, on every rank."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from trainer.data.batches import LabelledWindows
from trainer.data.dataset import WindowDataset
from trainer.data.prepare import prepare_dataset
from trainer.model import HeartLanguageModel, ModelConfig
from trainer.parallelism.distributed import Dist
from trainer.scoring.evaluate import classify

CLASSES = ["N", "S", "V", "F", "Q"]


def test_confusion_per_record_adds_up_and_holds_each_records_own_beats(physionet: Path, cache: Path) -> None:
    shard = prepare_dataset(physionet / "mitdb", {"name": "samples", "fs": 90.0, "records": ["100", "119"]}, cache, 1)
    windows = WindowDataset(shard, 32, "beat", ["119", "100"], context="rr")
    torch.manual_seed(0)
    model = HeartLanguageModel(ModelConfig(vocab_size=windows.vocab_size, max_len=windows.length, layers=1,
                                           d_model=16, heads=2, num_classes=len(CLASSES)))
    records = windows.item_records()
    whole = classify(model, LabelledWindows(windows), CLASSES, Dist(), batch_size=64, records=records)

    assert list(whole["by_record"]) == ["119", "100"]
    for name, matrix in whole["by_record"].items():
        labels = windows.labels[windows.item_record == records[1].index(name)]
        assert [sum(row) for row in matrix] == np.bincount(labels, minlength=len(CLASSES)).tolist()
    v_beats = sum(whole["by_record"]["119"][2])
    assert v_beats > 400 and sum(whole["by_record"]["100"][2]) == 1  # record 119 holds the V beats
    assert np.sum(list(whole["by_record"].values()), axis=0).tolist() == whole["confusion"]

    # each of two ranks scores a stride of the windows (no process group here, so nothing is summed):
    # the strides' per-record matrices add up to the one-process ones
    parts = [classify(model, LabelledWindows(windows), CLASSES, Dist(rank=r, world=2), batch_size=64,
                      records=records) for r in (0, 1)]
    for name in whole["by_record"]:
        assert (np.add(parts[0]["by_record"][name], parts[1]["by_record"][name]).tolist()
                == whole["by_record"][name])
    assert whole["samples"] == parts[0]["samples"] + parts[1]["samples"]
    assert "by_record" not in classify(model, LabelledWindows(windows), CLASSES, Dist(), batch_size=64)
