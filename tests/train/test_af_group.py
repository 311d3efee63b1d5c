"""train.af_group: N beats inside atrial fibrillation weigh in the fine-tune's loss as a group of their own, on real
mitdb 203 (fibrillation and flutter) and 101 (sinus rhythm) beside a DS2 record, through the product's own command line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from trainer.config_keys import check_train
from trainer.data.labels import AAMI_OF_CODE, AF_GROUP, AF_RHYTHMS, BEAT_CLASSES
from trainer.data.mitann import read_annotations
from trainer.data.records import rhythm_per_annotation
from trainer.model import HeartLanguageModel, ModelConfig


def n_beats_inside_af(folder: Path, record: str) -> int:
    """Counted from the annotation file alone: N-class beats after an (AFIB or (AFL rhythm change, before the next."""
    ann = read_annotations(folder / f"{record}.atr")
    at, rhythm = rhythm_per_annotation(ann)
    current = np.searchsorted(at, ann.sample, side="right") - 1
    inside = (current >= 0) & np.isin(rhythm[np.clip(current, 0, None)], AF_RHYTHMS)
    return int((inside & (AAMI_OF_CODE[ann.code] == BEAT_CLASSES.index("N"))).sum())


def test_a_finetune_weighs_the_n_beats_inside_fibrillation_apart(physionet: Path, tmp_path: Path) -> None:
    from runcontract.records import read_exit, read_result
    from tests.data.conftest import copy_records
    from trainer.commands.cli import main

    data = copy_records(physionet / "mitdb", tmp_path / "db", ["101", "203", "100"], ("hea", "atr", "dat"))
    run_dir = tmp_path / "run"
    code = main(["train", "--run-dir", str(run_dir), "--data", str(data), "--token-cache", str(tmp_path / "c"),
                 "--tokenizer", "samples", "--fs", "180", "--af-group", "--mode", "finetune", "--pool", "centre",
                 "--window", "32", "--batch-size", "8", "--layers", "1", "--d-model", "16", "--heads", "2",
                 "--steps", "3", "--device", "cpu", "--cpus-per-task", "1", "--num-workers", "0"])
    assert code == 0, read_exit(run_dir)
    data_info = read_result(run_dir)["data"]
    expected = n_beats_inside_af(physionet / "mitdb", "203")
    assert expected > 2000  # 2,052 in fibrillation and 473 in flutter
    assert data_info["af_group"] == {"name": AF_GROUP, "windows": expected}
    counts, weights = data_info["train_class_counts"], data_info["class_weights"]
    assert len(weights) == len(BEAT_CLASSES) + 1  # the classes', then the group's
    # balanced over the groups: N's weight now counts only the N beats outside fibrillation
    n_outside = counts["N"] - expected
    assert n_outside > 1000  # 101's sinus rhythm
    assert weights[0] * n_outside == pytest.approx(weights[-1] * expected, rel=1e-6)


def test_the_loss_weighs_each_item_by_its_group() -> None:
    torch.manual_seed(0)
    model = HeartLanguageModel(ModelConfig(vocab_size=40, max_len=8, num_classes=3, layers=1, d_model=16, heads=2))
    model.eval()
    model.set_class_weights([0.5, 2.0, 1.0, 4.0], torch.device("cpu"))  # three classes, then one group
    tokens = torch.randint(0, 40, (4, 8))
    labels = torch.tensor([0, 1, 0, 2])
    groups = torch.tensor([0, 1, 3, 2])  # the third item, an N beat, weighs as group 3
    with torch.no_grad():
        per = F.cross_entropy(model(tokens), labels, reduction="none")
        grouped = model(tokens, torch.stack([labels, groups], dim=1))
        plain = model(tokens, labels)
    assert grouped.item() == pytest.approx(float((per * torch.tensor([0.5, 2.0, 4.0, 1.0])).mean()), rel=1e-6)
    assert plain.item() == pytest.approx(float((per * torch.tensor([0.5, 2.0, 0.5, 1.0])).mean()), rel=1e-6)


def test_the_group_needs_class_weights_and_beat_classes(physionet: Path, tmp_path: Path) -> None:
    from runcontract.records import read_exit
    from tests.data.conftest import copy_records
    from trainer.commands.cli import main

    message = check_train({"steps": 10, "af_group": True, "class_weights": "none"})
    assert message and "train.af_group" in message and "class_weights = 'none'" in message
    assert check_train({"steps": 10, "af_group": True}) is None
    data = copy_records(physionet / "mitdb", tmp_path / "db", ["203", "100"], ("hea", "atr", "dat"))
    run_dir = tmp_path / "run"
    code = main(["train", "--run-dir", str(run_dir), "--data", str(data), "--token-cache", str(tmp_path / "c"),
                 "--tokenizer", "samples", "--af-group", "--task", "rhythm", "--mode", "finetune", "--window", "32",
                 "--layers", "1", "--d-model", "16", "--heads", "2", "--steps", "1", "--device", "cpu", "--no-eval"])
    assert code != 0
    assert "train.af_group" in str(read_exit(run_dir)) and "task = 'rhythm'" in str(read_exit(run_dir))
